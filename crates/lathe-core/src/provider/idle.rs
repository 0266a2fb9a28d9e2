//! Idle-stream detection: a response body that sends no bytes for a while
//! (configurable, 90 s by default) becomes an error instead of hanging the
//! turn, and is retried (docs/provider.md, "The model protocol").
//!
//! The Messages API sends `ping` events while a long answer is being
//! produced, so silence on an open stream means the connection is dead
//! (a proxy or NAT dropped it without a reset). [`with_idle_timeout`] wraps
//! the byte stream (not the event stream) so every byte counts as activity.

use std::time::Duration;

use crate::text::fill;
use futures::{Stream, StreamExt};

/// Default of `setup{ idle_timeout_ms }`: 90 000 ms.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// Template of the error text when no bytes arrived for the idle timeout;
/// `{secs}` is the timeout in whole seconds (rounded up). Shown to the user
/// inside [`super::ProviderError::Transport`]: "connection error: no data
/// from the API for 90 s (idle timeout)".
pub const IDLE_TIMEOUT_MESSAGE: &str = "no data from the API for {secs} s (idle timeout)";

/// [`IDLE_TIMEOUT_MESSAGE`] for `timeout` (whole seconds, rounded up, so a
/// 300 ms test timeout reads "1 s").
pub fn idle_timeout_message(timeout: Duration) -> String {
    fill(
        IDLE_TIMEOUT_MESSAGE,
        &[("secs", &ceil_secs(timeout).to_string())],
    )
}

/// `d` in whole seconds, rounded up.
pub(crate) fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// An error of the wrapped byte stream, or the idle timeout.
///
/// `Display` and `source()` of [`IdleError::Inner`] are the inner error's own,
/// so [`super::sse::decode`] reports it exactly as without the wrapper;
/// [`IdleError::Idle`] displays as [`idle_timeout_message`].
#[derive(Debug)]
pub enum IdleError<E> {
    /// The byte stream's own error (connection reset, …).
    Inner(E),
    /// No item arrived within this timeout.
    Idle(Duration),
}

impl<E: std::fmt::Display> std::fmt::Display for IdleError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IdleError::Inner(e) => e.fmt(f),
            IdleError::Idle(t) => f.write_str(&idle_timeout_message(*t)),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for IdleError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            IdleError::Inner(e) => e.source(),
            IdleError::Idle(_) => None,
        }
    }
}

/// Wraps `bytes` (a response body's chunks) so that waiting longer than
/// `timeout` for the next chunk yields `Err(IdleError::Idle(timeout))` once
/// and then ends the stream; the inner stream is dropped then, which closes
/// the connection. Chunks and inner errors pass through unchanged; the
/// timer restarts at every item. A zero `timeout` is treated as 1 ms.
///
/// Uses `tokio::time::timeout`, so it must be polled inside a tokio runtime
/// with the time driver (it follows `tokio::time::pause()` in tests).
pub fn with_idle_timeout<S, B, E>(
    bytes: S,
    timeout: Duration,
) -> impl Stream<Item = Result<B, IdleError<E>>> + Send + 'static
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: Send + 'static,
    E: Send + 'static,
{
    let timeout = timeout.max(Duration::from_millis(1));
    futures::stream::unfold(Some(Box::pin(bytes)), move |state| async move {
        let mut inner = state?;
        match tokio::time::timeout(timeout, inner.next()).await {
            Err(_) => Some((Err(IdleError::Idle(timeout)), None)),
            Ok(None) => None,
            Ok(Some(item)) => Some((item.map_err(IdleError::Inner), Some(inner))),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::stream;
    use pretty_assertions::assert_eq;

    #[test]
    fn message_golden() {
        assert_eq!(
            idle_timeout_message(DEFAULT_IDLE_TIMEOUT),
            "no data from the API for 90 s (idle timeout)"
        );
        assert_eq!(
            idle_timeout_message(Duration::from_millis(300)),
            "no data from the API for 1 s (idle timeout)"
        );
        assert_eq!(
            IdleError::<std::io::Error>::Idle(Duration::from_secs(5)).to_string(),
            "no data from the API for 5 s (idle timeout)"
        );
    }

    /// Two chunks, then silence: with a paused clock the timer fires
    /// exactly at the timeout, after both chunks, and the stream ends.
    #[tokio::test(start_paused = true)]
    async fn silence_after_chunks_is_one_idle_error_then_end() {
        let inner =
            stream::iter(vec![Ok::<_, std::io::Error>("a"), Ok("b")]).chain(stream::pending());
        let started = tokio::time::Instant::now();
        let got: Vec<_> = with_idle_timeout(inner, Duration::from_secs(90))
            .collect()
            .await;
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got[0].as_ref().ok(), Some(&"a"));
        assert_eq!(got[1].as_ref().ok(), Some(&"b"));
        assert!(
            matches!(got[2], Err(IdleError::Idle(d)) if d == Duration::from_secs(90)),
            "{got:?}"
        );
        assert_eq!(started.elapsed(), Duration::from_secs(90));
    }

    /// Chunks 60 s apart never trip a 90 s timeout: the timer restarts.
    #[tokio::test(start_paused = true)]
    async fn slow_but_steady_chunks_pass() {
        let inner = stream::iter(0..4).then(|i| async move {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok::<_, std::io::Error>(i)
        });
        let got: Vec<_> = with_idle_timeout(inner, Duration::from_secs(90))
            .map(|r| r.ok())
            .collect()
            .await;
        assert_eq!(got, vec![Some(0), Some(1), Some(2), Some(3)]);
    }

    /// The inner error keeps its own text, so `sse::chain` shows it as before.
    #[tokio::test(start_paused = true)]
    async fn inner_errors_pass_through_with_their_text() {
        let err = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset by peer");
        let inner = stream::iter(vec![Err::<&str, _>(err)]);
        let got: Vec<_> = with_idle_timeout(inner, Duration::from_secs(1))
            .collect()
            .await;
        assert_eq!(got.len(), 1);
        let e = got.into_iter().next().unwrap().unwrap_err();
        assert_eq!(crate::provider::sse::chain(&e), "reset by peer");
    }
}
