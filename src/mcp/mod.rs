//! MCP servers (issue 13; docs/architecture.md, "User tools" → MCP): the
//! stdio servers of `setup{ mcp_servers = … }` and the project's
//! `.mcp.json` are started on the runtime at setup, and each of their tools
//! goes into the shared [`UserTools`] table as `mcp__<server>__<tool>`, so it
//! runs through the same gates as every tool. Plain async Rust: the Neovim
//! side only calls [`replace`], [`statuses`] and [`stop_all`].

pub mod server;
pub mod tools;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::config::mcp::McpServerConfig;
use crate::execution::UserTools;
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

/// The servers of the last [`replace`] and their registered tool names.
static SERVERS: Mutex<Vec<(Arc<McpServer>, Vec<String>)>> = Mutex::new(Vec::new());

/// What checkhealth shows of one server.
#[derive(Debug, Clone)]
pub struct ServerInfo {
    /// Its name.
    pub name: String,
    /// `running`, `starting` or `failed`.
    pub state: &'static str,
    /// Why it failed (one line), when it did.
    pub error: Option<String>,
    /// The last line of its log.
    pub last_log_line: Option<String>,
    /// Its log file.
    pub log: PathBuf,
    /// The tools registered for it.
    pub tools: Vec<String>,
}

/// Makes `configs` the running servers: servers no longer configured (or
/// configured differently) are killed and their tools unregistered; new
/// ones are started on `rt` and their tools registered into `user` as
/// they list them. Unchanged servers keep running. Logs go to
/// `log_dir/<name>.log`; servers run in `root`.
pub fn replace(
    configs: Vec<McpServerConfig>,
    user: Arc<UserTools>,
    log_dir: &Path,
    root: &Path,
    rt: &tokio::runtime::Handle,
) {
    let mut servers = SERVERS.lock().unwrap_or_else(|e| e.into_inner());
    let old = std::mem::take(&mut *servers);
    for (server, names) in old {
        if configs.contains(&server.config) {
            servers.push((server, names));
        } else {
            server.kill();
            for n in &names {
                user.unregister(n);
            }
        }
    }
    for cfg in configs {
        if servers.iter().any(|(s, _)| s.config == cfg) {
            continue;
        }
        let server = Arc::new(McpServer::new(cfg, log_dir, root));
        servers.push((server.clone(), Vec::new()));
        let user = user.clone();
        rt.spawn(async move {
            let names = register(&server, &user).await;
            let mut servers = SERVERS.lock().unwrap_or_else(|e| e.into_inner());
            server.mark_ready();
            if let Some(entry) = servers.iter_mut().find(|(s, _)| Arc::ptr_eq(s, &server)) {
                entry.1 = names;
            } else {
                // Replaced while starting.
                server.kill();
                for n in &names {
                    user.unregister(n);
                }
            }
        });
    }
}

/// Starts `server`, lists its tools and registers them; the names
/// registered. Tools that cannot be registered are skipped with the
/// reason in the server's log.
pub async fn register(server: &Arc<McpServer>, user: &UserTools) -> Vec<String> {
    let tools = match server.list_tools().await {
        Ok(t) => t,
        Err(_) => return Vec::new(),
    };
    let mut names = Vec::new();
    for t in &tools {
        let made = tools::user_tool(server, t).and_then(|tool| {
            let name = crate::tools::Tool::name(&tool).to_string();
            user.register(Arc::new(tool))
                .map(|()| name)
                .map_err(|e| e.to_string())
        });
        match made {
            Ok(name) => names.push(name),
            Err(why) => server.note(&format!("tool {:?} skipped: {why}", t.name)),
        }
    }
    server.note(&format!(
        "registered {} tools: {}",
        names.len(),
        names.join(", ")
    ));
    names
}

/// Every configured server's state, in configuration order.
pub fn statuses() -> Vec<ServerInfo> {
    let servers = SERVERS.lock().unwrap_or_else(|e| e.into_inner());
    servers
        .iter()
        .map(|(s, names)| {
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
                tools: names.clone(),
            }
        })
        .collect()
}

/// How long a turn waits, at most, for servers still starting before its
/// first request, in ms: their tools are then in that request.
pub const FIRST_REQUEST_WAIT_MS: u64 = 10_000;

/// Waits until every server of the last [`replace`] has started and
/// registered its tools (or failed), at most [`FIRST_REQUEST_WAIT_MS`],
/// ending early when `cancel` fires. Returns at once when none is starting.
pub async fn wait_ready(cancel: &tokio_util::sync::CancellationToken) {
    let deadline =
        tokio::time::Instant::now() + std::time::Duration::from_millis(FIRST_REQUEST_WAIT_MS);
    loop {
        let starting = SERVERS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|(s, _)| !s.is_ready());
        if !starting || cancel.is_cancelled() || tokio::time::Instant::now() >= deadline {
            return;
        }
        tokio::select! {
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(std::time::Duration::from_millis(20)) => {}
        }
    }
}

/// Kills every server process (Neovim is exiting).
pub fn stop_all() {
    let servers = SERVERS.lock().unwrap_or_else(|e| e.into_inner());
    for (s, _) in servers.iter() {
        s.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::fill;

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
            fill(REQUEST_FAILED, &[("tool", "mcp__docs__find"), ("error", "Mcp error: -32602: bad")]),
            "mcp__docs__find failed: its MCP server answered with an error: Mcp error: -32602: bad. Check the input against the tool's schema; if it looks right, tell the user."
        );
    }
}
