//! `lathe_core::hooks::run` against real command hooks (`tests/fixtures/hooks/`,
//! small bash scripts) in a temporary working directory: every kind of
//! answer of Claude Code's hooks protocol, timeouts and cancellation that
//! leave no process behind, hooks that run in parallel, and code hooks.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use lathe_core::hooks::{
    self, hook_name, HookConfig, HookDecision, HookEvent, HookFn, HookInput, HookOutcome,
};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

/// The command that runs fixture `name` (quoted path, then `args`).
fn fixture(name: &str, args: &str) -> String {
    let path = lathe_test_support::workspace_root()
        .join("tests/fixtures/hooks")
        .join(name);
    let cmd = format!("'{}'", path.display());
    if args.is_empty() {
        cmd
    } else {
        format!("{cmd} {args}")
    }
}

/// A config with one matcher per `(matcher, command, timeout)` for `event`.
fn config(event: HookEvent, hooks: &[(&str, &str, u64)]) -> HookConfig {
    let matchers: Vec<Value> = hooks
        .iter()
        .map(|(matcher, command, timeout)| {
            json!({"matcher": matcher, "hooks": [{"type": "command", "command": command, "timeout": timeout}]})
        })
        .collect();
    HookConfig::from_json(&json!({ event.as_str(): matchers })).unwrap()
}

fn input(cwd: &Path, tool: &str) -> HookInput {
    HookInput {
        session_id: "session-1".into(),
        transcript_path: PathBuf::new(),
        cwd: cwd.to_path_buf(),
        permission_mode: "default".into(),
        hook_event_name: HookEvent::PreToolUse,
        tool_name: tool.into(),
        tool_input: json!({"file_path": "/project/src/main.rs", "content": "x"}),
        tool_use_id: "toolu_01".into(),
        tool_response: Some(json!({"type": "update", "filePath": "/project/src/main.rs"})),
    }
}

/// Runs the `fixture` scripts (all matching `Edit`) for `event` in a fresh
/// temporary directory.
async fn run_fixtures(event: HookEvent, fixtures: &[&str]) -> HookOutcome {
    let dir = tempfile::tempdir().unwrap();
    let commands: Vec<String> = fixtures.iter().map(|f| fixture(f, "")).collect();
    let hooks: Vec<(&str, &str, u64)> = commands.iter().map(|c| ("Edit", c.as_str(), 10)).collect();
    hooks::run(
        &config(event, &hooks),
        &[],
        event,
        &input(dir.path(), "Edit"),
        &CancellationToken::new(),
    )
    .await
}

fn name(script: &str) -> String {
    hook_name(&fixture(script, ""))
}

#[tokio::test]
async fn allow() {
    let o = run_fixtures(HookEvent::PreToolUse, &["allow.sh"]).await;
    assert_eq!(
        o,
        HookOutcome {
            decision: Some((HookDecision::Allow, "allow.sh trusts this call".into())),
            ..HookOutcome::default()
        }
    );
}

#[tokio::test]
async fn deny() {
    let o = run_fixtures(HookEvent::PreToolUse, &["deny.sh"]).await;
    assert_eq!(
        o,
        HookOutcome {
            decision: Some((
                HookDecision::Deny,
                "deny.sh: generated files are not edited by hand".into()
            )),
            ..HookOutcome::default()
        }
    );
}

#[tokio::test]
async fn ask() {
    let o = run_fixtures(HookEvent::PreToolUse, &["ask.sh"]).await;
    assert_eq!(
        o,
        HookOutcome {
            decision: Some((HookDecision::Ask, "ask.sh wants a human to look".into())),
            ..HookOutcome::default()
        }
    );
}

#[tokio::test]
async fn deny_wins_over_ask_and_allow() {
    let o = run_fixtures(HookEvent::PreToolUse, &["allow.sh", "ask.sh", "deny.sh"]).await;
    assert_eq!(
        o,
        HookOutcome {
            decision: Some((
                HookDecision::Deny,
                "deny.sh: generated files are not edited by hand".into()
            )),
            ..HookOutcome::default()
        }
    );
    let o = run_fixtures(HookEvent::PreToolUse, &["allow.sh", "ask.sh"]).await;
    assert_eq!(
        o.decision,
        Some((HookDecision::Ask, "ask.sh wants a human to look".into()))
    );
}

