//! The `LspDefinition` tool: where a symbol is defined, from the editor's
//! language servers (`textDocument/definition`; docs/lsp.md,
//! "Navigation through language servers").

use std::path::{Path, PathBuf};

use async_trait::async_trait;

use super::common::{offered, LocationList, LspPositionInput, LSP_MAX_RESULT_CHARS};
use crate::editor::LspQuery;
use crate::permissions::{PermissionPreview, ReadFilter};
use crate::tools::{ToolContext, ToolError, ToolOutput, TypedTool};

/// Model-facing description of LspDefinition.
pub const LSP_DEFINITION_DESCRIPTION: &str = "Finds where a symbol is defined, using the language server running in the user's editor (go to definition). Works across files and into libraries, and tells apart same-named symbols that Grep cannot.

- Name the position by file_path, the 1-based line (as Read and Grep number lines) and symbol, the identifier's text exactly as written on that line; the tool finds the column. When the symbol appears more than once on the line, occurrence picks one (1-based).
- The result lists path:line: source line for each definition.
- If the file has no language server, use Grep instead.";

/// No definition found.
pub const LSP_DEFINITION_NONE: &str = "The language server found no definition of {symbol} at {path}:{line} (it may be a builtin, or defined dynamically). Use Grep to search for it instead.";

/// The LspDefinition tool: read-only, concurrency-safe, offered while a
/// language server runs.
pub struct LspDefinitionTool;

#[async_trait]
impl TypedTool for LspDefinitionTool {
    type Input = LspPositionInput;
    /// Gate 6's check of each location's file ([`TypedTool::limit_reads`]).
    type Plan = Option<ReadFilter>;
    const NAME: &'static str = "LspDefinition";
    const KIND: crate::tools::ToolKind = crate::tools::ToolKind::Read;
    /// A lookup: `Read` rules cover a call on a file.
    const RULE_FAMILY: crate::permissions::RuleFamily = crate::permissions::RuleFamily::Lookup;
    const ALIASES: &'static [&'static str] = &["go_to_definition", "goto_definition"];
    const MAX_RESULT_CHARS: Option<usize> = Some(LSP_MAX_RESULT_CHARS);

    fn description(&self) -> String {
        LSP_DEFINITION_DESCRIPTION.to_string()
    }

    fn is_offered(&self) -> bool {
        offered()
    }

    fn normalize(&self, input: LspPositionInput, root: &Path) -> LspPositionInput {
        input.normalized(root)
    }

    fn target_path(&self, input: &LspPositionInput) -> Option<PathBuf> {
        Some(PathBuf::from(&input.file_path))
    }

    async fn validate_input(
        &self,
        input: &LspPositionInput,
        _ctx: &ToolContext,
    ) -> Result<Option<ReadFilter>, ToolError> {
        input.check().map(|()| None)
    }

    fn permission_preview(
        &self,
        input: &LspPositionInput,
        _plan: &Option<ReadFilter>,
        root: &Path,
    ) -> PermissionPreview {
        input.preview("Definition in", root)
    }

    fn limit_reads(&self, plan: &mut Option<ReadFilter>, filter: ReadFilter) {
        *plan = Some(filter);
    }

    async fn call(
        &self,
        input: LspPositionInput,
        plan: Option<ReadFilter>,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        LocationList {
            tool: Self::NAME,
            feature: "go to definition",
            none: LSP_DEFINITION_NONE,
            noun: ("definition", "definitions"),
        }
        .answer(&input, LspQuery::Definition(input.at()), plan.as_ref(), ctx)
        .await
    }

    fn describe(&self, input: &LspPositionInput, root: &Path) -> String {
        input.describe(root)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::editor::Location;
    use crate::editor::LspAnswer;
    use crate::tools::lsp::common::testing::call_with;
    use crate::tools::schema_for;
    use std::sync::Arc;

    #[tokio::test]
    async fn it_asks_at_the_symbol_and_lists_the_definitions() {
        let (text, asked) = call_with(
            Arc::new(LspDefinitionTool),
            Ok(LspAnswer::Locations(vec![Location {
                path: PathBuf::from("/p/util.py"),
                line: 4,
                text: Some("def helper(x):".into()),
            }])),
            serde_json::json!({"file_path": "main.py", "line": 2, "symbol": " helper "}),
        )
        .await;
        assert_eq!(text, "util.py:4: def helper(x):");
        assert_eq!(
            asked,
            [LspQuery::Definition(crate::editor::SymbolAt {
                path: PathBuf::from("/p/main.py"),
                line: 2,
                symbol: "helper".into(),
                occurrence: 1
            })]
        );
        let (none, _) = call_with(
            Arc::new(LspDefinitionTool),
            Ok(LspAnswer::Locations(Vec::new())),
            serde_json::json!({"file_path": "/p/main.py", "line": 2, "symbol": "len"}),
        )
        .await;
        assert_eq!(none, "The language server found no definition of len at main.py:2 (it may be a builtin, or defined dynamically). Use Grep to search for it instead.");
        let (empty, asked) = call_with(
            Arc::new(LspDefinitionTool),
            Ok(LspAnswer::Locations(Vec::new())),
            serde_json::json!({"file_path": "/p/main.py", "line": 2, "symbol": "  "}),
        )
        .await;
        assert_eq!(
            empty,
            format!("error: {}", super::super::common::LSP_EMPTY_SYMBOL)
        );
        assert!(asked.is_empty());
    }

    #[test]
    fn golden_description_and_schema() {
        assert!(LSP_DEFINITION_DESCRIPTION.starts_with("Finds where a symbol is defined"));
        let schema = schema_for::<LspPositionInput>();
        assert_eq!(
            schema["required"],
            serde_json::json!(["file_path", "line", "symbol"])
        );
        assert_eq!(schema["properties"]["line"]["minimum"], 1);
        let tool = LspDefinitionTool;
        assert!(TypedTool::is_read_only(&tool, &LspPositionInput::default()));
        assert!(TypedTool::is_concurrency_safe(
            &tool,
            &LspPositionInput::default()
        ));
    }
}
