//! When a permission float may open or take focus, and the small Lua glue
//! the float needs (a key tracker, a timer, a one-line prompt).
//!
//! A float opens (without focus), and later takes focus, only when the user
//! is in Normal mode (`:help mode()`: not Insert, Replace, Visual, Cmdline,
//! Operator-pending or Terminal), Neovim is not blocked waiting for more of
//! a command, no typeahead is pending, and no key was typed for the guard
//! time (`vim.on_key`). A script that waits in `vim.wait()` counts as idle.

use std::time::Duration;

use mlua::{Function, Lua};

use crate::host::guard::guarded;
use crate::host::lua_handle::lua;

/// The Lua side: `track()` installs the key tracker once, `may_focus(ms)`
/// answers the focus question.
const FOCUS_LUA: &str = r#"
local M = { last = 0, tracking = false }
local uv = vim.uv or vim.loop
function M.track()
  if M.tracking then return end
  M.tracking = true
  vim.on_key(function() M.last = uv.hrtime() end, vim.api.nvim_create_namespace("lathe_keys"))
end
function M.may_focus(idle_ms)
  local m = vim.api.nvim_get_mode()
  if m.mode ~= "n" or m.blocking then return false end
  if vim.fn.getchar(1) ~= 0 then return false end
  return (uv.hrtime() - M.last) / 1e6 >= idle_ms
end
return M
"#;

thread_local! {
    static FOCUS: std::cell::OnceCell<Option<mlua::Table>> = const { std::cell::OnceCell::new() };
}

fn focus_table(lua: &Lua) -> Option<mlua::Table> {
    FOCUS.with(|f| {
        f.get_or_init(|| lua.load(FOCUS_LUA).set_name("lathe.focus").eval().ok())
            .clone()
    })
}

/// Starts tracking when the user last typed (once per Neovim).
pub(super) fn track_keys() {
    let lua = lua();
    if let Some(t) = focus_table(&lua) {
        if let Ok(f) = t.get::<Function>("track") {
            let _ = f.call::<()>(());
        }
    }
}

/// `true` when a float may take focus now (see the module docs); `idle`
/// is how long no key must have been typed. `false` when Lua fails.
pub(super) fn can_take_focus(idle: Duration) -> bool {
    let lua = lua();
    let Some(t) = focus_table(&lua) else {
        return false;
    };
    t.get::<Function>("may_focus")
        .and_then(|f| f.call::<bool>(idle.as_millis() as f64))
        .unwrap_or(false)
}

/// Runs `f` on the main thread after `delay` (`vim.defer_fn`), guarded.
pub(super) fn defer(delay: Duration, f: impl FnOnce() + 'static) {
    let lua = lua();
    let cell = std::cell::RefCell::new(Some(f));
    let Ok(callback) = lua.create_function(move |_, ()| {
        if let Some(f) = cell.borrow_mut().take() {
            let _ = guarded("permission float timer", f);
        }
        Ok(())
    }) else {
        return;
    };
    let deferred = lua
        .globals()
        .get::<mlua::Table>("vim")
        .and_then(|vim| vim.get::<Function>("defer_fn"))
        .and_then(|defer_fn| defer_fn.call::<mlua::Value>((callback, delay.as_millis() as f64)));
    let _ = deferred;
}

/// Asks for one line on the command line (`input()`); `None` when the user
/// cancelled with `<Esc>` or Lua failed.
pub(super) fn input_line(prompt: &str) -> Option<String> {
    let lua = lua();
    let chunk = lua
        .load(
            r#"local prompt = ...
            local ok, r = pcall(vim.fn.input, { prompt = prompt, cancelreturn = "\0" })
            vim.cmd("redraw")
            if not ok or r == "\0" then return nil end
            return r"#,
        )
        .set_name("lathe.input");
    chunk.call::<Option<String>>(prompt).ok().flatten()
}