#[tokio::test]
async fn exit_2_blocks_with_stderr() {
    let o = run_fixtures(HookEvent::PreToolUse, &["exit2.sh"]).await;
    assert_eq!(
        o,
        HookOutcome {
            blocked: Some("exit2.sh: run the tests before editing".into()),
            ..HookOutcome::default()
        }
    );
    // After the call, exit 2 is feedback for the model.
    let o = run_fixtures(HookEvent::PostToolUse, &["exit2.sh"]).await;
    assert_eq!(
        o.blocked.as_deref(),
        Some("exit2.sh: run the tests before editing")
    );
}

#[tokio::test]
async fn updated_input() {
    let o = run_fixtures(HookEvent::PreToolUse, &["updated_input.sh"]).await;
    assert_eq!(
        o,
        HookOutcome {
            updated_input: Some(
                json!({"file_path": "/rewritten/by/hook.rs", "content": "fn main() {}\n"})
            ),
            ..HookOutcome::default()
        }
    );
}

#[tokio::test]
async fn additional_context_and_system_message() {
    let o = run_fixtures(HookEvent::PostToolUse, &["additional_context.sh"]).await;
    assert_eq!(
        o,
        HookOutcome {
            additional_context: vec!["additional_context.sh: the file was reformatted".into()],
            system_messages: vec!["formatted with rustfmt".into()],
            ..HookOutcome::default()
        }
    );
}

#[tokio::test]
async fn post_tool_use_decision_block() {
    let o = run_fixtures(HookEvent::PostToolUse, &["post_block.sh"]).await;
    assert_eq!(
        o,
        HookOutcome {
            blocked: Some("post_block.sh: the build is broken now".into()),
            ..HookOutcome::default()
        }
    );
}

#[tokio::test]
async fn continue_false_stops_the_turn() {
    let o = run_fixtures(HookEvent::PreToolUse, &["stop.sh"]).await;
    assert_eq!(
        o,
        HookOutcome {
            stop: Some("stop.sh: budget exhausted".into()),
            ..HookOutcome::default()
        }
    );
}

#[tokio::test]
async fn invalid_json_on_exit_0_is_a_warning() {
    let o = run_fixtures(HookEvent::PreToolUse, &["bad_json.sh"]).await;
    assert_eq!(
        o,
        HookOutcome {
            warnings: vec![format!(
                "PreToolUse hook `{}` exited with code 0 but printed invalid JSON (EOF while parsing an object at line 1 column 52); its output was ignored and the call went on.",
                name("bad_json.sh")
            )],
            ..HookOutcome::default()
        }
    );
}

#[tokio::test]
async fn exit_1_is_a_warning() {
    let o = run_fixtures(HookEvent::PreToolUse, &["exit1.sh"]).await;
    assert_eq!(
        o,
        HookOutcome {
            warnings: vec![format!(
                "PreToolUse hook `{}` failed with exit code 1; the call went on without it. Its stderr: exit1.sh: linter crashed",
                name("exit1.sh")
            )],
            ..HookOutcome::default()
        }
    );
}

#[tokio::test]
async fn stdin_is_claude_codes_input_json() {
    let dir = tempfile::tempdir().unwrap();
    let echo = fixture("echo_input.sh", "");
    let o = hooks::run(
        &config(HookEvent::PreToolUse, &[("Edit", &echo, 10)]),
        &[],
        HookEvent::PreToolUse,
        &input(dir.path(), "Edit"),
        &CancellationToken::new(),
    )
    .await;
    assert_eq!(
        o,
        HookOutcome {
            additional_context: vec!["file_path=/project/src/main.rs".into()],
            ..HookOutcome::default()
        }
    );
    let sent: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("stdin.json")).unwrap())
            .unwrap();
    // PreToolUse input has no tool_response, even when the caller set one.
    assert_eq!(
        sent,
        json!({
            "session_id": "session-1",
            "transcript_path": "",
            "cwd": dir.path(),
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": "Edit",
            "tool_input": {"file_path": "/project/src/main.rs", "content": "x"},
            "tool_use_id": "toolu_01"
        })
    );

    // PostToolUse: the event name is the one run, and tool_response is sent.
    let o = hooks::run(
        &config(HookEvent::PostToolUse, &[("Edit", &echo, 10)]),
        &[],
        HookEvent::PostToolUse,
        &input(dir.path(), "Edit"),
        &CancellationToken::new(),
    )
    .await;
    assert_eq!(o.additional_context, ["file_path=/project/src/main.rs"]);
    assert!(o.warnings.is_empty(), "{:?}", o.warnings);
    let sent: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("stdin.json")).unwrap())
            .unwrap();
    assert_eq!(sent["hook_event_name"], "PostToolUse");
    assert_eq!(
        sent["tool_response"],
        json!({"type": "update", "filePath": "/project/src/main.rs"})
    );
}

