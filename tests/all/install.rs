//! Install without a Rust toolchain (`lua/lathe/install.lua`): a fresh
//! headless Neovim loads a copy of the plugin that has no library built
//! (what a plugin manager's clone looks like) while a local HTTP server
//! plays the release (`v{version}/checksums.txt` and the asset). The good
//! download is installed and loads; a bad checksum, an unpublished platform
//! and an HTTP error install nothing and say what to do; a library of
//! another version is refused; a local build wins over any download.
//!
//! The artifact served is the library `cargo build -p lathe --lib` made next
//! to this test binary (`make unit` builds it first), as in tests/all/tui_float.rs.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// This machine's platform as release assets name it (install.lua's
/// `platform()`), and the library's extension.
fn platform() -> (String, &'static str) {
    let os = match std::env::consts::OS {
        "macos" => "macos",
        _ => "linux",
    };
    let ext = if os == "macos" { "dylib" } else { "so" };
    (format!("{os}-{}", std::env::consts::ARCH), ext)
}

/// `lathe-{version}-{platform}.{ext}`.
fn asset() -> String {
    let (p, ext) = platform();
    format!("lathe-{VERSION}-{p}.{ext}")
}

// The library built next to this test binary, refused when older than a
// source file: the real-terminal tests' one finder.
use lathe_test_support::tui;
use tui::library;

/// The file's sha256 (hex), with `sha256sum` or `shasum -a 256` as
/// install.lua computes it (sha2 unoptimised takes seconds on the debug
/// library); the crate checks the tools agree on a small file.
fn sha256_hex(path: &Path) -> String {
    let out = Command::new("sha256sum")
        .arg(path)
        .output()
        .or_else(|_| {
            Command::new("shasum")
                .args(["-a", "256"])
                .arg(path)
                .output()
        })
        .expect("sha256sum or shasum");
    let hex = String::from_utf8(out.stdout).unwrap();
    let hex = hex.split_whitespace().next().unwrap().to_string();
    if std::fs::metadata(path).unwrap().len() < 1 << 20 {
        let mut h = Sha256::new();
        h.update(std::fs::read(path).unwrap());
        let want: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, want, "sha256 of {}", path.display());
    }
    hex
}

/// What the server answers for a path.
#[derive(Clone)]
enum Body {
    Text(String),
    File(PathBuf),
}

/// A tiny HTTP/1.1 server on 127.0.0.1 serving `files` (URL path → body),
/// 404 for anything else; runs until the test process ends. Returns its
/// base URL.
fn serve(files: HashMap<String, Body>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let files = files.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                        break;
                    }
                }
                let ok = |len: u64| {
                    format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n")
                };
                let _ = match files.get(&path) {
                    Some(Body::Text(t)) => stream
                        .write_all(ok(t.len() as u64).as_bytes())
                        .and_then(|()| stream.write_all(t.as_bytes())),
                    Some(Body::File(p)) => {
                        let mut f = std::fs::File::open(p).unwrap();
                        let len = f.metadata().unwrap().len();
                        stream
                            .write_all(ok(len).as_bytes())
                            .and_then(|()| std::io::copy(&mut f, &mut stream).map(|_| ()))
                    }
                    None => stream.write_all(
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found",
                    ),
                };
            });
        }
    });
    url
}

/// The Neovim to run: `$NVIM`, else `nvim` found on `$PATH` (absolute, so
/// a test may run it with another `$PATH`).
fn nvim() -> PathBuf {
    if let Some(n) = std::env::var_os("NVIM") {
        return n.into();
    }
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("nvim"))
        .find(|p| p.is_file())
        .expect("nvim on $PATH")
}

/// A copy of the plugin (`lua/`, `plugin/`, no library) in a temp dir, its
/// `lua/lathe/version.lua` saying `version` when given.
struct Plugin {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

fn plugin(version: Option<&str>) -> Plugin {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap().join("lathe");
    for sub in ["lua/lathe", "plugin"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
        for e in std::fs::read_dir(src.join(sub)).unwrap().flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "lua") {
                std::fs::copy(&p, root.join(sub).join(e.file_name())).unwrap();
            }
        }
    }
    if let Some(v) = version {
        std::fs::write(
            root.join("lua/lathe/version.lua"),
            format!("return {v:?}\n"),
        )
        .unwrap();
    }
    Plugin { _dir: dir, root }
}

