//! Read rules and protected paths cover searches and read-only commands
//! too, through the real pipeline (a user's report): in a project with
//! `.env` (`SECRET=abc`) and `secret/s.txt` (`TOKEN=1`), no Grep, Glob or
//! Bash call that ran without asking returns either secret. Grep and Glob
//! over a folder leave such files out and say so; Bash asks (or, for a deny
//! rule, refuses) when a read-only command would read them.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;

use std::sync::Arc;

use lathe_core::config::Config;
use lathe_core::events::ToolStatus;
use lathe_core::execution::{run_tool_use, ExecEnv, PendingToolUse};
use lathe_core::permissions::{
    PromptAnswer, Rule, RuleBase, RuleKind, RuleSource, Rules, ScriptedPrompter,
};
use lathe_core::protocol::ToolUse;
use lathe_core::tools::builtin_tools;
use serde_json::{json, Value};

/// The secrets of the project; none may reach a result that ran unasked.
const SECRETS: [&str; 2] = ["SECRET=abc", "TOKEN=1"];

struct Setup {
    _dir: tempfile::TempDir,
    env: ExecEnv,
    prompter: Arc<ScriptedPrompter>,
}

/// A project with `.env`, `secret/s.txt` and `src/a.rs` (which mentions
/// SECRET and TOKEN too, so searches find something), `rules` (setup()
/// rules, `(kind, rule)`) and a prompter answering `answers`.
fn setup(rules: &[(RuleKind, &str)], answers: Vec<PromptAnswer>) -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("root");
    for (rel, text) in [
        (".env", "SECRET=abc\n"),
        ("secret/s.txt", "TOKEN=1\n"),
        (
            "src/a.rs",
            "// reads SECRET and TOKEN from the environment\n",
        ),
    ] {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }
    let base = RuleBase::at_root(&root, None);
    let mut in_force = Rules::default();
    for (kind, r) in rules {
        in_force.push(
            *kind,
            Rule::parse(r, &base).expect("rule"),
            RuleSource::Setup,
        );
    }
    let prompter = Arc::new(ScriptedPrompter::new(answers));
    let config = Config::new(&root);
    let env = common::env_at(&root)
        .tools(builtin_tools(&config))
        .rules(in_force)
        .prompter(prompter.clone())
        .build();
    Setup {
        _dir: dir,
        env,
        prompter,
    }
}

const DENY_SECRET: (RuleKind, &str) = (RuleKind::Deny, "Read(secret/**)");

/// What one call came to: its status, its result text, and whether the
/// user was asked.
struct Outcome {
    status: ToolStatus,
    text: String,
    asked: Option<String>,
}

impl Setup {
    /// Runs `name` with `input` through every gate.
    async fn call(&self, name: &str, input: Value) -> Outcome {
        let before = self.prompter.asked().len();
        let run = run_tool_use(
            &PendingToolUse::from(ToolUse {
                id: "toolu_1".into(),
                name: name.into(),
                input,
                extra: Default::default(),
            }),
            &self.env,
        )
        .await;
        let asked = self.prompter.asked();
        Outcome {
            status: run.status,
            text: run.result.content.as_text(),
            asked: asked.get(before).map(|(_, p)| p.reason.clone()),
        }
    }
}

impl Outcome {
    /// The call ran without asking, and no secret is in its result.
    fn ran_without_secrets(&self, what: &str) {
        assert_eq!(self.asked, None, "{what} asked: {}", self.text);
        assert_eq!(self.status, ToolStatus::Done, "{what}: {}", self.text);
        for secret in SECRETS {
            assert!(
                !self.text.contains(secret),
                "{what} leaked {secret}:\n{}",
                self.text
            );
        }
    }
}

#[tokio::test]
async fn reading_env_asks() {
    let s = setup(&[], vec![]);
    let out = s.call("Read", json!({ "file_path": ".env" })).await;
    assert_eq!(out.asked.as_deref(), Some(".env (.env files) always asks"));
    assert_eq!(out.status, ToolStatus::Denied);
}

