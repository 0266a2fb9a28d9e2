//! lathe's own time on Neovim's main thread, measured where it is spent
//! (docs/testing.md, "Benchmarks"): every batch of bridge jobs, every
//! chat frame, every `ask`. A timer's lateness (what `make bench` measures
//! next to it) also counts other plugins, Neovim itself and the machine's
//! load; these figures count only lathe, so they stay meaningful on a busy
//! machine. `require("lathe.core").main_thread_stats()` returns them.
//!
//! Counters only, no timing decides anything: tests assert counts (frames,
//! buffer edits), never durations.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// What a timed main-thread step was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// One wake-up of the bridge: every job tokio tasks queued since the
    /// last one, run back to back (chat frames are among them).
    Bridge,
    /// One chat frame: the events of up to `FRAME` (`chat::FRAME`)
    /// drawn into the transcript.
    ChatFrame,
    /// One `ask()` call, from the Lua call to its return.
    Ask,
    /// The main thread's part of a `:Lathe resume` once its session is
    /// made (made current, the chat started afresh; `lathe::api::sessions`).
    Resume,
    /// One step of wiping an old chat buffer (`chat::wipe`).
    ChatWipe,
}

impl Step {
    const ALL: [Step; 5] = [
        Step::Bridge,
        Step::ChatFrame,
        Step::Ask,
        Step::Resume,
        Step::ChatWipe,
    ];

