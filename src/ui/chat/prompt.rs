//! The prompt area (`:help lathe-prompt`): the buffer `lathe://prompt`,
//! docked under the transcript, where the user writes a request of any
//! number of lines. It is a buffer of its own, so streamed output never
//! moves, clobbers or joins the undo history of what is being typed, and
//! the transcript stays read-only.
//!
//! `<CR>` (Normal mode) or `<C-s>` (Normal and Insert) sends it through
//! `require("lathe").ask(text)` (the path of `:Lathe {prompt}`, so the
//! context expansion of `@file`, `#buffer`… applies); `<Up>` on the first
//! line and `<Down>` on the last go through the requests sent before.

use std::cell::RefCell;

use nvim_oxi::api::{self, types::Mode, Buffer};

use super::buf::{map, start_treesitter};
use super::buf_opts;
use crate::host::lua_handle::module_fn;

/// The prompt buffer's name.
pub const PROMPT_BUFFER_NAME: &str = "lathe://prompt";
/// The prompt window's winbar in Normal mode: what the keys do.
pub const PROMPT_WINBAR: &str = " prompt · <CR> send · <Up> history";
/// The prompt window's winbar in Insert mode.
pub const PROMPT_WINBAR_INSERT: &str = " prompt · <C-s> send · <Up> history";
/// The prompt buffer's `'omnifunc'` (completion of `@file`, `#buffer`…).
pub const PROMPT_OMNIFUNC: &str = "v:lua.require'lathe.complete'.omnifunc";

#[derive(Default)]
struct History {
    /// Requests sent from the prompt area, oldest first.
    entries: Vec<String>,
    /// The entry shown, while browsing.
    index: Option<usize>,
    /// What was typed before browsing began.
    draft: String,
}

thread_local! {
    static PROMPT: RefCell<Option<Buffer>> = const { RefCell::new(None) };
    static HISTORY: RefCell<History> = RefCell::new(History::default());
}

/// The prompt buffer, created on first use: `nofile`, unlisted,
/// `filetype=markdown`, with its keys. Main thread. Errors: the API's.
pub fn buffer() -> Result<Buffer, String> {
    if let Some(b) = PROMPT.with(|p| p.borrow().clone()).filter(|b| b.is_valid()) {
        return Ok(b);
    }
    let e = |e: api::Error| e.to_string();
    let mut buf = api::create_buf(false, true).map_err(e)?;
    buf.set_name(PROMPT_BUFFER_NAME).map_err(e)?;
    let o = buf_opts(&buf);
    api::set_option_value("buftype", "nofile", &o).map_err(e)?;
    api::set_option_value("bufhidden", "hide", &o).map_err(e)?;
    api::set_option_value("swapfile", false, &o).map_err(e)?;
    api::set_option_value("buflisted", false, &o).map_err(e)?;
    api::set_option_value("filetype", "markdown", &o).map_err(e)?;
    api::set_option_value("omnifunc", PROMPT_OMNIFUNC, &o).map_err(e)?;
    start_treesitter(&buf);
    // The completion menu opens as `@`, `#` or `/` is typed.
    let _ = module_fn("lathe.complete", "attach").and_then(|f| f.call::<()>(buf.handle()));
    let _ = module_fn("lathe.chat", "prompt_winbar")
        .and_then(|f| f.call::<()>((buf.handle(), PROMPT_WINBAR_INSERT, PROMPT_WINBAR)));
    let ni = [Mode::Normal, Mode::Insert];
    map(
        &mut buf,
        &[Mode::Normal],
        "<CR>",
        "lathe: send the prompt",
        send,
    )?;
    map(&mut buf, &ni, "<C-s>", "lathe: send the prompt", send)?;
    map(
        &mut buf,
        &ni,
        "<Up>",
        "lathe: line up, or the previous request",
        up,
    )?;
    map(
        &mut buf,
        &ni,
        "<Down>",
        "lathe: line down, or the next request",
        down,
    )?;
    map(
        &mut buf,
        &ni,
        "<C-c>",
        "lathe: stop the running request",
        super::interrupt,
    )?;
    map(
        &mut buf,
        &[Mode::Normal],
        "q",
        "lathe: close the chat",
        || {
            let _ = super::close();
        },
    )?;
    PROMPT.with(|p| p.replace(Some(buf.clone())));
    Ok(buf)
}

