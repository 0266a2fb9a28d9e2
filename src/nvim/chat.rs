//! The chat window: a vertical split on the `lathe://chat` buffer
//! (`buftype=nofile`, `filetype=markdown`, unlisted) and the [`ChatSink`]
//! that renders [`AgentEvent`]s into it (`:help lathe-chat`).
//!
//! Events are queued from tokio tasks and rendered on the main thread at
//! most about every [`FRAME`] (16 ms), so streamed text never floods the
//! editor. Each tool call gets one line, `- Name(detail): status`, updated in
//! place through an extmark when the call finishes.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nvim_oxi::api::{
    self,
    opts::{OptionOpts, SetExtmarkOpts, SetKeymapOpts},
    types::Mode,
    Buffer, Window,
};

use super::bridge::MainThread;
use super::guard::guarded;
use crate::events::{AgentEvent, EventSink, ToolStatus, TurnOutcome};
use crate::protocol::Usage;

/// The chat buffer's name.
pub const CHAT_BUFFER_NAME: &str = "lathe://chat";
/// Shortest time between two renders of queued events.
pub const FRAME: Duration = Duration::from_millis(16);
/// Heading line of the user's prompt.
pub const YOU_HEADING: &str = "## You";
/// Heading line of the model's answer.
pub const LATHE_HEADING: &str = "## lathe";
/// Virtual text shown at the end of the chat while a turn runs.
pub const WORKING_TEXT: &str = "lathe is working… (<C-c> stops)";
/// Extmark namespace of the chat window.
pub const NAMESPACE: &str = "lathe_chat";

thread_local! {
    /// What `<C-c>` in the chat does (main thread only).
    static INTERRUPT: Cell<fn()> = const { Cell::new(|| {}) };
}

/// Sets what `<C-c>` in the chat buffer does: `nvim::install` passes the
/// function that stops the running turn, so the chat needs nothing from the
/// session state (`state` builds the chat sink; the chat never calls back
/// into `state`). Main thread only.
pub fn on_interrupt(stop: fn()) {
    INTERRUPT.with(|c| c.set(stop));
}

/// The chat line of a tool call: `- Name(detail): status` plus ` — summary`.
pub fn tool_line(name: &str, detail: &str, status: &str, summary: &str) -> String {
    let mut line = format!("- {name}({detail}): {status}");
    if !summary.is_empty() {
        line.push_str(" — ");
        line.push_str(summary.lines().next().unwrap_or(""));
    }
    line
}

/// The chat line that ends a turn.
pub fn turn_end_line(outcome: &TurnOutcome) -> String {
    match outcome {
        TurnOutcome::Done => "*(done)*".to_string(),
        TurnOutcome::Stopped => "*(stopped)*".to_string(),
        TurnOutcome::Error(m) => format!("*(error: {})*", m.lines().next().unwrap_or("")),
    }
}

/// The token line after a turn's end: this turn's and the session's counts,
/// e.g. `tokens: 12.3k in (8.1k from cache), 1.2k out · session 40.1k in,
/// 3.3k out`. Empty when the API reported nothing.
pub fn usage_line(turn: &Usage, session: &Usage) -> String {
    let part = |u: &Usage| {
        let cached = u.cache_read_input_tokens.unwrap_or(0);
        let input =
            u.input_tokens.unwrap_or(0) + cached + u.cache_creation_input_tokens.unwrap_or(0);
        let mut s = format!("{} in", short(input));
        if cached > 0 {
            s.push_str(&format!(" ({} from cache)", short(cached)));
        }
        s.push_str(&format!(", {} out", short(u.output_tokens.unwrap_or(0))));
        s
    };
    if turn.input_tokens.is_none() && turn.output_tokens.is_none() {
        return String::new();
    }
    format!("tokens: {} · session {}", part(turn), part(session))
}

