//! A conversation past the context window: mock-llm enforces a
//! window (tokens = request bytes / 4, the API's own 400 beyond it) and
//! answers summary requests itself; lathe clears old tool results, then
//! compacts, before requests that would not fit, retries once after a
//! refusal anyway, and never lets a refused prompt pile up. Every test
//! runs against both APIs.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;
use lathe_test_support::on_both_apis;

use common::{Api, Harness};
use lathe_core::events::{AgentEvent, TurnOutcome};
use lathe_core::protocol::{ContentBlock, Role};
use serde_json::{json, Value};

/// mock-llm's default window for these tests: the real one.
const WINDOW: u64 = 200_000;

async fn harness(
    api: Api,
    script: Value,
    tune: impl FnOnce(&mut lathe_core::config::Config),
) -> Harness {
    common::harness_on(api, script, vec![], tune, vec![]).await
}

fn read(id: &str, path: &str) -> Value {
    json!({"content": [{"type": "tool_use", "id": id, "name": "Read", "input": {"file_path": path}}]})
}

fn text(t: &str) -> Value {
    json!({"content": [{"type": "text", "text": t}]})
}

/// Every request body mock-llm got, with its size in tokens (bytes / 4).
fn request_tokens(h: &Harness) -> Vec<u64> {
    h.server
        .requests()
        .iter()
        .map(|r| (serde_json::to_vec(r).unwrap().len() / 4) as u64)
        .collect()
}

fn compactions(h: &Harness) -> Vec<(u64, u64, String)> {
    h.sink
        .events()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::Compacted {
                before,
                after,
                summary,
            } => Some((before, after, summary)),
            _ => None,
        })
        .collect()
}

/// Twelve Reads of 100 KB files (~300k tokens) in one turn, against a 200k
/// window: old results are cleared before the window fills, the turn goes
/// on to its end, the user is told, and no request is refused.
async fn reads_past_the_window_clear_old_results_and_go_on(api: Api) {
    let mut responses: Vec<Value> = (1..=12)
        .map(|i| read(&format!("toolu_{i:02}"), &format!("f{i}.txt")))
        .collect();
    // f1.txt again: its result was cleared, so the model gets the text,
    // not "unchanged since your last read".
    responses.push(read("toolu_13", "f1.txt"));
    responses.push(text("All read."));
    let script = json!({"context_window": WINDOW, "responses": responses});
    let h = harness(api, script, |_| {}).await;
    for i in 1..=12 {
        // 2000 lines (one Read) of ~94 KB with the line numbers.
        h.write(
            &format!("f{i}.txt"),
            &format!("{:<39}\n", format!("file {i}")).repeat(2000),
        );
    }
    assert_eq!(h.ask("read every file").await, TurnOutcome::Done);
    assert_eq!(h.server.served(), 14, "every scripted answer was used");
    let sizes = request_tokens(&h);
    assert_eq!(sizes.len(), 14, "no request was refused: {sizes:?}");
    let transcript = h.session.transcript();
    let again = common::tool_results(&transcript[transcript.len() - 2]);
    assert_eq!(again[0].0, "toolu_13");
    assert!(
        again[0].2.contains("file 1 "),
        "read again in full: {}",
        &again[0].2[..again[0].2.len().min(200)]
    );
    assert!(sizes.iter().all(|t| *t <= WINDOW), "{sizes:?}");
    assert!(
        h.notices()
            .iter()
            .any(|n| n.starts_with("Cleared the output of ")),
        "the user is told: {:?}",
        h.notices()
    );
    // The model is told what was cleared, and the pairing holds.
    let last = h.server.requests().last().unwrap().to_string();
    assert!(last.contains("The output of this Read call was cleared"));
    // A cleared Read is read again in full, not "unchanged".
    // `:Lathe context`: the parts, tool results by tool.
    let report = h.session.context_report();
    assert_eq!(report.tool_results[0].0, "Read");
    assert!(
        report.lines()[0].starts_with("lathe context: ctx "),
        "{:?}",
        report.lines()
    );
    let meter = h.session.context_meter().unwrap();
    assert_eq!(meter.window, WINDOW);
    assert!(meter.used > 0 && meter.used <= WINDOW, "{meter:?}");
}

