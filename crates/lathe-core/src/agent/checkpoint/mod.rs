//! Checkpoints: every prompt starts one, holding the text before the turn
//! of every file the turn changes through lathe's tools (a loaded buffer's
//! text or the file on disk) and what lathe's last write left, so
//! `:Lathe changes` can show a turn's (or the session's) changes against
//! them and `:Lathe rewind` can take the code and the conversation back
//! (docs/checkpoints.md).
//!
//! - [`Recording`] wraps the session's `Editor`: while a prompt's turn runs
//!   every successful write notes the file's text before it (the first
//!   write of the turn) and after it (every write).
//! - [`Checkpoints`] keeps them, in order, and what the user accepted in
//!   the review (`keep`): the base the review diffs against moves on.
//! - They are saved with the session (`Record::CheckpointBegin`,
//!   `Record::CheckpointFiles`; each text once per session, by hash) and a
//!   resume brings them back, so they live and go with the session file.
//!   A text larger than [`MAX_KEPT_TEXT`] bytes, or past
//!   [`MAX_SESSION_TEXT`] bytes kept by the session, is not kept: that
//!   file is listed, and cannot be restored.
//! - Commands Bash runs are not tracked; at the end of a turn that ran one,
//!   `git status` tells which files of the project changed meanwhile
//!   ([`git`]), and they are listed.

pub mod git;
pub mod merge;
pub mod rewind;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;

use super::session_log::{Mark, Record, SavedFile, SavedText};
use crate::editor::{
    DiagnosticList, DiagnosticWatch, Document, Editor, EditorError, Fresh, LspNavigator, TextHash,
    UnsavedText, Version, WriteOutcome, WriteRequest,
};

/// Largest text a checkpoint keeps, in bytes (1 MiB).
pub const MAX_KEPT_TEXT: usize = 1024 * 1024;

/// Most bytes of text a session's checkpoints keep (64 MiB); texts past it
/// are not kept.
pub const MAX_SESSION_TEXT: usize = 64 * 1024 * 1024;

/// A file's text at one moment, as a checkpoint keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kept {
    /// There was no file.
    Absent,
    /// The logical text.
    Text(Arc<str>),
    /// Too large to keep (this many bytes).
    NotKept(u64),
}

impl Kept {
    /// The text (`Ok(None)`: no file); `Err(bytes)` when it was not kept.
    pub fn text(&self) -> Result<Option<&str>, u64> {
        match self {
            Kept::Absent => Ok(None),
            Kept::Text(t) => Ok(Some(t)),
            Kept::NotKept(n) => Err(*n),
        }
    }
}

/// One file a checkpoint's turn changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// Absolute path.
    pub path: PathBuf,
    /// Before the prompt (before the turn's first write).
    pub before: Kept,
    /// After lathe's last write in the turn.
    pub after: Kept,
}

/// One prompt's checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// Its number in the session: 1 for the first prompt, and on.
    pub id: u64,
    /// The prompt as typed.
    pub prompt: String,
    /// The conversation before the prompt.
    pub mark: Mark,
    /// Whether the conversation can still go back to it (`false` once a
    /// compaction replaced the messages it points into).
    pub conversation: bool,
    /// The transcript's generation then (a compaction moves it; the
    /// conversation can go back only within one generation).
    pub generation: u64,
    /// The files the turn changed through lathe's tools, in the order of
    /// first change.
    pub files: Vec<FileChange>,
    /// Files in the project that changed while the turn's Bash commands
    /// ran (as `git status` tells; not restored by a rewind).
    pub bash_touched: Vec<PathBuf>,
}

#[derive(Default)]
struct State {
    list: Vec<Checkpoint>,
    /// A turn is running: writes are recorded in the last checkpoint.
    open: bool,
    next_id: u64,
    /// Bytes of text kept so far (each text once).
    kept_bytes: usize,
    /// Texts kept, by hash (one copy of each; what was saved already).
    texts: HashMap<TextHash, Arc<str>>,
    saved: std::collections::HashSet<TextHash>,
    /// Bases the user moved on in the review (`keep`), by path.
    accepted: HashMap<PathBuf, Kept>,
}

/// A session's checkpoints (see the module docs).
#[derive(Default)]
pub struct Checkpoints {
    state: Mutex<State>,
}

