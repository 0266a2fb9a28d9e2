//! The tools a session offers: each name and alias once, each tool's input
//! validator compiled from the schema the model is told (on first use).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

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

/// Lookup by name, then alias (gate 1).
#[derive(Default)]
pub struct ToolRegistry {
    tools: Vec<RegisteredTool>,
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
            let taken = self.tools.iter().find(|t| {
                std::iter::once(t.tool.name())
                    .chain(t.tool.aliases().iter().copied())
                    .any(|n| n.eq_ignore_ascii_case(name))
            });
            if let Some(t) = taken {
                return Err(RegistryError::DuplicateName {
                    tool: tool.name().to_string(),
                    name: name.to_string(),
                    taken_by: t.tool.name().to_string(),
                });
            }
        }
        self.tools.push(RegisteredTool {
            tool,
            schema: OnceLock::new(),
            validator: OnceLock::new(),
        });
        Ok(())
    }

    /// The tool called `name`: exact name first, then an alias, then a
    /// case-insensitive name or alias (`read` → Read).
    pub fn lookup(&self, name: &str) -> Option<&RegisteredTool> {
        self.tools
            .iter()
            .find(|t| t.tool.name() == name)
            .or_else(|| self.tools.iter().find(|t| t.tool.aliases().contains(&name)))
            .or_else(|| {
                self.tools.iter().find(|t| {
                    t.tool.name().eq_ignore_ascii_case(name)
                        || t.tool
                            .aliases()
                            .iter()
                            .any(|a| a.eq_ignore_ascii_case(name))
                })
            })
    }

    /// Names of all tools, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|t| t.tool.name()).collect()
    }

    /// `true` when no tool's schema or validator was made yet: what setup
    /// must leave (they are made on first use; docs/architecture.md,
    /// "Benchmarks").
    pub fn untouched(&self) -> bool {
        self.tools.iter().all(|t| !t.is_prepared())
    }

    /// The `tools` array of a request: name, description and `input_schema`
    /// of every tool offered now ([`Tool::is_offered`]), in order, exactly as
    /// sent (pinned by the snapshot test `tests/tool_definitions.rs`).
    /// Asked before every request, so a tool appears and disappears between
    /// requests of one turn.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools
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
                "Diagnostics"
            ]
        );
    }

    /// Setup builds the registry; schemas and validators wait for the first
    /// request and the first call (issue 12: load is lazy).
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
                registry.lookup(asked).map(|t| t.tool.name()),
                Some(found),
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
        assert!(registry.lookup("Switchable").is_some());
        on.store(true, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(sent(&registry), ["Read", "Switchable"]);
    }
}
