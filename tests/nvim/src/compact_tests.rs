//! `:Lathe compact` in the chat (`:help :Lathe-compact`): a compaction
//! that fails says why in the chat and with `vim.notify`.

use crate::common::lua_test_with_model;

const SCRIPT: &str = r###"{ "responses": [] }"###;

#[nvim_oxi::test]
fn a_manual_compaction_says_why_it_failed() -> Result<(), String> {
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
        T.eq("one line in the chat", T.chat_text(), "> **error:** " .. why .. "\n")"###,
    )
}
