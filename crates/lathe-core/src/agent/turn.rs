//! One turn: the loop of model requests and tool runs started by one `ask`.
//!
//! How each `stop_reason` ends a request (the Messages API's documented
//! handling, docs/provider.md "The model protocol"):
//! - `tool_use`: the calls ran; their results go back in the next request.
//!   So with any other stop reason (but `max_tokens` and `refusal`) when the
//!   answer had calls: some proxies send `end_turn` after a `tool_use`.
//! - `end_turn`, `stop_sequence`: the turn is done.
//! - `max_tokens`: the block being written when the limit hit is cut; a cut
//!   `tool_use` never runs (it is held until the next block or the stop
//!   reason shows it was not the last). The answer is kept and the model
//!   continues it once with `retry_max_tokens`; cut again, the user is told.
//! - `pause_turn`: the answer (server tool blocks included) is sent back
//!   as it is, and the model continues.
//! - `refusal`: the user is told; the refused exchange (from this turn's
//!   prompt on) is taken out of the conversation, as the API requires.
//!
//! A stream that breaks after some of its tool calls started keeps what
//! completed (the `tool_use` blocks with their results) and continues from
//! there, so a call with side effects never runs twice because of a retry.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::config::{Config, StreamFallback};
use crate::execution::{run_tool_use, ExecEnv, PendingToolUse, ToolExecutor, HOOK_STOPPED_TURN};
use crate::protocol::{
    ContentBlock, Message, MessagesRequest, Role, StopReason, StreamEvent, ToolResultContent,
    ToolUse, Usage,
};
use crate::provider::assemble::{Assembled, MessageAssembler};
use crate::provider::hints::{retrying_message, user_message};
use crate::provider::replay::response_events;
use crate::provider::retry::{is_retryable, RetryPolicy};
use crate::provider::{EventStream, Provider, ProviderError};

mod window;

use super::context::{self, UserTurn};
use super::transcript::Transcript;
use crate::events::{AgentEvent, AttachedItem, EventSink, TurnOutcome};
use crate::text::fill;

/// Notice shown when `max_turns` model requests did not finish the task.
pub const MAX_TURNS_REACHED: &str =
    "Stopped after {n} model requests (max_turns). Ask again to let lathe continue.";

/// Notice when an answer failed after some of its tool calls started: what
/// completed is kept. `{n}` (`1 tool call`), `{error}`.
pub const EFFECTS_KEPT: &str =
    "The answer broke off ({error}) after {n} started. What completed is kept with its results, and lathe asks the model to continue from there, so nothing runs twice.";

/// Notice when an answer was cut at `max_tokens` and is continued. `{max}`,
/// `{next}`, `{cut}` (what was cut).
pub const CUT_CONTINUING: &str =
    "The answer was cut at the max_tokens limit ({max} tokens){cut}. lathe asks the model to continue with max_tokens {next}.";

/// Notice when an answer was cut again. `{max}`, `{cut}`.
pub const CUT_AGAIN: &str =
    "The answer was cut at the max_tokens limit again ({max} tokens){cut}. The turn ends here; ask the model to go on in smaller steps, or raise retry_max_tokens in setup().";

/// `{cut}` of [`CUT_CONTINUING`] and [`CUT_AGAIN`] when a tool call was cut.
/// `{tool}`.
pub const CUT_TOOL: &str = "; its last tool call ({tool}) was incomplete and did not run";

/// Notice when the model refused. `{details}` (empty or ` (…)`).
pub const REFUSED: &str =
    "The model declined to answer this request{details}. The request and its answer were taken out of the conversation; rephrase it or ask something else.";

/// Model-facing: the wrapper of messages the user queued while the turn
/// ran, added after the tool results of the next request. `{text}`.
pub const QUEUED_MESSAGE: &str = "The user sent this message while you were working:\n\n{text}\n\nTake it into account from here on.";

