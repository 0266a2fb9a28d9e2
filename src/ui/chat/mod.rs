//! The chat (`:help lathe-chat`): the transcript buffer `lathe://chat` in a
//! vertical split, the prompt area `lathe://prompt` docked under it, and the
//! [`ChatSink`] that renders [`AgentEvent`]s into the transcript.
//!
//! - [`lines`]: every line the chat writes (pure, unit-tested).
//! - `view`: how each event changes the transcript.
//! - [`window`]: the windows, their options, winbar, folds, highlights.
//! - [`prompt`]: the prompt area, its history and keys.
//! - [`jump`]: `<CR>` on a tool line opens its file in another window.
//! - `highlight`: markdown highlighting by turn and by opened result.
//!
//! Events are queued from tokio tasks and rendered on the main thread at
//! most about every [`FRAME`] (16 ms, so at most ~60 redraws a second);
//! streamed text never floods the editor and never touches the prompt
//! area, which is a buffer of its own.

mod buf;
mod highlight;
pub mod jump;
pub mod lines;
pub mod prompt;
mod view;
pub mod window;
mod wipe;

use crate::host::main_stats::{self, chat_continued as continued, chat_edited as edited};
pub use crate::host::main_stats::{continued_lines, edit_counts};
use crate::host::stats::{Counter, STATS};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nvim_oxi::api::{self, opts::OptionOpts, Buffer};

pub use lines::{
    notice_lines, progress_line, tool_line, turn_end_line, turn_end_lines, usage_line,
    withdrawn_line, LATHE_HEADING, WAITING_STATUS, WORKING_TEXT, YOU_HEADING,
};
pub use window::{close, focus_prompt, open_window, toggle};
pub use wipe::wiping;

use crate::host::bridge::MainThread;
use crate::host::guard::guarded;
use lathe_core::events::{AgentEvent, EventSink};
use view::ChatView;

/// The chat buffer's name.
pub const CHAT_BUFFER_NAME: &str = "lathe://chat";
/// Shortest time between two renders of queued events.
pub const FRAME: Duration = Duration::from_millis(16);
/// Extmark namespace of the chat window.
pub const NAMESPACE: &str = "lathe_chat";

thread_local! {
    /// What `<C-c>` in the chat does (main thread only).
    static INTERRUPT: Cell<fn()> = const { Cell::new(|| {}) };
    /// The project root of the current session (for Grep's relative paths).
    static ROOT: Cell<fn() -> Option<std::path::PathBuf>> = const { Cell::new(|| None) };
    static VIEW: RefCell<ChatView> = RefCell::new(ChatView::default());
    /// Events waiting to be drawn in later steps ([`draw_in_steps`]).
    static BACKLOG: RefCell<VecDeque<AgentEvent>> = const { RefCell::new(VecDeque::new()) };
    /// A step of the backlog is scheduled.
    static STEP_SCHEDULED: Cell<bool> = const { Cell::new(false) };
}

/// Most time one step of the chat's work in steps (`schedule_step`)
/// spends before it lets Neovim's main loop go on (keys, timers, other
/// work): a quarter of a frame, so with the one unit a step may overrun
/// (an event, 1 KiB of highlighting, 500 lines of an old chat) and a busy
/// machine's preemption it stays under a frame (at 8 ms, steps took 17-20
/// ms on the 2-CPU bench machine under load, `make bench` part h).
pub const STEP_BUDGET: Duration = Duration::from_millis(4);

/// Sets where the chat gets the project root: `lathe::api::install` passes the
/// session's root, so the chat never imports `state` (which builds the chat
/// sink). Main thread only.
pub fn on_state(root: fn() -> Option<std::path::PathBuf>) {
    ROOT.with(|c| c.set(root));
}

/// The Lua handle.
pub(crate) use crate::host::lua_handle::lua;

/// The session's project root, if a session exists (see [`on_state`]).
pub(crate) fn project_root() -> Option<std::path::PathBuf> {
    ROOT.with(Cell::get)()
}

