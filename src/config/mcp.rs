//! Which MCP servers to start: `setup{ mcp_servers = { name = { command,
//! args, env } } }` and the project's `.mcp.json` (Claude Code's project
//! file: `{ "mcpServers": { name: { command, args, env } } }`).
//! `:help lathe-setup.mcp_servers`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::text::fill;

/// User-facing (checkhealth): an `.mcp.json` server of a kind lathe cannot
/// start. `{name}`, `{kind}`.
pub const KIND_NOT_SUPPORTED: &str =
    "MCP server {name} in .mcp.json is a {kind} server, which lathe does not support yet (only stdio servers: command, args, env); it is not started";

/// User-facing (checkhealth): `.mcp.json` could not be read. `{path}`,
/// `{error}`.
pub const MCP_JSON_INVALID: &str = "{path} is not valid: {error}; its MCP servers are not started";

/// User-facing (checkhealth): one server entry of `.mcp.json` could not be
/// read; the file's other servers still start. `{name}`, `{path}`,
/// `{error}`.
pub const MCP_SERVER_INVALID: &str =
    "MCP server {name} in {path} is not valid: {error}; it is not started (the file's other servers are)";

/// One stdio MCP server: the program lathe starts and talks to over its
/// stdin/stdout.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The server's name (`mcp__<name>__<tool>`); the key of its table.
    #[serde(skip)]
    pub name: String,
    /// The program, found on `$PATH` when it has no `/`.
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables added to lathe's environment for it.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// How long a tool call may take, in ms (default 120000, a user
    /// tool's default timeout).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// `setup()`'s `mcp_servers` table: each key a server. Errors name the
/// key (`mcp_servers.docs.command: missing field`).
pub fn from_setup(v: &Value) -> Result<Vec<McpServerConfig>, String> {
    let Some(map) = v.as_object() else {
        if v.as_array().is_some_and(|a| a.is_empty()) {
            return Ok(Vec::new());
        }
        return Err("setup(): mcp_servers must be a table of servers by name, e.g. { docs = { command = \"docs-mcp\" } }".into());
    };
    let mut out = Vec::new();
    for (name, spec) in map {
        let mut spec = spec.clone();
        // A Lua `{}` arrives as a list; `env` is a map.
        if let Some(m) = spec.as_object_mut() {
            if m.get("env")
                .is_some_and(|e| e.as_array().is_some_and(|a| a.is_empty()))
            {
                m.insert("env".into(), Value::Object(Default::default()));
            }
        }
        let mut cfg: McpServerConfig = serde_path_to_error::deserialize(spec).map_err(|e| {
            let key = e.path().to_string();
            if key == "." {
                format!("setup(): mcp_servers.{name}: {}", e.inner())
            } else {
                format!("setup(): mcp_servers.{name}.{key}: {}", e.inner())
            }
        })?;
        if cfg.command.trim().is_empty() {
            return Err(format!(
                "setup(): mcp_servers.{name}.command must not be empty"
            ));
        }
        cfg.name = name.clone();
        out.push(cfg);
    }
    Ok(out)
}

/// The stdio servers of `<root>/.mcp.json` (none when the file is absent),
/// and the problems to show in checkhealth ([`KIND_NOT_SUPPORTED`],
/// [`MCP_JSON_INVALID`]). Never fails.
pub fn from_project(root: &Path) -> (Vec<McpServerConfig>, Vec<String>) {
    let path = root.join(".mcp.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return (Vec::new(), Vec::new());
    };
    let shown = path.display().to_string();
    let invalid = |error: String| fill(MCP_JSON_INVALID, &[("path", &shown), ("error", &error)]);
    let json: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => return (Vec::new(), vec![invalid(e.to_string())]),
    };
    let Some(servers) = json.get("mcpServers").and_then(Value::as_object) else {
        return (
            Vec::new(),
            vec![invalid("it has no \"mcpServers\" object".into())],
        );
    };
    let (mut out, mut problems) = (Vec::new(), Vec::new());
    for (name, spec) in servers {
        let kind = spec.get("type").and_then(Value::as_str).unwrap_or("stdio");
        if kind != "stdio" {
            problems.push(fill(KIND_NOT_SUPPORTED, &[("name", name), ("kind", kind)]));
            continue;
        }
        let mut spec = spec.clone();
        if let Some(m) = spec.as_object_mut() {
            m.remove("type");
        }
        match serde_path_to_error::deserialize::<_, McpServerConfig>(spec) {
            Ok(mut cfg) => {
                cfg.name = name.clone();
                out.push(cfg);
            }
            Err(e) => problems.push(fill(
                MCP_SERVER_INVALID,
                &[("name", name), ("path", &shown), ("error", &e.to_string())],
            )),
        }
    }
    (out, problems)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn setup_servers_parse_and_errors_name_the_key() {
        let s = from_setup(
            &json!({ "docs": { "command": "docs-mcp", "args": ["--stdio"], "env": [] } }),
        )
        .unwrap();
        assert_eq!(s[0].name, "docs");
        assert_eq!(s[0].args, ["--stdio"]);
        assert_eq!(
            from_setup(&json!({ "docs": { "args": [] } })).unwrap_err(),
            "setup(): mcp_servers.docs: missing field `command`"
        );
        assert_eq!(
            from_setup(&json!({ "docs": { "command": "x", "args": "y" } })).unwrap_err(),
            "setup(): mcp_servers.docs.args: invalid type: string \"y\", expected a sequence"
        );
        assert!(from_setup(&json!("x"))
            .unwrap_err()
            .starts_with("setup(): mcp_servers must be a table"));
    }

    #[test]
    fn project_file_gives_stdio_servers_and_names_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".mcp.json"),
            r#"{ "mcpServers": { "fs": { "command": "fs-mcp", "args": ["."] },
                 "odd": { "command": "odd-mcp", "cwd": "/tmp" },
                 "web": { "type": "http", "url": "https://example.com/mcp" } } }"#,
        )
        .unwrap();
        let (servers, problems) = from_project(dir.path());
        // A bad entry costs only itself.
        assert_eq!(servers.len(), 1);
        assert_eq!(servers[0].name, "fs");
        let file = dir.path().join(".mcp.json").display().to_string();
        assert_eq!(
            problems,
            [
                format!("MCP server odd in {file} is not valid: cwd: unknown field `cwd`, expected one of `command`, `args`, `env`, `timeout_ms`; it is not started (the file's other servers are)"),
                "MCP server web in .mcp.json is a http server, which lathe does not support yet (only stdio servers: command, args, env); it is not started".to_string()
            ]
        );
        std::fs::write(dir.path().join(".mcp.json"), "{").unwrap();
        let (servers, problems) = from_project(dir.path());
        assert!(servers.is_empty());
        assert!(
            problems[0].ends_with("its MCP servers are not started"),
            "{problems:?}"
        );
    }
}
