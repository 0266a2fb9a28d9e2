//! Gates 5 and 8 through the whole pipeline (`run_tool_use`) and the turn
//! loop: Claude Code's hook scripts from `tests/fixtures/hooks/` block,
//! deny, allow, ask, rewrite input, add context and feedback, and end the
//! turn — and a hook's allow never skips a deny or ask rule.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lathe_core::config::Config;
use lathe_core::events::{AgentEvent, RecordingSink, ToolStatus, TurnOutcome};
use lathe_core::execution::{ExecEnv, Hooks};
use lathe_core::hooks::HookConfig;
use lathe_core::permissions::{
    PromptAnswer, Rule, RuleBase, RuleKind, RuleSource, Rules, ScriptedPrompter,
};
use lathe_core::tools::builtin_tools;
use serde_json::{json, Value};

fn fixture(name: &str) -> String {
    lathe_test_support::workspace_root()
        .join("tests/fixtures/hooks")
        .join(name)
        .display()
        .to_string()
}

/// The `hooks` settings running fixture `script` for `event` on tools
/// matching `matcher`.
fn hooks_json(event: &str, matcher: &str, script: &str) -> Value {
    json!({ event: [{ "matcher": matcher, "hooks": [{ "type": "command", "command": fixture(script) }] }] })
}

struct Setup {
    _dir: tempfile::TempDir,
    root: PathBuf,
    env: ExecEnv,
    prompter: Arc<ScriptedPrompter>,
    sink: Arc<RecordingSink>,
}

fn setup(hooks: Value, rules: Rules, answers: Vec<PromptAnswer>) -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("root");
    std::fs::write(root.join("a.txt"), "alpha\n").expect("write");
    let prompter = Arc::new(ScriptedPrompter::new(answers));
    let sink = Arc::new(RecordingSink::default());
    let config = Config::new(&root);
    let env = common::env_at(&root)
        .tools(builtin_tools(&config))
        .rules(rules)
        .prompter(prompter.clone())
        .sink(sink.clone())
        .hooks(Hooks {
            config: HookConfig::from_json(&hooks).expect("hooks"),
            extra: Vec::new(),
            session_id: "s1".into(),
            transcript_path: PathBuf::new(),
        })
        .build();
    Setup {
        _dir: dir,
        root,
        env,
        prompter,
        sink,
    }
}

async fn call(env: &ExecEnv, name: &str, input: Value) -> (ToolStatus, String) {
    common::run_call(env, name, input).await
}

#[tokio::test]
async fn exit_2_blocks_the_call_and_the_model_reads_stderr() {
    let s = setup(
        hooks_json("PreToolUse", "Bash", "exit2.sh"),
        Rules::default(),
        vec![],
    );
    let (status, text) = call(&s.env, "Bash", json!({"command": "touch made"})).await;
    assert_eq!(status, ToolStatus::Denied);
    assert_eq!(
        text,
        "A PreToolUse hook blocked this Bash call; nothing was written or run. The hook said: exit2.sh: run the tests before editing"
    );
    assert!(!s.root.join("made").exists());
    assert!(s.prompter.asked().is_empty(), "a blocked call never asks");
}

#[tokio::test]
async fn a_hook_deny_refuses_with_its_reason() {
    let s = setup(
        hooks_json("PreToolUse", "Edit|Write", "deny.sh"),
        Rules::default(),
        vec![],
    );
    let (status, text) = call(
        &s.env,
        "Write",
        json!({"file_path": "new.txt", "content": "x"}),
    )
    .await;
    assert_eq!(status, ToolStatus::Denied);
    assert_eq!(
        text,
        "A PreToolUse hook denied this Write call; nothing was written or run. Reason: deny.sh: generated files are not edited by hand"
    );
    assert!(!s.root.join("new.txt").exists());
}

