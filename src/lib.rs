//! lathe: a coding agent inside Neovim — the Neovim front end.
//!
//! The crate builds a `cdylib` loaded by `require("lathe")` (see
//! `lua/lathe/init.lua`) and an `rlib` for tests. It is the only code that
//! calls the Neovim API, and only on the main thread; the agent itself is
//! `lathe_core`, plain async Rust with no Neovim in its dependency tree
//! (docs/architecture.md). Four layers, each using only those below it
//! (`tests/all/layers.rs`): [`host`] → [`adapters`] → [`ui`] → [`api`].

pub mod adapters;
pub mod api;
pub mod host;
pub mod ui;

pub use adapters::editor::NvimEditor;
pub use host::bridge::{BridgeError, MainThread};
pub use ui::float::FloatPrompter;

/// The Lua entry point `luaopen_lathe` (loaded by `lua/lathe/init.lua` with
/// `package.loadlib`). Infallible: it stores the exports in
/// `package.loaded["lathe.core"]` and reports problems with `vim.notify`.
#[nvim_oxi::plugin]
fn lathe() {
    api::install();
}
