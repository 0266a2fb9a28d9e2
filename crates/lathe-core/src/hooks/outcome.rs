//! What hooks answered, read with Claude Code's hooks protocol and combined
//! into one [`HookOutcome`] per event.
//!
//! One hook's answer, by how it ended:
//! - exit 0: stdout is read as JSON when, trimmed, it starts with `{`
//!   (Claude Code's rule); other text is plain output and ignored. JSON that
//!   does not parse, or does not fit the output schema below, is a warning
//!   and the whole output is ignored.
//! - exit 2: blocks, with stderr as the text for the model (stdout is
//!   ignored).
//! - any other exit, a signal, a timeout, a failure to start: a warning for
//!   the user; the call goes on.
//! - cancelled: nothing (the caller knows its token fired).
//!
//! The JSON (every field optional, unknown fields ignored):
//! `continue` (false: end the turn), `stopReason`, `systemMessage` (for the
//! user), `decision` + `reason` (PostToolUse `"block"`: feedback for the
//! model; PreToolUse's deprecated `"approve"`/`"block"` mean allow/deny),
//! and `hookSpecificOutput` with `hookEventName` (when given, it must be the
//! event run), `permissionDecision` (`allow`/`ask`/`deny`),
//! `permissionDecisionReason` and `updatedInput` (an object) for
//! PreToolUse, and `additionalContext` for both events. Fields that do not
//! apply to the event (a PostToolUse `permissionDecision`) are ignored.

use std::os::unix::process::ExitStatusExt as _;

use serde::Deserialize;
use serde_json::Value;

use super::command::{CommandRun, Ending};
use super::config::kind;
use super::messages::{
    BAD_OUTPUT, BLOCK_WITHOUT_REASON, EXIT_2_WITHOUT_REASON, EXIT_CODE, FUNCTION_BAD_OUTPUT,
    FUNCTION_FAILED, FUNCTION_NOT_A_TABLE, FUNCTION_PANICKED, INPUT_REPLACED, INVALID_JSON,
    KILLED_BY_SIGNAL, NOT_STARTED, STDERR_EMPTY, STOP_WITHOUT_REASON, TIMED_OUT, WRONG_EVENT_NAME,
};
use super::HookEvent;
use crate::text::fill;

/// Characters of a hook's stderr kept in a warning; longer stderr is cut
/// and ends with `…`.
pub const WARNING_STDERR_CHARS: usize = 1_000;

/// A PreToolUse hook's permission decision (`permissionDecision`).
/// In Claude Code, `allow` skips the permission prompt (its reason is for
/// the user), `ask` shows it (its reason is for the user), `deny` refuses
/// the call (its reason is for the model).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HookDecision {
    /// Run the call without asking.
    Allow,
    /// Ask the user.
    Ask,
    /// Refuse the call.
    Deny,
}

impl HookDecision {
    /// `allow`, `ask` or `deny`, as hooks write it.
    pub fn as_str(self) -> &'static str {
        match self {
            HookDecision::Allow => "allow",
            HookDecision::Ask => "ask",
            HookDecision::Deny => "deny",
        }
    }

    /// deny > ask > allow.
    fn rank(self) -> u8 {
        match self {
            HookDecision::Allow => 0,
            HookDecision::Ask => 1,
            HookDecision::Deny => 2,
        }
    }
}

