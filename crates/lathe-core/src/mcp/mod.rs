//! MCP servers (docs/tools.md, "User tools" → MCP): the
//! stdio and streamable HTTP servers of `setup{ mcp_servers = … }` and the
//! project's `.mcp.json` are started on the runtime at setup, and each of their tools
//! goes into the shared [`UserTools`] table as `mcp__<server>__<tool>`, so it
//! runs through the same gates as every tool. A `.mcp.json` server starts
//! only once trusted ([`trust`]); until then it is held ([`set_held`]) and
//! has no tools. Plain async Rust: the Neovim side only calls
//! [`trust::start`], [`statuses`] and [`stop_all`].

pub mod http;
pub mod server;
pub mod tools;
pub mod trust;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::config::mcp::McpServerConfig;
use crate::execution::UserTools;
use crate::text::fill;
use server::{McpServer, Status};

/// Model-facing: the server is not running (it failed to start, crashed or
/// closed its connection). `{server}`, `{why}`, `{log}`.
pub const SERVER_NOT_RUNNING: &str =
    "The MCP server {server} is not running ({why}). It is restarted on the next call; try again once, then tell the user (its log is {log}).";

/// Model-facing: the call did not answer in time. `{tool}`, `{ms}`.
pub const CALL_TIMED_OUT: &str =
    "{tool} did not answer within {ms} ms, so the call was cancelled and nothing it returns later is used. Try again with a smaller request, or tell the user the MCP server hangs.";

/// Model-facing: the user stopped the turn during the call. `{tool}`.
pub const CALL_INTERRUPTED: &str =
    "The user interrupted {tool} while it ran; its MCP server was told to cancel the request. Wait for the user's next instruction.";

/// Model-facing: `isError` without any text. `{tool}`.
pub const EMPTY_ERROR: &str =
    "{tool} failed and its MCP server gave no reason. Tell the user; do not repeat the same call unchanged.";

/// Model-facing: the server answered the request with a protocol error.
/// `{tool}`, `{error}`.
pub const REQUEST_FAILED: &str =
    "{tool} failed: its MCP server answered with an error: {error}. Check the input against the tool's schema; if it looks right, tell the user.";

/// Model-facing: an HTTP server could not be reached or its connection
/// broke. `{server}`, `{url}`, `{why}`, `{log}`.
pub const HTTP_SERVER_UNREACHABLE: &str =
    "The MCP server {server} at {url} could not be used ({why}). lathe connects again on the next call; try again once, then tell the user to check that the server runs at that URL and that its headers (e.g. a token) are right (its log is {log}).";

/// Model-facing: an HTTP server answered this call with an HTTP error
/// (a 500, a 403…); its connection stays up for other calls. `{tool}`,
/// `{server}`, `{url}`, `{why}`, `{log}`.
pub const HTTP_CALL_FAILED: &str =
    "{tool} failed: the MCP server {server} at {url} answered it with an error ({why}). The server is still connected; try the call again once if the error looks temporary, otherwise tell the user (its log is {log}).";

/// Model-facing (gate 1): an `mcp__<server>__…` name whose server is not
/// configured. `{name}`, `{server}`, `{servers}` (the configured ones, or
/// `none`).
pub const NO_SUCH_SERVER: &str =
    "No such tool available: {name}. There is no MCP server {server} (configured MCP servers: {servers}). Use the tools you were given; if the user expects this server, tell them to add it to .mcp.json or setup{ mcp_servers } (:help lathe-mcp).";

/// Model-facing (gate 1): the tool's server is configured but has no
/// tools, because it failed. `{name}`, `{server}`, `{where}` (URL or
/// command), `{why}`, `{log}`.
pub const SERVER_FAILED: &str =
    "{name} is not available: its MCP server {server} ({where}) failed: {why}. lathe tries to start it again before a later request (not more often than every few seconds); tell the user, who can see :checkhealth lathe and its log {log}.";

/// Model-facing (gate 1): the tool's server is still starting. `{name}`,
/// `{server}`.
pub const SERVER_STARTING: &str =
    "{name} is not available yet: its MCP server {server} is still starting. Do something else first or try again in a moment.";

/// Model-facing (gate 1): the tool's server comes from the project's
/// `.mcp.json` and the user has not allowed it yet. `{name}`, `{server}`.
pub const SERVER_WAITING: &str =
    "{name} is not available: its MCP server {server} comes from the project's .mcp.json and waits for the user's approval. Do without it; the user can answer lathe's question (:Lathe review).";

