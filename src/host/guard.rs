//! Keeping Rust errors and panics from taking Neovim down
//! (docs/threads.md, "Threads and the FFI boundary").
//!
//! With nvim-oxi 0.6 an `Err` or a panic that reaches a callback Neovim
//! calls (a `schedule` closure, an `AsyncHandle` callback, a keymap or
//! autocmd callback) unwinds through `extern "C"` frames and aborts the
//! editor. Every such closure runs its body through [`guarded`], which
//! catches the panic and reports it with `vim.notify` instead.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

use nvim_oxi::api::{self, types::LogLevel};

/// Runs `f`, catching a panic and reporting it as an error notification
/// naming `what` (e.g. `"chat update"`). Main thread, non-fast context only
/// (it may call `vim.notify`). Returns `Some(value)` or `None` after a panic.
pub fn guarded<R>(what: &str, f: impl FnOnce() -> R) -> Option<R> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => Some(v),
        Err(p) => {
            notify_error(&format!(
                "lathe: internal error in {what}: {}",
                panic_text(&*p)
            ));
            None
        }
    }
}

/// The text of a panic payload (`&str` or `String`), else `"unknown panic"`.
pub fn panic_text(p: &(dyn Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Shows `msg` through `vim.notify` at ERROR level (`:help vim.notify`).
/// Main thread, non-fast context only. Failures to notify are ignored.
pub fn notify_error(msg: &str) {
    let _ = guarded_notify(msg, LogLevel::Error);
}

/// Shows `msg` through `vim.notify` at WARN level.
pub fn notify_warn(msg: &str) {
    let _ = guarded_notify(msg, LogLevel::Warn);
}

fn guarded_notify(msg: &str, level: LogLevel) -> Option<()> {
    catch_unwind(AssertUnwindSafe(|| {
        let _ = api::notify(msg, level, &Default::default());
    }))
    .ok()
}
