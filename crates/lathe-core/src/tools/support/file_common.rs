//! What Read, Edit and Write share: the normalised `file_path`, the planned
//! [`FileChange`] (preview and apply), model-facing messages for
//! [`EditorError`]s, the read-before-change check against
//! [`FileState`](crate::tools::FileState), and the `cat -n` snippet shown after a
//! change.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::editor::{Document, EditorError, Fresh, Stamp, TextFormat, TextHash, WriteRequest};

use super::diff::{bounded_diff, unified_diff};
use super::file_state::ReadRecord;
use super::numbered::{line_count, line_start, number_lines};
use super::paths;
use crate::permissions::{PermissionPreview, Revision};
use crate::text::fill;
use crate::tools::{ToolContext, ToolError};

/// The file changed since the model read it (Claude Code's stale-read rule).
pub const FILE_STALE: &str = "{path} has been modified since you last read it (by the user or another program), so nothing was changed. Read it again, then retry with its current text.";
/// The file does not exist.
pub const FILE_NOT_FOUND: &str = "File does not exist: {path}. Check the path; relative paths resolve against the project root {root}. Glob can find files by name.";
/// The path is a directory.
pub const FILE_IS_DIRECTORY: &str = "{path} is a directory, not a file. Use Glob to list the files in it, then use one of those paths.";
/// The file holds bytes that are not text.
pub const FILE_NOT_TEXT: &str =
    "{path} is not a text file ({kind}, {size} bytes); this tool only works on text files.";
/// The new text has characters the file's encoding cannot store.
pub const FILE_UNENCODABLE: &str = "The new text cannot be saved in {path}, whose encoding is {encoding}: {detail} has no {encoding} form. Nothing was written. Use only characters that exist in {encoding} (for example an ASCII spelling or an escape sequence).";
/// A file appeared where a new one was to be created.
pub const FILE_ALREADY_EXISTS: &str = "{path} was created by someone else while this call ran, so nothing was written. Read it, then edit it if it still needs your change.";
/// The buffer refuses changes.
pub const FILE_NOT_MODIFIABLE: &str = "The Neovim buffer of {path} cannot be modified ({detail}), so nothing was changed. Ask the user to make it modifiable.";
/// The path cannot be resolved (symlink loop, a file used as a directory, …).
pub const FILE_BAD_PATH: &str = "Cannot resolve the path {path}: {detail}. Check where the symlinks on that path point, or use the real file's path.";
/// Any other I/O failure.
pub const FILE_IO_ERROR: &str = "Could not access {path}: {detail}. Nothing was changed.";
/// The path is a FIFO, a device or a socket ([`EditorError::NotAFile`]).
pub const FILE_NOT_REGULAR: &str = "{path} is {kind}, not a regular file, so it was not opened: reading it could block or never end. Read, Edit and Write work on regular files only.";
/// The file is over [`crate::editor::MAX_FILE_BYTES`] ([`EditorError::TooLarge`]).
/// Read streams such a file instead (`tools::read::large`), so this is what
/// Edit and Write answer.
pub const FILE_TOO_LARGE: &str = "{path} is {size} bytes, more than the {max} bytes lathe loads whole, so it was not opened and nothing was changed. Edit and Write change only files up to that size: Read shows a larger file in parts, never enough to change it safely. Change only the lines you need with a Bash command instead.";
/// Neovim or the bridge to it is gone.
pub const EDITOR_UNAVAILABLE: &str =
    "The editor is not available ({detail}), so nothing was changed. Try the call again.";
/// After a change to a buffer that had unsaved user changes.
pub const BUFFER_LEFT_MODIFIED: &str = "Note: {path} is open in Neovim with unsaved changes by the user, so the change was made in the buffer and the buffer was left modified (not written to disk). The user decides when to save.";
/// Cat-n snippet after Edit/Write.
pub const SNIPPET_INTRO: &str =
    "Here is the result of running `cat -n` on a snippet of the edited file:";
/// When a snippet was cut because the changed span is long.
pub const SNIPPET_CUT: &str = "[… {count} more changed lines not shown; Read the file to see them]";

