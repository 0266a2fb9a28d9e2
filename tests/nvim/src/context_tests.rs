//! Context from the editor and tools on keymaps (`:help lathe-context`,
//! `:help lathe-mappings`): `:'<,'>Lathe`, `@path` (a Read: its record lets
//! an Edit through; deny rules block it), `#buffer`, `#diagnostics`,
//! `#quickfix`, the per-turn editor block, completion, and the `<Plug>`
//! maps (Grep → quickfix, Read → preview float, stop from another window).

use crate::common::{lua_test, lua_test_with_model};

/// The model edits b.py without reading it: the `@b.py` attachment is its
/// Read. The second request checks the Edit went through.
const RANGE_AND_FILE_SCRIPT: &str = r#"{ "responses": [
  { "content": [
      { "type": "tool_use", "id": "toolu_e", "name": "Edit",
        "input": { "file_path": "b.py", "old_string": "return 1", "new_string": "return 2" } } ],
    "expect": { "last_user_text_contains": "explain these and fix @b.py" } },
  { "content": [ { "type": "text", "text": "Done." } ],
    "expect": { "tool_result_is_error": { "toolu_e": false },
                "tool_result_contains": { "toolu_e": "has been updated" } } }
] }"#;

#[nvim_oxi::test]
fn a_range_and_an_at_file_reach_the_model_and_the_file_counts_as_read() -> Result<(), String> {
    lua_test_with_model(
        RANGE_AND_FILE_SCRIPT,
        r###"
        vim.cmd("filetype on")
        local dir = T.project()
        T.write(dir .. "/a.lua", "local x = 1\nlocal y = 2\nreturn x + y\n")
        T.write(dir .. "/b.py", "def f():\n    return 1\n")
        vim.cmd.cd(dir)
        local b = T.open(dir .. "/b.py")
        local a = T.open(dir .. "/a.lua")
        vim.api.nvim_win_set_cursor(0, { 2, 0 })
        vim.cmd("runtime plugin/lathe.lua")
        T.setup(dir, { base_url = MOCK_URL })
        local rec = T.answer_floats({ "y" })

        vim.cmd("2,3Lathe explain these and fix @b.py")
        T.eq("wait", T.lathe.wait(15000), "done")
        T.eq("one ask: the Edit", #rec.asks, 1)
        T.eq("b.py edited in its buffer", T.lines(b), { "def f():", "    return 2" })

        local first = T.lathe.transcript()[1]
        T.eq("role", first.role, "user")
        local texts = {}
        for _, blk in ipairs(first.content) do
          table.insert(texts, blk.text)
        end
        T.eq("blocks: editor, selection, attachment, prompt", #texts, 4)
        T.eq("editor context", texts[1], table.concat({
          "<editor-context>",
          "What the user's Neovim showed when they sent this message (for reference; it is not part of the request and may be out of date later):",
          "Current file: a.lua (cursor on line 2 of 3)",
          "Open buffers: b.py, a.lua",
          "</editor-context>",
        }, "\n"))
        T.eq("selection", texts[2], "The user selected lines 2-3 of a.lua:\n```lua\nlocal y = 2\nreturn x + y\n```")
        T.has("attachment is Read's output", texts[3], '<attached-file path="b.py">')
        T.has("attachment numbered like Read", texts[3], "     2\t    return 1")
        T.eq("prompt last", texts[4], "explain these and fix @b.py")
        T.lacks("the chat shows the prompt, not the context", T.chat_text(), "editor-context")
        T.has("the chat shows the prompt", T.chat_text(), "explain these and fix @b.py")
        "###,
    )
}

#[nvim_oxi::test]
fn an_at_file_that_cannot_be_attached_sends_nothing_and_says_why() -> Result<(), String> {
    lua_test_with_model(
        r#"{ "responses": [] }"#,
        r###"
        local dir = T.project()
        T.write(dir .. "/secret.txt", "the password is hunter2\n")
        T.write(dir .. "/ok.txt", "fine\n")
        vim.cmd.cd(dir)
        vim.cmd("runtime plugin/lathe.lua")
        T.setup(dir, { base_url = MOCK_URL, permissions = { deny = { "Read(secret.txt)" } } })
        local msgs = {}
        vim.notify = function(m, level)
          table.insert(msgs, { m, level })
        end
        local function try(cmd)
          msgs = {}
          vim.cmd(cmd)
          T.eq("one message for " .. cmd, #msgs, 1)
          T.eq("an error for " .. cmd, msgs[1][2], vim.log.levels.ERROR)
          return msgs[1][1]
        end
        local m = try("Lathe what is in @secret.txt and @ok.txt")
        T.has("denied", m, "lathe: @secret.txt was not attached: rule Read(secret.txt) from setup() denies reading it. The prompt was not sent.")
        T.has("not sent", m, "The prompt was not sent.")
        -- #buffer of a denied file is the same Read.
        T.open(dir .. "/secret.txt")
        m = try("Lathe summarize #buffer")
        T.has("#buffer denied", m, "lathe: @secret.txt was not attached: rule Read(secret.txt) from setup() denies reading it.")
        m = try("Lathe read @nope.txt")
        T.has("missing", m, "lathe: @nope.txt: no such file in " .. dir)
        m = try("Lathe read @../outside.txt")
        T.has("outside", m, "lathe: @../outside.txt is outside the project (" .. dir .. ")")
        T.eq("no turn ran", T.lathe.wait(100), "idle")
        T.eq("nothing in the conversation", T.lathe.transcript(), {})
        T.eq("no chat opened", T.chat_buf(), nil)
        "###,
    )
}

const WORDS_SCRIPT: &str = r#"{ "responses": [
  { "content": [ { "type": "text", "text": "Seen." } ],
    "expect": { "last_user_text_contains": "look at #buffer #diagnostics #quickfix" } },
  { "content": [ { "type": "text", "text": "Seen again." } ],
    "expect": { "last_user_text_contains": "and #buffer again" } }
] }"#;

#[nvim_oxi::test]
fn hash_words_from_the_chat_use_the_users_window() -> Result<(), String> {
    lua_test_with_model(
        WORDS_SCRIPT,
        r###"
        local dir = T.project()
        T.write(dir .. "/a.lua", "local x = 1\nlocal y = nil + 1\n")
        vim.cmd.cd(dir)
        local a = T.open(dir .. "/a.lua")
        local ns = vim.api.nvim_create_namespace("test_lint")
        vim.diagnostic.set(ns, a, {
          { lnum = 1, col = 10, severity = vim.diagnostic.severity.ERROR, source = "lua_ls", message = "attempt to add nil" },
          { lnum = 0, col = 0, severity = vim.diagnostic.severity.HINT, message = "unused x" },
        })
        vim.fn.setqflist({}, " ", { title = "make", items = { { filename = dir .. "/a.lua", lnum = 2, col = 11, text = "boom" } } })
        vim.cmd("runtime plugin/lathe.lua")
        T.setup(dir, { base_url = MOCK_URL })
        -- Sent from inside the chat (as its prompt area does): the user's
        -- window is the previous one.
        T.lathe.open()
        for _, w in ipairs(vim.api.nvim_list_wins()) do
          if vim.api.nvim_win_get_buf(w) == T.chat_buf() then vim.api.nvim_set_current_win(w) end
        end
        T.eq("in the chat", vim.api.nvim_get_current_buf(), T.chat_buf())
        T.lathe.ask("look at #buffer #diagnostics #quickfix")
        T.eq("wait", T.lathe.wait(15000), "done")
        local texts = {}
        for _, blk in ipairs(T.lathe.transcript()[1].content) do
          table.insert(texts, blk.text)
        end
        T.eq("blocks", #texts, 5)
        T.has("editor context is the user's window", texts[1], "Current file: a.lua (cursor on line 1 of 2)")
        T.eq("diagnostics", texts[2], table.concat({
          "Diagnostics of a.lua (from Neovim's vim.diagnostic; 1-based lines):",
          "line 1: HINT unused x",
          "line 2: ERROR [lua_ls] attempt to add nil",
        }, "\n"))
        T.eq("quickfix", texts[3], "The user's quickfix list (make, 1 entry):\na.lua:2:11: boom")
        T.has("#buffer is the file, read", texts[4], '<attached-file path="a.lua">')
        T.has("#buffer's text", texts[4], "     2\tlocal y = nil + 1")

        -- Sent from the prompt area (`:Lathe` alone, then <CR>): #buffer is
        -- still the user's file, not the prompt.
        vim.cmd("Lathe close")
        T.eq("back in the user's window", vim.api.nvim_buf_get_name(0), dir .. "/a.lua")
        vim.cmd("Lathe")
        vim.cmd.stopinsert()
        T.eq("in the prompt", vim.api.nvim_buf_get_name(0), "lathe://prompt")
        vim.api.nvim_buf_set_lines(0, 0, -1, false, { "and #buffer again" })
        T.type("<CR>")
        T.eq("second turn", T.lathe.wait(15000), "done")
        local second = T.lathe.transcript()[3].content
        T.has("prompt area: editor context", second[1].text, "Current file: a.lua")
        T.has("prompt area: #buffer is the user's file", second[#second - 1].text, '<attached-file path="a.lua">')
        T.eq("prompt area: the prompt", second[#second].text, "and #buffer again")
        "###,
    )
}

#[nvim_oxi::test]
fn completion_offers_files_and_hash_words() -> Result<(), String> {
    lua_test(
        r###"
        local dir = T.project()
        vim.fn.mkdir(dir .. "/src", "p")
        T.write(dir .. "/src/main.rs", "")
        T.write(dir .. "/src/lib.rs", "")
        T.write(dir .. "/README.md", "")
        vim.cmd.cd(dir)
        vim.cmd("runtime plugin/lathe.lua")
        T.eq(":Lathe @src/m", vim.fn.getcompletion("Lathe fix @src/m", "cmdline"), { "@src/main.rs" })
        T.eq(":Lathe @", vim.fn.getcompletion("Lathe fix @", "cmdline"), { "@README.md", "@src/lib.rs", "@src/main.rs" })
        T.eq(":Lathe #d", vim.fn.getcompletion("Lathe fix #d", "cmdline"), { "#diagnostics" })
        T.eq(":Lathe subcommands still", vim.fn.getcompletion("Lathe sto", "cmdline"), { "stop" })

        local c = require("lathe.complete")
        vim.cmd.enew()
        vim.api.nvim_buf_set_lines(0, 0, -1, false, { "fix @src/li and me@host" })
        vim.api.nvim_win_set_cursor(0, { 1, 11 })
        T.eq("findstart at the @", c.omnifunc(1, ""), 4)
        T.eq("items", c.omnifunc(0, "@src/li"), { { word = "@src/lib.rs", menu = "[lathe file]" } })
        vim.api.nvim_win_set_cursor(0, { 1, 23 })
        T.eq("an e-mail is no mention", c.omnifunc(1, ""), -3)
        T.eq("# words", c.omnifunc(0, "#q"), { { word = "#quickfix", menu = "[lathe context]" } })
        "###,
    )
}

#[nvim_oxi::test]
fn grep_maps_fill_the_quickfix_list_with_file_line_column_and_text() -> Result<(), String> {
    lua_test(
        r###"
        local dir = T.project()
        T.write(dir .. "/a.txt", "one\n  call needle()\nneedles\n")
        T.write(dir .. "/b.txt", "x = needle\n")
        vim.cmd.cd(dir)
        vim.cmd("runtime plugin/lathe.lua")
        T.setup(dir)
        T.open(dir .. "/b.txt")
        vim.api.nvim_win_set_cursor(0, { 1, 6 })
        T.type("<Plug>(lathe-grep-word)")
        T.wait_for("the quickfix list", 10000, function()
          return #vim.fn.getqflist() > 0
        end)
        local function items()
          local out = {}
          for _, it in ipairs(vim.fn.getqflist()) do
            table.insert(out, { vim.fn.fnamemodify(vim.api.nvim_buf_get_name(it.bufnr), ":t"), it.lnum, it.col, it.text })
          end
          table.sort(out, function(x, y) return x[1] .. x[2] < y[1] .. y[2] end)
          return out
        end
        T.eq("whole word only", items(), { { "a.txt", 2, 8, "  call needle()" }, { "b.txt", 1, 5, "x = needle" } })
        T.has("title", vim.fn.getqflist({ title = 1 }).title, "lathe Grep: \\bneedle\\b")
        local qf = false
        for _, w in ipairs(vim.api.nvim_list_wins()) do
          qf = qf or vim.bo[vim.api.nvim_win_get_buf(w)].buftype == "quickfix"
        end
        T.eq("quickfix window open", qf, true)

        vim.fn.setqflist({}, "r", { items = {} })
        vim.ui.input = function(_, cb) cb("ne+dles") end
        T.type("<Plug>(lathe-grep)")
        T.wait_for("the quickfix list", 10000, function()
          return #vim.fn.getqflist() > 0
        end)
        T.eq("pattern from the prompt", items(), { { "a.txt", 3, 1, "needles" } })
        "###,
    )
}

#[nvim_oxi::test]
fn read_map_opens_a_read_only_preview_that_q_closes() -> Result<(), String> {
    lua_test(
        r###"
        local dir = T.project()
        T.write(dir .. "/notes.md", "see helper.py here\n")
        T.write(dir .. "/helper.py", "def helper():\n    return 42\n")
        vim.cmd.cd(dir)
        vim.cmd("runtime plugin/lathe.lua")
        T.setup(dir)
        local notes = T.open(dir .. "/notes.md")
        local home = vim.api.nvim_get_current_win()
        vim.api.nvim_win_set_cursor(0, { 1, 6 })
        for round = 1, 2 do
          T.type("<Plug>(lathe-read)")
          T.wait_for("the preview float", 10000, function() return T.floats() == 1 end)
          local buf = vim.api.nvim_get_current_buf()
          T.eq("round " .. round .. ": the file's lines", T.lines(buf), { "def helper():", "    return 42" })
          T.eq("filetype", vim.bo[buf].filetype, "python")
          T.eq("read-only", vim.bo[buf].modifiable, false)
          T.has("title", vim.api.nvim_win_get_config(0).title[1][1], "helper.py")
          T.type("q")
          T.eq("closed", T.floats(), 0)
          T.eq("back in the user's window", vim.api.nvim_get_current_win(), home)
        end
        T.eq("notes untouched", T.lines(notes), { "see helper.py here" })
        -- Showing the file is not the model reading it: a Read that counts
        -- (lathe.tool records like the model's calls) gets the text.
        local r = T.ok("Read", { file_path = dir .. "/helper.py" })
        T.has("not 'unchanged'", r.content, "     1\tdef helper():")

        -- Denied by a rule: a message, no float.
        T.setup(dir, { permissions = { deny = { "Read(helper.py)" } } })
        local msgs = {}
        vim.notify = function(m) table.insert(msgs, m) end
        T.type("<Plug>(lathe-read)")
        T.wait_for("the refusal", 10000, function() return #msgs > 0 end)
        T.has("refused", msgs[1], "lathe: Read: ")
        T.eq("no float", T.floats(), 0)
        "###,
    )
}

const SLOW_SCRIPT: &str = r#"{ "responses": [
  { "content": [ { "type": "text", "text": "Once upon a time there was a story so long that nobody ever heard its end." } ],
    "text_chunk_chars": 2, "event_delay_ms": 100 }
] }"#;

#[nvim_oxi::test]
fn plug_stop_works_from_another_window() -> Result<(), String> {
    lua_test_with_model(
        SLOW_SCRIPT,
        r###"
        local dir = T.project()
        T.write(dir .. "/a.txt", "a\n")
        vim.cmd.cd(dir)
        local a = T.open(dir .. "/a.txt")
        vim.cmd("runtime plugin/lathe.lua")
        T.setup(dir, { base_url = MOCK_URL })
        vim.keymap.set("n", "<F5>", "<Plug>(lathe-stop)", { remap = true })
        vim.cmd("Lathe tell me a story")
        T.wait_for("streamed text in the chat", 5000, function()
          return T.chat_text():find("Once up", 1, true) ~= nil
        end)
        T.eq("still in the user's window", vim.api.nvim_get_current_buf(), a)
        T.type("<F5>")
        T.eq("stopped", T.lathe.wait(5000), "stopped")
        T.lacks("the story did not finish", T.chat_text(), "its end.")
        "###,
    )
}

#[nvim_oxi::test]
fn default_mappings_only_when_asked_and_never_over_the_users() -> Result<(), String> {
    lua_test(
        r###"
        local dir = T.project()
        vim.cmd("runtime plugin/lathe.lua")
        vim.g.mapleader = " "
        T.setup(dir)
        T.eq("none by default", vim.fn.maparg("<leader>lw", "n"), "")
        vim.keymap.set("n", "<leader>lr", ":echo 'mine'<CR>")
        T.setup(dir, { default_mappings = true })
        T.eq("grep word", vim.fn.maparg("<leader>lw", "n"), "<Plug>(lathe-grep-word)")
        T.eq("ask in visual mode", vim.fn.maparg("<leader>la", "x"), "<Plug>(lathe-ask)")
        T.eq("toggle", vim.fn.maparg("<leader>lt", "n"), "<Plug>(lathe-toggle)")
        T.eq("the user's map is kept", vim.fn.maparg("<leader>lr", "n"), ":echo 'mine'<CR>")
        local ok, err = pcall(T.lathe.setup, { default_mappings = "yes" })
        T.eq("bad value", ok, false)
        T.has("message", err, "lathe.setup(opts): default_mappings must be a boolean, got string")
        "###,
    )
}

#[nvim_oxi::test]
fn visual_ask_sends_the_selected_lines() -> Result<(), String> {
    lua_test_with_model(
        r#"{ "responses": [
          { "content": [ { "type": "text", "text": "Ok." } ],
            "expect": { "last_user_text_contains": "The user selected lines 2-3 of v.txt:\n```text\ntwo\nthree\n```" } }
        ] }"#,
        r###"
        local dir = T.project()
        T.write(dir .. "/v.txt", "one\ntwo\nthree\nfour\n")
        vim.cmd.cd(dir)
        T.open(dir .. "/v.txt")
        vim.bo.filetype = "text"
        vim.cmd("runtime plugin/lathe.lua")
        T.setup(dir, { base_url = MOCK_URL })
        vim.ui.input = function(opts, cb)
          T.eq("prompt names the lines", opts.prompt, "lathe (lines 2-3): ")
          cb("what is this?")
        end
        vim.keymap.set("x", "<F6>", "<Plug>(lathe-ask)", { remap = true })
        vim.api.nvim_win_set_cursor(0, { 2, 0 })
        T.type("Vj<F6>")
        T.eq("wait", T.lathe.wait(15000), "done")
        T.eq("back in Normal mode", vim.api.nvim_get_mode().mode, "n")
        "###,
    )
}
