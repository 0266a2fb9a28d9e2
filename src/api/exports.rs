//! The Lua functions of `require("lathe.core")`, built with mlua so that an
//! error is an ordinary Lua error (`pcall` works) and a panic is caught
//! (docs/threads.md, "Threads and the FFI boundary").
//! `lua/lathe/init.lua` wraps them; `doc/lathe.txt` documents them.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use mlua::{Function, Lua, LuaSerdeExt, MultiValue, SerializeOptions, Table, Value};
use serde_json::Value as Json;

use crate::api::state;
use lathe_core::agent::{Session, Status};

/// A Lua-facing error: its text is exactly the message (no prefix), so the
/// Lua layer can show `tostring(err)` up to the traceback.
#[derive(Debug)]
pub struct ApiError(pub String);

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ApiError {}

/// The library's version, `version` in Cargo.toml (`CARGO_PKG_VERSION`),
/// as `lathe.core.version()` returns it: `lua/lathe/init.lua` refuses a
/// library whose version differs from the plugin's (`lua/lathe/version.lua`,
/// which a test keeps equal to Cargo.toml; doc/lathe.txt, "lathe-install").
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

pub(crate) fn fail<T>(msg: impl Into<String>) -> mlua::Result<T> {
    Err(mlua::Error::external(ApiError(msg.into())))
}

/// `lathe.<func>(<arg>): <arg> must be <want>, got <type>`.
pub fn bad_argument(func: &str, arg: &str, want: &str, got: &Value) -> String {
    format!(
        "lathe.{func}({arg}): {arg} must be {want}, got {}",
        lua_type(got)
    )
}

/// What Lua's `type(v)` says (`number` for integers too).
fn lua_type(v: &Value) -> &'static str {
    match v {
        Value::Integer(_) | Value::Number(_) => "number",
        Value::LightUserData(_) | Value::UserData(_) => "userdata",
        other => other.type_name(),
    }
}

pub(crate) fn string_arg(func: &str, arg: &str, v: Value) -> mlua::Result<String> {
    match v {
        Value::String(s) => Ok(s.to_str()?.to_string()),
        other => fail(bad_argument(func, arg, "a string", &other)),
    }
}