/// Sets what `<C-c>` in the chat and the prompt area does: `lathe::api::install`
/// passes the function that stops the running turn, so the chat needs
/// nothing from the session state (`state` builds the chat sink; the chat
/// never calls back into `state`). Main thread only.
pub fn on_interrupt(stop: fn()) {
    INTERRUPT.with(|c| c.set(stop));
}

/// Stops the running turn (`<C-c>` in the chat or the prompt area).
pub(crate) fn interrupt() {
    let _ = guarded("stop", || INTERRUPT.with(Cell::get)());
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

/// Counts one read of a transcript line (`line_at`).
pub(super) fn read_back() {
    STATS.bump(Counter::ChatReads);
}

/// How many times the chat read a transcript line back from the buffer
/// since Neovim started (tests: streaming reads nothing back, however long
/// the line it grows).
pub fn reads() -> u64 {
    STATS.get(Counter::ChatReads)
}

/// Counts one scrolled view ([`window::follow`]).
pub(super) fn view_fixed() {
    STATS.bump(Counter::ViewFixes);
}

/// How many times since Neovim started a transcript window that follows
/// the answer (cursor on the last line) did not show the last line after
/// a frame and was scrolled to it with `zb` (tests: a window whose view is
/// already right costs no scroll; one left on an old view, as
/// `nvim_buf_set_text` leaves a window whose cursor it carried along,
/// costs one).
pub fn view_fixes() -> u64 {
    STATS.get(Counter::ViewFixes)
}

/// Counts one 'winbar' set.
pub(super) fn winbar_set() {
    STATS.bump(Counter::WinbarSets);
}

/// How many times since Neovim started the chat set a transcript window's
/// 'winbar' (tests: a frame of streamed text sets none, the winbar only
/// changes with the turn's state, mode, model or tokens).
pub fn winbar_sets() -> u64 {
    STATS.get(Counter::WinbarSets)
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
        && !drawing()
        && !wiping()
}

/// `true` while events wait to be drawn in steps ([`draw_in_steps`]).
pub fn drawing() -> bool {
    BACKLOG.with(|b| !b.borrow().is_empty())
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
        match crate::host::runtime::handle() {
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

/// Renders `events` into the chat buffer (creating it when needed). Chat
/// windows whose cursor was on the last line follow the new text, whether
/// or not they have focus; the others stay where the user put them.
/// Adjacent text deltas are merged first ([`coalesce`]), so a frame's worth
/// of streamed text is one buffer edit however small the deltas. While a
/// resumed chat is still being drawn in steps, `events` wait behind it
/// (drawn in order by the next steps). Main thread.
pub fn render(events: Vec<AgentEvent>) {
    if events.is_empty() {
        return;
    }
    if drawing() {
        BACKLOG.with(|b| b.borrow_mut().extend(coalesce(events)));
        return;
    }
    crate::host::main_stats::timed(crate::host::main_stats::Step::ChatFrame, || {
        draw(&mut coalesce(events).into(), None)
    });
    // The rest of a long turn's highlighting, in steps.
    if highlight::queued() > 0 {
        schedule_step();
    }
}

/// Draws `events` (a resumed conversation, which may hold a day's work) in
/// steps of at most about [`STEP_BUDGET`] each (`schedule_step`), so
/// Neovim handles keys and timers between them and no step blocks the
/// editor longer than a frame. Events rendered meanwhile are drawn after
/// them, in order. `lathe.wait()` waits for the last step. Main thread.
pub fn draw_in_steps(events: Vec<AgentEvent>) {
    let started = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::TurnStarted { .. }))
        .count() as u64;
    TURNS_STARTED.fetch_add(started, Ordering::AcqRel);
    BACKLOG.with(|b| {
        let mut b = b.borrow_mut();
        if b.is_empty() {
            // A day's events: taken as they are, not copied.
            *b = events.into();
        } else {
            b.extend(events);
        }
    });
    schedule_step();
}

/// Schedules the next step of the chat's work in steps unless one is
/// scheduled: the pieces of highlighting waiting ([`highlight::step`]),
/// then the backlog of a resumed chat ([`draw_in_steps`]), then the lines
/// of old chat buffers ([`wipe`]), all in one step until [`STEP_BUDGET`]
/// has gone by. A step follows the last one after a timer of 0 ms, then
/// `vim.schedule`: whatever else became ready meanwhile (timers, other
/// plugins' callbacks) runs first, so it never waits behind more than one
/// of lathe's steps (queued straight with `vim.schedule`, the next step,
/// and every turn's highlighting, went ahead of it: the waits added up to
/// 40-150 ms, `make bench` part h).
fn schedule_step() {
    if STEP_SCHEDULED.with(|s| s.replace(true)) {
        return;
    }
    after_yield(|| {
        STEP_SCHEDULED.with(|s| s.set(false));
        let busy = drawing() || wiping();
        crate::host::main_stats::timed(crate::host::main_stats::Step::ChatFrame, step);
        if busy && !drawing() && !wiping() {
            // `lathe.settled()` turns true: statuslines showing it are
            // drawn again (a step of their own), not at the next key.
            nvim_oxi::schedule(|()| {
                let _ = api::command("redrawstatus!");
            });
        }
        if highlight::queued() > 0 || drawing() || wiping() {
            schedule_step();
        }
    });
}

/// Runs `f` on the main loop after a timer of 0 ms (`vim.defer_fn`), or
/// with `vim.schedule` when Lua cannot make the timer. Guarded.
fn after_yield(f: impl FnOnce() + 'static) {
    let f = std::rc::Rc::new(RefCell::new(Some(f)));
    let run = move || {
        if let Some(f) = f.borrow_mut().take() {
            let _ = guarded("chat step", f);
        }
    };
    let lua = lua();
    let on_timer = run.clone();
    let deferred = lua
        .create_function(move |_, ()| {
            on_timer();
            Ok(())
        })
        .and_then(|callback| {
            lua.globals()
                .get::<mlua::Table>("vim")?
                .get::<mlua::Function>("defer_fn")?
                .call::<mlua::Value>((callback, 0))
        });
    if deferred.is_err() {
        nvim_oxi::schedule(move |()| run());
    }
}

/// One step of [`schedule_step`].
fn step() {
    let start = Instant::now();
    let left = || STEP_BUDGET.saturating_sub(start.elapsed());
    if highlight::queued() > 0 {
        highlight::step(STEP_BUDGET);
    }
    if drawing() && !left().is_zero() {
        draw_backlog(left());
    }
    if wiping() && !left().is_zero() {
        wipe::step(left());
    }
}

/// Draws events of the backlog for about `budget` (at least one).
fn draw_backlog(budget: Duration) {
    let mut events = BACKLOG.with(|b| std::mem::take(&mut *b.borrow_mut()));
    let before = events.len();
    draw(&mut events, Some(budget));
    if events.len() == before {
        // Nothing could be drawn (no chat buffer): drop the rest, so
        // `lathe.wait()` does not wait for it.
        let ended = events
            .iter()
            .filter(|e| matches!(e, AgentEvent::TurnEnded { .. }))
            .count() as u64;
        TURNS_RENDERED.fetch_add(ended, Ordering::AcqRel);
        return;
    }
    if !events.is_empty() {
        // Events rendered during this step were queued behind.
        BACKLOG.with(|b| {
            let mut b = b.borrow_mut();
            let later = std::mem::take(&mut *b);
            events.extend(later);
            *b = events;
        });
    }
}

/// Draws events from the front of `events`: all of them, or with a
/// `budget`, until that much time went by (at least one event). What is
/// left stays in `events`.
fn draw(events: &mut VecDeque<AgentEvent>, budget: Option<Duration>) {
    main_stats::chat_frame();
    let start = Instant::now();
    let mut ended = 0;
    let _ = guarded("chat update", || {
        VIEW.with(|v| {
            let mut view = v.borrow_mut();
            let Ok(buf) = view.buffer() else { return };
            // A prompt sent (or a queued message handed over) brings every
            // chat window to it, wherever its cursor was.
            let sent = budget.is_none()
                && events.iter().any(|e| {
                    matches!(
                        e,
                        AgentEvent::TurnStarted { .. } | AgentEvent::QueuedSent { .. }
                    )
                });
            let following = if sent {
                window::chat_windows(&buf)
            } else {
                window::following(&buf)
            };
            let _ = api::set_option_value("modifiable", true, &buf_opts(&buf));
            view.in_steps = budget.is_some();
            while let Some(ev) = events.pop_front() {
                if matches!(ev, AgentEvent::TurnEnded { .. }) {
                    ended += 1;
                }
                view.apply(&buf, ev);
                if budget.is_some_and(|b| start.elapsed() >= b) {
                    break;
                }
            }
            view.highlight_frame(&buf);
            view.in_steps = false;
            let _ = api::set_option_value("modifiable", false, &buf_opts(&buf));
            view.mark_waiting_tools(&buf);
            view.place_notes(&buf);
            let (_, end_col) = view.last_line_end(&buf);
            window::follow(&buf, &following, end_col);
        });
        window::refresh_winbar();
    });
    // Counted even when drawing failed, so `lathe.wait()` never hangs on
    // it (the events a failed step left are dropped with it).
    if budget.is_none() {
        ended += events
            .drain(..)
            .filter(|e| matches!(e, AgentEvent::TurnEnded { .. }))
            .count() as u64;
    }
    TURNS_RENDERED.fetch_add(ended, Ordering::AcqRel);
}

/// `events` with every run of adjacent [`AgentEvent::TextDelta`]s merged
/// into one delta holding their texts in order; every other event is kept
/// as it is, in its place. Pure.
pub fn coalesce(events: Vec<AgentEvent>) -> Vec<AgentEvent> {
    let mut out: Vec<AgentEvent> = Vec::with_capacity(events.len());
    for ev in events {
        match (out.last_mut(), ev) {
            (Some(AgentEvent::TextDelta { text }), AgentEvent::TextDelta { text: more }) => {
                text.push_str(&more);
            }
            (_, ev) => out.push(ev),
        }
    }
    out
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
            let following = window::following(&buf);
            v.place_notes(&buf);
            let (_, end_col) = v.last_line_end(&buf);
            window::follow(&buf, &following, end_col);
        }
    });
    window::refresh_winbar();
}

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

