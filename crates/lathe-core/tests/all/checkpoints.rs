//! Checkpoints and rewind in the core, against `mock-llm` over real HTTP:
//! each prompt keeps the files' texts before it, a rewind takes the code,
//! the conversation or both back without losing a line the user wrote
//! since, the model is told on its next request, and all of it survives a
//! resume (docs/checkpoints.md).

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;

use std::sync::Arc;

use common::harness;
use lathe_core::agent::checkpoint::rewind::{RewindWhat, COMPACTED, NO_CHECKPOINT, OUT_OF_RANGE};
use lathe_core::agent::checkpoint::Kept;
use lathe_core::agent::Session;
use lathe_core::events::{AgentEvent, TurnOutcome};
use lathe_core::permissions::PromptAnswer;
use lathe_core::text::fill;
use serde_json::{json, Value};

fn tool(id: &str, name: &str, input: Value) -> Value {
    json!({ "content": [ { "type": "tool_use", "id": id, "name": name, "input": input } ] })
}

fn text(t: &str) -> Value {
    json!({ "content": [ { "type": "text", "text": t } ] })
}

/// Prompt 1 reads and edits a.txt and writes new.txt; prompt 2 reads and
/// edits b.txt; then one more answer (for the prompt after a rewind),
/// which checks what the model is told.
fn two_prompts(after_rewind: Value) -> Value {
    json!({ "responses": [
        tool("toolu_1", "Read", json!({ "file_path": "a.txt" })),
        tool("toolu_2", "Edit", json!({ "file_path": "a.txt", "old_string": "two", "new_string": "TWO" })),
        tool("toolu_3", "Write", json!({ "file_path": "new.txt", "content": "made\n" })),
        text("Prompt one done."),
        tool("toolu_4", "Read", json!({ "file_path": "b.txt" })),
        tool("toolu_5", "Edit", json!({ "file_path": "b.txt", "old_string": "bee", "new_string": "BEE" })),
        text("Prompt two done."),
        after_rewind,
    ] })
}

const A: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n";
const B: &str = "bee\n";

fn allow(n: usize) -> Vec<PromptAnswer> {
    vec![PromptAnswer::AllowOnce; n]
}

async fn rewind(
    session: &Arc<Session>,
    back: usize,
    what: RewindWhat,
) -> Result<lathe_core::agent::checkpoint::rewind::RewindReport, String> {
    session
        .rewind(back, what, &tokio::runtime::Handle::current())
        .expect("idle")
        .await
        .expect("task")
}

