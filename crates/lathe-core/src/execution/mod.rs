//! The tool pipeline: every `tool_use` goes through nine gates and comes out
//! as exactly one `tool_result` with the same `tool_use_id`
//! (docs/pipeline.md, "The gates").
//!
//! 1 lookup by name / alias, 2 input schema (jsonschema, strict),
//! 3 normalize (paths against the project root, defaults) — these three in
//! [`CheckedCall::new`], once per call, which the executor also uses to
//! classify the call for concurrency; 4 the tool's `validate_input`, which
//! returns its plan; 5 PreToolUse hooks (`hook_gates`); 6 permission
//! (deny > ask > allow; ask → [`Prompter`], showing the plan); 7 `call`,
//! applying the plan (panics caught); 8 PostToolUse hooks; 9 map to
//! `tool_result` (oversized text saved to a file).
//!
//! Normalisation runs before `validate_input`: validation needs the resolved
//! path ("was this file read?"), and resolving once means every later gate
//! sees the same input.

pub mod answer;
mod checked;
mod executor;
mod hook_gates;
mod large_result;
pub mod messages;
mod progress;
mod registry;
mod schema_check;
pub mod sendable;

pub use answer::AnswerState;
pub use checked::CheckedCall;
pub use executor::{partition_tool_calls, Batch, ToolExecutor};
pub use hook_gates::{Hooks, TurnStop, HOOK_STOPPED_TURN};
pub use large_result::{ResultStore, PERSISTED_RESULT, PREVIEW_CHARS, REPEATED_FAILURE};
pub use registry::{
    validators_compiled, RegisteredTool, RegistryError, ToolRegistry, UnknownToolExplainer,
    UserTools,
};

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::FutureExt;

use crate::config::settings_files::save_local_allow;
use crate::editor::TextHash;
use crate::events::{AgentEvent, EventSink, ToolStatus};
use crate::hooks::{HookDecision, HookEvent};
use crate::permissions::{
    command_reads, decide, expand_named_path, follows_links, hidden_paths, hidden_twin,
    linked_hidden, reach_following, resolve_for_rules, shell, spell, suggest_rules,
    wants_no_sandbox, with_aliases, writes_git_layout, Decision, PermissionPreview,
    PermissionState, PromptAnswer, Prompter, Reached, ReadFilter, Reason, ReasonKind, Request,
    Revision, Rule, RuleBase, RuleFamily, RuleKind, RuleSource, DENIED_BY_RULE,
    DENIED_IN_PLAN_MODE, USER_DECLINED, USER_DECLINED_WITH_MESSAGE,
};
use crate::protocol::{ToolResult, ToolResultContent, ToolUse};
use crate::sandbox::{Policy, Tier};
use crate::text::{fill, plural};
use crate::tools::bash::messages::SANDBOX_NOT_PREPARED;
use crate::tools::support::file_state::ReadRecord;
use crate::tools::{
    FileState, PlannedCall, PreparedCall, Sandboxing, ToolContext, ToolError, ToolKind, ToolOutput,
};
use hook_gates::{HOOK_BAD_INPUT, HOOK_BLOCKED, HOOK_DENIED, HOOK_STOPPED_CALL};

use messages::{
    ASKS_SANDBOX_UNREADY, EDITED_BY_USER, HUNKS_APPLIED, INTERRUPTED, INTERRUPTED_BEFORE_RUN,
    NEEDS_PERMISSION, NEEDS_PERMISSION_ASK_RULE, NEEDS_PERMISSION_PROTECTED,
    NEEDS_PERMISSION_UNSANDBOXED, NO_HOOK_REASON, REJECTED_HUNKS, REPLANNED, RULE_NOT_SAVED,
    SANDBOX_OFF_ALLOWED, TOOL_PANICKED, USER_REVISED, YOUR_VERSION_APPLIED,
};

/// The reason the float shows when the plan made after `r` failed (the
/// file changed so that the call no longer applies); any answer then ends
/// the call with the tool's error. `{error}`.
pub const REPLAN_FAILED: &str =
    "the file changed, and the call no longer applies to it: {error} (any answer ends the call with this error)";

/// Paths below the project root that a workspace command may read but not
/// change (when they exist): git's hooks and config (run by the user's next
/// git command), lathe's and Claude Code's settings and commands
/// (`.claude`), the project's MCP servers (`.mcp.json`), editor and
/// direnv configuration that runs code (`.vscode`, `.idea`, `.envrc`),
/// submodule URLs (`.gitmodules`).
pub const FROZEN_IN_PROJECT: &[&str] = &[
    ".git/hooks",
    ".git/config",
    ".claude",
    ".mcp.json",
    ".vscode",
    ".idea",
    ".envrc",
    ".gitmodules",
];

/// What the pipeline needs besides the call itself. Cheap to clone.
#[derive(Clone)]
pub struct ExecEnv {
    /// The session's tools.
    pub registry: Arc<ToolRegistry>,
    /// Root, editor, read-file state and the turn's cancellation token.
    pub ctx: ToolContext,
    /// Rules and session grants.
    pub permissions: Arc<PermissionState>,
    /// Asks the user.
    pub prompter: Arc<dyn Prompter>,
    /// Receives `ToolStarted` / `ToolFinished`.
    pub sink: Arc<dyn EventSink>,
    /// Where oversized results are saved (gate 9).
    pub results: Arc<ResultStore>,
    /// `false` when nobody can answer a permission ask (a script waiting in
    /// `lathe.tool_sync`): a call that would ask is refused instead.
    pub interactive: bool,
    /// PreToolUse / PostToolUse hooks (gates 5 and 8).
    pub hooks: Arc<Hooks>,
    /// Set when a hook asked to end the turn (read by the turn loop).
    pub turn_stop: TurnStop,
    /// What the calls of the current answer share (its changing calls,
    /// the `Y` grant); each [`ToolExecutor`] starts a fresh one.
    pub answer: AnswerState,
}

