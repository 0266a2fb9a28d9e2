//! Pipeline tests with small fake tools: every exit gives one `tool_result`
//! with the original id.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::editor::{Document, Editor, EditorError, WriteOutcome, WriteRequest};
use crate::events::RecordingSink;
use crate::permissions::PermissionPreview;
use crate::permissions::{Rule, RuleKind, RuleSource, Rules, ScriptedPrompter};
use crate::tools::{support::paths, FileState, ToolError, TypedTool};

/// An editor with no files at all.
struct NoFiles;

#[async_trait]
impl Editor for NoFiles {
    async fn read(&self, path: &std::path::Path) -> Result<Document, EditorError> {
        Err(EditorError::NotFound(path.to_path_buf()))
    }
    async fn write(
        &self,
        path: &std::path::Path,
        _: WriteRequest,
    ) -> Result<WriteOutcome, EditorError> {
        Err(EditorError::NotFound(path.to_path_buf()))
    }
}

/// Echoes `text`; `file_path` decides the permission target; `panic` panics.
struct Echo {
    read_only: bool,
    /// How many times gate 3 ran (normalize), over every call.
    normalized: Arc<AtomicUsize>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EchoInput {
    /// Text to echo.
    text: String,
    /// Target file.
    #[serde(default)]
    file_path: Option<String>,
    /// Panic inside call.
    #[serde(default)]
    panic: bool,
}

#[async_trait]
impl TypedTool for Echo {
    type Input = EchoInput;
    type Plan = ();
    const NAME: &'static str = "Echo";
    const KIND: crate::tools::ToolKind = crate::tools::ToolKind::Other;
    const ALIASES: &'static [&'static str] = &["echo_text"];
    const MAX_RESULT_CHARS: Option<usize> = Some(3_000);
    fn description(&self) -> String {
        "Echoes".into()
    }
    fn is_read_only(&self, _: &EchoInput) -> bool {
        self.read_only
    }
    fn normalize(&self, mut input: EchoInput, root: &Path) -> EchoInput {
        self.normalized.fetch_add(1, Ordering::SeqCst);
        input.file_path = input
            .file_path
            .map(|p| paths::resolve(root, &p).display().to_string());
        input
    }
    fn target_path(&self, input: &EchoInput) -> Option<PathBuf> {
        input.file_path.as_ref().map(PathBuf::from)
    }
    async fn validate_input(&self, input: &EchoInput, _: &ToolContext) -> Result<(), ToolError> {
        if input.text == "invalid" {
            return Err(ToolError::new(
                "text must not be 'invalid'; pick another text",
            ));
        }
        Ok(())
    }
    fn permission_preview(&self, input: &EchoInput, _: &(), _: &Path) -> PermissionPreview {
        PermissionPreview {
            path: input.file_path.as_ref().map(PathBuf::from),
            title: format!("Echo {}", input.text),
            ..PermissionPreview::default()
        }
    }
    async fn call(
        &self,
        input: EchoInput,
        _: (),
        _: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        if input.panic {
            panic!("echo exploded");
        }
        Ok(ToolOutput::text(format!("echo: {}", input.text), "echoed"))
    }
    fn describe(&self, input: &EchoInput, _root: &Path) -> String {
        input.text.clone()
    }
}

fn env(
    read_only: bool,
    rules: Rules,
    prompter: Arc<ScriptedPrompter>,
) -> (ExecEnv, Arc<RecordingSink>) {
    env_with(
        Echo {
            read_only,
            normalized: Arc::default(),
        },
        rules,
        prompter,
    )
}

fn env_with(
    echo: Echo,
    rules: Rules,
    prompter: Arc<ScriptedPrompter>,
) -> (ExecEnv, Arc<RecordingSink>) {
    let sink = Arc::new(RecordingSink::default());
    let env = ExecEnv {
        registry: Arc::new(ToolRegistry::new(vec![Arc::new(echo)]).expect("one tool")),
        ctx: ToolContext {
            root: PathBuf::from("/project"),
            editor: Arc::new(NoFiles),
            file_state: Arc::new(FileState::new()),
            cancel: CancellationToken::new(),
            progress: None,
            by_user: false,
        },
        permissions: Arc::new(PermissionState::new(rules)),
        prompter,
        sink: sink.clone(),
        results: Arc::new(ResultStore::new(
            std::env::temp_dir().join("lathe-test"),
            "t",
        )),
        interactive: true,
        hooks: Default::default(),
        turn_stop: Default::default(),
        answer: Default::default(),
    };
    (env, sink)
}

/// [`env`] with a read-only Echo, the default rules and a prompter with no
/// answers.
fn read_only_env() -> (ExecEnv, Arc<RecordingSink>) {
    env(
        true,
        Rules::default(),
        Arc::new(ScriptedPrompter::default()),
    )
}

