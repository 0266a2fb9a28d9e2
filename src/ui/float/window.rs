//! Drawing the float of one ask: the window (centered, rounded border, its
//! own minimal window options), its buffer from `view::render`, highlights
//! for the header, the stale banner and left-out hunks, and its keys. The
//! window is as tall as its lines take on screen, wrapped lines counted.

use std::time::Instant;

use nvim_oxi::api::{
    self,
    opts::{CreateAutocmdOpts, OptionOpts, SetExtmarkOpts, SetKeymapOpts, WinTextHeightOpts},
    types::{Mode, WindowBorder, WindowConfig, WindowRelativeTo, WindowStyle, WindowTitle},
    Buffer, Window,
};

use super::view::{self, Rendered};
use super::{on_key, Float, ASKS};
use crate::host::guard::guarded;
use crate::host::lua_handle::module_fn;

/// Extmark namespace of the float's highlights.
const NAMESPACE: &str = "lathe_float";

/// The keys the float maps, with the answer key each stands for.
const KEYS: &[(&str, char)] = &[
    ("y", 'y'),
    ("a", 'a'),
    ("A", 'A'),
    ("n", 'n'),
    ("q", 'q'),
    ("N", 'N'),
    ("r", 'r'),
    ("d", 'd'),
    ("<Space>", ' '),
    ("?", '?'),
    ("Y", 'Y'),
    ("D", 'D'),
];

/// Keys the float (and the hold it becomes, `burst`) take besides the answer keys, doing
/// nothing: those that would change text or enter Insert mode. The float's
/// buffer cannot be changed, but Insert mode there would keep the keys
/// after from answering and the next float from opening.
const SWALLOWED: &[&str] = &[
    "i", "I", "o", "O", "s", "S", "c", "C", "R", "x", "X", "p", "P", "u", "J",
];

/// Maps [`SWALLOWED`] to nothing in `buf` (a float's buffer).
fn swallow_keys(buf: &mut Buffer) {
    for lhs in SWALLOWED {
        let opts = SetKeymapOpts::builder()
            .noremap(true)
            .nowait(true)
            .silent(true)
            .desc("lathe: permission float")
            .callback(|()| {})
            .build();
        let _ = buf.set_keymap(Mode::Normal, lhs, "", &opts);
    }
}

/// The editor's size: `(columns, lines)`.
fn screen() -> (usize, usize) {
    let get = |name: &str, default: u32| -> usize {
        api::get_option_value::<u32>(name, &OptionOpts::default()).unwrap_or(default) as usize
    };
    (get("columns", 80), get("lines", 24))
}

/// The render of ask `id` with its position in the queue, if it is queued,
/// for the current screen width.
fn render_of(id: u64) -> Option<Rendered> {
    let (columns, _) = screen();
    ASKS.with(|a| {
        let a = a.borrow();
        let pos = a.queue.iter().position(|q| q.id == id)?;
        let q = &a.queue[pos];
        Some(view::render(
            &q.tool,
            &q.preview,
            &q.view,
            (pos + 1, a.queue.len()),
            columns.saturating_sub(4),
        ))
    })
}

