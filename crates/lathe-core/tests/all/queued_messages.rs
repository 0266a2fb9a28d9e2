//! Messages the user queues while a turn runs (`Session::queue`): handed to
//! the model with the turn's next request after the tool results (mock-llm
//! checks the request against the API's rules), sent as the next prompt
//! when the turn ends first, given back when it is stopped. Every test
//! runs against both APIs.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;
use lathe_test_support::on_both_apis;

use std::time::Duration;

use common::{wait_idle, Api, Harness};
use lathe_core::events::{AgentEvent, TurnOutcome};
use lathe_core::protocol::{ContentBlock, Role};
use serde_json::{json, Value};

async fn harness(api: Api, script: Value) -> Harness {
    common::harness_on(api, script, vec![], |_| {}, vec![]).await
}

/// A slow answer: text streamed a character at a time, then `rest`.
fn slow(text: &str, rest: Value, stop: &str) -> Value {
    let mut content = vec![json!({"type": "text", "text": text})];
    if let Value::Array(more) = rest {
        content.extend(more);
    }
    json!({ "content": content, "stop_reason": stop,
            "text_chunk_chars": 1, "event_delay_ms": 20 })
}

/// Waits until mock-llm got `n` requests.
async fn wait_for_requests(h: &Harness, n: usize) {
    for _ in 0..500 {
        if h.server.requests().len() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn a_message_queued_mid_turn_reaches_the_next_request_after_the_results(api: Api) {
    let script = json!({ "responses": [
        slow("Looking.", json!([{"type": "tool_use", "id": "toolu_01", "name": "Glob",
            "input": {"pattern": "*.txt"}}]), "tool_use"),
        {"content": [{"type": "text", "text": "Will do."}], "stop_reason": "end_turn",
         "expect": {"tool_result_is_error": {"toolu_01": false},
                    "last_user_text_contains": "also update the README"}}
    ]});
    let h = harness(api, script).await;
    h.write("a.txt", "x\n");
    let rt = tokio::runtime::Handle::current();
    assert_eq!(h.session.queue("too early"), Ok(false), "no turn runs");
    h.session.ask("look around", &rt).expect("ask");
    wait_for_requests(&h, 1).await;
    assert_eq!(h.session.queue("also update the README"), Ok(true));
    assert_eq!(h.session.queued(), vec!["also update the README"]);
    assert_eq!(wait_idle(&h.session).await, TurnOutcome::Done);
    assert_eq!(h.server.requests().len(), 2);
    assert!(h.session.queued().is_empty());
    // The results first, then the message in its wrapper.
    let t = h.session.transcript();
    assert_eq!(t.len(), 4);
    assert_eq!(t[2].role, Role::User);
    assert!(matches!(t[2].content[0], ContentBlock::ToolResult(_)));
    assert!(matches!(&t[2].content[1], ContentBlock::Text { text }
        if text == "The user sent this message while you were working:\n\nalso update the README\n\nTake it into account from here on."));
    let events = h.sink.events();
    let sent = events
        .iter()
        .position(
            |e| matches!(e, AgentEvent::QueuedSent { text } if text == "also update the README"),
        )
        .expect("the chat is told");
    let finished = events
        .iter()
        .position(|e| matches!(e, AgentEvent::ToolFinished { .. }))
        .expect("tool line");
    assert!(finished < sent, "after the tool's result");
    assert!(events.contains(&AgentEvent::Queued {
        messages: vec!["also update the README".into()]
    }));
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, AgentEvent::TurnStarted { .. }))
            .count(),
        1
    );
}

async fn messages_queued_when_the_turn_ends_are_the_next_prompt(api: Api) {
    let script = json!({ "responses": [
        slow("A slow answer with no tools.", json!([]), "end_turn"),
        {"content": [{"type": "text", "text": "Both done."}], "stop_reason": "end_turn",
         "expect": {"last_user_text_contains": "first\n\nsecond"}}
    ]});
    let h = harness(api, script).await;
    let rt = tokio::runtime::Handle::current();
    h.session.ask("go", &rt).expect("ask");
    // Queued once the first request is out (before it, a queued message
    // joins the prompt).
    wait_for_requests(&h, 1).await;
    assert_eq!(h.session.queue("first"), Ok(true));
    assert_eq!(h.session.queue(" second "), Ok(true));
    wait_for_requests(&h, 2).await;
    assert_eq!(wait_idle(&h.session).await, TurnOutcome::Done);
    let t = h.session.transcript();
    let roles: Vec<Role> = t.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        vec![Role::User, Role::Assistant, Role::User, Role::Assistant]
    );
    let prompts: Vec<String> = h
        .sink
        .events()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TurnStarted { prompt } => Some(prompt.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(prompts, vec!["go", "first\n\nsecond"]);
}

async fn a_stopped_turn_gives_its_queued_messages_back(api: Api) {
    let script = json!({ "responses": [
        slow("This answer takes a long while to arrive in full.", json!([]), "end_turn")
    ]});
    let h = harness(api, script).await;
    let rt = tokio::runtime::Handle::current();
    h.session.ask("go", &rt).expect("ask");
    assert_eq!(h.session.queue("keep this"), Ok(true));
    h.session.stop();
    assert_eq!(wait_idle(&h.session).await, TurnOutcome::Stopped);
    for _ in 0..200 {
        if h.sink
            .events()
            .iter()
            .any(|e| matches!(e, AgentEvent::QueuedReturned { .. }))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let events = h.sink.events();
    assert!(events.contains(&AgentEvent::QueuedReturned {
        text: "keep this".into()
    }));
    assert_eq!(
        events.last(),
        Some(&AgentEvent::QueuedReturned {
            text: "keep this".into()
        })
    );
    assert!(h.session.queued().is_empty());
}

on_both_apis!(
    a_message_queued_mid_turn_reaches_the_next_request_after_the_results,
    messages_queued_when_the_turn_ends_are_the_next_prompt,
    a_stopped_turn_gives_its_queued_messages_back,
);
