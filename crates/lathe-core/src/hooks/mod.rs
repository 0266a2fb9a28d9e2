//! Claude Code-compatible hooks around a tool call: `PreToolUse` (gate 5 in
//! docs/pipeline.md, "The gates") and `PostToolUse` (gate 8).
//!
//! - [`HookConfig`] is the `hooks` object of Claude Code's settings
//!   (matchers over tool names, command hooks with timeouts).
//! - [`HookInput`] is what a hook reads on stdin, in Claude Code's schema.
//! - [`run`] runs every matching hook of one event in parallel and folds
//!   their answers, in hook order, into one [`HookOutcome`] (how answers are
//!   read is in `outcome`, how a command runs in `command`).
//! - [`HookFn`] is a hook written in code (the Neovim side registers Lua
//!   functions through it); it answers with the JSON a command would print.
//!
//! The module runs hooks and reports; it decides nothing about the call.
//! The pipeline applies the outcome: a deny or a block refuses the call,
//! `updated_input` goes back through the schema and validation gates, `stop`
//! ends the turn.

pub mod check;
mod command;
mod config;
pub mod messages;
mod outcome;

pub use command::{DRAIN, KILL_WAIT, MAX_OUTPUT_BYTES};
pub use config::{CommandHook, HookConfig, HookConfigError, HookMatcher, DEFAULT_TIMEOUT};
pub use outcome::{HookDecision, HookOutcome, WARNING_STDERR_CHARS};

use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::FutureExt as _;
use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::text::fill;
use outcome::{Combiner, FnEnding};

/// Characters of a command kept in its name in warnings and texts (its
/// first line, ending with `…` when cut).
pub const HOOK_NAME_MAX_CHARS: usize = 80;

/// The hook events lathe runs (Claude Code's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum HookEvent {
    /// Before a call runs (after its input was validated): may allow, ask,
    /// deny, block or rewrite the input.
    PreToolUse,
    /// After a call ran: may add context or feedback for the model.
    PostToolUse,
}

impl HookEvent {
    /// `"PreToolUse"` or `"PostToolUse"`, as in settings and hook input.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
        }
    }
}

/// What a hook is told on stdin, in Claude Code's schema (serialized with
/// exactly these snake_case keys; `tool_response` only for PostToolUse).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HookInput {
    /// The session's id.
    pub session_id: String,
    /// The session transcript file (empty when there is none).
    pub transcript_path: PathBuf,
    /// The working directory: the project root; hooks run there.
    pub cwd: PathBuf,
    /// `default`, `acceptEdits`, … (Claude Code's names).
    pub permission_mode: String,
    /// The event; [`run`] sets it to the event it runs.
    pub hook_event_name: HookEvent,
    /// The tool's PascalCase name (`Edit`), which matchers are matched
    /// against.
    pub tool_name: String,
    /// The call's input, as the tool will get it.
    pub tool_input: Value,
    /// The `tool_use` block's id.
    pub tool_use_id: String,
    /// PostToolUse: the tool's result. [`run`] leaves it out of PreToolUse
    /// input.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_response: Option<Value>,
}

/// A hook implemented in code rather than as a command (the Neovim side
/// registers Lua functions through it). It matches every tool (it sees
/// `tool_name` and may answer `null` or `{}` to stay out), gets the same
/// input a command reads as JSON, and returns what a command hook would
/// print on stdout as JSON (an object, or `null` for nothing), or an error
/// text (a warning for the user; the call goes on).
#[async_trait]
pub trait HookFn: Send + Sync {
    /// Answers one call (see the trait doc).
    async fn call(&self, input: &HookInput) -> Result<Value, String>;

    /// The name warnings use (`lua: format_on_save`).
    fn name(&self) -> String {
        "hook function".to_string()
    }

    /// Wall time before the call is dropped with a warning;
    /// [`DEFAULT_TIMEOUT`] unless overridden.
    fn timeout(&self) -> Duration {
        DEFAULT_TIMEOUT
    }
}

