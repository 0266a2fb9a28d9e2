//! The tools a session offers, with each tool's input validator compiled once.

use std::sync::Arc;

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
    /// Its input schema, exactly as sent to the model.
    pub schema: Value,
    /// `None` only if the schema failed to compile (a bug; every call to the
    /// tool then fails with an error result instead of running unchecked).
    pub validator: Option<Validator>,
}

/// Lookup by name, then alias (gate 1 of DESIGN.md §1).
pub struct ToolRegistry {
    tools: Vec<RegisteredTool>,
}

impl ToolRegistry {
    /// Registers `tools` in the given order (the order of the request's `tools`).
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Self {
        let tools = tools
            .into_iter()
            .map(|tool| {
                let schema = tool.input_schema();
                let validator = jsonschema::validator_for(&schema).ok();
                RegisteredTool {
                    tool,
                    schema,
                    validator,
                }
            })
            .collect();
        Self { tools }
    }

    /// The tool called `name`: exact name first, then an alias, then a
    /// case-insensitive name (`read` → Read).
    pub fn lookup(&self, name: &str) -> Option<&RegisteredTool> {
        self.tools
            .iter()
            .find(|t| t.tool.name() == name)
            .or_else(|| self.tools.iter().find(|t| t.tool.aliases().contains(&name)))
            .or_else(|| {
                self.tools
                    .iter()
                    .find(|t| t.tool.name().eq_ignore_ascii_case(name))
            })
    }

    /// Names of all tools, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|t| t.tool.name()).collect()
    }

    /// The `tools` array of a request.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools
            .iter()
            .map(|t| ToolDefinition {
                name: t.tool.name().to_string(),
                description: t.tool.description(),
                input_schema: t.schema.clone(),
            })
            .collect()
    }
}
