//! An answer's burst of changes in the float (`:help lathe-float-burst`):
//!
//! - The hold: after an answer in the float, while more changing calls of
//!   the same answer are queued, the float stays in place saying what
//!   comes next, and keys typed meanwhile go to it (they do nothing), not
//!   to the user's file. The next ask of the answer opens in its place
//!   (with its own guard time, so those keys never answer it); when the
//!   core says nothing more will ask ([`Prompter::settled`]), the hold
//!   closes and the cursor goes back where it was.
//! - `D`: every change of the answer still to come, planned in order
//!   against the files as they are now (the second edit of a file against
//!   the first), as one diff in a preview tab.
//!
//! [`Prompter::settled`]: lathe_core::permissions::Prompter::settled

use std::cell::RefCell;

use nvim_oxi::api::{
    self,
    opts::{OptionOpts, SetKeymapOpts},
    types::Mode,
    Buffer, Window,
};

use lathe_core::execution::answer::{combined_preview, PlannedText};
use lathe_core::permissions::PermissionPreview;
use lathe_core::text::fill;

use super::{view, Float};
use crate::host::guard::guarded;

/// The hold's title. `{next}`: the next call of the answer.
pub const HOLD_TITLE: &str = " next: {next}… ";
/// The hold's text. `{next}`.
pub const HOLD_LINES: &[&str] = &[
    "Applying your answer; the answer's next change comes here: {next}",
    "Keys typed now stay in this window and answer nothing.",
];
/// The hold's footer.
pub const HOLD_FOOTER: &str = " :q leaves (the next ask then waits) ";
/// The combined preview's buffer name.
pub const PREVIEW_NAME: &str = "lathe://answer-preview";

/// The window kept between two asks of one answer.
struct Hold {
    win: Window,
    buf: Buffer,
    /// The window before the float: focus goes back there at the end.
    prev: Window,
}

thread_local! {
    static HOLD: RefCell<Option<Hold>> = const { RefCell::new(None) };
}

/// The next changing call of `preview`'s answer, if another is queued.
pub(super) fn next_of(preview: &PermissionPreview) -> Option<String> {
    preview
        .burst
        .as_ref()
        .and_then(|b| b.next.first())
        .map(|q| q.title.clone())
}

/// Keeps `float` (just answered, with the cursor in it) as the hold while
/// `next` comes. Returns the float back when it cannot (the caller closes
/// it as usual).
pub(super) fn hold(float: Float, next: &str) -> Option<Float> {
    if !float.win.is_valid() || api::get_current_win() != float.win {
        return Some(float);
    }
    let Float {
        mut win,
        mut buf,
        prev,
        ..
    } = float;
    let lines: Vec<String> = HOLD_LINES
        .iter()
        .map(|l| fill(l, &[("next", next)]))
        .collect();
    let o = OptionOpts::builder().buffer(buf.clone()).build();
    let _ = api::set_option_value("modifiable", true, &o);
    let _ = buf.set_lines(.., false, lines.iter().map(String::as_str));
    let _ = api::set_option_value("modifiable", false, &o);
    let _ = api::set_option_value("modified", false, &o);
    let _ = api::set_option_value("filetype", "text", &o);
    let _ = buf.clear_namespace(api::create_namespace("lathe_float"), ..);
    let width = lines
        .iter()
        .map(|l| l.chars().count())
        .chain([HOLD_FOOTER.chars().count()])
        .max()
        .unwrap_or(20);
    let r = view::Rendered {
        header: 0,
        stale_rows: 0..0,
        hunk_of_line: vec![None; lines.len()],
        title: fill(HOLD_TITLE, &[("next", next)]),
        footer: HOLD_FOOTER.to_string(),
        width,
        filetype: "text",
        lines: lines.clone(),
    };
    let _ = win.set_config(&super::window::config(&r, lines.len()));
    let _ = win.set_cursor(1, 0);
    // The float's own keys stay mapped: they belong to an ask no longer
    // pending, so they do nothing.
    end();
    HOLD.with(|h| *h.borrow_mut() = Some(Hold { win, buf, prev }));
    None
}

/// When the hold is the current window and the user is in Normal mode
/// with nothing pending: the window the next float goes back to, after
/// the hold was closed with the cursor left for the next float to take.
/// `None` when there is no hold to hand over (it is dropped if the user
/// left it).
pub(super) fn hand_over(can_open: bool) -> Option<Window> {
    let held = HOLD.with(|h| {
        h.borrow().as_ref().map(|h| {
            (
                h.win.clone(),
                h.win.is_valid() && api::get_current_win() == h.win,
            )
        })
    });
    match held {
        None => None,
        Some((_, false)) => {
            end();
            None
        }
        Some((_, true)) if !can_open => None,
        Some((_, true)) => {
            let hold = HOLD.with(|h| h.borrow_mut().take())?;
            Some(hold.prev)
        }
    }
}

