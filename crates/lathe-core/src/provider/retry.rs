//! Which failed model requests are retried, and how long to wait first
//! (docs/provider.md, "The model protocol"). Pure: the turn loop sleeps
//! and re-sends; this module only decides.
//!
//! Retryable, as the official Anthropic SDKs decide
//! (<https://docs.anthropic.com/en/api/errors>, "Retries" in the SDK
//! READMEs): HTTP 408, 409, 429 and 500–599 (529 `overloaded_error`
//! included), a dropped connection or idle stream
//! ([`ProviderError::Transport`]), and an `error` event inside a 200 stream
//! whose type is one of [`RETRYABLE_STREAM_ERRORS`]. Everything else — 400,
//! 401, 403, 404, 413, other 4xx, a missing key, a request that could not be
//! built, an undecodable answer — fails at once. Before these rules, as in
//! the SDKs: a server's `x-should-retry: true|false` decides, and a 429
//! that is a spend or quota limit ([`is_quota_error`]) is never retried.

use std::time::Duration;

use super::ProviderError;
use crate::config::Config;

/// Default [`RetryPolicy::max_attempts`]: 5 tries in all (the first one and
/// up to 4 retries), i.e. `setup{ max_retries = 4 }`.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 5;
/// Default [`RetryPolicy::base_delay`]: 500 ms before the first retry.
pub const DEFAULT_BASE_DELAY: Duration = Duration::from_millis(500);
/// Default [`RetryPolicy::max_delay`]: backoff never grows past 32 s.
pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(32);
/// Default [`RetryPolicy::retry_after_cap`]: a server's `retry-after` is
/// honoured up to 60 s.
pub const DEFAULT_RETRY_AFTER_CAP: Duration = Duration::from_secs(60);

/// `error` event types of a 200 stream that are retried: the in-stream
/// forms of HTTP 529 (`overloaded_error`), 500 (`api_error`), 429
/// (`rate_limit_error`) and 504 (`timeout_error`).
pub const RETRYABLE_STREAM_ERRORS: &[&str] = &[
    "overloaded_error",
    "api_error",
    "rate_limit_error",
    "timeout_error",
];

/// How often and how patiently a failed request is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries in all, **counting the first one** (5 = the first try and up
    /// to 4 retries). 0 and 1 both mean "never retry".
    pub max_attempts: u32,
    /// Backoff before the first retry; it doubles for each later one.
    pub base_delay: Duration,
    /// Upper bound of the exponential backoff (before jitter).
    pub max_delay: Duration,
    /// Upper bound of a server-sent `retry-after`: a longer one is cut to this.
    pub retry_after_cap: Duration,
}

impl Default for RetryPolicy {
    /// [`DEFAULT_MAX_ATTEMPTS`], [`DEFAULT_BASE_DELAY`], [`DEFAULT_MAX_DELAY`],
    /// [`DEFAULT_RETRY_AFTER_CAP`].
    fn default() -> Self {
        Self {
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            base_delay: DEFAULT_BASE_DELAY,
            max_delay: DEFAULT_MAX_DELAY,
            retry_after_cap: DEFAULT_RETRY_AFTER_CAP,
        }
    }
}

impl RetryPolicy {
    /// The defaults with `max_attempts = cfg.max_retries + 1` (saturating):
    /// `setup{ max_retries = N }` counts retries, not tries.
    pub fn from_config(cfg: &Config) -> Self {
        Self {
            max_attempts: cfg.max_retries.saturating_add(1),
            ..Self::default()
        }
    }