/// `true` when acceptEdits mode would let `req` run without asking: what
/// `Y` (allow the rest of this answer's file changes) allows, no more.
fn accepts_edits(rules: &crate::permissions::Rules, req: &crate::permissions::Request<'_>) -> bool {
    let mut rules = rules.clone();
    rules.mode = crate::permissions::Mode::AcceptEdits;
    matches!(
        crate::permissions::decide(&rules, req),
        Decision::Allow(r) if r.kind == ReasonKind::Mode
    )
}

/// A `tool_use` as it came off the stream: when its `partial_json` did not
/// parse, `input_error` holds the parser's message and `tool_use.input` is `{}`.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingToolUse {
    /// The block.
    pub tool_use: ToolUse,
    /// Why the input is unusable, if it is.
    pub input_error: Option<String>,
    /// The input as it arrived when it is not a JSON object (the chat
    /// shows it in place of the key argument).
    pub sent: Option<String>,
    /// The call broke one of the answer's caps (`provider::limits`): the
    /// whole model-facing result, answered before gate 1 without running.
    pub refusal: Option<String>,
}

impl From<ToolUse> for PendingToolUse {
    fn from(tool_use: ToolUse) -> Self {
        Self {
            tool_use,
            input_error: None,
            sent: None,
            refusal: None,
        }
    }
}

/// The outcome of one call: the `tool_result` for the model plus what the
/// chat shows.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolRun {
    /// The `tool_result` block (same `tool_use_id`).
    pub result: ToolResult,
    /// The tool's name as resolved (or as the model wrote it).
    pub name: String,
    /// How it ended.
    pub status: ToolStatus,
    /// One line for the chat.
    pub summary: String,
    /// The permission gate's verdict, when the call got that far.
    pub decision: Option<Decision>,
}

/// A gate's refusal: the model-facing text and how the chat labels it.
pub(crate) struct Stop {
    status: ToolStatus,
    message: String,
}

impl Stop {
    fn error(message: impl Into<String>) -> Self {
        Self {
            status: ToolStatus::Error,
            message: message.into(),
        }
    }
}

/// Runs one `tool_use` through every gate. Never fails and never panics:
/// every exit is a [`ToolRun`] whose result answers `call.tool_use.id`.
pub async fn run_tool_use(call: &PendingToolUse, env: &ExecEnv) -> ToolRun {
    run_checked(CheckedCall::new(call.clone(), env), env).await
}

/// Runs a call that already passed through gates 1–3 ([`CheckedCall::new`],
/// which the executor made to classify it) through gates 4–9. Never fails
/// and never panics: every exit is a [`ToolRun`] answering its `tool_use`.
pub async fn run_checked(checked: CheckedCall, env: &ExecEnv) -> ToolRun {
    let shown = checked.detail(&env.ctx.root);
    let CheckedCall {
        pending,
        tool,
        prepared,
    } = checked;
    let mut run = Gates {
        id: pending.tool_use.id.clone(),
        name: tool
            .as_ref()
            .map_or_else(|| pending.tool_use.name.clone(), |t| t.name().to_string()),
        max_result_chars: tool.as_ref().and_then(|t| t.max_result_chars()),
        input: pending.tool_use.input.clone(),
        shown,
        env,
        started: false,
        decision: None,
        hook_changed: false,
        ready_sandbox: None,
    };
    let outcome = AssertUnwindSafe(run.pass(prepared))
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| {
            Err(Stop::error(fill(
                TOOL_PANICKED,
                &[("tool", &run.name), ("detail", &panic_text(&panic))],
            )))
        });
    let outcome = match outcome {
        Ok(out) => Ok(sendable_output(&run.name, out).await),
        stop => stop,
    };
    run.finish(outcome)
}

/// Gate 9's repair ([`sendable::repair`]); a result with images is
/// decoded on the blocking pool.
async fn sendable_output(tool: &str, out: ToolOutput) -> ToolOutput {
    if !sendable::has_images(&out) {
        return sendable::repair(tool, out);
    }
    let name = tool.to_string();
    let fallback = ToolOutput::text(fill(sendable::EMPTY_RESULT, &[("tool", tool)]), "");
    tokio::task::spawn_blocking(move || sendable::repair(&name, out))
        .await
        .unwrap_or(fallback)
}

/// One call's walk through gates 4–9.
struct Gates<'a> {
    id: String,
    name: String,
    /// Gate 9's bound for text results (the resolved tool's).
    max_result_chars: Option<usize>,
    /// The call's input as the model sent it (gate 9 tells a call that
    /// failed the same way before: [`ResultStore::repeated_failure`]).
    input: serde_json::Value,
    /// The chat's key argument of a call gates 1–3 refused
    /// ([`CheckedCall::detail`]).
    shown: String,
    env: &'a ExecEnv,
    started: bool,
    decision: Option<Decision>,
    /// Gate 5 ran the call with a hook's rewritten input.
    hook_changed: bool,
    /// The sandbox gate 6 prepared for a command it let run without
    /// asking (its hidden paths already found).
    ready_sandbox: Option<Sandboxing>,
}

