//! anthropic
