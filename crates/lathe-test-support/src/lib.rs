//! What lathe's tests share: `mock-llm` on loopback, a [`Session`] against
//! it in a temp project, and readers of what the turn left behind; for tests
//! of single tools, a [`ToolContext`] and a runner through the tool's own
//! gates; Neovim in tmux ([`tui`]). Test files use it as
//! `use lathe_test_support as common;`.

// Test code, where a failed expect is the test's failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod tui;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use lathe_core::agent::{Session, SessionParts, Status};
use lathe_core::config::{Config, ProviderKind};
use lathe_core::editor::{DiskEditor, Editor};
use lathe_core::events::{EventSink, RecordingSink, TurnOutcome};
use lathe_core::execution::{ExecEnv, Hooks, ResultStore, ToolRegistry};
use lathe_core::permissions::{PermissionState, PromptAnswer, Prompter, Rules, ScriptedPrompter};
use lathe_core::protocol::{ContentBlock, Message};
use lathe_core::tools::{builtin_tools, FileState, Tool, ToolContext};
use mock_llm::{MockServer, Script};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// The parts of a session for `config`: its provider, the disk as editor,
/// no answers to asks (an ask fails the call), events recorded, no hooks.
pub fn parts(config: Config) -> SessionParts {
    SessionParts {
        provider: lathe_core::provider::from_config(&config).unwrap(),
        config,
        editor: Arc::new(DiskEditor),
        prompter: Arc::new(ScriptedPrompter::new(Vec::new())),
        sink: Arc::new(RecordingSink::default()),
        hooks: Vec::new(),
    }
}

/// Most time one turn may take before a test fails.
pub const TURN_LIMIT: Duration = Duration::from_secs(60);

/// Starts `mock-llm` on loopback playing `script` (its JSON script format:
/// `{"responses": [...]}`). Panics when the script does not parse.
pub async fn spawn_mock(script: &Value) -> MockServer {
    mock_llm::spawn(
        Script::from_json(&script.to_string()).expect("script"),
        None,
    )
    .await
    .expect("mock-llm")
}

/// A session against `mock-llm` in a fresh temp project.
pub struct Harness {
    /// The mock API; `requests()` lists what the session sent.
    pub server: MockServer,
    /// The session under test.
    pub session: Arc<Session>,
    /// Every event the chat would have seen.
    pub sink: Arc<RecordingSink>,
    /// Answers permission prompts from a script and records what was asked.
    pub prompter: Arc<ScriptedPrompter>,
    /// The project root (canonical, so paths compare exactly).
    pub root: PathBuf,
    _dir: tempfile::TempDir,
}

/// Which of mock-llm's two APIs a session talks to: the Messages API
/// (`POST /v1/messages`) or OpenAI-compatible chat completions (`POST
/// /v1/chat/completions`), both playing the same script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// `provider = "anthropic"`, base_url = the mock's root.
    Anthropic,
    /// `provider = "openai"`, base_url = the mock's root + `/v1`.
    OpenAi,
}

/// Starts `mock-llm` with `script` and a session against it rooted in a new
/// temp directory, with the built-in tools plus `extra`, a disk editor and a
/// prompter that gives `answers` in order. `tune` adjusts the config (after
/// `base_url` points at the mock) before the session is made.
pub async fn harness(
    script: Value,
    answers: Vec<PromptAnswer>,
    tune: impl FnOnce(&mut Config),
    extra: Vec<Arc<dyn Tool>>,
) -> Harness {
    harness_on(Api::Anthropic, script, answers, tune, extra).await
}

/// [`harness`] talking to `api`. For [`Api::OpenAi`], the script's
/// `tool_result_is_error` expectations are dropped: chat completions has no
/// `is_error` (a `tool` message is only text), so mock-llm refuses them
/// there; the tests check errors through the transcript instead.
pub async fn harness_on(
    api: Api,
    mut script: Value,
    answers: Vec<PromptAnswer>,
    tune: impl FnOnce(&mut Config),
    extra: Vec<Arc<dyn Tool>>,
) -> Harness {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical root");
    if api == Api::OpenAi {
        for entry in script["responses"].as_array_mut().into_iter().flatten() {
            if let Some(expect) = entry.get_mut("expect").and_then(Value::as_object_mut) {
                expect.remove("tool_result_is_error");
            }
        }
    }
    let server = spawn_mock(&script).await;
    let mut config = Config::new(&root);
    match api {
        Api::Anthropic => config.base_url = server.url(),
        Api::OpenAi => {
            config.provider = ProviderKind::OpenAi;
            config.base_url = format!("{}/v1", server.url());
        }
    }
    tune(&mut config);
    let sink = Arc::new(RecordingSink::default());
    let prompter = Arc::new(ScriptedPrompter::new(answers));
    let session = Session::with_extra_tools(
        SessionParts {
            provider: lathe_core::provider::from_config(&config).expect("provider"),
            config,
            editor: Arc::new(DiskEditor),
            prompter: prompter.clone(),
            sink: sink.clone(),
            hooks: Vec::new(),
        },
        extra,
    )
    .expect("tool names are unique");
    Harness {
        server,
        session,
        sink,
        prompter,
        root,
        _dir: dir,
    }
}

