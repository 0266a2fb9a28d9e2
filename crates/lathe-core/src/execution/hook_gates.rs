//! Gates 5 and 8: PreToolUse and PostToolUse hooks (Claude Code's hooks
//! protocol, run by `crate::hooks`), and what the pipeline does with their
//! answers:
//!
//! - a block (exit code 2) or a `deny` refuses the call, with the hook's text
//!   for the model;
//! - `ask` makes the call ask even where rules would allow it; `allow` skips
//!   the prompt, but never a deny or ask **rule** nor a protected path;
//! - `updatedInput` goes back through the schema, normalisation and
//!   validation gates before it is used;
//! - `additionalContext` (and PostToolUse feedback) is added to the
//!   `tool_result`; `continue: false` ends the turn after this batch;
//! - warnings and `systemMessage`s become chat notes (`is_error: false`:
//!   the call went on; `:help lathe-hooks` calls them warnings, and the chat
//!   shows them as `> **note:**`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::events::{AgentEvent, EventSink};
use crate::hooks::{self, CodeHooks, HookConfig, HookEvent, HookInput, HookOutcome};
use crate::text::fill;

use super::ExecEnv;

/// The model-facing result when a PreToolUse hook blocks a call. `{tool}`, `{text}`.
pub const HOOK_BLOCKED: &str =
    "A PreToolUse hook blocked this {tool} call; nothing was written or run. The hook said: {text}";
/// The model-facing result when a PreToolUse hook denies a call. `{tool}`, `{reason}`.
pub const HOOK_DENIED: &str =
    "A PreToolUse hook denied this {tool} call; nothing was written or run. Reason: {reason}";
/// Added to a result: context from a hook. `{event}`, `{text}`.
pub const HOOK_CONTEXT: &str = "{event} hook context: {text}";
/// Added to a result: PostToolUse feedback (a block after the call ran). `{text}`.
pub const HOOK_FEEDBACK: &str = "PostToolUse hook feedback: {text}";
/// The model-facing result when a hook's rewritten input is not valid. `{error}`.
pub const HOOK_BAD_INPUT: &str =
    "A PreToolUse hook rewrote the input of this call, and the new input is not valid, so nothing was run: {error}";
/// Chat notice when a hook ends the turn. `{reason}`.
pub const HOOK_STOPPED_TURN: &str = "A hook ended the turn: {reason}";
/// The model-facing result of the call whose hook ended the turn. `{reason}`.
pub const HOOK_STOPPED_CALL: &str =
    "A hook stopped the session here, so this call did not run: {reason}";

/// The session's hooks: command hooks from setup() and the settings files,
/// and code hooks (Lua functions). Shared by every call of the session.
#[derive(Default)]
pub struct Hooks {
    /// Command hooks, merged in settings order.
    pub config: HookConfig,
    /// Code hooks with their event.
    pub extra: CodeHooks,
    /// The session id hooks are told.
    pub session_id: String,
    /// The session file hooks are told as `transcript_path` (Claude Code's
    /// hook input field): lathe's session log, JSON Lines
    /// (`agent::session_log`). Empty when sessions are not saved.
    pub transcript_path: PathBuf,
}

impl Hooks {
    /// `true` when there is no hook at all (the gates then cost nothing).
    pub fn is_empty(&self) -> bool {
        self.config.is_empty() && self.extra.is_empty()
    }
}

/// Set when a hook asked to end the turn (`continue: false`); the turn loop
/// reads it after the batch. Shared by the calls of one turn.
#[derive(Debug, Default, Clone)]
pub struct TurnStop(Arc<Mutex<Option<String>>>);

impl TurnStop {
    /// Records `reason` (the first one wins).
    pub fn request(&self, reason: &str) {
        if let Ok(mut r) = self.0.lock() {
            r.get_or_insert_with(|| reason.to_string());
        }
    }

    /// The reason, when a hook asked to end the turn.
    pub fn requested(&self) -> Option<String> {
        self.0.lock().ok().and_then(|r| r.clone())
    }
}

