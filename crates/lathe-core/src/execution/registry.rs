//! The tools a session offers: each name and alias once, each tool's input
//! validator compiled from the schema the model is told (on first use).
//!
//! Two layers (docs/tools.md, "User tools"): the session's own tools
//! (the built-ins, fixed when the session is made) and, behind them, the
//! [`UserTools`] table shared by every session of the process, which Lua
//! adds to and removes from at any time; lookup and the request's `tools`
//! read it each time, so a tool registered while a session runs is offered
//! from its next request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use jsonschema::Validator;
use serde_json::Value;

use crate::protocol::ToolDefinition;
use crate::tools::Tool;

/// One registered tool: the tool, its schema and the validator compiled from
/// that same schema (so what the model is told and what is checked cannot
/// drift).
pub struct RegisteredTool {
    /// The tool.
    pub tool: Arc<dyn Tool>,
    /// Its input schema, exactly as sent to the model: made on first use
    /// (the first request's `tools`), not at setup ([`RegisteredTool::schema`]).
    schema: OnceLock<Value>,
    /// Compiled on the first call to the tool, not at setup: building a
    /// validator costs far more than the schema itself.
    validator: OnceLock<Option<Validator>>,
}

/// Validators compiled by every [`RegisteredTool`] of this process (a count
/// that only grows): tests check that setup compiles none.
static VALIDATORS_COMPILED: AtomicU64 = AtomicU64::new(0);

/// How many tool input validators this process has compiled so far.
pub fn validators_compiled() -> u64 {
    VALIDATORS_COMPILED.load(Ordering::Relaxed)
}

impl RegisteredTool {
    /// Its input schema ([`Tool::input_schema`]), exactly as sent to the
    /// model, made on the first call.
    pub fn schema(&self) -> &Value {
        self.schema.get_or_init(|| self.tool.input_schema())
    }

    /// `true` once the schema or the validator was made (tests check that
    /// setup makes neither).
    pub fn is_prepared(&self) -> bool {
        self.schema.get().is_some() || self.validator.get().is_some()
    }

    /// The validator of [`RegisteredTool::schema`], compiled on first use.
    /// `None` only if the schema does not compile (a bug; every call to the
    /// tool then fails with an error result instead of running unchecked).
    pub fn validator(&self) -> Option<&Validator> {
        self.validator
            .get_or_init(|| {
                VALIDATORS_COMPILED.fetch_add(1, Ordering::Relaxed);
                jsonschema::validator_for(self.schema()).ok()
            })
            .as_ref()
    }
}

/// Why a tool could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// `name` (a tool's name or alias) is already taken by `taken_by`; names
    /// are compared ignoring ASCII case, as [`ToolRegistry::lookup`] does.
    #[error("cannot register tool {tool}: the name {name:?} is already used by {taken_by}")]
    DuplicateName {
        /// The tool being registered.
        tool: String,
        /// Its name or alias that collides.
        name: String,
        /// The registered tool that has it.
        taken_by: String,
    },
}

impl RegisteredTool {
    fn new(tool: Arc<dyn Tool>) -> Self {
        Self {
            tool,
            schema: OnceLock::new(),
            validator: OnceLock::new(),
        }
    }

    /// `true` when `name` is, ignoring ASCII case, this tool's name or an
    /// alias.
    fn answers_to(&self, name: &str) -> bool {
        self.tool.name().eq_ignore_ascii_case(name)
            || self
                .tool
                .aliases()
                .iter()
                .any(|a| a.eq_ignore_ascii_case(name))
    }
}

/// The first of `tools` called `name`: exact name, then an alias, then a
/// name or alias ignoring case.
fn find<'a>(tools: &'a [Arc<RegisteredTool>], name: &str) -> Option<&'a Arc<RegisteredTool>> {
    tools
        .iter()
        .find(|t| t.tool.name() == name)
        .or_else(|| tools.iter().find(|t| t.tool.aliases().contains(&name)))
        .or_else(|| tools.iter().find(|t| t.answers_to(name)))
}

/// Tools added while lathe runs (Lua tools), shared by every session
/// of the process. A name may not be, ignoring ASCII case, a `reserved` one
/// (the built-ins' names and aliases) or another user tool's.
#[derive(Default)]
pub struct UserTools {
    reserved: Vec<String>,
    tools: RwLock<Vec<Arc<RegisteredTool>>>,
    explainer: RwLock<Option<UnknownToolExplainer>>,
}