/// `n` for people: `950`, `12.3k`, `1.2M`.
fn short(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{:.1}k", n as f64 / 1_000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

/// The chat lines of a notice; errors are marked `**error:**`.
pub fn notice_line(text: &str, is_error: bool) -> String {
    let tag = if is_error { "**error:**" } else { "**note:**" };
    format!("> {tag} {}", text.replace('\n', " "))
}

/// The last non-empty line of `output`, cut to 80 chars, for a running
/// tool's line.
pub fn progress_line(output: &str) -> String {
    let last = output
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let mut cut: String = last.chars().take(80).collect();
    if last.chars().count() > 80 {
        cut.push('…');
    }
    cut
}

/// The chat line replacing a withdrawn answer.
pub fn withdrawn_line(reason: &str) -> String {
    format!("> ~~answer withdrawn~~ ({})", reason.replace('\n', " "))
}

/// Queues agent events and renders them into the chat buffer, coalesced.
pub struct ChatSink {
    main: MainThread,
    queue: Arc<Mutex<Vec<AgentEvent>>>,
    scheduled: Arc<AtomicBool>,
    last_render: Arc<Mutex<Instant>>,
}

impl ChatSink {
    /// A sink rendering through `main`.
    pub fn new(main: MainThread) -> Self {
        Self {
            main,
            queue: Arc::default(),
            scheduled: Arc::new(AtomicBool::new(false)),
            last_render: Arc::new(Mutex::new(Instant::now() - FRAME)),
        }
    }

    fn render_job(&self) -> impl FnOnce() + Send + 'static {
        let queue = self.queue.clone();
        let scheduled = self.scheduled.clone();
        let last = self.last_render.clone();
        move || {
            scheduled.store(false, Ordering::Release);
            let events = std::mem::take(&mut *queue.lock().unwrap_or_else(|p| p.into_inner()));
            *last.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
            render(events);
        }
    }
}

/// Turns whose start any [`ChatSink`] was given (counted when emitted).
static TURNS_STARTED: AtomicU64 = AtomicU64::new(0);
/// Turns whose end [`render`] has drawn (counted on the main thread).
static TURNS_RENDERED: AtomicU64 = AtomicU64::new(0);

/// `true` when the chat shows the end of every turn that started, i.e. no
/// `TurnEnded` is still queued for rendering. The session reports a turn
/// idle a moment before its end reaches the chat; `lathe.wait()` waits for
/// both, so scripts can read the chat right after it returns.
pub fn settled() -> bool {
    TURNS_RENDERED.load(Ordering::Acquire) >= TURNS_STARTED.load(Ordering::Acquire)
}

impl EventSink for ChatSink {
    fn emit(&self, event: AgentEvent) {
        if matches!(event, AgentEvent::TurnStarted { .. }) {
            TURNS_STARTED.fetch_add(1, Ordering::AcqRel);
        }
        self.queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(event);
        if self.scheduled.swap(true, Ordering::AcqRel) {
            return; // a render is already on its way and will take this event
        }
        let since = self
            .last_render
            .lock()
            .map(|t| t.elapsed())
            .unwrap_or(FRAME);
        let job = self.render_job();
        if since >= FRAME {
            let _ = self.main.post(job);
            return;
        }
        let main = self.main.clone();
        match super::runtime::handle() {
            Ok(rt) => {
                rt.spawn(async move {
                    tokio::time::sleep(FRAME - since).await;
                    let _ = main.post(job);
                });
            }
            Err(_) => {
                let _ = main.post(job);
            }
        }
    }
}

/// Renders `events` into the chat buffer (creating it when needed). Main thread.
pub fn render(events: Vec<AgentEvent>) {
    if events.is_empty() {
        return;
    }
    let ended = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::TurnEnded { .. }))
        .count() as u64;
    let _ = guarded("chat update", || {
        VIEW.with(|v| {
            let mut view = v.borrow_mut();
            let Ok(buf) = view.buffer() else { return };
            let _ = api::set_option_value("modifiable", true, &buf_opts(&buf));
            for ev in events {
                view.apply(&buf, ev);
            }
            let _ = api::set_option_value("modifiable", false, &buf_opts(&buf));
            view.follow(&buf);
        })
    });
    // Counted even when drawing failed, so `lathe.wait()` never hangs on it.
    TURNS_RENDERED.fetch_add(ended, Ordering::AcqRel);
}

