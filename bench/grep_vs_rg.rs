//! Grep and Glob against the `rg` binary on one large tree, each figure next
//! to its reference measured in the same run (`make bench` part a).
//!
//! The tree is `LATHE_BENCH_TREE` (bench/tree.sh builds it: 50 000+ real
//! source files); `rg` is `LATHE_BENCH_RG` (the ripgrep wheel `make bench`
//! installs into .venv). For every case the result SETS must equal what
//! `rg --hidden --no-require-git` finds, or the bench fails loudly. Prints
//! the min and median wall time of each side over `LATHE_BENCH_RUNS` runs
//! (default 3, taken in turn) and the ratio of the medians (lathe / rg).
//! Timings are never asserted. Run: `make bench`.

// Bench code: a failed unwrap/expect is the bench failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lathe_core::editor::DiskEditor;
use lathe_core::protocol::ToolResultContent;
use lathe_core::tools::glob::GlobTool;
use lathe_core::tools::grep::GrepTool;
use lathe_core::tools::{FileState, Tool, ToolContext};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

fn ctx(root: &Path) -> ToolContext {
    ToolContext {
        root: root.to_path_buf(),
        editor: Arc::new(DiskEditor::new()),
        file_state: Arc::new(FileState::new()),
        cancel: CancellationToken::new(),
        progress: None,
        by_user: false,
    }
}

/// One call of `tool` with `input`: its text output.
async fn call(tool: Arc<dyn Tool>, ctx: &ToolContext, input: &Value) -> String {
    let prepared = tool.prepare(input, &ctx.root).expect("input accepted");
    let out = prepared
        .validate(ctx)
        .await
        .expect("valid")
        .run(ctx)
        .await
        .expect("tool ran");
    match out.content {
        ToolResultContent::Text(t) => t,
        other => panic!("not text: {other:?}"),
    }
}

/// The entries of a Grep/Glob answer: its lines minus the headers and
/// notes lathe adds (`Found …`, `[…]`, blank lines).
fn entries(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| {
            !l.is_empty() && !l.starts_with("Found ") && !l.starts_with('[') && !l.starts_with('(')
        })
        .map(str::to_string)
        .collect()
}

fn rg(bin: &Path, root: &Path, args: &[&str]) -> (Duration, BTreeSet<String>) {
    let t = Instant::now();
    let out = Command::new(bin)
        .args(["--hidden", "--no-require-git"])
        .args(args)
        .current_dir(root)
        .output()
        .expect("rg runs");
    let took = t.elapsed();
    (
        took,
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim_start_matches("./").to_string())
            .collect(),
    )
}

fn stats(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    (ms(v[0]), ms(v[v.len() / 2]))
}

struct Case {
    name: &'static str,
    tool: Arc<dyn Tool>,
    input: Value,
    rg_args: Vec<&'static str>,
}

fn cases() -> Vec<Case> {
    let grep = |mode: &str, pattern: &str| json!({"pattern": pattern, "output_mode": mode, "head_limit": 0});
    let literal = "def __init_subclass__";
    let regex = r"impl.*Drop for [A-Z]\w+Guard";
    vec![
        Case {
            name: "Grep files_with_matches, literal",
            tool: Arc::new(GrepTool),
            input: grep("files_with_matches", literal),
            rg_args: vec!["-l", literal],
        },
        Case {
            name: "Grep files_with_matches, regex",
            tool: Arc::new(GrepTool),
            input: grep("files_with_matches", regex),
            rg_args: vec!["-l", regex],
        },
        Case {
            name: "Grep content, literal",
            tool: Arc::new(GrepTool),
            input: grep("content", literal),
            rg_args: vec!["-n", "--no-heading", "--with-filename", literal],
        },
        Case {
            name: "Grep content, regex",
            tool: Arc::new(GrepTool),
            input: grep("content", regex),
            rg_args: vec!["-n", "--no-heading", "--with-filename", regex],
        },
        Case {
            name: "Grep count, literal",
            tool: Arc::new(GrepTool),
            input: grep("count", literal),
            rg_args: vec!["-c", "--with-filename", literal],
        },
        Case {
            name: "Grep count, regex",
            tool: Arc::new(GrepTool),
            input: grep("count", regex),
            rg_args: vec!["-c", "--with-filename", regex],
        },
        Case {
            name: "Glob **/*_test.py",
            tool: Arc::new(GlobTool),
            input: json!({"pattern": "**/*_test.py"}),
            rg_args: vec!["--files", "-g", "*_test.py"],
        },
    ]
}

fn main() {
    let root = PathBuf::from(std::env::var("LATHE_BENCH_TREE").expect("LATHE_BENCH_TREE"));
    let bin = PathBuf::from(std::env::var("LATHE_BENCH_RG").unwrap_or_else(|_| "rg".into()));
    let runs: usize = std::env::var("LATHE_BENCH_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let ctx = ctx(&root);
    println!(
        "== Grep/Glob vs rg on {} ({runs} runs each, in turn)",
        root.display()
    );
    let mut failed = Vec::new();
    for case in cases() {
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        let (mut got, mut want) = (BTreeSet::new(), BTreeSet::new());
        for _ in 0..runs {
            let t = Instant::now();
            let text = rt.block_on(call(case.tool.clone(), &ctx, &case.input));
            ours.push(t.elapsed());
            got = entries(&text);
            let (took, set) = rg(&bin, &root, &case.rg_args);
            theirs.push(took);
            want = set;
        }
        if got != want {
            let extra: Vec<_> = got.difference(&want).take(5).collect();
            let missing: Vec<_> = want.difference(&got).take(5).collect();
            failed.push(format!(
                "{}: {} entries vs rg's {}; only lathe: {extra:?}; only rg: {missing:?}",
                case.name,
                got.len(),
                want.len()
            ));
        }
        let ((omin, omed), (rmin, rmed)) = (stats(ours), stats(theirs));
        println!(
            "{:<36} lathe min {omin:7.1} ms  median {omed:7.1} ms | rg min {rmin:7.1} ms  median {rmed:7.1} ms | ratio {:.2}x  ({} entries)",
            case.name,
            omed / rmed,
            want.len()
        );
    }
    if !failed.is_empty() {
        for f in &failed {
            eprintln!("RESULTS DIFFER: {f}");
        }
        std::process::exit(1);
    }
    println!("all result sets equal rg --hidden --no-require-git");
}
