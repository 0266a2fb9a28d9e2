//! Lua-defined tools: `require("lathe").register_tool(spec)`,
//! `unregister_tool(name)` and `tools()` (`:Lathe tools`), see
//! `:help lathe-user-tools` and docs/tools.md, "User tools".
//!
//! A registration makes a [`UserTool`] whose backend ([`LuaBackend`]) calls
//! the spec's Lua functions on the main thread through the bridge: the
//! functions stay here, in a main-thread table keyed by registration id, and
//! the tool goes into the process's `UserTools` table that every session's
//! registry reads, so a tool registered while a session runs is offered
//! from its next request and survives `:Lathe new`. An error raised by any
//! of the functions becomes an error `tool_result`; a `call` that never
//! answers ends at its timeout or when the turn is stopped.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::ThreadId;
use std::time::Duration;

use async_trait::async_trait;
use mlua::{Function, Lua, LuaSerdeExt, SerializeOptions, Table, Value};
use serde_json::Value as Json;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::api::state;
use crate::host::bridge::MainThread;
use lathe_core::protocol::ToolResultContent;
use lathe_core::text::fill;
use lathe_core::tools::user::{
    Classified, Flag, UserTool, UserToolBackend, UserToolSpec, CALLBACK_FAILED, CALL_INTERRUPTED,
    CALL_TIMED_OUT, DEFAULT_MAX_RESULT_CHARS, DEFAULT_TIMEOUT_MS, INPUT_REFUSED, TOOL_GONE,
};
use lathe_core::tools::{ProgressFn, ToolContext, ToolError, ToolOutput, ToolSource};

/// Model-facing: `call` returned nothing and its `done` was collected
/// without being called. `{tool}`.
pub const NO_ANSWER: &str =
    "{tool} ended without a result: its call returned nothing and never called done(). This is a fault in the tool; tell the user.";

/// Model-facing: `validate_input` returned false without a message.
pub const NO_REASON: &str = "(the tool gave no reason)";

/// How long a per-input `is_read_only` / `is_concurrency_safe` function may
/// take, in ms (it runs while the call is being classified).
pub const CLASSIFY_TIMEOUT_MS: u64 = 5_000;

/// The keys `register_tool`'s spec may have.
const SPEC_KEYS: &[&str] = &[
    "name",
    "description",
    "input_schema",
    "is_read_only",
    "is_concurrency_safe",
    "validate_input",
    "call",
    "max_result_size_chars",
    "timeout_ms",
];

/// The Lua functions of one registration (main thread only).
struct LuaFns {
    read_only: Option<Function>,
    concurrency_safe: Option<Function>,
    validate: Option<Function>,
    call: Function,
}

thread_local! {
    /// Registration id → its functions.
    static FUNCTIONS: RefCell<HashMap<u64, LuaFns>> = RefCell::new(HashMap::new());
    /// Tool name → registration id.
    static IDS: RefCell<HashMap<String, u64>> = RefCell::new(HashMap::new());
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);
static MAIN_ID: OnceLock<ThreadId> = OnceLock::new();

fn on_main_thread() -> bool {
    MAIN_ID.get() == Some(&std::thread::current().id())
}

/// A Lua-facing error whose text is exactly the message (as
/// the Lua API's errors; a type of its own so this module does not import `api`).
#[derive(Debug)]
struct Refused(String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

fn refused(msg: impl Into<String>) -> mlua::Error {
    mlua::Error::external(Refused(msg.into()))
}

fn fail<T>(msg: impl Into<String>) -> mlua::Result<T> {
    Err(refused(format!(
        "lathe.register_tool(spec): {}",
        msg.into()
    )))
}

fn lua_type(v: &Value) -> &'static str {
    match v {
        Value::Integer(_) | Value::Number(_) => "number",
        other => other.type_name(),
    }
}

/// A boolean-or-function flag of the spec.
fn flag(key: &str, v: Value) -> mlua::Result<(Option<Flag>, Option<Function>)> {
    match v {
        Value::Nil => Ok((None, None)),
        Value::Boolean(b) => Ok((Some(Flag::Fixed(b)), None)),
        Value::Function(f) => Ok((Some(Flag::PerInput), Some(f))),
        other => fail(format!(
            "{key} must be a boolean or a function, got {}",
            lua_type(&other)
        )),
    }
}

