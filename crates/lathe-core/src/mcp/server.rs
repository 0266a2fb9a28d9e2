//! One MCP server and lathe's client of it: rmcp over a child's
//! stdin/stdout (stdio), or rmcp's streamable HTTP client (`mcp::http`).
//! Started on the runtime, restarted on the next call after it failed or
//! exited; a stdio server's stderr goes to `<state>/mcp/<name>.log`, where
//! lathe also notes each start (a separator line with the time), failure
//! and tool list.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex as StdMutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::ServiceExt;
use serde_json::Value;
use tokio::process::Child;
use tokio::sync::Mutex;

use crate::config::mcp::{McpServerConfig, McpTransport};
use crate::execution::UserTools;

/// What starts each start's part of the log: `{time}` (an HTTP date).
/// [`McpServer::last_log_line`] reads only the lines after the last one.
pub const START_SEPARATOR: &str = "[lathe] ---- start {time} ----";

/// The first wait before listing the tools of a server whose start or
/// `tools/list` failed again, in ms; doubled after each failure up to
/// [`RETRY_MAX_MS`].
pub const RETRY_FIRST_MS: u64 = 2_000;

/// The longest wait between retries of a failed server, in ms.
pub const RETRY_MAX_MS: u64 = 60_000;

/// How long a server may take to start and answer `initialize` and
/// `tools/list`, in ms.
pub const START_TIMEOUT_MS: u64 = 30_000;

/// What checkhealth shows of a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Being started.
    Starting,
    /// Answering; its number of tools.
    Running,
    /// Not running; why (one line).
    Failed(String),
}

/// A tool the server offers: its MCP name, description, input schema and
/// `annotations.readOnlyHint`.
#[derive(Debug, Clone)]
pub struct ServerTool {
    /// The server's name for it.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its `inputSchema`.
    pub input_schema: Value,
    /// `annotations.readOnlyHint`.
    pub read_only: bool,
}

struct Conn {
    client: RunningService<RoleClient, ()>,
    /// The process of a stdio server; `None` for HTTP.
    child: Option<Child>,
}

/// One configured server.
pub struct McpServer {
    /// Its configuration.
    pub config: McpServerConfig,
    /// Where its stderr (and lathe's notes about it) go.
    pub log_path: PathBuf,
    root: PathBuf,
    conn: Mutex<Option<Conn>>,
    status: StdMutex<Status>,
    pid: AtomicU32,
    ready: AtomicBool,
    retrying: AtomicBool,
    /// Successful starts so far; compared with `listed` to list the tools
    /// again after a restart.
    starts: AtomicU64,
    /// The start whose tools are registered (`starts` then).
    listed: AtomicU64,
    /// Failed starts or listings in a row, and when the last one was.
    failures: StdMutex<(u32, Option<Instant>)>,
    /// The table its tools go into ([`super::register`] sets it).
    pub(crate) table: OnceLock<Weak<UserTools>>,
    /// Its registered tool names.
    names: StdMutex<Vec<String>>,
    /// What the user should know about its tools at the last listing
    /// (renamed, skipped, schema repaired), one line each.
    tool_notes: StdMutex<Vec<String>>,
}

/// Why a call could not reach the server (one line, for model-facing texts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotRunning(pub String);

impl McpServer {
    /// A server not started yet; its log goes under `log_dir`, it runs in
    /// `root`.
    pub fn new(config: McpServerConfig, log_dir: &Path, root: &Path) -> Self {
        Self {
            log_path: log_dir.join(format!("{}.log", config.name)),
            config,
            root: root.to_path_buf(),
            conn: Mutex::new(None),
            status: StdMutex::new(Status::Starting),
            pid: AtomicU32::new(0),
            ready: AtomicBool::new(false),
            retrying: AtomicBool::new(false),
            starts: AtomicU64::new(0),
            listed: AtomicU64::new(0),
            failures: StdMutex::new((0, None)),
            table: OnceLock::new(),
            names: StdMutex::new(Vec::new()),
            tool_notes: StdMutex::new(Vec::new()),
        }
    }

