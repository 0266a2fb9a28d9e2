//! Main-thread buffer work for [`NvimEditor`](super::NvimEditor): finding the
//! loaded buffer of a path, taking its logical text, and applying a write
//! with its stale check in one step (docs/architecture.md, "The stale rule").
//!
//! Every function here calls the Neovim API and must run on the main thread
//! (through [`MainThread`](super::bridge::MainThread)).

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use nvim_oxi::api::{self, opts::OptionOpts, Buffer};

use super::guard::guarded;
use crate::editor::codec::{common_affixes, encode};
use crate::editor::{
    changed_line_span, Document, EditorError, Encoding, LineEnding, Stamp, TextFormat, TextHash,
    UnsavedText, Version, WriteOutcome, WriteRequest,
};
use crate::permissions::resolve_for_rules;

/// The loaded, file-backed buffer (`'buftype'` empty or `acwrite`) whose
/// full name is `path`, or whose name resolves to `canon` (so symlinks
/// and `..` resolve, also for a buffer whose file is not written yet).
/// `None` when no loaded buffer holds the file.
pub(crate) fn find_loaded(path: &Path, canon: Option<&Path>) -> Option<Buffer> {
    api::list_bufs().find(|buf| {
        if !buf.is_loaded() {
            return false;
        }
        let bt: String = api::get_option_value("buftype", &buf_opts(buf)).unwrap_or_default();
        if !(bt.is_empty() || bt == "acwrite") {
            return false;
        }
        let Ok(name) = buf.get_name() else {
            return false;
        };
        if name.as_os_str().is_empty() {
            return false;
        }
        if name == path || Some(name.as_path()) == canon {
            return true;
        }
        canon.is_some_and(|c| resolve_for_rules(&name) == c)
    })
}

fn buf_opts(buf: &Buffer) -> OptionOpts {
    OptionOpts::builder().buffer(buf.clone()).build()
}

fn opt_bool(buf: &Buffer, name: &str) -> Result<bool, EditorError> {
    api::get_option_value::<bool>(name, &buf_opts(buf)).map_err(unavailable)
}

fn opt_string(buf: &Buffer, name: &str) -> Result<String, EditorError> {
    api::get_option_value::<String>(name, &buf_opts(buf)).map_err(unavailable)
}

fn unavailable(e: impl std::fmt::Display) -> EditorError {
    EditorError::Unavailable(e.to_string())
}

/// A buffer's logical text and what goes with it, at one moment.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    /// The buffer's lines joined with `\n` (no final newline).
    pub body: String,
    /// `true` when the logical text ends with `\n` (`'eol'` set and the
    /// buffer is not empty; an empty buffer writes an empty file).
    pub eol: bool,
    /// `b:changedtick`.
    pub tick: u64,
    /// `'modified'`.
    pub modified: bool,
    /// From `'fileformat'`, `'bomb'`, `'fileencoding'`.
    pub format: TextFormat,
}

impl Snapshot {
    /// The logical text (see `crate::editor` docs).
    pub fn text(&self) -> String {
        let mut t = self.body.clone();
        if self.eol {
            t.push('\n');
        }
        t
    }
}

/// Takes a [`Snapshot`] of `buf`. Errors: [`EditorError::Unavailable`] when
/// the API refuses (buffer gone).
pub(crate) fn snapshot(buf: &Buffer) -> Result<Snapshot, EditorError> {
    let lines: Vec<String> = buf
        .get_lines(.., false)
        .map_err(unavailable)?
        .map(|l| l.to_string_lossy().into_owned())
        .collect();
    let body = lines.join("\n");
    let mut eol = opt_bool(buf, "endofline")?;
    if eol && lines.len() == 1 && body.is_empty() && buffer_is_empty(buf) {
        // `:help line2byte()`: -1 past the end means the buffer is empty,
        // which Neovim writes as a 0-byte file despite 'eol'.
        eol = false;
    }
    let tick = buf.get_changedtick().map_err(unavailable)? as u64;
    let modified = opt_bool(buf, "modified")?;
    let format = TextFormat {
        line_ending: if opt_string(buf, "fileformat")? == "dos" {
            LineEnding::CrLf
        } else {
            LineEnding::Lf
        },
        bom: opt_bool(buf, "bomb")?,
        encoding: encoding_of(&opt_string(buf, "fileencoding")?),
    };
    Ok(Snapshot {
        body,
        eol,
        tick,
        modified,
        format,
    })
}

/// `true` when `line2byte(2)` is -1 in `buf`, i.e. the buffer holds no line
/// at all (`--No lines in buffer--`).
fn buffer_is_empty(buf: &Buffer) -> bool {
    let out: Rc<RefCell<Option<i64>>> = Rc::default();
    let slot = out.clone();
    let _ = buf.call(move |()| {
        let _ = guarded("line2byte", || {
            if let Ok(n) = api::call_function::<_, i64>("line2byte", (2,)) {
                *slot.borrow_mut() = Some(n);
            }
        });
    });
    let r = *out.borrow();
    r == Some(-1)
}

