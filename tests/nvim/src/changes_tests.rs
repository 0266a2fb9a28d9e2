//! Checkpoints from the editor: `:Lathe changes` (the quickfix list and the
//! review tab, with per-hunk revert and keep) and `:Lathe rewind` (code,
//! conversation, both; through buffers, one `u` undoing it; after a
//! resume), against an in-process `mock-llm` over real HTTP.

use crate::common::lua_test_with_model;

/// One prompt: Reads of a.txt (open in a buffer) and b.txt (on disk only),
/// two Edits of a.txt, one of b.txt, a Write of c.txt.
const TURN: &str = r###"
  { "content": [
      { "type": "tool_use", "id": "toolu_r1", "name": "Read", "input": { "file_path": "a.txt" } },
      { "type": "tool_use", "id": "toolu_r2", "name": "Read", "input": { "file_path": "b.txt" } } ] },
  { "content": [
      { "type": "tool_use", "id": "toolu_e1", "name": "Edit",
        "input": { "file_path": "a.txt", "old_string": "two\n", "new_string": "TWO\n" } },
      { "type": "tool_use", "id": "toolu_e2", "name": "Edit",
        "input": { "file_path": "a.txt", "old_string": "nine\n", "new_string": "nine\nnine and a half\n" } },
      { "type": "tool_use", "id": "toolu_e3", "name": "Edit",
        "input": { "file_path": "b.txt", "old_string": "beta", "new_string": "BETA" } },
      { "type": "tool_use", "id": "toolu_w1", "name": "Write",
        "input": { "file_path": "c.txt", "content": "new file\n" } } ] },
  { "content": [ { "type": "text", "text": "Changed them." } ],
    "expect": { "tool_result_is_error": { "toolu_e1": false, "toolu_e2": false, "toolu_e3": false, "toolu_w1": false } } }"###;

/// The project every test starts from: a.txt open in a buffer, b.txt on
/// disk only; the turn of [`TURN`] run in acceptEdits mode.
const START: &str = r###"
        local A = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n"
        local B = "alpha\nbeta\ngamma\n"
        local dir = T.project()
        T.write(dir .. "/a.txt", A)
        T.write(dir .. "/b.txt", B)
        vim.cmd.cd(dir)
        local abuf = T.open(dir .. "/a.txt")
        vim.cmd("runtime plugin/lathe.lua")
        T.setup(dir, { base_url = MOCK_URL, permissions = { mode = "acceptEdits" }, diagnostics_wait_ms = 0 })
        vim.cmd("Lathe change things")
        T.eq("the turn", T.lathe.wait(15000), "done")
        T.eq("a.txt changed in its buffer", T.lines(abuf)[2], "TWO")
        T.eq("b.txt changed on disk", T.bytes(dir .. "/b.txt"), "alpha\nBETA\ngamma\n")
        T.eq("b.txt not loaded", vim.fn.bufloaded(dir .. "/b.txt"), 0)
        local function qf_texts()
          local out = {}
          for _, it in ipairs(vim.fn.getqflist()) do
            table.insert(out, ("%s:%d %s"):format(vim.fn.fnamemodify(vim.fn.bufname(it.bufnr), ":t"), it.lnum, it.text))
          end
          table.sort(out)
          return out
        end
        local function review_text()
          return table.concat(vim.api.nvim_buf_get_lines(vim.fn.bufnr("lathe://changes"), 0, -1, false), "\n")
        end
        local function cursor_to(text)
          local ls = vim.api.nvim_buf_get_lines(0, 0, -1, false)
          for i, l in ipairs(ls) do
            if l == text then
              vim.api.nvim_win_set_cursor(0, { i, 0 })
              return
            end
          end
          error("no line " .. text .. " in the review:\n" .. table.concat(ls, "\n"))
        end
"###;

