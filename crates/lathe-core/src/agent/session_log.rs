//! Saved conversations: one append-only JSONL file per session under
//! `{sessions_dir}/{project}/{id}.jsonl` (`:help lathe-sessions`;
//! docs/sessions.md, "Sessions").
//!
//! The first line is a [`Header`] (id, project root, model, start time and
//! the first prompt), so listing sessions reads one line per file and the
//! file's modification time. Every later line is a [`Record`]: the
//! operations on the transcript in the order they happened (the user's
//! prompt, each assistant message, each batch of `tool_result`s, a refused
//! exchange taken out), plus what the chat showed that the messages do not
//! hold (each tool call's detail and summary, each turn's end). Loading
//! replays the operations through the same `Transcript` methods, so a
//! resumed conversation is the one that was saved, byte for byte.
//!
//! Writes go to a writer thread of the session, each record written whole
//! and flushed to the OS before the next; nothing waits for them. A failed
//! write is reported once (to the session's `EventSink`, as a notice) and
//! never ends a turn.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::events::{AgentEvent, EventSink, ToolStatus, TurnOutcome};
use crate::protocol::{ContentBlock, Message, ToolResult, Usage};
use crate::text::fill;

/// Version of the file format written in the header.
pub const FORMAT_VERSION: u32 = 1;

/// Longest first prompt kept in the header, in chars.
pub const TITLE_CHARS: usize = 200;

/// Notice (once per session) when a record could not be written. `{path}`,
/// `{error}`.
pub const WRITE_FAILED: &str = "lathe could not save this conversation to {path} ({error}); the conversation goes on, but `:Lathe resume` will not have what follows. Check that the directory is writable (:checkhealth lathe).";

/// Warning when a line of a saved session could not be read. `{path}`,
/// `{line}`, `{error}`.
pub const CORRUPT_LINE: &str =
    "lathe: line {line} of {path} could not be read and was skipped ({error}); the rest of the conversation was loaded";

/// The first line of a session file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always `"session"`.
    #[serde(rename = "type")]
    pub kind: String,
    /// [`FORMAT_VERSION`].
    pub version: u32,
    /// The session id (the file's name without `.jsonl`).
    pub id: String,
    /// The project root.
    pub cwd: String,
    /// The model of the first request.
    pub model: String,
    /// When the first prompt was sent, ms since the Unix epoch.
    pub created_ms: u64,
    /// The first prompt, at most [`TITLE_CHARS`] chars.
    pub first_prompt: String,
}

/// What one read of a file saw, as saved ([`Record::FileStamps`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStamp {
    /// Absolute path.
    pub path: PathBuf,
    /// SHA-256 of the logical text, hex.
    pub sha256: String,
    /// 1-based first line shown, when the read was partial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<usize>,
    /// Line count asked for, when the read was partial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// Whether the content read is still in the conversation.
    #[serde(default)]
    pub in_context: bool,
}

/// A place in the conversation (`Transcript::mark`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mark {
    /// Messages then.
    pub len: usize,
    /// Blocks of the last message then, when it was a user message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_blocks: Option<usize>,
}

/// A file's text as a checkpoint keeps it ([`Record::CheckpointFiles`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SavedText {
    /// There was no file.
    Absent,
    /// The text with this SHA-256 (hex).
    Sha(String),
    /// Too large to keep (this many bytes): it cannot be restored.
    NotKept(u64),
}

/// One file of a checkpoint, as saved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedFile {
    /// Absolute path.
    pub path: PathBuf,
    /// Before the prompt.
    pub before: SavedText,
    /// After lathe's last write in the prompt's turn.
    pub after: SavedText,
}