fn positive(key: &str, v: Value) -> mlua::Result<Option<u64>> {
    match v {
        Value::Nil => Ok(None),
        Value::Integer(n) if n > 0 => Ok(Some(n as u64)),
        Value::Number(n) if n > 0.0 && n.fract() == 0.0 => Ok(Some(n as u64)),
        other => fail(format!(
            "{key} must be a positive whole number, got {}",
            match &other {
                Value::Integer(n) => n.to_string(),
                Value::Number(n) => n.to_string(),
                _ => lua_type(&other).to_string(),
            }
        )),
    }
}

/// An empty Lua table has no shape: it reads as an empty list or an
/// empty object, whichever `from_value` picks. Make it what the schema
/// wants where it stands: an object for `properties` and the other maps
/// of schemas, a list for `required`, `enum`, `type`, `anyOf`, `oneOf`,
/// `allOf`, `prefixItems` and `examples`. Keys inside a map of schemas
/// (`properties = { required = … }`) are names, not keywords.
fn fix_empty_tables(schema: &mut Json) {
    const MAPS: [&str; 5] = [
        "properties",
        "patternProperties",
        "$defs",
        "definitions",
        "dependentSchemas",
    ];
    const LISTS: [&str; 8] = [
        "required",
        "enum",
        "type",
        "anyOf",
        "oneOf",
        "allOf",
        "prefixItems",
        "examples",
    ];
    let empty = |v: &Json| {
        v.as_array().is_some_and(Vec::is_empty) || v.as_object().is_some_and(|o| o.is_empty())
    };
    match schema {
        Json::Object(map) => {
            for (key, value) in map.iter_mut() {
                if MAPS.contains(&key.as_str()) {
                    if empty(value) {
                        *value = Json::Object(Default::default());
                    } else if let Json::Object(schemas) = value {
                        schemas.values_mut().for_each(fix_empty_tables);
                    }
                } else if LISTS.contains(&key.as_str()) && empty(value) {
                    *value = Json::Array(Vec::new());
                } else {
                    fix_empty_tables(value);
                }
            }
        }
        Json::Array(items) => items.iter_mut().for_each(fix_empty_tables),
        _ => {}
    }
}

/// `register_tool(spec)`: checks the spec (unknown keys, types, the name,
/// the schema against the JSON Schema meta-schema, a name taken by a
/// built-in or another user tool) and registers the tool for every session
/// of this Neovim. Errors name the problem; nothing is registered then.
pub fn register_tool(lua: &Lua, spec: Value) -> mlua::Result<()> {
    let Value::Table(t) = spec else {
        return fail(format!("spec must be a table, got {}", lua_type(&spec)));
    };
    for pair in t.pairs::<Value, Value>() {
        let (k, _) = pair?;
        let key = match &k {
            Value::String(s) => s.to_str()?.to_string(),
            other => format!("[{}]", lua_type(other)),
        };
        if !SPEC_KEYS.contains(&key.as_str()) {
            return fail(format!(
                "unknown key {key:?}; the keys are {}",
                SPEC_KEYS.join(", ")
            ));
        }
    }
    let name = match t.get::<Value>("name")? {
        Value::String(s) => s.to_str()?.to_string(),
        other => return fail(format!("name must be a string, got {}", lua_type(&other))),
    };
    let description =
        match t.get::<Value>("description")? {
            Value::String(s) if !s.to_str()?.trim().is_empty() => s.to_str()?.to_string(),
            Value::String(_) => return fail(
                "description must not be empty: the model reads it to know when to call the tool",
            ),
            other => {
                return fail(format!(
                    "description must be a string, got {}",
                    lua_type(&other)
                ))
            }
        };
    let mut schema = match t.get::<Value>("input_schema")? {
        v @ Value::Table(_) => lua
            .from_value::<Json>(v)
            .or_else(|e| fail(format!("input_schema: {e}")))?,
        other => {
            return fail(format!(
                "input_schema must be a table, got {}",
                lua_type(&other)
            ))
        }
    };
    fix_empty_tables(&mut schema);
    let (read_only, read_only_fn) = flag("is_read_only", t.get("is_read_only")?)?;
    let (concurrency_safe, concurrency_fn) =
        flag("is_concurrency_safe", t.get("is_concurrency_safe")?)?;
    let validate = match t.get::<Value>("validate_input")? {
        Value::Nil => None,
        Value::Function(f) => Some(f),
        other => {
            return fail(format!(
                "validate_input must be a function, got {}",
                lua_type(&other)
            ))
        }
    };
    let call = match t.get::<Value>("call")? {
        Value::Function(f) => f,
        other => return fail(format!("call must be a function, got {}", lua_type(&other))),
    };
    let max_chars = positive("max_result_size_chars", t.get("max_result_size_chars")?)?
        .map_or(DEFAULT_MAX_RESULT_CHARS, |n| n as usize);
    let timeout_ms = positive("timeout_ms", t.get("timeout_ms")?)?.unwrap_or(DEFAULT_TIMEOUT_MS);
    let main = state::main_thread().ok_or_else(|| refused("lathe is not loaded"))?;
    let _ = MAIN_ID.set(std::thread::current().id());
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let spec = UserToolSpec {
        name: name.clone(),
        description,
        input_schema: schema,
        read_only: read_only.unwrap_or(Flag::Fixed(false)),
        concurrency_safe,
        max_result_chars: Some(max_chars),
        source: ToolSource::Lua,
    };
    let backend = Arc::new(LuaBackend {
        id,
        main,
        timeout: Duration::from_millis(timeout_ms),
    });
    let tool = UserTool::new(spec, backend).or_else(fail)?;
    state::user_tools()
        .register(Arc::new(tool))
        .or_else(|e| fail(e.to_string()))?;
    FUNCTIONS.with(|f| {
        f.borrow_mut().insert(
            id,
            LuaFns {
                read_only: read_only_fn,
                concurrency_safe: concurrency_fn,
                validate,
                call,
            },
        )
    });
    IDS.with(|m| m.borrow_mut().insert(name, id));
    Ok(())
}

