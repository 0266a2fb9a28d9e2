//! The chat's highlighting pause in a real terminal: Neovim in
//! tmux, keys typed with `tmux send-keys`, the screen read with `tmux
//! capture-pane`. A scripted answer of over 16 KiB of markdown (`**bold**`,
//! fenced code) streams in small chunks into the chat; past 16 KiB the
//! chat's highlighting pauses, and text the user types into their own
//! buffer meanwhile shows on the screen before the answer ends; when the
//! turn ends the whole answer is highlighted, it still shows
//! the answer's end (it followed the stream) and the cursor is where the
//! user left it. What the test cannot see on the screen (do the newest
//! bold words carry lathe's markdown highlight, with no tree-sitter
//! highlighter on the chat?) it reads through a command it types, `:lua Probe()`,
//! which writes the answer into the user's window's status line. Skipped
//! (with a message) where tmux is not installed.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use lathe_test_support::tui;
use tui::*;

/// The chat size past which highlighting pauses while an answer streams
/// (`HIGHLIGHT_WHILE_STREAMING_BYTES`, `:help lathe-chat`).
const PAUSE_BYTES: usize = 16 * 1024;

/// The answer's last words: on the screen once the chat followed it to the end.
const END: &str = "END-OF-THE-LONG-ANSWER";

/// Most a condition may take on a slow, loaded machine.
const PATIENCE: Duration = Duration::from_secs(25);

/// An answer of about 40 KiB of markdown streamed 64 characters at a time
/// (so for at least 10 s).
fn script() -> String {
    let mut text = String::new();
    let mut i = 0;
    while text.len() < 40 * 1024 {
        i += 1;
        text.push_str(&format!(
            "Paragraph {i} has **bold words** and `inline code` in it.\n\n```lua\nlocal n{i} = {i} -- a fenced code block\n```\n\n"
        ));
    }
    text.push_str(END);
    serde_json::json!({ "responses": [
        { "content": [ { "type": "text", "text": text } ],
          "text_chunk_chars": 64, "event_delay_ms": 15 },
    ] })
    .to_string()
}

/// What `:lua Probe()` wrote into the status line: its number, whether
/// the newest bold words are highlighted, the chat's size in bytes, lathe's
/// state, and whether the chat window shows the chat's last line.
#[derive(Debug, Clone, PartialEq)]
struct Probe {
    n: usize,
    ts: bool,
    bytes: usize,
    state: String,
    shows_end: bool,
}

fn parse_probe(screen: &str) -> Option<Probe> {
    let line = screen.lines().find(|l| l.contains("probe#"))?;
    let rest = &line[line.find("probe#")? + "probe#".len()..];
    let mut words = rest.split_whitespace();
    let n = words.next()?.parse().ok()?;
    let mut p = Probe {
        n,
        ts: false,
        bytes: 0,
        state: String::new(),
        shows_end: false,
    };
    for (k, v) in words.filter_map(|w| w.split_once('=')) {
        match k {
            "ts" => p.ts = v == "on",
            "bytes" => p.bytes = v.parse().ok()?,
            "state" => p.state = v.to_string(),
            "end" => p.shows_end = v == "shown",
            _ => {}
        }
    }
    Some(p)
}

