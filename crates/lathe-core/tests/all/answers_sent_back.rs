//! Answers in the shapes real servers send that lathe once lost or made
//! unsendable, through the whole loop against `mock-llm` over
//! real HTTP: a `tool_use` with `caller` whose input is not JSON (the
//! Anthropic SDKs' `tool_use_invalid_json_response`), a `tool_use` start
//! without `input` (llama.cpp's `/v1/messages`), cited text (web search),
//! a `compaction` block, and a `tool_use` with `stop_reason: "end_turn"`
//! (some proxies). mock-llm refuses every request the real API would
//! refuse, so each next request it answers is one the API accepts; each
//! test also reads that request to see the block went back as it came.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;
use lathe_test_support::on_both_apis;

use common::{harness_on, tool_results, Api, Harness};
use lathe_core::events::{AgentEvent, TurnOutcome};
use lathe_core::protocol::Role;
use serde_json::{json, Value};

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

/// A block the script format does not model, streamed with `deltas`.
fn raw(block: Value, deltas: Vec<Value>) -> Value {
    json!({"type": "raw", "block": block, "deltas": deltas})
}

fn json_piece(piece: &str) -> Value {
    json!({"type": "input_json_delta", "partial_json": piece})
}

async fn harness(api: Api, responses: Vec<Value>) -> Harness {
    harness_on(
        api,
        json!({ "responses": responses }),
        vec![],
        |_| {},
        vec![],
    )
    .await
}

/// The `n`th request's messages, without the `cache_control` breakpoints
/// lathe adds.
fn messages(h: &Harness, n: usize) -> Vec<Value> {
    let mut messages = h.server.requests()[n]["messages"]
        .as_array()
        .cloned()
        .unwrap();
    for m in &mut messages {
        for b in m["content"].as_array_mut().into_iter().flatten() {
            if let Some(o) = b.as_object_mut() {
                o.remove("cache_control");
            }
        }
    }
    messages
}

/// The text the chat was sent, joined.
fn chat_text(h: &Harness) -> String {
    h.sink
        .events()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta { text } => Some(text),
            _ => None,
        })
        .collect()
}

/// The tool results of the conversation, in order.
fn results(h: &Harness) -> Vec<(String, bool, String)> {
    h.session
        .transcript()
        .iter()
        .filter(|m| m.role == Role::User)
        .flat_map(tool_results)
        .collect()
}

/// The SDK fixture's shape: `caller` on the start, input that is not JSON,
/// `stop_reason: "tool_use"`. The call is answered with an error that
/// shows what arrived, the block goes back with `{}` and its `caller`, and
/// the model goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_input_is_not_json_is_answered_and_the_model_continues() {
    let start = json!({"type": "tool_use", "id": "toolu_01", "name": "Glob",
                       "caller": {"type": "direct"}, "input": {}});
    let h = harness(
        Api::Anthropic,
        vec![
            json!({"content": [
                text("I'll look for the notes."),
                raw(start, vec![json_piece(""), json_piece("{\"pattern\": \"*.md\", \"path\": "), json_piece("docs}")]),
            ], "stop_reason": "tool_use"}),
            json!({"content": [text("Sorry, again.")],
                   "expect": {"tool_result_is_error": {"toolu_01": true},
                              "tool_result_contains": {"toolu_01": "not valid JSON"}}}),
        ],
    )
    .await;
    assert_eq!(h.ask("find the notes").await, TurnOutcome::Done);
    assert_eq!(h.server.requests().len(), 2, "the model was asked again");
    let sent = messages(&h, 1);
    assert_eq!(
        sent[1]["content"][1],
        json!({"type": "tool_use", "id": "toolu_01", "name": "Glob",
               "caller": {"type": "direct"}, "input": {}})
    );
    let got = results(&h);
    assert_eq!(got.len(), 1);
    let (id, is_error, said) = &got[0];
    assert_eq!((id.as_str(), *is_error), ("toolu_01", true));
    assert!(
        said.contains("the input as it arrived: {\"pattern\": \"*.md\", \"path\": docs}"),
        "{said}"
    );
    assert_eq!(chat_text(&h), "I'll look for the notes.Sorry, again.");
}

/// llama.cpp's `/v1/messages` starts a `tool_use` without `input`: the
/// call runs with its streamed input.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_start_has_no_input_runs() {
    let h = harness(
        Api::Anthropic,
        vec![
            json!({"content": [
                raw(json!({"type": "tool_use", "id": "toolu_02", "name": "Glob"}),
                    vec![json_piece("{\"pattern\": \"*.md\"}")]),
            ], "stop_reason": "tool_use"}),
            json!({"content": [text("One file.")],
                   "expect": {"tool_result_contains": {"toolu_02": "README.md"}}}),
        ],
    )
    .await;
    h.write("README.md", "hi\n");
    assert_eq!(h.ask("list the notes").await, TurnOutcome::Done);
    assert_eq!(
        results(&h),
        vec![("toolu_02".to_string(), false, "README.md".to_string())]
    );
    assert_eq!(
        messages(&h, 1)[1]["content"][0],
        json!({"type": "tool_use", "id": "toolu_02", "name": "Glob", "input": {"pattern": "*.md"}})
    );
}

