//! What runs without asking is held by the kernel: Bash calls through the
//! whole pipeline, with the real sandbox (Landlock, seccomp, namespaces) —
//! read-only auto-runs write nothing, allowed commands write only in the
//! project and the temp dir, no network, Read-denied and secret files
//! unreadable, a build into the project's `target/` works; the model's
//! `dangerouslyDisableSandbox` always asks; with the sandbox off every
//! Bash call asks unless an exact allow rule covers it, and the float says
//! "sandbox: off".

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;

use std::path::{Path, PathBuf};

use lathe_core::events::ToolStatus;
use lathe_core::permissions::{Mode, PromptAnswer, Rule, RuleBase, RuleKind, RuleSource, Rules};
use serde_json::json;

/// A project with a secret (`.env`), a Read-denied folder and a file, next
/// to a folder outside it; the rules in `mode` with `rules` from setup().
struct Project {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    root: PathBuf,
    outside: PathBuf,
}

fn project() -> Project {
    let a = tempfile::tempdir().unwrap();
    // Outside the project and outside the temp dir (which commands may
    // write).
    let b = common::outside_dir();
    let root = a.path().canonicalize().unwrap();
    let outside = b.path().canonicalize().unwrap();
    std::fs::write(root.join("a.txt"), "hello\n").unwrap();
    std::fs::write(root.join(".env"), "TOKEN=sekrit-env\n").unwrap();
    std::fs::create_dir_all(root.join("secret")).unwrap();
    std::fs::write(root.join("secret/s.txt"), "sekrit-denied\n").unwrap();
    Project {
        _dirs: (a, b),
        root,
        outside,
    }
}

fn rules(root: &Path, mode: Mode, list: &[(RuleKind, &str)]) -> Rules {
    let base = RuleBase::at_root(root, None);
    let mut r = Rules {
        mode,
        ..Rules::default()
    };
    for (kind, text) in list {
        r.push(*kind, Rule::parse(text, &base).unwrap(), RuleSource::Setup);
    }
    r
}

async fn bash(env: &lathe_core::execution::ExecEnv, command: &str) -> (ToolStatus, String) {
    common::run_call(env, "Bash", json!({ "command": command })).await
}

fn sandbox_available() -> bool {
    lathe_core::sandbox::support().unavailable().is_none()
}

#[tokio::test]
async fn allowed_commands_write_only_in_the_project_and_see_no_secrets() {
    if !sandbox_available() {
        eprintln!(
            "skipped: {:?}",
            lathe_core::sandbox::support().unavailable()
        );
        return;
    }
    let p = project();
    let (env, prompter) = common::exec_env(
        &p.root,
        rules(
            &p.root,
            Mode::Default,
            &[
                (RuleKind::Allow, "Bash"),
                (RuleKind::Deny, "Read(./secret/**)"),
            ],
        ),
        vec![],
    );
    let out = p.outside.join("x.txt");
    let run = lathe_core::execution::run_tool_use(
        &lathe_core::execution::PendingToolUse::from(lathe_core::protocol::ToolUse {
            id: "toolu_1".into(),
            name: "Bash".into(),
            input: json!({
                "command": format!("echo inside > in.txt && echo out > {}", out.display())
            }),
            extra: Default::default(),
        }),
        &env,
    )
    .await;
    let (status, text) = (run.status, run.result.content.as_text());
    // The command ran and failed: not done, not a tool error.
    assert_eq!(status, ToolStatus::Failed, "{text}");
    assert_eq!(
        run.summary, "exit 1 · stopped by the sandbox",
        "the folded chat line says so"
    );
    assert!(
        p.root.join("in.txt").exists(),
        "the write inside ran: {text}"
    );
    assert!(!out.exists(), "the write outside was refused: {text}");
    assert!(text.contains("Exit code 1 (failure)"), "{text}");
    assert!(
        text.contains(&format!(
            "[lathe's sandbox stopped this command: it may not write {}",
            out.display()
        )),
        "the result names what the sandbox stopped: {text}"
    );
    // Secrets: a program the parser cannot see into (the script names
    // the files) gets nothing from them, whoever runs the tests.
    let (_, text) = bash(
        &env,
        "python3 -c \"import sys\nfor f in ['.env', 'secret/s.txt', 'a.txt']:\n  try: print(open(f).read())\n  except Exception as e: print(f, type(e).__name__)\"",
    )
    .await;
    assert!(!text.contains("sekrit"), "{text}");
    assert!(text.contains("hello"), "other files are read: {text}");
    // The temp dir is writable; a build into target/ works.
    std::fs::write(
        p.root.join("Makefile"),
        "all:\n\tmkdir -p target/debug\n\techo built > target/debug/out\n",
    )
    .unwrap();
    let tmp = std::env::temp_dir().join(format!("lathe-sandbox-gate-{}", std::process::id()));
    let (status, text) = bash(
        &env,
        &format!(
            "make -s && cat target/debug/out && echo ok > {0} && cat {0}",
            tmp.display()
        ),
    )
    .await;
    let _ = std::fs::remove_file(&tmp);
    assert_eq!(status, ToolStatus::Done, "{text}");
    assert!(
        text.contains("built") && text.contains("ok") && text.contains("Exit code 0"),
        "{text}"
    );
    assert!(prompter.asked().is_empty(), "nothing asked");
}