/// The text of the prompt area (lines joined with `\n`).
pub fn text() -> String {
    let Ok(buf) = buffer() else {
        return String::new();
    };
    let n = buf.line_count().unwrap_or(0);
    buf.get_lines(0..n, false)
        .map(|ls| {
            ls.map(|l| l.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// Replaces the prompt area's text and puts the cursor of its windows at
/// the end.
fn set_text(text: &str) {
    let Ok(mut buf) = buffer() else { return };
    let n = buf.line_count().unwrap_or(0);
    let lines: Vec<&str> = text.split('\n').collect();
    let _ = buf.set_lines(0..n, false, lines.iter().copied());
    let last = lines.last().map_or(0, |l| l.len());
    for mut w in super::buf::windows_of(&buf) {
        let _ = w.set_cursor(lines.len(), last);
    }
}

/// Puts `text` (queued messages the model never got) back into the prompt
/// area, before what is typed there now, so nothing is lost. Main thread.
pub fn give_back(text: &str) {
    let now = self::text();
    if now.trim().is_empty() {
        set_text(text);
    } else {
        set_text(&format!("{text}\n{now}"));
    }
}

/// Requests sent from the prompt area, oldest first (for tests).
pub fn history() -> Vec<String> {
    HISTORY.with(|h| h.borrow().entries.clone())
}

/// Sends the prompt area's text (`<CR>`, `<C-s>`): blank text does
/// nothing; when `ask` refuses (a turn is running) the text stays and the
/// error is shown; else the text goes into the history and the area is
/// emptied. Main thread.
pub fn send() {
    let text = text();
    if text.trim().is_empty() {
        return;
    }
    let res: Result<(bool, Option<String>), _> =
        module_fn("lathe.chat", "send").and_then(|f| f.call(text.clone()));
    match res {
        Ok((true, _)) => {
            HISTORY.with(|h| {
                let mut h = h.borrow_mut();
                if h.entries.last() != Some(&text) {
                    h.entries.push(text);
                }
                h.index = None;
                h.draft.clear();
            });
            set_text("");
        }
        Ok((false, err)) => {
            crate::host::guard::notify_error(&err.unwrap_or_default());
        }
        Err(e) => crate::host::guard::notify_error(&format!("lathe: {e}")),
    }
}

/// `<Up>`: a line up, or on the first line the previous request.
fn up() {
    let mut w = api::get_current_win();
    let Ok((row, col)) = w.get_cursor() else {
        return;
    };
    if row > 1 {
        let _ = w.set_cursor(row - 1, col);
        return;
    }
    let shown = HISTORY.with(|h| {
        let mut h = h.borrow_mut();
        let i = match h.index {
            _ if h.entries.is_empty() => return None,
            None => {
                h.draft = text();
                h.entries.len() - 1
            }
            Some(i) => i.saturating_sub(1),
        };
        h.index = Some(i);
        h.entries.get(i).cloned()
    });
    if let Some(t) = shown {
        set_text(&t);
    }
}

/// `<Down>`: a line down, or on the last line the next request (after the
/// newest, what was typed before browsing).
fn down() {
    let mut w = api::get_current_win();
    let Ok((row, col)) = w.get_cursor() else {
        return;
    };
    let n = buffer().ok().and_then(|b| b.line_count().ok()).unwrap_or(1);
    if row < n {
        let _ = w.set_cursor(row + 1, col);
        return;
    }
    let shown = HISTORY.with(|h| {
        let mut h = h.borrow_mut();
        let i = h.index?;
        if i + 1 < h.entries.len() {
            h.index = Some(i + 1);
            h.entries.get(i + 1).cloned()
        } else {
            h.index = None;
            Some(std::mem::take(&mut h.draft))
        }
    });
    if let Some(t) = shown {
        set_text(&t);
    }
}
