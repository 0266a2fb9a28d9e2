//! What the agent reports while it works: the event vocabulary shared by the
//! turn loop (`agent`), the tool pipeline (`execution`) and the chat
//! (`nvim`). It sits below all three so none of them imports another just to
//! speak about progress (docs/architecture.md, "Layers").

use crate::protocol::Usage;

/// How one tool call ended, as shown in the chat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolStatus {
    /// The tool ran and succeeded.
    Done,
    /// The tool ran, and what it ran failed: a Bash command that exited
    /// non-zero or was killed by a signal. Not an error of the call: the
    /// model's `tool_result` is not `is_error`, it reads the exit line.
    Failed,
    /// The tool failed or its input was bad.
    Error,
    /// A rule or the user refused it.
    Denied,
    /// The user stopped the turn before it finished.
    Interrupted,
}

impl ToolStatus {
    /// `done`, `failed`, `error`, `denied` or `interrupted`.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolStatus::Done => "done",
            ToolStatus::Failed => "failed",
            ToolStatus::Error => "error",
            ToolStatus::Denied => "denied",
            ToolStatus::Interrupted => "interrupted",
        }
    }
}

/// How a turn (one `ask`) ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnOutcome {
    /// The model finished (`stop_reason` other than `tool_use`).
    Done,
    /// An API or transport error ended the turn; the message is the API's.
    Error(String),
    /// `stop()` interrupted it.
    Stopped,
    /// `max_turns` model requests ran and the model still wanted to go on:
    /// cut, not finished.
    MaxTurns,
}

impl TurnOutcome {
    /// `done`, `error`, `stopped` or `max_turns` (what `lathe.wait()`
    /// returns).
    pub fn as_str(&self) -> &'static str {
        match self {
            TurnOutcome::Done => "done",
            TurnOutcome::Error(_) => "error",
            TurnOutcome::Stopped => "stopped",
            TurnOutcome::MaxTurns => "max_turns",
        }
    }
}

