//! The chat as a user works with it (`:help lathe-chat`): the prompt area
//! (typing, sending, history, streaming never touching it, `<C-c>`), tool
//! lines with a sign and highlight per state, Bash's output on its one
//! line, folded results, `<CR>` jumps, markdown highlighting, following new
//! output, toggle/close, winbar and window options.

use lathe_core::events::{AgentEvent, ToolStatus, TurnOutcome};
use serde_json::json;

use crate::common::{check_eq, load, lua_test, lua_test_with_model};

fn ev(e: AgentEvent) {
    lathe::ui::chat::render(vec![e]);
}

fn started(id: &str, name: &str, detail: &str, input: serde_json::Value) -> AgentEvent {
    AgentEvent::ToolStarted {
        id: id.into(),
        name: name.into(),
        detail: detail.into(),
        input,
    }
}

fn finished(id: &str, name: &str, status: ToolStatus, summary: &str, content: &str) -> AgentEvent {
    AgentEvent::ToolFinished {
        id: id.into(),
        name: name.into(),
        status,
        summary: summary.into(),
        content: content.into(),
        display: None,
    }
}

fn chat_text() -> String {
    lathe::ui::chat::chat_buffer()
        .map(|b| crate::common::lines(&b).join("\n"))
        .unwrap_or_default()
}

/// Lua: the sign and status highlight of the line that starts with `prefix`.
const SIGN_OF: &str = r#"
function SIGN_OF(prefix)
  local b = T.chat_buf()
  local ns = vim.api.nvim_get_namespaces()["lathe_chat"]
  for i, l in ipairs(T.lines(b)) do
    if vim.startswith(l, prefix) then
      local sign, hl
      for _, m in ipairs(vim.api.nvim_buf_get_extmarks(b, ns, { i - 1, 0 }, { i - 1, -1 }, { details = true })) do
        if m[4].sign_text then sign = vim.trim(m[4].sign_text) end
        if m[4].hl_group then hl = m[4].hl_group end
      end
      return { line = l, sign = sign, hl = hl, row = i }
    end
  end
  error("no line starts with " .. prefix .. ":\n" .. T.chat_text())
end
"#;