/// Waits (at most [`PATIENCE`]) until the screen satisfies `cond`.
fn wait_long(session: &str, what: &str, cond: impl Fn(&str) -> bool) -> String {
    let start = Instant::now();
    loop {
        let s = screen(session);
        if cond(&s) {
            return s;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "timed out waiting until {what}; screen:\n{s}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Types `:lua Probe(n)` and waits until the status line shows probe `n`.
fn probe(session: &str, n: usize) -> (Probe, String) {
    keys(session, &format!(":lua Probe({n})\r"));
    let s = wait_long(session, &format!("probe {n} shows"), |s| {
        parse_probe(s).is_some_and(|p| p.n == n)
    });
    (parse_probe(&s).unwrap(), s)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_answer_pauses_highlighting_keys_still_work_and_highlighting_comes_back() {
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
-- What the screen cannot show, written into this window's status line.
function Probe(n)
  local b = vim.fn.bufnr("lathe://chat")
  local ts, bytes, shown = false, 0, false
  if b > 0 then
    -- Highlighted: the newest bold words carry lathe's markdown highlight.
    local ns = vim.api.nvim_get_namespaces()["lathe_chat_hl"]
    local lines = vim.api.nvim_buf_get_lines(b, 0, -1, false)
    for i = #lines, 1, -1 do
      local col = lines[i]:find("**bold words**", 1, true)
      if col then
        for _, m in ipairs(ns and vim.api.nvim_buf_get_extmarks(b, ns, {{ i - 1, 0 }}, {{ i - 1, -1 }}, {{ details = true, overlap = true }}) or {{}}) do
          ts = ts or vim.startswith(m[4].hl_group or "", "@markup.strong")
        end
        break
      end
    end
    ts = ts and vim.treesitter.highlighter.active[b] == nil
    local last = vim.api.nvim_buf_line_count(b)
    bytes = vim.api.nvim_buf_get_offset(b, last)
    for _, w in ipairs(vim.fn.win_findbuf(b)) do
      shown = shown or vim.fn.line("w$", w) == last
    end
  end
  vim.wo.statusline = ("probe#%d ts=%s bytes=%d state=%s end=%s"):format(
    n, ts and "on" or "off", bytes, require("lathe").status().state, shown and "shown" or "hidden")
end
"#,
            project = project.display().to_string(),
            url = server.url(),
            file = project.join("notes.txt").display().to_string(),
        )),
    )
    .unwrap();
    let name = start_nvim("hl", 150, 40, &init, "");
    let _kill = Kill(name.clone());
    wait_long(&name, "Neovim shows the file", |s| s.contains("my notes"));

    keys(&name, ":Lathe write a long answer\r");
    wait_long(&name, "the answer streams", |s| s.contains("Paragraph 2 "));

    // Probe until the chat is past 16 KiB and its highlighting paused; a
    // probe of a smaller chat finds it highlighted.
    let mut n = 0;
    let paused = loop {
        n += 1;
        let (p, s) = probe(&name, n);
        assert!(
            !s.contains(END) && p.state == "running",
            "the answer ended before highlighting paused ({p:?}):\n{s}"
        );
        if p.bytes <= PAUSE_BYTES {
            assert!(p.ts, "a chat under 16 KiB stays highlighted ({p:?}):\n{s}");
        }
        if !p.ts {
            break p;
        }
    };
    assert!(
        paused.bytes > PAUSE_BYTES,
        "highlighting paused only past 16 KiB: {paused:?}"
    );

    // Keys typed into the user's own buffer show while the answer streams.
    keys(&name, "Go");
    type_text(&name, "typed while the answer streams");
    keys(&name, "Escape");
    let s = wait_long(&name, "the typed text shows", |s| {
        s.contains("typed while the answer streams")
    });
    assert!(
        !s.contains(END),
        "the typed text showed before the answer ended:\n{s}"
    );
    n += 1;
    let (during, s) = probe(&name, n);
    assert!(
        during.state == "running" && !during.ts,
        "the answer still streams, unhighlighted, after the typed text showed ({during:?}):\n{s}"
    );
    let typed_row = s
        .lines()
        .position(|l| l.contains("typed while the answer streams"))
        .unwrap();

    // The turn ends: highlighting is back, the chat shows the answer's end,
    // the cursor stayed on the line the user typed.
    let s = wait_long(&name, "the answer ends", |s| {
        s.contains(END) && s.contains("*(done)*")
    });
    assert_eq!(
        cursor_row(&name),
        typed_row,
        "the cursor stayed on the typed line:\n{s}"
    );
    // Its first 16 KiB are highlighted with the turn's end, the rest in
    // the chat's next steps (a few ms each, the editor free between them).
    let started = Instant::now();
    let (after, s) = loop {
        n += 1;
        let (p, s) = probe(&name, n);
        if p.ts || started.elapsed() > Duration::from_secs(10) {
            break (p, s);
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        after.ts,
        "the whole answer is highlighted after the turn ({after:?}):\n{s}"
    );
    assert_eq!(after.state, "idle", "the turn ended:\n{s}");
    assert!(
        after.shows_end && after.bytes > 40 * 1024,
        "the chat window followed the answer to its end ({after:?}):\n{s}"
    );
    assert!(
        s.contains("typed while the answer streams"),
        "the typed text is still there:\n{s}"
    );
    assert_eq!(server.served(), 1, "the one scripted answer was served");
}
