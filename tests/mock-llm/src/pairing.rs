//! The Messages API pairing rule, checked on every request before answering:
//! each assistant message's `tool_use` ids must be answered by `tool_result`
//! blocks at the start of the very next (user) message, and every
//! `tool_result` must answer a `tool_use` of the message right before it.

use std::collections::HashSet;

use serde_json::Value;

use crate::api_error::{missing_tool_result, unexpected_tool_result};
use crate::request::{block_type, blocks, messages, role, tool_use_ids};

/// Checks the pairing rule on a request body.
///
/// Returns `Ok(())` when it holds, else `Err` with the real API's
/// `invalid_request_error` message for the first violation in message order
/// (see [`missing_tool_result`] and [`unexpected_tool_result`]). Only
/// `tool_result` blocks before the first other block of the user message
/// count, as the real API requires tool_results to come first.
pub fn check(body: &Value) -> Result<(), String> {
    let msgs = messages(body);
    for (index, message) in msgs.iter().enumerate() {
        if role(message) == "user" {
            // Sets: an answer with thousands of calls stays linear.
            let previous: HashSet<&str> = match index.checked_sub(1).map(|i| &msgs[i]) {
                Some(prev) if role(prev) == "assistant" => tool_use_ids(prev).into_iter().collect(),
                _ => HashSet::new(),
            };
            for (block_index, block) in blocks(message).iter().enumerate() {
                if block_type(block) != "tool_result" {
                    continue;
                }
                let id = block
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if !previous.contains(&id) {
                    return Err(unexpected_tool_result(index, block_index, id));
                }
            }
        }
        if role(message) == "assistant" {
            let uses = tool_use_ids(message);
            if uses.is_empty() {
                continue;
            }
            let answered: HashSet<&str> = match msgs.get(index + 1) {
                Some(next) if role(next) == "user" => blocks(next)
                    .iter()
                    .take_while(|b| block_type(b) == "tool_result")
                    .filter_map(|b| b.get("tool_use_id").and_then(Value::as_str))
                    .collect(),
                _ => HashSet::new(),
            };
            let missing: Vec<&str> = uses
                .into_iter()
                .filter(|id| !answered.contains(id))
                .collect();
            if !missing.is_empty() {
                return Err(missing_tool_result(index, &missing));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn assistant_using(ids: &[&str]) -> Value {
        let blocks: Vec<Value> = ids
            .iter()
            .map(|id| json!({"type":"tool_use","id":id,"name":"Read","input":{}}))
            .collect();
        json!({"role":"assistant","content":blocks})
    }

    fn results(ids: &[&str]) -> Vec<Value> {
        ids.iter()
            .map(|id| json!({"type":"tool_result","tool_use_id":id,"content":"ok"}))
            .collect()
    }

    #[test]
    fn a_fully_answered_conversation_passes() {
        let body = json!({"messages":[
            {"role":"user","content":"hi"},
            assistant_using(&["a","b"]),
            {"role":"user","content":results(&["b","a"])},
            {"role":"assistant","content":[{"type":"text","text":"done"}]},
            {"role":"user","content":"thanks"}
        ]});
        assert_eq!(check(&body), Ok(()));
    }

    #[test]
    fn a_missing_result_names_the_assistant_message_and_ids() {
        let body = json!({"messages":[
            {"role":"user","content":"hi"},
            assistant_using(&["a","b","c"]),
            {"role":"user","content":results(&["b"])}
        ]});
        assert_eq!(check(&body), Err(missing_tool_result(1, &["a", "c"])));
    }

    #[test]
    fn a_trailing_tool_use_without_a_next_message_fails() {
        let body = json!({"messages":[{"role":"user","content":"hi"}, assistant_using(&["a"])]});
        assert_eq!(check(&body), Err(missing_tool_result(1, &["a"])));
    }

    #[test]
    fn results_after_text_do_not_count() {
        let mut content = vec![json!({"type":"text","text":"first"})];
        content.extend(results(&["a"]));
        let body = json!({"messages":[
            {"role":"user","content":"hi"},
            assistant_using(&["a"]),
            {"role":"user","content":content}
        ]});
        assert_eq!(check(&body), Err(missing_tool_result(1, &["a"])));
    }

    #[test]
    fn a_result_for_an_unknown_id_is_unexpected() {
        let mut content = results(&["a"]);
        content.extend(results(&["zzz"]));
        let body = json!({"messages":[
            {"role":"user","content":"hi"},
            assistant_using(&["a"]),
            {"role":"user","content":content}
        ]});
        assert_eq!(check(&body), Err(unexpected_tool_result(2, 1, "zzz")));
        let body = json!({"messages":[{"role":"user","content":results(&["x"])}]});
        assert_eq!(check(&body), Err(unexpected_tool_result(0, 0, "x")));
    }

    #[test]
    fn server_tool_use_needs_no_tool_result() {
        let body = json!({"messages":[
            {"role":"user","content":"search"},
            {"role":"assistant","content":[
                {"type":"server_tool_use","id":"srvtoolu_01","name":"web_search","input":{"query":"x"}},
                {"type":"web_search_tool_result","tool_use_id":"srvtoolu_01","content":[]}]},
            {"role":"user","content":"more"}
        ]});
        assert_eq!(check(&body), Ok(()));
        let mut with_client_tool = body.clone();
        with_client_tool["messages"][1]["content"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type":"tool_use","id":"toolu_01","name":"Read","input":{}}));
        assert_eq!(
            check(&with_client_tool),
            Err(missing_tool_result(1, &["toolu_01"]))
        );
    }
}
