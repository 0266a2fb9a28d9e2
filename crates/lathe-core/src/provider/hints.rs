//! What the user reads in the chat when a model request fails or is
//! retried: the API's own message, then what to do about it.
//!
//! These texts are user-facing (the chat), never sent to the model.

use std::time::Duration;

use super::ProviderError;
use crate::text::fill;

/// Template of the chat notice before a retry. `{secs}`: the wait as
/// [`wait_text`] shows it (`0.4`, `2`, `60`); `{k}`: the attempt about to start (2 for the first
/// retry); `{n}`: `RetryPolicy::max_attempts`; `{error}`: the failure's
/// `Display`. Filled by [`retrying_message`].
pub const RETRYING: &str = "retrying in {secs}s (attempt {k} of {n}): {error}";

/// Hint after HTTP 401; `{env}` is the configured `api_key_env`.
pub const HINT_UNAUTHORIZED: &str = "Check your API key: lathe reads it from ${env} (setup{ api_key_env = \"...\" } names another variable).";
/// Hint after HTTP 403.
pub const HINT_FORBIDDEN: &str = "Your API key is not allowed to do this: check the permissions of its account and workspace (e.g. access to this model) with your API provider.";
/// Hint after HTTP 404.
pub const HINT_NOT_FOUND: &str = "Check `model` and `base_url` in setup{}: the model id may be misspelled or retired, or base_url may not point at the API (with provider = \"openai\" it ends in the API's version path, e.g. /v1).";
/// Hint after HTTP 413.
pub const HINT_TOO_LARGE: &str =
    "The request is too large: the conversation has grown too long. Start a new session.";
/// Hint after a 429 that is a spend, quota or plan limit (not retried).
pub const HINT_QUOTA: &str =
    "This is a spend, quota or plan limit, not a momentary rate limit: waiting will not lift it. Check your plan, credits and usage limits with your API provider.";
/// Hint after HTTP 429 when the retries ran out.
pub const HINT_RATE_LIMITED: &str =
    "You hit your rate limit: wait a minute and ask again, or check your plan's limits.";
/// Hint after a server error (5xx, an overloaded or failing stream) when the
/// retries ran out.
pub const HINT_SERVER: &str =
    "The API is overloaded or failing; this is usually temporary. Ask again in a moment.";
/// Hint after a dropped connection or idle stream when the retries ran out;
/// `{base_url}` is not known here, so it is named generically.
pub const HINT_TRANSPORT: &str =
    "Check your network connection and `base_url` in setup{}, then ask again.";
/// Hint after an answer that could not be decoded.
pub const HINT_DECODE: &str = "The answer was not a model API response: check that `base_url` points at the API that `provider` names (a proxy may be in the way).";

/// The chat text for a failed request: `err`'s `Display` (which carries the
/// API's own type and message), then, on a new line, what to do. 400 and
/// other statuses without advice: the `Display` alone. [`ProviderError::MissingKey`]
/// and [`ProviderError::Request`] already say what to do: `Display` alone.
///
/// `api_key_env` is the configured variable name (`Config.api_key_env`),
/// named in the 401 hint.
pub fn user_message(err: &ProviderError, api_key_env: &str) -> String {
    let hint = match err {
        _ if super::retry::is_quota_error(err) => Some(HINT_QUOTA.to_string()),
        ProviderError::Http { status, .. } => match status {
            401 => Some(fill(HINT_UNAUTHORIZED, &[("env", api_key_env)])),
            403 => Some(HINT_FORBIDDEN.to_string()),
            404 => Some(HINT_NOT_FOUND.to_string()),
            413 => Some(HINT_TOO_LARGE.to_string()),
            429 => Some(HINT_RATE_LIMITED.to_string()),
            500..=599 => Some(HINT_SERVER.to_string()),
            _ => None,
        },
        ProviderError::Stream { kind, .. } if kind == "rate_limit_error" => {
            Some(HINT_RATE_LIMITED.to_string())
        }
        ProviderError::Stream { kind, .. }
            if super::retry::RETRYABLE_STREAM_ERRORS.contains(&kind.as_str()) =>
        {
            Some(HINT_SERVER.to_string())
        }
        ProviderError::Stream { .. } => None,
        ProviderError::Transport(_) => Some(HINT_TRANSPORT.to_string()),
        ProviderError::Decode(_) => Some(HINT_DECODE.to_string()),
        ProviderError::MissingKey { .. } | ProviderError::Request(_) => None,
    };
    match hint {
        Some(h) => format!("{err}\n{h}"),
        None => err.to_string(),
    }
}