/// Opens the chat window (a vertical split on the right) unless one shows
/// the chat buffer in this tab already; the cursor stays where it was.
/// Main thread. Errors: the API's message.
pub fn open_window() -> Result<(), String> {
    VIEW.with(|v| {
        let buf = v.borrow_mut().buffer()?;
        let tab = api::get_current_tabpage();
        let shown = tab
            .list_wins()
            .map_err(|e| e.to_string())?
            .any(|w| w.get_buf().is_ok_and(|b| b == buf));
        if shown {
            return Ok(());
        }
        let prev = api::get_current_win();
        api::command("botright vsplit").map_err(|e| e.to_string())?;
        let mut win = api::get_current_win();
        win.set_buf(&buf).map_err(|e| e.to_string())?;
        let columns: u32 = api::get_option_value("columns", &OptionOpts::default()).unwrap_or(120);
        let _ = win.set_width((columns / 3).max(40));
        let wopts = OptionOpts::builder().win(win.clone()).build();
        let _ = api::set_option_value("wrap", true, &wopts);
        let _ = api::set_option_value("linebreak", true, &wopts);
        let _ = api::set_option_value("number", false, &wopts);
        let mode = v.borrow().mode.clone();
        let mode = if mode.is_empty() {
            "default".to_string()
        } else {
            mode
        };
        let _ = api::set_option_value("winbar", winbar(&mode).as_str(), &wopts);
        if prev.is_valid() {
            let _ = api::set_current_win(&prev);
        }
        Ok(())
    })
}

/// Shows `text` ("waiting for you: Edit greeting.py (:Lathe review)") as a
/// highlighted line below the end of the chat while a permission ask
/// waits; `None` removes it. Main thread; does nothing before the chat
/// exists.
pub fn set_waiting(text: Option<&str>) {
    VIEW.with(|v| {
        let mut v = v.borrow_mut();
        v.waiting_text = text.map(str::to_string);
        if let Some(buf) = v.buf.clone().filter(|b| b.is_valid()) {
            v.place_waiting(&buf);
        }
    });
}

/// The status of a tool line while a permission ask about the call waits.
pub const WAITING_STATUS: &str = "waiting for you";

/// Shows the tool lines of the calls the permission asks `asks` (tool name,
/// float title) are about as [`WAITING_STATUS`] instead of "running"; an
/// empty list puts them back. Main thread.
pub fn set_tools_waiting(asks: &[(String, String)]) {
    VIEW.with(|v| {
        let mut v = v.borrow_mut();
        v.waiting_tools = asks.to_vec();
        if let Some(buf) = v.buf.clone().filter(|b| b.is_valid()) {
            v.mark_waiting_tools(&buf);
        }
    });
}

/// The ids of the running calls `asks` are about: per ask, the call of that
/// tool whose `Name detail` is the float's title, else the only running
/// call of that tool.
fn waiting_ids(
    tools: &HashMap<String, ToolMark>,
    asks: &[(String, String)],
) -> std::collections::HashSet<String> {
    let mut ids = std::collections::HashSet::new();
    for (tool, title) in asks {
        let of_tool: Vec<(&String, &ToolMark)> =
            tools.iter().filter(|(_, t)| &t.name == tool).collect();
        let titled = of_tool
            .iter()
            .find(|(_, t)| &format!("{} {}", t.name, t.detail) == title);
        match (titled, of_tool.as_slice()) {
            (Some((id, _)), _) | (None, [(id, _)]) => {
                ids.insert((*id).clone());
            }
            _ => {}
        }
    }
    ids
}

/// Sets the chat windows' winbar: `lathe · mode: {mode}` (`:help winbar`).
/// Main thread.
pub fn set_mode_winbar(mode: &str) {
    VIEW.with(|v| v.borrow_mut().mode = mode.to_string());
    let Some(buf) = chat_buffer() else { return };
    for w in api::list_wins().filter(|w: &Window| w.get_buf().is_ok_and(|b| b == buf)) {
        let wopts = OptionOpts::builder().win(w.clone()).build();
        let _ = api::set_option_value("winbar", winbar(mode).as_str(), &wopts);
    }
}

/// The chat's winbar for `mode`.
pub fn winbar(mode: &str) -> String {
    format!(" lathe · mode: {mode}")
}