/// `unregister_tool(name)` → `true` when a Lua tool of that name was
/// registered (it is offered no more; a call already running finishes).
/// Errors: `name` is not a string.
pub fn unregister_tool(_: &Lua, name: Value) -> mlua::Result<bool> {
    let name = match name {
        Value::String(s) => s.to_str()?.to_string(),
        other => {
            return Err(refused(format!(
                "lathe.unregister_tool(name): name must be a string, got {}",
                lua_type(&other)
            )))
        }
    };
    let Some(id) = IDS.with(|m| m.borrow_mut().remove(&name)) else {
        return Ok(false);
    };
    FUNCTIONS.with(|f| f.borrow_mut().remove(&id));
    Ok(state::user_tools().unregister(&name))
}

/// `tools()` → `{ { name, source, read_only, offered }, … }`: every tool
/// of the current session (the built-ins, then the user tools), `source`
/// `"built-in"` or `"lua"`, `read_only` `"yes"`, `"no"`
/// or `"per input"`, `offered` whether the next request sends it.
/// Errors: as `setup` when no session exists and one cannot be made.
pub fn tools(lua: &Lua, (): ()) -> mlua::Result<Table> {
    let session = state::session_or_default().map_err(refused)?;
    let list = lua.create_table()?;
    for (i, info) in session.tools().into_iter().enumerate() {
        let t = lua.create_table()?;
        t.set("name", info.name)?;
        t.set("source", info.source.label())?;
        t.set("read_only", info.read_only.label())?;
        t.set("offered", info.offered)?;
        list.set(i + 1, t)?;
    }
    Ok(list)
}

/// Calls the Lua functions of registration `id` on the main thread.
pub struct LuaBackend {
    id: u64,
    main: MainThread,
    timeout: Duration,
}

fn to_lua(lua: &Lua, json: &Json) -> mlua::Result<Value> {
    let opts = SerializeOptions::new()
        .serialize_none_to_null(false)
        .serialize_unit_to_null(false);
    lua.to_value_with(json, opts)
}

/// The text of a Lua error without mlua's wrapping (and without the stack
/// trace: the first line of a traceback is the message).
fn error_text(e: &mlua::Error) -> String {
    let full = match e {
        mlua::Error::RuntimeError(m) => m.clone(),
        mlua::Error::CallbackError { cause, .. } => return error_text(cause),
        other => other.to_string(),
    };
    full.split("\nstack traceback:")
        .next()
        .unwrap_or_default()
        .trim_end()
        .to_string()
}

fn callback_failed(tool: &str, callback: &str, error: &str) -> ToolError {
    ToolError::new(fill(
        CALLBACK_FAILED,
        &[("tool", tool), ("callback", callback), ("error", error)],
    ))
}

fn gone(tool: &str) -> ToolError {
    ToolError::new(fill(TOOL_GONE, &[("tool", tool)]))
}