/// The combined result of every matching hook of one event, in hook order
/// (settings order, then code hooks), whatever order they finished in.
/// Where several hooks answer, texts are joined with `\n`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookOutcome {
    /// PreToolUse permission decision: deny > ask > allow across hooks,
    /// with the reasons of the hooks that gave the winning decision
    /// (`permissionDecisionReason`, empty ones left out; `""` when none gave
    /// one).
    pub decision: Option<(HookDecision, String)>,
    /// PreToolUse `hookSpecificOutput.updatedInput`: the last one in hook
    /// order wins (and a warning says so when two hooks gave one). Kept
    /// whatever the decision; the pipeline re-validates it against the
    /// tool's schema before using it.
    pub updated_input: Option<Value>,
    /// `hookSpecificOutput.additionalContext` of each hook, for the model,
    /// in hook order.
    pub additional_context: Vec<String>,
    /// Text for the model from exit code 2 (stderr, trimmed) or a
    /// PostToolUse `"decision": "block"` (`reason`): blocks the call
    /// (PreToolUse) or is appended to the result as feedback (PostToolUse).
    /// The raw texts of the hooks; the pipeline frames them.
    pub blocked: Option<String>,
    /// `"continue": false` with its `stopReason` (or
    /// [`STOP_WITHOUT_REASON`](super::messages::STOP_WITHOUT_REASON)): the
    /// turn must end; the text is for the user. Takes precedence over the
    /// other fields, as in Claude Code.
    pub stop: Option<String>,
    /// `systemMessage` of each hook, for the user (chat notices).
    pub system_messages: Vec<String>,
    /// For the user (chat notices): hooks that exited with another code,
    /// were killed by a signal, timed out (and were killed), printed
    /// invalid or unfit JSON with exit 0 (ignored for decisions), could not
    /// start, or (code hooks) failed or panicked; also two `updatedInput`s.
    pub warnings: Vec<String>,
}

/// How a [`HookFn`](super::HookFn) call ended.
#[derive(Debug, Clone, PartialEq)]
pub enum FnEnding {
    /// It returned: the output JSON, or its error text.
    Returned(Result<Value, String>),
    /// It panicked.
    Panicked,
    /// Its timeout elapsed; the call was dropped.
    TimedOut,
    /// The cancellation token fired; the call was dropped.
    Cancelled,
}

/// Who gave an answer, for the words of a warning: a command prints JSON,
/// a code hook (a Lua function) returns a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Command,
    Function,
}

/// Claude Code's hook output (see the module doc).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct HookOutput {
    #[serde(rename = "continue")]
    continue_: Option<bool>,
    stop_reason: Option<String>,
    system_message: Option<String>,
    decision: Option<TopDecision>,
    reason: Option<String>,
    hook_specific_output: Option<SpecificOutput>,
}

/// The top-level `decision`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum TopDecision {
    Approve,
    Block,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SpecificOutput {
    hook_event_name: Option<String>,
    permission_decision: Option<HookDecision>,
    permission_decision_reason: Option<String>,
    updated_input: Option<serde_json::Map<String, Value>>,
    additional_context: Option<String>,
}

/// Folds the answers of the hooks of one event, in hook order, into a
/// [`HookOutcome`].
#[derive(Debug)]
pub struct Combiner {
    event: HookEvent,
    outcome: HookOutcome,
    decisions: Vec<(HookDecision, String)>,
    blocked: Vec<String>,
    stops: Vec<String>,
    /// The hook whose `updatedInput` is in `outcome`.
    input_from: Option<String>,
}

impl Combiner {
    /// An empty outcome for `event`.
    pub fn new(event: HookEvent) -> Self {
        Self {
            event,
            outcome: HookOutcome::default(),
            decisions: Vec::new(),
            blocked: Vec::new(),
            stops: Vec::new(),
            input_from: None,
        }
    }

    /// Adds a warning for the user (already filled).
    pub fn warn(&mut self, warning: String) {
        self.outcome.warnings.push(warning);
    }

