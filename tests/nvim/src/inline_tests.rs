//! Inline edit of a selection (`:help lathe-edit`): the proposal shows in
//! the buffer as an inline diff while the buffer's lines stay as they
//! are; accepted as a whole it is one change `u` undoes, by hunk only the
//! hunk taken; rejected, the buffer is untouched; when the user changed
//! the selected lines it is stale and never applied; an edit above that
//! only moves the lines still applies.

use crate::common::lua_test_with_model;

/// The Lua set-up of every test: the plugin, lathe on the mock model, a
/// file of five lines open, `notified` collecting `vim.notify`, and helpers.
const PRELUDE: &str = r###"vim.cmd("runtime plugin/lathe.lua")
local dir = T.project()
T.setup(dir, { base_url = MOCK_URL, max_retries = 0 })
T.write(dir .. "/calc.py", "a = 1\nb = 2\nc = 3\nd = 4\ne = 5\n")
vim.cmd.cd(dir)
local buf = T.open(dir .. "/calc.py")
local inline = require("lathe.inline")
notified = {}
vim.notify = function(m, level) table.insert(notified, { m, level }) end
local function ready(state)
  T.wait_for("the proposal " .. (state or "done"), 10000, function()
    local p = inline.proposal(buf)
    return p ~= nil and p.state == (state or "done")
  end)
end
local function marks()
  return vim.api.nvim_buf_get_extmarks(buf, inline.ns, 0, -1, { details = true })
end
local function removed_rows()
  local rows = {}
  for _, m in ipairs(marks()) do
    if m[4].line_hl_group == "LatheInlineRemoved" then table.insert(rows, m[2] + 1) end
  end
  return rows
end
local function added_lines()
  local out = {}
  for _, m in ipairs(marks()) do
    for _, vl in ipairs(m[4].virt_lines or {}) do
      table.insert(out, { m[2] + 1, vim.trim(vl[1][1]), vl[1][2] })
    end
  end
  return out
end
local function hint()
  for _, m in ipairs(marks()) do
    if m[4].virt_text then return m[2] + 1, m[4].virt_text[1][1] end
  end
end
local original = T.lines(buf)
"###;

fn run(script: &str, body: &str) -> Result<(), String> {
    lua_test_with_model(script, &format!("{PRELUDE}\n{body}"))
}

/// Lines 2-3 rewritten; the answer in a code fence, which is taken off.
const REWRITE_2_3: &str = r###"{ "responses": [
  { "content": [ { "type": "text", "text": "```python\nB = 20\nC = 30\n```\n" } ],
    "text_chunk_chars": 5,
    "expect": { "last_user_text_contains": "<selection lines=\"2-3\">\nb = 2\nc = 3\n</selection>\nd = 4" } }
] }"###;

