//! Slash commands in a real terminal (`:help lathe-commands`): typing `/`
//! at the start of the prompt area opens the completion menu with the
//! command names and what they do, no extra key; `<Tab>` moves in it; a
//! command file `.claude/commands/review.md` run as `/review cart.py`
//! reaches the model with `$ARGUMENTS` filled in, and the chat shows it as
//! typed, with the line of the command file under it.
//! Skipped (with a message) where tmux is not installed.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support::tui;
use tui::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_opens_the_command_menu_and_a_command_file_reaches_the_model_expanded() {
    if !have_tmux() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("project")).unwrap();
    let project = dir.path().join("project").canonicalize().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".claude/commands")).unwrap();
    std::fs::create_dir_all(project.join(".claude/commands")).unwrap();
    std::fs::write(
        project.join(".claude/commands/review.md"),
        "---\ndescription: Review a file for bugs\nargument-hint: [file]\n---\nReview $ARGUMENTS for pricing bugs.\n",
    )
    .unwrap();
    std::fs::write(project.join("cart.py"), "total = 1\n").unwrap();
    let script = serde_json::json!({ "responses": [
        { "content": [ { "type": "text", "text": "Reviewed it." } ] }
    ] })
    .to_string();
    let server = mock_llm::spawn(mock_llm::Script::from_json(&script).unwrap(), None)
        .await
        .unwrap();
    let init = dir.path().join("init.lua");
    std::fs::write(
        &init,
        tui::init_lua(&format!(
            r#"require("lathe").setup({{ cwd = {project:?}, base_url = {url:?}, claude_settings = false }})
"#,
            project = project.display().to_string(),
            url = server.url(),
        )),
    )
    .unwrap();
    let prefix = format!("env HOME={} ", home.display());
    let name = start_nvim("commands", 160, 30, &init, &prefix);
    let _kill = Kill(name.clone());
    wait_for(&name, "Neovim starts", |s| s.contains("~"));

    keys(&name, ":Lathe\r");
    wait_for(&name, "the prompt area in Insert mode", |s| {
        s.contains("-- INSERT --")
    });
    type_text(&name, "/");
    let s = wait_for(&name, "the menu of commands", |s| {
        s.contains("/review [file]") && s.contains("/clear") && s.contains("/help")
    });
    assert!(
        s.contains("Review a file for bugs"),
        "the menu says what a command does:\n{s}"
    );
    // <Tab> moves in the menu: the first item is inserted (the prompt
    // line and the menu both show it).
    keys(&name, "Tab");
    wait_for(&name, "<Tab> selects a command", |s| {
        s.matches("/clear").count() >= 2
    });
    // Back to what was typed, then narrow the list and type the argument.
    keys(&name, "C-e");
    keys(&name, "C-u");
    type_text(&name, "/rev");
    wait_for(&name, "the menu narrowed to /review", |s| {
        s.contains("/review [file]") && !s.contains("/clear")
    });
    type_text(&name, "iew cart.py");
    keys(&name, "C-s");
    let s = wait_for(
        &name,
        "the chat shows the command as typed and the answer",
        |s| s.contains("Reviewed it."),
    );
    assert!(
        s.contains("/review cart.py")
            && s.contains("⎿ Command /review (.claude/commands/review.md)"),
        "the chat shows the command as typed, its text folded under it:\n{s}"
    );
    let requests = server.requests();
    let sent = serde_json::to_string(&requests.last().unwrap()["messages"]).unwrap();
    assert!(
        sent.contains("Review cart.py for pricing bugs."),
        "the model got the expanded command: {sent}"
    );
    assert!(!sent.contains("$ARGUMENTS"), "{sent}");
}

/// From the prompt area (Insert mode, whose message line shows the mode),
/// what a command says stays in view in the chat: `/mode plan`'s answer,
/// an unknown command's error. A command that opens a view of its own
/// (`/changes`) leaves Insert mode first, so that view's keys work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_command_says_from_the_prompt_area_stays_in_the_chat() {
    if !have_tmux() {
        return;
    }
    let nvim = MockNvim::start(
        "cmdsay",
        (140, 30),
        &serde_json::json!({ "responses": [] }),
        &[],
        "",
    )
    .await;
    let name = nvim.name.clone();
    keys(&name, ":Lathe\r");
    wait_for(&name, "the prompt area in Insert mode", |s| {
        s.contains("-- INSERT --")
    });
    type_text(&name, "/mode plan");
    keys(&name, "C-e");
    keys(&name, "C-s");
    wait_for(&name, "the mode's note in the chat", |s| {
        s.contains("note:** permission mode plan") || s.contains("note: permission mode plan")
    });
    type_text(&name, "/frobnicate now");
    keys(&name, "C-e");
    keys(&name, "C-s");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let s = wait_for(&name, "the unknown command's error in the chat", |s| {
        s.contains("unknown command /frobnicate")
    });
    assert!(
        s.contains("/frobnicate now"),
        "its text stays in the prompt area:\n{s}"
    );
    keys(&name, "C-u");
    type_text(&name, "/changes");
    keys(&name, "C-e");
    keys(&name, "C-s");
    std::thread::sleep(std::time::Duration::from_millis(500));
    let s = screen(&name);
    assert!(
        !s.contains("-- INSERT --"),
        "/changes left Insert mode:\n{s}"
    );
}
