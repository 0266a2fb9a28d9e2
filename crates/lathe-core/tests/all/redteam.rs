//! Red-team round 2: attacks on the permission gate and the OS sandbox
//! through the whole pipeline (`common::run_call`), each a table row that
//! asserts the SAFE outcome: the call asked (or was denied), or nothing
//! leaked (no secret text in the result, no file written where the tier
//! forbids, no program an option or a config named ran).
//!
//! `attacks_that_are_held` runs every row that holds today;
//! `attacks_that_get_through` (ignored) lists the rows that still get
//! through, each with the smallest input found.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;

use lathe_core::permissions::{Mode, Rule, RuleBase, RuleKind, Rules};
use serde_json::Value;

/// What counts as the attack getting through (when nothing was asked).
#[derive(Clone, Copy, Debug)]
enum Bad {
    /// The result text holds this (a secret, or `PWNED` from `pw.sh`).
    Shows(&'static str),
    /// This path exists afterwards (`{R}` the root, `{O}` outside).
    Creates(&'static str),
}

/// One attack: the rules (`{R}`/`{O}` in rule texts are replaced), a
/// shell `setup` run unsandboxed in the root first (`$R`, `$O` set), the
/// tool calls in order (`{R}`, `{O}` replaced in the JSON), and what must
/// not happen without an ask.
#[derive(Clone, Copy)]
struct Attack {
    id: &'static str,
    mode: Mode,
    rules: &'static [(RuleKind, &'static str)],
    setup: &'static str,
    steps: &'static [(&'static str, &'static str)],
    bad: Bad,
    /// The sandbox forced off (`rules.sandbox.off`).
    off: bool,
    /// `{O}` is an additional directory.
    extra_dir: bool,
}

const D: Mode = Mode::Default;
const AE: Mode = Mode::AcceptEdits;
const PL: Mode = Mode::Plan;
const BY: Mode = Mode::BypassPermissions;
const DENY_SECRET: &[(RuleKind, &str)] = &[(RuleKind::Deny, "Read(./secret/**)")];
const NONE: &[(RuleKind, &str)] = &[];
const SECRET: Bad = Bad::Shows("sekrit");
const PWNED: Bad = Bad::Shows("PWNED");

#[allow(clippy::too_many_arguments)]
const fn a(
    id: &'static str,
    mode: Mode,
    rules: &'static [(RuleKind, &'static str)],
    setup: &'static str,
    steps: &'static [(&'static str, &'static str)],
    bad: Bad,
) -> Attack {
    Attack {
        id,
        mode,
        rules,
        setup,
        steps,
        bad,
        off: false,
        extra_dir: false,
    }
}

const fn off(mut x: Attack) -> Attack {
    x.off = true;
    x
}

const fn extra(mut x: Attack) -> Attack {
    x.extra_dir = true;
    x
}

/// The project every attack starts from: `a.txt`, `.env` and
/// `secret/s.txt` holding `sekrit…`, `pw.sh` printing `PWNED`, all
/// committed to a git repository; outside, `{O}/out-secret.txt`.
const BASE: &str = r#"
set -e
echo hello > a.txt
echo 'TOKEN=sekrit-env' > .env
mkdir -p secret && echo 'sekrit-denied' > secret/s.txt
printf '#!/bin/sh\necho PWNED\n' > pw.sh && chmod +x pw.sh
echo 'sekrit-outside' > "$O/out-secret.txt"
git init -q . && git add -A && git -c user.email=a@b -c user.name=a commit -qm init
"#;

struct Outcome {
    asked: bool,
    leaked: bool,
    log: String,
}

