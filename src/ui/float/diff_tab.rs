//! `d` in the float: the proposed change in a new tab as a side-by-side
//! diff (`:help diff-mode`). The left side is the file as planned against
//! (read-only), the right side the proposal with the current hunk selection,
//! editable; each side's winbar says what it is and which keys apply.
//! `:w` on the right side takes it as the new text (the float then shows
//! the diff of your version, `<Space>` leaves out its hunks, `y` applies it
//! and the model is told; written back to the model's proposal, it is the
//! proposal again); `:q` or `:tabclose` goes back without changing anything.
//!
//! Both sides get the window options of a review, whatever the user's
//! window had: absolute line numbers, no `relativenumber`, fold, sign or
//! status column, no `list`, `spell`, `colorcolumn`, `cursorline` or
//! concealing, no wrapping (the sides scroll line by line together).

use nvim_oxi::api::{
    self,
    opts::{CreateAutocmdOpts, OptionOpts},
    Buffer, Window,
};

use super::{view, with_view, ASKS};
use crate::host::guard::guarded;

/// The winbar of the left side.
pub const BEFORE_WINBAR: &str = " before: the file as planned against (read-only) ";
/// The winbar of the right side, where the cursor starts.
pub const PROPOSED_WINBAR: &str = " :w use this text · :q cancel · do/dp per hunk ";

/// Window options of both sides, set after `:diffthis` (which sets its
/// own `foldcolumn`).
const REVIEW_OPTIONS: &[(&str, ReviewValue)] = &[
    ("number", ReviewValue::Bool(true)),
    ("relativenumber", ReviewValue::Bool(false)),
    ("foldcolumn", ReviewValue::Str("0")),
    ("signcolumn", ReviewValue::Str("no")),
    ("statuscolumn", ReviewValue::Str("")),
    ("colorcolumn", ReviewValue::Str("")),
    ("list", ReviewValue::Bool(false)),
    ("spell", ReviewValue::Bool(false)),
    ("cursorline", ReviewValue::Bool(false)),
    ("wrap", ReviewValue::Bool(false)),
    ("conceallevel", ReviewValue::Int(0)),
];

