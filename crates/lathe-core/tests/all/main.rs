//! The core's integration tests, one binary (a module per subject) so a
//! change links the tests once. The shared harness is `lathe-test-support`.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod agent_loop;
mod agent_stop_reasons;
mod answers_sent_back;
mod bash_background;
mod bash_saved_output;
mod bash_tool;
mod checkpoints;
mod context_window;
mod editor_context;
mod executor;
mod file_tool_scenarios;
mod file_tools_proptest;
mod fuzz_corpus;
mod generated_settings;
mod grep_glob;
mod hook_gates;
mod hooks;
mod hostile_answers;
mod hostile_files;
mod mcp;
mod model_switch;
mod openai_provider;
mod path_params;
mod permission_answers;
mod plan_mode_prompt;
mod plan_once;
mod project_memory;
mod provider_retry;
mod queued_messages;
mod read_images;
mod read_rules_cover_searches;
mod redteam;
mod repeated_failures;
mod request_invariant;
mod request_rules;
mod sandbox;
mod sandbox_gate;
mod second_front_end;
mod sessions;
mod symlink_permissions;
mod tool_definitions;
mod user_tools;