/// queued → running → waiting → done / error / denied / interrupted: one
/// line per call, each state with its own sign and highlight; an error
/// shows the sentence for the user, not the advice written for the model.
#[nvim_oxi::test]
fn tool_lines_show_each_state_with_its_sign_and_highlight() -> Result<(), String> {
    load();
    ev(AgentEvent::TurnStarted {
        prompt: "go".into(),
    });
    ev(AgentEvent::AssistantStarted);
    ev(started("t1", "Bash", "make", json!({"command": "make"})));
    for (id, name) in [
        ("t2", "Edit"),
        ("t3", "Write"),
        ("t4", "Read"),
        ("t5", "Grep"),
    ] {
        ev(AgentEvent::ToolQueued {
            id: id.into(),
            name: name.into(),
            detail: "a.py".into(),
        });
    }
    lua_test(&format!(
        "{SIGN_OF}
        local q = SIGN_OF('- Edit(a.py)')
        T.eq('queued', q, {{ line = '- Edit(a.py): queued', sign = '··', hl = 'LatheToolQueued', row = q.row }})
        local r = SIGN_OF('- Bash(make)')
        T.eq('running', {{ r.line, r.sign, r.hl }}, {{ '- Bash(make): running', '▶', 'LatheToolRunning' }})"
    ))?;
    ev(started(
        "t2",
        "Edit",
        "a.py",
        json!({"file_path": "/x/a.py"}),
    ));
    lathe::ui::chat::set_tools_waiting(&[("Edit".into(), "Edit a.py".into())]);
    lua_test(&format!(
        "{SIGN_OF}
        local w = SIGN_OF('- Edit(a.py)')
        T.eq('waiting', {{ w.line, w.sign, w.hl }}, {{ '- Edit(a.py): waiting for you', '?', 'LatheToolWaiting' }})"
    ))?;
    lathe::ui::chat::set_tools_waiting(&[]);
    ev(finished(
        "t2",
        "Edit",
        ToolStatus::Denied,
        "The user declined this Edit call. Do not retry it.",
        "The user declined this Edit call. Do not retry it.",
    ));
    ev(started(
        "t3",
        "Write",
        "a.py",
        json!({"file_path": "/x/a.py"}),
    ));
    ev(finished(
        "t3",
        "Write",
        ToolStatus::Error,
        "/x/a.py has not been read in this conversation. Read it first, then edit it: Edit needs to know the file's current text.",
        "/x/a.py has not been read in this conversation. Read it first, then edit it: Edit needs to know the file's current text.",
    ));
    ev(started(
        "t4",
        "Read",
        "a.py",
        json!({"file_path": "/x/a.py"}),
    ));
    ev(finished(
        "t4",
        "Read",
        ToolStatus::Done,
        "2 lines",
        "     1\tx = 1\n     2\ty = 2\n",
    ));
    ev(finished("t1", "Bash", ToolStatus::Done, "exit 0", ""));
    ev(AgentEvent::TurnEnded {
        outcome: TurnOutcome::Stopped,
    });
    lua_test(&format!(
        "{SIGN_OF}
        local function check(prefix, line, sign, hl)
          local s = SIGN_OF(prefix)
          T.eq(prefix, {{ s.line, s.sign, s.hl }}, {{ line, sign, hl }})
        end
        check('- Edit(a.py)', '- Edit(a.py): denied — The user declined this Edit call.', '⊘', 'LatheToolDenied')
        check('- Write(a.py)', '- Write(a.py): error — /x/a.py has not been read in this conversation.', '✗', 'LatheToolError')
        check('- Read(a.py)', '- Read(a.py): done — 2 lines', '✓', 'LatheToolDone')
        check('- Bash(make)', '- Bash(make): done — exit 0', '✓', 'LatheToolDone')
        check('- Grep(a.py)', '- Grep(a.py): interrupted', '■', 'LatheToolInterrupted')
        T.lacks('advice for the model stays out', T.chat_text(), 'Read it first')
        T.lacks('said once', T.chat_text(), 'Do not retry')
        -- Every group links to a standard group by default.
        for _, g in ipairs({{ 'LatheToolQueued', 'LatheToolRunning', 'LatheToolWaiting', 'LatheToolDone',
            'LatheToolError', 'LatheToolDenied', 'LatheToolInterrupted', 'LatheNote', 'LatheError' }}) do
          local hl = vim.api.nvim_get_hl(0, {{ name = g }})
          T.eq(g .. ' links', type(hl.link), 'string')
        end"
    ))
}

/// A Bash call's output replaces itself on the call's one line, its whole
/// output is folded under it once done, and the answer after it starts on
/// a line of its own (it used to be glued: `done — exit 1The test fails`);
/// a multi-line command shows its first line, so its line break never
/// splits the tool line.
#[nvim_oxi::test]
fn bash_output_stays_on_one_line_and_the_answer_is_not_glued() -> Result<(), String> {
    load();
    lathe::ui::chat::open_window()?;
    ev(AgentEvent::TurnStarted {
        prompt: "test".into(),
    });
    ev(AgentEvent::AssistantStarted);
    ev(AgentEvent::TextDelta {
        text: "Running the tests.".into(),
    });
    // A multi-line command: its line break must not split the tool line.
    ev(started(
        "b1",
        "Bash",
        "make test \\\n  -j4",
        json!({"command": "make test \\\n  -j4"}),
    ));
    for piece in [
        "compiling\n",
        "running 3 tests\ntest a ... ok\n",
        "test b ",
        "... FAILED\n",
    ] {
        ev(AgentEvent::ToolProgress {
            id: "b1".into(),
            text: piece.into(),
        });
        let text = chat_text();
        check_eq(
            "one Bash line while it runs",
            text.matches("- Bash(").count(),
            1,
        )?;
    }
    if !chat_text().contains("- Bash(make test \\…): running — test b ... FAILED") {
        return Err(format!(
            "the latest output line is not shown:\n{}",
            chat_text()
        ));
    }
    ev(finished(
        "b1",
        "Bash",
        ToolStatus::Done,
        "exit 1",
        "compiling\nrunning 3 tests\ntest a ... ok\ntest b ... FAILED\nExit code 1",
    ));
    ev(AgentEvent::TextDelta {
        text: "The test fails".into(),
    });
    ev(AgentEvent::TextDelta {
        text: " in b.".into(),
    });
    ev(AgentEvent::TurnEnded {
        outcome: TurnOutcome::Done,
    });
    check_eq(
        "chat",
        chat_text().as_str(),
        "## You\n\ntest\n\n## lathe\n\nRunning the tests.\n\n- Bash(make test \\…): done — exit 1\n  ```\n  compiling\n  running 3 tests\n  test a ... ok\n  test b ... FAILED\n  Exit code 1\n  ```\n\nThe test fails in b.\n\n*(done)*\n",
    )?;
    lua_test(
        "local win = vim.fn.bufwinid(T.chat_buf())
        T.eq('the output is folded under the tool line, closed', vim.api.nvim_win_call(win, function() return { vim.fn.foldclosed(10), vim.fn.foldclosedend(10) } end), { 9, 16 })
        T.eq('the answer is not in the fold', vim.api.nvim_win_call(win, function() return vim.fn.foldclosed(17) end), -1)",
    )
}

