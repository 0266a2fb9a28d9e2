//! The `Editor` seam: what tools need from the editor.
//!
//! A tool never touches Neovim or the disk for file *content* directly; it asks
//! an [`Editor`] to read a [`Document`] and to write new text with a stale
//! check. [`DiskEditor`] works on files (pure Rust, used by tests and for files
//! that are not loaded); `lathe::NvimEditor` serves loaded buffers on Neovim's
//! main thread and falls back to a `DiskEditor` for everything else
//! (docs/architecture.md, "Layers" and "Edits through buffers").
//!
//! The *logical text* of a document is what the model sees: line endings are
//! `\n` (a CRLF file is shown with `\n` and written back with `\r\n`), there is
//! no byte-order mark, and the text ends with `\n` exactly when the file ends
//! with a line terminator. [`TextFormat`] records how to turn logical text back
//! into the file's bytes.

pub mod codec;
pub mod diagnostics;
mod disk;
pub mod lsp;
pub mod lsp_position;
pub mod lsp_result;

pub use codec::{Encoding, LineEnding, TextFormat};
pub use diagnostics::{Diagnostic, DiagnosticList, DiagnosticWatch, Settled, Severity};
pub use disk::replace_existing;
pub use disk::DiskEditor;
pub use lsp::{Location, LspAnswer, LspFailure, LspNavigator, LspQuery, LspSymbol, SymbolAt};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use async_trait::async_trait;
use sha2::{Digest, Sha256};

/// SHA-256 of a document's logical text; compares texts without keeping them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TextHash(pub [u8; 32]);

impl TextHash {
    /// The hash as 64 lowercase hex digits (session files keep it so).
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The hash of [`TextHash::to_hex`]'s text; `None` when it is not 64
    /// hex digits.
    pub fn from_hex(hex: &str) -> Option<Self> {
        if hex.len() != 64 || !hex.is_ascii() {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(Self(out))
    }

    /// Hash of `text` (its UTF-8 bytes).
    pub fn of(text: &str) -> Self {
        Self(Sha256::digest(text.as_bytes()).into())
    }
}

/// Where a document's text came from and which version of it that was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Version {
    /// A loaded Neovim buffer at `b:changedtick` (`:help changetick`).
    Buffer {
        /// Buffer handle (`bufnr()`).
        bufnr: i64,
        /// `b:changedtick` when the text was taken.
        changedtick: u64,
    },
    /// A file on disk, as of its modification time and length in bytes.
    Disk {
        /// `mtime` of the file, `None` where the platform has none.
        mtime: Option<SystemTime>,
        /// File length in bytes.
        len: u64,
    },
}

/// What a read saw: the version and a hash of the logical text. `FileState`
/// keeps one per file the model has read; a write based on it is refused
/// when [`Stamp::is_stale`] says the document moved on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    /// Version when read.
    pub version: Version,
    /// Hash of the logical text when read.
    pub hash: TextHash,
}

/// How far a [`Version`] can be trusted when deciding whether a document
/// moved on (the stale rule, [`Stamp::is_stale`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StaleMode {
    /// A loaded buffer: `b:changedtick` goes up on every change
    /// (`:help changetick`), so an unchanged version means unchanged text
    /// and nothing is hashed; a moved version (`:write`, undo back to the
    /// same text, a reload) is stale only when the text differs.
    Tick,
    /// A file on disk: `mtime` is coarse (two writes within one tick with
    /// the same length look alike), so the version is not trusted and the
    /// text hash alone decides.
    TextOnly,
}

impl StaleMode {
    /// The mode for a document whose version is now `now`: [`StaleMode::Tick`]
    /// for a buffer, [`StaleMode::TextOnly`] for a file.
    pub fn of(now: &Version) -> Self {
        match now {
            Version::Buffer { .. } => StaleMode::Tick,
            Version::Disk { .. } => StaleMode::TextOnly,
        }
    }
}

impl Stamp {
    /// The stale rule, the one place it is spelled (docs/edits.md,
    /// "The stale rule"): `true` when the document, now at version `now`,
    /// moved on from what this stamp saw. In [`StaleMode::Tick`] (a buffer)
    /// an equal version is never stale and a moved one is stale when the
    /// text differs; in [`StaleMode::TextOnly`] (a file) only the text
    /// decides. `now_hash` hashes the current logical text and is called
    /// only when the answer depends on it.
    ///
    /// Used by Edit/Write when they plan (`tools::support::file_common::check_read`),
    /// by Read's "unchanged since your last read", and by both editors at
    /// write time (`DiskEditor`, `lathe::NvimEditor`), so the check at plan
    /// time and the atomic one at write time cannot disagree.
    pub fn is_stale(&self, now: &Version, now_hash: impl FnOnce() -> TextHash) -> bool {
        match StaleMode::of(now) {
            StaleMode::Tick if self.version == *now => false,
            StaleMode::Tick | StaleMode::TextOnly => now_hash() != self.hash,
        }
    }
}

