//! What lathe is doing, for statuslines and scripts: `lathe.status()`
//! (a table) and `lathe.statusline_component()` (a short string, cheap
//! enough for every redraw); `:help lathe-status`. They read the current
//! session, its [`crate::ui::status_sink::LiveStatus`] and the float's queue.

use serde_json::{json, Value};

use crate::ui::status_sink::live_of;
use crate::ui::user_events;
use lathe_core::agent::Status;
use lathe_core::events::TurnOutcome;

/// Longest tool detail shown by the statusline component, in chars.
pub const COMPONENT_DETAIL_CHARS: usize = 30;

/// What `lathe.status()` returns, as JSON (see `:help lathe.status()`):
/// `{ state, mode, model, tool, waiting_ask, tokens, spend, context,
/// last, error }`.
/// Main thread.
pub fn status_json() -> Value {
    let session = crate::api::state::session();
    let ask = crate::ui::float::first_ask();
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
    // Before the first request after `setup()` there is no session yet:
    // what it will be made with.
    let mode = match &session {
        Some(s) => s.mode(),
        None => crate::api::state::with_config(|c| c.permissions.mode).unwrap_or_default(),
    }
    .as_str();
    let model = match &session {
        Some(s) => s.model(),
        None => crate::api::state::with_config(|c| c.model.clone())
            .unwrap_or_else(|| lathe_core::config::DEFAULT_MODEL.to_string()),
    };
    let usage = session.as_ref().map(|s| s.usage()).unwrap_or_default();
    let mut out = json!({
        "state": state,
        "mode": mode,
        "model": model,
        "tokens": user_events::usage_json(&usage),
    });
    if usage.input_tokens.is_some() || usage.output_tokens.is_some() {
        out["spend"] = json!(super::chat::lines::tokens(&usage));
    }
    if let Some(m) = session.as_ref().and_then(|s| s.context_meter()) {
        out["context"] = json!({
            "used": m.used,
            "window": m.window,
            "percent": (m.used * 100).checked_div(m.window).unwrap_or(0),
            "label": m.label(),
        });
    }
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
    let Some(session) = crate::api::state::session() else {
        // Configured by `setup()`, its session not made yet: idle, nothing
        // used.
        return crate::api::state::with_config(|c| idle_component(c.permissions.mode))
            .unwrap_or_default();
    };
    let running = session.status() == Status::Running;
    let mut text = if let Some((_, title, n)) = crate::ui::float::first_ask() {
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
        if let Some(m) = session.context_meter() {
            t.push_str(" · ");
            t.push_str(&m.label());
            push_mode(&mut t, session.mode());
            return t;
        }
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
    push_mode(&mut text, session.mode());
    text
}

/// `lathe: idle`, with `mode` unless it is the default.
fn idle_component(mode: lathe_core::permissions::Mode) -> String {
    let mut text = "lathe: idle".to_string();
    push_mode(&mut text, mode);
    text
}

/// Appends ` · <mode>` unless `mode` is the default.
fn push_mode(text: &mut String, mode: lathe_core::permissions::Mode) {
    if mode != lathe_core::permissions::Mode::default() {
        text.push_str(" · ");
        text.push_str(mode.as_str());
    }
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
}