/// One line after the header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    /// `Transcript::push_user_text`.
    User {
        /// The prompt as typed.
        text: String,
        /// What the model got: the prompt with its context from the
        /// editor and attached files (`Transcript::push_user_blocks`).
        /// Empty (and left out of the file) when that is just `text`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        blocks: Vec<ContentBlock>,
    },
    /// `Transcript::push_queued`: messages the user queued while the turn
    /// ran, handed to the model after the tool results.
    Queued {
        /// The messages as typed, joined by a blank line.
        text: String,
        /// What the model got (the text in its wrapper).
        blocks: Vec<ContentBlock>,
    },
    /// `Transcript::push_assistant`.
    Assistant {
        /// The message.
        message: Message,
    },
    /// `Transcript::push_tool_results`.
    ToolResults {
        /// The results, in call order.
        results: Vec<ToolResult>,
    },
    /// `Transcript::truncate`: a refused exchange taken out.
    Truncate {
        /// Messages kept.
        len: usize,
    },
    /// `Transcript::clear_tool_results`: these results' output replaced by
    /// the cleared text.
    ClearToolResults {
        /// Their `tool_use_id`s.
        ids: Vec<String>,
    },
    /// `Transcript::replace_compacted`: the conversation from here on
    /// starts from these messages (a resume starts from the last marker).
    Compacted {
        /// The compacted conversation.
        messages: Vec<Message>,
        /// Estimated tokens before.
        before: u64,
        /// Estimated tokens after.
        after: u64,
        /// The summary as the model wrote it (for the chat).
        summary: String,
    },
    /// `Transcript::withdraw_user_blocks`: a prompt that could not be sent
    /// taken out.
    Withdraw {
        /// Blocks taken off the last user message.
        blocks: usize,
    },
    /// The record of each file the model read (its stamp), saved at each
    /// turn's end and after a compaction, so the stale rule holds after
    /// `:Lathe resume`.
    FileStamps {
        /// One per file.
        files: Vec<FileStamp>,
    },
    /// A tool call's chat line began (`AgentEvent::ToolStarted`).
    ToolStart {
        /// `tool_use_id`.
        id: String,
        /// Tool name.
        name: String,
        /// Short description (path, pattern, command).
        detail: String,
    },
    /// A tool call's chat line ended (`AgentEvent::ToolFinished`).
    ToolDone {
        /// `tool_use_id`.
        id: String,
        /// `done`, `failed`, `error`, `denied`, `interrupted`.
        status: String,
        /// The line's summary.
        summary: String,
        /// What the chat folded instead of the result
        /// (`AgentEvent::ToolFinished`'s `display`: Edit's and Write's
        /// diff).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        display: Option<String>,
    },
    /// What the chat showed under a prompt of what it carried
    /// (`AgentEvent::Attached`), after its `user` record.
    Attached {
        /// One per attachment.
        items: Vec<crate::events::AttachedItem>,
    },
    /// A notice the chat showed (`AgentEvent::Notice`): `:Lathe resume`
    /// shows it again where it was.
    Notice {
        /// Its text.
        text: String,
        /// An error, not a note.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
    /// A prompt's checkpoint began (before its user message): where the
    /// conversation was (docs/checkpoints.md).
    CheckpointBegin {
        /// The checkpoint's number in the session (1, 2, …).
        id: u64,
        /// The conversation before the prompt.
        mark: Mark,
        /// The prompt as typed.
        prompt: String,
    },
    /// What a prompt's turn changed, saved at its end: each file's text
    /// before the prompt and after lathe's last write, by hash, with the
    /// texts not saved by an earlier record.
    CheckpointFiles {
        /// The checkpoint's number.
        id: u64,
        /// One per file lathe's tools changed, in the order of first change.
        files: Vec<SavedFile>,
        /// Texts by SHA-256 (hex) that no earlier record of the file holds.
        #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
        texts: std::collections::BTreeMap<String, String>,
        /// Files in the project the turn's Bash commands changed, as git
        /// tells (not restored by a rewind).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        bash_touched: Vec<PathBuf>,
    },
    /// `:Lathe rewind`: the code and/or the conversation taken back to
    /// before checkpoint `to`.
    Rewind {
        /// The checkpoint rewound to (its changes and later ones undone).
        to: u64,
        /// Files were restored.
        code: bool,
        /// Where the conversation went back to (`None`: it stayed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        conversation: Option<Mark>,
        /// What the model is told with the next prompt (a resume before
        /// that prompt still tells it).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        note: String,
        /// A code rewind that kept the conversation: each file as the
        /// restore left it (the rewound checkpoints end with it now).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        restored: Vec<(PathBuf, SavedText)>,
        /// Texts by SHA-256 (hex) that no earlier record holds.
        #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
        texts: std::collections::BTreeMap<String, String>,
    },
    /// `Session::set_model`: the requests from here on went to this model
    /// (a resume goes on with the last one).
    Model {
        /// The model's id.
        model: String,
    },
    /// Nested project memory (a sub-folder's `CLAUDE.md`) added to the
    /// conversation with a tool result: never added again, after a resume
    /// either (`agent::memory`).
    Memory {
        /// The memory files added.
        paths: Vec<PathBuf>,
    },
    /// A turn ended.
    TurnEnd {
        /// `done`, `error` or `stopped`.
        outcome: String,
        /// The error text when `outcome` is `error`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// This turn's tokens.
        #[serde(default)]
        turn: Usage,
        /// The session's tokens so far.
        #[serde(default)]
        session: Usage,
    },
}

