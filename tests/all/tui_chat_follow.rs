//! The chat follows the end of the answer without focus (`:help
//! lathe-chat`), in a real terminal: Neovim in tmux, `:Lathe {prompt}`
//! leaves the cursor in the file window, the screen read with `tmux
//! capture-pane`. An answer ending in an empty line moves the transcript
//! window's cursor along with the appended text (Neovim's
//! `nvim_buf_set_text` keeps a cursor that is past the insert point after
//! it), so the cursor is on the last line although nothing scrolled the
//! window; the chat must still show its last line, `*(done)*`. Skipped
//! (with a message) where tmux is not installed.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support::tui;
use tui::*;

/// `n` short paragraphs ("Paragraph N.\n\n"), so the last line is empty.
fn paragraphs(n: usize) -> String {
    (1..=n).map(|i| format!("Paragraph {i}.\n\n")).collect()
}

/// The chat's part of each screen row: what is right of the last `│`
/// (the vertical separator) on rows that have one.
fn chat_column(screen: &str) -> Vec<String> {
    screen
        .lines()
        .filter_map(|l| l.rsplit_once('│').map(|(_, r)| r.to_string()))
        .collect()
}

/// Asks `prompt` with `:Lathe`, waits for the turn's end with
/// `lathe.wait()` (nothing is typed into the chat), and returns the screen.
fn ask_and_wait(name: &str, prompt: &str) -> String {
    keys(name, &format!(":Lathe {prompt}\r"));
    // The message names the prompt: the previous turn's "turn done" may
    // still be on the screen before Neovim has read these keys.
    keys(
        name,
        &format!(
            ":lua vim.cmd.echo(vim.fn.string('turn {prompt} ' .. require('lathe').wait(20000)))\r"
        ),
    );
    let done = format!("turn {prompt} done");
    wait_for(name, "the turn ends", |s| s.contains(&done))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unfocused_chat_shows_the_end_of_answers_that_end_in_an_empty_line() {
    if !have_tmux() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().canonicalize().unwrap();
    std::fs::write(project.join("main.py"), "print('main')\n").unwrap();
    let long = serde_json::json!({ "content": [ { "type": "text", "text": paragraphs(300) } ],
        "text_chunk_chars": 40 });
    let one_chunk = serde_json::json!({ "content": [ { "type": "text", "text": paragraphs(200) } ],
        "text_chunk_chars": 100000 });
    let script = serde_json::json!({ "responses": [ long, one_chunk ] }).to_string();
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
    let name = start_nvim("follow", 200, 50, &init, "");
    let _kill = Kill(name.clone());
    wait_for(&name, "Neovim shows the file", |s| {
        s.contains("print('main')")
    });

    for (prompt, last) in [("tell me", "Paragraph 300."), ("again", "Paragraph 200.")] {
        let s = ask_and_wait(&name, prompt);
        let chat = chat_column(&s);
        let done = chat.iter().rposition(|l| l.contains("*(done)*"));
        assert!(
            done.is_some(),
            "the chat (not focused) shows the end of the answer to {prompt:?}, *(done)*:\n{s}"
        );
        let done = done.unwrap();
        assert!(
            chat[..done].iter().any(|l| l.contains(last)),
            "the answer's last paragraph above *(done)*:\n{s}"
        );
        assert!(
            s.lines().any(|l| l.contains("print('main')")),
            "the file window is still there:\n{s}"
        );
    }
}
