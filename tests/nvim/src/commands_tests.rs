//! Slash commands (`:help lathe-commands`): `/help` lists every command,
//! an unknown `/word` says so and keeps the text, `/tmp/x …` stays a
//! prompt, `:Lathe /clear` starts a new conversation, a `setup{ commands }`
//! function's text reaches the model, and a command file's
//! `allowed-tools` lets its own turn run a tool without asking, not the
//! next turn.

use crate::common::lua_test_with_model;

/// Sends `text` from the prompt area as a user does (`<C-s>`).
const SEND: &str = r###"
local function send(text)
  vim.cmd("Lathe")
  vim.cmd("stopinsert")
  local buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(text, "\n"))
  T.type("<C-s>")
  return buf
end
local notified = {}
local notify = vim.notify
vim.notify = function(m, level) table.insert(notified, { m, level }) end
"###;

#[nvim_oxi::test]
fn help_lists_every_command_and_an_unknown_one_keeps_the_text() -> Result<(), String> {
    lua_test_with_model(
        r###"{ "responses": [
          { "content": [ { "type": "text", "text": "A path." } ],
            "expect": { "last_user_text_contains": "/tmp/x is odd" } }
        ] }"###,
        &format!(
            r###"vim.cmd("runtime plugin/lathe.lua")
        local dir = T.project()
        vim.fn.mkdir(dir .. "/.claude/commands/frontend", "p")
        T.write(dir .. "/.claude/commands/frontend/component.md", "---\ndescription: Make a component\nargument-hint: [name]\n---\nMake $1.\n")
        T.write(dir .. "/.claude/commands/broken.md", "---\nnot a key\n---\n")
        T.setup(dir, {{ base_url = MOCK_URL, commands = {{ greet = "Say hello to $ARGUMENTS" }} }})
        {SEND}
        local buf = send("/help")
        vim.notify = notify
        T.eq("the prompt area emptied", T.lines(buf), {{ "" }})
        local help = notified[1][1]
        T.has("a built-in", help, "/clear")
        T.has("with what it does", help, "start a new conversation (:Lathe new)")
        T.has("/model", help, "/model [name]")
        T.has("a setup command", help, "/greet")
        T.has("a command file, namespaced", help, "/frontend:component [name]")
        T.has("its description and origin", help, "Make a component (project:frontend)")
        T.has("a malformed file says why", help, "cannot run: lathe: command file ")
        T.has("which line", help, "line 2: expected `key: value`")

        vim.notify = function(m, level) table.insert(notified, {{ m, level }}) end
        notified = {{}}
        send("/nosuch thing\nmore")
        vim.notify = notify
        T.eq("unknown command said", notified[1][1], "lathe: unknown command /nosuch; /help lists them")
        T.eq("the text stays", T.lines(buf), {{ "/nosuch thing", "more" }})

        send("/tmp/x is odd")
        T.eq("a path is a prompt", T.lathe.wait(10000), "done")
        T.has("shown as a prompt", T.chat_text(), "/tmp/x is odd")"###
        ),
    )
}