/// Model-facing (gate 1): the user refused the tool's `.mcp.json` server.
/// `{name}`, `{server}`.
pub const SERVER_REFUSED: &str =
    "{name} is not available: the MCP server {server} of the project's .mcp.json is not started (the user refused it, or their settings turn it off). Do without it; do not change .mcp.json to get it started.";

/// Model-facing (gate 1): the server runs but has no such tool. `{name}`,
/// `{server}`, `{tool}`, `{tools}`.
pub const NO_SUCH_SERVER_TOOL: &str =
    "No such tool available: {name}. The MCP server {server} has no tool {tool}; its tools are: {tools}. Call one of these by its exact name.";

/// The servers of the last [`replace`].
static SERVERS: Mutex<Vec<Arc<McpServer>>> = Mutex::new(Vec::new());

/// A configured server that is not started: waiting for the user's answer,
/// or refused ([`trust`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// Its configuration.
    pub config: McpServerConfig,
    /// Why it does not start (user-facing, e.g.
    /// [`trust::REFUSED_REMEMBERED`]); `None` while it waits for the answer.
    pub refused: Option<String>,
}

/// The servers of the last [`set_held`].
static HELD: Mutex<Vec<Held>> = Mutex::new(Vec::new());

/// Makes `held` the servers shown as waiting or refused ([`statuses`],
/// [`explain_unknown`]).
pub fn set_held(held: Vec<Held>) {
    *HELD.lock().unwrap_or_else(|e| e.into_inner()) = held;
}

/// What checkhealth shows of one server.
#[derive(Debug, Clone)]
pub struct ServerInfo {
    /// Its name.
    pub name: String,
    /// `running`, `starting`, `failed`, `waiting` (for the user's approval
    /// of a `.mcp.json` server) or `refused`.
    pub state: &'static str,
    /// Why it failed (one line), when it did; why it is refused, or
    /// [`trust::WAITING`].
    pub error: Option<String>,
    /// What it runs or reaches (its command line, words shell-quoted, or
    /// URL).
    pub location: String,
    /// The last line of its log since its last start.
    pub last_log_line: Option<String>,
    /// Its log file (empty for a held server, which never ran).
    pub log: PathBuf,
    /// The tools registered for it.
    pub tools: Vec<String>,
    /// What the user should know about its tools: renamed, skipped,
    /// schema repaired ([`server::McpServer::tool_notes`]).
    pub tool_notes: Vec<String>,
    /// Its URL, for an HTTP server.
    pub url: Option<String>,
}

/// Makes `configs` the running servers: servers no longer configured (or
/// configured differently) are killed and their tools unregistered; new
/// ones are started on `rt` and their tools registered into `user` as
/// they list them. Unchanged servers keep running. Logs go to
/// `log_dir/<name>.log`; servers run in `root`. Also makes `user`'s
/// unknown-tool explainer say what became of an `mcp__…` tool.
pub fn replace(
    configs: Vec<McpServerConfig>,
    user: Arc<UserTools>,
    log_dir: &Path,
    root: &Path,
    rt: &tokio::runtime::Handle,
) {
    user.set_unknown_tool_explainer(Arc::new(explain_unknown));
    let mut servers = SERVERS.lock().unwrap_or_else(|e| e.into_inner());
    let old = std::mem::take(&mut *servers);
    for server in old {
        if configs.contains(&server.config) {
            servers.push(server);
        } else {
            server.kill();
            for n in server.set_names(Vec::new()) {
                user.unregister(&n);
            }
        }
    }
    for cfg in configs {
        if servers.iter().any(|s| s.config == cfg) {
            continue;
        }
        let server = Arc::new(McpServer::new(cfg, log_dir, root));
        servers.push(server.clone());
        let user = user.clone();
        rt.spawn(async move {
            register(&server, &user).await;
            server.mark_ready();
            let still = SERVERS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .any(|s| Arc::ptr_eq(s, &server));
            if !still {
                // Replaced while starting.
                server.kill();
                for n in server.set_names(Vec::new()) {
                    user.unregister(&n);
                }
            }
        });
    }
}