/// Lines of context around a change in a snippet.
const SNIPPET_CONTEXT: usize = 4;
/// Most lines a snippet shows.
const SNIPPET_MAX_LINES: usize = 40;
/// Byte budget of a snippet.
const SNIPPET_BUDGET: usize = 20_000;

/// `path` for messages: relative to `root` when inside it, else absolute.
pub fn shown(root: &Path, path: &Path) -> String {
    paths::display(root, path)
}

/// Gate 3 for the `file_path` of Read, Edit and Write: the path the model
/// gave, made absolute against `root` by [`paths::resolve`] (`~/` expanded,
/// `.`/`..` folded), as a string. Pure, no I/O.
pub(crate) fn resolve_file_path(root: &Path, file_path: &str) -> String {
    paths::resolve(root, file_path).display().to_string()
}

/// The permission prompt's view of a call by the tool `verb` on the absolute
/// `path` that changes nothing (Read): title `{verb} {path}` (path as
/// [`shown`]), the path as the target, no diff.
pub(crate) fn file_preview(verb: &str, root: &Path, path: &Path) -> PermissionPreview {
    PermissionPreview {
        title: format!("{verb} {}", shown(root, path)),
        path: Some(path.to_path_buf()),
        ..PermissionPreview::default()
    }
}

/// A planned change to one file: what Edit's and Write's `validate_input`
/// make once, the permission float shows ([`FileChange::preview`]) and
/// `call` applies (`FileChange::apply`) — one value, so the diff the user
/// approves is exactly the change made.
#[derive(Debug, Clone)]
pub struct FileChange {
    /// Absolute path (as normalised).
    pub path: PathBuf,
    /// The document the change was planned against; `None` creates the file.
    pub before: Option<Document>,
    /// The stamp of `before` when it was planned: the write's base, which the
    /// editor re-checks atomically (the stale rule) before changing anything.
    pub base: Option<Stamp>,
    /// The whole new logical text.
    pub after: String,
    /// `before`'s text as `FileState`'s text cache shares it, when the plan
    /// took it from there: the write's `base_text` is then that `Arc`, not
    /// a new copy.
    base_shared: Option<Arc<str>>,
}

impl FileChange {
    /// A change from `before` (`None`: a new file at `path`) to `after`.
    pub fn new(path: PathBuf, before: Option<Document>, after: String) -> Self {
        let base = before.as_ref().map(Document::stamp);
        Self {
            path,
            before,
            base,
            after,
            base_shared: None,
        }
    }

    /// [`new`](Self::new) for a document whose stamp is already known
    /// ([`Current::stamp`]), so its text is not hashed again.
    pub(crate) fn planned(path: PathBuf, current: Current, after: String) -> Self {
        let base = current.stamp.unwrap_or_else(|| current.doc.stamp());
        Self {
            path,
            before: Some(current.doc),
            base: Some(base),
            after,
            base_shared: current.shared,
        }
    }

    /// `true` when applying it would leave the text as it is.
    pub fn is_noop(&self) -> bool {
        self.before.as_ref().is_some_and(|d| d.text == self.after)
    }

    /// The float's view, rendered from this value only: title
    /// `{verb} {path}`, the path, the unified diff from `before` (or
    /// `/dev/null`) to `after`, both whole texts (for hunk toggling and the
    /// diff tab) and the base stamp (for the stale-while-open check).
    pub fn preview(&self, verb: &str, root: &Path) -> PermissionPreview {
        let name = shown(root, &self.path);
        let before = self.before.as_ref().map(|d| d.text.clone());
        PermissionPreview {
            title: format!("{verb} {name}"),
            path: Some(self.path.clone()),
            diff: unified_diff(before.as_deref(), &self.after, &name),
            change: Some((before, self.after.clone())),
            watch: self.base.clone(),
            ..PermissionPreview::default()
        }
    }

