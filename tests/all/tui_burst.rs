//! A burst of changes in one answer, in a real terminal (`:help
//! lathe-float-burst`): the model's answer holds Edit cart.py, Edit
//! pricing.py and Write discounts.py. Keys typed quickly between the asks
//! ("y y yes", "a a", "d d") never run in the user's file and no float is
//! left stuck; a stray `y` left pending in the user's window is named in
//! the statusline, and after <Esc> the float ("(1 of 3)") opens and `Y`
//! applies the rest of the answer; keys typed on after the last ask closed
//! stay out of the file too. Skipped (with a message) where tmux is
//! not installed.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use lathe_test_support::tui;
use tui::*;

const CART: &str = "\"\"\"A shopping cart.\"\"\"\nTAX = 0.2\n\n\ndef total(items):\n    return sum(items) * (1 + TAX)\n";
const CART_AFTER: &str = "\"\"\"A shopping cart.\"\"\"\nTAX = 0.25\n\n\ndef total(items):\n    return sum(items) * (1 + TAX)\n";
const PRICING: &str = "def price(x):\n    return x\n";
const PRICING_AFTER: &str = "def price(x):\n    return round(x, 2)\n";
const DISCOUNTS: &str = "RATE = 0.1\n";

/// Neovim in tmux on cart.py of a small project, with lathe against
/// `mock-llm` playing: read both files, then one answer with three changes.
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

fn script() -> serde_json::Value {
    let timing = |mut v: serde_json::Value| {
        v["stop_reason"] = "tool_use".into();
        v["event_delay_ms"] = 15.into();
        v["text_chunk_chars"] = 20.into();
        v["json_chunk_chars"] = 40.into();
        v
    };
    let tool = |id: &str, name: &str, input: serde_json::Value| serde_json::json!({"type": "tool_use", "id": id, "name": name, "input": input});
    let mut last = timing(serde_json::json!({ "content": [
        {"type": "text", "text": "All three changes are in."} ]}));
    last["stop_reason"] = "end_turn".into();
    serde_json::json!({ "responses": [
        timing(serde_json::json!({ "content": [
            {"type": "text", "text": "Reading both files."},
            tool("toolu_01", "Read", serde_json::json!({"file_path": "cart.py"})),
            tool("toolu_02", "Read", serde_json::json!({"file_path": "pricing.py"})),
        ]})),
        timing(serde_json::json!({ "content": [
            {"type": "text", "text": "Three changes at once."},
            tool("toolu_03", "Edit", serde_json::json!({"file_path": "cart.py",
                "old_string": "TAX = 0.2\n", "new_string": "TAX = 0.25\n"})),
            tool("toolu_04", "Edit", serde_json::json!({"file_path": "pricing.py",
                "old_string": "    return x\n", "new_string": "    return round(x, 2)\n"})),
            tool("toolu_05", "Write", serde_json::json!({"file_path": "discounts.py",
                "content": DISCOUNTS})),
        ]})),
        last,
    ]})
}