/// Everything one turn needs; built by `Session::ask`.
pub(crate) struct Turn {
    pub config: Config,
    /// The session's model, read for each request: a switch during the
    /// turn reaches its next request (`Session::set_model`).
    pub model: Arc<std::sync::RwLock<String>>,
    /// Sub-folders' `CLAUDE.md`, added to the results of the calls that
    /// first read below them.
    pub nested_memory: Arc<super::memory::Nested>,
    /// The session file (nested memory added is saved in it).
    pub log: Option<super::session_log::SessionLog>,
    pub system: String,
    /// `system_prompt::project_context`, put before the first user
    /// message's blocks in every request (never in the transcript).
    pub project_context: String,
    pub provider: Arc<dyn Provider>,
    pub transcript: Arc<Transcript>,
    pub sink: Arc<dyn EventSink>,
    pub env: ExecEnv,
    pub cancel: CancellationToken,
    /// `max_tokens` of the next request (raised once after a cut).
    pub max_tokens: AtomicU32,
    /// A stream broke after some of its calls ran and `stream_fallback =
    /// "non_streaming"`: the continuation is asked for without streaming.
    pub stream_broke: AtomicBool,
    /// Token counts of this turn's requests, added up (read by the session
    /// after the turn).
    pub usage: Arc<std::sync::Mutex<Usage>>,
    /// The session's context window and meter (agent::compact).
    pub context: Arc<super::compact::ContextState>,
    /// Bytes of the request being answered (for the meter's calibration).
    pub request_bytes: std::sync::atomic::AtomicU64,
    /// The transcript's first message and the same with the project
    /// context before it, made once per session ([`with_context`]): the
    /// same `Arc` in every request, so what a request reuses of the last
    /// one starts at its first message.
    pub first_with_context: FirstWithContext,
    /// What the request check found about the last requests' start
    /// (`validate::Checked`): a request checks what is new.
    pub checked: Arc<crate::provider::validate::Checked>,
    /// Messages the user queued while the turn runs (`Session::queue`),
    /// handed to the model with the next request.
    pub queued: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Turn {
    /// The model of the next request.
    pub(crate) fn model(&self) -> String {
        self.model.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// How one try of a request ended.
enum Attempt {
    /// Finished, interrupted, or broke off with what completed kept: no
    /// plain retry.
    Reply(Reply),
    /// Failed with nothing kept; `output_began` when the chat already
    /// showed part of it.
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
        /// The name of a `tool_use` cut by `max_tokens`, which did not run.
        cut_tool: Option<String>,
        /// `stop_details` of the answer, for a refusal.
        details: Option<serde_json::Value>,
    },
    /// The stream broke after some tool calls started: the completed part
    /// and its results are in the transcript; continue from there.
    BrokeOff { error: ProviderError },
    /// The user stopped the turn; the completed part of the answer and one
    /// result per completed `tool_use` are in the transcript.
    Interrupted,
    /// The API or the connection failed (retries exhausted or not
    /// retryable); nothing of this answer was kept. The text is for the user.
    Failed(String),
    /// The API refused the request for its length, after a compaction
    /// (or with compaction off); nothing of this answer was kept.
    Overflow(ProviderError),
}

impl Turn {
    /// Runs the turn for `user` (the prompt and its context from the
    /// editor) to its end. Its `@path` files are read through the Read tool
    /// first; when one fails, nothing is sent and the turn ends with the
    /// error (`agent::context::ATTACH_READ_FAILED`).
    pub async fn run_with(self, user: UserTurn) -> TurnOutcome {
        let start = self.transcript.len();
        // MCP servers started by setup() are in the first request.
        crate::mcp::wait_ready(&self.cancel).await;
        let (blocks, shown) = match self.user_blocks(&user).await {
            Ok(b) => b,
            Err(msg) => {
                if self.cancel.is_cancelled() {
                    return TurnOutcome::Stopped;
                }
                self.notice(msg.clone(), true);
                return TurnOutcome::Error(msg);
            }
        };
        if self.cancel.is_cancelled() {
            return TurnOutcome::Stopped;
        }
        let prompt_blocks = blocks.len();
        self.transcript.push_user_blocks(&user.prompt, blocks);
        if !shown.is_empty() {
            self.sink.emit(AgentEvent::Attached { items: shown });
        }
        // Changes other than appending (a compaction) move it.
        let generation = self.transcript.generation();
        let mut continued_after_cut = false;
        for request in 0..self.config.max_turns {
            if self.cancel.is_cancelled() {
                return TurnOutcome::Stopped;
            }
            self.send_queued();
            let reply = self.request().await;
            if self.cancel.is_cancelled() {
                return TurnOutcome::Stopped;
            }
            if let Some(reason) = self.env.turn_stop.requested() {
                self.notice(fill(HOOK_STOPPED_TURN, &[("reason", &reason)]), false);
                return TurnOutcome::Done;
            }
            match reply {
                Reply::Failed(msg) => {
                    self.notice(msg.clone(), true);
                    return TurnOutcome::Error(msg);
                }
                Reply::Overflow(error) => {
                    let msg = fill(
                        super::compact::CONTEXT_FULL,
                        &[("error", &error.to_string())],
                    );
                    self.notice(msg.clone(), true);
                    // Nothing of this turn but its prompt is in the
                    // conversation: take the prompt out, so refused
                    // prompts do not pile up.
                    if request == 0 && self.transcript.generation() == generation {
                        self.transcript.withdraw_user_blocks(prompt_blocks);
                        self.refresh_meter();
                        self.notice(super::compact::PROMPT_NOT_KEPT.to_string(), false);
                    }
                    return TurnOutcome::Error(msg);
                }
                Reply::Interrupted => return TurnOutcome::Stopped,
                Reply::BrokeOff { error } => {
                    if self.config.stream_fallback == StreamFallback::NonStreaming {
                        self.stream_broke.store(true, Ordering::Relaxed);
                    }
                    if !self.wait_before_continuing(&error).await {
                        let msg = user_message(&error, &self.config.api_key_env);
                        self.notice(msg.clone(), true);
                        return TurnOutcome::Error(msg);
                    }
                }
                Reply::Complete {
                    ran_tools,
                    stop_reason,
                    cut_tool,
                    details,
                } => match stop_reason {
                    Some(StopReason::MaxTokens) => {
                        let max = self.max_tokens.load(Ordering::Relaxed);
                        let cut = cut_tool
                            .map(|t| fill(CUT_TOOL, &[("tool", &t)]))
                            .unwrap_or_default();
                        let next = self.config.retry_max_tokens.max(max);
                        if continued_after_cut || next <= max && !ran_tools {
                            self.notice(
                                fill(CUT_AGAIN, &[("max", &max.to_string()), ("cut", &cut)]),
                                true,
                            );
                            return TurnOutcome::Done;
                        }
                        continued_after_cut = true;
                        self.max_tokens.store(next, Ordering::Relaxed);
                        self.notice(
                            fill(
                                CUT_CONTINUING,
                                &[
                                    ("max", &max.to_string()),
                                    ("next", &next.to_string()),
                                    ("cut", &cut),
                                ],
                            ),
                            false,
                        );
                    }
                    Some(StopReason::PauseTurn) => {}
                    Some(StopReason::ModelContextWindowExceeded) => {
                        let msg = super::compact::WINDOW_FULL_STOP.to_string();
                        self.notice(msg.clone(), true);
                        return TurnOutcome::Error(msg);
                    }
                    Some(StopReason::Refusal) => {
                        self.transcript.truncate(start);
                        let details = details
                            .filter(|d| !d.is_null())
                            .map(|d| format!(" ({})", refusal_details(&d)))
                            .unwrap_or_default();
                        self.sink.emit(AgentEvent::AssistantWithdrawn {
                            reason: "refused".into(),
                        });
                        self.notice(fill(REFUSED, &[("details", &details)]), true);
                        return TurnOutcome::Done;
                    }
                    // Calls ran: their results go back, whatever the stop
                    // reason says (some proxies send `end_turn` after a
                    // `tool_use`).
                    _ if ran_tools => {}
                    _ => return TurnOutcome::Done,
                },
            }
        }
        let n = self.config.max_turns.to_string();
        self.notice(fill(MAX_TURNS_REACHED, &[("n", &n)]), false);
        TurnOutcome::MaxTurns
    }

    /// The content of the user message: the context blocks, each
    /// attachment as the Read tool returns it (run through the pipeline:
    /// hooks, permissions, and the `FileState` record a later Edit checks),
    /// then the prompt. Errors: the user-facing text of the first attachment
    /// whose Read failed.
    async fn user_blocks(
        &self,
        user: &UserTurn,
    ) -> Result<(Vec<ContentBlock>, Vec<AttachedItem>), String> {
        let mut shown = user.shown.clone();
        // The chat shows an attachment as a line under the prompt, not as
        // a tool line of the answer (a resumed chat has none either).
        let mut attach_env = self.env.clone();
        attach_env.sink = Arc::new(NoToolLines(self.env.sink.clone()));
        let mut blocks: Vec<ContentBlock> = user
            .context
            .iter()
            .map(|text| ContentBlock::Text { text: text.clone() })
            .collect();
        for (i, a) in user.attachments.iter().enumerate() {
            let call = PendingToolUse::from(ToolUse {
                id: format!("toolu_lathe_attach_{}", i + 1),
                name: "Read".into(),
                input: serde_json::json!({ "file_path": a.path.display().to_string() }),
                extra: Default::default(),
            });
            let result = run_tool_use(&call, &attach_env).await.result;
            if result.is_error {
                let error = result.content.as_text();
                return Err(fill(
                    context::ATTACH_READ_FAILED,
                    &[("path", &a.shown), ("error", error.trim())],
                ));
            }
            let root = &self.env.ctx.root;
            match result.content {
                ToolResultContent::Text(text) => {
                    shown.push(context::shown_file(a, root, Some(&text)));
                    blocks.push(ContentBlock::Text {
                        text: context::render_attachment(a, root, &text),
                    })
                }
                ToolResultContent::Blocks(parts) => {
                    // An image: the note, then the blocks as Read gave them.
                    shown.push(context::shown_file(a, root, None));
                    blocks.push(ContentBlock::Text {
                        text: context::render_attachment(a, root, ""),
                    });
                    blocks.extend(parts);
                }
            }
        }
        blocks.push(ContentBlock::Text {
            text: user.prompt.clone(),
        });
        Ok((blocks, shown))
    }

    /// The retry policy's wait after an answer broke off with what completed
    /// kept (shown in the chat). `false` when the error is not worth
    /// another request (or `stream_fallback = "off"`): the turn ends.
    async fn wait_before_continuing(&self, error: &ProviderError) -> bool {
        if self.config.stream_fallback == StreamFallback::Off || !is_retryable(error) {
            return false;
        }
        let policy = RetryPolicy::from_config(&self.config);
        let Some(wait) = policy.next_delay(1, error) else {
            return false;
        };
        self.sink.emit(AgentEvent::Retrying {
            text: retrying_message(wait, 2, policy.max_attempts, error),
        });
        tokio::select! {
            _ = tokio::time::sleep(wait) => true,
            _ = self.cancel.cancelled() => false,
        }
    }

    /// Hands the messages the user queued to the model: a text block
    /// ([`QUEUED_MESSAGE`]) after the last user message's blocks (the
    /// tool results), shown in the chat as the user's. Kept queued when
    /// the next request continues an answer instead.
    fn send_queued(&self) {
        let mut queued = self.queued.lock().unwrap_or_else(|e| e.into_inner());
        if queued.is_empty() {
            return;
        }
        let text = queued.join("\n\n");
        let block = ContentBlock::Text {
            text: fill(QUEUED_MESSAGE, &[("text", &text)]),
        };
        if !self.transcript.push_queued(&text, vec![block]) {
            return;
        }
        queued.clear();
        drop(queued);
        self.sink.emit(AgentEvent::QueuedSent { text });
        self.sink.emit(AgentEvent::Queued {
            messages: Vec::new(),
        });
    }

    pub(crate) fn notice(&self, text: String, is_error: bool) {
        self.sink.emit(AgentEvent::Notice { text, is_error });
    }

    /// One model request, retried on retryable failures (429, 5xx,
    /// `overloaded_error`, dropped or idle connections) with backoff; the
    /// chat shows each wait. An answer that fails after output began — and
    /// before any of its tool calls started — is withdrawn and requested
    /// again: streaming, or not streaming when `stream_fallback =
    /// "non_streaming"`; `"off"` ends the turn instead.
    async fn request(&self) -> Reply {
        // Before every request: make it fit the context window (clear old
        // tool results, then compact; agent::compact).
        let (req, compact_failed) = self.fit_window(self.build_request()).await;
        // The one check before every send: repair what can be repaired
        // (whitespace-only text, unsigned thinking, …), refuse what the API
        // would refuse with a 400 that no retry can fix.
        let mut req = match self.checked.prepare(req) {
            Ok(req) => req,
            Err(error) => return Reply::Failed(user_message(&error, &self.config.api_key_env)),
        };
        let policy = RetryPolicy::from_config(&self.config);
        // After a stream broke, `stream_fallback = "non_streaming"` asks
        // for the continuation in one piece (this request only).
        let mut streaming = !self.stream_broke.swap(false, Ordering::Relaxed);
        let mut attempt = 1;
        // A compaction that just failed (and said so) is not tried again
        // on the same conversation: it would fail the same way, and the
        // chat would show the same error twice.
        let mut compacted_for_overflow = compact_failed;
        loop {
            self.request_bytes
                .store(self.provider.request_bytes(&req), Ordering::Relaxed);
            let (error, output_began) = match self.attempt(&req, streaming).await {
                Attempt::Reply(reply) => return reply,
                Attempt::Failed {
                    error,
                    output_began,
                } => (error, output_began),
            };
            if super::compact::is_context_overflow(&error) {
                // Refused for its length anyway: compact and retry once,
                // unless lathe does not compact on its own (`auto_compact
                // = false`, or off after repeated failures): then the
                // user is told what to do (`CONTEXT_FULL`).
                if !compacted_for_overflow
                    && self.config.auto_compact_permille.is_some()
                    && self.context.auto_allowed()
                {
                    compacted_for_overflow = true;
                    match self.compact(None).await {
                        Ok(()) => {
                            match self.checked.prepare(self.build_request()) {
                                Ok(r) => req = r,
                                Err(e) => {
                                    return Reply::Failed(user_message(
                                        &e,
                                        &self.config.api_key_env,
                                    ))
                                }
                            }
                            continue;
                        }
                        Err(e) => self
                            .notice(fill(super::compact::COMPACT_FAILED, &[("error", &e)]), true),
                    }
                }
                return Reply::Overflow(error);
            }
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
            self.sink.emit(AgentEvent::Retrying {
                text: retrying_message(wait, attempt, policy.max_attempts, &error),
            });
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = self.cancel.cancelled() => return Reply::Interrupted,
            }
        }
    }

    /// One try: streams the answer into the chat and the transcript, running
    /// tool calls as they complete (or after the answer when
    /// `streaming_tools` is off). A failed try with no call started leaves
    /// the transcript as it was; one after calls started keeps what
    /// completed.
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
        // The latest completed call waits until the stream shows it was not
        // the block a `max_tokens` stop cut: a following block starts, or
        // the stop reason arrives.
        let mut last: Option<(usize, PendingToolUse)> = None;
        let mut held = Vec::new();
        let mut output_began = false;
        let mut cut: Option<PendingToolUse> = None;
        loop {
            let next = tokio::select! {
                n = stream.next() => n,
                _ = exec.next(), if exec.has_running() => continue,
                _ = self.cancel.cancelled() => {
                    // Keep what completed; blocks still streaming are dropped,
                    // and calls not yet started get interrupted results.
                    held.extend(last.take().map(|(_, c)| c));
                    self.add_usage(&asm.usage_or_estimate());
                    self.keep(asm.message(), exec, held).await;
                    return Attempt::Reply(Reply::Interrupted);
                }
            };
            let event = match next {
                None => break,
                Some(Ok(ev)) => ev,
                Some(Err(error)) => {
                    self.add_usage(&asm.usage_or_estimate());
                    if exec.started() > 0 {
                        // Side effects may have happened: keep what
                        // completed, with its results, and go on from there.
                        let n = exec.started();
                        held.extend(last.take().map(|(_, c)| c));
                        self.keep(asm.message(), exec, held).await;
                        self.notice(
                            fill(
                                EFFECTS_KEPT,
                                &[
                                    ("error", &error.to_string()),
                                    ("n", &crate::text::plural(n, "tool call", "tool calls")),
                                ],
                            ),
                            false,
                        );
                        return Attempt::Reply(Reply::BrokeOff { error });
                    }
                    if output_began {
                        self.sink.emit(AgentEvent::AssistantWithdrawn {
                            reason: error.to_string(),
                        });
                    }
                    exec.abandon().await;
                    return Attempt::Failed {
                        error,
                        output_began,
                    };
                }
            };
            match &event {
                StreamEvent::ContentBlockStart { .. } => {
                    self.release(&mut exec, &mut held, last.take());
                }
                StreamEvent::MessageDelta { delta, .. } => {
                    let was_last_block = last
                        .as_ref()
                        .is_some_and(|(index, _)| Some(*index) == asm.last_index());
                    if delta.stop_reason == Some(StopReason::MaxTokens) && was_last_block {
                        cut = last.take().map(|(_, c)| c);
                    } else {
                        self.release(&mut exec, &mut held, last.take());
                    }
                }
                _ => {}
            }
            match asm.push(event) {
                Some(Assembled::TextDelta { text, .. }) => {
                    output_began = true;
                    self.sink.emit(AgentEvent::TextDelta { text });
                }
                Some(Assembled::ToolUseComplete(done)) => {
                    output_began = true;
                    let call = PendingToolUse {
                        tool_use: done.to_tool_use(),
                        input_error: done.input.as_ref().err().map(|e| e.detail()),
                        sent: done.input.as_ref().err().map(|e| e.raw.clone()),
                        refusal: done.refusal.clone(),
                    };
                    self.release(&mut exec, &mut held, last.replace((done.index, call)));
                }
                Some(Assembled::ToolUseStarted { .. } | Assembled::ThinkingDelta { .. }) => {
                    output_began = true;
                }
                _ => {}
            }
        }
        self.release(&mut exec, &mut held, last.take());
        self.add_usage(asm.usage());
        self.context
            .measured(self.request_bytes.load(Ordering::Relaxed), asm.usage());
        self.emit_meter();
        let mut message = asm.message();
        if let Some(c) = &cut {
            // The cut call never runs and is not part of the history.
            message
                .content
                .retain(|b| !matches!(b, ContentBlock::ToolUse(t) if t.id == c.tool_use.id));
        }
        let ran_tools = self.keep(message, exec, held).await;
        Attempt::Reply(Reply::Complete {
            ran_tools,
            stop_reason: asm.stop_reason().cloned(),
            cut_tool: cut.map(|c| c.tool_use.name),
            details: asm.stop_details().cloned(),
        })
    }

