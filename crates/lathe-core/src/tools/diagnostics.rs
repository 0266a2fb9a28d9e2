//! The `Diagnostics` tool: what the editor's language servers and linters
//! report, for one file or every open one, with a least severity
//! (docs/lsp.md, "Diagnostics from language servers").
//! What Edit and Write add after a change is `new_diagnostics`.
//!
//! The data comes from [`Editor::diagnostics`](crate::editor::Editor) and
//! [`DiagnosticWatch`](crate::editor::DiagnosticWatch), which Neovim answers
//! from `vim.diagnostic`; an editor without diagnostics (`DiskEditor`) makes
//! the tool say so.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::support::file_common::{editor_error, file_preview, resolve_file_path, shown};
use super::support::new_diagnostics::one_line;
use super::{support::paths, ToolContext, ToolError, ToolOutput, TypedTool};
use crate::editor::{Diagnostic, Severity};
use crate::permissions::PermissionPreview;
use crate::text::{fill, plural};

/// Most diagnostics the tool lists; the rest are counted.
pub const DIAGNOSTICS_MAX_ITEMS: usize = 100;
/// Largest Diagnostics result in chars (gate 9).
pub const DIAGNOSTICS_MAX_RESULT_CHARS: usize = 30_000;
/// Model-facing description of the Diagnostics tool.
pub const DIAGNOSTICS_DESCRIPTION: &str = "Lists the problems the editor's language servers and linters report (errors, warnings, infos, hints), as file:line: severity [source] message.

- Give file_path for one file, or omit it for every file open in the editor.
- severity is the least severe kind to include: \"error\", \"warning\" (the default), \"info\" or \"hint\".
- Edit and Write already report the new errors and warnings near each change; use this tool to see the whole picture, e.g. before finishing a task or after changing many files.
- A language server reports only on files open in the editor; with no server running, run the project's own checker (compiler, linter, tests) with Bash instead.";

/// The tool found nothing.
pub const DIAGNOSTICS_NONE: &str = "No diagnostics of severity {severity} or worse for {what}.";
/// The tool found nothing and no server runs.
pub const DIAGNOSTICS_NO_SERVER: &str = "No diagnostics for {what}: no language server is running in the editor. Run the project's own checker (compiler, linter, tests) with Bash instead.";
/// The editor has no diagnostics at all (lathe outside Neovim).
pub const DIAGNOSTICS_UNAVAILABLE: &str = "This editor has no diagnostics (lathe is not running inside Neovim). Run the project's own checker (compiler, linter, tests) with Bash instead.";
/// The file asked for is not open in the editor.
pub const DIAGNOSTICS_NOT_OPEN: &str = "No diagnostics for {what}: it is not open in the editor, and language servers check only open files. Run the project's own checker (compiler, linter, tests) with Bash instead.";
/// More diagnostics than the tool lists.
pub const DIAGNOSTICS_MORE: &str =
    "… {count} more not shown; narrow it with file_path or severity.";
/// What "every open file" is called in messages.
pub const DIAGNOSTICS_ALL_FILES: &str = "the files open in the editor";

/// The least severity the tool includes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SeverityFilter {
    /// Errors only.
    Error,
    /// Errors and warnings.
    #[default]
    Warning,
    /// Errors, warnings and infos.
    Info,
    /// Everything.
    Hint,
}

impl SeverityFilter {
    fn least(self) -> Severity {
        match self {
            SeverityFilter::Error => Severity::Error,
            SeverityFilter::Warning => Severity::Warning,
            SeverityFilter::Info => Severity::Info,
            SeverityFilter::Hint => Severity::Hint,
        }
    }
}

/// Diagnostics's input.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiagnosticsInput {
    /// The file to report on (absolute, or relative to the project root). Omit it for every file open in the editor
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_path: Option<String>,
    /// The least severe kind to include: "error", "warning" (default), "info" or "hint"
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "severity_schema")]
    pub severity: Option<SeverityFilter>,
}

/// `severity` as a plain string enum, inline (as Grep's `output_mode`),
/// instead of schemars' `$ref` + `oneOf` for a documented enum.
fn severity_schema(_gen: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "enum": ["error", "warning", "info", "hint"]
    })
}

/// The Diagnostics tool: read-only, concurrency-safe.
pub struct DiagnosticsTool;

