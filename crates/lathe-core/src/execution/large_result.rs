//! Gate 9's size rule: a result longer than its tool's
//! `max_result_size_chars` is written in full to
//! `<state>/tool-results/<session>/<tool_use_id>.txt` and the model gets a
//! preview, the size and that path (which Read can open). If the file cannot
//! be written, the full result is returned instead — never lost.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::Value;

use crate::protocol::{ContentBlock, ToolResultContent};
use crate::text::fill;

/// Chars of a persisted result shown to the model.
pub const PREVIEW_CHARS: usize = 2_000;

/// What the model gets instead of an oversized result. `{chars}`, `{bytes}`,
/// `{path}`, `{preview_chars}`, `{preview}`.
pub const PERSISTED_RESULT: &str =
    "The output was too large to show in full ({chars} chars, {bytes} bytes). \
It was saved to {path} — Read that file with offset/limit, or Grep it, to see the rest. \
The first {preview_chars} chars:\n{preview}";

/// Model-facing: added to an error result when the same call (tool and
/// input) already failed with the same message in this conversation, so
/// that a model looping on it hears it is looping. `{count}` (this call
/// included, at least 2).
pub const REPEATED_FAILURE: &str = "You made this exact call before and it failed the same way ({count} times now, this one included): the same call will get the same answer. Change the input as the message above says, try another way, or tell the user what stops you.";

/// Where one session's oversized results go, and what its calls failed
/// with (gate 9's memory of the conversation).
#[derive(Debug)]
pub struct ResultStore {
    dir: PathBuf,
    /// (tool, canonical input) → (error message, how many times).
    failures: Mutex<HashMap<(String, String), (String, u32)>>,
}

impl ResultStore {
    /// Results of session `session_id` under `state_dir/tool-results/`.
    /// When the session already has results (it is resumed), this process
    /// marks their folder as held, so no other lathe's cleanup removes them
    /// while it runs (`tools::support::retention`): one `stat`, and one small file
    /// only then.
    pub fn new(state_dir: PathBuf, session_id: &str) -> Self {
        let store = Self {
            dir: state_dir
                .join(crate::tools::support::retention::TOOL_RESULTS_DIR)
                .join(sanitize(session_id)),
            failures: Mutex::new(HashMap::new()),
        };
        if store.dir.is_dir() {
            store.hold();
        }
        store
    }

    /// The folder this session's results are saved in
    /// (`<state>/tool-results/<session>`; it may not exist yet).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Remembers that `tool` with `input` failed with `message`; from the
    /// second time the same call fails the same way, the
    /// [`REPEATED_FAILURE`] note to add to its result. The key is the tool
    /// and its input as canonical JSON (keys sorted), so the same input
    /// written in another key order is the same call.
    pub fn repeated_failure(&self, tool: &str, input: &Value, message: &str) -> Option<String> {
        let key = (
            tool.to_string(),
            serde_json::to_string(input).unwrap_or_default(),
        );
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let entry = failures
            .entry(key)
            .or_insert_with(|| (message.to_string(), 0));
        if entry.0 == message {
            entry.1 += 1;
        } else {
            *entry = (message.to_string(), 1);
        }
        (entry.1 >= 2).then(|| fill(REPEATED_FAILURE, &[("count", &entry.1.to_string())]))
    }

    /// Writes this process's `.lathe-pid-<pid>` marker in the folder
    /// (errors ignored: at worst the results are cleaned up after 7 days).
    fn hold(&self) {
        let marker = crate::tools::support::retention::hold_marker_name(std::process::id());
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.dir.join(marker));
    }

    /// `text` itself when it has at most `max_chars` chars (or no limit);
    /// otherwise the file is written and the preview message returned.
    pub fn bound(&self, tool_use_id: &str, text: String, max_chars: Option<usize>) -> String {
        let Some(max) = max_chars else { return text };
        let chars = text.chars().count();
        if chars <= max {
            return text;
        }
        let path = self.dir.join(format!("{}.txt", sanitize(tool_use_id)));
        let written = std::fs::create_dir_all(&self.dir).and_then(|_| std::fs::write(&path, &text));
        if written.is_err() {
            return text;
        }
        self.hold();
        let preview: String = text.chars().take(PREVIEW_CHARS).collect();
        fill(
            PERSISTED_RESULT,
            &[
                ("chars", &chars.to_string()),
                ("bytes", &text.len().to_string()),
                ("path", &path.display().to_string()),
                ("preview_chars", &PREVIEW_CHARS.to_string()),
                ("preview", &preview),
            ],
        )
    }

    /// A result of text and images: its text (the text blocks joined with
    /// `\n`, as the chat shows it) bounded as [`Self::bound`] does; when
    /// the text is saved, the preview message takes the place of the text
    /// blocks, first, and the images follow in their order.
    pub fn bound_blocks(
        &self,
        tool_use_id: &str,
        blocks: Vec<ContentBlock>,
        max_chars: Option<usize>,
    ) -> Vec<ContentBlock> {
        let text = ToolResultContent::Blocks(blocks.clone()).as_text();
        let Some(max) = max_chars.filter(|&m| text.chars().count() > m) else {
            return blocks;
        };
        let bounded = self.bound(tool_use_id, text.clone(), Some(max));
        if bounded == text {
            return blocks;
        }
        std::iter::once(ContentBlock::Text { text: bounded })
            .chain(
                blocks
                    .into_iter()
                    .filter(|b| !matches!(b, ContentBlock::Text { .. })),
            )
            .collect()
    }
}