/// Maps the key that stops a turn from any window (`setup{ stop_key }`,
/// `lua/lathe/chat.lua`), which the working line names (`None`: `setup{
/// stop_key = false }`, no map). Main thread.
pub fn set_stop_key(key: Option<&str>) {
    VIEW.with(|v| {
        let mut v = v.borrow_mut();
        v.stop_key_off = key.is_none();
        v.stop_key = key.map(str::to_string);
    });
    let _ = crate::host::lua_handle::module_fn("lathe.chat", "stop_key")
        .and_then(|f| f.call::<()>(key.map(str::to_string)));
}

/// The messages queued for the running turn as the chat shows them (for
/// tests).
pub fn queued() -> Vec<String> {
    VIEW.with(|v| v.borrow().queued.clone())
}

/// Sets the permission mode the winbar shows. Main thread.
pub fn set_mode_winbar(mode: &str) {
    VIEW.with(|v| v.borrow_mut().mode = mode.to_string());
    window::refresh_winbar();
}

/// Sets the model the winbar shows. Main thread.
pub fn set_model(model: &str) {
    VIEW.with(|v| v.borrow_mut().model = model.to_string());
    window::refresh_winbar();
}

/// The chat's winbar as it is now for a window `width` columns wide
/// (`:help lathe-winbar`): model, mode, the session's tokens, turn state
/// (`idle`, `running`, `waiting for you`), the context meter; whole parts
/// only ([`lines::winbar`]).
pub fn winbar(width: usize) -> String {
    VIEW.with(|v| {
        let v = v.borrow();
        let state = if v.waiting_text.is_some() {
            WAITING_STATUS
        } else if v.running {
            "running"
        } else {
            "idle"
        };
        lines::winbar(width, &v.model, &v.mode, state, v.context, &v.session_usage)
    })
}

