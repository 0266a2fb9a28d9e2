//! `NvimEditor`: the [`Editor`] that serves loaded buffers on Neovim's main
//! thread and delegates everything else to an inner (disk) editor
//! (docs/architecture.md, "Layers" and "Edits through buffers").

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::adapters::buffer_text::{
    canonical, read_loaded, read_unless_loaded, unsaved_texts, write_loaded, write_with_nvim,
    SpanEdit, Written,
};
use crate::adapters::direct_write::{self, DirectWrite};
use crate::adapters::lsp::{self, LspWatch};
use crate::adapters::lsp_nav::NvimLsp;
use crate::host::bridge::MainThread;
use lathe_core::config::SaveMode;
use lathe_core::editor::{
    DiagnosticList, DiagnosticWatch, Document, Editor, EditorError, Fresh, LspNavigator, TextHash,
    UnsavedText, Version, WriteOutcome, WriteRequest,
};

/// Reads and writes through Neovim's buffers when the file is loaded.
///
/// Loaded means: a loaded buffer whose full name is the path (compared after
/// canonicalizing both, so symlinks resolve). Such a document's text is the
/// buffer's (unsaved changes included) and its version is
/// `Version::Buffer { bufnr, changedtick }`; a write is one main-thread step
/// (stale check + `nvim_buf_set_text` + optional `:write`). Files not loaded
/// go to `inner`, off the main thread.
pub struct NvimEditor {
    main: MainThread,
    inner: Arc<dyn Editor>,
    save_after_edit: bool,
    save_mode: SaveMode,
    diagnostics_wait: Duration,
    lsp: Arc<NvimLsp>,
}

impl NvimEditor {
    /// An editor posting buffer work through `main`, delegating files that
    /// are not loaded to `inner`; `save_after_edit` is
    /// `Config::save_after_edit` (write buffers that had no unsaved changes).
    pub fn new(main: MainThread, inner: Arc<dyn Editor>, save_after_edit: bool) -> Self {
        Self {
            lsp: Arc::new(NvimLsp::new(
                main.clone(),
                Duration::from_millis(lathe_core::config::DEFAULT_LSP_TIMEOUT_MS),
            )),
            main,
            inner,
            save_after_edit,
            save_mode: SaveMode::default(),
            diagnostics_wait: Duration::from_millis(
                lathe_core::config::DEFAULT_DIAGNOSTICS_WAIT_MS,
            ),
        }
    }

    /// The same editor saving buffers the `mode` way (`Config::save`,
    /// `setup{ save }`): [`SaveMode::Write`] always through Neovim's
    /// `:write`, never the direct save.
    pub fn with_save_mode(mut self, mode: SaveMode) -> Self {
        self.save_mode = mode;
        self
    }

    /// The same editor with `timeout` as the bound of each LSP tool's
    /// question to the language servers (`Config::lsp_timeout_ms`).
    pub fn with_lsp_timeout(mut self, timeout: Duration) -> Self {
        self.lsp = Arc::new(NvimLsp::new(self.main.clone(), timeout));
        self
    }

    /// The same editor with `wait` as the bound of an edit's wait for its
    /// language servers' diagnostics (`Config::diagnostics_wait_ms`; zero
    /// turns the wait and the diagnostics in edit results off).
    pub fn with_diagnostics_wait(mut self, wait: Duration) -> Self {
        self.diagnostics_wait = wait;
        self
    }

    /// How many buffer lines all `NvimEditor`s of this process have fetched
    /// from Neovim (`nvim_buf_get_lines`), a count that only grows: tests
    /// bound what a call costs the main thread with it (an Edit of a buffer
    /// at the tick of the model's last Read fetches only the lines it
    /// replaces; docs/edits.md, "Edits through buffers").
    pub fn lines_read() -> u64 {
        crate::host::stats::STATS.get(crate::host::stats::Counter::LinesRead)
    }

    /// `(saved by :write, saved without it)`: how many buffers all
    /// `NvimEditor`s of this process saved each way (`:help lathe-save`);
    /// tests assert which way an edit went with it.
    pub fn write_counts() -> (u64, u64) {
        crate::host::main_stats::write_counts()
    }
}

/// `fsync` of the file a buffer write left owed (`Owed::sync`), on a
/// blocking thread: the flush `'fsync'` would have made Neovim wait for.
/// A failure is ignored: the text is written, only its durability after a
/// crash is in question.
async fn sync_file(owed: Option<std::path::PathBuf>) {
    if let Some(path) = owed {
        let _ = tokio::task::spawn_blocking(move || {
            std::fs::File::open(path).and_then(|f| f.sync_all())
        })
        .await;
    }
}

/// A direct save's file write under way on a blocking thread: what `stat`
/// says of the file it wrote, or the failure as text
/// ([`direct_write::write_file`]).
type Writing = tokio::task::JoinHandle<Result<direct_write::FileStamp, String>>;

