//! Drawing the float of one ask: the window (centered, rounded border, its
//! own minimal window options), its buffer from `view::render`, highlights
//! for the header, the stale banner and left-out hunks, and its keys.

use std::time::Instant;

use nvim_oxi::api::{
    self,
    opts::{CreateAutocmdOpts, ExecAutocmdsOpts, OptionOpts, SetExtmarkOpts, SetKeymapOpts},
    types::{Mode, WindowBorder, WindowConfig, WindowRelativeTo, WindowStyle, WindowTitle},
    Buffer,
};

use super::super::guard::{guarded, notify_error};
use super::view::{self, Rendered};
use super::{on_key, Float, ASKS, ASK_EVENT};

/// Extmark namespace of the float's highlights.
const NAMESPACE: &str = "lathe_float";

/// The keys the float maps, with the answer key each stands for.
const KEYS: &[(&str, char)] = &[
    ("y", 'y'),
    ("a", 'a'),
    ("A", 'A'),
    ("n", 'n'),
    ("q", 'n'),
    ("<Esc>", 'n'),
    ("N", 'N'),
    ("r", 'r'),
    ("d", 'd'),
    ("<Space>", ' '),
    ("?", '?'),
];

/// The render of ask `id` with its position in the queue, if it is queued.
fn render_of(id: u64) -> Option<Rendered> {
    ASKS.with(|a| {
        let a = a.borrow();
        let pos = a.queue.iter().position(|q| q.id == id)?;
        let q = &a.queue[pos];
        Some(view::render(
            &q.tool,
            &q.preview,
            &q.view,
            (pos + 1, a.queue.len()),
        ))
    })
}

/// Opens the float of ask `id` in the current tab and focuses it. Errors:
/// the API's message.
pub(super) fn open(id: u64) -> Result<(), String> {
    let r = render_of(id).ok_or("the ask is no longer pending")?;
    let err = |e: api::Error| e.to_string();
    let mut buf = api::create_buf(false, true).map_err(err)?;
    let bopts = OptionOpts::builder().buffer(buf.clone()).build();
    api::set_option_value("bufhidden", "wipe", &bopts).map_err(err)?;
    api::set_option_value("swapfile", false, &bopts).map_err(err)?;
    fill(&mut buf, &r)?;
    let prev = api::get_current_win();
    let mut win = api::open_win(&buf, true, &config(&r)).map_err(err)?;
    let wopts = OptionOpts::builder().win(win.clone()).build();
    // style=minimal turns off number, list, colorcolumn, signcolumn, spell…
    // of the user's window; the cursor line shows the hunk <Space> toggles.
    let _ = api::set_option_value("cursorline", true, &wopts);
    let _ = api::set_option_value("wrap", true, &wopts);
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
    ASKS.with(|a| {
        a.borrow_mut().float = Some(Float {
            ask_id: id,
            win,
            buf,
            prev,
            opened: Instant::now(),
            hunk_of_line: r.hunk_of_line.clone(),
        })
    });
    fire_ask_event();
    Ok(())
}

/// Redraws the float of ask `id` in place (after a toggle, help, stale),
/// keeping the window, its cursor and its guard time.
pub(super) fn redraw(id: u64) {
    let float = ASKS.with(|a| {
        a.borrow()
            .float
            .as_ref()
            .filter(|f| f.ask_id == id && f.win.is_valid())
            .map(|f| (f.win.clone(), f.buf.clone()))
    });
    let (Some((mut win, mut buf)), Some(r)) = (float, render_of(id)) else {
        return;
    };
    let cursor = win.get_cursor().ok();
    if fill(&mut buf, &r).is_err() {
        return;
    }
    let _ = win.set_config(&config(&r));
    if let Some((row, col)) = cursor {
        let _ = win.set_cursor(row.min(r.lines.len().max(1)), col);
    }
    ASKS.with(|a| {
        if let Some(f) = a.borrow_mut().float.as_mut() {
            f.hunk_of_line = r.hunk_of_line;
        }
    });
}

/// Puts `r`'s lines and highlights into `buf` (left not modifiable).
fn fill(buf: &mut Buffer, r: &Rendered) -> Result<(), String> {
    let err = |e: api::Error| e.to_string();
    let bopts = OptionOpts::builder().buffer(buf.clone()).build();
    api::set_option_value("modifiable", true, &bopts).map_err(err)?;
    buf.set_lines(.., false, r.lines.iter().map(String::as_str))
        .map_err(err)?;
    api::set_option_value("modifiable", false, &bopts).map_err(err)?;
    api::set_option_value("modified", false, &bopts).map_err(err)?;
    let current: String = api::get_option_value("filetype", &bopts).unwrap_or_default();
    if current != r.filetype {
        api::set_option_value("filetype", r.filetype, &bopts).map_err(err)?;
    }
    let ns = api::create_namespace(NAMESPACE);
    let _ = buf.clear_namespace(ns, ..);
    for row in 0..r.header {
        let group = if r.stale_row == Some(row) {
            "ErrorMsg"
        } else {
            "Comment"
        };
        let opts = SetExtmarkOpts::builder().line_hl_group(group).build();
        let _ = buf.set_extmark(ns, row, 0, &opts);
    }
    // Left-out hunks: greyed out, their @@ line marked.
    let rejected = ASKS.with(|a| {
        let a = a.borrow();
        let id = a.float.as_ref().map(|f| f.ask_id);
        a.queue
            .iter()
            .find(|q| Some(q.id) == id)
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

/// The window of `r`: centered over the editor, as wide as its widest line
/// (within the screen), titled and footed.
fn config(r: &Rendered) -> WindowConfig {
    let columns: u32 = api::get_option_value("columns", &OptionOpts::default()).unwrap_or(80);
    let total: u32 = api::get_option_value("lines", &OptionOpts::default()).unwrap_or(24);
    let widest = r
        .lines
        .iter()
        .map(|l| l.chars().count())
        .chain([r.title.chars().count(), r.footer.chars().count()])
        .max()
        .unwrap_or(40) as u32;
    let width = (widest + 2).clamp(20, columns.saturating_sub(4).max(20));
    let height = (r.lines.len() as u32).clamp(1, total.saturating_sub(6).max(1));
    WindowConfig::builder()
        .relative(WindowRelativeTo::Editor)
        .row(((total.saturating_sub(height)) / 2).saturating_sub(1) as f64)
        .col((columns.saturating_sub(width) / 2) as f64)
        .width(width)
        .height(height)
        .style(WindowStyle::Minimal)
        .border(WindowBorder::Rounded)
        .title(WindowTitle::SimpleString(r.title.clone().into()))
        .footer(WindowTitle::SimpleString(r.footer.clone().into()))
        .build()
}

fn fire_ask_event() {
    let opts = ExecAutocmdsOpts::builder()
        .patterns(ASK_EVENT)
        .modeline(false)
        .build();
    if let Err(e) = api::exec_autocmds(["User"], &opts) {
        notify_error(&format!("lathe: User {ASK_EVENT} autocmd failed: {e}"));
    }
}
