//! `:checkhealth` in a fresh Neovim the way a user runs it: the real
//! `nvim` (on `$PATH`, or `$NVIM`), lathe on 'runtimepath' with the
//! library `cargo build -p lathe --lib` made, `require("lathe").setup{}`
//! in the init file, then `:checkhealth lathe` or plain `:checkhealth`
//! (every module's, vim.lsp's included), with and without a language
//! server (pylsp from the project's `.venv`) and an MCP server
//! (tests/mcp/mock_mcp.py). Every report must run to its end: no
//! "Failed to run healthcheck", no "loop or previous error loading module
//! 'vim.lsp'". lathe's check never loads `vim.lsp` itself, and when it runs
//! while Neovim is still loading `vim.lsp` (a plugin's loader or an
//! autocommand calling into lathe at that moment) it neither re-enters the
//! load nor leaves `require("vim.lsp")` broken for later. Headless: the
//! report is written to a file the test reads.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use lathe_test_support::tui;

/// The repository root (lathe's runtime files, `.venv`, the MCP mock).
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs a fresh headless Neovim whose init file loads lathe and calls
/// `setup(setup)` (a Lua table constructor) in `project`, then runs the Lua
/// `body`, which writes what the test checks to the file `OUT` names.
/// Returns that file's text. Fails when Neovim does not end within 120 s.
fn run_nvim(project: &Path, setup: &str, body: &str) -> String {
    let out = project.join("out.txt");
    let init = project.join("init.lua");
    std::fs::write(
        &init,
        tui::init_lua(&format!(
            r#"OUT = {out:?}
PROJECT = {project:?}
ROOT = {root:?}
require("lathe").setup(vim.tbl_extend("force", {{ cwd = PROJECT, claude_settings = false, base_url = "http://127.0.0.1:9" }}, {setup}))
"#,
            root = root().display().to_string(),
            out = out.display().to_string(),
            project = project.display().to_string(),
        )),
    )
    .unwrap();
    let script = project.join("body.lua");
    std::fs::write(
        &script,
        format!(
            r#"local ok, err = pcall(function()
{body}
end)
if not ok then
  vim.fn.writefile({{ "LUA ERROR: " .. tostring(err) }}, OUT)
end
vim.cmd("qa!")
"#
        ),
    )
    .unwrap();
    let nvim = std::env::var("NVIM").unwrap_or_else(|_| "nvim".into());
    let mut child = Command::new(nvim)
        .args(["--headless", "-i", "NONE", "-n", "-u"])
        .arg(&init)
        .arg("-c")
        .arg(format!("luafile {}", script.display()))
        .current_dir(project)
        .env("XDG_STATE_HOME", project.join("state"))
        .env("XDG_CONFIG_HOME", project.join("config"))
        .env("XDG_DATA_HOME", project.join("data"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("nvim starts");
    let start = std::time::Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("Neovim did not end within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::read_to_string(&out).unwrap_or_else(|e| panic!("{} not written: {e}", out.display()))
}

/// Lua: runs `:checkhealth {what}` and writes the report, then a line
/// saying whether `vim.lsp` is loaded and whether `require("vim.lsp")`
/// works now.
fn checkhealth(what: &str) -> String {
    format!(
        r#"vim.cmd("checkhealth {what}")
local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
table.insert(lines, "vim.lsp loaded after checkhealth: " .. tostring(type(package.loaded["vim.lsp"]) == "table"))
local ok, err = pcall(require, "vim.lsp")
table.insert(lines, "require vim.lsp after checkhealth: " .. (ok and "ok" or tostring(err)))
vim.fn.writefile(lines, OUT)"#
    )
}

/// A fresh project directory.
fn fresh_project() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().canonicalize().unwrap();
    (dir, project)
}

/// No check failed to run, and `require("vim.lsp")` works afterwards.
fn assert_ran(report: &str) {
    assert!(!report.contains("LUA ERROR"), "{report}");
    assert!(
        !report.contains("Failed to run healthcheck") && !report.contains("loop or previous error"),
        "every check ran:\n{report}"
    );
    assert!(
        report.contains("require vim.lsp after checkhealth: ok"),
        "vim.lsp loads afterwards:\n{report}"
    );
    assert!(
        report.contains("state directory writable"),
        "lathe's report ran to its end:\n{report}"
    );
}

/// The Lua setup() options of an MCP server `t` (tests/mcp/mock_mcp.py over stdio).
fn mcp_setup() -> String {
    format!(
        r#"{{ mcp_servers = {{ t = {{ command = {python:?}, args = {{ {mock:?} }} }} }} }}"#,
        python = root().join(".venv/bin/python").display().to_string(),
        mock = root().join("tests/mcp/mock_mcp.py").display().to_string(),
    )
}

/// Lua: waits (at most 30 s) until MCP server `t` runs.
const WAIT_MCP: &str = r#"vim.wait(30000, function()
  for _, s in ipairs(require("lathe").info().mcp_servers or {}) do
    if s.name == "t" and s.state == "running" then return true end
  end
end, 50)"#;