async fn run(x: &Attack) -> Outcome {
    let a = tempfile::tempdir().unwrap();
    let b = common::outside_dir();
    let root = a.path().canonicalize().unwrap();
    let out = b.path().canonicalize().unwrap();
    let fill = |s: &str| {
        s.replace("{R}", &root.display().to_string())
            .replace("{O}", &out.display().to_string())
    };
    let script = format!("{BASE}\n{}", x.setup);
    let st = std::process::Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(&root)
        .env("R", &root)
        .env("O", &out)
        .status()
        .unwrap();
    assert!(st.success(), "{}: setup failed", x.id);
    let base = RuleBase::at_root(&root, None);
    let mut rules = Rules {
        mode: x.mode,
        ..Rules::default()
    };
    for (kind, text) in x.rules {
        rules.push(
            *kind,
            Rule::parse(&fill(text), &base).unwrap(),
            lathe_core::permissions::RuleSource::Setup,
        );
    }
    if x.off {
        rules.sandbox.off = Some("red team: forced off".into());
    }
    if x.extra_dir {
        rules.additional_dirs.push(out.clone());
    }
    let (env, prompter) = common::exec_env(&root, rules, vec![]);
    let mut log = String::new();
    let mut leaked = false;
    for (tool, input) in x.steps {
        let input: Value = serde_json::from_str(&fill(input))
            .unwrap_or_else(|e| panic!("{}: bad input {input}: {e}", x.id));
        let (status, text) = common::run_call(&env, tool, input).await;
        if let Bad::Shows(s) = x.bad {
            leaked |= text.contains(s);
        }
        log.push_str(&format!("  {tool} -> {status:?}: {}\n", text.trim()));
    }
    // A background job gets a moment to do its work.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    if let Bad::Creates(p) = x.bad {
        let p = fill(p);
        let p = root.join(p);
        leaked |= p.exists() || p.is_symlink();
    }
    Outcome {
        asked: !prompter.asked().is_empty(),
        leaked,
        log,
    }
}

fn sandbox_available() -> bool {
    lathe_core::sandbox::support().unavailable().is_none()
}

/// Runs `rows`; returns a line for each that got through.
async fn through(rows: &[Attack]) -> Vec<String> {
    let mut bad = Vec::new();
    for x in rows {
        let o = run(x).await;
        let got = !o.asked && o.leaked;
        eprintln!(
            "[{}] {}: asked={} leaked={}\n{}",
            if got { "THROUGH" } else { "held" },
            x.id,
            o.asked,
            o.leaked,
            o.log
        );
        if got {
            bad.push(format!("{}\n{}", x.id, o.log));
        }
    }
    bad
}

macro_rules! steps {
    ($($tool:expr => $input:expr),* $(,)?) => { &[$(($tool, $input)),*] };
}

// The rows. Inputs are JSON templates.
include!("redteam/rows.rs");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attacks_that_are_held() {
    if !sandbox_available() {
        eprintln!(
            "skipped: {:?}",
            lathe_core::sandbox::support().unavailable()
        );
        return;
    }
    let rows: Vec<Attack> = ALL
        .iter()
        .filter(|x| !GETS_THROUGH.iter().any(|(id, _)| *id == x.id))
        .copied()
        .collect();
    let bad = through(&rows).await;
    assert!(bad.is_empty(), "got through:\n{}", bad.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "gets through: see GETS_THROUGH in tests/redteam/rows.rs"]
async fn attacks_that_get_through() {
    let rows: Vec<Attack> = ALL
        .iter()
        .filter(|x| GETS_THROUGH.iter().any(|(id, _)| *id == x.id))
        .copied()
        .collect();
    assert_eq!(rows.len(), GETS_THROUGH.len(), "every listed id is a row");
    let bad = through(&rows).await;
    assert!(bad.is_empty(), "got through:\n{}", bad.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "survey"]
async fn survey() {
    let only = std::env::var("RT_ONLY").unwrap_or_default();
    let rows: Vec<Attack> = ALL
        .iter()
        .filter(|x| x.id.contains(&only))
        .copied()
        .collect();
    let bad = through(&rows).await;
    eprintln!("THROUGH:\n{}", bad.join("\n"));
}
