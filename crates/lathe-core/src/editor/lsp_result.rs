//! Language-server results (JSON, as `vim.lsp` hands them over) as plain
//! data: `Location`/`LocationLink` lists, `Hover`, `DocumentSymbol` trees
//! and `SymbolInformation` lists (LSP 3.17). Lines become 1-based; `file:`
//! URIs become paths (other schemes are left out). Pure; lenient about
//! shapes (a lone object where a list is expected, an empty object for an
//! empty list, as Lua tables convert).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::lsp::LspSymbol;

/// The elements of `v` as a list: an array's items, nothing for `null` or
/// an empty object (an empty Lua table), else `v` itself.
fn items(v: &Value) -> Vec<&Value> {
    match v {
        Value::Array(a) => a.iter().collect(),
        Value::Null => Vec::new(),
        Value::Object(m) if m.is_empty() => Vec::new(),
        other => vec![other],
    }
}

/// The path of a `file:` URI (percent-decoded); `None` for other schemes.
pub fn uri_to_path(uri: &str) -> Option<PathBuf> {
    let url = reqwest::Url::parse(uri).ok()?;
    if url.scheme() != "file" {
        return None;
    }
    url.to_file_path().ok()
}

/// 1-based line of an LSP `Range`'s start.
fn start_line(range: &Value) -> Option<usize> {
    let l = range.get("start")?.get("line")?.as_u64()?;
    Some(l as usize + 1)
}

/// `(path, 1-based line)` of each `Location` or `LocationLink` in `v` (the
/// link's `targetSelectionRange`, else its `targetRange`).
pub fn locations(v: &Value) -> Vec<(PathBuf, usize)> {
    items(v)
        .into_iter()
        .filter_map(|loc| {
            let (uri, range) = match loc.get("targetUri") {
                Some(uri) => (
                    uri,
                    loc.get("targetSelectionRange")
                        .or_else(|| loc.get("targetRange"))?,
                ),
                None => (loc.get("uri")?, loc.get("range")?),
            };
            Some((uri_to_path(uri.as_str()?)?, start_line(range)?))
        })
        .collect()
}

/// One `MarkedString` (`string` or `{ language, value }`) as markdown.
fn marked(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Object(m) => {
            let value = m.get("value")?.as_str()?;
            match m.get("language").and_then(Value::as_str) {
                Some(lang) => Some(format!("```{lang}\n{value}\n```")),
                None => Some(value.to_string()),
            }
        }
        _ => None,
    }
}