/// A document's logical text and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// Absolute path of the file (symlinks not resolved).
    pub path: PathBuf,
    /// Logical text (see the module docs).
    pub text: String,
    /// Version the text belongs to.
    pub version: Version,
    /// How to turn logical text back into bytes.
    pub format: TextFormat,
    /// `true` when the text comes from a buffer with unsaved changes
    /// (`'modified'`); always `false` for disk documents.
    pub modified: bool,
}

impl Document {
    /// The [`Stamp`] of this document's current text and version.
    pub fn stamp(&self) -> Stamp {
        Stamp {
            version: self.version.clone(),
            hash: TextHash::of(&self.text),
        }
    }

    /// `true` when the document is a loaded buffer.
    pub fn is_buffer(&self) -> bool {
        matches!(self.version, Version::Buffer { .. })
    }
}

/// A request to replace a document's whole logical text.
#[derive(Debug, Clone)]
pub struct WriteRequest {
    /// What the writer based its change on; `None` creates a new file and
    /// fails with [`EditorError::AlreadyExists`] when something appeared there.
    pub base: Option<Stamp>,
    /// The new logical text, shared (`Arc`): the editor, the hash of the
    /// outcome's stamp, the file write and `FileState`'s text cache all
    /// hold the one copy the caller made (a 2.6 MB text is never copied
    /// again on the way to the result).
    pub text: Arc<str>,
    /// Format for disk writes when the file is new; an existing file or buffer
    /// keeps its own format.
    pub format: TextFormat,
    /// The logical text `base` was taken from, when the writer still has it
    /// (Edit and Write do). A buffer editor then computes the changed span
    /// off the main thread and only checks there that the buffer is still at
    /// `base`'s `changedtick` (docs/edits.md, "Edits through
    /// buffers"). It must hash to `base.hash`; `None` is always correct,
    /// only slower.
    pub base_text: Option<Arc<str>>,
}

/// What a successful write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOutcome {
    /// The document as it is after the write (new version and text).
    pub stamp: Stamp,
    /// `true` when the change went into a loaded buffer.
    pub in_buffer: bool,
    /// `true` when the buffer was written to disk after the change; `false`
    /// when it had unsaved user changes and was left modified.
    pub saved: bool,
    /// 1-based first and last line of the changed span in the new text
    /// (`None` when nothing changed).
    pub changed_lines: Option<(usize, usize)>,
    /// `true` when the document's logical text right after the change is
    /// exactly the request's `text`, so `stamp` is the stamp of that text
    /// and a caller may keep the text for the next change (`FileState`'s
    /// text cache) without reading it back.
    pub exact: bool,
}

/// What [`Editor::read_unless`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fresh {
    /// The document is still at the version the caller knows: its text did
    /// not change and was not read. `format` and `modified` are as now.
    Unchanged {
        /// How to turn logical text back into bytes, as now.
        format: TextFormat,
        /// `'modified'` of the buffer, as now.
        modified: bool,
    },
    /// The document moved on (or its version cannot be trusted, e.g. a file
    /// on disk): here it is, read as [`Editor::read`] does.
    Changed(Document),
}

/// Errors of [`Editor`] calls. Tools turn them into model-facing messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditorError {
    /// No file at the path.
    #[error("file not found: {0}")]
    NotFound(PathBuf),
    /// The path is a directory.
    #[error("is a directory: {0}")]
    IsDirectory(PathBuf),
    /// The file is not text lathe can edit (NUL bytes, an undecodable
    /// encoding, …); `kind` says what it looks like.
    #[error("not a text file ({kind}, {size} bytes): {path}")]
    NotText {
        /// The path.
        path: PathBuf,
        /// Detected kind, e.g. `binary`, `PNG image`.
        kind: String,
        /// File size in bytes.
        size: u64,
    },
    /// The new text cannot be encoded in the file's encoding.
    #[error("cannot encode the new text as {encoding}: {detail}")]
    Unencodable {
        /// The file's encoding.
        encoding: String,
        /// Which character failed.
        detail: String,
    },
    /// The document moved on since `base` was taken ([`Stamp::is_stale`]).
    #[error("changed since it was read: {0}")]
    Stale(PathBuf),
    /// A create found an existing file.
    #[error("already exists: {0}")]
    AlreadyExists(PathBuf),
    /// The buffer cannot be modified (`'modifiable'` off, `'readonly'`, …).
    #[error("buffer cannot be modified: {0}")]
    NotModifiable(String),
    /// Symlink loop or other path resolution failure.
    #[error("cannot resolve path {path}: {detail}")]
    BadPath {
        /// The path.
        path: PathBuf,
        /// OS error text.
        detail: String,
    },
    /// Any other I/O error, with the OS text.
    #[error("I/O error on {path}: {detail}")]
    Io {
        /// The path.
        path: PathBuf,
        /// OS error text.
        detail: String,
    },
    /// Neovim went away or the main-thread bridge is closed.
    #[error("editor unavailable: {0}")]
    Unavailable(String),
    /// The path is not a regular file (a FIFO, a device, a socket): opening
    /// or reading it could block or never end, so it is not read.
    #[error("not a regular file ({kind}): {path}")]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is, e.g. `a FIFO (named pipe)`, `a character device`.
        kind: String,
    },
    /// The file holds more than [`MAX_FILE_BYTES`]; it is not loaded.
    #[error("file of {size} bytes is larger than {max} bytes: {path}")]
    TooLarge {
        /// The path.
        path: PathBuf,
        /// Its size in bytes (at least this many: a file whose reported
        /// size is wrong, as in `/proc`, is read up to the limit).
        size: u64,
        /// [`MAX_FILE_BYTES`].
        max: u64,
    },
}