/// Turns whose prompts cannot be cleared: before the request that would
/// cross the threshold, lathe compacts (mock-llm writes the summary without
/// using a scripted answer); the conversation goes on from the summary
/// and the user's latest prompt is kept verbatim.
async fn long_prompts_are_compacted_and_the_conversation_goes_on(api: Api) {
    let script = json!({"context_window": WINDOW, "responses": [
        text("one"), text("two"), text("three"), text("four"), text("five")
    ]});
    let h = harness(api, script, |_| {}).await;
    for (i, word) in ["alpha", "beta", "gamma", "delta", "omega"]
        .iter()
        .enumerate()
    {
        let prompt = format!("{word} {}", "y".repeat(200_000));
        assert_eq!(h.ask(&prompt).await, TurnOutcome::Done, "turn {i}");
    }
    assert_eq!(h.server.served(), 5, "summaries used no scripted answer");
    let sizes = request_tokens(&h);
    assert!(sizes.iter().all(|t| *t <= WINDOW), "{sizes:?}");
    let done = compactions(&h);
    assert!(!done.is_empty(), "compacted");
    let (before, after, summary) = &done[0];
    assert!(after < before, "{before} → {after}");
    assert!(summary.contains("mock-llm summary of"), "{summary}");
    // The conversation now starts from the summary.
    let first = &h.session.transcript()[0];
    assert_eq!(first.role, Role::User);
    assert!(matches!(&first.content[0], ContentBlock::Text { text }
        if text.starts_with("This conversation was compacted to fit the model's context window")));
    let last_request = h.server.requests().last().unwrap().to_string();
    assert!(last_request.contains("omega"), "the latest prompt is kept");
}

/// The window lathe believes is larger than the server's: the request is
/// refused (`prompt is too long` / `context_length_exceeded`); lathe
/// compacts and sends it again once, and the turn ends well.
async fn a_refusal_for_length_compacts_and_retries_once(api: Api) {
    let script = json!({"context_window": 60_000, "responses": [text("one"), text("two")]});
    let h = harness(api, script, |c| c.context_window = Some(1_000_000)).await;
    assert_eq!(
        h.ask(&format!("first {}", "a".repeat(150_000))).await,
        TurnOutcome::Done
    );
    assert_eq!(
        h.ask(&format!("second {}", "b".repeat(150_000))).await,
        TurnOutcome::Done
    );
    assert_eq!(compactions(&h).len(), 1);
    assert_eq!(h.server.served(), 2);
}

/// A window too small for even one prompt: the refusal says what the user
/// can do, and the refused prompt does not stay in the conversation, so
/// asking again does not make it longer.
async fn a_prompt_that_cannot_be_sent_does_not_pile_up(api: Api) {
    let script = json!({"context_window": 40_000, "responses": [text("hi")]});
    let h = harness(api, script, |c| c.context_window = Some(1_000_000)).await;
    assert_eq!(h.ask("hello").await, TurnOutcome::Done);
    let before = h.session.transcript();
    for _ in 0..2 {
        let outcome = h.ask(&format!("huge {}", "z".repeat(400_000))).await;
        let TurnOutcome::Error(msg) = outcome else {
            panic!("refused: {outcome:?}")
        };
        assert!(msg.contains("Run :Lathe compact"), "says what to do: {msg}");
        assert_eq!(h.session.transcript(), before, "nothing piles up");
    }
}

/// Three compactions that fail in a row (the prompt alone is over the
/// window) turn auto-compaction off with a message, never a loop.
async fn three_failed_compactions_turn_auto_compaction_off(api: Api) {
    let script = json!({"context_window": WINDOW, "responses": []});
    let h = harness(api, script, |_| {}).await;
    for _ in 0..3 {
        let outcome = h.ask(&format!("huge {}", "q".repeat(900_000))).await;
        assert!(matches!(outcome, TurnOutcome::Error(_)), "{outcome:?}");
    }
    let off: Vec<_> = h
        .notices()
        .into_iter()
        .filter(|n| n.starts_with("Compacting failed 3 times in a row"))
        .collect();
    assert_eq!(off.len(), 1, "{:?}", h.notices());
    assert!(h.session.transcript().is_empty(), "no refused prompt kept");
    // Off now: a refusal for length is not compacted either (it would
    // fail a fourth time); the user is told what to do.
    let failed_before = failed_compactions(&h);
    let outcome = h.ask(&format!("huge {}", "q".repeat(900_000))).await;
    let TurnOutcome::Error(msg) = outcome else {
        panic!("refused: {outcome:?}")
    };
    assert!(
        msg.contains("Run :Lathe compact") && msg.contains(":Lathe new"),
        "{msg}"
    );
    assert_eq!(failed_compactions(&h), failed_before, "{:?}", h.notices());
}