/// Says why a tool name is not in the table, when a layer that adds tools
/// knows (the MCP layer: `mcp__srv__x` → server `srv` failed to start, is
/// not configured, has no tool `x`); `None` lets gate 1 give its plain
/// refusal. The execution layer cannot import that layer, so it fills this
/// seam ([`UserTools::set_unknown_tool_explainer`]).
pub type UnknownToolExplainer = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

impl UserTools {
    /// An empty table whose tools may not take any of the `reserved`
    /// names (compared ignoring ASCII case).
    pub fn new(reserved: impl IntoIterator<Item = String>) -> Self {
        Self {
            reserved: reserved.into_iter().collect(),
            tools: RwLock::new(Vec::new()),
            explainer: RwLock::new(None),
        }
    }

    /// Makes `f` the [`UnknownToolExplainer`] gate 1 asks about a name
    /// that no tool answers to (replacing any earlier one).
    pub fn set_unknown_tool_explainer(&self, f: UnknownToolExplainer) {
        *self.explainer.write().unwrap_or_else(|e| e.into_inner()) = Some(f);
    }

    /// The explainer's text for `name`, `None` when there is no explainer
    /// or it has nothing to say.
    pub fn explain_unknown(&self, name: &str) -> Option<String> {
        let f = self
            .explainer
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()?;
        f(name)
    }

    /// Adds `tool` after the others. Errors:
    /// [`RegistryError::DuplicateName`] when its name is a reserved one or
    /// another user tool's (ignoring ASCII case); nothing is added then.
    pub fn register(&self, tool: Arc<dyn Tool>) -> Result<(), RegistryError> {
        let mut tools = self.tools.write().unwrap_or_else(|e| e.into_inner());
        let name = tool.name().to_string();
        let clash = |taken_by: &str| RegistryError::DuplicateName {
            tool: name.clone(),
            name: name.clone(),
            taken_by: taken_by.to_string(),
        };
        if let Some(r) = self.reserved.iter().find(|r| r.eq_ignore_ascii_case(&name)) {
            return Err(clash(&format!("the built-in tool {r}")));
        }
        if let Some(t) = tools.iter().find(|t| t.answers_to(&name)) {
            return Err(clash(t.tool.name()));
        }
        tools.push(Arc::new(RegisteredTool::new(tool)));
        Ok(())
    }

    /// Removes the tool called exactly `name`; `true` when there was one.
    pub fn unregister(&self, name: &str) -> bool {
        let mut tools = self.tools.write().unwrap_or_else(|e| e.into_inner());
        let before = tools.len();
        tools.retain(|t| t.tool.name() != name);
        tools.len() != before
    }

    /// The tools now, in the order they were registered.
    pub fn snapshot(&self) -> Vec<Arc<RegisteredTool>> {
        self.tools.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Lookup by name, then alias (gate 1): the session's own tools first,
/// then the shared [`UserTools`].
#[derive(Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<RegisteredTool>>,
    user: Option<Arc<UserTools>>,
}

impl ToolRegistry {
    /// Registers `tools` in the given order (the order of the request's
    /// `tools`). Errors: [`RegistryError::DuplicateName`] for the first name
    /// or alias used twice.
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Result<Self, RegistryError> {
        let mut registry = Self::default();
        for tool in tools {
            registry.register(tool)?;
        }
        Ok(registry)
    }

    /// Adds `tool` after the others. Errors: [`RegistryError::DuplicateName`]
    /// when its name or an alias is, ignoring ASCII case, the name or an
    /// alias of a registered tool; nothing is added then.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), RegistryError> {
        let names = || std::iter::once(tool.name()).chain(tool.aliases().iter().copied());
        for name in names() {
            if let Some(t) = self.tools.iter().find(|t| t.answers_to(name)) {
                return Err(RegistryError::DuplicateName {
                    tool: tool.name().to_string(),
                    name: name.to_string(),
                    taken_by: t.tool.name().to_string(),
                });
            }
        }
        self.tools.push(Arc::new(RegisteredTool::new(tool)));
        Ok(())
    }

