//! `FloatPrompter`: the permission ask as a floating window that never takes
//! a keystroke by accident (`:help lathe-float`).
//!
//! - Asks queue on the main thread; one float shows at a time, titled
//!   `(1 of 3)` when more wait (for one of an answer's changes: its place
//!   among them). While any ask waits, the chat and
//!   `lathe.statusline()` say "waiting for you: Edit greeting.py" (or
//!   that an operator the user started must end first).
//! - Between two asks of one answer the answered float stays and takes
//!   the keys; `D` shows the answer's queued changes, `Y` allows the rest
//!   of them (`burst`).
//! - A float opens only when the user is in Normal mode, nothing is pending
//!   (no typeahead, no operator) and no key was typed for the guard time;
//!   otherwise the ask waits and is retried every [`POLL`].
//! - It opens without focus: keys typed meanwhile go on to the window the
//!   user is in (`:w<CR>` saves their file). It takes focus once it has been
//!   on screen for the guard time with no key typed and the user is still
//!   idle in Normal mode in its tab; every key restarts that wait. So no
//!   key typed before the user could have seen the float acts on it.
//! - `:Lathe review` shows it focused at once; then its answer keys are
//!   ignored for the guard time.
//! - Leaving or closing the float keeps the ask pending; `:Lathe review`
//!   brings it back in the current tab. `:Lathe stop` denies every ask.
//! - When the planned document changes while the float is open, the float
//!   says the plan is stale and `y`/`a`/`A` are refused until `r` plans
//!   again.
//!
//! When a float takes focus (the first time), the `User LathePermissionAsk`
//! autocmd fires with the float as the current window.

mod burst;
mod diff_tab;
mod focus;
mod look;
pub mod view;
mod window;

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio::sync::oneshot;

use crate::host::bridge::MainThread;
use crate::host::guard::{guarded, notify_error, notify_warn};
use lathe_core::editor::{TextHash, Version};
use lathe_core::permissions::{PermissionPreview, PromptAnswer, Prompter, Revision};
use lathe_core::text::fill;
use view::AskView;

/// The `User` autocmd pattern fired after the float opens.
pub const ASK_EVENT: &str = "LathePermissionAsk";

/// How often a waiting ask checks whether it may open.
pub const POLL: Duration = Duration::from_millis(100);

/// Message when an answer key is pressed while the plan is stale.
pub const STALE_KEY: &str =
    "lathe: the file changed since this change was planned: press r to plan it again, or n to deny";
/// Message when `a`/`A` are pressed but no rule is offered.
pub const NO_RULE_KEY: &str =
    "lathe: a and A are not offered: no narrow rule for this session would let this call run without asking; y allows it once, n denies it";
/// Message when `a`/`A` are pressed after hunks were toggled or the text edited.
pub const REVISED_RULE_KEY: &str =
    "lathe: a and A allow the change as proposed; press y to apply your selection";

/// Message when `Y` is pressed but not offered.
pub const NO_ANSWER_KEY: &str =
    "lathe: Y is offered on a file change when more of this answer's file changes are queued (and not after <Space> or an edit in the diff tab); y allows this one";
/// The waiting notice while an operator the user started (`y`, `d`, …)
/// keeps the float from opening. `{keys}`, `{title}`.
pub const PENDING_OPERATOR: &str = "waiting for you to finish `{keys}` (or <Esc>), then: {title}";

/// Asks through floating windows on the main thread.
pub struct FloatPrompter {
    main: MainThread,
    guard: Duration,
}

impl FloatPrompter {
    /// A prompter opening its floats through `main`: a float opens only
    /// after the user typed nothing for `guard`, and takes focus only after
    /// it showed for `guard` with no key typed
    /// (`Config::permission_guard_ms`).
    pub fn new(main: MainThread, guard: Duration) -> Self {
        Self { main, guard }
    }
}

/// Ids of asks.
static NEXT_ASK: AtomicU64 = AtomicU64::new(1);