/// The chat is markdown highlighted by tree-sitter, and a fenced block
/// gets its language's highlighting through the injection.
#[nvim_oxi::test]
fn the_chat_is_highlighted_as_markdown_with_code_in_its_language() -> Result<(), String> {
    load();
    ev(AgentEvent::TurnStarted {
        prompt: "show".into(),
    });
    ev(AgentEvent::AssistantStarted);
    ev(AgentEvent::TextDelta {
        text: "Here:\n\n```lua\nlocal x = 1\n```\n".into(),
    });
    lua_test(
        "T.eq('the fenced lua is highlighted as lua', T.any_starts(T.chat_hl('local x = 1'), '@keyword.lua'), true)
        T.eq('no tree-sitter highlighter on the chat', vim.treesitter.highlighter.active[T.chat_buf()], nil)",
    )
}

/// A tool's folded result is not parsed with its turn (a day of
/// results cost hundreds of MB of trees): it is highlighted, in its
/// file's language, once a window shows it open (`za`).
#[nvim_oxi::test]
fn a_folded_result_is_highlighted_when_opened() -> Result<(), String> {
    load();
    ev(AgentEvent::TurnStarted {
        prompt: "read it".into(),
    });
    ev(AgentEvent::AssistantStarted);
    ev(started(
        "t1",
        "Read",
        "x.lua",
        json!({ "file_path": "x.lua" }),
    ));
    ev(finished(
        "t1",
        "Read",
        ToolStatus::Done,
        "read 1 line",
        "local folded_value = 2\n",
    ));
    ev(AgentEvent::TextDelta {
        text: "It sets **one** value.\n".into(),
    });
    ev(AgentEvent::TurnEnded {
        outcome: TurnOutcome::Done,
    });
    lathe::ui::chat::open_window()?;
    lua_test(
        "T.eq('the answer is highlighted', T.any_starts(T.chat_hl('one**'), '@markup.strong'), true)
        vim.cmd.redraw()
        vim.wait(100)
        T.eq('closed: not parsed', T.chat_hl('local folded_value'), {})
        local win = vim.fn.bufwinid('lathe://chat')
        local row
        for i, l in ipairs(T.lines(T.chat_buf())) do
          if l:find('Read(x.lua)', 1, true) then row = i end
        end
        vim.api.nvim_win_call(win, function()
          vim.api.nvim_win_set_cursor(win, { row, 0 })
          vim.cmd('normal! zo')
        end)
        vim.cmd.redraw()
        T.eq('opened: highlighted as lua', vim.wait(5000, function()
          return T.any_starts(T.chat_hl('local folded_value'), '@keyword.lua')
        end), true)",
    )
}

