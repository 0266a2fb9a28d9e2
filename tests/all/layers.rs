//! The layers of docs/architecture.md ("Layers"), checked on the source of
//! both crates at every depth: where a module declares layers for its
//! submodules (the tables below), no arrow of the import graph points
//! sideways or up; inside every module at every depth, the submodules import
//! each other without a cycle. That the core never calls Neovim is kept by
//! the compiler (`lathe-core` has no nvim-oxi or mlua to call it with).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// A module's path inside its crate (`["ui", "chat", "view"]`).
type ModPath = Vec<String>;
/// Submodule → the sibling submodules it names.
type Graph = BTreeMap<String, BTreeSet<String>>;
/// A module's layer table: the module, its submodules' layers bottom to top.
type Table = (ModPath, &'static [&'static [&'static str]]);

/// The core's top-level modules, bottom to top; a module may use any module
/// of a lower layer. The same list, with what each layer is for, is in
/// docs/architecture.md.
const CORE_LAYERS: &[&[&str]] = &[
    &["protocol", "text", "editor", "process", "sandbox", "tls"],
    &["events", "permissions", "hooks"],
    &["config", "commands"],
    &["tools", "provider"],
    &["execution", "fuzzing"],
    &["mcp"],
    &["agent"],
];

/// The submodules of the core's `tools`, bottom to top: the helpers every
/// tool may use, the tool contract, the tools, none using another
/// (docs/tools.md).
const TOOLS_LAYERS: &[&[&str]] = &[
    &["support"],
    &["tool"],
    &[
        "bash",
        "diagnostics",
        "edit",
        "glob",
        "grep",
        "lsp",
        "read",
        "user",
        "write",
    ],
];

/// The submodules of the core's `provider`, bottom to top: what both
/// providers share, then the two providers, neither using the other
/// (docs/provider.md).
const PROVIDER_LAYERS: &[&[&str]] = &[
    &["limits", "models", "retry", "sse", "validate", "window"],
    &["assemble", "hints", "idle"],
    &["http", "replay"],
    &["anthropic", "openai"],
];

/// The front end's top-level modules: what the main thread stands on, the
/// editor behind the core's seams, what the user sees, the Lua functions
/// and the composition.
const FRONT_LAYERS: &[&[&str]] = &[&["host"], &["adapters"], &["ui"], &["api"]];

/// Every table: the crate's source folder, the module whose submodules it
/// orders, the layers.
fn tables() -> Vec<(PathBuf, ModPath, &'static [&'static [&'static str]])> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    vec![
        (root.join("crates/lathe-core/src"), vec![], CORE_LAYERS),
        (
            root.join("crates/lathe-core/src"),
            vec!["tools".into()],
            TOOLS_LAYERS,
        ),
        (
            root.join("crates/lathe-core/src"),
            vec!["provider".into()],
            PROVIDER_LAYERS,
        ),
        (root.join("src"), vec![], FRONT_LAYERS),
    ]
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

/// The files of modules declared `#[cfg(test)] mod name;` anywhere: test code.
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
                    tests.insert(dir.join(name).join("mod.rs"));
                }
            }
        }
    }
    tests
}

/// The file's text up to its first `#[cfg(test)]` (test modules sit at the
/// end of a file by the project's convention), without comments.
fn non_test_text(path: &Path) -> String {
    let text = fs::read_to_string(path).expect("read");
    let text = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => &text[..],
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module a file is: `ui/chat/view.rs` → `ui::chat::view`,
/// `ui/chat/mod.rs` → `ui::chat`, `lib.rs` → the crate root.
fn module_of(src: &Path, file: &Path) -> ModPath {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: ModPath = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_string());
    }
    parts
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The paths of one `use` tree starting at `s` (after `crate::` and the
/// like): `a::b`, `a::{b, c::d}`, `{a, b}`; each as its segments.
fn parse_tree(s: &str) -> (Vec<Vec<String>>, usize) {
    let b = s.as_bytes();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && (b[*i] as char).is_whitespace() {
            *i += 1;
        }
    };
    let mut prefix = Vec::new();
    loop {
        skip_ws(&mut i);
        if i < b.len() && b[i] == b'{' {
            i += 1;
            let mut out = Vec::new();
            loop {
                skip_ws(&mut i);
                if i >= b.len() {
                    return (out, i);
                }
                if b[i] == b'}' {
                    i += 1;
                    return (out, i);
                }
                if b[i] == b',' {
                    i += 1;
                    continue;
                }
                let (inner, used) = parse_tree(&s[i..]);
                i += used.max(1);
                for p in inner {
                    let mut full = prefix.clone();
                    full.extend(p);
                    out.push(full);
                }
                // Skip an `as alias` and anything else up to `,` or `}`.
                while i < b.len() && b[i] != b',' && b[i] != b'}' {
                    i += 1;
                }
            }
        }
        let start = i;
        while i < b.len() && is_ident(b[i] as char) {
            i += 1;
        }
        if start == i {
            return (vec![prefix], i);
        }
        prefix.push(s[start..i].to_string());
        if s[i..].starts_with("::") {
            i += 2;
        } else {
            return (vec![prefix], i);
        }
    }
}

