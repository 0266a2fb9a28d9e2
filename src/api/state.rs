//! The plugin's per-process state on the main thread: the bridge, the
//! cached Lua handle and the current session.

use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use lathe_core::agent::{Session, SessionParts};
use lathe_core::config::Config;
use lathe_core::editor::Editor;
use lathe_core::hooks::CodeHooks;

use crate::adapters::editor::NvimEditor;
use crate::host::bridge::MainThread;
use crate::ui::chat::ChatSink;
use crate::ui::float::FloatPrompter;

static MAIN: OnceLock<MainThread> = OnceLock::new();
static USER_TOOLS: OnceLock<Arc<lathe_core::execution::UserTools>> = OnceLock::new();

thread_local! {
    static SESSION: RefCell<Option<Arc<Session>>> = const { RefCell::new(None) };
    /// `setup()`'s configuration, read and checked, until the first call
    /// that needs the session makes it ([`session_or_default`]).
    static PENDING: RefCell<Option<Config>> = const { RefCell::new(None) };
    static SETUP: RefCell<Option<SetupArgs>> = const { RefCell::new(None) };
}

/// What the current session was made from: `setup()`'s options (as JSON,
/// Lua hook functions taken out), the directory they were read in, and the
/// Lua hooks. [`reload_settings`] makes the session again from them, so
/// only what the settings files say changes.
#[derive(Clone)]
pub struct SetupArgs {
    /// `setup()`'s options without the Lua functions (`null` for none).
    pub opts: serde_json::Value,
    /// Neovim's current directory when `setup()` ran: the default project
    /// root, and what a relative `cwd` option is relative to.
    pub cwd: PathBuf,
    /// The Lua hook functions of `setup{ hooks = … }`.
    pub hooks: CodeHooks,
}

/// Reads and checks the configuration of `args` (the settings files too),
/// shows its problems, starts its MCP servers, stops and drops the current
/// session (its running turn too) and remembers `args` for
/// [`reload_settings`]. The new session itself is made by the first call
/// that needs it ([`session_or_default`]: an ask, a tool call, a mode
/// change), so `setup()` builds no tools, provider or session log (it does
/// no work the first request does not need). Errors:
/// the options are invalid (the message names the key).
pub fn start_session(args: SetupArgs) -> Result<(), String> {
    let config = Config::from_setup(&args.opts, &args.cwd).map_err(|e| e.to_string())?;
    start_mcp_servers(&config);
    report_settings_problems(&config);
    crate::ui::chat::set_mode_winbar(config.permissions.mode.as_str());
    crate::ui::chat::set_model(&config.model);
    crate::ui::chat::set_stop_key(config.stop_key.as_deref());
    let old = SESSION.with(|s| s.borrow_mut().take());
    if let Some(old) = old {
        old.stop();
        drop_off_main(old);
    }
    PENDING.with(|p| p.replace(Some(config)));
    SETUP.with(|s| s.replace(Some(args)));
    Ok(())
}

/// `f` of the configuration in effect: the current session's, else the
/// one `setup()` read for the session not made yet; `None` before either.
/// Main thread.
pub fn with_config<R>(f: impl FnOnce(&Config) -> R) -> Option<R> {
    if let Some(s) = session() {
        return Some(f(s.config()));
    }
    PENDING.with(|p| p.borrow().as_ref().map(f))
}

/// `true` once `setup()` (or a first request) chose a configuration: a
/// session exists or is waiting to be made.
pub fn configured() -> bool {
    session().is_some() || PENDING.with(|p| p.borrow().is_some())
}

/// Reads Claude Code's settings files again and starts a new session with
/// the options, directory and Lua hooks of the last `setup()` (or of the
/// default session the first request made; before either, the defaults in
/// the current directory). Like `setup()`, it starts a new conversation.
/// Errors: as [`start_session`].
pub fn reload_settings() -> Result<(), String> {
    start_session(current_args()?)
}

/// Creates the bridge on first call (main thread, at load time) and returns
/// it. Errors: libuv's message when the handle cannot be created.
pub fn init_main_thread() -> Result<MainThread, String> {
    if let Some(m) = MAIN.get() {
        return Ok(m.clone());
    }
    let m = MainThread::new().map_err(|e| e.to_string())?;
    Ok(MAIN.get_or_init(|| m).clone())
}

