//! Grep and Glob through the object-safe `Tool` face (prepare → validate →
//! call, as the pipeline runs them) on real files in temp directories, with
//! explicit mtimes, a .gitignore, hidden files, VCS folders and a binary
//! file. Every test asserts the exact text the model would get.

// Test code: helpers outside #[test] fns fail the test by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use lathe_core::editor::{Document, Editor, EditorError, WriteOutcome, WriteRequest};
use lathe_core::tools::glob::{GlobTool, GLOB_NOT_A_DIRECTORY, GLOB_PATH_NOT_FOUND};
use lathe_core::tools::grep::{GrepTool, GREP_PATH_NOT_FOUND};
use lathe_core::tools::{Tool, ToolContext};

/// Grep and Glob never touch the editor; any call is a test failure.
struct NoEditor;

#[async_trait]
impl Editor for NoEditor {
    async fn read(&self, _path: &Path) -> Result<Document, EditorError> {
        Err(EditorError::Unavailable(
            "search tools must not read through the editor".into(),
        ))
    }
    async fn write(&self, _path: &Path, _req: WriteRequest) -> Result<WriteOutcome, EditorError> {
        Err(EditorError::Unavailable(
            "search tools must not write".into(),
        ))
    }
}

fn ctx(root: &Path) -> ToolContext {
    common::tool_ctx(root, Arc::new(NoEditor))
}

async fn grep(root: &Path, input: Value) -> Result<String, String> {
    common::run_tool(Arc::new(GrepTool), &ctx(root), &input).await
}

async fn glob(root: &Path, input: Value) -> Result<String, String> {
    common::run_tool(Arc::new(GlobTool), &ctx(root), &input).await
}

/// Writes `bytes` to `root/rel` (creating folders) with mtime epoch + `secs`.
fn put(root: &Path, rel: &str, bytes: &[u8], secs: u64) {
    let path = root.join(rel);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).expect("mkdir");
    }
    fs::write(&path, bytes).expect("write");
    let file = fs::File::options().write(true).open(&path).expect("open");
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + secs))
        .expect("set mtime");
}

/// A project without `.git` (a fresh folder): .gitignore must still apply.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = dir.path();
    put(r, ".gitignore", b"ignored/\n*.log\n", 1);
    put(
        r,
        "src/greeting.py",
        b"def greet():\n    print('Helo, world')\n    return 1\n",
        300,
    );
    put(r, "src/util.py", b"# Helo helper\nx = 1\nHelo again\n", 100);
    put(r, "src/notes.txt", b"nothing here\n", 90);
    put(r, "README.md", b"Say Helo.\n", 200);
    put(r, "ignored/secret.py", b"Helo secret\n", 400);
    put(r, "debug.log", b"Helo log\n", 500);
    put(r, ".hidden/conf.py", b"HELO = 'Helo'\n", 50);
    put(r, ".env", b"GREETING=Helo\n", 10);
    put(r, "bin.dat", b"Helo\0\x01\x02binary", 600);
    dir
}

// ---------------------------------------------------------------- Grep

#[tokio::test]
async fn files_with_matches_is_default_newest_first_and_honours_ignores() {
    let p = project();
    let out = grep(p.path(), json!({"pattern": "Helo"})).await;
    assert_eq!(
        out.as_deref(),
        Ok("Found 5 files\nsrc/greeting.py\nREADME.md\nsrc/util.py\n.hidden/conf.py\n.env")
    );
}

#[tokio::test]
async fn content_mode_shows_path_line_text_sorted_by_path() {
    let p = project();
    let out = grep(
        p.path(),
        json!({"pattern": "Helo", "output_mode": "content"}),
    )
    .await;
    assert_eq!(
        out.as_deref(),
        Ok(".env:1:GREETING=Helo\n\
            .hidden/conf.py:1:HELO = 'Helo'\n\
            README.md:1:Say Helo.\n\
            src/greeting.py:2:    print('Helo, world')\n\
            src/util.py:1:# Helo helper\n\
            src/util.py:3:Helo again")
    );
    let out = grep(
        p.path(),
        json!({"pattern": "Helo", "output_mode": "content", "-n": false, "path": "src"}),
    )
    .await;
    assert_eq!(
        out.as_deref(),
        Ok("src/greeting.py:    print('Helo, world')\nsrc/util.py:# Helo helper\nsrc/util.py:Helo again")
    );
}

