//! Helpers shared by the Neovim tests.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use lathe::{MainThread, NvimEditor};
use lathe_core::editor::{Document, Editor, EditorError, WriteOutcome, WriteRequest};
use nvim_oxi::api::{self, Buffer};
use nvim_oxi::tests::{TestFailure, TestTerminator};

/// Loads lathe into this Neovim (what `luaopen_lathe` does) and returns the bridge.
pub fn load() -> MainThread {
    // Saved conversations and large tool results go to a state directory
    // of this test's own, never the user's (`stdpath("state")` follows
    // $XDG_STATE_HOME at every call).
    let _ = lathe::host::lua_handle::lua()
        .load(
            r#"if not vim.g.lathe_test_state then
                 vim.g.lathe_test_state = vim.fn.tempname() .. "-state"
                 vim.env.XDG_STATE_HOME = vim.g.lathe_test_state
               end"#,
        )
        .exec();
    // The plugin on 'runtimepath', as wherever lathe is loaded: the front
    // end calls its Lua glue with `require("lathe.chat")` and the like.
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let _ = lathe::host::lua_handle::lua()
        .load(format!("vim.opt.rtp:prepend({root:?})"))
        .exec();
    lathe::api::install();
    lathe::api::state::main_thread().expect("install() creates the bridge")
}

/// A fresh file under the temp dir holding `bytes`.
pub fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "lathe-nvim-test-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("write temp file");
    p
}

/// `:edit path` and the buffer it made current.
pub fn edit(path: &Path) -> Buffer {
    api::command(&format!("edit {}", path.display())).expect(":edit");
    api::get_current_buf()
}

/// The buffer's lines.
pub fn lines(buf: &Buffer) -> Vec<String> {
    buf.get_lines(.., false)
        .expect("get_lines")
        .map(|l| l.to_string_lossy().into_owned())
        .collect()
}

/// Fails every call: the tests only touch loaded buffers.
pub struct NoDisk;

#[async_trait]
impl Editor for NoDisk {
    async fn read(&self, path: &Path) -> Result<Document, EditorError> {
        Err(EditorError::Unavailable(format!(
            "NoDisk: {}",
            path.display()
        )))
    }
    async fn write(&self, path: &Path, _req: WriteRequest) -> Result<WriteOutcome, EditorError> {
        Err(EditorError::Unavailable(format!(
            "NoDisk: {}",
            path.display()
        )))
    }
}

/// A `NvimEditor` over `main` that saves after edits.
pub fn editor(main: &MainThread) -> Arc<NvimEditor> {
    Arc::new(NvimEditor::new(main.clone(), Arc::new(NoDisk), true))
}

/// Runs `body` on lathe's runtime and ends the test with its result.
pub fn run_async<F>(t: TestTerminator, body: F)
where
    F: Future<Output = Result<(), String>> + Send + 'static,
{
    let rt = lathe::host::runtime::handle().expect("runtime");
    let task = rt.spawn(async move {
        tokio::time::timeout(std::time::Duration::from_secs(20), body)
            .await
            .unwrap_or_else(|_| Err("test body timed out after 20 s".into()))
    });
    rt.spawn(async move {
        let r = match task.await {
            Ok(r) => r,
            Err(e) => Err(format!("test body panicked: {e}")),
        };
        t.terminate(r.map_err(TestFailure::Error));
    });
}

/// `Err` with `what` when `a != b`.
pub fn check_eq<T: PartialEq + std::fmt::Debug>(what: &str, a: T, b: T) -> Result<(), String> {
    if a == b {
        Ok(())
    } else {
        Err(format!("{what}: got {a:?}, want {b:?}"))
    }
}

/// Loads lathe, puts the plugin and `tests/nvim` (for `lua/lathe_test.lua`)
/// on 'runtimepath', and runs the Lua `chunk` with `T = require("lathe_test")`
/// in scope. `Err` with the Lua error (an assertion's message) when it raises.
pub fn lua_test(chunk: &str) -> Result<(), String> {
    load();
    let lua = lathe::host::lua_handle::lua();
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let here = env!("CARGO_MANIFEST_DIR");
    lua.load(format!(
        "vim.opt.rtp:prepend({root:?}); vim.opt.rtp:prepend({here:?})"
    ))
    .exec()
    .map_err(|e| e.to_string())?;
    lua.load(format!("local T = require('lathe_test')\n{chunk}"))
        .set_name("test")
        .exec()
        .map_err(|e| e.to_string())
}

/// Starts `mock-llm` with the JSON `script` on lathe's runtime and runs
/// `chunk` like [`lua_test`], with the Lua global `MOCK_URL` holding the
/// server's base URL and `MOCK_LOG` the file its request log is written
/// to (one request body per line). Then fails unless the server served every scripted
/// response (a request the pairing rule or an `expect` rejected does not
/// count, so a script doubles as an assertion on what lathe sent).
pub fn lua_test_with_model(script: &str, chunk: &str) -> Result<(), String> {
    load();
    let entries = serde_json::from_str::<serde_json::Value>(script)
        .map_err(|e| format!("script: {e}"))?["responses"]
        .as_array()
        .map_or(0, Vec::len);
    let script = mock_llm::Script::from_json(script).map_err(|e| format!("script: {e}"))?;
    let rt = lathe::host::runtime::handle().map_err(|e| e.to_string())?;
    static LOGS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let log = std::env::temp_dir().join(format!(
        "lathe-nvim-mock-{}-{}.jsonl",
        std::process::id(),
        LOGS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let server = rt
        .block_on(mock_llm::spawn(script, Some(log.clone())))
        .map_err(|e| format!("mock-llm: {e}"))?;
    let globals = lathe::host::lua_handle::lua().globals();
    globals
        .set("MOCK_URL", server.url())
        .map_err(|e| e.to_string())?;
    globals
        .set("MOCK_LOG", log.to_string_lossy().into_owned())
        .map_err(|e| e.to_string())?;
    let result = lua_test(chunk);
    let _ = std::fs::remove_file(&log);
    result?;
    let served = server.served();
    if served != entries {
        let last = server.requests().len();
        return Err(format!(
            "mock-llm served {served} of {entries} scripted responses ({last} requests received)"
        ));
    }
    Ok(())
}
