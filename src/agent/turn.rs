//! One turn: the loop of model requests and tool runs started by one `ask`.

use std::sync::Arc;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::execution::{interrupted_result, run_tool_use, ExecEnv, PendingToolUse};
use crate::protocol::{MessagesRequest, StopReason};
use crate::provider::assemble::{Assembled, MessageAssembler};
use crate::provider::Provider;

use super::transcript::Transcript;
use super::{AgentEvent, EventSink, ToolStatus, TurnOutcome};

/// Notice shown when `max_turns` model requests did not finish the task.
pub const MAX_TURNS_REACHED: &str =
    "Stopped after {n} model requests (max_turns). Ask again to let lathe continue.";

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

/// How one model request ended.
enum Reply {
    /// The message streamed to `message_stop` (or the stream closed cleanly).
    Complete {
        tool_uses: Vec<PendingToolUse>,
        stop_reason: Option<StopReason>,
    },
    /// The user stopped the turn while the model was answering.
    Interrupted { tool_uses: Vec<PendingToolUse> },
    /// The API or the connection failed; the text is shown in the chat.
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
                Reply::Interrupted { tool_uses } => {
                    self.interrupt_all(&tool_uses);
                    return TurnOutcome::Stopped;
                }
                Reply::Complete {
                    tool_uses,
                    stop_reason,
                } => {
                    if tool_uses.is_empty() {
                        return TurnOutcome::Done;
                    }
                    self.run_tools(&tool_uses).await;
                    if self.cancel.is_cancelled() {
                        return TurnOutcome::Stopped;
                    }
                    if stop_reason != Some(StopReason::ToolUse) {
                        return TurnOutcome::Done;
                    }
                }
            }
        }
        let n = self.config.max_turns.to_string();
        self.sink.emit(AgentEvent::Notice {
            text: MAX_TURNS_REACHED.replace("{n}", &n),
            is_error: false,
        });
        TurnOutcome::Done
    }

    /// One model request: streams the answer into the chat and the
    /// transcript. A failed request leaves the transcript as it was.
    async fn request(&self) -> Reply {
        let req = MessagesRequest {
            model: self.config.model.clone(),
            max_tokens: self.config.max_tokens,
            system: self.system.clone(),
            messages: self.transcript.snapshot(),
            tools: self.env.registry.definitions(),
            stream: true,
        };
        self.sink.emit(AgentEvent::AssistantStarted);
        let mut stream = tokio::select! {
            r = self.provider.stream(&req) => match r {
                Ok(s) => s,
                Err(e) => return Reply::Failed(e.to_string()),
            },
            _ = self.cancel.cancelled() => return Reply::Interrupted { tool_uses: Vec::new() },
        };
        let mut asm = MessageAssembler::new();
        let mut tool_uses = Vec::new();
        loop {
            let next = tokio::select! {
                n = stream.next() => n,
                _ = self.cancel.cancelled() => {
                    // Keep what completed; drop blocks still streaming.
                    self.transcript.push_assistant(asm.message());
                    return Reply::Interrupted { tool_uses };
                }
            };
            let event = match next {
                None => break,
                Some(Ok(ev)) => ev,
                Some(Err(e)) => return Reply::Failed(e.to_string()),
            };
            match asm.push(event) {
                Some(Assembled::TextDelta { text, .. }) => {
                    self.sink.emit(AgentEvent::TextDelta { text })
                }
                Some(Assembled::ToolUseComplete(done)) => tool_uses.push(PendingToolUse {
                    tool_use: done.to_tool_use(),
                    input_error: done.input.as_ref().err().map(|e| e.error.clone()),
                }),
                _ => {}
            }
        }
        self.transcript.push_assistant(asm.message());
        Reply::Complete {
            tool_uses,
            stop_reason: asm.stop_reason().cloned(),
        }
    }

    /// Runs the calls one after another in the model's order; once the user
    /// interrupts, the rest get interrupted results without running.
    async fn run_tools(&self, calls: &[PendingToolUse]) {
        let mut results = Vec::with_capacity(calls.len());
        for call in calls {
            if self.cancel.is_cancelled() {
                results.push(self.interrupted(call));
            } else {
                results.push(run_tool_use(call, &self.env).await.result);
            }
        }
        self.transcript.push_tool_results(results);
    }

    fn interrupt_all(&self, calls: &[PendingToolUse]) {
        let results = calls.iter().map(|c| self.interrupted(c)).collect();
        self.transcript.push_tool_results(results);
    }

    fn interrupted(&self, call: &PendingToolUse) -> crate::protocol::ToolResult {
        let result = interrupted_result(&call.tool_use);
        self.sink.emit(AgentEvent::ToolFinished {
            id: call.tool_use.id.clone(),
            name: call.tool_use.name.clone(),
            status: ToolStatus::Interrupted,
            summary: "interrupted".into(),
        });
        result
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn max_turns_text() {
        assert_eq!(
            super::MAX_TURNS_REACHED.replace("{n}", "50"),
            "Stopped after 50 model requests (max_turns). Ask again to let lathe continue."
        );
    }
}