/// The chat buffer if it exists (for tests): `None` before the first ask.
pub fn chat_buffer() -> Option<Buffer> {
    VIEW.with(|v| v.borrow().buf.clone().filter(|b| b.is_valid()))
}

/// `true` while the "working" indicator is shown (a turn is being rendered
/// as running).
pub fn working_indicator_shown() -> bool {
    VIEW.with(|v| v.borrow().working.is_some())
}

fn buf_opts(buf: &Buffer) -> OptionOpts {
    OptionOpts::builder().buffer(buf.clone()).build()
}

thread_local! {
    static VIEW: RefCell<ChatView> = RefCell::new(ChatView::default());
}

struct ToolMark {
    mark: u32,
    name: String,
    detail: String,
    /// Output seen so far that has not ended a line yet.
    partial: String,
    /// Its line says [`WAITING_STATUS`].
    waiting: bool,
}

#[derive(Default)]
struct ChatView {
    buf: Option<Buffer>,
    ns: Option<u32>,
    tools: HashMap<String, ToolMark>,
    working: Option<u32>,
    /// Extmark where the answer being streamed began (for withdrawal).
    answer_start: Option<u32>,
    /// The "waiting for you" line, while a permission ask waits.
    waiting_text: Option<String>,
    /// Its extmark.
    waiting: Option<u32>,
    /// The permission mode shown in the winbar.
    mode: String,
    /// The token line of the turn that is ending.
    usage: String,
    /// The permission asks waiting: (tool, float title).
    waiting_tools: Vec<(String, String)>,
}

impl ChatView {
    fn ns(&mut self) -> u32 {
        *self
            .ns
            .get_or_insert_with(|| api::create_namespace(NAMESPACE))
    }

    /// The chat buffer, created on first use.
    fn buffer(&mut self) -> Result<Buffer, String> {
        if let Some(b) = self.buf.as_ref().filter(|b| b.is_valid()) {
            return Ok(b.clone());
        }
        self.tools.clear();
        self.working = None;
        let e = |e: api::Error| e.to_string();
        let mut buf = api::create_buf(false, true).map_err(e)?;
        buf.set_name(CHAT_BUFFER_NAME).map_err(e)?;
        let o = buf_opts(&buf);
        api::set_option_value("buftype", "nofile", &o).map_err(e)?;
        api::set_option_value("bufhidden", "hide", &o).map_err(e)?;
        api::set_option_value("swapfile", false, &o).map_err(e)?;
        api::set_option_value("buflisted", false, &o).map_err(e)?;
        api::set_option_value("filetype", "markdown", &o).map_err(e)?;
        api::set_option_value("modifiable", false, &o).map_err(e)?;
        for mode in [Mode::Normal, Mode::Insert] {
            let opts = SetKeymapOpts::builder()
                .noremap(true)
                .silent(true)
                .desc("lathe: stop the running request")
                .callback(|()| {
                    let _ = guarded("stop", || INTERRUPT.with(Cell::get)());
                })
                .build();
            buf.set_keymap(mode, "<C-c>", "", &opts).map_err(e)?;
        }
        self.buf = Some(buf.clone());
        Ok(buf)
    }

    fn last_line(buf: &Buffer) -> (usize, String) {
        let n = buf.line_count().unwrap_or(1).max(1);
        let text = buf
            .get_lines(n - 1..n, false)
            .ok()
            .and_then(|mut l| l.next())
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        (n - 1, text)
    }

    /// Appends `text` at the very end of the buffer (it may hold newlines).
    fn append(buf: &mut Buffer, text: &str) {
        let (row, last) = Self::last_line(buf);
        let _ = buf.set_text(row..row, last.len(), last.len(), text.split('\n'));
    }

    /// Starts a fresh line unless the last line is empty; returns its row.
    fn fresh_line(buf: &mut Buffer) -> usize {
        let (row, last) = Self::last_line(buf);
        if last.is_empty() {
            row
        } else {
            Self::append(buf, "\n");
            row + 1
        }
    }

    fn is_blank(buf: &Buffer) -> bool {
        buf.line_count().unwrap_or(0) <= 1 && Self::last_line(buf).1.is_empty()
    }

