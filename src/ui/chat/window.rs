//! The chat's windows: the transcript in a vertical split on the right, the
//! prompt area docked under it; their window-local options, winbar, folds,
//! keys and the `Lathe*` highlight groups (`:help lathe-chat`).

use nvim_oxi::api::{
    self,
    opts::{CreateAugroupOpts, CreateAutocmdOpts, OptionOpts},
    types::Mode,
    Buffer, Window,
};

use crate::host::guard::guarded;
use crate::host::lua_handle::module_fn;

use super::buf::{map, windows_of};
use super::{buf_opts, lines::HIGHLIGHTS, prompt, CHAT_BUFFER_NAME, VIEW};

/// The chat's Lua glue (`lua/lathe/chat.lua`).
const MODULE: &str = "lathe.chat";

/// Height of the prompt area's window, in lines.
pub const PROMPT_HEIGHT: u32 = 5;

/// Defines the `Lathe*` highlight groups as default links (a colour scheme
/// or the user's own `:highlight` wins), now and after every
/// `:colorscheme` (which clears them). Main thread.
pub fn define_highlights() {
    let pairs: Vec<(String, String)> = HIGHLIGHTS
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let _ = module_fn(MODULE, "define_highlights").and_then(|f| {
        f.call::<()>(
            pairs
                .into_iter()
                .map(|(a, b)| vec![a, b])
                .collect::<Vec<_>>(),
        )
    });
}

/// Creates the transcript buffer: `nofile`, unlisted, not modifiable,
/// `filetype=markdown` highlighted by lathe (`chat::highlight`: no
/// tree-sitter parser of the whole buffer, fenced code in its language),
/// and its
/// keys: `<C-c>` stops, `q` closes the chat, `<CR>` jumps to a tool
/// line's file, `i`/`a`/`o` (and `I`/`A`/`O`) go to the prompt area.
pub(super) fn create_chat_buffer() -> Result<Buffer, String> {
    let e = |e: api::Error| e.to_string();
    define_highlights();
    let mut buf = api::create_buf(false, true).map_err(e)?;
    buf.set_name(CHAT_BUFFER_NAME).map_err(e)?;
    let o = buf_opts(&buf);
    api::set_option_value("buftype", "nofile", &o).map_err(e)?;
    api::set_option_value("bufhidden", "hide", &o).map_err(e)?;
    api::set_option_value("swapfile", false, &o).map_err(e)?;
    api::set_option_value("buflisted", false, &o).map_err(e)?;
    api::set_option_value("undolevels", -1, &o).map_err(e)?;
    api::set_option_value("filetype", "markdown", &o).map_err(e)?;
    api::set_option_value("modifiable", false, &o).map_err(e)?;
    // lathe highlights the chat itself (`chat::highlight`): no regex
    // syntax over the whole day's chat either.
    api::set_option_value("syntax", "", &o).map_err(e)?;
    super::highlight::init();
    close_prompt_with_chat(&buf);
    follow_resizes();
    let n = [Mode::Normal];
    map(
        &mut buf,
        &[Mode::Normal, Mode::Insert],
        "<C-c>",
        "lathe: stop the running request",
        super::interrupt,
    )?;
    map(&mut buf, &n, "q", "lathe: close the chat", close_quietly)?;
    map(
        &mut buf,
        &n,
        "<CR>",
        "lathe: open the file of the tool call under the cursor",
        super::jump::jump_quietly,
    )?;
    for key in ["i", "a", "o", "I", "A", "O"] {
        map(&mut buf, &n, key, "lathe: type in the prompt area", || {
            let _ = focus_prompt(true);
        })?;
    }
    Ok(buf)
}