/// The value of one window option in [`REVIEW_OPTIONS`].
#[derive(Clone, Copy)]
enum ReviewValue {
    Bool(bool),
    Str(&'static str),
    Int(i64),
}

/// Opens the diff tab of ask `id`. Errors: the call has no change to show,
/// or the API's message.
pub(super) fn open(id: u64) -> Result<(), String> {
    let (preview, view_state) = super::shown(id).ok_or("the ask is no longer pending")?;
    let (before, _) = preview
        .change
        .clone()
        .ok_or("this call has no change to show in a diff")?;
    let after = view::effective_after(&preview, &view_state).unwrap_or_default();
    let name = preview
        .path
        .as_deref()
        .and_then(|p| p.file_name())
        .map_or_else(
            || "change".to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
    let filetype = preview
        .path
        .as_deref()
        .and_then(|p| filetype_of(&p.display().to_string()));
    let err = |e: api::Error| e.to_string();
    leave_float();
    api::command("tabnew").map_err(err)?;
    let mut left = api::get_current_buf();
    let left_win = api::get_current_win();
    scratch(
        &mut left,
        &format!("lathe://before/{name}#{id}"),
        before.as_deref().unwrap_or(""),
        filetype.as_deref(),
    )?;
    let lopts = OptionOpts::builder().buffer(left.clone()).build();
    api::set_option_value("modifiable", false, &lopts).map_err(err)?;
    api::command("diffthis").map_err(err)?;
    api::command("rightbelow vnew").map_err(err)?;
    let mut right = api::get_current_buf();
    let right_win = api::get_current_win();
    scratch(
        &mut right,
        &format!("lathe://proposed/{name}#{id}"),
        &after,
        filetype.as_deref(),
    )?;
    let ropts = OptionOpts::builder().buffer(right.clone()).build();
    api::set_option_value("buftype", "acwrite", &ropts).map_err(err)?;
    api::set_option_value("modified", false, &ropts).map_err(err)?;
    api::command("diffthis").map_err(err)?;
    review_options(&left_win, BEFORE_WINBAR)?;
    review_options(&right_win, PROPOSED_WINBAR)?;
    let ends_with_newline = after.ends_with('\n') || after.is_empty();
    let target = right.clone();
    let wins = [left_win.clone(), right_win.clone()];
    let write = CreateAutocmdOpts::builder()
        .buffer(right.clone())
        .callback(move |_args: api::types::AutocmdCallbackArgs| {
            let wins = wins.clone();
            let _ = guarded("diff tab :w", || {
                take_edit(id, &target, ends_with_newline);
                nvim_oxi::schedule(move |()| {
                    let _ = guarded("closing the diff tab", || close(id, &wins));
                });
            });
            false
        })
        .build();
    api::create_autocmd(["BufWriteCmd"], &write).map_err(err)?;
    // Closing either side (`:q`, `:tabclose`) closes the tab and goes back
    // to the float.
    for win in [&left_win, &right_win] {
        let wins = [left_win.clone(), right_win.clone()];
        let closed = CreateAutocmdOpts::builder()
            .patterns([win.handle().to_string().as_str()])
            .once(true)
            .callback(move |_args: api::types::AutocmdCallbackArgs| {
                let wins = wins.clone();
                nvim_oxi::schedule(move |()| {
                    let _ = guarded("closing the diff tab", || close(id, &wins));
                });
                true
            })
            .build();
        api::create_autocmd(["WinClosed"], &closed).map_err(err)?;
    }
    Ok(())
}

/// Moves the cursor from the float to a window of the float's tab that
/// shows a file, so the tab's label (`:help tabline`) names that file, not
/// the float's scratch buffer, while the diff tab is open.
fn leave_float() {
    let Some((float, prev)) = ASKS.with(|a| {
        a.borrow()
            .float
            .as_ref()
            .map(|f| (f.win.clone(), f.prev.clone()))
    }) else {
        return;
    };
    if api::get_current_win() != float {
        return;
    }
    let Ok(tab) = float.get_tabpage() else { return };
    let is_plain = |w: &Window| {
        w.is_valid()
            && w.get_tabpage().is_ok_and(|t| t == tab)
            && w.get_config().is_ok_and(|c| c.relative.is_none())
    };
    let target = if is_plain(&prev) {
        Some(prev)
    } else {
        tab.list_wins()
            .ok()
            .and_then(|mut wins| wins.find(|w| is_plain(w)))
    };
    if let Some(w) = target {
        let _ = api::set_current_win(&w);
    }
}

/// Gives `win` the options of a review and the winbar `winbar`.
fn review_options(win: &Window, winbar: &str) -> Result<(), String> {
    let err = |e: api::Error| e.to_string();
    let o = OptionOpts::builder().win(win.clone()).build();
    for (name, value) in REVIEW_OPTIONS {
        match *value {
            ReviewValue::Bool(b) => api::set_option_value(name, b, &o),
            ReviewValue::Str(s) => api::set_option_value(name, s, &o),
            ReviewValue::Int(i) => api::set_option_value(name, i, &o),
        }
        .map_err(err)?;
    }
    api::set_option_value("winbar", winbar, &o).map_err(err)
}

/// Fills `buf` (the current buffer of a fresh window) as an unlisted
/// scratch buffer named `name` holding `text`.
fn scratch(buf: &mut Buffer, name: &str, text: &str, filetype: Option<&str>) -> Result<(), String> {
    let err = |e: api::Error| e.to_string();
    let o = OptionOpts::builder().buffer(buf.clone()).build();
    api::set_option_value("buftype", "nofile", &o).map_err(err)?;
    api::set_option_value("bufhidden", "wipe", &o).map_err(err)?;
    api::set_option_value("swapfile", false, &o).map_err(err)?;
    buf.set_name(name).map_err(err)?;
    let body = text.strip_suffix('\n').unwrap_or(text);
    buf.set_lines(.., false, body.split('\n')).map_err(err)?;
    if let Some(ft) = filetype {
        api::set_option_value("filetype", ft, &o).map_err(err)?;
    }
    Ok(())
}

/// `:w` in the diff tab: the right side becomes the ask's new text. The
/// same text as the float would apply now changes nothing; the model's
/// proposal is the proposal again (no edit, every hunk kept); any other
/// text is the user's edit, every hunk of it kept.
fn take_edit(id: u64, buf: &Buffer, final_newline: bool) {
    let lines: Vec<String> = buf
        .get_lines(.., false)
        .map(|it| it.map(|l| l.to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    let mut text = lines.join("\n");
    if final_newline && !(lines.len() == 1 && lines[0].is_empty()) {
        text.push('\n');
    }
    let current = ASKS.with(|a| {
        a.borrow().queue.iter().find(|q| q.id == id).map(|q| {
            let proposed = q.preview.change.as_ref().map(|(_, after)| after.clone());
            (view::effective_after(&q.preview, &q.view), proposed)
        })
    });
    if let Some((now, proposed)) = current {
        if now.as_ref() != Some(&text) {
            let edited = (proposed.as_ref() != Some(&text)).then_some(text);
            with_view(id, |v| {
                v.edited = edited;
                v.rejected.clear();
            });
        }
    }
    let o = OptionOpts::builder().buffer(buf.clone()).build();
    let _ = api::set_option_value("modified", false, &o);
    super::window::redraw(id);
}

/// Closes what is left of the diff tab's windows `wins` (not a side with
/// an unsaved edit) and, back in the float's tab, puts the cursor in the
/// float.
fn close(id: u64, wins: &[Window; 2]) {
    for w in wins {
        if !w.is_valid() {
            continue;
        }
        let modified = w.get_buf().is_ok_and(|b| {
            api::get_option_value::<bool>("modified", &OptionOpts::builder().buffer(b).build())
                .unwrap_or(false)
        });
        if !modified {
            let _ = w.clone().close(true);
        }
    }
    let float = ASKS.with(|a| {
        a.borrow()
            .float
            .as_ref()
            .filter(|f| f.ask_id == id && f.win.is_valid())
            .map(|f| f.win.clone())
    });
    if let Some(f) = float {
        let here = api::get_current_tabpage();
        if f.get_tabpage().is_ok_and(|t| t == here) && api::get_current_win() != f {
            let _ = api::set_current_win(&f);
        }
    }
}

/// Neovim's filetype for `path` (`vim.filetype.match`), for highlighting.
fn filetype_of(path: &str) -> Option<String> {
    crate::host::lua_handle::module_fn("lathe.ui", "filetype")
        .and_then(|f| f.call::<Option<String>>(path))
        .ok()
        .flatten()
}
