//! What the model is told: the `tools` array of every request (name,
//! description, `input_schema` of each built-in tool, in order, exactly as
//! serialized into the request body) is pinned by
//! `tests/snapshots/tool_definitions.json`. A change to a tool's description
//! or input struct shows up here as a diff to review; `BLESS=1` rewrites the
//! snapshot from the code.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use lathe_core::config::Config;
use lathe_core::execution::ToolRegistry;
use lathe_core::tools::builtin_tools;
use serde_json::Value;

fn snapshot_path() -> PathBuf {
    lathe_test_support::workspace_root().join("tests/snapshots/tool_definitions.json")
}

/// The `tools` array as the request body carries it, pretty-printed.
fn definitions_json() -> String {
    let config = Config::new(Path::new("/project"));
    let registry = ToolRegistry::new(builtin_tools(&config)).expect("unique names");
    let tools = serde_json::to_value(registry.definitions()).expect("serialize");
    format!(
        "{}\n",
        serde_json::to_string_pretty(&tools).expect("pretty")
    )
}

#[test]
fn tool_definitions_match_the_snapshot() {
    let now = definitions_json();
    let path = snapshot_path();
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&path, &now).expect("bless");
        return;
    }
    let pinned = std::fs::read_to_string(&path).unwrap_or_default();
    pretty_assertions::assert_eq!(
        pinned,
        now,
        "the tools sent to the model changed; review, then run BLESS=1 cargo nextest run --test tool_definitions"
    );
}

/// Every `description` string under `v`, with the JSON path to it.
fn descriptions(v: &Value, at: &str, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                let here = format!("{at}/{k}");
                match child {
                    Value::String(s) if k == "description" => out.push((here, s.clone())),
                    other => descriptions(other, &here, out),
                }
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                descriptions(child, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// The language-server tools are offered only while a server runs: never
/// in this process (no Neovim), so the snapshot above lacks them. With a
/// server counted as running they come last, pinned by
/// `tests/snapshots/lsp_tool_definitions.json` (each test runs in a process
/// of its own under nextest, so the count set here stays here).
fn lsp_definitions_json() -> String {
    lathe_core::editor::lsp::set_servers_running(1);
    let config = Config::new(Path::new("/project"));
    let registry = ToolRegistry::new(builtin_tools(&config)).expect("unique names");
    let all = serde_json::to_value(registry.definitions()).expect("serialize");
    lathe_core::editor::lsp::set_servers_running(0);
    let lsp: Vec<Value> = all
        .as_array()
        .expect("array")
        .iter()
        .filter(|t| t["name"].as_str().is_some_and(|n| n.starts_with("Lsp")))
        .cloned()
        .collect();
    format!("{}\n", serde_json::to_string_pretty(&lsp).expect("pretty"))
}

#[test]
fn lsp_tool_definitions_are_offered_only_while_a_server_runs() {
    let none: Value = serde_json::from_str(&definitions_json()).expect("json");
    assert!(none
        .as_array()
        .expect("array")
        .iter()
        .all(|t| !t["name"].as_str().unwrap_or("").starts_with("Lsp")));
    let now = lsp_definitions_json();
    let names: Vec<String> = serde_json::from_str::<Vec<Value>>(&now)
        .expect("json")
        .iter()
        .map(|t| t["name"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(
        names,
        ["LspDefinition", "LspReferences", "LspHover", "LspSymbols"]
    );
    let path =
        lathe_test_support::workspace_root().join("tests/snapshots/lsp_tool_definitions.json");
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&path, &now).expect("bless");
        return;
    }
    let pinned = std::fs::read_to_string(&path).unwrap_or_default();
    pretty_assertions::assert_eq!(
        pinned,
        now,
        "the LSP tools sent to the model changed; review, then run BLESS=1 cargo nextest run --test tool_definitions"
    );
}

#[test]
fn field_descriptions_have_no_line_break_inside_a_sentence() {
    let mut tools: Value = serde_json::from_str(&definitions_json()).expect("json");
    let lsp: Value = serde_json::from_str(&lsp_definitions_json()).expect("json");
    if let (Some(all), Some(more)) = (tools.as_array_mut(), lsp.as_array()) {
        all.extend(more.iter().cloned());
    }
    let mut found = Vec::new();
    for tool in tools.as_array().expect("array") {
        descriptions(
            &tool["input_schema"],
            tool["name"].as_str().expect("name"),
            &mut found,
        );
    }
    assert!(!found.is_empty());
    for (at, text) in found {
        assert!(
            !text.contains('\n'),
            "{at}: a field description reads as one paragraph, got {text:?}"
        );
    }
}