/// A `Hover`'s `contents` (`MarkupContent`, `MarkedString` or a list of
/// them) as markdown, trimmed; `None` when there is none or it is blank.
pub fn hover_text(v: &Value) -> Option<String> {
    let contents = v.get("contents")?;
    let text = match contents {
        Value::Array(a) => a
            .iter()
            .filter_map(marked)
            .filter(|s| !s.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n\n"),
        other => marked(other)?,
    };
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// LSP's `SymbolKind` (1..=26) in words.
pub fn kind_name(kind: u64) -> &'static str {
    const NAMES: [&str; 26] = [
        "file",
        "module",
        "namespace",
        "package",
        "class",
        "method",
        "property",
        "field",
        "constructor",
        "enum",
        "interface",
        "function",
        "variable",
        "constant",
        "string",
        "number",
        "boolean",
        "array",
        "object",
        "key",
        "null",
        "enum member",
        "struct",
        "event",
        "operator",
        "type parameter",
    ];
    (kind as usize)
        .checked_sub(1)
        .and_then(|i| NAMES.get(i))
        .copied()
        .unwrap_or("symbol")
}

/// The symbols of a `documentSymbol` answer (`DocumentSymbol` trees,
/// flattened with names qualified by their parents, `Class.method`) or a
/// `workspace/symbol` one (`SymbolInformation`/`WorkspaceSymbol`, qualified
/// by `containerName`). `doc` is the document's path, for trees (which
/// carry no URI). In the server's order (a tree depth first).
pub fn symbols(v: &Value, doc: Option<&Path>) -> Vec<LspSymbol> {
    let mut out = Vec::new();
    for s in items(v) {
        if s.get("location").is_some() {
            information(s, &mut out);
        } else if let Some(doc) = doc {
            tree(s, doc, None, &mut out);
        }
    }
    out
}

fn tree(s: &Value, doc: &Path, parent: Option<&str>, out: &mut Vec<LspSymbol>) {
    let Some(name) = s.get("name").and_then(Value::as_str) else {
        return;
    };
    let qualified = match parent {
        Some(p) => format!("{p}.{name}"),
        None => name.to_string(),
    };
    let line = s
        .get("selectionRange")
        .or_else(|| s.get("range"))
        .and_then(start_line);
    if let Some(line) = line {
        out.push(LspSymbol {
            name: qualified.clone(),
            kind: kind_name(s.get("kind").and_then(Value::as_u64).unwrap_or(0)),
            path: doc.to_path_buf(),
            line,
        });
    }
    if let Some(children) = s.get("children") {
        for c in items(children) {
            tree(c, doc, Some(&qualified), out);
        }
    }
}

fn information(s: &Value, out: &mut Vec<LspSymbol>) {
    let Some(name) = s.get("name").and_then(Value::as_str) else {
        return;
    };
    let Some(loc) = s.get("location") else { return };
    let Some(path) = loc.get("uri").and_then(Value::as_str).and_then(uri_to_path) else {
        return;
    };
    // A WorkspaceSymbol's location may have no range: line 1.
    let line = loc.get("range").and_then(start_line).unwrap_or(1);
    let name = match s.get("containerName").and_then(Value::as_str) {
        Some(c) if !c.is_empty() && !name.starts_with(&format!("{c}.")) => format!("{c}.{name}"),
        _ => name.to_string(),
    };
    out.push(LspSymbol {
        name,
        kind: kind_name(s.get("kind").and_then(Value::as_u64).unwrap_or(0)),
        path,
        line,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn range(line: u64) -> Value {
        json!({"start": {"line": line, "character": 0}, "end": {"line": line, "character": 3}})
    }

    #[test]
    fn locations_and_links_of_file_uris() {
        let v = json!([
            {"uri": "file:///p/a%20b.py", "range": range(0)},
            {"targetUri": "file:///p/c.py", "targetRange": range(9), "targetSelectionRange": range(4)},
            {"uri": "untitled:x", "range": range(2)},
        ]);
        assert_eq!(
            locations(&v),
            [
                (PathBuf::from("/p/a b.py"), 1),
                (PathBuf::from("/p/c.py"), 5)
            ]
        );
        // A lone Location, an empty table, null.
        let one = json!({"uri": "file:///p/a.py", "range": range(6)});
        assert_eq!(locations(&one), [(PathBuf::from("/p/a.py"), 7)]);
        assert!(locations(&json!({})).is_empty());
        assert!(locations(&Value::Null).is_empty());
    }

    #[test]
    fn hover_contents_of_every_shape() {
        let markup = json!({"contents": {"kind": "markdown", "value": "  def f(x)\n\nDoc.  "}});
        assert_eq!(hover_text(&markup).as_deref(), Some("def f(x)\n\nDoc."));
        let marked_list =
            json!({"contents": [{"language": "python", "value": "def f(x)"}, "", "Doc."]});
        assert_eq!(
            hover_text(&marked_list).as_deref(),
            Some("```python\ndef f(x)\n```\n\nDoc.")
        );
        assert_eq!(hover_text(&json!({"contents": "  "})), None);
        assert_eq!(hover_text(&json!({"contents": []})), None);
        assert_eq!(hover_text(&Value::Null), None);
    }

    #[test]
    fn symbol_trees_are_flattened_with_qualified_names() {
        let v = json!([
            {"name": "Greeter", "kind": 5, "range": range(0), "selectionRange": range(0), "children": [
                {"name": "greet", "kind": 6, "range": range(2), "selectionRange": range(2), "children": {}}
            ]},
            {"name": "helper", "kind": 12, "range": range(5), "selectionRange": range(5)},
        ]);
        let got: Vec<(String, &str, usize)> = symbols(&v, Some(Path::new("/p/a.py")))
            .into_iter()
            .map(|s| (s.name, s.kind, s.line))
            .collect();
        assert_eq!(
            got,
            [
                ("Greeter".to_string(), "class", 1),
                ("Greeter.greet".to_string(), "method", 3),
                ("helper".to_string(), "function", 6)
            ]
        );
    }

    #[test]
    fn symbol_information_uses_its_location_and_container() {
        let v = json!([
            {"name": "greet", "kind": 6, "containerName": "Greeter",
             "location": {"uri": "file:///p/a.py", "range": range(2)}},
            {"name": "x", "kind": 99, "location": {"uri": "file:///p/b.py"}},
        ]);
        let got = symbols(&v, None);
        assert_eq!(got[0].name, "Greeter.greet");
        assert_eq!(got[0].path, PathBuf::from("/p/a.py"));
        assert_eq!((got[0].kind, got[0].line), ("method", 3));
        assert_eq!(
            (got[1].name.as_str(), got[1].kind, got[1].line),
            ("x", "symbol", 1)
        );
        assert_eq!(kind_name(26), "type parameter");
        assert_eq!(kind_name(0), "symbol");
    }
}
