//! The bottom of the front end: what every other part stands on, on
//! Neovim's main thread — the one tokio runtime ([`runtime`]), closures from
//! tokio tasks to the main thread ([`bridge`]), errors and panics kept off
//! the editor ([`guard`]), the one Lua handle ([`lua_handle`]), and the
//! counters tests and `make bench` read ([`stats`], one struct; the timed
//! steps and `main_thread_stats()` in [`main_stats`]).
//! Names no other part of the front end.

pub mod bridge;
pub mod guard;
pub mod lua_handle;
pub mod main_stats;
pub mod runtime;
pub mod stats;

/// `b:changedtick` of `buf` (`:help changetick`), read as the buffer
/// variable: nvim-oxi's `Buffer::get_changedtick` converts Neovim's answer
/// before looking at the error, and panics on the -1 a buffer being wiped
/// answers (at Neovim's exit, a chat frame still queued printed a
/// backtrace). Every read of a tick goes through here. Errors:
/// the buffer is gone.
pub fn changedtick(buf: &nvim_oxi::api::Buffer) -> Result<u32, nvim_oxi::api::Error> {
    if !buf.is_valid() {
        return Err(nvim_oxi::api::Error::Other("the buffer is gone".into()));
    }
    let tick: i64 = buf.get_var("changedtick")?;
    u32::try_from(tick).map_err(|_| nvim_oxi::api::Error::Other("no changedtick".into()))
}