#[tokio::test]
async fn the_network_is_off_for_sandboxed_commands() {
    if !sandbox_available() {
        return;
    }
    let p = project();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (env, _) = common::exec_env(
        &p.root,
        rules(&p.root, Mode::BypassPermissions, &[]),
        vec![],
    );
    let (_, text) = bash(
        &env,
        &format!("echo hi > /dev/tcp/127.0.0.1/{port} && echo CONNECTED"),
    )
    .await;
    assert!(!text.contains("CONNECTED"), "{text}");
    assert!(text.contains("the network is off"), "{text}");
    let (_, text) = bash(
        &env,
        "python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b\"x\", (\"127.0.0.1\", 9)); print(\"SENT\")'",
    )
    .await;
    assert!(!text.contains("SENT"), "UDP too: {text}");
    // With the network on, the same connection works.
    let mut on = rules(&p.root, Mode::BypassPermissions, &[]);
    on.sandbox.network = true;
    let (env, _) = common::exec_env(&p.root, on, vec![]);
    let (_, text) = bash(
        &env,
        &format!("echo hi > /dev/tcp/127.0.0.1/{port} && echo CONNECTED"),
    )
    .await;
    assert!(text.contains("CONNECTED"), "{text}");
}

#[tokio::test]
async fn read_only_auto_runs_write_nothing_in_default_and_plan_mode() {
    if !sandbox_available() {
        return;
    }
    let p = project();
    // A clean filter the repository's config names: `git status` runs it
    // on a changed file, and read-only git's environment does not turn
    // such drivers off. Only the sandbox keeps it from writing.
    let marker = p.root.join("marker");
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(&p.root)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    std::fs::write(p.root.join(".gitattributes"), "*.txt filter=x\n").unwrap();
    git(&["add", "a.txt", ".gitattributes"]);
    git(&["commit", "-qm", "one"]);
    git(&[
        "config",
        "filter.x.clean",
        &format!("sh -c 'touch {}; cat'", marker.display()),
    ]);
    // Same size, new mtime: git must read it (through the filter) to know.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    std::fs::write(p.root.join("a.txt"), "hellp\n").unwrap();
    for mode in [Mode::Default, Mode::Plan] {
        let (env, prompter) = common::exec_env(&p.root, rules(&p.root, mode, &[]), vec![]);
        let (status, text) = bash(&env, "git status --short && cat a.txt").await;
        assert_eq!(status, ToolStatus::Done, "{mode:?}: {text}");
        assert!(
            text.contains("hellp") && text.contains("Exit code 0"),
            "{mode:?}: {text}"
        );
        assert!(prompter.asked().is_empty(), "{mode:?}: ran without asking");
        assert!(!text.contains("sekrit"), "{text}");
        assert!(
            !marker.exists(),
            "{mode:?}: the filter wrote nothing: {text}"
        );
    }
    // The control: the same git status outside the sandbox runs the filter.
    git(&["status", "--short"]);
    assert!(marker.exists(), "the filter runs without the sandbox");
}

#[tokio::test]
async fn leaving_the_sandbox_always_asks_and_then_runs_outside_it() {
    if !sandbox_available() {
        return;
    }
    let p = project();
    let out = p.outside.join("y.txt");
    let (env, prompter) = common::exec_env(
        &p.root,
        rules(&p.root, Mode::BypassPermissions, &[]),
        vec![PromptAnswer::AllowOnce],
    );
    let (_, text) = bash(&env, &format!("echo out > {}", out.display())).await;
    assert!(!out.exists(), "sandboxed in bypassPermissions: {text}");
    let (status, text) = common::run_call(
        &env,
        "Bash",
        json!({ "command": format!("echo out > {}", out.display()), "dangerouslyDisableSandbox": true }),
    )
    .await;
    assert_eq!(status, ToolStatus::Done, "{text}");
    let asked = prompter.asked();
    assert_eq!(asked.len(), 1, "asked even in bypassPermissions");
    assert_eq!(
        asked[0].1.command.as_ref().unwrap().sandbox,
        "sandbox: off · the model asked to run it outside the sandbox (dangerouslyDisableSandbox)"
    );
    assert!(out.exists(), "ran outside the sandbox once allowed: {text}");
}