/// Starts the transcript afresh for a new or resumed conversation
/// (`:Lathe new`, `:Lathe resume`): a new, empty chat buffer takes the old
/// one's place in its windows and the old one is wiped in steps of the
/// main loop (`wipe`: a day's chat took tens of ms in one piece), so
/// Neovim frees all it held (lines, extmarks, folds); tool states, the winbar's state
/// and tokens and any events still waiting to be drawn go too. The
/// windows stay where they are and the prompt area keeps what the user is
/// typing. Main thread; nothing to do before the chat exists.
pub fn clear() {
    let dropped = BACKLOG.with(|b| std::mem::take(&mut *b.borrow_mut()));
    let ended = dropped
        .iter()
        .filter(|e| matches!(e, AgentEvent::TurnEnded { .. }))
        .count() as u64;
    TURNS_RENDERED.fetch_add(ended, Ordering::AcqRel);
    let _ = guarded("clearing the chat", || {
        let swap = VIEW.with(|v| {
            let mut view = v.borrow_mut();
            view.reset();
            let mut old = view.buf.take().filter(|b| b.is_valid())?;
            // The new buffer takes the name.
            let _ = old.set_name(format!("{CHAT_BUFFER_NAME} (old {})", old.handle()));
            match view.buffer() {
                Ok(new) => Some((old, new)),
                Err(_) => {
                    view.buf = Some(old);
                    None
                }
            }
        });
        if let Some((old, new)) = swap {
            for mut w in window::chat_windows(&old) {
                if w.set_buf(&new).is_ok() {
                    window::set_chat_window_options(&w);
                }
            }
            highlight::forget(&old);
            wipe::wipe_in_steps(old);
        }
        window::refresh_winbar();
    });
}