/// Every module path the code of `module` names through `crate::`,
/// `self::` or `super::` (resolved to a path from the crate root).
///
/// `self` of `foo.rs` and of `foo/mod.rs` are both `foo`; `super` is
/// `foo`'s parent either way, so the file's name does not matter.
fn references(text: &str, module: &ModPath) -> Vec<ModPath> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    for (i, _) in text.match_indices("::") {
        // The word before `::`, and that it starts a path.
        let mut start = i;
        while start > 0 && is_ident(bytes[start - 1] as char) {
            start -= 1;
        }
        if start > 0 && (bytes[start - 1] == b':' || is_ident(bytes[start - 1] as char)) {
            continue;
        }
        let word = &text[start..i];
        let mut base: ModPath = match word {
            "crate" => vec![],
            "self" => module.clone(),
            "super" => {
                let mut m = module.clone();
                m.pop();
                m
            }
            _ => continue,
        };
        let mut rest = &text[i + 2..];
        while let Some(r) = rest.strip_prefix("super::") {
            base.pop();
            rest = r;
        }
        for p in parse_tree(rest).0 {
            let mut full = base.clone();
            full.extend(p.into_iter().filter(|s| s != "self"));
            out.push(full);
        }
    }
    out
}

/// For every module with submodules (by path), the graph of its submodules.
fn graphs(src: &Path) -> BTreeMap<ModPath, Graph> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let tests = test_module_files(&files);
    let files: Vec<PathBuf> = files.into_iter().filter(|f| !tests.contains(f)).collect();
    let modules: BTreeSet<ModPath> = files.iter().map(|f| module_of(src, f)).collect();
    let mut out: BTreeMap<ModPath, Graph> = BTreeMap::new();
    for m in &modules {
        if let Some((_, parent)) = m.split_last() {
            out.entry(parent.to_vec())
                .or_default()
                .entry(m.last().unwrap().clone())
                .or_default();
        }
    }
    for f in &files {
        let from = module_of(src, f);
        for to in references(&non_test_text(f), &from) {
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common >= from.len() || common >= to.len() {
                continue; // an ancestor or the module itself
            }
            let parent = from[..common].to_vec();
            let (a, b) = (&from[common], &to[common]);
            if modules.contains(&to[..=common]) {
                out.entry(parent)
                    .or_default()
                    .entry(a.clone())
                    .or_default()
                    .insert(b.clone());
            }
        }
    }
    out
}

/// A cycle in `graph`, if any, as the path that closes it.
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &Graph,
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