impl Plugin {
    /// Runs `body` (Lua; fills the table `out`) in a fresh headless Neovim
    /// with this plugin on 'runtimepath', `$LATHE_DOWNLOAD_URL` = `url` and
    /// every `vim.notify` message collected in `out.notes`. Returns `out`.
    fn drive(&self, url: &str, body: &str) -> serde_json::Value {
        self.drive_env(url, body, &[])
    }

    /// [`Plugin::drive`] with more environment variables.
    fn drive_env(&self, url: &str, body: &str, env: &[(&str, &str)]) -> serde_json::Value {
        let script = self.root.join("../drive.lua");
        let result = self.root.join("../out.json");
        std::fs::write(
            &script,
            format!(
                r#"vim.opt.rtp:prepend({root:?})
out = {{ notes = {{}} }}
vim.notify = function(msg) table.insert(out.notes, msg) end
local ok, err = pcall(function()
{body}
end)
if not ok then out.driver_error = tostring(err) end
local f = assert(io.open({result:?}, "w"))
f:write(vim.json.encode(out))
f:close()
"#,
                root = self.root.display().to_string(),
                result = result.display().to_string(),
            ),
        )
        .unwrap();
        let status = Command::new(nvim())
            .args(["--headless", "-u", "NONE", "-i", "NONE", "-n", "-l"])
            .arg(&script)
            .env("LATHE_DOWNLOAD_URL", url)
            .env_remove("LATHE_DOWNLOAD")
            .envs(env.iter().copied())
            .status()
            .expect("nvim runs");
        assert!(status.success(), "nvim exited with {status}");
        let out: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&result).unwrap()).unwrap();
        assert!(out.get("driver_error").is_none(), "driver failed: {out}");
        out
    }

    /// The files in `lib/` (downloads and any temp file left behind).
    fn lib_files(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.root.join("lib"))
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    fn root(&self) -> String {
        self.root.display().to_string()
    }
}

/// `require("lathe")`: whether it loaded, its error, the library's version.
const REQUIRE: &str = r#"
local ok, err = pcall(require, "lathe")
out.ok = ok
if not ok then out.err = tostring(err) end
if ok then out.version = require("lathe").version() end
out.core_loaded = package.loaded["lathe.core"] ~= nil
"#;

/// A release serving `checksums` and, under this platform's asset name,
/// `artifact`.
fn release(checksums: String, artifact: Body) -> String {
    let mut files = HashMap::new();
    files.insert(format!("/v{VERSION}/checksums.txt"), Body::Text(checksums));
    files.insert(format!("/v{VERSION}/{}", asset()), artifact);
    serve(files)
}

fn downloading() -> String {
    format!(
        "lathe: downloading the prebuilt library {} (once per version; see :help lathe-install)…",
        asset()
    )
}

#[test]
fn first_require_downloads_verifies_installs_and_loads_the_release_library() {
    let lib = library();
    let url = release(
        format!("{}  {}\n", sha256_hex(&lib), asset()),
        Body::File(lib),
    );
    let p = plugin(None);
    let out = p.drive(
        &url,
        &format!("{REQUIRE}\nif out.ok then vim.cmd('checkhealth lathe'); out.health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n') end"),
    );
    assert_eq!(out["ok"], true, "{out}");
    assert_eq!(out["version"], VERSION);
    let installed = format!("{}/lib/{}", p.root(), asset());
    assert_eq!(
        out["notes"],
        serde_json::json!([
            downloading(),
            format!("lathe: installed {installed} (sha256 verified)")
        ])
    );
    // Installed by rename: the library, no temp file beside it.
    assert_eq!(p.lib_files(), vec![asset()]);
    let health = out["health"].as_str().unwrap();
    assert!(
        health.contains(&format!(
            "library version {VERSION} matches the plugin's (lua/lathe/version.lua)"
        )),
        "{health}"
    );
    assert!(health.contains(&installed), "{health}");

    // The next start loads it without downloading again.
    let again = p.drive("http://127.0.0.1:9", REQUIRE);
    assert_eq!(again["ok"], true, "{again}");
    assert_eq!(again["notes"], serde_json::json!([]));

    // `:Lathe build` with it loaded downloads it again and says a restart
    // loads the new one.
    let rebuilt = p.drive(
        &url,
        &format!(
            "{REQUIRE}\nvim.cmd('runtime plugin/lathe.lua')\nvim.cmd('Lathe build')\nout.finished = vim.wait(30000, function() return #out.notes >= 2 end, 20)"
        ),
    );
    assert_eq!(rebuilt["finished"], true, "{rebuilt}");
    assert_eq!(
        rebuilt["notes"][1],
        format!("lathe: installed {installed} (sha256 verified); restart Neovim to load it")
    );
    assert_eq!(p.lib_files(), vec![asset()]);
}