    fn apply(&mut self, buf: &Buffer, ev: AgentEvent) {
        let mut buf = buf.clone();
        match ev {
            AgentEvent::TurnStarted { prompt } => {
                let mut block = String::new();
                if !Self::is_blank(&buf) {
                    Self::fresh_line(&mut buf);
                    block.push('\n');
                }
                block.push_str(YOU_HEADING);
                block.push_str("\n\n");
                block.push_str(prompt.trim_end());
                block.push_str("\n\n");
                block.push_str(LATHE_HEADING);
                block.push_str("\n\n");
                Self::append(&mut buf, &block);
                self.working = Some(0);
            }
            AgentEvent::AssistantStarted => {
                let (row, last) = Self::last_line(&buf);
                let ns = self.ns();
                // Left gravity: text streamed at the mark goes after it, so
                // the mark keeps pointing at where the answer began.
                let opts = SetExtmarkOpts::builder().right_gravity(false).build();
                self.answer_start = buf.set_extmark(ns, row, last.len(), &opts).ok();
            }
            AgentEvent::AssistantWithdrawn { reason } => {
                // The failed answer is not part of the conversation: remove
                // what it streamed and say so.
                if let Some(mark) = self.answer_start.take() {
                    let ns = self.ns();
                    if let Ok((row, col, _)) = buf.get_extmark_by_id(ns, mark, &Default::default())
                    {
                        let (end_row, end_text) = Self::last_line(&buf);
                        let _ = buf.set_text(row..end_row, col, end_text.len(), [""]);
                    }
                }
                self.tools.clear();
                Self::fresh_line(&mut buf);
                Self::append(&mut buf, &format!("{}\n", withdrawn_line(&reason)));
            }
            AgentEvent::TextDelta { text } => Self::append(&mut buf, &text),
            AgentEvent::ToolStarted { id, name, detail } => {
                let row = Self::fresh_line(&mut buf);
                Self::append(&mut buf, &tool_line(&name, &detail, "running", ""));
                let ns = self.ns();
                let mark = buf
                    .set_extmark(ns, row, 0, &SetExtmarkOpts::default())
                    .unwrap_or(0);
                Self::append(&mut buf, "\n");
                self.tools.insert(
                    id,
                    ToolMark {
                        mark,
                        name,
                        detail,
                        partial: String::new(),
                        waiting: false,
                    },
                );
            }
            AgentEvent::ToolProgress { id, text } => {
                // Show the latest output line on the tool's own line.
                let Some(t) = self.tools.get_mut(&id) else {
                    return;
                };
                t.partial.push_str(&text);
                // Only the tail matters; keep memory bounded.
                if t.partial.len() > 4096 {
                    let mut cut = t.partial.len() - 2048;
                    while !t.partial.is_char_boundary(cut) {
                        cut += 1;
                    }
                    t.partial.drain(..cut);
                }
                let latest = progress_line(&t.partial);
                let (mark, line) = (t.mark, tool_line(&t.name, &t.detail, "running", &latest));
                self.replace_mark_line(&mut buf, mark, &line);
            }
            AgentEvent::ToolFinished {
                id,
                name,
                status,
                summary,
            } => {
                let line = match self.tools.remove(&id) {
                    Some(t) => {
                        let line = tool_line(&t.name, &t.detail, status.as_str(), &summary);
                        if self.replace_mark_line(&mut buf, t.mark, &line) {
                            return;
                        }
                        line
                    }
                    None => tool_line(&name, "", status.as_str(), &summary),
                };
                Self::fresh_line(&mut buf);
                Self::append(&mut buf, &format!("{line}\n"));
            }
            AgentEvent::Notice { text, is_error } => {
                Self::fresh_line(&mut buf);
                Self::append(&mut buf, &format!("{}\n", notice_line(&text, is_error)));
            }
            AgentEvent::Usage { turn, session } => {
                self.usage = usage_line(&turn, &session);
            }
            AgentEvent::TurnEnded { outcome } => {
                let left: Vec<(String, ToolMark)> = self.tools.drain().collect();
                for (_, t) in left {
                    let line = tool_line(&t.name, &t.detail, ToolStatus::Interrupted.as_str(), "");
                    self.replace_mark_line(&mut buf, t.mark, &line);
                }
                Self::fresh_line(&mut buf);
                let usage = std::mem::take(&mut self.usage);
                let end = if usage.is_empty() {
                    turn_end_line(&outcome)
                } else {
                    format!("{} {usage}", turn_end_line(&outcome))
                };
                Self::append(&mut buf, &format!("\n{end}\n"));
                if let (Some(id), Some(ns)) = (self.working.take(), self.ns) {
                    if id != 0 {
                        let _ = buf.del_extmark(ns, id);
                    }
                }
            }
        }
    }