/// The bridge, once [`init_main_thread`] ran.
pub fn main_thread() -> Option<MainThread> {
    MAIN.get().cloned()
}

/// The current session, if a request made one since the last `setup()`
/// (see [`start_session`]; [`with_config`] for the configuration either way).
pub fn session() -> Option<Arc<Session>> {
    SESSION.with(|s| s.borrow().clone())
}

/// Replaces the current session (stopping a running turn of the old one).
pub fn set_session(new: Arc<Session>) {
    let old = SESSION.with(|s| s.borrow_mut().replace(new));
    if let Some(old) = old {
        old.stop();
        drop_off_main(old);
    }
}

/// Drops `value` on a worker thread of the runtime when it runs: a
/// session's transcript of a day's work takes milliseconds to free, which
/// the main thread would spend in one piece (`:Lathe new`, `:Lathe
/// resume`). In place when the runtime never started or is gone.
pub fn drop_off_main<T: Send + 'static>(value: T) {
    if crate::host::runtime::started() {
        if let Ok(rt) = crate::host::runtime::handle() {
            rt.spawn_blocking(move || drop(value));
            return;
        }
    }
    drop(value);
}

/// Stops the running turn, if any (`lathe.stop()`, `<C-c>` in the chat).
pub fn stop_turn() {
    if let Some(s) = session() {
        s.stop();
    }
}

/// A session for `config` with Neovim's editor, float prompter, chat sink
/// and the Lua `hooks` of `setup`. Errors: the bridge is not set up, or the provider cannot be made.
pub fn build_session(config: Config, hooks: CodeHooks) -> Result<Arc<Session>, String> {
    let (parts, live) = session_parts(config, hooks)?;
    let session = Session::with_user_tools(parts, user_tools()).map_err(|e| e.to_string())?;
    crate::ui::status_sink::register(&session, live);
    Ok(session)
}

/// What a session is made of in Neovim: `config` with the state and
/// sessions directories of `stdpath("state")`, the editor, the float, the
/// chat's sink behind the status sink (`User` events, `lathe.status()`),
/// and `hooks`. Errors: as [`build_session`].
fn session_parts(
    config: Config,
    hooks: CodeHooks,
) -> Result<(SessionParts, Arc<crate::ui::status_sink::LiveStatus>), String> {
    let main = main_thread().ok_or(NO_BRIDGE)?;
    show_config(&config);
    parts_of(config, hooks, state_dir(), main)
}

/// Error when the main-thread bridge does not exist.
const NO_BRIDGE: &str = "lathe is not loaded (the main-thread bridge is missing)";

/// Shows `config`'s mode and model in the chat's winbar and starts
/// tracking language servers' progress. Main thread.
fn show_config(config: &Config) {
    crate::ui::chat::set_mode_winbar(config.permissions.mode.as_str());
    crate::ui::chat::set_model(&config.model);
    crate::ui::chat::set_stop_key(config.stop_key.as_deref());
    crate::adapters::lsp_nav::ensure_tracking();
}

/// [`session_parts`] without the main thread's part: `config` with the
/// state and sessions directories under `state_dir`, the provider, the
/// editor, the float, the chat's sink behind the status sink. Any thread.
/// Errors: the provider cannot be made.
fn parts_of(
    mut config: Config,
    hooks: CodeHooks,
    state_dir: Option<PathBuf>,
    main: MainThread,
) -> Result<(SessionParts, Arc<crate::ui::status_sink::LiveStatus>), String> {
    if let Some(dir) = state_dir {
        config.sessions_dir = Some(dir.join("sessions"));
        config.state_dir = dir;
    }
    let guard_ms = config.permission_guard_ms;
    let provider = lathe_core::provider::from_config(&config)
        .map_err(|e| format!("cannot set up the model connection: {e}"))?;
    let editor: Arc<dyn Editor> = Arc::new(
        NvimEditor::new(main.clone(), make_disk_editor(), config.save_after_edit)
            .with_save_mode(config.save)
            .with_diagnostics_wait(std::time::Duration::from_millis(config.diagnostics_wait_ms))
            .with_lsp_timeout(std::time::Duration::from_millis(config.lsp_timeout_ms)),
    );
    let live = Arc::new(crate::ui::status_sink::LiveStatus::default());
    let sink = Arc::new(crate::ui::status_sink::StatusSink::new(
        Arc::new(ChatSink::new(main.clone())),
        live.clone(),
        main.clone(),
    ));
    let parts = SessionParts {
        config,
        provider,
        editor,
        prompter: Arc::new(FloatPrompter::new(
            main,
            std::time::Duration::from_millis(guard_ms),
        )),
        sink,
        hooks,
    };
    Ok((parts, live))
}