#[test]
fn without_curl_it_says_to_install_curl_or_build_from_source() {
    let p = plugin(None);
    let empty = tempfile::tempdir().unwrap();
    let out = p.drive_env(
        "http://127.0.0.1:9",
        REQUIRE,
        &[("PATH", empty.path().to_str().unwrap())],
    );
    assert_eq!(out["ok"], false, "{out}");
    assert_eq!(
        out["err"],
        format!(
            "lathe: cannot download the library: `curl` is not on $PATH. Install curl and run :Lathe build, or build from source with `make` in {} (needs cargo)",
            p.root()
        )
    );
}

#[test]
fn a_downloaded_library_of_another_version_is_refused() {
    let p = plugin(Some("9.9.9"));
    let (platform, ext) = platform();
    std::fs::create_dir_all(p.root.join("lib")).unwrap();
    let dl = p.root.join(format!("lib/lathe-9.9.9-{platform}.{ext}"));
    std::os::unix::fs::symlink(library(), &dl).unwrap();
    let out = p.drive("http://127.0.0.1:9", REQUIRE);
    assert_eq!(out["ok"], false, "{out}");
    assert_eq!(
        out["err"],
        format!(
            "lathe: {} is version {VERSION} but the plugin is version 9.9.9. Delete it and run :Lathe build, then restart Neovim",
            dl.display()
        )
    );
    assert_eq!(out["core_loaded"], false);
}

#[test]
fn a_bad_checksum_installs_nothing_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("fake.so");
    std::fs::write(&fake, b"not the library that was published").unwrap();
    let want = "0".repeat(64);
    let got = sha256_hex(&fake);
    let url = release(format!("{want}  {}\n", asset()), Body::File(fake));
    let p = plugin(None);
    let out = p.drive(&url, REQUIRE);
    assert_eq!(out["ok"], false, "{out}");
    assert_eq!(
        out["err"],
        format!(
            "lathe: checksum mismatch for {}: expected sha256 {want}, got {got}; it was not installed. Run :Lathe build to try again, or build from source with `make` in {} (needs cargo)",
            asset(),
            p.root()
        )
    );
    assert_eq!(out["core_loaded"], false);
    assert_eq!(
        p.lib_files(),
        Vec::<String>::new(),
        "nothing installed, no temp file"
    );
}

#[test]
fn a_platform_the_release_does_not_have_is_named_with_what_it_has() {
    let url = release(
        format!("{}  lathe-{VERSION}-plan9-mips.so\n", "ab".repeat(32)),
        Body::Text("unused".into()),
    );
    let p = plugin(None);
    let out = p.drive(&url, REQUIRE);
    assert_eq!(out["ok"], false, "{out}");
    assert_eq!(
        out["err"],
        format!(
            "lathe: release v{VERSION} has no prebuilt library for {} (it has: plan9-mips). Build from source with `make` in {} (needs cargo)",
            platform().0,
            p.root()
        )
    );
    assert_eq!(p.lib_files(), Vec::<String>::new());
}

