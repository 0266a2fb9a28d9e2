//! The `Tool` trait and the built-in tools, one file each (Claude Code's tool
//! contract: PascalCase names, snake_case parameters).
//!
//! Each tool has a typed input struct deriving `Deserialize` and `JsonSchema`;
//! the struct's doc comments become the schema descriptions the model reads,
//! and the same schema validates input (gate 2 of DESIGN.md §1), so the two
//! cannot drift. [`TypedTool`] is what a tool implements; the blanket impl
//! turns it into the object-safe [`Tool`] the pipeline runs.

pub mod diff;
pub mod file_common;
pub mod file_state;
pub mod numbered;
pub mod paths;
pub mod search_walk;
pub mod template;
pub mod text_match;

pub mod bash;
pub mod edit;
pub mod glob;
pub mod grep;
pub mod read;
pub mod write;

pub use file_state::FileState;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::editor::Editor;
use crate::protocol::ToolResultContent;

/// Everything a tool call may use besides its input.
#[derive(Clone)]
pub struct ToolContext {
    /// Absolute project root; relative paths resolve against it (never
    /// against a window-local `:lcd`).
    pub root: PathBuf,
    /// Buffers and files.
    pub editor: Arc<dyn Editor>,
    /// What the model has read in this session.
    pub file_state: Arc<FileState>,
    /// Cancelled when the user interrupts the turn.
    pub cancel: CancellationToken,
    /// Receives partial output of a long call (Bash) as it arrives, for the
    /// chat; set per call by the pipeline, `None` when nobody listens.
    pub progress: Option<ProgressFn>,
}

/// A per-call progress callback: raw output bytes as they arrive (chunks may
/// split UTF-8 characters; the receiver decodes).
pub type ProgressFn = Arc<dyn Fn(&[u8]) + Send + Sync>;

/// A tool's successful result before it becomes a `tool_result`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The `tool_result` content for the model.
    pub content: ToolResultContent,
    /// One short line for the chat window, e.g. `12 lines` or `3 files`.
    pub summary: String,
}

impl ToolOutput {
    /// A text result with a chat summary.
    pub fn text(content: impl Into<String>, summary: impl Into<String>) -> Self {
        Self {
            content: ToolResultContent::Text(content.into()),
            summary: summary.into(),
        }
    }
}

/// A tool's failure. `message` is model-facing: it says what happened and
/// what to do next, and comes from a named constant (golden-tested) filled in
/// with the specifics.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    /// Model-facing text.
    pub message: String,
}

impl ToolError {
    /// A tool error with this model-facing message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// What the permission prompt shows for a call: which file and what change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PermissionPreview {
    /// The file the call touches, if any (absolute).
    pub path: Option<PathBuf>,
    /// Unified diff of the proposed change (Edit/Write), else empty.
    pub diff: String,
    /// One line describing the call, e.g. `Edit src/greeting.py`.
    pub title: String,
}

/// A tool with a typed input. Implement this; the pipeline uses [`Tool`].
#[async_trait]
pub trait TypedTool: Send + Sync + 'static {
    /// The input struct; its schemars schema is sent to the model.
    type Input: DeserializeOwned + serde::Serialize + JsonSchema + Send + Sync;

    /// PascalCase name the model calls.
    const NAME: &'static str;
    /// Other names the model may use (`read_file`, `grep`, …).
    const ALIASES: &'static [&'static str] = &[];
    /// Results longer than this many chars are stored in a file and the model
    /// gets a preview plus the path (gate 9). `None`: the tool bounds its own
    /// output (Read).
    const MAX_RESULT_CHARS: Option<usize> = None;

    /// What the tool does, for the model (a paragraph or two).
    fn description(&self) -> String;

    /// `true` when the call cannot change anything (files, processes).
    fn is_read_only(&self, input: &Self::Input) -> bool;

    /// `true` when the call may run alongside others. Defaults to read-only.
    fn is_concurrency_safe(&self, input: &Self::Input) -> bool {
        self.is_read_only(input)
    }

    /// Gate 3 (after normalisation): resolves relative paths against
    /// `ctx.root`, expands a leading `~/`, fills defaults. Pure, no I/O.
    fn normalize(&self, input: Self::Input, ctx: &ToolContext) -> Self::Input;

    /// The absolute path the call reads or writes, for permission rules.
    fn target_path(&self, input: &Self::Input) -> Option<PathBuf>;

    /// Gate 4: checks against the world (file exists, was read, old_string
    /// found, regex compiles …). No side effects.
    async fn validate_input(&self, input: &Self::Input, ctx: &ToolContext)
        -> Result<(), ToolError>;

    /// What the permission float shows (diff for Edit/Write).
    async fn permission_preview(&self, input: &Self::Input, ctx: &ToolContext)
        -> PermissionPreview;

    /// Gate 7: runs the tool — the only place with side effects.
    async fn call(&self, input: Self::Input, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;

    /// A short chat line for the call before it runs, e.g. `src/main.rs`.
    /// root: the project root, for root-relative paths.
    fn describe(&self, input: &Self::Input, root: &Path) -> String;
}

/// A tool call whose input passed the schema and was normalised, ready for
/// the later gates. Holds the typed input behind `dyn`.
pub struct PreparedCall {
    tool: Arc<dyn Tool>,
    input: Box<dyn std::any::Any + Send + Sync>,
    /// The normalised input as JSON (what hooks and permission rules see).
    pub input_json: Value,
}

impl PreparedCall {
    /// The tool this call runs.
    pub fn tool(&self) -> &Arc<dyn Tool> {
        &self.tool
    }
}