#[tokio::test]
async fn with_the_sandbox_off_bash_asks_and_the_float_says_so() {
    let p = project();
    let mut off = rules(
        &p.root,
        Mode::Default,
        &[
            (RuleKind::Allow, "Bash(echo exact)"),
            (RuleKind::Allow, "Bash(echo pre:*)"),
        ],
    );
    off = off.with_sandbox_support(Some("LATHE_SANDBOX=off is set".into()));
    let (env, prompter) =
        common::exec_env(&p.root, off, vec![PromptAnswer::Deny, PromptAnswer::Deny]);
    // The read-only list asks …
    let (status, _) = bash(&env, "ls").await;
    assert_eq!(status, ToolStatus::Denied);
    // … and so does a prefix rule, while an exact one runs, unsandboxed.
    let (status, _) = bash(&env, "echo pre x").await;
    assert_eq!(status, ToolStatus::Denied);
    let (status, text) = bash(&env, "echo exact").await;
    assert_eq!(status, ToolStatus::Done, "{text}");
    let asked = prompter.asked();
    assert_eq!(asked.len(), 2);
    assert_eq!(
        asked[0].1.session_rules,
        ["Bash(ls)"],
        "`a` offers the exact rule, the one that helps while the sandbox is off"
    );
    assert_eq!(
        asked[0].1.reason,
        "the sandbox is off (LATHE_SANDBOX=off is set), so Bash asks unless an exact allow rule covers the command"
    );
    assert_eq!(
        asked[0].1.command.as_ref().unwrap().sandbox,
        "sandbox: off · LATHE_SANDBOX=off is set"
    );
}

#[tokio::test]
async fn what_the_sandbox_cannot_hide_asks_first_and_runs_once_allowed() {
    if !sandbox_available() {
        return;
    }
    let p = project();
    std::fs::write(p.outside.join("k.pem"), "sekrit-pem\n").unwrap();
    let (env, prompter) = common::exec_env(
        &p.root,
        rules(
            &p.root,
            Mode::Default,
            &[
                (RuleKind::Deny, "Read(//**/*.pem)"),
                (RuleKind::Allow, "Bash(python3:*)"),
            ],
        ),
        vec![PromptAnswer::AllowOnce],
    );
    let (status, text) = bash(&env, "python3 -c \"print('ran')\"").await;
    let asked = prompter.asked();
    assert_eq!(
        asked.len(),
        1,
        "a rule for every folder cannot be hidden: it asks"
    );
    assert!(
        asked[0]
            .1
            .reason
            .contains("Read(//**/*.pem) covers files in every folder of the file system"),
        "{:?}",
        asked[0].1.reason
    );
    assert_eq!(status, ToolStatus::Done, "allowed, it runs: {text}");
    assert!(text.contains("ran"), "{text}");
}

#[tokio::test]
async fn a_hidden_file_cannot_be_opened_even_by_root_and_an_answered_ask_opens_it() {
    if !sandbox_available() {
        return;
    }
    let p = project();
    let (env, _) = common::exec_env(
        &p.root,
        rules(&p.root, Mode::Default, &[(RuleKind::Allow, "Bash")]),
        vec![],
    );
    // As root (CI, containers) the namespace's capabilities opened the
    // cover: an empty file and exit 0, which looks like an empty .env.
    let (_, text) = bash(&env, "python3 -c \"print(repr(open('.env').read()))\"").await;
    assert!(text.contains("PermissionError"), "{text}");
    assert!(!text.contains("''"), "not an empty file: {text}");
    assert!(!text.contains("sekrit"), "{text}");
    // `cat .env` asks (a protected name); answered yes, it reads it.
    let (env, prompter) = common::exec_env(
        &p.root,
        rules(&p.root, Mode::Default, &[]),
        vec![PromptAnswer::AllowOnce],
    );
    let (status, text) = bash(&env, "cat .env").await;
    assert_eq!(prompter.asked().len(), 1, "{text}");
    assert_eq!(status, ToolStatus::Done, "{text}");
    assert!(
        text.contains("TOKEN=sekrit-env"),
        "the answered ask opens it: {text}"
    );
}
