//! The `Prompter` seam: asks the user whether a call may run.
//!
//! `lathe::FloatPrompter` opens the floating window; tests use
//! [`ScriptedPrompter`].

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Mutex;

use async_trait::async_trait;

use crate::editor::Stamp;

/// What the permission float shows for one call. Tools fill what they know
/// from their plan (`TypedTool::permission_preview`); the gate adds why it
/// asks, the input and the rules `a`/`A` would add.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PermissionPreview {
    /// The file the call touches, if any (absolute).
    pub path: Option<PathBuf>,
    /// Unified diff of the planned change (Edit/Write), else empty.
    pub diff: String,
    /// One line describing the call, e.g. `Edit src/greeting.py`.
    pub title: String,
    /// Why it asks: the deciding rule and its source, or the default
    /// (`Edit changes files, and asks by default`).
    pub reason: String,
    /// The whole logical text before (`None` for a new file) and after the
    /// planned change (Edit/Write): the float's hunk toggling and diff tab
    /// work on these, and the diff above is rendered from them.
    pub change: Option<(Option<String>, String)>,
    /// What a Bash call runs, where, for how long.
    pub command: Option<CommandPreview>,
    /// The normalised input as pretty JSON (shown when there is neither a
    /// diff nor a command).
    pub input: String,
    /// The rules `a` (this session) and `A` (saved) add, e.g.
    /// `Edit(src/**)`, `Bash(npm test:*)`; empty when only `y`/`n` are
    /// offered (a command that cannot be split, …).
    pub session_rules: Vec<String>,
    /// The version the change was planned against (a buffer's
    /// `changedtick`): when the document moves on while the float is open,
    /// the float says the plan is stale and offers to plan again.
    pub watch: Option<Stamp>,
    /// A PreToolUse hook rewrote the call's input (`updatedInput`): what
    /// the float shows is the rewritten call, not the model's.
    pub hook_changed: bool,
    /// The call is one of its answer's changing calls: its place among
    /// them and the changes queued after it (`None` for a call asked
    /// about on its own).
    pub burst: Option<Burst>,
}

/// Where an asked call stands among its answer's changing calls (Edit,
/// Write, and other calls that are not read-only), for "Edit cart.py
/// (1 of 3)", the combined preview of the queued changes, and whether
/// another ask of the answer may follow this one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Burst {
    /// 1-based: the changing calls of the answer asked about so far,
    /// this one included.
    pub index: usize,
    /// `index` plus the changing calls still queued after this one.
    pub total: usize,
    /// The changing calls queued after this one, in order.
    pub next: Vec<QueuedChange>,
}

/// A changing call of the answer that has not run yet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueuedChange {
    /// The tool (`Edit`, `Write`, `Bash`).
    pub tool: String,
    /// One line naming it, e.g. `Edit pricing.py`.
    pub title: String,
    /// The file it changes, if any (absolute).
    pub path: Option<std::path::PathBuf>,
    /// Its normalised input.
    pub input: serde_json::Value,
}

/// A Bash call as the float shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandPreview {
    /// The command line, as the model wrote it.
    pub command: String,
    /// Its working directory (the project root).
    pub cwd: PathBuf,
    /// Its timeout in milliseconds (none when `background`).
    pub timeout_ms: u64,
    /// It runs in the background (`run_in_background`): no timeout.
    pub background: bool,
    /// Where it runs if allowed: `sandbox: on · …` or `sandbox: off · why`
    /// (`tools::Sandboxing::describe`); empty when not known.
    pub sandbox: String,
}

/// How the user changed a proposed change before allowing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revision {
    /// The whole new logical text to write instead of the plan's.
    pub after: String,
    /// 1-based numbers of the diff's hunks the user rejected.
    pub rejected_hunks: Vec<usize>,
    /// `true` when the user edited the new text by hand (the diff tab).
    pub edited: bool,
}

/// The user's answer to a permission ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptAnswer {
    /// `y`: run this call.
    AllowOnce,
    /// `a`: run it, and allow calls matching the preview's
    /// `session_rules` for the rest of the session.
    AllowSession,
    /// `A`: like `a`, and save the rules to `.claude/settings.local.json`.
    AllowAndSave,
    /// `Y`: run this call, and the rest of this answer's file changes
    /// (Edit, Write) without asking. No rule is added or saved; other
    /// calls of the answer (Bash, …) still ask, and the next answer asks
    /// again.
    AllowAnswer,
    /// `y` after toggling hunks or editing in the diff tab: apply this text.
    AllowRevised(Revision),
    /// `n`, `q`, `<Esc>` (or the prompt could not be shown): refuse.
    Deny,
    /// `N`: refuse, with a message for the model.
    DenyWithMessage(String),
    /// The document changed while the float was open and the user asked to
    /// plan the call again (then ask again with the new plan).
    Replan,
}

/// Asks the user about one call.
#[async_trait]
pub trait Prompter: Send + Sync {
    /// Shows `tool` and `preview` and waits for the answer. Must return
    /// [`PromptAnswer::Deny`] when the prompt cannot be shown.
    async fn ask(&self, tool: &str, preview: &PermissionPreview) -> PromptAnswer;

    /// No changing call of the current answer is left to run: nothing
    /// more of it will ask about a change (a front end holding the
    /// answered float for the next ask lets go).
    fn settled(&self) {}
}

/// A prompter that answers from a fixed list (then denies), recording what
/// it was asked. For tests.
#[derive(Debug, Default)]
pub struct ScriptedPrompter {
    answers: Mutex<VecDeque<PromptAnswer>>,
    asked: Mutex<Vec<(String, PermissionPreview)>>,
    settled: std::sync::atomic::AtomicUsize,
}

impl ScriptedPrompter {
    /// Answers `answers` in order, then `Deny`.
    pub fn new(answers: impl IntoIterator<Item = PromptAnswer>) -> Self {
        Self {
            answers: Mutex::new(answers.into_iter().collect()),
            asked: Mutex::new(Vec::new()),
            settled: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// How many times [`Prompter::settled`] was called.
    pub fn settled_count(&self) -> usize {
        self.settled.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Every `(tool, preview)` asked so far.
    pub fn asked(&self) -> Vec<(String, PermissionPreview)> {
        self.asked.lock().map(|a| a.clone()).unwrap_or_default()
    }
}

#[async_trait]
impl Prompter for ScriptedPrompter {
    async fn ask(&self, tool: &str, preview: &PermissionPreview) -> PromptAnswer {
        if let Ok(mut a) = self.asked.lock() {
            a.push((tool.to_string(), preview.clone()));
        }
        self.answers
            .lock()
            .ok()
            .and_then(|mut a| a.pop_front())
            .unwrap_or(PromptAnswer::Deny)
    }

    fn settled(&self) {
        self.settled
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}
