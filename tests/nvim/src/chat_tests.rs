//! The chat window: `:Lathe {prompt}` opens `lathe://chat`, shows the
//! prompt, the API error as a marked notice and the turn's end, and leaves
//! no "working" indicator behind.

use std::time::Duration;

use nvim_oxi::tests::TestTerminator;

use crate::common::{check_eq, load, lua_test, run_async};

#[nvim_oxi::test]
fn ask_with_an_unreachable_model_shows_the_error_and_ends_the_turn(t: TestTerminator) {
    let main = load();
    let lua = lathe::host::lua_handle::lua();
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    // Nothing listens on port 9 (discard) on loopback: the request fails fast
    // (no retries, so the error ends the turn at once).
    lua.load(format!(
        r#"vim.opt.rtp:prepend({root:?})
        vim.cmd("runtime plugin/lathe.lua")
        require("lathe").setup({{ base_url = "http://127.0.0.1:9", max_retries = 0 }})
        vim.cmd("Lathe say hello")"#
    ))
    .exec()
    .expect("ask");
    run_async(t, async move {
        let mut last = String::new();
        for _ in 0..200 {
            tokio::time::sleep(Duration::from_millis(25)).await;
            let (state, text, working, listed, ft) = main
                .run(|| {
                    let lua = lathe::host::lua_handle::lua();
                    let (state,): (String,) = lua.load("return require('lathe').status().state").eval().unwrap();
                    let buf = lathe::ui::chat::chat_buffer();
                    let text = buf
                        .as_ref()
                        .map(|b| crate::common::lines(b).join("\n"))
                        .unwrap_or_default();
                    let (listed, ft): (bool, String) = lua
                        .load("local b = vim.fn.bufnr('lathe://chat'); return vim.bo[b].buflisted, vim.bo[b].filetype")
                        .eval()
                        .unwrap_or((true, String::new()));
                    (state, text, lathe::ui::chat::working_indicator_shown(), listed, ft)
                })
                .await
                .map_err(|e| e.to_string())?;
            last = text.clone();
            if state == "idle" && text.contains("*(error") {
                check_eq("working indicator left", working, false)?;
                check_eq("chat listed", listed, false)?;
                check_eq("chat filetype", ft.as_str(), "markdown")?;
                for want in ["## You", "say hello", "## lathe", "> **error:**"] {
                    if !text.contains(want) {
                        return Err(format!("chat lacks {want:?}:\n{text}"));
                    }
                }
                return Ok(());
            }
        }
        Err(format!(
            "the turn did not end with an error in the chat:\n{last}"
        ))
    });
}

#[nvim_oxi::test]
fn tool_lines_are_updated_in_place_and_no_indicator_is_left() -> Result<(), String> {
    use lathe_core::events::{AgentEvent, ToolStatus, TurnOutcome};
    load();
    let ev = |e: AgentEvent| lathe::ui::chat::render(vec![e]);
    ev(AgentEvent::TurnStarted {
        prompt: "fix it".into(),
    });
    ev(AgentEvent::AssistantStarted);
    ev(AgentEvent::TextDelta {
        text: "Let me ".into(),
    });
    ev(AgentEvent::TextDelta {
        text: "look.".into(),
    });
    ev(AgentEvent::ToolStarted {
        id: "t1".into(),
        name: "Grep".into(),
        detail: "Helo".into(),
        input: serde_json::Value::Null,
    });
    ev(AgentEvent::ToolStarted {
        id: "t2".into(),
        name: "Read".into(),
        detail: "greeting.py".into(),
        input: serde_json::Value::Null,
    });
    if !lathe::ui::chat::working_indicator_shown() {
        return Err("no working indicator while the turn runs".into());
    }
    ev(AgentEvent::ToolFinished {
        id: "t1".into(),
        name: "Grep".into(),
        status: ToolStatus::Done,
        summary: "1 file".into(),
        content: String::new(),
        display: None,
    });
    ev(AgentEvent::TextDelta {
        text: "Found it.".into(),
    });
    ev(AgentEvent::TurnEnded {
        outcome: TurnOutcome::Stopped,
    });
    let buf = lathe::ui::chat::chat_buffer().ok_or("no chat buffer")?;
    let text = crate::common::lines(&buf).join("\n");
    let want = "## You\n\nfix it\n\n## lathe\n\nLet me look.\n\n- Grep(Helo): done — 1 file\n- Read(greeting.py): interrupted\n\nFound it.\n\n*(stopped)*\n";
    check_eq("chat text", text.as_str(), want)?;
    check_eq(
        "working indicator",
        lathe::ui::chat::working_indicator_shown(),
        false,
    )
}

