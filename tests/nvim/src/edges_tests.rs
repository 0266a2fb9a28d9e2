//! What the chat says of a prompt and its calls beyond the answer: what the
//! prompt carried (a line per attachment, folded to its text, also after
//! `:Lathe resume`), the whole reason of a denial, one retry note per
//! outage; `<CR>` opening files under their relative name, the Read map
//! on a quickfix entry, the Bash float's header.

use lathe_core::events::{AgentEvent, ToolStatus, TurnOutcome};

use crate::common::{check_eq, load, lua_test, lua_test_with_model};

fn ev(e: AgentEvent) {
    lathe::ui::chat::render(vec![e]);
}

fn chat_text() -> String {
    lathe::ui::chat::chat_buffer()
        .map(|b| crate::common::lines(&b).join("\n"))
        .unwrap_or_default()
}

const ATTACH_SCRIPT: &str = r#"{ "responses": [
  { "content": [ { "type": "text", "text": "Seen." } ],
    "expect": { "last_user_text_contains": "explain these with @b.py" } }
] }"#;

/// `:'<,'>Lathe … @b.py`: under the prompt, `⎿ Selected lines 2–3 of
/// a.lua` and `⎿ Attached b.py (2 lines)`, each folded (closed) to the text
/// sent; `:Lathe resume` shows them the same way.
#[nvim_oxi::test]
fn what_a_prompt_carried_is_shown_under_it_folded_also_after_resume() -> Result<(), String> {
    lua_test_with_model(
        ATTACH_SCRIPT,
        r###"
        local dir = T.project()
        T.write(dir .. "/a.lua", "local x = 1\nlocal y = 2\nreturn x + y\n")
        T.write(dir .. "/b.py", "def f():\n    return 1\n")
        vim.cmd.cd(dir)
        T.open(dir .. "/a.lua")
        vim.cmd("runtime plugin/lathe.lua")
        T.setup(dir, { base_url = MOCK_URL })
        vim.cmd("2,3Lathe explain these with @b.py")
        T.eq("wait", T.lathe.wait(15000), "done")
        local function check(when)
          local lines = T.lines(T.chat_buf())
          local function row_of(prefix)
            for i, l in ipairs(lines) do
              if vim.startswith(l, prefix) then return i end
            end
            error(when .. ": no line " .. prefix .. " in:\n" .. table.concat(lines, "\n"))
          end
          local prompt = row_of("explain these with @b.py")
          local sel = row_of("⎿ Selected lines 2–3 of a.lua")
          local file = row_of("⎿ Attached b.py (2 lines)")
          local heading = row_of("## lathe")
          T.eq(when .. ": order", { prompt < sel, sel < file, file < heading }, { true, true, true })
          T.eq(when .. ": the selection's text", lines[sel + 2], "  The user selected lines 2-3 of a.lua:")
          T.has(when .. ": the file's text", table.concat(lines, "\n", file + 1, heading - 1), "     2\t    return 1")
          local win = vim.fn.bufwinid(T.chat_buf())
          vim.api.nvim_win_call(win, function()
            T.eq(when .. ": the selection folded", { vim.fn.foldclosed(sel + 1), vim.fn.foldclosedend(sel + 1) ~= -1 }, { sel, true })
            T.eq(when .. ": the file folded", vim.fn.foldclosed(file + 1), file)
            T.eq(when .. ": the heading not", vim.fn.foldclosed(heading), -1)
          end)
          return table.concat(lines, "\n")
        end
        local shown = check("live")
        vim.cmd("Lathe new")
        vim.cmd("Lathe resume last")
        T.lathe.wait(5000)
        T.eq("the same chat after resume", check("resumed"), shown)
        "###,
    )
}

/// A denial with a reason (`N`) shows the whole reason on the tool line;
/// the retries of one outage are one note, replaced in place, and the final
/// error is shown once.
#[nvim_oxi::test]
fn a_denial_shows_its_whole_reason_and_retries_are_one_note() -> Result<(), String> {
    load();
    ev(AgentEvent::TurnStarted {
        prompt: "fix".into(),
    });
    ev(AgentEvent::AssistantStarted);
    ev(AgentEvent::ToolStarted {
        id: "e1".into(),
        name: "Edit".into(),
        detail: "cart.py".into(),
        input: serde_json::json!({}),
    });
    let said = lathe_core::text::fill(
        lathe_core::permissions::USER_DECLINED_WITH_MESSAGE,
        &[("message", "also fix the discount. In one go, please.")],
    );
    ev(AgentEvent::ToolFinished {
        id: "e1".into(),
        name: "Edit".into(),
        status: ToolStatus::Denied,
        summary: said.clone(),
        content: said,
        display: None,
    });
    for k in 2..=4 {
        ev(AgentEvent::AssistantStarted);
        ev(AgentEvent::Retrying {
            text: format!("retrying in 1s (attempt {k} of 4): HTTP 500: overloaded"),
        });
    }
    ev(AgentEvent::Notice {
        text: "The API failed: HTTP 500: overloaded".into(),
        is_error: true,
    });
    ev(AgentEvent::TurnEnded {
        outcome: TurnOutcome::Error("The API failed: HTTP 500: overloaded".into()),
    });
    let text = chat_text();
    if !text.contains(
        "- Edit(cart.py): denied — The user declined this tool call; nothing was written or run. The user said: also fix the discount. In one go, please.",
    ) {
        return Err(format!("the reason is not whole:\n{text}"));
    }
    check_eq("one retry note", text.matches("retrying in").count(), 1)?;
    if !text.contains("> **note:** retrying in 1s (attempt 4 of 4): HTTP 500: overloaded") {
        return Err(format!("the note is not the last retry's:\n{text}"));
    }
    check_eq("the error once", text.matches("The API failed").count(), 1)?;
    // A later outage has a note of its own.
    ev(AgentEvent::TurnStarted {
        prompt: "again".into(),
    });
    ev(AgentEvent::AssistantStarted);
    ev(AgentEvent::Retrying {
        text: "retrying in 1s (attempt 2 of 4): HTTP 529".into(),
    });
    check_eq(
        "a note for the new outage",
        chat_text().matches("retrying in").count(),
        2,
    )
}

