//! What the model has read this session: one [`ReadRecord`] per file.
//!
//! Edit and Write consult it: a file must have been read before it is changed,
//! and the change is refused as stale when the file moved on since that read
//! (docs/architecture.md, "The stale rule"). Edit and Write record their own
//! result, so a second edit needs no new Read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

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
///
/// A *staged* state (see [`FileState::staged`]) reads through to its parent
/// but keeps its own writes until [`FileState::commit`]: calls that run
/// concurrently each get one, and the batch commits them in the model's call
/// order, so the final state never depends on which call finished first.
#[derive(Debug, Default)]
pub struct FileState {
    records: Mutex<HashMap<PathBuf, Option<ReadRecord>>>,
    parent: Option<Arc<FileState>>,
}

impl FileState {
    /// An empty state.
    pub fn new() -> Self {
        Self::default()
    }

    /// A state over `parent` whose writes stay local until [`commit`](Self::commit).
    pub fn staged(parent: &Arc<FileState>) -> Self {
        Self {
            records: Mutex::default(),
            parent: Some(parent.clone()),
        }
    }

    /// The record for `path`, if the model read it (own writes first, then
    /// the parent's).
    pub fn get(&self, path: &Path) -> Option<ReadRecord> {
        if let Some(own) = self.lock().get(path) {
            return own.clone();
        }
        self.parent.as_ref().and_then(|p| p.get(path))
    }

    /// Stores `record` for `path`, replacing an older one.
    pub fn record(&self, path: &Path, record: ReadRecord) {
        self.lock().insert(path.to_path_buf(), Some(record));
    }

    /// Forgets `path`.
    pub fn forget(&self, path: &Path) {
        if self.parent.is_some() {
            self.lock().insert(path.to_path_buf(), None);
        } else {
            self.lock().remove(path);
        }
    }

    /// Applies a staged state's writes to its parent (no-op without one) and
    /// empties it.
    pub fn commit(&self) {
        let Some(parent) = &self.parent else { return };
        let writes: Vec<_> = self.lock().drain().collect();
        for (path, rec) in writes {
            match rec {
                Some(r) => parent.record(&path, r),
                None => parent.forget(&path),
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Option<ReadRecord>>> {
        // A poisoned lock only means another thread panicked mid-insert; the
        // map itself is still usable.
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::editor::{Stamp, TextHash, Version};

    fn rec(n: u64) -> ReadRecord {
        ReadRecord {
            stamp: Stamp {
                version: Version::Buffer {
                    bufnr: 1,
                    changedtick: n,
                },
                hash: TextHash::of(""),
            },
            offset: None,
            limit: None,
        }
    }

    #[test]
    fn staged_writes_stay_local_until_commit_and_commit_in_call_order() {
        let shared = Arc::new(FileState::new());
        let p = Path::new("/a");
        shared.record(p, rec(1));
        let first = FileState::staged(&shared);
        let second = FileState::staged(&shared);
        second.record(p, rec(3));
        first.record(p, rec(2));
        assert_eq!(first.get(p), Some(rec(2)));
        assert_eq!(shared.get(p), Some(rec(1)), "nothing visible before commit");
        // Committed in call order: the later call's record wins, whatever
        // order the calls finished in.
        first.commit();
        second.commit();
        assert_eq!(shared.get(p), Some(rec(3)));
    }

    #[test]
    fn staged_forget_hides_the_parent_record() {
        let shared = Arc::new(FileState::new());
        let p = Path::new("/a");
        shared.record(p, rec(1));
        let staged = FileState::staged(&shared);
        staged.forget(p);
        assert_eq!(staged.get(p), None);
        staged.commit();
        assert_eq!(shared.get(p), None);
    }
}