    /// Replaces the text of the line holding extmark `mark` with `line`;
    /// `false` when the mark is gone. The text is replaced within the line
    /// (`nvim_buf_set_text`), never the line itself: `nvim_buf_set_lines`
    /// would move the mark to the next line, and the next update of the
    /// same tool line would overwrite whatever follows it.
    fn replace_mark_line(&mut self, buf: &mut Buffer, mark: u32, line: &str) -> bool {
        let ns = self.ns();
        let Ok((row, _, _)) = buf.get_extmark_by_id(ns, mark, &Default::default()) else {
            return false;
        };
        let old_len = buf
            .get_lines(row..row + 1, false)
            .ok()
            .and_then(|mut lines| lines.next())
            .map_or(0, |l| l.to_string_lossy().len());
        buf.set_text(row..row, 0, old_len, [line]).is_ok()
    }

    /// Puts the "waiting for you" line below the last line (or removes it).
    fn place_waiting(&mut self, buf: &Buffer) {
        let ns = self.ns();
        let mut buf = buf.clone();
        if let Some(id) = self.waiting.take() {
            let _ = buf.del_extmark(ns, id);
        }
        let Some(text) = self.waiting_text.clone() else {
            return;
        };
        let (row, _) = Self::last_line(&buf);
        let opts = SetExtmarkOpts::builder()
            .virt_lines([[(text.as_str(), "WarningMsg")]])
            .build();
        if let Ok(id) = buf.set_extmark(ns, row, 0, &opts) {
            self.waiting = Some(id);
        }
    }

    /// Says "waiting for you" on the tool lines of calls a permission ask
    /// waits on, "running" again on the others.
    fn mark_waiting_tools(&mut self, buf: &Buffer) {
        let ids = waiting_ids(&self.tools, &self.waiting_tools);
        let mut changed = Vec::new();
        for (id, t) in &mut self.tools {
            let waiting = ids.contains(id);
            if t.waiting != waiting {
                t.waiting = waiting;
                let status = if waiting { WAITING_STATUS } else { "running" };
                let line = tool_line(&t.name, &t.detail, status, &progress_line(&t.partial));
                changed.push((t.mark, line));
            }
        }
        if changed.is_empty() {
            return;
        }
        let mut buf = buf.clone();
        let _ = api::set_option_value("modifiable", true, &buf_opts(&buf));
        for (mark, line) in changed {
            self.replace_mark_line(&mut buf, mark, &line);
        }
        let _ = api::set_option_value("modifiable", false, &buf_opts(&buf));
    }

    /// Moves the "working" indicator to the last line and scrolls chat
    /// windows whose cursor was on the last line before.
    fn follow(&mut self, buf: &Buffer) {
        self.mark_waiting_tools(buf);
        self.place_waiting(buf);
        let mut buf = buf.clone();
        let (row, _) = Self::last_line(&buf);
        if let Some(id) = self.working {
            let ns = self.ns();
            let mut b = SetExtmarkOpts::builder();
            b.virt_text([(WORKING_TEXT, "Comment")]);
            if id != 0 {
                b.id(id);
            }
            if let Ok(new_id) = buf.set_extmark(ns, row, 0, &b.build()) {
                self.working = Some(new_id);
            }
        }
        for mut w in api::list_wins().filter(|w: &Window| w.get_buf().is_ok_and(|b| b == buf)) {
            if w != api::get_current_win() {
                let _ = w.set_cursor(row + 1, 0);
            }
        }
    }
}
