//! Files that would hang or exhaust a naive reader: Read of
//! `/dev/zero`, a FIFO with no writer, and a 10 GB sparse file each returns
//! within seconds with a clear message, loading nothing; Edit and Write of
//! them refuse the same way. Through the tools' object-safe face with the
//! disk editor, as the pipeline runs them.

// Test code: helpers outside #[test] fns fail the test by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use lathe_core::editor::{DiskEditor, MAX_FILE_BYTES};
use lathe_core::text::fill;
use lathe_core::tools::read::ReadTool;
use lathe_core::tools::support::file_common::{FILE_NOT_REGULAR, FILE_TOO_LARGE};
use lathe_core::tools::write::WriteTool;
use lathe_core::tools::Tool;

/// Longest a refusal may take: far above what it costs (a `stat`), far
/// below what reading 10 GB or waiting for a FIFO writer would.
const PROMPT: Duration = Duration::from_secs(5);

async fn run(tool: Arc<dyn Tool>, root: &Path, input: Value) -> Result<String, String> {
    let ctx = common::tool_ctx(root, Arc::new(DiskEditor::new()));
    let started = Instant::now();
    let out = tokio::time::timeout(PROMPT, common::run_tool(tool, &ctx, &input))
        .await
        .expect("the call returns promptly");
    assert!(started.elapsed() < PROMPT);
    out
}

fn mkfifo(path: &Path) {
    let c = CString::new(path.as_os_str().as_bytes()).expect("path");
    // SAFETY: `c` is a valid NUL-terminated path for the call's duration.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(rc, 0, "mkfifo: {}", std::io::Error::last_os_error());
}

#[tokio::test]
async fn read_of_dev_zero_is_refused_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(
        Arc::new(ReadTool),
        dir.path(),
        json!({"file_path": "/dev/zero"}),
    )
    .await;
    assert_eq!(
        out,
        Err(fill(
            FILE_NOT_REGULAR,
            &[("path", "/dev/zero"), ("kind", "a character device")]
        ))
    );
}

#[tokio::test]
async fn read_of_a_fifo_without_writer_does_not_block() {
    let dir = tempfile::tempdir().expect("tempdir");
    mkfifo(&dir.path().join("pipe"));
    let out = run(Arc::new(ReadTool), dir.path(), json!({"file_path": "pipe"})).await;
    assert_eq!(
        out,
        Err(fill(
            FILE_NOT_REGULAR,
            &[("path", "pipe"), ("kind", "a FIFO (named pipe)")]
        ))
    );
    // A Write over it is refused the same way, before any open.
    let out = run(
        Arc::new(WriteTool),
        dir.path(),
        json!({"file_path": "pipe", "content": "x"}),
    )
    .await;
    assert!(
        out.as_ref()
            .is_err_and(|e| e.contains("a FIFO (named pipe), not a regular file")),
        "{out:?}"
    );
}

/// 10 GB of holes: NUL bytes from the start, so binary, said at once
/// (from the first 8000 bytes) with or without a range.
#[tokio::test]
async fn read_of_a_10_gb_sparse_file_is_refused_from_its_head() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("huge.log");
    let file = std::fs::File::create(&path).expect("create");
    file.set_len(10 * 1024 * 1024 * 1024).expect("set_len");
    drop(file);
    let out = run(
        Arc::new(ReadTool),
        dir.path(),
        json!({"file_path": "huge.log", "offset": 1, "limit": 10}),
    )
    .await;
    assert_eq!(
        out,
        Err("huge.log is a binary file (binary, 10737418240 bytes), so Read does not show its bytes. Read shows text files and images (PNG, JPEG, GIF, WebP).".to_string())
    );
    // Edit and Write refuse it from its size, before reading a byte.
    let out = run(
        Arc::new(WriteTool),
        dir.path(),
        json!({"file_path": "huge.log", "content": "x"}),
    )
    .await;
    assert_eq!(
        out,
        Err(fill(
            FILE_TOO_LARGE,
            &[
                ("path", "huge.log"),
                ("size", "10737418240"),
                ("max", &MAX_FILE_BYTES.to_string()),
            ]
        ))
    );
}

