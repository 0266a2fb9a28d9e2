//! OpenAI's chat completions pairing rule, checked on every request before
//! answering: an assistant message's `tool_calls` ids must each be answered by
//! a `tool` message in the run of tool messages right after it (in any order),
//! and every `tool` message must answer a call of the assistant message
//! before its run. Also: `messages` must be a non-empty array, and every
//! tool message must have a `tool_call_id`.

use serde_json::Value;

use crate::openai_error::{
    empty_messages, missing_messages, missing_tool_call_id, missing_tool_messages,
    tool_without_tool_calls, unknown_tool_call_id, OpenAiError,
};
use crate::request::role;

/// The ids of the `tool_calls` of a message, in order.
pub fn tool_call_ids(message: &Value) -> Vec<&str> {
    message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .filter_map(|c| c.get("id").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default()
}

/// The `tool_call_id` of a (tool) message.
pub fn tool_call_id(message: &Value) -> Option<&str> {
    message.get("tool_call_id").and_then(Value::as_str)
}

/// Checks a chat completions request body.
///
/// Returns `Ok(())` when the rule holds, else the first violation as OpenAI
/// reports it, checked in this order: `messages` missing or not an array,
/// `messages` empty, a tool message without `tool_call_id`, then in message
/// order a tool message following no assistant `tool_calls`, a tool message
/// answering an id not called, or called ids left unanswered.
pub fn check(body: &Value) -> Result<(), OpenAiError> {
    let Some(msgs) = body.get("messages").and_then(Value::as_array) else {
        return Err(missing_messages());
    };
    if msgs.is_empty() {
        return Err(empty_messages());
    }
    if let Some(index) = msgs
        .iter()
        .position(|m| role(m) == "tool" && tool_call_id(m).is_none())
    {
        return Err(missing_tool_call_id(index));
    }
    let mut index = 0;
    while index < msgs.len() {
        let message = &msgs[index];
        if role(message) == "tool" {
            return Err(tool_without_tool_calls(index));
        }
        let calls = if role(message) == "assistant" {
            tool_call_ids(message)
        } else {
            Vec::new()
        };
        index += 1;
        if calls.is_empty() {
            continue;
        }
        // Sets: an answer with thousands of calls stays linear.
        let known: std::collections::HashSet<&str> = calls.iter().copied().collect();
        let mut answered = std::collections::HashSet::new();
        while let Some(tool) = msgs.get(index).filter(|m| role(m) == "tool") {
            let id = tool_call_id(tool).unwrap_or("");
            if !known.contains(&id) {
                return Err(unknown_tool_call_id(index, id));
            }
            answered.insert(id);
            index += 1;
        }
        let missing: Vec<&str> = calls
            .into_iter()
            .filter(|id| !answered.contains(id))
            .collect();
        if !missing.is_empty() {
            return Err(missing_tool_messages(
                &missing,
                (index < msgs.len()).then_some(index),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn calling(ids: &[&str]) -> Value {
        let calls: Vec<Value> = ids
            .iter()
            .map(
                |id| json!({"id":id,"type":"function","function":{"name":"Read","arguments":"{}"}}),
            )
            .collect();
        json!({"role":"assistant","content":null,"tool_calls":calls})
    }

    fn tool(id: &str) -> Value {
        json!({"role":"tool","tool_call_id":id,"content":"ok"})
    }

    fn body(messages: Vec<Value>) -> Value {
        json!({"model":"m","messages":messages})
    }

    fn user(text: &str) -> Value {
        json!({"role":"user","content":text})
    }

    #[test]
    fn answered_calls_in_any_order_pass() {
        let b = body(vec![
            json!({"role":"system","content":"s"}),
            user("hi"),
            calling(&["a", "b"]),
            tool("b"),
            tool("a"),
            json!({"role":"assistant","content":"done"}),
            user("thanks"),
        ]);
        assert_eq!(check(&b), Ok(()));
    }

    #[test]
    fn unanswered_calls_name_the_ids_and_the_next_message() {
        let b = body(vec![
            user("hi"),
            calling(&["a", "b", "c"]),
            tool("b"),
            user("x"),
        ]);
        assert_eq!(check(&b), Err(missing_tool_messages(&["a", "c"], Some(3))));
        let b = body(vec![user("hi"), calling(&["a"])]);
        assert_eq!(check(&b), Err(missing_tool_messages(&["a"], None)));
    }

    #[test]
    fn stray_tool_messages_are_rejected() {
        let b = body(vec![user("hi"), tool("a")]);
        assert_eq!(check(&b), Err(tool_without_tool_calls(1)));
        let b = body(vec![
            user("hi"),
            calling(&["a"]),
            tool("a"),
            user("x"),
            tool("a"),
        ]);
        assert_eq!(check(&b), Err(tool_without_tool_calls(4)));
        let b = body(vec![user("hi"), calling(&["a"]), tool("a"), tool("zz")]);
        assert_eq!(check(&b), Err(unknown_tool_call_id(3, "zz")));
        let b = body(vec![user("hi"), json!({"role":"tool","content":"x"})]);
        assert_eq!(check(&b), Err(missing_tool_call_id(1)));
    }

    #[test]
    fn messages_must_be_a_non_empty_array() {
        assert_eq!(check(&json!({"model":"m"})), Err(missing_messages()));
        assert_eq!(check(&body(vec![])), Err(empty_messages()));
    }
}