impl Gates<'_> {
    async fn pass(&mut self, prepared: Result<PreparedCall, Stop>) -> Result<ToolOutput, Stop> {
        let prepared = prepared.inspect_err(|_| {
            let shown = std::mem::take(&mut self.shown);
            self.started(&shown, serde_json::Value::Null)
        })?;
        self.started(
            &prepared.describe(&self.env.ctx.root),
            prepared.input_json.clone(),
        );
        if self.env.ctx.cancel.is_cancelled() {
            return Err(interrupted_before_run(&self.name));
        }
        let mut planned = self.plan(prepared).await?;
        let mut notes = Vec::new();
        let (hooked, hook_decision) = self.pre_tool_use_hooks(planned, &mut notes).await?;
        planned = hooked;
        // Gate 6 may send the call back to gate 4: the document changed
        // while the float was open and the user asked for a new plan.
        let mut replanned = false;
        // What the tool line adds after a revision (`1 of 2 hunks applied`).
        let mut revised: Option<String> = None;
        loop {
            match self.permission(&mut planned, hook_decision).await? {
                Approval::Run => break,
                Approval::Revised(note, shown) => {
                    notes.insert(0, note);
                    revised = Some(shown);
                    break;
                }
                Approval::Replan => {
                    let (again, unseen) = self.plan_again(planned).await?;
                    planned = again;
                    replanned |= unseen;
                }
            }
        }
        if replanned {
            let path = planned.prepared().target_path().unwrap_or_default();
            let shown = crate::tools::support::paths::display(&self.env.ctx.root, &path);
            notes.insert(0, fill(REPLANNED, &[("path", &shown)]));
        }
        let tool_name = planned.prepared().tool().name().to_string();
        let tool = tool_name.as_str();
        let family = planned.prepared().tool().rule_family();
        planned.limit_reads(self.read_filter((tool, family)));
        self.confine(&mut planned).await?;
        let input = planned.prepared().input_json.clone();
        let mut output = self.call_tool(planned).await?;
        if let Some(shown) = revised {
            output.summary.push_str(&shown);
        }
        self.post_tool_use_hooks(tool, &input, &output, &mut notes)
            .await;
        for note in notes {
            append_text(&mut output, &note);
        }
        Ok(output)
    }

    /// Gate 5: PreToolUse hooks. A block or a deny refuses the call; a
    /// rewritten input is checked again (gates 2–4); context goes to
    /// `notes`; the hooks' allow/ask goes on to gate 6.
    async fn pre_tool_use_hooks(
        &mut self,
        planned: PlannedCall,
        notes: &mut Vec<String>,
    ) -> Result<(PlannedCall, Option<HookDecision>), Stop> {
        let tool = planned.prepared().tool().name();
        let outcome = hook_gates::run(
            self.env,
            HookEvent::PreToolUse,
            tool,
            &self.id,
            &planned.prepared().input_json,
            None,
        )
        .await;
        let denied = |message: String| Stop {
            status: ToolStatus::Denied,
            message,
        };
        if let Some(reason) = &outcome.stop {
            self.env.turn_stop.request(reason);
            return Err(denied(fill(HOOK_STOPPED_CALL, &[("reason", reason)])));
        }
        if let Some(text) = &outcome.blocked {
            return Err(denied(fill(
                HOOK_BLOCKED,
                &[("tool", tool), ("text", text)],
            )));
        }
        let decision = match &outcome.decision {
            Some((HookDecision::Deny, reason)) => {
                let reason = match reason.trim() {
                    "" => NO_HOOK_REASON,
                    r => r,
                };
                return Err(denied(fill(
                    HOOK_DENIED,
                    &[("tool", tool), ("reason", reason)],
                )));
            }
            other => other.as_ref().map(|(d, _)| *d),
        };
        notes.extend(hook_gates::result_notes(HookEvent::PreToolUse, &outcome));
        let planned = match outcome.updated_input {
            None => planned,
            Some(input) => {
                self.hook_changed = true;
                self.replan_with(tool, input).await?
            }
        };
        Ok((planned, decision))
    }

    /// Gates 2–4 again for an input a hook rewrote.
    async fn replan_with(
        &mut self,
        tool: &str,
        input: serde_json::Value,
    ) -> Result<PlannedCall, Stop> {
        let bad = |message: String| Stop::error(fill(HOOK_BAD_INPUT, &[("error", &message)]));
        let pending = PendingToolUse::from(ToolUse {
            id: self.id.clone(),
            name: tool.to_string(),
            input,
            extra: Default::default(),
        });
        let prepared = CheckedCall::new(pending, self.env)
            .prepared
            .map_err(|stop| bad(stop.message))?;
        prepared
            .validate(&self.env.ctx)
            .await
            .map_err(|e| bad(e.message))
    }

    /// Gate 8: PostToolUse hooks after a call that ran: context and
    /// feedback go to `notes`; `continue: false` ends the turn.
    async fn post_tool_use_hooks(
        &mut self,
        tool: &str,
        input: &serde_json::Value,
        output: &ToolOutput,
        notes: &mut Vec<String>,
    ) {
        let response = serde_json::json!({
            "content": output.content.as_text(),
            "is_error": false,
        });
        let outcome = hook_gates::run(
            self.env,
            HookEvent::PostToolUse,
            tool,
            &self.id,
            input,
            Some(response),
        )
        .await;
        if let Some(reason) = &outcome.stop {
            self.env.turn_stop.request(reason);
        }
        notes.extend(hook_gates::result_notes(HookEvent::PostToolUse, &outcome));
    }

    /// Gate 4: the tool checks the call against the world and plans it.
    async fn plan(&mut self, prepared: PreparedCall) -> Result<PlannedCall, Stop> {
        prepared
            .validate(&self.env.ctx)
            .await
            .map_err(|e| Stop::error(e.message))
    }

    /// Gate 4 again, after the user pressed `r` in the float: the document
    /// changed while it was open. The call is planned against the document
    /// as it is now, and the new plan goes back to the float; so the
    /// read-before-change check is made against the document now (the
    /// user reviews that plan before anything is written) in a staged
    /// `FileState` that is dropped afterwards: what the model read stays
    /// on record. Returns the plan and whether the model has not seen that
    /// text (the result then says so). When the call no longer applies
    /// (its `old_string` is gone), the float says so and any answer ends
    /// the call with the tool's error.
    async fn plan_again(&mut self, planned: PlannedCall) -> Result<(PlannedCall, bool), Stop> {
        let shown = planned.preview(&self.env.ctx.root);
        let prepared = planned.into_prepared();
        let tool_name = prepared.tool().name().to_string();
        let tool = tool_name.as_str();
        let input = serde_json::to_string_pretty(&prepared.input_json).unwrap_or_default();
        let mut ctx = self.env.ctx.clone();
        let mut unseen = false;
        if let Some(path) = prepared.target_path() {
            let record = ctx.file_state.get(&path);
            if let (Some(record), Ok(doc)) = (record, ctx.editor.read(&path).await) {
                unseen = record
                    .stamp
                    .is_stale(&doc.version, || TextHash::of(&doc.text));
                let staged = FileState::staged(&ctx.file_state);
                staged.record(
                    &path,
                    ReadRecord {
                        stamp: doc.stamp(),
                        ..record
                    },
                );
                ctx.file_state = Arc::new(staged);
            }
        }
        match prepared.validate(&ctx).await {
            Ok(planned) => Ok((planned, unseen)),
            Err(e) => Err(self.replan_failed(tool, shown, input, e).await),
        }
    }

    /// Shows why the new plan failed (in the float the user pressed `r`
    /// in) and ends the call with the tool's error, whatever the answer.
    async fn replan_failed(
        &mut self,
        tool: &str,
        shown: PermissionPreview,
        input: String,
        error: ToolError,
    ) -> Stop {
        let preview = PermissionPreview {
            title: shown.title,
            path: shown.path,
            reason: fill(REPLAN_FAILED, &[("error", &error.message)]),
            input,
            ..PermissionPreview::default()
        };
        tokio::select! {
            _ = self.env.prompter.ask(tool, &preview) => Stop::error(error.message),
            _ = self.env.ctx.cancel.cancelled() => interrupted_before_run(&self.name),
        }
    }

    /// Gate 6. The float shows the plan gate 4 made, so the user approves
    /// exactly what gate 7 applies (or a revision of it the user made).
    async fn permission(
        &mut self,
        planned: &mut PlannedCall,
        hook: Option<HookDecision>,
    ) -> Result<Approval, Stop> {
        let subject = Subject::of(planned.prepared(), self.env).await;
        let prepared = planned.prepared();
        let tool = prepared.tool().name();
        let family = prepared.tool().rule_family();
        let req = subject.request(
            (tool, family),
            prepared.is_read_only_to(self.env.ctx.by_user),
        );
        let decision = with_hook(self.env.permissions.decide(&req), hook);
        let decision = self.held_by_the_sandbox(decision, prepared).await;
        self.decision = Some(decision.clone());
        let reason = match decision {
            Decision::Allow(_) => return Ok(Approval::Run),
            // `Y` allowed the rest of this answer's file changes: those
            // acceptEdits mode would let run do (an ask rule, a protected
            // path, a file outside the project or a hook still asks).
            Decision::Ask(reason)
                if reason.kind == ReasonKind::Default
                    && hook.is_none()
                    && prepared.tool().kind() == ToolKind::Edit
                    && self.env.answer.allows_rest()
                    && accepts_edits(&self.env.permissions.rules(), &req) =>
            {
                return Ok(Approval::Run)
            }
            Decision::Deny(reason) if reason.kind == ReasonKind::Mode => {
                return Err(Stop {
                    status: ToolStatus::Denied,
                    message: fill(DENIED_IN_PLAN_MODE, &[("tool", tool)]),
                })
            }
            Decision::Deny(reason) => {
                return Err(Stop {
                    status: ToolStatus::Denied,
                    message: fill(DENIED_BY_RULE, &[("tool", tool), ("reason", &reason.text)]),
                })
            }
            Decision::Ask(reason) if !self.env.interactive => {
                return Err(Stop {
                    status: ToolStatus::Denied,
                    message: needs_permission(tool, &reason),
                })
            }
            Decision::Ask(reason) => reason,
        };
        let mut preview = planned.preview(&self.env.ctx.root);
        if let Some(c) = preview.command.as_mut() {
            c.sandbox = self.sandbox_line(prepared);
        }
        preview.hook_changed = self.hook_changed;
        preview.reason = reason.text.clone();
        preview.input = serde_json::to_string_pretty(&prepared.input_json).unwrap_or_default();
        let rules = suggest_rules(
            (tool, family),
            subject.path.as_deref(),
            subject.path_is_dir,
            subject.command.as_deref(),
            &subject.root,
        );
        // `a`/`A` are offered only when their rule would let such a call
        // run without asking: not for an ask rule or a protected path (they
        // beat any allow), a hook that asks, or a command part no `Bash(…)`
        // rule allows.
        if self.rules_would_allow(&rules, &req, hook) {
            preview.session_rules = rules;
        } else if let Some(exact) = self.exact_rules(&subject, &req, hook) {
            // While the sandbox is off only exact Bash rules let a command
            // run without asking: offer those.
            preview.session_rules = exact;
        }
        preview.burst = tokio::select! {
            b = self.env.answer.asking(&self.id) => b,
            _ = self.env.ctx.cancel.cancelled() => return Err(interrupted_before_run(&self.name)),
        };
        let answer = tokio::select! {
            a = self.env.prompter.ask(tool, &preview) => a,
            _ = self.env.ctx.cancel.cancelled() => return Err(interrupted_before_run(&self.name)),
        };
        let declined = |message: String| Stop {
            status: ToolStatus::Denied,
            message,
        };
        match answer {
            PromptAnswer::AllowOnce => Ok(Approval::Run),
            PromptAnswer::AllowAnswer => {
                self.env.answer.allow_rest();
                Ok(Approval::Run)
            }
            PromptAnswer::AllowSession => {
                self.grant(&preview.session_rules);
                Ok(Approval::Run)
            }
            PromptAnswer::AllowAndSave => {
                self.grant(&preview.session_rules);
                if let Err(e) = save_local_allow(&self.env.ctx.root, &preview.session_rules) {
                    self.env.sink.emit(AgentEvent::Notice {
                        text: fill(RULE_NOT_SAVED, &[("error", &e)]),
                        is_error: true,
                    });
                }
                Ok(Approval::Run)
            }
            PromptAnswer::AllowRevised(revision) => {
                planned
                    .revise(&revision)
                    .map_err(|e| Stop::error(e.message))?;
                let shown = if revision.edited {
                    YOUR_VERSION_APPLIED.to_string()
                } else {
                    let total = preview.change.as_ref().map_or(0, |(before, after)| {
                        crate::tools::support::diff::hunk_count(
                            before.as_deref().unwrap_or(""),
                            after,
                        )
                    });
                    let kept = total.saturating_sub(revision.rejected_hunks.len());
                    fill(
                        HUNKS_APPLIED,
                        &[("kept", &kept.to_string()), ("total", &total.to_string())],
                    )
                };
                Ok(Approval::Revised(revision_note(&revision), shown))
            }
            PromptAnswer::Deny => Err(declined(USER_DECLINED.to_string())),
            PromptAnswer::DenyWithMessage(m) if m.trim().is_empty() => {
                Err(declined(USER_DECLINED.to_string()))
            }
            PromptAnswer::DenyWithMessage(m) => Err(declined(fill(
                USER_DECLINED_WITH_MESSAGE,
                &[("message", m.trim())],
            ))),
            PromptAnswer::Replan => Ok(Approval::Replan),
        }
    }

    /// What the float says of where an allowed command will run (the
    /// policy without its hidden paths, which are worked out only if it
    /// runs).
    fn sandbox_line(&self, prepared: &PreparedCall) -> String {
        self.sandbox_plan(prepared).describe()
    }

    /// For a Bash call while the sandbox is off: the exact rule of each of
    /// its commands (`Bash(npm test)`), when granting them would let such
    /// a call run without asking.
    fn exact_rules(
        &self,
        subject: &Subject,
        req: &Request<'_>,
        hook: Option<HookDecision>,
    ) -> Option<Vec<String>> {
        if req.family != RuleFamily::Command || self.env.permissions.rules().sandbox.off.is_none() {
            return None;
        }
        let shell::Split::Commands(parts) = shell::split(subject.command.as_deref()?) else {
            return None;
        };
        let exact: Vec<String> = parts
            .iter()
            .map(|p| {
                format!(
                    "{}({})",
                    req.tool,
                    p.text().replace('\\', "\\\\").replace('*', "\\*")
                )
            })
            .collect();
        (!exact.is_empty() && self.rules_would_allow(&exact, req, hook)).then_some(exact)
    }

    /// `true` when granting `rules` for the session would let `req` run
    /// without asking (the rules in force plus them, then the hook's say).
    fn rules_would_allow(
        &self,
        rules: &[String],
        req: &Request<'_>,
        hook: Option<HookDecision>,
    ) -> bool {
        if rules.is_empty() {
            return false;
        }
        let base = RuleBase::at_root(&self.env.ctx.root, dirs::home_dir().as_deref());
        let mut in_force = self.env.permissions.rules();
        for r in rules {
            match Rule::parse(r, &base) {
                Ok(rule) => in_force.push(RuleKind::Allow, rule, RuleSource::Session),
                Err(_) => return false,
            }
        }
        matches!(with_hook(decide(&in_force, req), hook), Decision::Allow(_))
    }

    /// The check a search applies to each file it would read (gate 6 hands
    /// it to Grep and Glob through `limit_reads`): the rules in force for
    /// `tool`, and the ask the user just answered for this call, if any
    /// (files that ask for that same reason are then covered).
    fn read_filter(&self, tool: (&str, RuleFamily)) -> ReadFilter {
        let root = resolve_for_rules(&self.env.ctx.root);
        let filter = ReadFilter::new(self.env.permissions.rules(), tool, &root)
            .seeing_hard_links(linked_hidden);
        match &self.decision {
            Some(Decision::Ask(reason)) => filter.approving(reason.clone()),
            _ => filter,
        }
    }

    /// Where a call that runs a command (Bash) runs, as the decision
    /// assumed (docs/sandbox.md, "The sandbox"): outside the sandbox
    /// when the user allowed `dangerouslyDisableSandbox` or the sandbox is
    /// off here; otherwise inside it, read-only for a read-only command,
    /// writing only in the project, the temp dir, lathe's folders and the
    /// allowed ones for any other, with the network as the settings say and
    /// the paths Read rules and secret names cover hidden (except those
    /// the user just allowed by answering this call's ask).
    async fn confine(&mut self, planned: &mut PlannedCall) -> Result<(), Stop> {
        if planned.prepared().command_line().is_none() {
            return Ok(());
        }
        let sandboxing = match self.ready_sandbox.take() {
            Some(ready) => ready,
            None => {
                let approved = match &self.decision {
                    Some(Decision::Ask(reason)) => Some(reason.clone()),
                    _ => None,
                };
                let answered_why = approved
                    .as_ref()
                    .is_some_and(|r| r.kind == ReasonKind::Sandbox);
                let mut sandboxing = match self.sandboxing(planned.prepared(), approved).await {
                    Ok(sandboxing) => sandboxing,
                    // The user was asked because the paths to hide could
                    // not all be found, and allowed it: the rest of the
                    // sandbox still holds.
                    Err(_) if answered_why => self.sandbox_plan(planned.prepared()),
                    Err(e) => {
                        return Err(Stop::error(fill(SANDBOX_NOT_PREPARED, &[("error", &e)])))
                    }
                };
                // The user allowed this very command: where paths cannot
                // be hidden or protected here (no user namespaces), it
                // runs held to the rest of its sandbox.
                if let Sandboxing::On(policy) = &mut sandboxing {
                    if crate::sandbox::cannot_hold(policy).is_some()
                        && crate::sandbox::support().unavailable().is_none()
                    {
                        policy.hidden.clear();
                        policy.frozen.clear();
                    }
                }
                sandboxing
            }
        };
        planned.confine(sandboxing);
        Ok(())
    }

    /// A command allowed to run without asking runs only if its sandbox
    /// can be made: the paths to hide are found now, and when they cannot
    /// be (too many files to check), the call asks instead, saying why.
    async fn held_by_the_sandbox(
        &mut self,
        decision: Decision,
        prepared: &PreparedCall,
    ) -> Decision {
        if !matches!(decision, Decision::Allow(_)) || prepared.command_line().is_none() {
            return decision;
        }
        let held = self
            .sandboxing(prepared, None)
            .await
            .and_then(|s| match &s {
                Sandboxing::On(policy) => match crate::sandbox::cannot_hold(policy) {
                    Some(why) => Err(why),
                    None => Ok(s),
                },
                Sandboxing::Off(_) => Ok(s),
            });
        match held {
            Ok(sandboxing) => {
                self.ready_sandbox = Some(sandboxing);
                decision
            }
            Err(why) => Decision::Ask(Reason {
                text: fill(ASKS_SANDBOX_UNREADY, &[("why", &why)]),
                rule: None,
                source: None,
                kind: ReasonKind::Sandbox,
            }),
        }
    }

    /// The [`Sandboxing`] of [`Gates::confine`].
    /// `approved`: the ask the user answered for this call, if any.
    /// Errors: why the paths to hide could not be found.
    async fn sandboxing(
        &self,
        prepared: &PreparedCall,
        approved: Option<Reason>,
    ) -> Result<Sandboxing, String> {
        let mut policy = match self.sandbox_plan(prepared) {
            Sandboxing::On(policy) => policy,
            off => return Ok(off),
        };
        let rules = self.env.permissions.rules();
        let root = resolve_for_rules(&self.env.ctx.root);
        policy.hidden =
            tokio::task::spawn_blocking(move || hidden_paths(&rules, &root, approved.as_ref()))
                .await
                .unwrap_or_else(|e| Err(e.to_string()))?;
        Ok(Sandboxing::On(policy))
    }

    /// Where `prepared` runs, but for the paths to hide (a walk, done by
    /// [`Gates::sandboxing`] only for a call that runs): outside the
    /// sandbox when the model asked and the user allowed it or the sandbox
    /// is off; else the tier by read-only-ness, the writable folders, the
    /// frozen ones and the network.
    fn sandbox_plan(&self, prepared: &PreparedCall) -> Sandboxing {
        let rules = self.env.permissions.rules();
        if wants_no_sandbox(&prepared.input_json.to_string()) {
            return Sandboxing::Off(SANDBOX_OFF_ALLOWED.to_string());
        }
        if let Some(why) = rules.sandbox.off {
            return Sandboxing::Off(why);
        }
        let root = resolve_for_rules(&self.env.ctx.root);
        let tier = if prepared.is_read_only() {
            Tier::ReadOnly
        } else {
            Tier::Workspace
        };
        // `/dev/shm`: POSIX shared memory and semaphores (Python's
        // multiprocessing) live there; it is a temp dir too.
        let mut writable = vec![
            root.clone(),
            resolve_for_rules(&std::env::temp_dir()),
            PathBuf::from("/dev/shm"),
        ];
        for d in rules
            .output_dirs
            .iter()
            .chain(&rules.additional_dirs)
            .chain(&rules.sandbox.allow_write)
        {
            if !writable.contains(d) {
                writable.push(d.clone());
            }
        }
        // What a command could change now to run or grant something later
        // (a git hook the user's next commit runs, settings lathe obeys
        // at the next setup): read-only for workspace commands, when
        // they exist (a mount needs something to cover).
        let frozen: Vec<PathBuf> = FROZEN_IN_PROJECT
            .iter()
            .map(|rel| root.join(rel))
            .filter(|p| p.symlink_metadata().is_ok())
            .collect();
        Sandboxing::On(Policy {
            tier,
            writable,
            hidden: Vec::new(),
            frozen,
            network: rules.sandbox.network,
        })
    }

    /// Grants `rules` (as the float showed them) for the rest of the session.
    fn grant(&self, rules: &[String]) {
        let base = RuleBase::at_root(&self.env.ctx.root, dirs::home_dir().as_deref());
        for r in rules {
            if let Ok(rule) = Rule::parse(r, &base) {
                self.env.permissions.grant(rule);
            }
        }
    }

    /// Gate 7. Read-only calls stop at once on interrupt; calls that change
    /// things run to completion (an Edit is never half-applied) and rely on
    /// `ctx.cancel` themselves where they can stop safely (Bash).
    async fn call_tool(&mut self, planned: PlannedCall) -> Result<ToolOutput, Stop> {
        let read_only = planned.prepared().is_read_only();
        let mut call_ctx = self.env.ctx.clone();
        call_ctx.progress = Some(progress::progress_for(&self.id, self.env.sink.clone()));
        let ctx = &call_ctx;
        let fut = AssertUnwindSafe(planned.run(ctx)).catch_unwind();
        let result = if read_only {
            tokio::select! {
                r = fut => r,
                _ = ctx.cancel.cancelled() => return Err(interrupted(&self.name)),
            }
        } else {
            fut.await
        };
        match result {
            Ok(Ok(out)) => Ok(out),
            // A tool that stopped itself on the turn's token (Bash) reports
            // the interrupt in its own words; the chat labels it interrupted.
            Ok(Err(e)) if ctx.cancel.is_cancelled() => Err(Stop {
                status: ToolStatus::Interrupted,
                message: e.message,
            }),
            Ok(Err(e)) => Err(Stop::error(e.message)),
            Err(panic) => Err(Stop::error(fill(
                TOOL_PANICKED,
                &[("tool", &self.name), ("detail", &panic_text(&panic))],
            ))),
        }
    }

    fn started(&mut self, detail: &str, input: serde_json::Value) {
        if !self.started {
            self.started = true;
            self.env.sink.emit(AgentEvent::ToolStarted {
                id: self.id.clone(),
                name: self.name.clone(),
                detail: detail.to_string(),
                input,
            });
        }
    }

    /// Gate 9's size rule, for the text of a result (a result with images
    /// keeps them, its text bounded as a whole).
    fn bound(&self, content: ToolResultContent) -> ToolResultContent {
        match content {
            ToolResultContent::Text(t) => {
                ToolResultContent::Text(self.env.results.bound(&self.id, t, self.max_result_chars))
            }
            ToolResultContent::Blocks(blocks) => ToolResultContent::Blocks(
                self.env
                    .results
                    .bound_blocks(&self.id, blocks, self.max_result_chars),
            ),
        }
    }

    /// Gate 9.
    fn finish(&mut self, outcome: Result<ToolOutput, Stop>) -> ToolRun {
        self.started("", serde_json::Value::Null);
        let id = self.id.clone();
        let (result, status, summary, display) = match outcome {
            Ok(out) => (
                ToolResult {
                    tool_use_id: id.clone(),
                    content: self.bound(out.content),
                    is_error: false,
                },
                if out.failed {
                    ToolStatus::Failed
                } else {
                    ToolStatus::Done
                },
                out.summary,
                out.display,
            ),
            Err(mut stop) => {
                stop.message = sendable::error_text(&self.name, std::mem::take(&mut stop.message));
                let summary = stop.message.lines().next().unwrap_or_default().to_string();
                if matches!(stop.status, ToolStatus::Error | ToolStatus::Denied) {
                    if let Some(note) =
                        self.env
                            .results
                            .repeated_failure(&self.name, &self.input, &stop.message)
                    {
                        stop.message.push_str("\n\n");
                        stop.message.push_str(&note);
                    }
                }
                (
                    ToolResult {
                        tool_use_id: id.clone(),
                        content: ToolResultContent::Text(stop.message),
                        is_error: true,
                    },
                    stop.status,
                    summary,
                    None,
                )
            }
        };
        self.env.sink.emit(AgentEvent::ToolFinished {
            id,
            name: self.name.clone(),
            status,
            summary: summary.clone(),
            content: result.content.as_text(),
            display,
        });
        ToolRun {
            result,
            name: self.name.clone(),
            status,
            summary,
            decision: self.decision.take(),
        }
    }
}

