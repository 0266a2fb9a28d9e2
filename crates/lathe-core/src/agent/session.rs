//! `Session`: one conversation — its transcript, its tools and permission
//! state, and at most one running turn.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::editor::Editor;
use crate::execution::{
    run_tool_use, ExecEnv, Hooks, PendingToolUse, RegistryError, ResultStore, ToolRegistry,
    TurnStop, UserTools,
};
use crate::hooks::{CodeHooks, HookConfig};
use crate::permissions::{Mode, PermissionState, Prompter};
use crate::protocol::{Message, ToolResult, ToolUse, Usage};
use crate::provider::Provider;
use crate::tools::{builtin_tools, FileState, Tool, ToolContext};

use super::checkpoint::rewind::{self as rewinding, RewindReport, RewindWhat};
use super::checkpoint::{git, Checkpoint, Checkpoints, Kept, Recording};
use super::resume::restore;
use super::session_log::{self, LoggingSink, Record, SessionLog};
use super::system_prompt;
use super::transcript::Transcript;
use super::turn::Turn;
use crate::events::{AgentEvent, EventSink, TurnOutcome};

/// What a [`Session`] is built from.
pub struct SessionParts {
    /// Effective configuration.
    pub config: Config,
    /// The model.
    pub provider: Arc<dyn Provider>,
    /// Buffers and files.
    pub editor: Arc<dyn Editor>,
    /// Permission asks.
    pub prompter: Arc<dyn Prompter>,
    /// Progress for the UI.
    pub sink: Arc<dyn EventSink>,
    /// Hooks written in code (Lua functions from `setup{ hooks = … }`),
    /// run with the command hooks of the configuration.
    pub hooks: CodeHooks,
}

/// The model of a session's requests, switched by [`Session::set_model`];
/// a running turn reads it for each request.
pub type SharedModel = Arc<std::sync::RwLock<String>>;

/// User-facing: the chat's line after a model switch. `{model}`.
pub const MODEL_SWITCHED: &str = "model: {model}";

/// One tool as `:Lathe tools` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolInfo {
    /// The name the model calls.
    pub name: String,
    /// Built in, or Lua.
    pub source: crate::tools::ToolSource,
    /// Read-only always, never, or per input.
    pub read_only: crate::tools::ReadOnlyKind,
    /// Sent to the model in the next request ([`Tool::is_offered`]).
    pub offered: bool,
}

/// Whether a turn is running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// No turn running; the last one ended like this (`None` before the first).
    Idle(Option<TurnOutcome>),
    /// A turn is running.
    Running,
}

/// Why `ask` did not start a turn. Shown to the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AskError {
    /// A turn is already running; `stop()` it or wait.
    #[error("lathe is already working on a request; wait for it or run :Lathe stop")]
    Busy,
    /// The prompt was empty.
    #[error("empty prompt: type what lathe should do, e.g. :Lathe fix the failing test")]
    EmptyPrompt,
    /// An `@path` of the prompt cannot be attached (no such file, a
    /// directory, outside the project, denied by a rule); the text says
    /// which and that nothing was sent (`agent::context`).
    #[error("{0}")]
    Attachment(String),
}

/// The running turn: its token and a flag that flips to `true` when the task
/// has written its last message.
struct RunningTurn {
    cancel: CancellationToken,
    finished: watch::Receiver<bool>,
}

#[derive(Default)]
struct TurnSlot {
    running: Option<RunningTurn>,
    last: Option<TurnOutcome>,
    generation: u64,
}

impl TurnSlot {
    /// Makes a new turn the running one: its cancel token, the sender
    /// that says it finished, and its generation (for [`TurnSlot::release`]).
    fn claim(&mut self) -> (CancellationToken, watch::Sender<bool>, u64) {
        let cancel = CancellationToken::new();
        let (done_tx, done_rx) = watch::channel(false);
        self.generation += 1;
        self.running = Some(RunningTurn {
            cancel: cancel.clone(),
            finished: done_rx,
        });
        (cancel, done_tx, self.generation)
    }

    /// Records the turn of `generation` as ended with `outcome`; the slot
    /// is free unless a newer turn has claimed it since.
    fn release(&mut self, generation: u64, outcome: TurnOutcome) {
        self.last = Some(outcome);
        if self.generation == generation {
            self.running = None;
        }
    }
}

/// What a slash command adds to the turn it starts
/// ([`Session::ask_with_extras`]).
#[derive(Debug, Clone, Default)]
pub struct TurnExtras {
    /// The command's name (without `/`): the source its rules show.
    pub command: Option<String>,
    /// Its `allowed-tools`: allowed without asking for this turn.
    pub allow: Vec<crate::permissions::Rule>,
    /// Its `model`: the model of this turn's requests.
    pub model: Option<String>,
    /// The text as the user typed it (`/review src/x.py`): the chat shows
    /// it as the prompt, and the checkpoint is named by it, while the
    /// model gets the prompt as given (the command's text).
    pub typed: Option<String>,
    /// A line the chat shows under the prompt, folded to what was sent
    /// for it (`Command /review (.claude/commands/review.md)` over the
    /// command's text), before the attachments' lines.
    pub sent_as: Option<crate::events::AttachedItem>,
}