/// Keeps `[A-Za-z0-9_-]`, replaces the rest with `_` (ids come from the model).
fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_results_pass_through() {
        let dir = tempfile::tempdir().unwrap();
        let store = ResultStore::new(dir.path().to_path_buf(), "s1");
        assert_eq!(store.bound("toolu_1", "short".into(), Some(10)), "short");
        assert_eq!(store.bound("toolu_1", "x".repeat(50), None), "x".repeat(50));
    }

    #[test]
    fn large_results_are_saved_in_full_with_a_preview() {
        let dir = tempfile::tempdir().unwrap();
        let store = ResultStore::new(dir.path().to_path_buf(), "s1");
        let text: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        let out = store.bound("toolu_../x", text.clone(), Some(20_000));
        let path = dir.path().join("tool-results/s1/toolu____x.txt");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        assert!(out.starts_with(&format!(
            "The output was too large to show in full ({} chars, {} bytes). It was saved to {} — Read that file",
            text.len(),
            text.len(),
            path.display()
        )));
        assert!(out.ends_with(&text.chars().take(PREVIEW_CHARS).collect::<String>()));
        assert!(out.chars().count() < 2_400);
        // The folder is marked as held by this process (tools::support::retention).
        let marker = crate::tools::support::retention::hold_marker_name(std::process::id());
        assert!(dir.path().join("tool-results/s1").join(&marker).exists());
        // A session opened again (resumed) in a new store marks it too.
        std::fs::remove_file(dir.path().join("tool-results/s1").join(&marker)).unwrap();
        let _again = ResultStore::new(dir.path().to_path_buf(), "s1");
        assert!(dir.path().join("tool-results/s1").join(&marker).exists());
        // A session with no results writes nothing.
        let _none = ResultStore::new(dir.path().to_path_buf(), "s2");
        assert!(!dir.path().join("tool-results/s2").exists());
    }

    /// An image plus 200 KB of text went out inline.
    #[test]
    fn mixed_results_are_bounded_and_keep_their_images() {
        let dir = tempfile::tempdir().unwrap();
        let store = ResultStore::new(dir.path().to_path_buf(), "s1");
        let image = ContentBlock::Image {
            source: crate::protocol::ImageSource {
                kind: "base64".into(),
                media_type: "image/png".into(),
                data: "AAAA".into(),
            },
        };
        let text = |t: String| ContentBlock::Text { text: t };
        let small = vec![text("a".into()), image.clone()];
        assert_eq!(store.bound_blocks("t1", small.clone(), Some(10)), small);
        let big = vec![
            text("x".repeat(100_000)),
            image.clone(),
            text("y".repeat(100_000)),
        ];
        let out = store.bound_blocks("t2", big, Some(30_000));
        assert_eq!(out.len(), 2, "{:?}", &out[1]);
        let ContentBlock::Text { text: shown } = &out[0] else {
            panic!("{:?}", out[0])
        };
        assert!(
            shown.starts_with("The output was too large to show in full (200001 chars"),
            "{}",
            &shown[..100]
        );
        assert!(shown.chars().count() < 2_500);
        assert_eq!(out[1], image);
        let saved = std::fs::read_to_string(dir.path().join("tool-results/s1/t2.txt")).unwrap();
        assert_eq!(
            saved,
            format!("{}\n{}", "x".repeat(100_000), "y".repeat(100_000))
        );
    }

    /// A small model made the same failing call 7–11 times.
    #[test]
    fn the_same_failing_call_is_told_from_its_second_time() {
        let dir = tempfile::tempdir().unwrap();
        let store = ResultStore::new(dir.path().to_path_buf(), "s1");
        let input = serde_json::json!({ "b": 1, "a": "x" });
        let same_in_other_order: Value = serde_json::from_str(r#"{"a":"x","b":1}"#).unwrap();
        assert_eq!(store.repeated_failure("Edit", &input, "no"), None);
        assert_eq!(
            store.repeated_failure("Read", &input, "no"),
            None,
            "another tool"
        );
        assert_eq!(
            store.repeated_failure("Edit", &serde_json::json!({ "a": "y" }), "no"),
            None,
            "another input"
        );
        assert_eq!(
            store.repeated_failure("Edit", &same_in_other_order, "no").as_deref(),
            Some("You made this exact call before and it failed the same way (2 times now, this one included): the same call will get the same answer. Change the input as the message above says, try another way, or tell the user what stops you.")
        );
        assert!(store
            .repeated_failure("Edit", &input, "no")
            .is_some_and(|n| n.contains("(3 times now")));
        assert_eq!(
            store.repeated_failure("Edit", &input, "other"),
            None,
            "another answer"
        );
    }

    #[test]
    fn unwritable_store_returns_everything() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, "").unwrap();
        let store = ResultStore::new(blocker, "s1");
        let text = "y".repeat(100);
        assert_eq!(store.bound("toolu_1", text.clone(), Some(10)), text);
    }
}