/// Runs the hooks of `event` for a call (tool `tool`, normalised input
/// `input`, result `response` for PostToolUse) and reports their warnings
/// and system messages to the chat. Returns at once with an empty outcome
/// when the session has no hooks.
pub(super) async fn run(
    env: &ExecEnv,
    event: HookEvent,
    tool: &str,
    tool_use_id: &str,
    input: &Value,
    response: Option<Value>,
) -> HookOutcome {
    if env.hooks.is_empty() {
        return HookOutcome::default();
    }
    let hook_input = HookInput {
        session_id: env.hooks.session_id.clone(),
        transcript_path: env.hooks.transcript_path.clone(),
        cwd: env.ctx.root.clone(),
        permission_mode: env.permissions.mode().as_str().to_string(),
        hook_event_name: event,
        tool_name: tool.to_string(),
        tool_input: input.clone(),
        tool_use_id: tool_use_id.to_string(),
        tool_response: response,
    };
    let outcome = hooks::run(
        &env.hooks.config,
        &env.hooks.extra,
        event,
        &hook_input,
        &env.ctx.cancel,
    )
    .await;
    report(env.sink.as_ref(), &outcome);
    outcome
}

/// Chat notes for a hook outcome's warnings and system messages. A warning
/// is not an error: the hook failed or answered wrongly, and the call went
/// on without it.
fn report(sink: &dyn EventSink, outcome: &HookOutcome) {
    for text in outcome.warnings.iter().chain(&outcome.system_messages) {
        sink.emit(AgentEvent::Notice {
            text: text.clone(),
            is_error: false,
        });
    }
}

/// The lines added to a result for `event`'s context and feedback.
pub(super) fn result_notes(event: HookEvent, outcome: &HookOutcome) -> Vec<String> {
    let mut notes: Vec<String> = outcome
        .additional_context
        .iter()
        .map(|c| fill(HOOK_CONTEXT, &[("event", event.as_str()), ("text", c)]))
        .collect();
    if event == HookEvent::PostToolUse {
        if let Some(b) = &outcome.blocked {
            notes.push(fill(HOOK_FEEDBACK, &[("text", b)]));
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_texts() {
        assert_eq!(
            fill(HOOK_BLOCKED, &[("tool", "Bash"), ("text", "no rm")]),
            "A PreToolUse hook blocked this Bash call; nothing was written or run. The hook said: no rm"
        );
        assert_eq!(
            fill(HOOK_DENIED, &[("tool", "Edit"), ("reason", "frozen")]),
            "A PreToolUse hook denied this Edit call; nothing was written or run. Reason: frozen"
        );
        assert_eq!(
            fill(HOOK_CONTEXT, &[("event", "PreToolUse"), ("text", "x")]),
            "PreToolUse hook context: x"
        );
        assert_eq!(
            fill(HOOK_FEEDBACK, &[("text", "lint failed")]),
            "PostToolUse hook feedback: lint failed"
        );
        assert_eq!(
            fill(HOOK_BAD_INPUT, &[("error", "e")]),
            "A PreToolUse hook rewrote the input of this call, and the new input is not valid, so nothing was run: e"
        );
        assert_eq!(
            fill(HOOK_STOPPED_TURN, &[("reason", "r")]),
            "A hook ended the turn: r"
        );
        assert_eq!(
            fill(HOOK_STOPPED_CALL, &[("reason", "r")]),
            "A hook stopped the session here, so this call did not run: r"
        );
    }

    #[test]
    fn warnings_and_system_messages_are_notes_not_errors() {
        let sink = crate::events::RecordingSink::default();
        let outcome = HookOutcome {
            warnings: vec!["w".into()],
            system_messages: vec!["m".into()],
            ..HookOutcome::default()
        };
        report(&sink, &outcome);
        let notices: Vec<(String, bool)> = sink
            .events()
            .into_iter()
            .filter_map(|e| match e {
                AgentEvent::Notice { text, is_error } => Some((text, is_error)),
                _ => None,
            })
            .collect();
        assert_eq!(notices, [("w".into(), false), ("m".into(), false)]);
    }

    #[test]
    fn turn_stop_keeps_the_first_reason() {
        let s = TurnStop::default();
        assert_eq!(s.requested(), None);
        s.request("first");
        s.clone().request("second");
        assert_eq!(s.requested().as_deref(), Some("first"));
    }
}
