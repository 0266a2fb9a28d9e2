//! How the float shows whether it has the cursor. Once it has been focused,
//! a float the user left (`<C-w>p`, a click, another tab) has its border,
//! title and footer dimmed (`LatheFloatInactive`), its footer says how to
//! answer it, and it moves up or down out of the way of the cursor in the
//! window the user is in. Back in it (`:Lathe review`, `<C-w>w`), it looks
//! and sits as before. The Lua is in `lua/lathe/float_look.lua`.

use nvim_oxi::api::{self, opts::CreateAutocmdOpts, Buffer};

use super::ASKS;
use crate::host::guard::guarded;
use crate::host::lua_handle::module_fn;

/// The Lua side: `inactive(win, footer)`, `active(win)`.
const MODULE: &str = "lathe.float_look";

/// The footer of a float the cursor left.
pub const INACTIVE_FOOTER: &str = " not focused · :Lathe review to answer ";

/// The autocmd group following the cursor while a float is left.
const GROUP: &str = "lathe_float_look";

/// Keeps the look of ask `id`'s float (its buffer `buf`) in step with the
/// cursor: entering or leaving it, and moving the cursor elsewhere while
/// it is left. `redraw` draws the float afresh (its footer and place), for
/// when the cursor comes back. Errors: the API's message.
pub(super) fn watch(id: u64, buf: &Buffer, redraw: fn(u64)) -> Result<(), String> {
    let err = |e: api::Error| e.to_string();
    let group = api::create_augroup(
        GROUP,
        &api::opts::CreateAugroupOpts::builder().clear(true).build(),
    )
    .map_err(err)?;
    let on_float = CreateAutocmdOpts::builder()
        .group(group)
        .buffer(buf.clone())
        .callback(move |_args: api::types::AutocmdCallbackArgs| {
            // The window layout settles after the event: look then.
            nvim_oxi::schedule(move |()| {
                let _ = guarded("permission float look", || {
                    if is_current(id) {
                        redraw(id);
                    } else {
                        refresh(id);
                    }
                });
            });
            false
        })
        .build();
    api::create_autocmd(["WinEnter", "WinLeave"], &on_float).map_err(err)?;
    let elsewhere = CreateAutocmdOpts::builder()
        .group(group)
        .callback(move |_args: api::types::AutocmdCallbackArgs| {
            let gone = guarded("permission float look", || {
                let left = ASKS.with(|a| {
                    a.try_borrow().ok().and_then(|a| {
                        a.float
                            .as_ref()
                            .filter(|f| f.ask_id == id && f.win.is_valid())
                            .map(|f| f.focused)
                    })
                });
                match left {
                    Some(true) if !is_current(id) => {
                        refresh(id);
                        false
                    }
                    Some(_) => false,
                    None => true,
                }
            });
            // Once the float is gone the autocmd deletes itself.
            gone.unwrap_or(true)
        })
        .build();
    api::create_autocmd(["CursorMoved", "CursorMovedI", "WinScrolled"], &elsewhere).map_err(err)?;
    Ok(())
}

/// `true` when ask `id`'s float is the current window.
fn is_current(id: u64) -> bool {
    let win = ASKS.with(|a| {
        a.try_borrow().ok().and_then(|a| {
            a.float
                .as_ref()
                .filter(|f| f.ask_id == id)
                .map(|f| f.win.clone())
        })
    });
    win.is_some_and(|w| w == api::get_current_win())
}

/// Gives ask `id`'s float the look of where the cursor is: dimmed, with
/// [`INACTIVE_FOOTER`] and out of the cursor's way when it was focused
/// once and the cursor is elsewhere; as drawn otherwise. Called after
/// every redraw (which sets the footer and place again).
pub(super) fn refresh(id: u64) {
    let float = ASKS.with(|a| {
        a.try_borrow().ok().and_then(|a| {
            a.float
                .as_ref()
                .filter(|f| f.ask_id == id && f.win.is_valid())
                .map(|f| (f.win.clone(), f.focused))
        })
    });
    let Some((win, focused)) = float else { return };
    let handle = win.handle();
    if focused && win != api::get_current_win() {
        if let Ok(f) = module_fn(MODULE, "inactive") {
            let _ = f.call::<()>((handle, INACTIVE_FOOTER));
        }
    } else if let Ok(f) = module_fn(MODULE, "active") {
        let _ = f.call::<()>(handle);
    }
}
