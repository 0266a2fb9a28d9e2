//! The top of the front end: the Lua functions of `lathe.core`
//! ([`exports`]), the composition of a session ([`state`]), saved
//! conversations ([`sessions`]), `lathe.status()` and the statusline
//! component ([`status`]), tools defined in Lua and `:Lathe tools`
//! ([`user_tools`]), checkpoints for `:Lathe changes` and `:Lathe rewind`
//! ([`changes`]), custom slash commands ([`commands`]), background Bash
//! jobs for `lathe.jobs()` ([`jobs`]),
//! what `:checkhealth` needs from Rust ([`health`]), the request of an
//! inline edit ([`inline`]); and [`install`], what
//! the plugin entry runs. Uses every lower layer (docs/architecture.md,
//! "Layers").

pub mod changes;
pub mod commands;
pub mod exports;
pub mod health;
pub mod inline;
pub mod jobs;
pub mod sessions;
pub mod state;
pub mod status;
pub mod user_tools;

use crate::host::{guard, runtime};
use crate::ui::chat;
use nvim_oxi::api::{self as napi, opts::CreateAutocmdOpts};

/// Name under which the exports table is stored in `package.loaded`.
pub const CORE_MODULE: &str = "lathe.core";

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
                lathe_core::agent::session_log::now_ms()
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
/// with `vim.notify` (an error here would abort Neovim; docs/threads.md,
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
    let lua = crate::host::lua_handle::lua();
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
    chat::on_state(|| state::with_config(|c| c.cwd.clone()));
    let exports = exports::exports(&lua).map_err(|e| e.to_string())?;
    commands::register(&lua, &exports).map_err(|e| e.to_string())?;
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
