//! The Lua API through `require("lathe")`: wrong arguments are Lua errors
//! that name the argument (and Neovim lives on); the tool pipeline answers
//! through `tool_sync`.

use crate::common::load;

/// Loads lathe and puts the plugin directory on 'runtimepath'.
fn require_lathe() -> mlua::Lua {
    load();
    let lua = lathe::host::lua_handle::lua();
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    lua.load(format!("vim.opt.rtp:prepend({root:?})"))
        .exec()
        .expect("rtp");
    lua
}

#[nvim_oxi::test]
fn wrong_arguments_are_lua_errors_naming_the_argument() -> Result<(), String> {
    let lua = require_lathe();
    let failures: String = lua
        .load(
            r#"
            local lathe = require("lathe")
            local core = package.loaded["lathe.core"]
            local cases = {
              { "setup(5)", function() lathe.setup(5) end, "lathe.setup(opts): opts must be a table, got number" },
              { "setup{modle}", function() lathe.setup({ modle = "x" }) end, "modle" },
              { "setup bad mode", function() lathe.setup({ permissions = { mode = "yolo" } }) end, "yolo" },
              { "ask()", function() lathe.ask() end, "lathe.ask(prompt): prompt must be a string, got nil" },
              { "ask(5)", function() lathe.ask(5) end, "prompt must be a string, got number" },
              { "ask('  ')", function() lathe.ask("  ") end, "empty prompt" },
              { "tool(nil)", function() lathe.tool(nil, {}, function() end) end, "lathe.tool(name): name must be a string, got nil" },
              { "tool input", function() lathe.tool("Read", 5, function() end) end, "lathe.tool(input): input must be a table, got number" },
              { "tool cb", function() lathe.tool("Read", {}, "cb") end, "lathe.tool(callback): callback must be a function, got string" },
              { "wait('x')", function() lathe.wait("x") end, "lathe.wait(timeout_ms): timeout_ms must be a number, got string" },
              { "tool_sync", function() lathe.tool_sync("Read", {}) end, "lathe.tool_sync(timeout_ms): timeout_ms must be a number, got nil" },
              { "tool_sync name", function() lathe.tool_sync(5, {}, 100) end, "lathe.tool_sync(name): name must be a string, got number" },
              { "core.setup(true)", function() core.setup(true) end, "opts must be a table, got boolean" },
              { "core.ask({})", function() core.ask({}) end, "prompt must be a string, got table" },
              { "core.tool()", function() core.tool() end, "name must be a string, got nil" },
            }
            local failures = {}
            for _, c in ipairs(cases) do
              local ok, err = pcall(c[2])
              if ok then
                table.insert(failures, c[1] .. ": no error")
              elseif not tostring(err):find(c[3], 1, true) then
                table.insert(failures, c[1] .. ": error " .. vim.inspect(tostring(err)) .. " lacks " .. vim.inspect(c[3]))
              elseif not c[1]:find("^core") and tostring(err):find("stack traceback", 1, true) then
                table.insert(failures, c[1] .. ": error carries a traceback: " .. tostring(err))
              end
            end
            -- Still alive and answering.
            if vim.api.nvim_eval("1 + 1") ~= 2 then table.insert(failures, "Neovim stopped answering") end
            local state = lathe.status().state
            if state ~= "idle" then table.insert(failures, "status after errors: " .. tostring(state)) end
            return table.concat(failures, "\n")
            "#,
        )
        .eval()
        .map_err(|e| e.to_string())?;
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures)
    }
}

#[nvim_oxi::test]
fn tool_sync_runs_the_pipeline_and_reports_unknown_tools() -> Result<(), String> {
    let lua = require_lathe();
    let (content, is_error): (String, bool) = lua
        .load(
            r#"
            local r = require("lathe").tool_sync("NoSuchTool", {}, 5000)
            return r.content, r.is_error
            "#,
        )
        .eval()
        .map_err(|e| e.to_string())?;
    if !is_error || !content.contains("NoSuchTool") {
        return Err(format!(
            "want an error naming the tool, got is_error={is_error} {content:?}"
        ));
    }
    Ok(())
}