    /// The name `main_thread_stats()` uses.
    pub fn name(self) -> &'static str {
        match self {
            Step::Bridge => "bridge",
            Step::ChatFrame => "chat_frame",
            Step::Ask => "ask",
            Step::Resume => "resume",
            Step::ChatWipe => "chat_wipe",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Per step kind: count, total ns, longest ns.
struct Counters {
    count: AtomicU64,
    total_ns: AtomicU64,
    longest_ns: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: Counters = Counters {
    count: AtomicU64::new(0),
    total_ns: AtomicU64::new(0),
    longest_ns: AtomicU64::new(0),
};

static COUNTERS: [Counters; 5] = [ZERO; 5];

/// What [`snapshot`] returns for one kind of step.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StepStats {
    /// Steps run since the last [`reset`].
    pub count: u64,
    /// Their total time, ms.
    pub total_ms: f64,
    /// The longest one, ms.
    pub longest_ms: f64,
}

/// Runs `f`, counting it as one `step` and its duration.
pub fn timed<R>(step: Step, f: impl FnOnce() -> R) -> R {
    let start = Instant::now();
    let r = f();
    record(step, start.elapsed().as_nanos() as u64);
    r
}

/// Counts one `step` of `ns` nanoseconds.
pub fn record(step: Step, ns: u64) {
    let c = &COUNTERS[step.index()];
    c.count.fetch_add(1, Ordering::Relaxed);
    c.total_ns.fetch_add(ns, Ordering::Relaxed);
    c.longest_ns.fetch_max(ns, Ordering::Relaxed);
}

/// The figures of every kind of step since the last [`reset`].
pub fn snapshot() -> Vec<(Step, StepStats)> {
    Step::ALL
        .iter()
        .map(|&s| {
            let c = &COUNTERS[s.index()];
            (
                s,
                StepStats {
                    count: c.count.load(Ordering::Relaxed),
                    total_ms: c.total_ns.load(Ordering::Relaxed) as f64 / 1e6,
                    longest_ms: c.longest_ns.load(Ordering::Relaxed) as f64 / 1e6,
                },
            )
        })
        .collect()
}

/// Sets every counter back to zero (the bench does it before each part).
pub fn reset() {
    for c in &COUNTERS {
        c.count.store(0, Ordering::Relaxed);
        c.total_ns.store(0, Ordering::Relaxed);
        c.longest_ns.store(0, Ordering::Relaxed);
    }
}

/// Frames the chat drew (main thread).
static CHAT_FRAMES: AtomicU64 = AtomicU64::new(0);
/// Edits of the transcript's text (`nvim_buf_set_text` and friends) made
/// while drawing frames.
static CHAT_EDITS: AtomicU64 = AtomicU64::new(0);
/// Chat lines that continue an over-long streamed line (a break the chat
/// added, `:help lathe-chat-long-lines`).
static CHAT_CONTINUED: AtomicU64 = AtomicU64::new(0);

/// Counts one chat frame.
pub(crate) fn chat_frame() {
    CHAT_FRAMES.fetch_add(1, Ordering::Relaxed);
}

/// Counts one edit of the transcript's text.
pub(crate) fn chat_edited() {
    CHAT_EDITS.fetch_add(1, Ordering::Relaxed);
}

/// Counts `n` line breaks the chat added to over-long streamed lines.
pub(crate) fn chat_continued(n: usize) {
    CHAT_CONTINUED.fetch_add(n as u64, Ordering::Relaxed);
}

/// Frames drawn and edits of the transcript's text since Neovim started
/// (`main_thread_stats()`): streaming costs one edit per frame, however
/// many deltas arrived in it.
pub fn edit_counts() -> (u64, u64) {
    (
        CHAT_FRAMES.load(Ordering::Relaxed),
        CHAT_EDITS.load(Ordering::Relaxed),
    )
}

/// How many times since Neovim started the chat went on with an over-long
/// streamed line in a new chat line (tests: a 200 KB line without a newline
/// becomes lines of at most `lines::HARD_LINE_BYTES`).
pub fn continued_lines() -> u64 {
    CHAT_CONTINUED.load(Ordering::Relaxed)
}

/// `require("lathe.core").main_thread_stats([reset])`: a table with, per
/// kind of step (`bridge`, `chat_frame`, `ask`, `resume`, `chat_wipe`), `{ count, total_ms,
/// longest_ms }` since the last reset; `longest_ms`, the longest of them
/// all; `sessions_made` (sessions made since lathe loaded: `setup()`
/// makes none, the first request does); `runtime_started` (whether lathe's tokio runtime and its threads
/// exist, see `lathe::host::runtime`); `chat_frames` and `chat_edits` (frames
/// drawn, edits of the transcript's text made by them, since Neovim
/// started); `chat_continued` (chat lines that continue an over-long
/// streamed line, `:help lathe-chat-long-lines`, since Neovim started);
/// `bridge_cpu_longest_ms` (the most main-thread CPU time one
/// bridge wake-up used, since the reset), `nvim_writes`/`direct_writes`
/// (buffers saved with `:write` or without it, `:help lathe-save`, since
/// lathe loaded). With `reset` true the step counters start again from zero
/// after being read. Errors: Lua could not allocate.
pub fn lua_stats(lua: &mlua::Lua, reset_after: Option<bool>) -> mlua::Result<mlua::Table> {
    let t = lua.create_table()?;
    let mut longest = 0.0f64;
    for (step, v) in snapshot() {
        let s = lua.create_table()?;
        s.set("count", v.count)?;
        s.set("total_ms", v.total_ms)?;
        s.set("longest_ms", v.longest_ms)?;
        t.set(step.name(), s)?;
        longest = longest.max(v.longest_ms);
    }
    t.set("longest_ms", longest)?;
    t.set("runtime_started", crate::host::runtime::started())?;
    t.set("sessions_made", lathe_core::agent::sessions_built())?;
    let (frames, edits) = edit_counts();
    t.set("chat_frames", frames)?;
    t.set("chat_edits", edits)?;
    t.set("chat_continued", continued_lines())?;
    // The Edit figures (`lathe::host::save_stats`).
    t.set(
        "bridge_cpu_longest_ms",
        crate::host::save_stats::bridge_cpu_longest_ms(),
    )?;
    let (nvim_writes, direct_writes) = crate::host::save_stats::write_counts();
    t.set("nvim_writes", nvim_writes)?;
    t.set("direct_writes", direct_writes)?;
    if reset_after == Some(true) {
        reset();
        crate::host::save_stats::reset();
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_counted_with_their_longest_time() {
        reset();
        record(Step::ChatFrame, 2_000_000);
        record(Step::ChatFrame, 5_000_000);
        let chat = snapshot()
            .into_iter()
            .find(|(s, _)| *s == Step::ChatFrame)
            .map(|(_, v)| v)
            .unwrap_or_default();
        assert_eq!(chat.count, 2);
        assert_eq!(chat.longest_ms, 5.0);
        assert_eq!(chat.total_ms, 7.0);
        reset();
        assert!(snapshot().iter().all(|(_, v)| v.count == 0));
    }
}
