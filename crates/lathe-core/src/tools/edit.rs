//! Edit: exact string replacement in one file (Claude Code's Edit contract,
//! with lathe's stale rule and typographic-quote folding,
//! docs/edits.md, "The stale rule").
//!
//! [`plan`] does every check that can fail, against the document as it is
//! now, without side effects. `validate_input` runs it once; the permission
//! float shows the resulting [`EditPlan`] and `call` writes exactly its text
//! with the planned document's stamp as `base`, so the editor re-checks
//! staleness atomically.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::editor::{Document, EditorError, LineEnding};

use super::support::file_common::{
    check_read, current, editor_error, resolve_file_path, shown, FileChange,
};
use super::support::numbered::split_lines;
use super::support::text_match::{self, MatchError, Replacement};
use super::{support::paths, ToolContext, ToolError, ToolOutput, TypedTool};
use crate::permissions::{PermissionPreview, Revision};
use crate::text::{fill, plural};

/// Model-facing description of Edit.
pub const EDIT_DESCRIPTION: &str = "Performs exact string replacements in a file.

Usage:
- You must use the Read tool on the file in this conversation before editing it; Edit refuses otherwise. If the file changed since you read it (the user typed in the buffer, or another program wrote it), Edit refuses and you must Read it again.
- When you copy text from Read output, keep the exact indentation (tabs and spaces) as it appears after the line-number prefix (spaces, line number, TAB). Never include any part of the line-number prefix in old_string or new_string.
- The edit fails if old_string is not in the file, or if it occurs more than once: then either include more surrounding lines to make it unique, or set replace_all to change every occurrence (useful for renaming a variable, for example).
- old_string and new_string must differ.
- An empty old_string creates a new file with new_string as its content, or fills an existing empty file.
- The file's line endings, encoding and byte-order mark are kept: write \\n line breaks in old_string and new_string even when the file uses CRLF.
- If the file is open in the user's Neovim, the edit goes into the buffer as one undo step and the buffer is saved, unless it had unsaved changes of the user (then it stays modified).
- Prefer editing existing files to creating new ones.";

/// `old_string == new_string`.
pub const EDIT_NO_CHANGE: &str = "No changes to make: old_string and new_string are exactly the same. Give a new_string that differs, or skip this edit.";
/// The file was never read.
pub const EDIT_NOT_READ: &str = "{path} has not been read in this conversation. Read it first, then edit it: Edit needs to know the file's current text.";
/// The file does not exist and `old_string` is not empty.
pub const EDIT_FILE_NOT_FOUND: &str =
    "File does not exist: {path}. To create it, use Write, or Edit with an empty old_string.";
/// Empty `old_string` on a file with content.
pub const EDIT_EMPTY_OLD_STRING: &str = "old_string is empty, but {path} already has content; an empty old_string only creates a new file or fills an empty one. Copy the exact text you want to change from your Read of {path} into old_string (without the line-number prefixes), and put its replacement in new_string.";
/// `old_string` is not in the file.
pub const EDIT_NOT_FOUND: &str = "old_string was not found in {path}. It must match the file's current text exactly, including whitespace and indentation. Read the file again and copy the text to replace from it.";
/// Appended to [`EDIT_NOT_FOUND`] when `old_string` carries Read's line-number prefixes.
pub const EDIT_LINE_NUMBER_HINT: &str = " old_string seems to include the line-number prefixes of Read's output (spaces, a number, a TAB); leave them out and copy only the text after the TAB.";
/// `old_string` occurs more than once.
pub const EDIT_AMBIGUOUS: &str = "old_string matches {count} times in {path} (at {lines}), but replace_all is false. To change every occurrence, set replace_all to true; to change one, add surrounding lines to old_string so that it matches exactly once.";
/// Success with one replacement.
pub const EDIT_APPLIED: &str = "The file {path} has been updated.";
/// Success with `replace_all`.
pub const EDIT_APPLIED_ALL: &str =
    "The file {path} has been updated: all {count} occurrences of old_string were replaced.";
/// Success creating a file (empty `old_string`).
pub const EDIT_CREATED: &str = "Created {path} with new_string as its content ({lines}).";
/// Note when the match needed quote folding.
pub const EDIT_QUOTES_FOLDED: &str = "Note: old_string matched only after treating typographic quotes (‘ ’ “ ”) as straight quotes; new_string was written in the file's quote style.";

