//! What lathe is doing, for statuslines and scripts: `lathe.status()`
//! (a table), `lathe.statusline_component()` (a short string, cheap enough
//! for every redraw) and the `User` events (`:help lathe-status`,
//! `:help lathe-events`).
//!
//! [`StatusSink`] sits between the session and the chat's sink: it keeps
//! the calls that run and the last token counts in a [`LiveStatus`] (read
//! on the main thread without any Neovim call), and posts the `User`
//! events to the main thread.

use std::cell::RefCell;
use std::sync::{Arc, Mutex, Weak};

use serde_json::{json, Value};

use super::bridge::MainThread;
use super::guard::{guarded, notify_error};
use super::user_events;
use crate::agent::{Session, Status};
use crate::events::{AgentEvent, EventSink, TurnOutcome};
use crate::protocol::Usage;

/// Longest tool detail shown by the statusline component, in chars.
pub const COMPONENT_DETAIL_CHARS: usize = 30;

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
            } => live.running.push((id.clone(), name.clone(), detail.clone())),
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
    fn latest_tool(&self) -> Option<((String, String, String), usize)> {
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
        if let Some((pattern, data)) = user_events::event_for(&event, usage.as_ref()) {
            let _ = self.main.post(move || {
                let _ = guarded("lathe User event", || {
                    if let Err(e) = user_events::fire(pattern, &data) {
                        notify_error(&format!("lathe: User {pattern} autocmd failed: {e}"));
                    }
                    // Statuslines show the new state without waiting for
                    // the next redraw.
                    let _ = nvim_oxi::api::command("redrawstatus");
                });
            });
        }
        self.inner.emit(event);
    }
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

fn live_of(session: &Arc<Session>) -> Option<Arc<LiveStatus>> {
    LIVES.with(|l| {
        l.borrow()
            .iter()
            .find(|(s, _)| s.upgrade().is_some_and(|s| Arc::ptr_eq(&s, session)))
            .map(|(_, live)| live.clone())
    })
}

/// What `lathe.status()` returns, as JSON (see `:help lathe.status()`):
/// `{ state, mode, model, tool, waiting_ask, tokens, last, error }`.
/// Main thread.
pub fn status_json() -> Value {
    let session = super::state::session();
    let ask = super::float::first_ask();
    let waiting_ask = ask
        .as_ref()
        .map(|(tool, title, n)| json!({ "tool": tool, "title": title, "waiting": n }));
    let (running, last) = match session.as_ref().map(|s| s.status()) {
        Some(Status::Running) => (true, None),
        Some(Status::Idle(last)) => (false, last),
        None => (false, None),
    };
    let state = if ask.is_some() {
        "waiting"
    } else if running {
        "running"
    } else {
        "idle"
    };
    let tool = session
        .as_ref()
        .and_then(live_of)
        .and_then(|l| l.latest_tool())
        .filter(|_| running)
        .map(|((id, name, detail), n)| {
            json!({ "id": id, "name": name, "detail": detail, "running": n })
        });
    let mode = session
        .as_ref()
        .map(|s| s.mode())
        .unwrap_or_default()
        .as_str();
    let model = session
        .as_ref()
        .map(|s| s.config().model.clone())
        .unwrap_or_else(|| crate::config::DEFAULT_MODEL.to_string());
    let usage = session.as_ref().map(|s| s.usage()).unwrap_or_default();
    let mut out = json!({
        "state": state,
        "mode": mode,
        "model": model,
        "tokens": user_events::usage_json(&usage),
    });
    if let Some(t) = tool {
        out["tool"] = t;
    }
    if let Some(a) = waiting_ask {
        out["waiting_ask"] = a;
    }
    if let Some(o) = &last {
        out["last"] = json!(o.as_str());
        if let TurnOutcome::Error(m) = o {
            out["error"] = json!(m);
        }
    }
    out
}

/// The statusline component's text (`lathe.statusline_component()`),
/// e.g. `lathe: Bash(npm test)`, `lathe: waiting for you (Edit a.py)`,
/// `lathe: idle · 4.3k tokens · plan`; `""` before the first session.
/// Main thread; reads only lathe's own state.
pub fn component() -> String {
    let Some(session) = super::state::session() else {
        return String::new();
    };
    let running = session.status() == Status::Running;
    let mut text = if let Some((_, title, n)) = super::float::first_ask() {
        let more = if n > 1 {
            format!(" +{}", n - 1)
        } else {
            String::new()
        };
        format!("lathe: waiting for you ({title}{more})")
    } else if running {
        match live_of(&session).and_then(|l| l.latest_tool()) {
            Some(((_, name, detail), _)) => format!("lathe: {name}({})", cut(&detail)),
            None => "lathe: working".to_string(),
        }
    } else {
        let mut t = "lathe: idle".to_string();
        let u = session.usage();
        let total = u.input_tokens.unwrap_or(0)
            + u.output_tokens.unwrap_or(0)
            + u.cache_read_input_tokens.unwrap_or(0)
            + u.cache_creation_input_tokens.unwrap_or(0);
        if total > 0 {
            t.push_str(&format!(" · {} tokens", short(total)));
        }
        t
    };
    let mode = session.mode();
    if mode != crate::permissions::Mode::default() {
        text.push_str(" · ");
        text.push_str(mode.as_str());
    }
    text
}

/// `detail` cut to [`COMPONENT_DETAIL_CHARS`] with "…".
fn cut(detail: &str) -> String {
    let first = detail.lines().next().unwrap_or("");
    if first.chars().count() <= COMPONENT_DETAIL_CHARS {
        return first.to_string();
    }
    let mut s: String = first.chars().take(COMPONENT_DETAIL_CHARS - 1).collect();
    s.push('…');
    s
}

/// `n` for people: `950`, `12.3k`, `1.2M`.
fn short(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{:.1}k", n as f64 / 1_000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_are_cut_for_the_statusline() {
        assert_eq!(cut("npm test"), "npm test");
        let long = "x".repeat(40);
        let c = cut(&long);
        assert_eq!(c.chars().count(), COMPONENT_DETAIL_CHARS);
        assert!(c.ends_with('…'));
        assert_eq!(cut("a\nb"), "a");
        assert_eq!(short(4321), "4.3k");
    }

    #[test]
    fn live_status_follows_the_calls() {
        let live = LiveStatus::default();
        let start = |id: &str| AgentEvent::ToolStarted {
            id: id.into(),
            name: "Bash".into(),
            detail: id.into(),
        };
        live.update(&start("a"));
        live.update(&start("b"));
        assert_eq!(live.latest_tool().map(|t| (t.0 .0, t.1)), Some(("b".into(), 2)));
        live.update(&AgentEvent::ToolFinished {
            id: "b".into(),
            name: "Bash".into(),
            status: crate::events::ToolStatus::Done,
            summary: String::new(),
        });
        assert_eq!(live.latest_tool().map(|t| t.0 .0), Some("a".into()));
        live.update(&AgentEvent::TurnEnded {
            outcome: TurnOutcome::Done,
        });
        assert!(live.latest_tool().is_none());
    }
}
