//! Tools defined in Lua (`require("lathe").register_tool`): checked at
//! registration, run through the same gates as the built-ins (schema,
//! validate_input, permissions), answered asynchronously through `done`,
//! bounded by a timeout and by the turn's stop, listed by `:Lathe tools`.

use crate::common::{lua_test, lua_test_with_model};

/// A read-only tool that answers through `done` later, and a writing one
/// that answers at once; `T.SEEN` records what the call saw.
const DEFINE: &str = r#"
local lathe = T.lathe
T.SEEN = {}
lathe.register_tool({
  name = "SearchIssues",
  description = "Search the project's issue tracker by keyword.",
  input_schema = { type = "object", properties = { query = { type = "string", minLength = 1 },
    limit = { type = "integer", minimum = 1, maximum = 20 } }, required = { "query" },
    additionalProperties = false },
  is_read_only = true,
  is_concurrency_safe = function(input) return true end,
  validate_input = function(input)
    if #input.query < 2 then return false, "query too short" end
    return true
  end,
  call = function(input, ctx, done)
    T.SEEN.input = input
    vim.defer_fn(function()
      done({ content = "issue 13 matches " .. input.query })
    end, 30)
  end,
})
lathe.register_tool({
  name = "MakeNote",
  description = "Write a note.",
  input_schema = { type = "object", properties = { text = { type = "string" } }, required = { "text" } },
  call = function(input) return "noted: " .. input.text end,
})
"#;

#[nvim_oxi::test]
fn registration_checks_name_schema_and_collisions() -> Result<(), String> {
    lua_test(
        r#"
        local lathe = T.lathe
        T.setup(T.project())
        local function err(spec)
          local ok, e = pcall(lathe.register_tool, spec)
          if ok then error("registered: " .. vim.inspect(spec.name), 2) end
          return tostring(e)
        end
        local base = function(over)
          return vim.tbl_extend("force", { name = "Good", description = "d",
            input_schema = { type = "object", properties = {} }, call = function() return "" end }, over)
        end
        T.has("bad type in schema", err(base({ input_schema = { type = "object", properties = { q = { type = "strnig" } } } })),
          "lathe.register_tool(spec): input_schema is not a valid JSON Schema: ")
        T.has("names where", err(base({ input_schema = { type = "object", properties = { q = { type = "strnig" } } } })),
          "/properties/q/type")
        T.has("not an object", err(base({ input_schema = { type = "string" } })),
          "input_schema must describe an object")
        T.has("bad name", err(base({ name = "two words" })), "name \"two words\" is not a valid tool name")
        T.has("built-in name, any case", err(base({ name = "read" })),
          "the name \"read\" is already used by the built-in tool Read")
        T.has("unknown key", err(base({ callback = 1 })), "unknown key \"callback\"")
        T.has("call missing", err(base({ call = false })), "call must be a function, got boolean")
        T.has("flag type", err(base({ is_read_only = "yes" })), "is_read_only must be a boolean or a function, got string")
        lathe.register_tool(base({}))
        T.has("taken by a Lua tool", err(base({ name = "GOOD" })), "already used by Good")
        T.eq("unregister", lathe.unregister_tool("Good"), true)
        T.eq("unregister again", lathe.unregister_tool("Good"), false)
        lathe.register_tool(base({}))
        "#,
    )
}

/// `required = {}` and `enum = {}` were refused ("{} is not of
/// type array"): an empty Lua table where the schema wants a list is an
/// empty list, and one where it wants an object an empty object.
#[nvim_oxi::test]
fn empty_tables_in_a_schema_are_what_the_schema_wants_there() -> Result<(), String> {
    lua_test(
        r#"
        local lathe = T.lathe
        T.setup(T.project())
        lathe.register_tool({
          name = "Empties",
          description = "d",
          input_schema = {
            type = "object",
            properties = { mode = { type = "string", enum = {} }, required = { type = "object", properties = {} } },
            required = {},
          },
          call = function() return "ok" end,
        })
        local listed
        for _, t in ipairs(lathe.tools()) do
          if t.name == "Empties" then listed = t end
        end
        T.eq("registered", listed ~= nil, true)
        "#,
    )
}