/// Largest file an [`Editor`] loads into memory to read or edit, in bytes
/// (64 MiB). A sparse 10 GB file is refused from its metadata, without a
/// read; a file that reports a wrong size is read no further than this.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// What tools need from the editor (docs/architecture.md, "Layers").
///
/// Implementations must make `write`'s stale check and the change one atomic
/// step: nothing the user types may land between "still the same" and the
/// change itself.
#[async_trait]
pub trait Editor: Send + Sync {
    /// The document at absolute `path`: the buffer's text when a buffer holds
    /// it (unsaved changes included), else the file on disk.
    ///
    /// Errors: [`EditorError::NotFound`], [`EditorError::IsDirectory`],
    /// [`EditorError::NotText`], [`EditorError::Io`], [`EditorError::BadPath`].
    async fn read(&self, path: &Path) -> Result<Document, EditorError>;

    /// The document at absolute `path`, unless it is a loaded buffer still
    /// at version `known` (same buffer, same `changedtick`, so the same
    /// text, `:help changetick`): then [`Fresh::Unchanged`] and no text is
    /// read. Only versions trusted by the stale rule ([`StaleMode::Tick`])
    /// can be unchanged; the default reads the document every time.
    /// Errors: as [`read`](Self::read).
    async fn read_unless(&self, path: &Path, known: &Version) -> Result<Fresh, EditorError> {
        let _ = known;
        Ok(Fresh::Changed(self.read(path).await?))
    }

    /// Replaces the logical text of the document at absolute `path`.
    ///
    /// When `req.base` is set and [`Stamp::is_stale`] says the document moved
    /// on from it (a buffer: its tick moved and its text differs; a file: its
    /// text differs), the write is [`EditorError::Stale`] and nothing
    /// changes. Buffers get the smallest changed span through
    /// `nvim_buf_set_text` and are saved unless they had unsaved user changes;
    /// files are replaced atomically (temp file + rename, through symlinks).
    async fn write(&self, path: &Path, req: WriteRequest) -> Result<WriteOutcome, EditorError>;

    /// [`write`](Self::write), plus a [`DiagnosticWatch`] when the document
    /// is a buffer with language-server clients attached (made in the same
    /// step as the change; docs/lsp.md, "Diagnostics from language
    /// servers"). Editors without language servers return `None` (the
    /// default). Errors: as `write`.
    async fn write_watched(
        &self,
        path: &Path,
        req: WriteRequest,
    ) -> Result<(WriteOutcome, Option<Box<dyn DiagnosticWatch>>), EditorError> {
        Ok((self.write(path, req).await?, None))
    }

    /// The diagnostics the editor knows (`vim.diagnostic.get()`) for the
    /// document at absolute `path`, or for every buffer when `path` is
    /// `None`, sorted by path and line, with the number of language servers
    /// running. `Ok(None)` when this editor has no diagnostics at all (the
    /// default; `DiskEditor`).
    /// Errors: [`EditorError::Unavailable`] when the editor went away.
    async fn diagnostics(
        &self,
        path: Option<&Path>,
    ) -> Result<Option<DiagnosticList>, EditorError> {
        let _ = path;
        Ok(None)
    }

    /// The editor's language servers, for the LSP tools
    /// (docs/lsp.md, "Navigation through language servers");
    /// `None` (the default, e.g. [`DiskEditor`]) when it has none.
    fn navigator(&self) -> Option<std::sync::Arc<dyn LspNavigator>> {
        None
    }