/// `<CR>` on a tool line opens the file under its name relative to the
/// working directory, as buffers the user opens are named (`:ls`).
#[nvim_oxi::test]
fn enter_on_a_tool_line_opens_the_file_under_its_relative_name() -> Result<(), String> {
    load();
    let dir = std::env::temp_dir().join(format!("lathe-rel-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("shop")).map_err(|e| e.to_string())?;
    let file = dir.join("shop/pricing.py");
    std::fs::write(&file, "one\ntwo\n").map_err(|e| e.to_string())?;
    let path = file.to_string_lossy().into_owned();
    lua_test(&format!("vim.cmd.cd({:?})", dir.to_string_lossy()))?;
    lathe::ui::chat::open_window()?;
    ev(AgentEvent::TurnStarted {
        prompt: "look".into(),
    });
    ev(AgentEvent::AssistantStarted);
    ev(AgentEvent::ToolStarted {
        id: "r1".into(),
        name: "Read".into(),
        detail: "shop/pricing.py".into(),
        input: serde_json::json!({"file_path": path}),
    });
    ev(AgentEvent::ToolFinished {
        id: "r1".into(),
        name: "Read".into(),
        status: ToolStatus::Done,
        summary: "2 lines".into(),
        content: "     1\tone\n     2\ttwo\n".into(),
        display: None,
    });
    lua_test(
        r#"local chat_win = vim.fn.bufwinid(T.chat_buf())
        vim.api.nvim_set_current_win(chat_win)
        for i, l in ipairs(T.lines(T.chat_buf())) do
          if vim.startswith(l, "- Read(") then vim.api.nvim_win_set_cursor(chat_win, { i, 0 }) end
        end
        T.type("<CR>")
        T.eq("relative, as :ls shows it", vim.fn.bufname("%"), "shop/pricing.py")"#,
    )
}

/// `<Plug>(lathe-read)` on a quickfix entry previews the entry's file with
/// the cursor on the entry's line.
#[nvim_oxi::test]
fn read_map_on_a_quickfix_entry_opens_at_its_line() -> Result<(), String> {
    lua_test(
        r###"
        local dir = T.project()
        local text = {}
        for i = 1, 60 do text[i] = "line " .. i end
        T.write(dir .. "/big.txt", table.concat(text, "\n") .. "\n")
        vim.cmd.cd(dir)
        vim.cmd("runtime plugin/lathe.lua")
        T.setup(dir)
        vim.fn.setqflist({}, " ", { items = {
          { filename = dir .. "/big.txt", lnum = 5, text = "five" },
          { filename = dir .. "/big.txt", lnum = 42, text = "forty-two" },
        } })
        vim.cmd("copen")
        vim.api.nvim_win_set_cursor(0, { 2, 0 })
        T.type("<Plug>(lathe-read)")
        T.wait_for("the preview float", 10000, function() return T.floats() == 1 end)
        T.eq("the entry's file", T.lines(0)[1], "line 1")
        T.eq("at the entry's line", vim.api.nvim_get_current_line(), "line 42")
        "###,
    )
}

/// The Bash float's header is plain text (no `# `), highlighted as a
/// header; only the command's rows are shell.
#[nvim_oxi::test]
fn the_bash_float_header_is_no_shell_comment() -> Result<(), String> {
    lua_test(
        r###"
        vim.cmd("syntax on")
        local dir = T.project()
        vim.cmd.cd(dir)
        T.setup(dir)
        local seen
        vim.api.nvim_create_autocmd("User", {
          pattern = "LathePermissionAsk",
          once = true,
          callback = function()
            local buf = vim.api.nvim_get_current_buf()
            local lines = T.lines(buf)
            local function name(row, col)
              return vim.fn.synIDattr(vim.fn.synID(row, col, 1), "name")
            end
            local cmd_row
            for i, l in ipairs(lines) do
              if l == "touch 'hi there'" then cmd_row = i end
            end
            seen = { lines = lines, filetype = vim.bo[buf].filetype, header = name(1, 1),
              command = cmd_row and name(cmd_row, 9) or "no command row" }
            vim.api.nvim_feedkeys("n", "x", false)
          end,
        })
        -- A command that may change files: it asks.
        T.tool("Bash", { command = "touch 'hi there'" })
        T.eq("asked", seen ~= nil, true)
        for i, l in ipairs(seen.lines) do
          T.eq("row " .. i .. " is no comment", vim.startswith(l, "#"), false)
        end
        T.has("the header", seen.lines[1], "Asks because: ")
        T.eq("no shell filetype", seen.filetype, "")
        T.eq("the header is no shell", seen.header, "")
        T.eq("the command is shell: " .. seen.command, vim.startswith(seen.command, "sh"), true)
        "###,
    )
}
