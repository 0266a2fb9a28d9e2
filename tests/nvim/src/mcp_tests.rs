//! MCP servers inside Neovim: the project's `.mcp.json` starts a stdio
//! server at setup, its tools are listed by `tools()` and called in a
//! model turn next to a Lua tool, and `:checkhealth lathe` shows each
//! server's state (running, or failed with the reason).

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
        T.has("checkhealth", text, "MCP server test: running, 5 tools (log: ")
        -- A second setup adds a server that cannot start; the project's keeps running.
        T.setup(dir, {{ base_url = MOCK_URL, mcp_servers = {{ bad = {{ command = "/nonexistent/mcp-server" }} }} }})
        T.wait_for("the bad server failed", 10000, function()
          vim.cmd("checkhealth lathe")
          local t = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
          return t:find("MCP server bad: failed (/nonexistent/mcp-server could not be run: No such file or directory", 1, true) ~= nil
        end)
        vim.cmd("checkhealth lathe")
        text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
        T.has("still running", text, "MCP server test: running, 5 tools")
        "#
        ),
    )
}