/// Hooks written in code, each with the event it runs for (what `run`
/// takes as `extra`).
pub type CodeHooks = Vec<(HookEvent, Arc<dyn HookFn>)>;

/// One hook to run.
enum Job<'a> {
    Command(&'a CommandHook),
    Function(&'a Arc<dyn HookFn>),
}

/// Runs every hook of `event` whose matcher matches `input.tool_name`
/// (command hooks of `config`, in settings order, then the `extra` code
/// hooks registered for `event`), all in parallel, and combines their
/// answers in that order into a [`HookOutcome`].
///
/// `input` is sent with `hook_event_name` set to `event` (and without
/// `tool_response` for PreToolUse). A command runs with `bash -c` in
/// `input.cwd`, in its own process group, gets the input as JSON on stdin,
/// and is killed (the whole group) at its timeout or when `cancel` fires.
/// Exit 0: stdout is read as JSON when it is a JSON object (else ignored);
/// exit 2: blocks with stderr; other codes: a warning, the call goes on.
/// An identical command under several matchers (or settings sources) runs
/// once, as in Claude Code, with the first one's timeout. Hooks stopped by `cancel` contribute nothing;
/// the caller checks its token. Returns at once with an empty outcome when
/// no hook matches or `cancel` already fired. Never fails: every problem is
/// a warning in the outcome.
pub async fn run(
    config: &HookConfig,
    extra: &[(HookEvent, Arc<dyn HookFn>)],
    event: HookEvent,
    input: &HookInput,
    cancel: &CancellationToken,
) -> HookOutcome {
    let mut jobs: Vec<Job<'_>> = Vec::new();
    for matcher in config.matchers(event) {
        if !matcher.matches(&input.tool_name) {
            continue;
        }
        for hook in &matcher.hooks {
            let seen = jobs
                .iter()
                .any(|j| matches!(j, Job::Command(h) if h.command == hook.command));
            if !seen {
                jobs.push(Job::Command(hook));
            }
        }
    }
    jobs.extend(
        extra
            .iter()
            .filter(|(e, _)| *e == event)
            .map(|(_, f)| Job::Function(f)),
    );
    if jobs.is_empty() || cancel.is_cancelled() {
        return HookOutcome::default();
    }

    let input = HookInput {
        hook_event_name: event,
        tool_response: match event {
            HookEvent::PreToolUse => None,
            HookEvent::PostToolUse => input.tool_response.clone(),
        },
        ..input.clone()
    };
    let mut combiner = Combiner::new(event);
    let stdin = match serde_json::to_vec(&input) {
        Ok(json) => json,
        Err(e) => {
            combiner.warn(fill(
                messages::INPUT_NOT_JSON,
                &[("event", event.as_str()), ("error", &e.to_string())],
            ));
            return combiner.finish();
        }
    };

    let runs = jobs.iter().map(|job| {
        let (input, stdin) = (&input, stdin.as_slice());
        async move {
            match job {
                Job::Command(hook) => Ran::Command {
                    name: hook_name(&hook.command),
                    secs: secs(hook.timeout),
                    run: command::run(&hook.command, hook.timeout, &input.cwd, stdin, cancel).await,
                },
                Job::Function(f) => Ran::Function {
                    name: f.name(),
                    secs: secs(f.timeout()),
                    ending: call_function(f.as_ref(), input, cancel).await,
                },
            }
        }
    });
    // join_all keeps the jobs' order, whatever order they finish in.
    for ran in futures::future::join_all(runs).await {
        match ran {
            Ran::Command { name, secs, run } => combiner.command(&name, &secs, run),
            Ran::Function { name, secs, ending } => combiner.function(&name, &secs, ending),
        }
    }
    combiner.finish()
}

/// What one job produced, with the hook's name and timeout for texts.
enum Ran {
    Command {
        name: String,
        secs: String,
        run: std::io::Result<command::CommandRun>,
    },
    Function {
        name: String,
        secs: String,
        ending: FnEnding,
    },
}

/// Calls `f` within its timeout, catching a panic, stopping at `cancel`.
async fn call_function(f: &dyn HookFn, input: &HookInput, cancel: &CancellationToken) -> FnEnding {
    let call = AssertUnwindSafe(f.call(input)).catch_unwind();
    tokio::select! {
        biased;
        _ = cancel.cancelled() => FnEnding::Cancelled,
        r = tokio::time::timeout(f.timeout(), call) => match r {
            Err(_) => FnEnding::TimedOut,
            Ok(Err(_panic)) => FnEnding::Panicked,
            Ok(Ok(answer)) => FnEnding::Returned(answer),
        },
    }
}

/// A command as warnings name it: its first line, at most
/// [`HOOK_NAME_MAX_CHARS`] characters (`…` when cut).
pub fn hook_name(command: &str) -> String {
    let trimmed = command.trim();
    let first = trimmed.lines().next().unwrap_or_default();
    let cut = outcome::shorten(first, HOOK_NAME_MAX_CHARS);
    if first.len() < trimmed.len() && !cut.ends_with('…') {
        format!("{cut}…")
    } else {
        cut
    }
}

/// A timeout in seconds as texts show it: `60`, `1.5`.
fn secs(d: Duration) -> String {
    format!("{}", d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input() -> HookInput {
        HookInput {
            session_id: "s1".into(),
            transcript_path: PathBuf::from("/tmp/t.jsonl"),
            cwd: PathBuf::from("/p"),
            permission_mode: "default".into(),
            hook_event_name: HookEvent::PreToolUse,
            tool_name: "Edit".into(),
            tool_input: json!({"file_path": "/p/a.rs"}),
            tool_use_id: "toolu_1".into(),
            tool_response: None,
        }
    }

    #[test]
    fn input_serializes_with_claude_codes_keys() {
        assert_eq!(
            serde_json::to_value(input()).unwrap(),
            json!({
                "session_id": "s1",
                "transcript_path": "/tmp/t.jsonl",
                "cwd": "/p",
                "permission_mode": "default",
                "hook_event_name": "PreToolUse",
                "tool_name": "Edit",
                "tool_input": {"file_path": "/p/a.rs"},
                "tool_use_id": "toolu_1"
            })
        );
        let post = HookInput {
            hook_event_name: HookEvent::PostToolUse,
            tool_response: Some(json!({"ok": true})),
            ..input()
        };
        let v = serde_json::to_value(post).unwrap();
        assert_eq!(v["hook_event_name"], "PostToolUse");
        assert_eq!(v["tool_response"], json!({"ok": true}));
    }

    #[test]
    fn event_names() {
        assert_eq!(HookEvent::PreToolUse.as_str(), "PreToolUse");
        assert_eq!(HookEvent::PostToolUse.as_str(), "PostToolUse");
    }

    #[test]
    fn hook_names_and_seconds() {
        assert_eq!(hook_name("  ./fmt.sh --check "), "./fmt.sh --check");
        assert_eq!(hook_name("a\nb"), "a…");
        let long = "y".repeat(HOOK_NAME_MAX_CHARS + 1);
        assert_eq!(
            hook_name(&long),
            format!("{}…", "y".repeat(HOOK_NAME_MAX_CHARS - 1))
        );
        assert_eq!(secs(Duration::from_secs(60)), "60");
        assert_eq!(secs(Duration::from_millis(1500)), "1.5");
    }

    #[tokio::test]
    async fn nothing_matches_nothing_runs() {
        let config = HookConfig::from_json(&json!({
            "PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "exit 2"}]}],
            "PostToolUse": [{"hooks": [{"type": "command", "command": "exit 2"}]}]
        }))
        .unwrap();
        let o = run(
            &config,
            &[],
            HookEvent::PreToolUse,
            &input(),
            &CancellationToken::new(),
        )
        .await;
        assert_eq!(o, HookOutcome::default());
    }
}
