//! Saved sessions in the core, against `mock-llm` over real HTTP: a
//! session saved as it goes resumes with the very same transcript and
//! continues in its file; a session whose file cannot be written says so
//! once and its turns go on.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::{harness, wait_idle};
use lathe::agent::session_log::{self, WRITE_FAILED};
use lathe::agent::{Session, SessionParts};
use lathe::editor::DiskEditor;
use lathe::events::{AgentEvent, RecordingSink, TurnOutcome};
use lathe::permissions::ScriptedPrompter;
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
            provider: lathe::provider::from_config(&config).unwrap(),
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