/// A session saved under the project's `.sessions`, playing `script`,
/// allowing three asks.
async fn saved(script: Value) -> common::Harness {
    harness(
        script,
        allow(3),
        |c| {
            let root = c.cwd.clone();
            c.sessions_dir = Some(root.join(".sessions"));
        },
        Vec::new(),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_prompt_keeps_the_texts_before_it_and_both_go_back_keeping_the_users_lines() {
    let h = harness(
        two_prompts(json!({
            "content": [ { "type": "text", "text": "Starting over." } ],
            "expect": { "last_user_text_contains": "rewound the conversation and the files to before their earlier prompt \"fix a\"" }
        })),
        allow(3),
        |_| {},
        Vec::new(),
    )
    .await;
    h.write("a.txt", A);
    h.write("b.txt", B);
    assert_eq!(h.ask("fix a").await, TurnOutcome::Done);
    assert_eq!(h.ask("fix b").await, TurnOutcome::Done);
    assert_eq!(h.read("a.txt"), A.replace("two", "TWO"));

    let cps = h.session.checkpoints();
    assert_eq!(cps.len(), 2);
    assert_eq!(cps[0].prompt, "fix a");
    let files: Vec<_> = cps[0].files.iter().map(|f| f.path.clone()).collect();
    assert_eq!(files, vec![h.root.join("a.txt"), h.root.join("new.txt")]);
    assert_eq!(cps[0].files[0].before, Kept::Text(Arc::from(A)));
    assert_eq!(cps[0].files[1].before, Kept::Absent);
    assert_eq!(cps[1].files[0].path, h.root.join("b.txt"));
    // The last prompt's review: b.txt only; the session's: all three.
    assert_eq!(h.session.review_bases(false).len(), 1);
    assert_eq!(h.session.review_bases(true).len(), 3);

    // The user adds a line of their own to a.txt, away from lathe's change.
    h.write(
        "a.txt",
        &A.replace("two", "TWO").replace("six\n", "six\nmine\n"),
    );
    let report = rewind(&h.session, 2, RewindWhat::Both).await.unwrap();
    assert_eq!(
        h.read("a.txt"),
        A.replace("six\n", "six\nmine\n"),
        "lathe's change is out, the user's line stays"
    );
    assert_eq!(h.read("b.txt"), B);
    assert!(
        !h.root.join("new.txt").exists(),
        "the file lathe made is gone"
    );
    assert_eq!(report.removed, vec![h.root.join("new.txt")]);
    assert!(report.conflicts.is_empty());
    assert!(
        h.session.transcript().is_empty(),
        "back to before the first prompt"
    );
    assert!(h.session.checkpoints().is_empty());
    let notice = h.notices().last().cloned().unwrap();
    assert!(
        notice.starts_with("rewound the code and the conversation to before prompt 1 (“fix a”)"),
        "{notice}"
    );
    assert!(
        notice.contains("removed (lathe had created them): new.txt"),
        "{notice}"
    );

    // The next prompt tells the model (the script checks the request).
    assert_eq!(h.ask("now something else").await, TurnOutcome::Done);
    assert_eq!(h.session.checkpoints().len(), 1);
    assert_eq!(h.session.checkpoints()[0].id, 3, "numbers go on");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lathes_change_on_lines_the_user_changed_since_stays_and_is_reported() {
    let h = harness(two_prompts(text("unused")), allow(3), |_| {}, Vec::new()).await;
    h.write("a.txt", A);
    h.write("b.txt", B);
    assert_eq!(h.ask("fix a").await, TurnOutcome::Done);
    assert_eq!(h.ask("fix b").await, TurnOutcome::Done);
    h.write("a.txt", &A.replace("two", "TWO and mine"));
    let report = rewind(&h.session, 2, RewindWhat::Code).await.unwrap();
    assert_eq!(h.read("a.txt"), A.replace("two", "TWO and mine"));
    assert_eq!(report.conflicts, vec![(h.root.join("a.txt"), vec![2])]);
    assert_eq!(h.read("b.txt"), B);
    assert_eq!(
        h.session.checkpoints().len(),
        2,
        "code only: the prompts stay"
    );
    assert_eq!(
        h.session.transcript().len(),
        14,
        "and so does the conversation"
    );
    let notice = h.notices().last().cloned().unwrap();
    assert!(
        notice.contains("kept your edits where the turn changed the same lines (lathe's change is still there): a.txt:2"),
        "{notice}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conversation_alone_goes_back_and_the_files_stay() {
    let h = saved(
        two_prompts(json!({
            "content": [ { "type": "text", "text": "ok" } ],
            "expect": { "last_user_text_contains": "what followed it was taken out, but the files keep every change made since" }
        })),
    )
    .await;
    h.write("a.txt", A);
    h.write("b.txt", B);
    assert_eq!(h.ask("fix a").await, TurnOutcome::Done);
    let after_one = h.session.transcript();
    assert_eq!(h.ask("fix b").await, TurnOutcome::Done);
    rewind(&h.session, 1, RewindWhat::Conversation)
        .await
        .unwrap();
    assert_eq!(h.read("b.txt"), "BEE\n", "files stay");
    assert_eq!(h.session.transcript(), after_one);
    // The chat drawn again from the session file: no trace of "fix b".
    let events = h.session.replay_events().unwrap();
    let prompts: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TurnStarted { prompt } => Some(prompt.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(prompts, vec!["fix a"]);
    assert!(
        matches!(events.last(), Some(AgentEvent::Notice { text, .. }) if text.starts_with("rewound the conversation to before prompt 2"))
    );
    assert_eq!(h.ask("go on").await, TurnOutcome::Done);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_session_has_its_checkpoints_and_rewinds_them() {
    let h = saved(two_prompts(text("unused"))).await;
    h.write("a.txt", A);
    h.write("b.txt", B);
    assert_eq!(h.ask("fix a").await, TurnOutcome::Done);
    assert_eq!(h.ask("fix b").await, TurnOutcome::Done);
    h.session.flush_log();
    let path = h.session.log_path().unwrap().to_path_buf();
    let config = h.session.config().clone();
    let resumed = Session::resume(common::parts(config), &path).unwrap();
    let back = resumed.session.checkpoints();
    assert_eq!(back, h.session.checkpoints());
    rewind(&resumed.session, 2, RewindWhat::Both).await.unwrap();
    assert_eq!(h.read("a.txt"), A);
    assert_eq!(h.read("b.txt"), B);
    assert!(resumed.session.transcript().is_empty());
    // And a second resume sees the rewind.
    resumed.session.flush_log();
    let config = resumed.session.config().clone();
    let again = Session::resume(common::parts(config), &path).unwrap();
    assert!(again.session.transcript().is_empty());
    assert!(again.session.checkpoints().is_empty());
    assert!(!again
        .events
        .iter()
        .any(|e| matches!(e, AgentEvent::TurnStarted { .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_rewinds_change_nothing_and_say_why() {
    let h = harness(two_prompts(text("unused")), allow(3), |_| {}, Vec::new()).await;
    assert_eq!(
        rewind(&h.session, 1, RewindWhat::Both).await.unwrap_err(),
        NO_CHECKPOINT
    );
    h.write("a.txt", A);
    h.write("b.txt", B);
    assert_eq!(h.ask("fix a").await, TurnOutcome::Done);
    assert_eq!(
        rewind(&h.session, 3, RewindWhat::Both).await.unwrap_err(),
        fill(OUT_OF_RANGE, &[("n", "3"), ("count", "1")])
    );
    assert_eq!(
        rewind(&h.session, 0, RewindWhat::Code).await.unwrap_err(),
        fill(OUT_OF_RANGE, &[("n", "0"), ("count", "1")])
    );
    assert_eq!(h.read("a.txt"), A.replace("two", "TWO"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_compaction_the_conversation_cannot_go_back_but_the_code_can() {
    let h = saved(two_prompts(text("unused"))).await;
    h.write("a.txt", A);
    h.write("b.txt", B);
    assert_eq!(h.ask("fix a").await, TurnOutcome::Done);
    h.session
        .compact(None, &tokio::runtime::Handle::current())
        .unwrap()
        .await
        .unwrap()
        .unwrap();
    let compacted = h.session.transcript();
    let refused = fill(COMPACTED, &[("n", "1")]);
    assert_eq!(
        rewind(&h.session, 1, RewindWhat::Both).await.unwrap_err(),
        refused
    );
    assert_eq!(h.read("a.txt"), A.replace("two", "TWO"), "nothing changed");
    // A resumed session knows it too.
    h.session.flush_log();
    let config = h.session.config().clone();
    let resumed = Session::resume(common::parts(config), h.session.log_path().unwrap()).unwrap();
    assert_eq!(
        rewind(&resumed.session, 1, RewindWhat::Conversation)
            .await
            .unwrap_err(),
        refused
    );
    rewind(&h.session, 1, RewindWhat::Code).await.unwrap();
    assert_eq!(h.read("a.txt"), A);
    assert_eq!(h.session.transcript(), compacted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_a_turns_bash_command_changed_are_listed_when_git_can_tell() {
    let h = harness(
        json!({ "responses": [
            tool("toolu_1", "Bash", json!({ "command": "echo made by bash > out.log", "description": "Write a log" })),
            text("done"),
        ] }),
        allow(1),
        |_| {},
        Vec::new(),
    )
    .await;
    let git = |args: &[&str]| {
        assert!(std::process::Command::new("git")
            .arg("-C")
            .arg(&h.root)
            .args(args)
            .output()
            .unwrap()
            .status
            .success())
    };
    git(&["init", "-q"]);
    h.write("tracked.txt", "x\n");
    assert_eq!(h.ask("log it").await, TurnOutcome::Done);
    assert_eq!(h.read("out.log"), "made by bash\n");
    let cps = h.session.checkpoints();
    assert_eq!(cps[0].bash_touched, vec![h.root.join("out.log")]);
    assert!(cps[0].files.is_empty(), "Bash's changes are not tracked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_resumed_after_a_rewind_still_tells_the_model() {
    let h = saved(
        two_prompts(json!({
            "content": [ { "type": "text", "text": "ok" } ],
            "expect": { "last_user_text_contains": "the user rewound the files to how they were before their earlier prompt \"fix b\"" }
        })),
    )
    .await;
    h.write("a.txt", A);
    h.write("b.txt", B);
    assert_eq!(h.ask("fix a").await, TurnOutcome::Done);
    assert_eq!(h.ask("fix b").await, TurnOutcome::Done);
    rewind(&h.session, 1, RewindWhat::Code).await.unwrap();
    assert_eq!(h.read("b.txt"), B);
    h.session.flush_log();
    let config = h.session.config().clone();
    let resumed = Session::resume(common::parts(config), h.session.log_path().unwrap()).unwrap();
    let s = resumed.session;
    s.ask("and now?", &tokio::runtime::Handle::current())
        .unwrap();
    assert_eq!(common::wait_idle(&s).await, TurnOutcome::Done);
}

/// A code rewind of the last prompt, then one further back: the first
/// restore is not taken for the user's edits (no conflict is reported, the
/// files are as before the first prompt), live and after a resume; and the
/// model hears of both rewinds with its next prompt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewind_further_back_after_a_code_rewind_sees_no_user_edit() {
    let h = saved(
        two_prompts(json!({
            "content": [ { "type": "text", "text": "ok" } ],
            "expect": { "last_user_text_contains": "undone in b.txt, and the conversation was kept. Do not assume those changes are in place: Read a file again before you edit it.\n\nBefore this message the user rewound the files to how they were before their earlier prompt \"fix a\": the changes made since through Edit and Write are undone in a.txt, new.txt, and the conversation was kept. Do not assume those changes are in place: Read a file again before you edit it.\n\nBefore this message the user rewound the conversation to before their earlier prompt \"fix b\"" }
        })),
    )
    .await;
    h.write("a.txt", A);
    h.write("b.txt", "bee\nand a.txt too\n");
    assert_eq!(h.ask("fix a").await, TurnOutcome::Done);
    assert_eq!(h.ask("fix b").await, TurnOutcome::Done);
    rewind(&h.session, 1, RewindWhat::Code).await.unwrap();
    h.session.flush_log();
    // After a resume too.
    let config = h.session.config().clone();
    let resumed = Session::resume(common::parts(config), h.session.log_path().unwrap()).unwrap();
    assert_eq!(
        resumed.session.checkpoints(),
        h.session.checkpoints(),
        "the resumed checkpoints end with the restored text too"
    );
    let live = rewind(&h.session, 2, RewindWhat::Code).await.unwrap();
    assert!(live.conflicts.is_empty(), "{live:?}");
    assert_eq!(h.read("a.txt"), A);
    rewind(&h.session, 1, RewindWhat::Conversation)
        .await
        .unwrap();
    assert_eq!(h.ask("and now?").await, TurnOutcome::Done);
}