/// Builds the winbars anew for their windows' new widths when windows or
/// Neovim's screen are resized (one autocmd, replaced on each new buffer).
fn follow_resizes() {
    let Ok(group) = api::create_augroup(
        RESIZE_AUGROUP,
        &CreateAugroupOpts::builder().clear(true).build(),
    ) else {
        return;
    };
    let opts = CreateAutocmdOpts::builder()
        .group(group)
        .desc("lathe: fit the chat's winbar to its window's width")
        .callback(|_args: api::types::AutocmdCallbackArgs| {
            let _ = guarded("winbar after a resize", refresh_winbar);
            false
        })
        .build();
    let _ = api::create_autocmd(["WinResized", "VimResized"], &opts);
}

/// The augroup of [`follow_resizes`]' autocmd.
const RESIZE_AUGROUP: &str = "lathe_winbar_width";

/// When the last transcript window of a tab closes (`:q`, `<C-w>c`), the
/// prompt area docked under it closes too, so no prompt without its chat
/// is left behind.
fn close_prompt_with_chat(buf: &Buffer) {
    let _ = module_fn(MODULE, "close_prompt_with_chat").and_then(|f| f.call::<()>(buf.handle()));
}

/// The windows of the current tab showing the transcript or the prompt.
fn tab_windows(buf: &Buffer) -> Vec<Window> {
    api::get_current_tabpage()
        .list_wins()
        .map(|ws| {
            ws.filter(|w| w.get_buf().is_ok_and(|b| &b == buf))
                .collect()
        })
        .unwrap_or_default()
}

/// Every window (any tab) showing the transcript.
pub(super) fn chat_windows(buf: &Buffer) -> Vec<Window> {
    windows_of(buf)
}

/// Folds lines `first..=last` (1-based) of the transcript in window `w`,
/// closed (`:help fold-create-marker` … manual folds: `:fold`).
pub(super) fn fold(w: &Window, first: usize, last: usize) {
    // In the window (`nvim_win_call`), without a Lua chunk compiled per fold.
    let _ = w.call(move |()| {
        let _ = crate::host::guard::guarded("folding a result", || {
            let _ = api::command(&format!("{first},{last}fold"));
        });
    });
}

/// Sets the transcript window's own options: no line numbers, list chars,
/// colour column or spell from the window it was split from; wrapping at
/// words; manual folds, closed; signs for tool states; the winbar.
pub(super) fn set_chat_window_options(win: &Window) {
    let o = OptionOpts::builder().win(win.clone()).build();
    for (name, value) in [
        ("number", false),
        ("relativenumber", false),
        ("list", false),
        ("spell", false),
        ("cursorline", false),
        ("wrap", true),
        ("linebreak", true),
        ("winfixwidth", true),
        ("foldenable", true),
    ] {
        let _ = api::set_option_value(name, value, &o);
    }
    for (name, value) in [
        ("colorcolumn", ""),
        ("statuscolumn", ""),
        ("signcolumn", "yes:1"),
        ("foldcolumn", "0"),
        ("foldmethod", "manual"),
        ("foldtext", "v:lua.require'lathe.chat'.foldtext()"),
        ("fillchars", "fold: ,eob: "),
    ] {
        let _ = api::set_option_value(name, value, &o);
    }
    let _ = api::set_option_value("foldlevel", 0, &o);
    let _ = api::set_option_value("conceallevel", 0, &o);
    let _ = api::set_option_value("winbar", super::winbar(width_of(win)).as_str(), &o);
}

/// The prompt window's own options (as the transcript's, no signs).
fn set_prompt_window_options(win: &Window) {
    let o = OptionOpts::builder().win(win.clone()).build();
    for (name, value) in [
        ("number", false),
        ("relativenumber", false),
        ("list", false),
        ("spell", false),
        ("cursorline", false),
        ("wrap", true),
        ("linebreak", true),
        ("winfixheight", true),
        ("foldenable", false),
    ] {
        let _ = api::set_option_value(name, value, &o);
    }
    for (name, value) in [
        ("colorcolumn", ""),
        ("statuscolumn", ""),
        ("signcolumn", "no"),
        ("foldcolumn", "0"),
        ("winbar", prompt::PROMPT_WINBAR),
    ] {
        let _ = api::set_option_value(name, value, &o);
    }
}