/// `true` when `pid` is a live process (a zombie, already dead, waiting
/// for its new parent to reap it, does not count).
fn is_alive(pid: i32) -> bool {
    // SAFETY: kill(2) with signal 0 only checks; no memory-safety
    // preconditions.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return false;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit_once(") ")
        .and_then(|(_, rest)| rest.chars().next());
    !matches!(state, Some('Z') | Some('X') | None)
}

fn pid_in(dir: &Path, file: &str) -> i32 {
    std::fs::read_to_string(dir.join(file))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn a_timed_out_hook_is_killed_with_its_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let command = fixture("timeout.sh", "");
    let o = hooks::run(
        &config(HookEvent::PreToolUse, &[("Edit", &command, 1)]),
        &[],
        HookEvent::PreToolUse,
        &input(dir.path(), "Edit"),
        &CancellationToken::new(),
    )
    .await;
    assert_eq!(
        o,
        HookOutcome {
            warnings: vec![format!(
                "PreToolUse hook `{}` timed out after 1 s and was stopped; the call went on without it.",
                hook_name(&command)
            )],
            ..HookOutcome::default()
        }
    );
    let (hook, background) = (pid_in(dir.path(), "hook.pid"), pid_in(dir.path(), "bg.pid"));
    assert!(!is_alive(hook), "the hook's shell {hook} is still alive");
    assert!(
        !is_alive(background),
        "its background sleep {background} is still alive"
    );
}

#[tokio::test]
async fn cancellation_kills_the_hook_and_reports_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let command = fixture("timeout.sh", "");
    let cancel = CancellationToken::new();
    let canceller = {
        let cancel = cancel.clone();
        let pid_file = dir.path().join("bg.pid");
        tokio::spawn(async move {
            // Once the hook is surely running (its last pid file written).
            while !std::fs::read_to_string(&pid_file).is_ok_and(|s| s.ends_with('\n')) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            cancel.cancel();
        })
    };
    let o = hooks::run(
        &config(HookEvent::PreToolUse, &[("Edit", &command, 30)]),
        &[],
        HookEvent::PreToolUse,
        &input(dir.path(), "Edit"),
        &cancel,
    )
    .await;
    canceller.await.unwrap();
    assert_eq!(o, HookOutcome::default());
    let (hook, background) = (pid_in(dir.path(), "hook.pid"), pid_in(dir.path(), "bg.pid"));
    assert!(!is_alive(hook), "the hook's shell {hook} is still alive");
    assert!(
        !is_alive(background),
        "its background sleep {background} is still alive"
    );
}

#[tokio::test]
async fn matching_hooks_run_in_parallel() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (fixture("parallel.sh", "a"), fixture("parallel.sh", "b"));
    let o = hooks::run(
        &config(HookEvent::PreToolUse, &[("Edit", &a, 10), (".*", &b, 10)]),
        &[],
        HookEvent::PreToolUse,
        &input(dir.path(), "Edit"),
        &CancellationToken::new(),
    )
    .await;
    assert_eq!(o, HookOutcome::default());
    let markers = std::fs::read_to_string(dir.path().join("markers")).unwrap();
    let lines: Vec<&str> = markers.lines().collect();
    assert_eq!(lines.len(), 4, "{markers}");
    // Both started before either ended: the second did not wait for the first.
    let mut first_two = lines[..2].to_vec();
    first_two.sort_unstable();
    assert_eq!(first_two, ["start a", "start b"], "{markers}");
}