fn failed_compactions(h: &Harness) -> usize {
    h.notices()
        .iter()
        .filter(|n| n.starts_with("Compacting the conversation failed"))
        .count()
}

/// `auto_compact = false`: a request refused for its length is neither
/// compacted nor sent again; the error, then what the user can do, each a
/// line of its own (`:help lathe-context-window`).
async fn with_auto_compact_off_a_refusal_says_what_to_do(api: Api) {
    let script = json!({"context_window": 20_000, "responses": [text("hi")]});
    let h = harness(api, script, |c| {
        c.context_window = Some(20_000);
        c.auto_compact_permille = None;
    })
    .await;
    assert_eq!(h.ask("hello").await, TurnOutcome::Done);
    let outcome = h.ask(&format!("huge {}", "z".repeat(100_000))).await;
    let TurnOutcome::Error(msg) = outcome else {
        panic!("refused: {outcome:?}")
    };
    let lines: Vec<&str> = msg.lines().collect();
    assert_eq!(lines.len(), 2, "{msg}");
    assert!(
        lines[0].contains("20000"),
        "the API's own error first: {msg}"
    );
    assert!(
        lines[1].starts_with("The conversation does not fit")
            && lines[1].contains("Run :Lathe compact")
            && lines[1].contains(":Lathe new"),
        "{msg}"
    );
    assert!(compactions(&h).is_empty());
    assert!(
        !h.server
            .requests()
            .iter()
            .any(mock_llm::context_window::is_summary_request),
        "no summary was asked for"
    );
}

/// A compaction that fails (the prompt alone is over the window) is shown
/// once: the request refused for its length afterwards does not compact
/// the same conversation again and repeat the error.
async fn a_failed_compaction_is_shown_once(api: Api) {
    let script = json!({"context_window": WINDOW, "responses": []});
    let h = harness(api, script, |_| {}).await;
    let outcome = h.ask(&format!("huge {}", "q".repeat(900_000))).await;
    assert!(matches!(outcome, TurnOutcome::Error(_)), "{outcome:?}");
    let failed: Vec<_> = h
        .notices()
        .into_iter()
        .filter(|n| n.starts_with("Compacting the conversation failed"))
        .collect();
    assert_eq!(failed.len(), 1, "{:?}", h.notices());
}

/// The meter the chat was last told (winbar) is the session's own
/// (`status()`, the statusline) after a refused request too.
async fn the_chat_meter_matches_the_session_after_a_refusal(api: Api) {
    let script = json!({"context_window": 40_000, "responses": [text("hi")]});
    let h = harness(api, script, |c| c.context_window = Some(1_000_000)).await;
    assert_eq!(h.ask("hello").await, TurnOutcome::Done);
    let outcome = h.ask(&format!("huge {}", "z".repeat(400_000))).await;
    assert!(matches!(outcome, TurnOutcome::Error(_)), "{outcome:?}");
    let told = h
        .sink
        .events()
        .into_iter()
        .rev()
        .find_map(|e| match e {
            AgentEvent::Context { used, window } => Some((used, window)),
            _ => None,
        })
        .unwrap();
    let meter = h.session.context_meter().unwrap();
    assert_eq!(told, (meter.used, meter.window));
}

/// A summary that comes back empty is no compaction: `:Lathe compact`
/// fails with a message saying so, the conversation stays as it was and
/// the chat gets no "compacted" line (with nothing folded under it).
async fn an_empty_summary_fails_the_compaction(api: Api) {
    let script = json!({"summary": "<summary>\n</summary>", "responses": [text("hi")]});
    let h = harness(api, script, |_| {}).await;
    assert_eq!(h.ask("hello").await, TurnOutcome::Done);
    let before = h.session.transcript();
    let done = h
        .session
        .compact(None, &tokio::runtime::Handle::current())
        .unwrap();
    assert_eq!(
        done.await.unwrap(),
        Err("Compacting the conversation failed: the model answered without a summary".into())
    );
    assert!(compactions(&h).is_empty());
    assert_eq!(h.session.transcript(), before);
    assert_eq!(
        h.notices(),
        ["Compacting the conversation failed: the model answered without a summary"]
    );
}

