//! What the model has read this session: one [`ReadRecord`] per file.
//!
//! Edit and Write consult it: a file must have been read before it is changed,
//! and the change is refused as stale when the file moved on since that read
//! (DESIGN.md §4). Edit and Write record their own result, so a second edit
//! needs no new Read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::editor::Stamp;

/// What one Read (or a lathe write) saw of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRecord {
    /// Version and text hash at the time.
    pub stamp: Stamp,
    /// 1-based first line shown, when the read was partial.
    pub offset: Option<usize>,
    /// Line count asked for, when the read was partial.
    pub limit: Option<usize>,
}

/// Per-session map from absolute path to the last [`ReadRecord`].
#[derive(Debug, Default)]
pub struct FileState {
    records: Mutex<HashMap<PathBuf, ReadRecord>>,
}

impl FileState {
    /// An empty state.
    pub fn new() -> Self {
        Self::default()
    }

    /// The record for `path`, if the model read it.
    pub fn get(&self, path: &Path) -> Option<ReadRecord> {
        self.lock().get(path).cloned()
    }

    /// Stores `record` for `path`, replacing an older one.
    pub fn record(&self, path: &Path, record: ReadRecord) {
        self.lock().insert(path.to_path_buf(), record);
    }

    /// Forgets `path`.
    pub fn forget(&self, path: &Path) {
        self.lock().remove(path);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, ReadRecord>> {
        // A poisoned lock only means another thread panicked mid-insert; the
        // map itself is still usable.
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }
}
