//! The one handle to Neovim's Lua state that every part of the front end
//! uses (main thread). The lowest module of `nvim`: it names no other.

use std::cell::OnceCell;

thread_local! {
    static LUA: OnceCell<mlua::Lua> = const { OnceCell::new() };
}

/// A handle to Neovim's Lua state (main thread). The first call takes
/// `nvim_oxi::mlua::lua()` and keeps it for the life of the process; later
/// calls return clones, which never trigger the full GC that dropping the
/// original would (docs/threads.md, "Threads and the FFI boundary").
pub fn lua() -> mlua::Lua {
    LUA.with(|cell| {
        cell.get_or_init(|| {
            let original = nvim_oxi::mlua::lua();
            let keep = original.clone();
            // The original runs a full GC when dropped; it lives forever.
            std::mem::forget(original);
            keep
        })
        .clone()
    })
}

/// `require(module)[name]`: a function of one of lathe's Lua modules
/// (`lua/lathe/*.lua`), for Lua glue kept in Lua files rather than in Rust
/// strings. Main thread. Errors: the module or the function is missing.
pub fn module_fn(module: &str, name: &str) -> mlua::Result<mlua::Function> {
    let lua = lua();
    let require: mlua::Function = lua.globals().get("require")?;
    let m: mlua::Table = require.call(module)?;
    m.get(name)
}
