//! The Bash tool against a real bash:
//! timeouts and interrupts stop every process the command started, prompts
//! see EOF at once, huge output comes back capped with head and tail.
//!
//! Timing bounds are generous ("returned within N seconds"): they prove a
//! call did not hang, not how fast it was.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{json, Value};

use lathe_core::editor::{Document, Editor, EditorError, WriteOutcome, WriteRequest};
use lathe_core::events::ToolStatus;
use lathe_core::execution::{run_tool_use, ExecEnv, PendingToolUse};
use lathe_core::permissions::{PromptAnswer, ScriptedPrompter};
use lathe_core::protocol::ToolUse;
use lathe_core::tools::bash::{BashLimits, BashTool};
use lathe_core::tools::{Tool, ToolContext, ToolError, ToolOutput};

/// Bash never touches the editor.
struct NoFiles;

#[async_trait]
impl Editor for NoFiles {
    async fn read(&self, path: &Path) -> Result<Document, EditorError> {
        Err(EditorError::NotFound(path.to_path_buf()))
    }
    async fn write(&self, path: &Path, _: WriteRequest) -> Result<WriteOutcome, EditorError> {
        Err(EditorError::NotFound(path.to_path_buf()))
    }
}

fn ctx(root: &Path) -> ToolContext {
    common::tool_ctx(root, Arc::new(NoFiles))
}

/// A project root that is a real directory with no symlink in its path.
fn project() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical root");
    (dir, root)
}

/// Prepare (typed parse + normalize), validate, call — the tool's own gates.
async fn run(input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    let tool: Arc<dyn Tool> = Arc::new(BashTool::default());
    let prepared = tool.prepare(&input, &ctx.root)?;
    prepared.validate(ctx).await?.run(ctx).await
}

/// [`run`] in a fresh empty project, for calls that need nothing else.
/// Cut output goes to a temporary folder dropped with the call, not to
/// the shared `<tmp>/lathe-bash-output` (a flood test writes hundreds of MB).
async fn run_in_new_project(input: Value) -> Result<ToolOutput, ToolError> {
    let (_dir, root) = project();
    let out = tempfile::tempdir().expect("output dir");
    let tool: Arc<dyn Tool> =
        Arc::new(BashTool::default().with_output_dir(out.path().to_path_buf()));
    let ctx = ctx(&root);
    let prepared = tool.prepare(&input, &ctx.root)?;
    prepared.validate(&ctx).await?.run(&ctx).await
}

fn text(out: &ToolOutput) -> String {
    out.content.as_text()
}

/// A marker unique to one test run; commands `export` it so that every
/// process they start carries it (in its command line or environment).
fn marker(name: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{name}_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Live (non-zombie) processes whose command line or environment contains
/// `LATHE_TEST_MARKER=<marker>`.
fn alive_with_marker(marker: &str) -> Vec<u32> {
    let needle = format!("LATHE_TEST_MARKER={marker}");
    let mut pids = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return pids;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let base = entry.path();
        let stat = std::fs::read_to_string(base.join("stat")).unwrap_or_default();
        let state = stat.rsplit_once(") ").map(|(_, rest)| rest.chars().next());
        if state == Some(Some('Z')) || stat.is_empty() {
            continue;
        }
        let has = |file: &str| {
            std::fs::read(base.join(file))
                .map(|b| {
                    b.split(|&c| c == 0)
                        .any(|part| String::from_utf8_lossy(part).contains(&needle))
                })
                .unwrap_or(false)
        };
        if has("cmdline") || has("environ") {
            pids.push(pid);
        }
    }
    pids
}

