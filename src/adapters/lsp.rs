//! Diagnostics from Neovim's language servers for the tools
//! (docs/lsp.md, "Diagnostics from language servers"): the
//! baseline and watch an Edit or Write of a buffer with clients takes in the
//! step of its change, and `vim.diagnostic.get()` for the Diagnostics tool.
//! Main-thread functions here call `lua/lathe/lsp.lua`; [`LspWatch::settle`]
//! waits off the main thread.

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use mlua::{Function, LuaSerdeExt, Table, Value};
use serde::Deserialize;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::host::bridge::MainThread;
use lathe_core::editor::{Diagnostic, DiagnosticList, DiagnosticWatch, Settled, Severity};

/// The Lua module with the readers.
const MODULE: &str = "lathe.lsp";

/// One diagnostic as `lathe.lsp.get` returns it.
#[derive(Deserialize)]
struct RawDiagnostic {
    path: String,
    line: usize,
    severity: i64,
    source: Option<String>,
    message: String,
}

impl From<RawDiagnostic> for Diagnostic {
    fn from(r: RawDiagnostic) -> Self {
        Diagnostic {
            path: PathBuf::from(r.path),
            line: r.line,
            severity: Severity::from_number(r.severity),
            source: r.source,
            message: r.message,
        }
    }
}

use crate::host::lua_handle::lua;

/// `require("lathe.lsp")` (main thread).
pub(crate) fn module() -> mlua::Result<Table> {
    let lua = lua();
    let require: Function = lua.globals().get("require")?;
    require.call(MODULE)
}

/// Clients attached to `bufnr` (`None`: running at all). Main thread; 0 when
/// the module fails.
pub(crate) fn clients(bufnr: Option<i64>) -> usize {
    module()
        .and_then(|m| m.get::<Function>("clients")?.call::<usize>(bufnr))
        .unwrap_or(0)
}

/// The diagnostics of `bufnr` (`None`: every buffer), sorted by path and
/// line. Main thread. Errors: the Lua module failed (its message).
pub(crate) fn get(bufnr: Option<i64>) -> Result<Vec<Diagnostic>, String> {
    let lua = lua();
    let raw: Value = module()
        .and_then(|m| m.get::<Function>("get")?.call(bufnr))
        .map_err(|e| e.to_string())?;
    let list: Vec<RawDiagnostic> = lua.from_value(raw).map_err(|e| e.to_string())?;
    Ok(list.into_iter().map(Diagnostic::from).collect())
}

/// [`get`] with the number of running clients, for the Diagnostics tool.
/// Main thread.
pub(crate) fn list(bufnr: Option<i64>) -> Result<DiagnosticList, String> {
    Ok(DiagnosticList {
        servers: clients(None),
        items: get(bufnr)?,
        not_open: false,
    })
}

/// What the main-thread step of a watched write takes before the change:
/// the buffer's clients and diagnostics; `None` without clients.
pub(crate) struct Baseline {
    bufnr: i64,
    clients: usize,
    before: Vec<Diagnostic>,
}

/// The baseline of buffer `bufnr`, `None` when no client is attached.
/// Main thread.
pub(crate) fn baseline(bufnr: i64) -> Option<Baseline> {
    let clients = clients(Some(bufnr));
    (clients > 0).then(|| Baseline {
        bufnr,
        clients,
        before: get(Some(bufnr)).unwrap_or_default(),
    })
}

/// A started watch: the autocmd and the count of publishes since.
pub(crate) struct Started {
    baseline: Baseline,
    autocmd: i64,
    published: watch::Receiver<usize>,
}

/// Starts watching `baseline`'s buffer (`DiagnosticChanged`) right after
/// its change. Main thread. `None` when the autocmd could not be made.
pub(crate) fn start(baseline: Baseline) -> Option<Started> {
    let (tx, rx) = watch::channel(0usize);
    let lua = lua();
    let on_change = lua
        .create_function(move |_, ()| {
            tx.send_modify(|n| *n += 1);
            Ok(())
        })
        .ok()?;
    let autocmd: i64 = module()
        .and_then(|m| {
            m.get::<Function>("watch")?
                .call((baseline.bufnr, on_change))
        })
        .ok()?;
    Some(Started {
        baseline,
        autocmd,
        published: rx,
    })
}

fn unwatch(autocmd: i64) {
    let _ = module().and_then(|m| m.get::<Function>("unwatch")?.call::<()>(autocmd));
}

/// The [`DiagnosticWatch`] of one edit of a buffer with clients.
pub struct LspWatch {
    main: MainThread,
    wait: Duration,
    started: Option<Started>,
}

impl LspWatch {
    /// A watch posting through `main`, waiting at most `wait`
    /// (`diagnostics_wait_ms`).
    pub(crate) fn new(main: MainThread, wait: Duration, started: Started) -> Self {
        Self {
            main,
            wait,
            started: Some(started),
        }
    }
}

#[async_trait]
impl DiagnosticWatch for LspWatch {
    async fn settle(mut self: Box<Self>, cancel: &CancellationToken) -> Settled {
        let Some(mut started) = self.started.take() else {
            return Settled::default();
        };
        let want = started.baseline.clients;
        let deadline = tokio::time::sleep(self.wait);
        tokio::pin!(deadline);
        loop {
            if *started.published.borrow() >= want {
                break;
            }
            tokio::select! {
                r = started.published.changed() => if r.is_err() { break },
                () = &mut deadline => break,
                () = cancel.cancelled() => break,
            }
        }
        let published = *started.published.borrow();
        let (bufnr, autocmd) = (started.baseline.bufnr, started.autocmd);
        let after = self
            .main
            .run(move || {
                unwatch(autocmd);
                get(Some(bufnr)).unwrap_or_default()
            })
            .await
            .unwrap_or_else(|_| started.baseline.before.clone());
        Settled {
            before: started.baseline.before,
            after,
            unanswered: published == 0,
        }
    }
}

impl Drop for LspWatch {
    fn drop(&mut self) {
        // Not settled (the call failed or was dropped): remove the autocmd.
        if let Some(s) = self.started.take() {
            let autocmd = s.autocmd;
            let _ = self.main.post(move || unwatch(autocmd));
        }
    }
}

/// The buffer of `path` when it is loaded (see `buffer_text::find_loaded`).
/// Main thread.
pub(crate) fn loaded_bufnr(path: &Path, canon: Option<&Path>) -> Option<i64> {
    crate::adapters::buffer_text::find_loaded(path, canon).map(|b| b.handle() as i64)
}