/// Input of Edit.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditInput {
    /// The absolute path to the file to modify
    pub file_path: String,
    /// The text to replace
    pub old_string: String,
    /// The text to replace it with (must be different from old_string)
    pub new_string: String,
    /// Replace all occurrences of old_string (default false)
    #[serde(default)]
    pub replace_all: bool,
}

/// The Edit tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct EditTool;

/// A checked edit: Edit's plan, made once by `validate_input`, shown by the
/// permission float and applied by `call`.
#[derive(Debug, Clone)]
pub struct EditPlan {
    /// The document it was planned against, its stamp and the whole new
    /// text (`before` is `None` when the file is created).
    pub change: FileChange,
    /// The matched spans of the old text (byte ranges) and what replaces
    /// each; empty when an empty `old_string` creates or fills the file.
    pub replacements: Vec<Replacement>,
    /// `true` when the match needed quote folding.
    pub quotes_folded: bool,
}

impl EditPlan {
    /// How many spans are replaced (1 for creating or filling a file).
    pub fn count(&self) -> usize {
        self.replacements.len().max(1)
    }
}

/// `1 line` style list of 1-based line numbers: `line 3`, `lines 2, 5`;
/// more than 20 end with `, …`.
fn line_list(lines: &[usize]) -> String {
    let mut parts: Vec<String> = lines.iter().take(20).map(ToString::to_string).collect();
    if lines.len() > 20 {
        parts.push("…".into());
    }
    format!(
        "{} {}",
        if lines.len() == 1 { "line" } else { "lines" },
        parts.join(", ")
    )
}

/// `true` when every line of `s` starts like a `cat -n` prefix (optional
/// spaces, digits, TAB): the model copied Read's numbering.
fn has_line_number_prefixes(s: &str) -> bool {
    s.lines().all(|l| {
        let t = l.trim_start_matches(' ');
        let digits = t.chars().take_while(char::is_ascii_digit).count();
        digits > 0 && t[digits..].starts_with('\t')
    })
}

/// Checks the edit `input` against the document at its path now and computes
/// the new text. No side effects. Errors are the model-facing messages above
/// (or [`FILE_STALE`](super::support::file_common::FILE_STALE) / the editor's error messages).
pub async fn plan(input: &EditInput, ctx: &ToolContext) -> Result<EditPlan, ToolError> {
    let path = PathBuf::from(&input.file_path);
    let p = shown(&ctx.root, &path);
    // The gates' order puts first the error that says what to do next: a
    // missing file, then a file not read (Read it), then a wrong
    // old_string, and only then a call that would change nothing.
    let whole_file = |before: Option<Document>| EditPlan {
        change: FileChange::new(path.clone(), before, input.new_string.clone()),
        replacements: Vec::new(),
        quotes_folded: false,
    };
    let current = match current(ctx, &path).await {
        Ok(c) => c,
        Err(EditorError::NotFound(_)) if input.old_string.is_empty() => {
            if input.new_string.is_empty() {
                return Err(ToolError::new(EDIT_NO_CHANGE));
            }
            return Ok(whole_file(None));
        }
        Err(EditorError::NotFound(_)) => {
            return Err(ToolError::new(fill(EDIT_FILE_NOT_FOUND, &[("path", &p)])))
        }
        Err(e) => return Err(editor_error(&ctx.root, &path, &e)),
    };
    let doc = &current.doc;
    if input.old_string.is_empty() && doc.text.is_empty() {
        if input.new_string.is_empty() {
            return Err(ToolError::new(EDIT_NO_CHANGE));
        }
        // Filling an empty file loses nothing, so it needs no prior Read.
        return Ok(whole_file(Some(current.doc)));
    }
    check_read(&ctx.file_state.get(&path), doc, &p, EDIT_NOT_READ)?;
    if input.old_string.is_empty() {
        return Err(ToolError::new(fill(EDIT_EMPTY_OLD_STRING, &[("path", &p)])));
    }
    if input.old_string == input.new_string {
        return Err(ToolError::new(EDIT_NO_CHANGE));
    }
    // The model sees CRLF files with \n; accept \r\n it may have copied anyway.
    let (old, new) = match doc.format.line_ending {
        LineEnding::CrLf => (
            input.old_string.replace("\r\n", "\n"),
            input.new_string.replace("\r\n", "\n"),
        ),
        LineEnding::Lf => (input.old_string.clone(), input.new_string.clone()),
    };
    let planned =
        text_match::plan(&doc.text, &old, &new, input.replace_all).map_err(|e| match e {
            MatchError::NotFound => {
                let mut msg = fill(EDIT_NOT_FOUND, &[("path", &p)]);
                if has_line_number_prefixes(&old) {
                    msg.push_str(EDIT_LINE_NUMBER_HINT);
                }
                ToolError::new(msg)
            }
            MatchError::Ambiguous { count, lines } => ToolError::new(fill(
                EDIT_AMBIGUOUS,
                &[
                    ("count", &count.to_string()),
                    ("path", &p),
                    ("lines", &line_list(&lines)),
                ],
            )),
        })?;
    let new_text = text_match::apply(&doc.text, &planned);
    if new_text == doc.text {
        return Err(ToolError::new(EDIT_NO_CHANGE));
    }
    Ok(EditPlan {
        change: FileChange::planned(path, current, new_text),
        replacements: planned.replacements,
        quotes_folded: planned.quotes_folded,
    })
}

