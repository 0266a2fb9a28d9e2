//! What the chat draws fits its window in a real terminal (Neovim in
//! tmux, the screen read with `tmux capture-pane`): the "working" line
//! under a streamed line that ends near the window's edge is shown whole,
//! on a row of its own (never glued to the text nor cut at the edge), and the
//! turn's token line, too long for the window, is broken between its
//! parts, never inside a figure ('linebreak' breaks after the `.` of
//! `2.0M`). And after a first turn with many tool calls (the chat
//! scrolled, results folded as they end) the screen is what `<C-l>`
//! draws. Skipped (with a message) where tmux is not installed.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use lathe_test_support::tui;
use tui::*;

/// One long line of words streamed slowly (so its end passes the
/// window's edge again and again), with token counts that make the
/// turn's token line longer than the window.
fn script() -> String {
    let line: String = (1..=90).map(|i| format!("word{i} ")).collect();
    serde_json::json!({ "responses": [
        { "content": [ { "type": "text", "text": line.trim_end() } ],
          "text_chunk_chars": 3, "event_delay_ms": 25,
          "usage": { "input_tokens": 1234, "output_tokens": 5678,
                     "cache_read_input_tokens": 2_000_000 } }
    ] })
    .to_string()
}

/// The chat's rows: what the screen shows right of the last window
/// separator, trimmed.
fn chat_rows(s: &str) -> Vec<String> {
    s.lines()
        .filter_map(|l| l.rsplit_once('│').map(|(_, r)| r.trim().to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_working_indicator_and_the_token_line_fit_the_chat_window() {
    if !have_tmux() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().canonicalize().unwrap();
    std::fs::write(project.join("notes.txt"), "my notes\n").unwrap();
    let server = mock_llm::spawn(mock_llm::Script::from_json(&script()).unwrap(), None)
        .await
        .unwrap();
    let init = dir.path().join("init.lua");
    std::fs::write(
        &init,
        tui::init_lua(&format!(
            r#"require("lathe").setup({{ cwd = {project:?}, base_url = {url:?}, claude_settings = false }})
vim.cmd("edit " .. vim.fn.fnameescape({file:?}))
"#,
            project = project.display().to_string(),
            url = server.url(),
            file = project.join("notes.txt").display().to_string(),
        )),
    )
    .unwrap();
    let name = start_nvim("fit", 160, 40, &init, "");
    let _kill = Kill(name.clone());
    wait_for(&name, "Neovim shows the file", |s| s.contains("my notes"));

    keys(&name, ":Lathe tell me\r");
    wait_for(&name, "the answer streams", |s| s.contains("word3"));
    // While the line grows, the working line shows whole, on a row of its
    // own under the streamed text, never glued to it nor cut.
    let whole = "lathe is working… (<C-c> stops)";
    let mut seen = 0;
    let mut done = String::new();
    for _ in 0..400 {
        let s = screen(&name);
        let chat: String = chat_rows(&s).concat().split_whitespace().collect();
        if s.contains("*(done)*") {
            done = s;
            break;
        }
        if chat.contains("latheis") {
            let rows = chat_rows(&s);
            assert!(
                rows.iter().any(|r| r == whole),
                "the working line is glued to the text or cut off:\n{}",
                rows.join("\n")
            );
            seen += 1;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(seen > 5, "the indicator was seen while streaming ({seen})");
    assert!(!done.is_empty(), "the turn ended");
    // The token line, longer than the window: each row starts a part.
    let rows = chat_rows(&done);
    let at = rows.iter().position(|r| r.starts_with("*(done)*")).unwrap();
    let end: Vec<&String> = rows[at..].iter().take_while(|r| !r.is_empty()).collect();
    assert!(end.len() > 1, "broken over rows: {end:?}");
    for r in &end {
        assert!(
            ["*(done)*", "tokens: ", "· session "]
                .iter()
                .any(|p| r.starts_with(p)),
            "a row of the token line starts inside a part: {r:?}\n{}",
            rows.join("\n")
        );
    }
    let joined = end.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(" ");
    assert!(
        joined.contains("tokens: 2.0M in (2.0M from cache), 5.7k out")
            && joined.contains("· session 2.0M in (2.0M from cache), 5.7k out"),
        "{joined}"
    );
}

/// The first turn of a session with tool calls (their results folded
/// under their lines as they end) leaves the screen as a full redraw
/// draws it: what `<C-l>` shows is what was already there (a fresh
/// user's run: a row drawn twice and a stray row between two tool lines
/// until `<C-l>`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_turn_with_tool_calls_the_screen_is_what_a_redraw_draws() {
    if !have_tmux() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().canonicalize().unwrap();
    let numbered: String = (1..=240).map(|i| format!("line {i} of a\n")).collect();
    std::fs::write(project.join("a.txt"), &numbered).unwrap();
    std::fs::write(project.join("b.txt"), "short\nfile\n").unwrap();
    let read = |id: &str, path: &str| serde_json::json!({"type": "tool_use", "id": id, "name": "Read", "input": {"file_path": path}});
    let long: String = (1..=30)
        .map(|i| format!("Point {i} of the plan.\n"))
        .collect();
    for i in 1..=6 {
        let text: String = (1..=197).map(|k| format!("file {i} line {k}\n")).collect();
        std::fs::write(project.join(format!("f{i}.txt")), text).unwrap();
    }
    let script = serde_json::json!({ "responses": [
        { "content": [ { "type": "text", "text": long }, read("toolu_11", "f1.txt"), read("toolu_12", "f2.txt"), read("toolu_13", "f3.txt") ],
          "event_delay_ms": 15 },
        { "content": [ { "type": "text", "text": "More." }, read("toolu_14", "f4.txt"),
                       {"type": "tool_use", "id": "toolu_17", "name": "Bash", "input": {"command": "seq 1 197 | tail -n 3; wc -l f1.txt", "description": "Count"}},
                       read("toolu_15", "f5.txt"), read("toolu_16", "f6.txt") ],
          "event_delay_ms": 15 },
        { "content": [ { "type": "text", "text": "Reading both." }, read("toolu_01", "a.txt"), read("toolu_02", "b.txt") ],
          "event_delay_ms": 15 },
        { "content": [ { "type": "text", "text": "And a search." },
                       {"type": "tool_use", "id": "toolu_03", "name": "Grep", "input": {"pattern": "line 19"}} ],
          "event_delay_ms": 15 },
        { "content": [ { "type": "text", "text": "Done reading." } ] }
    ] });
    let server = mock_llm::spawn(
        mock_llm::Script::from_json(&script.to_string()).unwrap(),
        None,
    )
    .await
    .unwrap();
    let init = dir.path().join("init.lua");
    std::fs::write(
        &init,
        tui::init_lua(&format!(
            r#"require("lathe").setup({{ cwd = {project:?}, base_url = {url:?}, claude_settings = false }})
vim.cmd("edit " .. vim.fn.fnameescape({file:?}))
"#,
            project = project.display().to_string(),
            url = server.url(),
            file = project.join("b.txt").display().to_string(),
        )),
    )
    .unwrap();
    let name = start_nvim("redraw", 160, 40, &init, "");
    let _kill = Kill(name.clone());
    wait_for(&name, "Neovim shows the file", |s| s.contains("short"));
    // Asked from the prompt area, as a user does: the cursor stays there
    // while the turn runs.
    keys(&name, ":Lathe\r");
    wait_for(&name, "the prompt area", |s| s.contains("-- INSERT --"));
    type_text(&name, "read them");
    keys(&name, "Escape");
    std::thread::sleep(Duration::from_millis(300));
    keys(&name, "Enter");
    wait_for(&name, "the turn ends", |s| s.contains("*(done)*"));
    keys(&name, "Escape");
    std::thread::sleep(Duration::from_millis(500));
    // The last row is the command line, which <C-l> clears.
    let rows = |s: String| {
        s.lines()
            .rev()
            .skip(1)
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let before = rows(screen(&name));
    keys(&name, "C-l");
    std::thread::sleep(Duration::from_millis(300));
    let after = rows(screen(&name));
    assert_eq!(
        before, after,
        "the screen before <C-l> (left) differs from a full redraw (right)"
    );
}

/// A closed fold is one row, never wrapped: a tool line longer than the
/// chat, folded over its result, shows its state and result whole and
/// leaves out the end of its key argument ("…"), whatever the window's
/// 'linebreak' would make of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folded_tool_line_longer_than_the_chat_keeps_its_state_and_result() {
    if !have_tmux() {
        return;
    }
    let deep = "a/rather/long/directory/name/that/goes/on/and/on/past/the/edge";
    let script = serde_json::json!({ "responses": [
        { "content": [ { "type": "text", "text": "Reading it." },
                       {"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {"file_path": format!("{deep}/notes.txt")}} ] },
        { "content": [ { "type": "text", "text": "Read it." } ] }
    ] });
    let nvim = MockNvim::start(
        "foldline",
        (120, 30),
        &script,
        &[(&format!("{deep}/notes.txt"), "one\ntwo\nthree\n")],
        "",
    )
    .await;
    let name = nvim.name.clone();
    keys(&name, ":Lathe read it\r");
    let s = wait_for(&name, "the turn ends", |s| s.contains("*(done)*"));
    let rows = chat_rows(&s);
    let line = rows
        .iter()
        .find(|r| r.contains("- Read("))
        .unwrap_or_else(|| panic!("no Read line:\n{}", rows.join("\n")));
    assert!(
        line.ends_with("…): done — 3 lines"),
        "the folded line keeps its state and result: {line:?}\n{}",
        rows.join("\n")
    );
    assert!(line.contains("- Read(a/rather/long"), "{line:?}");
}