/// A withdrawn answer is gone from the buffer (only the withdrawn line
/// stays), the retried answer shows once, and the turn's end line carries
/// its token counts.
#[nvim_oxi::test]
fn a_withdrawn_answer_leaves_the_chat_and_the_end_line_shows_tokens() -> Result<(), String> {
    use lathe_core::events::{AgentEvent, TurnOutcome};
    use lathe_core::protocol::Usage;
    load();
    let ev = |e: AgentEvent| lathe::ui::chat::render(vec![e]);
    ev(AgentEvent::TurnStarted {
        prompt: "hi".into(),
    });
    ev(AgentEvent::AssistantStarted);
    ev(AgentEvent::TextDelta {
        text: "partial answer that ".into(),
    });
    ev(AgentEvent::TextDelta {
        text: "breaks\nover two lines".into(),
    });
    ev(AgentEvent::AssistantWithdrawn {
        reason: "overloaded_error: Overloaded".into(),
    });
    ev(AgentEvent::Notice {
        text: "retrying in 0.4s (attempt 2 of 5): overloaded_error: Overloaded".into(),
        is_error: false,
    });
    ev(AgentEvent::AssistantStarted);
    ev(AgentEvent::TextDelta {
        text: "The real answer.".into(),
    });
    let usage = |input, output, read| Usage {
        input_tokens: Some(input),
        output_tokens: Some(output),
        cache_read_input_tokens: Some(read),
        cache_creation_input_tokens: Some(0),
        output_estimated: false,
    };
    ev(AgentEvent::Usage {
        turn: usage(250, 45, 1000),
        session: usage(12_000, 3_456, 2_000_000),
    });
    ev(AgentEvent::TurnEnded {
        outcome: TurnOutcome::Done,
    });
    let buf = lathe::ui::chat::chat_buffer().ok_or("no chat buffer")?;
    let text = crate::common::lines(&buf).join("\n");
    for gone in ["partial answer", "over two lines"] {
        if text.contains(gone) {
            return Err(format!(
                "the withdrawn text {gone:?} is still shown:\n{text}"
            ));
        }
    }
    for want in [
        "~~answer withdrawn~~",
        "> **note:** retrying in 0.4s (attempt 2 of 5)",
        "*(done)* tokens: 1.2k in (1.0k from cache), 45 out · session 2.0M in (2.0M from cache), 3.5k out",
    ] {
        if !text.contains(want) {
            return Err(format!("chat lacks {want:?}:\n{text}"));
        }
    }
    check_eq(
        "the retried answer shows once",
        text.matches("The real answer.").count(),
        1,
    )
}

/// A tool line updated several times (running → waiting for you → running
/// → done) stays one line, and the answer's text after it starts on a
/// line of its own. The smallest input that showed the bug: the last tool
/// line of the chat updated twice.
#[nvim_oxi::test]
fn a_tool_line_updated_many_times_stays_one_line() -> Result<(), String> {
    use lathe_core::events::{AgentEvent, ToolStatus, TurnOutcome};
    load();
    let ev = |e: AgentEvent| lathe::ui::chat::render(vec![e]);
    ev(AgentEvent::TurnStarted {
        prompt: "fix".into(),
    });
    ev(AgentEvent::AssistantStarted);
    ev(AgentEvent::ToolStarted {
        id: "t1".into(),
        name: "Edit".into(),
        detail: "greeting.py".into(),
        input: serde_json::Value::Null,
    });
    let ask = [("Edit".to_string(), "Edit greeting.py".to_string())];
    lathe::ui::chat::set_tools_waiting(&ask);
    lathe::ui::chat::set_tools_waiting(&[]);
    lathe::ui::chat::set_tools_waiting(&ask);
    lathe::ui::chat::set_tools_waiting(&[]);
    ev(AgentEvent::ToolFinished {
        id: "t1".into(),
        name: "Edit".into(),
        status: ToolStatus::Done,
        summary: "1 replacement".into(),
        content: String::new(),
        display: None,
    });
    ev(AgentEvent::TextDelta {
        text: "Fixed.".into(),
    });
    ev(AgentEvent::TurnEnded {
        outcome: TurnOutcome::Done,
    });
    let buf = lathe::ui::chat::chat_buffer().ok_or("no chat buffer")?;
    let text = crate::common::lines(&buf).join("\n");
    check_eq(
        "chat text",
        text.as_str(),
        "## You\n\nfix\n\n## lathe\n\n- Edit(greeting.py): done — 1 replacement\n\nFixed.\n\n*(done)*\n",
    )
}

