//! What a user saw trying lathe: hook warnings shown as errors with a Lua
//! stack trace, warnings of calls from Lua that went nowhere, `:Lathe
//! status` asking for Enter, `:checkhealth` advice that reset `setup()`.

use lathe::ui::notify::NotifySink;
use lathe_core::events::{AgentEvent, EventSink};

use crate::common::{load, lua_test, lua_test_with_model};

/// One Read of `a.txt`, then an answer once its result is in.
const READ_SCRIPT: &str = r#"{ "responses": [
  { "content": [
      { "type": "tool_use", "id": "toolu_01", "name": "Read", "input": { "file_path": "a.txt" } } ] },
  { "content": [ { "type": "text", "text": "Read it." } ],
    "expect": { "tool_result_is_error": { "toolu_01": false } } }
] }"#;

/// A Lua hook that raises an error and one that answers a
/// `permissionDecision` that does not exist: both are warnings, shown as
/// notes (the call went on), the error as its message only (no stack trace,
/// no tabs) and the bad answer in Lua's terms (a table, not printed JSON).
#[nvim_oxi::test]
fn lua_hook_warnings_are_notes_with_the_message_only() -> Result<(), String> {
    lua_test_with_model(
        READ_SCRIPT,
        r#"
        local dir = T.project()
        T.write(dir .. "/a.txt", "alpha\n")
        T.setup(dir, {
          base_url = MOCK_URL,
          hooks = {
            PreToolUse = {
              function()
                error("no\tcoffee")
              end,
              function()
                return { hookSpecificOutput = { permissionDecision = "bogus" } }
              end,
            },
          },
        })
        T.lathe.ask("read a.txt")
        T.eq("the turn ends well", T.lathe.wait(15000), "done")
        local chat = T.chat_text()
        T.has("the read ran", chat, "- Read(a.txt): done")
        T.lacks("no error marks", chat, "**error:**")
        T.lacks("no stack trace", chat, "stack traceback")
        -- (the folded Read result under its line has Read's tabs; the notes have none)
        for _, l in ipairs(vim.split(chat, "\n")) do
          if vim.startswith(l, "> ") then T.lacks("no tabs", l, "\t") end
        end
        T.has("the Lua error, a note with its message",
          chat, "> **note:** PreToolUse hook `lua: PreToolUse #1` failed ([string \"test\"]:")
        T.has("the message, tabs turned to spaces", chat, ": no coffee); the call went on without it.")
        T.has("the bad answer, in Lua's terms", chat,
          "> **note:** PreToolUse hook `lua: PreToolUse #2` returned a table that does not fit Claude Code's hook output "
            .. "(hookSpecificOutput.permissionDecision: unknown variant `bogus`, expected one of `allow`, `ask`, `deny`); "
            .. "it was ignored and the call went on.")
        "#,
    )
}

/// The sink of calls run from Lua shows notices with `vim.notify` (hook
/// warnings at WARN, errors at ERROR) and nothing else.
#[nvim_oxi::test]
fn the_notify_sink_shows_notices_with_vim_notify() -> Result<(), String> {
    let main = load();
    lua_test(
        "NOTES = {}; vim.notify = function(msg, level) table.insert(NOTES, { msg, level }) end",
    )?;
    let sink = NotifySink::new(main);
    sink.emit(AgentEvent::ToolStarted {
        id: "toolu_1".into(),
        name: "Read".into(),
        detail: "a.txt".into(),
        input: serde_json::Value::Null,
    });
    sink.emit(AgentEvent::Notice {
        text: "PreToolUse hook `./check` failed with exit code 3; the call went on without it. Its stderr: (empty)".into(),
        is_error: false,
    });
    sink.emit(AgentEvent::Notice {
        text: "boom".into(),
        is_error: true,
    });
    lua_test(
        r#"
        T.wait_for("two notifications", 5000, function() return #NOTES >= 2 end)
        vim.wait(50)
        T.eq("notices only, in order, at their levels", NOTES, {
          { "lathe: PreToolUse hook `./check` failed with exit code 3; the call went on without it. Its stderr: (empty)", vim.log.levels.WARN },
          { "lathe: boom", vim.log.levels.ERROR },
        })
        "#,
    )
}

/// A hook of a call run with `lathe.tool_sync()` has no chat to warn in:
/// its warning goes to `vim.notify` (and so to `:messages`).
#[nvim_oxi::test]
fn hook_warnings_of_tool_calls_from_lua_reach_vim_notify() -> Result<(), String> {
    lua_test(
        r#"
        local dir = T.project()
        T.write(dir .. "/a.txt", "alpha\n")
        T.setup(dir, {
          hooks = {
            PreToolUse = {
              { hooks = { { type = "command", command = "exit 3" } } },
              { hooks = { { type = "command", command = "echo '{ not json'" } } },
            },
          },
        })
        local notes = {}
        vim.notify = function(msg, level) table.insert(notes, { msg = msg, level = level }) end
        local r = T.lathe.tool_sync("Read", { file_path = "a.txt" }, 10000)
        T.eq("the call went on", r.is_error, false)
        T.wait_for("two warnings", 5000, function() return #notes >= 2 end)
        table.sort(notes, function(a, b) return a.msg < b.msg end)
        T.has("bad JSON", notes[1].msg, "lathe: PreToolUse hook `echo '{ not json'` exited with code 0 but printed invalid JSON")
        T.has("exit code 3", notes[2].msg, "lathe: PreToolUse hook `exit 3` failed with exit code 3")
        T.eq("warnings", { notes[1].level, notes[2].level }, { vim.log.levels.WARN, vim.log.levels.WARN })
        "#,
    )
}

/// `:Lathe status` after an error fits the command line (no "Press ENTER"):
/// the error is cut with "…"; the chat keeps it whole.
#[nvim_oxi::test]
fn lathe_status_after_an_error_fits_on_one_line() -> Result<(), String> {
    lua_test(
        r#"
        local dir = T.project()
        vim.cmd("runtime plugin/lathe.lua")
        T.setup(dir, { base_url = "http://127.0.0.1:9", max_retries = 0 })
        T.lathe.ask("say hello")
        T.eq("the turn fails", T.lathe.wait(15000), "error")
        local message = T.lathe.status().error
        vim.o.columns = 60
        local shown = {}
        vim.notify = function(msg) table.insert(shown, msg) end
        vim.cmd("Lathe status")
        T.eq("one message", #shown, 1)
        local line = shown[1]
        T.lacks("one line", line, "\n")
        T.eq("fits without a hit-enter prompt", vim.fn.strdisplaywidth(line) <= vim.v.echospace, true)
        T.eq("uses the room", vim.fn.strdisplaywidth(line) >= vim.v.echospace - 1, true)
        T.has("state, mode and the meter first", line, "lathe: idle, mode: default, ctx ")
        T.eq("cut with an ellipsis", vim.endswith(line, "…"), true)
        T.has("the chat keeps the whole error", T.chat_text(), (message:gsub("\n.*", "")))
        -- A status that fits is shown as it is.
        T.setup(dir, { permissions = { mode = "plan" } })
        shown = {}
        vim.o.columns = 100
        vim.cmd("Lathe status")
        T.eq("whole when it fits", shown, { "lathe: idle, mode: plan, model: claude-sonnet-4-5" })
        "#,
    )
}

/// `:Lathe reload` reads the settings files again after one was fixed and
/// keeps what `setup()` configured (base_url, the project root, Lua hooks),
/// even after `:cd` elsewhere — what `:checkhealth lathe` advises.
#[nvim_oxi::test]
fn lathe_reload_reads_the_settings_files_again_and_keeps_setup() -> Result<(), String> {
    lua_test(
        r#"
        local dir = T.project()
        vim.fn.mkdir(dir .. "/.claude", "p")
        T.write(dir .. "/.claude/settings.local.json", "{ not json")
        T.write(dir .. "/a.txt", "a\n")
        local hooked = 0
        T.setup(dir, {
          claude_settings = true,
          base_url = "http://127.0.0.1:9",
          hooks = { PreToolUse = function() hooked = hooked + 1 end },
        })
        T.has("the broken file is reported", T.lathe.info().settings_problems[1] or "", "settings.local.json does not parse")
        vim.cmd("checkhealth lathe")
        local health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
        T.has("checkhealth advises :Lathe reload", health, "then run :Lathe reload")
        T.lacks("not setup() again", health, "setup() again")

        T.write(dir .. "/.claude/settings.local.json", vim.json.encode({ permissions = { deny = { "Read(a.txt)" } } }))
        vim.cmd.cd(T.project())
        vim.cmd("runtime plugin/lathe.lua")
        vim.cmd("Lathe reload")
        local info = T.lathe.info()
        T.eq("no problems left", info.settings_problems, {})
        T.eq("base_url kept", info.base_url, "http://127.0.0.1:9")
        T.eq("project root kept", info.cwd, dir)
        local r = T.tool("Read", { file_path = "a.txt" })
        T.eq("the fixed file applies", r.is_error, true)
        T.has("its rule", r.content, "rule Read(a.txt) from .claude/settings.local.json denies")
        T.eq("the Lua hook still runs", hooked, 1)
        "#,
    )
}
