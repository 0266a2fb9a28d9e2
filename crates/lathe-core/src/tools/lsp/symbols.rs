//! The `LspSymbols` tool: the symbols of one file (`textDocument/
//! documentSymbol`, nested names qualified as `Class.method`) or of the
//! whole workspace matching a query (`workspace/symbol`), from the
//! editor's language servers (docs/lsp.md, "Navigation through
//! language servers").

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{capped, offered, readable_only, with_left_out, Asker, LSP_MAX_RESULT_CHARS};
use crate::editor::{LspAnswer, LspQuery, LspSymbol};
use crate::permissions::{PermissionPreview, ReadFilter};
use crate::text::{fill, plural};
use crate::tools::support::file_common::{file_preview, resolve_file_path, shown};
use crate::tools::{support::paths, ToolContext, ToolError, ToolOutput, TypedTool};

/// Model-facing description of LspSymbols.
pub const LSP_SYMBOLS_DESCRIPTION: &str = "Lists symbols (classes, functions, methods, variables, …) from the language server running in the user's editor, as path:line: kind name.

- With file_path: the outline of that file, nested names qualified by their parents (Class.method); query, if given, keeps the names containing it (case-insensitive).
- Without file_path: searches the whole workspace for symbols matching query (required then). Not every server supports this; use Grep then.
- If the file has no language server, use Grep instead.";

/// Neither `file_path` nor `query`.
pub const LSP_SYMBOLS_NEEDS_INPUT: &str = "Give file_path (the symbols of that file) or query (search the whole workspace for symbols by name).";
/// A file without symbols (or none matching).
pub const LSP_SYMBOLS_NONE_IN_FILE: &str =
    "The language server lists no symbols{matching} in {path}.";
/// No workspace symbol matches.
pub const LSP_SYMBOLS_NONE_IN_WORKSPACE: &str = "The language server found no symbols matching {query} in the workspace. Use Grep to search for the name instead.";
/// How a query narrows the empty-file message.
pub const LSP_SYMBOLS_MATCHING: &str = " matching {query}";

/// LspSymbols's input.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LspSymbolsInput {
    /// The file whose symbols to list (absolute, or relative to the project root). Omit it to search the whole workspace with query
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_path: Option<String>,
    /// Part of the symbol names to find: required without file_path (workspace search); with file_path it filters the file's symbols (case-insensitive)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
}

/// The LspSymbols tool: read-only, concurrency-safe, offered while a
/// language server runs.
pub struct LspSymbolsTool;

/// `symbols` as `path:line: kind name` lines, the project's files first
/// (then libraries), each by path and line (stable, so a file's outline
/// keeps its order), capped.
pub fn symbol_lines(root: &Path, mut symbols: Vec<LspSymbol>) -> String {
    symbols.sort_by(|a, b| {
        let key = |s: &LspSymbol| !paths::is_inside(root, &s.path);
        (key(a), &a.path, a.line).cmp(&(key(b), &b.path, b.line))
    });
    symbols.dedup();
    let total = symbols.len();
    capped(
        symbols
            .iter()
            .map(|s| format!("{}:{}: {} {}", shown(root, &s.path), s.line, s.kind, s.name)),
        total,
    )
}

