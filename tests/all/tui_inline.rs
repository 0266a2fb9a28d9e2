//! Inline edit in a real terminal (Neovim in tmux, the screen read with
//! `tmux capture-pane`): `:2,3Lathe edit` shows the proposal in the
//! buffer, the removed lines highlighted and the new ones under them, with
//! the hint naming the keys; `dA` accepts it and the hint goes. Skipped
//! (with a message) where tmux is not installed.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support::tui;
use tui::*;

fn script() -> String {
    serde_json::json!({ "responses": [
        { "content": [ { "type": "text", "text": "```python\nBETA = 20\nGAMMA = 30\n```\n" } ] }
    ] })
    .to_string()
}

/// The screen with its colours (SGR escapes).
fn coloured(session: &str) -> String {
    tmux(&["capture-pane", "-p", "-e", "-t", session])
}

/// The screen row (with escapes) holding `text`.
fn row<'a>(s: &'a str, text: &str) -> &'a str {
    s.lines().find(|l| l.contains(text)).unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proposal_shows_in_the_buffer_and_da_accepts_it() {
    if !have_tmux() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().canonicalize().unwrap();
    let file = project.join("calc.py");
    std::fs::write(&file, "alpha = 1\nbeta = 2\ngamma = 3\ndelta = 4\n").unwrap();
    let server = mock_llm::spawn(mock_llm::Script::from_json(&script()).unwrap(), None)
        .await
        .unwrap();
    let init = dir.path().join("init.lua");
    std::fs::write(
        &init,
        tui::init_lua(&format!(
            r#"require("lathe").setup({{ cwd = {project:?}, base_url = {url:?}, claude_settings = false }})
vim.cmd.cd({project:?})
vim.cmd("edit calc.py")
"#,
            project = project.display().to_string(),
            url = server.url(),
        )),
    )
    .unwrap();
    let name = start_nvim("inline", 100, 20, &init, "");
    let _kill = Kill(name.clone());
    wait_for(&name, "Neovim shows the file", |s| s.contains("delta = 4"));

    keys(&name, ":2,3Lathe edit upper case\r");
    let s = wait_for(&name, "the proposal with its hint", |s| {
        s.contains("dA accept all") && s.contains("GAMMA = 30")
    });
    let rows: Vec<&str> = s.lines().map(str::trim_end).collect();
    let at = |t: &str| rows.iter().position(|r| r.starts_with(t)).unwrap();
    // The buffer's lines, then the new ones under the last removed line.
    assert!(
        rows[at("beta = 2")].contains("lathe edit: do accept hunk"),
        "{s}"
    );
    assert_eq!(at("gamma = 3") + 1, at("BETA = 20"), "{s}");
    assert_eq!(at("BETA = 20") + 1, at("GAMMA = 30"), "{s}");
    assert_eq!(at("GAMMA = 30") + 1, at("delta = 4"), "{s}");
    // Removed and added lines are coloured, each their own way, the
    // others not (`capture-pane -e` writes a colour where it changes).
    let c = coloured(&name);
    let colour = |t: &str| row(&c, t).split(t).next().unwrap_or("").to_string();
    let (plain, removed, added) = (colour("alpha = 1"), colour("beta = 2"), colour("BETA = 20"));
    assert!(
        !plain.contains("\x1b[4"),
        "alpha = 1 has no background: {c}"
    );
    assert!(removed.contains('\x1b'), "beta = 2 is highlighted: {c}");
    assert!(added.contains('\x1b'), "BETA = 20 is highlighted: {c}");
    assert_ne!(removed, added, "{c}");

    keys(&name, "dA");
    let s = wait_for(&name, "the proposal applied", |s| {
        s.contains("BETA = 20") && !s.contains("gamma = 3") && !s.contains("dA accept")
    });
    assert!(s.contains("alpha = 1") && s.contains("delta = 4"), "{s}");
    keys(&name, "u");
    wait_for(&name, "one u undoes it", |s| {
        s.contains("beta = 2") && s.contains("gamma = 3") && !s.contains("BETA")
    });
}
