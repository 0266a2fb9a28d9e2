//! The system prompt.
