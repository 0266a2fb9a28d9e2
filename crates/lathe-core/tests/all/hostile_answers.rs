//! Hostile model answers through the whole loop against `mock-llm` over
//! real HTTP: 10 000 tool calls in one answer, a
//! `new_string` over the input cap, deeply nested input, a 1 MB tool name and a path that is
//! not valid UTF-8. Each call gets an error result (mock-llm checks the
//! tool_use/tool_result pairing of the next request), the turn goes on to
//! the model's next answer, the session takes another prompt, and what the
//! transcript keeps — and so every later request — stays small. Every test
//! runs against both APIs (`anthropic::…`, `openai::…`).

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;
use lathe_test_support::on_both_apis;

use common::{tool_results, Api, Harness};
use lathe_core::events::TurnOutcome;
use lathe_core::protocol::Role;
use lathe_core::provider::limits::{
    MAX_TOOL_CALLS_PER_ANSWER, MAX_TOOL_INPUT_BYTES, MAX_TOOL_INPUT_DEPTH, TOOL_INPUT_TOO_DEEP,
    TOOL_INPUT_TOO_LARGE, TOOL_NAME_TOO_LONG, TOO_MANY_TOOL_CALLS,
};
use lathe_core::text::fill;
use serde_json::{json, Value};

/// The model's last word, after the hostile answer: the loop went on.
fn done_answer() -> Value {
    json!({"content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn"})
}

/// A second prompt's answer: the session still works.
fn again_answer() -> Value {
    json!({"content": [{"type": "text", "text": "Still here."}], "stop_reason": "end_turn"})
}

async fn harness(api: Api, hostile: Value) -> Harness {
    let script = json!({"responses": [hostile, done_answer(), again_answer()]});
    // Compaction off: these answers are about every call getting its
    // result, in requests mock-llm (no window here) takes as they are;
    // 10,000 results are past a 200k window (crates/lathe-core/tests/all/context_window.rs).
    common::harness_on(
        api,
        script,
        vec![],
        |c| c.auto_compact_permille = None,
        vec![],
    )
    .await
}

/// Runs the hostile turn and a second prompt; returns the hostile answer's
/// tool results `(id, is_error, text)` and the largest request body sent.
async fn run(h: &Harness) -> (Vec<(String, bool, String)>, usize) {
    assert_eq!(h.ask("go").await, TurnOutcome::Done);
    assert_eq!(h.ask("and again").await, TurnOutcome::Done);
    let messages = h.session.transcript();
    let results = messages
        .iter()
        .find(|m| m.role == Role::User && !tool_results(m).is_empty())
        .map(tool_results)
        .expect("tool results");
    let largest = h
        .server
        .requests()
        .iter()
        .map(|r| r.to_string().len())
        .max()
        .unwrap_or(0);
    assert_eq!(h.server.requests().len(), 3, "hostile, done, again");
    (results, largest)
}

async fn ten_thousand_tool_calls_get_results_past_the_cap(api: Api) {
    let calls: Vec<Value> = (0..10_000)
        .map(|i| {
            json!({"type": "tool_use", "id": format!("toolu_{i:05}"), "name": "Glob",
                   "input": {"pattern": "*.md"}})
        })
        .collect();
    let h = harness(api, json!({"content": calls, "stop_reason": "tool_use"})).await;
    h.write("README.md", "hi\n");
    let (results, largest) = run(&h).await;
    assert_eq!(results.len(), 10_000, "one result per call, in order");
    for (i, (id, is_error, text)) in results.iter().enumerate() {
        assert_eq!(id, &format!("toolu_{i:05}"));
        if i < MAX_TOOL_CALLS_PER_ANSWER {
            assert_eq!((*is_error, text.as_str()), (false, "README.md"), "call {i}");
        } else {
            let want = fill(
                TOO_MANY_TOOL_CALLS,
                &[
                    ("n", &(i + 1).to_string()),
                    ("max", &MAX_TOOL_CALLS_PER_ANSWER.to_string()),
                ],
            );
            assert_eq!((*is_error, text), (true, &want), "call {i}");
        }
    }
    // 10 000 short results: a few MB at most, never the calls' work.
    assert!(largest < 8 * 1024 * 1024, "request of {largest} bytes");
}

