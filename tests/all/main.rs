//! The Neovim front end's tests that run outside Neovim, one binary: the
//! real-terminal tests (Neovim in tmux), the help tags, the install script,
//! the load-path layout and the layers of the source. Tests inside Neovim are
//! `tests/nvim`; the core's are `crates/lathe-core/tests`.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod help_tags;
mod install;
mod layers;
mod startup_layout;
mod tui_burst;
mod tui_changes;
mod tui_chat;
mod tui_chat_fit;
mod tui_chat_follow;
mod tui_chat_highlight;
mod tui_checkhealth;
mod tui_commands;
mod tui_float;
mod tui_inline;
mod tui_keymaps;
mod tui_long_session;
mod tui_prompt;
mod tui_sessions;
