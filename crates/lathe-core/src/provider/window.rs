//! The context window of the model a session talks to, in tokens
//! (docs/context-and-compaction.md, "Context and compaction"): `setup{
//! context_window = … }` when set; else what an OpenAI-compatible server
//! publishes (vLLM's `GET {base_url}/models` `max_model_len`, llama.cpp's
//! `GET /props` `default_generation_settings.n_ctx`), asked once per
//! session; else the model id's ([`for_model`]).

use serde_json::Value;

/// The window when nothing says otherwise (Claude models, and servers that
/// publish none).
pub const DEFAULT_CONTEXT_WINDOW: u64 = 200_000;

/// The window of a model whose id says it has the 1M window.
pub const LONG_CONTEXT_WINDOW: u64 = 1_000_000;

/// The window a model id implies: [`LONG_CONTEXT_WINDOW`] when the id says
/// `1m` as a word of its own (`claude-sonnet-4-5[1m]`,
/// `claude-sonnet-4-5-1m`, `gpt-4.1-1m`), else [`DEFAULT_CONTEXT_WINDOW`].
pub fn for_model(model: &str) -> u64 {
    let lower = model.to_ascii_lowercase();
    let says_1m = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|word| word == "1m");
    if says_1m {
        LONG_CONTEXT_WINDOW
    } else {
        DEFAULT_CONTEXT_WINDOW
    }
}

/// `max_model_len` of `model` in a vLLM `GET /models` answer (the entry
/// whose `id` is `model`, else the only entry); `None` when absent.
pub fn from_models_list(body: &Value, model: &str) -> Option<u64> {
    let data = body.get("data")?.as_array()?;
    let entry = data
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model))
        .or_else(|| (data.len() == 1).then(|| &data[0]))?;
    entry
        .get("max_model_len")
        .and_then(Value::as_u64)
        .filter(|n| *n > 0)
}

/// `n_ctx` of a llama.cpp `GET /props` answer
/// (`default_generation_settings.n_ctx`, or a top-level `n_ctx`); `None`
/// when absent.
pub fn from_props(body: &Value) -> Option<u64> {
    body.pointer("/default_generation_settings/n_ctx")
        .or_else(|| body.get("n_ctx"))
        .and_then(Value::as_u64)
        .filter(|n| *n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_model_id_says_1m_or_the_default_holds() {
        assert_eq!(for_model("claude-sonnet-4-5"), 200_000);
        assert_eq!(for_model("claude-sonnet-4-5[1m]"), 1_000_000);
        assert_eq!(for_model("claude-sonnet-4-5-1m"), 1_000_000);
        assert_eq!(for_model("qwen3-1m7"), 200_000, "a word of its own");
    }

    #[test]
    fn published_windows_are_read() {
        let list =
            json!({"data":[{"id":"a","max_model_len":4096},{"id":"b","max_model_len":32768}]});
        assert_eq!(from_models_list(&list, "b"), Some(32768));
        assert_eq!(from_models_list(&list, "c"), None, "two models, none ours");
        let one = json!({"data":[{"id":"x","max_model_len":8192}]});
        assert_eq!(from_models_list(&one, "served-name"), Some(8192));
        assert_eq!(
            from_models_list(&json!({"data":[{"id":"gpt"}]}), "gpt"),
            None
        );
        assert_eq!(
            from_props(&json!({"default_generation_settings":{"n_ctx":16384}})),
            Some(16384)
        );
        assert_eq!(from_props(&json!({"n_ctx":0})), None);
    }
}
