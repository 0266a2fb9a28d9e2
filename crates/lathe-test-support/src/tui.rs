//! The harness the real-terminal tests share (`tests/all/tui_*.rs`): Neovim
//! in tmux, keys typed with `tmux send-keys`, the screen read with `tmux
//! capture-pane`, and the library those Neovims load.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Runs `tmux args`; its stdout.
pub fn tmux(args: &[&str]) -> String {
    let out = Command::new("tmux").args(args).output().expect("tmux runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `true` when tmux can run here (the tests skip, saying so, when not).
pub fn have_tmux() -> bool {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("SKIP: tmux is not installed");
        return false;
    }
    true
}

/// The lines every real-terminal test's `init.lua` starts with: lathe's
/// folder first on 'runtimepath', the library of [`library`] loaded and
/// the `:Lathe` command defined; `rest` follows (the test's `setup{}` and
/// its own lines).
pub fn init_lua(rest: &str) -> String {
    format!(
        "vim.opt.rtp:prepend({root:?})\nlocal open = assert(package.loadlib({lib:?}, \"luaopen_lathe\"))\nopen()\nvim.cmd(\"runtime plugin/lathe.lua\")\n{rest}",
        root = crate::workspace_root().display().to_string(),
        lib = library().display().to_string(),
    )
}

/// What the pane of `session` shows now.
pub fn screen(session: &str) -> String {
    tmux(&["capture-pane", "-p", "-t", session])
}

/// Keys in tmux's notation (`Escape`, `C-w`, `Enter`, or plain text).
pub fn keys(session: &str, k: &str) {
    tmux(&["send-keys", "-t", session, k]);
}

/// Typed text, sent literally (`send-keys -l`).
pub fn type_text(session: &str, text: &str) {
    tmux(&["send-keys", "-t", session, "-l", text]);
}

/// The cursor's row on the screen (0-based).
pub fn cursor_row(session: &str) -> usize {
    tmux(&["display-message", "-p", "-t", session, "#{cursor_y}"])
        .trim()
        .parse()
        .unwrap_or(usize::MAX)
}

/// Waits (at most 20 s) until the screen of `session` satisfies `cond`;
/// that screen. Fails naming `what`, with the last screen.
pub fn wait_for(session: &str, what: &str, cond: impl Fn(&str) -> bool) -> String {
    let start = Instant::now();
    loop {
        let s = screen(session);
        if cond(&s) {
            return s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out waiting until {what}; screen:\n{s}"
        );
        std::thread::sleep(Duration::from_millis(30));
    }
}

/// Starts Neovim (`$NVIM`, else `nvim` on `PATH`) with `-u init -i NONE -n`
/// in a detached tmux session of `cols` × `rows` named
/// `lathe-tui-<tag>-<pid>`, its command prefixed by `prefix` (e.g.
/// `env XDG_STATE_HOME=… `; empty for none). Returns the session's name;
/// hold a [`Kill`] of it to end it.
pub fn start_nvim(tag: &str, cols: u16, rows: u16, init: &Path, prefix: &str) -> String {
    let name = format!("lathe-tui-{tag}-{}", std::process::id());
    let nvim = std::env::var("NVIM").unwrap_or_else(|_| "nvim".into());
    tmux(&[
        "new-session",
        "-d",
        "-s",
        &name,
        "-x",
        &cols.to_string(),
        "-y",
        &rows.to_string(),
        &format!("{prefix}{nvim} -u {} -i NONE -n", init.display()),
    ]);
    name
}

/// Ends the tmux session of that name when dropped.
pub struct Kill(pub String);

impl Drop for Kill {
    fn drop(&mut self) {
        tmux(&["kill-session", "-t", &self.0]);
    }
}

/// The library `cargo build -p lathe --lib` made next to this test binary
/// (`target/<profile>/`; `make unit` builds it first). Fails when it is
/// missing or older than a source file, so a test never drives an old
/// library.
pub fn library() -> PathBuf {
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
    let root = crate::workspace_root();
    let mut stack = vec![root.join("src"), root.join("crates/lathe-core/src")];
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

/// A Neovim in tmux with lathe set up against mock-llm playing `script`,
/// in a fresh project (`project`, canonical): the set-up most real-terminal
/// tests share.
pub struct MockNvim {
    /// The mock API; `requests()` lists what lathe sent.
    pub server: mock_llm::MockServer,
    /// The tmux session's name (for [`keys`], [`screen`], …).
    pub name: String,
    /// The project root lathe works in.
    pub project: PathBuf,
    _kill: Kill,
    _dir: tempfile::TempDir,
}

impl MockNvim {
    /// Starts it: `files` (paths relative to the project, and their text)
    /// are written first; `setup{}` gets `cwd`, `base_url` and
    /// `claude_settings = false`, then `extra_lua` runs. Returns once
    /// Neovim shows its first screen.
    pub async fn start(
        tag: &str,
        (cols, rows): (u16, u16),
        script: &serde_json::Value,
        files: &[(&str, &str)],
        extra_lua: &str,
    ) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let project = dir.path().canonicalize().expect("canonical temp dir");
        for (path, text) in files {
            let p = project.join(path);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent).expect("project folder");
            }
            std::fs::write(p, text).expect("project file");
        }
        let server = mock_llm::spawn(
            mock_llm::Script::from_json(&script.to_string()).expect("script"),
            None,
        )
        .await
        .expect("mock-llm starts");
        let init = dir.path().join("init.lua");
        std::fs::write(
            &init,
            init_lua(&format!(
                "require(\"lathe\").setup({{ cwd = {project:?}, base_url = {url:?}, claude_settings = false }})\n{extra_lua}\n",
                project = project.display().to_string(),
                url = server.url(),
            )),
        )
        .expect("init.lua");
        let name = start_nvim(tag, cols, rows, &init, "");
        let kill = Kill(name.clone());
        wait_for(&name, "Neovim starts", |s| !s.trim().is_empty());
        Self {
            server,
            name,
            project,
            _kill: kill,
            _dir: dir,
        }
    }
}
