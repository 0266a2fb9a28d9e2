//! The tool contract: [`TypedTool`] is what a tool implements, [`Tool`] the
//! object-safe face the pipeline runs, and a call moves through it as a value
//! that is made once and carried (docs/pipeline.md, "One call, one
//! path"):
//!
//! ```text
//! Value ──prepare──▶ PreparedCall ──validate_input──▶ PlannedCall ──call──▶ ToolOutput
//!        (parse +     (classified for      (the plan: what      │
//!         normalise)   concurrency, rules)   will be done)       └─permission_preview
//! ```
//!
//! `validate_input` checks the call against the world once and returns the
//! tool's plan (for Edit and Write: the document it read, its stamp and the
//! whole new text); the permission float renders that plan without any I/O,
//! and `call` applies exactly that plan. So what the user approves is byte
//! for byte what is applied, and an Edit of a loaded buffer reads it once and
//! writes it once. The editor's atomic stale check at write time stays the
//! safety net for a document that changed in between.

use std::any::Any;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{schema_for, ToolContext, ToolError, ToolOutput};
use crate::permissions::{PermissionPreview, ReadFilter, Revision, RuleFamily};
use crate::tools::Sandboxing;

/// A tool with a typed input. Implement this; the pipeline uses [`Tool`]
/// through the blanket impl below (Claude Code's tool contract: a name, a
/// description, an input schema, read-only and concurrency-safe per input,
/// validation, permission, the call).
#[async_trait]
pub trait TypedTool: Send + Sync + 'static {
    /// The input struct. Its schemars schema (doc comments included) is
    /// what the model is told and what gate 2 validates, so they cannot
    /// drift.
    type Input: DeserializeOwned + serde::Serialize + JsonSchema + Send + Sync;

    /// What [`validate_input`](Self::validate_input) found and the call will
    /// do: made once, rendered by
    /// [`permission_preview`](Self::permission_preview), consumed by
    /// [`call`](Self::call). `()` for a tool whose checks leave nothing to
    /// carry.
    type Plan: Send + Sync + 'static;

    /// PascalCase name the model calls.
    const NAME: &'static str;
    /// Other names the model may use (`read_file`, `grep`, …). Names and
    /// aliases are unique across a registry, ignoring ASCII case.
    const ALIASES: &'static [&'static str] = &[];
    /// Results longer than this many chars are stored in a file and the model
    /// gets a preview plus the path (gate 9). `None`: the tool bounds its own
    /// output (Read).
    const MAX_RESULT_CHARS: Option<usize> = None;
    /// What kind of tool it is (Zed's `ToolKind`): the default of
    /// [`READ_ONLY`](Self::READ_ONLY) comes from it.
    const KIND: ToolKind;
    /// Whether every call is read-only, none is, or it depends on the input
    /// (for listings such as `:Lathe tools`, and the default of
    /// [`is_read_only`](Self::is_read_only)). Default: what
    /// [`KIND`](Self::KIND) says ([`ToolKind::read_only`]).
    const READ_ONLY: ReadOnlyKind = Self::KIND.read_only();
    /// How its calls meet permission rules (docs/permissions.md, "Rule
    /// families"): which rules cover them and what a specifier in a rule
    /// naming the tool means. Default: what [`KIND`](Self::KIND) says
    /// ([`ToolKind::rule_family`]); a tool whose calls are judged otherwise
    /// overrides it (Diagnostics, BashOutput and KillShell by their own
    /// rules alone, the language-server tools as lookups).
    const RULE_FAMILY: RuleFamily = Self::KIND.rule_family();

    /// What the tool does, for the model (a paragraph or two).
    fn description(&self) -> String;

    /// `true` when the tool is sent to the model in the next request's
    /// `tools` now. Asked once per request, so it must be cheap (an atomic,
    /// no I/O, no main-thread trip). A tool that is not offered can still
    /// be looked up and called (a model may call a tool from an earlier
    /// request); its `call` then says why it cannot run. Default: always.
    /// The language-server tools are offered only while a server runs.
    fn is_offered(&self) -> bool {
        true
    }

    /// `true` when the call cannot change anything (files, processes).
    /// Default: what [`READ_ONLY`](Self::READ_ONLY) says; a tool whose
    /// calls differ ([`ReadOnlyKind::PerInput`]) answers per input (not
    /// overridden, such a call counts as not read-only).
    fn is_read_only(&self, _input: &Self::Input) -> bool {
        Self::READ_ONLY == ReadOnlyKind::Always
    }

    /// [`TypedTool::is_read_only`] for a call of the user (`by_user`: a
    /// keymap, `lathe.tool()`) or of the model, as the permission gate
    /// asks it. Default: the same for both.
    fn is_read_only_to(&self, input: &Self::Input, _by_user: bool) -> bool {
        self.is_read_only(input)
    }

    /// `true` when the call may run alongside others. Defaults to read-only.
    fn is_concurrency_safe(&self, input: &Self::Input) -> bool {
        self.is_read_only(input)
    }

    /// Gate 3: resolves relative paths against the project `root`, expands
    /// a leading `~/`, fills defaults. Pure, no I/O. Default: the input as
    /// it came (a tool that takes no path).
    fn normalize(&self, input: Self::Input, _root: &Path) -> Self::Input {
        input
    }

    /// The absolute path the call reads or writes, for permission rules.
    /// Default: none (a tool that touches no path).
    fn target_path(&self, _input: &Self::Input) -> Option<PathBuf> {
        None
    }

    /// The command line the call runs, for Bash rules (`Bash(npm test:*)`)
    /// and the paths it names. `None` (the default) for tools that run no
    /// command.
    fn command_line(&self, _input: &Self::Input) -> Option<String> {
        None
    }

    /// Gate 4: checks the (normalised) input against the world — the file
    /// exists and was read, `old_string` is found, the regex compiles — and
    /// returns the plan. No side effects. Errors are model-facing.
    async fn validate_input(
        &self,
        input: &Self::Input,
        ctx: &ToolContext,
    ) -> Result<Self::Plan, ToolError>;

    /// What the permission float shows, rendered from `plan` alone (no I/O,
    /// so it cannot show anything but what [`call`](Self::call) will apply).
    /// `root`: the project root, for root-relative names.
    fn permission_preview(
        &self,
        input: &Self::Input,
        plan: &Self::Plan,
        root: &Path,
    ) -> PermissionPreview;

    /// Replaces the new text of `plan` with `revision.after`: the user left
    /// out hunks or edited the change in the float before allowing it. The
    /// default refuses ([`REVISION_UNSUPPORTED`]); Edit and Write accept.
    fn revise(&self, _plan: &mut Self::Plan, _revision: &Revision) -> Result<(), ToolError> {
        Err(ToolError::new(REVISION_UNSUPPORTED))
    }

    /// Gate 6 hands a call that reads many files (Grep, Glob over a folder)
    /// the permission check for each of them: `plan` must leave out every
    /// file `filter` does not find free to read, and say so in its result.
    /// The default ignores it: other tools read only the path gate 6
    /// checked itself.
    fn limit_reads(&self, _plan: &mut Self::Plan, _filter: ReadFilter) {}

    /// Gate 6 hands a call that runs a command (Bash) where it must run:
    /// inside the sandbox with the policy the decision assumed, or outside
    /// it. The default ignores it: other tools run no command.
    fn confine(&self, _plan: &mut Self::Plan, _sandboxing: Sandboxing) {}

    /// Gate 7: carries out `plan` — the only place with side effects.
    async fn call(
        &self,
        input: Self::Input,
        plan: Self::Plan,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError>;

    /// A short chat line for the call before it runs, e.g. `src/main.rs`.
    /// root: the project root, for root-relative paths.
    fn describe(&self, input: &Self::Input, root: &Path) -> String;
}