/// A frame's worth of streamed text is one edit of `lathe://chat` however
/// small the deltas: 500 deltas of 8 characters (some with line breaks)
/// rendered in one frame move `b:changedtick` once, and the text is whole.
#[nvim_oxi::test]
fn many_small_deltas_in_one_frame_are_one_buffer_edit() -> Result<(), String> {
    use lathe_core::events::AgentEvent;
    load();
    let render = lathe::ui::chat::render;
    render(vec![AgentEvent::TurnStarted {
        prompt: "stream".into(),
    }]);
    render(vec![AgentEvent::AssistantStarted]);
    let buf = lathe::ui::chat::chat_buffer().ok_or("no chat buffer")?;
    let tick = || buf.get_changedtick().map_err(|e| e.to_string());
    let before = tick()?;
    let pieces: Vec<String> = (0..500)
        .map(|i| {
            if i % 50 == 49 {
                "1234567\n".to_string()
            } else {
                format!("{:08}", i)
            }
        })
        .collect();
    render(
        pieces
            .iter()
            .map(|p| AgentEvent::TextDelta { text: p.clone() })
            .collect(),
    );
    check_eq("buffer edits for one frame of deltas", tick()? - before, 1)?;
    let text = crate::common::lines(&buf).join("\n");
    if !text.ends_with(&pieces.concat()) {
        return Err(format!(
            "the streamed text is not whole at the end of:\n{text}"
        ));
    }
    Ok(())
}

/// Streaming never reads the transcript back (the main loop's
/// cost of a frame must not grow with the answer): 200 frames of deltas
/// growing one line to 200 KB are 200 edits and no read of a line, and the
/// text is whole. The chat remembers where the buffer ends.
#[nvim_oxi::test]
fn streaming_frames_append_without_reading_the_growing_line_back() -> Result<(), String> {
    use lathe_core::events::AgentEvent;
    load();
    let render = lathe::ui::chat::render;
    render(vec![AgentEvent::TurnStarted {
        prompt: "stream".into(),
    }]);
    render(vec![AgentEvent::AssistantStarted]);
    render(vec![AgentEvent::TextDelta {
        text: "start ".into(),
    }]);
    let buf = lathe::ui::chat::chat_buffer().ok_or("no chat buffer")?;
    let piece = "x".repeat(1000);
    let reads = lathe::ui::chat::reads();
    let (_, edits) = lathe::ui::chat::edit_counts();
    for _ in 0..200 {
        render(vec![AgentEvent::TextDelta {
            text: piece.clone(),
        }]);
    }
    check_eq(
        "transcript lines read back while streaming",
        lathe::ui::chat::reads() - reads,
        0,
    )?;
    check_eq(
        "transcript edits for 200 frames",
        lathe::ui::chat::edit_counts().1 - edits,
        200,
    )?;
    // The 200 KB line goes on in chat lines of at most 4 KiB
    // (`:help lathe-chat-long-lines`); joined, they are the streamed text.
    let lines = crate::common::lines(&buf);
    let start = lines
        .iter()
        .position(|l| l.starts_with("start "))
        .ok_or("no streamed line")?;
    check_eq(
        "the streamed line's length",
        lines[start..].concat().len(),
        6 + 200 * 1000,
    )?;
    // Anything else that changes the buffer is noticed: the end is read
    // once again and the next delta still lands at the very end (here a
    // clear, which also gives the chat a new buffer).
    lathe::ui::chat::clear();
    check_eq("the old chat buffer is wiped", buf.is_valid(), false)?;
    render(vec![AgentEvent::TextDelta {
        text: "after".into(),
    }]);
    let buf = lathe::ui::chat::chat_buffer().ok_or("no chat buffer")?;
    check_eq(
        "the chat after a clear",
        crate::common::lines(&buf).join("\n").as_str(),
        "after",
    )
}

