//! Permission rules hold on paths as the kernel resolves them, through the
//! real pipeline, in real temp folders with real symlinks (an external
//! red-team's report, by kind):
//!
//! 1. a `..` after a symlink goes to the parent of the link's target, and a
//!    walk that follows links is checked where it really goes;
//! 2. rules match both the path as given and its real path (dangling links
//!    too, and deny wins in bypassPermissions);
//! 3. protected names are checked on every name along a link chain;
//! 4. writes to configuration that runs programs or grants permissions ask
//!    in acceptEdits;
//! 5. language-server results leave out what a Read could not see.
//!
//! Each row is `(what, mode, rules, tool, input, verdict)`; a verdict is
//! `allow` (ran without asking), `ask` (the user was asked: the scripted
//! prompter declines), `deny` (refused without asking) or `error`.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use lathe_core::editor::{
    DiskEditor, Document, Editor, EditorError, Location, LspAnswer, LspFailure, LspNavigator,
    LspQuery, LspSymbol, WriteOutcome, WriteRequest,
};
use lathe_core::events::ToolStatus;
use lathe_core::execution::{run_tool_use, ExecEnv, PendingToolUse};
use lathe_core::permissions::{
    Mode, PromptAnswer, Rule, RuleBase, RuleKind, RuleSource, Rules, ScriptedPrompter,
};
use lathe_core::protocol::ToolUse;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

/// Text only files outside the project hold.
const OUTSIDE: &str = "OUTSIDE=1";

/// A temp folder `t` holding the project `t/proj` and `t/outside` (`{t}`
/// in rules and inputs; `/{t}` makes Claude Code's `//abs` form):
///
/// - `proj/src/a.rs`, `proj/secret/s.txt` (`TOKEN=1`), `proj/envs/dev`
///   (`SECRET=abc`), `proj/other/`, `proj/notes/n.md`;
/// - `outside/o.txt` and `outside/deep/d.txt` (both [`OUTSIDE`]);
/// - links: `proj/out` → `t/outside`, `proj/dangling` →
///   `t/outside/new.txt` (missing), `proj/link` → `t/outside/deep`,
///   `proj/.env` → `envs/dev`, `proj/.claude` → `other`, `proj/innocent`
///   → `.env`, `proj/chain` → `link`, `proj/src/ext` → `t/outside`.
struct World {
    _dir: tempfile::TempDir,
    t: PathBuf,
    root: PathBuf,
}

fn world() -> World {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = dir.path().canonicalize().expect("canonical");
    let root = t.join("proj");
    for (rel, text) in [
        ("proj/src/a.rs", "fn helper() {} // TOKEN SECRET OUTSIDE\n"),
        ("proj/secret/s.txt", "TOKEN=1\n"),
        ("proj/envs/dev", "SECRET=abc\n"),
        ("proj/other/keep", ""),
        ("proj/other/settings.json", "{}\n"),
        ("proj/notes/n.md", "NOTE=1\n"),
        ("proj/.vscode/settings.json", "{}\n"),
        ("outside/o.txt", "OUTSIDE=1\n"),
        ("outside/deep/d.txt", "OUTSIDE=1\n"),
    ] {
        let p = t.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }
    for (link, target) in [
        ("proj/out", t.join("outside")),
        ("proj/dangling", t.join("outside/new.txt")),
        ("proj/link", t.join("outside/deep")),
        ("proj/.env", PathBuf::from("envs/dev")),
        ("proj/.claude", PathBuf::from("other")),
        ("proj/innocent", PathBuf::from(".env")),
        ("proj/chain", PathBuf::from("link")),
        ("proj/src/ext", t.join("outside")),
    ] {
        symlink(target, t.join(link)).expect("symlink");
    }
    World { _dir: dir, t, root }
}

/// An editor on disk whose language servers answer `answer`.
struct WithServer {
    answer: LspAnswer,
}