/// Opens the chat (a vertical split on the right with the prompt area
/// under it) unless the transcript shows in this tab already; the cursor
/// stays where it was. Main thread. Errors: the API's message.
pub fn open_window() -> Result<(), String> {
    let buf = super::ensure_buffer()?;
    let pbuf = prompt::buffer()?;
    if !tab_windows(&buf).is_empty() {
        if tab_windows(&pbuf).is_empty() {
            let prev = api::get_current_win();
            if let Some(chat) = tab_windows(&buf).into_iter().next() {
                open_prompt_under(&chat, &pbuf)?;
            }
            back_to(&prev);
        }
        return Ok(());
    }
    let prev = api::get_current_win();
    // A prompt window left alone (its transcript was closed with :q) goes.
    for w in tab_windows(&pbuf) {
        let _ = w.close(true);
    }
    api::command("botright vsplit").map_err(|e| e.to_string())?;
    let mut win = api::get_current_win();
    win.set_buf(&buf).map_err(|e| e.to_string())?;
    let columns: u32 = api::get_option_value("columns", &OptionOpts::default()).unwrap_or(120);
    let _ = win.set_width((columns / 3).max(40));
    set_chat_window_options(&win);
    let ranges = VIEW.with(|v| v.borrow_mut().block_ranges(&buf));
    for (a, b) in ranges {
        fold(&win, a, b);
    }
    // Show the end of the conversation.
    let n = buf.line_count().unwrap_or(1).max(1);
    let _ = win.set_cursor(n, 0);
    open_prompt_under(&win, &pbuf)?;
    back_to(&prev);
    Ok(())
}

fn back_to(prev: &Window) {
    if prev.is_valid() {
        let _ = api::set_current_win(prev);
    }
}

fn open_prompt_under(chat: &Window, pbuf: &Buffer) -> Result<(), String> {
    api::set_current_win(chat).map_err(|e| e.to_string())?;
    api::command(&format!("belowright {PROMPT_HEIGHT}split")).map_err(|e| e.to_string())?;
    let mut pwin = api::get_current_win();
    pwin.set_buf(pbuf).map_err(|e| e.to_string())?;
    let _ = pwin.set_height(PROMPT_HEIGHT);
    set_prompt_window_options(&pwin);
    Ok(())
}

/// Opens the chat if needed and puts the cursor in the prompt area, in
/// Insert mode at the end of its text when `insert` (`:Lathe`, `i` in
/// the transcript). Main thread. Errors: as [`open_window`].
pub fn focus_prompt(insert: bool) -> Result<(), String> {
    open_window()?;
    let pbuf = prompt::buffer()?;
    let Some(mut w) = tab_windows(&pbuf).into_iter().next() else {
        return Err("the prompt area did not open".into());
    };
    api::set_current_win(&w).map_err(|e| e.to_string())?;
    let n = pbuf.line_count().unwrap_or(1).max(1);
    let last = super::buf::line_at(&pbuf, n - 1);
    let _ = w.set_cursor(n, last.len());
    if insert {
        let _ = api::command("startinsert!");
    }
    Ok(())
}

/// Closes the chat's windows in this tab (transcript and prompt area); the
/// conversation and what you typed stay. When they are the only windows,
/// the last one shows an empty buffer instead. Main thread.
pub fn close() -> Result<(), String> {
    let buf = super::ensure_buffer()?;
    let pbuf = prompt::buffer()?;
    let mut wins = tab_windows(&pbuf);
    wins.extend(tab_windows(&buf));
    for w in wins {
        if w.clone().close(false).is_err() && w.is_valid() {
            // E444: the last window of the tab. Keep it, with a new buffer.
            let _ = api::set_current_win(&w);
            let _ = api::command("enew");
        }
    }
    Ok(())
}