fn encoding_of(fenc: &str) -> Encoding {
    match fenc.to_ascii_lowercase().as_str() {
        "latin1" | "iso-8859-1" | "iso-8859" => Encoding::Latin1,
        "utf-16le" | "ucs-2le" => Encoding::Utf16Le,
        "utf-16" | "ucs-2" | "utf-16be" => Encoding::Utf16Be,
        _ => Encoding::Utf8,
    }
}

/// The [`Document`] of the loaded buffer holding `path`, `None` when the
/// file is not loaded. `path` is returned as given.
pub(crate) fn read_loaded(
    path: &Path,
    canon: Option<&Path>,
) -> Option<Result<Document, EditorError>> {
    let buf = find_loaded(path, canon)?;
    Some(snapshot(&buf).map(|s| Document {
        path: path.to_path_buf(),
        text: s.text(),
        version: Version::Buffer {
            bufnr: buf.handle() as i64,
            changedtick: s.tick,
        },
        format: s.format,
        modified: s.modified,
    }))
}

/// Every loaded, file-backed buffer whose text the disk does not hold, for
/// [`Editor::unsaved_texts`](crate::editor::Editor::unsaved_texts): the
/// modified ones, and the unmodified ones whose file does not exist (a
/// `stat` each; the text of a buffer is taken only when it is kept). Names
/// that are not absolute paths (`oil://…`, `fugitive://…`) are skipped.
/// A buffer the API refuses mid-way is left out.
pub(crate) fn unsaved_texts() -> Vec<UnsavedText> {
    let mut out = Vec::new();
    for buf in api::list_bufs() {
        if !buf.is_loaded() {
            continue;
        }
        let bt: String = api::get_option_value("buftype", &buf_opts(&buf)).unwrap_or_default();
        if !(bt.is_empty() || bt == "acwrite") {
            continue;
        }
        let Ok(name) = buf.get_name() else {
            continue;
        };
        if !name.is_absolute() {
            continue;
        }
        let Ok(modified) = opt_bool(&buf, "modified") else {
            continue;
        };
        let on_disk = name.exists();
        if on_disk && !modified {
            continue;
        }
        if let Ok(s) = snapshot(&buf) {
            out.push(UnsavedText {
                path: name,
                text: s.text(),
                changedtick: s.tick,
                on_disk,
            });
        }
    }
    out
}

/// Applies `req` to the loaded buffer holding `path` (`None` when not
/// loaded), in one main-thread step:
///
/// 1. stale check: refuses with [`EditorError::Stale`] when the version moved
///    since `req.base` **and** the text hash differs (a missing base on a
///    non-empty buffer is [`EditorError::AlreadyExists`]);
/// 2. `nvim_buf_set_text` on the smallest changed span, so one `u` undoes it
///    and marks elsewhere stay;
/// 3. `'endofline'` follows the new text's final newline;
/// 4. `:write` when `save` and the buffer had no unsaved changes before
///    (with `'nofixendofline'` for the write when the text has no final
///    newline); else the buffer stays modified and `saved` is `false`.
///
/// `'nomodifiable'` or `'readonly'` buffers: [`EditorError::NotModifiable`];
/// text the buffer's `'fileencoding'` cannot hold (e.g. `→` in a Latin-1
/// file): [`EditorError::Unencodable`], buffer untouched.
pub(crate) fn write_loaded(
    path: &Path,
    canon: Option<&Path>,
    req: &WriteRequest,
    save: bool,
) -> Option<Result<WriteOutcome, EditorError>> {
    let buf = find_loaded(path, canon)?;
    Some(write_buffer(buf, path, req, save))
}

