//! Main-thread buffer work for [`NvimEditor`](crate::adapters::editor::NvimEditor): finding the
//! loaded buffer of a path, taking its logical text, and applying a write
//! with its stale check in one step (docs/edits.md, "The stale rule").
//!
//! Every function here calls the Neovim API and must run on the main thread
//! (through [`MainThread`](crate::host::bridge::MainThread)).

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use nvim_oxi::api::{self, opts::OptionOpts, Buffer};

use crate::host::guard::guarded;
use crate::host::stats::{Counter, STATS};
use lathe_core::config::SaveMode;
use lathe_core::editor::codec::{common_affixes, count_newlines, encode};
use lathe_core::editor::{
    changed_line_span, Document, EditorError, Encoding, Fresh, LineEnding, Stamp, TextFormat,
    TextHash, UnsavedText, Version, WriteOutcome, WriteRequest,
};

use lathe_core::permissions::resolve_for_rules;

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
    /// The logical text (see `lathe_core::editor` docs).
    pub fn text(&self) -> String {
        let mut t = self.body.clone();
        if self.eol {
            t.push('\n');
        }
        t
    }

    /// [`text`](Self::text) without copying the body.
    pub fn into_text(self) -> String {
        let mut t = self.body;
        if self.eol {
            t.push('\n');
        }
        t
    }
}

/// Takes a [`Snapshot`] of `buf`: its lines go straight into one `String`
/// (one `nvim_buf_get_lines` call, no string per line on lathe's side).
/// Errors: [`EditorError::Unavailable`] when the API refuses (buffer gone).
pub(crate) fn snapshot(buf: &Buffer) -> Result<Snapshot, EditorError> {
    let mut body = String::new();
    let mut count = 0usize;
    for line in buf.get_lines(.., false).map_err(unavailable)? {
        if count > 0 {
            body.push('\n');
        }
        body.push_str(&String::from_utf8_lossy(line.as_bytes()));
        count += 1;
    }
    STATS.add(Counter::LinesRead, count as u64);
    let mut eol = opt_bool(buf, "endofline")?;
    if eol && count == 1 && body.is_empty() && buffer_is_empty(buf) {
        // `:help line2byte()`: -1 past the end means the buffer is empty,
        // which Neovim writes as a 0-byte file despite 'eol'.
        eol = false;
    }
    let tick = crate::host::changedtick(buf).map_err(unavailable)? as u64;
    let modified = opt_bool(buf, "modified")?;
    let format = format_of(buf)?;
    Ok(Snapshot {
        body,
        eol,
        tick,
        modified,
        format,
    })
}

