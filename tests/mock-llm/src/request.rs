//! Read-only views into a Messages API request body (`messages[]` with
//! `role` and `content`, content being a string or an array of blocks).

use serde_json::Value;

/// The `messages` array of a request body; empty when missing or not an array.
pub fn messages(body: &Value) -> &[Value] {
    body.get("messages")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The `role` of a message (`"user"`, `"assistant"`), or `""`.
pub fn role(message: &Value) -> &str {
    message.get("role").and_then(Value::as_str).unwrap_or("")
}

/// The content blocks of a message; empty when `content` is a string or
/// missing (a string content has no tool blocks).
pub fn blocks(message: &Value) -> &[Value] {
    message
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The `type` of a content block, or `""`.
pub fn block_type(block: &Value) -> &str {
    block.get("type").and_then(Value::as_str).unwrap_or("")
}

/// The text of a `content` value: the string itself, or the `text` of its
/// `type: "text"` blocks joined by `\n`; `""` for anything else.
pub fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .filter(|b| block_type(b) == "text")
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The ids of the `tool_use` blocks of a message, in order.
pub fn tool_use_ids(message: &Value) -> Vec<&str> {
    blocks(message)
        .iter()
        .filter(|b| block_type(b) == "tool_use")
        .filter_map(|b| b.get("id").and_then(Value::as_str))
        .collect()
}

/// The newest `tool_result` block with this `tool_use_id` in any user
/// message of the request (searching from the last message back).
pub fn find_tool_result<'a>(body: &'a Value, id: &str) -> Option<&'a Value> {
    messages(body)
        .iter()
        .rev()
        .filter(|m| role(m) == "user")
        .flat_map(|m| blocks(m).iter())
        .find(|b| {
            block_type(b) == "tool_result"
                && b.get("tool_use_id").and_then(Value::as_str) == Some(id)
        })
}

/// The text of the last message with role `user`, or `None` when there is none.
pub fn last_user_text(body: &Value) -> Option<String> {
    messages(body)
        .iter()
        .rev()
        .find(|m| role(m) == "user")
        .map(|m| content_text(m.get("content")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_text_reads_strings_and_text_blocks() {
        assert_eq!(content_text(Some(&json!("plain"))), "plain");
        assert_eq!(
            content_text(Some(&json!([
                {"type":"text","text":"a"},
                {"type":"image","source":{}},
                {"type":"text","text":"b"}
            ]))),
            "a\nb"
        );
        assert_eq!(content_text(None), "");
    }

    #[test]
    fn finds_the_newest_tool_result() {
        let body = json!({"messages":[
            {"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"old"}]},
            {"role":"assistant","content":"x"},
            {"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"new"}]}
        ]});
        let found = find_tool_result(&body, "t").unwrap();
        assert_eq!(content_text(found.get("content")), "new");
        assert!(find_tool_result(&body, "other").is_none());
        assert_eq!(last_user_text(&json!({"messages":[]})), None);
    }
}
