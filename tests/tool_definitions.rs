//! What the model is told: the `tools` array of every request (name,
//! description, `input_schema` of each built-in tool, in order, exactly as
//! serialized into the request body) is pinned by
//! `tests/snapshots/tool_definitions.json`. A change to a tool's description
//! or input struct shows up here as a diff to review; `BLESS=1` rewrites the
//! snapshot from the code.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use lathe::config::Config;
use lathe::execution::ToolRegistry;
use lathe::tools::builtin_tools;
use serde_json::Value;

fn snapshot_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/tool_definitions.json")
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

#[test]
fn field_descriptions_have_no_line_break_inside_a_sentence() {
    let tools: Value = serde_json::from_str(&definitions_json()).expect("json");
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