/// The exports table: `setup`, `reload_settings`, `ask`, `open`, `stop`,
/// `mode`, `chat_note`, `model`, `models`, `review`, `statusline`, `status`, `settled`, `transcript`,
/// `tool`, `info`, `match_col`, `version`, `sessions`, `probe`, `resume`, `new`,
/// `statusline_component`, `register_tool`, `unregister_tool`, `tools`, `jobs`, `changes`, `changes_keep`, `checkpoints`, `rewind`, `inline_edit`, `inline_stop`, `mcp_reset`, `mcp_servers`, `main_thread_stats`. Errors: Lua could not allocate.
pub fn exports(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set("version", lua.create_function(|_, ()| Ok(VERSION))?)?;
    t.set("setup", lua.create_function(setup)?)?;
    t.set("reload_settings", lua.create_function(reload_settings)?)?;
    t.set("ask", lua.create_function(ask)?)?;
    t.set("open", lua.create_function(open)?)?;
    t.set("toggle", lua.create_function(toggle)?)?;
    t.set("close", lua.create_function(close)?)?;
    t.set("focus_prompt", lua.create_function(focus_prompt)?)?;
    t.set(
        "stop",
        lua.create_function(|_, ()| {
            state::stop_turn();
            crate::ui::float::deny_all();
            Ok(())
        })?,
    )?;
    t.set("mode", lua.create_function(mode)?)?;
    t.set(
        "chat_note",
        lua.create_function(|_, (text, is_error): (String, Option<bool>)| {
            chat_note(text, is_error.unwrap_or(false));
            Ok(())
        })?,
    )?;
    t.set("model", lua.create_function(model)?)?;
    t.set("models", lua.create_function(models)?)?;
    t.set(
        "review",
        lua.create_function(|_, ()| crate::ui::float::review().or_else(fail))?,
    )?;
    t.set(
        "statusline",
        lua.create_function(|_, ()| Ok(crate::ui::float::waiting().unwrap_or_default()))?,
    )?;
    t.set("status", lua.create_function(status)?)?;
    t.set("settled", lua.create_function(|_, ()| Ok(settled_now()))?)?;
    t.set("transcript", lua.create_function(transcript)?)?;
    t.set("compact", lua.create_function(compact)?)?;
    t.set(
        "context",
        lua.create_function(|_, ()| {
            Ok(state::session()
                .map(|s| s.context_report().lines())
                .unwrap_or_else(|| vec!["lathe context: no conversation yet".to_string()]))
        })?,
    )?;
    t.set("tool", lua.create_function(tool)?)?;
    t.set("info", lua.create_function(info)?)?;
    t.set("match_col", lua.create_function(match_col)?)?;
    t.set(
        "sessions",
        lua.create_function(crate::api::sessions::sessions)?,
    )?;
    t.set("probe", lua.create_function(crate::api::health::probe)?)?;
    t.set("resume", lua.create_function(crate::api::sessions::resume)?)?;
    t.set("new", lua.create_function(crate::api::sessions::new)?)?;
    t.set(
        "statusline_component",
        lua.create_function(|_, ()| Ok(crate::api::status::component()))?,
    )?;
    t.set(
        "register_tool",
        lua.create_function(crate::api::user_tools::register_tool)?,
    )?;
    t.set(
        "unregister_tool",
        lua.create_function(crate::api::user_tools::unregister_tool)?,
    )?;
    t.set("tools", lua.create_function(crate::api::user_tools::tools)?)?;
    t.set("jobs", lua.create_function(crate::api::jobs::jobs)?)?;
    t.set(
        "changes",
        lua.create_function(crate::api::changes::changes)?,
    )?;
    t.set(
        "changes_keep",
        lua.create_function(crate::api::changes::changes_keep)?,
    )?;
    t.set(
        "checkpoints",
        lua.create_function(crate::api::changes::checkpoints)?,
    )?;
    t.set("rewind", lua.create_function(crate::api::changes::rewind)?)?;
    t.set(
        "inline_edit",
        lua.create_function(crate::api::inline::inline_edit)?,
    )?;
    t.set(
        "inline_stop",
        lua.create_function(crate::api::inline::inline_stop)?,
    )?;
    t.set(
        "mcp_reset",
        lua.create_function(|_, ()| state::reset_mcp_trust().or_else(fail))?,
    )?;
    t.set(
        "mcp_servers",
        lua.create_function(crate::api::health::mcp_servers)?,
    )?;
    t.set(
        "main_thread_stats",
        lua.create_function(crate::host::main_stats::lua_stats)?,
    )?;
    Ok(t)
}

/// `setup(opts)`: `opts` nil or a table (see `Config::from_setup`). Starts
/// a new conversation: a running turn is stopped and the old transcript is
/// dropped.
fn setup(lua: &Lua, opts: Value) -> mlua::Result<()> {
    let mut lua_hooks = Vec::new();
    let json = match opts {
        Value::Nil => Json::Null,
        Value::Table(t) => {
            // Lua functions under `hooks` are hooks of their own; the rest
            // of the table is plain data.
            let hooks = t.get::<Value>("hooks")?;
            let copy = lua.create_table()?;
            for pair in t.pairs::<Value, Value>() {
                let (k, v) = pair?;
                copy.set(k, v)?;
            }
            copy.set("hooks", Value::Nil)?;
            let mut json = lua
                .from_value::<Json>(Value::Table(copy))
                .or_else(|e| fail(format!("lathe.setup(opts): {e}")))?;
            match hooks {
                Value::Nil => {}
                Value::Table(h) => {
                    let main = state::main_thread().ok_or_else(|| {
                        mlua::Error::external(ApiError("lathe is not loaded".into()))
                    })?;
                    let (functions, rest) =
                        crate::adapters::lua_hooks::take_lua_hooks(&h, &main)
                            .or_else(|e| fail(format!("lathe.setup(opts): hooks: {e}")))?;
                    lua_hooks = functions;
                    if let Json::Object(m) = &mut json {
                        m.insert("hooks".into(), rest);
                    } else {
                        json = serde_json::json!({ "hooks": rest });
                    }
                }
                other => return fail(bad_argument("setup", "opts.hooks", "a table", &other)),
            }
            json
        }
        other => return fail(bad_argument("setup", "opts", "a table", &other)),
    };
    let cwd = std::env::current_dir().or_else(|e| {
        fail(format!(
            "lathe.setup(opts): cannot read the current directory: {e}"
        ))
    })?;
    state::start_session(state::SetupArgs {
        opts: json,
        cwd,
        hooks: lua_hooks,
    })
    .or_else(fail)?;
    Ok(())
}