/// Starts `server` (if needed), lists its tools and registers them into
/// `user`, replacing the ones registered before; the names registered.
/// Tools that cannot be registered are skipped with the reason in the
/// server's log. When the listing fails nothing changes (the server's
/// status says why, and [`retry_failed`] tries again later).
pub async fn register(server: &Arc<McpServer>, user: &Arc<UserTools>) -> Vec<String> {
    let _ = server.table.set(Arc::downgrade(user));
    let tools = match server.list_tools().await {
        Ok(t) => t,
        Err(_) => return server.names(),
    };
    for n in server.set_names(Vec::new()) {
        user.unregister(&n);
    }
    let mut names: Vec<String> = Vec::new();
    // Which of its tools has each name, for the notes on renamed ones.
    let mut owners: Vec<(String, String)> = Vec::new();
    let mut notes = Vec::new();
    for t in &tools {
        // Only its own tools: a clash with another server's or a Lua tool
        // is refused by the table below, and noted.
        let taken = |n: &str| names.iter().any(|m| m.eq_ignore_ascii_case(n));
        let made = tools::free_tool_name(&server.config.name, &t.name, &taken)
            .and_then(|name| tools::user_tool_named(server, t, name))
            .and_then(|tool| {
                let name = crate::tools::Tool::name(&tool).to_string();
                user.register(Arc::new(tool))
                    .map(|()| name)
                    .map_err(|e| e.to_string())
            });
        match made {
            Ok(name) => {
                let plain = tools::tool_name(&server.config.name, &t.name).unwrap_or_default();
                if plain != name {
                    let other = owners
                        .iter()
                        .find(|(n, _)| n.eq_ignore_ascii_case(&plain))
                        .map_or_else(|| plain.clone(), |(_, tool)| tool.clone());
                    notes.push(fill(
                        tools::RENAMED,
                        &[("tool", &t.name), ("name", &name), ("other", &other)],
                    ));
                }
                if crate::tools::user::api_schema(&t.input_schema).is_some() {
                    notes.push(fill(tools::SCHEMA_FLATTENED, &[("tool", &t.name)]));
                }
                owners.push((name.clone(), t.name.clone()));
                names.push(name);
            }
            Err(why) => {
                server.note(&format!("tool {:?} skipped: {why}", t.name));
                notes.push(fill(tools::SKIPPED, &[("tool", &t.name), ("why", &why)]));
            }
        }
    }
    // The names first: a replace() running now unregisters what they say,
    // so nothing slow (the log's writes) goes between the registrations
    // and this.
    server.set_names(names.clone());
    server.set_tool_notes(notes.clone());
    for n in &notes {
        server.note(n);
    }
    server.note(&format!(
        "registered {} tools: {}",
        names.len(),
        names.join(", ")
    ));
    names
}

/// Lists `server`'s tools again when it was restarted since they were
/// listed (a crashed server may come back with other tools) and no failed
/// listing's backoff is running. Used before a call; does nothing when it
/// has no table yet.
pub async fn refresh(server: &Arc<McpServer>) {
    // After a failed listing, not before its backoff has passed.
    if !server.needs_listing() || !server.retry_due() {
        return;
    }
    if let Some(user) = server.table.get().and_then(std::sync::Weak::upgrade) {
        register(server, &user).await;
    }
}

/// Tries again, on the current runtime, every server of the last
/// [`replace`] that has no tools because its start or `tools/list`
/// failed, when its backoff allows ([`server::RETRY_FIRST_MS`]); a broken
/// server is not hammered every request.
pub fn retry_failed() {
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let servers = SERVERS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for server in servers {
        let failed = matches!(server.status(), Status::Failed(_));
        if server.is_ready() && failed && server.names().is_empty() && server.retry_due() {
            let Some(user) = server.table.get().and_then(std::sync::Weak::upgrade) else {
                continue;
            };
            server.mark_starting();
            rt.spawn(async move {
                register(&server, &user).await;
                server.mark_ready();
            });
        }
    }
}