#[nvim_oxi::test]
fn status_and_transcript_start_empty() -> Result<(), String> {
    let lua = require_lathe();
    let (state, last, n): (String, Option<String>, i64) = lua
        .load(
            r#"
            local lathe = require("lathe")
            lathe.setup({})
            local st = lathe.status()
            local s, last = st.state, st.last
            return s, last, #lathe.transcript()
            "#,
        )
        .eval()
        .map_err(|e| e.to_string())?;
    if state != "idle" || last.is_some() || n != 0 {
        return Err(format!("want idle/nil/0, got {state}/{last:?}/{n}"));
    }
    Ok(())
}

/// `tool_sync` waits in `vim.wait()`, which takes no keys: a call that would
/// ask permission is refused at once with a message saying what to use
/// instead, and no float is left behind.
#[nvim_oxi::test]
fn tool_sync_refuses_calls_that_need_permission_instead_of_hanging() -> Result<(), String> {
    crate::common::lua_test(
        r#"
        local dir = T.project()
        T.write(dir .. "/a.txt", "one\n")
        T.setup(dir)
        local lathe = require("lathe")
        T.ok("Read", { file_path = dir .. "/a.txt" })
        local started = vim.uv.hrtime()
        local r = lathe.tool_sync("Edit", { file_path = dir .. "/a.txt", old_string = "one", new_string = "two" }, 5000)
        T.eq("refused", r.is_error, true)
        T.has("says why and what to do", r.content, "needs the user's permission for this call, and lathe.tool_sync cannot ask while it waits. Use lathe.tool(name, input, callback) instead")
        T.eq("at once, not after the timeout", (vim.uv.hrtime() - started) < 2e9, true)
        T.eq("no float", T.floats(), 0)
        T.eq("file untouched", T.bytes(dir .. "/a.txt"), "one\n")
        -- Allowed calls still run through tool_sync.
        r = lathe.tool_sync("Grep", { pattern = "one", output_mode = "content" }, 5000)
        T.eq("grep works", r.content, "a.txt:1:one")
        "#,
    )
}

/// `:checkhealth lathe` reports what `setup()` configured, not only the
/// environment.
#[nvim_oxi::test]
fn checkhealth_reports_the_setup_configuration() -> Result<(), String> {
    crate::common::lua_test(
        r#"
        local dir = T.project()
        vim.env.ANTHROPIC_API_KEY = nil
        vim.env.LATHE_TEST_KEY = nil
        T.setup(dir, { base_url = "http://127.0.0.1:9", api_key_env = "LATHE_TEST_KEY" })
        vim.cmd("checkhealth lathe")
        local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
        T.has("library", text, "native library loaded")
        T.has("local server needs no key", text, "no API key needed: base_url points at a local server (http://127.0.0.1:9)")
        T.has("project root from setup", text, "project root: " .. dir)
        T.lacks("no false warning", text, "is not set")
        "#,
    )
}