#[tokio::test]
async fn count_mode_lists_matching_lines_and_a_total_that_agrees() {
    let p = project();
    let out = grep(p.path(), json!({"pattern": "Helo", "output_mode": "count"})).await;
    assert_eq!(
        out.as_deref(),
        Ok(
            ".env:1\n.hidden/conf.py:1\nREADME.md:1\nsrc/greeting.py:1\nsrc/util.py:2\n\n\
            Found 6 matching lines across 5 files."
        )
    );
}

#[tokio::test]
async fn context_lines_use_dashes_and_groups_are_separated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = dir.path();
    put(r, "a.txt", b"m1\nx\nx\nx\nm2\n", 1);
    put(r, "b.txt", b"y\nm3\n", 2);
    let out = grep(
        r,
        json!({"pattern": "^m", "output_mode": "content", "-C": 1}),
    )
    .await;
    assert_eq!(
        out.as_deref(),
        Ok("a.txt:1:m1\na.txt-2-x\n--\na.txt-4-x\na.txt:5:m2\n--\nb.txt-1-y\nb.txt:2:m3")
    );
    let out = grep(
        r,
        json!({"pattern": "^m", "output_mode": "content", "-A": 1, "-B": 0, "path": "a.txt"}),
    )
    .await;
    assert_eq!(out.as_deref(), Ok("a.txt:1:m1\na.txt-2-x\n--\na.txt:5:m2"));
}

#[tokio::test]
async fn head_limit_and_offset_page_and_say_how_to_see_more() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = dir.path();
    put(r, "a.txt", b"m1\nm2\nm3\nm4\nm5\n", 1);
    let page1 = grep(
        r,
        json!({"pattern": "m", "output_mode": "content", "head_limit": 2}),
    )
    .await;
    assert_eq!(
        page1.as_deref(),
        Ok("a.txt:1:m1\na.txt:2:m2\n\n[Showing lines 1-2 of 5. Pass offset: 2 to see more.]")
    );
    let page2 = grep(
        r,
        json!({"pattern": "m", "output_mode": "content", "head_limit": 2, "offset": 2}),
    )
    .await;
    assert_eq!(
        page2.as_deref(),
        Ok("a.txt:3:m3\na.txt:4:m4\n\n[Showing lines 3-4 of 5. Pass offset: 4 to see more.]")
    );
    let last = grep(
        r,
        json!({"pattern": "m", "output_mode": "content", "head_limit": 2, "offset": 4}),
    )
    .await;
    assert_eq!(
        last.as_deref(),
        Ok("a.txt:5:m5\n\n[Showing lines 5-5 of 5; there are no more.]")
    );
    let past = grep(
        r,
        json!({"pattern": "m", "output_mode": "content", "offset": 9}),
    )
    .await;
    assert_eq!(
        past.as_deref(),
        Ok("No lines at offset 9: the search found 5 lines. Use a smaller offset.")
    );

    let p = project();
    let files = grep(
        p.path(),
        json!({"pattern": "Helo", "head_limit": 2, "offset": 1}),
    )
    .await;
    assert_eq!(
        files.as_deref(),
        Ok("Found 5 files\nREADME.md\nsrc/util.py\n\n[Showing files 2-3 of 5. Pass offset: 3 to see more.]")
    );
}

#[tokio::test]
async fn filters_type_glob_and_case() {
    let p = project();
    let r = p.path();
    let typed = grep(r, json!({"pattern": "Helo", "type": "py"})).await;
    assert_eq!(
        typed.as_deref(),
        Ok("Found 3 files\nsrc/greeting.py\nsrc/util.py\n.hidden/conf.py")
    );
    let globbed = grep(r, json!({"pattern": "Helo", "glob": "*.md"})).await;
    assert_eq!(globbed.as_deref(), Ok("Found 1 file\nREADME.md"));
    let anchored = grep(r, json!({"pattern": "Helo", "glob": "src/**"})).await;
    assert_eq!(
        anchored.as_deref(),
        Ok("Found 2 files\nsrc/greeting.py\nsrc/util.py")
    );
    let several = grep(r, json!({"pattern": "Helo", "glob": "*.md, .env"})).await;
    assert_eq!(several.as_deref(), Ok("Found 2 files\nREADME.md\n.env"));
    let negated = grep(r, json!({"pattern": "Helo", "glob": "!*.py"})).await;
    assert_eq!(negated.as_deref(), Ok("Found 2 files\nREADME.md\n.env"));
    let sensitive = grep(r, json!({"pattern": "helo"})).await;
    assert!(
        sensitive
            .as_deref()
            .is_ok_and(|s| s.starts_with("No matches for \"helo\"")),
        "{sensitive:?}"
    );
    let insensitive = grep(
        r,
        json!({"pattern": "helo", "-i": true, "output_mode": "count"}),
    )
    .await;
    assert_eq!(
        insensitive.as_deref(),
        Ok(
            ".env:1\n.hidden/conf.py:1\nREADME.md:1\nsrc/greeting.py:1\nsrc/util.py:2\n\n\
            Found 6 matching lines across 5 files."
        )
    );
}

