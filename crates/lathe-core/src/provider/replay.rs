//! A complete (non-streaming) answer as the event sequence a stream of the
//! same answer would have carried, so the turn loop feeds both through one
//! [`super::assemble::MessageAssembler`] (`stream_fallback =
//! "non_streaming"`). Event order as in
//! <https://docs.anthropic.com/en/api/messages-streaming>.

use crate::protocol::{
    ContentBlock, ContentBlockDelta, MessageDeltaBody, MessagesResponse, StreamEvent, ToolUse,
    Usage,
};

/// The events of `resp` as a stream would send them:
///
/// 1. `message_start` with `resp`'s id, role, model and input tokens,
///    empty `content`, no `stop_reason`, `output_tokens` 0;
/// 2. for each block `i` of `resp.content` (indices are positions in
///    `content`): `content_block_start` with an empty shell, at most the
///    deltas below, then `content_block_stop`:
///    - `text`: one `text_delta` with the whole text (none when empty);
///    - `tool_use`: start with `input: {}`, one `input_json_delta` with the
///      compact JSON of `input` (so a non-object input is rejected by the
///      assembler exactly as when streamed);
///    - `thinking`: one `thinking_delta`, then one `signature_delta` (each
///      only when non-empty);
///    - `redacted_thinking`: the start carries `data`, no delta;
///    - a text block kept as JSON (with `citations`): the block with empty
///      `text`, then one `text_delta` (none when empty);
///    - any other block kept as JSON: the start carries it whole, no delta;
///    - `image` / `tool_result` (never in an assistant message): skipped,
///      the index stays reserved;
/// 3. `message_delta` with `resp.stop_reason` and `resp.usage`;
/// 4. `message_stop`.
///
/// Pure. Assembling the result gives back `resp.content` (minus empty text
/// blocks, which the assembler always leaves out), `stop_reason`, `usage`,
/// `id` and `model`.
pub fn response_events(resp: &MessagesResponse) -> Vec<StreamEvent> {
    let mut out = Vec::with_capacity(3 * resp.content.len() + 3);
    out.push(StreamEvent::MessageStart {
        message: MessagesResponse {
            content: Vec::new(),
            stop_reason: None,
            usage: Usage {
                output_tokens: None,
                ..resp.usage.clone()
            },
            ..resp.clone()
        },
    });
    for (index, block) in resp.content.iter().enumerate() {
        let (shell, deltas) = match block {
            ContentBlock::Text { text } => (
                ContentBlock::Text {
                    text: String::new(),
                },
                non_empty(text, |t| ContentBlockDelta::TextDelta { text: t }),
            ),
            ContentBlock::ToolUse(t) => (
                ContentBlock::ToolUse(ToolUse {
                    id: t.id.clone(),
                    name: t.name.clone(),
                    input: serde_json::Value::Object(serde_json::Map::new()),
                    extra: t.extra.clone(),
                }),
                vec![ContentBlockDelta::InputJsonDelta {
                    partial_json: t.input.to_string(),
                }],
            ),
            ContentBlock::Thinking {
                thinking,
                signature,
            } => {
                let mut deltas = non_empty(thinking, |t| ContentBlockDelta::ThinkingDelta {
                    thinking: t,
                });
                deltas.extend(non_empty(signature, |s| {
                    ContentBlockDelta::SignatureDelta { signature: s }
                }));
                (
                    ContentBlock::Thinking {
                        thinking: String::new(),
                        signature: String::new(),
                    },
                    deltas,
                )
            }
            ContentBlock::RedactedThinking { data } => (
                ContentBlock::RedactedThinking { data: data.clone() },
                Vec::new(),
            ),
            // A text block kept as JSON (one with `citations`): its text
            // as a delta, so the chat shows it as when streamed.
            ContentBlock::Opaque(v) if block.kind() == "text" => {
                let text = v.get("text").and_then(serde_json::Value::as_str);
                let mut shell = v.clone();
                if let Some(map) = shell.as_object_mut() {
                    map.insert("text".into(), serde_json::Value::String(String::new()));
                }
                (
                    ContentBlock::Opaque(shell),
                    non_empty(text.unwrap_or_default(), |t| ContentBlockDelta::TextDelta {
                        text: t,
                    }),
                )
            }
            ContentBlock::Opaque(v) => (ContentBlock::Opaque(v.clone()), Vec::new()),
            ContentBlock::Image { .. } | ContentBlock::ToolResult(_) => continue,
        };
        out.push(StreamEvent::ContentBlockStart {
            index,
            content_block: shell,
        });
        out.extend(
            deltas
                .into_iter()
                .map(|delta| StreamEvent::ContentBlockDelta { index, delta }),
        );
        out.push(StreamEvent::ContentBlockStop { index });
    }
    out.push(StreamEvent::MessageDelta {
        delta: MessageDeltaBody {
            stop_reason: resp.stop_reason.clone(),
            ..MessageDeltaBody::default()
        },
        usage: Some(resp.usage.clone()),
    });
    out.push(StreamEvent::MessageStop);
    out
}