/// How gate 6 let a call through.
enum Approval {
    /// As planned.
    Run,
    /// With the user's revision applied to the plan; the note goes into the
    /// result so the model knows the file differs from its proposal, the
    /// second text after the tool line's summary so the user does.
    Revised(String, String),
    /// Plan again (gate 4), then ask again.
    Replan,
}

/// What the permission rules look at, with paths resolved the way rules
/// compare them (symlinks, whole components).
struct Subject {
    root: PathBuf,
    /// The real path of the call's target.
    path: Option<PathBuf>,
    /// The other names of `path` and `command_paths` (as written, through
    /// each symlink along them).
    spellings: Vec<PathBuf>,
    /// Writing `path` would build a git repository layout.
    git_layout: bool,
    path_is_dir: bool,
    command: Option<String>,
    command_paths: Vec<PathBuf>,
    /// What the command line reads or lists (Bash).
    reads: Reached,
    input_json: String,
}

impl Subject {
    /// Resolves the call's target path, the paths its command line names
    /// (against the project root; `~/` under the home directory) and what
    /// it reads (globs expanded, folders a recursive reader reads walked).
    /// File-system I/O: symlinks are resolved here so `decide` stays pure.
    async fn of(prepared: &PreparedCall, env: &ExecEnv) -> Self {
        let root = resolve_for_rules(&env.ctx.root);
        let home = dirs::home_dir();
        let link_dirs: Vec<&Path> = [Some(env.ctx.root.as_path()), home.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        let target = prepared
            .target_path()
            .map(|p| with_aliases(spell(&p), &link_dirs));
        let write = !prepared.is_read_only();
        let git_layout = write && target.as_ref().is_some_and(writes_git_layout);
        let path_is_dir = target.as_ref().is_some_and(|t| t.real.is_dir());
        let command = prepared.command_line();
        let mut spellings: Vec<PathBuf> = Vec::new();
        let mut command_paths: Vec<PathBuf> = Vec::new();
        if let Some(shell::Split::Commands(parts)) = command.as_deref().map(shell::split) {
            for p in parts.iter().flat_map(shell::named_paths) {
                let named = spell(&expand_named_path(&p, &env.ctx.root, home.as_deref()));
                command_paths.push(named.real);
                spellings.extend(named.names);
            }
        }
        let names_matter = env.permissions.rules().read_rules();
        let reads = match command.as_deref() {
            Some(c) => command_reach(c, &root, home, names_matter).await,
            None => Reached::default(),
        };
        command_paths.extend(reads.named.iter().cloned());
        spellings.extend(reads.spellings.iter().cloned());
        // A file with more than one name (a hard link) is judged by the
        // protected or denied name it shares its content with too.
        if let Some(real) = target.as_ref().map(|t| t.real.clone()) {
            let rules = env.permissions.rules();
            let root = root.clone();
            let twin = tokio::task::spawn_blocking(move || {
                hidden_twin(&real, || Arc::new(linked_hidden(&rules, &root)))
            })
            .await
            .ok()
            .flatten();
            spellings.extend(twin);
        }
        let path = target.map(|t| {
            spellings.splice(0..0, t.names);
            t.real
        });
        Self {
            root,
            path,
            spellings,
            git_layout,
            path_is_dir,
            command,
            command_paths,
            reads,
            input_json: prepared.input_json.to_string(),
        }
    }

    fn request<'a>(
        &'a self,
        (tool, family): (&'a str, RuleFamily),
        read_only: bool,
    ) -> Request<'a> {
        Request {
            tool,
            family,
            read_only,
            path: self.path.as_deref(),
            spellings: &self.spellings,
            git_layout: self.git_layout,
            path_is_dir: self.path_is_dir,
            command: self.command.as_deref(),
            command_paths: &self.command_paths,
            read_paths: &self.reads.paths,
            reads_unchecked: self.reads.unchecked.as_deref(),
            input_json: &self.input_json,
            root: &self.root,
        }
    }
}

