//! The one tokio runtime of the Neovim process (docs/threads.md,
//! "Threads and the FFI boundary").
//!
//! Started on first use by [`handle`], shut down by [`shutdown`] from the
//! `VimLeavePre` autocmd. After shutdown [`handle`] fails instead of starting
//! a second runtime, so nothing new starts while Neovim exits.

use std::sync::Mutex;
use std::time::Duration;

use tokio::runtime::{Handle, Runtime};

use lathe_core::process::spawner;

/// How long [`shutdown`] waits for running tasks before leaving them behind.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_millis(200);

/// Worker threads of the runtime (network, tools and disk are I/O bound).
const WORKER_THREADS: usize = 2;

enum State {
    NotStarted,
    Running(Runtime),
    ShutDown,
}

static RUNTIME: Mutex<State> = Mutex::new(State::NotStarted);

/// Why no runtime handle could be given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuntimeError {
    /// Neovim is exiting; the runtime was shut down on `VimLeavePre`.
    #[error("lathe is shutting down (Neovim is exiting)")]
    ShutDown,
    /// The runtime could not be built; the OS error text.
    #[error("could not start lathe's background runtime: {0}")]
    Start(String),
}

/// A handle to the runtime, starting it on first use (a multi-thread
/// runtime with I/O and timers, threads named `lathe-worker`, each
/// [`spawner::WORKER_NICE_INCREMENT`] nicer than the calling thread so
/// Neovim's main thread wins a busy CPU; children are forked at the
/// caller's priority by [`spawner::spawn`]).
///
/// Errors: [`RuntimeError::ShutDown`] after [`shutdown`],
/// [`RuntimeError::Start`] when the OS refuses threads.
pub fn handle() -> Result<Handle, RuntimeError> {
    let mut state = RUNTIME.lock().unwrap_or_else(|p| p.into_inner());
    match &*state {
        State::Running(rt) => Ok(rt.handle().clone()),
        State::ShutDown => Err(RuntimeError::ShutDown),
        State::NotStarted => {
            // From this (Neovim's main) thread, before any runtime thread
            // exists: children get this thread's priority, not the
            // workers' lower one.
            spawner::start().map_err(|e| RuntimeError::Start(e.to_string()))?;
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(WORKER_THREADS)
                .thread_name("lathe-worker")
                .on_thread_start(spawner::lower_this_thread)
                .enable_all()
                .build()
                .map_err(|e| RuntimeError::Start(e.to_string()))?;
            let h = rt.handle().clone();
            *state = State::Running(rt);
            Ok(h)
        }
    }
}

/// `true` once [`handle`] has started the runtime (its worker threads
/// exist), also after [`shutdown`]. `setup()` does not start it; the first
/// ask, tool call or MCP server does (tests and `make bench` check it
/// through `main_thread_stats()`).
pub fn started() -> bool {
    !matches!(
        *RUNTIME.lock().unwrap_or_else(|p| p.into_inner()),
        State::NotStarted
    )
}

/// Shuts the runtime down, waiting at most [`SHUTDOWN_TIMEOUT`] for its
/// tasks; later [`handle`] calls fail with [`RuntimeError::ShutDown`].
/// First SIGKILLs every background Bash command and what it started
/// ([`lathe_core::tools::bash::shells::kill_every_job`]): nothing lathe started
/// outlives Neovim. Called on `VimLeavePre`; harmless when the runtime
/// never started.
pub fn shutdown() {
    lathe_core::tools::bash::shells::kill_every_job();
    lathe_core::mcp::stop_all();
    // What a finished Bash call left running (`cmd &`, `setsid …`) is in
    // no job table; its marker still names this process.
    lathe_core::process::kill_everything_marked_by_this_process();
    let old = {
        let mut state = RUNTIME.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::replace(&mut *state, State::ShutDown)
    };
    if let State::Running(rt) = old {
        rt.shutdown_timeout(SHUTDOWN_TIMEOUT);
    }
}