fn call(name: &str, input: serde_json::Value) -> PendingToolUse {
    PendingToolUse::from(ToolUse {
        id: "toolu_1".into(),
        name: name.into(),
        input,
        extra: Default::default(),
    })
}

fn text(run: &ToolRun) -> String {
    run.result.content.as_text()
}

#[tokio::test]
async fn success_keeps_the_id_and_reports_done() {
    let (env, sink) = read_only_env();
    let run = run_tool_use(&call("Echo", json!({"text": "hi"})), &env).await;
    assert_eq!(run.result.tool_use_id, "toolu_1");
    assert!(!run.result.is_error);
    assert_eq!(text(&run), "echo: hi");
    assert_eq!(run.status, ToolStatus::Done);
    let events = sink.events();
    assert!(matches!(&events[0], AgentEvent::ToolStarted { detail, .. } if detail == "hi"));
    assert!(matches!(
        &events[1],
        AgentEvent::ToolFinished {
            status: ToolStatus::Done,
            ..
        }
    ));
}

#[tokio::test]
async fn alias_and_case_resolve() {
    let (env, _) = read_only_env();
    assert_eq!(
        text(&run_tool_use(&call("echo_text", json!({"text": "a"})), &env).await),
        "echo: a"
    );
    assert_eq!(
        text(&run_tool_use(&call("echo", json!({"text": "b"})), &env).await),
        "echo: b"
    );
}

#[tokio::test]
async fn unknown_tool_names_the_available_ones() {
    let (env, sink) = read_only_env();
    let run = run_tool_use(&call("Fetch", json!({})), &env).await;
    assert!(run.result.is_error);
    assert_eq!(
        text(&run),
        "No such tool available: Fetch. Available tools: Echo. Call one of these by its exact name."
    );
    assert_eq!(
        sink.events().len(),
        2,
        "started + finished even for unknown tools"
    );
}

#[tokio::test]
async fn schema_errors_name_the_field() {
    let (env, _) = read_only_env();
    let run = run_tool_use(&call("Echo", json!({"text": 3, "extra": true})), &env).await;
    assert!(run.result.is_error);
    let t = text(&run);
    assert!(t.contains("- `text`: expected string, got number 3"), "{t}");
    assert!(t.contains("- `extra`: unexpected parameter"), "{t}");
}

#[tokio::test]
async fn unparseable_input_is_an_error_not_empty_input() {
    let (env, _) = read_only_env();
    let mut c = call("Echo", json!({}));
    c.input_error = Some("EOF while parsing a string".into());
    let run = run_tool_use(&c, &env).await;
    assert!(run.result.is_error);
    assert!(text(&run)
        .starts_with("The input for Echo was not valid JSON (EOF while parsing a string)"));
}

/// A call gates 1–3 refused still names what it was about in the chat:
/// its key field, else the text that arrived, else its input as JSON.
#[tokio::test]
async fn a_refused_call_shows_what_is_known_of_its_input() {
    let started = |c: PendingToolUse| async move {
        let (env, sink) = read_only_env();
        run_tool_use(&c, &env).await;
        sink.events()
            .into_iter()
            .find_map(|e| match e {
                AgentEvent::ToolStarted { detail, .. } => Some(detail),
                _ => None,
            })
            .unwrap()
    };
    let mut not_json = call("Echo", json!({}));
    not_json.input_error = Some("EOF while parsing a string".into());
    not_json.sent = Some("{\"file_path\": \"src/a.r".into());
    assert_eq!(started(not_json).await, "{\"file_path\": \"src/a.r");
    // Missing its required field, with the key field present.
    let bad = call("Echo", json!({"file_path": "a.txt", "limit": "x"}));
    assert_eq!(started(bad).await, "a.txt");
    let other = call("Echo", json!({"txt": "hi"}));
    assert_eq!(started(other).await, "{\"txt\":\"hi\"}");
    assert_eq!(started(call("Nope", json!({}))).await, "");
}

#[tokio::test]
async fn validate_input_message_reaches_the_model() {
    let (env, _) = read_only_env();
    let run = run_tool_use(&call("Echo", json!({"text": "invalid"})), &env).await;
    assert!(run.result.is_error);
    assert_eq!(text(&run), "text must not be 'invalid'; pick another text");
}

#[tokio::test]
async fn deny_rule_refuses_without_asking() {
    let prompter = Arc::new(ScriptedPrompter::new([PromptAnswer::AllowOnce]));
    let mut rules = Rules::default();
    rules.push(RuleKind::Deny, Rule::tool("Echo"), RuleSource::Setup);
    let (env, _) = env(false, rules, prompter.clone());
    let run = run_tool_use(&call("Echo", json!({"text": "x"})), &env).await;
    assert_eq!(run.status, ToolStatus::Denied);
    assert!(
        text(&run).starts_with("Permission to use Echo was denied (rule Echo from setup() denies)"),
        "{}",
        text(&run)
    );
    assert!(prompter.asked().is_empty());
}

