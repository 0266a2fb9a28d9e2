//! One turn: the loop of model requests and tool runs started by one `ask`.

use std::sync::Arc;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::config::{Config, StreamFallback};
use crate::execution::{ExecEnv, PendingToolUse, ToolExecutor, HOOK_STOPPED_TURN};
use crate::protocol::{Message, MessagesRequest, StopReason};
use crate::provider::assemble::{Assembled, MessageAssembler};
use crate::provider::hints::{retrying_message, user_message};
use crate::provider::replay::response_events;
use crate::provider::retry::RetryPolicy;
use crate::provider::{EventStream, Provider, ProviderError};

use super::transcript::Transcript;
use crate::events::{AgentEvent, EventSink, TurnOutcome};
use crate::text::fill;

/// Notice shown when `max_turns` model requests did not finish the task.
pub const MAX_TURNS_REACHED: &str =
    "Stopped after {n} model requests (max_turns). Ask again to let lathe continue.";

/// Notice when an answer failed after some of its tool calls ran. `{n}`.
pub const EFFECTS_REMAIN: &str =
    "The answer broke off after {n} of its tool calls ran; their results were dropped, but what they changed remains.";

/// Everything one turn needs; built by `Session::ask`.
pub(crate) struct Turn {
    pub config: Config,
    pub system: String,
    pub provider: Arc<dyn Provider>,
    pub transcript: Arc<Transcript>,
    pub sink: Arc<dyn EventSink>,
    pub env: ExecEnv,
    pub cancel: CancellationToken,
}

/// How one try of a request ended.
enum Attempt {
    /// Finished or interrupted: no retry.
    Reply(Reply),
    /// Failed; `output_began` when the chat already showed part of it.
    Failed {
        error: ProviderError,
        output_began: bool,
    },
}

/// How one model request ended.
enum Reply {
    /// The message streamed to its end and its tool calls (if any) ran.
    Complete {
        ran_tools: bool,
        stop_reason: Option<StopReason>,
    },
    /// The user stopped the turn; the completed part of the answer and one
    /// result per completed `tool_use` are in the transcript.
    Interrupted,
    /// The API or the connection failed (retries exhausted or not
    /// retryable); nothing of this answer was kept. The text is for the user.
    Failed(String),
}

impl Turn {
    /// Runs the turn for `prompt` to its end.
    pub async fn run(self, prompt: &str) -> TurnOutcome {
        self.transcript.push_user_text(prompt);
        for _ in 0..self.config.max_turns {
            if self.cancel.is_cancelled() {
                return TurnOutcome::Stopped;
            }
            match self.request().await {
                Reply::Failed(msg) => {
                    self.sink.emit(AgentEvent::Notice {
                        text: msg.clone(),
                        is_error: true,
                    });
                    return TurnOutcome::Error(msg);
                }
                Reply::Interrupted => return TurnOutcome::Stopped,
                Reply::Complete {
                    ran_tools,
                    stop_reason,
                } => {
                    if self.cancel.is_cancelled() {
                        return TurnOutcome::Stopped;
                    }
                    if let Some(reason) = self.env.turn_stop.requested() {
                        self.sink.emit(AgentEvent::Notice {
                            text: fill(HOOK_STOPPED_TURN, &[("reason", &reason)]),
                            is_error: false,
                        });
                        return TurnOutcome::Done;
                    }
                    if !ran_tools || stop_reason != Some(StopReason::ToolUse) {
                        return TurnOutcome::Done;
                    }
                }
            }
        }
        let n = self.config.max_turns.to_string();
        self.sink.emit(AgentEvent::Notice {
            text: fill(MAX_TURNS_REACHED, &[("n", &n)]),
            is_error: false,
        });
        TurnOutcome::Done
    }