#[tokio::test]
async fn matchers_match_whole_tool_names_and_a_command_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    let count = "echo ran >> runs";
    let cfg = config(
        HookEvent::PreToolUse,
        &[
            ("Edit|Write", count, 10),
            ("*", count, 10),
            ("Write", "echo write >> runs", 10),
            ("Edit", "echo edit >> runs", 10),
        ],
    );
    for tool in ["Edit", "NotebookEdit"] {
        let o = hooks::run(
            &cfg,
            &[],
            HookEvent::PreToolUse,
            &input(dir.path(), tool),
            &CancellationToken::new(),
        )
        .await;
        assert_eq!(o, HookOutcome::default());
    }
    let mut runs: Vec<String> = std::fs::read_to_string(dir.path().join("runs"))
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    runs.sort_unstable();
    // Edit: `ran` once (two matchers, one command) and `edit`;
    // NotebookEdit: `ran` through `*` only.
    assert_eq!(runs, ["edit", "ran", "ran"]);
}

#[tokio::test]
async fn a_hook_that_cannot_start_is_a_warning() {
    let missing = Path::new("/nonexistent/lathe-hooks-cwd");
    let o = hooks::run(
        &config(HookEvent::PreToolUse, &[("", "true", 10)]),
        &[],
        HookEvent::PreToolUse,
        &input(missing, "Edit"),
        &CancellationToken::new(),
    )
    .await;
    assert_eq!(
        o.warnings,
        ["PreToolUse hook `true` could not be started (No such file or directory (os error 2)); the call went on without it."]
    );
}

/// A code hook answering with fixed JSON, or panicking.
struct Answer {
    name: &'static str,
    answer: Option<Value>,
}

#[async_trait]
impl HookFn for Answer {
    async fn call(&self, input: &HookInput) -> Result<Value, String> {
        match &self.answer {
            Some(v) if input.tool_name == "Edit" => Ok(v.clone()),
            Some(_) => Ok(Value::Null),
            None => panic!("{} panics", self.name),
        }
    }

    fn name(&self) -> String {
        self.name.to_string()
    }
}

#[tokio::test]
async fn code_hooks_run_with_command_hooks_after_them() {
    let dir = tempfile::tempdir().unwrap();
    let deny: Arc<dyn HookFn> = Arc::new(Answer {
        name: "lua: no_main",
        answer: Some(
            json!({"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "lua says no"}}),
        ),
    });
    let context: Arc<dyn HookFn> = Arc::new(Answer {
        name: "lua: context",
        answer: Some(json!({"hookSpecificOutput": {"additionalContext": "from lua"}})),
    });
    let panics: Arc<dyn HookFn> = Arc::new(Answer {
        name: "lua: broken",
        answer: None,
    });
    let extra = [
        (HookEvent::PreToolUse, deny),
        (HookEvent::PreToolUse, panics),
        (HookEvent::PostToolUse, context.clone()),
        (HookEvent::PreToolUse, context),
    ];
    let allow = fixture("allow.sh", "");
    let o = hooks::run(
        &config(HookEvent::PreToolUse, &[("Edit", &allow, 10)]),
        &extra,
        HookEvent::PreToolUse,
        &input(dir.path(), "Edit"),
        &CancellationToken::new(),
    )
    .await;
    assert_eq!(
        o,
        HookOutcome {
            decision: Some((HookDecision::Deny, "lua says no".into())),
            additional_context: vec!["from lua".into()],
            warnings: vec![
                "PreToolUse hook `lua: broken` panicked; the call went on without it.".into()
            ],
            ..HookOutcome::default()
        }
    );

    // A tool the code hooks stay out of (they answer null).
    let o = hooks::run(
        &HookConfig::default(),
        &extra[..1],
        HookEvent::PreToolUse,
        &input(dir.path(), "Read"),
        &CancellationToken::new(),
    )
    .await;
    assert_eq!(o, HookOutcome::default());
}
