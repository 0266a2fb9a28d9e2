//! A chat completions answer in Messages API terms: `finish_reason` →
//! [`StopReason`], `usage` → [`Usage`], and the whole non-streaming
//! `chat.completion` object → [`MessagesResponse`]
//! (<https://platform.openai.com/docs/api-reference/chat/object>).

use serde_json::{Map, Value};

use super::wire::{Chunk, Piece, WireToolCall, WireUsage};
use crate::protocol::{ContentBlock, MessagesResponse, Role, StopReason, ToolUse, Usage};
use crate::provider::ProviderError;

/// The [`StopReason`] for a `finish_reason` (`None`: the server sent none):
/// `tool_calls` and `function_call` → `tool_use`; `stop` → `end_turn`, or
/// `tool_use` when the answer has tool calls (some servers say `stop` there);
/// `length` → `max_tokens`; `content_filter` → `refusal`; none → `end_turn`
/// (or `tool_use` with tool calls); any other word → `tool_use` with tool
/// calls, else [`StopReason::Other`]. Pure.
pub fn stop_reason(finish_reason: Option<&str>, has_tool_calls: bool) -> StopReason {
    match finish_reason {
        Some("tool_calls" | "function_call") => StopReason::ToolUse,
        Some("length") => StopReason::MaxTokens,
        Some("content_filter") => StopReason::Refusal,
        _ if has_tool_calls => StopReason::ToolUse,
        Some("stop") | None => StopReason::EndTurn,
        Some(_) => StopReason::Other,
    }
}

/// The stop reason of an answer lathe asked for with `max_tokens = asked`:
/// `reason` as it is, except a [`StopReason::MaxTokens`] (`length`) whose
/// reported output is shorter than `asked`. That answer did not reach
/// lathe's limit: the server stopped it because the prompt and the answer
/// filled the model's context window (llama.cpp with context shift off ends
/// so with `finish_reason: "length"`, not with an error), so it is
/// [`StopReason::ModelContextWindowExceeded`] — raising `max_tokens` and
/// asking again would be refused the same way. Without reported output
/// tokens, `length` stays `max_tokens`. Pure.
pub fn stop_for_limit(reason: StopReason, usage: Option<&Usage>, asked: u32) -> StopReason {
    let output = usage.and_then(|u| u.output_tokens);
    match (reason, output) {
        (StopReason::MaxTokens, Some(out)) if out < u64::from(asked) => {
            StopReason::ModelContextWindowExceeded
        }
        (reason, _) => reason,
    }
}

/// `usage` as [`Usage`]: `completion_tokens` → output;
/// `prompt_tokens_details.cached_tokens` (or DeepSeek's
/// `prompt_cache_hit_tokens`) → cache read; `prompt_tokens` minus the cached
/// tokens → input (`prompt_tokens` counts cached tokens, the Messages API's
/// `input_tokens` does not). No cache writes are reported.
pub(crate) fn usage(u: &WireUsage) -> Usage {
    let cached = u
        .prompt_tokens_details
        .as_ref()
        .and_then(|d| d.cached_tokens)
        .or(u.prompt_cache_hit_tokens);
    Usage {
        input_tokens: u
            .prompt_tokens
            .map(|p| p.saturating_sub(cached.unwrap_or(0))),
        output_tokens: u.completion_tokens,
        cache_creation_input_tokens: None,
        cache_read_input_tokens: cached,
        output_estimated: false,
    }
}

/// An id for a tool call the server sent without one: `call_` and 16 random
/// hex digits (the `tool` message must name the call it answers).
pub(crate) fn generated_tool_id() -> String {
    format!("call_{:016x}", fastrand::u64(..))
}

