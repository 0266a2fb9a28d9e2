//! `NvimContext`: the [`EditorContext`] of Neovim (docs/context-and-compaction.md,
//! "Context from the editor"). Main thread only: each method calls a
//! function of `lua/lathe/context.lua` (which knows the user's window, not
//! lathe's chat) and reads its plain table with serde.

use mlua::{Function, LuaSerdeExt, Table, Value};
use serde::de::DeserializeOwned;

use lathe_core::agent::context::{
    CurrentBuffer, Diagnostics, EditorContext, EditorState, Quickfix, Selection,
};

/// The Lua module with the collectors.
const MODULE: &str = "lathe.context";

/// Answers from Neovim's state on the main thread.
#[derive(Debug, Default)]
pub struct NvimContext;

/// `require("lathe.context")[name](args)` read as `T`; `None` when the
/// module is missing, the function fails or returns nil (the ask then goes
/// on without that piece; a failure is shown with `vim.notify`).
fn call<T: DeserializeOwned>(name: &str, args: impl mlua::IntoLuaMulti) -> Option<T> {
    let lua = crate::host::lua_handle::lua();
    let got = (|| -> mlua::Result<Option<T>> {
        let require: Function = lua.globals().get("require")?;
        let module: Table = require.call(MODULE)?;
        let f: Function = module.get(name)?;
        let v: Value = f.call(args)?;
        if v.is_nil() {
            return Ok(None);
        }
        lua.from_value(v).map(Some)
    })();
    match got {
        Ok(v) => v,
        Err(e) => {
            crate::host::guard::notify_error(&format!(
                "lathe: cannot read the editor's {name}: {e}"
            ));
            None
        }
    }
}

impl NvimContext {
    /// Lines `first..=last` (1-based) of the buffer in the user's window,
    /// with its file and filetype (`:'<,'>Lathe`). `None` when the range is
    /// out of the buffer.
    pub fn selection(&self, first: usize, last: usize) -> Option<Selection> {
        call("selection", (first, last))
    }
}

impl EditorContext for NvimContext {
    fn state(&self) -> Option<EditorState> {
        call("state", ())
    }

    fn current_buffer(&self) -> Option<CurrentBuffer> {
        call("current_buffer", ())
    }

    fn diagnostics(&self) -> Option<Diagnostics> {
        call("diagnostics", ())
    }

    fn quickfix(&self) -> Quickfix {
        call("quickfix", ()).unwrap_or_default()
    }
}