/// `reload_settings()`: reads Claude Code's settings files again and starts
/// a new conversation with the last `setup()`'s options, project root and
/// Lua hooks (`:Lathe reload`). Errors: as `setup`.
fn reload_settings(_: &Lua, (): ()) -> mlua::Result<()> {
    state::reload_settings().or_else(|e| fail(format!("lathe.reload_settings: {e}")))
}

pub(crate) fn session() -> mlua::Result<Arc<Session>> {
    state::session_or_default().or_else(fail)
}

/// `ask(prompt [, opts])`: opens (or reuses) the chat window and starts a
/// turn with context from the editor (`:help lathe-context`): the user's
/// current file, cursor line and open buffers; `opts.range = { first, last
/// }` (1-based lines of the current buffer, `:'<,'>Lathe`); the prompt's
/// `@path` and `#` words. Returns at once. Errors: not a string, empty, a
/// bad `opts`, a range outside the buffer, an `@path` that cannot be
/// attached, a turn already running.
fn ask(lua: &Lua, args: (Value, Value)) -> mlua::Result<()> {
    crate::host::main_stats::timed(crate::host::main_stats::Step::Ask, || ask_now(lua, args))
}

fn ask_now(lua: &Lua, (prompt, opts): (Value, Value)) -> mlua::Result<()> {
    let prompt = string_arg("ask", "prompt", prompt)?;
    ask_extras(lua, &prompt, opts, lathe_core::agent::TurnExtras::default())
}

/// `ask` with what a slash command adds to its turn (`api::commands`).
pub(crate) fn ask_extras(
    lua: &Lua,
    prompt: &str,
    opts: Value,
    extras: lathe_core::agent::TurnExtras,
) -> mlua::Result<()> {
    if prompt.trim().is_empty() {
        return fail(lathe_core::agent::AskError::EmptyPrompt.to_string());
    }
    let editor = crate::adapters::context::NvimContext;
    let queue = ask_queue(&opts)?;
    let selection = match ask_range(lua, opts)? {
        None => None,
        Some((first, last)) => match editor.selection(first, last) {
            Some(sel) => Some(sel),
            None => {
                return fail(format!(
                    "lathe.ask(opts): lines {first}-{last} are not in the current buffer"
                ))
            }
        },
    };
    let s = session()?;
    // While a turn runs, `opts.queue` hands the prompt to its next request.
    if queue && s.queue(prompt).or_else(|e| fail(e.to_string()))? {
        return crate::ui::chat::open_window()
            .or_else(|e| fail(format!("lathe.ask: cannot open the chat window: {e}")));
    }
    let rt = crate::host::runtime::handle().or_else(|e| fail(e.to_string()))?;
    // Gathered before the chat opens, so "the user's window" is still theirs.
    let started = s.ask_with_extras(prompt, Some(&editor), selection.as_ref(), extras, &rt);
    if let Err(e) = started {
        return fail(e.to_string());
    }
    crate::ui::chat::open_window()
        .or_else(|e| fail(format!("lathe.ask: cannot open the chat window: {e}")))
}