    /// How long to wait after attempt number `attempt` (1-based: 1 is the
    /// first try) failed, before attempt `attempt + 1`.
    ///
    /// With `retry_after` (the server's wish, see
    /// [`ProviderError::retry_after`]): exactly that, cut to
    /// [`retry_after_cap`](Self::retry_after_cap) — no jitter, the server
    /// already spread its clients. Without: "equal jitter" exponential
    /// backoff, `b = min(max_delay, base_delay × 2^(attempt−1))`, then a
    /// uniformly random delay in `[b/2, b]` so clients that failed together
    /// do not come back together. `attempt` 0 is treated as 1.
    ///
    /// Uses the thread-local `fastrand` generator; see
    /// [`delay_with_rng`](Self::delay_with_rng) for a seeded one.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        self.delay_with_rng(attempt, retry_after, &mut fastrand::Rng::new())
    }

    /// [`delay`](Self::delay) drawing its jitter from `rng`
    /// (`fastrand::Rng::with_seed(n)` makes it deterministic).
    pub fn delay_with_rng(
        &self,
        attempt: u32,
        retry_after: Option<Duration>,
        rng: &mut fastrand::Rng,
    ) -> Duration {
        if let Some(ra) = retry_after {
            return ra.min(self.retry_after_cap);
        }
        let doublings = attempt.saturating_sub(1).min(31);
        let backoff = self
            .base_delay
            .checked_mul(1u32 << doublings)
            .unwrap_or(self.max_delay)
            .min(self.max_delay);
        let half = backoff / 2;
        let spread = u64::try_from((backoff - half).as_millis()).unwrap_or(u64::MAX);
        half + Duration::from_millis(rng.u64(0..=spread))
    }

    /// The wait before retrying after attempt `attempt` (1-based) failed
    /// with `err`, or `None` when the turn should fail instead: `err` is not
    /// [`is_retryable`], or `attempt` already reached
    /// [`max_attempts`](Self::max_attempts). The wait is
    /// [`delay`](Self::delay) with the error's own `retry-after`.
    pub fn next_delay(&self, attempt: u32, err: &ProviderError) -> Option<Duration> {
        if !is_retryable(err) || attempt >= self.max_attempts {
            return None;
        }
        Some(self.delay(attempt, err.retry_after()))
    }
}

/// `true` when sending the same request again may succeed (see the module
/// doc for the list). Pure; ignores how many attempts were made.
pub fn is_retryable(err: &ProviderError) -> bool {
    if is_quota_error(err) {
        return false;
    }
    if let ProviderError::Http {
        should_retry: Some(verdict),
        ..
    } = err
    {
        return *verdict;
    }
    match err {
        ProviderError::Http { status, .. } => {
            matches!(status, 408 | 409 | 429 | 500..=599)
        }
        ProviderError::Stream { kind, .. } => RETRYABLE_STREAM_ERRORS.contains(&kind.as_str()),
        ProviderError::Transport(_) => true,
        ProviderError::MissingKey { .. } | ProviderError::Request(_) | ProviderError::Decode(_) => {
            false
        }
    }
}

/// Words of a rate-limit error that is a spend, quota or plan limit rather
/// than a momentary rate limit: waiting does not lift it ("Extra usage is
/// required for long context requests.", "You have reached your specified
/// API usage limits", OpenAI's `insufficient_quota`).
const QUOTA_WORDS: &[&str] = &[
    "usage limit",
    "usage is required",
    "usage credits",
    "extra usage",
    "spend limit",
    "spending limit",
    "quota",
    "credit balance",
    "billing",
];

