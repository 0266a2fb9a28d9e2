//! Checkpoints from Lua: what `:Lathe changes` lists and reviews, and
//! `:Lathe rewind` (docs/checkpoints.md; `:help lathe-changes`, `:help
//! lathe-rewind`). The core keeps the checkpoints and makes the hunks and
//! the restore; `lua/lathe/changes.lua` draws the quickfix list and the
//! review, and reverts a hunk through its buffer.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use mlua::{Lua, LuaSerdeExt, Value};
use serde_json::{json, Value as Json};

use crate::api::state;
use lathe_core::agent::checkpoint::merge::{self, Hunk};
use lathe_core::agent::checkpoint::rewind::RewindWhat;
use lathe_core::agent::checkpoint::Kept;
use lathe_core::tools::support::paths;

/// The review's "keep" found the file moved on since the view was drawn.
pub const MOVED_ON: &str =
    "lathe: {file} changed since the review was drawn; drawn again, nothing kept";
/// `:Lathe rewind` with no conversation yet.
pub const NO_SESSION: &str = "lathe: nothing to rewind: no prompt was sent in this session yet";
/// `:Lathe rewind` while a request runs.
pub const BUSY: &str = "lathe: a request is running; stop it (:Lathe stop) before a rewind";

fn fail<T>(msg: impl Into<String>) -> mlua::Result<T> {
    Err(mlua::Error::RuntimeError(msg.into()))
}

