//! When a permission float may open or take focus, and the small Lua glue
//! the float needs (a key tracker, a timer, a one-line prompt; the Lua is
//! in `lua/lathe/float.lua`).
//!
//! A float opens (without focus), and later takes focus, only when the user
//! is in Normal mode (`:help mode()`: not Insert, Replace, Visual, Cmdline,
//! Operator-pending or Terminal), Neovim is not blocked waiting for more of
//! a command, no typeahead is pending, and no key was typed for the guard
//! time (`vim.on_key`). A script that waits in `vim.wait()` counts as idle.

use std::time::Duration;

use mlua::Function;

use crate::host::guard::guarded;
use crate::host::lua_handle::{lua, module_fn};

/// The Lua side (`lua/lathe/float.lua`): `track()` installs the key
/// tracker once, `may_focus(ms)` answers the focus question,
/// `input_line(prompt)` asks for a line.
const MODULE: &str = "lathe.float";

/// Starts tracking when the user last typed (once per Neovim).
pub(super) fn track_keys() {
    if let Ok(f) = module_fn(MODULE, "track") {
        let _ = f.call::<()>(());
    }
}

/// After the last ask of an answer closed and the cursor went back to the
/// user's window: for `guard` (and `guard` after each key dropped) the
/// answer keys typed in Normal mode are dropped, so keys typed to answer
/// more asks never run in the user's file (`lua/lathe/float.lua`).
pub(super) fn swallow_answer_keys(guard: Duration) {
    if let Ok(f) = module_fn(MODULE, "swallow") {
        let _ = f.call::<()>(guard.as_millis() as f64);
    }
}

/// `true` when a float may take focus now (see the module docs); `idle`
/// is how long no key must have been typed. `false` when Lua fails.
pub(super) fn can_take_focus(idle: Duration) -> bool {
    module_fn(MODULE, "may_focus")
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
    module_fn(MODULE, "input_line")
        .and_then(|f| f.call::<Option<String>>(prompt))
        .ok()
        .flatten()
}

/// The operator the user started and has not finished (`y`, `d`, `gU`),
/// when Neovim is in Operator-pending mode; `None` otherwise.
pub(super) fn pending_operator() -> Option<String> {
    module_fn(MODULE, "pending_operator")
        .and_then(|f| f.call::<Option<String>>(()))
        .ok()
        .flatten()
}