/// The object-safe face of a tool, used by the execution pipeline.
#[async_trait]
pub trait Tool: Send + Sync {
    /// PascalCase name.
    fn name(&self) -> &'static str;
    /// Alias names.
    fn aliases(&self) -> &'static [&'static str];
    /// Description for the model.
    fn description(&self) -> String;
    /// See [`TypedTool::MAX_RESULT_CHARS`].
    fn max_result_chars(&self) -> Option<usize>;
    /// The input's JSON Schema (sent to the model *and* used to validate).
    fn input_schema(&self) -> Value;
    /// Parses JSON input (already schema-valid) into the typed input and
    /// normalises it. Errors carry serde's message.
    fn prepare(
        self: Arc<Self>,
        input: &Value,
        ctx: &ToolContext,
    ) -> Result<PreparedCall, ToolError>;
    /// See [`TypedTool::is_read_only`].
    fn is_read_only(&self, call: &PreparedCall) -> bool;
    /// See [`TypedTool::is_concurrency_safe`].
    fn is_concurrency_safe(&self, call: &PreparedCall) -> bool;
    /// See [`TypedTool::target_path`].
    fn target_path(&self, call: &PreparedCall) -> Option<PathBuf>;
    /// See [`TypedTool::describe`].
    fn describe(&self, call: &PreparedCall, root: &Path) -> String;
    /// See [`TypedTool::validate_input`].
    async fn validate_input(&self, call: &PreparedCall, ctx: &ToolContext)
        -> Result<(), ToolError>;
    /// See [`TypedTool::permission_preview`].
    async fn permission_preview(&self, call: &PreparedCall, ctx: &ToolContext)
        -> PermissionPreview;
    /// See [`TypedTool::call`].
    async fn call(&self, call: PreparedCall, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;
}

/// Model-facing message when a prepared call is handed to the wrong tool
/// (an internal bug; never expected).
pub const INTERNAL_INPUT_MISMATCH: &str =
    "Internal error: the tool received an input of the wrong type. This is a bug in lathe; try the call again.";

fn typed<T: TypedTool>(call: &PreparedCall) -> Result<&T::Input, ToolError> {
    call.input
        .downcast_ref::<T::Input>()
        .ok_or_else(|| ToolError::new(INTERNAL_INPUT_MISMATCH))
}

#[async_trait]
impl<T: TypedTool> Tool for T {
    fn name(&self) -> &'static str {
        T::NAME
    }
    fn aliases(&self) -> &'static [&'static str] {
        T::ALIASES
    }
    fn description(&self) -> String {
        TypedTool::description(self)
    }
    fn max_result_chars(&self) -> Option<usize> {
        T::MAX_RESULT_CHARS
    }
    fn input_schema(&self) -> Value {
        schema_for::<T::Input>()
    }
    fn prepare(
        self: Arc<Self>,
        input: &Value,
        ctx: &ToolContext,
    ) -> Result<PreparedCall, ToolError> {
        let parsed: T::Input =
            serde_json::from_value(input.clone()).map_err(|e| ToolError::new(e.to_string()))?;
        let normalized = TypedTool::normalize(&*self, parsed, ctx);
        let input_json = serde_json::to_value(&normalized).unwrap_or_else(|_| input.clone());
        Ok(PreparedCall {
            tool: self,
            input: Box::new(normalized),
            input_json,
        })
    }
    fn is_read_only(&self, call: &PreparedCall) -> bool {
        typed::<T>(call).is_ok_and(|i| TypedTool::is_read_only(self, i))
    }
    fn is_concurrency_safe(&self, call: &PreparedCall) -> bool {
        typed::<T>(call).is_ok_and(|i| TypedTool::is_concurrency_safe(self, i))
    }
    fn target_path(&self, call: &PreparedCall) -> Option<PathBuf> {
        typed::<T>(call)
            .ok()
            .and_then(|i| TypedTool::target_path(self, i))
    }
    fn describe(&self, call: &PreparedCall, root: &Path) -> String {
        typed::<T>(call)
            .map(|i| TypedTool::describe(self, i, root))
            .unwrap_or_default()
    }
    async fn validate_input(
        &self,
        call: &PreparedCall,
        ctx: &ToolContext,
    ) -> Result<(), ToolError> {
        TypedTool::validate_input(self, typed::<T>(call)?, ctx).await
    }
    async fn permission_preview(
        &self,
        call: &PreparedCall,
        ctx: &ToolContext,
    ) -> PermissionPreview {
        match typed::<T>(call) {
            Ok(i) => TypedTool::permission_preview(self, i, ctx).await,
            Err(_) => PermissionPreview::default(),
        }
    }
    async fn call(&self, call: PreparedCall, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input = call
            .input
            .downcast::<T::Input>()
            .map_err(|_| ToolError::new(INTERNAL_INPUT_MISMATCH))?;
        TypedTool::call(self, *input, ctx).await
    }
}

/// The JSON Schema of `I` as sent to the model: draft 2020-12 from schemars,
/// with `additionalProperties: false` (strict; unknown fields are rejected)
/// and the `$schema`/`title` keys removed.
pub fn schema_for<I: JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(I)).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
        map.remove("title");
        map.remove("description");
        map.insert("additionalProperties".into(), Value::Bool(false));
    }
    schema
}

/// The built-in tools with default limits: Read, Grep, Glob, Edit, Write, Bash.
pub fn builtin_tools() -> Vec<Arc<dyn Tool>> {
    builtin_tools_with(bash::BashLimits::default())
}

/// The built-in tools, Bash with `bash_limits` (from `Config`).
pub fn builtin_tools_with(bash_limits: bash::BashLimits) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(read::ReadTool),
        Arc::new(grep::GrepTool),
        Arc::new(glob::GlobTool),
        Arc::new(edit::EditTool),
        Arc::new(write::WriteTool),
        Arc::new(bash::BashTool::new(bash_limits)),
    ]
}
