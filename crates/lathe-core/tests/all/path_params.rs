//! Every path-like parameter of Grep, Glob and Read means one thing
//!: `path`/`file_path` resolve against the project root, and
//! a glob resolves against the searched `path` — through the one resolver,
//! `lathe_core::tools::support::paths::resolve_param`. Table tests of `path` × `glob` ×
//! relative / `./` / absolute / `~` forms on real files, through the tools'
//! object-safe face (prepare → validate → call, as the pipeline runs them).
//!
//! Compared with `rg` 13: a glob with a `/` means what `cd {path} && rg
//! --glob {glob}` means (rg anchors such globs at its working directory).

// Test code: helpers outside #[test] fns fail the test by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use lathe_core::editor::DiskEditor;
use lathe_core::tools::glob::GlobTool;
use lathe_core::tools::grep::{GrepTool, GREP_GLOB_OUTSIDE_PATH, GREP_NO_MATCHES_GLOB_HINT};
use lathe_core::tools::read::ReadTool;
use lathe_core::tools::{Tool, ToolContext};

fn ctx(root: &Path) -> ToolContext {
    common::tool_ctx(root, Arc::new(DiskEditor::new()))
}

async fn run(tool: Arc<dyn Tool>, root: &Path, input: Value) -> Result<String, String> {
    common::run_tool(tool, &ctx(root), &input).await
}

/// Writes `needle` to `root/rel` with mtime epoch + `secs` (newest first
/// in the files list, so each expected list has one order).
fn put(root: &Path, rel: &str, secs: u64) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(&path, "needle\n").expect("write");
    let file = fs::File::options().write(true).open(&path).expect("open");
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + secs))
        .expect("set mtime");
}

/// A project below `$HOME` (so `~/…` can name it) with a `sub/` folder at
/// two levels: `sub/d.txt` at the root and `pkg/sub/a.txt` below `pkg`.
fn project() -> tempfile::TempDir {
    let home = std::env::var_os("HOME").map(PathBuf::from).expect("HOME");
    let dir = tempfile::Builder::new()
        .prefix("lathe-path-params-")
        .tempdir_in(home)
        .expect("tempdir in HOME");
    let r = dir.path();
    put(r, "pkg/sub/a.txt", 40);
    put(r, "pkg/b.txt", 30);
    put(r, "sub/d.txt", 20);
    put(r, "other/sub/c.txt", 10);
    dir
}

/// The four spellings of the folder `rel` inside the project `root`:
/// relative, `./` relative, absolute, and from `~`.
fn spellings(root: &Path, rel: &str) -> Vec<(&'static str, String)> {
    let home = std::env::var_os("HOME").map(PathBuf::from).expect("HOME");
    let under_home = root.strip_prefix(&home).expect("root under HOME");
    vec![
        ("relative", rel.to_string()),
        ("./relative", format!("./{rel}")),
        ("absolute", root.join(rel).display().to_string()),
        ("~", format!("~/{}", under_home.join(rel).display())),
    ]
}

fn files(list: &[&str]) -> String {
    let noun = if list.len() == 1 { "file" } else { "files" };
    format!("Found {} {noun}\n{}", list.len(), list.join("\n"))
}

/// The case: a glob with a `/` is matched below the searched path.
#[tokio::test]
async fn grep_glob_with_a_slash_is_relative_to_the_searched_path() {
    let p = project();
    let out = run(
        Arc::new(GrepTool),
        p.path(),
        json!({"pattern": "needle", "path": "pkg", "glob": "sub/*.txt"}),
    )
    .await;
    assert_eq!(out, Ok(files(&["pkg/sub/a.txt"])));
}

/// `path` × `glob`, each in every spelling: the same files every time.
#[tokio::test]
async fn grep_path_times_glob_table() {
    let p = project();
    let r = p.path();
    // (path folder, glob below it or a name glob, expected files)
    let rows: &[(Option<&str>, &str, &[&str])] = &[
        (Some("pkg"), "sub/*.txt", &["pkg/sub/a.txt"]),
        (None, "sub/*.txt", &["sub/d.txt"]),
        (Some("other"), "sub/*.txt", &["other/sub/c.txt"]),
        (Some("pkg"), "**/*.txt", &["pkg/sub/a.txt", "pkg/b.txt"]),
    ];
    for (folder, glob_rel, want) in rows {
        let paths: Vec<(&str, Option<String>)> = match folder {
            Some(f) => spellings(r, f)
                .into_iter()
                .map(|(k, v)| (k, Some(v)))
                .collect(),
            None => vec![("none", None)],
        };
        let base = folder.map_or(r.to_path_buf(), |f| r.join(f));
        let home = std::env::var_os("HOME").map(PathBuf::from).expect("HOME");
        let globs = vec![
            ("relative", glob_rel.to_string()),
            ("./relative", format!("./{glob_rel}")),
            ("absolute", format!("{}/{glob_rel}", base.display())),
            (
                "~",
                format!(
                    "~/{}/{glob_rel}",
                    base.strip_prefix(&home).expect("under HOME").display()
                ),
            ),
        ];
        for (pk, path) in &paths {
            for (gk, glob) in &globs {
                let mut input = json!({"pattern": "needle", "glob": glob});
                if let Some(path) = path {
                    input["path"] = json!(path);
                }
                let out = run(Arc::new(GrepTool), r, input).await;
                assert_eq!(
                    out,
                    Ok(files(want)),
                    "path {pk} {path:?} × glob {gk} {glob:?}"
                );
            }
        }
    }
}

