//! The models a provider serves, for completing `:Lathe model {name}`
//! (docs/provider.md, "Switching the model"): the Anthropic API's `GET
//! /v1/models` (pages of `data[].id` with `has_more` and `last_id`, asked
//! again with `after_id`) and an OpenAI-compatible server's `GET
//! {base_url}/models` (`data[].id`, one page). The clients fetch; this
//! module reads the answers.

use serde_json::Value;

/// How long each request for the list may take.
pub const LIST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Models asked for per page of the Anthropic list (the API's most).
pub const ANTHROPIC_PAGE_LIMIT: u32 = 1000;

/// Most pages of the Anthropic list read (a server that always says
/// `has_more` cannot keep the fetch going).
pub const MAX_PAGES: usize = 20;

/// One page of the Anthropic `GET /v1/models` answer: its ids in order,
/// and the `after_id` of the next page when `has_more` says there is one
/// (`last_id`, else the last id of the page). `None` when the body is not
/// a list (no `data` array).
pub fn anthropic_page(body: &Value) -> Option<(Vec<String>, Option<String>)> {
    let ids = ids(body)?;
    let more = body.get("has_more").and_then(Value::as_bool) == Some(true);
    let next = more
        .then(|| {
            body.get("last_id")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| ids.last().cloned())
        })
        .flatten();
    Some((ids, next))
}

/// The ids of an OpenAI-compatible `GET /models` answer (`data[].id`);
/// `None` when the body is not a list.
pub fn openai_list(body: &Value) -> Option<Vec<String>> {
    ids(body)
}

/// `data[].id` of a list answer, entries without a string id skipped.
fn ids(body: &Value) -> Option<Vec<String>> {
    let data = body.get("data")?.as_array()?;
    Some(
        data.iter()
            .filter_map(|m| m.get("id").and_then(Value::as_str))
            .filter(|id| !id.is_empty())
            .map(str::to_string)
            .collect(),
    )
}

/// The names offered when completing a model: `listed` (the provider's,
/// in its order) with `current` and `configured` first when the list
/// lacks them, each once.
pub fn completion_names(listed: &[String], current: &str, configured: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in [current, configured] {
        if !name.is_empty() && !listed.iter().any(|m| m == name) && !out.iter().any(|m| m == name) {
            out.push(name.to_string());
        }
    }
    for name in listed {
        if !out.contains(name) {
            out.push(name.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn anthropic_pages_and_their_cursor() {
        let first = json!({
            "data": [
                {"type": "model", "id": "claude-opus-4-6", "display_name": "Claude Opus 4.6", "created_at": "2026-01-01T00:00:00Z"},
                {"type": "model", "id": "claude-sonnet-4-5", "display_name": "Claude Sonnet 4.5", "created_at": "2025-09-29T00:00:00Z"}
            ],
            "has_more": true,
            "first_id": "claude-opus-4-6",
            "last_id": "claude-sonnet-4-5"
        });
        assert_eq!(
            anthropic_page(&first),
            Some((
                vec!["claude-opus-4-6".into(), "claude-sonnet-4-5".into()],
                Some("claude-sonnet-4-5".into())
            ))
        );
        let last = json!({"data": [{"id": "claude-haiku-4-5"}], "has_more": false, "first_id": "claude-haiku-4-5", "last_id": "claude-haiku-4-5"});
        assert_eq!(
            anthropic_page(&last),
            Some((vec!["claude-haiku-4-5".into()], None))
        );
        let no_last_id = json!({"data": [{"id": "a"}, {"id": "b"}], "has_more": true});
        assert_eq!(
            anthropic_page(&no_last_id).and_then(|p| p.1),
            Some("b".into()),
            "the page's last id stands in for a missing last_id"
        );
        assert_eq!(anthropic_page(&json!({"error": {}})), None);
    }

    #[test]
    fn openai_lists() {
        let body = json!({"object": "list", "data": [
            {"id": "gpt-4.1", "object": "model", "created": 1, "owned_by": "openai"},
            {"object": "model"},
            {"id": "qwen3", "object": "model", "max_model_len": 32768}
        ]});
        assert_eq!(
            openai_list(&body),
            Some(vec!["gpt-4.1".into(), "qwen3".into()])
        );
        assert_eq!(openai_list(&json!({"models": []})), None);
    }

    #[test]
    fn completion_puts_the_current_and_configured_models_first_once() {
        let listed = vec!["a".to_string(), "b".to_string()];
        assert_eq!(completion_names(&listed, "b", "c"), vec!["c", "a", "b"]);
        assert_eq!(completion_names(&[], "x", "x"), vec!["x"]);
        assert_eq!(completion_names(&listed, "a", "a"), vec!["a", "b"]);
    }
}
