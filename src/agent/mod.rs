//! The query loop: request → stream → tools → tool_results → repeat, until
//! `stop_reason` is not `tool_use` or `max_turns` requests were made.

pub mod events;
mod session;
pub mod system_prompt;
mod transcript;
mod turn;

pub use events::{AgentEvent, EventSink, NullSink, RecordingSink, ToolStatus, TurnOutcome};
pub use session::{AskError, Session, SessionParts, Status};
pub use transcript::repair_pairing;
