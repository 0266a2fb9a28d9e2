//! lathe's `User` autocmds (`:help lathe-events`): `LatheTurnStart`,
//! `LatheToolStart`, `LatheToolDone`, `LatheTurnDone` (from the session's
//! [`AgentEvent`]s, see the status sink) and
//! `LathePermissionAsk` (from the float). Fired on the main thread only,
//! each with a `data` table.

use serde_json::{json, Value};

use lathe_core::events::{AgentEvent, ToolStatus, TurnOutcome};
use lathe_core::protocol::Usage;

/// A turn began. `data = { prompt }`.
pub const TURN_START: &str = "LatheTurnStart";
/// A tool call began. `data = { id, name, detail }`.
pub const TOOL_START: &str = "LatheToolStart";
/// A tool call ended. `data = { id, name, status, summary }`.
pub const TOOL_DONE: &str = "LatheToolDone";
/// A turn ended. `data = { outcome, error?, tokens, session_tokens }`.
pub const TURN_DONE: &str = "LatheTurnDone";

/// Token counts as Lua sees them (`lathe.Usage`): `{ input, output,
/// cache_read, cache_write }`, 0 for a count the API did not report.
pub fn usage_json(u: &Usage) -> Value {
    json!({
        "input": u.input_tokens.unwrap_or(0),
        "output": u.output_tokens.unwrap_or(0),
        "cache_read": u.cache_read_input_tokens.unwrap_or(0),
        "cache_write": u.cache_creation_input_tokens.unwrap_or(0),
    })
}

/// The `User` event an [`AgentEvent`] fires, with its data; `None` for
/// events that fire none (text, progress, notices). `usage` is the last
/// `AgentEvent::Usage` of the turn (turn, session), for `LatheTurnDone`.
pub fn event_for(ev: &AgentEvent, usage: Option<&(Usage, Usage)>) -> Option<(&'static str, Value)> {
    match ev {
        AgentEvent::TurnStarted { prompt } => Some((TURN_START, json!({ "prompt": prompt }))),
        AgentEvent::ToolStarted {
            id, name, detail, ..
        } => Some((
            TOOL_START,
            json!({ "id": id, "name": name, "detail": detail }),
        )),
        AgentEvent::ToolFinished {
            id,
            name,
            status,
            summary,
            ..
        } => {
            // What the chat shows: a failure's first sentence, not the
            // advice written for the model after it.
            let summary = match status {
                ToolStatus::Done | ToolStatus::Failed => summary.clone(),
                _ => crate::ui::chat::lines::user_summary(summary),
            };
            Some((
                TOOL_DONE,
                json!({ "id": id, "name": name, "status": status.as_str(), "summary": summary }),
            ))
        }
        AgentEvent::TurnEnded { outcome } => {
            let (turn, session) = usage.cloned().unwrap_or_default();
            let mut data = json!({
                "outcome": outcome.as_str(),
                "tokens": usage_json(&turn),
                "session_tokens": usage_json(&session),
            });
            if let TurnOutcome::Error(m) = outcome {
                data["error"] = json!(m);
            }
            Some((TURN_DONE, data))
        }
        _ => None,
    }
}

/// Runs `nvim_exec_autocmds("User", { pattern, data, modeline = false })`
/// (`:help nvim_exec_autocmds()`; `data` arrives in Lua as a table). Main
/// thread. Errors: the API's message (an autocmd's own error included).
pub fn fire(pattern: &str, data: &Value) -> Result<(), String> {
    let opts = nvim_oxi::api::opts::ExecAutocmdsOpts::builder()
        .patterns(pattern)
        .modeline(false)
        .data(to_object(data))
        .build();
    nvim_oxi::api::exec_autocmds(["User"], &opts).map_err(|e| e.to_string())
}

/// `v` as a Neovim object: objects become dictionaries, arrays arrays,
/// integers integers.
fn to_object(v: &Value) -> nvim_oxi::Object {
    use nvim_oxi::Object;
    match v {
        Value::Null => Object::nil(),
        Value::Bool(b) => Object::from(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Object::from(i),
            None => Object::from(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => Object::from(s.as_str()),
        Value::Array(a) => a.iter().map(to_object).collect::<Object>(),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| (k.as_str(), to_object(v)))
            .collect::<Object>(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lathe_core::events::ToolStatus;

    #[test]
    fn events_and_their_data() {
        let (p, d) = event_for(
            &AgentEvent::TurnStarted {
                prompt: "fix it".into(),
            },
            None,
        )
        .unwrap();
        assert_eq!((p, d), (TURN_START, json!({ "prompt": "fix it" })));
        let (p, d) = event_for(
            &AgentEvent::ToolFinished {
                id: "t".into(),
                name: "Read".into(),
                status: ToolStatus::Denied,
                summary: "The user declined this call. Do not retry this call; choose another approach or ask the user.".into(),
                content: String::new(),
                display: None,
            },
            None,
        )
        .unwrap();
        assert_eq!(p, TOOL_DONE);
        assert_eq!(d["status"], "denied");
        assert_eq!(d["summary"], "The user declined this call.");
        let usage = (
            Usage {
                output_tokens: Some(3),
                ..Usage::default()
            },
            Usage {
                output_tokens: Some(9),
                ..Usage::default()
            },
        );
        let (p, d) = event_for(
            &AgentEvent::TurnEnded {
                outcome: TurnOutcome::Error("boom".into()),
            },
            Some(&usage),
        )
        .unwrap();
        assert_eq!(p, TURN_DONE);
        assert_eq!(d["outcome"], "error");
        assert_eq!(d["error"], "boom");
        assert_eq!(d["tokens"]["output"], 3);
        assert_eq!(d["session_tokens"]["output"], 9);
        assert!(event_for(&AgentEvent::TextDelta { text: "x".into() }, None).is_none());
    }
}
