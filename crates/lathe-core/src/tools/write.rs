//! Write: create a file, or replace one the model has read (Claude Code's
//! Write contract). An existing file keeps its format (line endings, BOM,
//! encoding); a new one is UTF-8 with `\n`, parent directories created.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::editor::{EditorError, LineEnding};

use super::support::file_common::{
    check_read, current, editor_error, resolve_file_path, shown, Current, FileChange,
};
use super::{support::paths, ToolContext, ToolError, ToolOutput, TypedTool};
use crate::permissions::{PermissionPreview, Revision};
use crate::text::{fill, plural};

/// Model-facing description of Write.
pub const WRITE_DESCRIPTION: &str = "Writes a file to the local filesystem, replacing it if it already exists.

Usage:
- To overwrite an existing file you must use the Read tool on it first in this conversation; Write refuses otherwise, and also refuses if the file changed since your Read.
- Parent directories are created as needed.
- content is the whole new file, exactly: end it with a newline if the file should end with one.
- An existing file keeps its line endings (CRLF stays CRLF), encoding and byte-order mark; a new file is UTF-8 with \\n line endings.
- Writing to a symlink replaces the file it points to; the link stays a link.
- If the file is open in the user's Neovim, the new text goes into the buffer and the buffer is saved, unless it had unsaved changes of the user.
- Prefer Edit for changing part of an existing file: it sends only the change. Never create documentation files (*.md, README) unless the user asks for them.";

/// Overwrite without a prior Read.
pub const WRITE_NOT_READ: &str = "{path} already exists and has not been read in this conversation. Read it first, then write it, so that no content is lost unseen (to change part of a file, prefer Edit).";
/// Success creating a file.
pub const WRITE_CREATED: &str = "File created successfully at: {path} ({lines}).";
/// Success replacing a file.
pub const WRITE_UPDATED: &str = "The file {path} has been updated.";
/// The file already had exactly this content.
pub const WRITE_UNCHANGED: &str = "{path} already has exactly this content; nothing was written.";

/// Input of Write.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteInput {
    /// The absolute path to the file to write
    pub file_path: String,
    /// The content to write to the file
    pub content: String,
}

/// The Write tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct WriteTool;

/// A checked write: Write's plan, made once by `validate_input`, shown by
/// the permission float and applied by `call`. Its change's `before` is
/// `None` when the file does not exist; `after` is the new logical text
/// (`\r\n` folded to `\n` for a CRLF file).
#[derive(Debug, Clone)]
pub struct WritePlan {
    /// The planned change.
    pub change: FileChange,
}

/// Checks `input` against the file now (exists → was read and is not stale)
/// and computes the text to write. An empty buffer whose file was never
/// written (`:edit new.py`) is a new file: it needs no Read, and the text
/// goes into that buffer. No side effects.
pub async fn plan(input: &WriteInput, ctx: &ToolContext) -> Result<WritePlan, ToolError> {
    let path = PathBuf::from(&input.file_path);
    let p = shown(&ctx.root, &path);
    match current(ctx, &path).await {
        Err(EditorError::NotFound(_)) => Ok(WritePlan {
            change: FileChange::new(path, None, input.content.clone()),
        }),
        Ok(Current { doc, .. })
            if doc.is_buffer() && doc.text.is_empty() && !on_disk(&path).await =>
        {
            Ok(WritePlan {
                change: FileChange::new(path, None, input.content.clone()),
            })
        }
        Err(e) => Err(editor_error(&ctx.root, &path, &e)),
        Ok(current) => {
            check_read(&ctx.file_state.get(&path), &current.doc, &p, WRITE_NOT_READ)?;
            let new_text = match current.doc.format.line_ending {
                LineEnding::CrLf => input.content.replace("\r\n", "\n"),
                LineEnding::Lf => input.content.clone(),
            };
            Ok(WritePlan {
                change: FileChange::planned(path, current, new_text),
            })
        }
    }
}

/// `true` unless it is certain that nothing exists at `path`.
async fn on_disk(path: &Path) -> bool {
    tokio::fs::try_exists(path).await.unwrap_or(true)
}