/// Takes an abandoned ask off the queue (closing its float): its future was
/// dropped before an answer (the turn was stopped).
struct AbandonOnDrop {
    main: MainThread,
    id: u64,
    armed: bool,
}

impl Drop for AbandonOnDrop {
    fn drop(&mut self) {
        if self.armed {
            let id = self.id;
            let _ = self.main.post(move || abandon(id));
        }
    }
}

#[async_trait]
impl Prompter for FloatPrompter {
    async fn ask(&self, tool: &str, preview: &PermissionPreview) -> PromptAnswer {
        let (tx, rx) = oneshot::channel();
        let id = NEXT_ASK.fetch_add(1, Ordering::Relaxed);
        let mut guard = AbandonOnDrop {
            main: self.main.clone(),
            id,
            armed: true,
        };
        let ask = Ask {
            id,
            tool: tool.to_string(),
            preview: preview.clone(),
            tx: Some(tx),
            view: AskView::default(),
        };
        let guard_time = self.guard;
        let queued = self
            .main
            .run(move || guarded("permission ask", || enqueue(ask, guard_time)))
            .await;
        let answer = match queued {
            Ok(Some(())) => rx.await.unwrap_or(PromptAnswer::Deny),
            _ => PromptAnswer::Deny,
        };
        guard.armed = false;
        answer
    }

    fn settled(&self) {
        let _ = self.main.post(|| {
            let _ = guarded("ending the wait for the next ask", burst::end);
        });
    }
}

/// One pending ask.
struct Ask {
    id: u64,
    tool: String,
    preview: PermissionPreview,
    tx: Option<oneshot::Sender<PromptAnswer>>,
    view: AskView,
}

/// The open float.
struct Float {
    ask_id: u64,
    win: nvim_oxi::api::Window,
    buf: nvim_oxi::api::Buffer,
    /// The window that was current before it took focus.
    prev: nvim_oxi::api::Window,
    /// When it appeared on screen: answer keys are ignored for the guard
    /// time after, and it takes focus no sooner.
    shown: Instant,
    /// When the user last put the cursor in it (`:Lathe review`, `<C-w>w`,
    /// a mouse click; not lathe's own move after the user was idle):
    /// answer keys are ignored for the guard time after that too, so a key
    /// typed as focus arrives never answers.
    entered: Instant,
    /// It has been the current window (the ask event fired).
    focused: bool,
    /// How many of its lines are the header.
    header: usize,
    /// Hunk of each buffer line.
    hunk_of_line: Vec<Option<usize>>,
}

#[derive(Default)]
struct Asks {
    queue: Vec<Ask>,
    float: Option<Float>,
    polling: bool,
    guard: Duration,
    /// The user closed the front ask's float: it stays pending and is not
    /// shown again until `:Lathe review` (or until it is answered).
    dismissed: bool,
}