#[test]
fn an_http_error_names_the_url_and_what_to_do() {
    let url = serve(HashMap::new());
    let p = plugin(None);
    let out = p.drive(&url, REQUIRE);
    assert_eq!(out["ok"], false, "{out}");
    let err = out["err"].as_str().unwrap();
    let sums = format!("{url}/v{VERSION}/checksums.txt");
    assert!(
        err.starts_with(&format!("lathe: could not download {sums}: ")),
        "{err}"
    );
    assert!(err.contains("404"), "{err}");
    assert!(
        err.ends_with(&format!(
            ". Check the network (or vim.g.lathe_download_url) and run :Lathe build, or build from source with `make` in {} (needs cargo)",
            p.root()
        )),
        "{err}"
    );
}

#[test]
fn no_download_when_turned_off() {
    let p = plugin(None);
    let out = p.drive(
        "http://127.0.0.1:9",
        &format!("vim.g.lathe_download = false\n{REQUIRE}"),
    );
    assert_eq!(out["ok"], false, "{out}");
    assert_eq!(
        out["err"],
        format!(
            "lathe: the native library is not built. Run :Lathe build (downloads it) or `make` in {} (lazy.nvim: build = \"make\")",
            p.root()
        )
    );
    assert_eq!(out["notes"], serde_json::json!([]));
}

#[test]
fn a_library_of_another_version_is_refused() {
    let p = plugin(Some("9.9.9"));
    let local = p.root.join("lua/lathe/lathe.so");
    std::os::unix::fs::symlink(library(), &local).unwrap();
    // Then `:checkhealth lathe`, which requires lathe again.
    let out = p.drive(
        "http://127.0.0.1:9",
        &format!("{REQUIRE}\nvim.cmd('checkhealth lathe'); out.health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')"),
    );
    assert_eq!(out["ok"], false, "{out}");
    let refused = format!(
        "lathe: {} is version {VERSION} but the plugin is version 9.9.9. Rebuild it: run `make` in {} (lazy.nvim: build = \"make\"), then restart Neovim",
        local.display(),
        p.root()
    );
    assert_eq!(out["err"], refused);
    assert_eq!(out["core_loaded"], false, "the refused library is not used");
    let health = out["health"].as_str().unwrap();
    assert!(health.contains(&format!("ERROR {refused}")), "{health}");
}

#[test]
fn a_local_build_wins_and_lathe_build_says_so() {
    let p = plugin(None);
    let local = p.root.join("lua/lathe/lathe.so");
    std::os::unix::fs::symlink(library(), &local).unwrap();
    let out = p.drive(
        "http://127.0.0.1:9",
        &format!("{REQUIRE}\nvim.cmd('runtime plugin/lathe.lua')\nvim.cmd('Lathe build')"),
    );
    assert_eq!(out["ok"], true, "{out}");
    assert_eq!(
        out["notes"],
        serde_json::json!([format!(
            "lathe: {} (built from source) is loaded before any download; run `make` in {} to rebuild it",
            local.display(),
            p.root()
        )])
    );
    assert_eq!(p.lib_files(), Vec::<String>::new());
}

#[test]
fn lathe_build_downloads_in_the_background() {
    let lib = library();
    let url = release(
        format!("{}  {}\n", sha256_hex(&lib), asset()),
        Body::File(lib),
    );
    let p = plugin(None);
    let out = p.drive(
        &url,
        &format!(
            "vim.cmd('runtime plugin/lathe.lua')\nvim.cmd('Lathe build')\nout.returned_notes = #out.notes\nout.finished = vim.wait(30000, function() return #out.notes >= 2 end, 20)\n{REQUIRE}"
        ),
    );
    assert_eq!(
        out["returned_notes"], 1,
        "the command returned before the download ended: {out}"
    );
    assert_eq!(out["finished"], true, "{out}");
    assert_eq!(
        out["notes"],
        serde_json::json!([
            downloading(),
            format!(
                "lathe: installed {}/lib/{} (sha256 verified)",
                p.root(),
                asset()
            )
        ])
    );
    assert_eq!(out["ok"], true, "{out}");
    assert_eq!(out["version"], VERSION);
}

