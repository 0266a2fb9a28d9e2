//! What OpenAI-compatible servers send: the `chat.completion.chunk` of a
//! stream and the `chat.completion` of a non-streaming answer
//! (<https://platform.openai.com/docs/api-reference/chat/streaming>,
//! <https://platform.openai.com/docs/api-reference/chat/object>).
//!
//! Every field is optional and may be `null`: servers differ in what they
//! leave out (llama.cpp sends no `id` in some builds, Azure's first chunk has
//! empty `choices`, Groq puts usage under `x_groq`). Fields lathe does not
//! read (`logprobs`, `timings`, `system_fingerprint`, `obfuscation`, …) are
//! ignored. Private to the provider: the rest of lathe sees only
//! [`crate::protocol`] types.

use serde::Deserialize;
use serde_json::Value;

/// One streamed chunk, or (with `message` instead of `delta` in its
/// choices) a whole non-streaming answer.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Chunk {
    /// `chatcmpl-…` (any string; empty or missing on some servers).
    #[serde(default)]
    pub id: Option<String>,
    /// Model that answers.
    #[serde(default)]
    pub model: Option<String>,
    /// One entry per `n`; lathe asks for one and reads index 0.
    #[serde(default)]
    pub choices: Option<Vec<Choice>>,
    /// Token counts: in the last chunk (OpenAI, with empty `choices`), or
    /// beside the `finish_reason` (DeepSeek, Mistral, llama.cpp, Groq).
    #[serde(default)]
    pub usage: Option<WireUsage>,
    /// Groq's own block; older Groq builds carried usage only here.
    #[serde(default)]
    pub x_groq: Option<XGroq>,
    /// An error reported inside a 200 stream (OpenRouter, OpenAI):
    /// `{"message", "type", "code"}` or a bare string.
    #[serde(default)]
    pub error: Option<Value>,
}

/// One entry of `choices`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Choice {
    /// Which of the `n` answers (lathe reads 0; missing means 0).
    #[serde(default)]
    pub index: Option<u64>,
    /// The piece of a streamed answer.
    #[serde(default)]
    pub delta: Option<WireMessage>,
    /// The whole message of a non-streaming answer.
    #[serde(default)]
    pub message: Option<WireMessage>,
    /// `stop`, `tool_calls`, `length`, `content_filter`, `function_call`,
    /// or a server's own word; `null` until the last chunk.
    #[serde(default)]
    pub finish_reason: Option<String>,
}

/// A `delta` or `message`: both have the same fields.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WireMessage {
    /// A string, `null`, or (Mistral's reasoning models) an array of parts
    /// such as `{"type":"text","text":…}` and `{"type":"thinking",
    /// "thinking":[{"type":"text","text":…}]}`.
    #[serde(default)]
    pub content: Value,
    /// Reasoning text of DeepSeek, vLLM, llama.cpp, xAI, LM Studio.
    #[serde(default)]
    pub reasoning_content: Value,
    /// Reasoning text of OpenRouter, Groq, Ollama.
    #[serde(default)]
    pub reasoning: Value,
    /// A refusal written instead of `content` (OpenAI).
    #[serde(default)]
    pub refusal: Value,
    /// Tool call pieces (stream) or whole tool calls (message).
    #[serde(default)]
    pub tool_calls: Option<Vec<WireToolCall>>,
}

/// One entry of `tool_calls`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WireToolCall {
    /// Which call this piece belongs to; servers that omit it send each
    /// call whole.
    #[serde(default)]
    pub index: Option<u64>,
    /// `call_…`; usually only in the first piece of a call.
    #[serde(default)]
    pub id: Option<String>,
    /// Name and argument text.
    #[serde(default)]
    pub function: Option<WireFunction>,
}

/// The `function` of a tool call.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WireFunction {
    /// Tool name; usually only in the first piece of a call.
    #[serde(default)]
    pub name: Option<String>,
    /// A piece of the arguments' JSON text (a string); a few servers send
    /// the arguments as a JSON object instead.
    #[serde(default)]
    pub arguments: Value,
}

/// The `usage` object.
#[derive(Debug, Default, Clone, Deserialize)]
pub(crate) struct WireUsage {
    /// Input tokens, cached ones included.
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    /// Output tokens (reasoning included).
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    /// `{"cached_tokens": n}`.
    #[serde(default)]
    pub prompt_tokens_details: Option<PromptDetails>,
    /// DeepSeek's older name for cached input tokens.
    #[serde(default)]
    pub prompt_cache_hit_tokens: Option<u64>,
}