#[tokio::test]
async fn a_hook_allow_skips_the_default_ask_but_not_an_ask_or_deny_rule() {
    let s = setup(
        hooks_json("PreToolUse", "Write", "allow.sh"),
        Rules::default(),
        vec![],
    );
    let (status, _) = call(
        &s.env,
        "Write",
        json!({"file_path": "new.txt", "content": "x"}),
    )
    .await;
    assert_eq!(status, ToolStatus::Done);
    assert!(
        s.prompter.asked().is_empty(),
        "the hook allowed it: no float"
    );
    assert_eq!(
        std::fs::read_to_string(s.root.join("new.txt")).unwrap(),
        "x"
    );

    let base = RuleBase::at_root(Path::new("/"), None);
    let mut rules = Rules::default();
    rules.push(
        RuleKind::Ask,
        Rule::parse("Write", &base).unwrap(),
        RuleSource::Setup,
    );
    let s = setup(
        hooks_json("PreToolUse", "Write", "allow.sh"),
        rules,
        vec![PromptAnswer::Deny],
    );
    let (status, _) = call(
        &s.env,
        "Write",
        json!({"file_path": "n2.txt", "content": "x"}),
    )
    .await;
    assert_eq!(status, ToolStatus::Denied);
    assert_eq!(s.prompter.asked().len(), 1, "an ask rule still asks");

    let mut rules = Rules::default();
    rules.push(
        RuleKind::Deny,
        Rule::parse("Write", &base).unwrap(),
        RuleSource::Setup,
    );
    let s = setup(hooks_json("PreToolUse", "Write", "allow.sh"), rules, vec![]);
    let (status, text) = call(
        &s.env,
        "Write",
        json!({"file_path": "n3.txt", "content": "x"}),
    )
    .await;
    assert_eq!(status, ToolStatus::Denied);
    assert!(
        text.starts_with("Permission to use Write was denied (rule Write from setup() denies)"),
        "{text}"
    );
}

#[tokio::test]
async fn a_hook_ask_asks_even_for_a_call_the_rules_allow() {
    let s = setup(
        hooks_json("PreToolUse", "Read", "ask.sh"),
        Rules::default(),
        vec![PromptAnswer::AllowOnce],
    );
    let (status, _) = call(&s.env, "Read", json!({"file_path": "a.txt"})).await;
    assert_eq!(status, ToolStatus::Done);
    let asked = s.prompter.asked();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].1.reason, "a PreToolUse hook asks");
    // The hook asks every time: a session rule would not stop it, so the
    // float offers no `a`.
    assert!(asked[0].1.session_rules.is_empty(), "{:?}", asked[0].1);
}

#[tokio::test]
async fn a_hook_deny_without_a_reason_says_none_was_given() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("deny_silently.sh");
    std::fs::write(
        &script,
        "#!/usr/bin/env bash\ncat > /dev/null\necho '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"deny\"}}'\n",
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&script)
        .status()
        .unwrap();
    let hooks = json!({"PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": script.display().to_string()}]}]});
    let s = setup(hooks, Rules::default(), vec![]);
    let (status, text) = call(
        &s.env,
        "Write",
        json!({"file_path": "new.txt", "content": "x"}),
    )
    .await;
    assert_eq!(status, ToolStatus::Denied);
    assert_eq!(
        text,
        "A PreToolUse hook denied this Write call; nothing was written or run. Reason: (no reason given)"
    );
}

#[tokio::test]
async fn updated_input_is_validated_again_before_it_runs() {
    // The fixture rewrites the input to a Write of /rewritten/by/hook.rs:
    // given to Bash, that input fails Bash's schema, so nothing runs.
    let s = setup(
        hooks_json("PreToolUse", "Bash", "updated_input.sh"),
        Rules::default(),
        vec![],
    );
    let (status, text) = call(&s.env, "Bash", json!({"command": "touch made"})).await;
    assert_eq!(status, ToolStatus::Error);
    assert!(
        text.starts_with("A PreToolUse hook rewrote the input of this call, and the new input is not valid, so nothing was run: InputValidationError: Bash failed"),
        "{text}"
    );
    assert!(!s.root.join("made").exists());
}