fn write_buffer(
    mut buf: Buffer,
    path: &Path,
    req: &WriteRequest,
    save: bool,
) -> Result<WriteOutcome, EditorError> {
    let before = snapshot(&buf)?;
    let old_text = before.text();
    let version = Version::Buffer {
        bufnr: buf.handle() as i64,
        changedtick: before.tick,
    };
    match &req.base {
        Some(base) if base.is_stale(&version, || TextHash::of(&old_text)) => {
            return Err(EditorError::Stale(path.to_path_buf()));
        }
        None if !old_text.is_empty() => return Err(EditorError::AlreadyExists(path.to_path_buf())),
        _ => {}
    }
    if !opt_bool(&buf, "modifiable")? {
        return Err(EditorError::NotModifiable(format!(
            "{} ('nomodifiable' is set)",
            path.display()
        )));
    }
    if opt_bool(&buf, "readonly")? {
        return Err(EditorError::NotModifiable(format!(
            "{} ('readonly' is set)",
            path.display()
        )));
    }

    // Refuse text the file's encoding cannot hold before touching the
    // buffer, as the disk path does: `:write` would fail on it (E513) and
    // leave the buffer changed but unsaved.
    if let Err(e) = encode(&req.text, &before.format) {
        return Err(EditorError::Unencodable {
            encoding: e.encoding.to_string(),
            detail: e.detail,
        });
    }
    let (new_body, new_eol) = match req.text.strip_suffix('\n') {
        Some(b) => (b, true),
        None => (req.text.as_str(), false),
    };
    // Typing just before (or after) the edit would otherwise join its undo
    // block, and one `u` would undo the user's change with the model's.
    close_undo_block(&buf);
    if new_body != before.body {
        let (prefix, old_mid, new_mid) = common_affixes(&before.body, new_body);
        let (sr, sc) = row_col(&before.body, prefix);
        let (er, ec) = row_col(&before.body, prefix + old_mid);
        let replacement: Vec<&str> = new_body[prefix..prefix + new_mid].split('\n').collect();
        buf.set_text(sr..er, sc, ec, replacement)
            .map_err(|e| EditorError::NotModifiable(format!("{}: {e}", path.display())))?;
    }
    if new_eol != before.eol {
        api::set_option_value("endofline", new_eol, &buf_opts(&buf)).map_err(unavailable)?;
    }

    close_undo_block(&buf);

    let after = snapshot(&buf)?;
    let new_text = after.text();
    let stamp = Stamp {
        version: Version::Buffer {
            bufnr: buf.handle() as i64,
            changedtick: after.tick,
        },
        hash: TextHash::of(&new_text),
    };
    let saved = save && !before.modified && write_to_disk(&buf, new_eol, path);
    Ok(WriteOutcome {
        stamp,
        in_buffer: true,
        saved,
        changed_lines: changed_line_span(&old_text, &new_text),
    })
}

/// Closes the current undo block of `buf`, so the next change starts a new
/// one (`:help undo-blocks`: setting 'undolevels', even to its own value,
/// closes the block of the current buffer; `&g:` keeps a buffer-local value
/// intact). Failures are ignored: at worst the edit joins the previous block.
fn close_undo_block(buf: &Buffer) {
    let _ = buf.call(|()| {
        let _ = guarded("closing the undo block", || {
            let _ = api::command("let &g:undolevels = &g:undolevels");
        });
    });
}

/// `(row, byte column)`, both 0-based, of byte offset `at` in `body`.
fn row_col(body: &str, at: usize) -> (usize, usize) {
    let before = &body[..at];
    match before.rfind('\n') {
        Some(nl) => (before.matches('\n').count(), at - nl - 1),
        None => (0, at),
    }
}

/// `:silent write` in `buf` (autocmds run, so formatters may change the
/// text; the next stale check notices). Returns `true` when written; a
/// failure is shown with `vim.notify` and returns `false`.
fn write_to_disk(buf: &Buffer, eol: bool, path: &Path) -> bool {
    let opts = buf_opts(buf);
    let fixeol: bool = api::get_option_value("fixendofline", &opts).unwrap_or(true);
    if !eol && fixeol {
        let _ = api::set_option_value("fixendofline", false, &opts);
    }
    let result: Rc<RefCell<Option<Result<(), String>>>> = Rc::default();
    let slot = result.clone();
    let called = buf.call(move |()| {
        let _ = guarded(":write", || {
            *slot.borrow_mut() = Some(api::command("silent write").map_err(|e| e.to_string()));
        });
    });
    if !eol && fixeol {
        let _ = api::set_option_value("fixendofline", true, &opts);
    }
    let outcome = result.borrow_mut().take();
    let failure = match (called, outcome) {
        (_, Some(Ok(()))) => return true,
        (_, Some(Err(e))) => e,
        (Err(e), None) => e.to_string(),
        (Ok(()), None) => "the write did not run".to_string(),
    };
    super::guard::notify_warn(&format!(
        "lathe: changed {} but could not write it: {failure}",
        display(path)
    ));
    false
}

fn display(p: &Path) -> String {
    p.display().to_string()
}

/// Canonical form of `path` for buffer matching
/// ([`resolve_for_rules`]: symlinks resolved, a file not yet on disk below
/// its deepest existing folder; `None` for a relative path). Does
/// file-system I/O: call it off the main thread when possible.
pub(crate) fn canonical(path: &Path) -> Option<PathBuf> {
    path.is_absolute().then(|| resolve_for_rules(path))
}

#[cfg(test)]
mod tests {
    use super::row_col;

    #[test]
    fn row_col_counts_bytes_after_the_last_newline() {
        assert_eq!(row_col("ab\ncdé\nf", 0), (0, 0));
        assert_eq!(row_col("ab\ncdé\nf", 3), (1, 0));
        assert_eq!(row_col("ab\ncdé\nf", 7), (1, 4));
        assert_eq!(row_col("ab\ncdé\nf", 8), (2, 0));
    }
}