/// A `User` event lathe fires (here `LatheTurnStart`) has the statuslines
/// redrawn in a step of their own, after lathe's: `:redrawstatus` inside
/// it redrew the whole screen, chat and tree-sitter included, as part of
/// lathe's step. A decoration provider's `on_start` counts
/// screen updates; the autocmd queues a callback that runs right after
/// lathe's step, before the statusline redraw lathe queued.
#[nvim_oxi::test]
fn a_user_event_redraws_no_screen_inside_lathes_step() -> Result<(), String> {
    use std::sync::Arc;

    use lathe::ui::status_sink::{LiveStatus, StatusSink};
    use lathe_core::events::{AgentEvent, EventSink};

    struct Nothing;
    impl EventSink for Nothing {
        fn emit(&self, _: AgentEvent) {}
    }

    let main = load();
    crate::common::lua_test(
        r#"
        REDRAWS, FIRED_AT, AFTER_STEP = 0, nil, nil
        vim.api.nvim_set_decoration_provider(vim.api.nvim_create_namespace("redraws"), {
          on_start = function() REDRAWS = REDRAWS + 1 end,
        })
        vim.api.nvim_create_autocmd("User", {
          pattern = "LatheTurnStart",
          callback = function()
            FIRED_AT = REDRAWS
            vim.schedule(function() AFTER_STEP = REDRAWS end)
          end,
        })
        "#,
    )?;
    let sink = StatusSink::new(Arc::new(Nothing), Arc::new(LiveStatus::default()), main);
    sink.emit(AgentEvent::TurnStarted {
        prompt: "hello".into(),
    });
    crate::common::lua_test(
        r#"
        T.eq("the event fired", vim.wait(5000, function() return AFTER_STEP ~= nil end, 5), true)
        T.eq("screen updates inside lathe's step", AFTER_STEP - FIRED_AT, 0)
        vim.wait(50)
        T.eq("the statuslines are redrawn after it", REDRAWS - FIRED_AT, 1)
        "#,
    )
}

/// Each turn is highlighted on its own (`:help lathe-chat-highlighting`):
/// while an answer streams its turn is parsed again at every
/// frame as long as its text is at most 16 KiB; past that its highlighting
/// pauses until the turn ends, when all of it is highlighted (in steps). A
/// turn that starts in a long chat is highlighted while it streams (the
/// chat's length does not matter), and the chat never has a tree-sitter
/// highlighter of its own (Neovim's would parse the whole day's chat).
#[nvim_oxi::test]
fn highlighting_follows_the_turn_not_the_chat() -> Result<(), String> {
    use lathe_core::events::{AgentEvent, TurnOutcome};
    load();
    let render = lathe::ui::chat::render;
    render(vec![AgentEvent::TurnStarted {
        prompt: "stream".into(),
    }]);
    render(vec![AgentEvent::AssistantStarted]);
    render(vec![AgentEvent::TextDelta {
        text: "A **short** answer.\n".into(),
    }]);
    lua_test("T.eq('bold while a short turn streams', T.any_starts(T.chat_hl('short'), '@markup.strong'), true)")?;
    check_eq("paused", lathe::ui::chat::highlighting_paused(), false)?;
    let long = "A line of a long answer, streamed in small pieces.\n".repeat(400);
    render(vec![AgentEvent::TextDelta {
        text: format!("{long}The **long** answer ends.\n"),
    }]);
    check_eq("paused", lathe::ui::chat::highlighting_paused(), true)?;
    lua_test("T.eq('not yet', T.any_starts(T.chat_hl('long**'), '@markup.strong'), false)")?;
    render(vec![AgentEvent::TurnEnded {
        outcome: TurnOutcome::Done,
    }]);
    check_eq("paused", lathe::ui::chat::highlighting_paused(), false)?;
    lua_test(
        "T.eq('bold at the end of the long turn once it ended', vim.wait(5000, function()
           return T.any_starts(T.chat_hl('long**'), '@markup.strong')
         end), true)",
    )?;
    render(vec![AgentEvent::TurnStarted {
        prompt: "again".into(),
    }]);
    render(vec![AgentEvent::AssistantStarted]);
    render(vec![AgentEvent::TextDelta {
        text: "Another **brief** one.\n".into(),
    }]);
    check_eq(
        "paused in a long chat",
        lathe::ui::chat::highlighting_paused(),
        false,
    )?;
    lua_test(
        "T.eq('bold while a short turn streams in a long chat', T.any_starts(T.chat_hl('brief'), '@markup.strong'), true)
         T.eq('no tree-sitter highlighter on the chat', vim.treesitter.highlighter.active[T.chat_buf()], nil)",
    )?;
    render(vec![AgentEvent::TurnEnded {
        outcome: TurnOutcome::Done,
    }]);
    Ok(())
}