/// A tool call's arguments as the input object: `""`, missing or `null` →
/// `{}`; a JSON object text → that object; an object sent as JSON (not as
/// text) → itself. Anything else is kept as a JSON string of the raw text,
/// so the assembler reports it as input that is not an object and the call
/// stops before it runs (`INPUT_NOT_JSON`).
pub(crate) fn arguments_input(arguments: &Value) -> Value {
    let text = match arguments {
        Value::Null => return Value::Object(Map::new()),
        Value::String(s) => s.as_str(),
        other => return other.clone(),
    };
    if text.trim().is_empty() {
        return Value::Object(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(v @ Value::Object(_)) => v,
        _ => Value::String(text.to_string()),
    }
}

/// Parses a non-streaming answer (`body`, the bytes of a 2xx
/// `chat.completion`) into a [`MessagesResponse`]: `id` and `model` as sent
/// (empty when missing); `content` = reasoning as one `thinking` block (no
/// signature), the text as one `text` block, then one `tool_use` per tool
/// call (id generated when missing, input by `arguments_input`);
/// `stop_reason` by [`stop_reason`]; `usage` by the rules of `usage`.
///
/// Errors: [`ProviderError::Stream`] when the body is an `error` object (a
/// 200 that reports a failure, as OpenRouter does);
/// [`ProviderError::Decode`] when it is not JSON or has no choice 0
/// (serde's error or a note, and the first 200 chars of the body).
pub fn parse_completion(body: &[u8]) -> Result<MessagesResponse, ProviderError> {
    let shown = || crate::provider::http::cut(&String::from_utf8_lossy(body), 200);
    let chunk: Chunk = serde_json::from_slice(body).map_err(|e| {
        ProviderError::Decode(format!(
            "the answer is not a chat completion ({e}): {}",
            shown()
        ))
    })?;
    if let Some(err) = chunk.error.as_ref().filter(|e| !e.is_null()) {
        return Err(super::errors::stream_error(err));
    }
    let choice = chunk.first_choice().ok_or_else(|| {
        ProviderError::Decode(format!(
            "the answer is not a chat completion (no choices): {}",
            shown()
        ))
    })?;
    let message = choice.message.as_ref().or(choice.delta.as_ref());
    let mut thinking = String::new();
    let mut text = String::new();
    for piece in message.map(|m| m.pieces()).unwrap_or_default() {
        match piece {
            Piece::Thinking(t) => thinking.push_str(&t),
            Piece::Text(t) => text.push_str(&t),
        }
    }
    let mut content = Vec::new();
    if !thinking.is_empty() {
        content.push(ContentBlock::Thinking {
            thinking,
            signature: String::new(),
        });
    }
    if !text.is_empty() {
        content.push(ContentBlock::Text { text });
    }
    let calls: &[WireToolCall] = message
        .and_then(|m| m.tool_calls.as_deref())
        .unwrap_or_default();
    for call in calls {
        let function = call.function.as_ref();
        content.push(ContentBlock::ToolUse(ToolUse {
            id: call
                .id
                .clone()
                .filter(|id| !id.is_empty())
                .unwrap_or_else(generated_tool_id),
            name: function.and_then(|f| f.name.clone()).unwrap_or_default(),
            input: function
                .map(|f| arguments_input(&f.arguments))
                .unwrap_or_else(|| Value::Object(Map::new())),
            extra: Default::default(),
        }));
    }
    Ok(MessagesResponse {
        id: chunk.id.clone().unwrap_or_default(),
        role: Role::Assistant,
        stop_reason: Some(stop_reason(
            choice.finish_reason.as_deref(),
            !calls.is_empty(),
        )),
        model: chunk.model.clone().unwrap_or_default(),
        usage: chunk.reported_usage().map(usage).unwrap_or_default(),
        content,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn finish_reasons() {
        let cases = [
            (Some("stop"), false, StopReason::EndTurn),
            (Some("stop"), true, StopReason::ToolUse),
            (Some("tool_calls"), true, StopReason::ToolUse),
            (Some("function_call"), false, StopReason::ToolUse),
            (Some("length"), true, StopReason::MaxTokens),
            (Some("content_filter"), false, StopReason::Refusal),
            (None, false, StopReason::EndTurn),
            (None, true, StopReason::ToolUse),
            (Some("eos"), false, StopReason::Other),
            (Some("eos"), true, StopReason::ToolUse),
        ];
        for (finish, tools, want) in cases {
            assert_eq!(stop_reason(finish, tools), want, "{finish:?} {tools}");
        }
    }

    #[test]
    fn a_length_stop_short_of_max_tokens_is_a_full_context_window() {
        let out = |n| Usage {
            output_tokens: Some(n),
            ..Usage::default()
        };
        let full = StopReason::ModelContextWindowExceeded;
        let cases = [
            (StopReason::MaxTokens, Some(out(120)), 4096, full.clone()),
            (StopReason::MaxTokens, Some(out(0)), 4096, full),
            (
                StopReason::MaxTokens,
                Some(out(4096)),
                4096,
                StopReason::MaxTokens,
            ),
            (
                StopReason::MaxTokens,
                Some(out(5000)),
                4096,
                StopReason::MaxTokens,
            ),
            (
                StopReason::MaxTokens,
                Some(Usage::default()),
                4096,
                StopReason::MaxTokens,
            ),
            (StopReason::MaxTokens, None, 4096, StopReason::MaxTokens),
            (
                StopReason::EndTurn,
                Some(out(12)),
                4096,
                StopReason::EndTurn,
            ),
            (
                StopReason::ToolUse,
                Some(out(12)),
                4096,
                StopReason::ToolUse,
            ),
        ];
        for (reason, usage, asked, want) in cases {
            assert_eq!(
                stop_for_limit(reason.clone(), usage.as_ref(), asked),
                want,
                "{reason:?} {usage:?} {asked}"
            );
        }
    }

    #[test]
    fn usage_subtracts_cached_input() {
        let u: WireUsage = serde_json::from_value(json!({
            "prompt_tokens": 374, "completion_tokens": 61,
            "prompt_tokens_details": {"cached_tokens": 256}
        }))
        .unwrap();
        assert_eq!(
            usage(&u),
            Usage {
                input_tokens: Some(118),
                output_tokens: Some(61),
                cache_creation_input_tokens: None,
                cache_read_input_tokens: Some(256),
                output_estimated: false,
            }
        );
        let u: WireUsage =
            serde_json::from_value(json!({"prompt_tokens": 10, "prompt_cache_hit_tokens": 4}))
                .unwrap();
        assert_eq!(usage(&u).input_tokens, Some(6));
        assert_eq!(usage(&WireUsage::default()), Usage::default());
    }

    #[test]
    fn arguments() {
        assert_eq!(arguments_input(&json!("")), json!({}));
        assert_eq!(arguments_input(&json!(" ")), json!({}));
        assert_eq!(arguments_input(&Value::Null), json!({}));
        assert_eq!(arguments_input(&json!("{\"a\":1}")), json!({"a": 1}));
        assert_eq!(arguments_input(&json!({"a": 1})), json!({"a": 1}));
        assert_eq!(arguments_input(&json!("{\"a\":")), json!("{\"a\":"));
        assert_eq!(arguments_input(&json!("[1]")), json!("[1]"));
    }

    #[test]
    fn generated_ids_differ() {
        let (a, b) = (generated_tool_id(), generated_tool_id());
        assert!(a.starts_with("call_") && a.len() == 21, "{a}");
        assert_ne!(a, b);
    }
}
