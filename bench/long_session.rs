//! CPU per request as one conversation grows: a session of
//! `LATHE_BENCH_CALLS` (default 1000) scripted Read calls of 1 KB files,
//! one call per answer, against mock-llm run as its own process (so its
//! parsing of ever larger requests is not counted). lathe's process CPU
//! (user + system, `getrusage`) is sampled at every tool call; the figure is
//! the median CPU per request of the last 50 requests over that of the
//! first 50, both in this run — the cost of a request that carries the
//! whole conversation next to one that carries almost nothing. The
//! target: ≤ 2×. The window is set far above the session's size, so no
//! clearing or compaction happens (their cost is not what this measures).
//!
//! Needs `LATHE_BENCH_MOCK` (the release mock-llm binary); `make bench`
//! (bench/run.sh, part h; `LATHE_BENCH_ONLY=long`) passes it.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lathe_core::agent::{Session, SessionParts, Status};
use lathe_core::config::Config;
use lathe_core::editor::DiskEditor;
use lathe_core::events::{AgentEvent, EventSink, TurnOutcome};
use lathe_core::permissions::ScriptedPrompter;
use serde_json::json;

/// Requests at each end of the session whose CPU is compared.
const EDGE: usize = 50;

/// The process's CPU time so far (user + system).
fn cpu() -> Duration {
    // SAFETY: getrusage writes into the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// Keeps the CPU time at every tool call's start (one per request).
#[derive(Default)]
struct CpuAtCalls(Mutex<Vec<Duration>>);

impl EventSink for CpuAtCalls {
    fn emit(&self, event: AgentEvent) {
        if matches!(event, AgentEvent::ToolStarted { .. }) {
            self.0.lock().unwrap().push(cpu());
        }
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let Ok(mock) = std::env::var("LATHE_BENCH_MOCK") else {
        println!("long session: skipped (LATHE_BENCH_MOCK is not set)");
        return;
    };
    let calls: usize = std::env::var("LATHE_BENCH_CALLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    let dir = tempfile::tempdir().unwrap();
    let line = "lathe reads this file to measure what a long session costs\n";
    for i in 0..calls {
        let text = line.repeat(1024 / line.len() + 1);
        std::fs::write(dir.path().join(format!("f{i}.txt")), &text[..1024]).unwrap();
    }
    let mut responses: Vec<_> = (0..calls)
        .map(|i| {
            json!({"content": [{"type": "tool_use", "id": format!("toolu_{i:05}"), "name": "Read",
                                "input": {"file_path": format!("f{i}.txt")}}]})
        })
        .collect();
    responses.push(json!({"content": [{"type": "text", "text": "All read."}]}));
    let script = dir.path().join("script.json");
    std::fs::write(&script, json!({ "responses": responses }).to_string()).unwrap();

    let mut server = Command::new(&mock)
        .args([
            "--script".as_ref(),
            script.as_os_str(),
            "--port".as_ref(),
            "0".as_ref(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let url = first
        .trim()
        .strip_prefix("listening on ")
        .expect("mock-llm says where it listens")
        .to_string();

    let rt = tokio::runtime::Runtime::new().unwrap();
    let sink = Arc::new(CpuAtCalls::default());
    let mut config = Config::new(dir.path());
    config.base_url = url;
    std::env::set_var("LATHE_BENCH_KEY", "bench");
    config.api_key_env = "LATHE_BENCH_KEY".into();
    config.context_window = Some(100_000_000);
    config.max_turns = u32::try_from(calls + 10).unwrap();
    config.sessions_dir = None;
    let session = rt.block_on(async {
        Session::new(SessionParts {
            provider: lathe_core::provider::from_config(&config).unwrap(),
            config,
            editor: Arc::new(DiskEditor),
            prompter: Arc::new(ScriptedPrompter::default()),
            sink: sink.clone(),
            hooks: Vec::new(),
        })
        .unwrap()
    });
    let start = Instant::now();
    session.ask("read every file", rt.handle()).unwrap();
    let outcome = rt.block_on(async {
        loop {
            match session.status() {
                Status::Idle(Some(outcome)) => return outcome,
                _ => tokio::time::sleep(Duration::from_millis(5)).await,
            }
        }
    });
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(outcome, TurnOutcome::Done, "the session ran to its end");
    let at = sink.0.lock().unwrap().clone();
    assert_eq!(at.len(), calls, "one tool call per request");
    let per: Vec<Duration> = at.windows(2).map(|w| w[1] - w[0]).collect();
    let first = median(per[..EDGE].to_vec());
    let last = median(per[per.len() - EDGE..].to_vec());
    println!(
        "== long session: {calls} Read calls of 1 KB, one per request ({:.1} s in all)",
        start.elapsed().as_secs_f64()
    );
    println!(
        "CPU per request, median of the first {EDGE}: {:.2} ms; of the last {EDGE}: {:.2} ms; last / first: {:.2}x (target <= 2x)",
        first.as_secs_f64() * 1e3,
        last.as_secs_f64() * 1e3,
        last.as_secs_f64() / first.as_secs_f64().max(1e-9)
    );
}
