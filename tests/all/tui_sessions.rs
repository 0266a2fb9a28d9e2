//! `:Lathe resume` in a real terminal: Neovim in tmux with a saved
//! conversation of the project in its state directory; `:Lathe resume`
//! lists it with `vim.ui.select()` (newest first, time and first prompt),
//! choosing it draws it in the chat, and the statusline component shows
//! lathe's state. Skipped (with a message) where tmux is not installed.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use lathe_test_support::tui;
use tui::*;

/// A saved session file: header, prompt, answer, turn end.
fn saved_session(id: &str, cwd: &Path, prompt: &str, answer: &str) -> String {
    [
        serde_json::json!({ "type": "session", "version": 1, "id": id, "cwd": cwd,
                            "model": "claude-sonnet-4-5", "created_ms": 1_000_u64,
                            "first_prompt": prompt }),
        serde_json::json!({ "type": "user", "text": prompt }),
        serde_json::json!({ "type": "assistant", "message": { "role": "assistant",
                            "content": [ { "type": "text", "text": answer } ] } }),
        serde_json::json!({ "type": "turn_end", "outcome": "done",
                            "turn": { "input_tokens": 1200, "output_tokens": 34 },
                            "session": { "input_tokens": 1200, "output_tokens": 34 } }),
    ]
    .iter()
    .map(|v| v.to_string() + "\n")
    .collect()
}

#[test]
fn lathe_resume_picks_a_saved_conversation_and_shows_it() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("tmux is not installed: skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let project = base.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let state = base.join("state");
    let sessions =
        lathe_core::agent::session_log::project_dir(&state.join("nvim/lathe/sessions"), &project);
    std::fs::create_dir_all(&sessions).unwrap();
    std::fs::write(
        sessions.join("1-1.jsonl"),
        saved_session(
            "1-1",
            &project,
            "explain the parser",
            "It splits the input into tokens.",
        ),
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(
        sessions.join("2-1.jsonl"),
        saved_session("2-1", &project, "rename the lexer", "Renamed it."),
    )
    .unwrap();
    let init = base.join("init.lua");
    std::fs::write(
        &init,
        tui::init_lua(&format!(
            r#"require("lathe").setup({{ cwd = {project:?}, base_url = "http://127.0.0.1:9", claude_settings = false }})
vim.o.laststatus = 3
vim.o.statusline = "%f %= [%{{v:lua.require'lathe'.statusline_component()}}]"
"#,
            project = project.display().to_string(),
        )),
    )
    .unwrap();
    let name = start_nvim(
        "resume",
        120,
        30,
        &init,
        &format!("env XDG_STATE_HOME={} ", state.display()),
    );
    let _kill = Kill(name.clone());
    wait_for(&name, "the statusline component shows", |s| {
        s.contains("[lathe: idle]")
    });

    keys(&name, ":Lathe resume");
    keys(&name, "Enter");
    let s = wait_for(&name, "the picker lists both, newest first", |s| {
        s.contains("rename the lexer") && s.contains("explain the parser")
    });
    let newer = s.find("rename the lexer").unwrap();
    let older = s.find("explain the parser").unwrap();
    assert!(newer < older, "newest first; screen:\n{s}");
    assert!(s.contains("lathe: resume a conversation"), "{s}");
    assert!(s.contains("1: 20"), "the time shows; screen:\n{s}");

    keys(&name, "2");
    keys(&name, "Enter");
    let s = wait_for(&name, "the chat shows the resumed conversation", |s| {
        s.contains("It splits the input into tokens.")
    });
    assert!(s.contains("## You"), "{s}");
    assert!(s.contains("explain the parser"), "{s}");
    // The context meter of the resumed conversation (an estimate), before
    // any request.
    let s = wait_for(&name, "the statusline shows the meter", |s| {
        s.contains("[lathe: idle · ctx ")
    });
    assert!(
        !s.contains("Renamed it."),
        "only the chosen one; screen:\n{s}"
    );
}