/// A tool call whose input passed the schema and was normalised (gates 1–3),
/// ready for the later gates. Made once per `tool_use`: the executor
/// classifies it for concurrency and the gates run on the same value.
pub struct PreparedCall {
    tool: Arc<dyn Tool>,
    input: Box<dyn Any + Send + Sync>,
    /// The normalised input as JSON (what hooks and permission rules see).
    pub input_json: Value,
}

impl PreparedCall {
    /// A prepared call of a tool that implements [`Tool`] itself (a user
    /// tool): `input` is its own parsed input, which its methods take back
    /// with [`PreparedCall::input`]; `input_json` the normalised input as
    /// JSON (what hooks and rules see).
    pub fn new(tool: Arc<dyn Tool>, input: Box<dyn Any + Send + Sync>, input_json: Value) -> Self {
        Self {
            tool,
            input,
            input_json,
        }
    }

    /// The parsed input, for a tool that implements [`Tool`] itself
    /// (`None` when it is not a `T`).
    pub fn input<T: 'static>(&self) -> Option<&T> {
        self.input.downcast_ref::<T>()
    }

    /// The tool this call runs.
    pub fn tool(&self) -> &Arc<dyn Tool> {
        &self.tool
    }

    /// See [`TypedTool::is_read_only`].
    pub fn is_read_only(&self) -> bool {
        self.tool.is_read_only(self)
    }

    /// See [`TypedTool::is_read_only_to`].
    pub fn is_read_only_to(&self, by_user: bool) -> bool {
        self.tool.is_read_only_to(self, by_user)
    }

    /// See [`TypedTool::is_concurrency_safe`].
    pub fn is_concurrency_safe(&self) -> bool {
        self.tool.is_concurrency_safe(self)
    }

    /// See [`TypedTool::target_path`].
    pub fn target_path(&self) -> Option<PathBuf> {
        self.tool.target_path(self)
    }

    /// See [`TypedTool::describe`].
    pub fn describe(&self, root: &Path) -> String {
        self.tool.describe(self, root)
    }

    /// See [`TypedTool::command_line`].
    pub fn command_line(&self) -> Option<String> {
        self.tool.command_line(self)
    }

    /// Gate 4 (see [`TypedTool::validate_input`]): this call with its plan.
    pub async fn validate(self, ctx: &ToolContext) -> Result<PlannedCall, ToolError> {
        let tool = self.tool.clone();
        tool.validate_input(self, ctx).await
    }
}

