//! [`NvimLsp`]: the [`LspNavigator`] the LSP tools ask, served from
//! `vim.lsp` (docs/lsp.md, "Navigation through language
//! servers"). Each step on the main thread is short (find or load the
//! buffer, read one line, send the requests with a callback); the waiting
//! (for a server to attach, for the answers) happens off it, bounded by
//! `lsp_timeout_ms` and the turn's cancellation. Requests still pending
//! when the wait ends, or when the call is dropped, are cancelled with
//! the server (`$/cancelRequest`). Also keeps
//! [`servers_running`](lathe_core::editor::lsp::servers_running) current
//! ([`ensure_tracking`]). Main-thread functions call `lua/lathe/lsp.lua`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mlua::{DeserializeOptions, Function, LuaSerdeExt, Value};
use serde::Deserialize;
use serde_json::Value as Json;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::adapters::buffer_text::{canonical, find_loaded};
use crate::adapters::lsp::module;
use crate::host::bridge::{BridgeError, MainThread};
use crate::host::lua_handle::lua;
use lathe_core::editor::lsp_position::{character_at, symbol_columns, OffsetEncoding};
use lathe_core::editor::{
    lsp_result, Editor, Location, LspAnswer, LspFailure, LspNavigator, LspQuery,
};

/// Longest wait for a language server to attach to a file the navigator
/// just loaded (within `lsp_timeout_ms`), in ms.
pub const ATTACH_WAIT_MS: u64 = 3000;
/// Most locations whose source line is read for a result.
const MAX_LOCATION_TEXTS: usize = 200;

/// A client that can answer, as `lathe.lsp.state` lists it.
#[derive(Debug, Clone, Deserialize)]
struct ClientInfo {
    id: i64,
    name: String,
    encoding: String,
}

/// `lathe.lsp.state`'s answer.
#[derive(Debug, Clone, Default, Deserialize)]
struct BufState {
    #[serde(default)]
    attached: Vec<String>,
    #[serde(default)]
    clients: Vec<ClientInfo>,
    #[serde(default)]
    starting: bool,
    #[serde(default)]
    line_count: usize,
    #[serde(default)]
    text: Option<String>,
}

/// What the first main-thread step found.
enum Opened {
    /// The file is not in a buffer and not on disk.
    Missing,
    /// Buffer `bufnr` and its state; `attach` is set when no client was
    /// attached yet (an `LspAttach` watch: its autocmd id and receiver).
    Buffer {
        bufnr: i64,
        state: BufState,
        attach: Option<(i64, watch::Receiver<bool>)>,
    },
}

fn bridge(e: BridgeError) -> LspFailure {
    LspFailure::Unavailable(e.to_string())
}

fn lua_err(e: mlua::Error) -> LspFailure {
    LspFailure::Unavailable(e.to_string())
}

/// `lathe.lsp.state(bufnr, method, line)` (main thread).
fn buf_state(bufnr: i64, method: &str, line: Option<usize>) -> Result<BufState, LspFailure> {
    let v: Value = module()
        .and_then(|m| m.get::<Function>("state")?.call((bufnr, method, line)))
        .map_err(lua_err)?;
    lua().from_value(v).map_err(lua_err)
}

/// Finds the buffer of `path` (loading the file hidden when no buffer
/// holds it) and its state; watches for an attach when no client is
/// attached and one may still come (the file was just loaded, or a client
/// is still starting). Main thread.
fn open(
    path: &Path,
    canon: Option<&Path>,
    exists: bool,
    method: &str,
    line: Option<usize>,
) -> Result<Opened, LspFailure> {
    let (bufnr, loaded_now) = match find_loaded(path, canon) {
        Some(b) => (b.handle() as i64, false),
        None if !exists => return Ok(Opened::Missing),
        None => (
            module()
                .and_then(|m| {
                    m.get::<Function>("open")?
                        .call::<i64>(path.display().to_string())
                })
                .map_err(lua_err)?,
            true,
        ),
    };
    let state = buf_state(bufnr, method, line)?;
    let attach = if state.attached.is_empty() && (loaded_now || state.starting) {
        let (tx, rx) = watch::channel(false);
        let on_attach = lua()
            .create_function(move |_, ()| {
                let _ = tx.send(true);
                Ok(())
            })
            .map_err(lua_err)?;
        let id: i64 = module()
            .and_then(|m| m.get::<Function>("on_attach")?.call((bufnr, on_attach)))
            .map_err(lua_err)?;
        Some((id, rx))
    } else {
        None
    };
    Ok(Opened::Buffer {
        bufnr,
        state,
        attach,
    })
}