/// Opens the float of ask `id` in the current tab; it becomes the current
/// window only when `enter`. Errors: the API's message.
pub(super) fn open(id: u64, enter: bool) -> Result<(), String> {
    let r = render_of(id).ok_or("the ask is no longer pending")?;
    let err = |e: api::Error| e.to_string();
    let mut buf = api::create_buf(false, true).map_err(err)?;
    let bopts = OptionOpts::builder().buffer(buf.clone()).build();
    api::set_option_value("bufhidden", "wipe", &bopts).map_err(err)?;
    api::set_option_value("swapfile", false, &bopts).map_err(err)?;
    fill(&mut buf, &r, id)?;
    let prev = api::get_current_win();
    let mut win = api::open_win(&buf, enter, &config(&r, r.lines.len())).map_err(err)?;
    let wopts = OptionOpts::builder().win(win.clone()).build();
    // style=minimal turns off number, list, colorcolumn, signcolumn, spell…
    // of the user's window; the cursor line shows the hunk <Space> toggles.
    // Long lines wrap at word boundaries ('linebreak').
    let _ = api::set_option_value("cursorline", true, &wopts);
    let _ = api::set_option_value("wrap", true, &wopts);
    let _ = api::set_option_value("linebreak", true, &wopts);
    fit_height(&mut win, &r);
    let first_body = (r.header + 1).min(r.lines.len().max(1));
    let _ = win.set_cursor(first_body, 0);
    for (lhs, key) in KEYS {
        let key = *key;
        let opts = SetKeymapOpts::builder()
            .noremap(true)
            .nowait(true)
            .silent(true)
            .desc("lathe: permission float")
            .callback(move |()| {
                let _ = guarded("permission key", || on_key(id, key));
            })
            .build();
        buf.set_keymap(Mode::Normal, lhs, "", &opts).map_err(err)?;
    }
    swallow_keys(&mut buf);
    let closed = CreateAutocmdOpts::builder()
        .patterns([win.handle().to_string().as_str()])
        .once(true)
        .callback(move |_args: api::types::AutocmdCallbackArgs| {
            // Closed by the user (:q, <C-w>c): the ask stays pending.
            let _ = guarded("permission window closed", || {
                let ours = ASKS.with(|a| {
                    a.try_borrow_mut().is_ok_and(|mut a| {
                        let ours = a.float.as_ref().is_some_and(|f| f.ask_id == id);
                        if ours {
                            a.float = None;
                            a.dismissed = true;
                        }
                        ours
                    })
                });
                if ours {
                    super::update_waiting();
                }
            });
            true
        })
        .build();
    api::create_autocmd(["WinClosed"], &closed).map_err(err)?;
    let entered = CreateAutocmdOpts::builder()
        .buffer(buf.clone())
        .callback(move |_args: api::types::AutocmdCallbackArgs| {
            // The user moved the cursor here: the guard time starts again.
            let _ = guarded("permission window entered", || {
                if super::lathe_is_focusing() {
                    return;
                }
                ASKS.with(|a| {
                    if let Ok(mut a) = a.try_borrow_mut() {
                        if let Some(f) = a.float.as_mut().filter(|f| f.ask_id == id) {
                            f.entered = Instant::now();
                        }
                    }
                })
            });
            false
        })
        .build();
    api::create_autocmd(["WinEnter"], &entered).map_err(err)?;
    super::look::watch(id, &buf, redraw)?;
    ASKS.with(|a| {
        a.borrow_mut().float = Some(Float {
            ask_id: id,
            win,
            buf,
            prev,
            shown: Instant::now(),
            entered: Instant::now(),
            focused: enter,
            header: r.header,
            hunk_of_line: r.hunk_of_line.clone(),
        })
    });
    Ok(())
}

/// Redraws the float of ask `id` in place (after a toggle, help, stale),
/// keeping the window, its guard time and the cursor on the same line of
/// the diff (the header above it may grow or shrink).
pub(super) fn redraw(id: u64) {
    let float = ASKS.with(|a| {
        a.borrow()
            .float
            .as_ref()
            .filter(|f| f.ask_id == id && f.win.is_valid())
            .map(|f| (f.win.clone(), f.buf.clone(), f.header))
    });
    let (Some((mut win, mut buf, old_header)), Some(r)) = (float, render_of(id)) else {
        return;
    };
    let cursor = win.get_cursor().ok();
    if fill(&mut buf, &r, id).is_err() {
        return;
    }
    let _ = win.set_config(&config(&r, r.lines.len()));
    fit_height(&mut win, &r);
    if let Some((row, col)) = cursor {
        let row = same_line(row, old_header, r.header);
        let _ = win.set_cursor(row.clamp(1, r.lines.len().max(1)), col);
    }
    ASKS.with(|a| {
        if let Some(f) = a.borrow_mut().float.as_mut() {
            f.header = r.header;
            f.hunk_of_line = r.hunk_of_line;
        }
    });
    super::look::refresh(id);
}

/// The 1-based row of the line that was at `row` when the header had
/// `old_header` lines and now has `new_header`: a body line keeps its place
/// in the body; a header row stays in the header.
fn same_line(row: usize, old_header: usize, new_header: usize) -> usize {
    if row > old_header {
        row - old_header + new_header
    } else {
        row.min(new_header.max(1))
    }
}