/// Waits up to `within` for the marked processes to be gone (SIGKILL is
/// delivered asynchronously); returns those still alive.
async fn gone_within(marker: &str, within: Duration) -> Vec<u32> {
    let until = Instant::now() + within;
    loop {
        let alive = alive_with_marker(marker);
        if alive.is_empty() || Instant::now() >= until {
            return alive;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Kills leftovers a test started on purpose (background jobs).
fn kill_marked(marker: &str) {
    for pid in alive_with_marker(marker) {
        // SAFETY: kill(2) has no memory-safety preconditions.
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGKILL);
        }
    }
}

// ---- case 12 ---------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case12_background_loops_time_out_and_leave_nothing_alive() {
    let (_dir, root) = project();
    let ctx = ctx(&root);
    let m = marker("case12");
    let command = format!(
        "export LATHE_TEST_MARKER={m}; for i in 1 2 3; do (while :; do sleep 1; done) & done; sleep 600"
    );
    let started = Instant::now();
    let task = tokio::spawn({
        let ctx = ctx.clone();
        async move { run(json!({"command": command, "timeout": 2000}), &ctx).await }
    });
    tokio::time::sleep(Duration::from_millis(800)).await;
    let while_running = alive_with_marker(&m);
    assert!(
        while_running.len() >= 4,
        "bash, three loops and sleeps should be running, found {while_running:?}"
    );

    let result = task.await.expect("join");
    let elapsed = started.elapsed();
    let err = result.expect_err("a timeout is an error result");
    assert!(
        err.message
            .starts_with("Command timed out after 2000 ms and was stopped"),
        "{}",
        err.message
    );
    assert!(err.message.contains("at most 600000 ms"), "{}", err.message);
    assert!(
        elapsed >= Duration::from_millis(1900) && elapsed < Duration::from_secs(10),
        "returned after {elapsed:?}"
    );
    let alive = alive_with_marker(&m);
    assert!(alive.is_empty(), "still alive after the call: {alive:?}");
}

#[tokio::test]
async fn timeout_escalates_to_kill_when_term_is_ignored() {
    let (_dir, root) = project();
    let ctx = ctx(&root);
    let m = marker("ignore_term");
    let command =
        format!("export LATHE_TEST_MARKER={m}; trap '' TERM; echo started; sleep 600; echo never");
    let started = Instant::now();
    let err = run(json!({"command": command, "timeout": 500}), &ctx)
        .await
        .expect_err("timeout");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(
        err.message.ends_with("Output before the timeout:\nstarted"),
        "{}",
        err.message
    );
    assert!(alive_with_marker(&m).is_empty());
}

// ---- case 13 ---------------------------------------------------------------

#[tokio::test]
async fn case13_read_prompt_sees_eof_at_once() {
    let started = Instant::now();
    let out = run_in_new_project(
        json!({"command": "read -p 'Name? ' n; echo \"got:$n\"", "timeout": 30000}),
    )
    .await
    .expect("runs");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(text(&out), "got:\n\nExit code 0");
}

#[tokio::test]
async fn case13_python_input_sees_eof_at_once() {
    let started = Instant::now();
    let out =
        run_in_new_project(json!({"command": "python3 -c \"input('> ')\"", "timeout": 30000}))
            .await
            .expect("a non-zero exit is not a tool error");
    assert!(started.elapsed() < Duration::from_secs(10));
    let t = text(&out);
    assert!(t.contains("EOFError"), "{t}");
    assert!(t.ends_with("\n\nExit code 1 (failure)"), "{t}");
    assert_eq!(out.summary, "exit 1");
}

#[tokio::test]
async fn case13_git_commit_with_vi_editor_returns_at_once() {
    let (_dir, root) = project();
    let ctx = ctx(&root);
    run(
        json!({"command": "git init -q && git config core.editor vi && git config user.name t && git config user.email t@example.com"}),
        &ctx,
    )
    .await
    .expect("git init");
    let started = Instant::now();
    let out = run(
        json!({"command": "git commit --allow-empty -q", "timeout": 30000}),
        &ctx,
    )
    .await
    .expect("runs");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    // GIT_EDITOR=true leaves the message empty, so git aborts by itself.
    let t = text(&out);
    assert!(t.contains("empty commit message"), "{t}");
    assert!(t.ends_with("Exit code 1 (failure)"), "{t}");
}

#[tokio::test]
async fn no_controlling_terminal() {
    let out =
        run_in_new_project(json!({"command": "cat /dev/tty; echo \"stdin: $(cat | wc -c)\""}))
            .await
            .expect("runs");
    let t = text(&out);
    assert!(t.contains("/dev/tty: No such device or address"), "{t}");
    assert!(t.contains("stdin: 0"), "{t}");
}

// ---- case 14 ---------------------------------------------------------------