#[tokio::test]
async fn nothing_found_names_the_active_filters() {
    let p = project();
    let out = grep(
        p.path(),
        json!({"pattern": "zzz", "path": "src", "glob": "*.py", "type": "py", "-i": true, "multiline": true}),
    )
    .await;
    assert_eq!(
        out.as_deref(),
        Ok("No matches for \"zzz\" in src (filters: glob \"*.py\", type \"py\", case-insensitive (-i), multiline).")
    );
    let plain = grep(p.path(), json!({"pattern": "zzz"})).await;
    assert_eq!(
        plain.as_deref(),
        Ok("No matches for \"zzz\" in the project root. Some files there are ignored by the project's ignore files \
            (.gitignore, .ignore or .rgignore) and were not searched; to search an ignored folder, pass it as path.")
    );
}

/// A small model copied the example pattern of the old no-match
/// message 6–7 times, in a project that ignores nothing. Nothing found says
/// so, names the ignore files only when they left something out, and
/// carries no pattern to copy.
#[tokio::test]
async fn nothing_found_names_ignore_files_only_when_they_left_something_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = dir.path();
    put(r, "src/a.py", b"x = 1\n", 1);
    put(r, "build/out.js", b"y = 2\n", 1);
    assert_eq!(
        glob(r, json!({"pattern": "**/*.ts"})).await.as_deref(),
        Ok("No files found matching \"**/*.ts\" in the project root.")
    );
    assert_eq!(
        grep(r, json!({"pattern": "zzz"})).await.as_deref(),
        Ok("No matches for \"zzz\" in the project root.")
    );
    // Ignoring files that do not match the pattern is no cause either.
    put(r, ".gitignore", b"build/\n", 1);
    assert_eq!(
        glob(r, json!({"pattern": "**/*.ts"})).await.as_deref(),
        Ok("No files found matching \"**/*.ts\" in the project root.")
    );
    let ignored = glob(r, json!({"pattern": "**/*.js"})).await.expect("glob");
    assert_eq!(
        ignored,
        "No files found matching \"**/*.js\" in the project root. Files that match are ignored by the project's \
         ignore files (.gitignore, .ignore or .rgignore), and Glob skips ignored files: pass their folder as path to list them."
    );
    assert!(!ignored.contains("e.g."), "{ignored}");
}

#[tokio::test]
async fn bad_regex_is_an_error_showing_the_regex_problem() {
    let p = project();
    let err = grep(p.path(), json!({"pattern": "foo("}))
        .await
        .expect_err("bad regex must fail");
    assert!(
        err.starts_with("Invalid regex pattern \"foo(\":\n"),
        "{err}"
    );
    assert!(err.contains("unclosed group"), "{err}");
    assert!(!err.contains("No matches"), "{err}");
}

#[tokio::test]
async fn newline_without_multiline_suggests_multiline() {
    let p = project();
    for pattern in ["greet\\(\\):\\n", "greet():\n"] {
        let err = grep(p.path(), json!({"pattern": pattern}))
            .await
            .expect_err("needs multiline");
        assert_eq!(
            err,
            format!(
                "The pattern \"{pattern}\" contains a line break (\\n), but without multiline a match never spans lines. \
                 Set multiline: true to search across lines, or remove the \\n from the pattern."
            )
        );
    }
}