/// The sanitized server part of `mcp__<server>__…` names.
fn clean_name(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Gate 1's explanation of an unknown `mcp__<server>__<tool>` name (the
/// [`crate::execution::UnknownToolExplainer`] [`replace`] installs):
/// [`NO_SUCH_SERVER`], [`SERVER_STARTING`], [`SERVER_FAILED`] or
/// [`NO_SUCH_SERVER_TOOL`]; `None` for other names. A failed server is
/// tried again ([`retry_failed`]).
pub fn explain_unknown(name: &str) -> Option<String> {
    let rest = name.strip_prefix("mcp__")?;
    let held = HELD.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if let Some(h) = held
        .iter()
        .filter(|h| rest.starts_with(&format!("{}__", clean_name(&h.config.name))))
        .max_by_key(|h| h.config.name.len())
    {
        let text = if h.refused.is_some() {
            SERVER_REFUSED
        } else {
            SERVER_WAITING
        };
        return Some(fill(text, &[("name", name), ("server", &h.config.name)]));
    }
    let servers = SERVERS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let server = servers
        .iter()
        .filter(|s| rest.starts_with(&format!("{}__", clean_name(&s.config.name))))
        .max_by_key(|s| s.config.name.len());
    let Some(server) = server else {
        let asked = rest.split("__").next().unwrap_or(rest);
        let names: Vec<&str> = servers
            .iter()
            .map(|s| s.config.name.as_str())
            .chain(held.iter().map(|h| h.config.name.as_str()))
            .collect();
        let list = if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        };
        return Some(fill(
            NO_SUCH_SERVER,
            &[("name", name), ("server", asked), ("servers", &list)],
        ));
    };
    let sname = server.config.name.as_str();
    let tool = &rest[clean_name(sname).len() + 2..];
    let names = server.names();
    if !server.is_ready() || server.status() == Status::Starting {
        return Some(fill(SERVER_STARTING, &[("name", name), ("server", sname)]));
    }
    if let Status::Failed(why) = server.status() {
        if names.is_empty() {
            retry_failed();
            return Some(fill(
                SERVER_FAILED,
                &[
                    ("name", name),
                    ("server", sname),
                    ("where", &server.config.location()),
                    ("why", &why),
                    ("log", &server.log_path.display().to_string()),
                ],
            ));
        }
    }
    let list = if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    };
    Some(fill(
        NO_SUCH_SERVER_TOOL,
        &[
            ("name", name),
            ("server", sname),
            ("tool", tool),
            ("tools", &list),
        ],
    ))
}

/// Every configured server's state: the started ones in configuration
/// order, then the held ones ([`set_held`]).
pub fn statuses() -> Vec<ServerInfo> {
    let held = HELD.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let servers = SERVERS.lock().unwrap_or_else(|e| e.into_inner());
    let mut out: Vec<ServerInfo> = servers
        .iter()
        .map(|s| {
            let (state, error) = match s.status() {
                Status::Starting => ("starting", None),
                Status::Running => ("running", None),
                Status::Failed(why) => ("failed", Some(why)),
            };
            ServerInfo {
                name: s.config.name.clone(),
                state,
                error,
                last_log_line: s.last_log_line(),
                log: s.log_path.clone(),
                tools: s.names(),
                tool_notes: s.tool_notes(),
                url: s.config.url().map(str::to_string),
                location: trust::shown_location(&s.config),
            }
        })
        .collect();
    out.extend(held.into_iter().map(|h| {
        let (state, error) = match h.refused {
            Some(why) => ("refused", why),
            None => ("waiting", trust::WAITING.to_string()),
        };
        ServerInfo {
            name: h.config.name.clone(),
            state,
            error: Some(error),
            last_log_line: None,
            // It never ran: no log.
            log: PathBuf::new(),
            tools: Vec::new(),
            tool_notes: Vec::new(),
            url: h.config.url().map(str::to_string),
            location: trust::shown_location(&h.config),
        }
    }));
    out
}

/// How long a turn waits, at most, for servers still starting before its
/// first request, in ms: their tools are then in that request.
pub const FIRST_REQUEST_WAIT_MS: u64 = 10_000;

/// How long a request waits, at most, for a failed server being tried
/// again ([`retry_failed`]), in ms: shorter than [`FIRST_REQUEST_WAIT_MS`]
/// so that a server that hangs delays a request only a little, and only
/// as often as its backoff allows.
pub const RETRY_WAIT_MS: u64 = 2_000;

/// Tries failed servers again ([`retry_failed`]), then waits until every
/// server of the last [`replace`] has started and registered its tools
/// (or failed), at most [`FIRST_REQUEST_WAIT_MS`] for a first start and
/// [`RETRY_WAIT_MS`] for a retry, ending early when `cancel` fires. Returns at once when none is starting.
pub async fn wait_ready(cancel: &tokio_util::sync::CancellationToken) {
    retry_failed();
    let now = tokio::time::Instant::now();
    let first = now + std::time::Duration::from_millis(FIRST_REQUEST_WAIT_MS);
    let retry = now + std::time::Duration::from_millis(RETRY_WAIT_MS);
    loop {
        let (starting, retrying) = {
            let servers = SERVERS.lock().unwrap_or_else(|e| e.into_inner());
            let pending = |retry: bool| {
                servers
                    .iter()
                    .any(|s| !s.is_ready() && s.is_retrying() == retry)
            };
            (pending(false), pending(true))
        };
        let now = tokio::time::Instant::now();
        let waiting = (starting && now < first) || (retrying && now < retry);
        if !waiting || cancel.is_cancelled() {
            return;
        }
        tokio::select! {
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(std::time::Duration::from_millis(20)) => {}
        }
    }
}

