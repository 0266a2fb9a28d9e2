//! Saved conversations from Lua: `lathe.sessions()`, `lathe.resume()`,
//! `lathe.new()` (`:Lathe resume`, `:Lathe new`; `:help lathe-sessions`).
//! The storage is `agent::session_log`; this module lists it, makes a
//! resumed session current and draws it in the chat by feeding its events
//! to a chat sink, as a live turn would.

use std::sync::atomic::{AtomicU64, Ordering};

use mlua::{Lua, LuaSerdeExt, Value};
use serde_json::json;

use crate::api::state;
use lathe_core::agent::{session_log, LoadedSession};

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
///
/// The file is read and replayed on a worker thread (it may hold a day of
/// work), so this returns at once; the session becomes current when that
/// is done, and the chat is drawn in steps of at most about a frame
/// ([`crate::ui::chat::draw_in_steps`]), the editor answering keys between
/// them. `lathe.wait()` waits for both. An error found on the worker
/// (the file is not a session file) is shown with `vim.notify`.
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
    if let Err(e) = std::fs::metadata(&path) {
        return fail(format!("lathe.resume: cannot read {}: {e}", path.display()));
    }
    let generation = LOADS.fetch_add(1, Ordering::AcqRel) + 1;
    let (Some(main), Ok(rt)) = (state::main_thread(), crate::host::runtime::handle()) else {
        // No runtime (Neovim is exiting): resume here and now.
        let loaded = LoadedSession::load(&path).or_else(|e| fail(format!("lathe.resume: {e}")))?;
        let made = state::resume_loaded(&path, loaded).or_else(fail)?;
        return show_resumed(made).or_else(fail);
    };
    let inputs = state::ResumeInputs::now().or_else(|e| fail(format!("lathe.resume: {e}")))?;
    LOADING.store(generation, Ordering::Release);
    rt.spawn(async move {
        // The file read and replayed, the session made: nothing of it
        // needs Neovim (docs/sessions.md, "Sessions and status").
        let made = tokio::task::spawn_blocking(move || {
            let loaded = LoadedSession::load(&path)?;
            inputs.make(&path, loaded)
        })
        .await
        .unwrap_or_else(|e| Err(e.to_string()));
        let _ = main.post(move || {
            // A later `:Lathe resume` or `:Lathe new` won.
            if LOADS.load(Ordering::Acquire) != generation {
                state::drop_off_main(made);
                return;
            }
            let shown =
                crate::host::main_stats::timed(crate::host::main_stats::Step::Resume, || {
                    made.map(state::finish_resume).and_then(show_resumed)
                });
            LOADING.store(0, Ordering::Release);
            if let Err(e) = shown {
                crate::host::guard::notify_error(&format!("lathe.resume: {e}"));
            }
        });
    });
    Ok(())
}

/// Resumes (and starts counting) `:Lathe resume`s and `:Lathe new`s, so a
/// file read on a worker never replaces a conversation started after it.
static LOADS: AtomicU64 = AtomicU64::new(0);
/// The `LOADS` count of the resume whose file is being read, 0 when none.
static LOADING: AtomicU64 = AtomicU64::new(0);

/// `true` while a `:Lathe resume` reads its file (`lathe.wait()` waits).
pub fn loading() -> bool {
    LOADING.load(Ordering::Acquire) != 0
}

/// Draws the session `resumed` (already current) in a fresh chat and
/// shows its warnings (main thread). Errors: the chat window cannot open.
fn show_resumed(resumed: lathe_core::agent::Resumed) -> Result<(), String> {
    reset_chat();
    crate::ui::chat::open_window().map_err(|e| format!("cannot open the chat window: {e}"))?;
    let title = lathe_core::agent::resume::first_prompt(&resumed.events)
        .unwrap_or_default()
        .to_string();
    crate::ui::chat::draw_in_steps(resumed.events);
    for w in &resumed.warnings {
        crate::host::guard::notify_warn(w);
    }
    if resumed.repaired {
        crate::host::guard::notify_warn(&lathe_core::text::fill(
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
    LOADS.fetch_add(1, Ordering::AcqRel);
    LOADING.store(0, Ordering::Release);
    state::new_conversation().or_else(|e| fail(format!("lathe.new: {e}")))?;
    reset_chat();
    Ok(())
}

/// Starts the chat afresh (`chat::clear`: a new buffer in the same
/// windows, the old one wiped); the prompt area keeps what the user is
/// typing. Main thread.
fn reset_chat() {
    crate::ui::chat::clear();
}