/// Starts the file write of the direct save the write step left owed
/// (`Owed::direct`) as soon as the step is back, so it runs while the
/// stamp's hash (`hash_meanwhile`) is still being computed instead of after
/// it. `None` when nothing is owed or the step did not apply the change.
fn start_direct_write(
    owed: Option<&DirectWrite>,
    req: &Arc<WriteRequest>,
    applied: &Result<WriteOutcome, EditorError>,
) -> Option<Writing> {
    let write = owed?.clone();
    if applied.is_err() {
        return None;
    }
    let text = req.text.clone();
    Some(tokio::task::spawn_blocking(move || {
        direct_write::write_file(&write, &text)
    }))
}

impl NvimEditor {
    /// Completes a direct save (docs/edits.md, "Edits through
    /// buffers"): waits for the file write `writing` started
    /// ([`start_direct_write`]), then makes Neovim take the file
    /// (`direct_write::finish`) in one more main-thread step. When the file
    /// was written that step is queued, not waited for: the file already
    /// holds the edit, the step cannot fail, and the main thread runs it
    /// before any later lathe work (the bridge is first in, first out) — the
    /// result needs no third round trip. Only a failed write waits, for
    /// Neovim's `:write` in its place. Sets the outcome's `saved`.
    async fn save_directly(
        &self,
        owed: Option<DirectWrite>,
        writing: Option<Writing>,
        path: &Path,
        applied: &mut Result<WriteOutcome, EditorError>,
    ) {
        let (Some(write), Some(writing), Ok(outcome)) = (owed, writing, applied.as_mut()) else {
            return;
        };
        let written = writing.await.unwrap_or_else(|e| Err(e.to_string()));
        if written.is_ok() {
            // `finish` never falls back to `:write` for a written file.
            let _ = self.main.post(move || {
                direct_write::finish(&write, written, |_| false);
            });
            outcome.saved = true;
            return;
        }
        let p = path.to_path_buf();
        let finished = self
            .main
            .run(move || {
                let mut sync = None;
                let saved = direct_write::finish(&write, written, |b| {
                    write_with_nvim(b, &p).map(|s| sync = s.sync).is_some()
                });
                (saved, sync)
            })
            .await;
        if let Ok((saved, owed_sync)) = finished {
            sync_file(owed_sync).await;
            outcome.saved = saved;
        }
    }
}

impl NvimEditor {
    /// The write of [`Editor::write`] and [`Editor::write_watched`]: one
    /// main-thread step applies `req` to the loaded buffer of `path`
    /// (`write_loaded`; with `watch`, also the buffer's LSP baseline before
    /// and the diagnostics watch's start after it), then [`settle`](Self::settle)
    /// does what the step left owed. A file not loaded goes to `inner` (no
    /// watch).
    async fn write_through(
        &self,
        path: &Path,
        req: WriteRequest,
        watch: bool,
    ) -> Result<(WriteOutcome, Option<lsp::Started>), EditorError> {
        let canon = canonical(path);
        let p = path.to_path_buf();
        let save = self.save_after_edit.then_some(self.save_mode);
        let span = SpanEdit::prepare(&req);
        let req = Arc::new(req);
        let hashing = span.is_some().then(|| hash_meanwhile(&req));
        let r = req.clone();
        let stepped = self
            .main
            .run(move || {
                let base = watch
                    .then(|| lsp::loaded_bufnr(&p, canon.as_deref()).and_then(lsp::baseline))
                    .flatten();
                let written = write_loaded(&p, canon.as_deref(), &r, save, span.as_ref())?;
                let started = match (&written.result, base) {
                    (Ok(_), Some(b)) => lsp::start(b),
                    _ => None,
                };
                Some((written, started))
            })
            .await
            .map_err(bridge_error)?;
        let Some((written, started)) = stepped else {
            return Ok((self.inner.write(path, unshare(req)).await?, None));
        };
        let outcome = self.settle(written, hashing, &req, path).await?;
        Ok((outcome, started))
    }

    /// Finishes what a buffer write's main-thread step left owed
    /// ([`Written::owed`]), in this order: starts the direct save's file
    /// write, `fsync`s the file `:write` wrote, puts the text's hash
    /// (`hashing`) in the stamp, and completes the direct save.
    async fn settle(
        &self,
        written: Written,
        hashing: Option<tokio::task::JoinHandle<TextHash>>,
        req: &Arc<WriteRequest>,
        path: &Path,
    ) -> Result<WriteOutcome, EditorError> {
        let Written { mut result, owed } = written;
        let writing = start_direct_write(owed.direct.as_ref(), req, &result);
        sync_file(owed.sync).await;
        stamp_hash(owed.hash, hashing, &mut result).await;
        self.save_directly(owed.direct, writing, path, &mut result)
            .await;
        result
    }
}

/// Hashes the request's text on a blocking thread while the main thread
/// applies it (`SpanEdit` leaves the hash to the caller).
fn hash_meanwhile(req: &Arc<WriteRequest>) -> tokio::task::JoinHandle<TextHash> {
    let r = req.clone();
    tokio::task::spawn_blocking(move || TextHash::of(&r.text))
}

