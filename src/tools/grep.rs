//! grep
