//! Language-server diagnostics as plain data: what the editor knows about a
//! document's problems (`vim.diagnostic`, `:help diagnostic-structure`), and
//! the watch an edit of a buffer with language-server clients hands back
//! (docs/lsp.md, "Diagnostics from language servers").

use std::path::PathBuf;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

/// A diagnostic's severity, as `vim.diagnostic.severity` numbers it
/// (1 = error … 4 = hint); ordered from the most to the least severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// `vim.diagnostic.severity.ERROR` (1).
    Error,
    /// `vim.diagnostic.severity.WARN` (2).
    Warning,
    /// `vim.diagnostic.severity.INFO` (3).
    Info,
    /// `vim.diagnostic.severity.HINT` (4).
    Hint,
}

impl Severity {
    /// The severity numbered `n` by `vim.diagnostic.severity`; anything
    /// outside 1..=4 counts as an error (Neovim's own default).
    pub fn from_number(n: i64) -> Self {
        match n {
            2 => Severity::Warning,
            3 => Severity::Info,
            4 => Severity::Hint,
            _ => Severity::Error,
        }
    }

    /// The lowercase word the model reads: `error`, `warning`, `info`, `hint`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
            Severity::Hint => "hint",
        }
    }
}

/// One diagnostic of one document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Absolute path of the document (the buffer's name).
    pub path: PathBuf,
    /// 1-based line where it starts.
    pub line: usize,
    /// How severe.
    pub severity: Severity,
    /// Who reported it (`pyflakes`, `rustc`, …), when the server says.
    pub source: Option<String>,
    /// The message, as the server wrote it.
    pub message: String,
}

/// What [`Editor::diagnostics`](super::Editor::diagnostics) found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiagnosticList {
    /// Language-server clients running in the editor (any buffer).
    pub servers: usize,
    /// The diagnostics, sorted by path and line.
    pub items: Vec<Diagnostic>,
    /// `true` when a single file was asked for and no buffer holds it
    /// (language servers check only open buffers).
    pub not_open: bool,
}

/// A buffer's diagnostics before an edit and after its language servers
/// answered it ([`DiagnosticWatch::settle`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settled {
    /// The buffer's diagnostics just before the change.
    pub before: Vec<Diagnostic>,
    /// The buffer's diagnostics when the wait ended.
    pub after: Vec<Diagnostic>,
    /// `true` when no client published anything before the wait ended
    /// (timeout or cancellation): `after` may still be `before`.
    pub unanswered: bool,
}

/// Watches one buffer's diagnostics after a change to it; made by
/// [`Editor::write_watched`](super::Editor::write_watched) in the same step
/// as the change, so no answer of a server can slip in between.
#[async_trait]
pub trait DiagnosticWatch: Send {
    /// Waits until every language-server client attached to the buffer has
    /// published diagnostics since the change, the editor's bound passed
    /// (`diagnostics_wait_ms`), or `cancel` fired, whichever comes first;
    /// then returns the diagnostics before and after. Never fails: a watch
    /// that cannot read the buffer any more returns what it has.
    async fn settle(self: Box<Self>, cancel: &CancellationToken) -> Settled;
}
