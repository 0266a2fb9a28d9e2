//! An MCP server's tools as lathe user tools: named `mcp__<server>__<tool>`,
//! with the server's `inputSchema`, read-only when the server says
//! `readOnlyHint`, and calls that go to the server through the same gates
//! as every tool.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use super::server::{McpServer, ServerTool};
use super::{
    CALL_INTERRUPTED, CALL_TIMED_OUT, EMPTY_ERROR, HTTP_CALL_FAILED, HTTP_SERVER_UNREACHABLE,
    SERVER_NOT_RUNNING,
};
use crate::protocol::{ContentBlock, ImageSource, ToolResultContent};
use crate::text::fill;
use crate::tools::user::{
    check_name, Classified, Flag, UserTool, UserToolBackend, UserToolSpec,
    DEFAULT_MAX_RESULT_CHARS, DEFAULT_TIMEOUT_MS,
};
use crate::tools::{ToolContext, ToolError, ToolOutput, ToolSource};

/// The name for `tool` of `server` that no name in `taken` has: its
/// [`tool_name`], or, when that is taken (two tools whose names are one
/// once cleaned, such as `files.read` and `files_read`), the same with
/// `_2`, `_3`… (cut to fit the 64 chars).
pub fn free_tool_name(
    server: &str,
    tool: &str,
    taken: &dyn Fn(&str) -> bool,
) -> Result<String, String> {
    let name = tool_name(server, tool)?;
    if !taken(&name) {
        return Ok(name);
    }
    for n in 2..1000 {
        let suffix = format!("_{n}");
        let mut base = name.clone();
        base.truncate(64 - suffix.len());
        let candidate = base + &suffix;
        if !taken(&candidate) {
            return Ok(candidate);
        }
    }
    Err(format!("no free name for {tool:?}"))
}

/// Model-facing: added to the description of a tool offered under another
/// name than its own cleaned one ([`free_tool_name`]). `{tool}` (the
/// server's name for it), `{server}`.
pub const RENAMED_NOTE: &str = "\n\n(This is the tool {tool} of the MCP server {server}; another of its tools has the same name once cleaned, so this one has a number at the end.)";

/// User-facing (`:checkhealth lathe`, `:Lathe tools`): a tool offered
/// under a suffixed name. `{tool}`, `{name}`, `{other}` (the server's
/// tool that has the plain name).
pub const RENAMED: &str =
    "tool {tool} is offered as {name}: {other} has the same name once cleaned";

/// User-facing: a tool whose schema had `anyOf` / `oneOf` / `allOf` at
/// its top level, which the Messages API refuses. `{tool}`.
pub const SCHEMA_FLATTENED: &str = "tool {tool}: its input schema has anyOf, oneOf or allOf at the top level, which the Anthropic API refuses; lathe sends the properties of its branches and tells the model the rest in the tool's description";

/// User-facing: a tool that is not offered. `{tool}`, `{why}`.
pub const SKIPPED: &str = "tool {tool} is not offered: {why}";

/// `mcp__<server>__<tool>` with every character outside `[a-zA-Z0-9_-]`
/// replaced by `_`. Errors: the name is longer than 64 chars (the Messages
/// API's rule), as a reason to log.
pub fn tool_name(server: &str, tool: &str) -> Result<String, String> {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let name = format!("mcp__{}__{}", clean(server), clean(tool));
    check_name(&name).map(|()| name)
}

/// Model-facing: a `resource_link` block of a result. `{name}`, `{uri}`,
/// `{mime}` (MCP 2025-06-18, "Tools" → Resource Links).
pub const RESOURCE_LINK: &str = "[resource link: {name} <{uri}> ({mime}); lathe cannot read MCP resources, so only the link is shown]";

/// Model-facing: an `audio` block of a result (the Messages API takes no
/// audio). `{mime}`, `{bytes}` (approximate).
pub const AUDIO_OMITTED: &str =
    "[audio ({mime}, about {bytes} bytes) omitted: lathe cannot pass audio to the model]";

