//! The editor behind the core's seams: [`editor::NvimEditor`] (the
//! `Editor` over loaded buffers, with the buffer text and the save in
//! [`buffer_text`] and `direct_write`), language-server diagnostics
//! ([`lsp`]) and navigation ([`lsp_nav`]), what the editor shows for the
//! context of an ask ([`context`]), hooks written in Lua ([`lua_hooks`]).
//! Uses only `host`.

pub mod buffer_text;
pub mod context;
pub(crate) mod direct_write;
pub mod editor;
pub mod lsp;
pub mod lsp_nav;
pub mod lua_hooks;
