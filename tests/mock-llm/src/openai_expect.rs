//! A scripted entry's `expect`, checked on a chat completions request: tool
//! results are the `tool` messages (found by `tool_call_id`), the user text is
//! the last `user` message. `tool_result_is_error` cannot apply (tool
//! messages have no error flag), so an entry that sets it is a script error.

use serde_json::Value;

use crate::api_error::EXPECT_FAILED_PREFIX;
use crate::openai_error::{is_error_cannot_apply, OpenAiError};
use crate::openai_pairing::tool_call_id;
use crate::request::{content_text, messages, role};
use crate::script::Expect;

/// The newest `tool` message answering `id`.
fn find_tool_message<'a>(body: &'a Value, id: &str) -> Option<&'a Value> {
    messages(body)
        .iter()
        .rev()
        .find(|m| role(m) == "tool" && tool_call_id(m) == Some(id))
}

/// Checks `expect` (entry `responses[index]`) on a chat completions `body`.
///
/// Returns `Ok(())` when all hold; else a 400 `invalid_request_error`: the
/// [`is_error_cannot_apply`] script error when `tool_result_is_error` is set,
/// otherwise one message per failed expectation joined by `"; "` after
/// [`EXPECT_FAILED_PREFIX`], as on the Messages path. A tool message's text
/// is its `content` string, or its `text` parts joined by `\n`.
pub fn check(expect: &Expect, index: usize, body: &Value) -> Result<(), OpenAiError> {
    if !expect.tool_result_is_error.is_empty() {
        return Err(OpenAiError::invalid_request(
            is_error_cannot_apply(index),
            None,
        ));
    }
    let mut failures = Vec::new();
    for (id, wanted) in &expect.tool_result_contains {
        match find_tool_message(body, id) {
            None => failures.push(format!(
                "tool_result_contains[{id}]: the request has no tool message with tool_call_id {id}"
            )),
            Some(message) => {
                let text = content_text(message.get("content"));
                if !text.contains(wanted.as_str()) {
                    failures.push(format!(
                        "tool_result_contains[{id}]: wanted text containing {wanted:?}, got {text:?}"
                    ));
                }
            }
        }
    }
    if let Some(wanted) = &expect.last_user_text_contains {
        let last_user = messages(body).iter().rev().find(|m| role(m) == "user");
        match last_user.map(|m| content_text(m.get("content"))) {
            None => {
                failures.push("last_user_text_contains: the request has no user message".into())
            }
            Some(text) if !text.contains(wanted.as_str()) => failures.push(format!(
                "last_user_text_contains: wanted text containing {wanted:?}, got {text:?}"
            )),
            Some(_) => {}
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(OpenAiError::invalid_request(
            format!(
                "{EXPECT_FAILED_PREFIX} for responses[{index}]: {}",
                failures.join("; ")
            ),
            None,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body() -> Value {
        json!({"messages":[
            {"role":"user","content":"fix the typo"},
            {"role":"assistant","content":null,"tool_calls":[
                {"id":"t1","type":"function","function":{"name":"Grep","arguments":"{}"}}]},
            {"role":"tool","tool_call_id":"t1","content":[{"type":"text","text":"greeting.py:1"}]},
            {"role":"user","content":[{"type":"text","text":"also this"}]}
        ]})
    }

    #[test]
    fn holding_expectations_pass_and_failures_are_named() {
        let expect = Expect {
            tool_result_contains: [("t1".to_string(), "greeting.py".to_string())].into(),
            last_user_text_contains: Some("also".into()),
            ..Expect::default()
        };
        assert_eq!(check(&expect, 0, &body()), Ok(()));
        let expect = Expect {
            tool_result_contains: [
                ("t1".to_string(), "main.rs".to_string()),
                ("t9".to_string(), "x".to_string()),
            ]
            .into(),
            last_user_text_contains: Some("nope".into()),
            ..Expect::default()
        };
        assert_eq!(
            check(&expect, 2, &body()).unwrap_err().message,
            "mock-llm: script expectation failed for responses[2]: \
             tool_result_contains[t1]: wanted text containing \"main.rs\", got \"greeting.py:1\"; \
             tool_result_contains[t9]: the request has no tool message with tool_call_id t9; \
             last_user_text_contains: wanted text containing \"nope\", got \"also this\""
        );
    }

    #[test]
    fn tool_result_is_error_is_a_script_error() {
        let expect = Expect {
            tool_result_is_error: [("t1".to_string(), false)].into(),
            ..Expect::default()
        };
        let err = check(&expect, 1, &body()).unwrap_err();
        assert_eq!(
            err,
            OpenAiError::invalid_request(is_error_cannot_apply(1), None)
        );
        assert!(err
            .message
            .starts_with("mock-llm: script error in responses[1]: "));
    }
}
