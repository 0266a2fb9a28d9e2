//! The only module that calls the Neovim API (docs/architecture.md, "Layers"),
//! and only on the main thread.
//!
//! - [`runtime`]: the one tokio runtime of the process.
//! - [`bridge`]: [`MainThread`], closures from tokio tasks to the main thread.
//! - [`editor`]: [`NvimEditor`], the `Editor` over loaded buffers.
//! - [`float`]: [`FloatPrompter`], the permission float and its queue.
//! - [`chat`]: the `lathe://chat` window and its event sink.
//! - [`api`]: the Lua functions of `lathe.core`.
//! - [`notify`]: notices of tool calls run from Lua, through `vim.notify`.
//! - [`lsp`]: language-server diagnostics for Edit, Write and Diagnostics.
//! - [`lsp_nav`]: language-server navigation for the LSP tools.
//! - [`context`]: [`context::NvimContext`], what the editor shows, for the
//!   context of an ask.
//! - [`sessions`]: saved conversations: list, resume, new.
//! - [`status`]: `lathe.status()` and the statusline component.
//! - [`status_sink`]: the session's sink in front of the chat's: live status, `User` events.
//! - [`user_events`]: the `User` autocmds lathe fires.
//! - [`user_tools`]: tools defined in Lua (`register_tool`), `:Lathe tools`.
//! - [`main_stats`]: lathe's own main-thread time (for `make bench`).

pub mod api;
pub mod bridge;
mod buffer_text;
pub mod chat;
pub mod context;
mod direct_write;
pub mod editor;
pub mod float;
pub mod guard;
pub mod health;
pub mod jobs;
pub mod lsp;
pub mod lsp_nav;
pub mod lua_hooks;
pub mod main_stats;
pub mod notify;
pub mod runtime;
pub mod save_stats;
pub mod sessions;
pub mod state;
pub mod status;
pub mod status_sink;
pub mod user_events;
pub mod user_tools;

pub use bridge::{BridgeError, MainThread};
pub use editor::NvimEditor;
pub use float::FloatPrompter;

use nvim_oxi::api::{self as napi, opts::CreateAutocmdOpts};

/// Name under which the exports table is stored in `package.loaded`.
pub const CORE_MODULE: &str = "lathe.core";

/// `b:changedtick` of `buf` (`:help changetick`), read as the buffer
/// variable: nvim-oxi's `Buffer::get_changedtick` converts Neovim's answer
/// before looking at the error, and panics on the -1 a buffer being wiped
/// answers (at Neovim's exit, a chat frame still queued printed a
/// backtrace; issue 22). Every read of a tick goes through here. Errors:
/// the buffer is gone.
pub fn changedtick(buf: &nvim_oxi::api::Buffer) -> Result<u32, nvim_oxi::api::Error> {
    if !buf.is_valid() {
        return Err(nvim_oxi::api::Error::Other("the buffer is gone".into()));
    }
    let tick: i64 = buf.get_var("changedtick")?;
    u32::try_from(tick).map_err(|_| nvim_oxi::api::Error::Other("no changedtick".into()))
}

/// Keeps panic messages off the user's terminal: a panic anywhere in the
/// process (a thread of the runtime, a callback while Neovim exits) is
/// written to `{stdpath("state")}/lathe/panic.log` instead of stderr (the
/// main thread's are also shown by `guard::guarded` with `vim.notify`).
/// Installed once, when the module loads.
pub fn quiet_panics(log: Option<std::path::PathBuf>) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(move |info| {
            let Some(path) = &log else { return };
            let line = format!(
                "{} lathe panic: {info}\n",
                crate::agent::session_log::now_ms()
            );
            if let Some(dir) = path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
            {
                let _ = std::io::Write::write_all(&mut f, line.as_bytes());
            }
        }));
    });
}

/// Sets lathe up in this Neovim (main thread, from the plugin entry):
/// creates the main-thread bridge, stores the exports table in
/// `package.loaded["lathe.core"]` and registers the `VimLeavePre` autocmd
/// that shuts the runtime down. Idempotent. Never fails: problems are shown
/// with `vim.notify` (an error here would abort Neovim; docs/architecture.md,
/// "Threads and the FFI boundary").
pub fn install() {
    let _ = guard::guarded("loading lathe", || {
        if let Err(e) = try_install() {
            guard::notify_error(&format!("lathe: could not load: {e}"));
        }
    });
}

fn try_install() -> Result<(), String> {
    quiet_panics(state::state_dir().map(|d| d.join("panic.log")));
    let lua = state::lua();
    let loaded: mlua::Table = lua
        .globals()
        .get::<mlua::Table>("package")
        .and_then(|p| p.get::<mlua::Table>("loaded"))
        .map_err(|e| e.to_string())?;
    if loaded
        .get::<mlua::Value>(CORE_MODULE)
        .is_ok_and(|v| !v.is_nil())
    {
        return Ok(());
    }
    state::init_main_thread()?;
    chat::on_interrupt(state::stop_turn);
    chat::on_state(state::lua, || state::with_config(|c| c.cwd.clone()));
    let exports = api::exports(&lua).map_err(|e| e.to_string())?;
    loaded
        .set(CORE_MODULE, exports)
        .map_err(|e| e.to_string())?;
    let opts = CreateAutocmdOpts::builder()
        .desc("lathe: stop the background runtime")
        .callback(|_args: napi::types::AutocmdCallbackArgs| {
            let _ = guard::guarded("VimLeavePre", || {
                state::stop_turn();
                if let Some(m) = state::main_thread() {
                    m.close();
                }
                runtime::shutdown();
            });
            true
        })
        .build();
    napi::create_autocmd(["VimLeavePre"], &opts).map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_panic_goes_to_the_log_not_the_terminal() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("lathe").join("panic.log");
        super::quiet_panics(Some(log.clone()));
        let joined = std::thread::spawn(|| panic!("boom at exit")).join();
        assert!(joined.is_err());
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.contains("lathe panic: "), "{text}");
        assert!(text.contains("boom at exit"), "{text}");
    }
}
