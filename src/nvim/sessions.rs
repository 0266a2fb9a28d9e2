//! Saved conversations from Lua: `lathe.sessions()`, `lathe.resume()`,
//! `lathe.new()` (`:Lathe resume`, `:Lathe new`; `:help lathe-sessions`).
//! The storage is `agent::session_log`; this module lists it, makes a
//! resumed session current and draws it in the chat by feeding its events
//! to a chat sink, as a live turn would.

use mlua::{Lua, LuaSerdeExt, Value};
use serde_json::json;

use super::chat::ChatSink;
use super::state;
use crate::agent::session_log;
use crate::events::EventSink;

/// Error of `:Lathe resume last` (and `lathe.resume("last")`) when no
/// other conversation of this project is saved.
pub const NOTHING_TO_RESUME: &str =
    "lathe.resume: no saved conversation of this project to resume yet; ask something first (:Lathe {prompt}), it is saved as you go";

/// Message after a resumed session was repaired. `{title}`.
pub const RESUMED_REPAIRED: &str = "lathe: resumed \"{title}\"; it ended in the middle of a request, so its unfinished tool calls were marked interrupted";

/// A Lua error whose text is exactly `msg`.
fn fail<T>(msg: impl Into<String>) -> mlua::Result<T> {
    Err(mlua::Error::RuntimeError(msg.into()))
}

/// The saved sessions of the current project, newest first, without the
/// current session's own file.
fn listed() -> Vec<session_log::SessionSummary> {
    let Some(dir) = state::project_sessions_dir() else {
        return Vec::new();
    };
    let current = state::session().and_then(|s| s.log_path().map(|p| p.to_path_buf()));
    session_log::list(&dir)
        .into_iter()
        .filter(|s| current.as_deref() != Some(s.path.as_path()))
        .collect()
}

/// `sessions()` → the current project's saved conversations, newest
/// first (the current one left out): `{ id, path, first_prompt, model, cwd,
/// created, updated }`, times in seconds since the epoch (for `os.date`).
pub fn sessions(lua: &Lua, (): ()) -> mlua::Result<Value> {
    let list: Vec<serde_json::Value> = listed()
        .into_iter()
        .map(|s| {
            json!({
                "id": s.header.id,
                "path": s.path.display().to_string(),
                "first_prompt": s.header.first_prompt,
                "model": s.header.model,
                "cwd": s.header.cwd,
                "created": s.header.created_ms / 1000,
                "updated": s.updated_ms / 1000,
            })
        })
        .collect();
    lua.to_value(&list)
}

/// `resume(which)`: makes a saved conversation the current one and shows it
/// in the chat. `which` is a session file's path (from `sessions()`) or
/// `"last"` (the newest other than the current one). A running request is
/// stopped first. Lines that could not be read are skipped with a warning.
/// Errors: nothing to resume, the file cannot be read.
pub fn resume(_: &Lua, which: Value) -> mlua::Result<()> {
    let which = match which {
        Value::String(s) => s.to_str()?.to_string(),
        other => {
            return fail(format!(
                "lathe.resume(which): which must be a string, got {}",
                other.type_name()
            ))
        }
    };
    let path = if which == "last" {
        match listed().into_iter().next() {
            Some(s) => s.path,
            None => return fail(NOTHING_TO_RESUME),
        }
    } else {
        std::path::PathBuf::from(which)
    };
    let resumed = state::resume_session(&path).or_else(|e| fail(format!("lathe.resume: {e}")))?;
    reset_chat();
    super::chat::open_window()
        .or_else(|e| fail(format!("lathe.resume: cannot open the chat window: {e}")))?;
    let title = crate::agent::resume::first_prompt(&resumed.events)
        .unwrap_or_default()
        .to_string();
    if let Some(main) = state::main_thread() {
        let sink = ChatSink::new(main);
        for ev in resumed.events {
            sink.emit(ev);
        }
    }
    for w in &resumed.warnings {
        super::guard::notify_warn(w);
    }
    if resumed.repaired {
        super::guard::notify_warn(&crate::text::fill(
            RESUMED_REPAIRED,
            &[("title", &title.chars().take(60).collect::<String>())],
        ));
    }
    Ok(())
}

/// `new()`: starts a new conversation with the last `setup()`'s
/// configuration; the old one stays saved (`:Lathe resume` brings it
/// back). The chat is cleared. A running request is stopped.
pub fn new(_: &Lua, (): ()) -> mlua::Result<()> {
    state::new_conversation().or_else(|e| fail(format!("lathe.new: {e}")))?;
    reset_chat();
    Ok(())
}

/// Empties the chat in place (`chat::clear`): its windows stay open and
/// the prompt area keeps what the user is typing. Main thread.
fn reset_chat() {
    super::chat::clear();
}
