//! Scenario folders for Read, Edit and Write: every folder
//! `tests/fixtures/<tool>/NNN_name/` is one case, so a new case is a new folder.
//!
//! A folder holds:
//! - `before/` — the project tree before the call (symlinks stay symlinks);
//!   missing means an empty project.
//! - `call.json` — `{"tool": "Edit", "input": {...}}`, plus optional
//!   `"setup": [{"tool", "input"}]` calls that must succeed first (e.g. a Read),
//!   `"external_writes": {"path": "text"}` applied after setup (a user or
//!   another program changing files), `"generate": {"path": {"repeat": "x",
//!   "times": N}}` for big files, and `"home": "dir"` to set `$HOME` to that
//!   directory of the project. `{root}` in any string is the project root.
//! - then exactly what must happen: `error.txt` (the call fails with exactly
//!   this message and the tree is byte-identical to before the call),
//!   `output.txt` (the call succeeds with exactly this text), and/or `after/`
//!   (the tree afterwards, byte for byte, symlinks included). Without `after/`
//!   the tree must be unchanged.
//!
//! The call runs the same steps as the pipeline: schema check with
//! `jsonschema` against the tool's own schema, prepare (normalize),
//! `validate_input`, `permission_preview`, `call`. `BLESS=1` rewrites
//! `error.txt` / `output.txt` from the actual results (review the diff!).

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lathe_core::editor::DiskEditor;
use lathe_core::tools::ToolContext;
use serde_json::Value;

#[derive(Debug, PartialEq, Eq)]
enum Entry {
    File(Vec<u8>),
    Link(PathBuf),
}

fn snapshot(root: &Path) -> BTreeMap<PathBuf, Entry> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Entry>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for e in entries {
            let path = e.expect("dir entry").path();
            let rel = path.strip_prefix(root).expect("inside root").to_path_buf();
            let meta = fs::symlink_metadata(&path).expect("lstat");
            if meta.file_type().is_symlink() {
                out.insert(rel, Entry::Link(fs::read_link(&path).expect("readlink")));
            } else if meta.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(rel, Entry::File(fs::read(&path).expect("read")));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    let Ok(entries) = fs::read_dir(from) else {
        return;
    };
    for e in entries {
        let src = e.expect("entry").path();
        let dst = to.join(src.file_name().expect("name"));
        let meta = fs::symlink_metadata(&src).expect("lstat");
        if meta.file_type().is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(&src).expect("readlink"), &dst)
                .expect("symlink");
        } else if meta.is_dir() {
            copy_tree(&src, &dst);
        } else {
            fs::copy(&src, &dst).expect("copy");
        }
    }
}

