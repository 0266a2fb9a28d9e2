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
        T.has("after the turn's end", lines[at - 2], "*(done)*")
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