/// An OpenAI-compatible server's own window (vLLM's `/v1/models`
/// `max_model_len`; mock-llm publishes its `context_window` there) is the
/// one lathe uses when setup() sets none.
async fn the_servers_published_window_is_used(api: Api) {
    let script = json!({"context_window": 32_768, "responses": [text("hi")]});
    let h = harness(api, script, |_| {}).await;
    assert_eq!(h.ask("hello").await, TurnOutcome::Done);
    let window = h.session.context_meter().unwrap().window;
    match api {
        Api::OpenAi => assert_eq!(window, 32_768),
        Api::Anthropic => assert_eq!(window, 200_000, "the Messages API publishes none"),
    }
}

/// An answer the model's full context window stopped says so and what to
/// do, not a plain "done" — `stop_reason: model_context_window_exceeded`
/// on the Messages API, `finish_reason: "length"` with fewer output tokens
/// than `max_tokens` on an OpenAI-compatible server (llama.cpp's way).
async fn an_answer_stopped_by_a_full_window_says_so(api: Api) {
    let script = json!({"responses": [
        {"content": [{"type": "text", "text": "Half an"}], "stop_reason": "model_context_window_exceeded"}
    ]});
    let h = harness(api, script, |_| {}).await;
    let outcome = h.ask("go on").await;
    assert_eq!(
        outcome,
        TurnOutcome::Error("The answer stopped because the model's context window is full. Run :Lathe compact and ask the model to go on, or :Lathe new to start afresh.".into())
    );
}

/// One turn that reads more than the window holds (three Reads of ~6k
/// tokens each against a 20k window, none old enough to clear): the
/// summary request keeps the start of each result, the conversation is
/// compacted and the turn goes on to its end.
async fn one_turn_past_the_window_is_compacted_and_goes_on(api: Api) {
    let script = json!({"context_window": 20_000, "responses": [
        read("toolu_01", "a.txt"),
        read("toolu_02", "b.txt"),
        read("toolu_03", "c.txt"),
        text("All read."),
    ]});
    let h = harness(api, script, |c| c.context_window = Some(20_000)).await;
    for f in ["a.txt", "b.txt", "c.txt"] {
        h.write(f, &format!("{:<39}\n", format!("line of {f}")).repeat(500));
    }
    assert_eq!(h.ask("read the three files").await, TurnOutcome::Done);
    assert_eq!(h.server.served(), 4, "every scripted answer was used");
    assert_eq!(compactions(&h).len(), 1, "{:?}", h.notices());
    let sizes = request_tokens(&h);
    assert!(sizes.iter().all(|t| *t <= 20_000), "{sizes:?}");
    // The file read last comes back after the compaction: too long for
    // the room a 20k window leaves (a tenth of it), its first lines that
    // fit, with where it continues.
    let first = &h.session.transcript()[0];
    let reattached: Vec<&str> = first
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } if text.contains(" as it is now") => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reattached.len(), 1, "{reattached:?}");
    let part = reattached[0];
    assert!(
        part.starts_with("c.txt as it is now, its first lines"),
        "{part}"
    );
    assert!(part.contains("     1\tline of c.txt"), "{part}");
    assert!(
        part.contains("The file continues: call Read with offset="),
        "{part}"
    );
    assert!(
        part.len() <= 2_000 * 4 + 300,
        "within a tenth of the window: {}",
        part.len()
    );
}

on_both_apis!(
    with_auto_compact_off_a_refusal_says_what_to_do,
    an_empty_summary_fails_the_compaction,
    a_failed_compaction_is_shown_once,
    the_chat_meter_matches_the_session_after_a_refusal,
    an_answer_stopped_by_a_full_window_says_so,
    one_turn_past_the_window_is_compacted_and_goes_on,
    three_failed_compactions_turn_auto_compaction_off,
    the_servers_published_window_is_used,
    reads_past_the_window_clear_old_results_and_go_on,
    long_prompts_are_compacted_and_the_conversation_goes_on,
    a_refusal_for_length_compacts_and_retries_once,
    a_prompt_that_cannot_be_sent_does_not_pile_up,
);