    /// The diff of what applying it writes, bounded for the chat
    /// ([`bounded_diff`]): `before` (or `/dev/null`) to `after`, the user's
    /// revision included (hunks left out in the float are not in it).
    pub fn applied_diff(&self, root: &Path) -> String {
        let before = self.before.as_ref().map(|d| d.text.as_str());
        bounded_diff(before, &self.after, &shown(root, &self.path))
    }

    /// Takes the user's revision of the change: `revision.after` is written
    /// instead of the planned text (same base, so the stale check still
    /// guards the document).
    pub fn revise(&mut self, revision: &Revision) {
        self.after = revision.after.clone();
    }

    /// Writes `after` through the editor with `base` (the editor refuses a
    /// document that moved on since the plan, [`EditorError::Stale`]),
    /// records the result in `FileState` (a second edit needs no new Read),
    /// and returns `headline` plus the `cat -n` snippet of the changed lines
    /// and the note for a buffer left modified, then — for a buffer with
    /// language-server clients — the new errors and warnings near the change
    /// once the servers answered (bounded wait, `diagnostics_wait_ms`), with
    /// the new text's line count. Shared by Edit and Write.
    pub(crate) async fn apply(
        self,
        ctx: &ToolContext,
        headline: String,
    ) -> Result<(String, usize), ToolError> {
        let path = self.path;
        let is_buffer = self.before.as_ref().is_some_and(Document::is_buffer);
        let base_text = match (self.base_shared, &self.before) {
            (Some(shared), _) if is_buffer => Some(shared),
            (_, Some(d)) if is_buffer => Some(Arc::from(d.text.as_str())),
            _ => None,
        };
        // The one copy of the new text: the editor, the stamp's hash, the
        // file write and FileState's cache share it.
        let new_text: Arc<str> = Arc::from(self.after);
        let req = WriteRequest {
            base: self.base,
            base_text,
            text: new_text.clone(),
            format: TextFormat::default(),
        };
        let (outcome, watch) = ctx
            .editor
            .write_watched(&path, req)
            .await
            .map_err(|e| editor_error(&ctx.root, &path, &e))?;
        ctx.file_state.record(
            &path,
            ReadRecord {
                stamp: outcome.stamp.clone(),
                offset: None,
                limit: None,
            },
        );
        if outcome.in_buffer && outcome.exact {
            ctx.file_state
                .remember_text(&path, &outcome.stamp, new_text.clone());
        }
        let mut out = headline;
        if let (Some(span), Some(_)) = (outcome.changed_lines, &self.before) {
            let snip = snippet(&new_text, span);
            if !snip.is_empty() {
                out = format!("{out} {SNIPPET_INTRO}\n{snip}");
            }
        }
        if outcome.in_buffer && !outcome.saved {
            out.push_str("\n\n");
            out.push_str(&fill(
                BUFFER_LEFT_MODIFIED,
                &[("path", &shown(&ctx.root, &path))],
            ));
        }
        // A buffer with language servers: their new errors and warnings near
        // the change (docs/lsp.md, "Diagnostics from language servers").
        if let Some(watch) = watch {
            let settled = watch.settle(&ctx.cancel).await;
            let before = self.before.as_ref().map_or("", |d| d.text.as_str());
            let shown_path = shown(&ctx.root, &path);
            if let Some(report) =
                super::new_diagnostics::edit_report(before, &new_text, &settled, &shown_path)
            {
                out.push_str("\n\n");
                out.push_str(&report);
            }
        }
        Ok((out, line_count(&new_text)))
    }
}

