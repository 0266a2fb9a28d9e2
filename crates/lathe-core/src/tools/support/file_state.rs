//! What the model has read this session: one [`ReadRecord`] per file.
//!
//! Edit and Write consult it: a file must have been read before it is changed,
//! and the change is refused as stale when the file moved on since that read
//! (docs/edits.md, "The stale rule"). Edit and Write record their own
//! result, so a second edit needs no new Read.
//!
//! It also keeps the logical text of the few buffers the model read or
//! changed last, with the stamp it belongs to ([`FileState::remember_text`]),
//! so an Edit of a buffer still at that `changedtick` is planned without
//! reading the buffer on Neovim's main thread (docs/edits.md, "Edits
//! through buffers").

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::editor::{Stamp, Version};

/// Most texts [`FileState::remember_text`] keeps.
pub const TEXT_CACHE_FILES: usize = 8;
/// Most bytes of text [`FileState::remember_text`] keeps (all files together).
pub const TEXT_CACHE_BYTES: usize = 64 << 20;

/// The recent buffer texts, newest last; shared by a state and the staged
/// states over it (a text is only ever returned for its exact stamp).
#[derive(Debug, Default)]
struct TextCache {
    entries: Mutex<VecDeque<(PathBuf, Stamp, Arc<str>)>>,
}

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
    texts: Arc<TextCache>,
    /// Of a state without a parent: when each record was last made, and
    /// which files' content the model no longer has.
    seen: Mutex<Seen>,
}

