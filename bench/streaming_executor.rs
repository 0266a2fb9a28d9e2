//! Wall time of one scripted five-tool turn with the streaming tool executor
//! on vs off, against mock-llm on loopback.
//!
//! The model streams five Bash calls (`sleep 0.25 && touch fN`, not
//! read-only, so they run one at a time) paced by `event_delay_ms`. With the
//! executor on, each call starts when its `tool_use` block is complete, while
//! the model is still writing; off, all wait for the whole answer. Prints the
//! median wall time of each mode and their ratio (on / off), both measured in
//! this run. Run: `make bench` (or `cargo bench --bench streaming_executor`).

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use lathe_core::agent::{Session, SessionParts, Status};
use lathe_core::config::Config;
use lathe_core::editor::DiskEditor;
use lathe_core::events::{NullSink, TurnOutcome};
use lathe_core::permissions::{Rule, RuleKind, RuleSource, ScriptedPrompter};
use serde_json::json;

const RUNS: usize = 5;

fn script() -> String {
    let calls: Vec<_> = (1..=5)
        .map(|i| {
            json!({"type": "tool_use", "id": format!("toolu_{i}"), "name": "Bash",
                   "input": {"command": format!("sleep 0.25 && touch f{i}")}})
        })
        .collect();
    json!({"responses": [
        {"content": calls, "stop_reason": "tool_use", "json_chunk_chars": 8, "event_delay_ms": 25},
        {"content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"}
    ]})
    .to_string()
}

async fn one_turn(streaming_tools: bool) -> Result<Duration, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let server = mock_llm::spawn(
        mock_llm::Script::from_json(&script()).map_err(|e| e.to_string())?,
        None,
    )
    .await
    .map_err(|e| e.to_string())?;
    let mut config = Config::new(dir.path());
    config.base_url = server.url();
    config.streaming_tools = streaming_tools;
    config
        .permissions
        .push(RuleKind::Allow, Rule::tool("Bash"), RuleSource::Setup);
    let session = Session::new(SessionParts {
        provider: lathe_core::provider::from_config(&config).map_err(|e| e.to_string())?,
        config,
        editor: Arc::new(DiskEditor),
        prompter: Arc::new(ScriptedPrompter::default()),
        sink: Arc::new(NullSink),
        hooks: Vec::new(),
    })
    .map_err(|e| e.to_string())?;
    let start = Instant::now();
    session
        .ask("make the files", &tokio::runtime::Handle::current())
        .map_err(|e| e.to_string())?;
    loop {
        match session.status() {
            Status::Idle(Some(TurnOutcome::Done)) => return Ok(start.elapsed()),
            Status::Idle(Some(other)) => return Err(format!("turn ended {other:?}")),
            _ => tokio::time::sleep(Duration::from_millis(2)).await,
        }
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), String> {
    let (mut on, mut off) = (Vec::new(), Vec::new());
    one_turn(true).await?; // warm-up
    for _ in 0..RUNS {
        on.push(one_turn(true).await?);
        off.push(one_turn(false).await?);
    }
    let (on, off) = (median(on), median(off));
    println!("streaming executor, five-tool turn, median of {RUNS} runs each:");
    println!(
        "  on  (tools start as their blocks complete): {:>6.0} ms",
        on.as_secs_f64() * 1e3
    );
    println!(
        "  off (tools start after the whole answer):   {:>6.0} ms",
        off.as_secs_f64() * 1e3
    );
    println!(
        "  ratio on/off: {:.2}",
        on.as_secs_f64() / off.as_secs_f64()
    );
    Ok(())
}
