//! The query loop: request → stream → tools → tool_results → repeat.

pub mod events;
mod session;
pub mod system_prompt;
pub(crate) mod turn;

pub use events::{AgentEvent, EventSink, RecordingSink, ToolStatus, TurnOutcome};
pub use session::{AskError, Session, SessionParts, Status};