/// What the command line `command` reads from the canonical `root`
/// (`permissions::reach`), worked out on the blocking pool since it may
/// walk folders. Never fails: a failed job counts as reads not checked.
async fn command_reach(
    command: &str,
    root: &std::path::Path,
    home: Option<PathBuf>,
    names_matter: bool,
) -> Reached {
    let shell::Split::Commands(parts) = shell::split(command) else {
        return Reached::default();
    };
    let reads: Vec<_> = parts.iter().map(command_reads).collect();
    let follows: Vec<bool> = parts.iter().map(follows_links).collect();
    let root = root.to_path_buf();
    tokio::task::spawn_blocking(move || {
        reach_following(&reads, &follows, &root, home.as_deref(), names_matter)
    })
    .await
    .unwrap_or_else(|e| Reached {
        unchecked: Some(format!("checking what the command reads failed ({e})")),
        ..Reached::default()
    })
}

/// The result of a call that would ask where nobody can answer
/// (`lathe.tool_sync`), by why it asks: an allow rule helps only with a
/// default or mode ask, not with an ask rule or a protected path.
fn needs_permission(tool: &str, reason: &Reason) -> String {
    let template = match reason.kind {
        ReasonKind::Protected => NEEDS_PERMISSION_PROTECTED,
        ReasonKind::Sandbox => NEEDS_PERMISSION_UNSANDBOXED,
        ReasonKind::Rule | ReasonKind::InvalidRule => NEEDS_PERMISSION_ASK_RULE,
        ReasonKind::Default | ReasonKind::Mode => NEEDS_PERMISSION,
    };
    fill(template, &[("tool", tool), ("reason", &reason.text)])
}