/// Puts the hash of the request's text into the outcome when the write step
/// left it owed (`Owed::hash`); else the hashing is left to finish
/// unread.
async fn stamp_hash(
    owed: bool,
    hashing: Option<tokio::task::JoinHandle<TextHash>>,
    applied: &mut Result<WriteOutcome, EditorError>,
) {
    if !owed {
        return;
    }
    if let Ok(outcome) = applied.as_mut() {
        let hashed = match hashing {
            Some(h) => h.await.ok(),
            None => None,
        };
        match hashed {
            Some(h) => outcome.stamp.hash = h,
            // No hash: the stamp matches no text; the next edit then
            // compares the buffer's text, and the text is not kept.
            None => outcome.exact = false,
        }
    }
}

/// The request back from its `Arc` (its texts are shared `Arc`s, so even a
/// copy, when another holder is still alive, copies no text).
fn unshare(req: Arc<WriteRequest>) -> WriteRequest {
    Arc::try_unwrap(req).unwrap_or_else(|shared| (*shared).clone())
}

fn bridge_error(e: crate::host::bridge::BridgeError) -> EditorError {
    EditorError::Unavailable(e.to_string())
}

#[async_trait]
impl Editor for NvimEditor {
    async fn read(&self, path: &Path) -> Result<Document, EditorError> {
        let canon = canonical(path);
        let p = path.to_path_buf();
        let loaded = self
            .main
            .run(move || read_loaded(&p, canon.as_deref()))
            .await
            .map_err(bridge_error)?;
        match loaded {
            Some(doc) => doc,
            None => self.inner.read(path).await,
        }
    }

    /// One main-thread trip: a buffer still at `known` costs its tick and
    /// options, no line; else it is read once (files not loaded: `inner`).
    async fn read_unless(&self, path: &Path, known: &Version) -> Result<Fresh, EditorError> {
        let canon = canonical(path);
        let p = path.to_path_buf();
        let k = known.clone();
        let loaded = self
            .main
            .run(move || read_unless_loaded(&p, canon.as_deref(), &k))
            .await
            .map_err(bridge_error)?;
        match loaded {
            Some(fresh) => fresh,
            None => self.inner.read_unless(path, known).await,
        }
    }

    /// One main-thread trip; with the tick unchanged since the base and
    /// `req.base_text` given, only the tick check, `nvim_buf_set_text` on the
    /// span and the `:write` run there (`SpanEdit`, worked out here first).
    async fn write(&self, path: &Path, req: WriteRequest) -> Result<WriteOutcome, EditorError> {
        Ok(self.write_through(path, req, false).await?.0)
    }

    /// One main-thread step: the buffer's clients and diagnostics, the
    /// change (`write_loaded`), then a `DiagnosticChanged` watch; a buffer
    /// without clients costs nothing more than [`write`](Editor::write).
    async fn write_watched(
        &self,
        path: &Path,
        req: WriteRequest,
    ) -> Result<(WriteOutcome, Option<Box<dyn DiagnosticWatch>>), EditorError> {
        let watch = !self.diagnostics_wait.is_zero();
        let (outcome, started) = self.write_through(path, req, watch).await?;
        let watch = started.map(|s| {
            Box::new(LspWatch::new(self.main.clone(), self.diagnostics_wait, s))
                as Box<dyn DiagnosticWatch>
        });
        Ok((outcome, watch))
    }

    /// `vim.diagnostic.get()` for the buffer of `path` (none loaded: no
    /// diagnostics) or every buffer, with the running clients' count.
    async fn diagnostics(
        &self,
        path: Option<&Path>,
    ) -> Result<Option<DiagnosticList>, EditorError> {
        let canon = path.and_then(canonical);
        let p = path.map(Path::to_path_buf);
        let list = self
            .main
            .run(move || {
                let bufnr = match &p {
                    Some(p) => match lsp::loaded_bufnr(p, canon.as_deref()) {
                        Some(b) => Some(b),
                        None => {
                            return Ok(DiagnosticList {
                                servers: lsp::clients(None),
                                items: Vec::new(),
                                not_open: true,
                            })
                        }
                    },
                    None => None,
                };
                lsp::list(bufnr)
            })
            .await
            .map_err(bridge_error)?
            .map_err(EditorError::Unavailable)?;
        Ok(Some(list))
    }

    /// `vim.lsp`, through [`NvimLsp`].
    fn navigator(&self) -> Option<Arc<dyn LspNavigator>> {
        Some(self.lsp.clone())
    }

    /// One main-thread trip: the modified buffers and the named buffers
    /// without a file (`unsaved_texts`).
    async fn unsaved_texts(&self) -> Result<Vec<UnsavedText>, EditorError> {
        self.main.run(unsaved_texts).await.map_err(bridge_error)
    }
}