#[async_trait]
impl TypedTool for WriteTool {
    type Input = WriteInput;
    type Plan = WritePlan;
    const NAME: &'static str = "Write";
    const KIND: crate::tools::ToolKind = crate::tools::ToolKind::Edit;
    const ALIASES: &'static [&'static str] = &["write_file", "write", "create_file"];

    fn description(&self) -> String {
        WRITE_DESCRIPTION.to_string()
    }

    fn normalize(&self, input: WriteInput, root: &Path) -> WriteInput {
        WriteInput {
            file_path: resolve_file_path(root, &input.file_path),
            ..input
        }
    }

    fn target_path(&self, input: &WriteInput) -> Option<PathBuf> {
        Some(PathBuf::from(&input.file_path))
    }

    async fn validate_input(
        &self,
        input: &WriteInput,
        ctx: &ToolContext,
    ) -> Result<WritePlan, ToolError> {
        plan(input, ctx).await
    }

    fn revise(&self, plan: &mut WritePlan, revision: &Revision) -> Result<(), ToolError> {
        plan.change.revise(revision);
        Ok(())
    }

    fn permission_preview(
        &self,
        _input: &WriteInput,
        plan: &WritePlan,
        root: &Path,
    ) -> PermissionPreview {
        plan.change.preview("Write", root)
    }

    /// Applies `plan` (the editor re-checks that the file did not move on
    /// since it was planned).
    async fn call(
        &self,
        _input: WriteInput,
        plan: WritePlan,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let change = plan.change;
        let p = shown(&ctx.root, &change.path);
        if change.is_noop() {
            return Ok(ToolOutput::text(
                fill(WRITE_UNCHANGED, &[("path", &p)]),
                "unchanged",
            ));
        }
        let lines = plural(
            super::support::numbered::split_lines(&change.after).len(),
            "line",
            "lines",
        );
        let created = change.before.is_none();
        let headline = if created {
            fill(WRITE_CREATED, &[("path", &p), ("lines", &lines)])
        } else {
            fill(WRITE_UPDATED, &[("path", &p)])
        };
        let diff = change.applied_diff(&ctx.root);
        let (text, _) = change.apply(ctx, headline).await?;
        let mut out = ToolOutput::text(
            text,
            if created {
                format!("created, {lines}")
            } else {
                lines
            },
        );
        out.display = Some(diff);
        Ok(out)
    }

    fn describe(&self, input: &WriteInput, root: &Path) -> String {
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

    #[test]
    fn golden_constants() {
        assert_eq!(WRITE_NOT_READ, "{path} already exists and has not been read in this conversation. Read it first, then write it, so that no content is lost unseen (to change part of a file, prefer Edit).");
        assert_eq!(
            WRITE_CREATED,
            "File created successfully at: {path} ({lines})."
        );
        assert_eq!(WRITE_UPDATED, "The file {path} has been updated.");
        assert_eq!(
            WRITE_UNCHANGED,
            "{path} already has exactly this content; nothing was written."
        );
        assert!(WRITE_DESCRIPTION.contains("you must use the Read tool on it first"));
        let s = schema_for::<WriteInput>();
        assert_eq!(
            s["properties"]["content"]["description"],
            "The content to write to the file"
        );
        assert_eq!(s["required"], serde_json::json!(["file_path", "content"]));
    }

    #[tokio::test]
    async fn create_then_overwrite_after_read_keeping_crlf() {
        let dir = tempfile::tempdir().expect("tempdir");
        let c = ctx(dir.path());
        let write = |content: &str| serde_json::json!({"file_path": "d/w.txt", "content": content});
        let out = run(Arc::new(WriteTool), &c, write("x"))
            .await
            .expect("create");
        assert_eq!(
            out.content.as_text(),
            "File created successfully at: d/w.txt (1 line)."
        );
        assert_eq!(
            std::fs::read(dir.path().join("d/w.txt")).expect("read"),
            b"x"
        );
        let f = dir.path().join("crlf.txt");
        std::fs::write(&f, "a\r\nb\r\n").expect("write");
        let input = serde_json::json!({"file_path": "crlf.txt", "content": "a\nB\nc\n"});
        assert_eq!(
            run(Arc::new(WriteTool), &c, input.clone()).await.expect_err("not read").message,
            "crlf.txt already exists and has not been read in this conversation. Read it first, then write it, so that no content is lost unseen (to change part of a file, prefer Edit)."
        );
        run(
            Arc::new(ReadTool),
            &c,
            serde_json::json!({"file_path": "crlf.txt"}),
        )
        .await
        .expect("read");
        let out = run(Arc::new(WriteTool), &c, input)
            .await
            .expect("overwrite");
        assert_eq!(
            out.content.as_text(),
            "The file crlf.txt has been updated. Here is the result of running `cat -n` on a snippet of the edited file:\n     1\ta\n     2\tB\n     3\tc"
        );
        assert_eq!(std::fs::read(&f).expect("read"), b"a\r\nB\r\nc\r\n");
        let again = run(
            Arc::new(WriteTool),
            &c,
            serde_json::json!({"file_path": "crlf.txt", "content": "a\nB\nc\n"}),
        )
        .await
        .expect("same");
        assert_eq!(
            again.content.as_text(),
            "crlf.txt already has exactly this content; nothing was written."
        );
    }

    #[tokio::test]
    async fn preview_of_new_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let c = ctx(dir.path());
        let tool: Arc<dyn Tool> = Arc::new(WriteTool);
        let call = tool
            .prepare(
                &serde_json::json!({"file_path": "n.txt", "content": "hi\n"}),
                &c.root,
            )
            .expect("prepare");
        let p = call.validate(&c).await.expect("valid").preview(&c.root);
        assert_eq!(p.title, "Write n.txt");
        assert_eq!(p.diff, "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+hi\n");
        assert!(!dir.path().join("n.txt").exists());
    }
}
