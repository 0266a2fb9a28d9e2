//! The chat's lines around a running turn (`:help lathe-queue`): messages
//! queued while lathe works (under the chat, then the user's where the
//! model got them, or back in the prompt area), the working line naming
//! the stop key, only the waiting line while an ask waits, the empty
//! chat's hint, no half-folded view after a result.

use lathe_core::events::{AgentEvent, ToolStatus, TurnOutcome};
use serde_json::json;

use crate::common::{check_eq, load, lua_test};

fn ev(e: AgentEvent) {
    lathe::ui::chat::render(vec![e]);
}

fn chat_lines() -> Vec<String> {
    lathe::ui::chat::chat_buffer()
        .map(|b| crate::common::lines(&b))
        .unwrap_or_default()
}

fn notes() -> Result<Vec<String>, String> {
    let lua = lathe::host::lua_handle::lua();
    lua_test("NOTES = T.chat_virt_texts()")?;
    lua_test("INLINE = T.chat_inline_texts()")?;
    let inline = lua
        .load("return INLINE")
        .eval::<Vec<String>>()
        .map_err(|e| e.to_string())?;
    if !inline.is_empty() {
        return Err(format!("notes glued to a chat line: {inline:?}"));
    }
    lua.load("return NOTES")
        .eval::<Vec<String>>()
        .map_err(|e| e.to_string())
}

#[nvim_oxi::test]
fn the_empty_chat_shows_how_to_ask() -> Result<(), String> {
    load();
    lathe::ui::chat::open_window()?;
    check_eq(
        "hint",
        notes()?,
        lathe::ui::chat::lines::EMPTY_CHAT_HINT
            .iter()
            .map(|l| l.to_string())
            .collect::<Vec<_>>(),
    )?;
    ev(AgentEvent::TurnStarted {
        prompt: "go".into(),
    });
    check_eq(
        "the working line replaces it",
        notes()?,
        vec!["lathe is working… (<C-c> stops)".to_string()],
    )
}

/// The working line names the key that stops the turn; while an ask waits
/// only "waiting for you" shows.
#[nvim_oxi::test]
fn the_working_line_names_the_stop_key_and_gives_way_to_the_waiting_line() -> Result<(), String> {
    load();
    ev(AgentEvent::TurnStarted {
        prompt: "go".into(),
    });
    ev(AgentEvent::AssistantStarted);
    ev(AgentEvent::TextDelta {
        text: "All three tests fail. Let me look at the cart an".into(),
    });
    check_eq(
        "working",
        notes()?,
        vec!["lathe is working… (<C-c> stops)".to_string()],
    )?;
    lathe::ui::chat::set_waiting(Some("waiting for you: Bash: make (:Lathe review)"));
    check_eq(
        "only waiting",
        notes()?,
        vec!["waiting for you: Bash: make (:Lathe review)".to_string()],
    )?;
    lathe::ui::chat::set_waiting(None);
    lathe::ui::chat::set_stop_key(None);
    ev(AgentEvent::TextDelta { text: "d".into() });
    check_eq(
        "no global key",
        notes()?,
        vec!["lathe is working… (<C-c> in the chat stops)".to_string()],
    )?;
    lathe::ui::chat::set_stop_key(Some("<C-c>"));
    ev(AgentEvent::TurnEnded {
        outcome: TurnOutcome::Done,
    });
    check_eq("none after the turn", notes()?, Vec::<String>::new())
}