/// Declares, for each `async fn name(api: Api)` listed, one test per API:
/// `anthropic::name` and `openai::name`.
#[macro_export]
macro_rules! on_both_apis {
    ($($name:ident),* $(,)?) => {
        mod anthropic {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::Api::Anthropic).await
                }
            )*
        }
        mod openai {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::Api::OpenAi).await
                }
            )*
        }
    };
}

impl Harness {
    /// Writes `text` to `rel` under the root, creating folders.
    pub fn write(&self, rel: &str, text: &str) {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }

    /// The text of every notice the chat was sent, in order (retry notes
    /// included: the chat shows one per outage, updated in place).
    #[allow(dead_code)] // not every test binary that includes common asks for it
    pub fn notices(&self) -> Vec<String> {
        self.sink
            .events()
            .into_iter()
            .filter_map(|e| match e {
                lathe_core::events::AgentEvent::Notice { text, .. }
                | lathe_core::events::AgentEvent::Retrying { text } => Some(text),
                _ => None,
            })
            .collect()
    }

    /// The text of `rel` under the root.
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root.join(rel)).expect("read")
    }

    /// Asks `prompt` and waits (at most [`TURN_LIMIT`]) for the turn to end.
    pub async fn ask(&self, prompt: &str) -> TurnOutcome {
        self.session
            .ask(prompt, &tokio::runtime::Handle::current())
            .expect("ask starts");
        wait_idle(&self.session).await
    }
}

/// Waits, polling every 10 ms, until `session` is idle after a turn and
/// returns how that turn ended. Panics after [`TURN_LIMIT`].
pub async fn wait_idle(session: &Session) -> TurnOutcome {
    let polls = TURN_LIMIT.as_millis() / 10;
    for _ in 0..polls {
        if let Status::Idle(Some(outcome)) = session.status() {
            return outcome;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("turn did not end within {} s", TURN_LIMIT.as_secs());
}

/// The `tool_result` blocks of `msg` as `(tool_use_id, is_error, text)`, in
/// order.
pub fn tool_results(msg: &Message) -> Vec<(String, bool, String)> {
    msg.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolResult(r) => {
                Some((r.tool_use_id.clone(), r.is_error, r.content.as_text()))
            }
            _ => None,
        })
        .collect()
}

/// A tool context rooted at `root` on `editor`: nothing read yet, not
/// cancelled, no progress listener.
pub fn tool_ctx(root: &Path, editor: Arc<dyn Editor>) -> ToolContext {
    ToolContext {
        root: root.to_path_buf(),
        editor,
        file_state: Arc::new(FileState::new()),
        cancel: CancellationToken::new(),
        progress: None,
        by_user: false,
    }
}

/// The pipeline's environment for a project at `root` (canonical) with
/// the built-in tools, a disk editor, `rules` in force and a prompter that
/// gives `answers` in order (returned too, to see what was asked).
pub fn exec_env(
    root: &Path,
    rules: Rules,
    answers: Vec<PromptAnswer>,
) -> (ExecEnv, Arc<ScriptedPrompter>) {
    let prompter = Arc::new(ScriptedPrompter::new(answers));
    let env = env_at(root).rules(rules).prompter(prompter.clone()).build();
    (env, prompter)
}

/// Builds an [`ExecEnv`] (the pipeline's environment) for a project at
/// `root`: what a test does not set is the default below. Start with
/// [`env_at`].
pub struct EnvBuilder {
    root: PathBuf,
    tools: Option<Vec<Arc<dyn Tool>>>,
    editor: Arc<dyn Editor>,
    ctx: Option<ToolContext>,
    rules: Rules,
    prompter: Arc<dyn Prompter>,
    sink: Arc<dyn EventSink>,
    results: Option<ResultStore>,
    hooks: Arc<Hooks>,
}

/// An [`EnvBuilder`] for `root`: the built-in tools of `Config::new(root)`,
/// the disk as editor, the default rules (reads run, changes ask), a
/// prompter with no answers (an ask is denied), events recorded, saved
/// results under `root/.results`, interactive, no hooks.
pub fn env_at(root: &Path) -> EnvBuilder {
    EnvBuilder {
        root: root.to_path_buf(),
        tools: None,
        editor: Arc::new(DiskEditor),
        ctx: None,
        rules: Rules::default(),
        prompter: Arc::new(ScriptedPrompter::default()),
        sink: Arc::new(RecordingSink::default()),
        results: None,
        hooks: Default::default(),
    }
}

