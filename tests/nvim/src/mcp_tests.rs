//! MCP servers inside Neovim: the project's `.mcp.json` starts a stdio
//! server at setup, its tools are listed by `tools()` and called in a
//! model turn next to a Lua tool, and `:checkhealth lathe` shows each
//! server's state (running, or failed with the reason); a project's
//! server starts only once the user allows it; an HTTP server of
//! `.mcp.json` is used the same way and shown with its URL, a bad
//! `setup{ mcp_servers }` entry only warns, and `stop()` ends a running
//! `tool()` call.

use crate::common::lua_test_with_model;

const SCRIPT: &str = r#"{ "responses": [
  { "content": [
      { "type": "tool_use", "id": "toolu_l", "name": "MakeNote", "input": { "text": "a" } },
      { "type": "tool_use", "id": "toolu_m", "name": "mcp__test__echo", "input": { "text": "b" } } ] },
  { "content": [ { "type": "text", "text": "Both done." } ],
    "expect": { "tool_result_contains": { "toolu_l": "noted: a", "toolu_m": "echo: b" },
                "tool_result_is_error": { "toolu_l": false, "toolu_m": false } } }
] }"#;

#[nvim_oxi::test]
fn a_turn_calls_a_lua_tool_and_an_mcp_tool_and_checkhealth_shows_the_servers() -> Result<(), String>
{
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mcp_json = serde_json::json!({ "mcpServers": { "test": {
        "command": root.join(".venv/bin/python"),
        "args": [root.join("tests/mcp/mock_mcp.py")],
    } } })
    .to_string();
    lua_test_with_model(
        SCRIPT,
        &format!(
            r#"
        local dir = T.project()
        vim.fn.writefile({{ [==[{mcp_json}]==] }}, dir .. "/.mcp.json")
        vim.cmd("runtime plugin/lathe.lua")
        -- The project's server starts once allowed (remembered: the second setup() does not ask).
        local floats = T.answer_floats({{ "y" }})
        T.setup(dir, {{ base_url = MOCK_URL, permissions = {{ mode = "bypassPermissions" }} }})
        T.lathe.register_tool({{ name = "MakeNote", description = "Write a note.",
          input_schema = {{ type = "object", properties = {{ text = {{ type = "string" }} }} }},
          call = function(input) return "noted: " .. input.text end }})
        local function find(name)
          for _, t in ipairs(T.lathe.tools()) do
            if t.name == name then return t end
          end
        end
        T.wait_for("the MCP server's tools", 15000, function() return find("mcp__test__image") ~= nil end)
        T.eq("source", find("mcp__test__echo").source, "mcp:test")
        T.eq("readOnlyHint", find("mcp__test__echo").read_only, "yes")
        T.eq("not read-only", find("mcp__test__crash").read_only, "no")
        T.lathe.ask("note a, echo b")
        T.eq("turn", T.lathe.wait(10000), "done")
        vim.cmd("checkhealth lathe")
        local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
        T.has("checkhealth", text, "MCP server test: running, 15 tools (log: ")
        -- A tool renamed because two names are one once cleaned, and a
        -- schema lathe repaired, are shown where the user looks.
        local renamed = "MCP server test: tool files_read is offered as mcp__test__files_read_2: files.read has the same name once cleaned"
        T.has("checkhealth: renamed", text, "WARNING " .. renamed)
        T.has("checkhealth: schema", text, "MCP server test: tool pick: its input schema has anyOf, oneOf or allOf at the top level")
        local notified
        local notify = vim.notify
        vim.notify = function(msg) notified = msg end
        vim.cmd("Lathe tools")
        vim.notify = notify
        T.has(":Lathe tools: renamed", notified, renamed)
        T.has(":Lathe tools: both offered", notified, "mcp__test__files_read_2")
        -- A second setup adds a server that cannot start; the project's keeps running.
        T.setup(dir, {{ base_url = MOCK_URL, mcp_servers = {{ bad = {{ command = "/nonexistent/mcp-server" }} }} }})
        T.wait_for("the bad server failed", 10000, function()
          vim.cmd("checkhealth lathe")
          local t = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
          return t:find("MCP server bad: failed (/nonexistent/mcp-server could not be run: No such file or directory", 1, true) ~= nil
        end)
        vim.cmd("checkhealth lathe")
        text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
        T.has("still running", text, "MCP server test: running, 15 tools")
        T.eq("asked once", #floats.asks, 1)
        "#
        ),
    )
}

/// Starts tests/mcp/mock_mcp.py serving streamable HTTP on a free local
/// port; the process (killed on drop) and its URL.
fn http_mock(dir: &std::path::Path) -> Result<(KillOnDrop, String), String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let port_file = dir.join("port");
    let child = std::process::Command::new(root.join(".venv/bin/python"))
        .arg(root.join("tests/mcp/mock_mcp.py"))
        .arg("--http")
        .arg(&port_file)
        .env("MOCK_MCP_EVENTS", dir.join("events"))
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let child = KillOnDrop(child);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        if let Ok(port) = std::fs::read_to_string(&port_file) {
            return Ok((child, format!("http://127.0.0.1:{port}/mcp")));
        }
        if std::time::Instant::now() > deadline {
            return Err("the HTTP mock did not start".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A child process killed when dropped.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[nvim_oxi::test]
fn an_http_server_from_mcp_json_is_used_a_bad_setup_entry_only_warns_and_stop_ends_a_tool_call(
) -> Result<(), String> {
    let tmp = std::env::temp_dir().join(format!("lathe-mcp-http-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|e| e.to_string())?;
    let (_mock, url) = http_mock(&tmp)?;
    let mcp_json = serde_json::json!({ "mcpServers": { "web": {
        "type": "http", "url": url, "headers": { "X-Team": "lathe" },
    } } })
    .to_string();
    let result = lua_test_with_model(
        r#"{ "responses": [] }"#,
        &format!(
            r#"
        local dir = T.project()
        vim.fn.writefile({{ [==[{mcp_json}]==] }}, dir .. "/.mcp.json")
        vim.cmd("runtime plugin/lathe.lua")
        -- An invalid entry costs only itself: setup() works, warns, and checkhealth names it.
        local warnings = {{}}
        local notify = vim.notify
        vim.notify = function(msg, level)
          if level == vim.log.levels.WARN then table.insert(warnings, msg) end
        end
        T.answer_floats({{ "y" }})
        T.setup(dir, {{ base_url = MOCK_URL, permissions = {{ mode = "bypassPermissions" }},
          mcp_servers = {{ x = {{ type = "http" }} }} }})
        vim.notify = notify
        T.eq("warning", warnings, {{ 'lathe: MCP servers not started (:checkhealth lathe, :help lathe-mcp):\nMCP server x in setup{{ mcp_servers }} is not valid: url is missing (an http server needs url = "https://…/mcp"); it is not started (the other servers are)' }})
        local function find(name)
          for _, t in ipairs(T.lathe.tools()) do
            if t.name == name then return t end
          end
        end
        T.wait_for("the HTTP server's tools", 15000, function() return find("mcp__web__boom") ~= nil end)
        T.eq("source", find("mcp__web__echo").source, "mcp:web")
        T.eq("echo", T.ok("mcp__web__echo", {{ text = "hi" }}).content, "echo: hi")
        vim.cmd("checkhealth lathe")
        local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
        T.has("checkhealth", text, "MCP server web ({url}): running, 15 tools (log: ")
        T.has("checkhealth", text, 'MCP server x in setup{{ mcp_servers }} is not valid: url is missing (an http server needs url = "https://…/mcp"); it is not started (the other servers are)')
        -- stop() ends a running lathe.tool() call of an MCP tool.
        local result
        T.lathe.tool("mcp__web__slow", {{}}, function(r) result = r end)
        T.wait_for("the slow call", 10000, function()
          return vim.fn.filereadable("{events}") == 1
            and table.concat(vim.fn.readfile("{events}"), "\n"):find("call slow", 1, true) ~= nil
        end)
        T.lathe.stop()
        T.wait_for("the call's end", 3000, function() return result ~= nil end)
        T.eq("is_error", result.is_error, true)
        T.has("interrupted", result.content, "The user interrupted mcp__web__slow while it ran")
        -- So does a Lua tool that never answers, and a built-in (Bash).
        T.lathe.register_tool({{ name = "Never", description = "Never answers.",
          input_schema = {{ type = "object", properties = {{}} }}, call = function() end }})
        local lua_result, bash_result
        T.lathe.tool("Never", {{}}, function(r) lua_result = r end)
        T.lathe.tool("Bash", {{ command = "sleep 30" }}, function(r) bash_result = r end)
        vim.wait(300)
        T.lathe.stop()
        T.wait_for("both calls' end", 3000, function() return lua_result ~= nil and bash_result ~= nil end)
        T.has("Lua tool", lua_result.content, "The user interrupted Never while it ran")
        T.eq("Lua tool is_error", lua_result.is_error, true)
        -- (Either the pipeline's or Bash's own text, depending on whether the command had started.)
        T.eq("Bash is_error", bash_result.is_error, true)
        T.eq("Bash", bash_result.content:sub(1, 24) == "Interrupted by the user:"
          or bash_result.content:sub(1, 12) == "Not applied:", true)
        "#,
            events = tmp.join("events").display()
        ),
    );
    let _ = std::fs::remove_dir_all(&tmp);
    result
}

/// Before `setup()` and the first request no MCP server runs; `:checkhealth
/// lathe` names each one `.mcp.json` configures and says when it starts,
/// next to the entries that are not valid.
#[nvim_oxi::test]
fn checkhealth_before_setup_names_the_servers_that_will_start() -> Result<(), String> {
    crate::common::lua_test(
        r###"
        local dir = T.project()
        vim.cmd.cd(dir)
        vim.fn.writefile({ [==[{"mcpServers": {"docs": {"command": "docs-server"}, "bad": {"type": "nope"}}}]==] }, dir .. "/.mcp.json")
        vim.cmd("runtime plugin/lathe.lua")
        vim.cmd("checkhealth lathe")
        local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
        T.has("configured", text, "MCP server docs: not started yet (it starts with setup() or the first request)")
        T.has("invalid", text, 'MCP server bad in ' .. dir .. '/.mcp.json is not valid: type must be "stdio" or "http", got "nope"')
        T.lacks("the invalid one is not announced", text, "MCP server bad: not started yet")
        "###,
    )
}

/// A project's `.mcp.json` server does not run before the user allows it
/// (its command would create a marker file): it waits, shown in
/// checkhealth, `:Lathe tools` and `mcp_servers()`, its tools are not
/// offered, and `stop()` leaves the question waiting; `y` starts it.
/// When its command changes it is asked about again; `n` refuses it
/// (remembered, shown as refused, in `:Lathe mcp` too); `:Lathe mcp reset`
/// asks again.
#[nvim_oxi::test]
fn a_project_mcp_server_starts_only_after_the_user_allows_it() -> Result<(), String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    crate::common::lua_test(&format!(
        r#"
        local dir = T.project()
        local marker = dir .. "/started"
        local python, mock = "{python}", "{mock}"
        local function write_mcp_json(extra)
          local json = vim.json.encode({{ mcpServers = {{ test = {{ command = "sh",
            args = {{ "-c", "touch " .. marker .. " && exec " .. python .. " " .. mock .. extra }} }} }} }})
          vim.fn.writefile({{ json }}, dir .. "/.mcp.json")
        end
        write_mcp_json("")
        vim.cmd("runtime plugin/lathe.lua")
        -- Record each question without answering it.
        local asks = {{}}
        vim.api.nvim_create_autocmd("User", {{ pattern = "LathePermissionAsk", callback = function()
          local cfg = vim.api.nvim_win_get_config(0)
          table.insert(asks, {{ title = cfg.title[1][1], lines = vim.api.nvim_buf_get_lines(0, 0, -1, false) }})
        end }})
        T.setup(dir)
        T.wait_for("the question", 5000, function() return #asks == 1 end)
        T.eq("title", asks[1].title, " Start MCP servers from .mcp.json? ")
        local text = table.concat(asks[1].lines, "\n")
        T.has("the command", text, "test: sh -c 'touch " .. marker .. " && exec " .. python .. " " .. mock .. "'")
        vim.wait(1000)
        T.eq("not started before the answer", vim.fn.filereadable(marker), 0)
        local function state()
          for _, s in ipairs(T.lathe.mcp_servers()) do
            if s.name == "test" then return s end
          end
        end
        T.eq("waiting", state().state, "waiting")
        local function tool_names()
          local names = {{}}
          for _, t in ipairs(T.lathe.tools()) do names[t.name] = true end
          return names
        end
        T.eq("no tools offered", tool_names()["mcp__test__echo"], nil)
        local function health()
          local cur = vim.api.nvim_get_current_win()
          vim.cmd("checkhealth lathe")
          local t = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
          vim.cmd("close")
          pcall(vim.api.nvim_set_current_win, cur)
          return t
        end
        -- The float has the focus: go back to it after checkhealth.
        local float = vim.api.nvim_get_current_win()
        T.has("checkhealth", health(), "MCP server test: waiting for your approval (.mcp.json; :Lathe review shows the question)")
        local notified
        local notify = vim.notify
        vim.notify = function(msg) notified = msg end
        vim.cmd("Lathe tools")
        vim.notify = notify
        T.has(":Lathe tools", notified, "MCP server test: waiting for your approval")
        -- :Lathe stop denies the turn's asks, not this question.
        T.lathe.stop()
        vim.wait(200)
        T.eq("still waiting after stop()", state().state, "waiting")
        T.eq("its float is still open", vim.api.nvim_win_is_valid(float), true)
        vim.api.nvim_set_current_win(float)
        vim.api.nvim_feedkeys("y", "x", false)
        T.wait_for("the server's start", 10000, function() return vim.fn.filereadable(marker) == 1 end)
        T.wait_for("its tools", 15000, function() return tool_names()["mcp__test__echo"] ~= nil end)
        T.eq("running", state().state, "running")
        -- The command changes: asked again, marked; n refuses (and is remembered).
        vim.fn.delete(marker)
        write_mcp_json(" --changed")
        T.setup(dir)
        T.wait_for("the second question", 5000, function() return #asks == 2 end)
        T.has("changed", table.concat(asks[2].lines, "\n"), "--changed'  (changed since you allowed it)")
        vim.api.nvim_feedkeys("n", "x", false)
        T.wait_for("refused", 5000, function() return state().state == "refused" end)
        -- A server replaced while it still lists its tools unregisters them
        -- once that listing ends.
        T.wait_for("its tools are gone", 10000, function() return tool_names()["mcp__test__echo"] == nil end)
        vim.wait(500)
        T.eq("the changed command never ran", vim.fn.filereadable(marker), 0)
        T.has("checkhealth", health(), "MCP server test: refused (.mcp.json, answer remembered: :Lathe mcp reset asks again)")
        vim.notify = function(msg) notified = msg end
        vim.cmd("Lathe mcp")
        vim.notify = notify
        T.has(":Lathe mcp", notified, "  test             refused   sh -c 'touch ")
        T.has(":Lathe mcp", notified, "refused (.mcp.json, answer remembered: :Lathe mcp reset asks again)")
        -- Remembered: another setup() does not ask.
        T.setup(dir)
        vim.wait(300)
        T.eq("not asked again", #asks, 2)
        T.eq("still refused", state().state, "refused")
        -- :Lathe mcp reset forgets the answer and asks again.
        vim.cmd("Lathe mcp reset")
        T.wait_for("the third question", 5000, function() return #asks == 3 end)
        T.lacks("not marked changed after a reset", table.concat(asks[3].lines, "\n"), "(changed since you allowed it)")
        T.eq("waiting again", state().state, "waiting")
        vim.api.nvim_feedkeys("y", "x", false)
        T.wait_for("the changed server's start", 10000, function() return vim.fn.filereadable(marker) == 1 end)
        "#,
        python = root.join(".venv/bin/python").display(),
        mock = root.join("tests/mcp/mock_mcp.py").display(),
    ))
}