#[tokio::test]
async fn case14_huge_output_is_capped_with_head_tail_and_size() {
    let out = run_in_new_project(json!({"command": "seq 1 2000000"}))
        .await
        .expect("runs");
    let t = text(&out);
    let total: usize = (1..=2_000_000u32).map(|n| n.to_string().len() + 1).sum();
    assert!(t.chars().count() < 30_000, "{} chars", t.chars().count());
    assert!(t.starts_with("1\n2\n3\n4\n5\n"), "{}", &t[..50]);
    let (body, footer) = t.rsplit_once("\n\n").expect("footer");
    assert_eq!(footer, "Exit code 0");
    assert!(
        body.ends_with("\n1999999\n2000000"),
        "{}",
        &body[body.len() - 50..]
    );
    assert!(
        t.contains(&format!(
            "bytes of output omitted here ({total} bytes in all)"
        )),
        "{t}"
    );
    // The stated omission is exactly what is missing between the two parts.
    let (head, rest) = body.split_once("\n[... ").expect("marker");
    let omitted: usize = rest
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("omitted count");
    let tail = rest.split_once("]\n").expect("marker end").1;
    assert_eq!(head.len() + 1 + omitted + tail.len() + 1, total);
    // Cuts fall on line ends: the head's last and tail's first lines are whole.
    let last_head: u32 = head.lines().last().and_then(|l| l.parse().ok()).expect("n");
    let first_tail: u32 = tail.lines().next().and_then(|l| l.parse().ok()).expect("n");
    assert_eq!(head.lines().count() as u32, last_head);
    assert_eq!(tail.lines().count() as u32, 2_000_000 - first_tail + 1);
}

#[tokio::test]
async fn output_limits_follow_bash_limits() {
    let (_dir, root) = project();
    let ctx = ctx(&root);
    let tool: Arc<dyn Tool> = Arc::new(BashTool::new(BashLimits {
        max_output_chars: 1_200,
        ..BashLimits::default()
    }));
    let prepared = tool
        .prepare(&json!({"command": "seq 1 1000"}), &ctx.root)
        .expect("prepare");
    let planned = prepared.validate(&ctx).await.expect("valid");
    let out = planned.run(&ctx).await.expect("runs");
    let t = text(&out);
    assert!(t.starts_with("1\n2\n"), "{t}");
    assert!(
        t.contains("bytes of output omitted here (3893 bytes in all)"),
        "{t}"
    );
    assert!(t.ends_with("999\n1000\n\nExit code 0"), "{t}");
    assert!(t.chars().count() < 1_200, "{}", t.chars().count());
}

// ---- cancellation and dropped calls ----------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_the_whole_group_and_reports_interrupted() {
    let (_dir, root) = project();
    let ctx = ctx(&root);
    let m = marker("cancel");
    let command = format!(
        "export LATHE_TEST_MARKER={m}; echo started; (sleep 600) & (sleep 600) & sleep 600"
    );
    let task = tokio::spawn({
        let ctx = ctx.clone();
        async move { run(json!({"command": command}), &ctx).await }
    });
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(
        alive_with_marker(&m).len() >= 3,
        "running before the cancel"
    );
    let cancelled_at = Instant::now();
    ctx.cancel.cancel();
    let err = task.await.expect("join").expect_err("interrupted");
    assert!(cancelled_at.elapsed() < Duration::from_secs(10));
    assert_eq!(
        err.message,
        "Interrupted by the user: the command was stopped, with every process it started. Wait for the user's next instruction. Output before the interrupt:\nstarted"
    );
    assert!(alive_with_marker(&m).is_empty());
}

#[tokio::test]
async fn already_cancelled_runs_nothing() {
    let (dir, root) = project();
    let ctx = ctx(&root);
    ctx.cancel.cancel();
    let err = run(json!({"command": "touch made"}), &ctx)
        .await
        .expect_err("interrupted");
    assert!(
        err.message.starts_with("Interrupted by the user"),
        "{}",
        err.message
    );
    assert!(!dir.path().join("made").exists());
}

#[tokio::test]
async fn dropping_the_call_kills_the_group() {
    let (_dir, root) = project();
    let ctx = ctx(&root);
    let m = marker("dropped");
    let command = format!("export LATHE_TEST_MARKER={m}; (sleep 600) & sleep 600");
    let gave_up = tokio::time::timeout(
        Duration::from_millis(800),
        run(json!({"command": command}), &ctx),
    )
    .await;
    assert!(gave_up.is_err(), "the call should still be running");
    let alive = gone_within(&m, Duration::from_secs(5)).await;
    assert!(alive.is_empty(), "still alive after drop: {alive:?}");
}