/// `<CR>` on a Read line opens the file at the read's line in the
/// previous window, and on a line of a Grep result at that match; the chat
/// window keeps the chat.
#[nvim_oxi::test]
fn enter_on_a_tool_line_jumps_to_its_file_in_the_other_window() -> Result<(), String> {
    load();
    let dir = std::env::temp_dir().join(format!("lathe-jump-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let file = dir.join("a.py");
    std::fs::write(&file, "one\ntwo\nthree\nfour\nfive\n").map_err(|e| e.to_string())?;
    let path = file.to_string_lossy().into_owned();
    lathe::ui::chat::open_window()?;
    ev(AgentEvent::TurnStarted {
        prompt: "look".into(),
    });
    ev(AgentEvent::AssistantStarted);
    ev(started(
        "r1",
        "Read",
        "a.py",
        json!({"file_path": path, "offset": 3}),
    ));
    ev(finished(
        "r1",
        "Read",
        ToolStatus::Done,
        "3 lines",
        "     3\tthree\n     4\tfour\n     5\tfive\n",
    ));
    ev(started(
        "g1",
        "Grep",
        "\"f\"",
        json!({"pattern": "f", "path": dir}),
    ));
    let grep = format!("{path}:4:four\n{path}:5:five\n");
    ev(finished("g1", "Grep", ToolStatus::Done, "2 matches", &grep));
    ev(AgentEvent::TurnEnded {
        outcome: TurnOutcome::Done,
    });
    lua_test(&format!(
        r#"local path = {path:?}
        local file_win = vim.api.nvim_get_current_win()
        local chat_win = vim.fn.bufwinid(T.chat_buf())
        local function row_of(prefix)
          for i, l in ipairs(T.lines(T.chat_buf())) do if vim.startswith(l, prefix) then return i end end
        end
        vim.api.nvim_set_current_win(chat_win)
        vim.api.nvim_win_set_cursor(chat_win, {{ row_of('- Read(a.py)'), 0 }})
        T.type('<CR>')
        T.eq('in the file window', vim.api.nvim_get_current_win(), file_win)
        T.eq('the file', vim.api.nvim_buf_get_name(0), path)
        T.eq('at the read offset', vim.api.nvim_win_get_cursor(0)[1], 3)
        T.eq('the chat window keeps the chat', vim.api.nvim_win_get_buf(chat_win), T.chat_buf())
        -- A match line inside the (opened) Grep fold.
        vim.api.nvim_set_current_win(chat_win)
        local r = row_of('  ' .. path .. ':5:')
        vim.api.nvim_win_set_cursor(chat_win, {{ r, 0 }})
        vim.cmd('normal! zv')
        T.type('<CR>')
        T.eq('in the file window again', vim.api.nvim_get_current_win(), file_win)
        T.eq('at the match', vim.api.nvim_win_get_cursor(0)[1], 5)
        -- No other window left: the file opens in a new split, never in the chat's.
        vim.api.nvim_win_close(file_win, true)
        vim.api.nvim_set_current_win(chat_win)
        vim.api.nvim_win_set_cursor(chat_win, {{ row_of('- Read(a.py)'), 0 }})
        T.type('<CR>')
        T.eq('a new window', vim.api.nvim_get_current_win() ~= chat_win, true)
        T.eq('with the file', vim.api.nvim_buf_get_name(0), path)
        T.eq('the chat window still shows the chat', vim.api.nvim_win_get_buf(chat_win), T.chat_buf())"#
    ))
}

/// The chat follows new output while its cursor is on the last line, with
/// or without focus; moved up, it stays where the user put it.
#[nvim_oxi::test]
fn the_chat_follows_new_output_only_from_the_last_line() -> Result<(), String> {
    load();
    lathe::ui::chat::open_window()?;
    ev(AgentEvent::TurnStarted {
        prompt: "long".into(),
    });
    ev(AgentEvent::AssistantStarted);
    // Each piece continues the last line, then adds lines below it (as a
    // streamed answer does): a cursor left alone would stay on that line.
    let many: String = (0..80).map(|i| format!(" more\nline {i}")).collect();
    ev(AgentEvent::TextDelta { text: many.clone() });
    lua_test(
        "local w = vim.fn.bufwinid(T.chat_buf())
        local n = vim.api.nvim_buf_line_count(T.chat_buf())
        T.eq('followed without focus', vim.api.nvim_win_get_cursor(w)[1], n)
        vim.api.nvim_set_current_win(w)",
    )?;
    ev(AgentEvent::TextDelta { text: many.clone() });
    lua_test(
        "local w = vim.fn.bufwinid(T.chat_buf())
        local n = vim.api.nvim_buf_line_count(T.chat_buf())
        T.eq('followed with focus', vim.api.nvim_win_get_cursor(w)[1], n)
        vim.api.nvim_win_set_cursor(w, { 5, 0 })",
    )?;
    ev(AgentEvent::TextDelta { text: many });
    lua_test(
        "local w = vim.fn.bufwinid(T.chat_buf())
        T.eq('stays where the user put it', vim.api.nvim_win_get_cursor(w)[1], 5)",
    )
}

/// Each error is shown once: the notice, and the turn's end line points at
/// it instead of repeating it.
#[nvim_oxi::test]
fn an_error_is_shown_once() -> Result<(), String> {
    load();
    ev(AgentEvent::TurnStarted {
        prompt: "hi".into(),
    });
    ev(AgentEvent::Notice {
        text: "authentication_error: invalid x-api-key. Set ANTHROPIC_API_KEY.".into(),
        is_error: true,
    });
    ev(AgentEvent::TurnEnded {
        outcome: TurnOutcome::Error("authentication_error: invalid x-api-key".into()),
    });
    let text = chat_text();
    check_eq("shown once", text.matches("invalid x-api-key").count(), 1)?;
    if !text.contains("*(error, see above)*") {
        return Err(format!("no end line:\n{text}"));
    }
    Ok(())
}

/// `:Lathe toggle` opens the chat with the prompt area under it and the
/// cursor there; again closes both; `q` closes them too, and `:Lathe close`.
/// The chat's window options are its own, and the winbar names model,
/// mode, state and tokens.
#[nvim_oxi::test]
fn toggle_close_q_window_options_and_winbar() -> Result<(), String> {
    load();
    lua_test(
        r###"vim.cmd("runtime plugin/lathe.lua")
        T.setup(vim.fn.getcwd(), { model = "test-model-1", permissions = { mode = "plan" } })
        vim.wo.number = true; vim.wo.list = true; vim.wo.colorcolumn = "80"
        local user = vim.api.nvim_get_current_win()
        vim.cmd("Lathe toggle")
        T.eq("chat and prompt opened", #vim.api.nvim_tabpage_list_wins(0), 3)
        T.eq("cursor in the prompt", vim.api.nvim_buf_get_name(0), "lathe://prompt")
        local chat = vim.fn.bufwinid(T.chat_buf())
        for _, w in ipairs({ chat, vim.api.nvim_get_current_win() }) do
          T.eq("no number", vim.wo[w].number, false)
          T.eq("no list", vim.wo[w].list, false)
          T.eq("no colorcolumn", vim.wo[w].colorcolumn, "")
        end
        -- Each winbar is built for its window's width: whole parts drop in
        -- a narrow one (the model first), none is cut.
        T.eq("winbar", vim.wo[chat].winbar, " lathe · mode: plan · idle")
        vim.api.nvim_win_set_width(chat, 60)
        -- WinResized comes from the main loop, which a running test does
        -- not reach: fire it as the loop would.
        vim.api.nvim_exec_autocmds("WinResized", {})
        T.wait_for("the winbar follows the width", 3000, function()
          return vim.wo[chat].winbar == " lathe · test-model-1 · mode: plan · idle"
        end)
        vim.api.nvim_win_set_width(chat, 30)
        vim.api.nvim_exec_autocmds("WinResized", {})
        T.wait_for("and narrows again", 3000, function()
          return vim.wo[chat].winbar == " lathe · mode: plan · idle"
        end)
        T.eq("prompt below the chat", vim.fn.win_screenpos(vim.api.nvim_get_current_win())[1] > vim.fn.win_screenpos(chat)[1], true)
        vim.cmd("Lathe toggle")
        T.eq("toggled closed", vim.api.nvim_tabpage_list_wins(0), { user })
        vim.cmd("Lathe open")
        T.eq("open keeps the cursor", vim.api.nvim_get_current_win(), user)
        vim.api.nvim_set_current_win(vim.fn.bufwinid(T.chat_buf()))
        T.type("q")
        T.eq("q closed both", vim.api.nvim_tabpage_list_wins(0), { user })
        vim.cmd("Lathe open")
        vim.cmd("Lathe close")
        T.eq(":Lathe close closed both", vim.api.nvim_tabpage_list_wins(0), { user })
        T.lathe.toggle()
        T.lathe.close()
        T.eq("toggle()/close()", vim.api.nvim_tabpage_list_wins(0), { user })
        -- :q in the transcript takes the prompt area along.
        vim.cmd("Lathe open")
        vim.api.nvim_set_current_win(vim.fn.bufwinid(T.chat_buf()))
        vim.cmd("quit")
        vim.wait(50)
        T.eq(":q in the chat closed the prompt too", vim.api.nvim_tabpage_list_wins(0), { user })"###,
    )
}

/// A scripted answer, streamed slowly.
const SLOW_SCRIPT: &str = r#"{ "responses": [
  { "content": [ { "type": "text", "text": "First answer, streamed in small pieces so that it takes a while to arrive." } ],
    "text_chunk_chars": 2, "event_delay_ms": 15,
    "usage": { "input_tokens": 1200, "output_tokens": 30 } },
  { "content": [ { "type": "text", "text": "Second answer." } ],
    "usage": { "input_tokens": 1300, "output_tokens": 5 } }
] }"#;

/// The prompt area: `:Lathe` puts the cursor there in Insert mode; text
/// typed while an answer streams stays as typed; `<CR>` sends a multi-line
/// prompt (it shows in the transcript, the area empties); `<Up>`/`<Down>`
/// on the first/last line go through the history; `i` in the transcript
/// goes back to the prompt.
#[nvim_oxi::test]
fn the_prompt_area_types_sends_and_remembers() -> Result<(), String> {
    lua_test_with_model(
        SLOW_SCRIPT,
        r###"vim.cmd("runtime plugin/lathe.lua")
        -- Wide enough that the chat's winbar shows every part (a narrow one
        -- drops the spend first).
        vim.o.columns = 300
        T.setup(vim.fn.getcwd(), { base_url = MOCK_URL })
        vim.cmd("Lathe")
        T.eq("in the prompt", vim.api.nvim_buf_get_name(0), "lathe://prompt")
        vim.cmd("stopinsert")
        T.type("ione<CR>two<Esc>")
        T.type("<CR>")
        local pbuf = vim.api.nvim_get_current_buf()
        T.eq("emptied once sent", T.lines(pbuf), { "" })
        T.wait_for("streaming", 5000, function() return T.chat_text():find("First answer", 1, true) ~= nil end)
        T.eq("still running", T.lathe.status().state, "running")
        -- Type while the answer streams: nothing moves or clobbers it.
        T.type("inext<Esc>")
        vim.wait(60)
        T.type("a line<CR>and more<Esc>")
        vim.wait(60)
        T.eq("typed text intact", T.lines(pbuf), { "next line", "and more" })
        T.eq("cursor where typed", vim.api.nvim_win_get_cursor(0), { 2, 7 })
        if T.lathe.status().state == "running" then
          -- Sent while the answer runs: queued for it (:help lathe-queue).
          local errors = {}
          local notify = vim.notify
          vim.notify = function(m) table.insert(errors, m) end
          T.type("<CR>")
          vim.notify = notify
          T.eq("queued while it runs", T.lines(pbuf), { "" })
          T.eq("no error", #errors, 0)
        end
        T.wait_for("the first answer's end", 10000, function() return T.chat_text():find("*(done)*", 1, true) ~= nil end)
        T.has("winbar: state and tokens", vim.wo[vim.fn.bufwinid(T.chat_buf())].winbar, " · spend 1.2k in, 30 out")
        T.has("the multi-line prompt in the transcript", T.chat_text(), "## You\n\none\ntwo\n\n## lathe")
        if T.lines(pbuf)[1] ~= "" then
          T.type("<CR>")
        end
        T.wait_for("the second answer", 10000, function() return T.chat_text():find("Second answer.", 1, true) ~= nil end)
        T.eq("second", T.lathe.wait(10000), "done")
        T.has("second prompt sent", T.chat_text(), "## You\n\nnext line\nand more\n\n## lathe\n\nSecond answer.")
        T.type("itypo<Esc>")
        T.type("<Up>")
        T.eq("newest first", T.lines(pbuf), { "next line", "and more" })
        vim.api.nvim_win_set_cursor(0, { 1, 0 })
        T.type("<Up>")
        T.eq("then older", T.lines(pbuf), { "one", "two" })
        vim.api.nvim_win_set_cursor(0, { 1, 0 })
        T.type("<Down>")
        T.eq("down moves within the text first", T.lines(pbuf), { "one", "two" })
        T.type("<Down>")
        T.eq("then newer", T.lines(pbuf), { "next line", "and more" })
        T.type("<Down>")
        T.eq("past the newest: the draft", T.lines(pbuf), { "typo" })
        -- `i` in the transcript goes to the prompt.
        vim.api.nvim_set_current_win(vim.fn.bufwinid(T.chat_buf()))
        T.type("i")
        T.eq("i goes to the prompt", vim.api.nvim_get_current_buf(), pbuf)"###,
    )
}

/// `<C-c>` in the prompt area stops the running turn.
#[nvim_oxi::test]
fn ctrl_c_in_the_prompt_area_stops_the_turn() -> Result<(), String> {
    lua_test_with_model(
        r#"{ "responses": [
          { "content": [ { "type": "text", "text": "A long story that goes on and on, slowly, until its end." } ],
            "text_chunk_chars": 1, "event_delay_ms": 30 }
        ] }"#,
        r###"vim.cmd("runtime plugin/lathe.lua")
        T.setup(vim.fn.getcwd(), { base_url = MOCK_URL })
        T.lathe.focus_prompt()
        vim.cmd("stopinsert")
        T.type("itell a story<Esc><CR>")
        T.wait_for("streaming", 5000, function() return T.chat_text():find("A long", 1, true) ~= nil end)
        T.eq("in the prompt", vim.api.nvim_buf_get_name(0), "lathe://prompt")
        T.type("<C-c>")
        T.eq("stopped", T.lathe.wait(5000), "stopped")
        T.lacks("not finished", T.chat_text(), "its end.")"###,
    )
}