#[tokio::test]
async fn grep_over_the_project_leaves_env_out_and_says_so() {
    let s = setup(&[], vec![]);
    let out = s
        .call(
            "Grep",
            json!({ "pattern": "SECRET", "output_mode": "content" }),
        )
        .await;
    out.ran_without_secrets("Grep content");
    assert!(out.text.contains("src/a.rs:1:"), "{}", out.text);
    assert!(
        out.text.ends_with("1 file was left out because reading it needs the user's permission (.env): Read it to ask the user."),
        "{}",
        out.text
    );

    let out = s
        .call(
            "Grep",
            json!({ "pattern": "SECRET", "glob": ".env", "output_mode": "content" }),
        )
        .await;
    out.ran_without_secrets("Grep glob .env");
    assert!(
        out.text.starts_with("No matches for \"SECRET\""),
        "{}",
        out.text
    );
    assert!(
        out.text.contains("(.env): Read it to ask the user."),
        "{}",
        out.text
    );

    let out = s.call("Grep", json!({ "pattern": "SECRET" })).await;
    out.ran_without_secrets("Grep files");
    assert!(!out.text.contains("\n.env\n"), "{}", out.text);
}

#[tokio::test]
async fn a_grep_the_user_allowed_over_env_itself_reads_it() {
    let s = setup(&[], vec![PromptAnswer::AllowOnce]);
    let out = s
        .call(
            "Grep",
            json!({ "pattern": "SECRET", "path": ".env", "output_mode": "content" }),
        )
        .await;
    assert_eq!(out.asked.as_deref(), Some(".env (.env files) always asks"));
    assert_eq!(out.status, ToolStatus::Done);
    assert!(out.text.contains("SECRET=abc"), "{}", out.text);
    assert!(!out.text.contains("left out"), "{}", out.text);
}

