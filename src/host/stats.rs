//! Every counter of the front end that tests and `make bench` read, in one
//! struct with one home ([`STATS`]) and one way to read it
//! ([`Stats::get`], [`Stats::step`], [`Stats::bridge_cpu_longest_ms`];
//! docs/testing.md, "Benchmarks"). Counters only: nothing lathe does
//! depends on them. The readers kept for tests and Lua
//! (`main_thread_stats()`, `NvimEditor::lines_read`, `chat::reads`, …) read
//! them here.

use std::sync::atomic::{AtomicU64, Ordering};

/// One plain counter of [`Stats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    /// Buffer lines lathe fetched from Neovim (`nvim_buf_get_lines`) for
    /// its edits (`adapters::buffer_text`).
    LinesRead,
    /// Buffers saved by Neovim's `:write` for lathe (`buffer_text`).
    NvimWrites,
    /// Buffers saved by lathe itself off the main thread (`direct_write`,
    /// `:help lathe-save`).
    DirectWrites,
    /// Frames the chat drew (main thread).
    ChatFrames,
    /// Edits of the transcript's text (`nvim_buf_set_text` and friends)
    /// made while drawing frames.
    ChatEdits,
    /// Chat lines that continue an over-long streamed line (a break the
    /// chat added, `:help lathe-chat-long-lines`).
    ChatContinued,
    /// Reads of the transcript's text back from the buffer (`line_at`).
    ChatReads,
    /// Times a following transcript window's view had to be scrolled to
    /// show the last line (`chat::window::follow`).
    ViewFixes,
    /// Times the chat set a transcript window's 'winbar'.
    WinbarSets,
}

impl Counter {
    /// How many there are: the last one's index and one.
    const COUNT: usize = Counter::WinbarSets as usize + 1;
}

/// A kind of timed main-thread step ([`main_stats::Step`](super::main_stats::Step)),
/// by index: count, total ns, longest ns.
struct StepCounters {
    count: AtomicU64,
    total_ns: AtomicU64,
    longest_ns: AtomicU64,
}

/// The number of kinds of timed steps (`main_stats::Step::ALL`).
pub(crate) const STEP_KINDS: usize = 5;

/// The counters: see [`Counter`], the timed steps of `main_stats`, and the
/// most CPU time of the main thread one bridge wake-up used.
pub struct Stats {
    counters: [AtomicU64; Counter::COUNT],
    steps: [StepCounters; STEP_KINDS],
    bridge_cpu_ns: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: AtomicU64 = AtomicU64::new(0);
#[allow(clippy::declare_interior_mutable_const)]
const ZERO_STEP: StepCounters = StepCounters {
    count: ZERO,
    total_ns: ZERO,
    longest_ns: ZERO,
};

/// The one home of the counters.
pub static STATS: Stats = Stats {
    counters: [ZERO; Counter::COUNT],
    steps: [ZERO_STEP; STEP_KINDS],
    bridge_cpu_ns: ZERO,
};

/// What [`Stats::step`] returns for one kind of step.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StepStats {
    /// Steps run since the last [`Stats::reset_steps`].
    pub count: u64,
    /// Their total time, ms.
    pub total_ms: f64,
    /// The longest one, ms.
    pub longest_ms: f64,
}

impl Stats {
    /// Adds `n` to `c`.
    pub(crate) fn add(&self, c: Counter, n: u64) {
        self.counters[c as usize].fetch_add(n, Ordering::Relaxed);
    }

    /// Counts one of `c`.
    pub(crate) fn bump(&self, c: Counter) {
        self.add(c, 1);
    }

    /// The value of `c` since lathe loaded (plain counters never reset).
    pub fn get(&self, c: Counter) -> u64 {
        self.counters[c as usize].load(Ordering::Relaxed)
    }

    /// Counts one step of kind `index` (`main_stats::Step`) of `ns`
    /// nanoseconds.
    pub(crate) fn record_step(&self, index: usize, ns: u64) {
        if let Some(c) = self.steps.get(index) {
            c.count.fetch_add(1, Ordering::Relaxed);
            c.total_ns.fetch_add(ns, Ordering::Relaxed);
            c.longest_ns.fetch_max(ns, Ordering::Relaxed);
        }
    }

    /// The figures of steps of kind `index` since the last
    /// [`reset_steps`](Self::reset_steps).
    pub fn step(&self, index: usize) -> StepStats {
        self.steps
            .get(index)
            .map(|c| StepStats {
                count: c.count.load(Ordering::Relaxed),
                total_ms: c.total_ns.load(Ordering::Relaxed) as f64 / 1e6,
                longest_ms: c.longest_ns.load(Ordering::Relaxed) as f64 / 1e6,
            })
            .unwrap_or_default()
    }

    /// Records that one bridge wake-up used `cpu_ns` of the main thread's
    /// CPU.
    pub(crate) fn record_bridge_cpu(&self, cpu_ns: u64) {
        self.bridge_cpu_ns.fetch_max(cpu_ns, Ordering::Relaxed);
    }

    /// The most CPU time one bridge wake-up used since the last
    /// [`reset_steps`](Self::reset_steps), ms. On a shared machine a
    /// step's wall time also grows when the OS runs other processes in the
    /// middle of it; its thread CPU time does not.
    pub fn bridge_cpu_longest_ms(&self) -> f64 {
        self.bridge_cpu_ns.load(Ordering::Relaxed) as f64 / 1e6
    }

    /// Sets the step figures and the bridge CPU time back to zero (the bench
    /// does it before each part); the plain counters keep counting.
    pub fn reset_steps(&self) {
        for c in &self.steps {
            c.count.store(0, Ordering::Relaxed);
            c.total_ns.store(0, Ordering::Relaxed);
            c.longest_ns.store(0, Ordering::Relaxed);
        }
        self.bridge_cpu_ns.store(0, Ordering::Relaxed);
    }
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
