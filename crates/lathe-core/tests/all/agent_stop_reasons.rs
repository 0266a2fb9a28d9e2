//! How a turn ends each way an answer can end, against `mock-llm` over real
//! HTTP, on both APIs (`anthropic::…`, `openai::…`): a stream that breaks
//! after a call with side effects ran (the call never runs twice), an
//! answer cut at `max_tokens` (a cut call never runs; the answer is
//! continued once with more room), a refusal (taken out of the
//! conversation), and the token counts of turns and the session. mock-llm
//! refuses every request the real API would refuse, so each `Done` also
//! proves the recovered conversation is one the API accepts.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;
use lathe_test_support::on_both_apis;

use common::{harness_on, tool_results, Api, Harness};
use lathe_core::events::{AgentEvent, TurnOutcome};
use lathe_core::permissions::PromptAnswer;
use lathe_core::protocol::Role;
use serde_json::{json, Value};

fn tool_use(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": name, "input": input})
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

async fn harness(api: Api, script: Value) -> Harness {
    harness_on(
        api,
        script,
        vec![PromptAnswer::AllowSession],
        |_| {},
        vec![],
    )
    .await
}

/// Events (Messages API) or `data:` lines (chat completions) after which a
/// two-call answer `[first, second]` breaks: the first call has completed
/// and started (its following block opened), the second is still streaming.
/// Messages: 1 message_start, 2 ping, 3-5 the first call, 6 the second's
/// start, 7 its input. Chat completions: 1 role, 2-3 the first call, 4 the
/// second's opening, 5 its arguments.
fn after_first_call_started(api: Api) -> usize {
    match api {
        Api::Anthropic => 7,
        Api::OpenAi => 5,
    }
}

/// The completed calls of the broken answer, in the transcript.
fn tool_use_ids(h: &Harness) -> Vec<String> {
    h.session
        .transcript()
        .iter()
        .flat_map(|m| m.tool_uses().map(|u| u.id.clone()).collect::<Vec<_>>())
        .collect()
}

async fn a_bash_append_then_an_overload_mid_answer_runs_once(api: Api) {
    let script = json!({"responses": [
        {"content": [
            tool_use("toolu_1", "Bash", json!({"command": "echo run >> log; echo appended"})),
            tool_use("toolu_2", "Glob", json!({"pattern": "*"}))
         ], "json_chunk_chars": 1000,
         "fault": {"sse_error": "overloaded_error", "after_events": after_first_call_started(api)}},
        {"content": [text("The line is in the log.")], "stop_reason": "end_turn",
         "expect": {"tool_result_contains": {"toolu_1": "appended"}}}
    ]});
    let h = harness(api, script).await;
    assert_eq!(h.ask("append a line").await, TurnOutcome::Done);
    assert_eq!(h.read("log"), "run\n", "the command ran exactly once");
    assert_eq!(h.server.requests().len(), 2, "no answer was asked again");
    assert_eq!(tool_use_ids(&h), ["toolu_1"]);
    let n = h.notices();
    assert!(
        n.iter()
            .any(|t| t.starts_with("The answer broke off (") && t.contains("so nothing runs twice")),
        "{n:?}"
    );
}

async fn an_edit_then_a_disconnect_edits_once(api: Api) {
    let script = json!({"responses": [
        {"content": [tool_use("toolu_0", "Read", json!({"file_path": "a.txt"}))]},
        {"content": [
            tool_use("toolu_1", "Edit", json!({"file_path": "a.txt", "old_string": "hello", "new_string": "bye"})),
            tool_use("toolu_2", "Glob", json!({"pattern": "*.txt"}))
         ], "json_chunk_chars": 1000,
         "fault": {"disconnect_after_events": after_first_call_started(api)}},
        {"content": [text("Edited.")], "stop_reason": "end_turn",
         "expect": {"tool_result_contains": {"toolu_1": "a.txt"}}}
    ]});
    let h = harness(api, script).await;
    h.write("a.txt", "hello world\n");
    assert_eq!(h.ask("say bye").await, TurnOutcome::Done);
    assert_eq!(h.read("a.txt"), "bye world\n");
    assert_eq!(h.server.requests().len(), 3);
    let t = h.session.transcript();
    let edit = t
        .iter()
        .flat_map(tool_results)
        .find(|(id, ..)| id == "toolu_1")
        .expect("the Edit's result is in the transcript");
    assert!(!edit.1, "the Edit succeeded once: {}", edit.2);
}

/// The cut `Write` has complete JSON (`content_block_stop` included), yet
/// the stop reason shows it was the block the limit cut: it must not run.
async fn a_tool_call_cut_by_max_tokens_never_runs_even_when_its_json_is_complete(api: Api) {
    let script = json!({"responses": [
        {"content": [
            text("Writing the file."),
            tool_use("toolu_1", "Glob", json!({"pattern": "*"})),
            tool_use("toolu_2", "Write", json!({"file_path": "x.txt", "content": "half"}))
         ], "stop_reason": "max_tokens"},
        {"content": [text("Done, in smaller steps.")], "stop_reason": "end_turn",
         "expect": {"tool_result_contains": {"toolu_1": "No files"}}}
    ]});
    let h = harness_on(
        api,
        script,
        vec![PromptAnswer::AllowSession],
        |c| {
            c.max_tokens = 1000;
            c.retry_max_tokens = 4000;
        },
        vec![],
    )
    .await;
    assert_eq!(h.ask("write x.txt").await, TurnOutcome::Done);
    assert!(!h.root.join("x.txt").exists(), "the cut Write did not run");
    assert!(
        h.prompter.asked().is_empty(),
        "nobody was asked about a call that never runs"
    );
    let sent = h.server.requests();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0]["max_tokens"], 1000);
    assert_eq!(
        sent[1]["max_tokens"], 4000,
        "the continuation has more room"
    );
    let history = sent[1]["messages"].to_string();
    assert!(history.contains("Writing the file."), "{history}");
    assert!(
        !history.contains("toolu_2"),
        "the cut call is not in the history: {history}"
    );
    assert_eq!(tool_use_ids(&h), ["toolu_1"]);
    let n = h.notices();
    assert!(
        n.contains(&"The answer was cut at the max_tokens limit (1000 tokens); its last tool call (Write) was incomplete and did not run. lathe asks the model to continue with max_tokens 4000.".to_string()),
        "{n:?}"
    );
}