#[tokio::test]
async fn multiline_matches_span_lines() {
    let p = project();
    let out = grep(
        p.path(),
        json!({"pattern": "greet\\(\\):\\n\\s+print", "multiline": true, "output_mode": "content"}),
    )
    .await;
    assert_eq!(
        out.as_deref(),
        Ok("src/greeting.py:1:def greet():\nsrc/greeting.py:2:    print('Helo, world')")
    );
    let count = grep(
        p.path(),
        json!({"pattern": "def.*return", "multiline": true, "output_mode": "count"}),
    )
    .await;
    assert_eq!(
        count.as_deref(),
        Ok("src/greeting.py:3\n\nFound 3 matching lines across 1 file.")
    );
}

#[tokio::test]
async fn explicit_paths_into_ignored_or_hidden_places_are_searched() {
    let p = project();
    let r = p.path();
    assert_eq!(
        grep(r, json!({"pattern": "Helo", "path": "ignored"}))
            .await
            .as_deref(),
        Ok("Found 1 file\nignored/secret.py")
    );
    assert_eq!(
        grep(r, json!({"pattern": "Helo", "path": "debug.log"}))
            .await
            .as_deref(),
        Ok("Found 1 file\ndebug.log")
    );
    let abs = r.join(".hidden").display().to_string();
    assert_eq!(
        grep(r, json!({"pattern": "Helo", "path": abs}))
            .await
            .as_deref(),
        Ok("Found 1 file\n.hidden/conf.py")
    );
}

#[tokio::test]
async fn vcs_folders_are_never_searched_and_gitignore_applies_in_a_repo() {
    let p = project();
    let r = p.path();
    put(r, ".git/HEAD", b"ref: refs/heads/main Helo\n", 700);
    put(r, ".git/info/exclude", b"README.md\n", 700);
    put(r, ".hg/store", b"Helo\n", 700);
    put(r, ".svn/entries", b"Helo\n", 700);
    put(r, ".jj/repo", b"Helo\n", 700);
    put(r, "sub/.git/config", b"Helo\n", 700);
    let out = grep(r, json!({"pattern": "Helo"})).await;
    assert_eq!(
        out.as_deref(),
        Ok("Found 4 files\nsrc/greeting.py\nsrc/util.py\n.hidden/conf.py\n.env")
    );
}

#[tokio::test]
async fn binary_files_are_skipped() {
    let p = project();
    let out = grep(p.path(), json!({"pattern": "binary"})).await;
    assert!(
        out.as_deref()
            .is_ok_and(|s| s.starts_with("No matches for \"binary\"")),
        "{out:?}"
    );
}

#[tokio::test]
async fn crlf_lines_match_at_end_and_show_without_cr() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "w.txt", b"end here\r\nnext\r\n", 1);
    let out = grep(
        dir.path(),
        json!({"pattern": "here$", "output_mode": "content"}),
    )
    .await;
    assert_eq!(out.as_deref(), Ok("w.txt:1:end here"));
}

#[tokio::test]
async fn long_lines_are_cut_around_the_match() {
    let dir = tempfile::tempdir().expect("tempdir");
    let line = format!("{}needle{}\n", "a".repeat(1500), "b".repeat(1500));
    put(dir.path(), "min.js", line.as_bytes(), 1);
    let out = grep(
        dir.path(),
        json!({"pattern": "needle", "output_mode": "content"}),
    )
    .await
    .expect("ok");
    let expected = format!(
        "min.js:1:{}needle{} [… line cut: chars 1401-1900 of 3006 shown]",
        "a".repeat(100),
        "b".repeat(394)
    );
    assert_eq!(out, expected);
}

#[tokio::test]
async fn big_results_are_cut_at_20000_chars_and_can_be_paged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let body: String = (1..=5000)
        .map(|i| format!("match line {i:05} with some padding text\n"))
        .collect();
    put(dir.path(), "big.txt", body.as_bytes(), 1);
    let out = grep(
        dir.path(),
        json!({"pattern": "match", "output_mode": "content"}),
    )
    .await
    .expect("ok");
    assert!(
        out.chars().count() <= 20_000,
        "{} chars",
        out.chars().count()
    );
    let shown = out.lines().filter(|l| l.starts_with("big.txt:")).count();
    assert!(shown > 100, "{shown}");
    assert!(
        out.ends_with(&format!(
            "\n\n[Output cut at 20000 characters: showing lines 1-{shown} of 5000. Pass offset: {shown} to see more, \
             or narrow the search with path, glob or type.]"
        )),
        "{}",
        &out[out.len() - 300..]
    );
    let next = grep(
        dir.path(),
        json!({"pattern": "match", "output_mode": "content", "offset": shown, "head_limit": 1}),
    )
    .await
    .expect("ok");
    assert!(
        next.starts_with(&format!(
            "big.txt:{}:match line {:05} ",
            shown + 1,
            shown + 1
        )),
        "{next}"
    );
}

