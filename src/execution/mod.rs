//! `run_tool_use`: every `tool_use` goes through the gates of DESIGN.md §1 and
//! comes out as exactly one `tool_result` with the same `tool_use_id`.
//!
//! Order (each gate a small function below):
//! 1 lookup by name / alias, 2 input schema (jsonschema, strict),
//! 3 normalize (paths against the project root, defaults), 4 the tool's
//! `validate_input`, 5 PreToolUse hooks (seam), 6 permission
//! (deny > ask > allow; ask → [`Prompter`]), 7 `call` (panics caught),
//! 8 PostToolUse hooks (seam), 9 map to `tool_result`.
//!
//! Normalisation runs before `validate_input` (DESIGN.md lists it after):
//! validation needs the resolved path ("was this file read?"), and resolving
//! once means every later gate sees the same input.

mod executor;
mod large_result;
pub mod messages;
mod progress;
mod registry;
mod schema_check;

pub use executor::{
    is_concurrency_safe, partition_tool_calls, Batch, ToolExecutor, DEFAULT_MAX_CONCURRENCY,
};
pub use large_result::{ResultStore, PERSISTED_RESULT, PREVIEW_CHARS};
pub use registry::{RegisteredTool, ToolRegistry};

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use serde_json::Value;

use crate::agent::{AgentEvent, EventSink, ToolStatus};
use crate::permissions::{
    Decision, PermissionState, PromptAnswer, Prompter, Request, DENIED_BY_RULE, USER_DECLINED,
};
use crate::protocol::{ToolResult, ToolResultContent, ToolUse};
use crate::tools::{PreparedCall, ToolContext, ToolOutput};

use messages::{
    fill, ASK_DETAILS, INPUT_NOT_JSON, INTERRUPTED, NEEDS_PERMISSION, NO_SUCH_TOOL, SCHEMA_BROKEN,
    TOOL_PANICKED,
};

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
struct Stop {
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
    let mut run = Gates {
        call,
        env,
        name: call.tool_use.name.clone(),
        started: false,
        decision: None,
    };
    let outcome = AssertUnwindSafe(run.pass())
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| {
            Err(Stop::error(fill(
                TOOL_PANICKED,
                &[
                    ("tool", &call.tool_use.name),
                    ("detail", &panic_text(&panic)),
                ],
            )))
        });
    run.finish(outcome)
}

/// One call's walk through the gates.
struct Gates<'a> {
    call: &'a PendingToolUse,
    env: &'a ExecEnv,
    name: String,
    started: bool,
    decision: Option<Decision>,
}

