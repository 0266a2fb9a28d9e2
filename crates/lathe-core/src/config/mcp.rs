//! Which MCP servers to start: `setup{ mcp_servers = { name = { command,
//! args, env } | { type = "http", url, headers } } }` and the project's
//! `.mcp.json` (Claude Code's project file: `{ "mcpServers": { name:
//! { command, args, env } | { "type": "http", "url", "headers" } } }`).
//! A bad entry costs only itself: it becomes a problem for checkhealth
//! ([`MCP_SERVER_INVALID`]) and the other servers start.
//! `:help lathe-setup.mcp_servers`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::text::fill;

/// User-facing (checkhealth): `.mcp.json` could not be read. `{path}`,
/// `{error}`.
pub const MCP_JSON_INVALID: &str = "{path} is not valid: {error}; its MCP servers are not started";

/// User-facing (checkhealth): one server entry of `.mcp.json` or of
/// `setup{ mcp_servers }` could not be used; the other servers still
/// start. `{name}`, `{path}` (the file, or `setup{ mcp_servers }`),
/// `{error}`.
pub const MCP_SERVER_INVALID: &str =
    "MCP server {name} in {path} is not valid: {error}; it is not started (the other servers are)";

/// Where `setup()`'s servers come from, for [`MCP_SERVER_INVALID`].
pub const SETUP_SOURCE: &str = "setup{ mcp_servers }";

/// What Claude Code's settings files say about the project's `.mcp.json`
/// servers (`mcp::trust` decides with it; `:help lathe-mcp-trust`). A
/// project's settings files count too, as in Claude Code, although the
/// model could write them (writes into `.claude/` always ask).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpTrustSettings {
    /// `enableAllProjectMcpServers: true` in the file that decides it (the
    /// first, in precedence order, that has the key), and that file.
    pub enable_all: Option<PathBuf>,
    /// `enabledMcpjsonServers` of every file: a name, and its file.
    pub enabled: Vec<(String, PathBuf)>,
    /// `disabledMcpjsonServers` of every file: a name, and its file. Beats
    /// the two above, from any file.
    pub disabled: Vec<(String, PathBuf)>,
}

/// How lathe talks to a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// A program lathe starts and talks to over its stdin/stdout.
    Stdio {
        /// The program, found on `$PATH` when it has no `/`.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to lathe's environment for it.
        env: BTreeMap<String, String>,
    },
    /// A streamable HTTP server (MCP 2025-03-26 "Streamable HTTP").
    Http {
        /// Its endpoint, `http://` or `https://`.
        url: String,
        /// Headers sent with every request (e.g. `Authorization`).
        headers: BTreeMap<String, String>,
    },
}

/// One configured MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerConfig {
    /// The server's name (`mcp__<name>__<tool>`); the key of its table.
    pub name: String,
    /// How to reach it.
    pub transport: McpTransport,
    /// How long a tool call may take, in ms (default 120000, a user
    /// tool's default timeout).
    pub timeout_ms: Option<u64>,
}

impl McpServerConfig {
    /// A stdio server running `command args` (tests and callers that
    /// build a configuration by hand).
    pub fn stdio(name: &str, command: &str, args: Vec<String>) -> Self {
        Self {
            name: name.to_string(),
            transport: McpTransport::Stdio {
                command: command.to_string(),
                args,
                env: BTreeMap::new(),
            },
            timeout_ms: None,
        }
    }

    /// A streamable HTTP server at `url`.
    pub fn http(name: &str, url: &str) -> Self {
        Self {
            name: name.to_string(),
            transport: McpTransport::Http {
                url: url.to_string(),
                headers: BTreeMap::new(),
            },
            timeout_ms: None,
        }
    }

    /// Where the server is, for messages: its URL, or its command line.
    pub fn location(&self) -> String {
        match &self.transport {
            McpTransport::Stdio { command, args, .. } => std::iter::once(command.as_str())
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            McpTransport::Http { url, .. } => url.clone(),
        }
    }

    /// The URL of an HTTP server, `None` for stdio.
    pub fn url(&self) -> Option<&str> {
        match &self.transport {
            McpTransport::Http { url, .. } => Some(url),
            McpTransport::Stdio { .. } => None,
        }
    }
}

/// Every key an entry may have, of either kind; which ones fit its kind is
/// checked in [`RawServer::into_config`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Option<Vec<String>>,
    #[serde(default)]
    env: Option<BTreeMap<String, String>>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    headers: Option<BTreeMap<String, String>>,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