/// What is wrong with the source under `src`: arrows against `layers`
/// (tables of `(module, layers)`), cycles at any depth.
fn faults(src: &Path, layers: &[(ModPath, &[&[&str]])]) -> Vec<String> {
    let graphs = graphs(src);
    let mut wrong = Vec::new();
    for (module, table) in layers {
        let name = |m: &str| {
            let mut p = module.clone();
            p.push(m.to_string());
            p.join("::")
        };
        let layer_of = |m: &str| table.iter().position(|l| l.contains(&m));
        let graph = graphs.get(module).cloned().unwrap_or_default();
        for sub in graph.keys() {
            if layer_of(sub).is_none() {
                wrong.push(format!("{} is in no layer", name(sub)));
            }
        }
        for l in table.iter() {
            for m in l.iter() {
                if !graph.contains_key(*m) {
                    wrong.push(format!("the layers name {}, which does not exist", name(m)));
                }
            }
        }
        for (a, used) in &graph {
            for b in used {
                if let (Some(la), Some(lb)) = (layer_of(a), layer_of(b)) {
                    if lb >= la {
                        wrong.push(format!("{} -> {} points sideways or up", name(a), name(b)));
                    }
                }
            }
        }
    }
    for (module, graph) in &graphs {
        if let Some(c) = find_cycle(graph) {
            let mut at = module.join("::");
            if at.is_empty() {
                at = "the crate root".into();
            }
            wrong.push(format!("a cycle inside {at}: {}", c.join(" -> ")));
        }
    }
    wrong
}

#[test]
fn every_import_points_down_a_layer_and_no_module_has_a_cycle() {
    let mut wrong = Vec::new();
    let mut by_src: BTreeMap<PathBuf, Vec<Table>> = BTreeMap::new();
    for (src, module, table) in tables() {
        by_src.entry(src).or_default().push((module, table));
    }
    for (src, layers) in by_src {
        for w in faults(&src, &layers) {
            wrong.push(format!("{}: {w}", src.display()));
        }
    }
    assert!(
        wrong.is_empty(),
        "see docs/architecture.md, \"Layers\":\n{}",
        wrong.join("\n")
    );
}

/// A small crate written to a temp folder: `files` as (path, text).
fn planted(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let p = dir.path().join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
    dir
}

#[test]
fn an_upward_arrow_or_a_cycle_planted_at_any_depth_is_found() {
    const DEEP: &[&[&str]] = &[&["low"], &["high"]];
    let base = [
        ("lib.rs", "pub mod a;"),
        ("a/mod.rs", "pub mod b;"),
        ("a/b/mod.rs", "pub mod low; pub mod high;"),
        ("a/b/low.rs", "pub fn f() {}"),
        ("a/b/high/mod.rs", "pub mod x; pub mod y;"),
        ("a/b/high/x.rs", "use super::super::low::f;"),
        ("a/b/high/y.rs", "pub fn g() { super::x::h() }"),
    ];
    let layers = [(vec!["a".to_string(), "b".to_string()], DEEP)];
    let clean = planted(&base);
    assert_eq!(faults(clean.path(), &layers), Vec::<String>::new());

    // An upward arrow, in every spelling of a path.
    for up in [
        "use crate::a::b::high::y;",
        "use crate::a::{b::{high::y}};",
        "use super::high;",
        "fn f() { super::high::y::g() }",
        "use super::{high, low};",
    ] {
        let mut files = base.to_vec();
        files[3] = ("a/b/low.rs", up);
        let dir = planted(&files);
        let found = faults(dir.path(), &layers);
        assert!(
            found.iter().any(|w| w.contains("a::b::low -> a::b::high")),
            "{up}: {found:?}"
        );
    }
    // A cycle three levels down, where no layers are declared.
    let mut files = base.to_vec();
    files[5] = ("a/b/high/x.rs", "use crate::a::b::high::y::g;");
    let dir = planted(&files);
    let found = faults(dir.path(), &layers);
    assert!(
        found
            .iter()
            .any(|w| w.contains("a cycle inside a::b::high: x -> y -> x")),
        "{found:?}"
    );
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let mut g = Graph::new();
    g.insert("chat".into(), ["state".to_string()].into());
    g.insert("state".into(), ["chat".to_string()].into());
    assert_eq!(
        find_cycle(&g),
        Some(vec!["chat".into(), "state".into(), "chat".into()])
    );
}

/// Every child process is forked by `process::spawner`, at the priority of
/// the thread that started the runtime (Neovim's), never from a runtime
/// thread running nicer: no other file calls a command's `.spawn()`.
#[test]
fn only_the_spawner_forks_children() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("crates/lathe-core/src"), &mut files);
    let tests = test_module_files(&files);
    let spawner = root.join("crates/lathe-core/src/process/spawner.rs");
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