/// The options, directory and Lua hooks of the last `setup()` (else the
/// defaults in the current directory). Errors: the current directory
/// cannot be read.
fn current_args() -> Result<SetupArgs, String> {
    match SETUP.with(|s| s.borrow().clone()) {
        Some(args) => Ok(args),
        None => Ok(SetupArgs {
            opts: serde_json::Value::Null,
            cwd: std::env::current_dir()
                .map_err(|e| format!("cannot read the current directory: {e}"))?,
            hooks: Vec::new(),
        }),
    }
}

/// Starts a new, empty conversation with the configuration of the last
/// `setup()` (`:Lathe new`, `/clear`) and the model and permission mode in
/// force; the old one stays saved. Errors: as
/// [`start_session`].
pub fn new_conversation() -> Result<(), String> {
    // The model and permission mode switched at runtime stay: a new
    // conversation is not a new setup.
    let kept = session().map(|s| (s.model(), s.mode()));
    start_session(current_args()?)?;
    if let Some((model, mode)) = kept {
        crate::ui::chat::set_model(&model);
        crate::ui::chat::set_mode_winbar(mode.as_str());
        PENDING.with(|p| {
            if let Some(config) = p.borrow_mut().as_mut() {
                config.model = model;
                config.permissions.mode = mode;
            }
        });
    }
    Ok(())
}

/// Makes the saved session in `path` the current one, with the
/// configuration of the last `setup()` (`:Lathe resume`): see
/// [`Session::resume`]. Errors: as [`Session::resume`] and
/// [`build_session`].
pub fn resume_session(path: &std::path::Path) -> Result<lathe_core::agent::Resumed, String> {
    resume_loaded(path, lathe_core::agent::LoadedSession::load(path)?)
}

/// [`resume_session`] of a file already read and replayed, all on the main
/// thread (`:Lathe resume` while Neovim exits, without a runtime).
/// Errors: as [`Session::resume_loaded`] and [`build_session`].
pub fn resume_loaded(
    path: &std::path::Path,
    loaded: lathe_core::agent::LoadedSession,
) -> Result<lathe_core::agent::Resumed, String> {
    Ok(finish_resume(ResumeInputs::now()?.make(path, loaded)?))
}

/// What a `:Lathe resume` takes from the main thread before its session is
/// made on a worker ([`ResumeInputs::make`]): the last `setup()`'s
/// arguments, the state directory, the bridge and the shared user tools.
pub struct ResumeInputs {
    args: SetupArgs,
    state_dir: Option<PathBuf>,
    main: MainThread,
    user: Arc<lathe_core::execution::UserTools>,
}

/// A resumed session made on a worker ([`ResumeInputs::make`]), to be
/// made current on the main thread ([`finish_resume`]).
pub struct MadeResume {
    args: SetupArgs,
    resumed: lathe_core::agent::Resumed,
    live: Arc<crate::ui::status_sink::LiveStatus>,
}

impl ResumeInputs {
    /// Takes what the session is made from. Main thread. Errors: the
    /// current directory cannot be read, the bridge is not set up.
    pub fn now() -> Result<Self, String> {
        Ok(Self {
            args: current_args()?,
            state_dir: state_dir(),
            main: main_thread().ok_or(NO_BRIDGE)?,
            user: user_tools(),
        })
    }

    /// Reads the configuration (the settings files too), makes the
    /// session's parts and the session of `loaded` (its tools, provider,
    /// log; the transcript, token counts and file stamps restored). Needs
    /// no Neovim: `:Lathe resume` runs it on a worker thread, so only
    /// [`finish_resume`] is left for the main thread. Errors: as
    /// [`Config::from_setup`], the provider cannot be made, as
    /// [`Session::resume_loaded`].
    pub fn make(
        self,
        path: &std::path::Path,
        loaded: lathe_core::agent::LoadedSession,
    ) -> Result<MadeResume, String> {
        let config =
            Config::from_setup(&self.args.opts, &self.args.cwd).map_err(|e| e.to_string())?;
        let (parts, live) = parts_of(config, self.args.hooks.clone(), self.state_dir, self.main)?;
        let resumed = Session::resume_loaded(parts, path, loaded, Some(self.user))?;
        Ok(MadeResume {
            args: self.args,
            resumed,
            live,
        })
    }
}

