//! Gates 1–3, done once per `tool_use`: lookup, input schema, normalise.
//!
//! The executor needs the prepared call to classify it for concurrency and
//! the later gates need it to run; [`CheckedCall::new`] makes it once and
//! both use the same value (docs/pipeline.md, "One call, one path").

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use serde_json::Value;

use super::messages::{INPUT_NOT_JSON, NO_SUCH_TOOL, SCHEMA_BROKEN, TOOL_PANICKED};
use super::registry::RegisteredTool;
use super::{panic_text, schema_check, ExecEnv, PendingToolUse, Stop};
use crate::text::fill;
use crate::tools::{PreparedCall, Tool};

/// A `tool_use` after gates 1–3: the resolved tool and, when its input
/// passed, the prepared (parsed and normalised) call; else the refusal the
/// model will get. Made once and carried to [`run_checked`](super::run_checked).
pub struct CheckedCall {
    /// The block as it came off the stream.
    pub pending: PendingToolUse,
    /// The resolved tool; `None` when the name matches no tool.
    pub(super) tool: Option<Arc<dyn Tool>>,
    /// Gates 1–3's outcome.
    pub(super) prepared: Result<PreparedCall, Stop>,
}

impl CheckedCall {
    /// Runs gates 1–3 on `pending` with `env`'s registry and project root.
    /// Never fails and never panics: a refusal (unknown tool, input that is
    /// not JSON, fails the schema or does not parse) is kept for the run.
    pub fn new(pending: PendingToolUse, env: &ExecEnv) -> Self {
        let registered = env.registry.lookup(&pending.tool_use.name);
        let tool = registered.as_ref().map(|r| r.tool.clone());
        let prepared = match registered {
            _ if pending.refusal.is_some() => {
                Err(Stop::error(pending.refusal.clone().unwrap_or_default()))
            }
            None => Err(unknown_tool(&pending.tool_use.name, env)),
            Some(registered) => {
                let registered = &*registered;
                catch_unwind(AssertUnwindSafe(|| prepare(&pending, registered, env)))
                    .unwrap_or_else(|panic| {
                        Err(Stop::error(fill(
                            TOOL_PANICKED,
                            &[
                                ("tool", registered.tool.name()),
                                ("detail", &panic_text(&panic)),
                            ],
                        )))
                    })
            }
        };
        Self {
            pending,
            tool,
            prepared,
        }
    }

    /// `true` when the call may run alongside others: its tool exists, its
    /// input passed gates 1–3, and the tool says so for that input (Read,
    /// Grep, Glob; Bash only when read-only). Unknown tools and bad input
    /// are unsafe, so they never share a batch.
    pub fn is_concurrency_safe(&self) -> bool {
        self.prepared
            .as_ref()
            .is_ok_and(PreparedCall::is_concurrency_safe)
    }

    /// The chat's key argument of the call: the tool's own description of
    /// the prepared call; for a call gates 1–3 refused, what is known of
    /// its input (`key_of_input`), so its line never shows `Read()`.
    pub fn detail(&self, root: &std::path::Path) -> String {
        match &self.prepared {
            Ok(p) => p.describe(root),
            Err(_) => key_of_input(&self.pending),
        }
    }

    /// The tool's name as resolved, or as the model wrote it when unknown.
    pub fn name(&self) -> &str {
        match &self.tool {
            Some(t) => t.name(),
            None => &self.pending.tool_use.name,
        }
    }
}

/// Input fields that name what a call is about, in the order looked for.
const KEY_FIELDS: &[&str] = &[
    "file_path",
    "notebook_path",
    "path",
    "pattern",
    "command",
    "url",
    "query",
];

/// What is known of a refused call's input, for its chat line: its key
/// field when present (a path, pattern or command), else the input as
/// compact JSON, else the text that arrived when it was not JSON; `""`
/// when nothing arrived. One line (the chat cuts it).
pub(crate) fn key_of_input(pending: &PendingToolUse) -> String {
    let input = &pending.tool_use.input;
    let key = KEY_FIELDS
        .iter()
        .find_map(|k| input.get(*k).and_then(Value::as_str))
        .map(str::trim)
        .filter(|v| !v.is_empty());
    let text = match (key, pending.sent.as_deref().map(str::trim)) {
        (Some(k), _) => k.to_string(),
        (None, Some(sent)) if !sent.is_empty() => sent.to_string(),
        _ if input.as_object().is_some_and(|o| !o.is_empty()) => input.to_string(),
        _ => String::new(),
    };
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Gates 2 and 3 for a resolved tool: the input parsed as JSON, passes the
/// schema (jsonschema, strict), and parses and normalises as the tool's
/// typed input.
fn prepare(
    pending: &PendingToolUse,
    registered: &RegisteredTool,
    env: &ExecEnv,
) -> Result<PreparedCall, Stop> {
    let name = registered.tool.name();
    if let Some(err) = &pending.input_error {
        return Err(Stop::error(fill(
            INPUT_NOT_JSON,
            &[("tool", name), ("error", err)],
        )));
    }
    let input = &pending.tool_use.input;
    check_schema(registered, input)?;
    registered
        .tool
        .clone()
        .prepare(input, &env.ctx.root)
        .map_err(|e| Stop::error(e.message))
}

/// Gate 1's refusal (the lookup itself is `ToolRegistry::lookup`): the
/// user tools' explainer's text when it has one (an MCP server's tool),
/// else [`NO_SUCH_TOOL`].
fn unknown_tool(name: &str, env: &ExecEnv) -> Stop {
    if let Some(why) = env
        .registry
        .user_tools()
        .and_then(|u| u.explain_unknown(name))
    {
        return Stop::error(why);
    }
    let available = env.registry.offered_names().join(", ");
    Stop::error(fill(
        NO_SUCH_TOOL,
        &[("name", name), ("available", &available)],
    ))
}

/// Gate 2.
fn check_schema(registered: &RegisteredTool, input: &Value) -> Result<(), Stop> {
    let name = registered.tool.name();
    match registered.validator() {
        Some(v) => schema_check::check(name, v, input).map_err(Stop::error),
        None => Err(Stop::error(fill(SCHEMA_BROKEN, &[("tool", name)]))),
    }
}