impl RawServer {
    /// The server `name`. Errors: the problem, one line naming the key.
    fn into_config(self, name: &str) -> Result<McpServerConfig, String> {
        let kind = self.kind.as_deref().unwrap_or("stdio");
        let transport = match kind {
            "stdio" => {
                if self.url.is_some() || self.headers.is_some() {
                    return Err("url and headers are for type = \"http\" servers; a stdio server has command, args, env".into());
                }
                let command = self.command.unwrap_or_default();
                if command.trim().is_empty() {
                    return Err("command is missing or empty (a stdio server needs the program to run; an HTTP server needs type = \"http\" and url)".into());
                }
                McpTransport::Stdio {
                    command,
                    args: self.args.unwrap_or_default(),
                    env: self.env.unwrap_or_default(),
                }
            }
            "http" | "streamable-http" => {
                if self.command.is_some() || self.args.is_some() || self.env.is_some() {
                    return Err("command, args and env are for stdio servers; an http server has url and headers".into());
                }
                let url = self.url.unwrap_or_default();
                if url.trim().is_empty() {
                    return Err("url is missing (an http server needs url = \"https://…/mcp\")".into());
                }
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(format!("url must start with http:// or https://, got {url:?}"));
                }
                let headers = self.headers.unwrap_or_default();
                for (k, v) in &headers {
                    if reqwest::header::HeaderName::from_bytes(k.as_bytes()).is_err()
                        || reqwest::header::HeaderValue::from_str(v).is_err()
                    {
                        return Err(format!("headers.{k} is not a valid HTTP header"));
                    }
                }
                McpTransport::Http { url, headers }
            }
            "sse" => return Err("type = \"sse\" (the older HTTP+SSE transport) is not supported; use type = \"http\" (streamable HTTP) if the server offers it".into()),
            other => return Err(format!("type must be \"stdio\" or \"http\", got {other:?}")),
        };
        Ok(McpServerConfig {
            name: name.to_string(),
            transport,
            timeout_ms: self.timeout_ms,
        })
    }
}