async fn an_answer_cut_twice_tells_the_user_and_the_conversation_stays_valid(api: Api) {
    let script = json!({"responses": [
        {"content": [text("Part one")], "stop_reason": "max_tokens"},
        {"content": [text(", part two")], "stop_reason": "max_tokens"},
        {"content": [text("Shorter now.")], "stop_reason": "end_turn",
         "expect": {"last_user_text_contains": "go on"}}
    ]});
    let h = harness(api, script).await;
    assert_eq!(h.ask("write a lot").await, TurnOutcome::Done);
    let n = h.notices();
    assert!(
        n.iter()
            .any(|t| t.starts_with("The answer was cut at the max_tokens limit again")),
        "{n:?}"
    );
    // Both parts are one assistant message; the next ask is accepted.
    let t = h.session.transcript();
    let roles: Vec<Role> = t.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant]);
    assert_eq!(h.ask("go on").await, TurnOutcome::Done);
}

async fn a_refusal_is_taken_out_of_the_conversation(api: Api) {
    let script = json!({"responses": [
        {"content": [text("I can't help with that.")], "stop_reason": "refusal"},
        {"content": [text("Sure.")], "stop_reason": "end_turn",
         "expect": {"last_user_text_contains": "something else"}}
    ]});
    let h = harness(api, script).await;
    assert_eq!(h.ask("something refused").await, TurnOutcome::Done);
    assert!(h.session.transcript().is_empty(), "nothing of it is kept");
    assert!(h
        .sink
        .events()
        .iter()
        .any(|e| matches!(e, AgentEvent::AssistantWithdrawn { reason } if reason == "refused")));
    let n = h.notices();
    assert!(
        n.iter()
            .any(|t| t.starts_with("The model declined to answer")),
        "{n:?}"
    );
    assert_eq!(h.ask("something else").await, TurnOutcome::Done);
    let next = h.server.requests()[1]["messages"].to_string();
    assert!(
        !next.contains("something refused") && !next.contains("I can't help"),
        "the refused exchange is not sent again: {next}"
    );
}

