//! What the Edit figures of `make bench` add to `main_thread_stats()`
//! (`lathe::host::main_stats`): how buffers were saved (`:write` or directly,
//! `:help lathe-save`) and the most CPU time of the main thread one bridge
//! wake-up used. On a shared machine a step's wall time also grows when the
//! OS runs other processes in the middle of it; its thread CPU time does
//! not (the Edit's main-thread step is bounded by 2 ms).

use std::sync::atomic::{AtomicU64, Ordering};

/// Buffers written by Neovim's `:write` (`buffer_text`) in this process.
static NVIM_WRITES: AtomicU64 = AtomicU64::new(0);
/// Buffers written by lathe itself off the main thread (`direct_write`).
static DIRECT_WRITES: AtomicU64 = AtomicU64::new(0);
/// Most thread CPU time one bridge wake-up used since the last reset, ns.
static BRIDGE_CPU_NS: AtomicU64 = AtomicU64::new(0);

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

/// Records that one bridge wake-up used `cpu_ns` of the main thread's CPU.
pub(crate) fn record_bridge_cpu(cpu_ns: u64) {
    BRIDGE_CPU_NS.fetch_max(cpu_ns, Ordering::Relaxed);
}

/// The most CPU time one bridge wake-up used since the last
/// [`reset`], ms.
pub fn bridge_cpu_longest_ms() -> f64 {
    BRIDGE_CPU_NS.load(Ordering::Relaxed) as f64 / 1e6
}

/// Starts [`bridge_cpu_longest_ms`] again (with `main_stats::reset`).
pub fn reset() {
    BRIDGE_CPU_NS.store(0, Ordering::Relaxed);
}