/// The buffer's [`TextFormat`] from `'fileformat'`, `'bomb'`,
/// `'fileencoding'`. Errors: [`EditorError::Unavailable`].
fn format_of(buf: &Buffer) -> Result<TextFormat, EditorError> {
    Ok(TextFormat {
        line_ending: if opt_string(buf, "fileformat")? == "dos" {
            LineEnding::CrLf
        } else {
            LineEnding::Lf
        },
        bom: opt_bool(buf, "bomb")?,
        encoding: encoding_of(&opt_string(buf, "fileencoding")?),
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
    Some(document(path, &buf))
}

fn document(path: &Path, buf: &Buffer) -> Result<Document, EditorError> {
    let s = snapshot(buf)?;
    Ok(Document {
        path: path.to_path_buf(),
        version: Version::Buffer {
            bufnr: buf.handle() as i64,
            changedtick: s.tick,
        },
        format: s.format,
        modified: s.modified,
        text: s.into_text(),
    })
}

/// For [`Editor::read_unless`](lathe_core::editor::Editor::read_unless): `None`
/// when `path` is not loaded; [`Fresh::Unchanged`] (no line read) when its
/// buffer is the one of `known` and still at its `changedtick`; else the
/// [`Document`] as [`read_loaded`] takes it.
pub(crate) fn read_unless_loaded(
    path: &Path,
    canon: Option<&Path>,
    known: &Version,
) -> Option<Result<Fresh, EditorError>> {
    let buf = find_loaded(path, canon)?;
    let unchanged = || -> Result<Option<Fresh>, EditorError> {
        let Version::Buffer { bufnr, changedtick } = known else {
            return Ok(None);
        };
        let tick = crate::host::changedtick(&buf).map_err(unavailable)? as u64;
        if *bufnr != buf.handle() as i64 || *changedtick != tick {
            return Ok(None);
        }
        Ok(Some(Fresh::Unchanged {
            format: format_of(&buf)?,
            modified: opt_bool(&buf, "modified")?,
        }))
    };
    Some(match unchanged() {
        Ok(Some(fresh)) => Ok(fresh),
        Ok(None) => document(path, &buf).map(Fresh::Changed),
        Err(e) => Err(e),
    })
}

/// Every loaded, file-backed buffer whose text the disk does not hold, for
/// [`Editor::unsaved_texts`](lathe_core::editor::Editor::unsaved_texts): the
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
            let changedtick = s.tick;
            out.push(UnsavedText {
                path: name,
                text: s.into_text(),
                changedtick,
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
/// 4. when `save` is given and the buffer had no unsaved changes before,
///    the save: with [`SaveMode::Direct`] lathe's own when it applies
///    ([`Owed::direct`]), else `:write` (with `'nofixendofline'` for the
///    write when the text has no final newline); without, the buffer stays
///    modified and `saved` is `false`.
///
/// `'nomodifiable'` or `'readonly'` buffers: [`EditorError::NotModifiable`];
/// text the buffer's `'fileencoding'` cannot hold (e.g. `→` in a Latin-1
/// file): [`EditorError::Unencodable`], buffer untouched.
///
/// With `span` ([`SpanEdit::prepare`], made off the main thread) and the
/// buffer still at its base `changedtick`, no line is read but the few the
/// change replaces (to check them) and nothing is hashed here: the step is
/// the tick check, the option checks, `nvim_buf_set_text` and the `:write`.
/// Otherwise (the tick moved, or anything looks different from what the
/// span expects) the whole check above runs, reading the buffer once.
///
/// What is left to do off the main thread comes back with the outcome
/// ([`Written::owed`]).
pub(crate) fn write_loaded(
    path: &Path,
    canon: Option<&Path>,
    req: &WriteRequest,
    save: Option<SaveMode>,
    span: Option<&SpanEdit>,
) -> Option<Written> {
    let mut buf = find_loaded(path, canon)?;
    if let Some(done) = span.and_then(|s| write_span(&mut buf, s, path, save)) {
        return Some(done);
    }
    let mut owed = Owed::default();
    let result = write_buffer(buf, path, req, save.is_some(), &mut owed);
    Some(Written { result, owed })
}

/// What a buffer write's main-thread step ([`write_loaded`]) hands back:
/// its outcome and the work it left for the caller to finish off the main
/// thread before the outcome is final.
#[derive(Debug)]
pub(crate) struct Written {
    /// The write's outcome as the main-thread step left it.
    pub result: Result<WriteOutcome, EditorError>,
    /// What the caller still owes the outcome.
    pub owed: Owed,
}

impl Written {
    fn failed(e: EditorError) -> Self {
        Self {
            result: Err(e),
            owed: Owed::default(),
        }
    }
}

/// The work a buffer write leaves to its caller, to do off the main thread.
#[derive(Debug, Default)]
pub(crate) struct Owed {
    /// The outcome's stamp carries a placeholder hash: the caller replaces
    /// it with the hash of the request's text (computed meanwhile, off the
    /// main thread; [`SpanEdit`] leaves it out).
    pub hash: bool,
    /// A direct save: write the text with
    /// [`direct_write::write_file`](crate::adapters::direct_write::write_file)
    /// off the main thread, then
    /// [`direct_write::finish`](crate::adapters::direct_write::finish) on it,
    /// whose answer is the outcome's `saved`.
    pub direct: Option<crate::adapters::direct_write::DirectWrite>,
    /// A file `:write` wrote with `'fsync'` turned off
    /// ([`NvimSaved::sync`]), to `fsync` before the write is reported done.
    pub sync: Option<PathBuf>,
}

/// A write to a buffer worked out off the main thread from the text the
/// change was planned against (`WriteRequest::base_text`) and the new text:
/// where the changed span is and what replaces it (the new text's hash is
/// the caller's, [`Owed::hash`]). It holds only while the buffer is at
/// the base `changedtick`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SpanEdit {
    bufnr: i64,
    tick: u64,
    /// Lines of the base text (its body: without the final newline).
    line_count: usize,
    /// 0-based (row, byte column) where the span starts and ends in the base body.
    start: (usize, usize),
    end: (usize, usize),
    /// The base body's lines `start.0..=end.0`, checked against the buffer
    /// before the change.
    old_lines: Vec<String>,
    /// What replaces the span, as lines; `None` when the bodies are equal
    /// (only the final newline changes).
    replacement: Option<Vec<String>>,
    old_eol: bool,
    new_eol: bool,
    /// Hash of the new logical text (the stamp after the write); `None`:
    /// the caller hashes it meanwhile and puts it in the outcome
    /// ([`Owed::hash`]).
    hash: Option<TextHash>,
    changed_lines: Option<(usize, usize)>,
}

impl SpanEdit {
    /// The span edit of `req`, or `None` when it has no buffer base with its
    /// text, or when the old or new body is empty (an empty buffer's final
    /// newline is special, `buffer_is_empty`: the careful path handles it).
    /// Pure: call it off the main thread; O(text).
    pub(crate) fn prepare(req: &WriteRequest) -> Option<SpanEdit> {
        let base = req.base.as_ref()?;
        let Version::Buffer { bufnr, changedtick } = base.version else {
            return None;
        };
        let old = req.base_text.as_deref()?;
        let (old_body, old_eol) = split_eol(old);
        let (new_body, new_eol) = split_eol(&req.text);
        if old_body.is_empty() || new_body.is_empty() {
            return None;
        }
        let (prefix, old_mid, new_mid) = common_affixes(old_body, new_body);
        let start = row_col(old_body, prefix);
        let end = (
            start.0 + count_newlines(&old_body[prefix..prefix + old_mid]),
            row_col_within(old_body, prefix + old_mid),
        );
        // The old lines of the span: from the start of its first line to
        // the end of its last, without splitting the rest of the text.
        let from = prefix - start.1;
        let to = old_body[prefix + old_mid..]
            .find('\n')
            .map_or(old_body.len(), |i| prefix + old_mid + i);
        let old_lines = old_body[from..to].split('\n').map(str::to_string).collect();
        let replacement = (old_body != new_body).then(|| {
            new_body[prefix..prefix + new_mid]
                .split('\n')
                .map(str::to_string)
                .collect()
        });
        Some(SpanEdit {
            bufnr,
            tick: changedtick,
            line_count: count_newlines(old_body) + 1,
            start,
            end,
            old_lines,
            replacement,
            old_eol,
            new_eol,
            hash: None,
            changed_lines: changed_line_span(old, &req.text),
        })
    }
}

/// `(body, ends with a newline)` of a logical text.
fn split_eol(text: &str) -> (&str, bool) {
    match text.strip_suffix('\n') {
        Some(body) => (body, true),
        None => (text, false),
    }
}

/// The stamp hash of a span write: the span's, or a placeholder the caller
/// replaces when it hashes the text itself (`owed.hash`).
fn span_hash(span: &SpanEdit, owed: &mut Owed) -> TextHash {
    match span.hash {
        Some(h) => h,
        None => {
            owed.hash = true;
            TextHash([0; 32])
        }
    }
}

/// Applies `span` when `buf` is still exactly what it was planned against:
/// same buffer and `changedtick`, a UTF-8 `'fileencoding'` (others need the
/// whole-text encoding check), the same `'endofline'` and line count, and
/// the lines of the span as expected. `None` when any of that differs (the
/// caller takes the careful path); the refusals of a `'nomodifiable'` or
/// `'readonly'` buffer are the careful path's.
fn write_span(
    buf: &mut Buffer,
    span: &SpanEdit,
    path: &Path,
    save: Option<SaveMode>,
) -> Option<Written> {
    if buf.handle() as i64 != span.bufnr || crate::host::changedtick(buf).ok()? as u64 != span.tick
    {
        return None;
    }
    if let Err(e) = check_modifiable(buf, path) {
        return Some(Written::failed(e));
    }
    let format = format_of(buf).ok()?;
    if format.encoding != Encoding::Utf8
        || opt_bool(buf, "endofline").ok()? != span.old_eol
        || buf.line_count().ok()? != span.line_count
    {
        return None;
    }
    let mut same = true;
    let mut fetched = 0u64;
    for (now, want) in buf
        .get_lines(span.start.0..span.end.0 + 1, true)
        .ok()?
        .zip(&span.old_lines)
    {
        fetched += 1;
        same &= now.as_bytes() == want.as_bytes();
    }
    STATS.add(Counter::LinesRead, fetched);
    if !same || fetched as usize != span.old_lines.len() {
        return None;
    }
    let modified = opt_bool(buf, "modified").ok()?;
    // Saving without `:write` (`direct_write`, unless `setup{ save =
    // "write" }`): decided before the change, and its `:checktime` may
    // reload a buffer whose file changed behind Neovim's back, so the tick
    // is checked again.
    let direct = if save == Some(SaveMode::Direct) && !modified {
        let name = buf.get_name().ok()?;
        let prepared = crate::adapters::direct_write::prepare(buf, &name, &format);
        if crate::host::changedtick(buf).ok()? as u64 != span.tick {
            return None;
        }
        prepared
    } else {
        None
    };
    if direct.is_some() {
        // The undo step records the buffer as changed, so `u` leaves it
        // modified: the file will hold the new text.
        if let Err(e) = api::set_option_value("modified", true, &buf_opts(buf)) {
            return Some(Written::failed(unavailable(e)));
        }
    }
    close_undo_block(buf);
    if let Some(replacement) = &span.replacement {
        let lines = replacement.iter().map(String::as_str);
        if let Err(e) = buf.set_text(span.start.0..span.end.0, span.start.1, span.end.1, lines) {
            return Some(Written::failed(EditorError::NotModifiable(format!(
                "{}: {e}",
                path.display()
            ))));
        }
    }
    if span.new_eol != span.old_eol {
        if let Err(e) = api::set_option_value("endofline", span.new_eol, &buf_opts(buf)) {
            return Some(Written::failed(unavailable(e)));
        }
    }
    close_undo_block(buf);
    let mut tick = match crate::host::changedtick(buf) {
        Ok(t) => t as u64,
        Err(e) => return Some(Written::failed(unavailable(e))),
    };
    let mut owed = Owed::default();
    // What the Edit left: the buffer at `tick`, saved or not.
    let outcome = |tick: u64, saved: bool, mut owed: Owed| {
        let hash = span_hash(span, &mut owed);
        Written {
            result: Ok(WriteOutcome {
                stamp: Stamp {
                    version: Version::Buffer {
                        bufnr: span.bufnr,
                        changedtick: tick,
                    },
                    hash,
                },
                in_buffer: true,
                saved,
                changed_lines: span.changed_lines,
                exact: true,
            }),
            owed,
        }
    };
    if let Some(prepared) = direct {
        // Saved off the main thread by the caller (`Owed::direct`); `saved`
        // is its answer.
        owed.direct = Some(crate::adapters::direct_write::DirectWrite::new(
            span.bufnr, tick, prepared,
        ));
        return Some(outcome(tick, false, owed));
    }
    let written = if save.is_some() && !modified {
        write_to_disk(buf, span.new_eol, path)
    } else {
        None
    };
    let saved = written.is_some();
    owed.sync = written.and_then(|w| w.sync);
    if saved {
        // `:help b:changedtick`: resetting 'modified' when writing counts as
        // a change. Exactly that one step means the text is still ours; more
        // (a formatter on BufWritePre) and the stamp stays at the tick
        // before the write, so the next change compares the text.
        let one_step = crate::host::changedtick(buf).is_ok_and(|t| t as u64 == tick + 1);
        let clean = opt_bool(buf, "modified").is_ok_and(|m| !m);
        if one_step && clean {
            tick += 1;
        }
    }
    Some(outcome(tick, saved, owed))
}

/// [`EditorError::NotModifiable`] for a `'nomodifiable'` or `'readonly'` buffer.
fn check_modifiable(buf: &Buffer, path: &Path) -> Result<(), EditorError> {
    if !opt_bool(buf, "modifiable")? {
        return Err(EditorError::NotModifiable(format!(
            "{} ('nomodifiable' is set)",
            path.display()
        )));
    }
    if opt_bool(buf, "readonly")? {
        return Err(EditorError::NotModifiable(format!(
            "{} ('readonly' is set)",
            path.display()
        )));
    }
    Ok(())
}

fn write_buffer(
    mut buf: Buffer,
    path: &Path,
    req: &WriteRequest,
    save: bool,
    owed: &mut Owed,
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
    check_modifiable(&buf, path)?;

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
        None => (&*req.text, false),
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
    let written = if save && !before.modified {
        write_to_disk(&buf, new_eol, path)
    } else {
        None
    };
    let saved = written.is_some();
    owed.sync = written.and_then(|w| w.sync);
    Ok(WriteOutcome {
        stamp,
        in_buffer: true,
        saved,
        changed_lines: changed_line_span(&old_text, &new_text),
        exact: *new_text == *req.text,
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
    (count_newlines(&body[..at]), row_col_within(body, at))
}

/// The byte column (0-based) of offset `at` in `body`: bytes since the last
/// `\n` before it.
fn row_col_within(body: &str, at: usize) -> usize {
    match body.as_bytes()[..at].iter().rposition(|&b| b == b'\n') {
        Some(nl) => at - nl - 1,
        None => at,
    }
}

/// Neovim's `:write` of `buf`, for a direct save that could not write the
/// file ([`direct_write::finish`](crate::adapters::direct_write::finish)'s
/// fallback). `None` when it failed.
pub(crate) fn write_with_nvim(buf: &Buffer, path: &Path) -> Option<NvimSaved> {
    let eol = opt_bool(buf, "endofline").unwrap_or(true);
    write_to_disk(buf, eol, path)
}

/// A buffer Neovim's `:write` saved for lathe.
#[derive(Debug)]
pub(crate) struct NvimSaved {
    /// The file written with `'fsync'` turned off for the write, which the
    /// caller must `fsync` off the main thread before it reports the write
    /// done; `None` with the user's `'nofsync'`.
    pub sync: Option<PathBuf>,
}

/// `:silent write` in `buf` (autocmds run, so formatters may change the
/// text; the next stale check notices). Returns `Some` when written; a
/// failure is shown with `vim.notify` and returns `None`. With `'fsync'`
/// on (the default) the write runs with it off and the file is left owed
/// ([`NvimSaved::sync`]): the disk flush happens off the main thread, so the
/// editor does not wait for the disk (`:help 'fsync'`).
fn write_to_disk(buf: &Buffer, eol: bool, path: &Path) -> Option<NvimSaved> {
    let opts = buf_opts(buf);
    let fixeol: bool = api::get_option_value("fixendofline", &opts).unwrap_or(true);
    if !eol && fixeol {
        let _ = api::set_option_value("fixendofline", false, &opts);
    }
    let global = OptionOpts::default();
    let fsync: bool = api::get_option_value("fsync", &global).unwrap_or(false);
    if fsync {
        let _ = api::set_option_value("fsync", false, &global);
    }
    let result: Rc<RefCell<Option<Result<(), String>>>> = Rc::default();
    let slot = result.clone();
    STATS.bump(Counter::NvimWrites);
    let called = buf.call(move |()| {
        let _ = guarded(":write", || {
            *slot.borrow_mut() = Some(api::command("silent write").map_err(|e| e.to_string()));
        });
    });
    if !eol && fixeol {
        let _ = api::set_option_value("fixendofline", true, &opts);
    }
    if fsync {
        let _ = api::set_option_value("fsync", true, &global);
    }
    let outcome = result.borrow_mut().take();
    let failure = match (called, outcome) {
        (_, Some(Ok(()))) => {
            let sync = fsync.then(|| buf.get_name().unwrap_or_else(|_| path.to_path_buf()));
            return Some(NvimSaved { sync });
        }
        (_, Some(Err(e))) => e,
        (Err(e), None) => e.to_string(),
        (Ok(()), None) => "the write did not run".to_string(),
    };
    crate::host::guard::notify_warn(&format!(
        "lathe: changed {} but could not write it: {failure}",
        display(path)
    ));
    None
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