thread_local! {
    static ASKS: RefCell<Asks> = RefCell::new(Asks::default());
    /// lathe itself is moving the cursor into the float after the user was
    /// idle (see `take_focus_when_idle`): that entry keeps the guard time.
    static LATHE_FOCUSING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `true` while lathe moves the cursor into the float on its own.
pub(super) fn lathe_is_focusing() -> bool {
    LATHE_FOCUSING.with(std::cell::Cell::get)
}

/// Queues `ask` and shows it when it may take focus. Main thread.
fn enqueue(ask: Ask, guard: Duration) {
    focus::track_keys();
    if let Some(watch) = ask.preview.watch.clone() {
        if let Version::Buffer { bufnr, .. } = watch.version {
            watch_buffer(ask.id, bufnr);
        }
    }
    ASKS.with(|a| {
        let mut a = a.borrow_mut();
        a.guard = guard;
        a.queue.push(ask);
    });
    show_next(false);
}

/// Shows the front ask if nothing shows and the user is idle in Normal
/// mode (or `now`: `:Lathe review`), else keeps polling. Refreshes the
/// waiting notice and the open float's title.
fn show_next(now: bool) {
    update_waiting();
    let (front, shown, guard) = ASKS.with(|a| {
        let a = a.borrow();
        let shown = a
            .float
            .as_ref()
            .filter(|f| f.win.is_valid())
            .map(|f| f.ask_id);
        (a.queue.first().map(|q| q.id), shown, a.guard)
    });
    let Some(front) = front else { return };
    if shown == Some(front) {
        window::redraw(front);
        take_focus_when_idle();
        return;
    }
    if shown.is_some() {
        // Another ask shows (cannot happen: the front is always the one
        // shown); close it so the front can take its place.
        close_float();
    }
    if !now && ASKS.with(|a| a.borrow().dismissed) {
        return;
    }
    // The answered float of this answer holds the cursor: the next ask
    // takes its place, focused (its guard time still applies to keys).
    if !now {
        let hold = nvim_oxi::api::get_current_win();
        if let Some(prev) = burst::hand_over(focus::can_take_focus(Duration::ZERO)) {
            let opened = window::open(front, true);
            burst::close_handed(hold);
            match opened {
                Ok(()) => {
                    ASKS.with(|a| {
                        if let Some(f) = a.borrow_mut().float.as_mut() {
                            f.prev = prev;
                        }
                    });
                    focused();
                }
                Err(e) => {
                    notify_warn(&format!("lathe: cannot open the permission window: {e}"));
                    answer(front, PromptAnswer::Deny);
                }
            }
            return;
        }
        if burst::holding() {
            schedule_poll();
            return;
        }
    }
    if now || focus::can_take_focus(guard) {
        // `:Lathe review` asked for it: focused at once. Otherwise it shows
        // without focus, and keys go on to where the user types.
        if let Err(e) = window::open(front, now) {
            notify_warn(&format!("lathe: cannot open the permission window: {e}"));
            answer(front, PromptAnswer::Deny);
            return;
        }
        if now {
            focused();
        } else {
            take_focus_when_idle();
        }
    } else {
        schedule_poll();
    }
}

/// Moves focus into the open float once it has shown for the guard time,
/// the user typed nothing for as long, is in Normal mode with nothing
/// pending, and is in the float's tab; else checks again after [`POLL`].
/// A float the user entered on their own counts as focused.
fn take_focus_when_idle() {
    let Some((win, shown, is_focused, guard)) = ASKS.with(|a| {
        let a = a.borrow();
        a.float
            .as_ref()
            .filter(|f| f.win.is_valid())
            .map(|f| (f.win.clone(), f.shown, f.focused, a.guard))
    }) else {
        return;
    };
    if is_focused {
        return;
    }
    let current = nvim_oxi::api::get_current_win();
    if current == win {
        focused();
        return;
    }
    let here = nvim_oxi::api::get_current_tabpage();
    let same_tab = win.get_tabpage().is_ok_and(|t| t == here);
    if same_tab && shown.elapsed() >= guard && focus::can_take_focus(guard) {
        ASKS.with(|a| {
            if let Some(f) = a.borrow_mut().float.as_mut() {
                f.prev = current;
            }
        });
        // The user has seen the float for the guard time without typing:
        // keys from now on are meant for it, so this entry does not start
        // the guard time again (a script answering `LathePermissionAsk`
        // may answer at once).
        LATHE_FOCUSING.with(|f| f.set(true));
        let moved = nvim_oxi::api::set_current_win(&win).is_ok();
        LATHE_FOCUSING.with(|f| f.set(false));
        if moved {
            focused();
            return;
        }
    }
    schedule_poll();
}

/// Marks the open float focused; the first time, fires the ask event.
fn focused() {
    let first = ASKS.with(|a| {
        a.borrow_mut()
            .float
            .as_mut()
            .is_some_and(|f| !std::mem::replace(&mut f.focused, true))
    });
    if first {
        fire_ask_event();
    }
}

/// Fires `User LathePermissionAsk` with `data = { tool, title, waiting }`
/// (the ask shown, and how many wait in all; `:help LathePermissionAsk`).
fn fire_ask_event() {
    let data = match first_ask() {
        Some((tool, title, waiting)) => {
            serde_json::json!({ "tool": tool, "title": title, "waiting": waiting })
        }
        None => serde_json::json!({}),
    };
    if let Err(e) = crate::ui::user_events::fire(ASK_EVENT, &data) {
        notify_error(&format!("lathe: User {ASK_EVENT} autocmd failed: {e}"));
    }
}

/// The first waiting ask: its tool, its title ("Edit greeting.py") and how
/// many asks wait in all; `None` when nothing waits. Main thread.
pub fn first_ask() -> Option<(String, String, usize)> {
    ASKS.with(|a| {
        let a = a.borrow();
        a.queue
            .first()
            .map(|q| (q.tool.clone(), title_of(q), a.queue.len()))
    })
}

/// Re-checks after [`POLL`] while an ask waits unshown or its float waits
/// for focus.
fn schedule_poll() {
    let already = ASKS.with(|a| std::mem::replace(&mut a.borrow_mut().polling, true));
    if already {
        return;
    }
    focus::defer(POLL, || {
        ASKS.with(|a| a.borrow_mut().polling = false);
        let (waiting, unfocused) = ASKS.with(|a| {
            let a = a.borrow();
            let float = a.float.as_ref().filter(|f| f.win.is_valid());
            (
                !a.queue.is_empty() && float.is_none(),
                float.is_some_and(|f| !f.focused),
            )
        });
        if waiting {
            show_next(false);
        } else if unfocused {
            take_focus_when_idle();
        }
    });
}

/// Sends `answer` for ask `id`, closes its float, and moves on to the next
/// ask. Main thread.
fn answer(id: u64, answer: PromptAnswer) {
    let (tx, next) = ASKS.with(|a| {
        let mut a = a.borrow_mut();
        let Some(pos) = a.queue.iter().position(|q| q.id == id) else {
            return (None, None);
        };
        if pos == 0 {
            a.dismissed = false;
        }
        let q = a.queue.remove(pos);
        (q.tx, burst::next_of(&q.preview))
    });
    if ASKS.with(|a| a.borrow().float.as_ref().is_some_and(|f| f.ask_id == id)) {
        // More of the answer's changes come: the float stays and takes the
        // keys until the next ask shows (`burst`).
        let float = ASKS.with(|a| a.borrow_mut().float.take());
        let rest = match (float, next) {
            (Some(f), Some(next)) => burst::hold(f, &next),
            (f, _) => f,
        };
        if let Some(f) = rest {
            close(f);
            // The cursor is back in the user's window: keys typed to
            // answer more asks do nothing there for a while.
            focus::swallow_answer_keys(ASKS.with(|a| a.borrow().guard));
        }
    }
    if let Some(tx) = tx {
        let _ = tx.send(answer);
    }
    show_next(false);
}

/// Drops ask `id` without an answer (nobody waits for it any more).
fn abandon(id: u64) {
    let _ = guarded("closing the permission window", || {
        ASKS.with(|a| {
            let mut a = a.borrow_mut();
            if a.queue.first().is_some_and(|q| q.id == id) {
                a.dismissed = false;
            }
            a.queue.retain(|q| q.id != id);
        });
        if ASKS.with(|a| a.borrow().float.as_ref().is_some_and(|f| f.ask_id == id)) {
            close_float();
        }
        show_next(false);
    });
}

/// Closes the open float (if any); when the cursor was in it, returns to
/// the window before it. The ask it showed stays queued.
fn close_float() {
    let float = ASKS.with(|a| a.borrow_mut().float.take());
    if let Some(f) = float {
        close(f);
    }
}

/// Closes float `f`; when the cursor was in it, returns to the window
/// before it.
fn close(f: Float) {
    let was_current = nvim_oxi::api::get_current_win() == f.win;
    if f.win.is_valid() {
        let _ = f.win.close(true);
    }
    if was_current && f.prev.is_valid() {
        let _ = nvim_oxi::api::set_current_win(&f.prev);
    }
}

/// `q` in the float of ask `id`: hides it as `:q` does; the ask keeps
/// waiting until `:Lathe review`.
fn hide(id: u64) {
    let ours = ASKS.with(|a| {
        let mut a = a.borrow_mut();
        let ours = a.float.as_ref().is_some_and(|f| f.ask_id == id);
        a.dismissed |= ours;
        ours
    });
    if ours {
        close_float();
        update_waiting();
    }
}

/// Brings the waiting ask back in the current tab (`:Lathe review`,
/// `<Plug>(lathe-review)`). Errors: nothing waits.
pub fn review() -> Result<(), String> {
    let front = ASKS.with(|a| a.borrow().queue.first().map(|q| q.id));
    if front.is_none() {
        return Err("lathe: no permission ask is waiting".into());
    }
    let here = nvim_oxi::api::get_current_tabpage();
    let shown_here = ASKS.with(|a| {
        a.borrow()
            .float
            .as_ref()
            .filter(|f| f.win.is_valid())
            .and_then(|f| f.win.get_tabpage().ok())
            .is_some_and(|t| t == here)
    });
    if shown_here {
        let win = ASKS.with(|a| a.borrow().float.as_ref().map(|f| f.win.clone()));
        if let Some(w) = win {
            let current = nvim_oxi::api::get_current_win();
            if current != w {
                ASKS.with(|a| {
                    if let Some(f) = a.borrow_mut().float.as_mut() {
                        f.prev = current;
                    }
                });
            }
            if nvim_oxi::api::set_current_win(&w).is_ok() {
                focused();
            }
        }
        return Ok(());
    }
    close_float();
    ASKS.with(|a| a.borrow_mut().dismissed = false);
    show_next(true);
    Ok(())
}

/// Denies every pending ask of a call (`:Lathe stop`).
pub fn deny_all() {
    // The question about `.mcp.json` servers is no call of the turn: it
    // keeps waiting (a refusal would be remembered).
    let ids: Vec<u64> = ASKS.with(|a| {
        a.borrow()
            .queue
            .iter()
            .filter(|q| q.tool != lathe_core::mcp::trust::ASK_TOOL)
            .map(|q| q.id)
            .collect()
    });
    for id in ids {
        answer(id, PromptAnswer::Deny);
    }
}

/// The waiting notice for the statusline (`lathe.statusline()`), `None`
/// when nothing waits.
pub fn waiting() -> Option<String> {
    let (title, count, shown) = ASKS.with(|a| {
        let a = a.borrow();
        let shown = a.float.as_ref().is_some_and(|f| f.win.is_valid());
        a.queue.first().map(|q| (title_of(q), a.queue.len(), shown))
    })?;
    // An operator the user started keeps the float from opening until it
    // ends: say so, or lathe looks hung.
    if !shown {
        if let Some(keys) = focus::pending_operator() {
            return Some(fill(
                PENDING_OPERATOR,
                &[("keys", &keys), ("title", &title)],
            ));
        }
    }
    Some(view::waiting_text(&title, count))
}

fn title_of(q: &Ask) -> String {
    if q.preview.title.is_empty() {
        q.tool.clone()
    } else {
        q.preview.title.clone()
    }
}

fn update_waiting() {
    crate::ui::chat::set_waiting(waiting().as_deref());
    let asks: Vec<(String, String)> = ASKS.with(|a| {
        a.borrow()
            .queue
            .iter()
            .map(|q| (q.tool.clone(), title_of(q)))
            .collect()
    });
    crate::ui::chat::set_tools_waiting(&asks);
    // Statuslines showing `lathe.statusline()` are not redrawn on their own
    // while the user types.
    let _ = nvim_oxi::api::command("redrawstatus!");
}

/// `true` when a permission float is open (in any tab).
pub fn is_float_open() -> bool {
    ASKS.with(|a| a.borrow().float.as_ref().is_some_and(|f| f.win.is_valid()))
}

/// A key pressed in the float of ask `id`. Keys within the guard time after
/// it appeared, or after the cursor last entered it, are ignored.
fn on_key(id: u64, key: char) {
    let (times, guard) = ASKS.with(|a| {
        let a = a.borrow();
        (
            a.float
                .as_ref()
                .filter(|f| f.ask_id == id)
                .map(|f| (f.shown, f.entered)),
            a.guard,
        )
    });
    let Some((shown, entered)) = times else {
        return;
    };
    if shown.elapsed() < guard || entered.elapsed() < guard {
        return;
    }
    match key {
        'y' | 'a' | 'A' => {
            if refresh_stale(id) {
                notify_warn(STALE_KEY);
                return;
            }
            allow(id, key);
        }
        'n' => answer(id, PromptAnswer::Deny),
        'q' => hide(id),
        'N' => {
            let message = focus::input_line("Tell the model why (empty: just deny): ");
            answer(
                id,
                PromptAnswer::DenyWithMessage(message.unwrap_or_default()),
            );
        }
        'r' if refresh_stale(id) => answer(id, PromptAnswer::Replan),
        'Y' => allow_answer(id),
        'D' => {
            if let Err(e) = burst::open_combined(id) {
                notify_warn(&format!("lathe: cannot show the answer's changes: {e}"));
            }
        }
        '?' => {
            with_view(id, |v| v.help = !v.help);
            window::redraw(id);
        }
        ' ' => toggle_hunk(id),
        'd' => {
            if let Err(e) = diff_tab::open(id) {
                notify_warn(&format!("lathe: cannot open the diff tab: {e}"));
            }
        }
        _ => {}
    }
}

/// What ask `id` shows and how the user changed it so far, if it is
/// still queued.
fn shown(id: u64) -> Option<(PermissionPreview, AskView)> {
    ASKS.with(|a| {
        a.borrow()
            .queue
            .iter()
            .find(|q| q.id == id)
            .map(|q| (q.preview.clone(), q.view.clone()))
    })
}

/// `y`, `a` or `A` on a fresh plan.
fn allow(id: u64, key: char) {
    let Some((preview, view)) = shown(id) else {
        return;
    };
    let revised = view.revised();
    let reply = match (key, revised) {
        ('y', false) => PromptAnswer::AllowOnce,
        ('y', true) => {
            let after = view::effective_after(&preview, &view);
            let unchanged = match (&preview.change, &after) {
                (Some((before, _)), Some(after)) => before.as_deref().unwrap_or("") == after,
                _ => false,
            };
            match after {
                // Every hunk left out: nothing of the change remains.
                _ if unchanged && view.edited.is_none() => PromptAnswer::Deny,
                Some(after) => PromptAnswer::AllowRevised(Revision {
                    after,
                    // After an edit the hunks are those of the user's
                    // version, not of the model's diff: "edited" says it.
                    rejected_hunks: if view.edited.is_some() {
                        Vec::new()
                    } else {
                        view.rejected.iter().map(|h| h + 1).collect()
                    },
                    edited: view.edited.is_some(),
                }),
                None => PromptAnswer::AllowOnce,
            }
        }
        (_, true) => {
            notify_warn(REVISED_RULE_KEY);
            return;
        }
        _ if preview.session_rules.is_empty() => {
            notify_warn(NO_RULE_KEY);
            return;
        }
        ('a', false) => PromptAnswer::AllowSession,
        _ => PromptAnswer::AllowAndSave,
    };
    answer(id, reply);
}

/// `Y`: allows this change and the rest of its answer's file changes,
/// when offered (`view::offers_answer`) and the plan is fresh.
fn allow_answer(id: u64) {
    let offered = ASKS.with(|a| {
        a.borrow()
            .queue
            .iter()
            .find(|q| q.id == id)
            .is_some_and(|q| view::offers_answer(&q.preview, &q.view))
    });
    if !offered {
        notify_warn(NO_ANSWER_KEY);
    } else if refresh_stale(id) {
        notify_warn(STALE_KEY);
    } else {
        answer(id, PromptAnswer::AllowAnswer);
    }
}

/// Toggles the hunk under the cursor in the float of ask `id`.
fn toggle_hunk(id: u64) {
    let hunk = ASKS.with(|a| {
        let a = a.borrow();
        let f = a.float.as_ref().filter(|f| f.ask_id == id)?;
        let (row, _) = f.win.get_cursor().ok()?;
        f.hunk_of_line.get(row.checked_sub(1)?).copied().flatten()
    });
    if let Some(h) = hunk {
        with_view(id, |v| {
            if !v.rejected.remove(&h) {
                v.rejected.insert(h);
            }
        });
        window::redraw(id);
    }
}

/// Runs `f` on the view state of ask `id`.
fn with_view(id: u64, f: impl FnOnce(&mut AskView)) {
    ASKS.with(|a| {
        if let Some(q) = a.borrow_mut().queue.iter_mut().find(|q| q.id == id) {
            f(&mut q.view);
        }
    });
}

/// Checks whether ask `id`'s document moved on since the plan (the stale
/// rule against its watch stamp), marks it and redraws when it did.
/// Returns the stale state.
fn refresh_stale(id: u64) -> bool {
    let Some((watch, path, already)) = ASKS.with(|a| {
        a.borrow().queue.iter().find(|q| q.id == id).map(|q| {
            (
                q.preview.watch.clone(),
                q.preview.path.clone(),
                q.view.stale,
            )
        })
    }) else {
        return false;
    };
    if already {
        return true;
    }
    let Some(watch) = watch else { return false };
    let stale = match &watch.version {
        Version::Buffer { bufnr, .. } => {
            let buf = nvim_oxi::api::Buffer::from(*bufnr as i32);
            match crate::adapters::buffer_text::snapshot(&buf) {
                Ok(s) => watch.is_stale(
                    &Version::Buffer {
                        bufnr: *bufnr,
                        changedtick: s.tick,
                    },
                    || TextHash::of(&s.text()),
                ),
                Err(_) => true,
            }
        }
        Version::Disk { .. } => match path.map(std::fs::read) {
            Some(Ok(bytes)) => match lathe_core::editor::codec::decode(&bytes) {
                Ok((text, _)) => TextHash::of(&text) != watch.hash,
                Err(_) => true,
            },
            _ => true,
        },
    };
    if stale {
        with_view(id, |v| v.stale = true);
        window::redraw(id);
    }
    stale
}

/// Watches buffer `bufnr` for changes while ask `id` is pending: a change
/// schedules a stale check (the callback itself may not call the API).
fn watch_buffer(id: u64, bufnr: i64) {
    let buf = nvim_oxi::api::Buffer::from(bufnr as i32);
    let opts = nvim_oxi::api::opts::BufAttachOpts::builder()
        .on_lines(move |_args: nvim_oxi::api::opts::OnLinesArgs| {
            let pending = ASKS.with(|a| {
                a.try_borrow()
                    .map(|a| a.queue.iter().any(|q| q.id == id))
                    .unwrap_or(true)
            });
            if pending {
                nvim_oxi::schedule(move |()| {
                    let _ = guarded("permission stale check", || refresh_stale(id));
                });
            }
            // Detach once the ask is answered.
            !pending
        })
        .build();
    let _ = buf.attach(false, &opts);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_texts() {
        assert_eq!(STALE_KEY, "lathe: the file changed since this change was planned: press r to plan it again, or n to deny");
        assert_eq!(
            NO_RULE_KEY,
            "lathe: a and A are not offered: no narrow rule for this session would let this call run without asking; y allows it once, n denies it"
        );
        assert_eq!(
            NO_ANSWER_KEY,
            "lathe: Y is offered on a file change when more of this answer's file changes are queued (and not after <Space> or an edit in the diff tab); y allows this one"
        );
        assert_eq!(
            PENDING_OPERATOR,
            "waiting for you to finish `{keys}` (or <Esc>), then: {title}"
        );
        assert_eq!(
            REVISED_RULE_KEY,
            "lathe: a and A allow the change as proposed; press y to apply your selection"
        );
    }
}