    /// Adds the run of the command hook named `hook` (see the module doc);
    /// `secs` is its timeout for the warning text. `Err` is the error of
    /// starting it.
    pub fn command(&mut self, hook: &str, secs: &str, run: std::io::Result<CommandRun>) {
        let run = match run {
            Ok(run) => run,
            Err(e) => {
                let warning = self.fill(NOT_STARTED, hook, &[("error", &e.to_string())]);
                return self.warn(warning);
            }
        };
        match run.ending {
            Ending::Cancelled => {}
            Ending::TimedOut => {
                let warning = self.fill(TIMED_OUT, hook, &[("secs", secs)]);
                self.warn(warning);
            }
            Ending::Exited(status) => match (status.code(), status.signal()) {
                (Some(0), _) => self.stdout(hook, &run.stdout),
                (Some(2), _) => {
                    let reason = run.stderr.trim();
                    let text = if reason.is_empty() {
                        self.fill(EXIT_2_WITHOUT_REASON, hook, &[])
                    } else {
                        reason.to_string()
                    };
                    self.blocked.push(text);
                }
                (Some(code), _) => {
                    let stderr = shorten(run.stderr.trim(), WARNING_STDERR_CHARS);
                    let stderr = if stderr.is_empty() {
                        STDERR_EMPTY.to_string()
                    } else {
                        stderr
                    };
                    let warning = self.fill(
                        EXIT_CODE,
                        hook,
                        &[("code", &code.to_string()), ("stderr", &stderr)],
                    );
                    self.warn(warning);
                }
                (None, signal) => {
                    let signal = signal.map_or_else(|| "?".to_string(), |s| s.to_string());
                    let warning = self.fill(KILLED_BY_SIGNAL, hook, &[("signal", &signal)]);
                    self.warn(warning);
                }
            },
        }
    }

    /// Adds the call of the code hook named `hook`; `secs` is its timeout
    /// for the warning text. What it returned is read like a command hook's
    /// JSON stdout (`null` is an empty answer).
    pub fn function(&mut self, hook: &str, secs: &str, ending: FnEnding) {
        let warning = match ending {
            FnEnding::Cancelled => return,
            FnEnding::Returned(Ok(Value::Null)) => return,
            FnEnding::Returned(Ok(value)) => return self.json(hook, value, Source::Function),
            FnEnding::Returned(Err(error)) => {
                self.fill(FUNCTION_FAILED, hook, &[("error", &error_message(&error))])
            }
            FnEnding::Panicked => self.fill(FUNCTION_PANICKED, hook, &[]),
            FnEnding::TimedOut => self.fill(TIMED_OUT, hook, &[("secs", secs)]),
        };
        self.warn(warning);
    }

    /// The combined outcome.
    pub fn finish(mut self) -> HookOutcome {
        if let Some(best) = self
            .decisions
            .iter()
            .map(|(d, _)| *d)
            .max_by_key(|d| d.rank())
        {
            let reasons: Vec<&str> = self
                .decisions
                .iter()
                .filter(|(d, r)| *d == best && !r.is_empty())
                .map(|(_, r)| r.as_str())
                .collect();
            self.outcome.decision = Some((best, reasons.join("\n")));
        }
        if !self.blocked.is_empty() {
            self.outcome.blocked = Some(self.blocked.join("\n"));
        }
        if !self.stops.is_empty() {
            self.outcome.stop = Some(self.stops.join("\n"));
        }
        self.outcome
    }

    /// Exit 0: JSON when it looks like a JSON object, else plain output.
    fn stdout(&mut self, hook: &str, stdout: &str) {
        let text = stdout.trim();
        if !text.starts_with('{') {
            return;
        }
        match serde_json::from_str::<Value>(text) {
            Ok(value) => self.json(hook, value, Source::Command),
            Err(e) => {
                let warning = self.fill(INVALID_JSON, hook, &[("error", &e.to_string())]);
                self.warn(warning);
            }
        }
    }