#[test]
fn checkhealth_lathe_in_a_fresh_neovim_runs_and_does_not_load_vim_lsp() {
    let (_dir, project) = fresh_project();
    let report = run_nvim(&project, "{}", &checkhealth("lathe"));
    assert_ran(&report);
    assert!(report.contains("no language server running"), "{report}");
    assert!(
        report.contains("vim.lsp loaded after checkhealth: false"),
        "lathe's check leaves vim.lsp unloaded (no server can run without it):\n{report}"
    );
}

#[test]
fn plain_checkhealth_runs_every_check_with_and_without_an_mcp_server() {
    let (_dir, project) = fresh_project();
    let report = run_nvim(&project, "{}", &checkhealth(""));
    assert_ran(&report);
    assert!(report.contains("vim.lsp: Active Clients"), "{report}");

    let (_dir2, project) = fresh_project();
    let report = run_nvim(
        &project,
        &mcp_setup(),
        &format!("{WAIT_MCP}\n{}", checkhealth("")),
    );
    assert_ran(&report);
    assert!(report.contains("vim.lsp: Active Clients"), "{report}");
    assert!(report.contains("MCP server t: running"), "{report}");
}

#[test]
fn checkhealth_with_a_language_server_and_an_mcp_server_names_both() {
    let pylsp = root().join(".venv/bin/pylsp");
    if !pylsp.exists() {
        eprintln!("SKIP: {} is missing", pylsp.display());
        return;
    }
    let (_dir, project) = fresh_project();
    std::fs::write(project.join("hello.py"), "def hello():\n    return 1\n").unwrap();
    let body = format!(
        r#"vim.lsp.config("pylsp", {{ cmd = {{ {pylsp:?} }}, filetypes = {{ "python" }}, root_markers = {{ "hello.py" }} }})
vim.lsp.enable("pylsp")
vim.cmd.edit(PROJECT .. "/hello.py")
assert(vim.wait(60000, function() return #vim.lsp.get_clients({{ bufnr = 0 }}) > 0 end, 50), "pylsp attached")
{WAIT_MCP}
{}"#,
        checkhealth("lathe"),
        pylsp = pylsp.display().to_string(),
    );
    let report = run_nvim(&project, &mcp_setup(), &body);
    assert_ran(&report);
    assert!(
        report.contains("language servers running: pylsp"),
        "{report}"
    );
    assert!(
        report.contains("1 language server running"),
        "the LSP tools are offered:\n{report}"
    );
    assert!(report.contains("MCP server t: running"), "{report}");
}

#[test]
fn lathe_called_while_neovim_loads_vim_lsp_neither_fails_nor_breaks_it() {
    // A loader in front of Neovim's runs lathe's check (and asks lathe what
    // it knows) while `require("vim.lsp")` is under way: `package.loaded`
    // then holds the loader's sentinel, which is truthy.
    let body = format!(
        r#"local during
table.insert(package.loaders, 1, function(name)
  if name ~= "vim.lsp" then return nil end
  return function(...)
    local ok, info = pcall(require("lathe").info)
    vim.cmd("checkhealth lathe")
    during = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
      .. "\ninfo during the load: " .. (ok and ("lsp_servers=" .. tostring(info.lsp_servers)) or tostring(info))
    table.remove(package.loaders, 1)
    return assert(loadfile(vim.api.nvim_get_runtime_file("lua/vim/lsp.lua", false)[1]))(name)
  end
end)
local ok, err = pcall(require, "vim.lsp")
vim.cmd("enew")
{}
local after = vim.fn.readfile(OUT)
vim.fn.writefile(vim.list_extend({{ during or "lathe did not run", "require vim.lsp: " .. (ok and "ok" or tostring(err)) }}, after), OUT)"#,
        checkhealth("lathe"),
    );
    let (_dir, project) = fresh_project();
    let report = run_nvim(&project, "{}", &body);
    assert_ran(&report);
    assert!(report.contains("require vim.lsp: ok"), "{report}");
    assert!(
        report.contains("info during the load: lsp_servers=0"),
        "{report}"
    );
    assert_eq!(
        report.matches("state directory writable").count(),
        2,
        "both reports ran to their end:\n{report}"
    );
}
