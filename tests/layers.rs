//! The layers of docs/architecture.md ("Layers"), checked on the source:
//! a top-level module of `src/` may use only modules of lower layers, so no
//! arrow of the import graph points back up and no two modules import each
//! other; inside each module, submodules import each other without a cycle.
//! (Which files may call Neovim is checked by `make lint`.)

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Bottom to top; a module may use any module of a lower layer. The same
/// list, with what each layer is for, is in docs/architecture.md.
const LAYERS: &[&[&str]] = &[
    &["protocol", "text", "editor", "process", "sandbox", "tls"],
    &["events", "permissions", "hooks"],
    &["config"],
    &["tools", "provider"],
    &["execution", "fuzzing"],
    &["mcp"],
    &["agent"],
    &["nvim"],
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The names of modules declared `#[cfg(test)] mod name;` anywhere: their
/// files are test code.
fn test_module_files(files: &[PathBuf]) -> BTreeSet<PathBuf> {
    let mut tests = BTreeSet::new();
    for f in files {
        let text = fs::read_to_string(f).expect("read");
        let lines: Vec<&str> = text.lines().collect();
        for w in lines.windows(2) {
            if w[0].trim() == "#[cfg(test)]" {
                if let Some(name) = w[1]
                    .trim()
                    .strip_prefix("mod ")
                    .and_then(|r| r.strip_suffix(';'))
                {
                    let dir = match f.file_name().and_then(|n| n.to_str()) {
                        Some("mod.rs") | Some("lib.rs") => f.parent().unwrap().to_path_buf(),
                        _ => f.with_extension(""),
                    };
                    tests.insert(dir.join(format!("{name}.rs")));
                }
            }
        }
    }
    tests
}

/// The file's text up to its first `#[cfg(test)]` (test modules sit at the
/// end of a file by the project's convention).
fn non_test_text(path: &Path) -> String {
    let text = fs::read_to_string(path).expect("read");
    match text.find("#[cfg(test)]") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// The identifiers that follow each `prefix` in `text` (`crate::` → `tools`).
fn names_after<'a>(text: &'a str, prefix: &'a str) -> impl Iterator<Item = String> + 'a {
    text.match_indices(prefix).map(move |(i, _)| {
        text[i + prefix.len()..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    })
}

/// Top-level module → the top-level modules its non-test code names.
fn top_level_graph() -> BTreeMap<String, BTreeSet<String>> {
    let root = src();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let tests = test_module_files(&files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files.iter().filter(|f| !tests.contains(*f)) {
        let rel = f.strip_prefix(&root).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        if module == "lib" {
            continue;
        }
        let used = graph.entry(module.clone()).or_default();
        for other in names_after(&non_test_text(f), "crate::") {
            if other != module && !other.is_empty() {
                used.insert(other);
            }
        }
    }
    graph
}

fn layer_of(module: &str) -> usize {
    LAYERS
        .iter()
        .position(|l| l.contains(&module))
        .unwrap_or_else(|| {
            panic!("src/{module} is in no layer: add it to LAYERS and docs/architecture.md")
        })
}

#[test]
fn every_import_points_down_a_layer() {
    let graph = top_level_graph();
    let mut wrong = Vec::new();
    for (module, used) in &graph {
        for other in used {
            if layer_of(other) >= layer_of(module) {
                wrong.push(format!("{module} -> {other}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports that point sideways or up (see docs/architecture.md, Layers): {wrong:?}"
    );
    // Every layer list entry is a real module, so the list stays true.
    for layer in LAYERS {
        for m in *layer {
            assert!(
                graph.contains_key(*m),
                "LAYERS names src/{m}, which does not exist"
            );
        }
    }
}

/// A cycle in `graph`, if any, as the path that closes it.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_string(), 1);
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            match state.get(next.as_str()) {
                Some(1) => {
                    let start = path.iter().position(|p| p == next).unwrap();
                    let mut cycle = path[start..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(next, graph, state, path) {
                        return Some(c);
                    }
                }
            }
        }
        path.pop();
        state.insert(node.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if !state.contains_key(node) {
            if let Some(c) = visit(node, graph, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// Every child process is forked by `process::spawner`, at the priority of
/// the thread that started the runtime (Neovim's), never from a runtime
/// thread running nicer: no other file calls a command's `.spawn()`.
#[test]
fn only_the_spawner_forks_children() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let tests = test_module_files(&files);
    let spawner = src().join("process").join("spawner.rs");
    let forking: Vec<_> = files
        .iter()
        .filter(|f| **f != spawner && !tests.contains(*f))
        .filter(|f| {
            let flat: String = non_test_text(f).split_whitespace().collect();
            flat.contains(".spawn()")
        })
        .collect();
    assert!(
        forking.is_empty(),
        "fork through process::spawner::spawn: {forking:?}"
    );
}

#[test]
fn no_cycle_between_top_level_modules() {
    assert_eq!(find_cycle(&top_level_graph()), None);
}

#[test]
fn no_cycle_between_the_submodules_of_any_module() {
    let root = src();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let tests = test_module_files(&files);
    for entry in fs::read_dir(&root).expect("read_dir") {
        let dir = entry.expect("entry").path();
        if !dir.is_dir() {
            continue;
        }
        let top = dir.file_name().unwrap().to_string_lossy().to_string();
        // Submodule name → files (a submodule may be a folder of its own).
        let mut subs: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
        for f in files
            .iter()
            .filter(|f| f.starts_with(&dir) && !tests.contains(*f))
        {
            let rel = f.strip_prefix(&dir).unwrap();
            let name = rel
                .components()
                .next()
                .unwrap()
                .as_os_str()
                .to_string_lossy();
            let name = name.trim_end_matches(".rs").to_string();
            if name != "mod" {
                subs.entry(name).or_default().push(f.clone());
            }
        }
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (name, files) in &subs {
            let used = graph.entry(name.clone()).or_default();
            for f in files {
                let text = non_test_text(f);
                let own_parent = f.parent() == Some(dir.as_path());
                let mut names: Vec<String> =
                    names_after(&text, &format!("crate::{top}::")).collect();
                if own_parent {
                    names.extend(names_after(&text, "super::"));
                }
                for other in names {
                    if other != *name && subs.contains_key(&other) {
                        used.insert(other);
                    }
                }
            }
        }
        assert_eq!(find_cycle(&graph), None, "a cycle inside src/{top}");
    }
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.insert("chat".into(), ["state".to_string()].into());
    g.insert("state".into(), ["chat".to_string()].into());
    assert_eq!(
        find_cycle(&g),
        Some(vec!["chat".into(), "state".into(), "chat".into()])
    );
}
