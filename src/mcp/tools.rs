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
    let spec = UserToolSpec {
        name,
        description: tool.description.clone(),
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
    Ok(ToolOutput {
        content,
        summary: crate::text::plural(lines, "line", "lines"),
    })
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
