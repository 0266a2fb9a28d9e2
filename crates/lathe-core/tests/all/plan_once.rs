//! Edit and Write plan once (docs/pipeline.md, "One call, one path"):
//! through the whole pipeline a change reads the document once and writes
//! it once, the float's diff is rendered from the same plan that is written,
//! and the editor's stale check at write time still refuses a document the
//! user changed while the float was open.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use lathe_core::config::Config;
use lathe_core::editor::{DiskEditor, Document, Editor, EditorError, WriteOutcome, WriteRequest};
use lathe_core::events::ToolStatus;
use lathe_core::execution::{run_tool_use, ExecEnv, PendingToolUse};
use lathe_core::permissions::{PermissionPreview, PromptAnswer, Prompter};
use lathe_core::protocol::ToolUse;
use lathe_core::tools::builtin_tools;
use lathe_core::tools::support::diff::unified_diff;
use serde_json::{json, Value};

/// A disk editor that counts reads and keeps every write request.
#[derive(Default)]
struct CountingEditor {
    reads: Mutex<usize>,
    writes: Mutex<Vec<WriteRequest>>,
}

#[async_trait]
impl Editor for CountingEditor {
    async fn read(&self, path: &Path) -> Result<Document, EditorError> {
        *self.reads.lock().expect("lock") += 1;
        DiskEditor.read(path).await
    }
    async fn write(&self, path: &Path, req: WriteRequest) -> Result<WriteOutcome, EditorError> {
        self.writes.lock().expect("lock").push(req.clone());
        DiskEditor.write(path, req).await
    }
}

impl CountingEditor {
    fn reads(&self) -> usize {
        *self.reads.lock().expect("lock")
    }
    fn writes(&self) -> Vec<WriteRequest> {
        self.writes.lock().expect("lock").clone()
    }
}

/// Allows every ask and keeps the preview it was shown; `meddle` runs while
/// the float is "open" (the user typing before pressing `y`).
struct RecordingPrompter {
    shown: Mutex<Vec<PermissionPreview>>,
    meddle: Box<dyn Fn() + Send + Sync>,
}

#[async_trait]
impl Prompter for RecordingPrompter {
    async fn ask(&self, _tool: &str, preview: &PermissionPreview) -> PromptAnswer {
        self.shown.lock().expect("lock").push(preview.clone());
        (self.meddle)();
        PromptAnswer::AllowOnce
    }
}

struct Setup {
    _dir: tempfile::TempDir,
    root: PathBuf,
    editor: Arc<CountingEditor>,
    prompter: Arc<RecordingPrompter>,
    env: ExecEnv,
}

fn setup(file: &str, text: &str, meddle: impl Fn(&Path) + Send + Sync + 'static) -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("root");
    std::fs::write(root.join(file), text).expect("write");
    let editor = Arc::new(CountingEditor::default());
    let target = root.join(file);
    let prompter = Arc::new(RecordingPrompter {
        shown: Mutex::default(),
        meddle: Box::new(move || meddle(&target)),
    });
    let config = Config::new(&root);
    // Default rules: Read runs, Edit and Write ask.
    let env = common::env_at(&root)
        .tools(builtin_tools(&config))
        .editor(editor.clone())
        .prompter(prompter.clone())
        .build();
    Setup {
        _dir: dir,
        root,
        editor,
        prompter,
        env,
    }
}

async fn call(env: &ExecEnv, name: &str, input: Value) -> (bool, String, ToolStatus) {
    let run = run_tool_use(
        &PendingToolUse::from(ToolUse {
            id: format!("toolu_{name}"),
            name: name.into(),
            input,
            extra: Default::default(),
        }),
        env,
    )
    .await;
    (
        run.result.is_error,
        run.result.content.as_text(),
        run.status,
    )
}

#[tokio::test]
async fn an_edit_reads_once_writes_once_and_writes_the_diff_it_showed() {
    let before = "def greet():\n    print('Helo')\n";
    let s = setup("greet.py", before, |_| {});
    let (err, _, _) = call(&s.env, "Read", json!({"file_path": "greet.py"})).await;
    assert!(!err);
    assert_eq!(s.editor.reads(), 1, "the Read itself");

    let (err, text, _) = call(
        &s.env,
        "Edit",
        json!({"file_path": "greet.py", "old_string": "Helo", "new_string": "Hello"}),
    )
    .await;
    assert!(!err, "{text}");
    assert_eq!(s.editor.reads(), 2, "one read for the Edit: plan once");
    let writes = s.editor.writes();
    assert_eq!(writes.len(), 1, "one write for the Edit");

    let shown = s.prompter.shown.lock().expect("lock").clone();
    assert_eq!(shown.len(), 1);
    // The float's diff is exactly the change that was written.
    assert_eq!(
        shown[0].diff,
        unified_diff(Some(before), &writes[0].text, "greet.py")
    );
    assert_eq!(
        shown[0].diff,
        "--- a/greet.py\n+++ b/greet.py\n@@ -1,2 +1,2 @@\n def greet():\n-    print('Helo')\n+    print('Hello')\n"
    );
    assert_eq!(
        std::fs::read_to_string(s.root.join("greet.py")).expect("read"),
        &*writes[0].text
    );
}

#[tokio::test]
async fn a_write_reads_once_writes_once_and_writes_the_diff_it_showed() {
    let s = setup("notes.txt", "old\n", |_| {});
    call(&s.env, "Read", json!({"file_path": "notes.txt"})).await;
    let (err, text, _) = call(
        &s.env,
        "Write",
        json!({"file_path": "notes.txt", "content": "new\n"}),
    )
    .await;
    assert!(!err, "{text}");
    assert_eq!(s.editor.reads(), 2);
    let writes = s.editor.writes();
    assert_eq!(writes.len(), 1);
    let shown = s.prompter.shown.lock().expect("lock").clone();
    assert_eq!(
        shown[0].diff,
        unified_diff(Some("old\n"), &writes[0].text, "notes.txt")
    );
}

#[tokio::test]
async fn a_file_changed_while_the_float_is_open_is_refused_as_stale() {
    let s = setup("list.txt", "alpha\nbeta\n", |path| {
        // The user saves a change while the float waits for `y`.
        std::fs::write(path, "alpha\nbeta typed by the user\n").expect("write");
    });
    call(&s.env, "Read", json!({"file_path": "list.txt"})).await;
    let (err, text, status) = call(
        &s.env,
        "Edit",
        json!({"file_path": "list.txt", "old_string": "alpha", "new_string": "ALPHA"}),
    )
    .await;
    assert!(err);
    assert_eq!(status, ToolStatus::Error);
    assert_eq!(
        text,
        "list.txt has been modified since you last read it (by the user or another program), so nothing was changed. Read it again, then retry with its current text."
    );
    assert_eq!(
        std::fs::read_to_string(s.root.join("list.txt")).expect("read"),
        "alpha\nbeta typed by the user\n",
        "the user's text is kept"
    );
}
