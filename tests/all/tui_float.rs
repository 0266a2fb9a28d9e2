//! The permission float in a real terminal: Neovim in tmux, keys typed with
//! `tmux send-keys` while the scripted model works, the screen read with
//! `tmux capture-pane`. The user types "banana …" in Insert mode in another
//! window while the model asks to edit: no float takes the keys; after
//! <Esc> and a pause the float opens, a key typed the moment it appears is
//! ignored, and `y` afterwards applies the edit. Skipped (with a message)
//! where tmux is not installed.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lathe_test_support::tui;
use tui::*;

const FLOAT_TOP: &str = "╭ Edit greeting.py";

/// The float's top and bottom border rows on `screen`.
fn float_rows(screen: &str) -> Option<(usize, usize)> {
    let lines: Vec<&str> = screen.lines().collect();
    let top = lines.iter().position(|l| l.contains(FLOAT_TOP))?;
    let bottom = top + lines[top..].iter().position(|l| l.contains('╰'))?;
    Some((top, bottom))
}

/// A Neovim in tmux (`cols`×`rows`) with lathe set up in a copy of the
/// demo project against `mock-llm` playing the demo script, editing
/// greeting.py. Dropping it ends the tmux session.
struct Nvim {
    name: String,
    project: PathBuf,
    _dir: tempfile::TempDir,
    _server: mock_llm::MockServer,
}

impl Drop for Nvim {
    fn drop(&mut self) {
        tmux(&["kill-session", "-t", &self.name]);
    }
}

