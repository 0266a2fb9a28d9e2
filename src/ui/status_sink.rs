//! [`StatusSink`] sits between the session and the chat's sink: it keeps
//! the calls that run and the last token counts in a [`LiveStatus`] (read
//! on the main thread without any Neovim call, by `lathe.status()`), and
//! posts the `User` events (`crate::ui::user_events`) to the main thread.

use std::cell::RefCell;
use std::sync::{Arc, Mutex, Weak};

use crate::host::bridge::MainThread;
use crate::host::guard::{guarded, notify_error};
use crate::ui::user_events;
use lathe_core::agent::Session;
use lathe_core::events::{AgentEvent, EventSink};
use lathe_core::protocol::Usage;

/// One session's running calls and token counts, as its events said.
#[derive(Default)]
pub struct LiveStatus {
    inner: Mutex<Live>,
}

#[derive(Default, Clone)]
struct Live {
    /// Calls started and not finished: (id, name, detail), oldest first.
    running: Vec<(String, String, String)>,
    /// The last `Usage` event: (turn, session).
    usage: Option<(Usage, Usage)>,
}

impl LiveStatus {
    fn update(&self, ev: &AgentEvent) -> Option<(Usage, Usage)> {
        let mut live = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        match ev {
            AgentEvent::ToolStarted {
                id, name, detail, ..
            } => live
                .running
                .push((id.clone(), name.clone(), detail.clone())),
            AgentEvent::ToolFinished { id, .. } => live.running.retain(|(i, _, _)| i != id),
            AgentEvent::Usage { turn, session } => {
                live.usage = Some((turn.clone(), session.clone()))
            }
            AgentEvent::TurnEnded { .. } => live.running.clear(),
            _ => {}
        }
        live.usage.clone()
    }

    /// The newest running call (id, name, detail) and how many run.
    pub fn latest_tool(&self) -> Option<((String, String, String), usize)> {
        let live = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        live.running.last().map(|t| (t.clone(), live.running.len()))
    }
}

/// Passes events on to the chat's sink, keeps the [`LiveStatus`] and fires
/// the `User` events on the main thread.
pub struct StatusSink {
    inner: Arc<dyn EventSink>,
    live: Arc<LiveStatus>,
    main: MainThread,
}

impl StatusSink {
    /// A sink in front of `inner`, keeping `live`, firing through `main`.
    pub fn new(inner: Arc<dyn EventSink>, live: Arc<LiveStatus>, main: MainThread) -> Self {
        Self { inner, live, main }
    }
}

impl EventSink for StatusSink {
    fn emit(&self, event: AgentEvent) {
        let usage = self.live.update(&event);
        let fired = user_events::event_for(&event, usage.as_ref());
        if fired.is_some() || ends_compaction(&event) {
            let _ = self.main.post(move || {
                let _ = guarded("lathe User event", || {
                    if let Some((pattern, data)) = fired {
                        if let Err(e) = user_events::fire(pattern, &data) {
                            notify_error(&format!("lathe: User {pattern} autocmd failed: {e}"));
                        }
                    }
                    // Statuslines show the new state without waiting for
                    // the next redraw, drawn right after this step.
                    redraw_statuslines();
                });
            });
        }
        self.inner.emit(event);
    }
}

/// Whether `ev` ends a compaction: a compaction within a turn
/// ([`AgentEvent::Compacted`]: the meter changed), or `:Lathe compact`,
/// which ends with its [`AgentEvent::Usage`] once the session is idle
/// (within a turn, `Usage` comes just before `TurnEnded`, which redraws
/// anyway). The statuslines are redrawn then, as at a turn's end.
fn ends_compaction(ev: &AgentEvent) -> bool {
    matches!(ev, AgentEvent::Compacted { .. } | AgentEvent::Usage { .. })
}

/// Has every statusline redrawn (`:redrawstatus!`) in a step of its own,
/// queued after this one (`vim.schedule`): `:redrawstatus` updates the
/// whole screen, which after a chat edit means the chat's tree-sitter
/// parse and the measuring of its wrapped lines; done inside lathe's step
/// it made that step as long. With a UI, Neovim's own redraw after this
/// step has done that work by the time the statuslines are drawn. Main
/// thread.
fn redraw_statuslines() {
    let _ = crate::host::lua_handle::module_fn("lathe.ui", "redraw_statuslines_later")
        .and_then(|f| f.call::<()>(()));
}

thread_local! {
    /// The live status of each session made (main thread).
    static LIVES: RefCell<Vec<(Weak<Session>, Arc<LiveStatus>)>> = const { RefCell::new(Vec::new()) };
}

/// Remembers `live` as `session`'s (sessions dropped since are forgotten).
pub fn register(session: &Arc<Session>, live: Arc<LiveStatus>) {
    LIVES.with(|l| {
        let mut l = l.borrow_mut();
        l.retain(|(s, _)| s.strong_count() > 0);
        l.push((Arc::downgrade(session), live));
    });
}

/// The live status registered for `session`, if any.
pub fn live_of(session: &Arc<Session>) -> Option<Arc<LiveStatus>> {
    LIVES.with(|l| {
        l.borrow()
            .iter()
            .find(|(s, _)| s.upgrade().is_some_and(|s| Arc::ptr_eq(&s, session)))
            .map(|(_, live)| live.clone())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use lathe_core::events::{ToolStatus, TurnOutcome};

    #[test]
    fn live_status_follows_the_calls() {
        let live = LiveStatus::default();
        let start = |id: &str| AgentEvent::ToolStarted {
            id: id.into(),
            name: "Bash".into(),
            detail: id.into(),
            input: serde_json::Value::Null,
        };
        live.update(&start("a"));
        live.update(&start("b"));
        assert_eq!(
            live.latest_tool().map(|t| (t.0 .0, t.1)),
            Some(("b".into(), 2))
        );
        live.update(&AgentEvent::ToolFinished {
            id: "b".into(),
            name: "Bash".into(),
            status: ToolStatus::Done,
            summary: String::new(),
            content: String::new(),
            display: None,
        });
        assert_eq!(live.latest_tool().map(|t| t.0 .0), Some("a".into()));
        live.update(&AgentEvent::TurnEnded {
            outcome: TurnOutcome::Done,
        });
        assert!(live.latest_tool().is_none());
    }
}