/// A frame of streamed text leaves the winbar alone (the UI row
/// of `make bench`): setting 'winbar' makes Neovim redraw every window's
/// status line and winbar, and every frame set it to the same text. It is
/// set when it changes: the turn's end sets "idle" once.
#[nvim_oxi::test]
fn streaming_frames_leave_the_winbar_alone() -> Result<(), String> {
    use lathe_core::events::{AgentEvent, TurnOutcome};
    load();
    let render = lathe::ui::chat::render;
    render(vec![AgentEvent::TurnStarted {
        prompt: "stream".into(),
    }]);
    lathe::ui::chat::open_window()?;
    render(vec![AgentEvent::AssistantStarted]);
    render(vec![AgentEvent::TextDelta {
        text: "start ".into(),
    }]);
    let sets = lathe::ui::chat::winbar_sets();
    for _ in 0..20 {
        render(vec![AgentEvent::TextDelta {
            text: "more of the answer ".into(),
        }]);
    }
    check_eq(
        "winbar sets for 20 frames of text",
        lathe::ui::chat::winbar_sets() - sets,
        0,
    )?;
    render(vec![AgentEvent::TurnEnded {
        outcome: TurnOutcome::Done,
    }]);
    check_eq(
        "winbar sets at the turn's end",
        lathe::ui::chat::winbar_sets() - sets,
        1,
    )?;
    let bar = lathe::host::lua_handle::lua()
        .load("return vim.wo[vim.fn.bufwinid('lathe://chat')].winbar")
        .eval::<String>()
        .map_err(|e| e.to_string())?;
    check_eq("the winbar says idle", bar.contains(" · idle"), true)
}

/// Bytes of chat text the highlighter has parsed so far.
fn parsed_bytes() -> Result<i64, String> {
    lathe::host::lua_handle::lua()
        .load("return require('lathe.chat_highlight').parsed_bytes")
        .eval::<i64>()
        .map_err(|e| e.to_string())
}

/// A turn's end parses that turn, never the chat (a day's chat
/// was parsed again at every turn's end, 100 ms in one piece and ~80
/// bytes of trees per byte of chat): after a 100 KB answer, a short turn
/// costs the parse of its own few lines, frames and end together.
#[nvim_oxi::test]
fn a_short_turn_in_a_long_chat_parses_only_itself() -> Result<(), String> {
    use lathe_core::events::{AgentEvent, TurnOutcome};
    load();
    let render = lathe::ui::chat::render;
    let lua = lathe::host::lua_handle::lua();
    render(vec![AgentEvent::TurnStarted {
        prompt: "long".into(),
    }]);
    render(vec![AgentEvent::AssistantStarted]);
    let words = "Some *markdown* text with `code` and a [link](x) ";
    render(vec![AgentEvent::TextDelta {
        text: format!("{}\n", words.repeat(100 * 1024 / words.len())),
    }]);
    render(vec![AgentEvent::TurnEnded {
        outcome: TurnOutcome::Done,
    }]);
    lua.load(
        "vim.wait(5000, function() return require('lathe.chat_highlight').queued == 0 end, 10)",
    )
    .exec()
    .map_err(|e| e.to_string())?;
    let before = parsed_bytes()?;
    render(vec![AgentEvent::TurnStarted {
        prompt: "short".into(),
    }]);
    render(vec![AgentEvent::AssistantStarted]);
    render(vec![AgentEvent::TextDelta {
        text: "A short answer.\n".into(),
    }]);
    render(vec![AgentEvent::TurnEnded {
        outcome: TurnOutcome::Done,
    }]);
    let cost = parsed_bytes()? - before;
    check_eq(
        &format!("bytes parsed for the short turn ({cost})"),
        cost > 0 && cost < 2000,
        true,
    )
}