#[tokio::test]
async fn ask_once_always_and_decline() {
    let prompter = Arc::new(ScriptedPrompter::new([
        PromptAnswer::AllowOnce,
        PromptAnswer::Deny,
        PromptAnswer::AllowSession,
    ]));
    let (env, _) = env(false, Rules::default(), prompter.clone());
    let c = call("Echo", json!({"text": "w", "file_path": "a.txt"}));
    assert!(!run_tool_use(&c, &env).await.result.is_error);
    let declined = run_tool_use(&c, &env).await;
    assert_eq!(declined.status, ToolStatus::Denied);
    assert_eq!(text(&declined), USER_DECLINED);
    assert!(!run_tool_use(&c, &env).await.result.is_error);
    // After "always", no more asks.
    assert!(!run_tool_use(&c, &env).await.result.is_error);
    let asked = prompter.asked();
    assert_eq!(asked.len(), 3);
    assert_eq!(
        asked[0].1.path,
        Some(PathBuf::from("/project/a.txt")),
        "normalized before the ask"
    );
}

#[tokio::test]
async fn panic_in_call_becomes_an_error_result() {
    let (env, _) = read_only_env();
    let run = run_tool_use(&call("Echo", json!({"text": "x", "panic": true})), &env).await;
    assert!(run.result.is_error);
    assert_eq!(run.result.tool_use_id, "toolu_1");
    assert!(text(&run).contains("echo exploded"), "{}", text(&run));
}

#[tokio::test]
async fn cancelled_turn_gives_interrupted_results() {
    let (env, _) = read_only_env();
    env.ctx.cancel.cancel();
    let run = run_tool_use(&call("Echo", json!({"text": "x"})), &env).await;
    assert_eq!(run.status, ToolStatus::Interrupted);
    // It never ran: "not applied", not "its result is unknown".
    assert_eq!(
        text(&run),
        "Not applied: the user interrupted before Echo ran, so nothing was written or run. Wait for the user's next instruction."
    );
}

#[tokio::test]
async fn oversized_results_are_saved_and_previewed() {
    let (mut env, _) = read_only_env();
    let dir = tempfile::tempdir().unwrap();
    env.results = Arc::new(ResultStore::new(dir.path().to_path_buf(), "sess"));
    let big = "z".repeat(5_000);
    let run = run_tool_use(&call("Echo", json!({"text": big})), &env).await;
    assert!(!run.result.is_error);
    let saved = dir.path().join("tool-results/sess/toolu_1.txt");
    assert_eq!(
        std::fs::read_to_string(&saved).unwrap(),
        format!("echo: {big}")
    );
    let t = text(&run);
    assert!(
        t.starts_with("The output was too large to show in full (5006 chars"),
        "{t}"
    );
    assert!(t.contains(&saved.display().to_string()));
}

#[tokio::test]
async fn gates_one_to_three_run_once_per_call_though_the_executor_classifies_it() {
    let normalized = Arc::new(AtomicUsize::new(0));
    let echo = Echo {
        read_only: true,
        normalized: normalized.clone(),
    };
    let (env, _) = env_with(
        echo,
        Rules::default(),
        Arc::new(ScriptedPrompter::default()),
    );
    let mut exec = ToolExecutor::new(env, 4);
    for text in ["a", "b", "c"] {
        exec.add(call("Echo", json!({ "text": text })));
    }
    let results = exec.finish().await;
    assert_eq!(results.len(), 3);
    assert!(results.iter().all(|r| !r.is_error));
    assert_eq!(
        normalized.load(Ordering::SeqCst),
        3,
        "each call is parsed and normalised once, for classification and gates alike"
    );
}

#[test]
fn named_paths_expand_like_the_shell_does() {
    use std::path::Path;
    let root = Path::new("/w/proj");
    let home = Some(Path::new("/home/u"));
    assert_eq!(
        super::expand_named_path("~", root, home),
        Path::new("/home/u")
    );
    assert_eq!(
        super::expand_named_path("~/", root, home),
        Path::new("/home/u")
    );
    assert_eq!(
        super::expand_named_path("~/x/y", root, home),
        Path::new("/home/u/x/y")
    );
    assert_eq!(
        super::expand_named_path("~bob/x", root, home),
        Path::new("/~bob/x")
    );
    assert_eq!(
        super::expand_named_path("src/a", root, home),
        Path::new("/w/proj/src/a")
    );
    assert_eq!(
        super::expand_named_path("/etc", root, home),
        Path::new("/etc")
    );
}