#[async_trait]
impl TypedTool for DiagnosticsTool {
    type Input = DiagnosticsInput;
    type Plan = ();
    const NAME: &'static str = "Diagnostics";
    const KIND: crate::tools::ToolKind = crate::tools::ToolKind::Read;
    /// Only rules naming it judge its calls, matched against its input.
    const RULE_FAMILY: crate::permissions::RuleFamily = crate::permissions::RuleFamily::Input;
    const ALIASES: &'static [&'static str] = &["diagnostics", "get_diagnostics"];
    const MAX_RESULT_CHARS: Option<usize> = Some(DIAGNOSTICS_MAX_RESULT_CHARS);

    fn description(&self) -> String {
        DIAGNOSTICS_DESCRIPTION.to_string()
    }

    fn normalize(&self, input: DiagnosticsInput, root: &Path) -> DiagnosticsInput {
        DiagnosticsInput {
            file_path: input.file_path.map(|p| resolve_file_path(root, &p)),
            ..input
        }
    }

    fn target_path(&self, input: &DiagnosticsInput) -> Option<PathBuf> {
        input.file_path.as_ref().map(PathBuf::from)
    }

    async fn validate_input(
        &self,
        _input: &DiagnosticsInput,
        _ctx: &ToolContext,
    ) -> Result<(), ToolError> {
        Ok(())
    }

    fn permission_preview(
        &self,
        input: &DiagnosticsInput,
        _plan: &(),
        root: &Path,
    ) -> PermissionPreview {
        match &input.file_path {
            Some(p) => file_preview("Diagnostics of", root, Path::new(p)),
            None => PermissionPreview {
                title: format!("Diagnostics of {DIAGNOSTICS_ALL_FILES}"),
                ..PermissionPreview::default()
            },
        }
    }

    async fn call(
        &self,
        input: DiagnosticsInput,
        _plan: (),
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let path = input.file_path.as_ref().map(PathBuf::from);
        let what = match &path {
            Some(p) => shown(&ctx.root, p),
            None => DIAGNOSTICS_ALL_FILES.to_string(),
        };
        let list = ctx
            .editor
            .diagnostics(path.as_deref())
            .await
            .map_err(|e| editor_error(&ctx.root, path.as_deref().unwrap_or(&ctx.root), &e))?;
        let Some(list) = list else {
            return Ok(ToolOutput::text(DIAGNOSTICS_UNAVAILABLE, "no editor"));
        };
        let least = input.severity.unwrap_or_default().least();
        let items: Vec<&Diagnostic> = list
            .items
            .iter()
            .filter(|d| d.severity <= least)
            .filter(|d| path.is_some() || paths::is_inside(&ctx.root, &d.path))
            .collect();
        if items.is_empty() {
            let text = if list.not_open {
                fill(DIAGNOSTICS_NOT_OPEN, &[("what", &what)])
            } else if list.servers == 0 && list.items.is_empty() {
                fill(DIAGNOSTICS_NO_SERVER, &[("what", &what)])
            } else {
                fill(
                    DIAGNOSTICS_NONE,
                    &[("severity", least.as_str()), ("what", &what)],
                )
            };
            return Ok(ToolOutput::text(text, "none"));
        }
        let mut lines: Vec<String> = items
            .iter()
            .take(DIAGNOSTICS_MAX_ITEMS)
            .map(|d| format!("{}:{}", shown(&ctx.root, &d.path), one_line(d)))
            .collect();
        if items.len() > DIAGNOSTICS_MAX_ITEMS {
            lines.push(fill(
                DIAGNOSTICS_MORE,
                &[("count", &(items.len() - DIAGNOSTICS_MAX_ITEMS).to_string())],
            ));
        }
        Ok(ToolOutput::text(
            lines.join("\n"),
            plural(items.len(), "diagnostic", "diagnostics"),
        ))
    }

    fn describe(&self, input: &DiagnosticsInput, root: &Path) -> String {
        match &input.file_path {
            Some(p) => paths::display(root, Path::new(p)),
            None => DIAGNOSTICS_ALL_FILES.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::editor::{
        DiagnosticList, Document, Editor, EditorError, WriteOutcome, WriteRequest,
    };
    use crate::tools::support::file_common::testing::{disk_ctx, run};
    use crate::tools::{schema_for, Tool};
    use std::sync::Arc;

    #[test]
    fn golden_constants() {
        assert_eq!(
            DIAGNOSTICS_NONE,
            "No diagnostics of severity {severity} or worse for {what}."
        );
        assert_eq!(DIAGNOSTICS_NO_SERVER, "No diagnostics for {what}: no language server is running in the editor. Run the project's own checker (compiler, linter, tests) with Bash instead.");
        assert_eq!(DIAGNOSTICS_UNAVAILABLE, "This editor has no diagnostics (lathe is not running inside Neovim). Run the project's own checker (compiler, linter, tests) with Bash instead.");
        assert_eq!(
            DIAGNOSTICS_MORE,
            "… {count} more not shown; narrow it with file_path or severity."
        );
        assert_eq!(DIAGNOSTICS_ALL_FILES, "the files open in the editor");
        assert_eq!(DIAGNOSTICS_NOT_OPEN, "No diagnostics for {what}: it is not open in the editor, and language servers check only open files. Run the project's own checker (compiler, linter, tests) with Bash instead.");
        assert!(
            DIAGNOSTICS_DESCRIPTION.starts_with("Lists the problems the editor's language servers")
        );
        let schema = schema_for::<DiagnosticsInput>();
        assert_eq!(
            schema["properties"]["severity"]["description"],
            "The least severe kind to include: \"error\", \"warning\" (default), \"info\" or \"hint\""
        );
    }

    /// An editor that answers `diagnostics` with a fixed list.
    struct Fixed(Option<DiagnosticList>);

    #[async_trait]
    impl Editor for Fixed {
        async fn read(&self, path: &Path) -> Result<Document, EditorError> {
            Err(EditorError::NotFound(path.to_path_buf()))
        }
        async fn write(&self, path: &Path, _r: WriteRequest) -> Result<WriteOutcome, EditorError> {
            Err(EditorError::NotFound(path.to_path_buf()))
        }
        async fn diagnostics(
            &self,
            path: Option<&Path>,
        ) -> Result<Option<DiagnosticList>, EditorError> {
            Ok(self.0.clone().map(|mut l| {
                l.items.retain(|d| path.is_none_or(|p| d.path == p));
                l.not_open = path.is_some_and(|p| p.ends_with("closed.py"));
                l
            }))
        }
    }

    async fn call(editor: Fixed, input: serde_json::Value) -> String {
        let root = std::env::temp_dir();
        let mut ctx = disk_ctx(&root);
        ctx.editor = Arc::new(editor);
        let tool: Arc<dyn Tool> = Arc::new(DiagnosticsTool);
        match run(tool, &ctx, input).await {
            Ok(out) => match out.content {
                crate::protocol::ToolResultContent::Text(t) => t,
                other => format!("{other:?}"),
            },
            Err(e) => format!("error: {}", e.message),
        }
    }

    #[tokio::test]
    async fn the_tool_lists_one_file_or_all_with_a_severity_filter() {
        let root = std::env::temp_dir();
        let at = |name: &str, line, sev, msg: &str| Diagnostic {
            path: root.join(name),
            line,
            severity: sev,
            source: Some("pyflakes".into()),
            message: msg.into(),
        };
        let list = DiagnosticList {
            servers: 1,
            items: vec![
                at("a.py", 3, Severity::Error, "undefined name 'x'"),
                at("a.py", 5, Severity::Hint, "a hint"),
                at("b.py", 1, Severity::Warning, "unused\nimport"),
            ],
            not_open: false,
        };
        let all = call(Fixed(Some(list.clone())), serde_json::json!({})).await;
        assert_eq!(
            all,
            "a.py:3: error [pyflakes] undefined name 'x'\nb.py:1: warning [pyflakes] unused import"
        );
        let errors = call(
            Fixed(Some(list.clone())),
            serde_json::json!({"severity": "error"}),
        )
        .await;
        assert_eq!(errors, "a.py:3: error [pyflakes] undefined name 'x'");
        let one = call(
            Fixed(Some(list.clone())),
            serde_json::json!({"file_path": "a.py", "severity": "hint"}),
        )
        .await;
        assert_eq!(
            one,
            "a.py:3: error [pyflakes] undefined name 'x'\na.py:5: hint [pyflakes] a hint"
        );
        let none = call(Fixed(Some(list)), serde_json::json!({"file_path": "c.py"})).await;
        assert_eq!(
            none,
            "No diagnostics of severity warning or worse for c.py."
        );
    }

    #[tokio::test]
    async fn the_tool_says_when_there_is_no_server_or_no_editor() {
        let none = call(
            Fixed(Some(DiagnosticList::default())),
            serde_json::json!({}),
        )
        .await;
        assert_eq!(
            none,
            fill(DIAGNOSTICS_NO_SERVER, &[("what", DIAGNOSTICS_ALL_FILES)])
        );
        let closed = call(
            Fixed(Some(DiagnosticList::default())),
            serde_json::json!({"file_path": "closed.py"}),
        )
        .await;
        assert_eq!(closed, fill(DIAGNOSTICS_NOT_OPEN, &[("what", "closed.py")]));
        let disk = call(Fixed(None), serde_json::json!({})).await;
        assert_eq!(disk, DIAGNOSTICS_UNAVAILABLE);
        let tool = DiagnosticsTool;
        assert!(TypedTool::is_read_only(&tool, &DiagnosticsInput::default()));
        assert!(TypedTool::is_concurrency_safe(
            &tool,
            &DiagnosticsInput::default()
        ));
    }
}