/// A Read, an Edit of what it read, a command that fails, an answer.
const EDIT_AND_FAIL_SCRIPT: &str = r###"{ "responses": [
  { "content": [
      { "type": "tool_use", "id": "toolu_01", "name": "Read", "input": { "file_path": "a.py" } } ] },
  { "content": [
      { "type": "tool_use", "id": "toolu_02", "name": "Edit",
        "input": { "file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2" } } ],
    "expect": { "tool_result_contains": { "toolu_01": "x = 1" } } },
  { "content": [
      { "type": "tool_use", "id": "toolu_03", "name": "Bash",
        "input": { "command": "echo broken; exit 1", "description": "Run the checks" } } ],
    "expect": { "tool_result_contains": { "toolu_02": "has been updated" } } },
  { "content": [ { "type": "text", "text": "The checks fail." } ],
    "expect": { "tool_result_contains": { "toolu_03": "Exit code 1" },
                "tool_result_is_error": { "toolu_03": false } } }
] }"###;

/// A real turn: the Edit's line folds a diff of what it wrote (not the
/// model's `cat -n` snippet), its added, removed and hunk lines in their
/// own highlight groups; the command that exited 1 is `failed` with its
/// own sign and highlight, shows the command with the model's description
/// dimmed after it; `:Lathe resume` shows all of it again the same way,
/// and `<CR>` on a line of the diff opens that line of the file.
#[nvim_oxi::test]
fn an_edit_folds_its_diff_and_a_failed_command_is_not_done_also_after_resume() -> Result<(), String>
{
    lua_test_with_model(
        EDIT_AND_FAIL_SCRIPT,
        r###"
        local dir = T.project()
        T.write(dir .. "/a.py", "import os\nx = 1\nprint(x)\n")
        vim.cmd.cd(dir)
        vim.cmd("runtime plugin/lathe.lua")
        T.setup(dir, { base_url = MOCK_URL })
        T.answer_floats({ "y", "y" })
        vim.cmd("Lathe fix it")
        T.eq("turn", T.lathe.wait(15000), "done")
        T.eq("the file", T.bytes(dir .. "/a.py"), "import os\nx = 2\nprint(x)\n")

        -- Per chat line: its sign and every group lathe_chat put on it,
        -- with the text each covers.
        local function marks_of(prefix)
          local b = T.chat_buf()
          local ns = vim.api.nvim_get_namespaces()["lathe_chat"]
          for i, l in ipairs(T.lines(b)) do
            if vim.startswith(l, prefix) then
              local out = { line = l, groups = {} }
              for _, m in ipairs(vim.api.nvim_buf_get_extmarks(b, ns, { i - 1, 0 }, { i - 1, -1 }, { details = true })) do
                local d = m[4]
                if d.sign_text then out.sign = vim.trim(d.sign_text) end
                if d.hl_group and d.end_col then
                  out.groups[d.hl_group] = l:sub(m[3] + 1, d.end_col)
                end
              end
              return out
            end
          end
          error("no chat line starts with " .. prefix .. ":\n" .. T.chat_text())
        end
        local function check(when)
          local edit = marks_of("- Edit(a.py)")
          T.eq(when .. ": the Edit line", { edit.line, edit.sign }, { "- Edit(a.py): done — 1 replacement", "✓" })
          local text = T.chat_text()
          T.has(when .. ": the Edit folds the diff", text, table.concat({
            "- Edit(a.py): done — 1 replacement",
            "  ```diff",
            "  --- a/a.py",
            "  +++ b/a.py",
            "  @@ -1,3 +1,3 @@",
            "   import os",
            "  -x = 1",
            "  +x = 2",
            "   print(x)",
            "  ```",
          }, "\n"))
          T.lacks(when .. ": not the cat -n snippet", text, "cat -n")
          T.eq(when .. ": hunk", marks_of("  @@ -1,3").groups, { LatheDiffHunk = "@@ -1,3 +1,3 @@" })
          T.eq(when .. ": removed", marks_of("  -x = 1").groups, { LatheDiffRemoved = "-x = 1" })
          T.eq(when .. ": added", marks_of("  +x = 2").groups, { LatheDiffAdded = "+x = 2" })
          T.eq(when .. ": file", marks_of("  +++ b/a.py").groups, { LatheDiffFile = "+++ b/a.py" })
          T.eq(when .. ": context", marks_of("   import os").groups, {})
          local bash = marks_of("- Bash(")
          T.eq(when .. ": the failed command", { bash.line, bash.sign, bash.groups }, {
            "- Bash(echo broken; exit 1  # Run the checks): failed — exit 1", "!",
            { LatheToolFailed = "failed", LatheToolDescription = "# Run the checks" },
          })
          T.has(when .. ": its output folded", text, "  broken\n")
        end
        check("live")
        local failed = vim.api.nvim_get_hl(0, { name = "LatheToolFailed" })
        T.eq("failed links to a warning", failed.link, "DiagnosticWarn")
        for _, g in ipairs({ "LatheToolDescription", "LatheDiffAdded", "LatheDiffRemoved", "LatheDiffHunk", "LatheDiffFile" }) do
          T.eq(g .. " links", type(vim.api.nvim_get_hl(0, { name = g }).link), "string")
        end
        local live = T.chat_text()

        -- The session's file is written on a thread of its own.
        local files
        T.wait_for("the session saved", 5000, function()
          files = vim.fn.glob(vim.fn.stdpath("state") .. "/lathe/sessions/*/*.jsonl", false, true)
          return #files == 1 and vim.fn.readfile(files[1])[#vim.fn.readfile(files[1])]:find('"turn_end"') ~= nil
        end)
        vim.cmd("Lathe new")
        vim.cmd("Lathe resume last")
        T.lathe.wait(5000)
        T.eq("chat after resume", T.chat_text(), live)
        check("resumed")

        -- <CR> on a line of the diff opens that line of the file.
        local chat_win = vim.fn.bufwinid(T.chat_buf())
        vim.api.nvim_set_current_win(chat_win)
        for i, l in ipairs(T.lines(T.chat_buf())) do
          if l == "   print(x)" then vim.api.nvim_win_set_cursor(chat_win, { i, 0 }) end
        end
        vim.cmd("normal! zv")
        T.type("<CR>")
        T.eq("the file", vim.fs.basename(vim.api.nvim_buf_get_name(0)), "a.py")
        T.eq("at the diff's line", vim.api.nvim_win_get_cursor(0)[1], 3)
        "###,
    )
}