/// A web search answer: the cited sentence shows in the chat, and the
/// block goes back with its citations.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cited_text_shows_in_the_chat_and_goes_back_with_its_citations() {
    let cite = json!({"type": "web_search_result_location", "url": "https://example.com/weather",
                      "title": "Forecast", "encrypted_index": "Eo8BCioI", "cited_text": "Sunny, 21 C."});
    let h = harness(
        Api::Anthropic,
        vec![
            json!({"content": [
                text("According to the forecast, "),
                raw(text(""), vec![json!({"type": "citations_delta", "citation": cite}),
                                   json!({"type": "text_delta", "text": "it will be sunny"})]),
                text(" in San Francisco."),
            ]}),
            json!({"content": [text("You're welcome.")]}),
        ],
    )
    .await;
    assert_eq!(h.ask("weather?").await, TurnOutcome::Done);
    assert_eq!(
        chat_text(&h),
        "According to the forecast, it will be sunny in San Francisco."
    );
    assert_eq!(h.ask("thanks").await, TurnOutcome::Done);
    assert_eq!(
        messages(&h, 1)[1]["content"],
        json!([text("According to the forecast, "),
               {"type": "text", "text": "it will be sunny", "citations": [cite]},
               text(" in San Francisco.")])
    );
}

/// A `compaction` block: its deltas are accumulated and the block goes
/// back exactly as the API built it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compaction_block_goes_back_whole() {
    let h = harness(
        Api::Anthropic,
        vec![
            json!({"content": [
                raw(json!({"type": "compaction", "content": null, "encrypted_content": null}),
                    vec![json!({"type": "compaction_delta", "content": "Earlier work ",
                                "encrypted_content": "EpwBCioIDxgC_one"}),
                         json!({"type": "compaction_delta", "content": "summarized.",
                                "encrypted_content": "EpwBCioIDxgC_two"})]),
                text("Hello again."),
            ]}),
            json!({"content": [text("Sure.")]}),
        ],
    )
    .await;
    assert_eq!(h.ask("go on").await, TurnOutcome::Done);
    assert_eq!(h.ask("and then").await, TurnOutcome::Done);
    assert_eq!(
        messages(&h, 1)[1]["content"][0],
        json!({"type": "compaction", "content": "Earlier work summarized.",
               "encrypted_content": "EpwBCioIDxgC_two"})
    );
}

/// Some proxies end an answer with a call by `end_turn`: the call runs and
/// its result reaches the model.
async fn a_call_ended_by_end_turn_runs_and_the_model_continues(api: Api) {
    let h = harness(
        api,
        vec![
            json!({"content": [{"type": "tool_use", "id": "toolu_03", "name": "Glob",
                                "input": {"pattern": "*.md"}}],
                   "stop_reason": "end_turn"}),
            json!({"content": [text("Found README.md.")],
                   "expect": {"tool_result_contains": {"toolu_03": "README.md"}}}),
        ],
    )
    .await;
    h.write("README.md", "hi\n");
    assert_eq!(h.ask("list the notes").await, TurnOutcome::Done);
    assert_eq!(h.server.requests().len(), 2, "the result went back");
    assert!(chat_text(&h).ends_with("Found README.md."));
}

/// The system prompt is the same in every project (unchanging text first,
/// for every server's prefix cache); the working directory and the
/// project's instructions open the first user message; `temperature`
/// goes out when set.
async fn per_project_text_comes_after_the_system_prompt(api: Api) {
    let mut systems = Vec::new();
    for (dir_text, temperature) in [("one", None), ("two", Some(0.5))] {
        let h = harness_on(
            api,
            json!({"responses": [{"content": [text("Hi.")]}]}),
            vec![],
            |c| {
                c.temperature = temperature;
                let instructions = format!("Project {dir_text} uses tabs.");
                std::fs::write(c.cwd.join("AGENTS.md"), instructions).unwrap();
            },
            vec![],
        )
        .await;
        assert_eq!(h.ask("hello").await, TurnOutcome::Done);
        let body = &h.server.requests()[0];
        assert_eq!(body.get("temperature").and_then(Value::as_f64), temperature);
        let (system, first_user) = match api {
            Api::Anthropic => (
                body["system"][0]["text"].as_str().unwrap().to_string(),
                body["messages"][0]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            ),
            Api::OpenAi => {
                let m = &body["messages"];
                assert_eq!(m[0]["role"], "system");
                let user = match &m[1]["content"] {
                    Value::String(s) => s.clone(),
                    parts => parts[0]["text"].as_str().unwrap().to_string(),
                };
                (m[0]["content"].as_str().unwrap().to_string(), user)
            }
        };
        assert!(
            !system.contains(h.root.to_str().unwrap()) && !system.contains("uses tabs"),
            "{system}"
        );
        assert!(
            first_user.starts_with(&format!("<env>\nWorking directory: {}", h.root.display())),
            "{first_user}"
        );
        assert!(first_user.contains(&format!("Project {dir_text} uses tabs.")));
        systems.push(system);
    }
    assert_eq!(systems[0], systems[1], "the same in every project");
}

on_both_apis!(
    a_call_ended_by_end_turn_runs_and_the_model_continues,
    per_project_text_comes_after_the_system_prompt,
);