/// `compact(focus)`: compacts the conversation now (`:Lathe compact
/// [focus]`); the chat shows the result. A compaction that fails says why
/// in the chat and with `vim.notify` (ERROR), as a failed `:Lathe`
/// command does ([`COMPACT_FAILED_NOTIFY`]). Errors: a turn is running.
fn compact(_: &Lua, focus: Value) -> mlua::Result<()> {
    let focus = match focus {
        Value::Nil => None,
        other => Some(string_arg("compact", "focus", other)?),
    };
    let s = session()?;
    let rt = crate::host::runtime::handle().or_else(|e| fail(e.to_string()))?;
    let done = match s.compact(focus.as_deref(), &rt) {
        Ok(done) => done,
        Err(e) => return fail(e.to_string()),
    };
    if let Some(main) = state::main_thread() {
        rt.spawn(async move {
            if let Ok(Err(why)) = done.await {
                let msg = lathe_core::text::fill(COMPACT_FAILED_NOTIFY, &[("why", &why)]);
                let _ = main.post(move || crate::host::guard::notify_error(&msg));
            }
        });
    }
    crate::ui::chat::open_window()
        .or_else(|e| fail(format!("lathe.compact: cannot open the chat window: {e}")))
}

/// User-facing: `vim.notify` of a failed `:Lathe compact`. `{why}`: the
/// chat's notice (`agent::compact::COMPACT_FAILED`).
pub const COMPACT_FAILED_NOTIFY: &str = "lathe: {why}";

/// `opts.queue` of `ask`: `true` queues the prompt while a turn runs.
/// Errors name the argument.
fn ask_queue(opts: &Value) -> mlua::Result<bool> {
    let Value::Table(t) = opts else {
        return Ok(false);
    };
    match t.get::<Value>("queue")? {
        Value::Nil => Ok(false),
        Value::Boolean(b) => Ok(b),
        other => fail(bad_argument("ask", "opts.queue", "a boolean", &other)),
    }
}

/// `opts.range` of `ask` as 1-based `(first, last)`, in order; `None`
/// without opts or range. Errors name the argument.
fn ask_range(lua: &Lua, opts: Value) -> mlua::Result<Option<(usize, usize)>> {
    let t = match opts {
        Value::Nil => return Ok(None),
        Value::Table(t) => t,
        other => return fail(bad_argument("ask", "opts", "a table", &other)),
    };
    let range = t.get::<Value>("range")?;
    if range.is_nil() {
        return Ok(None);
    }
    match lua.from_value::<(usize, usize)>(range.clone()) {
        Ok((a, b)) if a >= 1 && b >= 1 => Ok(Some((a.min(b), a.max(b)))),
        _ => fail(bad_argument(
            "ask",
            "opts.range",
            "{ first, last } (1-based line numbers)",
            &range,
        )),
    }
}

/// `match_col(pattern, text [, ignore_case])` → the 1-based byte column of
/// the first match of the Grep tool's regex `pattern` (Rust regex syntax)
/// in `text`, or nil (no match, or a pattern that does not compile). The
/// `<Plug>(lathe-grep)` maps use it for the quickfix column.
fn match_col(
    _: &Lua,
    (pattern, text, ignore_case): (String, String, Option<bool>),
) -> mlua::Result<Option<usize>> {
    let re = regex::RegexBuilder::new(&pattern)
        .case_insensitive(ignore_case.unwrap_or(false))
        .build();
    Ok(re.ok().and_then(|re| re.find(&text)).map(|m| m.start() + 1))
}

/// `open()`: opens (or reuses) the chat window.
fn open(_: &Lua, (): ()) -> mlua::Result<()> {
    crate::ui::chat::open_window()
        .or_else(|e| fail(format!("lathe.open: cannot open the chat window: {e}")))
}