impl EnvBuilder {
    /// These tools instead of the built-in ones.
    pub fn tools(mut self, tools: Vec<Arc<dyn Tool>>) -> Self {
        self.tools = Some(tools);
        self
    }
    /// This editor (the tool context is made on it).
    pub fn editor(mut self, editor: Arc<dyn Editor>) -> Self {
        self.editor = editor;
        self
    }
    /// This whole tool context (root, editor, read state, cancellation).
    pub fn ctx(mut self, ctx: ToolContext) -> Self {
        self.ctx = Some(ctx);
        self
    }
    /// These rules in force.
    pub fn rules(mut self, rules: Rules) -> Self {
        self.rules = rules;
        self
    }
    /// This prompter.
    pub fn prompter(mut self, prompter: Arc<dyn Prompter>) -> Self {
        self.prompter = prompter;
        self
    }
    /// This event sink.
    pub fn sink(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.sink = sink;
        self
    }
    /// Oversized results saved under `dir` (named with `prefix`).
    pub fn results(mut self, dir: PathBuf, prefix: &str) -> Self {
        self.results = Some(ResultStore::new(dir, prefix));
        self
    }
    /// These hooks.
    pub fn hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = Arc::new(hooks);
        self
    }
    /// The environment.
    pub fn build(self) -> ExecEnv {
        let tools = self
            .tools
            .unwrap_or_else(|| builtin_tools(&Config::new(&self.root)));
        ExecEnv {
            registry: Arc::new(ToolRegistry::new(tools).expect("unique tool names")),
            ctx: self
                .ctx
                .unwrap_or_else(|| tool_ctx(&self.root, self.editor.clone())),
            permissions: Arc::new(PermissionState::new(self.rules)),
            prompter: self.prompter,
            sink: self.sink,
            results: Arc::new(
                self.results
                    .unwrap_or_else(|| ResultStore::new(self.root.join(".results"), "t")),
            ),
            interactive: true,
            hooks: self.hooks,
            turn_stop: Default::default(),
            answer: Default::default(),
        }
    }
}

/// One `tool_use` of `name` with `input` through every gate: the chat's
/// status and the `tool_result`'s text.
pub async fn run_call(
    env: &lathe_core::execution::ExecEnv,
    name: &str,
    input: Value,
) -> (lathe_core::events::ToolStatus, String) {
    let run = lathe_core::execution::run_tool_use(
        &lathe_core::execution::PendingToolUse::from(lathe_core::protocol::ToolUse {
            id: "toolu_1".into(),
            name: name.into(),
            input,
            extra: Default::default(),
        }),
        env,
    )
    .await;
    (run.status, run.result.content.as_text())
}

/// The built-in tool called `name` (its name or one of its aliases).
/// Panics when there is none.
pub fn builtin(name: &str) -> Arc<dyn Tool> {
    builtin_tools(&Config::new(Path::new("/")))
        .into_iter()
        .find(|t| t.name() == name || t.aliases().contains(&name))
        .unwrap_or_else(|| panic!("no tool {name}"))
}

/// Runs `tool` on `input` like the pipeline: prepare (parse + normalise),
/// validate, call. `Ok` is the result text, `Err` the model-facing message
/// of the first gate that failed.
pub async fn run_tool(
    tool: Arc<dyn Tool>,
    ctx: &ToolContext,
    input: &Value,
) -> Result<String, String> {
    let call = tool.prepare(input, &ctx.root).map_err(|e| e.message)?;
    let planned = call.validate(ctx).await.map_err(|e| e.message)?;
    planned
        .run(ctx)
        .await
        .map(|o| o.content.as_text())
        .map_err(|e| e.message)
}

/// A folder outside the project that sandboxed commands may not write:
/// not under the temp dir, which the sandbox lets them write (so not
/// cargo's scratch folder when the checkout itself is under `/tmp`).
pub fn outside_dir() -> tempfile::TempDir {
    let temp = std::env::temp_dir().canonicalize().unwrap();
    let candidates = [
        target_tmp_dir(),
        Some(PathBuf::from("/var/tmp")),
        std::env::var_os("HOME").map(PathBuf::from),
    ];
    for dir in candidates.into_iter().flatten() {
        let Ok(dir) = dir.canonicalize() else {
            continue;
        };
        if dir.starts_with(&temp) {
            continue;
        }
        if let Ok(t) = tempfile::Builder::new()
            .prefix("lathe-outside-")
            .tempdir_in(&dir)
        {
            return t;
        }
    }
    panic!("no writable folder outside the temp dir {}", temp.display());
}

/// The workspace's root folder (where `tests/fixtures`, `tests/mcp` and
/// `fuzz/` are), whichever package's test asks.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root")
}

/// Cargo's scratch folder for tests (`target/tmp`, what
/// `CARGO_TARGET_TMPDIR` names to an integration test), found from the
/// running test binary (`target/<profile>/deps/…`).
fn target_tmp_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let target = exe.parent()?.parent()?.parent()?;
    let tmp = target.join("tmp");
    std::fs::create_dir_all(&tmp).ok()?;
    Some(tmp)
}
