//! lathe: a coding agent inside Neovim.
//!
//! The crate builds a `cdylib` loaded by `require("lathe")` (see
//! `lua/lathe/init.lua`) and an `rlib` for tests. Only [`nvim`] touches the
//! Neovim API; everything else is plain async Rust (docs/architecture.md).

pub mod agent;
pub mod config;
pub mod editor;
pub mod events;
pub mod execution;
pub mod fuzzing;
pub mod hooks;
pub mod mcp;
pub mod nvim;
pub mod permissions;
pub mod process;
pub mod protocol;
pub mod provider;
pub mod sandbox;
pub mod text;
pub mod tls;
pub mod tools;

/// The Lua entry point `luaopen_lathe` (loaded by `lua/lathe/init.lua` with
/// `package.loadlib`). Infallible: it stores the exports in
/// `package.loaded["lathe.core"]` and reports problems with `vim.notify`.
#[nvim_oxi::plugin]
fn lathe() {
    nvim::install();
}
