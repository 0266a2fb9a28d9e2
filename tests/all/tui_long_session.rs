//! `:Lathe resume` of a working day in a real terminal: Neovim
//! in tmux with a saved conversation of 2,000 Read calls
//! (`bench/long_session.lua`) in the project's state directory.
//!
//! - The chat is drawn in steps: text typed into the user's buffer right
//!   after `:Lathe resume last` shows on the screen while the chat is still
//!   being drawn (the statusline says `drawing` until `lathe.settled()`),
//!   where the old one-frame draw blocked the editor until the end; nothing
//!   typed is lost, and the chat then shows its last answer.
//! - Resuming a second day over the first (its ~35,000 chat lines wiped
//!   in steps, `chat::wipe`): text typed right after it shows while lathe
//!   is still busy, nothing typed is lost, the chat then shows the second
//!   day's last answer and the old chat buffer is gone.
//! - Quitting right after another resume of it (still drawing, the old
//!   chat still being wiped) prints no error or panic and ends Neovim.
//!
//! Skipped (with a message) where tmux is not installed.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use lathe_test_support::tui;
use tui::*;

const LAST: &str = "LAST-WORDS-OF-THE-DAY";
const SECOND: &str = "SECOND-DAY-ENDS-HERE";
const TYPED: &str = "typed while it draws";
const TYPED_AGAIN: &str = "typed while the old chat goes";

#[test]
fn a_long_resume_draws_in_steps_keys_land_and_quitting_is_clean() {
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
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let init = base.join("init.lua");
    let stderr = base.join("stderr.txt");
    std::fs::write(
        &init,
        tui::init_lua(&format!(
            r#"dofile({root:?} .. "/bench/long_session.lua")({file:?}, {{ cwd = {project:?}, asks = 100, per_ask = 20, last_words = {LAST:?} }})
vim.g.second_day = {second:?}
dofile({root:?} .. "/bench/long_session.lua")(vim.g.second_day, {{ id = "2-2", cwd = {project:?}, asks = 50, per_ask = 20, last_words = {SECOND:?} }})
function ChatBuffers()
  return #vim.tbl_filter(function(b) return vim.api.nvim_buf_get_name(b):find("lathe://chat", 1, true) ~= nil end, vim.api.nvim_list_bufs())
end
require("lathe").setup({{ cwd = {project:?}, base_url = "http://127.0.0.1:9", claude_settings = false }})
vim.o.laststatus = 3
vim.o.statusline = "%f %= [%{{v:lua.ChatBuffers()}} chat] [%{{v:lua.require'lathe.core'.settled() ? 'settled' : 'drawing'}}]"
"#,
            root = root.display().to_string(),
            file = sessions.join("1-1.jsonl").display().to_string(),
            second = base.join("2-2.jsonl").display().to_string(),
            project = project.display().to_string(),
        )),
    )
    .unwrap();
    let name = start_nvim(
        "long-resume",
        160,
        40,
        &init,
        &format!(
            "exec 2>{}; env XDG_STATE_HOME={} ",
            stderr.display(),
            state.display()
        ),
    );
    let _kill = Kill(name.clone());
    wait_for(&name, "Neovim is up", |s| s.contains("[settled]"));

    keys(&name, ":Lathe resume last");
    keys(&name, "Enter");
    type_text(&name, &format!("i{TYPED}"));
    let s = wait_for(&name, "the typed text shows", |s| s.contains(TYPED));
    assert!(
        s.contains("[drawing]") && !s.contains(LAST),
        "the text typed shows while the chat is still drawn; screen:\n{s}"
    );
    keys(&name, "Escape");
    let s = wait_for(&name, "the chat shows its last answer", |s| {
        s.contains(LAST) && s.contains("[settled]")
    });
    assert!(s.contains(TYPED), "nothing typed is lost; screen:\n{s}");

    // The second day over the first: the old chat is wiped in steps.
    keys(&name, ":lua require('lathe').resume(vim.g.second_day)");
    keys(&name, "Enter");
    type_text(&name, &format!("o{TYPED_AGAIN}"));
    let s = wait_for(&name, "the text typed again shows", |s| {
        s.contains(TYPED_AGAIN)
    });
    assert!(
        s.contains("[drawing]"),
        "the text typed shows while lathe is still busy; screen:\n{s}"
    );
    keys(&name, "Escape");
    let s = wait_for(&name, "the chat shows the second day's last answer", |s| {
        s.contains(SECOND) && s.contains("[settled]")
    });
    assert!(
        s.contains(TYPED) && s.contains(TYPED_AGAIN),
        "nothing typed is lost; screen:\n{s}"
    );
    assert!(
        s.contains("[1 chat]"),
        "the old chat buffer is gone; screen:\n{s}"
    );

    // Again, from a new conversation, and quit while it draws.
    keys(&name, ":Lathe new");
    keys(&name, "Enter");
    keys(&name, ":Lathe resume last");
    keys(&name, "Enter");
    keys(&name, ":qa!");
    keys(&name, "Enter");
    let start = Instant::now();
    while session_alive(&name) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "Neovim did not quit; screen:\n{}",
            screen(&name)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let err = std::fs::read_to_string(&stderr).unwrap_or_default();
    assert!(
        !err.contains("panick") && !err.to_lowercase().contains("error"),
        "nothing on stderr at quit: {err}"
    );
}

/// Whether the tmux session `name` still exists.
fn session_alive(name: &str) -> bool {
    Command::new("tmux")
        .args(["has-session", "-t", name])
        .status()
        .is_ok_and(|s| s.success())
}
