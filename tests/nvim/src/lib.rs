//! Tests inside real Neovim: each `#[nvim_oxi::test]` runs in a fresh
//! `nvim -u NONE --headless` (from `PATH`, 0.11). Async tests run their body
//! on lathe's runtime and end through the `TestTerminator`; run them under
//! `cargo nextest` so a hung Neovim fails at the timeout
//! (`.config/nextest.toml`).

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod burst_tests;
mod changes_tests;
mod chat_queue_tests;
mod chat_tests;
mod chat_ui_tests;
mod commands_tests;
mod common;
mod compact_tests;
mod context_tests;
mod direct_write_tests;
mod edges_tests;
mod editor_tests;
mod float_review_tests;
mod float_tests;
mod inline_tests;
mod jobs_tests;
mod lsp_nav_tests;
mod lsp_tests;
mod lua_api_tests;
mod mcp_tests;
mod model_tests;
mod pipeline_tests;
mod priority_tests;
mod scenario_tests;
mod search_tests;
mod session_tests;
mod turn_tests;
mod user_report_tests;
mod user_tool_tests;