#[async_trait]
impl LspNavigator for WithServer {
    async fn ask(
        &self,
        _query: LspQuery,
        _cancel: &CancellationToken,
    ) -> Result<LspAnswer, LspFailure> {
        Ok(self.answer.clone())
    }
}

struct ServerEditor(Arc<WithServer>);

#[async_trait]
impl Editor for ServerEditor {
    async fn read(&self, path: &Path) -> Result<Document, EditorError> {
        DiskEditor.read(path).await
    }
    async fn write(&self, path: &Path, r: WriteRequest) -> Result<WriteOutcome, EditorError> {
        DiskEditor.write(path, r).await
    }
    fn navigator(&self) -> Option<Arc<dyn LspNavigator>> {
        Some(self.0.clone())
    }
}

/// The pipeline on `w` with `rules` (`{t}` in a rule is the temp folder)
/// in `mode`; the prompter declines every ask.
fn env(w: &World, mode: Mode, rules: &[(RuleKind, &str)], lsp: Option<LspAnswer>) -> ExecEnv {
    let base = RuleBase::at_root(&w.root, None);
    let mut in_force = Rules {
        mode,
        ..Rules::default()
    };
    for (kind, r) in rules {
        let r = r.replace("{t}", &w.t.display().to_string());
        in_force.push(
            *kind,
            Rule::parse(&r, &base).expect("rule"),
            RuleSource::Setup,
        );
    }
    let editor: Arc<dyn Editor> = match lsp {
        Some(answer) => Arc::new(ServerEditor(Arc::new(WithServer { answer }))),
        None => Arc::new(DiskEditor),
    };
    common::env_at(&w.root)
        .editor(editor)
        .rules(in_force)
        .prompter(Arc::new(ScriptedPrompter::new(vec![PromptAnswer::Deny; 4])))
        .results(w.t.join("results"), "t")
        .build()
}

/// Runs `tool` with `input` (`{t}` replaced) and says how it went:
/// `allow`, `ask`, `deny` or `error` (a gate before the permission gate,
/// or the tool, failed), with the result text.
async fn run(w: &World, env: &ExecEnv, tool: &str, input: &Value) -> (&'static str, String) {
    let input: Value =
        serde_json::from_str(&input.to_string().replace("{t}", &w.t.display().to_string()))
            .expect("json");
    let run = run_tool_use(
        &PendingToolUse::from(ToolUse {
            id: "toolu_1".into(),
            name: tool.into(),
            input,
            extra: Default::default(),
        }),
        env,
    )
    .await;
    let text = run.result.content.as_text();
    let asked = matches!(
        &run.decision,
        Some(lathe_core::permissions::Decision::Ask(_))
    );
    let verdict = match (asked, run.status) {
        (true, _) => "ask",
        (false, ToolStatus::Denied) => "deny",
        // Allowed: it ran, whether or not the command then failed.
        (false, ToolStatus::Done | ToolStatus::Failed) => "allow",
        (false, _) => "error",
    };
    (verdict, text)
}

type Row<'a> = (
    &'a str,
    Mode,
    Vec<(RuleKind, &'a str)>,
    &'a str,
    Value,
    &'a str,
);