/// A call that passed gate 4, with the plan its tool made. The preview and
/// the call both read this one plan.
pub struct PlannedCall {
    prepared: PreparedCall,
    plan: Box<dyn Any + Send + Sync>,
}

impl PlannedCall {
    /// `prepared` with the `plan` its tool made, for a tool that implements
    /// [`Tool`] itself.
    pub fn new(prepared: PreparedCall, plan: Box<dyn Any + Send + Sync>) -> Self {
        Self { prepared, plan }
    }

    /// The prepared call (input, tool).
    pub fn prepared(&self) -> &PreparedCall {
        &self.prepared
    }

    /// What the permission float shows (see [`TypedTool::permission_preview`]).
    pub fn preview(&self, root: &Path) -> PermissionPreview {
        self.prepared.tool.permission_preview(self, root)
    }

    /// See [`TypedTool::revise`].
    pub fn revise(&mut self, revision: &Revision) -> Result<(), ToolError> {
        let tool = self.prepared.tool.clone();
        tool.revise(self, revision)
    }

    /// See [`TypedTool::limit_reads`].
    pub fn limit_reads(&mut self, filter: ReadFilter) {
        let tool = self.prepared.tool.clone();
        tool.limit_reads(self, filter);
    }

    /// See [`TypedTool::confine`].
    pub fn confine(&mut self, sandboxing: Sandboxing) {
        let tool = self.prepared.tool.clone();
        tool.confine(self, sandboxing);
    }

    /// The prepared call without its plan, to plan it again (the document
    /// changed while the float was open).
    pub fn into_prepared(self) -> PreparedCall {
        self.prepared
    }

    /// Gate 7 (see [`TypedTool::call`]).
    pub async fn run(self, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let tool = self.prepared.tool.clone();
        tool.call(self, ctx).await
    }
}