#[async_trait]
impl TypedTool for EditTool {
    type Input = EditInput;
    type Plan = EditPlan;
    const NAME: &'static str = "Edit";
    const KIND: crate::tools::ToolKind = crate::tools::ToolKind::Edit;
    const ALIASES: &'static [&'static str] = &["edit_file", "edit", "str_replace"];

    fn description(&self) -> String {
        EDIT_DESCRIPTION.to_string()
    }

    fn normalize(&self, input: EditInput, root: &Path) -> EditInput {
        EditInput {
            file_path: resolve_file_path(root, &input.file_path),
            ..input
        }
    }

    fn target_path(&self, input: &EditInput) -> Option<PathBuf> {
        Some(PathBuf::from(&input.file_path))
    }

    async fn validate_input(
        &self,
        input: &EditInput,
        ctx: &ToolContext,
    ) -> Result<EditPlan, ToolError> {
        plan(input, ctx).await
    }

    fn revise(&self, plan: &mut EditPlan, revision: &Revision) -> Result<(), ToolError> {
        plan.change.revise(revision);
        Ok(())
    }

    fn permission_preview(
        &self,
        _input: &EditInput,
        plan: &EditPlan,
        root: &Path,
    ) -> PermissionPreview {
        plan.change.preview("Edit", root)
    }

    /// Applies `plan` (the editor re-checks that the document did not move
    /// on since it was planned). No new read, no new match.
    async fn call(
        &self,
        input: EditInput,
        plan: EditPlan,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let p = shown(&ctx.root, &plan.change.path);
        let count = plan.count();
        let created = plan.change.before.is_none();
        let headline = match (created, input.replace_all) {
            (true, _) => fill(
                EDIT_CREATED,
                &[
                    ("path", &p),
                    (
                        "lines",
                        &plural(split_lines(&plan.change.after).len(), "line", "lines"),
                    ),
                ],
            ),
            (false, true) => fill(
                EDIT_APPLIED_ALL,
                &[("path", &p), ("count", &count.to_string())],
            ),
            (false, false) => fill(EDIT_APPLIED, &[("path", &p)]),
        };
        let diff = plan.change.applied_diff(&ctx.root);
        let (mut text, _) = plan.change.apply(ctx, headline).await?;
        if plan.quotes_folded {
            text.push_str("\n\n");
            text.push_str(EDIT_QUOTES_FOLDED);
        }
        let summary = if created {
            "created".to_string()
        } else {
            plural(count, "replacement", "replacements")
        };
        let mut out = ToolOutput::text(text, summary);
        out.display = Some(diff);
        Ok(out)
    }

    fn describe(&self, input: &EditInput, root: &Path) -> String {
        paths::display(root, Path::new(&input.file_path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::read::ReadTool;
    use crate::tools::support::file_common::testing::{disk_ctx as ctx, run};
    use crate::tools::{schema_for, Tool};
    use std::sync::Arc;

    async fn read(ctx: &ToolContext, file: &str) {
        run(
            Arc::new(ReadTool),
            ctx,
            serde_json::json!({ "file_path": file }),
        )
        .await
        .expect("read");
    }

    async fn edit(ctx: &ToolContext, input: serde_json::Value) -> Result<ToolOutput, ToolError> {
        run(Arc::new(EditTool), ctx, input).await
    }

    #[test]
    fn golden_constants() {
        assert_eq!(EDIT_NO_CHANGE, "No changes to make: old_string and new_string are exactly the same. Give a new_string that differs, or skip this edit.");
        assert_eq!(EDIT_NOT_READ, "{path} has not been read in this conversation. Read it first, then edit it: Edit needs to know the file's current text.");
        assert_eq!(EDIT_FILE_NOT_FOUND, "File does not exist: {path}. To create it, use Write, or Edit with an empty old_string.");
        assert_eq!(EDIT_EMPTY_OLD_STRING, "old_string is empty, but {path} already has content; an empty old_string only creates a new file or fills an empty one. Copy the exact text you want to change from your Read of {path} into old_string (without the line-number prefixes), and put its replacement in new_string.");
        assert_eq!(EDIT_NOT_FOUND, "old_string was not found in {path}. It must match the file's current text exactly, including whitespace and indentation. Read the file again and copy the text to replace from it.");
        assert_eq!(EDIT_LINE_NUMBER_HINT, " old_string seems to include the line-number prefixes of Read's output (spaces, a number, a TAB); leave them out and copy only the text after the TAB.");
        assert_eq!(EDIT_AMBIGUOUS, "old_string matches {count} times in {path} (at {lines}), but replace_all is false. To change every occurrence, set replace_all to true; to change one, add surrounding lines to old_string so that it matches exactly once.");
        assert_eq!(EDIT_APPLIED, "The file {path} has been updated.");
        assert_eq!(EDIT_APPLIED_ALL, "The file {path} has been updated: all {count} occurrences of old_string were replaced.");
        assert_eq!(
            EDIT_CREATED,
            "Created {path} with new_string as its content ({lines})."
        );
        assert_eq!(EDIT_QUOTES_FOLDED, "Note: old_string matched only after treating typographic quotes (‘ ’ “ ”) as straight quotes; new_string was written in the file's quote style.");
        assert!(EDIT_DESCRIPTION.contains("You must use the Read tool"));
    }

    #[test]
    fn schema_fields_and_default() {
        let s = schema_for::<EditInput>();
        assert_eq!(
            s["properties"]["old_string"]["description"],
            "The text to replace"
        );
        assert_eq!(s["properties"]["replace_all"]["type"], "boolean");
        assert_eq!(s["properties"]["replace_all"]["default"], false);
        assert_eq!(
            s["required"],
            serde_json::json!(["file_path", "old_string", "new_string"])
        );
        assert!(s["properties"].get("root").is_none());
    }

    #[tokio::test]
    async fn full_result_text_and_file_state_update() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("g.py"), "def greet():\n    print('Helo')\n")
            .expect("write");
        let c = ctx(dir.path());
        read(&c, "g.py").await;
        let out = edit(
            &c,
            serde_json::json!({"file_path": "g.py", "old_string": "Helo", "new_string": "Hello"}),
        )
        .await
        .expect("edit");
        assert_eq!(
            out.content.as_text(),
            "The file g.py has been updated. Here is the result of running `cat -n` on a snippet of the edited file:\n     1\tdef greet():\n     2\t    print('Hello')"
        );
        assert_eq!(out.summary, "1 replacement");
        // A second edit needs no new Read.
        edit(
            &c,
            serde_json::json!({"file_path": "g.py", "old_string": "Hello", "new_string": "Hi"}),
        )
        .await
        .expect("second edit");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("g.py")).expect("read"),
            "def greet():\n    print('Hi')\n"
        );
    }

    #[tokio::test]
    async fn refuses_without_read_and_when_stale() {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = dir.path().join("a.txt");
        std::fs::write(&f, "alpha\n").expect("write");
        let c = ctx(dir.path());
        let input =
            serde_json::json!({"file_path": "a.txt", "old_string": "alpha", "new_string": "beta"});
        assert_eq!(
            edit(&c, input.clone()).await.expect_err("not read").message,
            "a.txt has not been read in this conversation. Read it first, then edit it: Edit needs to know the file's current text."
        );
        read(&c, "a.txt").await;
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&f, "alpha changed by user\n").expect("write");
        assert_eq!(
            edit(&c, input.clone()).await.expect_err("stale").message,
            "a.txt has been modified since you last read it (by the user or another program), so nothing was changed. Read it again, then retry with its current text."
        );
        assert_eq!(
            std::fs::read_to_string(&f).expect("read"),
            "alpha changed by user\n"
        );
        read(&c, "a.txt").await;
        edit(&c, input).await.expect("after re-read");
        assert_eq!(
            std::fs::read_to_string(&f).expect("read"),
            "beta changed by user\n"
        );
    }

    /// A model that never read the file is sent to Read first,
    /// whatever else is wrong with the call; an empty old_string on a file
    /// with content is told how to quote the text, never to overwrite it.
    #[tokio::test]
    async fn not_read_comes_before_no_change_and_empty_old_string() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a.txt"), "alpha\n").expect("write");
        let c = ctx(dir.path());
        let not_read = "a.txt has not been read in this conversation. Read it first, then edit it: Edit needs to know the file's current text.";
        let same =
            serde_json::json!({"file_path": "a.txt", "old_string": "alpha", "new_string": "alpha"});
        assert_eq!(
            edit(&c, same.clone()).await.expect_err("same").message,
            not_read
        );
        let empty = serde_json::json!({"file_path": "a.txt", "old_string": "", "new_string": "x"});
        assert_eq!(
            edit(&c, empty.clone()).await.expect_err("empty").message,
            not_read
        );
        read(&c, "a.txt").await;
        assert_eq!(
            edit(&c, same).await.expect_err("same").message,
            EDIT_NO_CHANGE
        );
        let message = edit(&c, empty).await.expect_err("empty").message;
        assert_eq!(message, "old_string is empty, but a.txt already has content; an empty old_string only creates a new file or fills an empty one. Copy the exact text you want to change from your Read of a.txt into old_string (without the line-number prefixes), and put its replacement in new_string.");
        assert!(!message.contains("Write"), "{message}");
    }

    #[tokio::test]
    async fn validate_has_no_side_effects_and_preview_shows_diff() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a.txt"), "x = 1\n").expect("write");
        let c = ctx(dir.path());
        read(&c, "a.txt").await;
        let tool: Arc<dyn Tool> = Arc::new(EditTool);
        let call = tool
            .prepare(
                &serde_json::json!({"file_path": "a.txt", "old_string": "1", "new_string": "2"}),
                &c.root,
            )
            .expect("prepare");
        assert_eq!(call.describe(&c.root), "a.txt");
        assert!(!call.is_read_only() && !call.is_concurrency_safe());
        let planned = call.validate(&c).await.expect("valid");
        let preview = planned.preview(&c.root);
        assert_eq!(preview.title, "Edit a.txt");
        assert_eq!(
            preview.diff,
            "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
        );
        assert_eq!(preview.path, Some(dir.path().join("a.txt")));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.txt")).expect("read"),
            "x = 1\n"
        );
    }

    #[tokio::test]
    async fn empty_old_string_creates_or_fills_and_line_number_hint() {
        let dir = tempfile::tempdir().expect("tempdir");
        let c = ctx(dir.path());
        let out = edit(
            &c,
            serde_json::json!({"file_path": "new/n.txt", "old_string": "", "new_string": "hi\n"}),
        )
        .await
        .expect("create");
        assert_eq!(
            out.content.as_text(),
            "Created new/n.txt with new_string as its content (1 line)."
        );
        std::fs::write(dir.path().join("empty.txt"), "").expect("write");
        edit(
            &c,
            serde_json::json!({"file_path": "empty.txt", "old_string": "", "new_string": "filled"}),
        )
        .await
        .expect("fill empty");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("empty.txt")).expect("read"),
            "filled"
        );
        read(&c, "new/n.txt").await;
        let err = edit(&c, serde_json::json!({"file_path": "new/n.txt", "old_string": "     1\thi", "new_string": "x"}))
            .await
            .expect_err("prefix");
        assert!(
            err.message.ends_with(EDIT_LINE_NUMBER_HINT),
            "{}",
            err.message
        );
    }

    #[test]
    fn line_lists() {
        assert_eq!(line_list(&[3]), "line 3");
        assert_eq!(line_list(&[2, 5]), "lines 2, 5");
        assert!(line_list(&(1..=30).collect::<Vec<_>>()).ends_with("20, …"));
    }
}
