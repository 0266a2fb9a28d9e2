//! An old chat buffer wiped in steps (`:Lathe new`, `:Lathe resume`; see
//! [`super::clear`]). A working day's chat holds tens of thousands of
//! lines and their extmarks; `nvim_buf_delete` frees them all in one
//! piece, which blocked the editor for tens of ms. Instead the
//! buffer, already out of every window, loses its lines from the end a
//! chunk at a time (their extmarks cleared first) in the chat's steps
//! ([`super::schedule_step`], after what they draw and highlight), each
//! until [`STEP_BUDGET`](super::STEP_BUDGET) has gone by or at most
//! [`LINES_PER_STEP`] lines are gone; the buffer, then nearly empty, is
//! wiped in the last step. Main thread only.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

use nvim_oxi::api::{self, opts::BufDeleteOpts, Buffer};

/// Lines deleted with one `nvim_buf_set_lines` (their extmarks cleared
/// with one `nvim_buf_clear_namespace` per namespace before).
const CHUNK: usize = 500;

/// Most lines one step deletes, however fast they go: keeps every step
/// about the same size on any machine (and the steps countable by tests).
pub const LINES_PER_STEP: usize = 4000;

thread_local! {
    /// Old chat buffers waiting to be wiped, oldest first.
    static OLD: RefCell<VecDeque<Buffer>> = const { RefCell::new(VecDeque::new()) };
}

/// Wipes `buf` (a chat buffer no window shows any more) in the chat's
/// steps ([`super::schedule_step`]); at once when it holds no more than
/// one chunk.
pub(super) fn wipe_in_steps(buf: Buffer) {
    if buf.line_count().unwrap_or(0) <= CHUNK {
        let _ = buf.delete(&BufDeleteOpts::builder().force(true).build());
        return;
    }
    let _ = api::set_option_value(
        "modifiable",
        true,
        &api::opts::OptionOpts::builder().buffer(buf.clone()).build(),
    );
    OLD.with(|o| o.borrow_mut().push_back(buf));
    super::schedule_step();
}

/// `true` while an old chat buffer waits to be wiped (`lathe.settled()`
/// is false meanwhile).
pub fn wiping() -> bool {
    OLD.with(|o| !o.borrow().is_empty())
}

/// Deletes lines from the end of the oldest buffer waiting, chunk after
/// chunk, and wipes it once it is down to one chunk; then the next one,
/// until `budget` has gone by or [`LINES_PER_STEP`] lines are gone (at
/// least one chunk).
pub(super) fn step(budget: Duration) {
    let start = Instant::now();
    crate::host::main_stats::timed(crate::host::main_stats::Step::ChatWipe, || {
        let mut deleted = 0;
        while deleted < LINES_PER_STEP && (deleted == 0 || start.elapsed() < budget) {
            let Some(mut buf) = OLD.with(|o| o.borrow().front().cloned()) else {
                return;
            };
            let lines = buf.line_count().unwrap_or(0);
            if !buf.is_valid() || lines <= CHUNK {
                OLD.with(|o| o.borrow_mut().pop_front());
                if buf.is_valid() {
                    let _ = buf.delete(&BufDeleteOpts::builder().force(true).build());
                }
                deleted += lines.max(1);
                continue;
            }
            let first = lines - CHUNK;
            for (_, ns) in api::get_namespaces() {
                let _ = buf.clear_namespace(ns, first..);
            }
            if buf
                .set_lines(first.., false, std::iter::empty::<&str>())
                .is_err()
            {
                // It cannot be edited: wipe it as it is.
                OLD.with(|o| o.borrow_mut().pop_front());
                let _ = buf.delete(&BufDeleteOpts::builder().force(true).build());
            }
            deleted += CHUNK;
        }
    });
}
