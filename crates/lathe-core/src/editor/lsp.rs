//! Language-server navigation as plain data: what the LSP tools ask the
//! editor's language servers (definition, references, hover, symbols) and
//! what comes back, the [`LspNavigator`] seam Neovim implements
//! (`lathe::adapters::lsp_nav` over `vim.lsp`), and whether any server runs now
//! ([`servers_running`], which decides whether the tools are offered).
//! docs/lsp.md, "Navigation through language servers".

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

/// Language-server clients running in the editor, as the editor last
/// counted them (Neovim: on every `LspAttach`/`LspDetach`). Process-wide:
/// there is one editor per process.
static SERVERS_RUNNING: AtomicUsize = AtomicUsize::new(0);

/// How many language-server clients run in the editor now (0 outside
/// Neovim). Cheap: one atomic load, no main-thread trip.
pub fn servers_running() -> usize {
    SERVERS_RUNNING.load(Ordering::Relaxed)
}

/// Records that `n` language-server clients run now. Called by the editor
/// (Neovim's `LspAttach`/`LspDetach` autocmds) only.
pub fn set_servers_running(n: usize) {
    SERVERS_RUNNING.store(n, Ordering::Relaxed);
}

/// A position named the way models can name one: a file, a 1-based line
/// and the identifier's text on that line; the navigator finds the column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolAt {
    /// Absolute path of the file.
    pub path: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// The identifier's text as it appears on the line.
    pub symbol: String,
    /// Which whole-word occurrence on the line, 1-based (1 = the first).
    pub occurrence: usize,
}

/// One question to the language servers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LspQuery {
    /// `textDocument/definition` at a symbol.
    Definition(SymbolAt),
    /// `textDocument/references` (declaration included) at a symbol.
    References(SymbolAt),
    /// `textDocument/hover` at a symbol.
    Hover(SymbolAt),
    /// `textDocument/documentSymbol` of the file at this absolute path.
    DocumentSymbols(PathBuf),
    /// `workspace/symbol` with this query.
    WorkspaceSymbols(String),
}

impl LspQuery {
    /// The LSP method name (`textDocument/definition`, …).
    pub fn method(&self) -> &'static str {
        match self {
            LspQuery::Definition(_) => "textDocument/definition",
            LspQuery::References(_) => "textDocument/references",
            LspQuery::Hover(_) => "textDocument/hover",
            LspQuery::DocumentSymbols(_) => "textDocument/documentSymbol",
            LspQuery::WorkspaceSymbols(_) => "workspace/symbol",
        }
    }

    /// The file the question is about (`None` for workspace symbols).
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            LspQuery::Definition(at) | LspQuery::References(at) | LspQuery::Hover(at) => {
                Some(&at.path)
            }
            LspQuery::DocumentSymbols(p) => Some(p),
            LspQuery::WorkspaceSymbols(_) => None,
        }
    }

    /// The position, for the questions asked at a symbol.
    pub fn at(&self) -> Option<&SymbolAt> {
        match self {
            LspQuery::Definition(at) | LspQuery::References(at) | LspQuery::Hover(at) => Some(at),
            _ => None,
        }
    }
}

/// A place in a file a server named.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location {
    /// Absolute path.
    pub path: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// The text of that line (the buffer's when loaded, else the file's);
    /// `None` when it could not be read.
    pub text: Option<String>,
}

/// A symbol a server listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LspSymbol {
    /// The name, qualified by its containers (`Greeter.greet`).
    pub name: String,
    /// The kind in words (`class`, `method`, `function`, …).
    pub kind: &'static str,
    /// Absolute path of the file it is in.
    pub path: PathBuf,
    /// 1-based line of its name.
    pub line: usize,
}

/// What the servers answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LspAnswer {
    /// Definition or references: the places, in the servers' order.
    Locations(Vec<Location>),
    /// Hover: the text (markdown), `None` when no server had any.
    Hover(Option<String>),
    /// Document or workspace symbols.
    Symbols(Vec<LspSymbol>),
}

/// Why a question got no answer. The tools turn each into a model-facing
/// message naming what to do instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LspFailure {
    /// No file at the path.
    #[error("file not found: {0}")]
    NotFound(PathBuf),
    /// No language-server client is attached to the file's buffer (none
    /// handles this kind of file), even after loading it and waiting.
    #[error("no language server for {0}")]
    NoServer(PathBuf),
    /// Clients run (named), but none supports the method.
    #[error("unsupported by {servers:?}")]
    Unsupported {
        /// The names of the clients that were asked about it.
        servers: Vec<String>,
    },
    /// The file has fewer lines than asked for.
    #[error("line {line} past the end ({count} lines)")]
    LinePastEnd {
        /// The 1-based line asked for.
        line: usize,
        /// How many lines the file has.
        count: usize,
    },
    /// The symbol is not on the line.
    #[error("symbol not on line {line}")]
    SymbolNotOnLine {
        /// The 1-based line.
        line: usize,
        /// The line's text.
        text: String,
    },
    /// The symbol is on the line fewer times than `occurrence`.
    #[error("only {count} occurrences on line {line}")]
    NoSuchOccurrence {
        /// The 1-based line.
        line: usize,
        /// How many whole-word occurrences the line has.
        count: usize,
    },
    /// No server answered within the bound (`lsp_timeout_ms`).
    #[error("no answer within {ms} ms")]
    Timeout {
        /// The bound in ms.
        ms: u64,
        /// The clients asked.
        servers: Vec<String>,
    },
    /// Every server asked answered with an error.
    #[error("{server}: {message}")]
    ServerError {
        /// The client's name.
        server: String,
        /// The error's message.
        message: String,
    },
    /// The turn was cancelled while waiting.
    #[error("cancelled")]
    Cancelled,
    /// The editor went away or could not do it (its message).
    #[error("editor unavailable: {0}")]
    Unavailable(String),
}

/// Asks the editor's language servers (docs/lsp.md, "Navigation
/// through language servers"). Implemented by `lathe::adapters::lsp_nav::NvimLsp`;
/// editors without language servers have none
/// ([`Editor::navigator`](super::Editor::navigator) is `None`).
#[async_trait]
pub trait LspNavigator: Send + Sync {
    /// Asks `query` of every client attached to the file (any running
    /// client for workspace symbols) that supports it, loading a file that
    /// is not in a buffer (hidden, no window) and waiting a bounded time for
    /// a server to attach. Never blocks the editor: waits off its main
    /// thread, at most the editor's bound (`lsp_timeout_ms`), and stops when
    /// `cancel` fires (pending requests are cancelled with the server, also
    /// when the future is dropped). Errors: [`LspFailure`].
    async fn ask(
        &self,
        query: LspQuery,
        cancel: &CancellationToken,
    ) -> Result<LspAnswer, LspFailure>;
}