impl std::fmt::Debug for Checkpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoints")
            .field("count", &self.lock().list.len())
            .finish()
    }
}

impl Checkpoints {
    /// Opens the checkpoint of a new prompt: writes are recorded in it
    /// until [`Checkpoints::end`]. Returns its number.
    pub fn begin(&self, prompt: &str, mark: Mark, generation: u64) -> u64 {
        let mut s = self.lock();
        s.next_id += 1;
        let id = s.next_id;
        s.list.push(Checkpoint {
            id,
            prompt: prompt.to_string(),
            mark,
            conversation: true,
            generation,
            files: Vec::new(),
            bash_touched: Vec::new(),
        });
        s.open = true;
        id
    }

    /// Closes the open checkpoint, noting `bash_touched`, and returns the
    /// record that saves its files (`None` when none is open).
    pub fn end(&self, bash_touched: Vec<PathBuf>) -> Option<Record> {
        let mut s = self.lock();
        if !s.open {
            return None;
        }
        s.open = false;
        let State {
            list, texts, saved, ..
        } = &mut *s;
        let cp = list.last_mut()?;
        cp.bash_touched = bash_touched
            .into_iter()
            .filter(|p| !cp.files.iter().any(|f| f.path == *p))
            .collect();
        let mut new_texts = BTreeMap::new();
        let mut save = |k: &Kept| match k {
            Kept::Absent => SavedText::Absent,
            Kept::NotKept(n) => SavedText::NotKept(*n),
            Kept::Text(t) => {
                let hash = TextHash::of(t);
                if saved.insert(hash) {
                    new_texts.insert(hash.to_hex(), t.to_string());
                }
                texts.entry(hash).or_insert_with(|| t.clone());
                SavedText::Sha(hash.to_hex())
            }
        };
        let files = cp
            .files
            .iter()
            .map(|f| SavedFile {
                path: f.path.clone(),
                before: save(&f.before),
                after: save(&f.after),
            })
            .collect();
        Some(Record::CheckpointFiles {
            id: cp.id,
            files,
            texts: new_texts,
            bash_touched: cp.bash_touched.clone(),
        })
    }

    /// Whether a prompt's turn is running (writes are recorded).
    pub fn is_open(&self) -> bool {
        self.lock().open
    }

    /// Notes a write of lathe's tools: `before` the text the write replaced
    /// (`None`: it made the file), `after` the text it left. Only the
    /// turn's first write of a file sets its `before`.
    pub fn record_write(&self, path: &Path, before: Option<&str>, after: &str) {
        let mut s = self.lock();
        if !s.open {
            return;
        }
        let after = s.keep(Some(after));
        let known = s
            .list
            .last()
            .is_some_and(|cp| cp.files.iter().any(|f| f.path == path));
        let before = if known { None } else { Some(s.keep(before)) };
        let Some(cp) = s.list.last_mut() else { return };
        match cp.files.iter_mut().find(|f| f.path == path) {
            Some(f) => f.after = after,
            None => cp.files.push(FileChange {
                path: path.to_path_buf(),
                before: before.unwrap_or(Kept::Absent),
                after,
            }),
        }
    }

    /// Every checkpoint, oldest first.
    pub fn list(&self) -> Vec<Checkpoint> {
        self.lock().list.clone()
    }

    /// A compaction replaced the conversation: no checkpoint so far can
    /// take it back any more.
    pub fn conversation_gone(&self) {
        for cp in &mut self.lock().list {
            cp.conversation = false;
        }
    }

    /// Drops checkpoint `id` and every later one (their conversation was
    /// rewound away).
    pub fn drop_from(&self, id: u64) {
        self.lock().list.retain(|cp| cp.id < id);
    }

    /// The files changed since checkpoint `from` (its prompt and every
    /// later one), each with its text before `from`'s prompt (the earliest
    /// `before`) and after lathe's last write (the latest `after`), in the
    /// order of first change.
    pub fn changed_since(&self, from: u64) -> Vec<FileChange> {
        let s = self.lock();
        let mut out: Vec<FileChange> = Vec::new();
        for cp in s.list.iter().filter(|cp| cp.id >= from) {
            for f in &cp.files {
                match out.iter_mut().find(|o| o.path == f.path) {
                    Some(o) => o.after = f.after.clone(),
                    None => out.push(f.clone()),
                }
            }
        }
        out
    }

