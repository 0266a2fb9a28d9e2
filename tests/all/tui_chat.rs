//! The chat's prompt area in a real terminal: Neovim in tmux, keys typed
//! with `tmux send-keys` while a scripted answer streams, the screen read
//! with `tmux capture-pane`. `:Lathe` puts the cursor in the prompt area;
//! a two-line prompt typed while the answer streams stays exactly as
//! typed (streaming never moves or clobbers it); `<CR>` sends it and it
//! shows in the transcript. Skipped (with a message) where tmux is not
//! installed.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use lathe_test_support::tui;
use tui::*;

/// A long answer streamed slowly (words numbered so the screen shows it
/// growing), then a short one.
fn script() -> String {
    let story: String = (1..=60).map(|i| format!("word{i} ")).collect();
    serde_json::json!({ "responses": [
        { "content": [ { "type": "text", "text": story } ],
          "text_chunk_chars": 4, "event_delay_ms": 40 },
        { "content": [ { "type": "text", "text": "Got your two lines." } ] }
    ] })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_typed_while_an_answer_streams_is_never_clobbered_and_sends() {
    if !have_tmux() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().canonicalize().unwrap();
    std::fs::write(project.join("notes.txt"), "my notes\n").unwrap();
    let server = mock_llm::spawn(mock_llm::Script::from_json(&script()).unwrap(), None)
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
            file = project.join("notes.txt").display().to_string(),
        )),
    )
    .unwrap();
    let name = start_nvim("chat", 150, 40, &init, "");
    let _kill = Kill(name.clone());
    wait_for(&name, "Neovim shows the file", |s| s.contains("my notes"));

    keys(&name, ":Lathe tell me a story\r");
    wait_for(&name, "the answer streams", |s| s.contains("word3"));
    keys(&name, ":Lathe\r");
    let s = wait_for(
        &name,
        "the prompt area takes the cursor in Insert mode",
        |s| s.contains("-- INSERT --") && s.contains("prompt · <C-s> send"),
    );
    let prompt_bar = s
        .lines()
        .position(|l| l.contains("prompt · <C-s> send"))
        .unwrap();
    assert!(
        cursor_row(&name) > prompt_bar,
        "the cursor is in the prompt area:\n{s}"
    );

    // Type two lines, a few characters at a time, while the answer streams.
    let mut grew = false;
    let mut last_word = 0;
    for chunk in [
        "first ", "line ", "of the ", "prompt", "\n", "second ", "line ", "here",
    ] {
        if chunk == "\n" {
            keys(&name, "Enter");
        } else {
            type_text(&name, chunk);
        }
        std::thread::sleep(Duration::from_millis(150));
        let s = screen(&name);
        let newest = (1..=60)
            .rev()
            .find(|i| s.contains(&format!("word{i} ")))
            .unwrap_or(0);
        grew |= newest > last_word && last_word > 0;
        last_word = newest;
    }
    let s = wait_for(&name, "both typed lines show as typed", |s| {
        s.contains("first line of the prompt") && s.contains("second line here")
    });
    assert!(grew, "the answer kept streaming while the user typed:\n{s}");
    let lines: Vec<&str> = s.lines().collect();
    let first = lines
        .iter()
        .position(|l| l.contains("first line of the prompt"))
        .unwrap();
    assert!(first > prompt_bar, "typed text is in the prompt area:\n{s}");
    assert!(
        lines[first + 1].contains("second line here"),
        "the second line right under the first:\n{s}"
    );
    assert_eq!(
        cursor_row(&name),
        first + 1,
        "the cursor stayed where the user typed:\n{s}"
    );

    wait_for(&name, "the story ends", |s| s.contains("*(done)*"));
    keys(&name, "Escape");
    std::thread::sleep(Duration::from_millis(300));
    keys(&name, "Enter");
    let s = wait_for(&name, "the second answer", |s| {
        s.contains("Got your two lines.")
    });
    let lines: Vec<&str> = s.lines().collect();
    let you = lines.iter().rposition(|l| l.contains("## You")).unwrap();
    let sent = lines
        .iter()
        .position(|l| l.contains("first line of the prompt"))
        .unwrap();
    assert!(
        sent > you && sent < prompt_bar,
        "the sent prompt shows in the transcript under ## You:\n{s}"
    );
    assert!(
        lines[sent + 1].contains("second line here"),
        "both lines were sent:\n{s}"
    );
    assert_eq!(
        s.matches("first line of the prompt").count(),
        1,
        "the prompt area emptied once sent:\n{s}"
    );
}
