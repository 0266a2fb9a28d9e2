//! What `:checkhealth lathe` needs beyond the configuration
//! (`lua/lathe/health.lua`, `:help lathe-health`): which settings files
//! exist, whether each command hook can start, and whether `base_url`
//! answers.

use std::time::{Duration, Instant};

use mlua::{Lua, Table, Value};

use lathe_core::config::Config;

/// Longest wait `probe` accepts, in ms.
pub const MAX_PROBE_MS: u64 = 10_000;

/// `info().sandbox`: `{ off = why | nil, enforced = "…", network = bool,
/// allow_write = {…}, deny_read = {…} }` (`:help lathe-sandbox`).
fn sandbox_info(lua: &Lua, config: &Config) -> mlua::Result<Table> {
    let settings = &config.permissions.sandbox;
    let support = lathe_core::sandbox::support();
    let t = lua.create_table()?;
    let off = settings.off.clone().or_else(|| support.unavailable());
    t.set("off", off)?;
    t.set("enforced", support.describe())?;
    t.set("network", settings.network)?;
    let shown = |v: &[std::path::PathBuf]| -> Vec<String> {
        v.iter().map(|p| p.display().to_string()).collect()
    };
    t.set("allow_write", shown(&settings.allow_write))?;
    t.set("deny_read", shown(&settings.deny_read))?;
    Ok(t)
}

/// Adds to `info()`'s table `t`: `settings_files` (`{ { path, found } }`,
/// in precedence order; empty when `claude_settings = false`) and
/// `hook_commands` (`{ { event, command, problem } }`, `problem` nil when
/// the command's program exists and is executable, see
/// `hooks::check`), and `lsp_servers`, the language servers the LSP tools
/// count as running (they are offered to the model only when it is not 0),
/// `mcp_servers` ([`mcp_servers`]), `mcp_problems`
/// (`setup{ mcp_servers }` and `.mcp.json` servers not started, why) and
/// `mcp_configured` (the names of the valid configured servers, started or
/// not: before `setup()` and the first request none is).
/// Errors: Lua could not allocate.
pub fn extend_info(lua: &Lua, t: &Table, config: &Config) -> mlua::Result<()> {
    let home = dirs::home_dir();
    let files = lua.create_table()?;
    if config.claude_settings {
        for (_, path, _) in
            lathe_core::config::settings_files::candidates(&config.cwd, home.as_deref())
        {
            let f = lua.create_table()?;
            f.set("found", path.is_file())?;
            f.set("path", path.display().to_string())?;
            files.push(f)?;
        }
    }
    t.set("settings_files", files)?;
    let mut hooks = lathe_core::hooks::HookConfig::default();
    for (_, value) in &config.hook_settings {
        if let Ok(c) = lathe_core::hooks::HookConfig::from_json(value) {
            hooks.merge(c);
        }
    }
    let checks = lua.create_table()?;
    for c in lathe_core::hooks::check::check_commands(&hooks, &config.cwd, home.as_deref()) {
        let e = lua.create_table()?;
        e.set("event", c.event)?;
        e.set("command", c.command)?;
        e.set("problem", c.problem)?;
        checks.push(e)?;
    }
    t.set("hook_commands", checks)?;
    t.set("memory", memory_info(lua, config)?)?;
    t.set("sandbox", sandbox_info(lua, config)?)?;
    crate::adapters::lsp_nav::ensure_tracking();
    t.set("lsp_servers", lathe_core::editor::lsp::servers_running())?;
    let servers = mcp_servers(lua, ())?;
    t.set("mcp_servers", servers)?;
    t.set("mcp_problems", config.mcp_problems.clone())?;
    let configured: Vec<&str> = config.mcp_servers.iter().map(|s| s.name.as_str()).collect();
    t.set("mcp_configured", configured)?;
    Ok(())
}