/// Puts `r`'s lines and highlights into `buf` (left not modifiable); `id`
/// is the ask, for its left-out hunks.
fn fill(buf: &mut Buffer, r: &Rendered, id: u64) -> Result<(), String> {
    let err = |e: api::Error| e.to_string();
    let bopts = OptionOpts::builder().buffer(buf.clone()).build();
    api::set_option_value("modifiable", true, &bopts).map_err(err)?;
    buf.set_lines(.., false, r.lines.iter().map(String::as_str))
        .map_err(err)?;
    api::set_option_value("modifiable", false, &bopts).map_err(err)?;
    api::set_option_value("modified", false, &bopts).map_err(err)?;
    // A command is shell below a header that is not: no 'filetype', sh
    // syntax on the command's rows only (`lua/lathe/float.lua`).
    let shell = r.filetype == "sh";
    let filetype = if shell { "" } else { r.filetype };
    let current: String = api::get_option_value("filetype", &bopts).unwrap_or_default();
    if current != filetype {
        api::set_option_value("filetype", filetype, &bopts).map_err(err)?;
    }
    if shell {
        if let Ok(f) = module_fn("lathe.float", "shell_syntax") {
            let _ = f.call::<()>((buf.handle(), r.header + 1));
        }
    }
    let ns = api::create_namespace(NAMESPACE);
    let _ = buf.clear_namespace(ns, ..);
    for row in 0..r.header {
        let group = if r.stale_rows.contains(&row) {
            "ErrorMsg"
        } else {
            "Comment"
        };
        let opts = SetExtmarkOpts::builder().line_hl_group(group).build();
        let _ = buf.set_extmark(ns, row, 0, &opts);
    }
    // Left-out hunks: greyed out, their @@ line marked.
    let rejected = ASKS.with(|a| {
        a.borrow()
            .queue
            .iter()
            .find(|q| q.id == id)
            .map(|q| q.view.rejected.clone())
            .unwrap_or_default()
    });
    let mut marked = std::collections::BTreeSet::new();
    for (row, hunk) in r.hunk_of_line.iter().enumerate() {
        let Some(h) = hunk else { continue };
        if !rejected.contains(h) {
            continue;
        }
        let mut b = SetExtmarkOpts::builder();
        b.line_hl_group("Comment").priority(200);
        if marked.insert(*h) {
            b.virt_text([("  ✗ left out", "WarningMsg")]);
        }
        let _ = buf.set_extmark(ns, row, 0, &b.build());
    }
    Ok(())
}

/// The most rows the float may take.
fn max_height() -> usize {
    let (_, lines) = screen();
    lines.saturating_sub(6).max(1)
}

/// Makes `win` as tall as its text takes on screen (wrapped lines
/// counted, `nvim_win_text_height`), within the screen.
fn fit_height(win: &mut Window, r: &Rendered) {
    let Ok(h) = win.text_height(&WinTextHeightOpts::default()) else {
        return;
    };
    let height = (h.all as usize).clamp(1, max_height());
    if win.get_height().is_ok_and(|now| now as usize != height) {
        let _ = win.set_config(&config(r, height));
    }
}

/// The window of `r`, `height` rows tall (within the screen): centered over
/// the editor, `r.width` wide, titled and footed.
pub(super) fn config(r: &Rendered, height: usize) -> WindowConfig {
    let (columns, total) = screen();
    let width = r.width as u32;
    let height = height.clamp(1, max_height()) as u32;
    WindowConfig::builder()
        .relative(WindowRelativeTo::Editor)
        .row(((total as u32).saturating_sub(height) / 2).saturating_sub(1) as f64)
        .col(((columns as u32).saturating_sub(width + 2) / 2) as f64)
        .width(width)
        .height(height)
        .style(WindowStyle::Minimal)
        .border(WindowBorder::Rounded)
        .title(WindowTitle::SimpleString(r.title.clone().into()))
        .footer(WindowTitle::SimpleString(r.footer.clone().into()))
        .build()
}

#[cfg(test)]
mod tests {
    use super::same_line;

    #[test]
    fn the_cursor_keeps_its_diff_line_when_the_header_changes() {
        // Header of 3 lines grows to 4 (a "hunks kept" line): row 17 of the
        // body stays on the same diff line, one row lower.
        assert_eq!(same_line(17, 3, 4), 18);
        assert_eq!(same_line(18, 4, 3), 17);
        // Help adds 10 lines above the diff.
        assert_eq!(same_line(5, 3, 13), 15);
        // A cursor in the header stays in the header.
        assert_eq!(same_line(2, 3, 4), 2);
        assert_eq!(same_line(3, 4, 2), 2);
    }
}