/// `true` for a 429 (or a `rate_limit_error` in a stream) whose message says
/// it is a spend, quota or plan limit (`QUOTA_WORDS`): retrying it would
/// only wait in vain, so it is not retried and the user is told.
pub fn is_quota_error(err: &ProviderError) -> bool {
    let message = match err {
        ProviderError::Http {
            status: 429,
            message,
            kind,
            ..
        } => format!("{kind} {message}"),
        ProviderError::Stream { kind, message } if kind == "rate_limit_error" => message.clone(),
        _ => return false,
    };
    let m = message.to_lowercase();
    QUOTA_WORDS.iter().any(|w| m.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn http(status: u16) -> ProviderError {
        ProviderError::Http {
            status,
            kind: "x".into(),
            message: "m".into(),
            retry_after: None,
            should_retry: None,
        }
    }

    fn stream(kind: &str) -> ProviderError {
        ProviderError::Stream {
            kind: kind.into(),
            message: "m".into(),
        }
    }

    #[test]
    fn retryable_errors() {
        for s in [408, 409, 429, 500, 502, 503, 504, 529, 599] {
            assert!(is_retryable(&http(s)), "{s}");
        }
        for k in RETRYABLE_STREAM_ERRORS {
            assert!(is_retryable(&stream(k)), "{k}");
        }
        assert!(is_retryable(&ProviderError::Transport(
            "stream ended before message_stop".into()
        )));
    }

    #[test]
    fn permanent_errors() {
        for s in [400, 401, 402, 403, 404, 413, 422] {
            assert!(!is_retryable(&http(s)), "{s}");
        }
        for k in ["invalid_request_error", "authentication_error", "whatever"] {
            assert!(!is_retryable(&stream(k)), "{k}");
        }
        assert!(!is_retryable(&ProviderError::MissingKey {
            env: "ANTHROPIC_API_KEY".into()
        }));
        assert!(!is_retryable(&ProviderError::Decode("bad".into())));
        assert!(!is_retryable(&ProviderError::Request("bad".into())));
    }

    #[test]
    fn backoff_doubles_within_equal_jitter_bounds_and_caps() {
        let p = RetryPolicy::default();
        let mut rng = fastrand::Rng::with_seed(7);
        // (attempt, b): delay must be in [b/2, b].
        let cases = [
            (0, 500),
            (1, 500),
            (2, 1000),
            (3, 2000),
            (4, 4000),
            (7, 32_000),
            (8, 32_000),
            (40, 32_000),
            (u32::MAX, 32_000),
        ];
        for (attempt, b) in cases {
            for _ in 0..200 {
                let d = p.delay_with_rng(attempt, None, &mut rng).as_millis();
                assert!(d >= b / 2 && d <= b, "attempt {attempt}: {d} ms");
            }
        }
    }

    #[test]
    fn jitter_actually_varies_and_is_deterministic_with_a_seed() {
        let p = RetryPolicy::default();
        let draw = |seed| {
            let mut rng = fastrand::Rng::with_seed(seed);
            (0..20)
                .map(|_| p.delay_with_rng(4, None, &mut rng))
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(1), draw(1));
        let distinct: std::collections::BTreeSet<_> = draw(1).into_iter().collect();
        assert!(distinct.len() > 10, "{distinct:?}");
        // The unseeded generator stays within the same bounds.
        let d = p.delay(4, None);
        assert!(d >= Duration::from_secs(2) && d <= Duration::from_secs(4));
    }

    #[test]
    fn retry_after_is_honoured_exactly_but_capped() {
        let p = RetryPolicy::default();
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(7))),
            Duration::from_secs(7)
        );
        assert_eq!(p.delay(5, Some(Duration::ZERO)), Duration::ZERO);
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(3600))),
            DEFAULT_RETRY_AFTER_CAP
        );
    }

    #[test]
    fn next_delay_stops_at_max_attempts_and_for_permanent_errors() {
        let p = RetryPolicy {
            max_attempts: 3,
            ..RetryPolicy::default()
        };
        let e529 = ProviderError::Http {
            status: 529,
            kind: "overloaded_error".into(),
            message: "Overloaded".into(),
            retry_after: Some(Duration::from_secs(2)),
            should_retry: None,
        };
        assert_eq!(p.next_delay(1, &e529), Some(Duration::from_secs(2)));
        assert_eq!(p.next_delay(2, &e529), Some(Duration::from_secs(2)));
        assert_eq!(p.next_delay(3, &e529), None);
        assert_eq!(p.next_delay(1, &http(401)), None);
        let d = p.next_delay(1, &stream("overloaded_error")).unwrap();
        assert!(d >= Duration::from_millis(250) && d <= Duration::from_millis(500));
    }

    #[test]
    fn from_config_counts_retries_after_the_first_try() {
        let mut cfg = Config::new(std::path::Path::new("/p"));
        assert_eq!(RetryPolicy::from_config(&cfg).max_attempts, 5);
        cfg.max_retries = 0;
        assert_eq!(RetryPolicy::from_config(&cfg).max_attempts, 1);
        assert_eq!(
            RetryPolicy::from_config(&cfg).next_delay(1, &http(529)),
            None
        );
        cfg.max_retries = u32::MAX;
        assert_eq!(RetryPolicy::from_config(&cfg).max_attempts, u32::MAX);
    }
}