    /// Reads one hook's JSON answer (printed by a command or returned by
    /// a code hook, `source`) into the outcome.
    fn json(&mut self, hook: &str, value: Value, source: Source) {
        if !value.is_object() {
            if source == Source::Function && !value.is_array() {
                let warning = self.fill(FUNCTION_NOT_A_TABLE, hook, &[("kind", kind(&value))]);
                return self.warn(warning);
            }
            let error = format!("expected a JSON object, got {}", kind(&value));
            return self.bad_output(hook, &error, source);
        }
        let out: HookOutput = match serde_path_to_error::deserialize(value) {
            Ok(out) => out,
            Err(e) => return self.bad_output(hook, &e.to_string(), source),
        };
        let specific = out.hook_specific_output.unwrap_or_default();
        if let Some(got) = specific.hook_event_name.as_deref() {
            if got != self.event.as_str() {
                let error = fill(
                    WRONG_EVENT_NAME,
                    &[("got", got), ("event", self.event.as_str())],
                );
                return self.bad_output(hook, &error, source);
            }
        }
        if out.continue_ == Some(false) {
            let reason = match out.stop_reason.filter(|r| !r.trim().is_empty()) {
                Some(r) => r,
                None => self.fill(STOP_WITHOUT_REASON, hook, &[]),
            };
            self.stops.push(reason);
        }
        if let Some(m) = out.system_message.filter(|m| !m.trim().is_empty()) {
            self.outcome.system_messages.push(m);
        }
        match self.event {
            HookEvent::PreToolUse => {
                let decision = match (specific.permission_decision, out.decision) {
                    (Some(d), _) => Some((d, specific.permission_decision_reason)),
                    (None, Some(TopDecision::Approve)) => Some((HookDecision::Allow, out.reason)),
                    (None, Some(TopDecision::Block)) => Some((HookDecision::Deny, out.reason)),
                    (None, None) => None,
                };
                if let Some((d, reason)) = decision {
                    self.decisions
                        .push((d, reason.unwrap_or_default().trim().to_string()));
                }
                if let Some(input) = specific.updated_input {
                    if let Some(first) = self.input_from.take() {
                        let warning = fill(
                            INPUT_REPLACED,
                            &[
                                ("event", self.event.as_str()),
                                ("first", &first),
                                ("second", hook),
                            ],
                        );
                        self.warn(warning);
                    }
                    self.outcome.updated_input = Some(Value::Object(input));
                    self.input_from = Some(hook.to_string());
                }
            }
            HookEvent::PostToolUse => {
                if out.decision == Some(TopDecision::Block) {
                    let text = match out.reason.filter(|r| !r.trim().is_empty()) {
                        Some(r) => r.trim().to_string(),
                        None => self.fill(BLOCK_WITHOUT_REASON, hook, &[]),
                    };
                    self.blocked.push(text);
                }
            }
        }
        if let Some(context) = specific.additional_context.filter(|c| !c.trim().is_empty()) {
            self.outcome.additional_context.push(context);
        }
    }

    fn bad_output(&mut self, hook: &str, error: &str, source: Source) {
        let template = match source {
            Source::Command => BAD_OUTPUT,
            Source::Function => FUNCTION_BAD_OUTPUT,
        };
        let warning = self.fill(template, hook, &[("error", error)]);
        self.warn(warning);
    }

    /// `template` filled with the event, the hook name and `more`.
    fn fill(&self, template: &str, hook: &str, more: &[(&str, &str)]) -> String {
        let mut values = vec![("event", self.event.as_str()), ("hook", hook)];
        values.extend_from_slice(more);
        fill(template, &values)
    }
}

/// The message of a code hook's error for a one-line warning: its first
/// non-empty line (a Lua error's message, without the stack trace that
/// follows it), tabs turned to spaces.
fn error_message(error: &str) -> String {
    match error.lines().map(str::trim).find(|l| !l.is_empty()) {
        Some(first) => first.replace('\t', " "),
        None => "no message".to_string(),
    }
}