/// The object-safe face of a tool, used by the execution pipeline. Implemented
/// for every [`TypedTool`]; the per-call methods take the call values above.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The name the model calls: PascalCase for the built-ins; a user
    /// tool's name is chosen at run time, so it is borrowed from the tool.
    fn name(&self) -> &str;
    /// Alias names.
    fn aliases(&self) -> &'static [&'static str];
    /// Description for the model.
    fn description(&self) -> String;
    /// See [`TypedTool::MAX_RESULT_CHARS`].
    fn max_result_chars(&self) -> Option<usize>;
    /// See [`TypedTool::is_offered`].
    fn is_offered(&self) -> bool;
    /// The input's JSON Schema (sent to the model *and* used to validate).
    fn input_schema(&self) -> Value;
    /// Gate 3: parses JSON input (already schema-valid) into the typed input
    /// and normalises it against the project `root`. Errors carry serde's
    /// message.
    fn prepare(self: Arc<Self>, input: &Value, root: &Path) -> Result<PreparedCall, ToolError>;
    /// See [`TypedTool::is_read_only`].
    fn is_read_only(&self, call: &PreparedCall) -> bool;
    /// See [`TypedTool::is_read_only_to`]. Default: [`Tool::is_read_only`].
    fn is_read_only_to(&self, call: &PreparedCall, _by_user: bool) -> bool {
        self.is_read_only(call)
    }
    /// See [`TypedTool::is_concurrency_safe`].
    fn is_concurrency_safe(&self, call: &PreparedCall) -> bool;
    /// See [`TypedTool::target_path`]. Default: none.
    fn target_path(&self, _call: &PreparedCall) -> Option<PathBuf> {
        None
    }
    /// See [`TypedTool::describe`].
    fn describe(&self, call: &PreparedCall, root: &Path) -> String;
    /// See [`TypedTool::command_line`]. Default: none.
    fn command_line(&self, _call: &PreparedCall) -> Option<String> {
        None
    }
    /// See [`TypedTool::revise`]. Default: refused
    /// ([`REVISION_UNSUPPORTED`]).
    fn revise(&self, _call: &mut PlannedCall, _revision: &Revision) -> Result<(), ToolError> {
        Err(ToolError::new(REVISION_UNSUPPORTED))
    }
    /// See [`TypedTool::limit_reads`]. Default: ignored.
    fn limit_reads(&self, _call: &mut PlannedCall, _filter: ReadFilter) {}
    /// See [`TypedTool::confine`]. Default: ignored.
    fn confine(&self, _call: &mut PlannedCall, _sandboxing: Sandboxing) {}
    /// See [`TypedTool::validate_input`].
    async fn validate_input(
        &self,
        call: PreparedCall,
        ctx: &ToolContext,
    ) -> Result<PlannedCall, ToolError>;
    /// See [`TypedTool::permission_preview`].
    fn permission_preview(&self, call: &PlannedCall, root: &Path) -> PermissionPreview;
    /// See [`TypedTool::call`].
    async fn call(&self, call: PlannedCall, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;
    /// Where the tool comes from (`:Lathe tools`). Default: built in.
    fn source(&self) -> ToolSource {
        ToolSource::BuiltIn
    }
    /// Whether every call is read-only, none is, or it depends on the input
    /// (`:Lathe tools`). See [`TypedTool::READ_ONLY`].
    fn read_only_kind(&self) -> ReadOnlyKind;
    /// See [`TypedTool::KIND`].
    fn kind(&self) -> ToolKind;
    /// See [`TypedTool::RULE_FAMILY`].
    fn rule_family(&self) -> RuleFamily;
}

/// What kind of tool it is, as Zed's `ToolKind` sorts an agent's tools:
/// whether its calls are read-only follows from it unless the tool says
/// otherwise ([`TypedTool::READ_ONLY`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    /// Reads a file or what the editor knows of one (Read, Diagnostics,
    /// the language-server lookups, BashOutput).
    Read,
    /// Changes a file (Edit, Write).
    Edit,
    /// Searches files by name or content (Grep, Glob, LspSymbols).
    Search,
    /// Runs or stops a program (Bash, KillShell).
    Execute,
    /// Anything else (a tool of an MCP server or from Lua that does not
    /// say it is read-only).
    Other,
}

impl ToolKind {
    /// Whether the calls of a tool of this kind are read-only, unless it
    /// says otherwise: reading and searching always are, editing never is,
    /// and for running a program or anything else it depends on the input.
    pub const fn read_only(self) -> ReadOnlyKind {
        match self {
            ToolKind::Read | ToolKind::Search => ReadOnlyKind::Always,
            ToolKind::Edit => ReadOnlyKind::Never,
            ToolKind::Execute | ToolKind::Other => ReadOnlyKind::PerInput,
        }
    }

    /// How the calls of a tool of this kind meet permission rules, unless
    /// it says otherwise: reading and searching by path rules that `Read`
    /// rules cover, editing by path rules that `Edit` rules cover, running
    /// a program by command rules, anything else by its own rules alone.
    pub const fn rule_family(self) -> RuleFamily {
        match self {
            ToolKind::Read | ToolKind::Search => RuleFamily::ReadPath,
            ToolKind::Edit => RuleFamily::EditPath,
            ToolKind::Execute => RuleFamily::Command,
            ToolKind::Other => RuleFamily::Input,
        }
    }
}

/// Where a tool comes from, as `:Lathe tools` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolSource {
    /// One of lathe's own tools (`tools::builtin_tools`).
    BuiltIn,
    /// Registered from Lua with `require("lathe").register_tool`.
    Lua,
    /// A tool of the MCP server of this name (`mcp_servers`, `.mcp.json`).
    Mcp(String),
}

impl ToolSource {
    /// `built-in` or `lua`, as `:Lathe tools` shows it.
    pub fn label(&self) -> String {
        match self {
            ToolSource::BuiltIn => "built-in".into(),
            ToolSource::Lua => "lua".into(),
            ToolSource::Mcp(server) => format!("mcp:{server}"),
        }
    }
}