    /// The texts the user sees that the files on disk do not hold: every
    /// loaded, file-backed buffer with unsaved changes (`'modified'`), and
    /// every named one whose file does not exist yet (`:edit new.py`, never
    /// written). Grep and Glob search these instead of the disk
    /// (docs/edits.md, "Search sees unsaved text"); one call is one
    /// main-thread trip in Neovim. The default (no editor buffers, e.g.
    /// [`DiskEditor`]) is none.
    ///
    /// Errors: [`EditorError::Unavailable`] when Neovim went away; callers
    /// search the disk alone then.
    async fn unsaved_texts(&self) -> Result<Vec<UnsavedText>, EditorError> {
        Ok(Vec::new())
    }
}

/// One buffer's text that differs from its file on disk, or has no file
/// yet ([`Editor::unsaved_texts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsavedText {
    /// Absolute path: the buffer's full name (symlinks not resolved).
    pub path: PathBuf,
    /// The buffer's logical text (see the module docs).
    pub text: String,
    /// `b:changedtick` when the text was taken (`:help changetick`).
    pub changedtick: u64,
    /// `true` when a file exists at `path` (the buffer is modified);
    /// `false` for a buffer never written.
    pub on_disk: bool,
}

/// 1-based first and last line (of `new`) of the span where `old` and `new`
/// differ, from their common prefix and suffix; `None` when equal.
pub fn changed_line_span(old: &str, new: &str) -> Option<(usize, usize)> {
    if old == new {
        return None;
    }
    let (prefix, _, new_mid) = codec::common_affixes(old, new);
    Some(line_span_of(new, prefix, new_mid))
}

/// The 1-based first and last line of `new` that the bytes
/// `prefix..prefix + new_mid` touch ([`changed_line_span`] when the common
/// affixes are already known).
pub fn line_span_of(new: &str, prefix: usize, new_mid: usize) -> (usize, usize) {
    let first = codec::count_newlines(&new[..prefix]) + 1;
    let last = first + codec::count_newlines(&new[prefix..prefix + new_mid]);
    (first, last)
}

#[cfg(test)]
mod stale_rule {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn buffer(tick: u64) -> Version {
        Version::Buffer {
            bufnr: 3,
            changedtick: tick,
        }
    }

    fn disk(secs: u64) -> Version {
        Version::Disk {
            mtime: Some(UNIX_EPOCH + Duration::from_secs(secs)),
            len: 12,
        }
    }

    /// Every row of the rule: loaded or not × version same or moved × text
    /// same or different. The closure panics when a row must not hash.
    #[test]
    fn table() {
        let read_text = "hello world\n";
        let rows: [(&str, Version, Version, &str, bool); 8] = [
            (
                "buffer, tick same, text same",
                buffer(7),
                buffer(7),
                read_text,
                false,
            ),
            // changedtick moves on every change, so the tick is trusted and
            // the text is not even hashed.
            (
                "buffer, tick same, text differs",
                buffer(7),
                buffer(7),
                "typed\n",
                false,
            ),
            (
                "buffer, tick moved, text same (:write, undo)",
                buffer(7),
                buffer(9),
                read_text,
                false,
            ),
            (
                "buffer, tick moved, text differs",
                buffer(7),
                buffer(9),
                "typed\n",
                true,
            ),
            (
                "file, mtime same, text same",
                disk(5),
                disk(5),
                read_text,
                false,
            ),
            // mtime is coarse: a rewrite within one tick keeps the version.
            (
                "file, mtime same, text differs",
                disk(5),
                disk(5),
                "other text\n",
                true,
            ),
            (
                "file, mtime moved, text same (touch)",
                disk(5),
                disk(6),
                read_text,
                false,
            ),
            (
                "file, mtime moved, text differs",
                disk(5),
                disk(6),
                "other text\n",
                true,
            ),
        ];
        for (what, then, now, text_now, want) in rows {
            let base = Stamp {
                version: then,
                hash: TextHash::of(read_text),
            };
            let trusts_tick = StaleMode::of(&now) == StaleMode::Tick && base.version == now;
            let got = base.is_stale(&now, || {
                assert!(!trusts_tick, "{what}: hashed although the tick decides");
                TextHash::of(text_now)
            });
            assert_eq!(got, want, "{what}");
        }
    }

    #[test]
    fn a_buffer_read_then_unloaded_is_judged_by_its_text() {
        let base = Stamp {
            version: buffer(4),
            hash: TextHash::of("a\n"),
        };
        assert_eq!(StaleMode::of(&disk(1)), StaleMode::TextOnly);
        assert!(!base.is_stale(&disk(1), || TextHash::of("a\n")));
        assert!(base.is_stale(&disk(1), || TextHash::of("b\n")));
    }
}
