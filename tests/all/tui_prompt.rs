//! The prompt area and the keys around a running turn, in a real terminal
//! (Neovim in tmux, the screen read with `tmux capture-pane`, the model
//! mock-llm, whose request log shows what lathe sent): every way into the
//! prompt area is Insert mode with a bar naming that mode's keys; `<C-c>`
//! in the code window stops the turn; sending brings the chat to the new
//! prompt; a message queued with `<C-s>` while lathe works reaches the
//! turn's next request, or is the next prompt when the turn ends first.
//! Skipped (with a message) where tmux is not installed.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support::tui;
use serde_json::{json, Value};
use tui::*;

/// The text of every user message of request `i` in mock-llm's log.
fn user_texts(server: &mock_llm::MockServer, i: usize) -> String {
    let requests = server.requests();
    let Some(body) = requests.get(i) else {
        return String::new();
    };
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A Neovim in tmux editing `main.py` of a fresh project, lathe set up
/// against mock-llm playing `responses`.
async fn start(
    tag: &str,
    responses: Value,
) -> (tempfile::TempDir, mock_llm::MockServer, String, Kill) {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().canonicalize().unwrap();
    std::fs::write(project.join("main.py"), "print('main')\n").unwrap();
    let script = json!({ "responses": responses }).to_string();
    let server = mock_llm::spawn(mock_llm::Script::from_json(&script).unwrap(), None)
        .await
        .unwrap();
    let init = dir.path().join("init.lua");
    std::fs::write(
        &init,
        tui::init_lua(&format!(
            r#"require("lathe").setup({{ cwd = {project:?}, base_url = {url:?}, claude_settings = false }})
vim.cmd("edit " .. vim.fn.fnameescape({file:?}))
"#,
            project = project.display().to_string(),
            url = server.url(),
            file = project.join("main.py").display().to_string(),
        )),
    )
    .unwrap();
    let name = start_nvim(tag, 160, 40, &init, "");
    let kill = Kill(name.clone());
    wait_for(&name, "Neovim shows the file", |s| {
        s.contains("print('main')")
    });
    (dir, server, name, kill)
}

fn text(t: &str) -> Value {
    json!({ "content": [ { "type": "text", "text": t } ] })
}

/// A slow answer: `t` a character every 30 ms.
fn slow(t: &str) -> Value {
    json!({ "content": [ { "type": "text", "text": t } ],
            "text_chunk_chars": 1, "event_delay_ms": 30 })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_way_into_the_prompt_area_is_insert_mode_with_its_keys_on_the_bar() {
    if !have_tmux() {
        return;
    }
    let (_dir, server, name, _kill) = start(
        "prompt-modes",
        json!([text("Noted."), text("Noted again.")]),
    )
    .await;
    // `:Lathe toggle` (as `<Plug>(lathe-toggle)`): typed text is text.
    keys(&name, ":Lathe toggle\r");
    wait_for(&name, "the Insert bar", |s| {
        s.contains("prompt · <C-s> send") && s.contains("-- INSERT --")
    });
    type_text(&name, "also add a changelog entry");
    keys(&name, "C-s");
    wait_for(&name, "the answer", |s| s.contains("Noted."));
    assert!(
        user_texts(&server, 0).contains("also add a changelog entry"),
        "the prompt arrived intact: {}",
        user_texts(&server, 0)
    );
    // Normal mode names its own key, and <CR> sends.
    keys(&name, "Escape");
    wait_for(&name, "the Normal bar", |s| {
        s.contains("prompt · <CR> send") && !s.contains("-- INSERT --")
    });
    // `:Lathe toggle` closes, `:Lathe` opens in Insert mode again.
    keys(&name, ":Lathe toggle\r");
    wait_for(&name, "the chat closed", |s| !s.contains("prompt · "));
    keys(&name, ":Lathe\r");
    wait_for(&name, "Insert again", |s| {
        s.contains("prompt · <C-s> send") && s.contains("-- INSERT --")
    });
    type_text(&name, "and a test");
    keys(&name, "Escape");
    keys(&name, "Enter");
    wait_for(&name, "the second answer", |s| s.contains("Noted again."));
    assert!(user_texts(&server, 1).contains("and a test"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_in_the_code_window_stops_the_turn() {
    if !have_tmux() {
        return;
    }
    let long = "word ".repeat(400);
    let (_dir, _server, name, _kill) = start("stop-key", json!([slow(&long)])).await;
    keys(&name, ":Lathe walk me through the code\r");
    wait_for(&name, "the working line", |s| {
        s.contains("lathe is working… (<C-c> stops)")
    });
    // The cursor is in the code window.
    keys(&name, "C-c");
    let s = wait_for(&name, "the turn stopped", |s| s.contains("*(stopped)*"));
    assert!(
        !s.contains("exit Nvim"),
        "the key stopped the turn, not Neovim's own message:\n{s}"
    );
    // Idle, the key does what it did before.
    keys(&name, "C-c");
    wait_for(&name, "Neovim's own <C-c>", |s| s.contains("exit Nvim"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sending_a_prompt_brings_the_chat_to_it() {
    if !have_tmux() {
        return;
    }
    let paragraphs: String = (1..=120).map(|i| format!("Paragraph {i}.\n\n")).collect();
    let (_dir, _server, name, _kill) = start(
        "send-follows",
        json!([text(&paragraphs), text("The second answer.")]),
    )
    .await;
    keys(&name, ":Lathe tell me\r");
    wait_for(&name, "the first answer's end", |s| {
        s.contains("Paragraph 120.")
    });
    // The chat's cursor on an older line: the chat shows the top.
    keys(
        &name,
        ":lua for _, w in ipairs(vim.api.nvim_list_wins()) do if vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(w)):match('lathe://chat$') then vim.api.nvim_win_set_cursor(w, { 3, 0 }) end end\r",
    );
    wait_for(&name, "the chat at its top", |s| {
        s.contains("Paragraph 1.") && !s.contains("Paragraph 120.")
    });
    keys(&name, ":Lathe the second question\r");
    wait_for(&name, "the new prompt and its answer", |s| {
        s.contains("the second question") && s.contains("The second answer.")
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_message_reaches_the_turns_next_request_or_is_the_next_prompt() {
    if !have_tmux() {
        return;
    }
    let first = json!({ "content": [
            { "type": "text", "text": "Let me look around the project first." },
            { "type": "tool_use", "id": "toolu_01", "name": "Glob", "input": { "pattern": "*.py" } } ],
        "stop_reason": "tool_use", "text_chunk_chars": 1, "event_delay_ms": 40 });
    let (_dir, server, name, _kill) = start(
        "queue",
        json!([
            first,
            text("Found main.py."),
            slow("A slow answer without tools, still streaming."),
            text("The queued one, answered.")
        ]),
    )
    .await;
    keys(&name, ":Lathe look around\r");
    wait_for(&name, "the working line", |s| {
        s.contains("lathe is working…")
    });
    keys(&name, ":Lathe\r");
    wait_for(&name, "the prompt area", |s| s.contains("-- INSERT --"));
    type_text(&name, "also update the README");
    keys(&name, "C-s");
    wait_for(&name, "the queued line", |s| {
        s.contains("queued: also update the README")
    });
    wait_for(&name, "the answer", |s| s.contains("Found main.py."));
    let second = user_texts(&server, 1);
    assert!(
        second.contains("tool_result") && second.contains("also update the README"),
        "the next request carries it after the results: {second}"
    );
    let s = screen(&name);
    assert!(
        !s.contains("queued: "),
        "no queued line once it is sent:\n{s}"
    );
    // After end_turn: the next prompt.
    type_text(&name, "next question");
    keys(&name, "C-s");
    wait_for(&name, "the slow answer", |s| s.contains("A slow answer"));
    type_text(&name, "and then this");
    keys(&name, "C-s");
    wait_for(&name, "the queued line", |s| {
        s.contains("queued: and then this")
    });
    wait_for(&name, "the queued prompt's answer", |s| {
        s.contains("The queued one, answered.")
    });
    assert!(user_texts(&server, 3).contains("and then this"));
}

/// The chat's part of each screen row: right of the last `│`.
fn chat_column(screen: &str) -> Vec<String> {
    screen
        .lines()
        .filter_map(|l| l.rsplit_once('│').map(|(_, r)| r.to_string()))
        .collect()
}

/// After a tool's result lands (folded under its line), no frame of the
/// unfocused chat shows a line from inside the fold, nor a run of empty
/// rows under its end while there is text above the view.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_frame_shows_a_half_folded_result() {
    if !have_tmux() {
        return;
    }
    let paragraphs: String = (1..=40).map(|i| format!("Paragraph {i}.\n\n")).collect();
    let read = |id: &str, file: &str, before: &str| {
        json!({ "content": [
                { "type": "text", "text": before },
                { "type": "tool_use", "id": id, "name": "Read", "input": { "file_path": file } } ],
            "stop_reason": "tool_use", "text_chunk_chars": 8, "json_chunk_chars": 16, "event_delay_ms": 25 })
    };
    let (dir, _server, name, _kill) = start(
        "no-half-fold",
        json!([
            read("toolu_01", "data1.txt", &paragraphs),
            read("toolu_02", "data2.txt", "All three tests fail. Let me look at the cart and pricing code."),
            { "content": [ { "type": "text", "text": "Now the tests and the pricing code, one more look before the fix." } ],
              "text_chunk_chars": 8, "event_delay_ms": 25 }
        ]),
    )
    .await;
    let project = dir.path().canonicalize().unwrap();
    for f in ["data1.txt", "data2.txt"] {
        let body: String = (1..=80).map(|i| format!("inside-fold-{i}\n")).collect();
        std::fs::write(project.join(f), body).unwrap();
    }
    keys(&name, ":Lathe read them\r");
    let start = std::time::Instant::now();
    let mut frames = 0;
    loop {
        let s = screen(&name);
        frames += 1;
        let chat = chat_column(&s);
        assert!(
            !chat.iter().any(|l| l.contains("inside-fold-")),
            "frame {frames} shows a line from inside a fold:\n{s}"
        );
        if s.contains("Paragraph 40.") || s.contains("- Read(") {
            // Text above the view: no empty rows under the chat's end but
            // the working line's.
            let last = chat.iter().rposition(|l| !l.trim().is_empty()).unwrap_or(0);
            // The transcript's rows end at its status line.
            let end = chat
                .iter()
                .position(|l| l.contains("lathe://chat"))
                .unwrap_or(chat.len());
            let empty_run = chat[..end]
                .iter()
                .rev()
                .take_while(|l| l.trim().is_empty())
                .count();
            assert!(
                empty_run <= 3 || last < 5,
                "frame {frames} shows {empty_run} empty rows under the chat's end:\n{s}"
            );
        }
        if s.contains("*(done)*") {
            break;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "the turn did not end:\n{s}"
        );
        std::thread::sleep(std::time::Duration::from_millis(15));
    }
    assert!(frames > 20, "sampled {frames} frames");
}