/// The model-facing message for an [`EditorError`] on `path`.
pub fn editor_error(root: &Path, path: &Path, err: &EditorError) -> ToolError {
    let p = shown(root, path);
    let msg = match err {
        EditorError::NotFound(_) => fill(
            FILE_NOT_FOUND,
            &[("path", &p), ("root", &root.display().to_string())],
        ),
        EditorError::IsDirectory(_) => fill(FILE_IS_DIRECTORY, &[("path", &p)]),
        EditorError::NotText { kind, size, .. } => fill(
            FILE_NOT_TEXT,
            &[("path", &p), ("kind", kind), ("size", &size.to_string())],
        ),
        EditorError::Unencodable { encoding, detail } => fill(
            FILE_UNENCODABLE,
            &[("path", &p), ("encoding", encoding), ("detail", detail)],
        ),
        EditorError::Stale(_) => fill(FILE_STALE, &[("path", &p)]),
        EditorError::AlreadyExists(_) => fill(FILE_ALREADY_EXISTS, &[("path", &p)]),
        EditorError::NotModifiable(detail) => {
            fill(FILE_NOT_MODIFIABLE, &[("path", &p), ("detail", detail)])
        }
        EditorError::BadPath { detail, .. } => {
            fill(FILE_BAD_PATH, &[("path", &p), ("detail", detail)])
        }
        EditorError::Io { detail, .. } => fill(FILE_IO_ERROR, &[("path", &p), ("detail", detail)]),
        EditorError::Unavailable(detail) => fill(EDITOR_UNAVAILABLE, &[("detail", detail)]),
        EditorError::NotAFile { kind, .. } => {
            fill(FILE_NOT_REGULAR, &[("path", &p), ("kind", kind)])
        }
        EditorError::TooLarge { size, max, .. } => fill(
            FILE_TOO_LARGE,
            &[
                ("path", &p),
                ("size", &size.to_string()),
                ("max", &max.to_string()),
            ],
        ),
    };
    ToolError::new(msg)
}

/// `cat -n` lines of `text` around the 1-based line span `changed`: four
/// lines of context each side, at most 40 lines, then [`SNIPPET_CUT`].
pub fn snippet(text: &str, changed: (usize, usize)) -> String {
    // O(span) but for counting newlines: only the shown lines are split.
    let total = line_count(text);
    if total == 0 {
        return String::new();
    }
    let first = changed.0.saturating_sub(SNIPPET_CONTEXT).max(1).min(total);
    let last = (changed.1 + SNIPPET_CONTEXT).min(total).max(first);
    let end = last.min(first + SNIPPET_MAX_LINES - 1);
    let from = line_start(text, first - 1);
    let lines: Vec<&str> = text[from..].split('\n').take(end - first + 1).collect();
    let numbered = number_lines(&lines, first, SNIPPET_BUDGET);
    let hidden = last - (first - 1 + numbered.shown);
    if hidden == 0 {
        numbered.text
    } else {
        format!(
            "{}\n{}",
            numbered.text,
            fill(SNIPPET_CUT, &[("count", &hidden.to_string())])
        )
    }
}

/// The document a change is planned against ([`current`]).
#[derive(Debug)]
pub(crate) struct Current {
    /// The document as it is now.
    pub doc: Document,
    /// Its stamp when already known (the text came from `FileState`'s text
    /// cache), so it need not be hashed again; `None`: compute it.
    pub stamp: Option<Stamp>,
    /// The cache's `Arc` of that text (then the same as `doc.text`).
    pub shared: Option<Arc<str>>,
}

/// The document at `path` as it is now, for Edit and Write to plan against.
/// When the model's last Read/Edit/Write of a buffer left its text in
/// `FileState` ([`FileState::remember_text`](crate::tools::FileState::remember_text))
/// and the buffer is still at that `changedtick`, the text comes from there:
/// Neovim's main thread only checks the tick ([`Editor::read_unless`](crate::editor::Editor::read_unless)),
/// it reads no line. Else the editor reads it. Errors: the editor's.
pub(crate) async fn current(ctx: &ToolContext, path: &Path) -> Result<Current, EditorError> {
    let cached = ctx.file_state.get(path).and_then(|r| {
        let text = ctx.file_state.text_at(path, &r.stamp)?;
        Some((r.stamp, text))
    });
    let Some((stamp, text)) = cached else {
        return Ok(Current {
            doc: ctx.editor.read(path).await?,
            stamp: None,
            shared: None,
        });
    };
    match ctx.editor.read_unless(path, &stamp.version).await? {
        Fresh::Unchanged { format, modified } => Ok(Current {
            doc: Document {
                path: path.to_path_buf(),
                text: text.to_string(),
                version: stamp.version.clone(),
                format,
                modified,
            },
            stamp: Some(stamp),
            shared: Some(text),
        }),
        Fresh::Changed(doc) => Ok(Current {
            doc,
            stamp: None,
            shared: None,
        }),
    }
}