#[nvim_oxi::test]
fn accepted_as_a_whole_the_proposal_is_one_change_that_u_undoes() -> Result<(), String> {
    run(
        REWRITE_2_3,
        r###"vim.cmd("2,3Lathe edit use tens")
        ready()
        -- Shown, not applied: the buffer's lines are as they were.
        T.eq("untouched while shown", T.lines(buf), original)
        T.eq("not modified", vim.bo[buf].modified, false)
        T.eq("removed lines highlighted", removed_rows(), { 2, 3 })
        T.eq("added lines under them", added_lines(), { { 3, "B = 20", "LatheInlineAdded" }, { 3, "C = 30", "LatheInlineAdded" } })
        local row, text = hint()
        T.eq("the hint on the first line", row, 2)
        T.eq("names the keys", text, inline.HINT_READY)
        T.eq("keys mapped", vim.fn.maparg("dA", "n") ~= "", true)
        vim.api.nvim_win_set_cursor(0, { 1, 0 })
        T.type("dA")
        T.eq("applied", T.lines(buf), { "a = 1", "B = 20", "C = 30", "d = 4", "e = 5" })
        T.eq("modified, not saved", vim.bo[buf].modified, true)
        T.eq("the file unchanged", T.bytes(vim.api.nvim_buf_get_name(buf)), "a = 1\nb = 2\nc = 3\nd = 4\ne = 5\n")
        T.eq("extmarks gone", #marks(), 0)
        T.eq("keys gone", vim.fn.maparg("dA", "n"), "")
        T.eq("proposal gone", inline.proposal(buf), nil)
        T.type("u")
        T.eq("one u restores the lines", T.lines(buf), original)
        T.eq("and the buffer is unmodified again", vim.bo[buf].modified, false)"###,
    )
}

#[nvim_oxi::test]
fn rejected_the_buffer_is_untouched() -> Result<(), String> {
    run(
        REWRITE_2_3,
        r###"local tick = vim.api.nvim_buf_get_changedtick(buf)
        T.lathe.edit({ buf = buf, first = 2, last = 3, instruction = "use tens" })
        ready()
        vim.cmd("Lathe edit reject")
        T.eq("lines", T.lines(buf), original)
        T.eq("changedtick unchanged", vim.api.nvim_buf_get_changedtick(buf), tick)
        T.eq("extmarks gone", #marks(), 0)
        T.eq("keys gone", vim.fn.maparg("dR", "n"), "")"###,
    )
}

#[nvim_oxi::test]
fn one_hunk_of_two_accepted_the_other_rejected() -> Result<(), String> {
    run(
        r###"{ "responses": [
          { "content": [ { "type": "text", "text": "A = 1\nb = 2\nc = 3\nd = 4\nE = 5\nF = 6\n" } ] }
        ] }"###,
        r###"vim.cmd("1,5Lathe edit capitals at both ends")
        ready()
        T.eq("two hunks", #inline.proposal(buf).hunks, 2)
        T.eq("removed rows", removed_rows(), { 1, 5 })
        -- The second hunk, under the cursor: accepted.
        vim.api.nvim_win_set_cursor(0, { 5, 0 })
        T.type("do")
        T.eq("only that hunk applied", T.lines(buf), { "a = 1", "b = 2", "c = 3", "d = 4", "E = 5", "F = 6" })
        T.eq("the first still shown", removed_rows(), { 1 })
        T.eq("with its new line", added_lines(), { { 1, "A = 1", "LatheInlineAdded" } })
        vim.api.nvim_win_set_cursor(0, { 1, 0 })
        T.type("dp")
        T.eq("the first not applied", T.lines(buf), { "a = 1", "b = 2", "c = 3", "d = 4", "E = 5", "F = 6" })
        T.eq("proposal gone", inline.proposal(buf), nil)
        T.eq("extmarks gone", #marks(), 0)
        T.type("u")
        T.eq("u undoes the accepted hunk", T.lines(buf), original)"###,
    )
}

#[nvim_oxi::test]
fn lines_the_user_changed_make_the_proposal_stale_and_it_is_never_applied() -> Result<(), String> {
    run(
        REWRITE_2_3,
        r###"vim.cmd("2,3Lathe edit use tens")
        ready()
        vim.api.nvim_buf_set_lines(buf, 2, 3, true, { "c = 33  # mine" })
        T.wait_for("stale", 2000, function() return inline.proposal(buf).state == "stale" end)
        local row, text = hint()
        T.eq("the hint says so", text, inline.HINT_STALE)
        T.eq("on the first line", row, 2)
        T.eq("no hunk shown", removed_rows(), {})
        vim.cmd("Lathe edit accept")
        T.eq("not applied", T.lines(buf), { "a = 1", "b = 2", "c = 33  # mine", "d = 4", "e = 5" })
        T.eq("said", notified[#notified][1], inline.STALE)
        T.type("dR")
        T.eq("dismissed", inline.proposal(buf), nil)
        T.eq("extmarks gone", #marks(), 0)"###,
    )
}

#[nvim_oxi::test]
fn lines_changed_while_the_answer_streams_stop_it_and_it_is_stale() -> Result<(), String> {
    run(
        r###"{ "responses": [
          { "content": [ { "type": "text", "text": "B = 20\nC = 30\n" } ],
            "text_chunk_chars": 1, "event_delay_ms": 40 }
        ] }"###,
        r###"vim.cmd("2,3Lathe edit use tens")
        T.eq("streaming", inline.proposal(buf).state, "streaming")
        T.eq("writing…", select(2, hint()), inline.HINT_STREAMING)
        T.wait_for("the first line written", 5000, function() return #inline.proposal(buf).hunks > 0 end)
        T.eq("shown under the lines", added_lines()[1][2], "B = 20")
        vim.api.nvim_buf_set_lines(buf, 1, 2, true, { "b = 22" })
        T.wait_for("stale", 2000, function() return inline.proposal(buf).state == "stale" end)
        vim.wait(300)
        T.eq("still stale after the stream", inline.proposal(buf).state, "stale")
        T.eq("the user's text kept", T.lines(buf), { "a = 1", "b = 22", "c = 3", "d = 4", "e = 5" })"###,
    )
}

#[nvim_oxi::test]
fn lines_moved_by_an_edit_above_still_apply() -> Result<(), String> {
    run(
        REWRITE_2_3,
        r###"vim.cmd("2,3Lathe edit use tens")
        ready()
        vim.api.nvim_buf_set_lines(buf, 0, 0, true, { "# header", "" })
        vim.wait(50)
        T.eq("still shown", inline.proposal(buf).state, "done")
        T.eq("moved with the lines", removed_rows(), { 4, 5 })
        T.type("dA")
        T.eq("applied where the lines are now", T.lines(buf), { "# header", "", "a = 1", "B = 20", "C = 30", "d = 4", "e = 5" })"###,
    )
}

#[nvim_oxi::test]
fn an_api_error_is_a_notice_and_nothing_changes() -> Result<(), String> {
    run(
        r###"{ "responses": [ { "fault": { "http_status": 401 } } ] }"###,
        r###"local tick = vim.api.nvim_buf_get_changedtick(buf)
        vim.cmd("2,3Lathe edit use tens")
        T.wait_for("the notice", 10000, function() return #notified > 0 end)
        T.has("the API's error", notified[1][1], "lathe: inline edit: HTTP 401 authentication_error")
        T.eq("as an error", notified[1][2], vim.log.levels.ERROR)
        T.eq("lines", T.lines(buf), original)
        T.eq("changedtick unchanged", vim.api.nvim_buf_get_changedtick(buf), tick)
        T.eq("no proposal", inline.proposal(buf), nil)
        T.eq("extmarks gone", #marks(), 0)
        T.eq("keys gone", vim.fn.maparg("dA", "n"), "")"###,
    )
}

#[nvim_oxi::test]
fn stop_cancels_an_edit_being_written() -> Result<(), String> {
    run(
        r###"{ "responses": [
          { "content": [ { "type": "text", "text": "B = 20\nC = 30\n" } ],
            "text_chunk_chars": 1, "event_delay_ms": 50 }
        ] }"###,
        r###"vim.cmd("2,3Lathe edit use tens")
        T.eq("streaming", inline.proposal(buf).state, "streaming")
        T.wait_for("the first line written", 5000, function() return #inline.proposal(buf).hunks > 0 end)
        T.type("<C-c>")
        T.wait_for("stopped", 5000, function() return inline.proposal(buf) == nil end)
        T.eq("said", notified[#notified][1], inline.STOPPED)
        T.eq("lines", T.lines(buf), original)
        T.eq("extmarks gone", #marks(), 0)
        T.eq("buffer's <C-c> map gone", vim.fn.maparg("<C-c>", "n", false, true).buffer or 0, 0)"###,
    )
}

/// `:Lathe edit …` without a range is a chat prompt: the text goes to the
/// model as it was typed, the chat shows it, and no inline edit starts.
#[nvim_oxi::test]
fn lathe_edit_without_a_range_is_a_chat_prompt() -> Result<(), String> {
    run(
        r###"{ "responses": [
          { "content": [ { "type": "text", "text": "Which lines?" } ],
            "expect": { "last_user_text_contains": "edit the totals to use tens" } }
        ] }"###,
        r###"vim.cmd("Lathe edit the totals to use tens")
        T.eq("a chat turn", T.lathe.wait(10000), "done")
        T.has("the chat shows the prompt", T.chat_text(), "edit the totals to use tens")
        T.has("and the answer", T.chat_text(), "Which lines?")
        T.eq("no inline proposal", inline.proposal(buf), nil)
        T.eq("no inline marks", #marks(), 0)
        T.eq("the buffer untouched", T.lines(buf), original)"###,
    )
}