/// Globs without a `/` match a name at any depth below `path`, and `!`
/// excludes with the same anchoring.
#[tokio::test]
async fn grep_name_globs_and_negation_below_path() {
    let p = project();
    let r = p.path();
    let grep = |input: Value| run(Arc::new(GrepTool), r, input);
    assert_eq!(
        grep(json!({"pattern": "needle", "path": "pkg", "glob": "*.txt"})).await,
        Ok(files(&["pkg/sub/a.txt", "pkg/b.txt"]))
    );
    assert_eq!(
        grep(json!({"pattern": "needle", "path": "pkg", "glob": "!sub/*.txt"})).await,
        Ok(files(&["pkg/b.txt"]))
    );
    assert_eq!(
        grep(json!({"pattern": "needle", "glob": "!sub/*.txt"})).await,
        Ok(files(&["pkg/sub/a.txt", "pkg/b.txt", "other/sub/c.txt"]))
    );
}

/// A glob that names a folder outside the searched path can match nothing:
/// the model is told why instead of "no matches"; a root-anchored glob
/// below `path` finds nothing and the result says how globs anchor.
#[tokio::test]
async fn grep_glob_outside_path_and_root_anchored_glob_are_explained() {
    let p = project();
    let r = p.path();
    let err = run(
        Arc::new(GrepTool),
        r,
        json!({"pattern": "needle", "path": "pkg", "glob": "../other/sub/*.txt"}),
    )
    .await
    .expect_err("outside");
    assert_eq!(
        err,
        lathe_core::text::fill(
            GREP_GLOB_OUTSIDE_PATH,
            &[
                ("glob", "../other/sub/*.txt"),
                ("dir", "other/sub"),
                ("path", "pkg"),
            ]
        )
    );
    let out = run(
        Arc::new(GrepTool),
        r,
        json!({"pattern": "needle", "path": "pkg", "glob": "pkg/sub/*.txt"}),
    )
    .await
    .expect("no matches is a result");
    assert!(
        out.ends_with(&lathe_core::text::fill(
            GREP_NO_MATCHES_GLOB_HINT,
            &[("path", "pkg")]
        )),
        "{out}"
    );
}

/// Glob's `path` × `pattern`, each in every spelling.
#[tokio::test]
async fn glob_path_times_pattern_table() {
    let p = project();
    let r = p.path();
    let home = std::env::var_os("HOME").map(PathBuf::from).expect("HOME");
    for (pk, path) in spellings(r, "pkg") {
        let base = r.join("pkg");
        let patterns = [
            ("relative", "sub/*.txt".to_string()),
            ("./relative", "./sub/*.txt".to_string()),
            ("absolute", format!("{}/sub/*.txt", base.display())),
            (
                "~",
                format!(
                    "~/{}/sub/*.txt",
                    base.strip_prefix(&home).expect("under HOME").display()
                ),
            ),
        ];
        for (gk, pattern) in &patterns {
            let out = run(
                Arc::new(GlobTool),
                r,
                json!({"pattern": pattern, "path": path}),
            )
            .await;
            assert_eq!(
                out.as_deref(),
                Ok("pkg/sub/a.txt"),
                "path {pk} {path:?} × pattern {gk} {pattern:?}"
            );
        }
    }
}

/// Read's `file_path` in every spelling reads the same file.
#[tokio::test]
async fn read_file_path_in_every_spelling() {
    let p = project();
    let r = p.path();
    for (k, file_path) in spellings(r, "pkg/sub/a.txt") {
        let out = run(Arc::new(ReadTool), r, json!({"file_path": file_path})).await;
        assert_eq!(out.as_deref(), Ok("     1\tneedle"), "{k} {file_path:?}");
    }
}