/// 10 GB that start with text and go on as a hole: a page from the start
/// comes back at once, and an offset deep inside stops at the scan budget
/// (1 GiB or 2 s), saying so, well within the prompt bound.
#[tokio::test]
async fn read_with_offset_of_a_10_gb_sparse_text_file_is_bounded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("huge.log");
    let text: String = (1..=1000).map(|i| format!("entry {i:04}\n")).collect();
    std::fs::write(&path, text).expect("write");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open");
    file.set_len(10 * 1024 * 1024 * 1024).expect("set_len");
    drop(file);
    let out = run(
        Arc::new(ReadTool),
        dir.path(),
        json!({"file_path": "huge.log", "offset": 999, "limit": 2}),
    )
    .await
    .expect("a page");
    assert!(
        out.starts_with("   999\tentry 0999\n  1000\tentry 1000\n\n[huge.log is a large file (10737418240 bytes), streamed rather than loaded: showing lines 999-1000. It has at least 1001 lines"),
        "{out}"
    );
    let err = run(
        Arc::new(ReadTool),
        dir.path(),
        json!({"file_path": "huge.log", "offset": 5000, "limit": 2}),
    )
    .await
    .expect_err("not reached");
    assert!(
        err.starts_with("Line 5000 of huge.log was not reached: Read scanned "),
        "{err}"
    );
    assert!(
        err.ends_with(" of its 10737418240 bytes (1001 lines) and one Read scans at most 1073741824 bytes or 2 s of a file. Use Grep to find the lines you need (it searches the whole file), or Bash (e.g. `tail -n 100 huge.log`) to see its end."),
        "{err}"
    );
}

/// A file whose metadata says 0 bytes but that has content (as in `/proc`)
/// is read, and only up to the limit: `/proc/self/status` is small text.
#[tokio::test]
async fn a_file_reporting_size_zero_is_still_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(
        Arc::new(ReadTool),
        dir.path(),
        json!({"file_path": "/proc/self/status"}),
    )
    .await
    .expect("read");
    assert!(out.contains("\tName:"), "{out}");
}

/// A regex that compiles past the size limit is refused before any file is
/// opened, quickly, with a message that says how to simplify it.
#[tokio::test]
async fn grep_with_a_regex_that_compiles_too_big_is_refused_promptly() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("a.txt"), "aaaa\n").expect("write");
    let err = run(
        Arc::new(lathe_core::tools::grep::GrepTool),
        dir.path(),
        json!({"pattern": "(\\w{100}){100}"}),
    )
    .await
    .expect_err("too big");
    let head = lathe_core::tools::grep::GREP_REGEX_TOO_BIG
        .split("{error}")
        .next()
        .expect("template");
    let head = fill(
        head,
        &[
            ("pattern", "(\\w{100}){100}"),
            ("max", &lathe_core::tools::grep::MAX_REGEX_BYTES.to_string()),
        ],
    );
    assert!(err.starts_with(&head), "{err}");
}

/// Grep's `path` naming a FIFO, a device or a socket is refused with what
/// it is (not "No matches", and never opened: a FIFO without a writer would
/// block the search); Glob's `path` there is "Not a directory".
#[tokio::test]
async fn grep_and_glob_of_a_fifo_a_device_or_a_socket_say_what_it_is() {
    use lathe_core::tools::glob::{GlobTool, GLOB_NOT_A_DIRECTORY};
    use lathe_core::tools::grep::{GrepTool, GREP_PATH_NOT_REGULAR};
    let dir = tempfile::tempdir().expect("tempdir");
    mkfifo(&dir.path().join("pipe"));
    let _socket = std::os::unix::net::UnixListener::bind(dir.path().join("sock")).expect("bind");
    for (path, shown, kind) in [
        ("pipe", "pipe", "a FIFO (named pipe)"),
        ("/dev/zero", "/dev/zero", "a character device"),
        ("sock", "sock", "a socket"),
    ] {
        let out = run(
            Arc::new(GrepTool),
            dir.path(),
            json!({"pattern": "x", "path": path}),
        )
        .await;
        assert_eq!(
            out,
            Err(fill(
                GREP_PATH_NOT_REGULAR,
                &[("path", shown), ("kind", kind)]
            )),
            "{path}"
        );
    }
    let out = run(
        Arc::new(GlobTool),
        dir.path(),
        json!({"pattern": "*", "path": "pipe"}),
    )
    .await;
    let pipe = dir.path().join("pipe").display().to_string();
    assert_eq!(out, Err(fill(GLOB_NOT_A_DIRECTORY, &[("path", &pipe)])));
}