    /// This registry with the shared user tools behind its own: lookup and
    /// [`definitions`](Self::definitions) read the table each time.
    pub fn with_user_tools(mut self, user: Arc<UserTools>) -> Self {
        self.user = Some(user);
        self
    }

    /// The shared user tools, if this registry has them.
    pub fn user_tools(&self) -> Option<&Arc<UserTools>> {
        self.user.as_ref()
    }

    /// Every tool, the session's own first, then the user tools now.
    pub fn all(&self) -> Vec<Arc<RegisteredTool>> {
        let mut all = self.tools.clone();
        if let Some(user) = &self.user {
            all.extend(user.snapshot());
        }
        all
    }

    /// The tool called `name`: exact name first, then an alias, then a
    /// case-insensitive name or alias (`read` → Read); the session's own
    /// tools before the user tools.
    pub fn lookup(&self, name: &str) -> Option<Arc<RegisteredTool>> {
        if let Some(t) = find(&self.tools, name) {
            return Some(t.clone());
        }
        let user = self.user.as_ref()?.snapshot();
        find(&user, name).cloned()
    }

    /// Names of the tools offered now ([`Tool::is_offered`]), in order: what
    /// gate 1's refusal lists (a tool the model was never sent is no help).
    pub fn offered_names(&self) -> Vec<String> {
        self.all()
            .iter()
            .filter(|t| t.tool.is_offered())
            .map(|t| t.tool.name().to_string())
            .collect()
    }

    /// Names of every tool, offered now or not, in order.
    pub fn names(&self) -> Vec<String> {
        self.all()
            .iter()
            .map(|t| t.tool.name().to_string())
            .collect()
    }

    /// `true` when no tool's schema or validator was made yet: what setup
    /// must leave (they are made on first use; docs/testing.md,
    /// "Benchmarks").
    pub fn untouched(&self) -> bool {
        self.tools.iter().all(|t| !t.is_prepared())
    }