    /// What the user should know about its tools (renamed, skipped,
    /// schema repaired) since they were last listed; shown by
    /// `:checkhealth lathe` and `:Lathe tools`.
    pub fn tool_notes(&self) -> Vec<String> {
        self.tool_notes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(crate) fn set_tool_notes(&self, notes: Vec<String>) {
        *self.tool_notes.lock().unwrap_or_else(|e| e.into_inner()) = notes;
    }

    /// Its registered tool names (`mcp__<server>__<tool>`).
    pub fn names(&self) -> Vec<String> {
        self.names.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Records `names` as its registered tools, listed at the current
    /// start; the previous names.
    pub(crate) fn set_names(&self, names: Vec<String>) -> Vec<String> {
        self.listed
            .store(self.starts.load(Ordering::SeqCst), Ordering::SeqCst);
        std::mem::replace(
            &mut *self.names.lock().unwrap_or_else(|e| e.into_inner()),
            names,
        )
    }

    /// Whether it was (re)started since its tools were last listed.
    pub fn needs_listing(&self) -> bool {
        self.starts.load(Ordering::SeqCst) != self.listed.load(Ordering::SeqCst)
    }

    /// Records a failed start or listing (for the retry backoff).
    pub(crate) fn record_failure(&self) {
        let mut f = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        *f = (f.0.saturating_add(1), Some(Instant::now()));
    }

    /// Records a successful listing: the backoff starts over.
    pub(crate) fn record_success(&self) {
        *self.failures.lock().unwrap_or_else(|e| e.into_inner()) = (0, None);
    }

    /// Whether a failed server may be tried again now: [`RETRY_FIRST_MS`]
    /// after the first failure, doubling up to [`RETRY_MAX_MS`].
    pub fn retry_due(&self) -> bool {
        let (n, last) = *self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let Some(last) = last else { return true };
        let wait = RETRY_FIRST_MS
            .saturating_mul(1u64 << n.saturating_sub(1).min(10))
            .min(RETRY_MAX_MS);
        last.elapsed() >= Duration::from_millis(wait)
    }

    /// Marks its first start done (its tools registered, or it failed).
    pub fn mark_ready(&self) {
        self.ready.store(true, Ordering::SeqCst);
        self.retrying.store(false, Ordering::SeqCst);
    }

    /// Marks a retry of a failed server under way: [`super::wait_ready`]
    /// waits for it again.
    pub fn mark_starting(&self) {
        self.retrying.store(true, Ordering::SeqCst);
        self.ready.store(false, Ordering::SeqCst);
    }

    /// Whether it is being tried again after a failure ([`Self::mark_starting`]),
    /// not started for the first time.
    pub fn is_retrying(&self) -> bool {
        self.retrying.load(Ordering::SeqCst)
    }

    /// Whether its first start is done ([`Self::mark_ready`]).
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::SeqCst)
    }

    /// What checkhealth shows.
    pub fn status(&self) -> Status {
        self.status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set_status(&self, s: Status) {
        *self.status.lock().unwrap_or_else(|e| e.into_inner()) = s;
    }

    /// Appends `line` to the server's log (best effort).
    pub fn note(&self, line: &str) {
        if let Some(dir) = self.log_path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log_path)
        {
            let _ = writeln!(f, "[lathe] {line}");
        }
    }

    /// The last non-empty line the server wrote to the log since its last
    /// start ([`START_SEPARATOR`]), for error texts and checkhealth: lines
    /// of older starts are never shown.
    pub fn last_log_line(&self) -> Option<String> {
        let text = std::fs::read_to_string(&self.log_path).ok()?;
        text.lines()
            .rev()
            .take_while(|l| !l.starts_with(START_SEPARATOR.split("{time}").next().unwrap_or("")))
            .find(|l| !l.trim().is_empty() && !l.starts_with("[lathe]"))
            .map(|l| l.chars().take(300).collect())
    }

    /// SIGKILLs the process, if one runs, or closes an HTTP server's
    /// connection (on Neovim's exit and when the server is removed from the
    /// configuration).
    pub fn kill(&self) {
        // An HTTP server's connection ends with its client (rmcp's worker
        // is cancelled on drop); a stdio child is killed below.
        if let Ok(mut conn) = self.conn.try_lock() {
            if conn.as_ref().is_some_and(|c| c.child.is_none()) {
                *conn = None;
            }
        }
        let pid = self.pid.swap(0, Ordering::SeqCst);
        if pid != 0 {
            // SAFETY: kill(2) with a pid lathe started; no memory involved.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
        }
    }

