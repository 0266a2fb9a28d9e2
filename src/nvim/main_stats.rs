//! How long lathe holds Neovim's main loop: every closure the bridge runs
//! (`MainThread`) is timed, and the longest one, the count and the total
//! are kept for `lathe.stats()` (`:help lathe.stats()`), with how buffers
//! were saved (`:write` or directly, `:help lathe-save`). The bench (`make bench`) prints the longest step next
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
/// Most CPU time of the main thread one step used, ns: unlike the wall
/// time, it does not grow when the OS runs other processes mid-step.
static MAX_STEP_CPU_NS: AtomicU64 = AtomicU64::new(0);

/// CPU time the calling thread has used (`CLOCK_THREAD_CPUTIME_ID`), ns;
/// 0 where the clock is missing.
pub(crate) fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// Records one main-thread step that took `d` of wall time and `cpu_ns`
/// of the thread's CPU time.
pub(crate) fn record(d: Duration, cpu_ns: u64) {
    let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    MAX_STEP_NS.fetch_max(ns, Ordering::Relaxed);
    MAX_STEP_CPU_NS.fetch_max(cpu_ns, Ordering::Relaxed);
    STEPS.fetch_add(1, Ordering::Relaxed);
    TOTAL_NS.fetch_add(ns, Ordering::Relaxed);
}

/// The counters since the last reset: `(longest step in ms, steps, total
/// ms, most CPU ms of one step)`.
pub fn snapshot() -> (f64, u64, f64, f64) {
    (
        MAX_STEP_NS.load(Ordering::Relaxed) as f64 / 1e6,
        STEPS.load(Ordering::Relaxed),
        TOTAL_NS.load(Ordering::Relaxed) as f64 / 1e6,
        MAX_STEP_CPU_NS.load(Ordering::Relaxed) as f64 / 1e6,
    )
}

/// Sets the counters back to zero.
pub fn reset() {
    MAX_STEP_CPU_NS.store(0, Ordering::Relaxed);
    MAX_STEP_NS.store(0, Ordering::Relaxed);
    STEPS.store(0, Ordering::Relaxed);
    TOTAL_NS.store(0, Ordering::Relaxed);
}

/// Buffers written by Neovim's `:write` (`buffer_text`) in this process.
static NVIM_WRITES: AtomicU64 = AtomicU64::new(0);
/// Buffers written by lathe itself off the main thread (`direct_write`).
static DIRECT_WRITES: AtomicU64 = AtomicU64::new(0);

/// Counts one buffer saved by Neovim's `:write` for lathe.
pub(crate) fn count_nvim_write() {
    NVIM_WRITES.fetch_add(1, Ordering::Relaxed);
}

/// Counts one buffer saved without `:write` (`direct_write`).
pub(crate) fn count_direct_write() {
    DIRECT_WRITES.fetch_add(1, Ordering::Relaxed);
}

/// `(saved by :write, saved directly by lathe)` since load: tests assert
/// which path an edit took with it.
pub fn write_counts() -> (u64, u64) {
    (
        NVIM_WRITES.load(Ordering::Relaxed),
        DIRECT_WRITES.load(Ordering::Relaxed),
    )
}