/// `${VAR}` and `${VAR:-default}` in `text` replaced by the variable's
/// value from `lookup` (Claude Code expands these in `.mcp.json`'s
/// `command`, `args`, `env`, `url` and `headers`; a bare `$VAR` is kept).
/// Errors: the name of a variable that is not set and has no default.
pub fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start..].find('}') else {
            break;
        };
        out.push_str(&rest[..start]);
        let inner = &rest[start + 2..start + len];
        let (var, default) = match inner.split_once(":-") {
            Some((v, d)) => (v, Some(d)),
            None => (inner, None),
        };
        match (lookup(var), default) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => return Err(var.to_string()),
        }
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// [`expand`] over every field Claude Code expands. Errors: the problem,
/// naming the key and the variable.
fn expand_config(
    cfg: &mut McpServerConfig,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<(), String> {
    let one = |key: &str, v: &mut String| -> Result<(), String> {
        *v = expand(v, lookup).map_err(|var| {
            format!("{key} uses ${{{var}}}, which is not set (set it in the environment Neovim starts from, or write ${{{var}:-default}})")
        })?;
        Ok(())
    };
    match &mut cfg.transport {
        McpTransport::Stdio { command, args, env } => {
            one("command", command)?;
            for (i, a) in args.iter_mut().enumerate() {
                one(&format!("args[{i}]"), a)?;
            }
            for (k, v) in env.iter_mut() {
                one(&format!("env.{k}"), v)?;
            }
        }
        McpTransport::Http { url, headers } => {
            one("url", url)?;
            for (k, v) in headers.iter_mut() {
                one(&format!("headers.{k}"), v)?;
            }
        }
    }
    Ok(())
}

/// One entry `spec` named `name`: its configuration, or the problem (one
/// line, naming the key).
fn parse_entry(name: &str, spec: &Value) -> Result<McpServerConfig, String> {
    let mut spec = spec.clone();
    // A Lua `{}` arrives as a list; `env` and `headers` are maps.
    if let Some(m) = spec.as_object_mut() {
        for key in ["env", "headers"] {
            if m.get(key)
                .is_some_and(|e| e.as_array().is_some_and(|a| a.is_empty()))
            {
                m.insert(key.into(), Value::Object(Default::default()));
            }
        }
    }
    let raw: RawServer = serde_path_to_error::deserialize(spec).map_err(|e| {
        let key = e.path().to_string();
        if key == "." {
            e.inner().to_string()
        } else {
            format!("{key}: {}", e.inner())
        }
    })?;
    raw.into_config(name)
}

/// `setup()`'s `mcp_servers` table: each key a server. A bad entry is
/// skipped and named in the problems ([`MCP_SERVER_INVALID`]). Errors:
/// `mcp_servers` is not a table at all.
pub fn from_setup(v: &Value) -> Result<(Vec<McpServerConfig>, Vec<String>), String> {
    let Some(map) = v.as_object() else {
        if v.as_array().is_some_and(|a| a.is_empty()) {
            return Ok((Vec::new(), Vec::new()));
        }
        return Err("setup(): mcp_servers must be a table of servers by name, e.g. { docs = { command = \"docs-mcp\" } }".into());
    };
    let (mut out, mut problems) = (Vec::new(), Vec::new());
    for (name, spec) in map {
        match parse_entry(name, spec) {
            Ok(cfg) => out.push(cfg),
            Err(error) => problems.push(fill(
                MCP_SERVER_INVALID,
                &[("name", name), ("path", SETUP_SOURCE), ("error", &error)],
            )),
        }
    }
    Ok((out, problems))
}

/// The servers of `<root>/.mcp.json` (none when the file is absent), with
/// `${VAR}` / `${VAR:-default}` expanded from lathe's environment
/// ([`expand`]), and the problems to show in checkhealth
/// ([`MCP_SERVER_INVALID`], [`MCP_JSON_INVALID`]). Never fails.
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
    let lookup = |var: &str| std::env::var(var).ok();
    let (mut out, mut problems) = (Vec::new(), Vec::new());
    for (name, spec) in servers {
        let parsed = parse_entry(name, spec).and_then(|mut cfg| {
            expand_config(&mut cfg, &lookup)?;
            Ok(cfg)
        });
        match parsed {
            Ok(cfg) => out.push(cfg),
            Err(error) => problems.push(fill(
                MCP_SERVER_INVALID,
                &[("name", name), ("path", &shown), ("error", &error)],
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
    fn setup_servers_parse_and_a_bad_entry_costs_only_itself() {
        let (s, problems) = from_setup(&json!({
            "docs": { "command": "docs-mcp", "args": ["--stdio"], "env": [] },
            "web": { "type": "http", "url": "https://example.com/mcp", "headers": { "Authorization": "Bearer x" } },
            "x": { "type": "http" },
            "y": { "args": [] },
            "z": { "command": "x", "args": "y" },
        }))
        .unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].name, "docs");
        assert_eq!(s[0].location(), "docs-mcp --stdio");
        assert_eq!(
            s[1].transport,
            McpTransport::Http {
                url: "https://example.com/mcp".into(),
                headers: [("Authorization".to_string(), "Bearer x".to_string())].into()
            }
        );
        assert_eq!(
            problems,
            [
                "MCP server x in setup{ mcp_servers } is not valid: url is missing (an http server needs url = \"https://…/mcp\"); it is not started (the other servers are)",
                "MCP server y in setup{ mcp_servers } is not valid: command is missing or empty (a stdio server needs the program to run; an HTTP server needs type = \"http\" and url); it is not started (the other servers are)",
                "MCP server z in setup{ mcp_servers } is not valid: args: invalid type: string \"y\", expected a sequence; it is not started (the other servers are)",
            ]
        );
        assert!(from_setup(&json!("x"))
            .unwrap_err()
            .starts_with("setup(): mcp_servers must be a table"));
    }

    #[test]
    fn variables_are_expanded_like_claude_code_does() {
        let env = |v: &str| (v == "TOKEN").then(|| "t0k".to_string());
        assert_eq!(expand("Bearer ${TOKEN}", &env).unwrap(), "Bearer t0k");
        assert_eq!(
            expand("${HOST:-localhost}:${TOKEN}/$TOKEN", &env).unwrap(),
            "localhost:t0k/$TOKEN"
        );
        assert_eq!(expand("${NOPE}", &env).unwrap_err(), "NOPE");
        let mut cfg = McpServerConfig::http("web", "https://${HOST:-h}/mcp");
        if let McpTransport::Http { headers, .. } = &mut cfg.transport {
            headers.insert("Authorization".into(), "Bearer ${API_TOKEN}".into());
        }
        assert_eq!(
            expand_config(&mut cfg, &env).unwrap_err(),
            "headers.Authorization uses ${API_TOKEN}, which is not set (set it in the environment Neovim starts from, or write ${API_TOKEN:-default})"
        );
        assert_eq!(cfg.url(), Some("https://h/mcp"));
    }

    #[test]
    fn project_file_gives_stdio_and_http_servers_and_names_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".mcp.json"),
            r#"{ "mcpServers": { "fs": { "command": "fs-mcp", "args": ["."] },
                 "odd": { "command": "odd-mcp", "cwd": "/tmp" },
                 "old": { "type": "sse", "url": "https://example.com/sse" },
                 "web": { "type": "http", "url": "https://example.com/mcp", "headers": { "X-Key": "k" } } } }"#,
        )
        .unwrap();
        let (servers, problems) = from_project(dir.path());
        // A bad entry costs only itself.
        assert_eq!(servers.len(), 2);
        assert_eq!(servers[0].name, "fs");
        assert_eq!(servers[1].url(), Some("https://example.com/mcp"));
        let file = dir.path().join(".mcp.json").display().to_string();
        assert_eq!(
            problems,
            [
                format!("MCP server odd in {file} is not valid: cwd: unknown field `cwd`, expected one of `type`, `command`, `args`, `env`, `url`, `headers`, `timeout_ms`; it is not started (the other servers are)"),
                format!("MCP server old in {file} is not valid: type = \"sse\" (the older HTTP+SSE transport) is not supported; use type = \"http\" (streamable HTTP) if the server offers it; it is not started (the other servers are)"),
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
