//! Saved conversations (`:Lathe new`, `:Lathe resume`), `lathe.status()`,
//! the statusline component, the `User` events and `:checkhealth lathe`,
//! against an in-process `mock-llm` over real HTTP.

use crate::common::lua_test_with_model;

/// A Read, an answer; then (after resume) a third answer that must see
/// the first turn's tool result and the new prompt.
const SAVE_SCRIPT: &str = r###"{ "responses": [
  { "content": [
      { "type": "text", "text": "Reading." },
      { "type": "tool_use", "id": "toolu_01", "name": "Read", "input": { "file_path": "a.txt" } } ],
    "usage": { "input_tokens": 100, "output_tokens": 10 } },
  { "content": [ { "type": "text", "text": "It says hello." } ],
    "usage": { "input_tokens": 120, "output_tokens": 5 },
    "expect": { "tool_result_contains": { "toolu_01": "hello" } } },
  { "content": [ { "type": "text", "text": "Still here." } ],
    "expect": { "last_user_text_contains": "and now?",
                "tool_result_contains": { "toolu_01": "hello" } } }
] }"###;

#[nvim_oxi::test]
fn a_conversation_is_saved_and_resumed_where_it_was() -> Result<(), String> {
    lua_test_with_model(
        SAVE_SCRIPT,
        r###"
        local dir = T.project()
        T.write(dir .. "/a.txt", "hello\n")
        vim.cmd.cd(dir)
        vim.cmd("runtime plugin/lathe.lua")
        T.setup(dir, { base_url = MOCK_URL })
        vim.cmd("Lathe read a.txt")
        T.eq("first turn", T.lathe.wait(15000), "done")
        local shown = T.chat_text()
        T.has("chat", shown, "- Read(a.txt): done")
        local tokens = T.lathe.status().tokens

        -- One JSONL file under stdpath("state")/lathe/sessions/<project>/.
        -- It is written on a thread of its own: a turn's records land a
        -- moment after the turn ends, its turn_end record last.
        local function turns_saved(path, n)
          return vim.wait(5000, function()
            local ends = 0
            for _, l in ipairs(vim.fn.readfile(path)) do
              local ok, r = pcall(vim.json.decode, l)
              if ok and r.type == "turn_end" then ends = ends + 1 end
            end
            return ends >= n
          end, 20)
        end
        local files = {}
        vim.wait(5000, function()
          files = vim.fn.glob(vim.fn.stdpath("state") .. "/lathe/sessions/*/*.jsonl", false, true)
          return #files > 0
        end, 20)
        T.eq("one session file", #files, 1)
        T.eq("first turn saved", turns_saved(files[1], 1), true)
        T.has("project folder named after the root", files[1], "/" .. vim.fn.fnamemodify(dir, ":t") .. "-")
        local lines = vim.fn.readfile(files[1])
        local header = vim.json.decode(lines[1])
        T.eq("header", { header.type, header.first_prompt, header.cwd, header.model },
          { "session", "read a.txt", dir, "claude-sonnet-4-5" })
        local types = {}
        for i = 2, #lines do
          table.insert(types, vim.json.decode(lines[i]).type)
        end
        table.sort(types)
        T.eq("records", types,
          { "assistant", "assistant", "checkpoint_begin", "checkpoint_files", "file_stamps", "tool_done", "tool_results",
            "tool_start", "turn_end", "user" })

        -- :Lathe new: an empty conversation and chat; the old one is listed.
        -- The chat's windows stay, and so does a half-typed prompt.
        T.lathe.focus_prompt()
        vim.cmd.stopinsert()
        vim.api.nvim_buf_set_lines(0, 0, -1, false, { "half typed" })
        local chat_win = vim.fn.bufwinid("lathe://chat")
        local old_chat = T.chat_buf()
        vim.cmd("Lathe new")
        T.eq("chat after :Lathe new", T.chat_text(), "")
        -- A new buffer: the old one is wiped, so Neovim frees all it held.
        T.eq("the old chat buffer is wiped", vim.api.nvim_buf_is_valid(old_chat), false)
        T.eq("a new chat buffer", T.chat_buf() ~= old_chat, true)
        T.eq("one chat buffer", #vim.tbl_filter(function(b)
          return vim.api.nvim_buf_get_name(b):find("lathe://chat", 1, true) ~= nil
        end, vim.api.nvim_list_bufs()), 1)
        T.eq("the chat window stays", vim.fn.bufwinid("lathe://chat"), chat_win)
        T.eq("the prompt stays", vim.api.nvim_buf_get_lines(vim.fn.bufnr("lathe://prompt"), 0, -1, false),
          { "half typed" })
        vim.api.nvim_buf_set_lines(vim.fn.bufnr("lathe://prompt"), 0, -1, false, {})
        vim.cmd.wincmd("p")
        T.eq("transcript after :Lathe new", T.lathe.transcript(), {})
        T.eq("tokens after :Lathe new", T.lathe.status().tokens,
          { input = 0, output = 0, cache_read = 0, cache_write = 0 })
        local saved = T.lathe.sessions()
        T.eq("listed", #saved, 1)
        T.eq("listed prompt", saved[1].first_prompt, "read a.txt")
        T.eq("listed path", saved[1].path, files[1])
        T.eq("picker line", require("lathe.sessions").format(saved[1]):sub(17), "  read a.txt")

        -- :Lathe resume last: the same conversation, the same chat.
        vim.cmd("Lathe resume last")
        T.lathe.wait(5000)
        T.eq("chat after resume", T.chat_text(), shown)
        T.eq("messages after resume", #T.lathe.transcript(), 4)
        T.eq("tokens after resume", T.lathe.status().tokens, tokens)
        T.eq("the current one is not listed", #T.lathe.sessions(), 0)
        -- The meter of the resumed conversation, before its next request.
        T.wait_for("the meter after resume", 5000, function()
          return vim.wo[vim.fn.bufwinid("lathe://chat")].winbar:find("ctx ", 1, true) ~= nil
        end)
        T.has("status() has the meter", T.lathe.status().context.label, "ctx ")

        -- It goes on in the same file; the model gets the whole history.
        vim.cmd("Lathe and now?")
        T.eq("turn after resume", T.lathe.wait(15000), "done")
        T.has("answer", T.chat_text(), "Still here.")
        T.eq("still one file", #vim.fn.glob(vim.fn.stdpath("state") .. "/lathe/sessions/*/*.jsonl", false, true), 1)
        T.eq("second turn saved", turns_saved(files[1], 2), true)
        local users = 0
        for _, l in ipairs(vim.fn.readfile(files[1])) do
          if vim.json.decode(l).type == "user" then users = users + 1 end
        end
        T.eq("two prompts in the file", users, 2)
        "###,
    )
}

/// The next request after resuming a session that ended mid-turn: the
/// mock's pairing rule refuses it unless `toolu_09` has a result.
const REPAIR_SCRIPT: &str = r###"{ "responses": [
  { "content": [ { "type": "text", "text": "Going on." } ],
    "expect": { "tool_result_is_error": { "toolu_09": true },
                "tool_result_contains": { "toolu_09": "did not finish" },
                "last_user_text_contains": "go on" } }
] }"###;

#[nvim_oxi::test]
fn a_session_cut_mid_turn_and_mid_line_is_repaired_and_loads() -> Result<(), String> {
    lua_test_with_model(
        REPAIR_SCRIPT,
        r###"
        local dir = T.project()
        vim.cmd.cd(dir)
        vim.cmd("runtime plugin/lathe.lua")
        T.setup(dir, { base_url = MOCK_URL })
        -- Saved by a Neovim that died while Bash ran, in the middle of a line.
        local path = dir .. "/saved.jsonl"
        T.write(path, table.concat({
          vim.json.encode({ type = "session", version = 1, id = "1-1", cwd = dir, model = "m",
                            created_ms = 1000, first_prompt = "run it" }),
          vim.json.encode({ type = "user", text = "run it", blocks = {
            { type = "text", text = "<editor-context>\nWhat the user's Neovim showed\n</editor-context>" },
            { type = "text", text = "run it" },
          } }),
          '{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Running."},'
            .. '{"type":"tool_use","id":"toolu_09","name":"Bash","input":{"command":"sleep 100"}}]}}',
          vim.json.encode({ type = "tool_start", id = "toolu_09", name = "Bash", detail = "sleep 100" }),
          '{"type":"tool_results","resu',
        }, "\n"))
        local notes = {}
        vim.notify = function(msg) table.insert(notes, msg) end
        T.lathe.resume(path)
        T.lathe.wait(5000)
        local all = table.concat(notes, "\n")
        T.has("corrupt line reported", all, "line 5 of " .. path .. " could not be read and was skipped")
        T.has("repair reported", all, "unfinished tool calls were marked interrupted")
        T.has("named by the prompt as typed", all, 'lathe: resumed "run it"; it ended in the middle')
        T.eq("chat", T.chat_text(), table.concat({
          "## You", "", "run it", "", "## lathe", "",
          "Running.",
          "",
          "- Bash(sleep 100): interrupted — no result: the session ended while it ran",
          "", "*(stopped)*", "",
        }, "\n"))
        local msgs = T.lathe.transcript()
        T.eq("messages", #msgs, 3)
        T.eq("interrupted result", { msgs[3].content[1].tool_use_id, msgs[3].content[1].is_error },
          { "toolu_09", true })

        T.lathe.ask("go on")
        T.eq("next request accepted", T.lathe.wait(15000), "done")
        T.has("answer", T.chat_text(), "Going on.")
        -- Appended on a line of its own after the cut one (written on the
        -- log's thread, a moment after the turn ends).
        local last_type
        vim.wait(5000, function()
          local last = vim.fn.readfile(path)
          local ok, r = pcall(vim.json.decode, last[#last])
          last_type = ok and r.type or nil
          return last_type == "turn_end"
        end, 20)
        T.eq("appended record", last_type, "turn_end")
        "###,
    )
}

/// A Write that asks, then an answer.
const ASK_SCRIPT: &str = r###"{ "responses": [
  { "content": [
      { "type": "tool_use", "id": "toolu_01", "name": "Write", "input": { "file_path": "new.txt", "content": "x\n" } } ],
    "usage": { "input_tokens": 100, "output_tokens": 10 } },
  { "content": [ { "type": "text", "text": "Written." } ],
    "usage": { "input_tokens": 200, "output_tokens": 20 },
    "expect": { "tool_result_is_error": { "toolu_01": false } } }
] }"###;

#[nvim_oxi::test]
fn status_statusline_component_and_user_events_follow_a_turn() -> Result<(), String> {
    lua_test_with_model(
        ASK_SCRIPT,
        r###"
        local dir = T.project()
        vim.cmd.cd(dir)
        vim.cmd("runtime plugin/lathe.lua")
        T.eq("component before any session", T.lathe.statusline_component(), "")
        T.setup(dir, { base_url = MOCK_URL })
        local before = T.lathe.status()
        T.eq("status before a request", before, {
          state = "idle", mode = "default", model = "claude-sonnet-4-5",
          tokens = { input = 0, output = 0, cache_read = 0, cache_write = 0 },
        })
        local events = {}
        vim.api.nvim_create_autocmd("User", {
          pattern = { "LatheTurnStart", "LatheToolStart", "LatheToolDone", "LathePermissionAsk", "LatheTurnDone" },
          callback = function(ev) table.insert(events, { ev.match, ev.data }) end,
        })
        local seen = {}
        vim.api.nvim_create_autocmd("User", {
          pattern = { "LatheTurnStart", "LatheToolStart" },
          callback = function(ev)
            seen[ev.match] = { T.lathe.statusline_component(), T.lathe.status().state }
          end,
        })
        local during, component
        vim.api.nvim_create_autocmd("User", {
          pattern = "LathePermissionAsk",
          callback = function()
            during = T.lathe.status()
            component = T.lathe.statusline_component()
            vim.api.nvim_feedkeys("y", "x", false)
          end,
        })
        vim.cmd("Lathe write it")
        T.eq("turn", T.lathe.wait(15000), "done")
        T.wait_for("the last User event", 2000, function()
          return #events > 0 and events[#events][1] == "LatheTurnDone"
        end)

        T.eq("state while asking", during.state, "waiting")
        T.eq("tool while asking", { during.tool.name, during.tool.detail, during.tool.running },
          { "Write", "new.txt", 1 })
        T.eq("waiting ask", { during.waiting_ask.tool, during.waiting_ask.waiting }, { "Write", 1 })
        T.has("waiting ask title", during.waiting_ask.title, "new.txt")
        T.has("component while asking", component, "lathe: waiting for you (Write")
        T.eq("component and state as the turn starts", seen.LatheTurnStart, { "lathe: working", "running" })
        T.eq("component and state as the tool starts", seen.LatheToolStart, { "lathe: Write(new.txt)", "running" })

        local names = {}
        for _, e in ipairs(events) do table.insert(names, e[1]) end
        T.eq("events", names,
          { "LatheTurnStart", "LatheToolStart", "LathePermissionAsk", "LatheToolDone", "LatheTurnDone" })
        T.eq("LatheTurnStart data", events[1][2], { prompt = "write it" })
        T.eq("LatheToolStart data", { events[2][2].name, events[2][2].detail, events[2][2].id },
          { "Write", "new.txt", "toolu_01" })
        T.eq("LathePermissionAsk data", { events[3][2].tool, events[3][2].waiting }, { "Write", 1 })
        T.eq("LatheToolDone data", { events[4][2].name, events[4][2].status }, { "Write", "done" })
        T.eq("LatheTurnDone data", events[5][2], {
          outcome = "done",
          tokens = { input = 300, output = 30, cache_read = 0, cache_write = 0 },
          session_tokens = { input = 300, output = 30, cache_read = 0, cache_write = 0 },
        })

        local after = T.lathe.status()
        T.eq("status after", after, {
          state = "idle", mode = "default", model = "claude-sonnet-4-5", last = "done",
          tokens = { input = 300, output = 30, cache_read = 0, cache_write = 0 },
          spend = "300 in, 30 out",
          context = { used = 220, window = 200000, percent = 0, label = "ctx 220/200.0k (0%)" },
        })
        T.eq("component after", T.lathe.statusline_component(), "lathe: idle · ctx 220/200.0k (0%)")
        T.lathe.mode("plan")
        T.eq("component shows a mode other than default", T.lathe.statusline_component(),
          "lathe: idle · ctx 220/200.0k (0%) · plan")
        -- :Lathe status reads the table.
        local shown = {}
        vim.notify = function(msg) table.insert(shown, msg) end
        vim.o.columns = 120
        vim.cmd("Lathe status")
        T.eq(":Lathe status", shown, { "lathe: idle, mode: plan, ctx 220/200.0k (0%), model: claude-sonnet-4-5, spend 300 in, 30 out, last: done" })
        "###,
    )
}

#[nvim_oxi::test]
fn checkhealth_checks_the_endpoint_hooks_and_state_directory() -> Result<(), String> {
    lua_test_with_model(
        r###"{ "responses": [] }"###,
        r###"
        local dir = T.project()
        vim.cmd.cd(dir)
        vim.env.ANTHROPIC_API_KEY = "sk-very-secret-1234"
        local function health()
          vim.cmd("checkhealth lathe")
          local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
          vim.cmd("bwipeout!")
          return text
        end
        T.setup(dir, {
          base_url = MOCK_URL,
          hooks = { PreToolUse = { { matcher = "Bash", hooks = {
            { type = "command", command = "./no-such-hook.sh" },
            { type = "command", command = "echo ok" },
          } } } },
        })
        local text = health()
        T.has("base_url reachable", text, "base_url reachable: " .. MOCK_URL .. " answered HTTP ")
        T.has("API key variable named", text, "API key found in $ANTHROPIC_API_KEY")
        T.lacks("API key value never shown", text, "sk-very-secret")
        T.has("missing hook program", text,
          "PreToolUse hook `./no-such-hook.sh`: ./no-such-hook.sh was not found (not in $PATH, or no such file)")
        T.has("hook that can run", text, "PreToolUse hook `echo ok` can run")
        T.has("state directory", text, "state directory writable: " .. vim.fn.stdpath("state") .. "/lathe")
        T.has("library version", text,
          "library version " .. require("lathe.version") .. " matches the plugin's (lua/lathe/version.lua)")
        local _, headings = text:gsub("\n=+\n", "")
        T.eq("one heading", headings, 1)

        T.setup(dir, { base_url = "http://127.0.0.1:9" })
        T.has("base_url not reachable", health(), "base_url not reachable: http://127.0.0.1:9 (")
        "###,
    )
}

/// The model runs one Bash; a PreToolUse hook keeps its input.
const HOOK_SCRIPT: &str = r###"{ "responses": [
  { "content": [
      { "type": "tool_use", "id": "toolu_01", "name": "Bash", "input": { "command": "true" } } ] },
  { "content": [ { "type": "text", "text": "Done." } ] }
] }"###;

/// A command hook is told the session file as `transcript_path` (Claude
/// Code's hook input): the JSON Lines file the conversation is saved in,
/// which `:Lathe resume` loads.
#[nvim_oxi::test]
fn hooks_are_told_the_session_file_as_transcript_path() -> Result<(), String> {
    lua_test_with_model(
        HOOK_SCRIPT,
        r###"
        local dir = T.project()
        vim.cmd.cd(dir)
        vim.cmd("runtime plugin/lathe.lua")
        T.setup(dir, {
          base_url = MOCK_URL,
          permissions = { mode = "bypassPermissions" },
          hooks = { PreToolUse = { { matcher = "Bash", hooks = {
            { type = "command", command = "cat > hook-input.json" },
          } } } },
        })
        vim.cmd("Lathe run true")
        T.eq("turn", T.lathe.wait(15000), "done")
        local input = vim.json.decode(table.concat(vim.fn.readfile(dir .. "/hook-input.json"), "\n"))
        local files = vim.fn.glob(vim.fn.stdpath("state") .. "/lathe/sessions/*/*.jsonl", false, true)
        T.eq("the session's file", vim.tbl_contains(files, input.transcript_path), true)
        local first = vim.json.decode(vim.fn.readfile(input.transcript_path)[1])
        T.eq("a session file", first.type, "session")
        "###,
    )
}

/// `:Lathe resume` of a working day (1,000 Read calls in 50 asks, issue
/// 22): `lathe.resume()` returns before the chat is drawn (the file is read
/// on a worker), the chat is drawn in many steps of the main loop instead
/// of one long frame, and then shows every turn, its last answer at the
/// end, each result folded under its tool line; the token counts are back.
/// A turn asked right after it goes below it.
#[nvim_oxi::test]
fn a_long_resumed_conversation_is_drawn_in_steps_and_shows_its_end() -> Result<(), String> {
    crate::common::lua_test(
        r###"
        local dir = T.project()
        T.setup(dir, { base_url = "http://127.0.0.1:9" })
        local path = dir .. "/day.jsonl"
        local write = dofile(vim.api.nvim_get_runtime_file("bench/long_session.lua", false)[1])
        T.eq("calls", write(path, { cwd = dir, asks = 50, per_ask = 20, last_words = "LAST-WORDS-OF-THE-DAY" }), 1000)
        T.lathe.focus_prompt()
        vim.cmd.stopinsert()
        vim.cmd.wincmd("p")
        local core = require("lathe.core")
        core.main_thread_stats(true)
        T.lathe.resume(path)
        T.lacks("not drawn when resume() returns", T.chat_text(), "LAST-WORDS-OF-THE-DAY")
        T.eq("settled", T.lathe.wait(60000) ~= "timeout", true)
        local text = T.chat_text()
        T.has("the last answer", text, "LAST-WORDS-OF-THE-DAY")
        T.has("the first prompt", text, "read the files of ask 1")
        local lines = T.lines(T.chat_buf())
        T.has("the chat ends with the last turn", table.concat(lines, "\n", #lines - 4), "LAST-WORDS-OF-THE-DAY")
        local _, reads = text:gsub("Read%(src/f%d+%.lua%): done", "")
        T.eq("every tool line", reads, 1000)
        local frames = core.main_thread_stats().chat_frame.count
        T.eq("drawn in more than 20 steps (" .. frames .. ")", frames > 20, true)
        local win = vim.fn.bufwinid("lathe://chat")
        local row
        for i, l in ipairs(lines) do
          if l:find("Read(src/f01000.lua): done", 1, true) then row = i end
        end
        T.eq("the last result is folded", vim.api.nvim_win_call(win, function()
          return vim.fn.foldclosed(row + 1)
        end), row)
        T.eq("tokens", T.lathe.status().tokens.input > 0, true)
        "###,
    )
}

/// A live turn (a Read of `a.txt`), then, after a day's work was resumed
/// over it and it was resumed back, an Edit of `a.txt` without reading it
/// again: it works only with the saved stamps restored.
const RESUME_OVER_LONG_SCRIPT: &str = r###"{ "responses": [
  { "content": [
      { "type": "text", "text": "Reading." },
      { "type": "tool_use", "id": "toolu_01", "name": "Read", "input": { "file_path": "a.txt" } } ] },
  { "content": [ { "type": "text", "text": "It says hello." } ] },
  { "content": [
      { "type": "text", "text": "Editing." },
      { "type": "tool_use", "id": "toolu_02", "name": "Edit",
        "input": { "file_path": "a.txt", "old_string": "hello", "new_string": "bye" } } ],
    "expect": { "last_user_text_contains": "edit it",
                "tool_result_contains": { "toolu_01": "hello" } } },
  { "content": [ { "type": "text", "text": "Edited." } ],
    "expect": { "tool_result_is_error": { "toolu_02": false } } }
] }"###;

/// `:Lathe resume` while a working day's chat is shown: the old
/// chat (1,000 calls, ~17,500 lines) is wiped in steps of the main loop —
/// a timer that runs meanwhile sees it partly emptied, where it used to
/// go in one piece — and it is gone once lathe settles; the resumed
/// chat is complete, its meter shows, and the session goes on: an Edit of
/// a file read before the resume works (its stamp restored).
#[nvim_oxi::test]
fn resuming_over_a_long_chat_wipes_it_in_steps_and_the_session_goes_on() -> Result<(), String> {
    lua_test_with_model(
        RESUME_OVER_LONG_SCRIPT,
        r###"
        local dir = T.project()
        T.write(dir .. "/a.txt", "hello\n")
        vim.cmd.cd(dir)
        T.setup(dir, { base_url = MOCK_URL, permissions = { mode = "acceptEdits" }, diagnostics_wait_ms = 0 })
        T.lathe.ask("read a.txt")
        T.eq("first turn", T.lathe.wait(15000), "done")
        local shown = T.chat_text()
        -- Its file, written on a thread of its own: the turn_end last.
        local first
        T.wait_for("the first turn saved", 5000, function()
          first = vim.fn.glob(vim.fn.stdpath("state") .. "/lathe/sessions/*/*.jsonl", false, true)[1]
          return first ~= nil and vim.fn.readfile(first)[#vim.fn.readfile(first)]:find('"turn_end"', 1, true) ~= nil
        end)

        -- A working day, resumed: ~17,500 chat lines.
        local day = dir .. "/day.jsonl"
        local write = dofile(vim.api.nvim_get_runtime_file("bench/long_session.lua", false)[1])
        write(day, { cwd = dir, asks = 50, per_ask = 20 })
        T.lathe.resume(day)
        T.eq("the day settles", T.lathe.wait(60000) ~= "timeout", true)
        local old = T.chat_buf()
        local old_lines = vim.api.nvim_buf_line_count(old)
        T.eq("a long chat (" .. old_lines .. " lines)", old_lines > 15000, true)

        -- Back to the first conversation, while a timer looks at the old
        -- chat every ms, as any other plugin's timer would run.
        local partly, swapped = nil, false
        local function look()
          if not vim.api.nvim_buf_is_valid(old) then
            return
          end
          swapped = swapped or T.chat_buf() ~= old
          local n = vim.api.nvim_buf_line_count(old)
          if swapped and n < old_lines then
            partly = partly or n
          end
          vim.defer_fn(look, 1)
        end
        vim.defer_fn(look, 1)
        local core = require("lathe.core")
        core.main_thread_stats(true)
        T.lathe.resume(first)
        T.eq("settled", T.lathe.wait(60000) ~= "timeout", true)
        T.eq("the old chat was seen partly wiped, after the swap", type(partly), "number")
        T.eq("the old chat buffer is gone", vim.api.nvim_buf_is_valid(old), false)
        T.eq("one chat buffer", #vim.tbl_filter(function(b)
          return vim.api.nvim_buf_get_name(b):find("lathe://chat", 1, true) ~= nil
        end, vim.api.nvim_list_bufs()), 1)
        T.eq("wiped in more than one step", core.main_thread_stats().chat_wipe.count > 1, true)
        T.eq("the resumed chat", T.chat_text(), shown)
        T.wait_for("the meter after resume", 5000, function()
          return vim.wo[vim.fn.bufwinid("lathe://chat")].winbar:find("ctx ", 1, true) ~= nil
        end)

        -- The session goes on: an Edit of the file read before.
        T.lathe.ask("edit it")
        T.eq("the turn after resume", T.lathe.wait(15000), "done")
        T.has("answer", T.chat_text(), "Edited.")
        T.eq("the file", T.bytes(dir .. "/a.txt"), "bye\n")
        "###,
    )
}
