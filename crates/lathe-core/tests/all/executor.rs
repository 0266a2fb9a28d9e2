//! Tool execution against mock-llm over loopback: batches, the streaming
//! executor, interruption and retries. mock-llm checks the tool_use/tool_result
//! pairing on every request, so each `done` also proves every request was
//! valid.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use common::{tool_results, wait_idle, Harness};
use lathe_core::config::{Config, StreamFallback};
use lathe_core::events::{AgentEvent, TurnOutcome};
use lathe_core::execution::{partition_tool_calls, Batch, PendingToolUse};
use lathe_core::permissions::{PermissionPreview, PromptAnswer};
use lathe_core::protocol::{ContentBlock, ToolUse};
use lathe_core::tools::{Tool, ToolContext, ToolError, ToolOutput, TypedTool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// A read-only test tool that records how many of its calls run at once and
/// can wait on a shared barrier.
#[derive(Default)]
struct Probe {
    running: AtomicUsize,
    peak: AtomicUsize,
    barrier: Option<tokio::sync::Barrier>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ProbeInput {
    /// Milliseconds to hold the slot (none: 0, so `{}` is a valid input).
    #[serde(default)]
    ms: u64,
}

#[async_trait]
impl TypedTool for SharedProbe {
    type Input = ProbeInput;
    type Plan = ();
    const NAME: &'static str = "Probe";
    const KIND: lathe_core::tools::ToolKind = lathe_core::tools::ToolKind::Other;
    fn description(&self) -> String {
        "test probe".into()
    }
    fn is_read_only(&self, _: &ProbeInput) -> bool {
        true
    }
    fn normalize(&self, input: ProbeInput, _: &Path) -> ProbeInput {
        input
    }
    fn target_path(&self, _: &ProbeInput) -> Option<PathBuf> {
        None
    }
    async fn validate_input(&self, _: &ProbeInput, _: &ToolContext) -> Result<(), ToolError> {
        Ok(())
    }
    fn permission_preview(&self, _: &ProbeInput, _: &(), _: &Path) -> PermissionPreview {
        PermissionPreview::default()
    }
    async fn call(
        &self,
        input: ProbeInput,
        _: (),
        _: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let p = &self.0;
        let now = p.running.fetch_add(1, Ordering::SeqCst) + 1;
        p.peak.fetch_max(now, Ordering::SeqCst);
        if let Some(b) = &p.barrier {
            // Passes only when all parties run at the same time.
            if tokio::time::timeout(Duration::from_secs(5), b.wait())
                .await
                .is_err()
            {
                p.running.fetch_sub(1, Ordering::SeqCst);
                return Err(ToolError::new(
                    "barrier timed out: calls did not run concurrently",
                ));
            }
        }
        tokio::time::sleep(Duration::from_millis(input.ms)).await;
        p.running.fetch_sub(1, Ordering::SeqCst);
        Ok(ToolOutput::text("probed", "probed"))
    }
    fn describe(&self, _: &ProbeInput, _: &Path) -> String {
        String::new()
    }
}

struct SharedProbe(Arc<Probe>);

/// A session against mock-llm playing `script` that allows every prompt
/// ("always"), keeps its state under the project's `.state`, with `tune`
/// applied to the config and the `extra` tools added.
async fn harness(
    script: Value,
    tune: impl FnOnce(&mut Config),
    extra: Vec<Arc<dyn Tool>>,
) -> Harness {
    let tune = |config: &mut Config| {
        config.state_dir = config.cwd.join(".state");
        tune(config);
    };
    common::harness(script, vec![PromptAnswer::AllowSession], tune, extra).await
}

fn tool_use(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": name, "input": input})
}

fn end(text: &str, expect: Value) -> Value {
    json!({"content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "expect": expect})
}

#[test]
fn partition_groups_adjacent_safe_calls() {
    let calls: Vec<PendingToolUse> = [
        ("Grep", json!({"pattern": "a"})),
        ("Read", json!({"file_path": "/x/b.txt"})),
        (
            "Edit",
            json!({"file_path": "/x/b.txt", "old_string": "a", "new_string": "b"}),
        ),
        ("Grep", json!({"pattern": "b"})),
        ("Bash", json!({"command": "ls"})),
        ("Bash", json!({"command": "rm -rf x"})),
        ("Nope", json!({})),
        ("Read", json!({"file_path": 3})),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, (name, input))| {
        PendingToolUse::from(ToolUse {
            id: format!("t{i}"),
            name: name.into(),
            input,
            extra: Default::default(),
        })
    })
    .collect();
    let env = common::env_at(Path::new("/x"))
        .results(std::env::temp_dir(), "p")
        .build();
    let batch = |concurrent, calls: &[usize]| Batch {
        concurrent,
        calls: calls.to_vec(),
    };
    assert_eq!(
        partition_tool_calls(&calls, &env),
        vec![
            batch(true, &[0, 1]),
            batch(false, &[2]),
            batch(true, &[3, 4]),
            batch(false, &[5]),
            batch(false, &[6]),
            batch(false, &[7]),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grep_read_edit_grep_run_in_order_and_the_last_grep_sees_the_edit() {
    let script = json!({"responses": [
        {"content": [
            tool_use("toolu_a", "Grep", json!({"pattern": "old_value", "output_mode": "content"})),
            tool_use("toolu_b", "Read", json!({"file_path": "cfg.txt"})),
            tool_use("toolu_c", "Edit", json!({"file_path": "cfg.txt", "old_string": "old_value", "new_string": "new_value"})),
            tool_use("toolu_d", "Grep", json!({"pattern": "new_value", "output_mode": "content"}))
         ], "stop_reason": "tool_use"},
        end("done", json!({
            "tool_result_is_error": {"toolu_a": false, "toolu_b": false, "toolu_c": false, "toolu_d": false},
            "tool_result_contains": {"toolu_a": "cfg.txt:1:x = old_value", "toolu_d": "cfg.txt:1:x = new_value"}
        }))
    ]});
    for streaming in [true, false] {
        let h = harness(script.clone(), |c| c.streaming_tools = streaming, vec![]).await;
        std::fs::write(h.root.join("cfg.txt"), "x = old_value\n").expect("write");
        assert_eq!(
            h.ask("update the value").await,
            TurnOutcome::Done,
            "streaming_tools = {streaming}"
        );
        let t = h.session.transcript();
        let ids: Vec<String> = tool_results(&t[2]).into_iter().map(|r| r.0).collect();
        assert_eq!(
            ids,
            ["toolu_a", "toolu_b", "toolu_c", "toolu_d"],
            "results in call order"
        );
        // Edit started only after both reads finished; the last Grep after the Edit.
        let order: Vec<String> = h
            .sink
            .events()
            .into_iter()
            .filter_map(|e| match e {
                AgentEvent::ToolQueued { id, .. } => Some(format!("queued {id}")),
                AgentEvent::ToolStarted { id, .. } => Some(format!("start {id}")),
                AgentEvent::ToolFinished { id, .. } => Some(format!("end {id}")),
                _ => None,
            })
            .collect();
        let pos = |s: &str| {
            order
                .iter()
                .position(|o| o == s)
                .unwrap_or_else(|| panic!("{s} in {order:?}"))
        };
        assert!(
            pos("end toolu_a") < pos("start toolu_c") && pos("end toolu_b") < pos("start toolu_c"),
            "{order:?}"
        );
        assert!(pos("end toolu_c") < pos("start toolu_d"), "{order:?}");
        if !streaming {
            // All four arrive at once: the reads start, the Edit and the
            // last Grep wait, and the chat is told they are queued.
            assert!(!order.contains(&"queued toolu_a".to_string()), "{order:?}");
            assert!(pos("queued toolu_c") < pos("start toolu_c"), "{order:?}");
            assert!(pos("queued toolu_d") < pos("start toolu_d"), "{order:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_tool_starts_while_the_model_is_still_writing() {
    let script = json!({"responses": [
        {"content": [
            tool_use("toolu_1", "Glob", json!({"pattern": "*"})),
            {"type": "text", "text": "still writing after the tool call"},
            tool_use("toolu_2", "Glob", json!({"pattern": "*.md"}))
         ], "stop_reason": "tool_use", "text_chunk_chars": 2, "event_delay_ms": 20},
        end("ok", json!({"tool_result_is_error": {"toolu_1": false, "toolu_2": false}}))
    ]});
    let h = harness(script, |_| {}, vec![]).await;
    assert_eq!(h.ask("look").await, TurnOutcome::Done);
    let events = h.sink.events();
    let started = events
        .iter()
        .position(|e| matches!(e, AgentEvent::ToolStarted { id, .. } if id == "toolu_1"))
        .expect("started");
    let last_text = events
        .iter()
        .rposition(|e| matches!(e, AgentEvent::TextDelta { .. }))
        .expect("text");
    assert!(
        started < last_text,
        "Glob started before the answer's text ended"
    );
    let t = h.session.transcript();
    let ids: Vec<String> = tool_results(&t[2]).into_iter().map(|r| r.0).collect();
    assert_eq!(ids, ["toolu_1", "toolu_2"]);
}

fn probe_script(n: usize) -> Value {
    let calls: Vec<Value> = (0..n)
        .map(|i| tool_use(&format!("toolu_{i}"), "Probe", json!({"ms": 30})))
        .collect();
    let not_error: serde_json::Map<String, Value> = (0..n)
        .map(|i| (format!("toolu_{i}"), json!(false)))
        .collect();
    json!({"responses": [
        {"content": calls, "stop_reason": "tool_use"},
        end("ok", json!({"tool_result_is_error": not_error}))
    ]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_safe_calls_run_concurrently() {
    let probe = Arc::new(Probe {
        barrier: Some(tokio::sync::Barrier::new(10)),
        ..Probe::default()
    });
    let h = harness(
        probe_script(10),
        |_| {},
        vec![Arc::new(SharedProbe(probe.clone()))],
    )
    .await;
    assert_eq!(
        h.ask("probe").await,
        TurnOutcome::Done,
        "all ten met at the barrier"
    );
    assert_eq!(probe.peak.load(Ordering::SeqCst), 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_tool_concurrency_bounds_a_batch() {
    let probe = Arc::new(Probe::default());
    let h = harness(
        probe_script(10),
        |c| c.max_tool_concurrency = 2,
        vec![Arc::new(SharedProbe(probe.clone()))],
    )
    .await;
    assert_eq!(h.ask("probe").await, TurnOutcome::Done);
    assert_eq!(probe.peak.load(Ordering::SeqCst), 2);
}

fn alive_with(marker: &str) -> bool {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .chars()
                .all(|c| c.is_ascii_digit())
        })
        .any(|e| {
            let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let zombie = stat
                .rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'));
            // `starts_with`: the `sleep` itself, not the `bash -c` that
            // execs it — while a process execs, its cmdline reads empty,
            // so a `bash -c` seen once may be missing on the next look.
            !zombie
                && String::from_utf8_lossy(&cmd)
                    .replace('\0', " ")
                    .starts_with(marker)
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupting_a_long_bash_kills_its_process_group_and_the_conversation_continues() {
    let marker = format!(
        "{}.{}",
        40 + std::process::id() % 50,
        std::process::id() % 997
    );
    let script = json!({"responses": [
        {"content": [
            tool_use("toolu_1", "Bash", json!({"command": format!("sleep {marker}")})),
            tool_use("toolu_2", "Glob", json!({"pattern": "*"}))
         ], "stop_reason": "tool_use"},
        end("continuing", json!({
            "tool_result_is_error": {"toolu_1": true, "toolu_2": true},
            "last_user_text_contains": "go on"
        }))
    ]});
    let h = harness(script, |c| c.max_tool_concurrency = 1, vec![]).await;
    h.session
        .ask("run it", &tokio::runtime::Handle::current())
        .expect("ask");
    let mut started = false;
    for _ in 0..500 {
        if alive_with(&format!("sleep {marker}")) {
            started = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(started, "bash started");
    h.session.stop();
    assert_eq!(wait_idle(&h.session).await, TurnOutcome::Stopped);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !alive_with(&format!("sleep {marker}")),
        "the process group is gone"
    );
    let t = h.session.transcript();
    let results = tool_results(&t[2]);
    assert_eq!(results.len(), 2, "one result per tool_use: {results:?}");
    assert!(
        results[1]
            .2
            .starts_with("Not applied: the user interrupted before Glob ran"),
        "the queued Glob never ran: {results:?}"
    );
    assert_eq!(h.ask("go on").await, TurnOutcome::Done);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overloaded_529_then_success_is_retried() {
    let script = json!({"responses": [
        {"fault": {"http_status": 529}},
        end("hello", json!({"last_user_text_contains": "hi"}))
    ]});
    let h = harness(script, |_| {}, vec![]).await;
    assert_eq!(h.ask("hi").await, TurnOutcome::Done);
    assert_eq!(h.server.requests().len(), 2);
    let n = h.notices();
    assert!(
        n.iter()
            .any(|t| t.starts_with("retrying in ") && t.contains("(attempt 2 of 5)")),
        "{n:?}"
    );
    assert_eq!(h.session.transcript().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_second_wait_is_shown_as_it_is() {
    let script = json!({"responses": [{"fault": {"http_status": 529}}, end("hello", json!({}))]});
    let h = harness(script, |_| {}, vec![]).await;
    assert_eq!(h.ask("hi").await, TurnOutcome::Done);
    // The first backoff is 500 ms with jitter: never shown as "1s" or "0s".
    let n = h.notices();
    assert!(
        n.iter()
            .any(|t| t.starts_with("retrying in 0.") && !t.starts_with("retrying in 0s")),
        "{n:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_x_should_retry_overrules_the_status() {
    // 529 is retried by status, but the server says no.
    let script = json!({"responses": [
        {"fault": {"http_status": 529, "should_retry": false}},
        end("never", json!({}))
    ]});
    let h = harness(script, |_| {}, vec![]).await;
    assert!(matches!(h.ask("hi").await, TurnOutcome::Error(_)));
    assert_eq!(h.server.requests().len(), 1);
    // 400 is never retried by status, but the server says yes.
    let script = json!({"responses": [
        {"fault": {"http_status": 400, "should_retry": true}},
        end("hello", json!({}))
    ]});
    let h = harness(script, |_| {}, vec![]).await;
    assert_eq!(h.ask("hi").await, TurnOutcome::Done);
    assert_eq!(h.server.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quota_limit_is_not_retried_and_the_user_is_told() {
    let script = json!({"responses": [
        {"fault": {"http_status": 429, "retry_after_s": 1,
                   "message": "You have reached your specified API usage limits. You will regain access on 2026-12-01 at 00:00 UTC."}},
        end("never", json!({}))
    ]});
    let h = harness(script, |_| {}, vec![]).await;
    let TurnOutcome::Error(msg) = h.ask("hi").await else {
        panic!("expected an error")
    };
    assert_eq!(h.server.requests().len(), 1, "no retry for a quota limit");
    assert!(
        msg.contains("You have reached your specified API usage limits"),
        "{msg}"
    );
    assert!(
        msg.contains(lathe_core::provider::hints::HINT_QUOTA),
        "{msg}"
    );
    assert!(
        !h.notices().iter().any(|t| t.starts_with("retrying")),
        "{:?}",
        h.notices()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_429_honours_retry_after() {
    let script = json!({"responses": [
        {"fault": {"http_status": 429, "retry_after_s": 1}},
        end("hello", json!({}))
    ]});
    let h = harness(script, |_| {}, vec![]).await;
    assert_eq!(h.ask("hi").await, TurnOutcome::Done);
    // The wait comes from retry-after exactly (no backoff jitter): the notice
    // states it; no wall-clock assertion.
    assert!(
        h.notices()
            .iter()
            .any(|t| t.starts_with("retrying in 1s (attempt 2 of 5)")),
        "{:?}",
        h.notices()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overloaded_error_mid_stream_withdraws_the_answer_and_retries() {
    let script = json!({"responses": [
        {"content": [{"type": "text", "text": "partial answer that will break"}],
         "fault": {"sse_error": "overloaded_error", "after_events": 5}},
        end("the real answer", json!({}))
    ]});
    let h = harness(script, |_| {}, vec![]).await;
    assert_eq!(h.ask("hi").await, TurnOutcome::Done);
    let events = h.sink.events();
    assert!(events
        .iter()
        .any(|e| matches!(e, AgentEvent::AssistantWithdrawn { .. })));
    let t = h.session.transcript();
    assert_eq!(t.len(), 2, "only the retried answer is kept");
    assert!(matches!(&t[1].content[0], ContentBlock::Text { text } if text == "the real answer"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disconnect_after_a_tool_use_keeps_it_with_its_result_and_continues() {
    // 1 message_start, 2 ping, 3-5 the Glob (start, one delta, stop), 6 the
    // text's start (the Glob runs), 7 its first delta; then the break.
    let script = json!({"responses": [
        {"content": [
            tool_use("toolu_1", "Glob", json!({"pattern": "*"})),
            {"type": "text", "text": "more text that never arrives"}
         ], "json_chunk_chars": 1000, "text_chunk_chars": 4,
         "fault": {"disconnect_after_events": 7}},
        {"content": [tool_use("toolu_9", "Glob", json!({"pattern": "*.md"}))], "stop_reason": "tool_use",
         "expect": {"tool_result_is_error": {"toolu_1": false}}},
        end("done", json!({"tool_result_is_error": {"toolu_9": false}}))
    ]});
    for fallback in [StreamFallback::Streaming, StreamFallback::NonStreaming] {
        let h = harness(script.clone(), |c| c.stream_fallback = fallback, vec![]).await;
        assert_eq!(h.ask("look").await, TurnOutcome::Done, "{fallback:?}");
        let t = h.session.transcript();
        let all_ids: Vec<String> = t
            .iter()
            .flat_map(|m| m.tool_uses().map(|u| u.id.clone()))
            .collect();
        assert_eq!(
            all_ids,
            ["toolu_1", "toolu_9"],
            "the completed call of the broken answer stays, with its result"
        );
        assert_eq!(
            t[1].content.len(),
            1,
            "the text that was still streaming is dropped: {:?}",
            t[1]
        );
        assert!(
            h.notices()
                .iter()
                .any(|n| n.starts_with("The answer broke off (")
                    && n.contains("after 1 tool call started")),
            "{:?}",
            h.notices()
        );
        let streamed: Vec<bool> = h
            .server
            .requests()
            .iter()
            .map(|r| r["stream"] == json!(true))
            .collect();
        match fallback {
            // The next request after a broken stream does not stream.
            StreamFallback::NonStreaming => assert_eq!(streamed, [true, false, true]),
            _ => assert_eq!(streamed, [true, true, true]),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_fallback_off_ends_the_turn_with_the_error() {
    let script = json!({"responses": [
        {"content": [{"type": "text", "text": "partial answer"}], "fault": {"disconnect_after_events": 4}},
        end("never", json!({}))
    ]});
    let h = harness(script, |c| c.stream_fallback = StreamFallback::Off, vec![]).await;
    assert!(matches!(h.ask("hi").await, TurnOutcome::Error(_)));
    assert_eq!(h.server.requests().len(), 1);
    assert_eq!(h.session.transcript().len(), 1, "only the user's text");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_errors_are_not_retried_and_say_what_to_do() {
    let script = json!({"responses": [{"fault": {"http_status": 401}}, end("never", json!({}))]});
    let h = harness(script, |_| {}, vec![]).await;
    let TurnOutcome::Error(msg) = h.ask("hi").await else {
        panic!("expected an error")
    };
    assert_eq!(h.server.requests().len(), 1);
    assert!(msg.contains("ANTHROPIC_API_KEY"), "{msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_output_streams_to_the_chat_while_it_runs() {
    let script = json!({"responses": [
        {"content": [tool_use("toolu_1", "Bash", json!({"command": "echo first; sleep 0.4; echo second"}))],
         "stop_reason": "tool_use"},
        end("ok", json!({"tool_result_contains": {"toolu_1": "first\nsecond"}}))
    ]});
    let h = harness(script, |_| {}, vec![]).await;
    assert_eq!(h.ask("run").await, TurnOutcome::Done);
    let events = h.sink.events();
    let first = events
        .iter()
        .position(|e| matches!(e, AgentEvent::ToolProgress { text, .. } if text.contains("first")))
        .expect("progress with the first line");
    let finished = events
        .iter()
        .position(|e| matches!(e, AgentEvent::ToolFinished { .. }))
        .expect("finished");
    assert!(
        first < finished,
        "output arrived while the command still ran"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_bash_cancels_its_running_siblings() {
    let script = json!({"responses": [
        {"content": [
            tool_use("toolu_1", "Bash", json!({"command": "sleep 30", "timeout": 300})),
            tool_use("toolu_2", "Bash", json!({"command": "sleep 20"}))
         ], "stop_reason": "tool_use"},
        end("ok", json!({
            "tool_result_is_error": {"toolu_1": true, "toolu_2": true},
            "tool_result_contains": {"toolu_2": "was cancelled because a Bash call running alongside it in the same batch failed"}
        }))
    ]});
    let h = harness(script, |_| {}, vec![]).await;
    let started = std::time::Instant::now();
    assert_eq!(h.ask("run both").await, TurnOutcome::Done);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the sibling did not run to its end"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_bash_limits_apply() {
    let script = json!({"responses": [
        {"content": [tool_use("toolu_1", "Bash", json!({"command": "ls", "timeout": 5000}))], "stop_reason": "tool_use"},
        end("ok", json!({"tool_result_is_error": {"toolu_1": true}, "tool_result_contains": {"toolu_1": "1000"}}))
    ]});
    let h = harness(
        script,
        |c| {
            c.bash_default_timeout_ms = 500;
            c.bash_max_timeout_ms = 1000;
        },
        vec![],
    )
    .await;
    assert_eq!(h.ask("run").await, TurnOutcome::Done);
}

/// A call whose input streams as an empty `partial_json`
/// runs with `{}`; one cut mid-JSON gets an error result instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_partial_json_runs_with_an_empty_object_and_cut_json_is_an_error() {
    let script = json!({"responses": [
        {"content": [
            {"type": "tool_use", "id": "toolu_1", "name": "Probe", "input_json": ""},
            {"type": "tool_use", "id": "toolu_2", "name": "Probe", "input_json": "{\"ms\": 1"}
         ], "stop_reason": "tool_use"},
        end("ok", json!({
            "tool_result_is_error": {"toolu_1": false, "toolu_2": true},
            "tool_result_contains": {"toolu_1": "probed", "toolu_2": "not valid JSON"}
        }))
    ]});
    let probe = Arc::new(Probe::default());
    let h = harness(script, |_| {}, vec![Arc::new(SharedProbe(probe))]).await;
    assert_eq!(h.ask("probe").await, TurnOutcome::Done);
}