/// `toggle()`: closes the chat when it shows in this tab, else opens it
/// with the cursor in the prompt area (`:help lathe.toggle()`).
fn toggle(_: &Lua, (): ()) -> mlua::Result<()> {
    crate::ui::chat::toggle().or_else(|e| fail(format!("lathe.toggle: {e}")))
}

/// `close()`: closes the chat's windows in this tab; the conversation
/// stays (`:help lathe.close()`).
fn close(_: &Lua, (): ()) -> mlua::Result<()> {
    crate::ui::chat::close().or_else(|e| fail(format!("lathe.close: {e}")))
}

/// `focus_prompt()`: opens the chat and puts the cursor in the prompt area
/// in Insert mode (`:Lathe` with no argument).
fn focus_prompt(_: &Lua, (): ()) -> mlua::Result<()> {
    crate::ui::chat::focus_prompt(true).or_else(|e| fail(format!("lathe.focus_prompt: {e}")))
}

/// `status()` → `{ state, mode, model, tool, waiting_ask, tokens, spend,
/// context, last, error }` (`crate::api::status::status_json`; `:help lathe.status()`).
fn status(lua: &Lua, (): ()) -> mlua::Result<Value> {
    let opts = SerializeOptions::new()
        .serialize_none_to_null(false)
        .serialize_unit_to_null(false);
    lua.to_value_with(&crate::api::status::status_json(), opts)
}

/// `mode([name])`: with a name (`"default"`, `"acceptEdits"`, `"plan"`,
/// `"bypassPermissions"`), switches the session's permission mode and shows
/// it in the chat's winbar; returns the mode in force. Errors: an unknown
/// name (the message lists the valid ones).
fn mode(_: &Lua, name: Value) -> mlua::Result<String> {
    let s = session()?;
    match name {
        Value::Nil => {}
        Value::String(n) => {
            let n = n.to_str()?.to_string();
            let Some(m) = lathe_core::permissions::Mode::parse(&n) else {
                let all: Vec<&str> = lathe_core::permissions::Mode::ALL
                    .iter()
                    .map(|m| m.as_str())
                    .collect();
                return fail(format!(
                    "lathe.mode(name): unknown mode {n:?}; use one of {}",
                    all.join(", ")
                ));
            };
            s.set_mode(m);
        }
        other => return fail(bad_argument("mode", "name", "a string", &other)),
    }
    let current = s.mode().as_str().to_string();
    crate::ui::chat::set_mode_winbar(&current);
    Ok(current)
}

/// `model([name])`: with a name, switches the session's model from its
/// next request on (a running turn's next one too; the conversation is
/// kept) and shows it in the chat's winbar; returns the model in force
/// (`:help lathe.model()`). Errors: a name that is not a string.
fn model(_: &Lua, name: Value) -> mlua::Result<String> {
    let s = session()?;
    let current = match name {
        Value::Nil => s.model(),
        Value::String(n) => s.set_model(&n.to_str()?),
        other => return fail(bad_argument("model", "name", "a string", &other)),
    };
    crate::ui::chat::set_model(&current);
    Ok(current)
}

/// `chat_note(text, is_error)`: shows `text` in the chat as a note (an
/// error when `is_error`), as the core's notices show: what a slash command
/// said stays in view from the prompt area, whose message line shows the
/// mode. Main thread.
fn chat_note(text: String, is_error: bool) {
    crate::ui::chat::render(vec![lathe_core::events::AgentEvent::Notice {
        text,
        is_error,
    }]);
}

