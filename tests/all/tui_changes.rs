//! `:Lathe changes` in a real terminal: a saved conversation whose prompt
//! changed a file (its checkpoint in the session file) is resumed; the
//! review tab shows the hunk with its keys in the winbar, `r` reverts it
//! and the file on disk is as before the prompt. Skipped (with a message)
//! where tmux is not installed.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use lathe_core::editor::TextHash;
use lathe_test_support::tui;
use tui::*;

#[test]
fn the_review_shows_a_turns_hunk_and_r_reverts_it() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("tmux is not installed: skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let project = base.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let before = "one\ntwo\nthree\n";
    let after = "one\nTWO\nthree\n";
    let file = project.join("a.txt");
    std::fs::write(&file, after).unwrap();
    let state = base.join("state");
    let sessions =
        lathe_core::agent::session_log::project_dir(&state.join("nvim/lathe/sessions"), &project);
    std::fs::create_dir_all(&sessions).unwrap();
    let (b, a) = (TextHash::of(before).to_hex(), TextHash::of(after).to_hex());
    let lines: String = [
        serde_json::json!({ "type": "session", "version": 1, "id": "1-1", "cwd": project,
                            "model": "claude-sonnet-4-5", "created_ms": 1_000_u64,
                            "first_prompt": "shout two" }),
        serde_json::json!({ "type": "checkpoint_begin", "id": 1, "mark": { "len": 0 },
                            "prompt": "shout two" }),
        serde_json::json!({ "type": "user", "text": "shout two" }),
        serde_json::json!({ "type": "assistant", "message": { "role": "assistant",
                            "content": [ { "type": "text", "text": "Shouted it." } ] } }),
        serde_json::json!({ "type": "checkpoint_files", "id": 1,
                            "files": [ { "path": file, "before": { "sha": b }, "after": { "sha": a } } ],
                            "texts": { b.clone(): before, a.clone(): after } }),
        serde_json::json!({ "type": "turn_end", "outcome": "done",
                            "turn": { "input_tokens": 10, "output_tokens": 3 },
                            "session": { "input_tokens": 10, "output_tokens": 3 } }),
    ]
    .iter()
    .map(|v| v.to_string() + "\n")
    .collect();
    std::fs::write(sessions.join("1-1.jsonl"), lines).unwrap();
    let init = base.join("init.lua");
    std::fs::write(
        &init,
        tui::init_lua(&format!(
            r#"require("lathe").setup({{ cwd = {project:?}, base_url = "http://127.0.0.1:9", claude_settings = false }})
vim.cmd.cd({project:?})
"#,
            project = project.display().to_string(),
        )),
    )
    .unwrap();
    let name = start_nvim(
        "changes",
        120,
        30,
        &init,
        &format!("env XDG_STATE_HOME={} ", state.display()),
    );
    let _kill = Kill(name.clone());

    keys(&name, ":Lathe resume last");
    keys(&name, "Enter");
    wait_for(&name, "the resumed chat", |s| s.contains("Shouted it."));
    keys(&name, ":Lathe changes");
    keys(&name, "Enter");
    let s = wait_for(&name, "the review with its keys", |s| {
        s.contains("<Space> keep ·") && s.contains("+TWO")
    });
    assert!(s.contains("diff a.txt (changed)"), "{s}");
    assert!(s.contains("-two"), "{s}");

    // The cursor is on the hunk: r reverts it.
    keys(&name, "r");
    wait_for(&name, "nothing left to review", |s| {
        s.contains("no changes in this turn")
    });
    assert_eq!(std::fs::read_to_string(&file).unwrap(), before);
    keys(&name, "q");
    wait_for(&name, "the review closed", |s| {
        !s.contains("<Space> keep ·")
    });
}