/// `true` while the hold is the current window.
pub(super) fn holding() -> bool {
    HOLD.with(|h| {
        h.borrow()
            .as_ref()
            .is_some_and(|h| h.win.is_valid() && api::get_current_win() == h.win)
    })
}

/// Closes a window handed over by [`hand_over`] (the next float took the
/// cursor from it).
pub(super) fn close_handed(win: Window) {
    if win.is_valid() {
        let _ = win.close(true);
    }
}

/// Ends the hold: closes it and, when the cursor was in it, goes back to
/// the window before the float.
pub(super) fn end() {
    let Some(hold) = HOLD.with(|h| h.borrow_mut().take()) else {
        return;
    };
    let was_current = hold.win.is_valid() && api::get_current_win() == hold.win;
    let _ = hold.buf;
    if hold.win.is_valid() {
        let _ = hold.win.clone().close(true);
    }
    if was_current && hold.prev.is_valid() {
        let _ = api::set_current_win(&hold.prev);
        super::focus::swallow_answer_keys(super::ASKS.with(|a| a.borrow().guard));
    }
}

/// `D`: the change of ask `id` and every change of its answer still
/// queued, as one diff in a new tab (a preview; nothing is applied).
/// Errors: the ask is gone, or the API's message.
pub(super) fn open_combined(id: u64) -> Result<(), String> {
    let (preview, view_state) = super::shown(id).ok_or("the ask is no longer pending")?;
    let first = match (&preview.change, &preview.path) {
        (Some((before, _)), Some(path)) => Some(PlannedText {
            title: preview.title.clone(),
            path: path.clone(),
            before: before.clone(),
            after: view::effective_after(&preview, &view_state).unwrap_or_default(),
        }),
        _ => None,
    };
    let queued = preview
        .burst
        .as_ref()
        .map(|b| b.next.clone())
        .unwrap_or_default();
    let root = crate::ui::chat::project_root().unwrap_or_default();
    let text = combined_preview(first, &queued, read_now, &root);
    let err = |e: api::Error| e.to_string();
    api::command("tabnew").map_err(err)?;
    let mut buf = api::get_current_buf();
    let o = OptionOpts::builder().buffer(buf.clone()).build();
    api::set_option_value("buftype", "nofile", &o).map_err(err)?;
    api::set_option_value("bufhidden", "wipe", &o).map_err(err)?;
    api::set_option_value("swapfile", false, &o).map_err(err)?;
    buf.set_name(format!("{PREVIEW_NAME}#{id}")).map_err(err)?;
    let body = text.strip_suffix('\n').unwrap_or(&text);
    buf.set_lines(.., false, body.split('\n')).map_err(err)?;
    api::set_option_value("modifiable", false, &o).map_err(err)?;
    api::set_option_value("filetype", "diff", &o).map_err(err)?;
    let opts = SetKeymapOpts::builder()
        .noremap(true)
        .nowait(true)
        .silent(true)
        .desc("lathe: close the preview")
        .callback(|()| {
            let _ = guarded("closing the preview", || {
                let _ = api::command("tabclose");
            });
        })
        .build();
    buf.set_keymap(Mode::Normal, "q", "", &opts).map_err(err)?;
    Ok(())
}

/// The text of `path` now: its loaded buffer's, else the disk's; `None`
/// when there is no such file.
fn read_now(path: &std::path::Path) -> Option<String> {
    if let Some(buf) = crate::adapters::buffer_text::find_loaded(path, None) {
        if let Ok(s) = crate::adapters::buffer_text::snapshot(&buf) {
            return Some(s.into_text());
        }
    }
    let bytes = std::fs::read(path).ok()?;
    lathe_core::editor::codec::decode(&bytes)
        .ok()
        .map(|(text, _)| text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_texts() {
        assert_eq!(HOLD_TITLE, " next: {next}… ");
        assert_eq!(
            HOLD_LINES,
            &[
                "Applying your answer; the answer's next change comes here: {next}",
                "Keys typed now stay in this window and answer nothing.",
            ]
        );
        assert_eq!(HOLD_FOOTER, " :q leaves (the next ask then waits) ");
    }
}