/// Makes the session of `made` the current one (the previous one stopped
/// and dropped off the main thread): shows its settings' problems, its
/// mode and model in the winbar, and starts estimating its context for
/// the meter. Main thread.
pub fn finish_resume(made: MadeResume) -> lathe_core::agent::Resumed {
    let MadeResume {
        args,
        resumed,
        live,
    } = made;
    let config = resumed.session.config();
    report_settings_problems(config);
    show_config(config);
    // The model the saved session used last.
    crate::ui::chat::set_model(&resumed.session.model());
    crate::ui::status_sink::register(&resumed.session, live);
    // The meter of the resumed conversation before its first request.
    if let Ok(rt) = crate::host::runtime::handle() {
        resumed.session.estimate_context(&rt);
    }
    PENDING.with(|p| p.replace(None));
    set_session(resumed.session.clone());
    SETUP.with(|s| s.replace(Some(args)));
    resumed
}

/// The folder of the current project's saved sessions
/// (`stdpath("state")/lathe/sessions/{project}`): the current session's
/// project, else the last `setup()`'s root, else the current directory.
/// `None` when Neovim cannot name its state directory.
pub fn project_sessions_dir() -> Option<PathBuf> {
    let sessions = state_dir()?.join("sessions");
    let root = match with_config(|c| c.cwd.clone()) {
        Some(cwd) => cwd,
        None => {
            let args = current_args().ok()?;
            Config::from_setup(&args.opts, &args.cwd)
                .map(|c| c.cwd)
                .unwrap_or(args.cwd)
        }
    };
    Some(lathe_core::agent::session_log::project_dir(
        &sessions, &root,
    ))
}

/// Shows the problems found in Claude Code's settings files (and hooks
/// lathe does not run) once per session, as one warning; MCP servers of
/// `setup{ mcp_servers }` and `.mcp.json` that are not started, and why,
/// as another (`config::mcp::MCP_SERVER_INVALID`).
/// The warning at setup when the kernel cannot give the sandbox (not when
/// `sandbox.enabled = false` turned it off). `{why}`.
pub const SANDBOX_UNAVAILABLE: &str = "lathe: the sandbox is off here ({why}): every Bash call asks unless an exact allow rule covers it (:checkhealth lathe, :help lathe-sandbox)";

/// Why the sandbox cannot be had here, when the settings want it.
fn sandbox_unavailable(config: &Config) -> Option<String> {
    if config.permissions.sandbox.off.is_some() {
        return None;
    }
    lathe_core::sandbox::unavailable()
}

fn report_settings_problems(config: &Config) {
    if !config.settings_problems.is_empty() {
        crate::host::guard::notify_warn(&format!(
            "lathe: problems in the settings (Claude Code settings files, setup hooks):\n{}",
            config.settings_problems.join("\n")
        ));
    }
    if let Some(why) = sandbox_unavailable(config) {
        crate::host::guard::notify_warn(&lathe_core::text::fill(
            SANDBOX_UNAVAILABLE,
            &[("why", &why)],
        ));
    }
    if !config.mcp_problems.is_empty() {
        crate::host::guard::notify_warn(&format!(
            "lathe: MCP servers not started (:checkhealth lathe, :help lathe-mcp):\n{}",
            config.mcp_problems.join("\n")
        ));
    }
}

/// The current session; else the one `setup()` configured, made now;
/// else one with default options (cwd = Neovim's current directory, the
/// Claude Code settings files read), as `setup()` with no options would.
/// Errors: as [`start_session`] and [`build_session`] (the configuration
/// stays pending, so the next call tries again).
pub fn session_or_default() -> Result<Arc<Session>, String> {
    if let Some(s) = session() {
        return Ok(s);
    }
    if PENDING.with(|p| p.borrow().is_none()) {
        let cwd = std::env::current_dir()
            .map_err(|e| format!("cannot read the current directory: {e}"))?;
        start_session(SetupArgs {
            opts: serde_json::Value::Null,
            cwd,
            hooks: Vec::new(),
        })?;
    }
    let config = PENDING
        .with(|p| p.borrow().clone())
        .ok_or("lathe: no configuration (setup() did not finish)")?;
    let hooks = SETUP.with(|s| s.borrow().as_ref().map(|a| a.hooks.clone()));
    let session = build_session(config, hooks.unwrap_or_default())?;
    PENDING.with(|p| p.replace(None));
    set_session(session.clone());
    Ok(session)
}

