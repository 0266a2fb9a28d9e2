//! Hooks written in Lua: `setup{ hooks = { PreToolUse = function(input) …
//! end } }` (`:help lathe-hooks`). A function gets the same input a command
//! hook reads on stdin, as a table, and returns what a command hook would
//! print as JSON, as a table (or nil): `{ hookSpecificOutput = {
//! permissionDecision = "deny", permissionDecisionReason = "…" } }`. It runs
//! on the main thread; an error it raises becomes a warning in the chat (a
//! note: its message, without the stack trace) and the call goes on.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use mlua::{Function, LuaSerdeExt, SerializeOptions, Table, Value};

use crate::host::bridge::MainThread;
use crate::host::lua_handle::lua;
use lathe_core::hooks::{CodeHooks, HookEvent, HookFn, HookInput};

thread_local! {
    /// The Lua functions of hooks, by id (they live on the main thread).
    static FUNCTIONS: RefCell<HashMap<u64, Function>> = RefCell::new(HashMap::new());
}

static NEXT_HOOK: AtomicU64 = AtomicU64::new(1);

/// A Lua function registered as a hook.
pub struct LuaHook {
    id: u64,
    name: String,
    main: MainThread,
}

#[async_trait]
impl HookFn for LuaHook {
    async fn call(&self, input: &HookInput) -> Result<serde_json::Value, String> {
        let id = self.id;
        let input = serde_json::to_value(input).map_err(|e| e.to_string())?;
        self.main
            .run(move || call_on_main(id, &input))
            .await
            .map_err(|e| e.to_string())?
    }

    fn name(&self) -> String {
        self.name.clone()
    }
}

fn call_on_main(id: u64, input: &serde_json::Value) -> Result<serde_json::Value, String> {
    let f = FUNCTIONS
        .with(|f| f.borrow().get(&id).cloned())
        .ok_or("the hook function is gone (setup() was called again)")?;
    let lua = lua();
    let opts = SerializeOptions::new()
        .serialize_none_to_null(false)
        .serialize_unit_to_null(false);
    let arg = lua.to_value_with(input, opts).map_err(|e| e.to_string())?;
    let out: Value = f.call(arg).map_err(|e| lua_error_text(&e))?;
    match out {
        Value::Nil => Ok(serde_json::Value::Null),
        other => lua.from_value(other).map_err(|e| e.to_string()),
    }
}

/// The text of an error a hook function raised: Lua's own message (with
/// the stack trace mlua appends; the warning keeps the first line), without
/// mlua's `runtime error: ` or `callback error` wrapping.
fn lua_error_text(e: &mlua::Error) -> String {
    match e {
        mlua::Error::RuntimeError(m) => m.clone(),
        mlua::Error::CallbackError { cause, .. } => lua_error_text(cause),
        other => other.to_string(),
    }
}

/// Registers the Lua functions of `hooks` (the `hooks` table of `setup`)
/// as [`LuaHook`]s — a function as the value of an event, or as an item of
/// the event's list — and returns them with the rest of the table as JSON
/// (the command hooks, Claude Code's format). The caller's table is not
/// changed. Functions registered by an earlier `setup` are dropped.
/// Errors: Lua could not read the table, or the rest is not plain data.
pub fn take_lua_hooks(
    hooks: &Table,
    main: &MainThread,
) -> mlua::Result<(CodeHooks, serde_json::Value)> {
    FUNCTIONS.with(|f| f.borrow_mut().clear());
    let lua = lua();
    let mut out: CodeHooks = Vec::new();
    let mut rest = serde_json::Map::new();
    for pair in hooks.pairs::<Value, Value>() {
        let (key, value) = pair?;
        let Value::String(key) = key else { continue };
        let key = key.to_str()?.to_string();
        let event = [HookEvent::PreToolUse, HookEvent::PostToolUse]
            .into_iter()
            .find(|e| e.as_str() == key);
        let mut functions = Vec::new();
        let data = match (event, value) {
            (Some(_), Value::Function(f)) => {
                functions.push(f);
                None
            }
            (Some(_), Value::Table(list)) => {
                let mut kept = Vec::new();
                for item in list.sequence_values::<Value>() {
                    match item? {
                        Value::Function(f) => functions.push(f),
                        other => kept.push(lua.from_value::<serde_json::Value>(other)?),
                    }
                }
                (!kept.is_empty()).then_some(serde_json::Value::Array(kept))
            }
            (_, other) => Some(lua.from_value::<serde_json::Value>(other)?),
        };
        if let Some(d) = data {
            rest.insert(key, d);
        }
        if let Some(event) = event {
            for (i, f) in functions.into_iter().enumerate() {
                let id = NEXT_HOOK.fetch_add(1, Ordering::Relaxed);
                FUNCTIONS.with(|m| m.borrow_mut().insert(id, f));
                out.push((
                    event,
                    Arc::new(LuaHook {
                        id,
                        name: format!("lua: {} #{}", event.as_str(), i + 1),
                        main: main.clone(),
                    }),
                ));
            }
        }
    }
    Ok((out, serde_json::Value::Object(rest)))
}
