//! Prompt caching (the Messages API's `cache_control`): breakpoints on the
//! tools, the system prompt and the conversation's last turn, so a long
//! session re-reads its growing prefix from the cache instead of paying for
//! it on every request. The API allows at most four breakpoints per request;
//! lathe sets three.

use serde_json::Value;

use crate::protocol::MessagesRequest;

pub use super::wire::{count_breakpoints, MAX_BREAKPOINTS};

/// `req` as the JSON body to send, with `stream` set and an ephemeral
/// `cache_control` on the last tool, on the system prompt (sent as one text
/// block) and on the last cacheable block of the last message. Parts that
/// are missing (no tools, no system prompt) get none. The body the
/// Messages API client sends ([`super::wire::WireCache::body`], which
/// keeps the messages' JSON between requests), as a tree.
pub fn body_with_breakpoints(req: &MessagesRequest, stream: bool) -> Value {
    let body = super::wire::WireCache::default().body(req, stream, &[]);
    serde_json::from_slice(&body).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ContentBlock, Message, Role, ToolDefinition};
    use serde_json::json;

    fn request() -> MessagesRequest {
        MessagesRequest {
            model: "m".into(),
            max_tokens: 100,
            system: "You are lathe.".into(),
            messages: crate::protocol::shared(vec![
                Message::user_text("hi"),
                Message {
                    role: Role::Assistant,
                    content: vec![ContentBlock::Text {
                        text: "hello".into(),
                    }],
                },
                Message {
                    role: Role::User,
                    content: vec![
                        ContentBlock::Text {
                            text: "and now".into(),
                        },
                        ContentBlock::Thinking {
                            thinking: "t".into(),
                            signature: "s".into(),
                        },
                    ],
                },
            ]),
            tools: vec![
                ToolDefinition {
                    name: "Read".into(),
                    description: "d".into(),
                    input_schema: json!({"type": "object"}),
                },
                ToolDefinition {
                    name: "Grep".into(),
                    description: "d".into(),
                    input_schema: json!({"type": "object"}),
                },
            ],
            stream: false,
        }
    }

    #[test]
    fn three_breakpoints_in_the_right_places() {
        let body = body_with_breakpoints(&request(), true);
        assert_eq!(count_breakpoints(&body), 3);
        assert!(count_breakpoints(&body) <= MAX_BREAKPOINTS);
        assert_eq!(body["stream"], true);
        assert_eq!(
            body["tools"][1]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert!(body["tools"][0].get("cache_control").is_none());
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "You are lathe.", "cache_control": {"type": "ephemeral"}}])
        );
        // The last cacheable block of the last message (thinking takes none).
        assert_eq!(
            body["messages"][2]["content"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert!(body["messages"][2]["content"][1]
            .get("cache_control")
            .is_none());
        assert!(body["messages"][1]["content"][0]
            .get("cache_control")
            .is_none());
    }

    #[test]
    fn missing_parts_get_no_breakpoint() {
        let mut r = request();
        r.tools.clear();
        r.system.clear();
        let body = body_with_breakpoints(&r, false);
        assert_eq!(count_breakpoints(&body), 1);
        assert!(body.get("system").is_none());
    }

    #[test]
    fn an_empty_text_block_is_passed_over() {
        let mut r = request();
        std::sync::Arc::make_mut(&mut r.messages[2]).content = vec![
            ContentBlock::Text { text: "x".into() },
            ContentBlock::Text { text: "".into() },
        ];
        let body = body_with_breakpoints(&r, true);
        assert!(body["messages"][2]["content"][1]
            .get("cache_control")
            .is_none());
        assert_eq!(
            body["messages"][2]["content"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
    }

    #[test]
    fn breakpoints_already_in_the_request_leave_room_for_fewer() {
        let mut r = request();
        let carried = serde_json::from_value::<ContentBlock>(json!({
            "type": "text", "text": "kept", "cache_control": {"type": "ephemeral"}, "citations": []
        }))
        .unwrap();
        std::sync::Arc::make_mut(&mut r.messages[1]).content =
            vec![carried.clone(), carried.clone(), carried];
        let body = body_with_breakpoints(&r, true);
        assert_eq!(count_breakpoints(&body), MAX_BREAKPOINTS);
        // The conversation's breakpoint is the one that fits.
        assert_eq!(
            body["messages"][2]["content"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert!(body["system"][0].get("cache_control").is_none());
    }
}