/// One delta made by `make` from `s`, or none when `s` is empty.
fn non_empty(s: &str, make: impl FnOnce(String) -> ContentBlockDelta) -> Vec<ContentBlockDelta> {
    if s.is_empty() {
        Vec::new()
    } else {
        vec![make(s.to_string())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Role, StopReason};
    use crate::provider::assemble::{Assembled, MessageAssembler};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn response(content: Vec<ContentBlock>, stop: StopReason) -> MessagesResponse {
        MessagesResponse {
            id: "msg_9".into(),
            role: Role::Assistant,
            content,
            stop_reason: Some(stop),
            model: "claude-sonnet-4-5".into(),
            usage: Usage {
                input_tokens: Some(120),
                output_tokens: Some(45),
                ..Default::default()
            },
        }
    }

    fn tool(id: &str, input: serde_json::Value) -> ContentBlock {
        ContentBlock::ToolUse(ToolUse {
            id: id.into(),
            name: "Grep".into(),
            input,
            extra: Default::default(),
        })
    }

    fn assemble(resp: &MessagesResponse) -> (MessageAssembler, Vec<Assembled>) {
        let mut a = MessageAssembler::new();
        let reports = response_events(resp)
            .into_iter()
            .filter_map(|e| a.push(e))
            .collect();
        (a, reports)
    }

    #[test]
    fn assembling_the_events_gives_back_the_message() {
        let resp = response(
            vec![
                ContentBlock::Thinking {
                    thinking: "Let me think… 日本".into(),
                    signature: "sig==".into(),
                },
                ContentBlock::RedactedThinking {
                    data: "opaque".into(),
                },
                ContentBlock::Text {
                    text: "Grüße 🎉, looking.".into(),
                },
                tool("toolu_1", json!({"pattern": "a\"b", "n": [1, 2.5, null]})),
                tool("toolu_2", json!({})),
            ],
            StopReason::ToolUse,
        );
        let (a, reports) = assemble(&resp);
        assert!(a.is_complete());
        assert_eq!(a.id(), "msg_9");
        assert_eq!(a.model(), "claude-sonnet-4-5");
        assert_eq!(a.stop_reason(), Some(&StopReason::ToolUse));
        assert_eq!(a.usage(), &resp.usage);
        assert_eq!(a.message().role, Role::Assistant);
        assert_eq!(a.message().content, resp.content);
        // The turn loop sees the same reports as from a stream: text to show,
        // each tool_use complete with its parsed input, in order.
        let completed: Vec<_> = reports
            .iter()
            .filter_map(|r| match r {
                Assembled::ToolUseComplete(t) => Some((t.id.clone(), t.input.clone().ok())),
                _ => None,
            })
            .collect();
        assert_eq!(
            completed,
            vec![
                (
                    "toolu_1".to_string(),
                    Some(json!({"pattern": "a\"b", "n": [1, 2.5, null]}))
                ),
                ("toolu_2".to_string(), Some(json!({}))),
            ]
        );
        assert!(reports.contains(&Assembled::TextDelta {
            index: 2,
            text: "Grüße 🎉, looking.".into()
        }));
        assert_eq!(reports.last(), Some(&Assembled::MessageStop));
    }

    #[test]
    fn event_sequence_shape() {
        let resp = response(
            vec![ContentBlock::Text { text: "hi".into() }],
            StopReason::EndTurn,
        );
        let names: Vec<String> = response_events(&resp)
            .iter()
            .map(|e| {
                serde_json::to_value(e).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(
            names,
            [
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
    }

    #[test]
    fn empty_text_is_left_out_and_non_object_input_is_invalid_as_when_streamed() {
        let resp = response(
            vec![
                ContentBlock::Text {
                    text: String::new(),
                },
                tool("toolu_3", json!("not an object")),
            ],
            StopReason::ToolUse,
        );
        let (a, reports) = assemble(&resp);
        assert_eq!(a.message().content, vec![tool("toolu_3", json!({}))]);
        let bad = reports.iter().find_map(|r| match r {
            Assembled::ToolUseComplete(t) => t.input.clone().err(),
            _ => None,
        });
        assert_eq!(
            bad.map(|e| e.error),
            Some("expected a JSON object, got a string".to_string())
        );
    }

    #[test]
    fn no_content_still_completes() {
        let (a, _) = assemble(&response(vec![], StopReason::EndTurn));
        assert!(a.is_complete());
        assert!(a.message().content.is_empty());
        assert_eq!(a.stop_reason(), Some(&StopReason::EndTurn));
    }
}
