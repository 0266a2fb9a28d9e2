//! The query loop: request → stream → tools → tool_results → repeat, until
//! `stop_reason` is not `tool_use` or `max_turns` requests were made.

pub mod checkpoint;
pub mod compact;
pub mod context;
pub mod inline;
pub mod memory;
pub mod resume;
mod session;
pub mod session_log;
pub mod system_prompt;
mod transcript;
mod turn;

pub use compact::{ContextReport, Meter};
pub use session::{
    sessions_built, AskError, LoadedSession, Resumed, Session, SessionParts, Status, ToolInfo,
    TurnExtras,
};
pub use session_log::Mark;
pub use transcript::repair_pairing;