impl Nvim {
    async fn start(tag: &str, cols: u16, rows: u16) -> Self {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().canonicalize().unwrap().join("project");
        std::fs::create_dir_all(&project).unwrap();
        for f in ["greeting.py", "test_greeting.py"] {
            std::fs::copy(root.join("demo/project").join(f), project.join(f)).unwrap();
        }
        let mut script: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(root.join("demo/script.json")).unwrap())
                .unwrap();
        for r in script["responses"].as_array_mut().unwrap() {
            r["event_delay_ms"] = 40.into();
        }
        let server = mock_llm::spawn(
            mock_llm::Script::from_json(&script.to_string()).unwrap(),
            None,
        )
        .await
        .unwrap();
        let init = dir.path().join("init.lua");
        std::fs::write(
            &init,
            tui::init_lua(&format!(
                r#"require("lathe").setup({{ cwd = {project:?}, base_url = {url:?}, claude_settings = false }})
vim.o.statusline = "%f %{{v:lua.require'lathe'.statusline()}}"
vim.cmd("edit " .. vim.fn.fnameescape({file:?}))
"#,
                project = project.display().to_string(),
                url = server.url(),
                file = project.join("greeting.py").display().to_string(),
            )),
        )
        .unwrap();
        let name = start_nvim(tag, cols, rows, &init, "");
        let me = Self {
            name,
            project,
            _dir: dir,
            _server: server,
        };
        wait_for(&me.name, "Neovim shows the file", |s| {
            s.contains("def greet")
        });
        me
    }

    fn greeting(&self) -> String {
        std::fs::read_to_string(self.project.join("greeting.py")).unwrap()
    }

    /// Waits until the cursor is inside the float (it took focus).
    fn wait_for_focus(&self) -> String {
        let start = Instant::now();
        loop {
            let s = screen(&self.name);
            if let Some((top, bottom)) = float_rows(&s) {
                let row = cursor_row(&self.name);
                if row > top && row < bottom {
                    return s;
                }
            }
            assert!(
                start.elapsed() < Duration::from_secs(15),
                "the float never took the cursor; screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    /// `y`, then waits until the edit is on disk and the turn ended.
    fn allow_and_finish(&self) {
        keys(&self.name, "y");
        let start = Instant::now();
        while !self.greeting().contains("Hello, {name}") {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "y did not apply the edit:\n{}",
                screen(&self.name)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        wait_for(&self.name, "the turn ends", |s| s.contains("*(done)*"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typing_while_the_model_asks_never_lands_in_the_float() {
    if !have_tmux() {
        return;
    }
    let nvim = Nvim::start("typing", 160, 40).await;
    let name = nvim.name.clone();
    let notes = nvim.project.join("notes.txt");

    keys(&name, &format!(":vsplit {}\r", notes.display()));
    keys(&name, ":Lathe fix the typo in the greeting\r");
    keys(&name, "i");
    // Type for ~3 s, one word every 100 ms: the model asks meanwhile.
    let mut saw_waiting = false;
    for _ in 0..30 {
        keys(&name, "banana ");
        std::thread::sleep(Duration::from_millis(100));
        let s = screen(&name);
        assert!(
            !s.contains(FLOAT_TOP),
            "the float opened while the user typed:\n{s}"
        );
        saw_waiting |= s.contains("waiting for you: Edit greeting.py");
    }
    let s = wait_for(&name, "the model asks", |s| {
        s.contains("waiting for you: Edit greeting.py")
    });
    assert!(s.contains("-- INSERT --"), "still typing:\n{s}");
    assert!(saw_waiting || s.contains("waiting for you"));
    assert!(
        s.matches("banana").count() >= 25,
        "every typed word landed in the buffer:\n{s}"
    );
    wait_for(&name, "the chat says the call waits", |s| {
        s.contains("Edit(greeting.py): waiting for you")
    });

    keys(&name, "Escape");
    let s = wait_for(
        &name,
        "the float appears after the user stopped typing",
        |s| s.contains(FLOAT_TOP),
    );
    // The user saves the moment it appears: `:w` goes to their file, not
    // to the float (E382: Cannot write, 'buftype' option is set).
    keys(&name, ":w\r");
    assert!(s.contains("+    return f\"Hello, {name}!\""), "{s}");
    let start = Instant::now();
    while !std::fs::read_to_string(&notes).is_ok_and(|t| t.contains("banana banana")) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            ":w did not save the user's file:\n{}",
            screen(&name)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let s = screen(&name);
    assert!(!s.contains("E382"), "the :w went to the float:\n{s}");
    assert!(s.contains(FLOAT_TOP), "the ask still waits:\n{s}");
    assert!(nvim.greeting().contains("Helo, {name}"));

    // After a quiet moment the float takes the cursor; y applies the edit.
    nvim.wait_for_focus();
    nvim.allow_and_finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_80_by_24_the_whole_float_shows() {
    if !have_tmux() {
        return;
    }
    let nvim = Nvim::start("small", 80, 24).await;
    let name = nvim.name.clone();
    keys(&name, ":Lathe fix the typo in the greeting\r");
    let s = nvim.wait_for_focus();
    let lines: Vec<&str> = s.lines().collect();
    let (top, bottom) = float_rows(&s).unwrap();
    assert!(
        lines[bottom].contains("? help"),
        "the footer keeps ? help:\n{s}"
    );
    assert!(
        lines[bottom].contains("n deny") && lines[bottom].contains("q hide"),
        "the footer says what n and q do:\n{s}"
    );
    assert!(
        lines[top..bottom]
            .iter()
            .any(|l| l.contains("│.claude/settings.local.json")),
        "the rule line wraps at a space:\n{s}"
    );
    assert!(
        lines[bottom - 1].contains("def main(argv: list[str]) -> int:"),
        "the last diff line shows above the footer:\n{s}"
    );
    nvim.allow_and_finish();
}

/// `d` shows the diff tab with its keys in the winbars and the first tab
/// labelled with the user's file; `:q` goes back to the float. Left with
/// `<C-w>p`, the float says it is not focused and clears the cursor's row;
/// `:Lathe review` brings it back as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_diff_tab_shows_its_keys_and_a_left_float_looks_unfocused() {
    if !have_tmux() {
        return;
    }
    let nvim = Nvim::start("difftab", 140, 32).await;
    let name = nvim.name.clone();
    keys(&name, ":set relativenumber\r");
    keys(&name, ":Lathe fix the typo in the greeting\r");
    nvim.wait_for_focus();
    keys(&name, "d");
    let s = wait_for(&name, "the diff tab shows its keys", |s| {
        s.contains(":w use this text · :q cancel · do/dp per hunk")
    });
    assert!(
        s.contains("before: the file as planned against (read-only)"),
        "the left side says what it is:\n{s}"
    );
    let tabline = s.lines().next().unwrap_or_default();
    assert!(
        !tabline.contains("[Scratch]") && tabline.contains("greeting.py"),
        "the first tab keeps the user's file as its label:\n{s}"
    );
    keys(&name, ":q\r");
    nvim.wait_for_focus();

    keys(&name, "C-w");
    keys(&name, "p");
    wait_for(&name, "the float says it is not focused", |s| {
        s.contains("not focused · :Lathe review to answer")
    });
    // The cursor goes to the middle of the file, under where the float was.
    keys(&name, "10G");
    std::thread::sleep(Duration::from_millis(300));
    let s = screen(&name);
    let (top, bottom) = float_rows(&s).expect("the float still shows");
    let row = cursor_row(&name);
    assert!(
        row < top || row > bottom,
        "the float leaves the cursor's row {row} free:\n{s}"
    );
    assert!(
        nvim.greeting().contains("Helo, {name}"),
        "nothing applied yet"
    );

    keys(&name, ":Lathe review\r");
    nvim.wait_for_focus();
    wait_for(&name, "the float looks focused again, with its keys", |s| {
        !s.contains("not focused") && s.contains("y allow")
    });
    std::thread::sleep(Duration::from_millis(500));
    nvim.allow_and_finish();
}