/// One thing the agent did, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentEvent {
    /// A turn began with this user prompt.
    TurnStarted {
        /// The prompt.
        prompt: String,
    },
    /// What the user's message carried besides the prompt (a selection,
    /// `@path` files, `#` words), after [`AgentEvent::TurnStarted`]: the
    /// chat shows a line for each under the prompt, folded to its text.
    Attached {
        /// One per attachment, in the message's order.
        items: Vec<AttachedItem>,
    },
    /// A new assistant message began (one per model request).
    AssistantStarted,
    /// The answer being streamed failed and is withdrawn: it is not part of
    /// the conversation (the chat strikes it out); a retry may follow.
    AssistantWithdrawn {
        /// What went wrong.
        reason: String,
    },
    /// More assistant text.
    TextDelta {
        /// The text piece.
        text: String,
    },
    /// A tool call was queued behind others: it waits for an unsafe call
    /// or a free slot (`max_tool_concurrency`) before it starts. Followed
    /// by [`AgentEvent::ToolStarted`] (or [`AgentEvent::ToolFinished`]
    /// when the turn is stopped first) with the same `id`.
    ToolQueued {
        /// `tool_use_id`.
        id: String,
        /// Tool name, as the model wrote it.
        name: String,
        /// Short description, as in [`AgentEvent::ToolStarted`] (empty
        /// when the input did not pass gates 1–3).
        detail: String,
    },
    /// A tool call started.
    ToolStarted {
        /// `tool_use_id`.
        id: String,
        /// Tool name (as resolved, or as the model wrote it when unknown).
        name: String,
        /// Short description, e.g. the file path or the pattern.
        detail: String,
        /// The call's input after normalisation (gate 3: paths absolute),
        /// `null` when it did not get that far. The chat reads the file
        /// and line to jump to from it.
        input: serde_json::Value,
    },
    /// Partial output of a running tool call (Bash), as it arrives.
    ToolProgress {
        /// `tool_use_id`.
        id: String,
        /// The new output (whole UTF-8 characters).
        text: String,
    },
    /// A tool call ended.
    ToolFinished {
        /// `tool_use_id`.
        id: String,
        /// Tool name.
        name: String,
        /// How it ended.
        status: ToolStatus,
        /// One short line (result summary or the error's first line).
        summary: String,
        /// The whole `tool_result` text the model reads (after gate 9's
        /// size bound), for the chat's folded result.
        content: String,
        /// What the chat folds instead of `content`, when the tool made a
        /// view for people ([`crate::tools::ToolOutput::display`]): Edit's
        /// and Write's unified diff of what they wrote.
        display: Option<String>,
    },
    /// The conversation was compacted (docs/context-and-compaction.md, "Context
    /// and compaction"): the chat shows `compacted: 180k → 24k` with the
    /// summary folded under it.
    Compacted {
        /// Estimated tokens before.
        before: u64,
        /// Estimated tokens after.
        after: u64,
        /// The summary the model wrote.
        summary: String,
    },
    /// How full the context window is now (after each answer, a clearing
    /// or a compaction): the chat's winbar shows `ctx 143.0k/200.0k (71%)`.
    Context {
        /// Tokens in the context (estimate).
        used: u64,
        /// The model's window.
        window: u64,
    },
    /// Something the user should see (API error, warning).
    Notice {
        /// The text.
        text: String,
        /// `true` for errors.
        is_error: bool,
    },
    /// A request failed and is tried again after a wait: the chat shows one
    /// note per outage, each retry replacing the last one's text (the
    /// final error, if it comes to that, is a [`AgentEvent::Notice`]).
    Retrying {
        /// The note (`retrying in 2s (attempt 3 of 4): HTTP 500 …`).
        text: String,
    },
    /// Tokens used, sent just before [`AgentEvent::TurnEnded`], and at
    /// the end of `:Lathe compact` (its summary request), after the
    /// session is idle again.
    Usage {
        /// This turn's requests, added up.
        turn: Usage,
        /// The session so far, this turn included.
        session: Usage,
    },
    /// The messages the user queued while the turn runs (`<C-s>` in the
    /// prompt area), all of them, oldest first; empty when none waits any
    /// more (handed to the model, or given back).
    Queued {
        /// The messages waiting.
        messages: Vec<String>,
    },
    /// Queued messages were handed to the model with the next request of
    /// the turn (after the tool results): the chat shows them as the
    /// user's.
    QueuedSent {
        /// The messages, joined by a blank line.
        text: String,
    },
    /// Queued messages the model never got (the turn was stopped or
    /// failed): the prompt area takes them back, so nothing is lost.
    QueuedReturned {
        /// The messages, joined by a blank line.
        text: String,
    },
    /// The turn ended.
    TurnEnded {
        /// How.
        outcome: TurnOutcome,
    },
}

/// One attachment of a user message as the chat shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AttachedItem {
    /// Its line (`Selected lines 11–13 of shop/pricing.py`).
    pub label: String,
    /// What was sent for it (folded under the line).
    pub text: String,
}

/// Receives [`AgentEvent`]s. Called from tokio tasks: implementations must not
/// block (the Neovim one queues and coalesces UI updates).
pub trait EventSink: Send + Sync {
    /// Takes one event.
    fn emit(&self, event: AgentEvent);
}

/// An [`EventSink`] that keeps every event (tests, `tool_sync`).
#[derive(Debug, Default)]
pub struct RecordingSink {
    events: std::sync::Mutex<Vec<AgentEvent>>,
}

impl RecordingSink {
    /// Every event so far.
    pub fn events(&self) -> Vec<AgentEvent> {
        self.events.lock().map(|e| e.clone()).unwrap_or_default()
    }
}

impl EventSink for RecordingSink {
    fn emit(&self, event: AgentEvent) {
        if let Ok(mut e) = self.events.lock() {
            e.push(event);
        }
    }
}

/// An [`EventSink`] that drops everything (tool calls run from keymaps).
#[derive(Debug, Default)]
pub struct NullSink;

impl EventSink for NullSink {
    fn emit(&self, _event: AgentEvent) {}
}
