//! How long lathe holds Neovim's main loop: every closure the bridge runs
//! ([`MainThread`](super::bridge::MainThread)) is timed, and the longest
//! one, the count and the total are kept for `lathe.stats()` (`:help
//! lathe.stats()`). The bench (`make bench`) prints the longest step next
//! to a timer's lateness: on a shared machine lateness also counts other
//! processes, this counts only lathe's own work (issue 12).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Longest single main-thread step since the last reset, ns.
static MAX_STEP_NS: AtomicU64 = AtomicU64::new(0);
/// Steps since the last reset.
static STEPS: AtomicU64 = AtomicU64::new(0);
/// Total time of those steps, ns.
static TOTAL_NS: AtomicU64 = AtomicU64::new(0);

/// Records one main-thread step that took `d`.
pub(crate) fn record(d: Duration) {
    let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    MAX_STEP_NS.fetch_max(ns, Ordering::Relaxed);
    STEPS.fetch_add(1, Ordering::Relaxed);
    TOTAL_NS.fetch_add(ns, Ordering::Relaxed);
}

/// The counters since the last reset: `(longest step in ms, steps, total ms)`.
pub fn snapshot() -> (f64, u64, f64) {
    (
        MAX_STEP_NS.load(Ordering::Relaxed) as f64 / 1e6,
        STEPS.load(Ordering::Relaxed),
        TOTAL_NS.load(Ordering::Relaxed) as f64 / 1e6,
    )
}

/// Sets the counters back to zero.
pub fn reset() {
    MAX_STEP_NS.store(0, Ordering::Relaxed);
    STEPS.store(0, Ordering::Relaxed);
    TOTAL_NS.store(0, Ordering::Relaxed);
}