#[nvim_oxi::test]
fn changes_lists_every_hunk_and_the_review_reverts_and_keeps_one() -> Result<(), String> {
    lua_test_with_model(
        &format!(r#"{{ "responses": [ {TURN} ] }}"#),
        &format!(
            r###"
        {START}
        local rewound = T.lathe.checkpoints()
        T.eq("one checkpoint", #rewound, 1)
        T.eq("its prompt", rewound[1].prompt, "change things")
        local files = vim.list_extend({{}}, rewound[1].files)
        table.sort(files)
        T.eq("its files: the loaded one, the one on disk, the one created", files, {{ "a.txt", "b.txt", "c.txt" }})

        vim.cmd("Lathe changes")
        T.eq("quickfix title", vim.fn.getqflist({{ title = 1 }}).title, "lathe changes: this turn")
        T.eq("quickfix", qf_texts(), {{
          "a.txt:10 +1 -0 nine and a half",
          "a.txt:2 +1 -1 TWO",
          "b.txt:2 +1 -1 BETA",
          "c.txt:1 created +1 new file",
        }})
        T.eq("the review's buffer", vim.api.nvim_buf_get_name(0), "lathe://changes")
        T.eq("in a tab of its own", #vim.api.nvim_list_tabpages(), 2)
        T.has("winbar keys", vim.wo.winbar, "<Space> keep ·")
        T.has("winbar keys", vim.wo.winbar, "r revert ·")
        local shown = review_text()
        T.has("a.txt header", shown, "diff a.txt (changed)")
        T.has("a diff with context", shown, "@@ -1,5 +1,5 @@\n one\n-two\n+TWO\n three\n four\n five")
        T.has("the created file", shown, "diff c.txt (created)\n@@ -1,0 +1,1 @@\n+new file")
        T.eq("diff highlighted", vim.bo.filetype, "diff")

        -- r on the hunk: a.txt's buffer has it back as it was, saved.
        cursor_to("+TWO")
        T.type("r")
        T.eq("reverted in the buffer", T.lines(abuf)[2], "two")
        T.eq("and saved", T.bytes(dir .. "/a.txt"), "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nnine and a half\nten\n")
        T.lacks("the hunk left the review", review_text(), "+TWO")
        T.has("the other hunk stays", review_text(), "+nine and a half")
        vim.api.nvim_buf_call(abuf, function() vim.cmd("silent undo") end)
        T.eq("one u brings the hunk back", T.lines(abuf)[2], "TWO")
        T.eq("only that hunk", T.lines(abuf)[10], "nine and a half")

        -- <Space> keeps b.txt's hunk: gone from the review and the list.
        vim.cmd("Lathe changes")
        cursor_to("+BETA")
        T.type(" ")
        T.lacks("kept: gone from the review", review_text(), "BETA")
        T.eq("the file is as the turn left it", T.bytes(dir .. "/b.txt"), "alpha\nBETA\ngamma\n")
        vim.cmd("Lathe changes")
        T.eq("kept: gone from the list", vim.tbl_filter(function(t) return t:find("BETA", 1, true) ~= nil end, qf_texts()), {{}})

        -- A buffer the user changed since the view was drawn is not reverted over.
        vim.cmd("Lathe changes")
        cursor_to("+nine and a half")
        vim.api.nvim_buf_set_lines(abuf, 0, 1, false, {{ "ONE by the user" }})
        -- An undo step of its own, as a typed change is.
        vim.api.nvim_buf_call(abuf, function() vim.cmd("let &l:undolevels = &l:undolevels") end)
        T.type("r")
        T.eq("the user's line stays", T.lines(abuf)[1], "ONE by the user")
        T.eq("lathe's hunk stays", T.lines(abuf)[10], "nine and a half")

        -- <CR>: the hunk's line in its file, in the tab the review came from.
        local review_tab = vim.api.nvim_get_current_tabpage()
        cursor_to("+nine and a half")
        T.type("<CR>")
        T.eq("the file", vim.api.nvim_get_current_buf(), abuf)
        T.eq("at the hunk's line", vim.api.nvim_win_get_cursor(0)[1], 10)
        T.eq("in the first tab", vim.api.nvim_get_current_tabpage() ~= review_tab, true)
        vim.api.nvim_set_current_tabpage(review_tab)

        -- The review diffs against the checkpoint: the user's edit shows
        -- too. R reverts all it shows, in one step per file; the created
        -- file goes.
        vim.cmd("Lathe changes")
        T.has("the user's edit shows", review_text(), "-one\n-two\n+ONE by the user\n+TWO")
        T.type("R")
        T.eq("c.txt removed", vim.fn.filereadable(dir .. "/c.txt"), 0)
        T.eq("a.txt as before the turn", table.concat(T.lines(abuf), "\n") .. "\n", A)
        T.has("nothing left", review_text(), "no changes in this turn")
        vim.api.nvim_buf_call(abuf, function() vim.cmd("silent undo") end)
        T.eq("one u brings the file's hunks back", {{ T.lines(abuf)[1], T.lines(abuf)[2], T.lines(abuf)[10] }},
          {{ "ONE by the user", "TWO", "nine and a half" }})

        -- q closes the tab.
        T.type("q")
        T.eq("the tab closed", #vim.api.nvim_list_tabpages(), 1)
        "###
        ),
    )
}

#[nvim_oxi::test]
fn rewind_code_keeps_the_users_lines_and_one_u_undoes_it() -> Result<(), String> {
    let script = format!(
        r#"{{ "responses": [ {TURN},
  {{ "content": [ {{ "type": "text", "text": "Fresh start." }} ],
    "expect": {{ "last_user_text_contains": "undone in a.txt, c.txt, and the conversation was kept. Do not assume those changes are in place: Read a file again before you edit it. Some changes stayed because the user edited the same lines since: b.txt.\n\nBefore this message the user rewound the conversation to before their earlier prompt" }} }} ] }}"#
    );
    lua_test_with_model(
        &script,
        &format!(
            r###"
        {START}
        -- The user changes a.txt below lathe's hunk, and b.txt on the line lathe changed.
        vim.api.nvim_buf_set_lines(abuf, 7, 8, false, {{ "eight by the user" }})
        T.write(dir .. "/b.txt", "alpha\nBETA by the user\ngamma\n")

        vim.cmd("Lathe rewind 1 code")
        T.eq("the rewind", T.lathe.wait(10000), "done")
        T.eq("a.txt: lathe's hunks out, the user's line kept", T.lines(abuf),
          {{ "one", "two", "three", "four", "five", "six", "seven", "eight by the user", "nine", "ten" }})
        T.eq("b.txt: the user's line kept", T.bytes(dir .. "/b.txt"), "alpha\nBETA by the user\ngamma\n")
        T.eq("c.txt removed", vim.fn.filereadable(dir .. "/c.txt"), 0)
        local chat = T.chat_text()
        T.has("notice", chat, "rewound the code to before prompt 1")
        T.has("conflict reported", chat, "b.txt:2")
        T.has("removed reported", chat, "removed (lathe had created them): c.txt")
        T.eq("the conversation stays", #T.lathe.transcript() > 0, true)

        vim.api.nvim_buf_call(abuf, function() vim.cmd("silent undo") end)
        T.eq("one u undoes the restore", T.lines(abuf)[2], "TWO")
        T.eq("and keeps the user's line", T.lines(abuf)[8], "eight by the user")
        T.eq("lathe's other hunk too", T.lines(abuf)[10], "nine and a half")

        -- Then the conversation: no trace of the prompt; the model is told.
        vim.cmd("Lathe rewind 1 conversation")
        T.lathe.wait(10000)
        T.eq("transcript after a conversation rewind", T.lathe.transcript(), {{}})
        T.lacks("the chat is drawn again without the turn", T.chat_text(), "Changed them.")
        T.has("the chat says what was done", T.chat_text(), "rewound the conversation to before prompt 1")
        local _, said = T.chat_text():gsub("rewound the conversation to before prompt 1", "")
        T.eq("said once", said, 1)
        T.eq("no checkpoint left", #T.lathe.checkpoints(), 0)

        -- Nothing left to rewind: said, nothing changed.
        local ok, err = pcall(vim.cmd, "Lathe rewind 1")
        T.eq("refused", ok, true)
        T.lathe.wait(5000)

        vim.cmd("Lathe and now")
        T.eq("the next turn", T.lathe.wait(15000), "done")
        "###
        ),
    )
}

#[nvim_oxi::test]
fn a_resumed_session_lists_its_checkpoints_and_rewinds_both() -> Result<(), String> {
    let script = format!(
        r#"{{ "responses": [ {TURN},
  {{ "content": [ {{ "type": "text", "text": "From the top." }} ],
    "expect": {{ "last_user_text_contains": "rewound the conversation and the files" }} }} ] }}"#
    );
    lua_test_with_model(
        &script,
        &format!(
            r###"
        {START}
        vim.cmd("Lathe new")
        T.eq("a new session has no checkpoint", #T.lathe.checkpoints(), 0)
        vim.cmd("Lathe resume last")
        T.lathe.wait(5000)
        T.eq("the resumed session's checkpoint", #T.lathe.checkpoints(), 1)
        vim.cmd("Lathe changes")
        T.eq("its changes", #qf_texts(), 4)
        T.type("q")

        vim.cmd("Lathe rewind 1")
        T.lathe.wait(10000)
        T.eq("a.txt restored", T.lines(abuf)[2], "two")
        T.eq("a.txt saved", T.bytes(dir .. "/a.txt"), A)
        T.eq("b.txt restored", T.bytes(dir .. "/b.txt"), B)
        -- b.txt was not loaded: the rewind loaded it, so one u undoes it.
        local bbuf = vim.fn.bufnr(dir .. "/b.txt")
        T.eq("b.txt restored through its buffer", T.lines(bbuf), {{ "alpha", "beta", "gamma" }})
        vim.api.nvim_buf_call(bbuf, function() vim.cmd("silent undo") end)
        T.eq("one u in it undoes the restore", T.lines(bbuf)[2], "BETA")
        T.eq("c.txt removed", vim.fn.filereadable(dir .. "/c.txt"), 0)
        T.eq("the conversation went back", T.lathe.transcript(), {{}})
        T.has("the chat says both", T.chat_text(), "rewound the code and the conversation to before prompt 1")
        vim.cmd("Lathe changes")
        T.eq("no changes left", vim.fn.getqflist(), {{}})

        vim.cmd("Lathe again")
        T.eq("the next turn", T.lathe.wait(15000), "done")
        "###
        ),
    )
}

#[nvim_oxi::test]
fn the_rewind_picker_lists_prompts_newest_first_with_their_files() -> Result<(), String> {
    lua_test_with_model(
        &format!(r#"{{ "responses": [ {TURN} ] }}"#),
        &format!(
            r###"
        {START}
        local asked = {{}}
        local select = vim.ui.select
        vim.ui.select = function(items, opts, on_choice)
          local shown = {{}}
          for _, it in ipairs(items) do
            table.insert(shown, opts.format_item(it))
          end
          table.insert(asked, {{ prompt = opts.prompt, items = shown }})
          -- The prompt, then "code only".
          on_choice(items[#asked == 1 and 1 or 2])
        end
        vim.cmd("Lathe rewind")
        vim.ui.select = select
        T.lathe.wait(10000)
        T.eq("two questions", #asked, 2)
        T.eq("the prompts", #asked[1].items, 1)
        T.has("a prompt with its files", asked[1].items[1], "1. change things  (a.txt")
        T.has("its files", asked[1].items[1], "c.txt")
        T.eq("what to restore", asked[2].items, {{ "code and conversation", "code only", "conversation only" }})
        T.eq("the code went back", T.lines(abuf)[2], "two")
        T.eq("the conversation stays", #T.lathe.transcript() > 0, true)

        -- A rewind the session cannot do says why.
        local notes = {{}}
        local notify = vim.notify
        vim.notify = function(msg, level) table.insert(notes, {{ msg, level }}) end
        vim.cmd("Lathe rewind 5")
        T.lathe.wait(5000)
        vim.notify = notify
        T.eq("one message", #notes, 1)
        T.has("out of range", notes[1][1], "cannot rewind 5 prompts: this session has 1")
        T.eq("a warning", notes[1][2], vim.log.levels.WARN)

        -- Completion of the subcommands and the rewind's words.
        T.eq("subcommands", vim.fn.getcompletion("Lathe ch", "cmdline"), {{ "changes" }})
        T.eq("changes all", vim.fn.getcompletion("Lathe changes a", "cmdline"), {{ "all" }})
        T.eq("rewind words", vim.fn.getcompletion("Lathe rewind 2 co", "cmdline"), {{ "code", "conversation" }})
        "###
        ),
    )
}
