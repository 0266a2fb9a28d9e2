//! The whole query loop against `mock-llm` over real HTTP on loopback, with
//! files on disk, a disk editor and a scripted prompter. mock-llm checks the
//! tool_use/tool_result pairing rule on every request (a violation is a 400
//! that ends the turn with an error, so every `done` below also proves it).
//! Every test runs twice: against the Messages API (`anthropic::…`) and
//! against OpenAI-compatible chat completions (`openai::…`).

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;
use lathe_test_support::on_both_apis;

use std::time::Duration;

use common::{tool_results, wait_idle, Api, Harness};
use lathe_core::events::{AgentEvent, ToolStatus, TurnOutcome};
use lathe_core::permissions::PromptAnswer;
use lathe_core::protocol::Role;
use serde_json::{json, Value};

/// A session on `api` against mock-llm playing `script`, answering prompts
/// with `answers`, with the default config and tools.
async fn harness(api: Api, script: Value, answers: Vec<PromptAnswer>) -> Harness {
    common::harness_on(api, script, answers, |_| {}, vec![]).await
}

fn assistant(content: Value, stop: &str) -> Value {
    json!({ "content": content, "stop_reason": stop, "text_chunk_chars": 5, "json_chunk_chars": 7 })
}

async fn grep_read_edit_fixes_the_file(api: Api) {
    let script = json!({ "responses": [
        assistant(json!([
            {"type": "text", "text": "Looking for the typo."},
            {"type": "tool_use", "id": "toolu_01", "name": "Grep", "input": {"pattern": "Helo"}}
        ]), "tool_use"),
        {
            "content": [{"type": "tool_use", "id": "toolu_02", "name": "Read", "input": {"file_path": "src/greeting.py"}}],
            "stop_reason": "tool_use",
            "expect": {"tool_result_contains": {"toolu_01": "src/greeting.py"}, "tool_result_is_error": {"toolu_01": false}}
        },
        {
            "content": [{"type": "tool_use", "id": "toolu_03", "name": "Edit", "input": {
                "file_path": "src/greeting.py", "old_string": "Helo", "new_string": "Hello"}}],
            "stop_reason": "tool_use",
            "json_chunk_chars": 3,
            "expect": {"tool_result_contains": {"toolu_02": "     1\tdef greet():"}}
        },
        {
            "content": [{"type": "text", "text": "Fixed the greeting — “Hello” now."}],
            "stop_reason": "end_turn",
            "expect": {"tool_result_is_error": {"toolu_03": false}}
        }
    ]});
    let h = harness(api, script, vec![PromptAnswer::AllowOnce]).await;
    h.write(
        "src/greeting.py",
        "def greet():\n    return \"Helo, world\"\n",
    );
    h.write("README.md", "no typo here\n");

    assert_eq!(
        h.ask("fix the typo in the greeting").await,
        TurnOutcome::Done
    );

    assert_eq!(
        h.read("src/greeting.py"),
        "def greet():\n    return \"Hello, world\"\n"
    );
    assert_eq!(
        h.server.requests().len(),
        4,
        "one request per model turn, none rejected"
    );

    // The edit asked once, showing the file and the diff.
    let asked = h.prompter.asked();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].0, "Edit");
    assert!(
        asked[0].1.diff.contains("+    return \"Hello, world\""),
        "{}",
        asked[0].1.diff
    );

    // Transcript: user, (assistant, user[tool_result]) × 3, assistant.
    let t = h.session.transcript();
    let roles: Vec<Role> = t.iter().map(|m| m.role).collect();
    use Role::{Assistant as A, User as U};
    assert_eq!(roles, vec![U, A, U, A, U, A, U, A]);
    let results = tool_results(&t[6]);
    assert_eq!(results[0].0, "toolu_03");
    assert!(!results[0].1);

    // The chat saw streamed text and each tool's start and end.
    let events = h.sink.events();
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(text.contains("Looking for the typo."));
    assert!(text.ends_with("Fixed the greeting — “Hello” now."));
    let finished: Vec<(&str, ToolStatus)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolFinished { name, status, .. } => Some((name.as_str(), *status)),
            _ => None,
        })
        .collect();
    assert_eq!(
        finished,
        vec![
            ("Grep", ToolStatus::Done),
            ("Read", ToolStatus::Done),
            ("Edit", ToolStatus::Done)
        ]
    );
    assert!(matches!(
        events.last(),
        Some(AgentEvent::TurnEnded {
            outcome: TurnOutcome::Done
        })
    ));
}

