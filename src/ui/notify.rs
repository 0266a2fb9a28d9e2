//! Where the notices of a tool call run from Lua go (`lathe.tool`,
//! `lathe.tool_sync`): there is no chat turn to show them in, so a hook's
//! warning (an exit code 3, JSON that does not fit, a Lua error) is shown
//! with `vim.notify` instead, and lands in `:messages`.

use lathe_core::events::{AgentEvent, EventSink};

use crate::host::bridge::MainThread;
use crate::host::guard::{guarded, notify_error, notify_warn};

/// Prefix of every message [`NotifySink`] shows.
pub const NOTICE_PREFIX: &str = "lathe: ";

/// An [`EventSink`] for tool calls run from Lua: notices go to
/// `vim.notify` (warnings and hook messages at WARN, errors at ERROR) on
/// the main thread; every other event (the tool's start and end) is
/// dropped, as the caller gets the result itself.
pub struct NotifySink {
    main: MainThread,
}

impl NotifySink {
    /// A sink that posts its notifications to `main`.
    pub fn new(main: MainThread) -> Self {
        Self { main }
    }
}

impl EventSink for NotifySink {
    fn emit(&self, event: AgentEvent) {
        let AgentEvent::Notice { text, is_error } = event else {
            return;
        };
        let message = format!("{NOTICE_PREFIX}{text}");
        // Called from tokio tasks: vim.notify runs on the main thread. A
        // closed bridge (Neovim is exiting) has nobody to tell.
        let _ = self.main.post(move || {
            guarded("a tool notice", || {
                if is_error {
                    notify_error(&message);
                } else {
                    notify_warn(&message);
                }
            });
        });
    }
}
