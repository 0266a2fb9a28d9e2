//! Background shells through the whole pipeline against `mock-llm`: a turn
//! that starts a command with `run_in_background: true`, reads its output
//! with BashOutput, stops it with KillShell, and the end of the session
//! stopping what is still running (section 3).

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;

use std::time::{Duration, Instant};

use common::{tool_results, Api, Harness};
use lathe_core::events::TurnOutcome;
use lathe_core::permissions::PromptAnswer;
use serde_json::{json, Value};

/// A session against mock-llm whose state directory (background output)
/// is inside the temp project.
async fn harness(script: Value, answers: Vec<PromptAnswer>) -> Harness {
    common::harness_on(
        Api::Anthropic,
        script,
        answers,
        |c| c.state_dir = c.cwd.join(".state"),
        vec![],
    )
    .await
}

fn tool_use(id: &str, name: &str, input: Value) -> Value {
    json!([{"type": "tool_use", "id": id, "name": name, "input": input}])
}

/// Live processes with `arg` as one of their arguments.
fn alive_with_arg(arg: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let state = stat.rsplit_once(") ")?.1.chars().next()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            (state != 'Z' && cmdline.split(|&b| b == 0).any(|a| a == arg.as_bytes())).then_some(pid)
        })
        .collect()
}

async fn gone_within(arg: &str, within: Duration) -> Vec<u32> {
    let until = Instant::now() + within;
    loop {
        let alive = alive_with_arg(arg);
        if alive.is_empty() || Instant::now() >= until {
            return alive;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn kill(pids: &[u32]) {
    for &pid in pids {
        // SAFETY: kill(2) has no memory-safety preconditions.
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGKILL);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_starts_reads_and_kills_a_background_shell() {
    let arg = format!("300.{}1", std::process::id());
    // The job writes to stdout and stderr, then leaves its group too.
    let command = format!("echo started; echo warn >&2; setsid sleep {arg} & sleep {arg}");
    let script = json!({ "responses": [
        {"content": tool_use("toolu_01", "Bash", json!({"command": command, "run_in_background": true})),
         "stop_reason": "tool_use"},
        {"content": tool_use("toolu_02", "BashOutput", json!({"bash_id": "bash_1"})),
         "stop_reason": "tool_use", "event_delay_ms": 150,
         "expect": {"tool_result_contains": {"toolu_01": "Command running in the background with ID: bash_1."},
                    "tool_result_is_error": {"toolu_01": false}}},
        {"content": tool_use("toolu_03", "BashOutput", json!({"bash_id": "bash_1", "filter": "^nothing"})),
         "stop_reason": "tool_use",
         "expect": {"tool_result_contains": {"toolu_02": "started\nwarn\n\nStatus: running (bash_1, started"}}},
        {"content": tool_use("toolu_04", "KillShell", json!({"shell_id": "bash_1"})),
         "stop_reason": "tool_use",
         "expect": {"tool_result_contains": {"toolu_03": "(no new output)\n\nStatus: running"}}},
        {"content": tool_use("toolu_05", "BashOutput", json!({"bash_id": "bash_1"})),
         "stop_reason": "tool_use",
         "expect": {"tool_result_contains": {"toolu_04": "Stopped background shell bash_1 ("}}},
        {"content": tool_use("toolu_06", "KillShell", json!({"shell_id": "bash_9"})),
         "stop_reason": "tool_use",
         "expect": {"tool_result_contains": {"toolu_05": "(no new output)\n\nStatus: stopped by KillShell."}}},
        {"content": [{"type": "text", "text": "Stopped."}], "stop_reason": "end_turn",
         "expect": {"tool_result_is_error": {"toolu_06": true}}}
    ]});
    let h = harness(script, vec![PromptAnswer::AllowOnce]).await;
    let outcome = h.ask("run the server, check it, stop it").await;
    let leftovers = gone_within(&arg, Duration::from_secs(5)).await;
    kill(&leftovers);
    assert_eq!(outcome, TurnOutcome::Done);
    assert!(leftovers.is_empty(), "left running: {leftovers:?}");

    // The background Bash asked like any Bash; BashOutput (read-only) did
    // not, nor did KillShell of the session's own job; KillShell of an id
    // the session did not start is refused without an ask.
    let asked: Vec<String> = h.prompter.asked().into_iter().map(|a| a.0).collect();
    assert_eq!(asked, ["Bash"]);

    let t = h.session.transcript();
    let unknown = tool_results(&t[12]);
    assert_eq!(
        unknown[0].2,
        "There is no background shell \"bash_9\" in this session (its shells: bash_1). Use the ID Bash returned for a command started with `run_in_background: true`."
    );
    // The output file holds everything, in order.
    let started = tool_results(&t[2])[0].2.clone();
    let path = started
        .split_once("goes to ")
        .and_then(|(_, rest)| rest.split_once(". Read new output"))
        .map(|(p, _)| p.to_string())
        .expect("names its file");
    assert!(path.starts_with(h.root.join(".state/bash-output").to_str().unwrap()));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "started\nwarn\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ending_the_session_stops_its_background_shells() {
    let arg = format!("300.{}2", std::process::id());
    let command = format!("setsid sleep {arg} & sleep {arg}");
    let script = json!({ "responses": [
        {"content": tool_use("toolu_01", "Bash", json!({"command": command, "run_in_background": true})),
         "stop_reason": "tool_use"},
        {"content": [{"type": "text", "text": "Running."}], "stop_reason": "end_turn",
         "expect": {"tool_result_is_error": {"toolu_01": false}}}
    ]});
    let h = harness(script, vec![PromptAnswer::AllowOnce]).await;
    assert_eq!(h.ask("start the server").await, TurnOutcome::Done);
    let until = Instant::now() + Duration::from_secs(5);
    while alive_with_arg(&arg).len() < 2 && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        alive_with_arg(&arg).len(),
        2,
        "both sleeps run after the turn"
    );
    assert!(lathe_core::tools::bash::shells::all_jobs()
        .iter()
        .any(|j| j.command.contains(&arg)));

    let Harness { session, .. } = h;
    drop(session);
    let leftovers = gone_within(&arg, Duration::from_secs(5)).await;
    kill(&leftovers);
    assert!(leftovers.is_empty(), "left running: {leftovers:?}");
    assert!(!lathe_core::tools::bash::shells::all_jobs()
        .iter()
        .any(|j| j.command.contains(&arg)));
}

/// KillShell names only the session's own jobs: another session's
/// `bash_1` (a conversation started with `:Lathe new` while the old one
/// lives), a process id, or a `pid` field are refused without an ask, and
/// the other session's job keeps running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killshell_cannot_reach_another_sessions_job_or_a_pid() {
    let arg = format!("300.{}3", std::process::id());
    let first = harness(
        json!({ "responses": [
            {"content": tool_use("toolu_01", "Bash", json!({"command": format!("sleep {arg}"), "run_in_background": true})),
             "stop_reason": "tool_use"},
            {"content": [{"type": "text", "text": "Running."}], "stop_reason": "end_turn"}
        ]}),
        vec![PromptAnswer::AllowOnce],
    )
    .await;
    assert_eq!(first.ask("start it").await, TurnOutcome::Done);
    let pid = alive_with_arg(&arg);
    assert_eq!(pid.len(), 1, "the first session's job runs");
    let second = harness(
        json!({ "responses": [
            {"content": [
                {"type": "tool_use", "id": "toolu_01", "name": "KillShell", "input": {"shell_id": "bash_1"}},
                {"type": "tool_use", "id": "toolu_02", "name": "KillShell", "input": {"shell_id": pid[0].to_string()}},
                {"type": "tool_use", "id": "toolu_03", "name": "KillShell", "input": {"pid": pid[0]}}],
             "stop_reason": "tool_use"},
            {"content": [{"type": "text", "text": "Could not."}], "stop_reason": "end_turn",
             "expect": {"tool_result_is_error": {"toolu_01": true, "toolu_02": true, "toolu_03": true}}}
        ]}),
        vec![],
    )
    .await;
    assert_eq!(second.ask("stop the server").await, TurnOutcome::Done);
    assert!(second.prompter.asked().is_empty(), "refused, never asked");
    let t = second.session.transcript();
    let results = tool_results(&t[2]);
    assert!(
        results[0]
            .2
            .starts_with("There is no background shell \"bash_1\" in this session"),
        "{}",
        results[0].2
    );
    assert_eq!(
        alive_with_arg(&arg),
        pid,
        "the first session's job still runs"
    );
    drop(first);
    let leftovers = gone_within(&arg, Duration::from_secs(5)).await;
    kill(&leftovers);
    assert!(leftovers.is_empty(), "left running: {leftovers:?}");
}

/// A background job the user started (`lathe.tool()`, `:Lathe jobs`) is
/// not the model's to stop without asking: the model's KillShell of it
/// asks, and a refusal leaves it running. The model's own job stops
/// without an ask.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killshell_of_a_job_the_user_started_asks() {
    let arg = format!("300.{}4", std::process::id());
    let h = harness(
        json!({ "responses": [
            {"content": tool_use("toolu_01", "KillShell", json!({"shell_id": "bash_1"})),
             "stop_reason": "tool_use"},
            {"content": [{"type": "text", "text": "Left it."}], "stop_reason": "end_turn"}
        ]}),
        // The model's KillShell of the user's job: refused. (The user's
        // `sleep` runs in the sandbox without an ask.)
        vec![PromptAnswer::Deny],
    )
    .await;
    let started = h
        .session
        .run_tool(
            "Bash",
            json!({"command": format!("sleep {arg}"), "run_in_background": true}),
            true,
            std::sync::Arc::new(lathe_core::events::NullSink),
        )
        .await;
    assert!(!started.is_error, "{started:?}");
    let t0 = Instant::now();
    let mut pid = alive_with_arg(&arg);
    while pid.is_empty() && t0.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(20)).await;
        pid = alive_with_arg(&arg);
    }
    assert_eq!(pid.len(), 1, "the user's job runs");
    assert_eq!(h.ask("stop whatever runs").await, TurnOutcome::Done);
    let asked: Vec<String> = h.prompter.asked().into_iter().map(|a| a.0).collect();
    assert_eq!(
        asked,
        ["KillShell"],
        "the model's KillShell of the user's job asks"
    );
    assert_eq!(alive_with_arg(&arg), pid, "the user's job still runs");
    // The user's own KillShell of it (`x` in `:Lathe jobs`): no ask.
    let stopped = h
        .session
        .run_tool(
            "KillShell",
            json!({"shell_id": "bash_1"}),
            false,
            std::sync::Arc::new(lathe_core::events::NullSink),
        )
        .await;
    assert!(!stopped.is_error, "{stopped:?}");
    assert!(gone_within(&arg, Duration::from_secs(5)).await.is_empty());
    let Harness { session, .. } = h;
    drop(session);
    let leftovers = gone_within(&arg, Duration::from_secs(5)).await;
    kill(&leftovers);
}