/// One conversation.
pub struct Session {
    config: Config,
    provider: Arc<dyn Provider>,
    prompter: Arc<dyn Prompter>,
    sink: Arc<dyn EventSink>,
    editor: Arc<dyn Editor>,
    registry: Arc<ToolRegistry>,
    file_state: Arc<FileState>,
    permissions: Arc<PermissionState>,
    system: String,
    /// `system_prompt::project_context`: opens the first user message of
    /// every request.
    project_context: String,
    transcript: Arc<Transcript>,
    slot: Mutex<TurnSlot>,
    manual_ids: AtomicU64,
    /// The parent of every [`Session::run_tool`] call's cancellation;
    /// [`Session::stop`] cancels it and puts a fresh one in its place.
    manual_cancel: Mutex<CancellationToken>,
    results: Arc<ResultStore>,
    hooks: Arc<Hooks>,
    usage: Mutex<Usage>,
    id: String,
    log: Option<SessionLog>,
    /// The context window and meter (agent::compact).
    context: Arc<super::compact::ContextState>,
    /// The first message with the project context, made once
    /// (`turn::with_context`), and what the request check found
    /// (`validate::Checked`): shared by every turn, so a request costs
    /// what is new since the last.
    first_with_context: super::turn::FirstWithContext,
    checked: Arc<crate::provider::validate::Checked>,
    /// Every prompt's checkpoint (docs/checkpoints.md); `editor` records
    /// into it.
    checkpoints: Arc<Checkpoints>,
    /// What the model is told with the next prompt after a rewind.
    rewind_note: Mutex<Option<String>>,
    /// The model of the next request (`config.model` until a switch).
    model: SharedModel,
    /// The provider's models, once listed ([`Session::models`]).
    models: tokio::sync::OnceCell<Vec<String>>,
    /// Sub-folders' `CLAUDE.md` the conversation has, and what adds the
    /// others to tool results (`agent::memory`).
    nested_memory: Arc<super::memory::Nested>,
    /// Messages the user queued while a turn runs ([`Session::queue`]);
    /// taken under the slot's lock at a turn's end.
    queued: Arc<Mutex<Vec<String>>>,
}

/// A saved session brought back by [`Session::resume`].
pub struct Resumed {
    /// The session, its transcript the saved one (repaired), appending to
    /// the same file.
    pub session: Arc<Session>,
    /// Events that draw the saved conversation in a chat.
    pub events: Vec<AgentEvent>,
    /// Lines of the file that were skipped, one warning each
    /// (`session_log::CORRUPT_LINE`).
    pub warnings: Vec<String>,
    /// Whether the conversation ended in the middle of a turn and its
    /// `tool_use`s got interrupted results.
    pub repaired: bool,
}

/// A session file read and replayed ([`LoadedSession::load`]), ready for
/// [`Session::resume_loaded`]: the slow part of a resume, which touches
/// nothing but the file.
pub struct LoadedSession {
    log: session_log::LoadedLog,
    restored: super::resume::Restored,
}

impl LoadedSession {
    /// Reads the session file `path` and replays its records. Any thread.
    /// Errors: the file cannot be read or is not a session file.
    pub fn load(path: &std::path::Path) -> Result<Self, String> {
        let log = session_log::load(path)?;
        let restored = restore(&log.records);
        Ok(Self { log, restored })
    }
}

/// Sessions made by this process (every [`Session`] constructor).
static SESSIONS_BUILT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many sessions this process has made (new, resumed, for tests):
/// Neovim's `setup()` makes none, the first request does (a
/// session builds the tools, the provider and the session log; a test and
/// `make bench` read it).
pub fn sessions_built() -> u64 {
    SESSIONS_BUILT.load(std::sync::atomic::Ordering::Relaxed)
}

impl Session {
    /// A new, empty conversation with the built-in tools for its config.
    /// Errors: as [`Session::with_extra_tools`].
    pub fn new(parts: SessionParts) -> Result<Arc<Self>, RegistryError> {
        Self::with_extra_tools(parts, Vec::new())
    }

    /// Like [`Session::new`], also offering `extra` tools after the built-in
    /// ones (tests add probes; plugins could add their own). Errors:
    /// [`RegistryError::DuplicateName`] when an extra tool's name or alias is
    /// taken.
    pub fn with_extra_tools(
        parts: SessionParts,
        extra: Vec<Arc<dyn Tool>>,
    ) -> Result<Arc<Self>, RegistryError> {
        Self::build(parts, extra, None, None)
    }

    /// Like [`Session::new`], with the process's shared `user` tools (Lua
    /// tools) behind the built-in ones: a tool added to
    /// the table while the session runs is offered from its next request
    /// (docs/tools.md, "User tools"). Errors: as [`Session::new`].
    pub fn with_user_tools(
        parts: SessionParts,
        user: Arc<UserTools>,
    ) -> Result<Arc<Self>, RegistryError> {
        Self::build(parts, Vec::new(), None, Some(user))
    }

    /// The saved session in the file `path` (`:Lathe resume`): its
    /// conversation replayed and repaired (every `tool_use` answered, an
    /// interrupted result for calls the session ended in the middle of),
    /// its token counts, and the same id, so what follows is appended to
    /// the same file. A line that cannot be read (a crash mid-write) is
    /// skipped with a warning. Errors: the file cannot be read or is not a
    /// session file; as [`Session::new`].
    pub fn resume(parts: SessionParts, path: &std::path::Path) -> Result<Resumed, String> {
        Self::resume_with_user_tools(parts, path, None)
    }

    /// [`Session::resume`] with the shared `user` tools (see
    /// [`Session::with_user_tools`]). Errors: as [`Session::resume`].
    pub fn resume_with_user_tools(
        parts: SessionParts,
        path: &std::path::Path,
        user: Option<Arc<UserTools>>,
    ) -> Result<Resumed, String> {
        Self::resume_loaded(parts, path, LoadedSession::load(path)?, user)
    }

