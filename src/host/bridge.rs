//! `MainThread`: how tokio tasks get work done on Neovim's main thread
//! (docs/threads.md, "Threads and the FFI boundary").
//!
//! One libuv `AsyncHandle` is created at load time on the main thread. A task
//! sends a boxed closure through a channel and wakes the handle; libuv
//! coalesces wake-ups, so the handle's callback drains the whole channel with
//! `try_recv`, then hops through `vim.schedule` (`nvim_oxi::schedule`) because
//! the callback itself runs in a fast-event context where most of the API is
//! off limits (`:help api-fast`). Each closure runs under [`guarded`], so a
//! panic is reported instead of aborting Neovim.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use nvim_oxi::libuv::AsyncHandle;
use tokio::sync::{mpsc, oneshot};

use crate::host::guard::{guarded, panic_text};

/// A unit of main-thread work.
type Job = Box<dyn FnOnce() + Send + 'static>;

/// Why main-thread work did not produce a result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BridgeError {
    /// Neovim is exiting (or the bridge was never set up); nothing ran.
    #[error("Neovim is not available (exiting)")]
    Closed,
    /// The closure panicked on the main thread; the panic text.
    #[error("internal error on Neovim's main thread: {0}")]
    Panicked(String),
}

/// Sends closures to Neovim's main thread. Cheap to clone, `Send + Sync`.
#[derive(Clone)]
pub struct MainThread {
    tx: mpsc::UnboundedSender<Job>,
    wake: AsyncHandle,
    closed: Arc<AtomicBool>,
    trips: Arc<AtomicU64>,
    waited: Arc<AtomicU64>,
}

impl MainThread {
    /// Creates the bridge. **Main thread only**, once per process (the
    /// handle lives as long as Neovim). Errors: libuv could not init the handle.
    pub fn new() -> Result<Self, nvim_oxi::libuv::Error> {
        let (tx, mut rx) = mpsc::unbounded_channel::<Job>();
        let wake = AsyncHandle::new(move || {
            // Fast-event context: only collect, never touch the editor here.
            let drained = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let mut jobs = Vec::new();
                while let Ok(job) = rx.try_recv() {
                    jobs.push(job);
                }
                if !jobs.is_empty() {
                    nvim_oxi::schedule(move |()| run_jobs(jobs));
                }
            }));
            let _ = drained;
        })?;
        Ok(Self {
            tx,
            wake,
            closed: Arc::new(AtomicBool::new(false)),
            trips: Arc::new(AtomicU64::new(0)),
            waited: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Queues `f` to run on the main thread and returns at once (fire and
    /// forget; a panic in `f` is reported with `vim.notify`).
    /// Errors: [`BridgeError::Closed`] after [`MainThread::close`].
    pub fn post(&self, f: impl FnOnce() + Send + 'static) -> Result<(), BridgeError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(BridgeError::Closed);
        }
        self.tx.send(Box::new(f)).map_err(|_| BridgeError::Closed)?;
        self.trips.fetch_add(1, Ordering::Relaxed);
        self.wake.send().map_err(|_| BridgeError::Closed)
    }

    /// Runs `f` on the main thread and returns its result. Never call this
    /// from the main thread itself and block on it (it would wait forever).
    ///
    /// Errors: [`BridgeError::Closed`] when Neovim is exiting (then `f` may
    /// never run), [`BridgeError::Panicked`] when `f` panicked.
    pub async fn run<R, F>(&self, f: F) -> Result<R, BridgeError>
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        self.waited.fetch_add(1, Ordering::Relaxed);
        self.post(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
                .map_err(|p| BridgeError::Panicked(panic_text(&*p)));
            let _ = tx.send(r);
        })?;
        rx.await.map_err(|_| BridgeError::Closed)?
    }

    /// How many closures were queued for the main thread since the bridge
    /// was made (every [`post`](Self::post) and [`run`](Self::run)): each is
    /// a trip the main loop makes for lathe. Tests use it to bound the trips
    /// one tool call costs.
    pub fn trips(&self) -> u64 {
        self.trips.load(Ordering::Relaxed)
    }

    /// How many of those [`trips`](Self::trips) a task waited for
    /// ([`run`](Self::run): a round trip; [`post`](Self::post) waits for
    /// nothing). Tests bound the round trips on a tool call's way to its
    /// result with it.
    pub fn round_trips(&self) -> u64 {
        self.waited.load(Ordering::Relaxed)
    }

    /// Stops accepting work (called on `VimLeavePre`).
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }
}

fn run_jobs(jobs: Vec<Job>) {
    let cpu = crate::host::stats::thread_cpu_ns();
    crate::host::main_stats::timed(crate::host::main_stats::Step::Bridge, || {
        for job in jobs {
            let _ = guarded("main-thread task", job);
        }
    });
    crate::host::stats::STATS
        .record_bridge_cpu(crate::host::stats::thread_cpu_ns().saturating_sub(cpu));
}
