//! Diagnostics from the editor's language servers: the `Diagnostics` tool
//! (one file or every open one, with a least severity), and what an Edit or
//! Write adds to its result after the servers answered the change — only
//! the errors and warnings that are new, in and near the changed lines
//! (docs/architecture.md, "Diagnostics from language servers"; issue 11).
//!
//! The data comes from [`Editor::diagnostics`](crate::editor::Editor) and
//! [`DiagnosticWatch`](crate::editor::DiagnosticWatch), which Neovim answers
//! from `vim.diagnostic`; an editor without diagnostics (`DiskEditor`) makes
//! the tool say so and the edits add nothing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::file_common::{editor_error, file_preview, resolve_file_path, shown};
use super::numbered::split_lines;
use super::{paths, ToolContext, ToolError, ToolOutput, TypedTool};
use crate::editor::{Diagnostic, Settled, Severity};
use crate::permissions::PermissionPreview;
use crate::text::{fill, plural};

/// Most diagnostics the tool lists; the rest are counted.
pub const DIAGNOSTICS_MAX_ITEMS: usize = 100;
/// Largest Diagnostics result in chars (gate 9).
pub const DIAGNOSTICS_MAX_RESULT_CHARS: usize = 30_000;
/// Lines around an edit's changed span whose new diagnostics are listed.
pub const NEAR_LINES: usize = 3;
/// Most new diagnostics an Edit or Write result lists.
pub const EDIT_MAX_DIAGNOSTICS: usize = 10;

/// Model-facing description of the Diagnostics tool.
pub const DIAGNOSTICS_DESCRIPTION: &str = "Lists the problems the editor's language servers and linters report (errors, warnings, infos, hints), as file:line: severity [source] message.

- Give file_path for one file, or omit it for every file open in the editor.
- severity is the least severe kind to include: \"error\", \"warning\" (the default), \"info\" or \"hint\".
- Edit and Write already report the new errors and warnings near each change; use this tool to see the whole picture, e.g. before finishing a task or after changing many files.
- A language server reports only on files open in the editor; with no server running, run the project's own checker (compiler, linter, tests) with Bash instead.";

/// Heading of the new diagnostics an Edit or Write result lists.
pub const EDIT_NEW_DIAGNOSTICS: &str =
    "The language server reports new problems in and near this change; fix them before moving on:";
/// Count of new diagnostics of an edit that lie away from the change.
pub const EDIT_NEW_ELSEWHERE: &str =
    "{count} elsewhere in {path}; call Diagnostics with this file_path to see them.";
/// An edit whose servers had not answered when the wait ended.
pub const EDIT_DIAGNOSTICS_UNANSWERED: &str = "The language server had not reported on this change when lathe stopped waiting; call Diagnostics with this file_path to check it.";
/// The tool found nothing.
pub const DIAGNOSTICS_NONE: &str = "No diagnostics of severity {severity} or worse for {what}.";
/// The tool found nothing and no server runs.
pub const DIAGNOSTICS_NO_SERVER: &str = "No diagnostics for {what}: no language server is running in the editor. Run the project's own checker (compiler, linter, tests) with Bash instead.";
/// The editor has no diagnostics at all (lathe outside Neovim).
pub const DIAGNOSTICS_UNAVAILABLE: &str = "This editor has no diagnostics (lathe is not running inside Neovim). Run the project's own checker (compiler, linter, tests) with Bash instead.";
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
    pub severity: Option<SeverityFilter>,
}

/// The Diagnostics tool: read-only, concurrency-safe.
pub struct DiagnosticsTool;