#[nvim_oxi::test]
fn a_lua_tool_runs_through_the_gates() -> Result<(), String> {
    lua_test(&format!(
        r#"
        T.setup(T.project())
        {DEFINE}
        -- gate 2: the schema
        local r = T.tool("SearchIssues", {{ query = "lathe", limit = 50 }})
        T.eq("schema refusal is an error", r.is_error, true)
        T.has("schema refusal", r.content, "limit")
        -- gate 4: validate_input
        r = T.tool("SearchIssues", {{ query = "x" }})
        T.eq("validate refusal", r, {{ is_error = true,
          content = "SearchIssues refused the input: query too short. Fix the input and call it again." }})
        T.eq("call not reached", T.SEEN.input, nil)
        -- read-only: runs without asking; answers through done later
        r = T.tool("searchissues", {{ query = "crash" }})
        T.eq("async done", r, {{ is_error = false, content = "issue 13 matches crash" }})
        T.eq("input", T.SEEN.input, {{ query = "crash" }})
        "#
    ))
}

#[nvim_oxi::test]
fn a_lua_tool_that_is_not_read_only_asks_and_rules_and_hooks_match_it_by_name() -> Result<(), String>
{
    lua_test(&format!(
        r#"
        local dir = T.project()
        T.setup(dir, {{ permissions = {{ allow = {{ 'MakeNote(*"text":"ok*)' }} }},
          hooks = {{ PreToolUse = function(input)
            if input.tool_name == "MakeNote" and input.tool_input.text == "forbidden" then
              return {{ hookSpecificOutput = {{ hookEventName = "PreToolUse",
                permissionDecision = "deny", permissionDecisionReason = "no forbidden notes" }} }}
            end
          end }} }})
        {DEFINE}
        local rec = T.answer_floats({{ "y", "n" }})
        local r = T.tool("MakeNote", {{ text = "hello" }})
        T.eq("allowed once", r, {{ is_error = false, content = "noted: hello" }})
        T.eq("asked once", #rec.asks, 1)
        T.has("float names the tool", rec.asks[1].title, "MakeNote")
        T.has("float shows the input", table.concat(rec.asks[1].lines, "\n"), '"text": "hello"')
        r = T.tool("MakeNote", {{ text = "again" }})
        T.eq("declined", r.is_error, true)
        T.eq("asked twice", #rec.asks, 2)
        r = T.tool("MakeNote", {{ text = "ok then" }})
        T.eq("allow rule on the input JSON", r, {{ is_error = false, content = "noted: ok then" }})
        T.eq("no third ask", #rec.asks, 2)
        r = T.tool("MakeNote", {{ text = "forbidden" }})
        T.eq("hook by name", r.is_error, true)
        T.has("hook denied", r.content, "A PreToolUse hook denied this MakeNote call")
        T.has("hook reason", r.content, "no forbidden notes")
        T.eq("no ask after the hook's deny", #rec.asks, 2)
        "#
    ))
}

#[nvim_oxi::test]
fn errors_and_silence_in_a_lua_tool_become_error_results() -> Result<(), String> {
    lua_test(
        r#"
        local lathe = T.lathe
        T.setup(T.project(), { permissions = { mode = "bypassPermissions" } })
        local schema = { type = "object", properties = { n = { type = "integer" } } }
        lathe.register_tool({ name = "Boom", description = "d", input_schema = schema, is_read_only = true,
          call = function() error("disk on fire") end })
        lathe.register_tool({ name = "BadCheck", description = "d", input_schema = schema,
          validate_input = function() error("checker broke") end, call = function() return "" end })
        lathe.register_tool({ name = "BadFlag", description = "d", input_schema = schema,
          is_read_only = function() error("flag broke") end, call = function() return "" end })
        lathe.register_tool({ name = "Silent", description = "d", input_schema = schema, is_read_only = true,
          timeout_ms = 200, call = function(input, ctx, done) T.SILENT_CTX = ctx end })
        lathe.register_tool({ name = "Failing", description = "d", input_schema = schema, is_read_only = true,
          call = function(input, ctx, done) done({ content = "no network", is_error = true }) end })
        local r = T.tool("Boom", {})
        T.eq("thrown", r.is_error, true)
        T.has("thrown text", r.content, "Boom failed: its call raised an error: ")
        T.has("thrown message", r.content, "disk on fire")
        T.lacks("no traceback", r.content, "stack traceback")
        r = T.tool("BadCheck", {})
        T.has("validate_input thrown", r.content, "BadCheck failed: its validate_input raised an error: ")
        r = T.tool("BadFlag", {})
        T.has("is_read_only thrown", r.content, "BadFlag failed: its is_read_only raised an error: ")
        local t0 = vim.uv.hrtime()
        r = T.tool("Silent", {})
        T.eq("timeout", r, { is_error = true, content =
          "Silent did not answer within 200 ms, so the call was abandoned and nothing it returns later is used. Try again with a smaller request, or tell the user the tool hangs." })
        T.eq("ctx.cancelled() after the timeout", T.SILENT_CTX.cancelled(), true)
        r = T.tool("Failing", {})
        T.eq("is_error result", r, { is_error = true, content = "no network" })
        "#,
    )
}

#[nvim_oxi::test]
fn lathe_tools_lists_every_tool_and_user_tools_survive_a_new_conversation() -> Result<(), String> {
    lua_test(&format!(
        r#"
        vim.cmd("runtime plugin/lathe.lua")
        T.setup(T.project())
        {DEFINE}
        local by = {{}}
        for _, t in ipairs(T.lathe.tools()) do by[t.name] = t end
        T.eq("Read", by.Read, {{ name = "Read", source = "built-in", read_only = "yes", offered = true }})
        T.eq("Bash", by.Bash.read_only, "per input")
        T.eq("Edit", by.Edit.read_only, "no")
        T.eq("SearchIssues", by.SearchIssues, {{ name = "SearchIssues", source = "lua", read_only = "yes", offered = true }})
        T.eq("MakeNote", by.MakeNote.read_only, "no")
        T.lathe.new()
        T.eq("after :Lathe new", T.tool("SearchIssues", {{ query = "again" }}).content, "issue 13 matches again")
        local shown
        local notify = vim.notify
        vim.notify = function(msg) shown = msg end
        vim.cmd("Lathe tools")
        vim.notify = notify
        T.has(":Lathe tools", shown, "SearchIssues")
        T.has(":Lathe tools source", shown, "lua")
        T.eq("unregister", T.lathe.unregister_tool("SearchIssues"), true)
        local r = T.tool("SearchIssues", {{ query = "gone" }})
        T.eq("unregistered", r.is_error, true)
        T.has("unknown now", r.content, "SearchIssues")
        for _, t in ipairs(T.lathe.tools()) do
          if t.name == "SearchIssues" then error("still listed") end
        end
        "#
    ))
}

/// The model calls the Lua tool (registered after setup, while the
/// session exists) and then a slow one, which the user stops.
const TURN_SCRIPT: &str = r#"{ "responses": [
  { "content": [
      { "type": "tool_use", "id": "toolu_s", "name": "SearchIssues", "input": { "query": "crash" } } ] },
  { "content": [
      { "type": "tool_use", "id": "toolu_w", "name": "Slow", "input": {} } ],
    "expect": { "tool_result_contains": { "toolu_s": "issue 13 matches crash" },
                "tool_result_is_error": { "toolu_s": false } } },
  { "content": [ { "type": "text", "text": "After the stop." } ],
    "expect": { "tool_result_contains": { "toolu_w": "The user interrupted Slow" } } }
] }"#;

#[nvim_oxi::test]
fn a_model_turn_calls_a_lua_tool_and_stop_cancels_a_slow_one() -> Result<(), String> {
    lua_test_with_model(
        TURN_SCRIPT,
        &format!(
            r#"
        local dir = T.project()
        vim.cmd("runtime plugin/lathe.lua")
        T.setup(dir, {{ base_url = MOCK_URL, permissions = {{ mode = "bypassPermissions" }} }})
        {DEFINE}
        T.lathe.register_tool({{ name = "Slow", description = "Takes forever.",
          input_schema = {{ type = "object", properties = {{}} }},
          call = function(input, ctx, done) T.SLOW_CTX = ctx; ctx.progress("working") end }})
        T.lathe.ask("find crash issues")
        T.wait_for("the slow call", 10000, function() return T.SLOW_CTX ~= nil end)
        T.eq("not cancelled yet", T.SLOW_CTX.cancelled(), false)
        T.wait_for("ctx.progress in the chat", 5000, function()
          return T.chat_text():find("working", 1, true) ~= nil
        end)
        T.lathe.stop()
        T.eq("stopped", T.lathe.wait(10000), "stopped")
        T.eq("cancelled", T.SLOW_CTX.cancelled(), true)
        T.has("chat shows the Lua tool", T.chat_text(), "SearchIssues")
        T.lathe.ask("go on")
        T.eq("next turn", T.lathe.wait(10000), "done")
        "#
        ),
    )
}