/// `usage.prompt_tokens_details`.
#[derive(Debug, Default, Clone, Deserialize)]
pub(crate) struct PromptDetails {
    /// Input tokens read from the server's prompt cache.
    #[serde(default)]
    pub cached_tokens: Option<u64>,
}

/// Groq's `x_groq` block.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct XGroq {
    /// Usage, same shape as `usage`.
    #[serde(default)]
    pub usage: Option<WireUsage>,
}

impl Chunk {
    /// The usage this chunk reports: `usage`, else `x_groq.usage`.
    pub(crate) fn reported_usage(&self) -> Option<&WireUsage> {
        self.usage
            .as_ref()
            .or_else(|| self.x_groq.as_ref().and_then(|x| x.usage.as_ref()))
    }

    /// The choice lathe reads: index 0 (or the first without an index).
    pub(crate) fn first_choice(&self) -> Option<&Choice> {
        self.choices
            .as_deref()
            .unwrap_or_default()
            .iter()
            .find(|c| c.index.unwrap_or(0) == 0)
    }
}

/// A piece of message content, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    /// Answer text.
    Text(String),
    /// Reasoning text.
    Thinking(String),
}

impl WireMessage {
    /// The message's reasoning, content and refusal as pieces, in that
    /// order (reasoning comes first in every server's streams). Empty
    /// strings are left out. Reasoning is `reasoning_content`, else
    /// `reasoning` (never both: servers that send both send the same text).
    pub(crate) fn pieces(&self) -> Vec<Piece> {
        let mut out = Vec::new();
        let reasoning = non_empty(&self.reasoning_content).or_else(|| non_empty(&self.reasoning));
        if let Some(r) = reasoning {
            out.push(Piece::Thinking(r.to_string()));
        }
        match &self.content {
            Value::String(s) if !s.is_empty() => out.push(Piece::Text(s.clone())),
            Value::Array(parts) => {
                for part in parts {
                    match part.get("type").and_then(Value::as_str) {
                        Some("text") => {
                            if let Some(t) = part.get("text").and_then(non_empty) {
                                out.push(Piece::Text(t.to_string()));
                            }
                        }
                        Some("thinking") => {
                            let text = part.get("thinking").map(text_of).unwrap_or_default();
                            if !text.is_empty() {
                                out.push(Piece::Thinking(text));
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        if let Some(r) = non_empty(&self.refusal) {
            out.push(Piece::Text(r.to_string()));
        }
        out
    }
}

/// `v` as a non-empty string.
fn non_empty(v: &Value) -> Option<&str> {
    v.as_str().filter(|s| !s.is_empty())
}

/// The text of a string, or of an array of `{"type":"text","text":…}` parts.
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn message(v: Value) -> WireMessage {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn pieces_in_order_from_every_shape() {
        assert_eq!(
            message(json!({"reasoning_content": "hm", "content": "hi", "refusal": null})).pieces(),
            vec![Piece::Thinking("hm".into()), Piece::Text("hi".into())]
        );
        assert_eq!(
            message(json!({"reasoning": "r", "reasoning_content": "", "content": null})).pieces(),
            vec![Piece::Thinking("r".into())]
        );
        assert_eq!(
            message(json!({"content": [
                {"type": "thinking", "thinking": [{"type": "text", "text": "1."}], "closed": true},
                {"type": "text", "text": "3"},
                {"type": "image_url", "image_url": {"url": "x"}}
            ]}))
            .pieces(),
            vec![Piece::Thinking("1.".into()), Piece::Text("3".into())]
        );
        assert_eq!(
            message(json!({"content": null, "refusal": "no"})).pieces(),
            vec![Piece::Text("no".into())]
        );
        assert_eq!(message(json!({"content": ""})).pieces(), vec![]);
    }

    #[test]
    fn usage_falls_back_to_x_groq() {
        let c: Chunk = serde_json::from_value(
            json!({"x_groq": {"usage": {"prompt_tokens": 3, "completion_tokens": 1}}}),
        )
        .unwrap();
        assert_eq!(c.reported_usage().and_then(|u| u.prompt_tokens), Some(3));
        let c: Chunk = serde_json::from_value(json!({"choices": null, "usage": null})).unwrap();
        assert!(c.reported_usage().is_none());
        assert!(c.first_choice().is_none());
    }
}