/// A frame highlights what is new in the running turn, not the whole turn
/// again (at the end of a day, every request's frame parsed its
/// whole turn, and Neovim's CPU per request grew 1 -> 6-11 ms): over 60
/// frames of a paragraph each, the bytes parsed stay within a few times the
/// turn's text (they were the sum of every prefix), and an early
/// paragraph keeps its highlights while later ones arrive.
#[nvim_oxi::test]
fn a_frame_highlights_what_is_new_in_the_running_turn() -> Result<(), String> {
    use lathe_core::events::{AgentEvent, TurnOutcome};
    load();
    let render = lathe::ui::chat::render;
    let lua = lathe::host::lua_handle::lua();
    render(vec![AgentEvent::TurnStarted {
        prompt: "many paragraphs".into(),
    }]);
    render(vec![AgentEvent::AssistantStarted]);
    let before = parsed_bytes()?;
    let mut text = 0;
    for k in 0..60 {
        let para = format!("Paragraph {k} has *emphasis* and `code` in it.\n\n");
        text += para.len();
        render(vec![AgentEvent::TextDelta { text: para }]);
    }
    let cost = parsed_bytes()? - before;
    let ok = usize::try_from(cost).unwrap_or(0) < 4 * text;
    check_eq(
        &format!("bytes parsed over 60 frames ({cost}) vs the turn's text ({text})"),
        ok,
        true,
    )?;
    // The first paragraph's emphasis is still highlighted.
    let first_emphasis = lua
        .load(
            r#"
            local buf = vim.fn.bufnr("lathe://chat")
            local ns = require("lathe.chat_highlight").ns
            local row
            for i, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
              if l:find("Paragraph 0 ", 1, true) then
                row = i - 1
                break
              end
            end
            for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, { row, 0 }, { row, -1 }, { details = true })) do
              if m[4].hl_group:find("emphasis") or m[4].hl_group:find("italic") then
                return true
              end
            end
            return false
            "#,
        )
        .eval::<bool>()
        .map_err(|e| e.to_string())?;
    check_eq(
        "the first paragraph keeps its emphasis",
        first_emphasis,
        true,
    )?;
    render(vec![AgentEvent::TurnEnded {
        outcome: TurnOutcome::Done,
    }]);
    Ok(())
}

/// One over-long streamed line (200 KB, no newline) never
/// becomes one chat line: Neovim measures, draws and parses a line as a
/// whole on every redraw, so the chat goes on in new lines of at most
/// `HARD_LINE_BYTES`, each marked with the `↪` sign, nothing removed (the
/// lines joined give the answer back). Each frame is still one edit and
/// reads nothing back, and a window following the chat ends at the end of
/// the last line, so it shows the newest text. Prose breaks at words; text
/// without spaces (minified code) at the bound.
#[nvim_oxi::test]
fn an_over_long_streamed_line_goes_on_in_marked_lines_of_bounded_length() -> Result<(), String> {
    use lathe::ui::chat::lines::CONTINUED_SIGN;
    use lathe_core::events::AgentEvent;
    // The longest chat line of streamed text (`:help lathe-chat-long-lines`
    // says 4 KiB), written out so a bound raised or dropped fails here.
    const HARD_LINE_BYTES: usize = 4 * 1024;
    load();
    let render = lathe::ui::chat::render;
    lathe::ui::chat::open_window()?;
    render(vec![AgentEvent::TurnStarted {
        prompt: "stream".into(),
    }]);
    render(vec![AgentEvent::AssistantStarted]);
    let buf = lathe::ui::chat::chat_buffer().ok_or("no chat buffer")?;
    let win = nvim_oxi::api::list_wins()
        .find(|w| w.get_buf().is_ok_and(|b| b == buf))
        .ok_or("no chat window")?;
    let mut w = win.clone();
    let n = buf.line_count().map_err(|e| e.to_string())?;
    w.set_cursor(n, 0).map_err(|e| e.to_string())?;
    for (kind, piece) in [
        (
            "prose",
            "lathe streams this answer in small deltas ".repeat(24),
        ),
        ("no spaces", "{\"k\":[1,2,3]}".repeat(77)),
    ] {
        let first = buf.line_count().map_err(|e| e.to_string())? - 1;
        let reads = lathe::ui::chat::reads();
        let (_, edits) = lathe::ui::chat::edit_counts();
        let continued = lathe::ui::chat::continued_lines();
        let mut answer = String::new();
        for _ in 0..200 {
            answer.push_str(&piece);
            render(vec![AgentEvent::TextDelta {
                text: piece.clone(),
            }]);
        }
        check_eq(
            &format!("{kind}: edits for 200 frames"),
            lathe::ui::chat::edit_counts().1 - edits,
            200,
        )?;
        check_eq(
            &format!("{kind}: lines read back"),
            lathe::ui::chat::reads() - reads,
            0,
        )?;
        let lines = crate::common::lines(&buf);
        let longest = lines.iter().map(String::len).max().unwrap_or(0);
        if longest > HARD_LINE_BYTES {
            return Err(format!("{kind}: a chat line of {longest} bytes"));
        }
        let added = lathe::ui::chat::continued_lines() - continued;
        if (added as usize) < answer.len() / HARD_LINE_BYTES {
            return Err(format!("{kind}: only {added} added breaks"));
        }
        let shown = lines[first..].concat();
        check_eq(
            &format!("{kind}: the answer, breaks removed"),
            shown,
            answer,
        )?;
        let marked: usize = lathe::host::lua_handle::lua()
            .load(
                r#"local buf, first, sign = ...
                local ns = vim.api.nvim_create_namespace("lathe_chat")
                local n = 0
                for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, { first, 0 }, -1, { details = true })) do
                  if m[4].sign_text and vim.trim(m[4].sign_text) == sign then n = n + 1 end
                end
                return n"#,
            )
            .call((buf.handle(), first, CONTINUED_SIGN))
            .map_err(|e| e.to_string())?;
        check_eq(
            &format!("{kind}: lines marked ↪"),
            marked,
            lines.len() - 1 - first,
        )?;
        let n = buf.line_count().map_err(|e| e.to_string())?;
        let last = lines.last().map_or(0, String::len);
        check_eq(
            &format!("{kind}: the following window's cursor"),
            win.get_cursor().map_err(|e| e.to_string())?,
            (n, last - 1),
        )?;
        // The next answer starts on a line of its own.
        render(vec![AgentEvent::TextDelta { text: "\n".into() }]);
    }
    // A withdrawn answer takes its marks with it.
    render(vec![AgentEvent::AssistantWithdrawn {
        reason: "the stream broke off".into(),
    }]);
    let left: usize = lathe::host::lua_handle::lua()
        .load(
            r#"local buf, sign = ...
            local ns = vim.api.nvim_create_namespace("lathe_chat")
            local n = 0
            for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do
              if m[4].sign_text and vim.trim(m[4].sign_text) == sign then n = n + 1 end
            end
            return n"#,
        )
        .call((buf.handle(), CONTINUED_SIGN))
        .map_err(|e| e.to_string())?;
    check_eq("↪ marks left after the answer was withdrawn", left, 0)
}

