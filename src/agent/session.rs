//! `Session`: one conversation, its transcript and its running turn.

use std::sync::Arc;

use serde_json::Value;

use crate::config::Config;
use crate::editor::Editor;
use crate::permissions::Prompter;
use crate::protocol::{Message, ToolResult};
use crate::provider::Provider;

use super::{EventSink, TurnOutcome};

/// What a [`Session`] is built from.
pub struct SessionParts {
    /// Effective configuration.
    pub config: Config,
    /// The model.
    pub provider: Arc<dyn Provider>,
    /// Buffers and files.
    pub editor: Arc<dyn Editor>,
    /// Permission asks.
    pub prompter: Arc<dyn Prompter>,
    /// Progress for the UI.
    pub sink: Arc<dyn EventSink>,
}

/// Whether a turn is running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// No turn running; the last one ended like this (`None` before the first).
    Idle(Option<TurnOutcome>),
    /// A turn is running.
    Running,
}

/// Why `ask` did not start a turn.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AskError {
    /// A turn is already running; `stop()` it or wait.
    #[error("lathe is already working on a request; wait for it or run :Lathe stop")]
    Busy,
    /// The prompt was empty.
    #[error("empty prompt: type what lathe should do, e.g. :Lathe fix the failing test")]
    EmptyPrompt,
}

/// One conversation.
pub struct Session {
    #[allow(dead_code)]
    parts: SessionParts,
}

impl Session {
    /// A new, empty conversation.
    pub fn new(parts: SessionParts) -> Arc<Self> {
        Arc::new(Self { parts })
    }

    /// Starts (or continues) the conversation with `prompt` on `rt` and
    /// returns at once. Errors: [`AskError::Busy`], [`AskError::EmptyPrompt`].
    pub fn ask(self: &Arc<Self>, prompt: &str, rt: &tokio::runtime::Handle) -> Result<(), AskError> {
        let _ = (prompt, rt);
        Err(AskError::Busy)
    }

    /// Interrupts the running turn, if any.
    pub fn stop(&self) {}

    /// Whether a turn is running.
    pub fn status(&self) -> Status {
        Status::Idle(None)
    }

    /// The conversation as Messages API messages.
    pub fn transcript(&self) -> Vec<Message> {
        Vec::new()
    }

    /// Runs one tool through the whole pipeline without the model.
    pub async fn run_tool(&self, name: &str, input: Value) -> ToolResult {
        let _ = (name, input);
        unimplemented!()
    }
}