/// One request to send: the client and the 0-based position in its
/// encoding (`None` for whole-document and workspace requests).
struct Outgoing {
    client: ClientInfo,
    position: Option<(usize, usize)>,
}

/// Requests sent and not answered yet, as `(client id, request id)` by
/// outgoing index; dropping it cancels them with their servers (the call
/// ended early: timeout, cancellation, or the pipeline dropped it).
///
/// The ids are written by the main-thread step that sends the requests, and
/// the cancel step reads them on the main thread too, queued after the send
/// (the bridge runs closures in order): a call dropped while the send is
/// queued or running, before its ids reach this side, still cancels them.
struct Pending {
    main: MainThread,
    open: OpenRequests,
}

/// `(client id, request id)` of each outgoing request by index; `None` once
/// answered, or when it could not be sent.
type OpenRequests = Arc<Mutex<Vec<Option<(i64, i64)>>>>;

impl Pending {
    fn slots(&self) -> std::sync::MutexGuard<'_, Vec<Option<(i64, i64)>>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks request `i` answered; `true` when it was still open (each
    /// index counts once).
    fn answered(&self, i: usize) -> bool {
        match self.slots().get_mut(i) {
            Some(slot) if slot.is_some() => {
                *slot = None;
                true
            }
            _ => false,
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let open = self.open.clone();
        let _ = self.main.post(move || {
            let left: Vec<(i64, i64)> = open
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .flatten()
                .copied()
                .collect();
            if left.is_empty() {
                return;
            }
            if let Ok(m) = module() {
                if let Ok(cancel) = m.get::<Function>("cancel") {
                    for (client, request) in left {
                        let _ = cancel.call::<()>((client, request));
                    }
                }
            }
        });
    }
}

/// The navigator over Neovim's language-server clients.
pub struct NvimLsp {
    main: MainThread,
    timeout: Duration,
}

impl NvimLsp {
    /// A navigator posting through `main`, each question bounded by
    /// `timeout` (`lsp_timeout_ms`).
    pub fn new(main: MainThread, timeout: Duration) -> Self {
        Self { main, timeout }
    }