/// Over the input cap through the whole loop. The cap, not the size,
/// decides: a 50 MB `new_string` takes the same path, and
/// `provider::assemble`'s `an_input_over_the_cap_is_dropped_as_it_arrives`
/// streams 50 MB through the assembler (here, a debug build's JSON
/// encoding of 50 MB in mock-llm would take most of a minute).
async fn a_new_string_over_the_cap_is_refused_and_not_kept(api: Api) {
    let size = MAX_TOOL_INPUT_BYTES + 1024 * 1024;
    let input = json!({"file_path": "a.txt", "old_string": "a", "new_string": "x".repeat(size)});
    let h = harness(
        api,
        json!({"content": [{"type": "tool_use", "id": "toolu_big", "name": "Edit", "input": input}],
               "stop_reason": "tool_use", "json_chunk_chars": 1024 * 1024}),
    )
    .await;
    h.write("a.txt", "a\n");
    let (results, largest) = run(&h).await;
    let want = fill(
        TOOL_INPUT_TOO_LARGE,
        &[("tool", "Edit"), ("max", &MAX_TOOL_INPUT_BYTES.to_string())],
    );
    assert_eq!(results, vec![("toolu_big".to_string(), true, want)]);
    assert_eq!(h.read("a.txt"), "a\n", "nothing changed");
    assert!(largest < 1024 * 1024, "request of {largest} bytes");
}

async fn deeply_nested_input_is_refused(api: Api) {
    let depth = 10_000;
    let raw = format!(
        "{{\"pattern\": \"x\", \"path\": {}0{}}}",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let h = harness(
        api,
        json!({"content": [{"type": "tool_use", "id": "toolu_deep", "name": "Grep",
                            "input": {}, "input_json": raw}],
               "stop_reason": "tool_use", "json_chunk_chars": 4096}),
    )
    .await;
    let (results, _) = run(&h).await;
    let want = fill(
        TOOL_INPUT_TOO_DEEP,
        &[("tool", "Grep"), ("max", &MAX_TOOL_INPUT_DEPTH.to_string())],
    );
    assert_eq!(results, vec![("toolu_deep".to_string(), true, want)]);
}

async fn a_one_megabyte_tool_name_is_refused_and_cut(api: Api) {
    let name = "x".repeat(1024 * 1024);
    let h = harness(
        api,
        json!({"content": [{"type": "tool_use", "id": "toolu_name", "name": name, "input": {}}],
               "stop_reason": "tool_use"}),
    )
    .await;
    let (results, largest) = run(&h).await;
    let want = fill(
        TOOL_NAME_TOO_LONG,
        &[
            ("bytes", &(1024 * 1024).to_string()),
            ("start", &"x".repeat(40)),
            ("max", "128"),
        ],
    );
    assert_eq!(results, vec![("toolu_name".to_string(), true, want)]);
    assert!(largest < 64 * 1024, "request of {largest} bytes");
}

async fn a_path_that_is_not_utf8_is_an_input_error(api: Api) {
    // JSON text can name a non-UTF-8 path only through an unpaired
    // surrogate escape, which no Rust string holds.
    let h = harness(
        api,
        json!({"content": [{"type": "tool_use", "id": "toolu_utf", "name": "Read",
                            "input": {}, "input_json": "{\"file_path\": \"/tmp/\\udcff.txt\"}"}],
               "stop_reason": "tool_use"}),
    )
    .await;
    let (results, _) = run(&h).await;
    assert_eq!(results.len(), 1);
    let (id, is_error, text) = &results[0];
    assert_eq!((id.as_str(), *is_error), ("toolu_utf", true));
    assert!(
        text.starts_with("The input for Read was not valid JSON (") && text.contains("surrogate"),
        "{text}"
    );
}

on_both_apis!(
    ten_thousand_tool_calls_get_results_past_the_cap,
    a_new_string_over_the_cap_is_refused_and_not_kept,
    deeply_nested_input_is_refused,
    a_one_megabyte_tool_name_is_refused_and_cut,
    a_path_that_is_not_utf8_is_an_input_error,
);
