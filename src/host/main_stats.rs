//! lathe's own time on Neovim's main thread, measured where it is spent
//! (docs/testing.md, "Benchmarks"): every batch of bridge jobs, every
//! chat frame, every `ask`. A timer's lateness (what `make bench` measures
//! next to it) also counts other plugins, Neovim itself and the machine's
//! load; these figures count only lathe, so they stay meaningful on a busy
//! machine. `require("lathe.core").main_thread_stats()` returns them.
//!
//! Counters only, no timing decides anything: tests assert counts (frames,
//! buffer edits), never durations.

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

pub use crate::host::stats::StepStats;
use crate::host::stats::{Counter, STATS};

/// Runs `f`, counting it as one `step` and its duration.
pub fn timed<R>(step: Step, f: impl FnOnce() -> R) -> R {
    let start = Instant::now();
    let r = f();
    record(step, start.elapsed().as_nanos() as u64);
    r
}

/// Counts one `step` of `ns` nanoseconds.
pub fn record(step: Step, ns: u64) {
    STATS.record_step(step.index(), ns);
}

/// The figures of every kind of step since the last [`reset`].
pub fn snapshot() -> Vec<(Step, StepStats)> {
    Step::ALL
        .iter()
        .map(|&s| (s, STATS.step(s.index())))
        .collect()
}

/// Sets the step figures and the bridge's CPU time back to zero (the bench
/// does it before each part).
pub fn reset() {
    STATS.reset_steps();
}

/// Counts one chat frame.
pub(crate) fn chat_frame() {
    STATS.bump(Counter::ChatFrames);
}

/// Counts one edit of the transcript's text.
pub(crate) fn chat_edited() {
    STATS.bump(Counter::ChatEdits);
}

/// Counts `n` line breaks the chat added to over-long streamed lines.
pub(crate) fn chat_continued(n: usize) {
    STATS.add(Counter::ChatContinued, n as u64);
}

/// Frames drawn and edits of the transcript's text since Neovim started
/// (`main_thread_stats()`): streaming costs one edit per frame, however
/// many deltas arrived in it.
pub fn edit_counts() -> (u64, u64) {
    (
        STATS.get(Counter::ChatFrames),
        STATS.get(Counter::ChatEdits),
    )
}

/// How many times since Neovim started the chat went on with an over-long
/// streamed line in a new chat line (tests: a 200 KB line without a newline
/// becomes lines of at most `lines::HARD_LINE_BYTES`).
pub fn continued_lines() -> u64 {
    STATS.get(Counter::ChatContinued)
}

/// `(saved by :write, saved directly by lathe)` since load: tests assert
/// which path an edit took with it (`:help lathe-save`).
pub fn write_counts() -> (u64, u64) {
    (
        STATS.get(Counter::NvimWrites),
        STATS.get(Counter::DirectWrites),
    )
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
    // The Edit figures.
    t.set("bridge_cpu_longest_ms", STATS.bridge_cpu_longest_ms())?;
    let (nvim_writes, direct_writes) = write_counts();
    t.set("nvim_writes", nvim_writes)?;
    t.set("direct_writes", direct_writes)?;
    if reset_after == Some(true) {
        reset();
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