impl Gates<'_> {
    async fn pass(&mut self) -> Result<ToolOutput, Stop> {
        let input = &self.call.tool_use.input;
        let env = self.env;
        let Some(registered) = env.registry.lookup(&self.call.tool_use.name) else {
            return Err(self.unknown_tool());
        };
        let tool = registered.tool.clone();
        self.name = tool.name().to_string();
        if let Some(err) = &self.call.input_error {
            return Err(Stop::error(fill(
                INPUT_NOT_JSON,
                &[("tool", &self.name), ("error", err)],
            )));
        }
        check_schema(registered, input)?;
        let prepared = self.normalize(registered, input)?;
        self.started(&tool.describe(&prepared, &self.env.ctx.root));
        if self.env.ctx.cancel.is_cancelled() {
            return Err(interrupted(&self.name));
        }
        tool.validate_input(&prepared, &self.env.ctx)
            .await
            .map_err(|e| Stop::error(e.message))?;
        let prepared = pre_tool_use_hooks(prepared);
        self.permission(&prepared).await?;
        let output = self.call_tool(prepared).await?;
        Ok(post_tool_use_hooks(output))
    }

    /// Gate 1's refusal (the lookup itself is `ToolRegistry::lookup`).
    fn unknown_tool(&mut self) -> Stop {
        self.started("");
        let available = self.env.registry.names().join(", ");
        Stop::error(fill(
            NO_SUCH_TOOL,
            &[
                ("name", &self.call.tool_use.name),
                ("available", &available),
            ],
        ))
    }

    /// Gate 3: typed parse + the tool's normalisation.
    fn normalize(
        &mut self,
        registered: &RegisteredTool,
        input: &Value,
    ) -> Result<PreparedCall, Stop> {
        registered
            .tool
            .clone()
            .prepare(input, &self.env.ctx)
            .map_err(|e| {
                self.started("");
                Stop::error(e.message)
            })
    }

    /// Gate 6.
    async fn permission(&mut self, prepared: &PreparedCall) -> Result<(), Stop> {
        let tool = prepared.tool();
        let path = tool.target_path(prepared);
        let req = Request {
            tool: tool.name(),
            read_only: tool.is_read_only(prepared),
            path: path.as_deref(),
            root: &self.env.ctx.root,
        };
        let decision = self.env.permissions.decide(&req);
        self.decision = Some(decision.clone());
        match decision {
            Decision::Allow(_) => Ok(()),
            Decision::Deny(reason) => Err(Stop {
                status: ToolStatus::Denied,
                message: fill(
                    DENIED_BY_RULE,
                    &[("tool", tool.name()), ("reason", &reason)],
                ),
            }),
            Decision::Ask(_) if !self.env.interactive => Err(Stop {
                status: ToolStatus::Denied,
                message: fill(NEEDS_PERMISSION, &[("tool", tool.name())]),
            }),
            Decision::Ask(reason) => {
                let mut preview = tool.permission_preview(prepared, &self.env.ctx).await;
                if preview.diff.is_empty() {
                    // Nothing to diff (Bash, a Read outside the root): show
                    // why it asks and the exact input instead.
                    let input =
                        serde_json::to_string_pretty(&prepared.input_json).unwrap_or_default();
                    preview.diff = fill(ASK_DETAILS, &[("reason", &reason), ("input", &input)]);
                }
                let answer = tokio::select! {
                    a = self.env.prompter.ask(tool.name(), &preview) => a,
                    _ = self.env.ctx.cancel.cancelled() => return Err(interrupted(&self.name)),
                };
                match answer {
                    PromptAnswer::AllowOnce => Ok(()),
                    PromptAnswer::AllowAlways => {
                        self.env.permissions.grant_tool(tool.name());
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
    async fn call_tool(&mut self, prepared: PreparedCall) -> Result<ToolOutput, Stop> {
        let tool = prepared.tool().clone();
        let read_only = tool.is_read_only(&prepared);
        let mut call_ctx = self.env.ctx.clone();
        call_ctx.progress = Some(progress::progress_for(
            &self.call.tool_use.id,
            self.env.sink.clone(),
        ));
        let ctx = &call_ctx;
        let fut = AssertUnwindSafe(tool.call(prepared, ctx)).catch_unwind();
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
                id: self.call.tool_use.id.clone(),
                name: self.name.clone(),
                detail: detail.to_string(),
            });
        }
    }

    /// Gate 9's size rule for text results.
    fn bound(&self, id: &str, content: ToolResultContent) -> ToolResultContent {
        let max = self
            .env
            .registry
            .lookup(&self.name)
            .and_then(|t| t.tool.max_result_chars());
        match content {
            ToolResultContent::Text(t) => {
                ToolResultContent::Text(self.env.results.bound(id, t, max))
            }
            blocks => blocks,
        }
    }

    /// Gate 9.
    fn finish(&mut self, outcome: Result<ToolOutput, Stop>) -> ToolRun {
        self.started("");
        let id = self.call.tool_use.id.clone();
        let (result, status, summary) = match outcome {
            Ok(out) => (
                ToolResult {
                    tool_use_id: id.clone(),
                    content: self.bound(&id, out.content),
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

/// Gate 2.
fn check_schema(registered: &RegisteredTool, input: &Value) -> Result<(), Stop> {
    let name = registered.tool.name();
    match &registered.validator {
        Some(v) => schema_check::check(name, v, input).map_err(Stop::error),
        None => Err(Stop::error(fill(SCHEMA_BROKEN, &[("tool", name)]))),
    }
}

/// Gate 5: PreToolUse hooks. A seam: hooks arrive in a later issue.
fn pre_tool_use_hooks(prepared: PreparedCall) -> PreparedCall {
    prepared
}

/// Gate 8: PostToolUse hooks. A seam: hooks arrive in a later issue.
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