/// The text of `path` now: its loaded buffer's, else the file's; `None`
/// when neither exists.
fn text_now(path: &Path) -> Result<Option<String>, String> {
    let canon = crate::adapters::buffer_text::canonical(path);
    if let Some(doc) = crate::adapters::buffer_text::read_loaded(path, canon.as_deref()) {
        return doc.map(|d| Some(d.text)).map_err(|e| e.to_string());
    }
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).replace("\r\n", "\n"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// A line without its terminator.
fn bare(l: &str) -> &str {
    l.strip_suffix('\n').unwrap_or(l)
}

fn hunk_json(h: &Hunk) -> Json {
    json!({
        "line": h.line(),
        "base_start": h.base.start,
        "base_end": h.base.end,
        "now_start": h.now.start,
        "now_end": h.now.end,
        "base_lines": h.base_lines.iter().map(|l| bare(l)).collect::<Vec<_>>(),
        "new_lines": h.new_lines.iter().map(|l| bare(l)).collect::<Vec<_>>(),
    })
}

fn text_lines(text: Option<&str>) -> Json {
    match text {
        None => Json::Null,
        Some(t) => Json::from(merge::lines(t).into_iter().map(bare).collect::<Vec<_>>()),
    }
}

/// `changes(all)` → what `:Lathe changes` shows: `{ files, bash }`. Each
/// file: `{ path, name, kind ("changed", "created", "deleted",
/// "not_kept"), base, now (lines, nil when there is no file), hunks }`,
/// each hunk `{ line, base_start, base_end, now_start, now_end, base_lines,
/// new_lines }` (0-based, end exclusive; `line` 1-based). `bash`: the
/// files Bash commands changed (`{ path, name }`). `save`: a reverted
/// buffer is written (`setup{ save_after_edit }`). Files whose text is as
/// the base are left out.
pub fn changes(lua: &Lua, all: Option<bool>) -> mlua::Result<Value> {
    let all = all.unwrap_or(false);
    let Some(session) = state::session() else {
        return lua.to_value(&json!({ "files": [], "bash": [] }));
    };
    let root = state::with_config(|c| c.cwd.clone()).unwrap_or_default();
    let mut files = Vec::new();
    for (path, base) in session.review_bases(all) {
        let name = paths::display(&root, &path);
        let now = match text_now(&path) {
            Ok(now) => now,
            Err(e) => {
                files.push(
                    json!({ "path": path, "name": name, "kind": "error", "error": e, "hunks": [] }),
                );
                continue;
            }
        };
        let base = match base {
            Kept::NotKept(bytes) => {
                files.push(json!({ "path": path, "name": name, "kind": "not_kept", "bytes": bytes, "hunks": [] }));
                continue;
            }
            Kept::Absent => None,
            Kept::Text(t) => Some(t),
        };
        if base.as_deref() == now.as_deref() {
            continue;
        }
        let kind = match (&base, &now) {
            (None, _) => "created",
            (_, None) => "deleted",
            _ => "changed",
        };
        let hunks: Vec<Json> = merge::hunks(base.as_deref(), now.as_deref())
            .iter()
            .map(hunk_json)
            .collect();
        files.push(json!({
            "path": path,
            "name": name,
            "kind": kind,
            "base": text_lines(base.as_deref()),
            "now": text_lines(now.as_deref()),
            "hunks": hunks,
        }));
    }
    let list = session.checkpoints();
    let from = if all { list.first() } else { list.last() }.map(|c| c.id);
    let mut bash: Vec<PathBuf> = list
        .iter()
        .filter(|c| from.is_some_and(|f| c.id >= f))
        .flat_map(|c| c.bash_touched.iter().cloned())
        .collect();
    bash.sort();
    bash.dedup();
    let bash: Vec<Json> = bash
        .iter()
        .map(|p| json!({ "path": p, "name": paths::display(&root, p) }))
        .collect();
    let save = state::with_config(|c| c.save_after_edit).unwrap_or(true);
    lua.to_value(&json!({ "files": files, "bash": bash, "save": save }))
}

/// `changes_keep(path, all, hunk)`: the review keeps `hunk` (a table as
/// `changes` gives it; nil: every hunk of the file): the file is diffed
/// against a base with it from now on. `false` when the file's hunks are
/// no longer what the view showed (it draws them again).
pub fn changes_keep(lua: &Lua, (path, all, hunk): (String, bool, Value)) -> mlua::Result<bool> {
    let Some(session) = state::session() else {
        return Ok(false);
    };
    let path = PathBuf::from(path);
    let Some(base) = session
        .review_bases(all)
        .into_iter()
        .find_map(|(p, b)| (p == path).then_some(b))
    else {
        return Ok(false);
    };
    let Ok(base) = base.text().map(|b| b.map(str::to_string)) else {
        return Ok(false);
    };
    let now = text_now(&path).or_else(fail)?;
    if hunk.is_nil() {
        session.accept_change(&path, now.as_deref());
        return Ok(true);
    }
    let want: Ranges = lua.from_value(hunk)?;
    let found = merge::hunks(base.as_deref(), now.as_deref())
        .into_iter()
        .find(|h| {
            (h.base.start, h.base.end, h.now.start, h.now.end)
                == (want.base_start, want.base_end, want.now_start, want.now_end)
        });
    let Some(h) = found else {
        return Ok(false);
    };
    let whole =
        h.base.start == 0 && h.base.end == merge::lines(base.as_deref().unwrap_or("")).len();
    let kept = if now.is_none() && whole {
        // The whole file was deleted: kept as gone.
        None
    } else {
        match merge::keep_hunk(base.as_deref().unwrap_or(""), &h) {
            Some(t) => Some(t),
            None => return Ok(false),
        }
    };
    session.accept_change(&path, kept.as_deref());
    Ok(true)
}

/// Where a hunk of `changes()` is (what `changes_keep` reads of it).
#[derive(serde::Deserialize)]
struct Ranges {
    base_start: usize,
    base_end: usize,
    now_start: usize,
    now_end: usize,
}

/// `checkpoints()` → the session's prompts, oldest first: `{ number,
/// prompt, files (names), paths, bash }`.
pub fn checkpoints(lua: &Lua, (): ()) -> mlua::Result<Value> {
    let Some(session) = state::session() else {
        return lua.to_value(&Json::Array(Vec::new()));
    };
    let root = state::with_config(|c| c.cwd.clone()).unwrap_or_default();
    let list: Vec<Json> = session
        .checkpoints()
        .iter()
        .enumerate()
        .map(|(i, c)| {
            json!({
                "number": i + 1,
                "prompt": c.prompt,
                "files": c.files.iter().map(|f| paths::display(&root, &f.path)).collect::<Vec<_>>(),
                "paths": c.files.iter().map(|f| &f.path).collect::<Vec<_>>(),
                "bash": c.bash_touched.iter().map(|p| paths::display(&root, p)).collect::<Vec<_>>(),
            })
        })
        .collect();
    lua.to_value(&list)
}

/// Rewinds running now (`lathe.wait()` waits for them and their redraw).
static REWINDING: AtomicUsize = AtomicUsize::new(0);

/// `true` while a rewind runs or its chat is being drawn again.
pub fn rewinding() -> bool {
    REWINDING.load(Ordering::Acquire) != 0
}

/// `rewind(back, what)`: takes the code, the conversation or both back to
/// before the prompt `back` prompts ago (1: the last). Returns at once;
/// the chat shows what was done (after a conversation rewind it is drawn
/// again from the session file). A refusal found later is shown with
/// `vim.notify` (WARN). Errors: a bad argument, no session, busy.
pub fn rewind(_: &Lua, (back, what): (i64, Option<String>)) -> mlua::Result<()> {
    let what = match what.as_deref() {
        None | Some("") => RewindWhat::Both,
        Some(w) => match RewindWhat::parse(w) {
            Some(w) => w,
            None => {
                return fail(lathe_core::text::fill(
                    lathe_core::agent::checkpoint::rewind::BAD_WHAT,
                    &[("word", w)],
                ))
            }
        },
    };
    let Some(session) = state::session() else {
        return fail(NO_SESSION);
    };
    let back = usize::try_from(back).unwrap_or(0);
    let rt = crate::host::runtime::handle().or_else(|e| fail(e.to_string()))?;
    let Some(main) = state::main_thread() else {
        return fail("lathe is not loaded");
    };
    let handle = match session.rewind(back, what, &rt) {
        Ok(h) => h,
        Err(lathe_core::agent::AskError::Busy) => return fail(BUSY),
        Err(e) => return fail(e.to_string()),
    };
    REWINDING.fetch_add(1, Ordering::AcqRel);
    rt.spawn(async move {
        let result = handle.await.unwrap_or_else(|e| Err(e.to_string()));
        // The chat's notice may wait a frame to be drawn: what follows
        // (and `lathe.wait()`) comes after it.
        tokio::time::sleep(crate::ui::chat::FRAME * 2).await;
        let posted = main.post(move || {
            let _ = crate::host::guard::guarded("rewind", || after_rewind(result));
            REWINDING.fetch_sub(1, Ordering::AcqRel);
        });
        if posted.is_err() {
            REWINDING.fetch_sub(1, Ordering::AcqRel);
        }
    });
    Ok(())
}

/// On the main thread after a rewind: the chat drawn again after a
/// conversation rewind, the buffers of removed files wiped, a refusal
/// shown.
fn after_rewind(result: Result<lathe_core::agent::checkpoint::rewind::RewindReport, String>) {
    let report = match result {
        Ok(r) => r,
        Err(msg) => {
            crate::host::guard::notify_warn(&msg);
            return;
        }
    };
    let removed: Vec<String> = report
        .removed
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    if let Ok(f) = crate::host::lua_handle::module_fn("lathe.changes", "wipe_removed") {
        let _ = f.call::<()>(removed);
    }
    if !report.conversation {
        return;
    }
    let Some(session) = state::session() else {
        return;
    };
    // The session file's view holds the rewind's notice already.
    let Some(events) = session.replay_events() else {
        return;
    };
    crate::ui::chat::clear();
    crate::ui::chat::draw_in_steps(events);
}