#[tokio::test]
async fn missing_path_unknown_type_and_bad_glob_are_clear_errors() {
    let p = project();
    let r = p.path();
    let err = grep(r, json!({"pattern": "x", "path": "nope"}))
        .await
        .expect_err("missing path");
    assert_eq!(
        err,
        GREP_PATH_NOT_FOUND.replace("{path}", &r.join("nope").display().to_string())
    );
    let err = grep(r, json!({"pattern": "x", "type": "klingon"}))
        .await
        .expect_err("unknown type");
    assert!(
        err.starts_with("Unknown file type \"klingon\". type takes ripgrep's type names, for example: rust, py, js, ts, go,"),
        "{err}"
    );
    let err = grep(r, json!({"pattern": "x", "glob": "*.{rs"}))
        .await
        .expect_err("bad glob");
    assert!(err.starts_with("Invalid glob \"*.{rs\": "), "{err}");
    let err = grep(r, json!({"pattern": "x", "colour": true}))
        .await
        .expect_err("unknown field");
    assert!(err.contains("unknown field `colour`"), "{err}");
}

#[tokio::test]
async fn a_cancelled_turn_stops_the_search() {
    let p = project();
    let c = ctx(p.path());
    c.cancel.cancel();
    let out = common::run_tool(Arc::new(GrepTool), &c, &json!({"pattern": "Helo"})).await;
    assert_eq!(
        out,
        Err("The search was cancelled because the user interrupted the turn.".to_string())
    );
}

#[tokio::test]
async fn grep_is_read_only_with_the_search_dir_as_target() {
    let p = project();
    let c = ctx(p.path());
    let tool: Arc<dyn Tool> = Arc::new(GrepTool);
    let call = tool
        .clone()
        .prepare(&json!({"pattern": "Helo", "path": "src"}), &c.root)
        .expect("prepare");
    assert!(tool.is_read_only(&call));
    assert!(tool.is_concurrency_safe(&call));
    assert_eq!(tool.target_path(&call), Some(p.path().join("src")));
    assert_eq!(tool.describe(&call, &c.root), "\"Helo\" in src");
    assert_eq!(
        call.input_json["path"],
        json!(p.path().join("src").display().to_string())
    );
    let outside = tool
        .clone()
        .prepare(&json!({"pattern": "x", "path": "/etc"}), &c.root)
        .expect("prepare");
    assert_eq!(tool.target_path(&outside), Some(PathBuf::from("/etc")));
}

// ---------------------------------------------------------------- Glob

#[tokio::test]
async fn glob_lists_files_newest_first_and_honours_gitignore() {
    let p = project();
    let out = glob(p.path(), json!({"pattern": "**/*.py"})).await;
    assert_eq!(
        out.as_deref(),
        Ok("src/greeting.py\nsrc/util.py\n.hidden/conf.py")
    );
    let top = glob(p.path(), json!({"pattern": "*.md"})).await;
    assert_eq!(top.as_deref(), Ok("README.md"));
    let in_src = glob(p.path(), json!({"pattern": "*.py", "path": "src"})).await;
    assert_eq!(in_src.as_deref(), Ok("src/greeting.py\nsrc/util.py"));
}

#[tokio::test]
async fn glob_supports_braces_classes_and_hidden_names() {
    let p = project();
    let r = p.path();
    assert_eq!(
        glob(r, json!({"pattern": "src/*.{py,txt}"}))
            .await
            .as_deref(),
        Ok("src/greeting.py\nsrc/util.py\nsrc/notes.txt")
    );
    assert_eq!(
        glob(r, json!({"pattern": "src/[gn]*"})).await.as_deref(),
        Ok("src/greeting.py\nsrc/notes.txt")
    );
    assert_eq!(
        glob(r, json!({"pattern": ".hidden/**"})).await.as_deref(),
        Ok(".hidden/conf.py")
    );
    assert_eq!(
        glob(r, json!({"pattern": "**/.env"})).await.as_deref(),
        Ok(".env")
    );
    assert_eq!(
        glob(r, json!({"pattern": "ignored/**"})).await.as_deref(),
        Ok("ignored/secret.py")
    );
    assert_eq!(
        glob(r, json!({"pattern": "./README.md"})).await.as_deref(),
        Ok("README.md")
    );
}