    /// Starts the server (stdio) or connects to it (HTTP).
    async fn connect(&self) -> Result<Conn, String> {
        match &self.config.transport {
            McpTransport::Stdio { command, args, env } => {
                self.spawn_stdio(command, args, env).await
            }
            McpTransport::Http { url, headers } => {
                let client = super::http::connect(url, headers, START_TIMEOUT_MS).await?;
                Ok(Conn {
                    client,
                    child: None,
                })
            }
        }
    }

    async fn spawn_stdio(
        &self,
        command: &str,
        args: &[String],
        env: &std::collections::BTreeMap<String, String>,
    ) -> Result<Conn, String> {
        if let Some(dir) = self.log_path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log_path)
            .map_err(|e| format!("cannot open its log {}: {e}", self.log_path.display()))?;
        let mut cmd = tokio::process::Command::new(command);
        cmd.args(args)
            .envs(env)
            .current_dir(&self.root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .kill_on_drop(true);
        let mut child = crate::process::spawner::spawn(cmd)
            .map_err(|e| format!("{command} could not be run: {e}"))?;
        self.pid.store(child.id().unwrap_or(0), Ordering::SeqCst);
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            return Err("its stdin/stdout could not be opened".into());
        };
        let started = tokio::time::timeout(
            Duration::from_millis(START_TIMEOUT_MS),
            ().serve((stdout, stdin)),
        )
        .await;
        if !matches!(started, Ok(Ok(_))) {
            // The child is killed when dropped (kill_on_drop).
            self.pid.store(0, Ordering::SeqCst);
        }
        match started {
            Ok(Ok(client)) => Ok(Conn {
                client,
                child: Some(child),
            }),
            Ok(Err(e)) => Err(self
                .exit_reason(&mut child, &format!("the MCP handshake failed: {e}"))
                .await),
            Err(_) => Err(format!(
                "it did not answer initialize within {START_TIMEOUT_MS} ms"
            )),
        }
    }

    /// Why the child is gone: its exit status and the last line of its
    /// log, or `fallback` when it still runs.
    async fn exit_reason(&self, child: &mut Child, fallback: &str) -> String {
        let status = tokio::time::timeout(Duration::from_millis(500), child.wait()).await;
        let mut why = match status {
            Ok(Ok(s)) => format!("it exited: {s}"),
            _ => fallback.to_string(),
        };
        if let Some(line) = self.last_log_line() {
            why.push_str(&format!("; last log line: {line}"));
        }
        why
    }

    /// Starts the server if it does not run (or exited) and returns a
    /// handle for requests. Errors: why it could not start (one line); the
    /// status then says so and the next call tries again.
    pub async fn peer(&self) -> Result<Peer<RoleClient>, NotRunning> {
        let mut conn = self.conn.lock().await;
        if let Some(c) = conn.as_mut() {
            let exited = c
                .child
                .as_mut()
                .is_some_and(|ch| !matches!(ch.try_wait(), Ok(None)));
            if !exited && !c.client.is_closed() {
                return Ok(c.client.peer().clone());
            }
            *conn = None;
        }
        self.set_status(Status::Starting);
        self.note(
            &crate::text::fill(
                START_SEPARATOR,
                &[(
                    "time",
                    &httpdate::fmt_http_date(std::time::SystemTime::now()),
                )],
            )
            .replacen("[lathe] ", "", 1),
        );
        self.note(&format!("starting {}", self.config.location()));
        match self.connect().await {
            Ok(c) => {
                let peer = c.client.peer().clone();
                *conn = Some(c);
                self.starts.fetch_add(1, Ordering::SeqCst);
                self.set_status(Status::Running);
                Ok(peer)
            }
            Err(why) => {
                self.note(&format!("could not start: {why}"));
                self.set_status(Status::Failed(why.clone()));
                self.record_failure();
                Err(NotRunning(why))
            }
        }
    }

    /// Starts the server and lists its tools. Errors: as [`Self::peer`], or
    /// `tools/list` failed.
    pub async fn list_tools(&self) -> Result<Vec<ServerTool>, NotRunning> {
        let peer = self.peer().await?;
        let listed = tokio::time::timeout(
            Duration::from_millis(START_TIMEOUT_MS),
            peer.list_all_tools(),
        )
        .await
        .map_err(|_| format!("it did not answer tools/list within {START_TIMEOUT_MS} ms"))
        .and_then(|r| r.map_err(|e| format!("tools/list failed: {e}")));
        let tools = match listed {
            Ok(t) => t,
            Err(why) => {
                self.note(&why);
                self.set_status(Status::Failed(why.clone()));
                self.record_failure();
                return Err(NotRunning(why));
            }
        };
        self.record_success();
        self.set_status(Status::Running);
        Ok(tools
            .into_iter()
            .filter_map(|t| serde_json::to_value(&t).ok())
            .map(|v| ServerTool {
                name: v["name"].as_str().unwrap_or_default().to_string(),
                description: v["description"].as_str().unwrap_or_default().to_string(),
                input_schema: v["inputSchema"].clone(),
                read_only: v["annotations"]["readOnlyHint"].as_bool() == Some(true),
            })
            .collect())
    }

    /// Marks the server as gone after a request failed with the transport
    /// closed: returns why (exit status, last log line). The next call
    /// restarts it.
    pub async fn lost(&self) -> String {
        let mut conn = self.conn.lock().await;
        let why = match conn.as_mut() {
            Some(Conn {
                child: Some(child), ..
            }) => self.exit_reason(child, "its connection closed").await,
            Some(Conn { child: None, .. }) => "its connection closed".to_string(),
            None => "it was stopped".to_string(),
        };
        *conn = None;
        self.pid.store(0, Ordering::SeqCst);
        self.note(&format!("lost: {why}"));
        self.set_status(Status::Failed(why.clone()));
        why
    }
}