/// The chat buffer if it exists (for tests): `None` before the first ask.
pub fn chat_buffer() -> Option<Buffer> {
    VIEW.with(|v| v.borrow().buf.clone().filter(|b| b.is_valid()))
}

/// The chat buffer, created when needed. Main thread. Errors: the API's.
pub(crate) fn ensure_buffer() -> Result<Buffer, String> {
    VIEW.with(|v| v.borrow_mut().buffer())
}

/// `true` while the running turn's highlighting is paused until it ends:
/// its text is longer than 16 KiB (`:help lathe-chat-highlighting`).
pub fn highlighting_paused() -> bool {
    VIEW.with(|v| v.borrow().highlighting_paused)
}

/// `true` while the "working" indicator is shown (a turn is being rendered
/// as running).
pub fn working_indicator_shown() -> bool {
    VIEW.with(|v| v.borrow().working_shown())
}

fn buf_opts(buf: &Buffer) -> OptionOpts {
    OptionOpts::builder().buffer(buf.clone()).build()
}

#[cfg(test)]
mod tests {
    use super::coalesce;
    use lathe_core::events::AgentEvent;

    fn delta(t: &str) -> AgentEvent {
        AgentEvent::TextDelta { text: t.into() }
    }

    #[test]
    fn adjacent_text_deltas_merge_and_other_events_stay_in_place() {
        let events = vec![
            delta("a"),
            delta("b\n"),
            delta("c"),
            AgentEvent::AssistantStarted,
            delta("d"),
            delta("e"),
        ];
        assert_eq!(
            coalesce(events),
            vec![delta("ab\nc"), AgentEvent::AssistantStarted, delta("de")]
        );
        assert_eq!(coalesce(Vec::new()), Vec::new());
    }
}