/// Queued messages show under the chat, dimmed, until the model gets them;
/// then the chat shows them as the user's, where the model got them.
#[nvim_oxi::test]
fn queued_messages_show_until_sent_then_as_the_users() -> Result<(), String> {
    load();
    ev(AgentEvent::TurnStarted {
        prompt: "fix the tests".into(),
    });
    ev(AgentEvent::AssistantStarted);
    ev(AgentEvent::TextDelta {
        text: "Running them.".into(),
    });
    ev(AgentEvent::Queued {
        messages: vec!["also update\nthe README".into(), "and the changelog".into()],
    });
    check_eq(
        "queued",
        notes()?,
        vec![
            "lathe is working… (<C-c> stops)".to_string(),
            "queued: also update ⏎ the README".to_string(),
            "queued: and the changelog".to_string(),
        ],
    )?;
    lathe::ui::chat::render(vec![
        AgentEvent::QueuedSent {
            text: "also update\nthe README\n\nand the changelog".into(),
        },
        AgentEvent::Queued { messages: vec![] },
        AgentEvent::AssistantStarted,
        AgentEvent::TextDelta {
            text: "Will do.".into(),
        },
    ]);
    let lines = chat_lines();
    let from = lines
        .iter()
        .position(|l| l == "Running them.")
        .ok_or("no text")?;
    check_eq(
        "the user's message",
        lines[from..].to_vec(),
        [
            "Running them.",
            "",
            "## You",
            "",
            "also update",
            "the README",
            "",
            "and the changelog",
            "",
            "## lathe",
            "",
            "Will do.",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>(),
    )?;
    check_eq(
        "queued lines gone",
        notes()?,
        vec!["lathe is working… (<C-c> stops)".to_string()],
    )
}

/// A queued message the model never got goes back into the prompt area,
/// before what is typed there.
#[nvim_oxi::test]
fn a_returned_message_goes_back_into_the_prompt_area() -> Result<(), String> {
    load();
    lathe::ui::chat::open_window()?;
    let mut p = lathe::ui::chat::prompt::buffer()?;
    p.set_lines(.., false, ["typed meanwhile"])
        .map_err(|e| e.to_string())?;
    ev(AgentEvent::TurnStarted {
        prompt: "go".into(),
    });
    lathe::ui::chat::render(vec![
        AgentEvent::Queued { messages: vec![] },
        AgentEvent::TurnEnded {
            outcome: TurnOutcome::Stopped,
        },
        AgentEvent::QueuedReturned {
            text: "also this".into(),
        },
    ]);
    check_eq(
        "prompt",
        lathe::ui::chat::prompt::text(),
        "also this\ntyped meanwhile".to_string(),
    )
}

/// After a tool's result is folded under its line, an unfocused chat
/// window that follows the answer starts its view at no line inside a
/// closed fold and leaves no rows empty under the end while lines above
/// could fill them, frame after frame.
#[nvim_oxi::test]
fn a_folded_result_leaves_no_half_folded_view() -> Result<(), String> {
    load();
    lathe::ui::chat::open_window()?;
    let check = |what: &str| -> Result<(), String> {
        lua_test(&format!(
            "local b = T.chat_buf()
            for _, w in ipairs(vim.fn.win_findbuf(b)) do
              local info = vim.fn.getwininfo(w)[1]
              local top = info.topline
              local fold = vim.api.nvim_win_call(w, function() return vim.fn.foldclosed(top) end)
              T.eq('{what}: topline ' .. top .. ' not inside a fold', fold == -1 or fold == top, true)
              local n = vim.api.nvim_buf_line_count(b)
              local rows = vim.api.nvim_win_text_height(w, {{ start_row = top - 1, end_row = n - 1 }}).all
              T.eq('{what}: the view is full (top ' .. top .. ', rows ' .. rows .. ', n ' .. n .. ', height ' .. vim.api.nvim_win_get_height(w) .. ', cursor ' .. vim.api.nvim_win_get_cursor(w)[1] .. ', winheight ' .. vim.fn.winheight(w) .. ', winbar ' .. info.winbar .. ', botline ' .. info.botline .. ')', top == 1 or rows >= vim.fn.winheight(w) - 1, true)
            end"
        ))
    };
    ev(AgentEvent::TurnStarted {
        prompt: "go".into(),
    });
    ev(AgentEvent::AssistantStarted);
    let text: String = (1..=60).map(|i| format!("Paragraph {i}.\n\n")).collect();
    ev(AgentEvent::TextDelta { text });
    ev(AgentEvent::ToolStarted {
        id: "t1".into(),
        name: "Bash".into(),
        detail: "make".into(),
        input: json!({"command": "make"}),
    });
    check("running")?;
    let out: String = (1..=80).map(|i| format!("inside-fold-{i}\n")).collect();
    lathe::ui::chat::render(vec![
        AgentEvent::ToolFinished {
            id: "t1".into(),
            name: "Bash".into(),
            status: ToolStatus::Done,
            summary: "exit 0".into(),
            content: out,
            display: None,
        },
        AgentEvent::AssistantStarted,
        AgentEvent::TextDelta {
            text: "All three tests fail. Let me look".into(),
        },
    ]);
    check("result folded")?;
    for (i, chunk) in [" at the cart", " and pricing code.\n", "More."]
        .iter()
        .enumerate()
    {
        ev(AgentEvent::TextDelta {
            text: chunk.to_string(),
        });
        check(&format!("chunk {i}"))?;
    }
    Ok(())
}