impl Record {
    /// The record of a turn that ended with `outcome`.
    pub fn turn_end(outcome: &TurnOutcome, turn: Usage, session: Usage) -> Self {
        Record::TurnEnd {
            outcome: outcome.as_str().to_string(),
            error: match outcome {
                TurnOutcome::Error(m) => Some(m.clone()),
                _ => None,
            },
            turn,
            session,
        }
    }
}

/// The outcome a [`Record::TurnEnd`] names.
pub fn outcome_of(outcome: &str, error: Option<&str>) -> TurnOutcome {
    match outcome {
        "done" => TurnOutcome::Done,
        "max_turns" => TurnOutcome::MaxTurns,
        "error" => TurnOutcome::Error(error.unwrap_or_default().to_string()),
        _ => TurnOutcome::Stopped,
    }
}

/// The status a [`Record::ToolDone`] names (`interrupted` for one lathe
/// does not know).
pub fn status_of(status: &str) -> ToolStatus {
    match status {
        "done" => ToolStatus::Done,
        "failed" => ToolStatus::Failed,
        "error" => ToolStatus::Error,
        "denied" => ToolStatus::Denied,
        _ => ToolStatus::Interrupted,
    }
}

/// A saved session, as listed.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSummary {
    /// The file.
    pub path: PathBuf,
    /// Its header.
    pub header: Header,
    /// When the file was last written, ms since the Unix epoch.
    pub updated_ms: u64,
}

/// A session file read back.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedLog {
    /// The header.
    pub header: Header,
    /// Every record that could be read, in order.
    pub records: Vec<Record>,
    /// One [`CORRUPT_LINE`] warning per line skipped.
    pub warnings: Vec<String>,
}

/// The folder of one project's sessions: `{sessions_dir}/{name}-{hash}`,
/// `name` the root's last component (characters other than ASCII letters,
/// digits, `.`, `-`, `_` replaced by `_`) and `hash` 8 hex digits of the
/// whole root, so two projects of the same name never share a folder.
pub fn project_dir(sessions_dir: &Path, root: &Path) -> PathBuf {
    let name: String = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".into())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let hash = fnv1a(root.to_string_lossy().as_bytes());
    sessions_dir.join(format!("{name}-{:08x}", (hash >> 32) as u32 ^ hash as u32))
}

/// FNV-1a, 64 bits: stable across Rust versions (the standard hasher is not).
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The sessions in `dir` (one project's folder), newest first (by last
/// write, then by id). Reads the first line of each `*.jsonl` file; files
/// whose header cannot be read are left out. A missing folder is an empty
/// list.
pub fn list(dir: &Path) -> Vec<SessionSummary> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<SessionSummary> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .filter_map(|path| {
            let header = read_header(&path)?;
            let updated_ms = std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(header.created_ms, |d| d.as_millis() as u64);
            Some(SessionSummary {
                path,
                header,
                updated_ms,
            })
        })
        .collect();
    out.sort_by(|a, b| {
        b.updated_ms
            .cmp(&a.updated_ms)
            .then_with(|| b.header.id.cmp(&a.header.id))
    });
    out
}

