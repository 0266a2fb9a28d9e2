//! `:Lathe compact` in the chat (`:help :Lathe-compact`,
//! `:help lathe-winbar`): a compaction that fails says why in the chat and
//! with `vim.notify`; the compaction line is a block of its own; the
//! winbar's context meter stays visible in a narrow chat window.

use crate::common::lua_test_with_model;

const SCRIPT: &str = r###"{ "responses": [
  { "content": [ { "type": "text", "text": "Hello." } ],
    "usage": { "input_tokens": 1200, "output_tokens": 30 } }
] }"###;

#[nvim_oxi::test]
fn a_manual_compaction_says_why_it_failed_and_is_a_block_of_its_own() -> Result<(), String> {
    lua_test_with_model(
        SCRIPT,
        r###"vim.cmd("runtime plugin/lathe.lua")
        T.setup(vim.fn.getcwd(), { base_url = MOCK_URL })
        local notified = {}
        local notify = vim.notify
        vim.notify = function(m, level) table.insert(notified, { m, level }) end
        -- Nothing to compact yet: the chat and vim.notify say why.
        vim.cmd("Lathe compact")
        local why = "Compacting the conversation failed: There is nothing to compact yet."
        T.wait_for("the failure", 5000, function() return #notified > 0 end)
        vim.notify = notify
        T.eq("notified", notified, { { "lathe: " .. why, vim.log.levels.ERROR } })
        T.wait_for("the chat line", 5000, function() return T.chat_text():find(why, 1, true) ~= nil end)
        T.eq("one line in the chat", T.chat_text(), "> **error:** " .. why .. "\n")

        vim.cmd("Lathe say hello")
        T.eq("turn", T.lathe.wait(10000), "done")
        vim.cmd("Lathe compact")
        T.wait_for("compacted", 5000, function() return T.chat_text():find("compacted:", 1, true) ~= nil end)
        local lines = T.lines(T.chat_buf())
        local at
        for i, l in ipairs(lines) do
          if l:find("^> %*%*compacted:%*%*") then at = i end
        end
        -- The turn's end line, broken between its parts in this narrow
        -- window: "*(done)* tokens: …", then "· session …".
        T.has("after the turn's end", lines[at - 3], "*(done)*")
        T.has("and its session tokens", lines[at - 2], "· session ")
        T.eq("a blank line before the compaction line", lines[at - 1], "")
        T.has("the summary under it", lines[at + 1] .. lines[at + 2], "mock-llm summary of")

        -- A narrow chat window keeps the meter and cuts the rest first.
        local chat = vim.fn.bufwinid("lathe://chat")
        T.wait_for("the meter", 5000, function() return vim.wo[chat].winbar:find("ctx ", 1, true) ~= nil end)
        vim.api.nvim_win_set_width(chat, 40)
        local shown = vim.api.nvim_eval_statusline(vim.wo[chat].winbar, { winid = chat, use_winbar = true }).str
        T.has("the meter shows at 40 columns", shown, "ctx ")
        T.has("with the state", shown, "idle · ctx ")"###,
    )
}

/// An API error and lathe's advice after it are two lines of the chat,
/// never one run-on sentence (a fresh user's run: "…invalid x-api-key
/// (mock-llm fault) Check your API key…").
#[nvim_oxi::test]
fn an_api_error_and_the_advice_after_it_are_lines_of_their_own() -> Result<(), String> {
    lua_test_with_model(
        r###"{ "responses": [ { "fault": { "http_status": 401 } } ] }"###,
        r###"vim.cmd("runtime plugin/lathe.lua")
        T.setup(vim.fn.getcwd(), { base_url = MOCK_URL, max_retries = 0 })
        vim.cmd("Lathe say hello")
        T.eq("turn", T.lathe.wait(10000), "error")
        local lines = T.lines(T.chat_buf())
        local at
        for i, l in ipairs(lines) do
          if l:find("^> %*%*error:%*%*") then at = i end
        end
        T.eq("the API's error", lines[at], "> **error:** HTTP 401 authentication_error: invalid x-api-key (mock-llm fault)")
        T.has("then the advice on a line of its own", lines[at + 1], "> Check your API key: lathe reads it from $")"###,
    )
}

/// `auto_compact = false`: a request refused for its length is not
/// compacted; the chat shows the API's error, then what the user can do,
/// each on a line of its own.
#[nvim_oxi::test]
fn with_auto_compact_off_a_refusal_for_length_says_what_to_do() -> Result<(), String> {
    lua_test_with_model(
        r###"{ "context_window": 20000, "responses": [] }"###,
        r###"vim.cmd("runtime plugin/lathe.lua")
        T.setup(vim.fn.getcwd(), { base_url = MOCK_URL, max_retries = 0, context_window = 20000, auto_compact = false })
        vim.cmd("Lathe say " .. string.rep("z", 100000))
        T.eq("turn", T.lathe.wait(10000), "error")
        local text = T.chat_text()
        T.lacks("not compacted", text, "**compacted:**")
        T.lacks("no compaction tried", text, "Compacting the conversation")
        local lines = T.lines(T.chat_buf())
        local at
        for i, l in ipairs(lines) do
          if l:find("^> %*%*error:%*%*") then at = at or i end
        end
        T.has("the API's error", lines[at], "prompt is too long: ")
        T.has("ends with the API's figures", lines[at], "tokens > 20000 maximum")
        T.eq("then what to do", lines[at + 1], "> The conversation does not fit the model's context window. Run :Lathe compact (optionally with what to focus on) and ask again, or :Lathe new to start afresh.")"###,
    )
}

/// The end of `:Lathe compact` redraws every statusline, as a turn's end
/// does (`:help lathe-statusline`): a fresh user's file window still said
/// "lathe: working" after the compaction had ended. A statusline that
/// remembers what it drew in each window shows what the screen shows.
#[nvim_oxi::test]
fn the_end_of_a_manual_compaction_redraws_every_statusline() -> Result<(), String> {
    lua_test_with_model(
        SCRIPT,
        r###"vim.cmd("runtime plugin/lathe.lua")
        T.setup(vim.fn.getcwd(), { base_url = MOCK_URL })
        local file_win = vim.api.nvim_get_current_win()
        DRAWN = {}
        function LatheStatusDrawn()
          local text = T.lathe.statusline_component()
          DRAWN[vim.g.statusline_winid] = text
          return text
        end
        vim.o.laststatus = 2
        vim.o.statusline = "%!v:lua.LatheStatusDrawn()"
        vim.cmd("Lathe say hello")
        T.eq("turn", T.lathe.wait(10000), "done")
        vim.cmd("Lathe compact")
        -- The compaction runs: the statuslines say so.
        vim.cmd("redrawstatus!")
        T.has("drawn while it runs", DRAWN[file_win], "lathe: working")
        T.wait_for("compacted", 5000, function() return T.chat_text():find("compacted:", 1, true) ~= nil end)
        T.wait_for("idle", 5000, function() return T.lathe.status().state == "idle" end)
        T.wait_for("the file window's statusline drawn again", 2000, function()
          return DRAWN[file_win]:find("lathe: idle", 1, true) ~= nil
        end)"###,
    )
}

/// The summary request of `:Lathe compact` is part of the session's spend
/// (`:help lathe-context-window`: every request added up): `status().tokens`
/// and the winbar's spend grow by what mock-llm reported for it.
#[nvim_oxi::test]
fn a_manual_compaction_adds_its_summary_request_to_the_spend() -> Result<(), String> {
    lua_test_with_model(
        SCRIPT,
        r###"vim.cmd("runtime plugin/lathe.lua")
        -- Wide enough (the chat is a third of it) that its winbar shows the spend.
        vim.o.columns = 300
        T.setup(vim.fn.getcwd(), { base_url = MOCK_URL })
        vim.cmd("Lathe say hello")
        T.eq("turn", T.lathe.wait(10000), "done")
        T.has("the winbar's spend before", vim.wo[vim.fn.bufwinid("lathe://chat")].winbar, "spend 1.2k in, 30 out")
        local before = T.lathe.status().tokens
        T.eq("the turn's own figures", { before.input, before.output }, { 1200, 30 })
        vim.cmd("Lathe compact")
        T.wait_for("compacted", 5000, function() return T.chat_text():find("compacted:", 1, true) ~= nil end)
        T.wait_for("the spend", 5000, function() return T.lathe.status().tokens.output > 30 end)
        local after = T.lathe.status().tokens
        T.eq("input grew", after.input > 1200, true)
        local chat = vim.fn.bufwinid("lathe://chat")
        T.wait_for("the winbar's spend", 5000, function()
          local bar = vim.wo[chat].winbar
          return bar:find("spend ", 1, true) and not bar:find("spend 1.2k in, 30 out", 1, true)
        end)"###,
    )
}
