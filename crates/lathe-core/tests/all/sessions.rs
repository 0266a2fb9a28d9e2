//! Saved sessions in the core, against `mock-llm` over real HTTP: a
//! session saved as it goes resumes with the very same transcript and
//! continues in its file; a session whose file cannot be written says so
//! once and its turns go on.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;

use std::sync::Arc;

use common::{harness, wait_idle};
use lathe_core::agent::session_log::{self, WRITE_FAILED};
use lathe_core::agent::{Session, SessionParts};
use lathe_core::editor::DiskEditor;
use lathe_core::events::{AgentEvent, RecordingSink, TurnOutcome};
use lathe_core::permissions::ScriptedPrompter;
use serde_json::json;

fn script() -> serde_json::Value {
    json!({ "responses": [
      { "content": [
          { "type": "text", "text": "Reading." },
          { "type": "tool_use", "id": "toolu_01", "name": "Read", "input": { "file_path": "a.txt" } } ] },
      { "content": [ { "type": "text", "text": "It says hello." } ],
        "expect": { "tool_result_contains": { "toolu_01": "hello" } } },
      { "content": [ { "type": "text", "text": "Still here." } ],
        "expect": { "last_user_text_contains": "and now?",
                    "tool_result_contains": { "toolu_01": "hello" } } }
    ] })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saved_session_resumes_with_the_same_transcript_and_goes_on_in_its_file() {
    let h = harness(
        script(),
        Vec::new(),
        |c| {
            let root = c.cwd.clone();
            c.sessions_dir = Some(root.join(".sessions"));
        },
        Vec::new(),
    )
    .await;
    h.write("a.txt", "hello\n");
    assert_eq!(h.ask("read a.txt").await, TurnOutcome::Done);
    h.session.flush_log();
    let path = h.session.log_path().unwrap().to_path_buf();
    let listed = session_log::list(&session_log::project_dir(
        &h.root.join(".sessions"),
        &h.root,
    ));
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].path, path);
    assert_eq!(listed[0].header.first_prompt, "read a.txt");

    let config = h.session.config().clone();
    let sink = Arc::new(RecordingSink::default());
    let resumed = Session::resume(
        SessionParts {
            provider: lathe_core::provider::from_config(&config).unwrap(),
            config,
            editor: Arc::new(DiskEditor),
            prompter: Arc::new(ScriptedPrompter::new(Vec::new())),
            sink: sink.clone(),
            hooks: Vec::new(),
        },
        &path,
    )
    .unwrap();
    assert!(resumed.warnings.is_empty());
    assert!(!resumed.repaired);
    assert_eq!(resumed.session.transcript(), h.session.transcript());
    assert_eq!(resumed.session.usage(), h.session.usage());
    assert_eq!(resumed.session.id(), h.session.id());

    // The meter of the resumed conversation, before its first request:
    // an estimate from its transcript, told to the chat.
    resumed
        .session
        .estimate_context(&tokio::runtime::Handle::current());
    let mut told = None;
    for _ in 0..500 {
        told = sink.events().into_iter().find_map(|e| match e {
            AgentEvent::Context { used, window } => Some((used, window)),
            _ => None,
        });
        if told.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let (used, window) = told.expect("the chat is told the meter");
    assert_eq!(window, 200_000);
    assert!(used > 0, "{used}");
    let meter = resumed.session.context_meter().unwrap();
    assert_eq!((meter.used, meter.window), (used, window));

    let s = resumed.session;
    s.ask("and now?", &tokio::runtime::Handle::current())
        .unwrap();
    assert_eq!(wait_idle(&s).await, TurnOutcome::Done);
    s.flush_log();
    let loaded = session_log::load(&path).unwrap();
    let prompts: Vec<&str> = loaded
        .records
        .iter()
        .filter_map(|r| match r {
            session_log::Record::User { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(prompts, vec!["read a.txt", "and now?"]);
    assert_eq!(h.server.served(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_file_that_cannot_be_written_is_reported_once_and_turns_go_on() {
    let h = harness(
        json!({ "responses": [
          { "content": [ { "type": "text", "text": "One." } ] },
          { "content": [ { "type": "text", "text": "Two." } ] }
        ] }),
        Vec::new(),
        |c| {
            // A file where the sessions folder should be: nothing can be created.
            let blocker = c.cwd.join("blocker");
            std::fs::write(&blocker, "x").unwrap();
            c.sessions_dir = Some(blocker);
        },
        Vec::new(),
    )
    .await;
    assert_eq!(h.ask("first").await, TurnOutcome::Done);
    assert_eq!(h.ask("second").await, TurnOutcome::Done);
    h.session.flush_log();
    let failures: Vec<String> = h
        .sink
        .events()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::Notice {
                text,
                is_error: true,
            } => Some(text),
            _ => None,
        })
        .collect();
    assert_eq!(failures.len(), 1, "{failures:?}");
    let prefix = WRITE_FAILED.split('{').next().unwrap();
    assert!(failures[0].starts_with(prefix), "{}", failures[0]);
    assert_eq!(h.session.transcript().len(), 4);
}

/// The stale rule after `:Lathe resume`: the stamps of the files
/// the model read are saved with the session, so an Edit of a file read
/// before and unchanged since works, and one changed meanwhile is refused
/// as stale (not as "not read in this conversation"). A compaction is a
/// marker in the file: the resumed conversation starts from it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_stamps_and_compaction_survive_a_resume() {
    let script = json!({ "responses": [
      { "content": [
          { "type": "tool_use", "id": "toolu_01", "name": "Read", "input": { "file_path": "a.txt" } },
          { "type": "tool_use", "id": "toolu_02", "name": "Read", "input": { "file_path": "b.txt" } } ] },
      { "content": [ { "type": "text", "text": "Read both." } ] },
      { "content": [
          { "type": "tool_use", "id": "toolu_03", "name": "Edit",
            "input": { "file_path": "a.txt", "old_string": "alpha", "new_string": "ALPHA" } },
          { "type": "tool_use", "id": "toolu_04", "name": "Edit",
            "input": { "file_path": "b.txt", "old_string": "beta", "new_string": "BETA" } } ] },
      { "content": [ { "type": "text", "text": "Done." } ] }
    ] });
    let h = harness(
        script,
        Vec::new(),
        |c| {
            let root = c.cwd.clone();
            c.sessions_dir = Some(root.join(".sessions"));
            c.permissions.mode = lathe_core::permissions::Mode::AcceptEdits;
        },
        Vec::new(),
    )
    .await;
    h.write("a.txt", "alpha\n");
    h.write("b.txt", "beta\n");
    assert_eq!(h.ask("read a.txt and b.txt").await, TurnOutcome::Done);
    h.session
        .compact(Some("the two files"), &tokio::runtime::Handle::current())
        .unwrap();
    wait_idle(&h.session).await;
    h.session.flush_log();
    let compacted = h.session.transcript();
    assert_eq!(compacted.len(), 1, "one user message after compaction");
    let path = h.session.log_path().unwrap().to_path_buf();
    // Someone changes b.txt while lathe is closed.
    h.write("b.txt", "beta changed\n");

    let config = h.session.config().clone();
    let resumed = Session::resume(common::parts(config), &path).unwrap();
    assert_eq!(
        resumed.session.transcript(),
        compacted,
        "the resumed conversation starts from the compaction"
    );
    assert!(resumed
        .events
        .iter()
        .any(|e| matches!(e, AgentEvent::Compacted { .. })));
    let s = resumed.session;
    s.ask("edit both", &tokio::runtime::Handle::current())
        .unwrap();
    assert_eq!(wait_idle(&s).await, TurnOutcome::Done);
    assert_eq!(h.read("a.txt"), "ALPHA\n", "unchanged since read: edited");
    assert_eq!(h.read("b.txt"), "beta changed\n", "changed: refused");
    let transcript = s.transcript();
    let results = common::tool_results(&transcript[transcript.len() - 2]);
    assert!(!results[0].1, "{results:?}");
    assert_eq!(
        results[1].2,
        "b.txt has been modified since you last read it (by the user or another program), so nothing was changed. Read it again, then retry with its current text."
    );
}

/// An error shows the same way after `:Lathe resume` as it did live: its
/// error notice, then the turn's end pointing at it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_shows_after_a_resume_as_it_did_live() {
    let script = json!({"context_window": 40_000, "responses": [
        { "content": [ { "type": "text", "text": "hi" } ] }
    ]});
    let h = harness(
        script,
        Vec::new(),
        |c| {
            let root = c.cwd.clone();
            c.sessions_dir = Some(root.join(".sessions"));
            c.context_window = Some(1_000_000);
        },
        Vec::new(),
    )
    .await;
    assert_eq!(h.ask("hello").await, TurnOutcome::Done);
    let refused = h.ask(&format!("huge {}", "z".repeat(400_000))).await;
    assert!(matches!(refused, TurnOutcome::Error(_)), "{refused:?}");
    h.session.flush_log();
    let errors = |events: Vec<AgentEvent>| -> Vec<AgentEvent> {
        events
            .into_iter()
            .filter(|e| {
                matches!(
                    e,
                    AgentEvent::Notice { is_error: true, .. } | AgentEvent::TurnEnded { .. }
                )
            })
            .collect()
    };
    let config = h.session.config().clone();
    let resumed = Session::resume(common::parts(config), h.session.log_path().unwrap()).unwrap();
    let live = errors(h.sink.events());
    // The first turn's end; the failed compaction, the refusal, its end.
    assert_eq!(live.len(), 4, "{live:?}");
    assert_eq!(errors(resumed.events), live);
}
