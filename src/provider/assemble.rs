//! Placeholder assembler (replaced by the provider branch).
use crate::protocol::{Message, Role, StopReason, StreamEvent, ToolUse};

/// Output of one event.
pub enum Assembled {
    /// Text.
    TextDelta(String),
    /// A completed tool_use.
    ToolUse {
        /// The block.
        tool_use: ToolUse,
        /// Parse error.
        input_error: Option<String>,
    },
}

/// Placeholder.
#[derive(Default)]
pub struct MessageAssembler;

impl MessageAssembler {
    /// New.
    pub fn new() -> Self {
        Self
    }
    /// Push.
    pub fn push(&mut self, _e: StreamEvent) -> Vec<Assembled> {
        Vec::new()
    }
    /// Message.
    pub fn message(&self) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![],
        }
    }
    /// Stop reason.
    pub fn stop_reason(&self) -> Option<StopReason> {
        None
    }
}