fn substitute(v: &Value, root: &str) -> Value {
    match v {
        Value::String(s) => Value::String(s.replace("{root}", root)),
        Value::Array(a) => Value::Array(a.iter().map(|x| substitute(x, root)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), substitute(x, root)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Runs one call like the pipeline does; `Err` carries the model-facing text.
async fn run_call(ctx: &ToolContext, tool_name: &str, input: &Value) -> Result<String, String> {
    let tool = common::builtin(tool_name);
    let schema = tool.input_schema();
    let validator = jsonschema::validator_for(&schema).expect("tool schema compiles");
    let problems: Vec<String> = validator
        .iter_errors(input)
        .map(|e| e.to_string())
        .collect();
    assert!(
        problems.is_empty(),
        "call input does not match the {tool_name} schema: {problems:?}"
    );
    let call = tool.prepare(input, &ctx.root).map_err(|e| e.message)?;
    let planned = call.validate(ctx).await.map_err(|e| e.message)?;
    let preview = planned.preview(&ctx.root);
    assert!(
        preview.title.starts_with(tool_name),
        "preview title {:?}",
        preview.title
    );
    planned
        .run(ctx)
        .await
        .map(|o| o.content.as_text())
        .map_err(|e| e.message)
}

fn read_expected(path: &Path, root: &str) -> Option<String> {
    let s = fs::read_to_string(path).ok()?;
    let s = s.strip_suffix('\n').unwrap_or(&s);
    Some(s.replace("{root}", root))
}

async fn run_case(case: &Path) -> Result<(), String> {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().canonicalize().expect("canonical root");
    let root_s = root.display().to_string();
    copy_tree(&case.join("before"), &root);
    let spec: Value =
        serde_json::from_str(&fs::read_to_string(case.join("call.json")).expect("call.json"))
            .map_err(|e| format!("bad call.json: {e}"))?;
    let spec = substitute(&spec, &root_s);
    if let Some(gen) = spec.get("generate").and_then(Value::as_object) {
        for (rel, g) in gen {
            let unit = g["repeat"].as_str().expect("repeat");
            let times = g["times"].as_u64().expect("times") as usize;
            fs::write(root.join(rel), unit.repeat(times)).expect("generate");
        }
    }
    if let Some(home) = spec.get("home").and_then(Value::as_str) {
        // Only this test function changes HOME, and it runs the cases one by one.
        std::env::set_var("HOME", root.join(home));
    }
    let ctx = common::tool_ctx(&root, Arc::new(DiskEditor::new()));
    for step in spec
        .get("setup")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = step["tool"].as_str().expect("setup tool");
        run_call(&ctx, name, &step["input"])
            .await
            .map_err(|e| format!("setup {name} failed: {e}"))?;
    }
    if let Some(writes) = spec.get("external_writes").and_then(Value::as_object) {
        // Let the mtime move even on coarse clocks.
        std::thread::sleep(std::time::Duration::from_millis(20));
        for (rel, text) in writes {
            fs::write(root.join(rel), text.as_str().expect("text")).expect("external write");
        }
    }
    let before_call = snapshot(&root);
    let result = run_call(&ctx, spec["tool"].as_str().expect("tool"), &spec["input"]).await;
    let bless = std::env::var_os("BLESS").is_some();
    let mut problems = Vec::new();

    let error_file = case.join("error.txt");
    let output_file = case.join("output.txt");
    match (&result, error_file.exists()) {
        (Err(msg), true) => {
            if bless {
                fs::write(&error_file, format!("{}\n", msg.replace(&root_s, "{root}")))
                    .expect("bless");
            } else if Some(msg.clone()) != read_expected(&error_file, &root_s) {
                problems.push(format!(
                    "error text differs:\n  got:  {msg:?}\n  want: {:?}",
                    read_expected(&error_file, &root_s)
                ));
            }
            if snapshot(&root) != before_call {
                problems.push("a failed call changed the tree".into());
            }
        }
        (Err(msg), false) => problems.push(format!("unexpected error: {msg}")),
        (Ok(out), true) => problems.push(format!("expected an error, got success: {out}")),
        (Ok(out), false) => {
            if output_file.exists() {
                if bless {
                    fs::write(
                        &output_file,
                        format!("{}\n", out.replace(&root_s, "{root}")),
                    )
                    .expect("bless");
                } else if Some(out.clone()) != read_expected(&output_file, &root_s) {
                    problems.push(format!(
                        "output differs:\n  got:  {out:?}\n  want: {:?}",
                        read_expected(&output_file, &root_s)
                    ));
                }
            }
        }
    }
    let after_dir = case.join("after");
    let after = snapshot(&root);
    let expected_after = if after_dir.is_dir() {
        snapshot(&after_dir)
    } else {
        before_call
    };
    if after != expected_after {
        let changed: Vec<String> = after
            .keys()
            .chain(expected_after.keys())
            .filter(|k| after.get(*k) != expected_after.get(*k))
            .map(|k| {
                format!(
                    "{}: got {:?}, want {:?}",
                    k.display(),
                    after.get(k),
                    expected_after.get(k)
                )
            })
            .collect();
        problems.push(format!("tree differs:\n  {}", changed.join("\n  ")));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

fn cases() -> Vec<PathBuf> {
    let base = lathe_test_support::workspace_root().join("tests/fixtures");
    let mut out = Vec::new();
    for tool in ["read", "edit", "write"] {
        let mut dirs: Vec<PathBuf> = fs::read_dir(base.join(tool))
            .expect("fixture dir")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.join("call.json").exists())
            .collect();
        dirs.sort();
        out.extend(dirs);
    }
    out
}

#[tokio::test]
async fn file_tool_scenarios() {
    let all = cases();
    assert!(
        all.len() >= 30,
        "expected the scenario folders, found {}",
        all.len()
    );
    let mut failures = Vec::new();
    for case in &all {
        if let Err(why) = run_case(case).await {
            failures.push(format!("{}:\n{why}", case.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} scenarios failed:\n\n{}",
        failures.len(),
        all.len(),
        failures.join("\n\n")
    );
}