/// Before a direct call of `name` (`lathe.tool()`, `tool_sync()`): when
/// it is a tool of a server of the last [`replace`] that is still
/// starting, waits until that server has registered its tools (or
/// failed), at most [`FIRST_REQUEST_WAIT_MS`] ([`RETRY_WAIT_MS`] for a
/// retry), ending early when `cancel` fires; a call right after `setup()`
/// then finds the tool instead of [`SERVER_STARTING`]. `tool_sync()`'s own
/// timeout still bounds the caller's wait. Returns at once for other names.
pub async fn wait_for_tool(name: &str, cancel: &tokio_util::sync::CancellationToken) {
    let Some(rest) = name.strip_prefix("mcp__") else {
        return;
    };
    let server = SERVERS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter(|s| rest.starts_with(&format!("{}__", clean_name(&s.config.name))))
        .max_by_key(|s| s.config.name.len())
        .cloned();
    let Some(server) = server else {
        return;
    };
    let ms = if server.is_retrying() {
        RETRY_WAIT_MS
    } else {
        FIRST_REQUEST_WAIT_MS
    };
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_millis(ms);
    while !server.is_ready() && tokio::time::Instant::now() < deadline {
        tokio::select! {
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(std::time::Duration::from_millis(20)) => {}
        }
    }
}

/// Kills every server process (Neovim is exiting).
pub fn stop_all() {
    let servers = SERVERS.lock().unwrap_or_else(|e| e.into_inner());
    for s in servers.iter() {
        s.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_servers_are_explained_and_listed() {
        assert_eq!(
            fill(SERVER_WAITING, &[("name", "mcp__docs__find"), ("server", "docs")]),
            "mcp__docs__find is not available: its MCP server docs comes from the project's .mcp.json and waits for the user's approval. Do without it; the user can answer lathe's question (:Lathe review)."
        );
        assert_eq!(
            fill(SERVER_REFUSED, &[("name", "mcp__evil__x"), ("server", "evil")]),
            "mcp__evil__x is not available: the MCP server evil of the project's .mcp.json is not started (the user refused it, or their settings turn it off). Do without it; do not change .mcp.json to get it started."
        );
    }

    #[test]
    fn model_facing_texts() {
        assert_eq!(
            fill(
                SERVER_NOT_RUNNING,
                &[("server", "docs"), ("why", "it exited: exit status: 1"), ("log", "/s/mcp/docs.log")]
            ),
            "The MCP server docs is not running (it exited: exit status: 1). It is restarted on the next call; try again once, then tell the user (its log is /s/mcp/docs.log)."
        );
        assert_eq!(
            fill(CALL_TIMED_OUT, &[("tool", "mcp__docs__find"), ("ms", "120000")]),
            "mcp__docs__find did not answer within 120000 ms, so the call was cancelled and nothing it returns later is used. Try again with a smaller request, or tell the user the MCP server hangs."
        );
        assert_eq!(
            fill(CALL_INTERRUPTED, &[("tool", "mcp__docs__find")]),
            "The user interrupted mcp__docs__find while it ran; its MCP server was told to cancel the request. Wait for the user's next instruction."
        );
        assert_eq!(
            fill(SERVER_STARTING, &[("name", "mcp__docs__find"), ("server", "docs")]),
            "mcp__docs__find is not available yet: its MCP server docs is still starting. Do something else first or try again in a moment."
        );
        assert_eq!(
            fill(REQUEST_FAILED, &[("tool", "mcp__docs__find"), ("error", "Mcp error: -32602: bad")]),
            "mcp__docs__find failed: its MCP server answered with an error: Mcp error: -32602: bad. Check the input against the tool's schema; if it looks right, tell the user."
        );
        assert_eq!(
            fill(
                HTTP_CALL_FAILED,
                &[
                    ("tool", "mcp__web__boom"),
                    ("server", "web"),
                    ("url", "http://127.0.0.1:8/mcp"),
                    ("why", "HTTP 500"),
                    ("log", "/s/mcp/web.log")
                ]
            ),
            "mcp__web__boom failed: the MCP server web at http://127.0.0.1:8/mcp answered it with an error (HTTP 500). The server is still connected; try the call again once if the error looks temporary, otherwise tell the user (its log is /s/mcp/web.log)."
        );
    }
}
