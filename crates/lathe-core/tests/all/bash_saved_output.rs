//! A Bash flood's full output, end to end against `mock-llm` over real
//! HTTP (nothing is dropped; the result names the file and
//! the model Reads or Greps it): the cut result names a file under
//! `<state>/bash-output/`, and the model's next calls — Read with
//! `offset`/`limit` and Grep of that very path, copied from the result —
//! return the lines of the output that the result left out. Once for an
//! output Read loads (1.3 MB), once for one over `MAX_FILE_BYTES` (70 MB)
//! that Read streams.
//!
//! The model only knows the path from the first result, so the second turn
//! is played by a second mock (its script holds the path) on the same
//! session, resumed from its log.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;

use std::path::{Path, PathBuf};

use common::{harness, spawn_mock, tool_results, wait_idle};
use lathe_core::agent::Session;
use lathe_core::events::TurnOutcome;
use lathe_core::protocol::Message;
use serde_json::json;

/// The text of the tool result `id` in `transcript`.
fn result_of(transcript: &[Message], id: &str) -> (bool, String) {
    transcript
        .iter()
        .flat_map(tool_results)
        .find(|(i, _, _)| i == id)
        .map(|(_, is_error, text)| (is_error, text))
        .unwrap_or_else(|| panic!("no result for {id}"))
}

/// The file a cut Bash result names.
fn saved_path(text: &str) -> PathBuf {
    let rest = text
        .split_once("The full output is saved in ")
        .unwrap_or_else(|| panic!("no saved file named in {text:.300}"))
        .1;
    PathBuf::from(rest.split_once(": Read it").expect("path end").0)
}