#[tokio::test]
async fn glob_lists_files_not_dirs_and_never_vcs_folders() {
    let p = project();
    let r = p.path();
    put(r, ".git/HEAD", b"ref\n", 700);
    let out = glob(r, json!({"pattern": "**/*"})).await.expect("ok");
    assert_eq!(
        out,
        "bin.dat\nsrc/greeting.py\nREADME.md\nsrc/util.py\nsrc/notes.txt\n.hidden/conf.py\n.env\n.gitignore"
    );
}

#[tokio::test]
async fn glob_caps_at_100_newest_with_a_note() {
    let dir = tempfile::tempdir().expect("tempdir");
    for i in 0..105 {
        put(dir.path(), &format!("many/f{i:03}.txt"), b"x", i);
    }
    let out = glob(dir.path(), json!({"pattern": "many/*.txt"}))
        .await
        .expect("ok");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "many/f104.txt");
    assert_eq!(lines[99], "many/f005.txt");
    assert_eq!(
        &lines[100..],
        &[
            "",
            "(Showing the 100 most recently modified of 105 matching files. Use a more specific pattern or path to see the others.)"
        ]
    );
}

#[tokio::test]
async fn glob_errors_and_empty_results() {
    let p = project();
    let r = p.path();
    let none = glob(r, json!({"pattern": "**/*.log"})).await;
    assert_eq!(
        none.as_deref(),
        Ok("No files found matching \"**/*.log\" in the project root. Files that match are ignored by the project's \
            ignore files (.gitignore, .ignore or .rgignore), and Glob skips ignored files: pass their folder as path to list them.")
    );
    let file = r.join("README.md").display().to_string();
    let err = glob(r, json!({"pattern": "*", "path": "README.md"}))
        .await
        .expect_err("not a dir");
    assert_eq!(err, GLOB_NOT_A_DIRECTORY.replace("{path}", &file));
    let missing = r.join("nope").display().to_string();
    let err = glob(r, json!({"pattern": "*", "path": "nope"}))
        .await
        .expect_err("missing");
    assert_eq!(err, GLOB_PATH_NOT_FOUND.replace("{path}", &missing));
    let err = glob(r, json!({"pattern": "src/[a"}))
        .await
        .expect_err("bad pattern");
    assert!(
        err.starts_with("Invalid glob pattern \"src/[a\": unclosed character class"),
        "{err}"
    );
}

#[tokio::test]
async fn glob_is_read_only_and_describes_itself() {
    let p = project();
    let c = ctx(p.path());
    let tool: Arc<dyn Tool> = Arc::new(GlobTool);
    let call = tool
        .clone()
        .prepare(&json!({"pattern": "**/*.rs"}), &c.root)
        .expect("prepare");
    assert!(tool.is_read_only(&call) && tool.is_concurrency_safe(&call));
    assert_eq!(tool.target_path(&call), Some(p.path().to_path_buf()));
    assert_eq!(tool.describe(&call, &c.root), "\"**/*.rs\"");
}

#[tokio::test]
async fn explicit_symlinked_file_or_dir_is_searched() {
    let p = project();
    let r = p.path();
    std::os::unix::fs::symlink(r.join("src/util.py"), r.join("link.py")).expect("symlink");
    std::os::unix::fs::symlink(r.join("src"), r.join("srclink")).expect("symlink");
    let file = grep(
        r,
        json!({"pattern": "again", "path": "link.py", "output_mode": "content"}),
    )
    .await;
    assert_eq!(file.as_deref(), Ok("link.py:3:Helo again"));
    let dir = grep(
        r,
        json!({"pattern": "again", "path": "srclink", "output_mode": "content"}),
    )
    .await;
    assert_eq!(dir.as_deref(), Ok("srclink/util.py:3:Helo again"));
    // Links below the search root are not followed (ripgrep's default).
    let walk = grep(r, json!({"pattern": "again"})).await;
    assert_eq!(walk.as_deref(), Ok("Found 1 file\nsrc/util.py"));
}