/// Model-facing: an embedded binary `resource` block (a text one is
/// shown as its text). `{uri}`, `{mime}`.
pub const RESOURCE_OMITTED: &str = "[embedded resource <{uri}> ({mime}) omitted: it is binary]";

/// Calls one tool of one server.
pub struct McpBackend {
    server: Arc<McpServer>,
    tool: String,
}

/// The user tool for `tool` of `server`. Errors: the name or schema cannot
/// be used (the reason to log).
pub fn user_tool(server: &Arc<McpServer>, tool: &ServerTool) -> Result<UserTool, String> {
    let name = tool_name(&server.config.name, &tool.name)?;
    user_tool_named(server, tool, name)
}

/// [`user_tool`] under `name` (from [`free_tool_name`]); a name other
/// than the tool's own cleaned one is explained in its description
/// ([`RENAMED_NOTE`]).
pub fn user_tool_named(
    server: &Arc<McpServer>,
    tool: &ServerTool,
    name: String,
) -> Result<UserTool, String> {
    let mut description = tool.description.clone();
    if tool_name(&server.config.name, &tool.name).is_ok_and(|plain| plain != name) {
        description.push_str(&fill(
            RENAMED_NOTE,
            &[("tool", &tool.name), ("server", &server.config.name)],
        ));
    }
    let spec = UserToolSpec {
        name,
        description,
        input_schema: tool.input_schema.clone(),
        read_only: Flag::Fixed(tool.read_only),
        concurrency_safe: None,
        max_result_chars: Some(DEFAULT_MAX_RESULT_CHARS),
        source: ToolSource::Mcp(server.config.name.clone()),
    };
    let backend = Arc::new(McpBackend {
        server: server.clone(),
        tool: tool.name.clone(),
    });
    UserTool::new(spec, backend)
}