#[nvim_oxi::test]
fn a_lua_pre_tool_use_hook_denies_and_sees_the_input() -> Result<(), String> {
    crate::common::lua_test(
        r#"
        local dir = T.project()
        T.write(dir .. "/a.txt", "alpha\n")
        local seen = {}
        T.setup(dir, {
          permissions = { mode = "bypassPermissions" },
          hooks = {
            PreToolUse = function(input)
              table.insert(seen, { tool = input.tool_name, mode = input.permission_mode, path = input.tool_input.file_path })
              if input.tool_name == "Write" then
                return { hookSpecificOutput = { hookEventName = "PreToolUse",
                  permissionDecision = "deny", permissionDecisionReason = "no writes from Lua today" } }
              end
            end,
          },
        })
        T.ok("Read", { file_path = "a.txt" })
        local r = T.tool("Write", { file_path = "b.txt", content = "x" })
        T.eq("denied", r.is_error, true)
        T.eq("the model reads the hook's reason", r.content,
          "A PreToolUse hook denied this Write call; nothing was written or run. Reason: no writes from Lua today")
        T.eq("nothing written", vim.uv.fs_stat(dir .. "/b.txt"), nil)
        T.eq("the hook saw both calls", #seen, 2)
        T.eq("input", seen[1], { tool = "Read", mode = "bypassPermissions", path = dir .. "/a.txt" })
        "#,
    )
}

#[nvim_oxi::test]
fn lathe_mode_switches_the_permission_mode_and_status_reports_it() -> Result<(), String> {
    crate::common::lua_test(
        r#"
        local dir = T.project()
        T.write(dir .. "/p.txt", "x\n")
        T.setup(dir)
        T.eq("default mode", T.lathe.status().mode, "default")
        vim.cmd("runtime plugin/lathe.lua")
        vim.cmd("Lathe mode plan")
        T.eq("status after :Lathe mode plan", T.lathe.status().mode, "plan")
        T.eq("info", T.lathe.info().mode, "plan")
        T.ok("Read", { file_path = "p.txt" })
        local r = T.tool("Edit", { file_path = "p.txt", old_string = "x", new_string = "y" })
        T.has("plan mode refuses edits", r.content, "The session is in plan mode")
        T.eq("mode() returns the mode", T.lathe.mode("acceptEdits"), "acceptEdits")
        T.ok("Edit", { file_path = "p.txt", old_string = "x", new_string = "y" })
        T.eq("disk", T.bytes(dir .. "/p.txt"), "y\n")
        local ok, err = pcall(T.lathe.mode, "yolo")
        T.eq("unknown mode is an error", ok, false)
        T.has("names the modes", tostring(err), "use one of default, acceptEdits, plan, bypassPermissions")
        local completions = vim.fn.getcompletion("Lathe mode ", "cmdline")
        T.eq("completion", completions, { "default", "acceptEdits", "plan", "bypassPermissions" })
        "#,
    )
}

#[nvim_oxi::test]
fn settings_files_apply_and_their_problems_are_reported() -> Result<(), String> {
    crate::common::lua_test(
        r#"
        local dir = T.project()
        vim.fn.mkdir(dir .. "/.claude", "p")
        T.write(dir .. "/.claude/settings.json", vim.json.encode({ permissions = { deny = { "Read(secret.txt)" } } }))
        T.write(dir .. "/.claude/settings.local.json", "{ not json")
        T.write(dir .. "/secret.txt", "s\n")
        T.setup(dir, { claude_settings = true })
        local r = T.tool("Read", { file_path = "secret.txt" })
        T.eq("denied by the project's settings", r.is_error, true)
        T.has("names the rule and its file", r.content, "rule Read(secret.txt) from .claude/settings.json denies")
        local problems = T.lathe.info().settings_problems
        T.eq("one problem", #problems, 1)
        T.has("the broken file is named", problems[1], "settings.local.json does not parse")
        "#,
    )
}

/// `setup()` is lazy: it compiles no tool input validator and
/// builds no HTTP client (TLS roots); both wait for their first use. A
/// tool call then compiles its validator.
#[nvim_oxi::test]
fn setup_compiles_no_validator_and_builds_no_http_client() -> Result<(), String> {
    crate::common::lua_test("T.setup(T.project())")?;
    crate::common::check_eq(
        "validators compiled by setup",
        lathe_core::execution::validators_compiled(),
        0,
    )?;
    crate::common::check_eq(
        "HTTP clients built by setup",
        lathe_core::provider::http::clients_built(),
        0,
    )?;
    crate::common::lua_test(r#"T.ok("Glob", { pattern = "*.none" })"#)?;
    crate::common::check_eq(
        "validators after the first tool call",
        lathe_core::execution::validators_compiled(),
        1,
    )
}

/// `setup()` starts no thread (load ≤ 3 ms and ≤ +4 MB until
/// the first tool call): neither lathe's tokio runtime and its workers nor
/// the session log's writer. The first tool call starts the runtime;
/// `main_thread_stats()` says so to Lua (what `make bench` prints).
#[nvim_oxi::test]
fn setup_starts_no_runtime_and_no_thread() -> Result<(), String> {
    crate::common::lua_test(
        r#"
        T.setup(T.project())
        T.eq("runtime started by setup, as Lua sees it", require("lathe.core").main_thread_stats().runtime_started, false)
        "#,
    )?;
    crate::common::check_eq(
        "runtime started by setup",
        lathe::host::runtime::started(),
        false,
    )?;
    crate::common::check_eq(
        "session-log writer threads started by setup",
        lathe_core::agent::session_log::writers_started(),
        0,
    )?;
    crate::common::check_eq(
        "saved-output cleanup threads started by setup",
        lathe_core::tools::support::retention::sweeps_started(),
        0,
    )?;
    crate::common::lua_test(
        r#"
        T.ok("Glob", { pattern = "*.none" })
        T.eq("runtime started by the first tool call", require("lathe.core").main_thread_stats().runtime_started, true)
        "#,
    )?;
    crate::common::check_eq(
        "saved-output cleanup started by the first tool call",
        lathe_core::tools::support::retention::sweeps_started(),
        1,
    )
}

/// `setup()` reads and checks the configuration but makes no session (no
/// tools, provider or session log, load ≤ +4 MB until the first
/// tool call): what Lua reads in the meantime — the status, the statusline
/// component, `info()`, the transcript — comes from the configuration, and
/// the first tool call makes the session with `setup()`'s options.
#[nvim_oxi::test]
fn setup_makes_the_session_at_the_first_request() -> Result<(), String> {
    crate::common::lua_test(
        r#"
        T.setup(T.project(), { model = "claude-test-lazy", permissions = { mode = "plan" } })
        local core = require("lathe.core")
        T.eq("sessions made by setup", core.main_thread_stats().sessions_made, 0)
        T.eq("component after setup", T.lathe.statusline_component(), "lathe: idle · plan")
        local st = T.lathe.status()
        T.eq("status state", st.state, "idle")
        T.eq("status mode", st.mode, "plan")
        T.eq("status model", st.model, "claude-test-lazy")
        T.eq("info model", core.info().model, "claude-test-lazy")
        T.eq("info mode", core.info().mode, "plan")
        T.eq("transcript", #T.lathe.transcript(), 0)
        T.eq("sessions made by reading the status", core.main_thread_stats().sessions_made, 0)
        T.ok("Glob", { pattern = "*.none" })
        T.eq("sessions made by the first tool call", core.main_thread_stats().sessions_made, 1)
        T.eq("the session has setup's mode", T.lathe.status().mode, "plan")
        T.eq("and setup's model", T.lathe.status().model, "claude-test-lazy")
        T.setup(T.project())
        T.eq("a second setup makes none either", core.main_thread_stats().sessions_made, 1)
        T.eq("and drops the old session's mode", T.lathe.status().mode, "default")
        "#,
    )
}

/// The first `ask()` starts the runtime and, with the first prompt it
/// records, the session log's writer thread (the model here is
/// unreachable: the turn ends with an error).
#[nvim_oxi::test]
fn the_first_ask_starts_the_runtime_and_the_session_log() -> Result<(), String> {
    crate::common::lua_test(
        r#"T.setup(T.project(), { base_url = "http://127.0.0.1:9", max_retries = 0 })"#,
    )?;
    crate::common::check_eq(
        "runtime started by setup",
        lathe::host::runtime::started(),
        false,
    )?;
    crate::common::lua_test(
        r#"
        T.lathe.ask("hello")
        T.eq("the turn ends (the model is unreachable)", T.lathe.wait(10000) ~= "timeout", true)
        "#,
    )?;
    crate::common::check_eq(
        "runtime started by ask",
        lathe::host::runtime::started(),
        true,
    )?;
    crate::common::check_eq(
        "session-log writer threads after the first prompt",
        lathe_core::agent::session_log::writers_started(),
        1,
    )
}

/// `:checkhealth lathe` says what the sandbox enforces, or why it is off
/// (`sandbox.enabled = false`), and `info().sandbox` carries the same.
#[nvim_oxi::test]
fn checkhealth_says_what_the_sandbox_enforces_or_why_it_is_off() -> Result<(), String> {
    crate::common::lua_test(
        r#"
        local dir = T.project()
        T.setup(dir)
        local sb = T.lathe.info().sandbox
        vim.cmd("checkhealth lathe")
        local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
        vim.cmd("bwipeout!")
        if sb.off then
          T.has("off, with why", text, "sandbox: off (" .. sb.off .. "): every Bash call asks unless an exact allow rule covers it")
        else
          T.has("on, with what the kernel enforces", text, "sandbox: on, Landlock ABI")
          T.has("network", text, "network off for sandboxed commands")
        end
        T.setup(dir, { sandbox = { enabled = false, filesystem = { allowWrite = { "cache" } } } })
        T.eq("off by the setting", T.lathe.info().sandbox.off, "sandbox.enabled is false")
        vim.cmd("checkhealth lathe")
        text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
        T.has("says off and why", text, "sandbox: off (sandbox.enabled is false): every Bash call asks unless an exact allow rule covers it")
        T.has("the extra folder", text, "sandbox: commands may also write " .. dir .. "/cache (sandbox.filesystem.allowWrite)")
    "#,
    )
}
