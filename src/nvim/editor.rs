//! `NvimEditor`: the [`Editor`] that serves loaded buffers on Neovim's main
//! thread and delegates everything else to an inner (disk) editor
//! (docs/architecture.md, "Layers" and "Edits through buffers").

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;

use super::bridge::MainThread;
use super::buffer_text::{canonical, read_loaded, unsaved_texts, write_loaded};
use crate::editor::{Document, Editor, EditorError, UnsavedText, WriteOutcome, WriteRequest};

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
}

impl NvimEditor {
    /// An editor posting buffer work through `main`, delegating files that
    /// are not loaded to `inner`; `save_after_edit` is
    /// `Config::save_after_edit` (write buffers that had no unsaved changes).
    pub fn new(main: MainThread, inner: Arc<dyn Editor>, save_after_edit: bool) -> Self {
        Self {
            main,
            inner,
            save_after_edit,
        }
    }
}

fn bridge_error(e: super::bridge::BridgeError) -> EditorError {
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

    async fn write(&self, path: &Path, req: WriteRequest) -> Result<WriteOutcome, EditorError> {
        let canon = canonical(path);
        let p = path.to_path_buf();
        let save = self.save_after_edit;
        let r = req.clone();
        let applied = self
            .main
            .run(move || write_loaded(&p, canon.as_deref(), &r, save))
            .await
            .map_err(bridge_error)?;
        match applied {
            Some(outcome) => outcome,
            None => self.inner.write(path, req).await,
        }
    }

    /// One main-thread trip: the modified buffers and the named buffers
    /// without a file ([`unsaved_texts`]).
    async fn unsaved_texts(&self) -> Result<Vec<UnsavedText>, EditorError> {
        self.main.run(unsaved_texts).await.map_err(bridge_error)
    }
}