async fn token_usage_adds_up_per_turn_and_per_session(api: Api) {
    let script = json!({"responses": [
        {"content": [tool_use("toolu_1", "Glob", json!({"pattern": "*"}))],
         "usage": {"input_tokens": 100, "output_tokens": 10}},
        {"content": [text("one")], "usage": {"input_tokens": 120, "output_tokens": 5}},
        {"content": [text("two")], "usage": {"input_tokens": 7, "output_tokens": 3}}
    ]});
    let h = harness(api, script).await;
    let last_usage = |h: &Harness| {
        h.sink
            .events()
            .into_iter()
            .rev()
            .find_map(|e| match e {
                AgentEvent::Usage { turn, session } => Some((
                    (turn.input_tokens, turn.output_tokens),
                    (session.input_tokens, session.output_tokens),
                )),
                _ => None,
            })
            .expect("a usage event before the turn ended")
    };
    assert_eq!(h.ask("first").await, TurnOutcome::Done);
    assert_eq!(
        last_usage(&h),
        ((Some(220), Some(15)), (Some(220), Some(15)))
    );
    assert_eq!(h.ask("second").await, TurnOutcome::Done);
    assert_eq!(last_usage(&h), ((Some(7), Some(3)), (Some(227), Some(18))));
    let total = h.session.usage();
    assert_eq!(
        (total.input_tokens, total.output_tokens),
        (Some(227), Some(18))
    );
}

/// `pause_turn` (a long server-side tool use paused): the answer, server
/// tool blocks included, goes back exactly as it came and the model
/// continues. Messages API only: chat completions has no paused turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_turn_is_sent_back_as_it_came_and_continued() {
    let search = json!({"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search",
                        "input": {"query": "lathe"}});
    let found = json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01",
                       "content": [{"type": "web_search_result", "url": "https://example.com",
                                    "title": "Lathe", "encrypted_content": "abc", "page_age": null}]});
    let script = json!({"responses": [
        {"content": [text("Searching."), {"type": "raw", "block": search}, {"type": "raw", "block": found}],
         "stop_reason": "pause_turn"},
        {"content": [text("Found it.")], "stop_reason": "end_turn"}
    ]});
    let h = harness(Api::Anthropic, script).await;
    assert_eq!(h.ask("search the web").await, TurnOutcome::Done);
    let sent = h.server.requests();
    assert_eq!(sent.len(), 2);
    let mut back = sent[1]["messages"][1].clone();
    for block in back["content"].as_array_mut().unwrap() {
        block.as_object_mut().unwrap().remove("cache_control");
    }
    assert_eq!(
        back,
        json!({"role": "assistant", "content": [text("Searching."), search, found]}),
        "the paused answer goes back byte for byte"
    );
    let t = h.session.transcript();
    assert_eq!(t.len(), 2, "the continuation joins the paused answer");
    assert_eq!(t[1].content.len(), 4);
}

/// A refusal's `stop_details` reach the user.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_shows_its_stop_details() {
    let script = json!({"responses": [
        {"content": [text("No.")], "stop_reason": "refusal",
         "stop_details": {"type": "refusal", "category": "cyber", "explanation": "Looks like malware."}}
    ]});
    let h = harness(Api::Anthropic, script).await;
    assert_eq!(h.ask("write malware").await, TurnOutcome::Done);
    let n = h.notices();
    assert!(
        n.iter().any(
            |t| t.starts_with("The model declined to answer this request (")
                && t.contains("cyber")
                && t.contains("Looks like malware.")
        ),
        "{n:?}"
    );
}

/// Prompt caching: the second request of a turn reads the first one's
/// prefix from the cache (mock-llm simulates the cache from the
/// breakpoints), and the turn's usage counts it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_second_request_reads_the_prefix_from_the_cache() {
    let script = json!({"responses": [
        {"content": [tool_use("toolu_1", "Glob", json!({"pattern": "*"}))]},
        {"content": [text("Nothing here.")]}
    ]});
    let h = harness(Api::Anthropic, script).await;
    assert_eq!(h.ask("look around").await, TurnOutcome::Done);
    let sent = h.server.requests();
    let marks = |r: &Value| r.to_string().matches("\"cache_control\"").count();
    assert_eq!(marks(&sent[0]), 3, "tools, system and the last message");
    assert_eq!(marks(&sent[1]), 3);
    let usage = h.session.usage();
    assert!(
        usage.cache_read_input_tokens.unwrap_or(0) > 0,
        "the second request hit the cache: {usage:?}"
    );
    assert!(
        usage.cache_creation_input_tokens.unwrap_or(0) > 0,
        "{usage:?}"
    );
}

on_both_apis!(
    a_bash_append_then_an_overload_mid_answer_runs_once,
    an_edit_then_a_disconnect_edits_once,
    a_tool_call_cut_by_max_tokens_never_runs_even_when_its_json_is_complete,
    an_answer_cut_twice_tells_the_user_and_the_conversation_stays_valid,
    a_refusal_is_taken_out_of_the_conversation,
    token_usage_adds_up_per_turn_and_per_session,
);