#[nvim_oxi::test]
fn lathe_slash_clear_and_a_setup_function_command() -> Result<(), String> {
    lua_test_with_model(
        r###"{ "responses": [
          { "content": [ { "type": "text", "text": "Hello Ann." } ],
            "expect": { "last_user_text_contains": "Say hello to Ann, twice" } }
        ] }"###,
        &format!(
            r###"vim.cmd("runtime plugin/lathe.lua")
        local seen
        T.setup(vim.fn.getcwd(), {{ base_url = MOCK_URL, commands = {{
          greet = function(args) seen = args; return "Say hello to " .. args .. ", twice" end,
        }} }})
        {SEND}
        send("/greet Ann")
        T.eq("the function got the arguments", seen, "Ann")
        T.eq("turn", T.lathe.wait(10000), "done")
        T.has("the chat shows the text", T.chat_text(), "Say hello to Ann, twice")
        T.eq("in the transcript", #T.lathe.transcript(), 2)

        vim.cmd("Lathe /clear")
        vim.notify = notify
        T.eq("a new conversation", #T.lathe.transcript(), 0)
        T.has("said", notified[#notified][1], "lathe: new conversation")"###
        ),
    )
}

#[nvim_oxi::test]
fn allowed_tools_hold_for_the_commands_turn_only() -> Result<(), String> {
    lua_test_with_model(
        r###"{ "responses": [
          { "content": [ { "type": "tool_use", "id": "toolu_1", "name": "Write",
              "input": { "file_path": "a.txt", "content": "one\n" } } ],
            "expect": { "last_user_text_contains": "Write a.txt now" } },
          { "content": [ { "type": "text", "text": "Wrote it." } ],
            "expect": { "tool_result_is_error": { "toolu_1": false } } },
          { "content": [ { "type": "tool_use", "id": "toolu_2", "name": "Write",
              "input": { "file_path": "b.txt", "content": "two\n" } } ] },
          { "content": [ { "type": "text", "text": "Asked." } ],
            "expect": { "tool_result_is_error": { "toolu_2": true } } }
        ] }"###,
        &format!(
            r###"vim.cmd("runtime plugin/lathe.lua")
        local dir = T.project()
        vim.fn.mkdir(dir .. "/.claude/commands", "p")
        T.write(dir .. "/.claude/commands/mk.md", "---\nallowed-tools: Write\n---\nWrite $1 now\n")
        T.setup(dir, {{ base_url = MOCK_URL }})
        local rec = T.answer_floats({{ "n" }})
        {SEND}
        vim.cmd("Lathe /mk a.txt")
        T.eq("turn", T.lathe.wait(10000), "done")
        T.eq("no ask in the command's turn", #rec.asks, 0)
        T.eq("written", T.bytes(dir .. "/a.txt"), "one\n")
        T.has("the user was told", notified[1][1], "lathe: /mk (project command) allows without asking for this turn: Write")
        vim.cmd("Lathe write b.txt")
        T.eq("second turn", T.lathe.wait(10000), "done")
        vim.notify = notify
        T.eq("the next turn asks again", #rec.asks, 1)"###
        ),
    )
}

/// `/review src/x.py` from the prompt area: the chat's prompt is the
/// command line as typed, with `⎿ Command /review (.claude/commands/review.md)`
/// under it folded to the text the model got; `:Lathe resume` shows the
/// same.
#[nvim_oxi::test]
fn a_commands_prompt_is_shown_as_typed_with_its_text_folded_under_it() -> Result<(), String> {
    lua_test_with_model(
        r###"{ "responses": [
          { "content": [ { "type": "text", "text": "Looks fine." } ],
            "expect": { "last_user_text_contains": "Review src/x.py with care" } }
        ] }"###,
        &format!(
            r###"vim.cmd("runtime plugin/lathe.lua")
        local dir = T.project()
        vim.fn.mkdir(dir .. "/.claude/commands", "p")
        T.write(dir .. "/.claude/commands/review.md", "Review $ARGUMENTS with care\n")
        T.setup(dir, {{ base_url = MOCK_URL }})
        {SEND}
        send("/review src/x.py")
        T.eq("turn", T.lathe.wait(10000), "done")
        vim.notify = notify
        local function check(when)
          local lines = T.lines(T.chat_buf())
          local function row_of(text)
            for i, l in ipairs(lines) do
              if l == text then return i end
            end
            error(when .. ": no line " .. text .. " in:\n" .. table.concat(lines, "\n"))
          end
          local typed = row_of("/review src/x.py")
          local cmd = row_of("⎿ Command /review (.claude/commands/review.md)")
          local heading = row_of("## lathe")
          T.eq(when .. ": order", {{ typed < cmd, cmd < heading }}, {{ true, true }})
          T.eq(when .. ": the text sent under it", lines[cmd + 2], "  Review src/x.py with care")
          vim.api.nvim_win_call(vim.fn.bufwinid(T.chat_buf()), function()
            T.eq(when .. ": folded", vim.fn.foldclosed(cmd + 1), cmd)
          end)
          return table.concat(lines, "\n")
        end
        local shown = check("live")
        vim.cmd("Lathe new")
        vim.cmd("Lathe resume last")
        T.lathe.wait(5000)
        T.eq("the same chat after resume", check("resumed"), shown)"###
        ),
    )
}