    /// What `:Lathe changes` diffs against: the files changed since
    /// checkpoint `from`, each with its base (the text before, or what the
    /// user accepted in the review since).
    pub fn review_bases(&self, from: u64) -> Vec<(PathBuf, Kept)> {
        let changed = self.changed_since(from);
        let s = self.lock();
        changed
            .into_iter()
            .map(|f| {
                let base = s.accepted.get(&f.path).cloned().unwrap_or(f.before);
                (f.path, base)
            })
            .collect()
    }

    /// The user kept hunks of `path` in the review: `base` is what the
    /// review diffs against from now on.
    pub fn accept(&self, path: &Path, base: Option<&str>) {
        let mut s = self.lock();
        let kept = s.keep(base);
        s.accepted.insert(path.to_path_buf(), kept);
    }

    /// A rewind of the code to before checkpoint `from` left `path` as
    /// `now` (`None`: no file): every checkpoint from `from` on now ends
    /// with that text, so a later rewind further back sees no user edit in
    /// what the restore did.
    /// Returns how the session file keeps it, with its text when no
    /// record holds it yet (`(hash, text)`).
    pub fn restored(
        &self,
        from: u64,
        path: &Path,
        now: Option<&str>,
    ) -> (SavedText, Option<(String, String)>) {
        let mut s = self.lock();
        let now = s.keep(now);
        for cp in s.list.iter_mut().filter(|cp| cp.id >= from) {
            for f in cp.files.iter_mut().filter(|f| f.path == path) {
                f.after = now.clone();
            }
        }
        match &now {
            Kept::Absent => (SavedText::Absent, None),
            Kept::NotKept(n) => (SavedText::NotKept(*n), None),
            Kept::Text(t) => {
                let hash = TextHash::of(t);
                let new = s.saved.insert(hash).then(|| (hash.to_hex(), t.to_string()));
                (SavedText::Sha(hash.to_hex()), new)
            }
        }
    }

    /// Forgets what the review accepted for `paths` (a rewind restored
    /// them).
    pub fn forget_accepted(&self, paths: &[PathBuf]) {
        let mut s = self.lock();
        for p in paths {
            s.accepted.remove(p);
        }
    }