fn with_fns<R>(id: u64, f: impl FnOnce(&LuaFns) -> R) -> Option<R> {
    FUNCTIONS.with(|m| m.borrow().get(&id).map(f))
}

fn classify_on_main(id: u64, input: &Json) -> Result<Classified, (String, String)> {
    let lua = crate::host::lua_handle::lua();
    let (ro, cs) =
        with_fns(id, |f| (f.read_only.clone(), f.concurrency_safe.clone())).ok_or_else(|| {
            (
                "is_read_only".to_string(),
                "the tool was unregistered".to_string(),
            )
        })?;
    let ask = |name: &str, f: Option<Function>| -> Result<Option<bool>, (String, String)> {
        let Some(f) = f else { return Ok(None) };
        let arg = to_lua(&lua, input).map_err(|e| (name.to_string(), e.to_string()))?;
        let out: Value = f
            .call(arg)
            .map_err(|e| (name.to_string(), error_text(&e)))?;
        Ok(Some(!matches!(out, Value::Nil | Value::Boolean(false))))
    };
    Ok(Classified {
        read_only: ask("is_read_only", ro)?,
        concurrency_safe: ask("is_concurrency_safe", cs)?,
    })
}

fn validate_on_main(id: u64, tool: &str, input: &Json) -> Result<(), ToolError> {
    let lua = crate::host::lua_handle::lua();
    let Some(f) = with_fns(id, |f| f.validate.clone()).ok_or_else(|| gone(tool))? else {
        return Ok(());
    };
    let arg =
        to_lua(&lua, input).map_err(|e| callback_failed(tool, "validate_input", &e.to_string()))?;
    let (ok, msg): (Value, Value) = f
        .call(arg)
        .map_err(|e| callback_failed(tool, "validate_input", &error_text(&e)))?;
    if !matches!(ok, Value::Nil | Value::Boolean(false)) {
        return Ok(());
    }
    let message = match msg {
        Value::String(s) => s.to_string_lossy().to_string(),
        Value::Nil => NO_REASON.to_string(),
        other => format!("{other:?}"),
    };
    Err(ToolError::new(fill(
        INPUT_REFUSED,
        &[("tool", tool), ("message", &message)],
    )))
}

type Answer = Arc<Mutex<Option<oneshot::Sender<Result<ToolOutput, ToolError>>>>>;

fn answer(slot: &Answer, result: Result<ToolOutput, ToolError>) {
    if let Some(tx) = slot.lock().unwrap_or_else(|e| e.into_inner()).take() {
        let _ = tx.send(result);
    }
}

/// What `done(result)` or a returned value says: a table `{ content,
/// is_error }` or a plain string (the content).
fn read_result(lua: &Lua, tool: &str, v: Value) -> Result<ToolOutput, ToolError> {
    let (content, is_error) = match v {
        Value::Table(t) => {
            let content: Value = t
                .get("content")
                .map_err(|e| callback_failed(tool, "call", &e.to_string()))?;
            let is_error = matches!(t.get::<Value>("is_error"), Ok(Value::Boolean(true)));
            (content, is_error)
        }
        other => (other, false),
    };
    let text = match content {
        Value::String(s) => s.to_string_lossy().to_string(),
        Value::Nil => String::new(),
        other => match lua.from_value::<Json>(other) {
            Ok(j) => serde_json::to_string_pretty(&j).unwrap_or_default(),
            Err(e) => return Err(callback_failed(tool, "call", &e.to_string())),
        },
    };
    if is_error {
        return Err(ToolError::new(text));
    }
    let lines = text.lines().count();
    let summary = lathe_core::text::plural(lines, "line", "lines");
    Ok(ToolOutput::new(ToolResultContent::Text(text), summary))
}

/// Starts `call(input, ctx, done)` on the main thread; its answer (a value
/// returned, `done(result)`, or an error raised) goes to `slot`.
fn start_on_main(
    id: u64,
    tool: &str,
    input: &Json,
    slot: Answer,
    cancel: CancellationToken,
    progress: Option<ProgressFn>,
) {
    let lua = crate::host::lua_handle::lua();
    let Some(f) = with_fns(id, |f| f.call.clone()) else {
        return answer(&slot, Err(gone(tool)));
    };
    let started = (|| -> mlua::Result<Value> {
        let arg = to_lua(&lua, input)?;
        let ctx = lua.create_table()?;
        ctx.set(
            "cancelled",
            lua.create_function(move |_, ()| Ok(cancel.is_cancelled()))?,
        )?;
        ctx.set(
            "progress",
            lua.create_function(move |_, text: mlua::String| {
                if let Some(p) = &progress {
                    p(&text.as_bytes());
                }
                Ok(())
            })?,
        )?;
        let done_slot = slot.clone();
        let name = tool.to_string();
        let done = lua.create_function(move |lua, v: Value| {
            answer(&done_slot, read_result(lua, &name, v));
            Ok(())
        })?;
        f.call::<Value>((arg, ctx, done))
    })();
    match started {
        Err(e) => answer(&slot, Err(callback_failed(tool, "call", &error_text(&e)))),
        Ok(Value::Nil) => {}
        Ok(v) => answer(&slot, read_result(&lua, tool, v)),
    }
}