/// The note added to the result of a call the user revised in the float.
fn revision_note(revision: &Revision) -> String {
    let mut what = Vec::new();
    if !revision.rejected_hunks.is_empty() {
        let list: Vec<String> = revision
            .rejected_hunks
            .iter()
            .map(ToString::to_string)
            .collect();
        what.push(fill(
            REJECTED_HUNKS,
            &[
                (
                    "hunks",
                    &plural(revision.rejected_hunks.len(), "hunk", "hunks"),
                ),
                ("list", &list.join(", ")),
            ],
        ));
    }
    if revision.edited {
        what.push(EDITED_BY_USER.to_string());
    }
    fill(USER_REVISED, &[("what", &what.join(" and "))])
}

/// Appends `note` to a text result (after a blank line).
fn append_text(output: &mut ToolOutput, note: &str) {
    if let ToolResultContent::Text(t) = &mut output.content {
        t.push_str("\n\n");
        t.push_str(note);
    }
}

/// Gate 6 with the PreToolUse hooks' say: a hook's `ask` turns an allow
/// into an ask; its `allow` turns an ask from a default or the mode into an
/// allow, but never one from a rule or a protected path.
fn with_hook(decision: Decision, hook: Option<HookDecision>) -> Decision {
    match (decision, hook) {
        (Decision::Allow(_), Some(HookDecision::Ask)) => Decision::Ask(Reason {
            text: "a PreToolUse hook asks".into(),
            rule: None,
            source: None,
            kind: ReasonKind::Default,
        }),
        (Decision::Ask(r), Some(HookDecision::Allow))
            if matches!(r.kind, ReasonKind::Default | ReasonKind::Mode) =>
        {
            Decision::Allow(Reason {
                text: "a PreToolUse hook allows it".into(),
                rule: None,
                source: None,
                kind: ReasonKind::Default,
            })
        }
        (d, _) => d,
    }
}