impl Nvim {
    async fn start(tag: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().canonicalize().unwrap().join("project");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(project.join("cart.py"), CART).unwrap();
        std::fs::write(project.join("pricing.py"), PRICING).unwrap();
        let server = mock_llm::spawn(
            mock_llm::Script::from_json(&script().to_string()).unwrap(),
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
vim.o.showcmd = true
vim.cmd("edit " .. vim.fn.fnameescape({file:?}))
"#,
                project = project.display().to_string(),
                url = server.url(),
                file = project.join("cart.py").display().to_string(),
            )),
        )
        .unwrap();
        let name = start_nvim(tag, 160, 40, &init, "");
        let me = Self {
            name,
            project,
            _dir: dir,
            _server: server,
        };
        wait_for(&me.name, "Neovim shows the file", |s| {
            s.contains("A shopping cart")
        });
        me
    }

    fn file(&self, rel: &str) -> String {
        std::fs::read_to_string(self.project.join(rel)).unwrap_or_default()
    }

    /// Waits until a float titled with `title` holds the cursor, then past
    /// its guard time; the screen.
    fn focused_float(&self, title: &str) -> String {
        let start = Instant::now();
        loop {
            let s = screen(&self.name);
            let lines: Vec<&str> = s.lines().collect();
            if let Some(top) = lines.iter().position(|l| l.contains(title)) {
                let bottom = top
                    + lines[top..]
                        .iter()
                        .position(|l| l.contains('╰'))
                        .unwrap_or(0);
                let row = cursor_row(&self.name);
                if row > top && row < bottom {
                    std::thread::sleep(Duration::from_millis(500));
                    return s;
                }
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "no float {title:?} took the cursor; screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    /// The turn ends with every file as the agent's allowed changes left
    /// it (`pricing`: whether the Edit of pricing.py was allowed), the
    /// user's window in Normal mode, no float left.
    fn ends_with(&self, pricing: &str) {
        let s = wait_for(&self.name, "the turn ends", |s| s.contains("*(done)*"));
        assert!(!s.contains("-- INSERT --"), "{s}");
        // Whatever the keys did to the buffer would be written now.
        keys(&self.name, "Escape");
        keys(&self.name, ":wall\r");
        std::thread::sleep(Duration::from_millis(300));
        let s = screen(&self.name);
        assert!(!s.contains('╭'), "a float is left:\n{s}");
        assert_eq!(self.file("cart.py"), CART_AFTER, "{s}");
        assert_eq!(self.file("pricing.py"), pricing, "{s}");
        assert_eq!(self.file("discounts.py"), DISCOUNTS, "{s}");
    }
}

/// Answers the first float with `first`, then types `gap` (literally)
/// right away in small pieces, then `y` on the floats after it.
async fn burst_with_keys_in_the_gap(tag: &str, first: &str, gap: &[&str]) {
    if !have_tmux() {
        return;
    }
    let nvim = Nvim::start(tag).await;
    let name = nvim.name.clone();
    keys(&name, ":Lathe three changes please\r");
    let s = nvim.focused_float("Edit cart.py (1 of 3)");
    assert!(s.contains("Y rest"), "{s}");
    type_text(&name, first);
    for k in gap {
        std::thread::sleep(Duration::from_millis(40));
        type_text(&name, k);
    }
    nvim.focused_float("Edit pricing.py (2 of 3)");
    keys(&name, "y");
    nvim.focused_float("Write discounts.py (3 of 3)");
    keys(&name, "y");
    nvim.ends_with(PRICING_AFTER);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn y_y_yes_typed_quickly_across_a_burst_stays_out_of_the_file() {
    burst_with_keys_in_the_gap("yyyes", "y", &[" ", "y", " ", "y", "e", "s"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_a_typed_quickly_stays_out_of_the_file() {
    burst_with_keys_in_the_gap("aa", "a", &[" ", "a"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d_d_typed_quickly_stays_out_of_the_file() {
    burst_with_keys_in_the_gap("dd", "y", &["d", " ", "d"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stray_y_is_named_and_shift_y_applies_the_rest_of_the_answer() {
    if !have_tmux() {
        return;
    }
    let nvim = Nvim::start("strayy").await;
    let name = nvim.name.clone();
    keys(&name, ":Lathe three changes please\r");
    // A `y` typed in the user's window: an operator waits for its motion.
    type_text(&name, "y");
    wait_for(&name, "the statusline names the pending operator", |s| {
        s.contains("waiting for you to finish `y`")
    });
    keys(&name, "Escape");
    let s = nvim.focused_float("Edit cart.py (1 of 3)");
    assert!(s.contains("Y rest"), "{s}");
    keys(&name, "Y");
    let start = Instant::now();
    while nvim.file("discounts.py") != DISCOUNTS {
        let s = screen(&name);
        assert!(
            !s.contains("(2 of 3)"),
            "Y lets the rest run without asking:\n{s}"
        );
        assert!(start.elapsed() < Duration::from_secs(15), "{s}");
        std::thread::sleep(Duration::from_millis(30));
    }
    nvim.ends_with(PRICING_AFTER);
}

/// The last ask of the answer closes and the cursor goes back to the
/// file: "y y yes" typed on as if more asks came still stays out of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn y_y_yes_typed_on_after_the_last_ask_stays_out_of_the_file() {
    if !have_tmux() {
        return;
    }
    let nvim = Nvim::start("lastask").await;
    let name = nvim.name.clone();
    keys(&name, ":Lathe three changes please\r");
    nvim.focused_float("Edit cart.py (1 of 3)");
    keys(&name, "y");
    nvim.focused_float("Edit pricing.py (2 of 3)");
    keys(&name, "y");
    nvim.focused_float("Write discounts.py (3 of 3)");
    type_text(&name, "y");
    for k in [" ", "y", " ", "y", "e", "s"] {
        std::thread::sleep(Duration::from_millis(40));
        type_text(&name, k);
    }
    nvim.ends_with(PRICING_AFTER);
}