/// `tools/call` `tool` with `input` (an object; anything else is sent as no
/// arguments); the result as JSON (`content`, `isError`).
pub async fn call(
    peer: &Peer<RoleClient>,
    tool: &str,
    input: Value,
) -> Result<Value, rmcp::service::ServiceError> {
    let mut params = CallToolRequestParams::new(tool.to_string());
    if let Value::Object(m) = input {
        params = params.with_arguments(m);
    }
    let result = peer.call_tool(params).await?;
    Ok(serde_json::to_value(&result).unwrap_or(Value::Null))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_log_line_is_of_the_last_start_only() {
        let dir = tempfile::tempdir().unwrap();
        let server = McpServer::new(
            McpServerConfig::stdio("docs", "docs-mcp", Vec::new()),
            dir.path(),
            dir.path(),
        );
        let start = |t: &str| crate::text::fill(START_SEPARATOR, &[("time", t)]);
        std::fs::write(
            &server.log_path,
            format!(
                "{}\nTraceback: old failure\n{}\n[lathe] starting docs-mcp\n",
                start("Mon, 30 Nov 2026 10:00:00 GMT"),
                start("Mon, 30 Nov 2026 11:00:00 GMT")
            ),
        )
        .unwrap();
        assert_eq!(server.last_log_line(), None);
        server.note("could not start: it exited: exit status: 1");
        std::fs::OpenOptions::new()
            .append(true)
            .open(&server.log_path)
            .and_then(|mut f| f.write_all(b"docs-mcp: no config\n"))
            .unwrap();
        assert_eq!(
            server.last_log_line().as_deref(),
            Some("docs-mcp: no config")
        );
    }

    #[test]
    fn a_failed_server_is_retried_after_a_growing_wait() {
        let dir = tempfile::tempdir().unwrap();
        let server = McpServer::new(
            McpServerConfig::stdio("docs", "docs-mcp", Vec::new()),
            dir.path(),
            dir.path(),
        );
        assert!(server.retry_due());
        server.record_failure();
        assert!(!server.retry_due());
        let ago = |ms: u64| Instant::now().checked_sub(Duration::from_millis(ms));
        *server.failures.lock().unwrap() = (1, ago(RETRY_FIRST_MS + 10));
        assert!(server.retry_due());
        *server.failures.lock().unwrap() = (2, ago(RETRY_FIRST_MS + 10));
        assert!(!server.retry_due(), "the second wait is twice the first");
        *server.failures.lock().unwrap() = (30, ago(RETRY_MAX_MS + 10));
        assert!(server.retry_due(), "never longer than RETRY_MAX_MS");
        server.record_success();
        assert!(server.retry_due());
    }
}