/// Per file, when the model last read (or wrote) it, and whether that
/// content is still in the conversation (docs/context-and-compaction.md, "Context
/// and compaction").
#[derive(Debug, Default)]
struct Seen {
    /// Path → sequence number of its latest record (higher is newer).
    order: HashMap<PathBuf, u64>,
    next: u64,
    /// Files whose Read result was cleared or compacted away: the stamp
    /// still holds for the stale rule, but Read answers with the text
    /// again instead of "unchanged".
    gone: std::collections::HashSet<PathBuf>,
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
            texts: parent.texts.clone(),
            seen: Mutex::default(),
        }
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the content of the model's last read of `path` is still in
    /// the conversation (`false` once [`FileState::mark_gone`] said its
    /// result was cleared or compacted away, until the next record).
    pub fn content_in_context(&self, path: &Path) -> bool {
        match &self.parent {
            Some(p) => p.content_in_context(path),
            None => !self.seen().gone.contains(path),
        }
    }

    /// The model no longer has the text of its last read of `path` (the
    /// result was cleared); its record still holds for the stale rule.
    pub fn mark_gone(&self, path: &Path) {
        match &self.parent {
            Some(p) => p.mark_gone(path),
            None => {
                self.seen().gone.insert(path.to_path_buf());
            }
        }
    }

    /// [`FileState::mark_gone`] for every file (a compaction).
    pub fn mark_all_gone(&self) {
        match &self.parent {
            Some(p) => p.mark_all_gone(),
            None => {
                let paths: Vec<PathBuf> = self.lock().keys().cloned().collect();
                self.seen().gone.extend(paths);
            }
        }
    }

    /// Every file with a record, newest record first.
    pub fn recent(&self) -> Vec<(PathBuf, ReadRecord)> {
        if let Some(p) = &self.parent {
            return p.recent();
        }
        let records: Vec<(PathBuf, ReadRecord)> = self
            .lock()
            .iter()
            .filter_map(|(p, r)| r.clone().map(|r| (p.clone(), r)))
            .collect();
        let seen = self.seen();
        let mut out = records;
        out.sort_by_key(|(p, _)| std::cmp::Reverse(seen.order.get(p).copied().unwrap_or(0)));
        out
    }

    /// Keeps `text` as the logical text of `path` at `stamp` (which must be
    /// the stamp of exactly this text). Only buffer versions are kept (a
    /// file's version is not trusted, so its text is never reused); the
    /// oldest texts go beyond [`TEXT_CACHE_FILES`] files or
    /// [`TEXT_CACHE_BYTES`] bytes, and a text larger than that is not kept.
    pub fn remember_text(&self, path: &Path, stamp: &Stamp, text: Arc<str>) {
        if !matches!(stamp.version, Version::Buffer { .. }) || text.len() > TEXT_CACHE_BYTES {
            return;
        }
        let mut entries = self.texts_lock();
        entries.retain(|(p, _, _)| p != path);
        entries.push_back((path.to_path_buf(), stamp.clone(), text));
        let mut bytes: usize = entries.iter().map(|(_, _, t)| t.len()).sum();
        while entries.len() > TEXT_CACHE_FILES || bytes > TEXT_CACHE_BYTES {
            match entries.pop_front() {
                Some((_, _, t)) => bytes -= t.len(),
                None => break,
            }
        }
    }

    /// The text kept for `path` at exactly `stamp`, if any.
    pub fn text_at(&self, path: &Path, stamp: &Stamp) -> Option<Arc<str>> {
        self.texts_lock()
            .iter()
            .rev()
            .find(|(p, s, _)| p == path && s == stamp)
            .map(|(_, _, t)| t.clone())
    }

    fn texts_lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(PathBuf, Stamp, Arc<str>)>> {
        self.texts.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The record for `path`, if the model read it (own writes first, then
    /// the parent's).
    pub fn get(&self, path: &Path) -> Option<ReadRecord> {
        if let Some(own) = self.lock().get(path) {
            return own.clone();
        }
        self.parent.as_ref().and_then(|p| p.get(path))
    }

    /// Stores `record` for `path`, replacing an older one (its content is
    /// in the conversation again).
    pub fn record(&self, path: &Path, record: ReadRecord) {
        self.lock().insert(path.to_path_buf(), Some(record));
        if self.parent.is_none() {
            let mut seen = self.seen();
            seen.next += 1;
            let n = seen.next;
            seen.order.insert(path.to_path_buf(), n);
            seen.gone.remove(path);
        }
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
    fn texts_are_kept_per_exact_stamp_for_buffers_only_and_bounded() {
        let state = Arc::new(FileState::new());
        let staged = FileState::staged(&state);
        let p = Path::new("/a");
        let at = |n| rec(n).stamp;
        staged.remember_text(p, &at(1), Arc::from("one\n"));
        assert_eq!(state.text_at(p, &at(1)).as_deref(), Some("one\n"));
        assert_eq!(
            state.text_at(p, &at(2)),
            None,
            "another tick is another text"
        );
        state.remember_text(p, &at(2), Arc::from("two\n"));
        assert_eq!(state.text_at(p, &at(1)), None, "one text per file");
        let disk = Stamp {
            version: Version::Disk {
                mtime: None,
                len: 4,
            },
            hash: TextHash::of("d\n"),
        };
        state.remember_text(Path::new("/d"), &disk, Arc::from("d\n"));
        assert_eq!(
            state.text_at(Path::new("/d"), &disk),
            None,
            "a file's text is never reused"
        );
        for i in 0..=TEXT_CACHE_FILES {
            state.remember_text(&PathBuf::from(format!("/f{i}")), &at(1), Arc::from("x"));
        }
        assert_eq!(state.text_at(p, &at(2)), None, "the oldest text went");
        assert!(state.text_at(Path::new("/f1"), &at(1)).is_some());
        let huge: Arc<str> = Arc::from("y".repeat(TEXT_CACHE_BYTES / 2 + 1));
        state.remember_text(Path::new("/h1"), &at(1), huge.clone());
        state.remember_text(Path::new("/h2"), &at(1), huge);
        assert_eq!(
            state.text_at(Path::new("/h1"), &at(1)),
            None,
            "bytes are bounded"
        );
        assert!(state.text_at(Path::new("/h2"), &at(1)).is_some());
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
    fn cleared_content_is_gone_until_the_next_record_and_recent_is_newest_first() {
        let state = Arc::new(FileState::new());
        let (a, b) = (Path::new("/a"), Path::new("/b"));
        state.record(a, rec(1));
        state.record(b, rec(2));
        let staged = FileState::staged(&state);
        staged.mark_gone(a);
        assert!(
            !state.content_in_context(a),
            "marked through a staged state"
        );
        assert!(state.content_in_context(b));
        assert_eq!(
            state.get(a),
            Some(rec(1)),
            "the stamp stays for the stale rule"
        );
        let order: Vec<_> = state.recent().into_iter().map(|(p, _)| p).collect();
        assert_eq!(order, vec![b.to_path_buf(), a.to_path_buf()]);
        staged.record(a, rec(3));
        staged.commit();
        assert!(state.content_in_context(a), "read again");
        assert_eq!(state.recent()[0].0, a);
        state.mark_all_gone();
        assert!(!state.content_in_context(a) && !state.content_in_context(b));
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