    /// Starts `call` now (`streaming_tools`) or holds it for the end of the
    /// answer.
    fn release(
        &self,
        exec: &mut ToolExecutor,
        held: &mut Vec<PendingToolUse>,
        call: Option<(usize, PendingToolUse)>,
    ) {
        let Some((_, call)) = call else { return };
        if self.config.streaming_tools {
            exec.add(call);
        } else {
            held.push(call);
        }
    }

    fn add_usage(&self, usage: &Usage) {
        if let Ok(mut u) = self.usage.lock() {
            add(&mut u, usage);
        }
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
        let calls: Vec<ToolUse> = message.tool_uses().cloned().collect();
        let ran_tools = !calls.is_empty();
        self.transcript.push_assistant(message);
        for call in held {
            exec.add(call);
        }
        let mut results = exec.finish().await;
        self.nested_memory
            .attach(&calls, &mut results, self.log.as_ref());
        self.transcript.push_tool_results(results);
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
}

/// `messages` with `context` as a text block before the first user
/// message's own blocks (after per-project text, the conversation; the
/// system prompt before it stays the same for every project).
///
/// `memo` keeps the last first message made, for as long as the
/// transcript's first message is the same `Arc`: the message sent is then
/// the same `Arc` too, and a provider reuses what it made of it.
/// The transcript's first message and the same with the project context
/// before it ([`with_context`]), shared by a session's turns.
pub(crate) type FirstWithContext = Arc<std::sync::Mutex<Option<(Arc<Message>, Arc<Message>)>>>;

fn with_context(
    mut messages: Vec<Arc<Message>>,
    context: &str,
    memo: &std::sync::Mutex<Option<(Arc<Message>, Arc<Message>)>>,
) -> Vec<Arc<Message>> {
    if context.trim().is_empty() {
        return messages;
    }
    let Some(first) = messages.first_mut().filter(|m| m.role == Role::User) else {
        return messages;
    };
    let mut memo = memo.lock().unwrap_or_else(|e| e.into_inner());
    match memo.as_ref() {
        Some((from, made)) if Arc::ptr_eq(from, first) => *first = made.clone(),
        _ => {
            let from = first.clone();
            Arc::make_mut(first).content.insert(
                0,
                ContentBlock::Text {
                    text: context.to_string(),
                },
            );
            *memo = Some((from, first.clone()));
        }
    }
    messages
}

/// Passes every event on but a call's tool line (an attachment's Read:
/// the chat shows it under the prompt, from [`AgentEvent::Attached`]).
struct NoToolLines(Arc<dyn EventSink>);

impl EventSink for NoToolLines {
    fn emit(&self, event: AgentEvent) {
        if !matches!(
            event,
            AgentEvent::ToolQueued { .. }
                | AgentEvent::ToolStarted { .. }
                | AgentEvent::ToolProgress { .. }
                | AgentEvent::ToolFinished { .. }
        ) {
            self.0.emit(event);
        }
    }
}

/// Adds `more`'s counts to `total` (missing counts add nothing).
pub(crate) fn add(total: &mut Usage, more: &Usage) {
    let sum = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    total.input_tokens = sum(total.input_tokens, more.input_tokens);
    total.output_tokens = sum(total.output_tokens, more.output_tokens);
    total.cache_creation_input_tokens = sum(
        total.cache_creation_input_tokens,
        more.cache_creation_input_tokens,
    );
    total.cache_read_input_tokens =
        sum(total.cache_read_input_tokens, more.cache_read_input_tokens);
    total.output_estimated |= more.output_estimated;
}

/// A refusal's `stop_details` for people: `category: explanation` when the
/// API gives them (`{"type":"refusal","category":"cyber","explanation":
/// "…"}`), a string as it is, anything else as one line of JSON.
fn refusal_details(v: &serde_json::Value) -> String {
    let field = |k: &str| v.get(k).and_then(serde_json::Value::as_str);
    match (v, field("category"), field("explanation")) {
        (serde_json::Value::String(s), ..) => s.clone(),
        (_, Some(c), Some(e)) => format!("{c}: {e}"),
        (_, None, Some(e)) => e.to_string(),
        (_, Some(c), None) => c.to_string(),
        (other, None, None) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_texts() {
        assert_eq!(
            fill(EFFECTS_KEPT, &[("error", "overloaded_error: Overloaded"), ("n", "1 tool call")]),
            "The answer broke off (overloaded_error: Overloaded) after 1 tool call started. What completed is kept with its results, and lathe asks the model to continue from there, so nothing runs twice."
        );
        assert_eq!(
            fill(CUT_CONTINUING, &[("max", "8192"), ("next", "32000"), ("cut", &fill(CUT_TOOL, &[("tool", "Write")]))]),
            "The answer was cut at the max_tokens limit (8192 tokens); its last tool call (Write) was incomplete and did not run. lathe asks the model to continue with max_tokens 32000."
        );
        assert_eq!(
            fill(CUT_AGAIN, &[("max", "32000"), ("cut", "")]),
            "The answer was cut at the max_tokens limit again (32000 tokens). The turn ends here; ask the model to go on in smaller steps, or raise retry_max_tokens in setup()."
        );
        assert_eq!(
            fill(REFUSED, &[("details", " (cyber)")]),
            "The model declined to answer this request (cyber). The request and its answer were taken out of the conversation; rephrase it or ask something else."
        );
    }

    #[test]
    fn queued_message_text() {
        assert_eq!(
            fill(QUEUED_MESSAGE, &[("text", "also update the README")]),
            "The user sent this message while you were working:\n\nalso update the README\n\nTake it into account from here on."
        );
    }

    #[test]
    fn refusal_details_read_like_a_sentence() {
        use serde_json::json;
        let d =
            json!({"type": "refusal", "category": "cyber", "explanation": "Looks like malware."});
        assert_eq!(refusal_details(&d), "cyber: Looks like malware.");
        assert_eq!(refusal_details(&json!("policy")), "policy");
        assert_eq!(refusal_details(&json!({"category": "bio"})), "bio");
        assert_eq!(refusal_details(&json!({"x": 1})), r#"{"x":1}"#);
    }

    #[test]
    fn max_turns_text() {
        assert_eq!(
            crate::text::fill(super::MAX_TURNS_REACHED, &[("n", "50")]),
            "Stopped after 50 model requests (max_turns). Ask again to let lathe continue."
        );
    }

    #[test]
    fn usage_adds_up_and_missing_counts_add_nothing() {
        let mut t = Usage::default();
        add(
            &mut t,
            &Usage {
                input_tokens: Some(10),
                output_tokens: Some(2),
                ..Usage::default()
            },
        );
        add(
            &mut t,
            &Usage {
                input_tokens: Some(5),
                cache_read_input_tokens: Some(100),
                ..Usage::default()
            },
        );
        assert_eq!(t.input_tokens, Some(15));
        assert_eq!(t.output_tokens, Some(2));
        assert_eq!(t.cache_read_input_tokens, Some(100));
        assert_eq!(t.cache_creation_input_tokens, None);
    }
}