    /// One model request, retried on retryable failures (429, 5xx,
    /// `overloaded_error`, dropped or idle connections) with backoff; the
    /// chat shows each wait. An answer that fails after output began is
    /// withdrawn and requested again — streaming, or not streaming when
    /// `stream_fallback = "non_streaming"`; `"off"` ends the turn instead.
    async fn request(&self) -> Reply {
        let req = MessagesRequest {
            model: self.config.model.clone(),
            max_tokens: self.config.max_tokens,
            system: self.system.clone(),
            messages: self.transcript.snapshot(),
            tools: self.env.registry.definitions(),
            stream: true,
        };
        let policy = RetryPolicy::from_config(&self.config);
        let mut streaming = true;
        let mut attempt = 1;
        loop {
            let (error, output_began) = match self.attempt(&req, streaming).await {
                Attempt::Reply(reply) => return reply,
                Attempt::Failed {
                    error,
                    output_began,
                } => (error, output_began),
            };
            let give_up = || Reply::Failed(user_message(&error, &self.config.api_key_env));
            if output_began {
                match self.config.stream_fallback {
                    StreamFallback::Off => return give_up(),
                    StreamFallback::NonStreaming => streaming = false,
                    StreamFallback::Streaming => {}
                }
            }
            let Some(wait) = policy.next_delay(attempt, &error) else {
                return give_up();
            };
            attempt += 1;
            self.sink.emit(AgentEvent::Notice {
                text: retrying_message(wait, attempt, policy.max_attempts, &error),
                is_error: false,
            });
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = self.cancel.cancelled() => return Reply::Interrupted,
            }
        }
    }

    /// One try: streams the answer into the chat and the transcript, running
    /// tool calls as they complete (or after the answer when
    /// `streaming_tools` is off). A failed try leaves the transcript as it was.
    async fn attempt(&self, req: &MessagesRequest, streaming: bool) -> Attempt {
        self.sink.emit(AgentEvent::AssistantStarted);
        let opened = tokio::select! {
            r = self.open(req, streaming) => r,
            _ = self.cancel.cancelled() => return Attempt::Reply(Reply::Interrupted),
        };
        let mut stream = match opened {
            Ok(s) => s,
            Err(error) => {
                return Attempt::Failed {
                    error,
                    output_began: false,
                }
            }
        };
        let mut asm = MessageAssembler::new();
        let mut exec = ToolExecutor::new(self.env.clone(), self.config.max_tool_concurrency);
        let mut held = Vec::new();
        let mut output_began = false;
        loop {
            let next = tokio::select! {
                n = stream.next() => n,
                _ = exec.next(), if exec.has_running() => continue,
                _ = self.cancel.cancelled() => {
                    // Keep what completed; blocks still streaming are dropped,
                    // and calls not yet started get interrupted results.
                    self.keep(asm.message(), exec, held).await;
                    return Attempt::Reply(Reply::Interrupted);
                }
            };
            let event = match next {
                None => break,
                Some(Ok(ev)) => ev,
                Some(Err(error)) => {
                    if output_began {
                        self.sink.emit(AgentEvent::AssistantWithdrawn {
                            reason: error.to_string(),
                        });
                    }
                    self.discard(exec).await;
                    return Attempt::Failed {
                        error,
                        output_began,
                    };
                }
            };
            match asm.push(event) {
                Some(Assembled::TextDelta { text, .. }) => {
                    output_began = true;
                    self.sink.emit(AgentEvent::TextDelta { text });
                }
                Some(Assembled::ToolUseComplete(done)) => {
                    output_began = true;
                    let call = PendingToolUse {
                        tool_use: done.to_tool_use(),
                        input_error: done.input.as_ref().err().map(|e| e.error.clone()),
                    };
                    if self.config.streaming_tools {
                        exec.add(call);
                    } else {
                        held.push(call);
                    }
                }
                Some(Assembled::ToolUseStarted { .. } | Assembled::ThinkingDelta { .. }) => {
                    output_began = true;
                }
                _ => {}
            }
        }
        let ran_tools = self.keep(asm.message(), exec, held).await;
        Attempt::Reply(Reply::Complete {
            ran_tools,
            stop_reason: asm.stop_reason().cloned(),
        })
    }

    /// Puts the (completed part of the) answer in the transcript, runs the
    /// calls still held back, and adds one result per `tool_use` in call
    /// order. Returns whether the answer had tool calls.
    async fn keep(
        &self,
        message: Message,
        mut exec: ToolExecutor,
        held: Vec<PendingToolUse>,
    ) -> bool {
        let ran_tools = message.tool_uses().next().is_some();
        self.transcript.push_assistant(message);
        for call in held {
            exec.add(call);
        }
        self.transcript.push_tool_results(exec.finish().await);
        ran_tools
    }

    /// The answer's events: the SSE stream, or a complete (non-streaming)
    /// answer replayed as the same events.
    async fn open(
        &self,
        req: &MessagesRequest,
        streaming: bool,
    ) -> Result<EventStream, ProviderError> {
        if streaming {
            return self.provider.stream(req).await;
        }
        let mut req = req.clone();
        req.stream = false;
        let response = self.provider.complete(&req).await?;
        let events = response_events(&response).into_iter().map(Ok);
        Ok(Box::pin(futures::stream::iter(events)))
    }

    /// Drops a failed answer's executor: queued calls never start, running
    /// ones finish (an Edit is never half-applied) and their results are
    /// dropped with the answer; the chat says their effects remain.
    async fn discard(&self, exec: ToolExecutor) {
        let ran = exec.abandon().await;
        if ran > 0 {
            self.sink.emit(AgentEvent::Notice {
                text: fill(EFFECTS_REMAIN, &[("n", &ran.to_string())]),
                is_error: false,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn effects_remain_text() {
        assert_eq!(
            crate::text::fill(super::EFFECTS_REMAIN, &[("n", "2")]),
            "The answer broke off after 2 of its tool calls ran; their results were dropped, but what they changed remains."
        );
    }

    #[test]
    fn max_turns_text() {
        assert_eq!(
            crate::text::fill(super::MAX_TURNS_REACHED, &[("n", "50")]),
            "Stopped after 50 model requests (max_turns). Ask again to let lathe continue."
        );
    }
}