/// Whether a tool's calls are read-only, for listings (the pipeline asks
/// per call).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadOnlyKind {
    /// Every call is read-only (Read, Grep).
    Always,
    /// No call is (Edit, Write).
    Never,
    /// It depends on the input (Bash; a Lua tool whose `is_read_only` is a
    /// function).
    PerInput,
}

impl ReadOnlyKind {
    /// `yes`, `no` or `per input`.
    pub fn label(self) -> &'static str {
        match self {
            ReadOnlyKind::Always => "yes",
            ReadOnlyKind::Never => "no",
            ReadOnlyKind::PerInput => "per input",
        }
    }
}

/// Model-facing message when the user revised a change of a tool that cannot
/// apply a revision (an internal bug: the float offers revisions only for
/// changes with a diff).
pub const REVISION_UNSUPPORTED: &str =
    "Internal error: this tool cannot apply a change the user revised, so nothing was changed. Try the call again.";

/// Model-facing message when a call value is handed to the wrong tool
/// (an internal bug; never expected).
pub const INTERNAL_INPUT_MISMATCH: &str =
    "Internal error: the tool received an input of the wrong type. This is a bug in lathe; try the call again.";

fn mismatch() -> ToolError {
    ToolError::new(INTERNAL_INPUT_MISMATCH)
}

fn typed<T: TypedTool>(call: &PreparedCall) -> Result<&T::Input, ToolError> {
    call.input.downcast_ref::<T::Input>().ok_or_else(mismatch)
}

#[async_trait]
impl<T: TypedTool> Tool for T {
    fn name(&self) -> &str {
        T::NAME
    }
    fn read_only_kind(&self) -> ReadOnlyKind {
        T::READ_ONLY
    }
    fn kind(&self) -> ToolKind {
        T::KIND
    }
    fn rule_family(&self) -> RuleFamily {
        T::RULE_FAMILY
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
    fn is_offered(&self) -> bool {
        TypedTool::is_offered(self)
    }
    fn input_schema(&self) -> Value {
        schema_for::<T::Input>()
    }
    fn prepare(self: Arc<Self>, input: &Value, root: &Path) -> Result<PreparedCall, ToolError> {
        let parsed: T::Input =
            serde_json::from_value(input.clone()).map_err(|e| ToolError::new(e.to_string()))?;
        let normalized = TypedTool::normalize(&*self, parsed, root);
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
    fn is_read_only_to(&self, call: &PreparedCall, by_user: bool) -> bool {
        typed::<T>(call).is_ok_and(|i| TypedTool::is_read_only_to(self, i, by_user))
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
    fn command_line(&self, call: &PreparedCall) -> Option<String> {
        typed::<T>(call)
            .ok()
            .and_then(|i| TypedTool::command_line(self, i))
    }
    fn revise(&self, call: &mut PlannedCall, revision: &Revision) -> Result<(), ToolError> {
        let plan = call.plan.downcast_mut::<T::Plan>().ok_or_else(mismatch)?;
        TypedTool::revise(self, plan, revision)
    }
    fn limit_reads(&self, call: &mut PlannedCall, filter: ReadFilter) {
        if let Some(plan) = call.plan.downcast_mut::<T::Plan>() {
            TypedTool::limit_reads(self, plan, filter);
        }
    }
    fn confine(&self, call: &mut PlannedCall, sandboxing: Sandboxing) {
        if let Some(plan) = call.plan.downcast_mut::<T::Plan>() {
            TypedTool::confine(self, plan, sandboxing);
        }
    }
    async fn validate_input(
        &self,
        call: PreparedCall,
        ctx: &ToolContext,
    ) -> Result<PlannedCall, ToolError> {
        let plan = TypedTool::validate_input(self, typed::<T>(&call)?, ctx).await?;
        Ok(PlannedCall {
            prepared: call,
            plan: Box::new(plan),
        })
    }
    fn permission_preview(&self, call: &PlannedCall, root: &Path) -> PermissionPreview {
        match (
            typed::<T>(&call.prepared),
            call.plan.downcast_ref::<T::Plan>(),
        ) {
            (Ok(input), Some(plan)) => TypedTool::permission_preview(self, input, plan, root),
            _ => PermissionPreview::default(),
        }
    }
    async fn call(&self, call: PlannedCall, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input = call
            .prepared
            .input
            .downcast::<T::Input>()
            .map_err(|_| mismatch())?;
        let plan = call.plan.downcast::<T::Plan>().map_err(|_| mismatch())?;
        TypedTool::call(self, *input, *plan, ctx).await
    }
}