async fn declined_edit_tells_the_model_and_writes_nothing(api: Api) {
    let script = json!({ "responses": [
        assistant(json!([{"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {"file_path": "a.txt"}}]), "tool_use"),
        assistant(json!([{"type": "tool_use", "id": "toolu_02", "name": "Edit",
            "input": {"file_path": "a.txt", "old_string": "one", "new_string": "two"}}]), "tool_use"),
        {
            "content": [{"type": "text", "text": "Understood."}],
            "stop_reason": "end_turn",
            "expect": {"tool_result_is_error": {"toolu_02": true}, "tool_result_contains": {"toolu_02": "declined"}}
        }
    ]});
    let h = harness(api, script, vec![PromptAnswer::Deny]).await;
    h.write("a.txt", "one\n");
    assert_eq!(h.ask("change it").await, TurnOutcome::Done);
    assert_eq!(h.read("a.txt"), "one\n");
    let denied = h.sink.events().into_iter().any(|e| {
        matches!(e, AgentEvent::ToolFinished { status: ToolStatus::Denied, ref name, .. } if name == "Edit")
    });
    assert!(denied, "the chat shows the Edit as denied");
}

async fn api_error_ends_the_turn_with_the_api_message_and_the_next_ask_works(api: Api) {
    let script = json!({ "responses": [
        {"fault": {"http_status": 400, "message": "max_tokens: too large for this model"}},
        {
            "content": [{"type": "text", "text": "Hi again."}],
            "stop_reason": "end_turn",
            "expect": {"last_user_text_contains": "second"}
        }
    ]});
    let h = harness(api, script, vec![]).await;
    let outcome = h.ask("first").await;
    let TurnOutcome::Error(msg) = outcome else {
        panic!("expected an error, got {outcome:?}")
    };
    assert!(
        msg.contains("400") && msg.contains("max_tokens: too large for this model"),
        "{msg}"
    );
    let notice = h.sink.events().into_iter().find_map(|e| match e {
        AgentEvent::Notice {
            text,
            is_error: true,
        } => Some(text),
        _ => None,
    });
    assert_eq!(
        notice.as_deref(),
        Some(msg.as_str()),
        "the API's message is shown in the chat"
    );
    // The failed request left only the user's text; the next ask joins it.
    assert_eq!(h.ask("second").await, TurnOutcome::Done);
}

async fn truncated_tool_input_is_an_error_result_and_empty_input_is_an_empty_object(api: Api) {
    let script = json!({ "responses": [
        {
            "content": [
                {"type": "tool_use", "id": "toolu_01", "name": "Read", "input_json": "{\"file_path\": \"a.t"},
                {"type": "tool_use", "id": "toolu_02", "name": "Glob", "input_json": ""}
            ],
            "stop_reason": "tool_use"
        },
        {
            "content": [{"type": "text", "text": "ok"}],
            "stop_reason": "end_turn",
            "expect": {
                "tool_result_is_error": {"toolu_01": true, "toolu_02": true},
                "tool_result_contains": {"toolu_01": "not valid JSON", "toolu_02": "`pattern`: required parameter is missing"}
            }
        }
    ]});
    let h = harness(api, script, vec![]).await;
    assert_eq!(h.ask("go").await, TurnOutcome::Done);
    // The transcript keeps a valid object as the cut call's input.
    let t = h.session.transcript();
    let input = t[1].tool_uses().next().map(|u| u.input.clone());
    assert_eq!(input, Some(json!({})));
}

async fn stop_mid_stream_keeps_finished_results_drops_unfinished_blocks_and_continues(api: Api) {
    let script = json!({ "responses": [
        {
            "content": [
                {"type": "tool_use", "id": "toolu_01", "name": "Glob", "input": {"pattern": "*.txt"}},
                {"type": "text", "text": "this text takes a long while to arrive in full"},
                {"type": "tool_use", "id": "toolu_02", "name": "Read", "input": {"file_path": "a.txt"}}
            ],
            "stop_reason": "tool_use",
            "text_chunk_chars": 1,
            "event_delay_ms": 100
        },
        {
            "content": [{"type": "text", "text": "Continuing."}],
            "stop_reason": "end_turn",
            "expect": {
                "tool_result_is_error": {"toolu_01": false},
                "tool_result_contains": {"toolu_01": "a.txt"},
                "last_user_text_contains": "carry on"
            }
        }
    ]});
    let h = harness(api, script, vec![]).await;
    h.write("a.txt", "x\n");
    h.session
        .ask("start", &tokio::runtime::Handle::current())
        .expect("ask");
    // The Glob runs while the text still streams; stop once it finished.
    for _ in 0..500 {
        let finished = h
            .sink
            .events()
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolFinished { .. }));
        if finished {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    h.session.stop();
    assert_eq!(wait_idle(&h.session).await, TurnOutcome::Stopped);
    let t = h.session.transcript();
    assert_eq!(
        t.len(),
        3,
        "user, the completed part of the answer, results"
    );
    let uses: Vec<String> = t[1].tool_uses().map(|u| u.id.clone()).collect();
    assert_eq!(
        uses,
        vec!["toolu_01"],
        "the Read block never completed, so it is not in history"
    );
    let results = tool_results(&t[2]);
    assert_eq!(results.len(), 1);
    assert!(
        !results[0].1,
        "the Glob that finished keeps its real result: {}",
        results[0].2
    );
    // mock-llm's pairing rule and `expect` check the next request.
    assert_eq!(h.ask("carry on").await, TurnOutcome::Done);
}

async fn busy_and_empty_prompts_are_refused(api: Api) {
    let script = json!({ "responses": [
        {"content": [{"type": "text", "text": "slow answer"}], "stop_reason": "end_turn",
         "text_chunk_chars": 1, "event_delay_ms": 50}
    ]});
    let h = harness(api, script, vec![]).await;
    let rt = tokio::runtime::Handle::current();
    assert!(h.session.ask("   ", &rt).is_err());
    h.session.ask("one", &rt).expect("first ask");
    assert_eq!(
        h.session.ask("two", &rt).unwrap_err().to_string(),
        "lathe is already working on a request; wait for it or run :Lathe stop"
    );
    h.session.stop();
    assert_eq!(wait_idle(&h.session).await, TurnOutcome::Stopped);
}

async fn max_turns_stops_the_loop(api: Api) {
    let call = |id: &str| {
        assistant(
            json!([{"type": "tool_use", "id": id, "name": "Glob", "input": {"pattern": "*"}}]),
            "tool_use",
        )
    };
    let script = json!({ "responses": [call("toolu_01"), call("toolu_02"), call("toolu_03")] });
    let h = common::harness_on(api, script, vec![], |c| c.max_turns = 2, vec![]).await;
    // Cut, not finished: scripts (`wait()`) and the statusline
    // (`status().last`) can tell the two apart.
    let outcome = h.ask("loop").await;
    assert_eq!(outcome, TurnOutcome::MaxTurns);
    assert_eq!(outcome.as_str(), "max_turns");
    assert_eq!(h.server.requests().len(), 2);
    let notice = h.sink.events().into_iter().any(|e| {
        matches!(e, AgentEvent::Notice { ref text, .. } if text.starts_with("Stopped after 2 model requests"))
    });
    assert!(notice);
}

on_both_apis!(
    grep_read_edit_fixes_the_file,
    declined_edit_tells_the_model_and_writes_nothing,
    api_error_ends_the_turn_with_the_api_message_and_the_next_ask_works,
    truncated_tool_input_is_an_error_result_and_empty_input_is_an_empty_object,
    stop_mid_stream_keeps_finished_results_drops_unfinished_blocks_and_continues,
    busy_and_empty_prompts_are_refused,
    max_turns_stops_the_loop,
);