/// The editor for files that are not loaded in a buffer.
fn make_disk_editor() -> Arc<dyn Editor> {
    Arc::new(lathe_core::editor::DiskEditor)
}

/// `stdpath("state")/lathe` (`:help stdpath()`), where oversized tool results
/// and sessions are saved. Main thread only; `None` if Neovim cannot say.
pub fn state_dir() -> Option<std::path::PathBuf> {
    nvim_oxi::api::call_function::<_, String>("stdpath", ("state",))
        .ok()
        .map(|d| std::path::PathBuf::from(d).join("lathe"))
}

/// Starts the MCP servers of `config` on the runtime (their tools join the
/// shared user-tool table as they list them; unchanged servers keep
/// running, removed ones are stopped). A `.mcp.json` server starts only
/// once trusted: the others wait for the answer to the question the
/// permission float asks, or stay refused (`mcp::trust`, `:help
/// lathe-mcp-trust`). Logs go to `<state>/mcp/`, answers to
/// `<state>/mcp-trust.json`. Nothing happens when the runtime is shut
/// down, nor (the runtime is not even started: `setup()` starts no
/// thread) when no server is configured and none runs.
fn start_mcp_servers(config: &Config) {
    if config.mcp_servers.is_empty() && lathe_core::mcp::statuses().is_empty() {
        return;
    }
    let Ok(rt) = crate::host::runtime::handle() else {
        return;
    };
    let Some(main) = main_thread() else {
        return;
    };
    let state = state_dir().unwrap_or_else(|| config.state_dir.clone());
    let prompter = Arc::new(FloatPrompter::new(
        main,
        std::time::Duration::from_millis(config.permission_guard_ms),
    ));
    lathe_core::mcp::trust::start(
        config,
        lathe_core::mcp::trust::Starter {
            user: user_tools(),
            log_dir: state.join("mcp"),
            trust_file: state.join(lathe_core::mcp::trust::TRUST_FILE),
            rt,
            prompter,
        },
    );
}

/// Forgets the remembered answers about the current project's `.mcp.json`
/// servers (`:Lathe mcp reset`) and starts the servers again, which asks
/// about them again. Returns whether there were answers. Errors: no
/// configuration yet (before `setup()` and the first request), or the
/// trust file cannot be written.
pub fn reset_mcp_trust() -> Result<bool, String> {
    let config = with_config(Clone::clone)
        .ok_or("lathe: no project yet: call setup() or make a request first")?;
    let state = state_dir().unwrap_or_else(|| config.state_dir.clone());
    let had = lathe_core::mcp::trust::forget(
        &state.join(lathe_core::mcp::trust::TRUST_FILE),
        &config.cwd,
    )?;
    start_mcp_servers(&config);
    Ok(had)
}

/// The process's user-tool table (Lua tools), shared by every session
/// (docs/tools.md, "User tools"); made on first use with the
/// built-ins' names and aliases reserved.
pub fn user_tools() -> Arc<lathe_core::execution::UserTools> {
    USER_TOOLS
        .get_or_init(|| {
            let builtins =
                lathe_core::tools::builtin_tools(&Config::new(std::path::Path::new("/")));
            let reserved = builtins.iter().flat_map(|t| {
                std::iter::once(t.name().to_string())
                    .chain(t.aliases().iter().map(|a| a.to_string()))
            });
            Arc::new(lathe_core::execution::UserTools::new(
                reserved.collect::<Vec<_>>(),
            ))
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_texts() {
        assert_eq!(
            lathe_core::text::fill(SANDBOX_UNAVAILABLE, &[("why", "the kernel has no Landlock")]),
            "lathe: the sandbox is off here (the kernel has no Landlock): every Bash call asks unless an exact allow rule covers it (:checkhealth lathe, :help lathe-sandbox)"
        );
    }
}