    /// Brings checkpoints back from a session file's records (a resume).
    pub fn restore(&self, records: &[Record]) {
        let mut s = self.lock();
        let mut texts: HashMap<String, Arc<str>> = HashMap::new();
        for r in records {
            match r {
                Record::CheckpointBegin { id, mark, prompt } => {
                    s.list.push(Checkpoint {
                        id: *id,
                        prompt: prompt.clone(),
                        mark: *mark,
                        conversation: true,
                        generation: 0,
                        files: Vec::new(),
                        bash_touched: Vec::new(),
                    });
                    s.next_id = s.next_id.max(*id);
                }
                Record::CheckpointFiles {
                    id,
                    files,
                    texts: new,
                    bash_touched,
                } => {
                    for (hash, text) in new {
                        texts.insert(hash.clone(), Arc::from(text.as_str()));
                    }
                    let get = |t: &SavedText| match t {
                        SavedText::Absent => Kept::Absent,
                        SavedText::NotKept(n) => Kept::NotKept(*n),
                        SavedText::Sha(h) => match texts.get(h) {
                            Some(t) => Kept::Text(t.clone()),
                            None => Kept::NotKept(0),
                        },
                    };
                    let files: Vec<FileChange> = files
                        .iter()
                        .map(|f| FileChange {
                            path: f.path.clone(),
                            before: get(&f.before),
                            after: get(&f.after),
                        })
                        .collect();
                    if let Some(cp) = s.list.iter_mut().find(|cp| cp.id == *id) {
                        cp.files = files;
                        cp.bash_touched = bash_touched.clone();
                    }
                }
                Record::Rewind {
                    to,
                    conversation: Some(_),
                    ..
                } => s.list.retain(|cp| cp.id < *to),
                Record::Rewind {
                    to,
                    conversation: None,
                    restored,
                    texts: new,
                    ..
                } => {
                    for (hash, text) in new {
                        texts.insert(hash.clone(), Arc::from(text.as_str()));
                    }
                    for (path, saved) in restored {
                        let now = match saved {
                            SavedText::Absent => Kept::Absent,
                            SavedText::NotKept(n) => Kept::NotKept(*n),
                            SavedText::Sha(h) => match texts.get(h) {
                                Some(t) => Kept::Text(t.clone()),
                                None => Kept::NotKept(0),
                            },
                        };
                        for cp in s.list.iter_mut().filter(|cp| cp.id >= *to) {
                            for f in cp.files.iter_mut().filter(|f| f.path == *path) {
                                f.after = now.clone();
                            }
                        }
                    }
                }
                Record::Compacted { .. } => {
                    for cp in &mut s.list {
                        cp.conversation = false;
                    }
                }
                _ => {}
            }
        }
        for (hash, text) in texts {
            if let Some(h) = TextHash::from_hex(&hash) {
                s.kept_bytes += text.len();
                s.saved.insert(h);
                s.texts.insert(h, text);
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl State {
    /// `text` as kept: one copy per text, within the size limits.
    fn keep(&mut self, text: Option<&str>) -> Kept {
        let Some(text) = text else {
            return Kept::Absent;
        };
        let hash = TextHash::of(text);
        if let Some(t) = self.texts.get(&hash) {
            return Kept::Text(t.clone());
        }
        if text.len() > MAX_KEPT_TEXT || self.kept_bytes + text.len() > MAX_SESSION_TEXT {
            return Kept::NotKept(text.len() as u64);
        }
        self.kept_bytes += text.len();
        let t: Arc<str> = Arc::from(text);
        self.texts.insert(hash, t.clone());
        Kept::Text(t)
    }
}

/// The session's `Editor` with every write of a running turn noted in its
/// [`Checkpoints`] (see the module docs). Reads pass through.
pub struct Recording {
    inner: Arc<dyn Editor>,
    checkpoints: Arc<Checkpoints>,
}

impl Recording {
    /// `inner`, noting its writes in `checkpoints`.
    pub fn new(inner: Arc<dyn Editor>, checkpoints: Arc<Checkpoints>) -> Self {
        Self { inner, checkpoints }
    }

    /// The text a write is about to replace, when a checkpoint needs it:
    /// the writer's own copy, or a read (`None`: a new file).
    async fn before(&self, path: &Path, req: &WriteRequest) -> Option<Option<String>> {
        if !self.checkpoints.is_open() {
            return None;
        }
        if req.base.is_none() {
            return Some(None);
        }
        if let Some(text) = &req.base_text {
            return Some(Some(text.to_string()));
        }
        match self.inner.read(path).await {
            Ok(doc) => Some(Some(doc.text)),
            Err(EditorError::NotFound(_)) => Some(None),
            Err(_) => None,
        }
    }

    fn note(&self, path: &Path, before: Option<Option<String>>, req: &WriteRequest) {
        if let Some(before) = before {
            self.checkpoints
                .record_write(path, before.as_deref(), &req.text);
        }
    }
}

#[async_trait]
impl Editor for Recording {
    async fn read(&self, path: &Path) -> Result<Document, EditorError> {
        self.inner.read(path).await
    }

    async fn read_unless(&self, path: &Path, known: &Version) -> Result<Fresh, EditorError> {
        self.inner.read_unless(path, known).await
    }

    async fn write(&self, path: &Path, req: WriteRequest) -> Result<WriteOutcome, EditorError> {
        let before = self.before(path, &req).await;
        let out = self.inner.write(path, req.clone()).await?;
        self.note(path, before, &req);
        Ok(out)
    }

    async fn write_watched(
        &self,
        path: &Path,
        req: WriteRequest,
    ) -> Result<(WriteOutcome, Option<Box<dyn DiagnosticWatch>>), EditorError> {
        let before = self.before(path, &req).await;
        let out = self.inner.write_watched(path, req.clone()).await?;
        self.note(path, before, &req);
        Ok(out)
    }

    async fn diagnostics(
        &self,
        path: Option<&Path>,
    ) -> Result<Option<DiagnosticList>, EditorError> {
        self.inner.diagnostics(path).await
    }

    fn navigator(&self) -> Option<Arc<dyn LspNavigator>> {
        self.inner.navigator()
    }

    async fn unsaved_texts(&self) -> Result<Vec<UnsavedText>, EditorError> {
        self.inner.unsaved_texts().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(len: usize) -> Mark {
        Mark {
            len,
            last_blocks: None,
        }
    }

    #[test]
    fn only_a_running_turn_records_and_the_first_before_stays() {
        let c = Checkpoints::default();
        c.record_write(Path::new("/p/a"), Some("x"), "y");
        assert!(c.list().is_empty());
        let id = c.begin("fix it", mark(0), 0);
        c.record_write(Path::new("/p/a"), Some("one\n"), "two\n");
        c.record_write(Path::new("/p/a"), Some("two\n"), "three\n");
        c.record_write(Path::new("/p/new"), None, "made\n");
        let cp = &c.list()[0];
        assert_eq!(cp.id, id);
        assert_eq!(cp.files[0].before, Kept::Text(Arc::from("one\n")));
        assert_eq!(cp.files[0].after, Kept::Text(Arc::from("three\n")));
        assert_eq!(cp.files[1].before, Kept::Absent);
        let Some(Record::CheckpointFiles { texts, .. }) = c.end(Vec::new()) else {
            panic!("no record");
        };
        assert_eq!(texts.len(), 3, "each text once: one, three, made");
        c.record_write(Path::new("/p/b"), Some("x"), "y");
        assert_eq!(c.list()[0].files.len(), 2, "closed: not recorded");
    }

    #[test]
    fn a_text_too_large_is_not_kept() {
        let c = Checkpoints::default();
        c.begin("big", mark(0), 0);
        let big = "x".repeat(MAX_KEPT_TEXT + 1);
        c.record_write(Path::new("/p/big"), Some(&big), "small\n");
        assert_eq!(c.list()[0].files[0].before, Kept::NotKept(big.len() as u64));
    }

    #[test]
    fn changes_since_a_checkpoint_span_the_later_ones() {
        let c = Checkpoints::default();
        c.begin("one", mark(0), 0);
        c.record_write(Path::new("/p/a"), Some("a0\n"), "a1\n");
        c.end(Vec::new());
        let second = c.begin("two", mark(2), 0);
        c.record_write(Path::new("/p/a"), Some("a1\n"), "a2\n");
        c.record_write(Path::new("/p/b"), Some("b0\n"), "b1\n");
        c.end(vec![PathBuf::from("/p/b"), PathBuf::from("/p/log.txt")]);
        let all = c.changed_since(1);
        assert_eq!(all[0].before, Kept::Text(Arc::from("a0\n")));
        assert_eq!(all[0].after, Kept::Text(Arc::from("a2\n")));
        assert_eq!(
            c.changed_since(second)[0].before,
            Kept::Text(Arc::from("a1\n"))
        );
        assert_eq!(
            c.list()[1].bash_touched,
            vec![PathBuf::from("/p/log.txt")],
            "a file lathe wrote is not listed as Bash's"
        );
        c.accept(Path::new("/p/a"), Some("a2\n"));
        assert_eq!(c.review_bases(second)[0].1, Kept::Text(Arc::from("a2\n")));
    }

    #[test]
    fn saved_records_bring_the_same_checkpoints_back() {
        let c = Checkpoints::default();
        let mut records = Vec::new();
        for (i, (before, after)) in [("a0\n", "a1\n"), ("a1\n", "a2\n")].iter().enumerate() {
            let m = mark(i * 2);
            let id = c.begin(&format!("p{i}"), m, 0);
            records.push(Record::CheckpointBegin {
                id,
                mark: m,
                prompt: format!("p{i}"),
            });
            c.record_write(Path::new("/p/a"), Some(before), after);
            records.extend(c.end(Vec::new()));
        }
        // Round trip through JSON, as the session file does.
        let records: Vec<Record> = records
            .iter()
            .map(|r| serde_json::from_str(&serde_json::to_string(r).unwrap()).unwrap())
            .collect();
        let back = Checkpoints::default();
        back.restore(&records);
        assert_eq!(back.list(), c.list());
        // The next prompt numbers on.
        assert_eq!(back.begin("p2", mark(4), 0), 3);
    }
}
