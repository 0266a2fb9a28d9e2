//! The `LspReferences` tool: every place a symbol is used, from the
//! editor's language servers (`textDocument/references`, declaration
//! included; docs/lsp.md, "Navigation through language servers").

use std::path::{Path, PathBuf};

use async_trait::async_trait;

use super::common::{offered, LocationList, LspPositionInput, LSP_MAX_RESULT_CHARS};
use crate::editor::LspQuery;
use crate::permissions::{PermissionPreview, ReadFilter};
use crate::tools::{ToolContext, ToolError, ToolOutput, TypedTool};

/// Model-facing description of LspReferences.
pub const LSP_REFERENCES_DESCRIPTION: &str = "Finds every reference to a symbol (its uses and its declaration) across the project, using the language server running in the user's editor. Unlike Grep it finds only this symbol, not other things with the same name, and no matches in comments or strings.

- Name the position by file_path, the 1-based line (as Read and Grep number lines) and symbol, the identifier's text exactly as written on that line; the tool finds the column. When the symbol appears more than once on the line, occurrence picks one (1-based).
- The result lists path:line: source line for each reference, sorted by path and line, at most 100.
- If the file has no language server, use Grep instead.";

/// No reference found.
pub const LSP_REFERENCES_NONE: &str = "The language server found no references to {symbol} at {path}:{line}. Use Grep to search for it instead.";

/// The LspReferences tool: read-only, concurrency-safe, offered while a
/// language server runs.
pub struct LspReferencesTool;

#[async_trait]
impl TypedTool for LspReferencesTool {
    type Input = LspPositionInput;
    /// Gate 6's check of each location's file ([`TypedTool::limit_reads`]).
    type Plan = Option<ReadFilter>;
    const NAME: &'static str = "LspReferences";
    const KIND: crate::tools::ToolKind = crate::tools::ToolKind::Read;
    /// A lookup: `Read` rules cover a call on a file.
    const RULE_FAMILY: crate::permissions::RuleFamily = crate::permissions::RuleFamily::Lookup;
    const ALIASES: &'static [&'static str] = &["find_references"];
    const MAX_RESULT_CHARS: Option<usize> = Some(LSP_MAX_RESULT_CHARS);

    fn description(&self) -> String {
        LSP_REFERENCES_DESCRIPTION.to_string()
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
        input.preview("References in", root)
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
            feature: "find references",
            none: LSP_REFERENCES_NONE,
            noun: ("reference", "references"),
        }
        .answer(&input, LspQuery::References(input.at()), plan.as_ref(), ctx)
        .await
    }

    fn describe(&self, input: &LspPositionInput, root: &Path) -> String {
        input.describe(root)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::editor::LspAnswer;
    use crate::editor::{Location, LspFailure};
    use crate::text::fill;
    use crate::tools::lsp::common::testing::{call_with, WithNav, SERVERS};
    use crate::tools::lsp::common::{LSP_NONE_RUNNING, LSP_UNAVAILABLE};
    use crate::tools::support::file_common::testing::{disk_ctx, run};
    use std::sync::Arc;

    #[tokio::test]
    async fn references_are_listed_and_failures_name_grep() {
        let loc = |p: &str, line| Location {
            path: PathBuf::from(p),
            line,
            text: Some("helper()".into()),
        };
        let (text, _) = call_with(
            Arc::new(LspReferencesTool),
            Ok(LspAnswer::Locations(vec![
                loc("/p/b.py", 3),
                loc("/p/a.py", 1),
                loc("/p/b.py", 3),
            ])),
            serde_json::json!({"file_path": "a.py", "line": 1, "symbol": "helper"}),
        )
        .await;
        assert_eq!(text, "a.py:1: helper()\nb.py:3: helper()");
        let (text, _) = call_with(
            Arc::new(LspReferencesTool),
            Err(LspFailure::NoServer(PathBuf::from("/p/notes.txt"))),
            serde_json::json!({"file_path": "notes.txt", "line": 1, "symbol": "helper"}),
        )
        .await;
        assert_eq!(text, "error: No language server is attached to notes.txt (none of the running servers handles this kind of file), so LspReferences cannot answer. Use Grep instead (e.g. Grep for \"\\bhelper\\b\").");
        let (none, _) = call_with(
            Arc::new(LspReferencesTool),
            Ok(LspAnswer::Locations(Vec::new())),
            serde_json::json!({"file_path": "a.py", "line": 1, "symbol": "helper"}),
        )
        .await;
        assert_eq!(none, "The language server found no references to helper at a.py:1. Use Grep to search for it instead.");
    }

    #[tokio::test]
    async fn without_servers_or_outside_neovim_it_says_use_grep() {
        let _g = SERVERS.lock().await;
        crate::editor::lsp::set_servers_running(0);
        let root = PathBuf::from("/p");
        let input = serde_json::json!({"file_path": "a.py", "line": 1, "symbol": "helper"});
        let ctx = disk_ctx(&root);
        let err = run(Arc::new(LspReferencesTool), &ctx, input.clone())
            .await
            .unwrap_err();
        assert_eq!(
            err.message,
            fill(
                LSP_UNAVAILABLE,
                &[
                    ("tool", "LspReferences"),
                    ("hint", " (e.g. Grep for \"\\bhelper\\b\")")
                ]
            )
        );
        let mut ctx = disk_ctx(&root);
        ctx.editor = Arc::new(WithNav(Some(Arc::new(
            crate::tools::lsp::common::testing::Fixed {
                answer: Ok(LspAnswer::Locations(Vec::new())),
                asked: Default::default(),
            },
        ))));
        let err = run(Arc::new(LspReferencesTool), &ctx, input)
            .await
            .unwrap_err();
        assert_eq!(
            err.message,
            fill(
                LSP_NONE_RUNNING,
                &[
                    ("tool", "LspReferences"),
                    ("hint", " (e.g. Grep for \"\\bhelper\\b\")")
                ]
            )
        );
        assert!(!TypedTool::is_offered(&LspReferencesTool));
        assert!(LSP_REFERENCES_DESCRIPTION.starts_with("Finds every reference to a symbol"));
    }
}
