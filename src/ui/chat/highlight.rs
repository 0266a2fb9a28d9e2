//! The chat's markdown highlighting (`:help lathe-chat-highlighting`):
//! `lua/lathe/chat_highlight.lua`, compiled into the library (it needs
//! nothing on 'runtimepath') and registered as `lathe.chat_highlight`.
//!
//! The chat buffer has no tree-sitter parser of its own (Neovim would
//! parse and keep trees of the whole day's chat, ~80 bytes per byte, and
//! parse it all again after every turn): a turn is parsed as a
//! string when it changes and its captures kept as extmarks; a folded
//! result is parsed when a window shows it open. Main thread only.

use mlua::{Function, Table};
use nvim_oxi::api::Buffer;

/// The module's source.
const SOURCE: &str = include_str!("../../../lua/lathe/chat_highlight.lua");
/// Its name in `package.loaded`.
const MODULE: &str = "lathe.chat_highlight";

thread_local! {
    static MODULE_TABLE: std::cell::OnceCell<Option<Table>> = const { std::cell::OnceCell::new() };
}

/// The module, loaded once (the one `require` gives when it is loaded
/// already, so the Lua side and this share counters and namespaces).
fn module() -> Option<Table> {
    MODULE_TABLE.with(|m| {
        m.get_or_init(|| {
            let lua = super::lua();
            let loaded: Table = lua
                .globals()
                .get::<Table>("package")
                .ok()?
                .get("loaded")
                .ok()?;
            if let Ok(t) = loaded.get::<Table>(MODULE) {
                return Some(t);
            }
            let t: Table = lua.load(SOURCE).set_name(MODULE).eval().ok()?;
            loaded.set(MODULE, t.clone()).ok()?;
            Some(t)
        })
        .clone()
    })
}

/// Highlights rows `first..last` (0-based, end exclusive) of `buf` as
/// markdown, replacing what they had; the rows of `skip` (folded results,
/// `(first, last)` end exclusive) wait until a window shows them open. The
/// first 16 KiB now, the rest in later steps ([`step`]); with `defer`, all
/// of it in later steps, in pieces of 1 KiB.
pub(super) fn range(buf: &Buffer, first: usize, last: usize, skip: &[(usize, usize)], defer: bool) {
    let Some(m) = module() else { return };
    let Ok(f) = m.get::<Function>("range") else {
        return;
    };
    let lua = super::lua();
    let Ok(skip_t) = lua.create_sequence_from(
        skip.iter()
            .filter_map(|&(a, b)| lua.create_sequence_from([a, b]).ok()),
    ) else {
        return;
    };
    let _ = f.call::<()>((buf.handle(), first, last, skip_t, defer));
}

/// Runs the pieces waiting for a later step until `budget` has gone by
/// (at least one); how many still wait.
pub(super) fn step(budget: std::time::Duration) -> usize {
    let Some(f) = module().and_then(|m| m.get::<Function>("step").ok()) else {
        return 0;
    };
    f.call::<usize>(budget.as_secs_f64() * 1000.0).unwrap_or(0)
}

/// How many pieces wait for a later step.
pub(super) fn queued() -> usize {
    module()
        .and_then(|m| m.get::<usize>("queued").ok())
        .unwrap_or(0)
}

/// Forgets `buf` (about to be wiped): its pieces still waiting are dropped
/// when their turn comes.
pub(super) fn forget(buf: &Buffer) {
    if let Some(f) = module().and_then(|m| m.get::<Function>("forget").ok()) {
        let _ = f.call::<()>(buf.handle());
    }
}

/// Loads the module (its decoration provider) before the chat is drawn.
pub(super) fn init() {
    let _ = module();
}
