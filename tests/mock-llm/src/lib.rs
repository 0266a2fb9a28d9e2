//! `mock-llm`: a scripted Anthropic Messages API server for lathe's tests, the
//! demo and outside checks (docs/testing.md, "Testing"; format in
//! `tests/mock-llm/README.md`).
//!
//! It answers `POST /v1/messages` with the next entry of a JSON [`Script`]:
//! as real Anthropic SSE when the request body has `"stream": true`, else as
//! one JSON message. Before answering it enforces the Messages API pairing
//! rule (HTTP 400 `invalid_request_error` with the real API's wording, script
//! not advanced) and the entry's `expect` checks (HTTP 400, not advanced). An
//! exhausted script answers HTTP 500. Entries may carry a `fault`: an HTTP
//! error, an SSE `error` event mid-stream, or a cut connection. A simulated
//! prompt cache turns the request's `cache_control` breakpoints into
//! `cache_creation_input_tokens` / `cache_read_input_tokens`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let script = mock_llm::Script::from_json(
//!     r#"{"responses":[{"content":[{"type":"text","text":"Hello!"}]}]}"#,
//! )?;
//! let server = mock_llm::spawn(script, None).await?;
//! // point the client at server.url() (e.g. ANTHROPIC_BASE_URL), run it, then:
//! let bodies: Vec<serde_json::Value> = server.requests();
//! # let _ = bodies; Ok(()) }
//! ```

mod answer;
pub mod api_error;
pub mod context_window;
mod expect;
mod openai_answer;
pub mod openai_error;
mod openai_expect;
mod openai_pairing;
mod openai_reply;
pub mod pairing;
mod prompt_cache;
mod request;
pub mod rules;
mod script;
mod server;

use std::fs::{File, OpenOptions};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::oneshot;

pub use answer::{chunk_chars, SseEvent};
pub use script::{
    Block, Entry, Expect, Fault, FaultKind, Script, ScriptError, Usage, DEFAULT_JSON_CHUNK_CHARS,
    DEFAULT_TEXT_CHUNK_CHARS,
};

/// A running mock server on `127.0.0.1`. Dropping it stops accepting
/// connections (graceful shutdown: answers in flight finish).
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<server::Shared>,
    shutdown: Option<oneshot::Sender<()>>,
}

impl MockServer {
    /// The base URL, `http://127.0.0.1:PORT` (no trailing slash); the
    /// endpoint is `{url}/v1/messages`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Every request body received so far, in arrival order, including the
    /// rejected ones (a body that is not JSON is kept as a JSON string).
    pub fn requests(&self) -> Vec<Value> {
        self.shared.requests()
    }

    /// How many script entries have been consumed (answered or faulted).
    pub fn served(&self) -> usize {
        self.shared.served()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            // The server task may already be gone; nothing to do then.
            let _ = tx.send(());
        }
    }
}

/// Starts a server for `script` on `127.0.0.1` with a free port, appending
/// each request body as one JSON line to `log` when given.
///
/// Must be called inside a tokio runtime (the server runs as a task on it).
/// Errors: the log file cannot be opened for appending, or binding fails.
pub async fn spawn(script: Script, log: Option<PathBuf>) -> std::io::Result<MockServer> {
    spawn_on_port(script, log.as_deref(), 0).await
}

/// Like [`spawn`] on a chosen port (`0` picks a free one).
///
/// Errors: the log file cannot be created/opened for appending, or the port
/// cannot be bound on `127.0.0.1`.
pub async fn spawn_on_port(
    script: Script,
    log: Option<&Path>,
    port: u16,
) -> std::io::Result<MockServer> {
    let log_file = log.map(open_log).transpose()?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = listener.local_addr()?;
    let shared = Arc::new(server::Shared::new(script, log_file));
    let app = server::router(shared.clone());
    let (tx, rx) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = rx.await;
            })
            .await;
        if let Err(e) = served {
            eprintln!("mock-llm: server stopped with an error: {e}");
        }
    });
    Ok(MockServer {
        addr,
        shared,
        shutdown: Some(tx),
    })
}

fn open_log(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}