#[async_trait]
impl TypedTool for DiagnosticsTool {
    type Input = DiagnosticsInput;
    type Plan = ();
    const NAME: &'static str = "Diagnostics";
    const ALIASES: &'static [&'static str] = &["diagnostics", "get_diagnostics"];
    const MAX_RESULT_CHARS: Option<usize> = Some(DIAGNOSTICS_MAX_RESULT_CHARS);

    fn description(&self) -> String {
        DIAGNOSTICS_DESCRIPTION.to_string()
    }

    fn is_read_only(&self, _input: &DiagnosticsInput) -> bool {
        true
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
            let text = if list.servers == 0 && list.items.is_empty() {
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

/// `{line}: {severity} [{source}] {message}` (no `[source]` when the server
/// names none); the message's own line breaks become spaces.
pub fn one_line(d: &Diagnostic) -> String {
    let message = d.message.split_whitespace().collect::<Vec<_>>().join(" ");
    match &d.source {
        Some(s) if !s.is_empty() => format!("{}: {} [{s}] {message}", d.line, d.severity.as_str()),
        _ => format!("{}: {} {message}", d.line, d.severity.as_str()),
    }
}

/// The errors and warnings of `settled.after` that were not in
/// `settled.before`, split into those in or within [`NEAR_LINES`] of the
/// changed lines (sorted by line) and a count of the rest.
///
/// A diagnostic is old when one of `before` has the same severity, source
/// and message and sat on the same line once the change is accounted for
/// (lines above the change keep their number, lines below move by the
/// change's line delta), or sat inside the changed lines while the new one
/// does too. `before_text`/`after_text`: the document's logical text before
/// and after the change.
pub fn new_near_change(
    before_text: &str,
    after_text: &str,
    settled: &Settled,
) -> (Vec<Diagnostic>, usize) {
    let old = split_lines(before_text);
    let new = split_lines(after_text);
    let prefix = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let max_suffix = old.len().min(new.len()) - prefix;
    let suffix = old
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    // 1-based changed spans: old lines (prefix, old_end], new (prefix, new_end].
    let old_end = old.len() - suffix;
    let new_end = new.len() - suffix;
    let delta = new.len() as i64 - old.len() as i64;
    let in_new_span = |l: usize| l > prefix && l <= new_end.max(prefix + 1);
    let mapped = |l: usize| -> Option<usize> {
        if l <= prefix {
            Some(l)
        } else if l > old_end {
            usize::try_from(l as i64 + delta).ok()
        } else {
            None
        }
    };
    let key = |d: &Diagnostic| (d.severity, d.source.clone(), d.message.clone());
    let mut pool: HashMap<_, Vec<Option<usize>>> = HashMap::new();
    for d in settled
        .before
        .iter()
        .filter(|d| d.severity <= Severity::Warning)
    {
        pool.entry(key(d)).or_default().push(mapped(d.line));
    }
    let mut after: Vec<&Diagnostic> = settled
        .after
        .iter()
        .filter(|d| d.severity <= Severity::Warning)
        .collect();
    after.sort_by_key(|d| d.line);
    let lo = prefix.saturating_sub(NEAR_LINES);
    let hi = new_end.max(prefix + 1) + NEAR_LINES;
    let (mut near, mut elsewhere) = (Vec::new(), 0);
    for d in after {
        let slots = pool.entry(key(d)).or_default();
        let same = slots.iter().position(|m| *m == Some(d.line)).or_else(|| {
            in_new_span(d.line)
                .then(|| slots.iter().position(Option::is_none))
                .flatten()
        });
        if let Some(i) = same {
            slots.swap_remove(i);
        } else if d.line > lo && d.line <= hi {
            near.push(d.clone());
        } else {
            elsewhere += 1;
        }
    }
    (near, elsewhere)
}

/// What an Edit or Write of `path` appends to its result once its language
/// servers answered: [`EDIT_NEW_DIAGNOSTICS`] with the new errors and
/// warnings near the change (at most [`EDIT_MAX_DIAGNOSTICS`]) and
/// [`EDIT_NEW_ELSEWHERE`] for the others, or [`EDIT_DIAGNOSTICS_UNANSWERED`]
/// when no server answered; `None` when there is nothing new to say.
pub fn edit_report(
    before_text: &str,
    after_text: &str,
    settled: &Settled,
    shown_path: &str,
) -> Option<String> {
    let (near, elsewhere) = new_near_change(before_text, after_text, settled);
    if near.is_empty() && elsewhere == 0 {
        return settled
            .unanswered
            .then(|| EDIT_DIAGNOSTICS_UNANSWERED.to_string());
    }
    let mut out = vec![EDIT_NEW_DIAGNOSTICS.to_string()];
    let hidden = near.len().saturating_sub(EDIT_MAX_DIAGNOSTICS) + elsewhere;
    out.extend(
        near.iter()
            .take(EDIT_MAX_DIAGNOSTICS)
            .map(|d| format!("{}:{}", shown_path, one_line(d))),
    );
    if hidden > 0 {
        out.push(fill(
            EDIT_NEW_ELSEWHERE,
            &[
                ("count", &plural(hidden, "more", "more")),
                ("path", shown_path),
            ],
        ));
    }
    Some(out.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::editor::{
        DiagnosticList, Document, Editor, EditorError, WriteOutcome, WriteRequest,
    };
    use crate::tools::file_common::testing::{disk_ctx, run};
    use crate::tools::{schema_for, Tool};
    use std::sync::Arc;

    fn diag(line: usize, sev: Severity, msg: &str) -> Diagnostic {
        Diagnostic {
            path: PathBuf::from("/p/m.py"),
            line,
            severity: sev,
            source: Some("pyflakes".into()),
            message: msg.into(),
        }
    }

    #[test]
    fn golden_constants() {
        assert_eq!(
            EDIT_NEW_DIAGNOSTICS,
            "The language server reports new problems in and near this change; fix them before moving on:"
        );
        assert_eq!(
            EDIT_NEW_ELSEWHERE,
            "{count} elsewhere in {path}; call Diagnostics with this file_path to see them."
        );
        assert_eq!(EDIT_DIAGNOSTICS_UNANSWERED, "The language server had not reported on this change when lathe stopped waiting; call Diagnostics with this file_path to check it.");
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
        assert!(
            DIAGNOSTICS_DESCRIPTION.starts_with("Lists the problems the editor's language servers")
        );
        let schema = schema_for::<DiagnosticsInput>();
        assert_eq!(
            schema["properties"]["severity"]["description"],
            "The least severe kind to include: \"error\", \"warning\" (default), \"info\" or \"hint\""
        );
    }

    #[test]
    fn a_new_error_on_the_changed_line_is_reported_with_its_line() {
        let before = "import os\n\ndef f():\n    return os.getcwd()\n";
        let after = "import os\n\ndef f():\n    return oss.getcwd()\n";
        let settled = Settled {
            before: vec![],
            after: vec![
                diag(1, Severity::Error, "'os' imported but unused"),
                diag(4, Severity::Error, "undefined name 'oss'"),
            ],
            unanswered: false,
        };
        let report = edit_report(before, after, &settled, "m.py").expect("report");
        assert_eq!(
            report,
            format!("{EDIT_NEW_DIAGNOSTICS}\nm.py:1: error [pyflakes] 'os' imported but unused\nm.py:4: error [pyflakes] undefined name 'oss'")
        );
    }

    #[test]
    fn diagnostics_that_were_there_before_are_not_repeated_even_when_lines_move() {
        // An old problem at line 10 moves to line 12 (two lines inserted at 3).
        let before: String = (1..=12).map(|i| format!("l{i}\n")).collect();
        let mut lines: Vec<String> = (1..=12).map(|i| format!("l{i}")).collect();
        lines.insert(2, "new_a".into());
        lines.insert(3, "new_b".into());
        let after = lines.join("\n") + "\n";
        let settled = Settled {
            before: vec![diag(10, Severity::Warning, "old one")],
            after: vec![
                diag(12, Severity::Warning, "old one"),
                diag(4, Severity::Error, "new one"),
                diag(14, Severity::Error, "far away"),
            ],
            unanswered: false,
        };
        let (near, elsewhere) = new_near_change(&before, &after, &settled);
        assert_eq!(near, vec![diag(4, Severity::Error, "new one")]);
        assert_eq!(elsewhere, 1);
        let report = edit_report(&before, &after, &settled, "m.py").expect("report");
        assert!(
            report.ends_with(
                "1 more elsewhere in m.py; call Diagnostics with this file_path to see them."
            ),
            "{report}"
        );
    }

    #[test]
    fn a_fix_reports_nothing_and_hints_are_left_out() {
        let before = "x = oss\n";
        let after = "x = os\n";
        let settled = Settled {
            before: vec![diag(1, Severity::Error, "undefined name 'oss'")],
            after: vec![diag(1, Severity::Hint, "a hint")],
            unanswered: false,
        };
        assert_eq!(edit_report(before, after, &settled, "m.py"), None);
        let unanswered = Settled {
            unanswered: true,
            ..settled
        };
        assert_eq!(
            edit_report(before, after, &unanswered, "m.py").as_deref(),
            Some(EDIT_DIAGNOSTICS_UNANSWERED)
        );
    }

    #[test]
    fn the_same_message_on_the_edited_line_stays_old() {
        let before = "a = undefined_x\n";
        let after = "a = undefined_x  # note\n";
        let settled = Settled {
            before: vec![diag(1, Severity::Error, "undefined name 'undefined_x'")],
            after: vec![diag(1, Severity::Error, "undefined name 'undefined_x'")],
            unanswered: false,
        };
        assert_eq!(edit_report(before, after, &settled, "m.py"), None);
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