/// [`RETRYING`] filled in: `delay` as [`wait_text`] gives it (the real
/// wait, sub-second ones too), `attempt` the 1-based attempt about to
/// start, `max_attempts` the total, `err` by its `Display`.
pub fn retrying_message(
    delay: Duration,
    attempt: u32,
    max_attempts: u32,
    err: &ProviderError,
) -> String {
    fill(
        RETRYING,
        &[
            ("secs", &wait_text(delay)),
            ("k", &attempt.to_string()),
            ("n", &max_attempts.to_string()),
            ("error", &err.to_string()),
        ],
    )
}

/// A wait in seconds as the chat shows it, without the unit: tenths below
/// 10 s (`0.4`, `2.5`, `2`), whole seconds above (`60`); a wait that is not
/// zero never shows as `0`.
pub fn wait_text(d: Duration) -> String {
    let ms = d.as_millis();
    if ms == 0 {
        return "0".to_string();
    }
    if ms >= 10_000 {
        return ((ms + 500) / 1000).to_string();
    }
    let tenths = ms.div_ceil(100).max(1);
    if tenths.is_multiple_of(10) {
        (tenths / 10).to_string()
    } else {
        format!("{}.{}", tenths / 10, tenths % 10)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn http(status: u16, kind: &str, message: &str) -> ProviderError {
        ProviderError::Http {
            status,
            kind: kind.into(),
            message: message.into(),
            retry_after: None,
            should_retry: None,
        }
    }

    #[test]
    fn golden_http_hints() {
        assert_eq!(
            user_message(&http(401, "authentication_error", "invalid x-api-key"), "ANTHROPIC_API_KEY"),
            "HTTP 401 authentication_error: invalid x-api-key\n\
             Check your API key: lathe reads it from $ANTHROPIC_API_KEY (setup{ api_key_env = \"...\" } names another variable)."
        );
        assert_eq!(
            user_message(&http(401, "authentication_error", "invalid x-api-key"), "MY_KEY"),
            "HTTP 401 authentication_error: invalid x-api-key\n\
             Check your API key: lathe reads it from $MY_KEY (setup{ api_key_env = \"...\" } names another variable)."
        );
        assert_eq!(
            user_message(&http(403, "permission_error", "no access"), "K"),
            "HTTP 403 permission_error: no access\n\
             Your API key is not allowed to do this: check the permissions of its account and workspace (e.g. access to this model) with your API provider."
        );
        assert_eq!(
            user_message(&http(404, "not_found_error", "model: claude-x"), "K"),
            "HTTP 404 not_found_error: model: claude-x\n\
             Check `model` and `base_url` in setup{}: the model id may be misspelled or retired, or base_url may not point at the API (with provider = \"openai\" it ends in the API's version path, e.g. /v1)."
        );
        assert_eq!(
            user_message(
                &http(
                    413,
                    "request_too_large",
                    "Request exceeds the maximum allowed number of bytes."
                ),
                "K"
            ),
            "HTTP 413 request_too_large: Request exceeds the maximum allowed number of bytes.\n\
             The request is too large: the conversation has grown too long. Start a new session."
        );
        assert_eq!(
            user_message(
                &http(
                    400,
                    "invalid_request_error",
                    "max_tokens: must be at least 1"
                ),
                "K"
            ),
            "HTTP 400 invalid_request_error: max_tokens: must be at least 1"
        );
        assert_eq!(
            user_message(&http(429, "rate_limit_error", "slow down"), "K"),
            "HTTP 429 rate_limit_error: slow down\n\
             You hit your rate limit: wait a minute and ask again, or check your plan's limits."
        );
        assert_eq!(
            user_message(&http(529, "overloaded_error", "Overloaded"), "K"),
            "HTTP 529 overloaded_error: Overloaded\n\
             The API is overloaded or failing; this is usually temporary. Ask again in a moment."
        );
    }

    #[test]
    fn golden_other_hints() {
        assert_eq!(
            user_message(
                &ProviderError::Stream {
                    kind: "overloaded_error".into(),
                    message: "Overloaded".into()
                },
                "K"
            ),
            "overloaded_error: Overloaded\n\
             The API is overloaded or failing; this is usually temporary. Ask again in a moment."
        );
        assert_eq!(
            user_message(
                &ProviderError::Transport("no data from the API for 90 s (idle timeout)".into()),
                "K"
            ),
            "connection error: no data from the API for 90 s (idle timeout)\n\
             Check your network connection and `base_url` in setup{}, then ask again."
        );
        assert_eq!(
            user_message(&ProviderError::MissingKey { env: "K".into() }, "K"),
            "no API key: set $K (or setup{ api_key_env = \"...\" }), or point base_url at a local server"
        );
        assert_eq!(
            user_message(&ProviderError::Decode("not json".into()), "K"),
            "could not decode a stream event: not json\n\
             The answer was not a model API response: check that `base_url` points at the API that `provider` names (a proxy may be in the way)."
        );
    }

    #[test]
    fn waits_show_as_they_are() {
        let w = |ms| wait_text(Duration::from_millis(ms));
        assert_eq!(
            [
                w(0),
                w(1),
                w(400),
                w(999),
                w(1000),
                w(1250),
                w(9_950),
                w(10_400),
                w(60_000)
            ],
            ["0", "0.1", "0.4", "1", "1", "1.3", "10", "10", "60"]
        );
    }

    #[test]
    fn a_spend_or_quota_limit_is_not_retried_and_says_so() {
        let quota = http(
            429,
            "rate_limit_error",
            "Extra usage is required for long context requests.",
        );
        assert!(!super::super::retry::is_retryable(&quota));
        assert_eq!(
            user_message(&quota, "K"),
            "HTTP 429 rate_limit_error: Extra usage is required for long context requests.\n\
             This is a spend, quota or plan limit, not a momentary rate limit: waiting will not lift it. Check your plan, credits and usage limits with your API provider."
        );
        let openai = http(429, "insufficient_quota", "You exceeded your current quota");
        assert!(!super::super::retry::is_retryable(&openai));
        let plain = http(
            429,
            "rate_limit_error",
            "Number of requests has exceeded your rate limit",
        );
        assert!(super::super::retry::is_retryable(&plain));
    }

    #[test]
    fn golden_retrying() {
        let e = http(529, "overloaded_error", "Overloaded");
        assert_eq!(
            retrying_message(Duration::from_millis(2000), 2, 5, &e),
            "retrying in 2s (attempt 2 of 5): HTTP 529 overloaded_error: Overloaded"
        );
        assert_eq!(
            retrying_message(Duration::from_millis(1200), 5, 5, &e),
            "retrying in 1.2s (attempt 5 of 5): HTTP 529 overloaded_error: Overloaded"
        );
        assert_eq!(
            retrying_message(Duration::from_millis(400), 2, 5, &e),
            "retrying in 0.4s (attempt 2 of 5): HTTP 529 overloaded_error: Overloaded"
        );
        assert_eq!(
            retrying_message(Duration::ZERO, 3, 4, &e),
            "retrying in 0s (attempt 3 of 4): HTTP 529 overloaded_error: Overloaded"
        );
    }
}