    /// [`Session::resume_with_user_tools`] of a file already read and
    /// replayed by [`LoadedSession::load`] (which needs no Neovim, so
    /// `:Lathe resume` does it on a worker thread). Errors: as
    /// [`Session::new`].
    pub fn resume_loaded(
        parts: SessionParts,
        path: &std::path::Path,
        loaded: LoadedSession,
        user: Option<Arc<UserTools>>,
    ) -> Result<Resumed, String> {
        let LoadedSession {
            log: loaded,
            restored,
        } = loaded;
        let session = Self::build(
            parts,
            Vec::new(),
            Some((loaded.header.id.clone(), path.to_path_buf())),
            user,
        )
        .map_err(|e| e.to_string())?;
        session.transcript.restore(restored.messages);
        session.checkpoints.restore(&loaded.records);
        *session
            .rewind_note
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = restored.rewind_note;
        for f in &restored.files {
            let Some(hash) = crate::editor::TextHash::from_hex(&f.sha256) else {
                continue;
            };
            // A version no document has now: the text hash alone decides
            // whether the file moved on (the stale rule).
            let record = crate::tools::support::file_state::ReadRecord {
                stamp: crate::editor::Stamp {
                    version: crate::editor::Version::Disk {
                        mtime: None,
                        len: u64::MAX,
                    },
                    hash,
                },
                offset: f.offset,
                limit: f.limit,
            };
            session.file_state.record(&f.path, record);
        }
        // Read answers with the text again where the saved record says the
        // content is gone (a compaction, a cleared result).
        for f in restored.files.iter().rev().filter(|f| !f.in_context) {
            session.file_state.mark_gone(&f.path);
        }
        *session.usage.lock().unwrap_or_else(|e| e.into_inner()) = restored.usage;
        // The model last switched to, not announced again (the saved
        // notice is replayed with the chat).
        session.nested_memory.mark_loaded(&restored.memory);
        if let Some(model) = restored.model {
            *session.model.write().unwrap_or_else(|e| e.into_inner()) = model;
        }
        Ok(Resumed {
            session,
            events: restored.events,
            warnings: loaded.warnings,
            repaired: restored.repaired,
        })
    }

    fn build(
        parts: SessionParts,
        extra: Vec<Arc<dyn Tool>>,
        resumed: Option<(String, std::path::PathBuf)>,
        user: Option<Arc<UserTools>>,
    ) -> Result<Arc<Self>, RegistryError> {
        SESSIONS_BUILT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut tools = builtin_tools(&parts.config);
        tools.extend(extra);
        let mut registry = ToolRegistry::new(tools)?;
        if let Some(user) = user {
            registry = registry.with_user_tools(user);
        }
        let sid = match &resumed {
            Some((id, _)) => id.clone(),
            None => session_id(),
        };
        let log = match (&resumed, &parts.config.sessions_dir) {
            (Some((_, path)), _) => Some(SessionLog::append_to(path, parts.sink.clone())),
            (None, Some(dir)) => Some(SessionLog::create(
                &session_log::project_dir(dir, &parts.config.cwd),
                &sid,
                &parts.config.cwd,
                &parts.config.model,
                parts.sink.clone(),
            )),
            (None, None) => None,
        };
        let sink: Arc<dyn EventSink> = match &log {
            Some(log) => Arc::new(LoggingSink {
                inner: parts.sink.clone(),
                log: log.clone(),
            }),
            None => parts.sink.clone(),
        };
        let mut hook_config = HookConfig::default();
        for (_, value) in &parts.config.hook_settings {
            // Checked when the configuration was read (a bad one is
            // reported there and left out).
            if let Ok(c) = HookConfig::from_json(value) {
                hook_config.merge(c);
            }
        }
        let hooks = Arc::new(Hooks {
            config: hook_config,
            extra: parts.hooks,
            session_id: sid.clone(),
            transcript_path: log
                .as_ref()
                .map(|l| l.path().to_path_buf())
                .unwrap_or_default(),
        });
        let system = system_prompt::build();
        let home = super::memory::home();
        let memory = super::memory::discover(&parts.config.cwd, home.as_deref());
        let project_context =
            system_prompt::project_context(&parts.config.cwd, &system_prompt::today(), &memory);
        let nested_memory = Arc::new(super::memory::Nested::new(&parts.config.cwd, home, &memory));
        let results = Arc::new(ResultStore::new(parts.config.state_dir.clone(), &sid));
        let checkpoints = Arc::new(Checkpoints::default());
        let model = parts.config.model.clone();
        Ok(Arc::new(Self {
            permissions: Arc::new(PermissionState::new(
                parts
                    .config
                    .permissions
                    .clone()
                    .with_output_dirs(&[
                        parts
                            .config
                            .state_dir
                            .join(crate::tools::support::retention::BASH_OUTPUT_DIR),
                        results.dir().to_path_buf(),
                    ])
                    .with_sandbox_support(crate::sandbox::unavailable()),
            )),
            config: parts.config,
            provider: parts.provider,
            prompter: parts.prompter,
            sink,
            editor: Arc::new(Recording::new(parts.editor, checkpoints.clone())),
            registry: Arc::new(registry),
            file_state: Arc::new(FileState::new()),
            system,
            project_context,
            transcript: Arc::new(Transcript::with_log(log.clone())),
            slot: Mutex::new(TurnSlot::default()),
            manual_ids: AtomicU64::new(1),
            manual_cancel: Mutex::new(CancellationToken::new()),
            results,
            hooks,
            usage: Mutex::new(Usage::default()),
            id: sid,
            log,
            context: Arc::default(),
            first_with_context: Arc::default(),
            checked: Arc::default(),
            checkpoints,
            rewind_note: Mutex::new(None),
            model: Arc::new(std::sync::RwLock::new(model)),
            models: tokio::sync::OnceCell::new(),
            nested_memory,
            queued: Arc::default(),
        }))
    }

    /// The session's id (`{start ms}-{pid}`; a resumed session keeps its
    /// saved one).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The file this conversation is saved in (`None` when sessions are
    /// not saved). It exists once the first prompt was sent.
    pub fn log_path(&self) -> Option<&std::path::Path> {
        self.log.as_ref().map(|l| l.path())
    }

    /// Waits until everything recorded so far is in the session file
    /// (tests; reading the file back).
    pub fn flush_log(&self) {
        if let Some(log) = &self.log {
            log.flush();
        }
    }