#[tokio::test]
async fn background_job_holding_the_pipe_does_not_block_the_result() {
    let (_dir, root) = project();
    let ctx = ctx(&root);
    let m = marker("bg");
    let command = format!("export LATHE_TEST_MARKER={m}; sleep 30 & echo done");
    let started = Instant::now();
    let out = run(json!({"command": command}), &ctx).await.expect("runs");
    let elapsed = started.elapsed();
    let still_running = !alive_with_marker(&m).is_empty();
    kill_marked(&m);
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
    assert_eq!(text(&out), "done\n\nExit code 0");
    assert!(
        still_running,
        "a normal exit leaves background jobs running"
    );
}

// ---- environment, cwd, exit codes -------------------------------------------

#[tokio::test]
async fn environment_disables_prompts_editors_and_pagers() {
    let out = run_in_new_project(
        json!({"command": "echo \"$GIT_TERMINAL_PROMPT|$GIT_EDITOR|$EDITOR|$VISUAL|$PAGER|$GIT_PAGER\""})
    )
    .await
    .expect("runs");
    assert_eq!(text(&out), "0|true|true|true|cat|cat\n\nExit code 0");
}

#[tokio::test]
async fn runs_in_the_project_root() {
    let (_dir, root) = project();
    let out = run(json!({"command": "pwd"}), &ctx(&root))
        .await
        .expect("runs");
    assert_eq!(text(&out), format!("{}\n\nExit code 0", root.display()));
}

#[tokio::test]
async fn nonzero_exit_is_reported_not_an_error() {
    let out = run_in_new_project(json!({"command": "echo out; echo err >&2; exit 3"}))
        .await
        .expect("not a tool error");
    let t = text(&out);
    assert!(t.contains("out") && t.contains("err"), "{t}");
    assert_eq!(t, "out\nerr\n\nExit code 3 (failure)");
    assert_eq!(out.summary, "exit 3");
}

#[tokio::test]
async fn killed_by_signal_is_named() {
    let out = run_in_new_project(json!({"command": "kill -SEGV $$"}))
        .await
        .expect("runs");
    assert_eq!(text(&out), "(no output)\n\nKilled by signal 11 (SIGSEGV)");
}

#[tokio::test]
async fn missing_root_is_a_spawn_error() {
    let (dir, root) = project();
    let gone = root.join("missing");
    let err = run(json!({"command": "ls"}), &ctx(&gone))
        .await
        .expect_err("spawn fails");
    assert!(
        err.message
            .starts_with(&format!("Could not start bash in {}: ", gone.display())),
        "{}",
        err.message
    );
    drop(dir);
}

// ---- input gates -----------------------------------------------------------

#[tokio::test]
async fn timeout_above_max_is_refused_naming_the_max() {
    let err = run_in_new_project(json!({"command": "ls", "timeout": 600001}))
        .await
        .expect_err("too large");
    assert_eq!(
        err.message,
        "`timeout` is 600001 ms, above the maximum of 600000 ms. Call Bash again with a `timeout` of at most 600000 ms, or with `run_in_background: true` and read its output with BashOutput."
    );
}