/// `text` cut to at most `max` characters, ending with `…` when cut.
pub fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some(_) => {
            let keep: String = text.chars().take(max.saturating_sub(1)).collect();
            format!("{keep}…")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::process::ExitStatus;

    fn exited(code: i32, stdout: &str, stderr: &str) -> std::io::Result<CommandRun> {
        Ok(CommandRun {
            ending: Ending::Exited(ExitStatus::from_raw(code << 8)),
            stdout: stdout.into(),
            stderr: stderr.into(),
        })
    }

    fn pre(answers: &[(&str, std::io::Result<CommandRun>)]) -> HookOutcome {
        combine(HookEvent::PreToolUse, answers)
    }

    fn combine(event: HookEvent, answers: &[(&str, std::io::Result<CommandRun>)]) -> HookOutcome {
        let mut c = Combiner::new(event);
        for (hook, run) in answers {
            let run = match run {
                Ok(r) => Ok(r.clone()),
                Err(e) => Err(std::io::Error::new(e.kind(), e.to_string())),
            };
            c.command(hook, "60", run);
        }
        c.finish()
    }

    fn decision(d: &str, reason: &str) -> String {
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": d, "permissionDecisionReason": reason}}).to_string()
    }

    #[test]
    fn deny_beats_ask_beats_allow_with_the_winners_reasons() {
        let o = pre(&[
            ("a", exited(0, &decision("allow", "fine"), "")),
            ("b", exited(0, &decision("ask", "check this"), "")),
            ("c", exited(0, &decision("ask", ""), "")),
            ("d", exited(0, &decision("ask", "and this"), "")),
        ]);
        assert_eq!(
            o.decision,
            Some((HookDecision::Ask, "check this\nand this".into()))
        );
        let o = pre(&[
            ("a", exited(0, &decision("deny", "no"), "")),
            ("b", exited(0, &decision("ask", "hm"), "")),
            ("c", exited(0, &decision("allow", "yes"), "")),
        ]);
        assert_eq!(o.decision, Some((HookDecision::Deny, "no".into())));
        let o = pre(&[("a", exited(0, &decision("allow", ""), ""))]);
        assert_eq!(o.decision, Some((HookDecision::Allow, String::new())));
        assert_eq!(o.warnings, Vec::<String>::new());
        assert_eq!(pre(&[]), HookOutcome::default());
    }

    #[test]
    fn deprecated_top_level_decisions_map_to_allow_and_deny() {
        let o = pre(&[(
            "a",
            exited(0, r#"{"decision":"approve","reason":"ok"}"#, ""),
        )]);
        assert_eq!(o.decision, Some((HookDecision::Allow, "ok".into())));
        let o = pre(&[("a", exited(0, r#"{"decision":"block","reason":"no"}"#, ""))]);
        assert_eq!(o.decision, Some((HookDecision::Deny, "no".into())));
        assert_eq!(o.blocked, None);
        // hookSpecificOutput wins over the deprecated field.
        let both = r#"{"decision":"block","reason":"old","hookSpecificOutput":{"permissionDecision":"allow"}}"#;
        let o = pre(&[("a", exited(0, both, ""))]);
        assert_eq!(o.decision, Some((HookDecision::Allow, String::new())));
    }

    #[test]
    fn exit_codes() {
        let o = pre(&[
            ("a", exited(2, "{\"continue\":false}", "  no edits here\n")),
            ("b", exited(2, "", "")),
            ("c", exited(1, "", "lint failed\n")),
            ("d", exited(3, "", "")),
            ("e", exited(0, "formatted 3 files\n", "")),
        ]);
        assert_eq!(
            o.blocked.as_deref(),
            Some("no edits here\nPreToolUse hook `b` blocked this call (exit code 2) without giving a reason.")
        );
        assert_eq!(o.stop, None, "stdout is ignored on exit 2");
        assert_eq!(
            o.warnings,
            [
                "PreToolUse hook `c` failed with exit code 1; the call went on without it. Its stderr: lint failed",
                "PreToolUse hook `d` failed with exit code 3; the call went on without it. Its stderr: (empty)",
            ]
        );
        assert_eq!(o.decision, None);
    }

    #[test]
    fn endings_other_than_an_exit() {
        let run = |ending| {
            Ok(CommandRun {
                ending,
                stdout: String::new(),
                stderr: String::new(),
            })
        };
        let o = pre(&[
            ("t", run(Ending::TimedOut)),
            ("c", run(Ending::Cancelled)),
            (
                "k",
                run(Ending::Exited(ExitStatus::from_raw(libc::SIGSEGV))),
            ),
            (
                "n",
                Err(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "No such file",
                )),
            ),
        ]);
        assert_eq!(
            o.warnings,
            [
                "PreToolUse hook `t` timed out after 60 s and was stopped; the call went on without it.",
                "PreToolUse hook `k` was killed by signal 11; the call went on without it.",
                "PreToolUse hook `n` could not be started (No such file); the call went on without it.",
            ]
        );
        assert_eq!(
            HookOutcome {
                warnings: vec![],
                ..o
            },
            HookOutcome::default()
        );
    }

    #[test]
    fn invalid_and_unfit_json_is_a_warning_and_ignored() {
        let o = pre(&[
            ("a", exited(0, "{\"hookSpecificOutput\": ", "")),
            (
                "b",
                exited(
                    0,
                    r#"{"hookSpecificOutput":{"permissionDecision":"maybe"}}"#,
                    "",
                ),
            ),
            ("c", exited(0, r#"{"continue":"no"}"#, "")),
            (
                "d",
                exited(
                    0,
                    r#"{"hookSpecificOutput":{"hookEventName":"PostToolUse","permissionDecision":"deny"}}"#,
                    "",
                ),
            ),
            (
                "e",
                exited(0, r#"{"hookSpecificOutput":{"updatedInput":[1]}}"#, ""),
            ),
            ("f", exited(0, "[1, 2]", "")),
            ("g", exited(0, "", "")),
        ]);
        assert_eq!(
            o.warnings,
            [
                "PreToolUse hook `a` exited with code 0 but printed invalid JSON (EOF while parsing a value at line 1 column 22); its output was ignored and the call went on.",
                "PreToolUse hook `b` printed JSON that does not fit Claude Code's hook output (hookSpecificOutput.permissionDecision: unknown variant `maybe`, expected one of `allow`, `ask`, `deny`); its output was ignored and the call went on.",
                "PreToolUse hook `c` printed JSON that does not fit Claude Code's hook output (continue: invalid type: string \"no\", expected a boolean); its output was ignored and the call went on.",
                "PreToolUse hook `d` printed JSON that does not fit Claude Code's hook output (hookSpecificOutput.hookEventName is `PostToolUse`, not `PreToolUse`); its output was ignored and the call went on.",
                "PreToolUse hook `e` printed JSON that does not fit Claude Code's hook output (hookSpecificOutput.updatedInput: invalid type: sequence, expected a map); its output was ignored and the call went on.",
            ]
        );
        assert_eq!(
            HookOutcome {
                warnings: vec![],
                ..o
            },
            HookOutcome::default()
        );
    }

    #[test]
    fn updated_input_last_wins_with_a_warning() {
        let upd = |path: &str| {
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"file_path": path}}})
                .to_string()
        };
        let o = pre(&[
            ("a", exited(0, &upd("/a"), "")),
            ("b", exited(0, &upd("/b"), "")),
        ]);
        assert_eq!(o.updated_input, Some(json!({"file_path": "/b"})));
        assert_eq!(
            o.warnings,
            ["PreToolUse hooks `a` and `b` both returned `updatedInput`; `b`'s, the later one, was used."]
        );
    }

    #[test]
    fn context_stop_and_system_messages_in_hook_order() {
        let o = pre(&[
            (
                "a",
                exited(
                    0,
                    r#"{"hookSpecificOutput":{"additionalContext":"one"},"systemMessage":"hi"}"#,
                    "",
                ),
            ),
            (
                "b",
                exited(0, r#"{"continue":false,"stopReason":"enough"}"#, ""),
            ),
            ("c", exited(0, r#"{"continue":false}"#, "")),
            (
                "d",
                exited(
                    0,
                    r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"two"}}"#,
                    "",
                ),
            ),
        ]);
        assert_eq!(o.additional_context, ["one", "two"]);
        assert_eq!(o.system_messages, ["hi"]);
        assert_eq!(
            o.stop.as_deref(),
            Some("enough\nPreToolUse hook `c` ended the turn (`continue: false`) without giving a reason.")
        );
        assert!(o.warnings.is_empty());
    }

    #[test]
    fn post_tool_use_blocks_with_a_reason_and_ignores_pre_fields() {
        let o = combine(
            HookEvent::PostToolUse,
            &[
                (
                    "a",
                    exited(0, r#"{"decision":"block","reason":"tests fail now"}"#, ""),
                ),
                ("b", exited(0, r#"{"decision":"block"}"#, "")),
                (
                    "c",
                    exited(
                        0,
                        r#"{"decision":"approve","hookSpecificOutput":{"hookEventName":"PostToolUse","permissionDecision":"deny","updatedInput":{"x":1},"additionalContext":"ctx"}}"#,
                        "",
                    ),
                ),
                ("d", exited(2, "", "formatting broke it")),
            ],
        );
        assert_eq!(
            o.blocked.as_deref(),
            Some("tests fail now\nPostToolUse hook `b` reported a problem with this call (`decision: block`) without giving a reason.\nformatting broke it")
        );
        assert_eq!(o.decision, None);
        assert_eq!(o.updated_input, None);
        assert_eq!(o.additional_context, ["ctx"]);
        assert!(o.warnings.is_empty());
    }

    #[test]
    fn function_hooks() {
        let mut c = Combiner::new(HookEvent::PreToolUse);
        c.function("f1", "60", FnEnding::Returned(Ok(json!({"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "lua says no"}}))));
        c.function("f2", "60", FnEnding::Returned(Ok(Value::Null)));
        c.function(
            "f3",
            "60",
            FnEnding::Returned(Err("attempt to index a nil value".into())),
        );
        c.function("f4", "60", FnEnding::Panicked);
        c.function("f5", "0.5", FnEnding::TimedOut);
        c.function("f6", "60", FnEnding::Cancelled);
        c.function("f7", "60", FnEnding::Returned(Ok(json!("text"))));
        c.function(
            "f8",
            "60",
            FnEnding::Returned(Ok(
                json!({"hookSpecificOutput": {"permissionDecision": "bogus"}}),
            )),
        );
        c.function("f9", "60", FnEnding::Returned(Ok(json!([1, 2]))));
        let o = c.finish();
        assert_eq!(o.decision, Some((HookDecision::Deny, "lua says no".into())));
        assert_eq!(
            o.warnings,
            [
                "PreToolUse hook `f3` failed (attempt to index a nil value); the call went on without it.",
                "PreToolUse hook `f4` panicked; the call went on without it.",
                "PreToolUse hook `f5` timed out after 0.5 s and was stopped; the call went on without it.",
                "PreToolUse hook `f7` returned a string, not a table or nil; it was ignored and the call went on.",
                "PreToolUse hook `f8` returned a table that does not fit Claude Code's hook output (hookSpecificOutput.permissionDecision: unknown variant `bogus`, expected one of `allow`, `ask`, `deny`); it was ignored and the call went on.",
                "PreToolUse hook `f9` returned a table that does not fit Claude Code's hook output (expected a JSON object, got an array); it was ignored and the call went on.",
            ]
        );
    }

    /// A Lua error carries its stack trace after the message (lines that
    /// start with a tab): the warning keeps the message only.
    #[test]
    fn a_function_error_is_its_first_line_without_tabs() {
        let mut c = Combiner::new(HookEvent::PreToolUse);
        let lua_error = "[string \"init.lua\"]:3: no\tedits today\nstack traceback:\n\t[C]: in function 'error'\n\t[string \"init.lua\"]:3: in function <[string \"init.lua\"]:2>";
        c.function("f", "60", FnEnding::Returned(Err(lua_error.into())));
        c.function("g", "60", FnEnding::Returned(Err("\n \n".into())));
        assert_eq!(
            c.finish().warnings,
            [
                "PreToolUse hook `f` failed ([string \"init.lua\"]:3: no edits today); the call went on without it.",
                "PreToolUse hook `g` failed (no message); the call went on without it.",
            ]
        );
    }

    #[test]
    fn long_stderr_is_shortened_in_warnings() {
        let long = "x".repeat(WARNING_STDERR_CHARS + 10);
        let o = pre(&[("a", exited(1, "", &long))]);
        let want = format!("{}…", "x".repeat(WARNING_STDERR_CHARS - 1));
        assert!(o.warnings[0].ends_with(&format!("Its stderr: {want}")));
        assert_eq!(shorten("héllo", 5), "héllo");
        assert_eq!(shorten("héllo!", 5), "héll…");
    }
}