fn interrupted(tool: &str) -> Stop {
    Stop {
        status: ToolStatus::Interrupted,
        message: fill(INTERRUPTED, &[("tool", tool)]),
    }
}

/// The user interrupted before the call ran: nothing of it happened.
fn interrupted_before_run(tool: &str) -> Stop {
    Stop {
        status: ToolStatus::Interrupted,
        message: fill(INTERRUPTED_BEFORE_RUN, &[("tool", tool)]),
    }
}

/// The `tool_result` for a call that never started because the user
/// interrupted (queued behind a running call, or completed in the stream
/// after `stop`): not applied.
pub fn not_run_result(tool_use: &ToolUse) -> ToolResult {
    ToolResult {
        tool_use_id: tool_use.id.clone(),
        content: ToolResultContent::Text(fill(INTERRUPTED_BEFORE_RUN, &[("tool", &tool_use.name)])),
        is_error: true,
    }
}

/// The `tool_result` for a call that never ran because the user interrupted
/// (queued behind a running call, or completed in the stream after `stop`).
pub fn interrupted_result(tool_use: &ToolUse) -> ToolResult {
    ToolResult {
        tool_use_id: tool_use.id.clone(),
        content: ToolResultContent::Text(fill(INTERRUPTED, &[("tool", &tool_use.name)])),
        is_error: true,
    }
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into())
}

#[cfg(test)]
mod tests;
