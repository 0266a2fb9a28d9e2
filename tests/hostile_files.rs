//! Files that would hang or exhaust a naive reader (issue 12 §5): Read of
//! `/dev/zero`, a FIFO with no writer, and a 10 GB sparse file each returns
//! within seconds with a clear message, loading nothing; Edit and Write of
//! them refuse the same way. Through the tools' object-safe face with the
//! disk editor, as the pipeline runs them.

// Test code: helpers outside #[test] fns fail the test by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use lathe::editor::{DiskEditor, MAX_FILE_BYTES};
use lathe::text::fill;
use lathe::tools::file_common::{FILE_NOT_REGULAR, FILE_TOO_LARGE};
use lathe::tools::read::ReadTool;
use lathe::tools::write::WriteTool;
use lathe::tools::Tool;

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

#[tokio::test]
async fn read_of_a_10_gb_sparse_file_is_refused_from_its_size() {
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
        Arc::new(lathe::tools::grep::GrepTool),
        dir.path(),
        json!({"pattern": "(\\w{100}){100}"}),
    )
    .await
    .expect_err("too big");
    let head = lathe::tools::grep::GREP_REGEX_TOO_BIG
        .split("{error}")
        .next()
        .expect("template");
    let head = fill(
        head,
        &[
            ("pattern", "(\\w{100}){100}"),
            ("max", &lathe::tools::grep::MAX_REGEX_BYTES.to_string()),
        ],
    );
    assert!(err.starts_with(&head), "{err}");
}
