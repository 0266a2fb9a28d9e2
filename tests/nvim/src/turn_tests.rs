//! Whole turns inside Neovim: `:Lathe {prompt}` against an in-process
//! `mock-llm` (real HTTP on loopback), the chat, the float, the buffer, and
//! stopping a turn (`:Lathe stop`, `<C-c>` in the chat, with the float open).

use crate::common::lua_test_with_model;

/// The buggy file of the fix-the-typo turn.
const GREETING: &str = r#"local greeting = "def greet(name):\n    return f\"Helo, {name}!\"\n""#;

/// Grep → Read → Edit → final answer; each request checks the previous
/// tool results.
const FIX_SCRIPT: &str = r#"{ "responses": [
  { "content": [
      { "type": "text", "text": "Let me look for the greeting." },
      { "type": "tool_use", "id": "toolu_01", "name": "Grep", "input": { "pattern": "Helo" } } ],
    "text_chunk_chars": 4, "json_chunk_chars": 5, "event_delay_ms": 2,
    "usage": { "input_tokens": 1000, "output_tokens": 20, "cache_read_input_tokens": 0 } },
  { "content": [
      { "type": "text", "text": "Reading it." },
      { "type": "tool_use", "id": "toolu_02", "name": "Read", "input": { "file_path": "greeting.py" } } ],
    "text_chunk_chars": 4, "event_delay_ms": 2,
    "usage": { "input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 900 },
    "expect": { "tool_result_contains": { "toolu_01": "greeting.py" },
                "tool_result_is_error": { "toolu_01": false } } },
  { "content": [
      { "type": "tool_use", "id": "toolu_03", "name": "Edit",
        "input": { "file_path": "greeting.py",
                   "old_string": "    return f\"Helo, {name}!\"",
                   "new_string": "    return f\"Hello, {name}!\"" } } ],
    "usage": { "input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 1000 },
    "expect": { "tool_result_contains": { "toolu_02": "     2\t    return f\"Helo, {name}!\"" } } },
  { "content": [ { "type": "text", "text": "Fixed the typo." } ],
    "text_chunk_chars": 3, "event_delay_ms": 2,
    "usage": { "input_tokens": 100, "output_tokens": 40, "cache_read_input_tokens": 1100 },
    "expect": { "tool_result_contains": { "toolu_03": "has been updated" },
                "tool_result_is_error": { "toolu_03": false } } }
] }"#;

#[nvim_oxi::test]
fn lathe_command_fixes_the_typo_in_the_open_buffer() -> Result<(), String> {
    lua_test_with_model(
        FIX_SCRIPT,
        &format!(
            r###"
        {GREETING}
        local dir = T.project()
        local path = dir .. "/greeting.py"
        T.write(path, greeting)
        vim.cmd.cd(dir)
        local buf = T.open(path)
        vim.cmd("runtime plugin/lathe.lua") -- -u NONE loads no plugins
        T.setup(dir, {{ base_url = MOCK_URL }})
        local rec = T.answer_floats({{ "y" }})

        vim.cmd("Lathe fix the typo")
        T.eq("status right after :Lathe", T.lathe.status().state, "running")
        T.eq("wait", T.lathe.wait(15000), "done")

        -- Read right after wait(): the turn's end is already rendered.
        T.eq("chat", T.chat_text(), table.concat({{
          "## You", "", "fix the typo", "", "## lathe", "",
          "Let me look for the greeting.",
          "",
          "- Grep(\"Helo\"): done — 1 file",
          "  ```", "  Found 1 file", "  greeting.py", "  ```",
          "",
          "Reading it.",
          "",
          "- Read(greeting.py): done — 2 lines",
          "  ```python", "       1\tdef greet(name):", "       2\t    return f\"Helo, {{name}}!\"", "  ```",
          "- Edit(greeting.py): done — 1 replacement",
          "  ```diff",
          "  --- a/greeting.py", "  +++ b/greeting.py", "  @@ -1,2 +1,2 @@",
          "   def greet(name):",
          "  -    return f\"Helo, {{name}}!\"", "  +    return f\"Hello, {{name}}!\"", "  ```",
          "",
          "Fixed the typo.",
          "",
          -- The chat window is 40 columns: the token line is broken
          -- between its parts, without the cache's figures.
          "*(done)* tokens: 4.3k in, 100 out",
          "· session 4.3k in, 100 out",
          "",
        }}, "\n"))
        local usage = T.lathe.status().tokens
        T.eq("status() usage", usage, {{ input = 1300, output = 100, cache_read = 3000, cache_write = 0 }})
        T.eq("no working indicator", T.chat_virt_texts(), {{}})
        T.eq("one float, answered y", #rec.asks, 1)
        T.has("float title", rec.asks[1].title, "greeting.py")
        T.eq("floats left", T.floats(), 0)
        T.eq("buffer fixed", T.lines(buf), {{ "def greet(name):", "    return f\"Hello, {{name}}!\"" }})
        T.eq("saved", vim.bo[buf].modified, false)
        T.eq("disk", T.bytes(path), "def greet(name):\n    return f\"Hello, {{name}}!\"\n")

        -- One tool_result per tool_use, same ids, in the next user message.
        local msgs = T.lathe.transcript()
        local uses, results = {{}}, {{}}
        for i, m in ipairs(msgs) do
          for _, b in ipairs(type(m.content) == "table" and m.content or {{}}) do
            if b.type == "tool_use" then
              table.insert(uses, b.id)
              local nxt = msgs[i + 1]
              local answered = false
              for _, r in ipairs(nxt and nxt.content or {{}}) do
                if r.type == "tool_result" and r.tool_use_id == b.id then answered = true end
              end
              T.eq("tool_use " .. b.id .. " answered in the next message", answered, true)
            elseif b.type == "tool_result" then
              table.insert(results, b.tool_use_id)
            end
          end
        end
        T.eq("tool_use ids", uses, {{ "toolu_01", "toolu_02", "toolu_03" }})
        T.eq("tool_result ids", results, uses)
        "###
        ),
    )
}

/// A slow answer (about 4 s of streaming), then a quick one that must see
/// the second prompt.
const SLOW_SCRIPT: &str = r#"{ "responses": [
  { "content": [ { "type": "text", "text": "Once upon a time there was a story so long that nobody ever heard its end." } ],
    "text_chunk_chars": 2, "event_delay_ms": 100 },
  { "content": [ { "type": "text", "text": "Second answer." } ],
    "expect": { "last_user_text_contains": "and now?" } }
] }"#;

