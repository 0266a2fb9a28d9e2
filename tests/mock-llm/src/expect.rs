//! Checks a scripted entry's `expect` against the incoming request, so a script
//! doubles as an assertion on what the client sent.

use serde_json::Value;

use crate::api_error::EXPECT_FAILED_PREFIX;
use crate::request::{content_text, find_tool_result, last_user_text};
use crate::script::Expect;

/// Checks every expectation of `expect` (entry `responses[index]`) on `body`.
///
/// Returns `Ok(())` when all hold, else `Err` with one message per failed
/// expectation joined by `"; "`, each naming the expectation, the wanted value
/// and what the request held, after [`EXPECT_FAILED_PREFIX`]. Tool results are
/// looked up by `tool_use_id` in the user messages, newest first.
pub fn check(expect: &Expect, index: usize, body: &Value) -> Result<(), String> {
    let mut failures = Vec::new();
    for (id, wanted) in &expect.tool_result_contains {
        match find_tool_result(body, id) {
            None => failures.push(format!(
                "tool_result_contains[{id}]: the request has no tool_result with tool_use_id {id}"
            )),
            Some(block) => {
                let text = content_text(block.get("content"));
                if !text.contains(wanted.as_str()) {
                    failures.push(format!(
                        "tool_result_contains[{id}]: wanted text containing {wanted:?}, got {text:?}"
                    ));
                }
            }
        }
    }
    for (id, wanted) in &expect.tool_result_is_error {
        match find_tool_result(body, id) {
            None => failures.push(format!(
                "tool_result_is_error[{id}]: the request has no tool_result with tool_use_id {id}"
            )),
            Some(block) => {
                let got = block
                    .get("is_error")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                if got != *wanted {
                    let text = content_text(block.get("content"));
                    failures.push(format!(
                        "tool_result_is_error[{id}]: wanted is_error {wanted}, got {got} (content {text:?})"
                    ));
                }
            }
        }
    }
    if let Some(wanted) = &expect.last_user_text_contains {
        match last_user_text(body) {
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
        Err(format!(
            "{EXPECT_FAILED_PREFIX} for responses[{index}]: {}",
            failures.join("; ")
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
            {"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Grep","input":{}}]},
            {"role":"user","content":[
                {"type":"tool_result","tool_use_id":"t1",
                 "content":[{"type":"text","text":"greeting.py:1"}],"is_error":false},
                {"type":"text","text":"also this"}
            ]}
        ]})
    }

    #[test]
    fn holding_expectations_pass() {
        let expect = Expect {
            tool_result_contains: [("t1".to_string(), "greeting.py".to_string())].into(),
            tool_result_is_error: [("t1".to_string(), false)].into(),
            last_user_text_contains: Some("also".into()),
        };
        assert_eq!(check(&expect, 0, &body()), Ok(()));
    }

    #[test]
    fn each_failure_is_named_with_what_was_there() {
        let expect = Expect {
            tool_result_contains: [
                ("t1".to_string(), "main.rs".to_string()),
                ("t9".to_string(), "x".to_string()),
            ]
            .into(),
            tool_result_is_error: [("t1".to_string(), true)].into(),
            last_user_text_contains: Some("nope".into()),
        };
        assert_eq!(
            check(&expect, 2, &body()),
            Err("mock-llm: script expectation failed for responses[2]: \
                 tool_result_contains[t1]: wanted text containing \"main.rs\", got \"greeting.py:1\"; \
                 tool_result_contains[t9]: the request has no tool_result with tool_use_id t9; \
                 tool_result_is_error[t1]: wanted is_error true, got false (content \"greeting.py:1\"); \
                 last_user_text_contains: wanted text containing \"nope\", got \"also this\""
                .to_string())
        );
    }
}