    /// The `tools` array of a request: name, description and `input_schema`
    /// of every tool offered now ([`Tool::is_offered`]), in order, exactly as
    /// sent (pinned by the snapshot test `crates/lathe-core/tests/all/tool_definitions.rs`).
    /// Asked before every request, so a tool appears and disappears between
    /// requests of one turn.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.all()
            .iter()
            .filter(|t| t.tool.is_offered())
            .map(|t| ToolDefinition {
                name: t.tool.name().to_string(),
                description: t.tool.description(),
                input_schema: t.schema().clone(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::tools::{builtin_tools, edit::EditTool, grep::GrepTool, read::ReadTool};

    #[test]
    fn builtin_names_and_aliases_are_unique() {
        let tools = builtin_tools(&Config::new(std::path::Path::new("/p")));
        let registry = ToolRegistry::new(tools).expect("unique");
        assert_eq!(
            registry.names(),
            [
                "Read",
                "Grep",
                "Glob",
                "Edit",
                "Write",
                "Bash",
                "Diagnostics",
                "BashOutput",
                "KillShell",
                "LspDefinition",
                "LspReferences",
                "LspHover",
                "LspSymbols"
            ]
        );
    }

    /// Setup builds the registry; schemas and validators wait for the first
    /// request and the first call (load is lazy).
    #[test]
    fn schemas_and_validators_are_made_on_first_use() {
        let tools = builtin_tools(&Config::new(std::path::Path::new("/p")));
        let registry = ToolRegistry::new(tools).expect("unique");
        assert!(registry.untouched(), "registering made a schema");
        let read = registry.lookup("Read").expect("Read");
        assert!(read.validator().is_some());
        assert!(!registry.untouched());
        let fresh = ToolRegistry::new(vec![Arc::new(ReadTool)]).expect("one tool");
        assert_eq!(fresh.definitions()[0].input_schema, *read.schema());
    }

    #[test]
    fn a_second_tool_with_a_taken_name_or_alias_is_refused() {
        let mut registry = ToolRegistry::new(vec![Arc::new(ReadTool)]).expect("one tool");
        assert_eq!(
            registry.register(Arc::new(ReadTool)),
            Err(RegistryError::DuplicateName {
                tool: "Read".into(),
                name: "Read".into(),
                taken_by: "Read".into(),
            })
        );
        let err = ToolRegistry::new(vec![Arc::new(EditTool), Arc::new(EditTool)])
            .err()
            .expect("duplicate");
        assert_eq!(
            err.to_string(),
            "cannot register tool Edit: the name \"Edit\" is already used by Edit"
        );
        // Nothing was added by the refused registration.
        assert_eq!(registry.names(), ["Read"]);
        registry.register(Arc::new(GrepTool)).expect("new name");
        assert_eq!(registry.names(), ["Read", "Grep"]);
    }

    /// A tool whose alias collides with another tool's name, ignoring case
    /// (lookup is case-insensitive, so `read` could mean either).
    struct Shadow;

    #[async_trait::async_trait]
    impl crate::tools::TypedTool for Shadow {
        type Input = crate::tools::read::ReadInput;
        type Plan = ();
        const NAME: &'static str = "Shadow";
        const KIND: crate::tools::ToolKind = crate::tools::ToolKind::Other;
        const ALIASES: &'static [&'static str] = &["READ"];
        fn description(&self) -> String {
            String::new()
        }
        fn is_read_only(&self, _: &Self::Input) -> bool {
            true
        }
        fn normalize(&self, input: Self::Input, _: &std::path::Path) -> Self::Input {
            input
        }
        fn target_path(&self, _: &Self::Input) -> Option<std::path::PathBuf> {
            None
        }
        async fn validate_input(
            &self,
            _: &Self::Input,
            _: &crate::tools::ToolContext,
        ) -> Result<(), crate::tools::ToolError> {
            Ok(())
        }
        fn permission_preview(
            &self,
            _: &Self::Input,
            _: &(),
            _: &std::path::Path,
        ) -> crate::permissions::PermissionPreview {
            Default::default()
        }
        async fn call(
            &self,
            _: Self::Input,
            _: (),
            _: &crate::tools::ToolContext,
        ) -> Result<crate::tools::ToolOutput, crate::tools::ToolError> {
            Ok(crate::tools::ToolOutput::text("", ""))
        }
        fn describe(&self, _: &Self::Input, _: &std::path::Path) -> String {
            String::new()
        }
    }

    #[test]
    fn an_alias_matching_another_name_ignoring_case_is_refused() {
        let err = ToolRegistry::new(vec![Arc::new(ReadTool), Arc::new(Shadow)])
            .err()
            .expect("duplicate");
        assert_eq!(
            err,
            RegistryError::DuplicateName {
                tool: "Shadow".into(),
                name: "READ".into(),
                taken_by: "Read".into(),
            }
        );
    }

    #[test]
    fn lookup_finds_name_alias_and_either_in_any_case() {
        let registry = ToolRegistry::new(vec![Arc::new(ReadTool), Arc::new(GrepTool)]).expect("ok");
        for (asked, found) in [
            ("Read", "Read"),
            ("read_file", "Read"),
            ("READ_FILE", "Read"),
            ("grep", "Grep"),
            ("RG", "Grep"),
        ] {
            assert_eq!(
                registry.lookup(asked).map(|t| t.tool.name().to_string()),
                Some(found.to_string()),
                "{asked}"
            );
        }
        assert!(registry.lookup("Fetch").is_none());
    }

    /// A tool offered while its flag is set (as the language-server tools are
    /// while a server runs).
    struct Switchable(Arc<std::sync::atomic::AtomicBool>);

    #[async_trait::async_trait]
    impl crate::tools::TypedTool for Switchable {
        type Input = crate::tools::read::ReadInput;
        type Plan = ();
        const NAME: &'static str = "Switchable";
        const KIND: crate::tools::ToolKind = crate::tools::ToolKind::Other;
        fn description(&self) -> String {
            String::new()
        }
        fn is_offered(&self) -> bool {
            self.0.load(std::sync::atomic::Ordering::Relaxed)
        }
        fn is_read_only(&self, _: &Self::Input) -> bool {
            true
        }
        fn normalize(&self, input: Self::Input, _: &std::path::Path) -> Self::Input {
            input
        }
        fn target_path(&self, _: &Self::Input) -> Option<std::path::PathBuf> {
            None
        }
        async fn validate_input(
            &self,
            _: &Self::Input,
            _: &crate::tools::ToolContext,
        ) -> Result<(), crate::tools::ToolError> {
            Ok(())
        }
        fn permission_preview(
            &self,
            _: &Self::Input,
            _: &(),
            _: &std::path::Path,
        ) -> crate::permissions::PermissionPreview {
            Default::default()
        }
        async fn call(
            &self,
            _: Self::Input,
            _: (),
            _: &crate::tools::ToolContext,
        ) -> Result<crate::tools::ToolOutput, crate::tools::ToolError> {
            Ok(crate::tools::ToolOutput::text("", ""))
        }
        fn describe(&self, _: &Self::Input, _: &std::path::Path) -> String {
            String::new()
        }
    }

    #[test]
    fn a_tool_not_offered_now_is_left_out_of_the_request_but_still_found() {
        let on = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let registry =
            ToolRegistry::new(vec![Arc::new(ReadTool), Arc::new(Switchable(on.clone()))])
                .expect("ok");
        let sent = |r: &ToolRegistry| {
            r.definitions()
                .into_iter()
                .map(|d| d.name)
                .collect::<Vec<_>>()
        };
        assert_eq!(sent(&registry), ["Read"]);
        // Gate 1's refusal lists only what the model was sent.
        assert_eq!(registry.offered_names(), ["Read"]);
        assert!(registry.lookup("Switchable").is_some());
        on.store(true, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(sent(&registry), ["Read", "Switchable"]);
    }

    struct Echo;

    #[async_trait::async_trait]
    impl crate::tools::user::UserToolBackend for Echo {
        fn classify(&self, _: &Value) -> Result<crate::tools::user::Classified, (String, String)> {
            Ok(Default::default())
        }
        async fn validate(&self, _: &str, _: &Value) -> Result<(), crate::tools::ToolError> {
            Ok(())
        }
        async fn call(
            &self,
            _: &str,
            input: Value,
            _: &crate::tools::ToolContext,
        ) -> Result<crate::tools::ToolOutput, crate::tools::ToolError> {
            Ok(crate::tools::ToolOutput::text(input.to_string(), ""))
        }
    }

    fn user_tool(name: &str) -> Arc<dyn Tool> {
        use crate::tools::user::{Flag, UserTool, UserToolSpec};
        Arc::new(
            UserTool::new(
                UserToolSpec {
                    name: name.into(),
                    description: "d".into(),
                    input_schema: serde_json::json!({ "type": "object" }),
                    read_only: Flag::Fixed(true),
                    concurrency_safe: None,
                    max_result_chars: None,
                    source: crate::tools::ToolSource::Lua,
                },
                Arc::new(Echo),
            )
            .expect("valid"),
        )
    }

    #[test]
    fn user_tools_are_shared_and_read_at_every_request() {
        let user = Arc::new(UserTools::new([
            "Read".to_string(),
            "read_file".to_string(),
        ]));
        let a = ToolRegistry::new(vec![Arc::new(ReadTool)])
            .expect("ok")
            .with_user_tools(user.clone());
        let b = ToolRegistry::new(vec![Arc::new(ReadTool)])
            .expect("ok")
            .with_user_tools(user.clone());
        let sent = |r: &ToolRegistry| {
            r.definitions()
                .into_iter()
                .map(|d| d.name)
                .collect::<Vec<_>>()
        };
        assert_eq!(sent(&a), ["Read"]);
        user.register(user_tool("SearchIssues")).expect("new name");
        assert_eq!(sent(&a), ["Read", "SearchIssues"]);
        assert_eq!(sent(&b), ["Read", "SearchIssues"]);
        assert!(a.lookup("searchissues").is_some());
        assert_eq!(a.names(), ["Read", "SearchIssues"]);
        assert_eq!(
            user.register(user_tool("READ_FILE")).map_err(|e| e.to_string()),
            Err("cannot register tool READ_FILE: the name \"READ_FILE\" is already used by the built-in tool read_file".into())
        );
        assert_eq!(
            user.register(user_tool("searchISSUES")).map_err(|e| e.to_string()),
            Err("cannot register tool searchISSUES: the name \"searchISSUES\" is already used by SearchIssues".into())
        );
        assert!(user.unregister("SearchIssues"));
        assert!(!user.unregister("SearchIssues"));
        assert_eq!(sent(&b), ["Read"]);
        assert!(b.lookup("SearchIssues").is_none());
    }
}