/// Starts the slow turn, lets `stop` stop it once text streamed, checks the
/// chat, then asks again.
fn stop_during_stream(stop: &str) -> Result<(), String> {
    lua_test_with_model(
        SLOW_SCRIPT,
        &format!(
            r###"
        local dir = T.project()
        vim.cmd("runtime plugin/lathe.lua")
        T.setup(dir, {{ base_url = MOCK_URL }})
        vim.cmd("Lathe tell me a story")
        T.wait_for("streamed text in the chat", 5000, function()
          return T.chat_text():find("Once up", 1, true) ~= nil
        end)
        T.eq("indicator while streaming", T.chat_virt_texts(), {{ "lathe is working… (<C-c> stops)" }})
        local stop = function() {stop} end
        stop()
        T.eq("wait after stop", T.lathe.wait(5000), "stopped")
        local chat = T.chat_text()
        T.has("chat marks the stop", chat, "*(stopped)*")
        T.lacks("the story did not finish", chat, "its end.")
        T.eq("no indicator left", T.chat_virt_texts(), {{}})

        T.lathe.ask("and now?")
        T.eq("next ask", T.lathe.wait(5000), "done")
        chat = T.chat_text()
        T.has("second answer", chat, "and now?\n\n## lathe\n\nSecond answer.\n\n*(done)*")
        T.eq("no indicator left", T.chat_virt_texts(), {{}})
        "###
        ),
    )
}

#[nvim_oxi::test]
fn lathe_stop_during_a_slow_stream_stops_and_the_next_ask_works() -> Result<(), String> {
    stop_during_stream(r#"vim.cmd("Lathe stop")"#)
}

#[nvim_oxi::test]
fn ctrl_c_in_the_chat_stops_the_turn() -> Result<(), String> {
    stop_during_stream(
        r#"
        for _, w in ipairs(vim.api.nvim_list_wins()) do
          if vim.api.nvim_win_get_buf(w) == T.chat_buf() then vim.api.nvim_set_current_win(w) end
        end
        T.eq("in the chat", vim.api.nvim_get_current_buf(), T.chat_buf())
        T.type("<C-c>")
        "#,
    )
}

/// Read, then an Edit whose float is left open until the turn is stopped;
/// the next request must carry an error result for the Edit.
const STOP_AT_FLOAT_SCRIPT: &str = r#"{ "responses": [
  { "content": [ { "type": "tool_use", "id": "toolu_r", "name": "Read", "input": { "file_path": "greeting.py" } } ] },
  { "content": [
      { "type": "tool_use", "id": "toolu_e", "name": "Edit",
        "input": { "file_path": "greeting.py", "old_string": "Helo", "new_string": "Hello" } } ],
    "expect": { "tool_result_contains": { "toolu_r": "Helo" } } },
  { "content": [ { "type": "text", "text": "Leaving it as it is." } ],
    "expect": { "tool_result_is_error": { "toolu_e": true },
                "last_user_text_contains": "leave it" } }
] }"#;

#[nvim_oxi::test]
fn stopping_while_the_float_is_open_closes_it_and_changes_nothing() -> Result<(), String> {
    lua_test_with_model(
        STOP_AT_FLOAT_SCRIPT,
        &format!(
            r###"
        {GREETING}
        local dir = T.project()
        local path = dir .. "/greeting.py"
        T.write(path, greeting)
        local buf = T.open(path)
        local win = vim.api.nvim_get_current_win()
        T.setup(dir, {{ base_url = MOCK_URL }})
        T.lathe.ask("fix it")
        T.wait_for("the permission float", 10000, function() return T.floats() == 1 end)
        T.lathe.stop()
        T.eq("wait after stop", T.lathe.wait(5000), "stopped")
        T.eq("float closed", T.floats(), 0)
        T.eq("back in the file's window", vim.api.nvim_get_current_win(), win)
        T.eq("buffer unchanged", table.concat(T.lines(buf), "\n") .. "\n", greeting)
        T.eq("disk unchanged", T.bytes(path), greeting)
        T.has("chat shows the Edit interrupted", T.chat_text(), "- Edit(greeting.py): ")
        T.lacks("chat shows no running tool", T.chat_text(), ": running")

        T.lathe.ask("leave it")
        T.eq("next ask", T.lathe.wait(5000), "done")
        T.eq("still no float", T.floats(), 0)
        "###
        ),
    )
}