#[tokio::test]
async fn empty_command_and_zero_timeout_are_refused() {
    let (_dir, root) = project();
    let ctx = ctx(&root);
    let err = run(json!({"command": "  "}), &ctx)
        .await
        .expect_err("empty");
    assert!(
        err.message.starts_with("`command` is empty"),
        "{}",
        err.message
    );
    let err = run(json!({"command": "ls", "timeout": 0}), &ctx)
        .await
        .expect_err("zero");
    assert!(
        err.message.starts_with("`timeout` is 0 ms"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn normalize_fills_the_default_timeout() {
    let (_dir, root) = project();
    let ctx = ctx(&root);
    let tool: Arc<dyn Tool> = Arc::new(BashTool::default());
    let prepared = tool
        .clone()
        .prepare(
            &json!({"command": "ls", "description": "List files"}),
            &ctx.root,
        )
        .expect("prepare");
    assert_eq!(
        prepared.input_json,
        json!({"command": "ls", "timeout": 120000, "description": "List files"})
    );
    assert_eq!(tool.describe(&prepared, &root), "ls  # List files");
    assert_eq!(tool.target_path(&prepared), None);
}

// ---- through the pipeline ----------------------------------------------------

fn exec_env(root: &Path, prompter: Arc<ScriptedPrompter>) -> ExecEnv {
    common::env_at(root)
        .tools(vec![Arc::new(BashTool::default())])
        .ctx(ctx(root))
        .prompter(prompter)
        .results(root.join(".lathe-results"), "t")
        .build()
}

fn bash_use(input: Value) -> PendingToolUse {
    PendingToolUse::from(ToolUse {
        id: "toolu_bash".into(),
        name: "Bash".into(),
        input,
        extra: Default::default(),
    })
}

#[tokio::test]
async fn read_only_command_runs_without_asking_others_ask() {
    let (_dir, root) = project();
    std::fs::write(root.join("a.txt"), "alpha\n").expect("write");
    let prompter = Arc::new(ScriptedPrompter::new([PromptAnswer::AllowOnce]));
    let env = exec_env(&root, prompter.clone());

    let run = run_tool_use(&bash_use(json!({"command": "cat a.txt | wc -l"})), &env).await;
    assert_eq!(run.status, ToolStatus::Done);
    assert_eq!(run.result.content.as_text(), "1\n\nExit code 0");
    assert!(
        prompter.asked().is_empty(),
        "read-only inside root is allowed"
    );

    let run = run_tool_use(&bash_use(json!({"command": "touch b.txt"})), &env).await;
    assert_eq!(run.status, ToolStatus::Done);
    let asked = prompter.asked();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].1.title, "Bash: touch b.txt");
    assert!(root.join("b.txt").exists());
}

/// A command that exits non-zero (or is killed by a signal) ran: the
/// model's result is not an error, but the chat's line says `failed`, not
/// `done` (a timeout stays an error, a zero exit done).
#[tokio::test]
async fn a_non_zero_exit_is_failed_not_done_and_not_a_tool_error() {
    use lathe_core::events::{AgentEvent, RecordingSink};
    let (_dir, root) = project();
    let sink = Arc::new(RecordingSink::default());
    let env = common::env_at(&root)
        .tools(vec![Arc::new(BashTool::default())])
        .ctx(ctx(&root))
        .sink(sink.clone())
        .prompter(Arc::new(ScriptedPrompter::new(std::iter::repeat_n(
            PromptAnswer::AllowOnce,
            4,
        ))))
        .results(root.join(".lathe-results"), "t")
        .build();
    let cases = [
        ("echo ok", ToolStatus::Done, false, "exit 0"),
        ("echo no; exit 1", ToolStatus::Failed, false, "exit 1"),
        ("kill -9 $$", ToolStatus::Failed, false, "killed by SIGKILL"),
        ("sleep 600", ToolStatus::Error, true, "Command timed out"),
    ];
    for (command, status, is_error, summary) in cases {
        let input = json!({"command": command, "timeout": 300});
        let run = run_tool_use(&bash_use(input), &env).await;
        assert_eq!(run.status, status, "{command}");
        assert_eq!(run.result.is_error, is_error, "{command}");
        assert!(
            run.summary.starts_with(summary),
            "{command}: {}",
            run.summary
        );
        let finished = sink.events().into_iter().rev().find_map(|e| match e {
            AgentEvent::ToolFinished { status, .. } => Some(status),
            _ => None,
        });
        assert_eq!(finished, Some(status), "{command}");
    }
    assert_eq!(ToolStatus::Failed.as_str(), "failed");
}

#[tokio::test]
async fn pipeline_timeout_is_an_error_result() {
    let (_dir, root) = project();
    let env = exec_env(
        &root,
        Arc::new(ScriptedPrompter::new([PromptAnswer::AllowOnce])),
    );
    let run = run_tool_use(
        &bash_use(json!({"command": "echo tick; sleep 600", "timeout": 300})),
        &env,
    )
    .await;
    assert!(run.result.is_error);
    assert_eq!(run.status, ToolStatus::Error);
    assert!(run
        .result
        .content
        .as_text()
        .ends_with("Output before the timeout:\ntick"));
}

#[tokio::test]
async fn schema_rejects_a_string_timeout() {
    let (_dir, root) = project();
    let env = exec_env(&root, Arc::new(ScriptedPrompter::default()));
    let run = run_tool_use(&bash_use(json!({"command": "ls", "timeout": "5000"})), &env).await;
    assert!(run.result.is_error);
    assert!(
        run.result.content.as_text().contains("`timeout`"),
        "{}",
        run.result.content.as_text()
    );
}

#[tokio::test]
async fn escaped_descendant_holding_the_pipe_does_not_block_a_timeout() {
    let (_dir, root) = project();
    let ctx = ctx(&root);
    let m = marker("escaped");
    // `setsid` moves the sleep out of the group, so killpg cannot reach it;
    // it keeps stdout open, and the call must still return.
    let command = format!("export LATHE_TEST_MARKER={m}; setsid sleep 30 & echo tick; sleep 600");
    let started = Instant::now();
    let err = run(json!({"command": command, "timeout": 500}), &ctx)
        .await
        .expect_err("timeout");
    let elapsed = started.elapsed();
    let alive = gone_within(&m, Duration::from_secs(5)).await;
    kill_marked(&m);
    assert!(alive.is_empty(), "escaped process survived: {alive:?}");
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
    assert!(
        err.message.ends_with("Output before the timeout:\ntick"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn progress_seam_sees_output_while_it_streams() {
    let (_dir, root) = project();
    let mut ctx = ctx(&root);
    let seen = Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
    let progress: lathe_core::tools::ProgressFn = Arc::new({
        let seen = seen.clone();
        move |chunk: &[u8]| {
            if let Ok(mut s) = seen.lock() {
                s.extend_from_slice(chunk);
            }
        }
    });
    ctx.progress = Some(progress);
    let tool: Arc<dyn Tool> = Arc::new(BashTool::default());
    let prepared = tool
        .prepare(&json!({"command": "echo one; echo two >&2"}), &ctx.root)
        .expect("prepare");
    let planned = prepared.validate(&ctx).await.expect("valid");
    planned.run(&ctx).await.expect("runs");
    let seen = String::from_utf8(seen.lock().expect("lock").clone()).expect("utf8");
    assert_eq!(seen, "one\ntwo\n");
}

#[tokio::test]
async fn timeout_during_the_drain_keeps_the_finished_result() {
    let (_dir, root) = project();
    let ctx = ctx(&root);
    let m = marker("drain_timeout");
    // bash is done at once; the background sleep holds the pipe past the
    // 300 ms timeout, which must not turn the result into a timeout.
    let command = format!("export LATHE_TEST_MARKER={m}; sleep 30 & echo done");
    let out = run(json!({"command": command, "timeout": 300}), &ctx).await;
    kill_marked(&m);
    assert_eq!(text(&out.expect("finished")), "done\n\nExit code 0");
}

#[tokio::test]
async fn endless_flood_still_times_out_with_capped_output() {
    let started = Instant::now();
    let err = run_in_new_project(json!({"command": "yes lathe", "timeout": 1000}))
        .await
        .expect_err("timeout");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let m = &err.message;
    assert!(
        m.starts_with("Command timed out after 1000 ms"),
        "{}",
        &m[..80]
    );
    assert!(m.contains("bytes of output omitted here"));
    // The tail is the end of what arrived; the flood may stop mid-line.
    let last = m.lines().last().unwrap_or_default();
    assert!(
        !last.is_empty() && "lathe".starts_with(last),
        "{}",
        &m[m.len() - 40..]
    );
    assert!(m.contains("\nlathe\nlathe\n"));
    assert!(m.chars().count() < 30_000, "{} chars", m.chars().count());
}

// ---- order, full output, escaped processes -------------

#[tokio::test]
async fn stdout_and_stderr_keep_the_order_they_were_written_in() {
    let out = run_in_new_project(json!({
        "command": "for i in 1 2 3 4 5 6; do echo out$i; echo err$i >&2; done; exit 1"
    }))
    .await
    .expect("runs");
    assert_eq!(
        text(&out),
        "out1\nerr1\nout2\nerr2\nout3\nerr3\nout4\nerr4\nout5\nerr5\nout6\nerr6\n\nExit code 1 (failure)"
    );
}

/// The path a cut result names (`saved in <path>:`).
fn saved_path(t: &str) -> PathBuf {
    let (_, rest) = t
        .split_once("The full output is saved in ")
        .expect("names a file");
    PathBuf::from(rest.split_once(": Read it").expect("path end").0)
}

#[tokio::test]
async fn cut_output_is_kept_in_full_in_the_named_file() {
    let (_dir, root) = project();
    let ctx = ctx(&root);
    let state = tempfile::tempdir().expect("state dir");
    let tool: Arc<dyn Tool> =
        Arc::new(BashTool::default().with_output_dir(state.path().join("bash-output")));
    // stdout and stderr both, far beyond the cap.
    let command = "seq 1 300000; seq 1 1000 >&2";
    let prepared = tool
        .prepare(&json!({ "command": command }), &ctx.root)
        .expect("prepare");
    let out = prepared
        .validate(&ctx)
        .await
        .expect("valid")
        .run(&ctx)
        .await
        .expect("runs");
    let t = text(&out);
    let expected: String = (1..=300_000u32)
        .chain(1..=1000)
        .map(|n| format!("{n}\n"))
        .collect();
    assert!(t.chars().count() < 30_000, "{}", t.chars().count());
    assert!(
        !t.contains("run the command with its output redirected"),
        "{t}"
    );
    assert!(
        t.contains(&format!(
            "bytes of output omitted here ({} bytes in all). The full output is saved in ",
            expected.len()
        )),
        "{t}"
    );
    let path = saved_path(&t);
    assert!(
        path.starts_with(state.path().join("bash-output")),
        "{}",
        path.display()
    );
    assert_eq!(
        std::fs::read_to_string(&path).expect("saved file"),
        expected
    );
    assert!(
        t.ends_with("999\n1000\n\nExit code 0"),
        "{}",
        &t[t.len() - 40..]
    );
}

#[tokio::test]
async fn short_output_leaves_no_file() {
    let (_dir, root) = project();
    let ctx = ctx(&root);
    let state = tempfile::tempdir().expect("state dir");
    let dir = state.path().join("bash-output");
    let tool: Arc<dyn Tool> = Arc::new(BashTool::default().with_output_dir(dir.clone()));
    let prepared = tool
        .prepare(&json!({"command": "echo hi"}), &ctx.root)
        .expect("prepare");
    let out = prepared
        .validate(&ctx)
        .await
        .expect("valid")
        .run(&ctx)
        .await
        .expect("runs");
    assert_eq!(text(&out), "hi\n\nExit code 0");
    assert!(!dir.exists());
}

/// `setsid sleep &` and a double-forked sleep, both outside bash's process
/// group; `sleep 300.<n>` is the marker argument the check looks for.
fn escaping_command(m: &str, n: u32) -> String {
    format!(
        "export LATHE_TEST_MARKER={m}; setsid sleep 300.{n} & (sleep 300.{n}1 &) ; echo started; sleep 600"
    )
}

/// Live processes whose command line holds `arg`.
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escaped_processes_end_when_the_call_times_out() {
    let (_dir, root) = project();
    let ctx = ctx(&root);
    let m = marker("escape_timeout");
    let n = std::process::id() % 100_000;
    let command = escaping_command(&m, n);
    let err = run(json!({"command": command, "timeout": 1500}), &ctx)
        .await
        .expect_err("timeout");
    assert!(
        err.message.starts_with("Command timed out"),
        "{}",
        err.message
    );
    let alive = gone_within(&m, Duration::from_secs(5)).await;
    kill_marked(&m);
    assert!(alive.is_empty(), "left behind: {alive:?}");
    assert!(alive_with_arg(&format!("300.{n}")).is_empty());
    assert!(alive_with_arg(&format!("300.{n}1")).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escaped_processes_end_when_the_call_is_stopped() {
    let (_dir, root) = project();
    let ctx = ctx(&root);
    let m = marker("escape_cancel");
    let n = std::process::id() % 100_000 + 7;
    let command = escaping_command(&m, n);
    let task = tokio::spawn({
        let ctx = ctx.clone();
        async move { run(json!({"command": command}), &ctx).await }
    });
    let until = Instant::now() + Duration::from_secs(5);
    while alive_with_arg(&format!("300.{n}1")).is_empty() && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        alive_with_arg(&format!("300.{n}")).len(),
        1,
        "setsid sleep running"
    );
    ctx.cancel.cancel();
    let err = task.await.expect("join").expect_err("interrupted");
    assert!(
        err.message.starts_with("Interrupted by the user"),
        "{}",
        err.message
    );
    let alive = gone_within(&m, Duration::from_secs(5)).await;
    kill_marked(&m);
    assert!(alive.is_empty(), "left behind: {alive:?}");
    assert!(alive_with_arg(&format!("300.{n}")).is_empty());
    assert!(alive_with_arg(&format!("300.{n}1")).is_empty());
}