/// Runs `command` as the model's Bash call in a session whose state
/// directory is `state` (outside the project, as `<state>` is), then the
/// model's Read of `read_offset`/`limit` 3 and Grep for `grep_line` on the
/// file the result names; returns (the path, Read's text, Grep's text).
async fn flood_then_read_and_grep(
    state: &Path,
    command: &str,
    read_offset: u64,
    grep_line: u64,
) -> (PathBuf, String, String) {
    let first = json!({ "responses": [
        { "content": [ { "type": "tool_use", "id": "toolu_01", "name": "Bash",
                         "input": { "command": command, "description": "Count" } } ] },
        { "content": [ { "type": "text", "text": "It was long." } ],
          "expect": { "tool_result_contains": { "toolu_01": "The full output is saved in " } } }
    ] });
    let state_dir = state.to_path_buf();
    let h = harness(
        first,
        Vec::new(),
        move |c| {
            c.state_dir = state_dir;
            c.sessions_dir = Some(c.cwd.join(".sessions"));
        },
        Vec::new(),
    )
    .await;
    assert_eq!(h.ask("count").await, TurnOutcome::Done);
    let (is_error, bash) = result_of(&h.session.transcript(), "toolu_01");
    assert!(!is_error, "{bash:.300}");
    let path = saved_path(&bash);
    assert!(
        path.starts_with(state.join("bash-output")),
        "{}",
        path.display()
    );
    // The line asked for is not in the result itself: only in the file.
    assert!(!bash.contains(&format!("\n{read_offset}\n")));

    // The second turn: the model copies the path into Read and Grep.
    let p = path.display().to_string();
    let second = json!({ "responses": [
        { "content": [
            { "type": "tool_use", "id": "toolu_02", "name": "Read",
              "input": { "file_path": p, "offset": read_offset, "limit": 3 } },
            { "type": "tool_use", "id": "toolu_03", "name": "Grep",
              "input": { "pattern": format!("^{grep_line}$"), "path": p,
                         "output_mode": "content", "-n": true } } ] },
        { "content": [ { "type": "text", "text": "Found them." } ],
          "expect": { "tool_result_is_error": { "toolu_02": false, "toolu_03": false } } }
    ] });
    let server = spawn_mock(&second).await;
    h.session.flush_log();
    let mut config = h.session.config().clone();
    config.base_url = server.url();
    // The state directory is outside the project, but the model reads
    // lathe's own saved output there without an ask: no answer is scripted
    // (common::parts), so an ask would fail the turn's calls.
    let resumed = Session::resume(common::parts(config), h.session.log_path().unwrap())
        .unwrap()
        .session;
    resumed
        .ask("show me", &tokio::runtime::Handle::current())
        .unwrap();
    assert_eq!(wait_idle(&resumed).await, TurnOutcome::Done);
    assert_eq!(server.served(), 2);
    let transcript = resumed.transcript();
    let (_, read) = result_of(&transcript, "toolu_02");
    let (_, grep) = result_of(&transcript, "toolu_03");
    (path, read, grep)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_bash_output_is_read_and_grepped_from_the_file_its_result_names() {
    let state = tempfile::tempdir().expect("state dir");
    let (path, read, grep) =
        flood_then_read_and_grep(state.path(), "seq 1 200000", 150_000, 199_999).await;
    assert_eq!(
        read,
        "150000\t150000\n150001\t150001\n150002\t150002\n\n[Showing lines 150000-150002 of 200000. The file continues: call Read with offset=150003 to read more.]"
    );
    assert_eq!(grep, format!("{}:199999:199999", path.display()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bash_output_over_the_load_limit_is_streamed_by_read_and_grepped() {
    let state = tempfile::tempdir().expect("state dir");
    // 9 000 000 lines, 69 MB: more than Read loads whole.
    let (path, read, grep) =
        flood_then_read_and_grep(state.path(), "seq 1 9000000", 4_000_000, 8_999_999).await;
    let size = std::fs::metadata(&path).expect("saved").len();
    assert!(size > lathe_core::editor::MAX_FILE_BYTES, "{size}");
    // Whether the trailer also counts all 9 000 000 lines depends on the
    // machine's speed (one Read scans for at most 2 s); the lines do not.
    let shown = path.display().to_string();
    assert!(
        read.starts_with(&format!(
            "4000000\t4000000\n4000001\t4000001\n4000002\t4000002\n\n[{shown} is a large file ({size} bytes"
        )),
        "{read}"
    );
    assert!(
        read.ends_with("Read with offset=4000003 to read more, or Grep it to find lines.]"),
        "{read}"
    );
    assert_eq!(grep, format!("{shown}:8999999:8999999"));
}

/// Colour codes and `\r` redraws reached the model byte for
/// byte. The result reads as a terminal shows it; the saved file keeps the
/// raw output.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_output_reads_as_a_terminal_shows_it_and_the_file_keeps_the_raw_bytes() {
    let state = tempfile::tempdir().expect("state dir");
    let command =
        r"printf 'step 1/3\rstep 2/3\rstep 3/3\n\033[1;31mred\033[0m text\r\n'; seq 1 200000";
    let script = json!({ "responses": [
        { "content": [ { "type": "tool_use", "id": "toolu_01", "name": "Bash",
                         "input": { "command": command, "description": "Count" } } ] },
        { "content": [ { "type": "text", "text": "ok" } ] }
    ] });
    let state_dir = state.path().to_path_buf();
    let h = harness(
        script,
        Vec::new(),
        move |c| c.state_dir = state_dir,
        Vec::new(),
    )
    .await;
    assert_eq!(h.ask("count").await, TurnOutcome::Done);
    let (is_error, bash) = result_of(&h.session.transcript(), "toolu_01");
    assert!(!is_error, "{bash:.300}");
    assert!(
        bash.starts_with("step 3/3\nred text\n1\n2\n3\n"),
        "{bash:.300}"
    );
    assert!(
        !bash.contains('\x1b') && !bash.contains('\r'),
        "{bash:.300}"
    );
    let raw = std::fs::read(saved_path(&bash)).unwrap();
    assert!(raw.starts_with(b"step 1/3\rstep 2/3\rstep 3/3\n\x1b[1;31mred\x1b[0m text\r\n1\n"));
}