/// The header of the file at `path` (its first line, read up to 64 KiB).
fn read_header(path: &Path) -> Option<Header> {
    let file = File::open(path).ok()?;
    let mut line = String::new();
    BufReader::new(file.take(64 * 1024))
        .read_line(&mut line)
        .ok()?;
    serde_json::from_str::<Header>(line.trim_end()).ok()
}

/// Reads the session file at `path`. A line that does not parse (the last
/// one, when lathe stopped in the middle of writing it) is skipped with a
/// [`CORRUPT_LINE`] warning. Errors: the file cannot be read, or its first
/// line is not a session header.
pub fn load(path: &Path) -> Result<LoadedLog, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut lines = text.lines().enumerate();
    let header = lines
        .next()
        .and_then(|(_, l)| serde_json::from_str::<Header>(l).ok())
        .ok_or_else(|| format!("{} is not a lathe session file", path.display()))?;
    let mut records = Vec::new();
    let mut warnings = Vec::new();
    for (i, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Record>(line) {
            Ok(r) => records.push(r),
            Err(e) => warnings.push(fill(
                CORRUPT_LINE,
                &[
                    ("line", &(i + 1).to_string()),
                    ("path", &path.display().to_string()),
                    ("error", &e.to_string()),
                ],
            )),
        }
    }
    Ok(LoadedLog {
        header,
        records,
        warnings,
    })
}

enum Command {
    Write(String),
    Flush(mpsc::Sender<()>),
}

/// Where a session's records go. Cheap to clone; the writer thread ends
/// when the last clone is dropped.
#[derive(Clone)]
pub struct SessionLog {
    inner: Arc<LogInner>,
}

impl std::fmt::Debug for SessionLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionLog")
            .field("path", &self.inner.path)
            .finish()
    }
}

struct LogInner {
    path: PathBuf,
    /// The writer thread, started by the first record (so `setup()` starts
    /// no thread).
    writer: Mutex<Writer>,
    /// The header, until the first prompt is recorded (the file is created
    /// then, so a session never used leaves no file).
    pending_header: Mutex<Option<Header>>,
}

/// The writer thread of a [`SessionLog`].
enum Writer {
    /// No record yet; who gets the notice if the thread cannot start.
    NotStarted(Arc<dyn EventSink>),
    Running(mpsc::Sender<Command>),
    /// The thread could not be started (reported once).
    Failed,
}

/// Writer threads started by every [`SessionLog`] of the process (tests
/// check that `setup()` starts none: the first record does).
static WRITERS_STARTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many session-log writer threads this process started.
pub fn writers_started() -> u64 {
    WRITERS_STARTED.load(std::sync::atomic::Ordering::Relaxed)
}

impl SessionLog {
    /// The log of a new session `id` in `dir` (created with the first
    /// record). `report` gets the one [`WRITE_FAILED`] notice if a write
    /// fails.
    pub fn create(
        dir: &Path,
        id: &str,
        cwd: &Path,
        model: &str,
        report: Arc<dyn EventSink>,
    ) -> Self {
        let header = Header {
            kind: "session".into(),
            version: FORMAT_VERSION,
            id: id.to_string(),
            cwd: cwd.display().to_string(),
            model: model.to_string(),
            created_ms: 0,
            first_prompt: String::new(),
        };
        Self::start(dir.join(format!("{id}.jsonl")), Some(header), report)
    }

    /// The log of a resumed session: records are appended to `path`.
    pub fn append_to(path: &Path, report: Arc<dyn EventSink>) -> Self {
        Self::start(path.to_path_buf(), None, report)
    }