/// The read-before-change rule shared by Edit and Write: a record must exist
/// (`not_read` names the tool's message) and the document must not have moved
/// on since (docs/edits.md, "The stale rule").
pub(crate) fn check_read(
    record: &Option<ReadRecord>,
    doc: &Document,
    shown_path: &str,
    not_read: &str,
) -> Result<(), ToolError> {
    match record {
        None => Err(ToolError::new(fill(not_read, &[("path", shown_path)]))),
        Some(r) if r.stamp.is_stale(&doc.version, || TextHash::of(&doc.text)) => {
            Err(ToolError::new(fill(FILE_STALE, &[("path", shown_path)])))
        }
        Some(_) => Ok(()),
    }
}

/// Test scaffolding for the file tools' unit tests.
#[cfg(test)]
pub(crate) mod testing {
    use std::path::Path;
    use std::sync::Arc;

    use serde_json::Value;
    use tokio_util::sync::CancellationToken;

    use crate::editor::DiskEditor;
    use crate::tools::{FileState, Tool, ToolContext, ToolError, ToolOutput};

    /// A context on the real disk at `root`: a [`DiskEditor`], nothing read
    /// yet, not cancelled, no progress listener.
    pub(crate) fn disk_ctx(root: &Path) -> ToolContext {
        ToolContext {
            root: root.to_path_buf(),
            editor: Arc::new(DiskEditor::new()),
            file_state: Arc::new(FileState::new()),
            cancel: CancellationToken::new(),
            progress: None,
            by_user: false,
        }
    }

