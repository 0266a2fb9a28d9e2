//! What the user sees: the chat ([`chat`]), the permission float and its
//! queue ([`float`]), the session's sink in front of the chat's with the
//! live status ([`status_sink`]), the `User` autocmds lathe fires
//! ([`user_events`]), notices of tool calls run from Lua ([`notify`]).
//! Uses `host` and `adapters`.

pub mod chat;
pub mod float;
pub mod notify;
pub mod status_sink;
pub mod user_events;