    fn start(path: PathBuf, header: Option<Header>, report: Arc<dyn EventSink>) -> Self {
        Self {
            inner: Arc::new(LogInner {
                path,
                writer: Mutex::new(Writer::NotStarted(report)),
                pending_header: Mutex::new(header),
            }),
        }
    }

    /// Sends `cmd` to the writer thread, starting it on first use; `false`
    /// when there is no writer (it could not be started: reported once).
    fn send(&self, cmd: Command) -> bool {
        let mut writer = self.inner.writer.lock().unwrap_or_else(|e| e.into_inner());
        if let Writer::NotStarted(report) = &*writer {
            let report = report.clone();
            let (tx, rx) = mpsc::channel::<Command>();
            let writer_path = self.inner.path.clone();
            let writer_report = report.clone();
            let spawned = std::thread::Builder::new()
                .name("lathe-session-log".into())
                .spawn(move || write_loop(&writer_path, rx, writer_report.as_ref()));
            *writer = match spawned {
                Ok(_) => {
                    WRITERS_STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    Writer::Running(tx)
                }
                Err(e) => {
                    report.emit(AgentEvent::Notice {
                        text: fill(
                            WRITE_FAILED,
                            &[
                                ("path", &self.inner.path.display().to_string()),
                                ("error", &e.to_string()),
                            ],
                        ),
                        is_error: true,
                    });
                    Writer::Failed
                }
            };
        }
        match &*writer {
            Writer::Running(tx) => tx.send(cmd).is_ok(),
            _ => false,
        }
    }

    /// The session file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Queues `record` (and, before the first prompt, the header).
    pub fn record(&self, record: &Record) {
        let mut lines = String::new();
        // The first prompt's records make the file: its checkpoint comes
        // just before its user message.
        if let Record::User { text, .. } | Record::CheckpointBegin { prompt: text, .. } = record {
            let header = self
                .inner
                .pending_header
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            if let Some(mut h) = header {
                h.created_ms = now_ms();
                h.first_prompt = text.chars().take(TITLE_CHARS).collect();
                if let Ok(l) = serde_json::to_string(&h) {
                    lines.push_str(&l);
                    lines.push('\n');
                }
            }
        } else if self
            .inner
            .pending_header
            .lock()
            .map(|h| h.is_some())
            .unwrap_or(false)
        {
            // Nothing before the first prompt is worth a file.
            return;
        }
        match serde_json::to_string(record) {
            Ok(l) => {
                lines.push_str(&l);
                lines.push('\n');
            }
            Err(_) => return,
        }
        self.send(Command::Write(lines));
    }

    /// Waits until every record queued so far is written (tests, and
    /// before reading the file back).
    pub fn flush(&self) {
        let started = matches!(
            *self.inner.writer.lock().unwrap_or_else(|e| e.into_inner()),
            Writer::Running(_)
        );
        if !started {
            return; // nothing was queued
        }
        let (tx, rx) = mpsc::channel();
        if self.send(Command::Flush(tx)) {
            let _ = rx.recv_timeout(std::time::Duration::from_secs(5));
        }
    }
}

/// The writer thread: opens the file on the first write (a file that does
/// not end in a newline — a crash mid-write — gets one first, so the next
/// record starts on a line of its own), writes each record whole.
fn write_loop(path: &Path, rx: mpsc::Receiver<Command>, report: &dyn EventSink) {
    let mut file: Option<File> = None;
    let mut failed = false;
    for cmd in rx {
        let lines = match cmd {
            Command::Write(l) => l,
            Command::Flush(done) => {
                let _ = done.send(());
                continue;
            }
        };
        if failed {
            continue;
        }
        let written = (|| -> std::io::Result<()> {
            if file.is_none() {
                file = Some(open_for_append(path)?);
            }
            let f = file
                .as_mut()
                .ok_or_else(|| std::io::Error::other("closed"))?;
            f.write_all(lines.as_bytes())?;
            f.flush()
        })();
        if let Err(e) = written {
            failed = true;
            report.emit(AgentEvent::Notice {
                text: fill(
                    WRITE_FAILED,
                    &[
                        ("path", &path.display().to_string()),
                        ("error", &e.to_string()),
                    ],
                ),
                is_error: true,
            });
        }
    }
}