    /// Sends `method` to each of `out` (for buffer `bufnr`, or the
    /// workspace `query`) and waits for every answer until `deadline` or
    /// `cancel`. Returns the answers that came (`null` results included),
    /// with the client's name. Errors: nothing could be sent; no answer
    /// before the deadline ([`LspFailure::Timeout`]); every answer an
    /// error; cancelled.
    async fn send(
        &self,
        bufnr: Option<i64>,
        method: &'static str,
        out: Vec<Outgoing>,
        query: Option<String>,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<Vec<Json>, LspFailure> {
        let names: Vec<String> = out.iter().map(|o| o.client.name.clone()).collect();
        let (tx, mut rx) = mpsc::unbounded_channel::<(usize, Result<Json, String>)>();
        let pending = Pending {
            main: self.main.clone(),
            open: Arc::default(),
        };
        let open = pending.open.clone();
        let sent = self
            .main
            .run(move || -> Result<usize, LspFailure> {
                let lua = lua();
                let request = module()
                    .and_then(|m| m.get::<Function>("request"))
                    .map_err(lua_err)?;
                let mut sent = 0usize;
                for (i, o) in out.into_iter().enumerate() {
                    let tx = tx.clone();
                    let handler = lua
                        .create_function(move |lua, (err, result): (Value, Value)| {
                            let answer = match err {
                                Value::String(s) => Err(s.to_string_lossy()),
                                _ => Ok(lua
                                    .from_value_with::<Json>(
                                        result,
                                        DeserializeOptions::new().deny_unsupported_types(false),
                                    )
                                    .unwrap_or(Json::Null)),
                            };
                            let _ = tx.send((i, answer));
                            Ok(())
                        })
                        .map_err(lua_err)?;
                    let (line, character) = o.position.unzip();
                    // The slot exists before the request goes: a server
                    // that answers at once finds it.
                    open.lock().unwrap_or_else(|e| e.into_inner()).push(None);
                    let id: Option<i64> = request
                        .call((
                            o.client.id,
                            method,
                            bufnr,
                            line,
                            character,
                            query.clone(),
                            handler,
                        ))
                        .map_err(lua_err)?;
                    if let Some(id) = id {
                        if let Some(slot) =
                            open.lock().unwrap_or_else(|e| e.into_inner()).get_mut(i)
                        {
                            *slot = Some((o.client.id, id));
                        }
                        sent += 1;
                    }
                }
                Ok(sent)
            })
            .await
            .map_err(bridge)??;
        let expected = sent;
        if expected == 0 {
            return Err(LspFailure::Unavailable(format!(
                "the request could not be sent to {}",
                names.join(", ")
            )));
        }
        let mut answers: Vec<Json> = Vec::new();
        let mut errors: Vec<(String, String)> = Vec::new();
        let mut got = 0;
        let sleep = tokio::time::sleep_until(deadline);
        tokio::pin!(sleep);
        while got < expected {
            tokio::select! {
                msg = rx.recv() => match msg {
                    Some((i, answer)) => {
                        // A synchronous answer may come before the slot is
                        // known; count each index once.
                        if pending.answered(i) {
                            got += 1;
                            match answer {
                                Ok(v) => answers.push(v),
                                Err(e) => errors.push((names.get(i).cloned().unwrap_or_default(), e)),
                            }
                        }
                    }
                    None => break,
                },
                () = &mut sleep => break,
                () = cancel.cancelled() => return Err(LspFailure::Cancelled),
            }
        }
        if answers.is_empty() {
            if let Some((server, message)) = errors.into_iter().next() {
                return Err(LspFailure::ServerError { server, message });
            }
            if got < expected {
                return Err(LspFailure::Timeout {
                    ms: self.timeout.as_millis() as u64,
                    servers: names,
                });
            }
        }
        Ok(answers)
    }

    /// The buffer of `path` with a client attached (loading the file and
    /// waiting for an attach when needed). Errors: not found, no server,
    /// timeout, cancelled.
    async fn buffer(
        &self,
        path: &Path,
        method: &'static str,
        line: Option<usize>,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<(i64, BufState), LspFailure> {
        let canon = canonical(path);
        let exists = tokio::fs::metadata(path).await.is_ok_and(|m| m.is_file());
        let p = path.to_path_buf();
        let opened = self
            .main
            .run(move || open(&p, canon.as_deref(), exists, method, line))
            .await
            .map_err(bridge)??;
        let (bufnr, state, attach) = match opened {
            Opened::Missing => return Err(LspFailure::NotFound(path.to_path_buf())),
            Opened::Buffer {
                bufnr,
                state,
                attach,
            } => (bufnr, state, attach),
        };
        let Some((autocmd, mut attached)) = attach else {
            if state.attached.is_empty() {
                return Err(LspFailure::NoServer(path.to_path_buf()));
            }
            return Ok((bufnr, state));
        };
        let until = deadline.min(Instant::now() + Duration::from_millis(ATTACH_WAIT_MS));
        let sleep = tokio::time::sleep_until(until);
        tokio::pin!(sleep);
        tokio::select! {
            _ = attached.wait_for(|a| *a) => {},
            () = &mut sleep => {},
            () = cancel.cancelled() => {},
        }
        let state = self
            .main
            .run(move || {
                let _ = module().and_then(|m| m.get::<Function>("unwatch")?.call::<()>(autocmd));
                buf_state(bufnr, method, line)
            })
            .await
            .map_err(bridge)??;
        if cancel.is_cancelled() {
            return Err(LspFailure::Cancelled);
        }
        if state.attached.is_empty() {
            return Err(LspFailure::NoServer(path.to_path_buf()));
        }
        Ok((bufnr, state))
    }

    /// `locations` with their source lines: the buffer's for loaded files
    /// (one main-thread trip), else the file's; sorted and deduplicated.
    async fn with_text(&self, mut locations: Vec<(PathBuf, usize)>) -> Vec<Location> {
        locations.sort();
        locations.dedup();
        let wanted: Vec<(PathBuf, Option<PathBuf>, usize)> = locations
            .iter()
            .take(MAX_LOCATION_TEXTS)
            .map(|(p, l)| (p.clone(), canonical(p), *l))
            .collect();
        let from_buffers = self
            .main
            .run(move || {
                wanted
                    .iter()
                    .map(|(p, canon, line)| {
                        let buf = find_loaded(p, canon.as_deref())?;
                        let first = buf
                            .get_lines(line - 1..*line, false)
                            .ok()?
                            .map(|l| l.to_string_lossy().into_owned())
                            .next();
                        first
                    })
                    .collect::<Vec<Option<String>>>()
            })
            .await
            .unwrap_or_default();
        let disk = lathe_core::editor::DiskEditor::new();
        let mut files: std::collections::HashMap<PathBuf, Option<Vec<String>>> =
            std::collections::HashMap::new();
        let mut out = Vec::with_capacity(locations.len());
        for (i, (path, line)) in locations.into_iter().enumerate() {
            let mut text = from_buffers.get(i).cloned().flatten();
            if text.is_none() && i < MAX_LOCATION_TEXTS {
                if !files.contains_key(&path) {
                    let lines = disk
                        .read(&path)
                        .await
                        .ok()
                        .map(|d| d.text.lines().map(str::to_string).collect());
                    files.insert(path.clone(), lines);
                }
                text = files
                    .get(&path)
                    .and_then(|l| l.as_ref())
                    .and_then(|l| l.get(line - 1).cloned());
            }
            out.push(Location { path, line, text });
        }
        out
    }
}

#[async_trait]
impl LspNavigator for NvimLsp {
    async fn ask(
        &self,
        query: LspQuery,
        cancel: &CancellationToken,
    ) -> Result<LspAnswer, LspFailure> {
        let deadline = Instant::now() + self.timeout;
        let method = query.method();
        if let LspQuery::WorkspaceSymbols(q) = &query {
            let state: BufState = self
                .main
                .run(move || -> Result<BufState, LspFailure> {
                    let v: Value = module()
                        .and_then(|m| m.get::<Function>("workspace_state")?.call(method))
                        .map_err(lua_err)?;
                    lua().from_value(v).map_err(lua_err)
                })
                .await
                .map_err(bridge)??;
            if state.clients.is_empty() {
                return Err(LspFailure::Unsupported {
                    servers: state.attached,
                });
            }
            let out = state
                .clients
                .into_iter()
                .map(|client| Outgoing {
                    client,
                    position: None,
                })
                .collect();
            let answers = self
                .send(None, method, out, Some(q.clone()), deadline, cancel)
                .await?;
            return Ok(LspAnswer::Symbols(
                answers
                    .iter()
                    .flat_map(|a| lsp_result::symbols(a, None))
                    .collect(),
            ));
        }
        let Some(path) = query.path().map(Path::to_path_buf) else {
            return Err(LspFailure::Unavailable("no file to ask about".into()));
        };
        let at = query.at().cloned();
        let (bufnr, state) = self
            .buffer(&path, method, at.as_ref().map(|a| a.line), deadline, cancel)
            .await?;
        if state.clients.is_empty() {
            return Err(LspFailure::Unsupported {
                servers: state.attached,
            });
        }
        let column = match &at {
            Some(at) => {
                if at.line > state.line_count {
                    return Err(LspFailure::LinePastEnd {
                        line: at.line,
                        count: state.line_count,
                    });
                }
                let text = state.text.clone().unwrap_or_default();
                let columns = symbol_columns(&text, &at.symbol);
                if columns.is_empty() {
                    return Err(LspFailure::SymbolNotOnLine {
                        line: at.line,
                        text,
                    });
                }
                let Some(byte) = columns.get(at.occurrence.max(1) - 1).copied() else {
                    return Err(LspFailure::NoSuchOccurrence {
                        line: at.line,
                        count: columns.len(),
                    });
                };
                Some((at.line - 1, text, byte))
            }
            None => None,
        };
        let out = state
            .clients
            .into_iter()
            .map(|client| {
                let position = column.as_ref().map(|(line, text, byte)| {
                    let enc = OffsetEncoding::from_name(&client.encoding);
                    (*line, character_at(text, *byte, enc))
                });
                Outgoing { client, position }
            })
            .collect();
        let answers = self
            .send(Some(bufnr), method, out, None, deadline, cancel)
            .await?;
        Ok(match query {
            LspQuery::Definition(_) | LspQuery::References(_) => {
                let found = answers.iter().flat_map(lsp_result::locations).collect();
                LspAnswer::Locations(self.with_text(found).await)
            }
            LspQuery::Hover(_) => {
                let texts: Vec<String> =
                    answers.iter().filter_map(lsp_result::hover_text).collect();
                LspAnswer::Hover((!texts.is_empty()).then(|| texts.join("\n\n---\n\n")))
            }
            LspQuery::DocumentSymbols(_) | LspQuery::WorkspaceSymbols(_) => LspAnswer::Symbols(
                answers
                    .iter()
                    .flat_map(|a| lsp_result::symbols(a, Some(&path)))
                    .collect(),
            ),
        })
    }
}

thread_local! {
    static TRACKING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Keeps [`lathe_core::editor::lsp::servers_running`] current: counts the
/// running clients now and on every `LspAttach`/`LspDetach`
/// (`lathe.lsp.track`). Main thread; idempotent; retried on the next call
/// when `lua/lathe/lsp.lua` cannot be loaded yet.
pub fn ensure_tracking() {
    if TRACKING.with(std::cell::Cell::get) {
        return;
    }
    let done = (|| -> mlua::Result<()> {
        let on_count = lua().create_function(|_, n: usize| {
            lathe_core::editor::lsp::set_servers_running(n);
            Ok(())
        })?;
        module()?.get::<Function>("track")?.call::<()>(on_count)
    })();
    if done.is_ok() {
        TRACKING.with(|t| t.set(true));
    }
}
