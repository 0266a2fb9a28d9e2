//! The `LspHover` tool: what the editor's language servers say about a
//! symbol (`textDocument/hover`: its type, signature and documentation;
//! docs/lsp.md, "Navigation through language servers").

use std::path::{Path, PathBuf};

use async_trait::async_trait;

use super::common::{offered, LspPositionInput, LSP_MAX_RESULT_CHARS};
use crate::editor::{LspAnswer, LspQuery};
use crate::permissions::PermissionPreview;
use crate::text::fill;
use crate::tools::{ToolContext, ToolError, ToolOutput, TypedTool};

/// Longest hover text returned, in chars; the rest is cut with
/// [`LSP_HOVER_CUT`].
pub const LSP_HOVER_MAX_CHARS: usize = 8_000;

/// Model-facing description of LspHover.
pub const LSP_HOVER_DESCRIPTION: &str = "Shows what the language server running in the user's editor knows about a symbol: its type or signature and its documentation (hover). Use it to learn what a function takes and returns, or a variable's type, without reading its definition.

- Name the position by file_path, the 1-based line (as Read and Grep number lines) and symbol, the identifier's text exactly as written on that line; the tool finds the column. When the symbol appears more than once on the line, occurrence picks one (1-based).
- The result is the server's text (markdown).
- If the file has no language server, use Grep or Read instead.";

/// No hover text.
pub const LSP_HOVER_NONE: &str = "The language server has nothing to show for {symbol} at {path}:{line}. Use LspDefinition or Grep to find its definition and Read it instead.";
/// Appended when the hover text was cut.
pub const LSP_HOVER_CUT: &str = "[… hover text cut at {cap} characters]";

/// The LspHover tool: read-only, concurrency-safe, offered while a
/// language server runs.
pub struct LspHoverTool;

/// `text` cut at [`LSP_HOVER_MAX_CHARS`] chars with [`LSP_HOVER_CUT`].
pub fn hover_capped(text: &str) -> String {
    if text.chars().count() <= LSP_HOVER_MAX_CHARS {
        return text.to_string();
    }
    let head: String = text.chars().take(LSP_HOVER_MAX_CHARS).collect();
    format!(
        "{}\n{}",
        head.trim_end(),
        fill(LSP_HOVER_CUT, &[("cap", &LSP_HOVER_MAX_CHARS.to_string())])
    )
}

#[async_trait]
impl TypedTool for LspHoverTool {
    type Input = LspPositionInput;
    type Plan = ();
    const NAME: &'static str = "LspHover";
    const KIND: crate::tools::ToolKind = crate::tools::ToolKind::Read;
    /// A lookup: `Read` rules cover a call on a file.
    const RULE_FAMILY: crate::permissions::RuleFamily = crate::permissions::RuleFamily::Lookup;
    const ALIASES: &'static [&'static str] = &["hover"];
    const MAX_RESULT_CHARS: Option<usize> = Some(LSP_MAX_RESULT_CHARS);

    fn description(&self) -> String {
        LSP_HOVER_DESCRIPTION.to_string()
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
    ) -> Result<(), ToolError> {
        input.check()
    }

    fn permission_preview(
        &self,
        input: &LspPositionInput,
        _plan: &(),
        root: &Path,
    ) -> PermissionPreview {
        input.preview("Hover in", root)
    }

    async fn call(
        &self,
        input: LspPositionInput,
        _plan: (),
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let asker = input.asker(Self::NAME, "hover", &ctx.root);
        match asker.ask(ctx, LspQuery::Hover(input.at())).await? {
            LspAnswer::Hover(Some(text)) => {
                let lines = text.lines().count();
                Ok(ToolOutput::text(
                    hover_capped(&text),
                    crate::text::plural(lines, "line", "lines"),
                ))
            }
            _ => Ok(ToolOutput::text(
                input.fill_at(LSP_HOVER_NONE, &ctx.root),
                "none",
            )),
        }
    }

    fn describe(&self, input: &LspPositionInput, root: &Path) -> String {
        input.describe(root)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::lsp::common::testing::call_with;
    use std::sync::Arc;

    #[tokio::test]
    async fn hover_text_is_returned_and_capped() {
        let (text, _) = call_with(
            Arc::new(LspHoverTool),
            Ok(LspAnswer::Hover(Some(
                "```python\ndef helper(x)\n```\n\nDoubles x.".into(),
            ))),
            serde_json::json!({"file_path": "a.py", "line": 1, "symbol": "helper"}),
        )
        .await;
        assert_eq!(text, "```python\ndef helper(x)\n```\n\nDoubles x.");
        let (none, _) = call_with(
            Arc::new(LspHoverTool),
            Ok(LspAnswer::Hover(None)),
            serde_json::json!({"file_path": "a.py", "line": 1, "symbol": "x"}),
        )
        .await;
        assert_eq!(none, "The language server has nothing to show for x at a.py:1. Use LspDefinition or Grep to find its definition and Read it instead.");
        let long = "é".repeat(LSP_HOVER_MAX_CHARS + 5);
        let capped = hover_capped(&long);
        assert!(capped.ends_with("\n[… hover text cut at 8000 characters]"));
        assert_eq!(
            capped.chars().filter(|c| *c == 'é').count(),
            LSP_HOVER_MAX_CHARS
        );
        assert!(LSP_HOVER_DESCRIPTION.starts_with("Shows what the language server"));
    }
}