/// `mcp_servers()` → `{ { name, state, error?, last_log_line?, log,
/// tools, tool_notes, url?, location } }`: every configured MCP server's state
/// (`running`, `starting`, `failed`, `waiting` for the user's approval of
/// a `.mcp.json` server, `refused`), `tools` how many were registered,
/// `tool_notes` what to know about its tools (renamed, not offered, schema
/// repaired), `location` its command line or URL. Errors: Lua could not
/// allocate.
pub fn mcp_servers(lua: &Lua, (): ()) -> mlua::Result<Table> {
    let servers = lua.create_table()?;
    for s in lathe_core::mcp::statuses() {
        let e = lua.create_table()?;
        e.set("name", s.name)?;
        e.set("state", s.state)?;
        e.set("error", s.error)?;
        e.set("last_log_line", s.last_log_line)?;
        e.set("log", s.log.display().to_string())?;
        e.set("tools", s.tools.len())?;
        e.set("tool_notes", lua.create_sequence_from(s.tool_notes)?)?;
        e.set("url", s.url)?;
        e.set("location", s.location)?;
        servers.push(e)?;
    }
    Ok(servers)
}

/// `probe(url, timeout_ms)` → `{ ok, status?, error?, ms }`: sends `HEAD
/// url` and waits at most `timeout_ms` (≤ [`MAX_PROBE_MS`]); `ok` when
/// any HTTP answer came (a 404 or 401 means the server is there), `status`
/// its code, `error` why none came, `ms` how long it took. Blocks the
/// caller (`:checkhealth` is synchronous). Errors: bad arguments, no
/// runtime.
pub fn probe(lua: &Lua, (url, timeout_ms): (Value, Value)) -> mlua::Result<Table> {
    let url = match url {
        Value::String(s) => s.to_str()?.to_string(),
        other => {
            return Err(mlua::Error::RuntimeError(format!(
                "lathe.probe(url): url must be a string, got {}",
                other.type_name()
            )))
        }
    };
    let ms = match timeout_ms {
        Value::Integer(n) => n.max(1) as u64,
        Value::Number(n) => n.max(1.0) as u64,
        _ => 2000,
    }
    .min(MAX_PROBE_MS);
    let rt = crate::host::runtime::handle().map_err(|e| mlua::Error::external(e.to_string()))?;
    let start = Instant::now();
    let answer = rt.block_on(async move {
        let client = lathe_core::tls::client_builder()?
            .timeout(Duration::from_millis(ms))
            .connect_timeout(Duration::from_millis(ms))
            .build()
            .map_err(|e| e.to_string())?;
        client
            .head(&url)
            .send()
            .await
            .map(|r| r.status().as_u16())
            .map_err(|e| {
                if e.is_timeout() {
                    format!("no answer within {ms} ms")
                } else {
                    let mut msg = e.to_string();
                    let mut src = std::error::Error::source(&e);
                    while let Some(s) = src {
                        msg = format!("{msg}: {s}");
                        src = s.source();
                    }
                    msg
                }
            })
    });
    let t = lua.create_table()?;
    t.set("ms", start.elapsed().as_millis() as u64)?;
    match answer {
        Ok(status) => {
            t.set("ok", true)?;
            t.set("status", status)?;
        }
        Err(e) => {
            t.set("ok", false)?;
            t.set("error", e)?;
        }
    }
    Ok(t)
}

/// `info().memory`: `{ files = { { path, kind, by? }, … }, notes = { … } }`,
/// the project memory a new session of `config` reads
/// (`lathe_core::agent::memory::discover`), imports included, in the
/// order the model gets them; `notes` the imports skipped.
fn memory_info(lua: &Lua, config: &Config) -> mlua::Result<Table> {
    use lathe_core::agent::memory;
    let found = memory::discover(&config.cwd, memory::home().as_deref());
    let files = lua.create_table()?;
    for f in &found.files {
        let e = lua.create_table()?;
        e.set("path", f.path.display().to_string())?;
        e.set("kind", f.kind.as_str())?;
        if let memory::Kind::Import(by) = &f.kind {
            e.set("by", by.display().to_string())?;
        }
        files.push(e)?;
    }
    let t = lua.create_table()?;
    t.set("files", files)?;
    t.set("notes", lua.create_sequence_from(found.notes)?)?;
    Ok(t)
}