/// Runs every row in a fresh world and checks its verdict.
async fn check(rows: Vec<Row<'_>>) {
    let mut failures = Vec::new();
    for (what, mode, rules, tool, input, want) in rows {
        let w = world();
        let e = env(&w, mode, &rules, None);
        let (got, text) = run(&w, &e, tool, &input).await;
        if got != want {
            failures.push(format!("{what}: want {want}, got {got}: {text}"));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

const DENY_OUTSIDE_READ: (RuleKind, &str) = (RuleKind::Deny, "Read(/{t}/outside/**)");
const DENY_OUTSIDE_EDIT: (RuleKind, &str) = (RuleKind::Deny, "Edit(/{t}/outside/**)");
const ALLOW_BASH: (RuleKind, &str) = (RuleKind::Allow, "Bash");

#[tokio::test]
async fn kind1_paths_resolve_like_the_kernel() {
    use Mode::*;
    let bash = |c: &str| json!({ "command": c });
    check(vec![
        (
            "cat link/../o.txt reads outside/o.txt",
            Default,
            vec![],
            "Bash",
            bash("cat link/../o.txt"),
            "ask",
        ),
        (
            "… and a deny on it holds in bypass",
            BypassPermissions,
            vec![DENY_OUTSIDE_READ],
            "Bash",
            bash("cat link/../o.txt"),
            "deny",
        ),
        (
            "two links then ..",
            BypassPermissions,
            vec![DENY_OUTSIDE_READ],
            "Bash",
            bash("cat chain/../o.txt"),
            "deny",
        ),
        (
            "cd -P link/.. then a relative read",
            Default,
            vec![],
            "Bash",
            bash("cd -P link/.. && cat o.txt"),
            "ask",
        ),
        (
            "cd link && cd .. (physical)",
            BypassPermissions,
            vec![DENY_OUTSIDE_READ],
            "Bash",
            bash("cd link && cd -P .. && cat o.txt"),
            "deny",
        ),
        (
            "~+ is $PWD",
            BypassPermissions,
            vec![(RuleKind::Deny, "Read(secret/**)")],
            "Bash",
            bash("cat ~+/secret/s.txt"),
            "deny",
        ),
        (
            "~- is $OLDPWD, unknown",
            BypassPermissions,
            vec![ALLOW_BASH],
            "Bash",
            bash("cat ~-/secret/s.txt"),
            "ask",
        ),
        (
            "cd - goes to $OLDPWD, unknown",
            BypassPermissions,
            vec![ALLOW_BASH],
            "Bash",
            bash("cd - && cat s.txt"),
            "ask",
        ),
        (
            "/proc/self/cwd is the command's cwd",
            BypassPermissions,
            vec![(RuleKind::Deny, "Read(secret/**)")],
            "Bash",
            bash("cat /proc/self/cwd/secret/s.txt"),
            "deny",
        ),
        (
            "grep -R follows a link out of the project",
            Default,
            vec![],
            "Bash",
            bash("grep -R OUTSIDE src"),
            "ask",
        ),
        (
            "grep -R: a deny below the link's target",
            BypassPermissions,
            vec![(RuleKind::Deny, "Read(/{t}/outside/deep/**)")],
            "Bash",
            bash("grep -R OUTSIDE src"),
            "deny",
        ),
        (
            "grep --dereference-recursive",
            Default,
            vec![],
            "Bash",
            bash("grep --dereference-recursive OUTSIDE src"),
            "ask",
        ),
        (
            "rg -L follows",
            Default,
            vec![],
            "Bash",
            bash("rg -L OUTSIDE src"),
            "ask",
        ),
        (
            "rg --follow follows",
            Default,
            vec![],
            "Bash",
            bash("rg --follow OUTSIDE src"),
            "ask",
        ),
        (
            "find -L lists names out of the project",
            Default,
            vec![(RuleKind::Deny, "Read(/{t}/outside/deep/**)")],
            "Bash",
            bash("find -L src"),
            "deny",
        ),
        (
            "grep -r does not follow",
            Default,
            vec![],
            "Bash",
            bash("grep -r helper src"),
            "allow",
        ),
        (
            "rg without -L does not follow",
            Default,
            vec![],
            "Bash",
            bash("rg helper src"),
            "allow",
        ),
    ])
    .await;
}

#[tokio::test]
async fn kind2_rules_match_the_path_as_given_and_its_real_path() {
    use Mode::*;
    let write = |p: &str| json!({ "file_path": p, "content": "x" });
    check(vec![
        (
            "Write through a linked folder, deny on the real path",
            BypassPermissions,
            vec![DENY_OUTSIDE_EDIT],
            "Write",
            write("out/new.txt"),
            "deny",
        ),
        (
            "Write a dangling link, deny on its target",
            BypassPermissions,
            vec![DENY_OUTSIDE_EDIT],
            "Write",
            write("dangling"),
            "deny",
        ),
        (
            "Write a dangling link asks in acceptEdits (outside)",
            AcceptEdits,
            vec![],
            "Write",
            write("dangling"),
            "ask",
        ),
        (
            "Read through a linked folder, deny on the real path",
            BypassPermissions,
            vec![DENY_OUTSIDE_READ],
            "Read",
            json!({"file_path": "out/o.txt"}),
            "deny",
        ),
        (
            "Read, deny on the path as given",
            BypassPermissions,
            vec![(RuleKind::Deny, "Read(./out/**)")],
            "Read",
            json!({"file_path": "out/o.txt"}),
            "deny",
        ),
        (
            "Edit rule on the path as given covers Write",
            BypassPermissions,
            vec![(RuleKind::Deny, "Edit(./out/**)")],
            "Write",
            write("out/new.txt"),
            "deny",
        ),
        (
            "an ask rule on the path as given asks in default",
            Default,
            vec![
                (RuleKind::Ask, "Read(./link/**)"),
                (RuleKind::Allow, "Read"),
            ],
            "Read",
            json!({"file_path": "link/d.txt"}),
            "ask",
        ),
        (
            "an allow on the given path does not open the real one",
            Default,
            vec![(RuleKind::Allow, "Read(./out/**)")],
            "Read",
            json!({"file_path": "out/o.txt"}),
            "ask",
        ),
        (
            "Bash cat, deny on the path as given",
            BypassPermissions,
            vec![(RuleKind::Deny, "Read(./out/**)")],
            "Bash",
            json!({"command": "cat out/o.txt"}),
            "deny",
        ),
        (
            "Bash grep -r over a linked folder, deny on a name below it",
            BypassPermissions,
            vec![(RuleKind::Deny, "Read(./out/deep/**)")],
            "Bash",
            json!({"command": "grep -r OUTSIDE out"}),
            "deny",
        ),
    ])
    .await;
    // Grep leaves the file out and says so (nothing is asked or denied:
    // the folder itself is free to search).
    let w = world();
    let e = env(
        &w,
        BypassPermissions,
        &[(RuleKind::Deny, "Read(./out/deep/**)")],
        None,
    );
    let (got, text) = run(
        &w,
        &e,
        "Grep",
        &json!({"pattern": "OUTSIDE", "path": "out", "output_mode": "content"}),
    )
    .await;
    assert_eq!(got, "allow", "{text}");
    assert!(text.contains("o.txt"), "{text}");
    assert!(!text.contains("d.txt"), "{text}");
    assert!(
        text.contains("a permission rule denies reading it"),
        "{text}"
    );
}

#[tokio::test]
async fn kind3_protected_names_hold_along_the_whole_chain() {
    use Mode::*;
    check(vec![
        (
            "Read .env, a link to envs/dev",
            Default,
            vec![(RuleKind::Allow, "Read")],
            "Read",
            json!({"file_path": ".env"}),
            "ask",
        ),
        (
            "Read a link to the .env link",
            Default,
            vec![(RuleKind::Allow, "Read")],
            "Read",
            json!({"file_path": "innocent"}),
            "ask",
        ),
        (
            "Read envs/dev, named .env by a link in the root",
            Default,
            vec![],
            "Read",
            json!({"file_path": "envs/dev"}),
            "ask",
        ),
        (
            "Read other/keep, named .claude/keep: reads do not ask",
            Default,
            vec![],
            "Read",
            json!({"file_path": "other/keep"}),
            "allow",
        ),
        (
            "cat .env",
            Default,
            vec![(RuleKind::Allow, "Bash(cat:*)")],
            "Bash",
            json!({"command": "cat .env"}),
            "ask",
        ),
        (
            "cat innocent",
            BypassPermissions,
            vec![],
            "Bash",
            json!({"command": "cat innocent"}),
            "ask",
        ),
        (
            "Grep .env by name",
            Default,
            vec![],
            "Grep",
            json!({"pattern": "SECRET", "path": ".env"}),
            "ask",
        ),
        (
            "acceptEdits Write .claude/settings.local.json through the link",
            AcceptEdits,
            vec![],
            "Write",
            json!({"file_path": ".claude/settings.local.json", "content": "{}"}),
            "ask",
        ),
        (
            "bypass Write .claude/settings.local.json through the link",
            BypassPermissions,
            vec![],
            "Write",
            json!({"file_path": ".claude/settings.local.json", "content": "{}"}),
            "ask",
        ),
        (
            "Read other/settings.json, named .claude/settings.json",
            Default,
            vec![(RuleKind::Allow, "Read")],
            "Read",
            json!({"file_path": "other/settings.json"}),
            "ask",
        ),
        (
            "cat other/settings.json, named .claude/settings.json",
            Default,
            vec![(RuleKind::Allow, "Bash(cat:*)")],
            "Bash",
            json!({"command": "cat other/settings.json"}),
            "ask",
        ),
        (
            "./.env/../.env",
            Default,
            vec![(RuleKind::Allow, "Read")],
            "Bash",
            json!({"command": "cat ./.env/../.env"}),
            "ask",
        ),
    ])
    .await;
}

#[tokio::test]
async fn kind4_accept_edits_asks_before_changing_configuration_that_runs_programs() {
    use Mode::*;
    let write = |p: &str| json!({ "file_path": p, "content": "x\n" });
    let mut rows: Vec<Row<'_>> = Vec::new();
    for p in [
        ".vscode/tasks.json",
        ".mcp.json",
        ".envrc",
        ".bashrc",
        ".zshenv",
        ".profile",
        ".config/fish/config.fish",
        ".gitconfig",
        ".gitattributes",
        ".gitmodules",
        ".npmrc",
        ".yarnrc.yml",
        ".cargo/config.toml",
        "sub/.claude/commands/x.md",
        "other/settings.local.json",
        ".VSCODE/tasks.json",
    ] {
        rows.push((
            "acceptEdits write",
            AcceptEdits,
            vec![],
            "Write",
            write(p),
            "ask",
        ));
    }
    rows.push((
        "bypass write .bashrc",
        BypassPermissions,
        vec![],
        "Write",
        write(".bashrc"),
        "ask",
    ));
    rows.push((
        "acceptEdits src file",
        AcceptEdits,
        vec![],
        "Write",
        write("src/new.rs"),
        "allow",
    ));
    rows.push((
        "acceptEdits hooks folder of an app",
        AcceptEdits,
        vec![],
        "Write",
        write("src/hooks/useX.ts"),
        "allow",
    ));
    rows.push((
        "reading .vscode does not ask",
        Default,
        vec![],
        "Read",
        json!({"file_path": ".vscode/settings.json"}),
        "allow",
    ));
    check(rows).await;
}

#[tokio::test]
async fn kind4_writes_that_build_a_git_repository_ask() {
    use Mode::*;
    let w = world();
    for d in ["bare/objects", "half/refs"] {
        std::fs::create_dir_all(w.root.join(d)).expect("mkdir");
    }
    std::fs::write(w.root.join("bare/HEAD"), "ref: refs/heads/main\n").expect("write");
    let cases = [
        ("bare/config", "ask"),
        ("bare/refs/heads/main", "ask"),
        ("bare/hooks/pre-commit", "ask"),
        ("half/HEAD", "ask"),
        ("half/objects/ab/cdef", "ask"),
        ("half/notes.txt", "allow"),
        ("fresh/HEAD", "allow"),
    ];
    let mut failures = Vec::new();
    for (path, want) in cases {
        let e = env(&w, AcceptEdits, &[], None);
        let (got, text) = run(
            &w,
            &e,
            "Write",
            &json!({"file_path": path, "content": "x\n"}),
        )
        .await;
        if got != want {
            failures.push(format!("{path}: want {want}, got {got}: {text}"));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// The LSP tools answer only with what a Read could see: every kind of
/// location a server can point to, one of each.
#[tokio::test]
async fn kind5_language_server_results_leave_out_what_a_read_could_not_see() {
    let w = world();
    let at = |p: PathBuf, line: usize, text: &str| Location {
        path: p,
        line,
        text: Some(text.into()),
    };
    let locations = vec![
        at(w.root.join("src/a.rs"), 1, "fn helper() {}"),
        at(w.root.join("secret/s.txt"), 1, "TOKEN=1"),
        at(w.root.join("envs/dev"), 1, "SECRET=abc"),
        at(w.root.join(".env"), 1, "SECRET=abc"),
        at(w.t.join("outside/o.txt"), 1, OUTSIDE),
        at(w.root.join("out/deep/d.txt"), 1, OUTSIDE),
        at(w.root.join("notes/n.md"), 1, "NOTE=1"),
    ];
    let symbols: Vec<LspSymbol> = locations
        .iter()
        .map(|l| LspSymbol {
            name: format!("sym_{}", l.text.as_deref().unwrap_or("")),
            kind: "function",
            path: l.path.clone(),
            line: l.line,
        })
        .collect();
    let rules = [
        (RuleKind::Deny, "Read(secret/**)"),
        (RuleKind::Ask, "Read(notes/**)"),
        (RuleKind::Deny, "Read(./envs/**)"),
    ];
    lathe_core::editor::lsp::set_servers_running(1);
    let input = json!({"file_path": "src/a.rs", "line": 1, "symbol": "helper"});
    for (tool, answer, input) in [
        (
            "LspReferences",
            LspAnswer::Locations(locations.clone()),
            input.clone(),
        ),
        (
            "LspDefinition",
            LspAnswer::Locations(locations.clone()),
            input.clone(),
        ),
        (
            "LspSymbols",
            LspAnswer::Symbols(symbols.clone()),
            json!({"query": "sym"}),
        ),
    ] {
        let e = env(&w, Mode::Default, &rules, Some(answer));
        let (got, text) = run(&w, &e, tool, &input).await;
        assert_eq!(got, "allow", "{tool}: {text}");
        assert!(text.contains("src/a.rs:1"), "{tool}: {text}");
        for secret in ["TOKEN=1", "SECRET=abc", OUTSIDE, "NOTE=1"] {
            assert!(!text.contains(secret), "{tool} shows {secret}: {text}");
        }
        assert!(
            text.contains("3 files were left out because reading them needs the user's permission"),
            "{tool}: {text}"
        );
        assert!(
            text.contains("2 files were left out because a permission rule denies reading them"),
            "{tool}: {text}"
        );
    }
    lathe_core::editor::lsp::set_servers_running(0);
}

/// A row with its own extra links: `(link, target)` made in the world
/// before it runs (`{t}` in a target is the temp folder).
type LinkedRow<'a> = (
    &'a str,
    &'a [(&'a str, &'a str)],
    Mode,
    Vec<(RuleKind, &'a str)>,
    &'a str,
    Value,
    &'a str,
);

async fn check_linked(rows: Vec<LinkedRow<'_>>) {
    let mut failures = Vec::new();
    for (what, links, mode, rules, tool, input, want) in rows {
        let w = world();
        for (link, target) in links {
            let target = target.replace("{t}", &w.t.display().to_string());
            let at = w.root.join(link);
            std::fs::create_dir_all(at.parent().expect("parent")).expect("mkdir");
            symlink(target, at).expect("symlink");
        }
        let e = env(&w, mode, &rules, None);
        let (got, text) = run(&w, &e, tool, &input).await;
        if got != want {
            failures.push(format!("{what}: want {want}, got {got}: {text}"));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[tokio::test]
async fn attacks() {
    use Mode::*;
    let bash = |c: &str| json!({ "command": c });
    let write = |p: &str| json!({ "file_path": p, "content": "x\n" });
    let none: &[(&str, &str)] = &[];
    let deny_secret = (RuleKind::Deny, "Read(secret/**)");
    check_linked(vec![
        // kind 1
        (
            "link/../../proj/secret",
            none,
            BypassPermissions,
            vec![deny_secret],
            "Bash",
            bash("cat link/../../proj/secret/s.txt"),
            "deny",
        ),
        (
            "link to /",
            &[("slash", "/")],
            Default,
            vec![],
            "Bash",
            bash("cat slash/etc/hostname"),
            "ask",
        ),
        (
            "link to / then back in",
            &[("slash", "/")],
            BypassPermissions,
            vec![deny_secret],
            "Bash",
            bash("cat slash/{t}/proj/secret/s.txt"),
            "deny",
        ),
        (
            "relative link then ..",
            &[("rel", "../outside/deep")],
            Default,
            vec![],
            "Bash",
            bash("cat rel/../o.txt"),
            "ask",
        ),
        (
            "link/./../",
            none,
            Default,
            vec![],
            "Bash",
            bash("cat link/./../o.txt"),
            "ask",
        ),
        (
            "link//..",
            none,
            Default,
            vec![],
            "Bash",
            bash("cat link//../o.txt"),
            "ask",
        ),
        (
            "cd link && cat ../o.txt",
            none,
            Default,
            vec![],
            "Bash",
            bash("cd link && cat ../o.txt"),
            "ask",
        ),
        (
            "pushd link",
            none,
            Default,
            vec![],
            "Bash",
            bash("pushd link && cat ../o.txt"),
            "ask",
        ),
        (
            "$PWD/link/..",
            none,
            Default,
            vec![],
            "Bash",
            bash("cat $PWD/link/../o.txt"),
            "ask",
        ),
        (
            "/proc/thread-self/cwd/link/..",
            none,
            Default,
            vec![],
            "Bash",
            bash("cat /proc/thread-self/cwd/link/../o.txt"),
            "ask",
        ),
        (
            "/proc/$$/cwd",
            none,
            BypassPermissions,
            vec![ALLOW_BASH],
            "Bash",
            bash("cat /proc/$$/cwd/secret/s.txt"),
            "ask",
        ),
        (
            "/proc/self/root",
            none,
            BypassPermissions,
            vec![deny_secret],
            "Bash",
            bash("cat /proc/self/root{t}/proj/secret/s.txt"),
            "deny",
        ),
        (
            "~+/link/..",
            none,
            Default,
            vec![],
            "Bash",
            bash("cat ~+/link/../o.txt"),
            "ask",
        ),
        (
            "grep -R on a link operand",
            none,
            Default,
            vec![],
            "Bash",
            bash("grep -R x link"),
            "ask",
        ),
        (
            "diff -r follows",
            none,
            Default,
            vec![],
            "Bash",
            bash("diff -r src notes"),
            "ask",
        ),
        (
            "find -follow",
            none,
            Default,
            vec![(RuleKind::Deny, "Read(/{t}/outside/deep/**)")],
            "Bash",
            bash("find src -follow"),
            "deny",
        ),
        (
            "link to a link in a walk",
            &[("src/ext2", "ext")],
            Default,
            vec![],
            "Bash",
            bash("grep -R OUTSIDE src/ext2/.."),
            "ask",
        ),
        // Conservative: the shell's logical `cd link/..` stays in the
        // project, but the folder named is also checked as the kernel
        // resolves it (what `cd -P` does), which is outside.
        (
            "cd link/.. (logical)",
            none,
            Default,
            vec![],
            "Bash",
            bash("cd link/.. && cat src/a.rs"),
            "ask",
        ),
        // kind 2
        (
            "Write through two links, deny on the real path",
            &[("two", "out")],
            BypassPermissions,
            vec![DENY_OUTSIDE_EDIT],
            "Write",
            write("two/new.txt"),
            "deny",
        ),
        (
            "Write a dangling link to a dangling link",
            &[("d1", "d2"), ("d2", "{t}/outside/new2.txt")],
            BypassPermissions,
            vec![DENY_OUTSIDE_EDIT],
            "Write",
            write("d1"),
            "deny",
        ),
        (
            "Write a relative dangling link",
            &[("rd", "../outside/new3.txt")],
            BypassPermissions,
            vec![DENY_OUTSIDE_EDIT],
            "Write",
            write("rd"),
            "deny",
        ),
        (
            "deny on an intermediate link's name",
            &[("alias2", "chain")],
            BypassPermissions,
            vec![(RuleKind::Deny, "Read(./chain/**)")],
            "Read",
            json!({"file_path": "alias2/d.txt"}),
            "deny",
        ),
        (
            "Write out//new.txt",
            none,
            BypassPermissions,
            vec![(RuleKind::Deny, "Edit(./out/**)")],
            "Write",
            write("out//new.txt"),
            "deny",
        ),
        (
            "Grep a linked folder denied by its given name",
            none,
            BypassPermissions,
            vec![(RuleKind::Deny, "Read(./out/deep/**)")],
            "Grep",
            json!({"pattern": "x", "path": "out/deep"}),
            "deny",
        ),
        (
            "Read through /proc/self/root",
            none,
            BypassPermissions,
            vec![deny_secret],
            "Read",
            json!({"file_path": "/proc/self/root/{t}/proj/secret/s.txt"}),
            "deny",
        ),
        (
            "cat out/deep/../o.txt, deny on the given name",
            none,
            BypassPermissions,
            vec![(RuleKind::Deny, "Read(./out/**)")],
            "Bash",
            bash("cat out/deep/../o.txt"),
            "deny",
        ),
        (
            "Read the real path, deny on a root link's name",
            none,
            BypassPermissions,
            vec![(RuleKind::Deny, "Read(./out/**)")],
            "Read",
            json!({"file_path": "/{t}/outside/o.txt"}),
            "deny",
        ),
        (
            "cat the real path, deny on a root link's name",
            none,
            BypassPermissions,
            vec![(RuleKind::Deny, "Read(./out/**)")],
            "Bash",
            bash("cat {t}/outside/o.txt"),
            "deny",
        ),
        // kind 3
        (
            ".env -> outside secret",
            &[],
            Default,
            vec![(RuleKind::Allow, "Read")],
            "Read",
            json!({"file_path": ".env"}),
            "ask",
        ),
        (
            "link named g to .git",
            &[("g", ".git"), (".git", "other")],
            AcceptEdits,
            vec![],
            "Write",
            write("g/hooks/pre-commit"),
            "ask",
        ),
        (
            "settings.json a dangling link out of .claude",
            &[("sub/.claude/settings.json", "../../notes/new.md")],
            AcceptEdits,
            vec![],
            "Write",
            write("sub/.claude/settings.json"),
            "ask",
        ),
        (
            ".claude -> .. (write the settings)",
            &[("sub/.claude", "..")],
            AcceptEdits,
            vec![],
            "Write",
            write("sub/.claude/settings.local.json"),
            "ask",
        ),
        (
            "cat .ENV (case)",
            &[(".ENV", "envs/dev")],
            Default,
            vec![(RuleKind::Allow, "Bash(cat:*)")],
            "Bash",
            bash("cat .ENV"),
            "ask",
        ),
        (
            "ls .env names only (no content)",
            none,
            Default,
            vec![],
            "Bash",
            bash("ls .env"),
            "ask",
        ),
        // kind 4
        (
            "Write .Bashrc",
            none,
            AcceptEdits,
            vec![],
            "Write",
            write(".Bashrc"),
            "ask",
        ),
        (
            "Write through a link to .vscode",
            &[("vs", ".vscode")],
            AcceptEdits,
            vec![],
            "Write",
            write("vs/tasks.json"),
            "ask",
        ),
        (
            "echo >> .bashrc in bypass",
            none,
            BypassPermissions,
            vec![],
            "Bash",
            bash("echo x >> .bashrc"),
            "ask",
        ),
        (
            "tee .mcp.json in bypass",
            none,
            BypassPermissions,
            vec![],
            "Bash",
            bash("echo {} | tee .mcp.json"),
            "ask",
        ),
    ])
    .await;
}