/// A `tools/call` result (JSON) as a tool output: text and image blocks
/// kept, other kinds named; `isError` → the text as a model-facing error.
pub fn output_of(tool: &str, result: &Value) -> Result<ToolOutput, ToolError> {
    let mut blocks = Vec::new();
    for b in result["content"].as_array().into_iter().flatten() {
        match b["type"].as_str() {
            Some("text") => blocks.push(ContentBlock::Text {
                text: b["text"].as_str().unwrap_or_default().to_string(),
            }),
            Some("image") => blocks.push(ContentBlock::Image {
                source: ImageSource {
                    kind: "base64".into(),
                    media_type: b["mimeType"].as_str().unwrap_or_default().to_string(),
                    data: b["data"].as_str().unwrap_or_default().to_string(),
                },
            }),
            Some("resource") if b["resource"]["text"].is_string() => {
                blocks.push(ContentBlock::Text {
                    text: b["resource"]["text"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                })
            }
            Some("resource_link") => blocks.push(ContentBlock::Text {
                text: fill(
                    RESOURCE_LINK,
                    &[
                        (
                            "name",
                            b["title"].as_str().or(b["name"].as_str()).unwrap_or(""),
                        ),
                        ("uri", b["uri"].as_str().unwrap_or_default()),
                        ("mime", b["mimeType"].as_str().unwrap_or("unknown type")),
                    ],
                ),
            }),
            Some("audio") => blocks.push(ContentBlock::Text {
                text: fill(
                    AUDIO_OMITTED,
                    &[
                        ("mime", b["mimeType"].as_str().unwrap_or("unknown type")),
                        (
                            "bytes",
                            &(b["data"].as_str().unwrap_or_default().len() / 4 * 3).to_string(),
                        ),
                    ],
                ),
            }),
            Some("resource") => blocks.push(ContentBlock::Text {
                text: fill(
                    RESOURCE_OMITTED,
                    &[
                        ("uri", b["resource"]["uri"].as_str().unwrap_or_default()),
                        (
                            "mime",
                            b["resource"]["mimeType"].as_str().unwrap_or("unknown type"),
                        ),
                    ],
                ),
            }),
            other => blocks.push(ContentBlock::Text {
                text: format!("[{} content not shown]", other.unwrap_or("unknown")),
            }),
        }
    }
    blocks.retain(|b| !matches!(b, ContentBlock::Text { text } if text.is_empty()));
    // A result with only `structuredContent` (MCP 2025-06-18, "Tools" →
    // Structured Content): its data as JSON text, the API refusing an
    // empty text block.
    if blocks.is_empty() {
        if let Some(data) = result.get("structuredContent").filter(|v| !v.is_null()) {
            blocks.push(ContentBlock::Text {
                text: serde_json::to_string_pretty(data).unwrap_or_default(),
            });
        }
    }
    let content = if blocks
        .iter()
        .all(|b| matches!(b, ContentBlock::Text { .. }))
    {
        ToolResultContent::Text(ToolResultContent::Blocks(blocks).as_text())
    } else {
        ToolResultContent::Blocks(blocks)
    };
    if result["isError"].as_bool() == Some(true) {
        let text = content.as_text();
        return Err(ToolError::new(if text.trim().is_empty() {
            fill(EMPTY_ERROR, &[("tool", tool)])
        } else {
            text
        }));
    }
    let lines = content.as_text().lines().count();
    Ok(ToolOutput::new(
        content,
        crate::text::plural(lines, "line", "lines"),
    ))
}

#[async_trait]
impl UserToolBackend for McpBackend {
    fn classify(&self, _input: &Value) -> Result<Classified, (String, String)> {
        Ok(Classified::default())
    }

    async fn validate(&self, _tool: &str, _input: &Value) -> Result<(), ToolError> {
        Ok(())
    }

    async fn call(
        &self,
        tool: &str,
        input: Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let server = &self.server.config.name;
        let log = self.server.log_path.display().to_string();
        let not_running = |why: &str| {
            ToolError::new(match self.server.config.url() {
                Some(url) => fill(
                    HTTP_SERVER_UNREACHABLE,
                    &[
                        ("server", server),
                        ("url", url),
                        ("why", why),
                        ("log", &log),
                    ],
                ),
                None => fill(
                    SERVER_NOT_RUNNING,
                    &[("server", server), ("why", why), ("log", &log)],
                ),
            })
        };
        let ms = self.server.config.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
        let work = async {
            let peer = self.server.peer().await.map_err(|e| not_running(&e.0))?;
            // Restarted since its tools were listed: list them again.
            super::refresh(&self.server).await;
            match super::server::call(&peer, &self.tool, input).await {
                Ok(v) => output_of(tool, &v),
                Err(rmcp::service::ServiceError::TransportClosed) => {
                    Err(not_running(&self.server.lost().await))
                }
                Err(rmcp::service::ServiceError::TransportSend(e)) => {
                    let reason = super::http::reason(&e.to_string());
                    let url = self.server.config.url();
                    // An HTTP server that answered this one request with an
                    // error status is still there: rmcp's connection goes
                    // on, and so do the server's other tools.
                    if let Some(url) = url.filter(|_| {
                        !peer.is_transport_closed()
                            && !reason.contains(super::http::CONNECTION_FAILED)
                    }) {
                        self.server.note(&format!("{tool} failed: {reason}"));
                        return Err(ToolError::new(fill(
                            HTTP_CALL_FAILED,
                            &[
                                ("tool", tool),
                                ("server", server),
                                ("url", url),
                                ("why", &reason),
                                ("log", &log),
                            ],
                        )));
                    }
                    let why = self.server.lost().await;
                    Err(not_running(&match url {
                        Some(_) => format!("the request failed: {reason}"),
                        None => why,
                    }))
                }
                Err(e) => Err(ToolError::new(fill(
                    super::REQUEST_FAILED,
                    &[("tool", tool), ("error", &e.to_string())],
                ))),
            }
        };
        // Dropping `work` drops rmcp's request, which sends the server
        // `notifications/cancelled` for it.
        tokio::select! {
            r = work => r,
            () = ctx.cancel.cancelled() => {
                Err(ToolError::new(fill(CALL_INTERRUPTED, &[("tool", tool)])))
            }
            () = tokio::time::sleep(Duration::from_millis(ms)) => {
                Err(ToolError::new(fill(CALL_TIMED_OUT, &[("tool", tool), ("ms", &ms.to_string())])))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_prefixed_and_cleaned() {
        assert_eq!(tool_name("docs", "search").unwrap(), "mcp__docs__search");
        assert_eq!(
            tool_name("my docs", "get.page").unwrap(),
            "mcp__my_docs__get_page"
        );
        assert!(tool_name("docs", &"x".repeat(60)).is_err());
    }

    #[test]
    fn links_audio_and_binary_resources_become_text_that_says_so() {
        let out = output_of(
            "t",
            &json!({ "content": [
                { "type": "text", "text": "see:" },
                { "type": "resource_link", "uri": "file:///a/b.md", "name": "b.md", "mimeType": "text/markdown" },
                { "type": "audio", "data": "AAAAAAAA", "mimeType": "audio/wav" },
                { "type": "resource", "resource": { "uri": "file:///x.bin", "blob": "AAAA", "mimeType": "application/octet-stream" } }
            ] }),
        )
        .unwrap();
        assert_eq!(
            out.content,
            ToolResultContent::Text(
                "see:\n[resource link: b.md <file:///a/b.md> (text/markdown); lathe cannot read MCP resources, so only the link is shown]\n[audio (audio/wav, about 6 bytes) omitted: lathe cannot pass audio to the model]\n[embedded resource <file:///x.bin> (application/octet-stream) omitted: it is binary]".into()
            )
        );
    }

    /// A result with only `structuredContent` became an empty
    /// text block, which the API refuses.
    #[test]
    fn structured_content_alone_is_sent_as_json_text() {
        let out = output_of(
            "t",
            &json!({ "content": [], "structuredContent": { "temperature": 22.5, "unit": "C" } }),
        )
        .unwrap();
        assert_eq!(
            out.content,
            ToolResultContent::Text("{\n  \"temperature\": 22.5,\n  \"unit\": \"C\"\n}".into())
        );
        // With content too, the content is what the model reads.
        let out = output_of(
            "t",
            &json!({ "content": [{ "type": "text", "text": "22.5 C" }], "structuredContent": { "temperature": 22.5 } }),
        )
        .unwrap();
        assert_eq!(out.content, ToolResultContent::Text("22.5 C".into()));
    }

    #[test]
    fn results_become_text_images_or_errors() {
        let out = output_of("t", &json!({ "content": [{ "type": "text", "text": "a" }, { "type": "text", "text": "b" }] })).unwrap();
        assert_eq!(out.content, ToolResultContent::Text("a\nb".into()));
        assert_eq!(out.summary, "2 lines");
        let one = output_of(
            "t",
            &json!({ "content": [{ "type": "text", "text": "a" }] }),
        )
        .unwrap();
        assert_eq!(
            one.summary, "1 line",
            "the chat's summary of a one-line result"
        );
        let out = output_of(
            "t",
            &json!({ "content": [{ "type": "image", "data": "AAA=", "mimeType": "image/png" }] }),
        )
        .unwrap();
        let ToolResultContent::Blocks(b) = out.content else {
            panic!()
        };
        assert!(
            matches!(&b[0], ContentBlock::Image { source } if source.media_type == "image/png")
        );
        let err = output_of(
            "t",
            &json!({ "content": [{ "type": "text", "text": "no such page" }], "isError": true }),
        )
        .unwrap_err();
        assert_eq!(err.message, "no such page");
        let err = output_of("mcp__a__t", &json!({ "content": [], "isError": true })).unwrap_err();
        assert_eq!(err.message, "mcp__a__t failed and its MCP server gave no reason. Tell the user; do not repeat the same call unchanged.");
    }
}