    /// Every tool the session can run, as `:Lathe tools` lists them: the
    /// built-ins, then the user tools now.
    pub fn tools(&self) -> Vec<ToolInfo> {
        self.registry
            .all()
            .iter()
            .map(|t| ToolInfo {
                name: t.tool.name().to_string(),
                source: t.tool.source(),
                read_only: t.tool.read_only_kind(),
                offered: t.tool.is_offered(),
            })
            .collect()
    }

    /// The effective configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The permission mode in force (`setup`, a settings file, or
    /// [`Session::set_mode`]).
    pub fn mode(&self) -> Mode {
        self.permissions.mode()
    }

    /// Switches the permission mode for the rest of the session (`:Lathe
    /// mode {name}`); calls already past the permission gate are not
    /// affected.
    pub fn set_mode(&self, mode: Mode) {
        self.permissions.set_mode(mode);
    }

    /// The model of the next request: `config.model` until
    /// [`Session::set_model`], or the last one a resumed session used.
    pub fn model(&self) -> String {
        self.model.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Switches the model from the next request on (a running turn's next
    /// one too), the conversation kept (docs/provider.md, "Switching the
    /// model"): saved in the session file, so a resume goes on with it; a
    /// context window that came from the model is asked for again; the
    /// chat says `MODEL_SWITCHED`. The same name again changes nothing.
    /// Returns the model now in force (`name` trimmed; an empty name
    /// keeps the current one).
    pub fn set_model(&self, name: &str) -> String {
        let name = name.trim();
        if name.is_empty() {
            return self.model();
        }
        {
            let mut model = self.model.write().unwrap_or_else(|e| e.into_inner());
            if *model == name {
                return name.to_string();
            }
            *model = name.to_string();
        }
        if self.config.context_window.is_none() {
            self.context.forget_window();
        }
        if let Some(log) = &self.log {
            log.record(&Record::Model {
                model: name.to_string(),
            });
        }
        self.sink.emit(AgentEvent::Notice {
            text: crate::text::fill(MODEL_SWITCHED, &[("model", name)]),
            is_error: false,
        });
        name.to_string()
    }

    /// The models the provider serves, for completion: its list
    /// (`Provider::list_models`, asked once per session, the answer kept)
    /// with the current and configured models first when it lacks them;
    /// just those two when the provider lists none or the request failed
    /// (asked again next time). Run it on the runtime.
    pub async fn models(&self) -> Vec<String> {
        let listed = match self.models.get() {
            Some(list) => list.clone(),
            None => match self.provider.list_models().await {
                Some(list) => {
                    let _ = self.models.set(list.clone());
                    list
                }
                None => Vec::new(),
            },
        };
        crate::provider::models::completion_names(&listed, &self.model(), &self.config.model)
    }

    /// The provider's models as [`Session::models`] last listed them
    /// (current and configured first); just those two before the first
    /// list. Any thread, never waits.
    pub fn models_known(&self) -> Vec<String> {
        let listed = self.models.get().cloned().unwrap_or_default();
        crate::provider::models::completion_names(&listed, &self.model(), &self.config.model)
    }

    /// Starts (or continues) the conversation with `prompt` on `rt` and
    /// returns at once; progress arrives through the session's `EventSink`.
    ///
    /// When the previous turn was stopped but is still writing its
    /// interrupted results, the new turn starts right after it.
    /// Errors: [`AskError::Busy`] while a turn runs, [`AskError::EmptyPrompt`].
    pub fn ask(
        self: &Arc<Self>,
        prompt: &str,
        rt: &tokio::runtime::Handle,
    ) -> Result<(), AskError> {
        self.ask_with(prompt, None, None, rt)
    }

    /// Starts the once-per-process cleanup of old saved outputs under the
    /// state directory on a thread of its own (`tools::support::retention`;
    /// docs/tools.md, "Saved outputs"). Called by the first prompt
    /// or tool call, not when the session is made: `setup()` starts no
    /// thread (load).
    fn sweep_saved_outputs(&self) {
        crate::tools::support::retention::start(&self.config.state_dir);
    }

    /// Like [`Session::ask`], with context from the editor
    /// (docs/context-and-compaction.md, "Context from the editor"): the user message
    /// starts with what `editor` shows (current file, cursor line, open
    /// buffers), then `selection` (`:'<,'>Lathe`), the prompt's `#` words
    /// and its `@path` files (read through the Read tool when the turn
    /// starts, so they count as the model's Read), then the prompt. Call it
    /// on the thread `editor` answers on (Neovim's main thread).
    /// Errors: as [`Session::ask`], and [`AskError::Attachment`] when an
    /// `@path` cannot be attached (nothing is sent).
    pub fn ask_with(
        self: &Arc<Self>,
        prompt: &str,
        editor: Option<&dyn super::context::EditorContext>,
        selection: Option<&super::context::Selection>,
        rt: &tokio::runtime::Handle,
    ) -> Result<(), AskError> {
        self.ask_with_extras(prompt, editor, selection, TurnExtras::default(), rt)
    }

    /// Like [`Session::ask_with`], for a slash command's turn: `extras`'
    /// rules are allowed without asking until the turn ends (then taken
    /// back), and its model, when given, answers this turn's requests.
    pub fn ask_with_extras(
        self: &Arc<Self>,
        prompt: &str,
        editor: Option<&dyn super::context::EditorContext>,
        selection: Option<&super::context::Selection>,
        extras: TurnExtras,
        rt: &tokio::runtime::Handle,
    ) -> Result<(), AskError> {
        let prompt = prompt.trim().to_string();
        if prompt.is_empty() {
            return Err(AskError::EmptyPrompt);
        }
        // Busy is reported before any attachment problem (as `ask` does).
        if matches!(&self.lock_slot().running, Some(t) if !t.cancel.is_cancelled()) {
            return Err(AskError::Busy);
        }
        self.sweep_saved_outputs();
        let mut user = super::context::gather(
            &prompt,
            editor,
            selection,
            &self.config.cwd,
            &self.permissions.rules(),
        )
        .map_err(|e| AskError::Attachment(e.0))?;
        let mut slot = self.lock_slot();
        let previous = match slot.running.take() {
            Some(t) if !t.cancel.is_cancelled() => {
                slot.running = Some(t);
                return Err(AskError::Busy);
            }
            Some(t) => Some(t.finished),
            None => None,
        };
        // After a rewind the model is told first (docs/checkpoints.md).
        if let Some(note) = self
            .rewind_note
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            user.context.insert(0, note);
        }
        if let Some(item) = extras.sent_as.clone() {
            user.shown.insert(0, item);
        }
        let (cancel, done_tx, generation) = slot.claim();
        drop(slot);

        let shown = extras.typed.clone().unwrap_or_else(|| prompt.clone());
        let session = Arc::clone(self);
        rt.spawn(async move {
            if let Some(mut prev) = previous {
                let _ = prev.wait_for(|done| *done).await;
            }
            session.sink.emit(AgentEvent::TurnStarted {
                prompt: shown.clone(),
            });
            let opened = session.open_checkpoint(&shown);
            let turn_usage = Arc::new(Mutex::new(Usage::default()));
            let mut turn = session.turn(cancel, turn_usage.clone());
            if let Some(model) = extras.model {
                // The command's model answers this turn only: the turn
                // reads its own, not the session's shared one.
                turn.model = Arc::new(std::sync::RwLock::new(model));
            }
            if let Some(command) = &extras.command {
                session.permissions.grant_command(command, &extras.allow);
            }
            let outcome = turn.run_with(user).await;
            if extras.command.is_some() {
                session.permissions.revoke_command();
            }
            session.close_checkpoint(opened).await;
            let (turn, total) = session.settle_spend(&outcome, &turn_usage);
            session.sink.emit(AgentEvent::Usage {
                turn,
                session: total,
            });
            let queued = {
                let mut slot = session.lock_slot();
                // Taken with the slot released under one lock: a message
                // queued now was queued for this turn; one after, asks.
                let queued = std::mem::take(&mut *lock(&session.queued));
                slot.release(generation, outcome.clone());
                queued
            };
            let _ = done_tx.send(true);
            let done = outcome == TurnOutcome::Done;
            session.sink.emit(AgentEvent::TurnEnded { outcome });
            if !queued.is_empty() {
                session.sink.emit(AgentEvent::Queued {
                    messages: Vec::new(),
                });
                session.send_queued(queued, done);
            }
        });
        Ok(())
    }

    /// Queues `message` for the running turn (`<C-s>` in the prompt area
    /// while lathe works): it goes to the model with the turn's next
    /// request, after the tool results; when the turn ends first, it is
    /// the next prompt (a stopped or failed turn gives it back,
    /// `AgentEvent::QueuedReturned`). `Ok(false)` when no turn runs (ask
    /// instead). Errors: [`AskError::EmptyPrompt`].
    pub fn queue(&self, message: &str) -> Result<bool, AskError> {
        let message = message.trim();
        if message.is_empty() {
            return Err(AskError::EmptyPrompt);
        }
        let slot = self.lock_slot();
        if !matches!(&slot.running, Some(t) if !t.cancel.is_cancelled()) {
            return Ok(false);
        }
        let mut queued = lock(&self.queued);
        queued.push(message.to_string());
        self.sink.emit(AgentEvent::Queued {
            messages: queued.clone(),
        });
        Ok(true)
    }

    /// The messages queued for the running turn, oldest first.
    pub fn queued(&self) -> Vec<String> {
        lock(&self.queued).clone()
    }

    /// What a turn's end does with the messages still queued: after a
    /// finished turn they are the next prompt; else (or when another
    /// prompt got in first) the prompt area takes them back.
    fn send_queued(self: &Arc<Self>, queued: Vec<String>, done: bool) {
        let text = queued.join("\n\n");
        let sent = done
            && tokio::runtime::Handle::try_current()
                .is_ok_and(|rt| self.ask_with(&text, None, None, &rt).is_ok());
        if !sent {
            self.sink.emit(AgentEvent::QueuedReturned { text });
        }
    }

    /// Interrupts the running turn, if any: the stream is dropped, running
    /// tools are cancelled and every `tool_use` without a result gets an
    /// interrupted `tool_result` before the turn ends as `stopped`. Also
    /// cancels every [`Session::run_tool`] call running now (each tool
    /// sees its `ctx.cancel` fire, as in a turn); later calls are not
    /// affected.
    pub fn stop(&self) {
        if let Some(t) = &self.lock_slot().running {
            t.cancel.cancel();
        }
        let old = match self.manual_cancel.lock() {
            Ok(mut c) => std::mem::take(&mut *c),
            Err(e) => std::mem::take(&mut *e.into_inner()),
        };
        old.cancel();
    }

    /// Whether a turn is running.
    pub fn status(&self) -> Status {
        let slot = self.lock_slot();
        match &slot.running {
            Some(_) => Status::Running,
            None => Status::Idle(slot.last.clone()),
        }
    }

    /// The conversation so far as Messages API messages (a valid request
    /// body's `messages` whenever no turn is running).
    pub fn transcript(&self) -> Vec<Message> {
        self.transcript.snapshot()
    }

    /// Runs one tool through the whole pipeline (validation, permissions)
    /// without the model, e.g. from a keymap. With `interactive` a call that
    /// needs permission asks the user; without, it is refused with a message
    /// saying so (nobody could answer). The result's `tool_use_id` is a fresh
    /// `toolu_lathe_N`; nothing enters the transcript. `sink` gets the call's
    /// events (a caller without a chat turn shows its notices, such as hook
    /// warnings, another way).
    pub async fn run_tool(
        &self,
        name: &str,
        input: Value,
        interactive: bool,
        sink: Arc<dyn EventSink>,
    ) -> ToolResult {
        self.run_tool_in(name, input, interactive, sink, true).await
    }

    /// Like [`Session::run_tool`], but the call's reads are not remembered
    /// as the model's (its `FileState` records stay with the call): a file
    /// shown to the user (`<Plug>(lathe-read)`) is still news to the model,
    /// whose next Read of it returns the text, not "unchanged".
    pub async fn run_tool_unrecorded(
        &self,
        name: &str,
        input: Value,
        interactive: bool,
        sink: Arc<dyn EventSink>,
    ) -> ToolResult {
        self.run_tool_in(name, input, interactive, sink, false)
            .await
    }

    async fn run_tool_in(
        &self,
        name: &str,
        input: Value,
        interactive: bool,
        sink: Arc<dyn EventSink>,
        record: bool,
    ) -> ToolResult {
        self.sweep_saved_outputs();
        let id = format!(
            "toolu_lathe_{}",
            self.manual_ids.fetch_add(1, Ordering::Relaxed)
        );
        let call = PendingToolUse::from(ToolUse {
            id,
            name: name.to_string(),
            input,
            extra: Default::default(),
        });
        let cancel = match self.manual_cancel.lock() {
            Ok(c) => c.child_token(),
            Err(e) => e.into_inner().child_token(),
        };
        // A tool of an MCP server still starting (a call right after setup()).
        crate::mcp::wait_for_tool(name, &cancel).await;
        let mut env = self.exec_env(cancel, sink);
        env.interactive = interactive;
        env.ctx.by_user = true;
        if !record {
            // Staged and never committed: reads through, remembers nothing.
            env.ctx.file_state = Arc::new(FileState::staged(&self.file_state));
        }
        run_tool_use(&call, &env).await.result
    }

    fn turn(self: &Arc<Self>, cancel: CancellationToken, usage: Arc<Mutex<Usage>>) -> Turn {
        Turn {
            config: self.config.clone(),
            model: self.model.clone(),
            nested_memory: self.nested_memory.clone(),
            log: self.log.clone(),
            system: self.system.clone(),
            project_context: self.project_context.clone(),
            provider: self.provider.clone(),
            transcript: self.transcript.clone(),
            sink: self.sink.clone(),
            env: self.exec_env(cancel.clone(), self.sink.clone()),
            cancel,
            max_tokens: AtomicU32::new(self.config.max_tokens),
            stream_broke: AtomicBool::new(false),
            usage,
            context: self.context.clone(),
            request_bytes: AtomicU64::new(0),
            first_with_context: self.first_with_context.clone(),
            checked: self.checked.clone(),
            queued: self.queued.clone(),
        }
    }

    /// How full the context window is: the last request's input tokens
    /// (input + cache read + cache write) and output, scaled by what was
    /// added or taken out since; `None` before the first request.
    pub fn context_meter(&self) -> Option<super::compact::Meter> {
        self.context.meter()
    }

    /// Estimates how full the window is from the conversation as it is
    /// now, no request sent, and tells the chat (`AgentEvent::Context`):
    /// a resumed session shows its meter before its first request. The
    /// window is asked of the provider as a first request would; runs on
    /// `rt` and returns at once.
    pub fn estimate_context(self: &Arc<Self>, rt: &tokio::runtime::Handle) {
        let session = Arc::clone(self);
        rt.spawn(async move {
            let turn = session.turn(CancellationToken::new(), Arc::default());
            turn.window().await;
            turn.refresh_meter();
        });
    }

    /// What the context holds, by part (`:Lathe context`).
    pub fn context_report(self: &Arc<Self>) -> super::compact::ContextReport {
        let turn = self.turn(
            CancellationToken::new(),
            Arc::new(Mutex::new(Usage::default())),
        );
        super::compact::report(&self.context, &turn.build_request())
    }

    /// Compacts the conversation now (`:Lathe compact [focus]`), as a turn
    /// of its own: progress and the result arrive through the session's
    /// `EventSink` (`AgentEvent::Compacted`, or a notice saying why not),
    /// and the returned task ends with the same result (`Err`: the
    /// notice's text), so a caller outside the chat can say it too.
    /// Errors: [`AskError::Busy`] while a turn runs.
    pub fn compact(
        self: &Arc<Self>,
        focus: Option<&str>,
        rt: &tokio::runtime::Handle,
    ) -> Result<tokio::task::JoinHandle<Result<(), String>>, AskError> {
        let mut slot = self.lock_slot();
        if slot.running.is_some() {
            return Err(AskError::Busy);
        }
        let (cancel, done_tx, generation) = slot.claim();
        drop(slot);
        let session = Arc::clone(self);
        let focus = focus.map(str::to_string);
        Ok(rt.spawn(async move {
            let turn_usage = Arc::new(Mutex::new(Usage::default()));
            let turn = session.turn(cancel, turn_usage.clone());
            let (outcome, result) = match turn.compact(focus.as_deref()).await {
                Ok(()) => (TurnOutcome::Done, Ok(())),
                Err(e) => {
                    let msg = crate::text::fill(super::compact::COMPACT_FAILED, &[("error", &e)]);
                    session.sink.emit(AgentEvent::Notice {
                        text: msg.clone(),
                        is_error: true,
                    });
                    (TurnOutcome::Error(msg.clone()), Err(msg))
                }
            };
            // The summary request is part of the session's spend, saved
            // as a turn's is (a resume adds it up too).
            let (spent, total) = session.settle_spend(&outcome, &turn_usage);
            session.lock_slot().release(generation, outcome);
            let _ = done_tx.send(true);
            // After the release: the compaction's end, the statuslines
            // are drawn idle (the front end's status sink redraws on `Usage`).
            session.sink.emit(AgentEvent::Usage {
                turn: spent,
                session: total,
            });
            result
        }))
    }

    /// Starts an inline edit of `edit` (docs/inline-edit.md): one request
    /// outside the conversation, through the session's provider and with
    /// its settings ([`super::inline::run`]); `on_text` gets the answer's
    /// whole text so far after each piece. The task ends with the whole
    /// answer or the user-facing reason it has none. The returned token
    /// stops it, and so does [`Session::stop`]. What it spent counts in
    /// the session's spend.
    pub fn inline_edit(
        self: &Arc<Self>,
        edit: &super::inline::InlineEdit,
        rt: &tokio::runtime::Handle,
        mut on_text: Box<dyn FnMut(&str) + Send>,
    ) -> (
        tokio::task::JoinHandle<Result<String, String>>,
        CancellationToken,
    ) {
        let cancel = match self.manual_cancel.lock() {
            Ok(c) => c.child_token(),
            Err(e) => e.into_inner().child_token(),
        };
        let mut req = super::inline::request(edit, &self.config);
        // The model the session uses now (`Session::set_model`).
        req.model = self.model();
        let session = Arc::clone(self);
        let stop = cancel.clone();
        let task = rt.spawn(async move {
            let answer = super::inline::run(
                session.provider.as_ref(),
                &session.config,
                req,
                &stop,
                &mut *on_text,
            )
            .await;
            answer.map(|(text, spent)| {
                let mut total = session.usage.lock().unwrap_or_else(|e| e.into_inner());
                super::turn::add(&mut total, &spent);
                text
            })
        });
        (task, cancel)
    }

    /// The end of a turn or a compaction for the spend: adds what it
    /// spent to the session's total, saves the file stamps and the
    /// `turn_end` record, and returns (spent, total) for the `Usage` event.
    fn settle_spend(&self, outcome: &TurnOutcome, spent: &Mutex<Usage>) -> (Usage, Usage) {
        let spent = spent.lock().map(|u| u.clone()).unwrap_or_default();
        let total = {
            let mut total = self.usage.lock().unwrap_or_else(|e| e.into_inner());
            super::turn::add(&mut total, &spent);
            total.clone()
        };
        self.save_file_stamps();
        if let Some(log) = &self.log {
            log.record(&Record::turn_end(outcome, spent.clone(), total.clone()));
        }
        (spent, total)
    }

    /// Records the stamp of each file the model read in the session file
    /// (`Record::FileStamps`), so the stale rule holds after a resume.
    fn save_file_stamps(&self) {
        let Some(log) = &self.log else { return };
        let files = self
            .file_state
            .recent()
            .into_iter()
            .map(|(path, r)| session_log::FileStamp {
                in_context: self.file_state.content_in_context(&path),
                path,
                sha256: r.stamp.hash.to_hex(),
                offset: r.offset,
                limit: r.limit,
            })
            .collect::<Vec<_>>();
        if !files.is_empty() {
            log.record(&Record::FileStamps { files });
        }
    }

    /// Opens the checkpoint of a prompt (before its user message is
    /// added) and starts the `git status` its end compares with.
    fn open_checkpoint(&self, prompt: &str) -> OpenCheckpoint {
        let mark = self.transcript.mark();
        let id = self
            .checkpoints
            .begin(prompt, mark, self.transcript.generation());
        if let Some(log) = &self.log {
            log.record(&Record::CheckpointBegin {
                id,
                mark,
                prompt: prompt.to_string(),
            });
        }
        let root = self.config.cwd.clone();
        OpenCheckpoint {
            mark,
            git: tokio::spawn(async move { git::snapshot(&root).await }),
        }
    }

    /// Closes the prompt's checkpoint: when the turn ran a Bash command,
    /// lists the files git says changed meanwhile; saves its record.
    async fn close_checkpoint(&self, open: OpenCheckpoint) {
        let ran_bash = self
            .transcript
            .shared()
            .iter()
            .skip(open.mark.len.saturating_sub(1))
            .flat_map(|m| m.tool_uses())
            .any(|u| u.name == "Bash");
        let touched = match (ran_bash, open.git.await) {
            (true, Ok(Some(before))) => match git::snapshot(&self.config.cwd).await {
                Some(after) => git::touched(&before, &after),
                None => Vec::new(),
            },
            _ => Vec::new(),
        };
        if let (Some(record), Some(log)) = (self.checkpoints.end(touched), &self.log) {
            log.record(&record);
        }
    }

    /// Every prompt's checkpoint, oldest first (`:Lathe rewind`'s list).
    pub fn checkpoints(&self) -> Vec<Checkpoint> {
        self.checkpoints.list()
    }

    /// What `:Lathe changes` diffs against: each file lathe's tools changed
    /// in the last prompt's turn (`all`: in the whole session), with its
    /// text before (or what the review accepted since).
    pub fn review_bases(&self, all: bool) -> Vec<(std::path::PathBuf, Kept)> {
        let list = self.checkpoints.list();
        let from = if all { list.first() } else { list.last() };
        match from {
            Some(cp) => self.checkpoints.review_bases(cp.id),
            None => Vec::new(),
        }
    }

    /// The user kept hunks of `path` in the review: from now on it is
    /// diffed against `base` (`None`: as if the file did not exist).
    pub fn accept_change(&self, path: &std::path::Path, base: Option<&str>) {
        self.checkpoints.accept(path, base);
    }

    /// Takes the code, the conversation or both back to before the prompt
    /// `back` prompts ago (1: the last one), as a step of its own on `rt`
    /// (`:Lathe rewind`; docs/checkpoints.md, "Rewind"). Files go through
    /// the editor, never over lines the user changed since; the chat gets
    /// a notice saying what was done, and the model a note with the next
    /// prompt. The task's `Err` is a message for the user (nothing was
    /// changed). Errors: [`AskError::Busy`] while a turn runs.
    pub fn rewind(
        self: &Arc<Self>,
        back: usize,
        what: RewindWhat,
        rt: &tokio::runtime::Handle,
    ) -> Result<tokio::task::JoinHandle<Result<RewindReport, String>>, AskError> {
        let mut slot = self.lock_slot();
        if slot.running.is_some() {
            return Err(AskError::Busy);
        }
        let (_cancel, done_tx, generation) = slot.claim();
        drop(slot);
        let session = Arc::clone(self);
        Ok(rt.spawn(async move {
            let result = session.rewind_now(back, what).await;
            let mut slot = session.lock_slot();
            let last = slot.last.clone().unwrap_or(TurnOutcome::Done);
            slot.release(generation, last);
            drop(slot);
            let _ = done_tx.send(true);
            result
        }))
    }

    async fn rewind_now(&self, back: usize, what: RewindWhat) -> Result<RewindReport, String> {
        let list = self.checkpoints.list();
        let cp = rewinding::target(&list, back)?.clone();
        let number = list.iter().position(|c| c.id == cp.id).map_or(1, |i| i + 1);
        if what.conversation()
            && (!cp.conversation || cp.generation != self.transcript.generation())
        {
            return Err(crate::text::fill(
                rewinding::COMPACTED,
                &[("n", &back.to_string())],
            ));
        }
        let mut report = RewindReport {
            to: cp.id,
            prompt: cp.prompt.clone(),
            back,
            code: what.code(),
            conversation: what.conversation(),
            ..RewindReport::default()
        };
        let mut restored = Vec::new();
        let mut texts = std::collections::BTreeMap::new();
        if what.code() {
            let changes = self.checkpoints.changed_since(cp.id);
            rewinding::restore_code(self.editor.as_ref(), &changes, &mut report).await;
            let paths: Vec<_> = changes.iter().map(|f| f.path.clone()).collect();
            self.checkpoints.forget_accepted(&paths);
            // What the rewound prompts left is now the text as restored: a
            // later rewind further back must not take the restore for the
            // user's edits.
            for path in &paths {
                let now = match self.editor.read(path).await {
                    Ok(doc) => Some(doc.text),
                    Err(crate::editor::EditorError::NotFound(_)) => None,
                    Err(_) => continue,
                };
                let (saved, text) = self.checkpoints.restored(cp.id, path, now.as_deref());
                restored.push((path.clone(), saved));
                texts.extend(text);
            }
            report.bash_touched = list
                .iter()
                .filter(|c| c.id >= cp.id)
                .flat_map(|c| c.bash_touched.iter().cloned())
                .collect();
            report.bash_touched.sort();
            report.bash_touched.dedup();
        }
        let note = rewinding::model_note(&report, &self.config.cwd);
        if what.conversation() {
            self.transcript
                .rewind_to(cp.mark, cp.id, what.code(), &note);
            self.checkpoints.drop_from(cp.id);
            // What the model read after the prompt is gone from its
            // context: its next Read of such a file answers with the text.
            for (path, _) in self.file_state.recent() {
                self.file_state.mark_gone(&path);
            }
        } else if let Some(log) = &self.log {
            log.record(&Record::Rewind {
                to: cp.id,
                code: true,
                conversation: None,
                note: note.clone(),
                restored,
                texts,
            });
        }
        // A note no prompt carried yet stays: the model hears of both.
        let mut pending = self.rewind_note.lock().unwrap_or_else(|e| e.into_inner());
        *pending = Some(match pending.take() {
            Some(earlier) => format!("{earlier}\n\n{note}"),
            None => note,
        });
        drop(pending);
        self.sink.emit(AgentEvent::Notice {
            text: rewinding::notice(&report, number, &self.config.cwd),
            is_error: false,
        });
        Ok(report)
    }

    /// The events that draw the conversation as its session file has it
    /// now (after a rewind the chat is drawn again from them); `None` when
    /// the session is not saved.
    pub fn replay_events(&self) -> Option<Vec<AgentEvent>> {
        let path = self.log.as_ref()?.path().to_path_buf();
        self.flush_log();
        LoadedSession::load(&path).ok().map(|l| l.restored.events)
    }

    /// Tokens used by every request of the session so far (input, output,
    /// cache reads and writes, as the API reported them).
    pub fn usage(&self) -> Usage {
        self.usage.lock().map(|u| u.clone()).unwrap_or_default()
    }

    fn exec_env(&self, cancel: CancellationToken, sink: Arc<dyn EventSink>) -> ExecEnv {
        ExecEnv {
            registry: self.registry.clone(),
            ctx: ToolContext {
                root: self.config.cwd.clone(),
                editor: self.editor.clone(),
                file_state: self.file_state.clone(),
                cancel,
                progress: None,
                by_user: false,
            },
            permissions: self.permissions.clone(),
            prompter: self.prompter.clone(),
            sink,
            results: self.results.clone(),
            interactive: true,
            hooks: self.hooks.clone(),
            turn_stop: TurnStop::default(),
            answer: Default::default(),
        }
    }

    fn lock_slot(&self) -> MutexGuard<'_, TurnSlot> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// `m` locked, a poisoned lock taken as it is.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A prompt's checkpoint while its turn runs.
struct OpenCheckpoint {
    mark: session_log::Mark,
    git: tokio::task::JoinHandle<Option<git::Snapshot>>,
}

/// A session id unique on this machine: start time (ms since the epoch,
/// made to grow within the process so two sessions started in the same
/// millisecond never share a file) and pid.
fn session_id() -> String {
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = session_log::now_ms();
    let prev = LAST
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |last| {
            Some(now.max(last + 1))
        })
        .unwrap_or(now);
    let ms = now.max(prev + 1);
    format!("{ms}-{}", std::process::id())
}

#[cfg(test)]
mod tests {
    #[test]
    fn session_ids_never_repeat_within_a_process() {
        let ids: std::collections::HashSet<String> =
            (0..200).map(|_| super::session_id()).collect();
        assert_eq!(ids.len(), 200);
    }
}