#[tokio::test]
async fn a_deny_rule_covers_grep_and_glob_over_the_folder_above() {
    let s = setup(&[DENY_SECRET], vec![]);
    let out = s
        .call("Grep", json!({ "pattern": "TOKEN", "path": "secret" }))
        .await;
    assert_eq!(out.status, ToolStatus::Denied, "{}", out.text);
    assert_eq!(out.asked, None);

    let denied_note = "1 file was left out because a permission rule denies reading it (Read(secret/**) from setup()). Do not try to read it another way; ask the user if you need it.";
    for input in [
        json!({ "pattern": "TOKEN", "output_mode": "content" }),
        json!({ "pattern": "TOKEN", "glob": "secret/*", "output_mode": "content" }),
        json!({ "pattern": "TOKEN", "output_mode": "count" }),
    ] {
        let out = s.call("Grep", input.clone()).await;
        out.ran_without_secrets(&format!("Grep {input}"));
        assert!(!out.text.contains("secret/s.txt"), "{input}: {}", out.text);
        assert!(out.text.contains(denied_note), "{input}: {}", out.text);
    }

    for input in [
        json!({ "pattern": "**/*" }),
        json!({ "pattern": "secret/*" }),
    ] {
        let out = s.call("Glob", input.clone()).await;
        out.ran_without_secrets(&format!("Glob {input}"));
        assert!(!out.text.contains("s.txt"), "{input}: {}", out.text);
        assert!(out.text.contains(denied_note), "{input}: {}", out.text);
    }
    let out = s.call("Glob", json!({ "pattern": "**/*" })).await;
    assert!(out.text.contains("src/a.rs"), "{}", out.text);
    assert!(
        out.text.contains("(.env): Read it to ask the user."),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn read_only_bash_asks_before_reading_protected_files() {
    let s = setup(&[], vec![]);
    for (cmd, why) in [
        (
            "cat .en*",
            "the command reads .env, and .env (.env files) always asks",
        ),
        (
            "grep -r SECRET .",
            "the command reads .env, and .env (.env files) always asks",
        ),
        (
            "cd src && cat ../.env",
            "the command reads .env, and .env (.env files) always asks",
        ),
    ] {
        let out = s.call("Bash", json!({ "command": cmd })).await;
        assert_eq!(out.asked.as_deref(), Some(why), "{cmd}");
        assert_eq!(
            out.status,
            ToolStatus::Denied,
            "{cmd}: the prompter said no"
        );
    }
    let out = s
        .call(
            "Bash",
            json!({ "command": "cat src/a.rs && grep -rn TOKEN src" }),
        )
        .await;
    out.ran_without_secrets("reading src");
    assert!(out.text.contains("reads SECRET"), "{}", out.text);
}

#[tokio::test]
async fn read_only_bash_is_refused_where_a_deny_rule_covers_what_it_reads() {
    let s = setup(&[DENY_SECRET], vec![]);
    for cmd in [
        "cat secret/s.txt",
        "cat secret/*",
        "grep -r SECRET .",
        "cd secret && cat s.txt",
        "ls secret",
        "find . -name '*.txt'",
        "wc -l < secret/s.txt",
    ] {
        let out = s.call("Bash", json!({ "command": cmd })).await;
        assert_eq!(out.status, ToolStatus::Denied, "{cmd}: {}", out.text);
        assert_eq!(out.asked, None, "{cmd}");
        assert!(
            out.text
                .contains("rule Read(secret/**) from setup() denies reading secret/"),
            "{cmd}: {}",
            out.text
        );
    }
    let out = s
        .call("Bash", json!({ "command": "ls && cat src/a.rs" }))
        .await;
    out.ran_without_secrets("ls and cat src");
}

#[tokio::test]
async fn tool_sync_says_no_allow_rule_opens_a_protected_path() {
    let mut s = setup(&[(RuleKind::Allow, "Read")], vec![]);
    s.env.interactive = false;
    let out = s.call("Read", json!({ "file_path": ".env" })).await;
    assert_eq!(out.status, ToolStatus::Denied);
    assert!(
        out.text.contains("Protected paths ask in every mode, even when an allow rule matches, so no permissions rule can change that"),
        "{}",
        out.text
    );
    assert!(
        !out.text.contains("allow it with a permissions rule"),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn a_shell_variable_does_not_hide_what_bash_reads() {
    // The user allowed `cat` and runs in bypassPermissions: the read rules
    // and protected paths still hold when the path is written with a
    // variable. `$PWD` and `$HOME` are known and checked like written
    // paths; any other substitution asks, whatever the rules and the mode.
    let s = setup(
        &[DENY_SECRET, (RuleKind::Allow, "Bash(cat:*)")],
        vec![PromptAnswer::Deny; 4],
    );
    s.env
        .permissions
        .set_mode(lathe_core::permissions::Mode::BypassPermissions);
    for cmd in [r#"cat "$PWD/secret/s.txt""#, "cat ${PWD}/secret/s.txt"] {
        let out = s.call("Bash", json!({ "command": cmd })).await;
        assert_eq!(out.status, ToolStatus::Denied, "{cmd}: {}", out.text);
        assert_eq!(out.asked, None, "{cmd}");
        assert!(
            out.text
                .contains("rule Read(secret/**) from setup() denies reading secret/"),
            "{cmd}: {}",
            out.text
        );
    }
    for (cmd, word) in [
        (r#"cat "$f""#, "$f"),
        ("cat $(echo secret/s.txt)", "$(echo secret/s.txt)"),
        ("cat secret/{s,t}.txt", "secret/{s,t}.txt"),
    ] {
        let out = s.call("Bash", json!({ "command": cmd })).await;
        let want = format!("the command reads `{word}`, which the shell expands only when it runs, so lathe cannot check it against the read rules and protected paths (write the path out to let a rule match)");
        assert_eq!(out.asked.as_deref(), Some(want.as_str()), "{cmd}");
        assert_eq!(
            out.status,
            ToolStatus::Denied,
            "{cmd}: the prompter said no"
        );
    }
    let out = s
        .call("Bash", json!({ "command": r#"cd "$D" && cat s.txt"# }))
        .await;
    assert_eq!(
        out.asked.as_deref(),
        Some("the command reads `s.txt` after `cd $D`, a folder the shell expands only when it runs, so lathe cannot check it against the read rules and protected paths (write the folder out to let a rule match)")
    );
    // A quoted `$` is no substitution; the allow rule and the mode hold.
    let out = s.call("Bash", json!({ "command": "cat 'src/a.rs'" })).await;
    out.ran_without_secrets("cat src");
}