#[async_trait]
impl UserToolBackend for LuaBackend {
    fn classify(&self, input: &Json) -> Result<Classified, (String, String)> {
        if on_main_thread() {
            return classify_on_main(self.id, input);
        }
        // Gate 3 is synchronous and runs on a runtime worker: wait for the
        // main thread there (block_in_place lets the worker's other tasks
        // move on). Anywhere else the flags stay false (ask, run alone).
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return Ok(Classified::default());
        };
        if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
            return Ok(Classified::default());
        }
        let (id, main, input) = (self.id, self.main.clone(), input.clone());
        let waited = tokio::task::block_in_place(|| {
            handle.block_on(tokio::time::timeout(
                Duration::from_millis(CLASSIFY_TIMEOUT_MS),
                main.run(move || classify_on_main(id, &input)),
            ))
        });
        match waited {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => Err(("is_read_only".into(), e.to_string())),
            Err(_) => Err((
                "is_read_only".into(),
                format!("it did not answer within {CLASSIFY_TIMEOUT_MS} ms"),
            )),
        }
    }

    async fn validate(&self, tool: &str, input: &Json) -> Result<(), ToolError> {
        let (id, name, input) = (self.id, tool.to_string(), input.clone());
        let run = self.main.run(move || validate_on_main(id, &name, &input));
        match tokio::time::timeout(self.timeout, run).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(gone(tool)),
            Err(_) => Err(ToolError::new(fill(
                CALL_TIMED_OUT,
                &[
                    ("tool", tool),
                    ("ms", &self.timeout.as_millis().to_string()),
                ],
            ))),
        }
    }

    async fn call(
        &self,
        tool: &str,
        input: Json,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let (tx, rx) = oneshot::channel();
        let slot: Answer = Arc::new(Mutex::new(Some(tx)));
        // The tool's ctx.cancelled() turns true on a stop and on the timeout.
        let cancel = ctx.cancel.child_token();
        let (id, name, progress) = (self.id, tool.to_string(), ctx.progress.clone());
        let on_main = cancel.clone();
        let started = self
            .main
            .post(move || start_on_main(id, &name, &input, slot, on_main, progress));
        if started.is_err() {
            return Err(gone(tool));
        }
        let result = tokio::select! {
            r = rx => r.unwrap_or_else(|_| Err(ToolError::new(fill(NO_ANSWER, &[("tool", tool)])))),
            _ = ctx.cancel.cancelled() => Err(ToolError::new(fill(CALL_INTERRUPTED, &[("tool", tool)]))),
            _ = tokio::time::sleep(self.timeout) => Err(ToolError::new(fill(
                CALL_TIMED_OUT,
                &[("tool", tool), ("ms", &self.timeout.as_millis().to_string())],
            ))),
        };
        cancel.cancel();
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_tables_become_what_the_schema_needs_there() {
        let mut s = serde_json::json!({ "type": "object", "properties": [], "required": [] });
        fix_empty_tables(&mut s);
        assert_eq!(
            s,
            serde_json::json!({ "type": "object", "properties": {}, "required": [] })
        );
        let mut s = serde_json::json!({ "type": "object", "required": {},
            "properties": { "enum": {}, "required": { "type": "string", "enum": {} }, "x": { "items": {} } } });
        fix_empty_tables(&mut s);
        assert_eq!(
            s,
            serde_json::json!({ "type": "object", "required": [],
                "properties": { "enum": {}, "required": { "type": "string", "enum": [] }, "x": { "items": {} } } })
        );
    }

    #[test]
    fn texts() {
        assert_eq!(
            fill(NO_ANSWER, &[("tool", "T")]),
            "T ended without a result: its call returned nothing and never called done(). This is a fault in the tool; tell the user."
        );
    }
}