fn close_quietly() {
    if let Err(e) = close() {
        crate::host::guard::notify_error(&format!("lathe: {e}"));
    }
}

/// Closes the chat when it shows in this tab, else opens it and puts the
/// cursor in the prompt area, in Insert mode as every way into it.
/// Main thread. Errors: the API's.
pub fn toggle() -> Result<(), String> {
    let buf = super::ensure_buffer()?;
    if tab_windows(&buf).is_empty() {
        focus_prompt(true)
    } else {
        close()
    }
}

/// Transcript windows whose cursor is on the last line (before a render).
pub(super) fn following(buf: &Buffer) -> Vec<Window> {
    let n = buf.line_count().unwrap_or(1).max(1);
    chat_windows(buf)
        .into_iter()
        .filter(|w| w.get_cursor().is_ok_and(|(row, _)| row >= n))
        .collect()
}

/// Moves the cursor of `wins` to the end of the last line (column `col`,
/// bytes), so they scroll with it and show the newest text even when the
/// last line wraps over more rows than the window has, then makes sure
/// each shows the last line ([`show_end`]). Moving a cursor makes Neovim
/// measure the line on screen; streamed lines are at most
/// `lines::HARD_LINE_BYTES` long, so that costs the same however long the
/// answer's line.
pub(super) fn follow(buf: &Buffer, wins: &[Window], col: usize) {
    let n = buf.line_count().unwrap_or(1).max(1);
    // Normal mode puts the cursor on the last character, not after it.
    let col = col.saturating_sub(1);
    for w in wins {
        if !w.get_cursor().is_ok_and(|c| c == (n, col)) {
            let mut w = w.clone();
            let _ = w.set_cursor(n, col);
        }
        show_end(w, n);
    }
}

thread_local! {
    /// `require("lathe.chat").show_end` (`lua/lathe/chat.lua`), looked up
    /// on first use (main thread): it runs at every frame.
    static SHOW_END_FN: std::cell::OnceCell<Option<mlua::Function>> =
        const { std::cell::OnceCell::new() };
}

/// Makes transcript window `w`, whose cursor is on the last line `n`
/// (1-based), show that line. Neovim scrolls a window that is not the
/// current one only inside `nvim_win_set_cursor`, and a redraw never fixes
/// its topline; but `nvim_buf_set_text` carries a cursor that is past the
/// insert point (on an empty last line) along with appended text without
/// scrolling, so a window could stay at its old view (even its first line)
/// with the cursor on the last line. Costs two line lookups when the view
/// is right; a scroll is counted by [`super::view_fixes`].
fn show_end(w: &Window, n: usize) {
    let show_end =
        SHOW_END_FN.with(|f| f.get_or_init(|| module_fn(MODULE, "show_end").ok()).clone());
    let scrolled = show_end
        .and_then(|f| f.call::<bool>((w.handle(), n)).ok())
        .unwrap_or(false);
    if scrolled {
        super::view_fixed();
    }
}

/// The width of `w` in columns (0 when it is gone).
fn width_of(w: &Window) -> usize {
    w.get_width().map_or(0, |n| n as usize)
}

/// Sets the winbar of every transcript window (`:help 'winbar'`), each
/// built for its own width, where it changed. Setting 'winbar' makes Neovim redraw every window's status
/// line and winbar, and every frame calls this while the winbar stays the
/// same through a streamed answer; counted by [`super::winbar_sets`].
pub fn refresh_winbar() {
    let Some(buf) = super::chat_buffer() else {
        return;
    };
    for w in chat_windows(&buf) {
        let bar = super::winbar(width_of(&w));
        let o = OptionOpts::builder().win(w.clone()).build();
        if api::get_option_value::<String>("winbar", &o).is_ok_and(|now| now == bar) {
            continue;
        }
        let _ = api::set_option_value("winbar", bar.as_str(), &o);
        super::winbar_set();
    }
}
