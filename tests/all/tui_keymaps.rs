//! Tools on keymaps in a real terminal: Neovim in tmux with
//! `setup{ default_mappings = true }`, keys typed with `tmux send-keys`, the
//! screen read with `tmux capture-pane`. `<leader>lw` fills and opens the
//! quickfix list; `<leader>lr` opens the Read preview float with the cursor
//! in it, `q` closes it and the next keys edit the user's buffer again.
//! Skipped (with a message) where tmux is not installed. Needs `cargo build
//! -p lathe --lib` first (like tests/all/tui_float.rs).

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use lathe_test_support::tui;
use tui::*;

#[test]
fn grep_word_and_read_maps_in_a_terminal() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("SKIP: tmux is not installed");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().canonicalize().unwrap().join("project");
    std::fs::create_dir_all(&project).unwrap();
    for f in ["greeting.py", "test_greeting.py"] {
        std::fs::copy(root.join("demo/project").join(f), project.join(f)).unwrap();
    }
    let notes = project.join("notes.txt");
    std::fs::write(&notes, "see greeting.py for greet\n").unwrap();
    let init = dir.path().join("init.lua");
    std::fs::write(
        &init,
        tui::init_lua(&format!(
            r#"vim.g.mapleader = " "
vim.cmd.cd({project:?})
require("lathe").setup({{ cwd = {project:?}, claude_settings = false, default_mappings = true }})
vim.cmd("edit " .. vim.fn.fnameescape({notes:?}))
"#,
            project = project.display().to_string(),
            notes = notes.display().to_string(),
        )),
    )
    .unwrap();
    let name = start_nvim("keys", 120, 36, &init, "");
    let _session = Kill(name.clone());
    wait_for(&name, "Neovim shows notes.txt", |s| {
        s.contains("see greeting.py for greet")
    });

    // <leader>lw on "greet": the quickfix window lists both files' matches.
    keys(&name, "$");
    keys(&name, " lw");
    let s = wait_for(&name, "the quickfix window", |s| {
        s.contains("[Quickfix List]")
    });
    assert!(
        s.contains("greeting.py|6 col 5| def greet(name: str) -> str:"),
        "{s}"
    );
    assert!(
        s.contains("notes.txt|1 col 21| see greeting.py for greet"),
        "{s}"
    );

    // Back to the notes; <leader>lr on "greeting.py": the preview float,
    // with the cursor in it.
    keys(&name, ":cclose\r");
    keys(&name, "0w");
    keys(&name, " lr");
    let s = wait_for(&name, "the preview float", |s| s.contains("╭ greeting.py"));
    assert!(s.contains("q close · <CR> open"), "{s}");
    assert!(s.contains("def greet(name: str) -> str:"), "{s}");
    let lines: Vec<&str> = s.lines().collect();
    let top = lines
        .iter()
        .position(|l| l.contains("╭ greeting.py"))
        .unwrap();
    let bottom = top + lines[top..].iter().position(|l| l.contains('╰')).unwrap();
    let row = cursor_row(&name);
    assert!(
        row > top && row < bottom,
        "cursor at row {row}, float {top}..{bottom}:\n{s}"
    );

    // An edit typed in the float changes nothing (E21: 'modifiable' is
    // off); q closes it, and the next keys edit the notes again.
    keys(&name, "x");
    let s = wait_for(&name, "the float refuses the edit", |s| s.contains("E21"));
    assert!(
        s.contains("\"\"\"Greetings for the command line.\"\"\""),
        "{s}"
    );
    keys(&name, "q");
    wait_for(&name, "the float closes", |s| !s.contains("╭ greeting.py"));
    keys(&name, "0x");
    wait_for(&name, "x edits the notes", |s| {
        s.contains("ee greeting.py for greet")
    });
}
