//! The model is told about plan mode in the system prompt of every request
//! made while the session is in it — from the first request, not only after
//! a refused edit — and a `:Lathe mode` switch reaches the next request.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;

use lathe_core::agent::system_prompt::PLAN_MODE;
use lathe_core::events::TurnOutcome;
use lathe_core::permissions::Mode;
use serde_json::{json, Value};

/// The system prompt of a request body: a string, or text blocks (with
/// `cache_control`), joined.
fn system(body: &Value) -> String {
    match &body["system"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

fn answer(text: &str) -> Value {
    json!({ "content": [{"type": "text", "text": text}], "stop_reason": "end_turn" })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_in_plan_mode_say_so_and_a_mode_switch_reaches_the_next_request() {
    let script =
        json!({ "responses": [answer("a plan"), answer("done"), answer("planning again")] });
    let h = common::harness(script, vec![], |c| c.permissions.mode = Mode::Plan, vec![]).await;
    let paragraph = PLAN_MODE.trim();

    assert_eq!(h.ask("plan the fix").await, TurnOutcome::Done);
    h.session.set_mode(Mode::AcceptEdits);
    assert_eq!(h.ask("go ahead").await, TurnOutcome::Done);
    h.session.set_mode(Mode::Plan);
    assert_eq!(h.ask("and now?").await, TurnOutcome::Done);

    let requests = h.server.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        system(&requests[0]).contains(paragraph),
        "the first request in plan mode says so: {}",
        system(&requests[0])
    );
    assert!(
        !system(&requests[1]).contains("plan mode"),
        "after :Lathe mode acceptEdits the paragraph is gone"
    );
    assert!(
        system(&requests[2]).contains(paragraph),
        "after switching back to plan mode it is there again"
    );
}