fn open_for_append(path: &Path) -> std::io::Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(path)?;
    let len = f.metadata()?.len();
    if len > 0 {
        f.seek(SeekFrom::Start(len - 1))?;
        let mut last = [0u8; 1];
        f.read_exact(&mut last)?;
        if last[0] != b'\n' {
            f.write_all(b"\n")?;
        }
    }
    Ok(f)
}

/// An [`EventSink`] that passes every event on and records the tool lines
/// (detail, status, summary) in the session's log, so a resumed chat shows
/// them as they were.
pub struct LoggingSink {
    /// Where events go.
    pub inner: Arc<dyn EventSink>,
    /// Where tool lines are recorded.
    pub log: SessionLog,
}

impl EventSink for LoggingSink {
    fn emit(&self, event: AgentEvent) {
        match &event {
            AgentEvent::ToolStarted {
                id, name, detail, ..
            } => self.log.record(&Record::ToolStart {
                id: id.clone(),
                name: name.clone(),
                detail: detail.clone(),
            }),
            AgentEvent::ToolFinished {
                id,
                status,
                summary,
                display,
                ..
            } => self.log.record(&Record::ToolDone {
                id: id.clone(),
                status: status.as_str().to_string(),
                summary: summary.clone(),
                display: display.clone(),
            }),
            AgentEvent::Attached { items } => self.log.record(&Record::Attached {
                items: items.clone(),
            }),
            AgentEvent::Notice { text, is_error } => self.log.record(&Record::Notice {
                text: text.clone(),
                is_error: *is_error,
            }),
            _ => {}
        }
        self.inner.emit(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::RecordingSink;

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "lathe-session-log-{name}-{}-{}",
            std::process::id(),
            now_ms()
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn project_dirs_differ_for_roots_of_the_same_name() {
        let a = project_dir(Path::new("/s"), Path::new("/home/me/app"));
        let b = project_dir(Path::new("/s"), Path::new("/work/app"));
        assert_ne!(a, b);
        assert!(a.starts_with("/s"));
        let name = a.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with("app-") && name.len() == "app-".len() + 8,
            "{name}"
        );
        let odd = project_dir(Path::new("/s"), Path::new("/x/my proj:1"));
        assert!(odd.to_string_lossy().contains("my_proj_1-"), "{odd:?}");
        // Stable: the same root gives the same folder.
        assert_eq!(a, project_dir(Path::new("/s"), Path::new("/home/me/app")));
    }

    #[test]
    fn nothing_is_written_before_the_first_prompt_then_header_and_records() {
        let dir = temp_dir("first");
        let sink = Arc::new(RecordingSink::default());
        let log = SessionLog::create(&dir, "s1", Path::new("/p"), "m", sink.clone());
        log.record(&Record::ToolStart {
            id: "t".into(),
            name: "Read".into(),
            detail: "x".into(),
        });
        log.flush();
        assert!(!log.path().exists(), "no file before a prompt");
        log.record(&Record::User {
            text: "fix it".into(),
            blocks: Vec::new(),
        });
        log.record(&Record::Truncate { len: 0 });
        log.flush();
        let loaded = load(log.path()).unwrap();
        assert_eq!(loaded.header.id, "s1");
        assert_eq!(loaded.header.first_prompt, "fix it");
        assert_eq!(loaded.header.model, "m");
        assert!(loaded.header.created_ms > 0);
        assert_eq!(
            loaded.records,
            vec![
                Record::User {
                    text: "fix it".into(),
                    blocks: Vec::new(),
                },
                Record::Truncate { len: 0 }
            ]
        );
        assert!(loaded.warnings.is_empty());
        assert!(sink.events().is_empty());
    }

    #[test]
    fn the_first_prompts_checkpoint_starts_the_file() {
        let dir = temp_dir("checkpoint");
        let sink = Arc::new(RecordingSink::default());
        let log = SessionLog::create(&dir, "s3", Path::new("/p"), "m", sink);
        let begin = Record::CheckpointBegin {
            id: 1,
            mark: Mark {
                len: 0,
                last_blocks: None,
            },
            prompt: "fix it".into(),
        };
        log.record(&begin);
        log.record(&Record::User {
            text: "fix it".into(),
            blocks: Vec::new(),
        });
        log.flush();
        let loaded = load(log.path()).unwrap();
        assert_eq!(loaded.header.first_prompt, "fix it");
        assert_eq!(loaded.records.first(), Some(&begin));
        assert_eq!(loaded.records.len(), 2);
    }

    #[test]
    fn a_corrupt_last_line_is_skipped_with_a_warning_and_appending_goes_on() {
        let dir = temp_dir("corrupt");
        let sink = Arc::new(RecordingSink::default());
        let log = SessionLog::create(&dir, "s2", Path::new("/p"), "m", sink.clone());
        log.record(&Record::User {
            text: "a".into(),
            blocks: Vec::new(),
        });
        log.flush();
        // A crash in the middle of writing a record.
        let mut f = OpenOptions::new().append(true).open(log.path()).unwrap();
        f.write_all(br#"{"type":"assistant","mess"#).unwrap();
        drop(f);
        let loaded = load(log.path()).unwrap();
        assert_eq!(loaded.records.len(), 1);
        assert_eq!(loaded.warnings.len(), 1);
        assert!(
            loaded.warnings[0].contains("line 3"),
            "{:?}",
            loaded.warnings
        );
        // Resumed: the next record starts on a line of its own.
        let again = SessionLog::append_to(log.path(), sink.clone());
        again.record(&Record::User {
            text: "b".into(),
            blocks: Vec::new(),
        });
        again.flush();
        let loaded = load(log.path()).unwrap();
        assert_eq!(
            loaded.records,
            vec![
                Record::User {
                    text: "a".into(),
                    blocks: Vec::new(),
                },
                Record::User {
                    text: "b".into(),
                    blocks: Vec::new(),
                }
            ]
        );
        assert_eq!(loaded.warnings.len(), 1);
    }

    #[test]
    fn a_write_failure_is_reported_once() {
        let dir = temp_dir("fail");
        let blocker = dir.join("not-a-dir");
        std::fs::write(&blocker, "x").unwrap();
        let sink = Arc::new(RecordingSink::default());
        let log = SessionLog::create(&blocker, "s3", Path::new("/p"), "m", sink.clone());
        for t in ["a", "b", "c"] {
            log.record(&Record::User {
                text: t.into(),
                blocks: Vec::new(),
            });
        }
        log.flush();
        let notices: Vec<_> = sink
            .events()
            .into_iter()
            .filter(|e| matches!(e, AgentEvent::Notice { is_error: true, .. }))
            .collect();
        assert_eq!(notices.len(), 1, "{notices:?}");
    }

    #[test]
    fn listing_is_newest_first_and_skips_other_files() {
        let dir = temp_dir("list");
        let sink: Arc<dyn EventSink> = Arc::new(RecordingSink::default());
        for (id, prompt) in [("1-1", "older"), ("2-1", "newer")] {
            let log = SessionLog::create(&dir, id, Path::new("/p"), "m", sink.clone());
            log.record(&Record::User {
                text: prompt.into(),
                blocks: Vec::new(),
            });
            log.flush();
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        std::fs::write(dir.join("junk.jsonl"), "not json\n").unwrap();
        std::fs::write(dir.join("notes.txt"), "x").unwrap();
        let listed: Vec<String> = list(&dir)
            .into_iter()
            .map(|s| s.header.first_prompt)
            .collect();
        assert_eq!(listed, vec!["newer", "older"]);
        assert!(list(&dir.join("missing")).is_empty());
    }
}
