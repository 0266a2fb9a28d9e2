//! The chat window: `:Lathe {prompt}` opens `lathe://chat`, shows the
//! prompt, the API error as a marked notice and the turn's end, and leaves
//! no "working" indicator behind.

use std::time::Duration;

use nvim_oxi::tests::TestTerminator;

use crate::common::{check_eq, load, run_async};

#[nvim_oxi::test]
fn ask_with_an_unreachable_model_shows_the_error_and_ends_the_turn(t: TestTerminator) {
    let main = load();
    let lua = lathe::nvim::state::lua();
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
                    let lua = lathe::nvim::state::lua();
                    let (state,): (String,) = lua.load("return (require('lathe').status())").eval().unwrap();
                    let buf = lathe::nvim::chat::chat_buffer();
                    let text = buf
                        .as_ref()
                        .map(|b| crate::common::lines(b).join("\n"))
                        .unwrap_or_default();
                    let (listed, ft): (bool, String) = lua
                        .load("local b = vim.fn.bufnr('lathe://chat'); return vim.bo[b].buflisted, vim.bo[b].filetype")
                        .eval()
                        .unwrap_or((true, String::new()));
                    (state, text, lathe::nvim::chat::working_indicator_shown(), listed, ft)
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
    use lathe::events::{AgentEvent, ToolStatus, TurnOutcome};
    load();
    let ev = |e: AgentEvent| lathe::nvim::chat::render(vec![e]);
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
    });
    ev(AgentEvent::ToolStarted {
        id: "t2".into(),
        name: "Read".into(),
        detail: "greeting.py".into(),
    });
    if !lathe::nvim::chat::working_indicator_shown() {
        return Err("no working indicator while the turn runs".into());
    }
    ev(AgentEvent::ToolFinished {
        id: "t1".into(),
        name: "Grep".into(),
        status: ToolStatus::Done,
        summary: "1 file".into(),
    });
    ev(AgentEvent::TextDelta {
        text: "Found it.".into(),
    });
    ev(AgentEvent::TurnEnded {
        outcome: TurnOutcome::Stopped,
    });
    let buf = lathe::nvim::chat::chat_buffer().ok_or("no chat buffer")?;
    let text = crate::common::lines(&buf).join("\n");
    let want = "## You\n\nfix it\n\n## lathe\n\nLet me look.\n- Grep(Helo): done — 1 file\n- Read(greeting.py): interrupted\nFound it.\n\n*(stopped)*\n";
    check_eq("chat text", text.as_str(), want)?;
    check_eq(
        "working indicator",
        lathe::nvim::chat::working_indicator_shown(),
        false,
    )
}