#[tokio::test]
async fn updated_input_that_is_valid_is_what_runs() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("rewrite.sh");
    std::fs::write(
        &script,
        "#!/usr/bin/env bash\ncat > /dev/null\necho '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"allow\", \"updatedInput\": {\"command\": \"echo rewritten by the hook\"}}}'\n",
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&script)
        .status()
        .unwrap();
    let hooks = json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": script.display().to_string()}]}]});
    let s = setup(hooks, Rules::default(), vec![]);
    let (status, text) = call(
        &s.env,
        "Bash",
        json!({"command": "echo as the model wrote it"}),
    )
    .await;
    assert_eq!(status, ToolStatus::Done, "{text}");
    assert!(text.starts_with("rewritten by the hook\n"), "{text}");
}

#[tokio::test]
async fn a_float_for_a_call_a_hook_rewrote_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("rewrite_ask.sh");
    std::fs::write(
        &script,
        "#!/usr/bin/env bash\ncat > /dev/null\necho '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"ask\", \"updatedInput\": {\"command\": \"echo rewritten by the hook\"}}}'\n",
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&script)
        .status()
        .unwrap();
    let hooks = json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": script.display().to_string()}]}]});
    let s = setup(hooks, Rules::default(), vec![PromptAnswer::AllowOnce]);
    let (status, text) = call(
        &s.env,
        "Bash",
        json!({"command": "echo as the model wrote it"}),
    )
    .await;
    assert_eq!(status, ToolStatus::Done, "{text}");
    let asked = s.prompter.asked();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0].1.hook_changed,
        "the float is told a hook changed the call"
    );
    assert_eq!(
        asked[0].1.command.as_ref().map(|c| c.command.as_str()),
        Some("echo rewritten by the hook"),
        "and it shows the hook's version"
    );
}

#[tokio::test]
async fn post_tool_use_context_and_feedback_reach_the_model_and_messages_the_chat() {
    let mut hooks = hooks_json("PostToolUse", "Read", "additional_context.sh");
    hooks["PostToolUse"]
        .as_array_mut()
        .unwrap()
        .push(json!({"matcher": "Read", "hooks": [{"type": "command", "command": fixture("post_block.sh")}]}));
    let s = setup(hooks, Rules::default(), vec![]);
    let (status, text) = call(&s.env, "Read", json!({"file_path": "a.txt"})).await;
    assert_eq!(status, ToolStatus::Done);
    assert!(text.starts_with("     1\talpha"), "{text}");
    assert!(
        text.ends_with("\n\nPostToolUse hook context: additional_context.sh: the file was reformatted\n\nPostToolUse hook feedback: post_block.sh: the build is broken now"),
        "{text}"
    );
    let notices: Vec<String> = s
        .sink
        .events()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::Notice { text, .. } => Some(text),
            _ => None,
        })
        .collect();
    assert_eq!(notices, vec!["formatted with rustfmt".to_string()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_false_ends_the_turn_after_the_batch() {
    let script = json!({ "responses": [
        {
            "content": [{"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {"file_path": "a.txt"}}],
            "stop_reason": "tool_use"
        },
        {
            "content": [{"type": "text", "text": "never requested"}],
            "stop_reason": "end_turn"
        }
    ]});
    let hooks = hooks_json("PostToolUse", "Read", "stop.sh");
    let h = common::harness(
        script,
        vec![],
        move |c| c.hook_settings.push((RuleSource::Setup, hooks)),
        vec![],
    )
    .await;
    h.write("a.txt", "alpha\n");
    assert_eq!(h.ask("read it").await, TurnOutcome::Done);
    assert_eq!(
        h.server.requests().len(),
        1,
        "no request after the hook ended the turn"
    );
    let notices: Vec<String> = h
        .sink
        .events()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::Notice { text, .. } => Some(text),
            _ => None,
        })
        .collect();
    assert!(
        notices.contains(&"A hook ended the turn: stop.sh: budget exhausted".to_string()),
        "{notices:?}"
    );
    // The transcript stays valid: the tool_use has its result.
    let t = h.session.transcript();
    let last = t.last().expect("messages");
    assert_eq!(common::tool_results(last).len(), 1);
}
