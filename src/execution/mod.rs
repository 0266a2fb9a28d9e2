//! The tool pipeline: every `tool_use` goes through nine gates and comes out
//! as exactly one `tool_result` with the same `tool_use_id`
//! (docs/architecture.md, "The gates").
//!
//! 1 lookup by name / alias, 2 input schema (jsonschema, strict),
//! 3 normalize (paths against the project root, defaults) — these three in
//! [`CheckedCall::new`], once per call, which the executor also uses to
//! classify the call for concurrency; 4 the tool's `validate_input`, which
//! returns its plan; 5 PreToolUse hooks (seam); 6 permission
//! (deny > ask > allow; ask → [`Prompter`], showing the plan); 7 `call`,
//! applying the plan (panics caught); 8 PostToolUse hooks (seam);
//! 9 map to `tool_result` (oversized text saved to a file).
//!
//! Normalisation runs before `validate_input`: validation needs the resolved
//! path ("was this file read?"), and resolving once means every later gate
//! sees the same input.

mod checked;
mod executor;
mod large_result;
pub mod messages;
mod progress;
mod registry;
mod schema_check;

pub use checked::CheckedCall;
pub use executor::{partition_tool_calls, Batch, ToolExecutor};
pub use large_result::{ResultStore, PERSISTED_RESULT, PREVIEW_CHARS};
pub use registry::{RegisteredTool, RegistryError, ToolRegistry};

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;

use crate::events::{AgentEvent, EventSink, ToolStatus};
use crate::permissions::{
    Decision, PermissionState, PromptAnswer, Prompter, Request, DENIED_BY_RULE, USER_DECLINED,
};
use crate::protocol::{ToolResult, ToolResultContent, ToolUse};
use crate::text::fill;
use crate::tools::{PlannedCall, PreparedCall, ToolContext, ToolOutput};

use messages::{ASK_DETAILS, INTERRUPTED, NEEDS_PERMISSION, TOOL_PANICKED};

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
}

/// A `tool_use` as it came off the stream: when its `partial_json` did not
/// parse, `input_error` holds the parser's message and `tool_use.input` is `{}`.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingToolUse {
    /// The block.
    pub tool_use: ToolUse,
    /// Why the input is unusable, if it is.
    pub input_error: Option<String>,
}

impl From<ToolUse> for PendingToolUse {
    fn from(tool_use: ToolUse) -> Self {
        Self {
            tool_use,
            input_error: None,
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
        env,
        started: false,
        decision: None,
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
    run.finish(outcome)
}

/// One call's walk through gates 4–9.
struct Gates<'a> {
    id: String,
    name: String,
    /// Gate 9's bound for text results (the resolved tool's).
    max_result_chars: Option<usize>,
    env: &'a ExecEnv,
    started: bool,
    decision: Option<Decision>,
}

impl Gates<'_> {
    async fn pass(&mut self, prepared: Result<PreparedCall, Stop>) -> Result<ToolOutput, Stop> {
        let prepared = prepared.inspect_err(|_| self.started(""))?;
        self.started(&prepared.describe(&self.env.ctx.root));
        if self.env.ctx.cancel.is_cancelled() {
            return Err(interrupted(&self.name));
        }
        let planned = prepared
            .validate(&self.env.ctx)
            .await
            .map_err(|e| Stop::error(e.message))?;
        let planned = pre_tool_use_hooks(planned);
        self.permission(&planned).await?;
        let output = self.call_tool(planned).await?;
        Ok(post_tool_use_hooks(output))
    }

    /// Gate 6. The float shows the plan gate 4 made, so the user approves
    /// exactly what gate 7 applies.
    async fn permission(&mut self, planned: &PlannedCall) -> Result<(), Stop> {
        let prepared = planned.prepared();
        let tool = prepared.tool().name();
        let path = prepared.target_path();
        let req = Request {
            tool,
            read_only: prepared.is_read_only(),
            path: path.as_deref(),
            root: &self.env.ctx.root,
        };
        let decision = self.env.permissions.decide(&req);
        self.decision = Some(decision.clone());
        match decision {
            Decision::Allow(_) => Ok(()),
            Decision::Deny(reason) => Err(Stop {
                status: ToolStatus::Denied,
                message: fill(DENIED_BY_RULE, &[("tool", tool), ("reason", &reason)]),
            }),
            Decision::Ask(_) if !self.env.interactive => Err(Stop {
                status: ToolStatus::Denied,
                message: fill(NEEDS_PERMISSION, &[("tool", tool)]),
            }),
            Decision::Ask(reason) => {
                let mut preview = planned.preview(&self.env.ctx.root);
                if preview.diff.is_empty() {
                    // Nothing to diff (Bash, a Read outside the root): show
                    // why it asks and the exact input instead.
                    let input =
                        serde_json::to_string_pretty(&prepared.input_json).unwrap_or_default();
                    preview.diff = fill(ASK_DETAILS, &[("reason", &reason), ("input", &input)]);
                }
                let answer = tokio::select! {
                    a = self.env.prompter.ask(tool, &preview) => a,
                    _ = self.env.ctx.cancel.cancelled() => return Err(interrupted(&self.name)),
                };
                match answer {
                    PromptAnswer::AllowOnce => Ok(()),
                    PromptAnswer::AllowAlways => {
                        self.env.permissions.grant_tool(tool);
                        Ok(())
                    }
                    PromptAnswer::Deny => Err(Stop {
                        status: ToolStatus::Denied,
                        message: USER_DECLINED.to_string(),
                    }),
                }
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

    fn started(&mut self, detail: &str) {
        if !self.started {
            self.started = true;
            self.env.sink.emit(AgentEvent::ToolStarted {
                id: self.id.clone(),
                name: self.name.clone(),
                detail: detail.to_string(),
            });
        }
    }

    /// Gate 9's size rule for text results.
    fn bound(&self, content: ToolResultContent) -> ToolResultContent {
        match content {
            ToolResultContent::Text(t) => {
                ToolResultContent::Text(self.env.results.bound(&self.id, t, self.max_result_chars))
            }
            blocks => blocks,
        }
    }

    /// Gate 9.
    fn finish(&mut self, outcome: Result<ToolOutput, Stop>) -> ToolRun {
        self.started("");
        let id = self.id.clone();
        let (result, status, summary) = match outcome {
            Ok(out) => (
                ToolResult {
                    tool_use_id: id.clone(),
                    content: self.bound(out.content),
                    is_error: false,
                },
                ToolStatus::Done,
                out.summary,
            ),
            Err(stop) => {
                let summary = stop.message.lines().next().unwrap_or_default().to_string();
                (
                    ToolResult {
                        tool_use_id: id.clone(),
                        content: ToolResultContent::Text(stop.message),
                        is_error: true,
                    },
                    stop.status,
                    summary,
                )
            }
        };
        self.env.sink.emit(AgentEvent::ToolFinished {
            id,
            name: self.name.clone(),
            status,
            summary: summary.clone(),
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

/// Gate 5: PreToolUse hooks. A seam: no hooks run yet. A hook that rewrites
/// the input will send the call back through gates 2–4, so the plan always
/// belongs to the input that runs.
fn pre_tool_use_hooks(planned: PlannedCall) -> PlannedCall {
    planned
}

/// Gate 8: PostToolUse hooks. A seam: no hooks run yet.
fn post_tool_use_hooks(output: ToolOutput) -> ToolOutput {
    output
}

fn interrupted(tool: &str) -> Stop {
    Stop {
        status: ToolStatus::Interrupted,
        message: fill(INTERRUPTED, &[("tool", tool)]),
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
