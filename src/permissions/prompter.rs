//! The `Prompter` seam: asks the user whether a call may run.
//!
//! `nvim::FloatPrompter` opens the floating window; tests use
//! [`ScriptedPrompter`].

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Mutex;

use async_trait::async_trait;

/// What the permission prompt shows for a call: which file and what change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PermissionPreview {
    /// The file the call touches, if any (absolute).
    pub path: Option<PathBuf>,
    /// Unified diff of the proposed change (Edit/Write), else empty.
    pub diff: String,
    /// One line describing the call, e.g. `Edit src/greeting.py`.
    pub title: String,
}

/// The user's answer to a permission ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptAnswer {
    /// `y`: run this call.
    AllowOnce,
    /// `a`: run it, and allow this tool for the rest of the session.
    AllowAlways,
    /// `n` / `<Esc>` (or the prompt was closed): refuse.
    Deny,
}

/// Asks the user about one call.
#[async_trait]
pub trait Prompter: Send + Sync {
    /// Shows `tool` and `preview` and waits for the answer. Must return
    /// [`PromptAnswer::Deny`] when the prompt cannot be shown.
    async fn ask(&self, tool: &str, preview: &PermissionPreview) -> PromptAnswer;
}

/// A prompter that answers from a fixed list (then denies), recording what
/// it was asked. For tests.
#[derive(Debug, Default)]
pub struct ScriptedPrompter {
    answers: Mutex<VecDeque<PromptAnswer>>,
    asked: Mutex<Vec<(String, PermissionPreview)>>,
}

impl ScriptedPrompter {
    /// Answers `answers` in order, then `Deny`.
    pub fn new(answers: impl IntoIterator<Item = PromptAnswer>) -> Self {
        Self {
            answers: Mutex::new(answers.into_iter().collect()),
            asked: Mutex::new(Vec::new()),
        }
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
}
