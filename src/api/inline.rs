//! `inline_edit(opts)` and `inline_stop(id)` of `lathe.core`: the request
//! of an inline edit (`:'<,'>Lathe edit`, docs/inline-edit.md) and its
//! stop. The core streams the answer ([`Session::inline_edit`]); each
//! piece is drawn at most once per main-loop trip: the proposal's hunks
//! against the selected lines go to `lua/lathe/inline.lua` (`update`),
//! which shows them in the buffer and applies what the user accepts.
//!
//! [`Session::inline_edit`]: lathe_core::agent::Session::inline_edit

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use mlua::{Lua, LuaSerdeExt as _, SerializeOptions, Value};
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use lathe_core::agent::inline::{self, InlineEdit, STOPPED};

use crate::api::state;
use crate::host::bridge::MainThread;
use crate::host::guard::guarded;
use crate::host::lua_handle::{lua, module_fn};

/// The Lua module that shows the proposal.
const MODULE: &str = "lathe.inline";

thread_local! {
    /// The stop of each inline edit still streaming, by its id.
    static RUNNING: RefCell<HashMap<u64, CancellationToken>> = RefCell::new(HashMap::new());
}

/// `inline_edit`'s argument, as `lua/lathe/inline.lua` sends it.
#[derive(Deserialize)]
struct Opts {
    id: u64,
    path: String,
    filetype: String,
    lines: Vec<String>,
    first: usize,
    last: usize,
    instruction: String,
}

fn fail<T>(msg: impl Into<String>) -> mlua::Result<T> {
    Err(mlua::Error::RuntimeError(msg.into()))
}

/// `inline_edit({ id, path, filetype, lines, first, last, instruction })`:
/// starts the request of an inline edit of lines `first`..`last` (1-based)
/// of `lines` and returns at once. `lathe.inline.update(id, update)` gets
/// `{ state, hunks, error }` on the main thread while it streams
/// (`state` "streaming") and once when it ends ("done", "error" with the
/// reason in `error`, or "stopped"); `hunks` are `{ start, old, new }`
/// (`start` 0-based from the first selected line). Errors: a bad `opts`,
/// no session can be made.
pub fn inline_edit(lua: &Lua, opts: Value) -> mlua::Result<()> {
    let opts: Opts = match lua.from_value(opts) {
        Ok(o) => o,
        Err(e) => return fail(format!("lathe.edit: {e}")),
    };
    if opts.first < 1 || opts.last < opts.first || opts.last > opts.lines.len() {
        return fail(format!(
            "lathe.edit: lines {}-{} are not in the buffer",
            opts.first, opts.last
        ));
    }
    let Some(main) = state::main_thread() else {
        return fail("lathe is not loaded");
    };
    let session = state::session_or_default().or_else(fail)?;
    let rt = crate::host::runtime::handle().or_else(|e| fail(e.to_string()))?;
    let id = opts.id;
    let edit = InlineEdit {
        path: opts.path,
        filetype: opts.filetype,
        lines: opts.lines,
        first: opts.first,
        last: opts.last,
        instruction: opts.instruction,
    };
    let original = Arc::new(edit.selected().to_vec());
    let on_text = streaming(main.clone(), id, original.clone());
    let (task, cancel) = session.inline_edit(&edit, &rt, on_text);
    RUNNING.with(|r| r.borrow_mut().insert(id, cancel));
    rt.spawn(async move {
        let end = match task.await {
            Ok(end) => end,
            Err(e) => Err(format!("lathe: the inline edit failed: {e}")),
        };
        let _ = main.post(move || {
            RUNNING.with(|r| r.borrow_mut().remove(&id));
            let (state, text, error) = match end {
                Ok(text) => ("done", text, None),
                Err(e) if e == STOPPED => ("stopped", String::new(), None),
                Err(e) => ("error", String::new(), Some(e)),
            };
            draw(id, &original, &text, state, error);
        });
    });
    Ok(())
}

/// `inline_stop(id)`: stops the inline edit `id` while it streams; `false`
/// when it is not streaming.
pub fn inline_stop(_: &Lua, id: u64) -> mlua::Result<bool> {
    let cancel = RUNNING.with(|r| r.borrow_mut().remove(&id));
    Ok(cancel.map(|c| c.cancel()).is_some())
}

/// The answer's pieces, drawn on the main thread: the newest text is kept,
/// and one draw is queued at a time.
fn streaming(main: MainThread, id: u64, original: Arc<Vec<String>>) -> Box<dyn FnMut(&str) + Send> {
    let newest = Arc::new(Mutex::new(String::new()));
    let queued = Arc::new(AtomicBool::new(false));
    Box::new(move |text: &str| {
        if let Ok(mut n) = newest.lock() {
            n.clear();
            n.push_str(text);
        }
        if queued.swap(true, Ordering::AcqRel) {
            return;
        }
        let (newest, queued, original) = (newest.clone(), queued.clone(), original.clone());
        let _ = main.post(move || {
            queued.store(false, Ordering::Release);
            // Ended meanwhile: the end's own draw follows.
            if !RUNNING.with(|r| r.borrow().contains_key(&id)) {
                return;
            }
            let text = newest.lock().map(|t| t.clone()).unwrap_or_default();
            draw(id, &original, &text, "streaming", None);
        });
    })
}

/// Hands the proposal of `text` to `lathe.inline.update`. Main thread.
fn draw(id: u64, original: &[String], text: &str, state: &str, error: Option<String>) {
    guarded("inline edit", || {
        let done = state != "streaming";
        let proposal = inline::proposal_lines(text, done);
        let hunks: Vec<_> = if state == "streaming" || state == "done" {
            inline::hunks(original, &proposal, !done)
                .into_iter()
                .map(|h| json!({ "start": h.start, "old": h.old, "new": h.new }))
                .collect()
        } else {
            Vec::new()
        };
        let update = json!({ "state": state, "hunks": hunks, "error": error });
        let lua = lua();
        let opts = SerializeOptions::new()
            .serialize_none_to_null(false)
            .serialize_unit_to_null(false);
        let Ok(value) = lua.to_value_with(&update, opts) else {
            return;
        };
        if let Ok(f) = module_fn(MODULE, "update") {
            if let Err(e) = f.call::<()>((id, value)) {
                crate::host::guard::notify_error(&format!("lathe: inline edit: {e}"));
            }
        }
    });
}
