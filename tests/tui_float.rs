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
use std::process::Command;
use std::time::{Duration, Instant};

fn tmux(args: &[&str]) -> String {
    let out = Command::new("tmux").args(args).output().expect("tmux runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn screen(session: &str) -> String {
    tmux(&["capture-pane", "-p", "-t", session])
}

fn keys(session: &str, k: &str) {
    tmux(&["send-keys", "-t", session, k]);
}

/// The library `cargo build -p lathe --lib` made next to this test binary
/// (`target/<profile>/`; `make unit` builds it first). Fails when it is
/// missing or older than a source file, so the test never drives an old
/// library.
fn library() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary");
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let lib = dir.join(format!("liblathe{}", std::env::consts::DLL_SUFFIX));
    let built = std::fs::metadata(&lib)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| {
            panic!(
                "{} is missing ({e}): run `cargo build -p lathe --lib` first",
                lib.display()
            )
        });
    let mut newest = std::time::SystemTime::UNIX_EPOCH;
    let mut stack = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("src").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(m) = e.metadata().and_then(|m| m.modified()) {
                newest = newest.max(m);
            }
        }
    }
    assert!(
        built >= newest,
        "{} is older than the sources: run `cargo build -p lathe --lib` first",
        lib.display()
    );
    lib
}

struct Session(String);

impl Drop for Session {
    fn drop(&mut self) {
        tmux(&["kill-session", "-t", &self.0]);
    }
}

fn wait_for(session: &str, what: &str, cond: impl Fn(&str) -> bool) -> String {
    let start = Instant::now();
    loop {
        let s = screen(session);
        if cond(&s) {
            return s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "timed out waiting until {what}; screen:\n{s}"
        );
        std::thread::sleep(Duration::from_millis(30));
    }
}

const FLOAT_TOP: &str = "╭ Edit greeting.py";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typing_while_the_model_asks_never_answers_the_float() {
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
        format!(
            r#"vim.opt.rtp:prepend({root:?})
local open = assert(package.loadlib({lib:?}, "luaopen_lathe"))
open()
vim.cmd("runtime plugin/lathe.lua")
require("lathe").setup({{ cwd = {project:?}, base_url = {url:?}, claude_settings = false }})
vim.o.statusline = "%f %{{v:lua.require'lathe'.statusline()}}"
vim.cmd("edit " .. vim.fn.fnameescape({file:?}))
"#,
            root = root.display().to_string(),
            lib = library().display().to_string(),
            project = project.display().to_string(),
            url = server.url(),
            file = project.join("greeting.py").display().to_string(),
        ),
    )
    .unwrap();
    let name = format!("lathe-tui-{}", std::process::id());
    let nvim = std::env::var("NVIM").unwrap_or_else(|_| "nvim".into());
    tmux(&[
        "new-session",
        "-d",
        "-s",
        &name,
        "-x",
        "160",
        "-y",
        "40",
        &format!("{nvim} -u {} -i NONE -n", init.display()),
    ]);
    let _session = Session(name.clone());
    wait_for(&name, "Neovim shows the file", |s| s.contains("def greet"));

    keys(&name, ":vnew\r");
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

    keys(&name, "Escape");
    let s = wait_for(
        &name,
        "the float opens after the user stopped typing",
        |s| s.contains(FLOAT_TOP),
    );
    assert!(s.contains("+    return f\"Hello, {name}!\""), "{s}");
    // A key the moment it appears is ignored (the guard time).
    keys(&name, "a");
    std::thread::sleep(Duration::from_millis(150));
    let s = screen(&name);
    assert!(
        s.contains(FLOAT_TOP),
        "a key within the guard time answered the float:\n{s}"
    );
    assert!(std::fs::read_to_string(project.join("greeting.py"))
        .unwrap()
        .contains("Helo, {name}"));

    std::thread::sleep(Duration::from_millis(500));
    keys(&name, "y");
    let start = Instant::now();
    while !std::fs::read_to_string(project.join("greeting.py"))
        .unwrap()
        .contains("Hello, {name}")
    {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "y did not apply the edit:\n{}",
            screen(&name)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    wait_for(&name, "the turn ends", |s| s.contains("*(done)*"));
}