#[async_trait]
impl TypedTool for LspSymbolsTool {
    type Input = LspSymbolsInput;
    /// Gate 6's check of each symbol's file ([`TypedTool::limit_reads`]).
    type Plan = Option<ReadFilter>;
    const NAME: &'static str = "LspSymbols";
    const KIND: crate::tools::ToolKind = crate::tools::ToolKind::Search;
    /// A lookup: `Read` rules cover a call on a file.
    const RULE_FAMILY: crate::permissions::RuleFamily = crate::permissions::RuleFamily::Lookup;
    const ALIASES: &'static [&'static str] = &["document_symbols", "workspace_symbols"];
    const MAX_RESULT_CHARS: Option<usize> = Some(LSP_MAX_RESULT_CHARS);

    fn description(&self) -> String {
        LSP_SYMBOLS_DESCRIPTION.to_string()
    }

    fn is_offered(&self) -> bool {
        offered()
    }

    fn normalize(&self, input: LspSymbolsInput, root: &Path) -> LspSymbolsInput {
        LspSymbolsInput {
            file_path: input.file_path.map(|p| resolve_file_path(root, &p)),
            query: input.query.map(|q| q.trim().to_string()),
        }
    }

    fn target_path(&self, input: &LspSymbolsInput) -> Option<PathBuf> {
        input.file_path.as_ref().map(PathBuf::from)
    }

    async fn validate_input(
        &self,
        input: &LspSymbolsInput,
        _ctx: &ToolContext,
    ) -> Result<Option<ReadFilter>, ToolError> {
        if input.file_path.is_none() && input.query.is_none() {
            return Err(ToolError::new(LSP_SYMBOLS_NEEDS_INPUT));
        }
        Ok(None)
    }

    fn permission_preview(
        &self,
        input: &LspSymbolsInput,
        _plan: &Option<ReadFilter>,
        root: &Path,
    ) -> PermissionPreview {
        match &input.file_path {
            Some(p) => file_preview("Symbols of", root, Path::new(p)),
            None => PermissionPreview {
                title: format!(
                    "Workspace symbols matching {}",
                    input.query.as_deref().unwrap_or("")
                ),
                ..PermissionPreview::default()
            },
        }
    }

    fn limit_reads(&self, plan: &mut Option<ReadFilter>, filter: ReadFilter) {
        *plan = Some(filter);
    }

    async fn call(
        &self,
        input: LspSymbolsInput,
        plan: Option<ReadFilter>,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let query = input.query.clone().unwrap_or_default();
        let asker = Asker {
            tool: Self::NAME,
            feature: "document symbols",
            hint: if query.is_empty() {
                String::new()
            } else {
                Asker::grep_hint(&query)
            },
            root: &ctx.root,
        };
        let question = match &input.file_path {
            Some(p) => LspQuery::DocumentSymbols(PathBuf::from(p)),
            None => LspQuery::WorkspaceSymbols(query.clone()),
        };
        let mut symbols = match asker.ask(ctx, question).await? {
            LspAnswer::Symbols(s) => s,
            _ => Vec::new(),
        };
        if input.file_path.is_some() && !query.is_empty() {
            let q = query.to_lowercase();
            symbols.retain(|s| s.name.to_lowercase().contains(&q));
        }
        let (symbols, left) = readable_only(
            symbols,
            |s| s.path.as_path(),
            plan.as_ref(),
            input.file_path.as_deref().map(Path::new),
        );
        if symbols.is_empty() {
            let text = match &input.file_path {
                Some(p) => {
                    let matching = if query.is_empty() {
                        String::new()
                    } else {
                        fill(LSP_SYMBOLS_MATCHING, &[("query", &query)])
                    };
                    fill(
                        LSP_SYMBOLS_NONE_IN_FILE,
                        &[
                            ("matching", &matching),
                            ("path", &shown(&ctx.root, Path::new(p))),
                        ],
                    )
                }
                None => fill(LSP_SYMBOLS_NONE_IN_WORKSPACE, &[("query", &query)]),
            };
            return Ok(ToolOutput::text(with_left_out(text, false, &left), "none"));
        }
        let n = symbols.len();
        Ok(ToolOutput::text(
            with_left_out(symbol_lines(&ctx.root, symbols), true, &left),
            plural(n, "symbol", "symbols"),
        ))
    }

    fn describe(&self, input: &LspSymbolsInput, root: &Path) -> String {
        match (&input.file_path, &input.query) {
            (Some(p), _) => paths::display(root, Path::new(p)),
            (None, q) => format!("workspace: {}", q.as_deref().unwrap_or("")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::editor::LspFailure;
    use crate::tools::lsp::common::testing::call_with;
    use std::sync::Arc;

    fn sym(name: &str, kind: &'static str, path: &str, line: usize) -> LspSymbol {
        LspSymbol {
            name: name.into(),
            kind,
            path: PathBuf::from(path),
            line,
        }
    }

    #[tokio::test]
    async fn document_symbols_are_listed_and_filtered() {
        let outline = vec![
            sym("Greeter", "class", "/p/a.py", 1),
            sym("Greeter.greet", "method", "/p/a.py", 3),
            sym("helper", "function", "/p/a.py", 7),
        ];
        let (text, asked) = call_with(
            Arc::new(LspSymbolsTool),
            Ok(LspAnswer::Symbols(outline.clone())),
            serde_json::json!({"file_path": "a.py"}),
        )
        .await;
        assert_eq!(
            text,
            "a.py:1: class Greeter\na.py:3: method Greeter.greet\na.py:7: function helper"
        );
        assert_eq!(asked, [LspQuery::DocumentSymbols(PathBuf::from("/p/a.py"))]);
        let (text, _) = call_with(
            Arc::new(LspSymbolsTool),
            Ok(LspAnswer::Symbols(outline.clone())),
            serde_json::json!({"file_path": "a.py", "query": "GREET"}),
        )
        .await;
        assert_eq!(text, "a.py:1: class Greeter\na.py:3: method Greeter.greet");
        let (text, _) = call_with(
            Arc::new(LspSymbolsTool),
            Ok(LspAnswer::Symbols(outline)),
            serde_json::json!({"file_path": "a.py", "query": "nope"}),
        )
        .await;
        assert_eq!(
            text,
            "The language server lists no symbols matching nope in a.py."
        );
    }

    #[tokio::test]
    async fn workspace_symbols_need_a_query_and_say_when_unsupported() {
        let (text, asked) = call_with(
            Arc::new(LspSymbolsTool),
            Ok(LspAnswer::Symbols(vec![
                sym("helper", "function", "/lib/x.py", 2),
                sym("helper", "function", "/p/b.py", 5),
            ])),
            serde_json::json!({"query": "helper"}),
        )
        .await;
        assert_eq!(
            text,
            "b.py:5: function helper\n/lib/x.py:2: function helper"
        );
        assert_eq!(asked, [LspQuery::WorkspaceSymbols("helper".into())]);
        let (text, _) = call_with(
            Arc::new(LspSymbolsTool),
            Err(LspFailure::Unsupported {
                servers: vec!["pylsp".into()],
            }),
            serde_json::json!({"query": "helper"}),
        )
        .await;
        assert_eq!(text, "error: No running language server (pylsp) supports searching the workspace for symbols. Use Grep instead (e.g. Grep for \"\\bhelper\\b\"), or LspSymbols with a file_path for the symbols of one file.");
        let (text, asked) = call_with(
            Arc::new(LspSymbolsTool),
            Ok(LspAnswer::Symbols(Vec::new())),
            serde_json::json!({}),
        )
        .await;
        assert_eq!(text, format!("error: {LSP_SYMBOLS_NEEDS_INPUT}"));
        assert!(asked.is_empty());
        let (text, _) = call_with(
            Arc::new(LspSymbolsTool),
            Ok(LspAnswer::Symbols(Vec::new())),
            serde_json::json!({"query": "zz"}),
        )
        .await;
        assert_eq!(text, "The language server found no symbols matching zz in the workspace. Use Grep to search for the name instead.");
        assert!(LSP_SYMBOLS_DESCRIPTION.starts_with("Lists symbols"));
    }
}