/// A chat window that is not the current one follows an answer whose frame
/// starts on an empty last line (`nvim_buf_set_text` carries that window's
/// cursor to the new end without scrolling): after the frame it shows the
/// last line (`line("w$")`, computed from its topline), one scroll counted
/// by `view_fixes()`, and the working line under it. Frames after that,
/// with the view already right, cost no scroll.
#[nvim_oxi::test]
fn an_unfocused_chat_window_shows_the_last_line_after_every_frame() -> Result<(), String> {
    use lathe_core::events::AgentEvent;
    load();
    let render = lathe::ui::chat::render;
    let file = nvim_oxi::api::get_current_win();
    lathe::ui::chat::open_window()?;
    check_eq(
        "the cursor stays in the file window",
        nvim_oxi::api::get_current_win() == file,
        true,
    )?;
    render(vec![AgentEvent::TurnStarted {
        prompt: "stream".into(),
    }]);
    render(vec![AgentEvent::AssistantStarted]);
    let buf = lathe::ui::chat::chat_buffer().ok_or("no chat buffer")?;
    let win = nvim_oxi::api::list_wins()
        .find(|w| w.get_buf().is_ok_and(|b| b == buf))
        .ok_or("no chat window")?;
    let last_shown = || -> Result<(usize, usize), String> {
        let shown: usize = lathe::host::lua_handle::lua()
            .load(r#"return vim.fn.line("w$", ...)"#)
            .call(win.handle())
            .map_err(|e| e.to_string())?;
        Ok((shown, buf.line_count().map_err(|e| e.to_string())?))
    };
    let fixes = lathe::ui::chat::view_fixes();
    // The answer so far ends in an empty line; the next frame brings 300
    // paragraphs at once.
    render(vec![AgentEvent::TextDelta {
        text: "Intro.\n\n".into(),
    }]);
    let paragraphs: String = (1..=300).map(|i| format!("Paragraph {i}.\n\n")).collect();
    render(vec![AgentEvent::TextDelta { text: paragraphs }]);
    let (shown, n) = last_shown()?;
    check_eq("the last line shown after a long frame", shown, n)?;
    let after_long = lathe::ui::chat::view_fixes() - fixes;
    if after_long == 0 {
        return Err("the long frame needed a scroll, none was counted".into());
    }
    // Frames whose view is right already: no scroll, the end and the
    // working line under it still shown. Neovim's own scroll to the cursor
    // leaves the lines under the last one out, so a frame that makes the
    // last line a row taller costs one.
    let rows_of_last = |n: usize| -> Result<usize, String> {
        lathe::host::lua_handle::lua()
            .load(
                r#"local w, n = ...
                return vim.api.nvim_win_text_height(w, { start_row = n - 1, end_row = n - 1 }).all"#,
            )
            .call((win.handle(), n))
            .map_err(|e| e.to_string())
    };
    let fits = || -> Result<bool, String> {
        lathe::host::lua_handle::lua()
            .load(
                r#"local w = ...
                local top = vim.fn.line("w0", w)
                return vim.api.nvim_win_text_height(w, { start_row = top - 1 }).all
                  <= vim.api.nvim_win_get_height(w)"#,
            )
            .call(win.handle())
            .map_err(|e| e.to_string())
    };
    for i in 0..40 {
        let (_, n) = last_shown()?;
        let before = rows_of_last(n)?;
        let fixes = lathe::ui::chat::view_fixes();
        render(vec![AgentEvent::TextDelta {
            text: format!("word{i} "),
        }]);
        let (shown, n) = last_shown()?;
        check_eq(&format!("the last line shown after frame {i}"), shown, n)?;
        check_eq(
            &format!("the working line shown after frame {i}"),
            fits()?,
            true,
        )?;
        if rows_of_last(n)? == before {
            check_eq(
                &format!("scrolls for frame {i}, which added no row"),
                lathe::ui::chat::view_fixes() - fixes,
                0,
            )?;
        }
    }
    render(vec![AgentEvent::TurnEnded {
        outcome: lathe_core::events::TurnOutcome::Done,
    }]);
    let (shown, n) = last_shown()?;
    check_eq("the last line shown at the turn's end", shown, n)
}

/// A fresh user saw an unfocused chat sit scrolled past its end after a
/// turn of tool calls (the last lines at the top, rows empty below):
/// after every frame of such a turn the chat window shows its last line
/// and the working line under it, and no empty row below them while there
/// is text above to show.
#[nvim_oxi::test]
fn an_unfocused_chat_window_is_never_scrolled_past_its_end() -> Result<(), String> {
    use lathe_core::events::{AgentEvent, ToolStatus, TurnOutcome};
    load();
    let render = lathe::ui::chat::render;
    lathe::ui::chat::open_window()?;
    let buf = lathe::ui::chat::chat_buffer().ok_or("no chat buffer")?;
    let win = nvim_oxi::api::list_wins()
        .find(|w| w.get_buf().is_ok_and(|b| b == buf))
        .ok_or("no chat window")?;
    // (first line shown, last line shown, rows below the last line, lines)
    let view = || -> Result<(usize, usize, i64, usize), String> {
        let (top, bottom, empty): (usize, usize, i64) = lathe::host::lua_handle::lua()
            .load(
                r#"local w = ...
                local v = vim.api.nvim_win_call(w, function()
                  local n = vim.fn.line("$")
                  -- No end_row: the lines under the last one (the working
                  -- line) count.
                  local rows = vim.api.nvim_win_text_height(w, { start_row = vim.fn.line("w0") - 1 }).all
                  return { vim.fn.line("w0"), vim.fn.line("w$"), vim.fn.winheight(0) - rows }
                end)
                return v[1], v[2], v[3]"#,
            )
            .call(win.handle())
            .map_err(|e| e.to_string())?;
        Ok((
            top,
            bottom,
            empty,
            buf.line_count().map_err(|e| e.to_string())?,
        ))
    };
    let check = |when: &str| -> Result<(), String> {
        let (top, bottom, empty, n) = view()?;
        if bottom != n || (top > 1 && empty > 0) || (empty < 0 && top < n) {
            return Err(format!(
                "{when}: lines {top}..{bottom} of {n} shown, {empty} empty rows below (< 0: the lines under the end cut)"
            ));
        }
        Ok(())
    };
    for turn in 0..3 {
        render(vec![AgentEvent::TurnStarted {
            prompt: format!("read the files {turn}"),
        }]);
        render(vec![AgentEvent::AssistantStarted]);
        for i in 0..8 {
            let id = format!("t{turn}_{i}");
            render(vec![
                AgentEvent::TextDelta {
                    text: format!("Reading file {i}.\n"),
                },
                AgentEvent::ToolStarted {
                    id: id.clone(),
                    name: "Read".into(),
                    detail: format!("f{i}.txt"),
                    input: serde_json::Value::Null,
                },
            ]);
            render(vec![AgentEvent::ToolFinished {
                id,
                name: "Read".into(),
                status: ToolStatus::Done,
                summary: "60 lines".into(),
                content: (1..=60).map(|l| format!("{l:>6}\tline {l}\n")).collect(),
                display: None,
            }]);
            check(&format!("turn {turn}, after call {i}"))?;
        }
        render(vec![AgentEvent::TextDelta {
            text: "All read.".into(),
        }]);
        render(vec![AgentEvent::TurnEnded {
            outcome: TurnOutcome::Done,
        }]);
        check(&format!("turn {turn}, at its end"))?;
    }
    Ok(())
}