/// `models([callback])` → the model names known now (the current and the
/// configured one first, then the provider's list once fetched); with a
/// `callback`, also fetches the provider's list on the runtime (once per
/// session) and calls `callback(names)` on the main thread with the whole
/// list (just the current and configured ones when the provider lists
/// none or the request failed). Never waits (`:help lathe.models()`).
fn models(lua: &Lua, callback: Value) -> mlua::Result<Table> {
    let s = session()?;
    let known = lua.create_sequence_from(s.models_known())?;
    let callback = match callback {
        Value::Nil => return Ok(known),
        Value::Function(f) => f,
        other => return fail(bad_argument("models", "callback", "a function", &other)),
    };
    let rt = crate::host::runtime::handle().or_else(|e| fail(e.to_string()))?;
    let main = state::main_thread()
        .ok_or_else(|| mlua::Error::external(ApiError("lathe is not loaded".into())))?;
    let id = CALLBACKS.with(|c| {
        let mut c = c.borrow_mut();
        c.0 += 1;
        let id = c.0;
        c.1.insert(id, callback);
        id
    });
    rt.spawn(async move {
        let names = s.models().await;
        let _ = main.post(move || deliver_models(id, names));
    });
    Ok(known)
}

/// Calls the stored `models` callback `id` with `names`; its errors are
/// shown with `vim.notify`.
fn deliver_models(id: u64, names: Vec<String>) {
    let Some(cb) = CALLBACKS.with(|c| c.borrow_mut().1.remove(&id)) else {
        return;
    };
    let lua = crate::host::lua_handle::lua();
    let called = lua
        .create_sequence_from(names)
        .and_then(|t| cb.call::<()>(t));
    if let Err(e) = called {
        crate::host::guard::notify_error(&format!("lathe.models: the callback failed: {e}"));
    }
}

/// `settled()` → `true` when no turn is running, no `:Lathe resume` is
/// reading its file and the chat window shows the end of every turn (what
/// `lathe.wait()` waits for).
fn settled_now() -> bool {
    let idle = state::session().is_none_or(|s| s.status() != Status::Running);
    idle && !crate::api::sessions::loading()
        && !crate::api::changes::rewinding()
        && crate::ui::chat::settled()
}

/// `transcript()` → the conversation as a list of Messages API messages
/// (`{ role = "user", content = { { type = "text", text = ... } } }`).
fn transcript(lua: &Lua, (): ()) -> mlua::Result<Value> {
    let msgs = state::session().map(|s| s.transcript()).unwrap_or_default();
    let opts = SerializeOptions::new()
        .serialize_none_to_null(false)
        .serialize_unit_to_null(false);
    lua.to_value_with(&msgs, opts)
}

thread_local! {
    static CALLBACKS: RefCell<(u64, HashMap<u64, Function>)> = RefCell::new((0, HashMap::new()));
}