/// The release workflow names the assets the way install.lua asks for them.
#[test]
fn the_release_workflow_publishes_what_install_lua_downloads() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let wf = std::fs::read_to_string(root.join(".github/workflows/release.yml")).unwrap();
    let lua = std::fs::read_to_string(root.join("lua/lathe/install.lua")).unwrap();
    for p in [
        "linux-x86_64",
        "linux-aarch64",
        "macos-x86_64",
        "macos-aarch64",
    ] {
        assert!(wf.contains(p), "release.yml does not build {p}");
    }
    assert!(
        wf.contains("lathe-${VERSION}-${PLATFORM}.${EXT}"),
        "asset name"
    );
    assert!(
        lua.contains(r#"("lathe-%s-%s.%s")"#),
        "install.lua's asset name"
    );
    assert!(wf.contains("checksums.txt") && lua.contains(r#""checksums.txt""#));
}

/// lua/lathe/version.lua is Cargo.toml's version: the Lua side refuses a
/// library of any other.
#[test]
fn the_plugin_version_is_the_crate_version() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lua = std::fs::read_to_string(root.join("lua/lathe/version.lua")).unwrap();
    let line = lua
        .lines()
        .find(|l| l.starts_with("return "))
        .expect("version.lua returns the version");
    assert_eq!(line, format!("return {VERSION:?}"));
}

/// A failed first download is not the end of the session: after `:Lathe
/// build` succeeds, `require("lathe")` loads the library without a restart.
#[test]
fn after_a_failed_download_lathe_build_makes_require_work_without_a_restart() {
    let lib = library();
    let good = release(
        format!("{}  {}\n", sha256_hex(&lib), asset()),
        Body::File(lib),
    );
    let p = plugin(None);
    let out = p.drive(
        "http://127.0.0.1:9",
        &format!(
            r#"local first_ok, first_err = pcall(require, "lathe")
out.first_ok = first_ok
out.first_err = tostring(first_err)
vim.g.lathe_download_url = {good:?}
vim.cmd("runtime plugin/lathe.lua")
vim.cmd("Lathe build")
out.finished = vim.wait(30000, function() return #out.notes >= 3 end, 20)
{REQUIRE}"#
        ),
    );
    assert_eq!(out["first_ok"], false, "{out}");
    assert!(
        out["first_err"]
            .as_str()
            .unwrap()
            .starts_with("lathe: could not download http://127.0.0.1:9/"),
        "{out}"
    );
    assert_eq!(out["finished"], true, "{out}");
    assert_eq!(out["ok"], true, "{out}");
    assert_eq!(out["version"], VERSION);
}

/// `require("lathe")` inside a coroutine (a config or plugin manager that
/// loads plugins from one): the library is still opened on Neovim's main
/// Lua thread, so a tool's callback that comes while the coroutine waits
/// (suspended) runs. Opened on the coroutine's thread, nvim-oxi and mlua
/// called into that thread and Neovim aborted ("lua_call: thread called in
/// wrong state").
#[test]
fn lathe_required_inside_a_coroutine_calls_back_while_it_waits() {
    let p = plugin(None);
    std::os::unix::fs::symlink(library(), p.root.join("lua/lathe/lathe.so")).unwrap();
    let out = p.drive(
        "http://127.0.0.1:9",
        &format!(
            r#"
local co = coroutine.create(function()
  local lathe = require("lathe")
  lathe.setup({{ cwd = {root:?}, claude_settings = false, permission_guard_ms = 0 }})
  lathe.tool("Glob", {{ pattern = "lua/lathe/*.lua" }}, function(r) out.result = r end)
  coroutine.yield()
  out.resumed = true
end)
assert(coroutine.resume(co))
out.suspended = coroutine.status(co) == "suspended"
vim.wait(10000, function() return out.result ~= nil end, 10)
assert(coroutine.resume(co))
"#,
            root = p.root()
        ),
    );
    assert_eq!(out["suspended"], true, "{out}");
    assert_eq!(out["resumed"], true, "{out}");
    assert_eq!(out["result"]["is_error"], false, "{out}");
    assert!(
        out["result"]["content"]
            .as_str()
            .is_some_and(|c| c.contains("lua/lathe/init.lua")),
        "{out}"
    );
}
