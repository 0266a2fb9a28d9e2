//! lathe's core: the model's query loop, the tool pipeline, permissions,
//! hooks, the Bash sandbox, the model providers, MCP servers and saved
//! sessions, as plain async Rust.
//!
//! Nothing here calls Neovim: this crate has no `nvim-oxi` or `mlua` in its
//! dependency tree. A front end drives it through four seams — `Editor`
//! ([`editor`]), `Prompter` ([`permissions`]), `Provider` ([`provider`]) and
//! `EditorContext` ([`agent::context`]) — and receives what the agent does as
//! [`events::AgentEvent`]s (docs/architecture.md). The Neovim front end is
//! the `lathe` crate at the root of the workspace.

pub mod agent;
pub mod commands;
pub mod config;
pub mod editor;
pub mod events;
pub mod execution;
pub mod fuzzing;
pub mod hooks;
pub mod mcp;
pub mod permissions;
pub mod process;
pub mod protocol;
pub mod provider;
pub mod sandbox;
pub mod text;
pub mod tls;
pub mod tools;