    /// Runs `tool` on `input` through its own gates, as the pipeline does:
    /// prepare (parse + normalise), validate, call. The first error stops it.
    pub(crate) async fn run(
        tool: Arc<dyn Tool>,
        ctx: &ToolContext,
        input: Value,
    ) -> Result<ToolOutput, ToolError> {
        let call = tool.prepare(&input, &ctx.root)?;
        call.validate(ctx).await?.run(ctx).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A buffer editor in memory: one buffer at `path`, `changedtick` up by
    /// one per write; keeps every write request.
    struct OneBuffer {
        path: PathBuf,
        state: std::sync::Mutex<(String, u64, Vec<WriteRequest>)>,
    }

    #[async_trait::async_trait]
    impl crate::editor::Editor for OneBuffer {
        async fn read(&self, path: &Path) -> Result<Document, EditorError> {
            let s = self.state.lock().expect("lock");
            Ok(Document {
                path: path.to_path_buf(),
                text: s.0.clone(),
                version: crate::editor::Version::Buffer {
                    bufnr: 1,
                    changedtick: s.1,
                },
                format: TextFormat::default(),
                modified: false,
            })
        }
        async fn read_unless(
            &self,
            path: &Path,
            known: &crate::editor::Version,
        ) -> Result<Fresh, EditorError> {
            let tick = self.state.lock().expect("lock").1;
            match known {
                crate::editor::Version::Buffer { changedtick, .. } if *changedtick == tick => {
                    Ok(Fresh::Unchanged {
                        format: TextFormat::default(),
                        modified: false,
                    })
                }
                _ => Ok(Fresh::Changed(self.read(path).await?)),
            }
        }
        async fn write(
            &self,
            path: &Path,
            req: WriteRequest,
        ) -> Result<crate::editor::WriteOutcome, EditorError> {
            assert_eq!(path, self.path);
            let mut s = self.state.lock().expect("lock");
            s.0 = req.text.to_string();
            s.1 += 1;
            let stamp = Stamp {
                version: crate::editor::Version::Buffer {
                    bufnr: 1,
                    changedtick: s.1,
                },
                hash: TextHash::of(&req.text),
            };
            s.2.push(req);
            Ok(crate::editor::WriteOutcome {
                stamp,
                in_buffer: true,
                saved: true,
                changed_lines: Some((2, 2)),
                exact: true,
            })
        }
    }

    /// Two Edits of a buffer in a row (docs/edits.md, "Edits through
    /// buffers"): the second plans on the text the first left in
    /// `FileState`, and neither copies the whole text on its way to the
    /// editor — the write's `base_text` is the cache's own `Arc`, and the
    /// text the cache keeps afterwards is the very `Arc` the editor got.
    #[tokio::test]
    async fn an_edit_of_a_buffer_shares_its_texts_with_the_cache_and_the_editor() {
        use crate::tools::edit::EditTool;
        let path = PathBuf::from("/project/big.txt");
        let editor = Arc::new(OneBuffer {
            path: path.clone(),
            state: std::sync::Mutex::new(("one\ntwo\nthree\n".into(), 5, Vec::new())),
        });
        let mut ctx = testing::disk_ctx(Path::new("/project"));
        ctx.editor = editor.clone();
        let doc = crate::editor::Editor::read(editor.as_ref(), &path)
            .await
            .expect("read");
        let read_text: Arc<str> = Arc::from(doc.text.as_str());
        ctx.file_state.record(
            &path,
            ReadRecord {
                stamp: doc.stamp(),
                offset: None,
                limit: None,
            },
        );
        ctx.file_state
            .remember_text(&path, &doc.stamp(), read_text.clone());
        let edit = |old: &str, new: &str| serde_json::json!({"file_path": "/project/big.txt", "old_string": old, "new_string": new});
        testing::run(Arc::new(EditTool), &ctx, edit("two", "TWO"))
            .await
            .expect("first edit");
        testing::run(Arc::new(EditTool), &ctx, edit("three", "THREE"))
            .await
            .expect("second edit");
        let writes = editor.state.lock().expect("lock").2.clone();
        assert_eq!(writes.len(), 2);
        let shared =
            |a: &Option<Arc<str>>, b: &Arc<str>| a.as_ref().is_some_and(|a| Arc::ptr_eq(a, b));
        assert!(
            shared(&writes[0].base_text, &read_text),
            "first base is the Read's text"
        );
        assert!(
            shared(&writes[1].base_text, &writes[0].text),
            "second base is the first edit's text, not a copy"
        );
        let stamp = ctx.file_state.get(&path).expect("recorded").stamp;
        let kept = ctx.file_state.text_at(&path, &stamp).expect("kept");
        assert!(
            Arc::ptr_eq(&kept, &writes[1].text),
            "the cache keeps the editor's text"
        );
        assert_eq!(&*kept, "one\nTWO\nTHREE\n");
    }

    #[test]
    fn golden_messages() {
        let root = PathBuf::from("/p");
        let path = root.join("src/a.rs");
        let msg = |e: EditorError| editor_error(&root, &path, &e).message;
        assert_eq!(
            msg(EditorError::Stale(path.clone())),
            "src/a.rs has been modified since you last read it (by the user or another program), so nothing was changed. Read it again, then retry with its current text."
        );
        assert_eq!(
            msg(EditorError::NotFound(path.clone())),
            "File does not exist: src/a.rs. Check the path; relative paths resolve against the project root /p. Glob can find files by name."
        );
        assert_eq!(
            msg(EditorError::IsDirectory(path.clone())),
            "src/a.rs is a directory, not a file. Use Glob to list the files in it, then use one of those paths."
        );
        assert_eq!(
            msg(EditorError::NotText { path: path.clone(), kind: "PDF document".into(), size: 12 }),
            "src/a.rs is not a text file (PDF document, 12 bytes); this tool only works on text files."
        );
        assert_eq!(
            msg(EditorError::Unencodable { encoding: "Latin-1".into(), detail: "'→' (U+2192) on line 1".into() }),
            "The new text cannot be saved in src/a.rs, whose encoding is Latin-1: '→' (U+2192) on line 1 has no Latin-1 form. Nothing was written. Use only characters that exist in Latin-1 (for example an ASCII spelling or an escape sequence)."
        );
        assert_eq!(
            msg(EditorError::AlreadyExists(path.clone())),
            "src/a.rs was created by someone else while this call ran, so nothing was written. Read it, then edit it if it still needs your change."
        );
        assert_eq!(
            msg(EditorError::NotModifiable("'modifiable' is off".into())),
            "The Neovim buffer of src/a.rs cannot be modified ('modifiable' is off), so nothing was changed. Ask the user to make it modifiable."
        );
        assert_eq!(
            msg(EditorError::BadPath { path: path.clone(), detail: "loop".into() }),
            "Cannot resolve the path src/a.rs: loop. Check where the symlinks on that path point, or use the real file's path."
        );
        assert_eq!(
            msg(EditorError::Io {
                path: path.clone(),
                detail: "Permission denied (os error 13)".into()
            }),
            "Could not access src/a.rs: Permission denied (os error 13). Nothing was changed."
        );
        assert_eq!(
            msg(EditorError::Unavailable("closed".into())),
            "The editor is not available (closed), so nothing was changed. Try the call again."
        );
        assert_eq!(
            msg(EditorError::NotAFile { path: path.clone(), kind: "a FIFO (named pipe)".into() }),
            "src/a.rs is a FIFO (named pipe), not a regular file, so it was not opened: reading it could block or never end. Read, Edit and Write work on regular files only."
        );
        assert_eq!(
            msg(EditorError::TooLarge { path: path.clone(), size: 10_737_418_240, max: 67_108_864 }),
            "src/a.rs is 10737418240 bytes, more than the 67108864 bytes lathe loads whole, so it was not opened and nothing was changed. Edit and Write change only files up to that size: Read shows a larger file in parts, never enough to change it safely. Change only the lines you need with a Bash command instead."
        );
        assert_eq!(
            BUFFER_LEFT_MODIFIED,
            "Note: {path} is open in Neovim with unsaved changes by the user, so the change was made in the buffer and the buffer was left modified (not written to disk). The user decides when to save."
        );
        assert_eq!(
            SNIPPET_INTRO,
            "Here is the result of running `cat -n` on a snippet of the edited file:"
        );
        assert_eq!(
            SNIPPET_CUT,
            "[… {count} more changed lines not shown; Read the file to see them]"
        );
    }

    #[test]
    fn snippet_shows_context_around_change() {
        let text: String = (1..=20).map(|i| format!("l{i}\n")).collect();
        let s = snippet(&text, (10, 10));
        assert_eq!(s.lines().next(), Some("     6\tl6"));
        assert_eq!(s.lines().last(), Some("    14\tl14"));
        let cut = snippet(&"x\n".repeat(100), (1, 100));
        assert_eq!(cut.lines().count(), 41);
        assert!(cut.ends_with("[… 60 more changed lines not shown; Read the file to see them]"));
        assert_eq!(snippet("a\nb", (3, 3)), "     1\ta\n     2\tb");
        // Deep in a large text (past several of line_start's blocks).
        let big: String = (1..=10_000).map(|i| format!("line {i}\n")).collect();
        let s = snippet(&big, (9_000, 9_000));
        assert_eq!(s.lines().next(), Some("  8996\tline 8996"));
        assert_eq!(s.lines().last(), Some("  9004\tline 9004"));
        assert_eq!(
            snippet(&big, (10_000, 10_000)).lines().last(),
            Some(" 10000\tline 10000")
        );
    }

    #[test]
    fn line_start_and_line_count_agree_with_split_lines() {
        use crate::tools::support::numbered::{line_count, line_start, split_lines};
        for text in ["", "a", "a\n", "a\nb", "a\n\nb\n", &"xy\n".repeat(5000)] {
            let lines = split_lines(text);
            assert_eq!(line_count(text), lines.len(), "{text:?}");
            let mut at = 0;
            for (i, l) in lines.iter().enumerate() {
                assert_eq!(line_start(text, i), at, "line {i} of {text:?}");
                at += l.len() + 1;
            }
        }
        assert_eq!(line_start("a\nb", 5), 3);
    }
}