/// `info()`: the effective configuration (after `setup`, else the
/// defaults) for `:checkhealth lathe`: `{ model, base_url, api_key_env, cwd,
/// has_key, local_server, claude_settings, settings_problems, mode }`. `has_key` is true when the key's environment
/// variable is set and not empty; `local_server` when `base_url` is a
/// loopback address (no key needed).
fn info(lua: &Lua, (): ()) -> mlua::Result<Table> {
    let config = match state::with_config(Clone::clone) {
        Some(c) => c,
        None => {
            // What the first request would use: setup()'s defaults and
            // the settings files.
            let cwd = std::env::current_dir().unwrap_or_default();
            lathe_core::config::Config::from_setup(&Json::Null, &cwd)
                .unwrap_or_else(|_| lathe_core::config::Config::new(&cwd))
        }
    };
    let has_key = std::env::var(&config.api_key_env).is_ok_and(|k| !k.trim().is_empty());
    let host = reqwest::Url::parse(&config.base_url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_default();
    let local_server = host == "localhost" || host.starts_with("127.") || host == "[::1]";
    let t = lua.create_table()?;
    crate::api::health::extend_info(lua, &t, &config)?;
    t.set("provider", config.provider.as_str())?;
    t.set("model", config.model)?;
    t.set("base_url", config.base_url)?;
    t.set("api_key_env", config.api_key_env)?;
    t.set("cwd", config.cwd.display().to_string())?;
    t.set("has_key", has_key)?;
    t.set("local_server", local_server)?;
    t.set("claude_settings", config.claude_settings)?;
    t.set("settings_problems", config.settings_problems.clone())?;
    let mode = state::session()
        .map(|s| s.mode())
        .unwrap_or(config.permissions.mode);
    t.set("mode", mode.as_str())?;
    Ok(t)
}

/// `tool(name, input, callback [, opts])`: runs one tool through the
/// pipeline on the runtime; `callback({ content = string, is_error = boolean })`
/// is called later on the main thread. Returns at once. `opts.interactive =
/// false` refuses a call that would ask permission instead of opening the
/// float (`tool_sync`, whose wait cannot take keys); `opts.record = false`
/// keeps the call's reads from counting as the model's
/// (`Session::run_tool_unrecorded`; the `<Plug>(lathe-read)` preview).
fn tool(lua: &Lua, args: MultiValue) -> mlua::Result<()> {
    let mut it = args.into_iter();
    let name = string_arg("tool", "name", it.next().unwrap_or(Value::Nil))?;
    let input = match it.next().unwrap_or(Value::Nil) {
        Value::Nil => Json::Object(Default::default()),
        v @ Value::Table(_) => match lua.from_value::<Json>(v) {
            Ok(Json::Array(a)) if a.is_empty() => Json::Object(Default::default()),
            Ok(j) => j,
            Err(e) => return fail(format!("lathe.tool(input): {e}")),
        },
        other => return fail(bad_argument("tool", "input", "a table", &other)),
    };
    let callback = match it.next().unwrap_or(Value::Nil) {
        Value::Function(f) => f,
        other => return fail(bad_argument("tool", "callback", "a function", &other)),
    };
    let (interactive, record) = match it.next().unwrap_or(Value::Nil) {
        Value::Nil => (true, true),
        Value::Table(t) => (
            bool_opt(&t, "interactive", true)?,
            bool_opt(&t, "record", true)?,
        ),
        other => return fail(bad_argument("tool", "opts", "a table", &other)),
    };
    let s = session()?;
    let rt = crate::host::runtime::handle().or_else(|e| fail(e.to_string()))?;
    let main = state::main_thread()
        .ok_or_else(|| mlua::Error::external(ApiError("lathe is not loaded".into())))?;
    let id = CALLBACKS.with(|c| {
        let mut c = c.borrow_mut();
        c.0 += 1;
        let id = c.0;
        c.1.insert(id, callback);
        id
    });
    // No chat turn shows this call: its notices (hook warnings) go to vim.notify.
    let sink = Arc::new(crate::ui::notify::NotifySink::new(main.clone()));
    rt.spawn(async move {
        let result = if record {
            s.run_tool(&name, input, interactive, sink).await
        } else {
            s.run_tool_unrecorded(&name, input, interactive, sink).await
        };
        let content = result.content.as_text();
        let is_error = result.is_error;
        let _ = main.post(move || deliver(id, content, is_error));
    });
    Ok(())
}

/// `opts[key]` of `tool` as a boolean, `default` when nil. Errors name
/// the key.
fn bool_opt(t: &Table, key: &str, default: bool) -> mlua::Result<bool> {
    match t.get::<Value>(key)? {
        Value::Nil => Ok(default),
        Value::Boolean(b) => Ok(b),
        other => fail(bad_argument(
            "tool",
            &format!("opts.{key}"),
            "a boolean",
            &other,
        )),
    }
}

/// Calls the stored callback `id` with `{ content, is_error }`; its errors
/// are shown with `vim.notify`.
fn deliver(id: u64, content: String, is_error: bool) {
    let Some(cb) = CALLBACKS.with(|c| c.borrow_mut().1.remove(&id)) else {
        return;
    };
    let lua = crate::host::lua_handle::lua();
    let called = (|| -> mlua::Result<()> {
        let t = lua.create_table()?;
        t.set("content", content)?;
        t.set("is_error", is_error)?;
        cb.call::<()>(t)
    })();
    if let Err(e) = called {
        crate::host::guard::notify_error(&format!("lathe.tool: the callback failed: {e}"));
    }
}
