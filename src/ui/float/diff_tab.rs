//! `d` in the float: the proposed change in a new tab as a side-by-side
//! diff (`:help diff-mode`). The left side is the file as planned against
//! (read-only), the right side the proposal with the current hunk selection,
//! editable. `:w` on the right side takes it as the new text (the float then
//! shows the diff of your version; `y` applies it and the model is told);
//! `:tabclose` goes back without changing anything.

use nvim_oxi::api::{
    self,
    opts::{CreateAutocmdOpts, OptionOpts},
    Buffer,
};

use super::{view, with_view, ASKS};
use crate::host::guard::guarded;

/// Opens the diff tab of ask `id`. Errors: the call has no change to show,
/// or the API's message.
pub(super) fn open(id: u64) -> Result<(), String> {
    let (preview, view_state) = ASKS
        .with(|a| {
            a.borrow()
                .queue
                .iter()
                .find(|q| q.id == id)
                .map(|q| (q.preview.clone(), q.view.clone()))
        })
        .ok_or("the ask is no longer pending")?;
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
    api::command("tabnew").map_err(err)?;
    let mut left = api::get_current_buf();
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
    let ends_with_newline = after.ends_with('\n') || after.is_empty();
    let target = right.clone();
    let write = CreateAutocmdOpts::builder()
        .buffer(right.clone())
        .callback(move |_args: api::types::AutocmdCallbackArgs| {
            let _ = guarded("diff tab :w", || take_edit(id, &target, ends_with_newline));
            false
        })
        .build();
    api::create_autocmd(["BufWriteCmd"], &write).map_err(err)?;
    Ok(())
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

/// `:w` in the diff tab: the right side becomes the ask's edited text; the
/// tab closes and the float shows the new diff.
fn take_edit(id: u64, buf: &Buffer, final_newline: bool) {
    let lines: Vec<String> = buf
        .get_lines(.., false)
        .map(|it| it.map(|l| l.to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    let mut text = lines.join("\n");
    if final_newline && !(lines.len() == 1 && lines[0].is_empty()) {
        text.push('\n');
    }
    with_view(id, |v| {
        v.edited = Some(text);
        v.rejected.clear();
    });
    let o = OptionOpts::builder().buffer(buf.clone()).build();
    let _ = api::set_option_value("modified", false, &o);
    nvim_oxi::schedule(move |()| {
        let _ = guarded("closing the diff tab", || {
            let _ = api::command("tabclose");
            super::window::redraw(id);
            let win = ASKS.with(|a| a.borrow().float.as_ref().map(|f| f.win.clone()));
            if let Some(w) = win.filter(|w| w.is_valid()) {
                let _ = api::set_current_win(&w);
            }
        });
    });
}

/// Neovim's filetype for `path` (`vim.filetype.match`), for highlighting.
fn filetype_of(path: &str) -> Option<String> {
    crate::host::lua_handle::module_fn("lathe.ui", "filetype")
        .and_then(|f| f.call::<Option<String>>(path))
        .ok()
        .flatten()
}
