//! What the calls of one answer share: its changing calls, in order (so a
//! float can say "Edit cart.py (1 of 3)", show every queued change at once
//! and know whether another ask is coming), and the answer's own grant
//! (`Y` in the float: allow the rest of this answer's file changes).
//!
//! The state lives with one [`ToolExecutor`](super::ToolExecutor): a new
//! answer starts with a fresh one, so the grant never outlives the answer
//! and no rule is added or saved.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::permissions::{Burst, QueuedChange};
use crate::tools::support::diff;

/// One changing call of the answer.
#[derive(Debug, Clone)]
struct Change {
    id: String,
    queued: QueuedChange,
    /// The call asked the user.
    asked: bool,
    /// The call ended (ran, was refused or failed).
    done: bool,
}

#[derive(Debug, Default)]
struct Inner {
    changes: Vec<Change>,
    /// `Y`: the answer's remaining file changes run without asking.
    allow_rest: bool,
    /// Every call of the answer is known (its stream ended).
    complete: bool,
}

/// The shared state of one answer's calls (see the module docs). Cheap to
/// clone: clones share it.
#[derive(Debug, Clone, Default)]
pub struct AnswerState {
    inner: Arc<Mutex<Inner>>,
    /// Wakes asks waiting for the answer's last call.
    completed: Arc<tokio::sync::Notify>,
}

impl AnswerState {
    fn with<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> R {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut inner)
    }

    /// Notes a changing call of the answer (in the model's order).
    pub fn add_change(&self, id: &str, queued: QueuedChange) {
        self.with(|s| {
            s.changes.push(Change {
                id: id.to_string(),
                queued,
                asked: false,
                done: false,
            })
        });
    }

    /// Every call of the answer is known: its stream ended (or its calls
    /// are being finished).
    pub fn complete(&self) {
        self.with(|s| s.complete = true);
        self.completed.notify_waiters();
    }

    /// Call `id` is about to ask: once every call of the answer is known
    /// (so the count is whole; a call can start while the answer still
    /// streams), its place among the answer's changing calls asked about
    /// (`index` counts those asked before it, `total` adds the ones still
    /// to come) and the changes queued after it. `None` at once when `id`
    /// is no changing call of the answer.
    pub async fn asking(&self, id: &str) -> Option<Burst> {
        if !self.with(|s| s.changes.iter().any(|c| c.id == id)) {
            return None;
        }
        loop {
            let woken = self.completed.notified();
            if self.with(|s| s.complete) {
                break;
            }
            woken.await;
        }
        self.with(|s| {
            let pos = s.changes.iter().position(|c| c.id == id)?;
            s.changes[pos].asked = true;
            let asked_before = s.changes[..pos].iter().filter(|c| c.asked).count();
            let next: Vec<QueuedChange> = s.changes[pos + 1..]
                .iter()
                .filter(|c| !c.done)
                .map(|c| c.queued.clone())
                .collect();
            let index = asked_before + 1;
            Some(Burst {
                index,
                total: index + next.len(),
                next,
            })
        })
    }

    /// Call `id` ended. Returns `true` when it was a changing call and no
    /// changing call of the answer is left to run (nothing more will ask
    /// for a change).
    pub fn finished(&self, id: &str) -> bool {
        self.with(|s| {
            let Some(c) = s.changes.iter_mut().find(|c| c.id == id) else {
                return false;
            };
            c.done = true;
            s.changes.iter().all(|c| c.done)
        })
    }

    /// `Y`: the rest of this answer's file changes run without asking.
    pub fn allow_rest(&self) {
        self.with(|s| s.allow_rest = true);
    }

    /// `true` after [`AnswerState::allow_rest`].
    pub fn allows_rest(&self) -> bool {
        self.with(|s| s.allow_rest)
    }
}

/// The note the combined preview starts with (it is no applied change).
pub const COMBINED_PREVIEW_NOTE: &str =
    "# Preview of this answer's queued changes, planned in order; nothing is applied yet. Each call still asks (or Y allows the rest).";
/// The line of a queued change that does not apply to the text before it.
/// `{title}`.
pub const COMBINED_NOT_APPLYING: &str =
    "# {title}: its old_string is not in the file as planned so far; it would fail as it stands";

/// One change of the combined preview: the call it comes from, the file,
/// and the whole text before (`None`: no file yet) and after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedText {
    /// `Edit cart.py`.
    pub title: String,
    /// The file (absolute).
    pub path: PathBuf,
    /// The text before the change (`None`: the file does not exist).
    pub before: Option<String>,
    /// The text after it.
    pub after: String,
}

/// Applies one queued Edit or Write input to `text` (the file as planned
/// so far; `None`: no file). `None` when it does not apply (Edit's
/// `old_string` is not there, or the input is no Edit/Write).
pub fn apply_queued(text: Option<&str>, change: &QueuedChange) -> Option<String> {
    let input = &change.input;
    let s = |k: &str| input.get(k).and_then(Value::as_str);
    match change.tool.as_str() {
        "Write" => s("content").map(str::to_string),
        "Edit" => {
            let (old, new) = (s("old_string")?, s("new_string")?);
            let text = text.unwrap_or("");
            if old.is_empty() {
                return (text.is_empty()).then(|| new.to_string());
            }
            if !text.contains(old) {
                return None;
            }
            let all = input
                .get("replace_all")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            Some(if all {
                text.replace(old, new)
            } else {
                text.replacen(old, new, 1)
            })
        }
        _ => None,
    }
}

/// The combined preview of an answer's changes: `first` (the asked call's
/// planned change) and then `queued` applied in order, each against the
/// text the changes before it left (read once per file with `read`, which
/// gives `None` for a missing file). Returns the preview's text: a note
/// saying it is a preview, then per file one unified diff from the text
/// before the first change to the text after the last, and a line for
/// each change that would not apply.
pub fn combined_preview(
    first: Option<PlannedText>,
    queued: &[QueuedChange],
    read: impl Fn(&Path) -> Option<String>,
    root: &Path,
) -> String {
    // Per file, in first-touched order: the text before and as planned.
    let mut order: Vec<PathBuf> = Vec::new();
    let mut texts: HashMap<PathBuf, (Option<String>, Option<String>)> = HashMap::new();
    let mut notes = Vec::new();
    if let Some(f) = first {
        order.push(f.path.clone());
        texts.insert(f.path, (f.before, Some(f.after)));
    }
    for q in queued {
        let Some(path) = q.path.clone() else { continue };
        let entry = texts.entry(path.clone()).or_insert_with(|| {
            order.push(path.clone());
            let now = read(&path);
            (now.clone(), now)
        });
        match apply_queued(entry.1.as_deref(), q) {
            Some(after) => entry.1 = Some(after),
            None => notes.push(crate::text::fill(
                COMBINED_NOT_APPLYING,
                &[("title", &q.title)],
            )),
        }
    }
    let mut out = vec![COMBINED_PREVIEW_NOTE.to_string()];
    out.extend(notes);
    for path in order {
        let Some((before, after)) = texts.remove(&path) else {
            continue;
        };
        let name = crate::tools::support::paths::display(root, &path);
        let d = diff::unified_diff(before.as_deref(), after.as_deref().unwrap_or(""), &name);
        if !d.is_empty() {
            out.push(d.trim_end_matches('\n').to_string());
        }
    }
    out.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn edit(path: &str, old: &str, new: &str) -> QueuedChange {
        QueuedChange {
            tool: "Edit".into(),
            title: format!("Edit {path}"),
            path: Some(PathBuf::from(path)),
            input: json!({ "file_path": path, "old_string": old, "new_string": new }),
        }
    }

    #[test]
    fn golden_texts() {
        assert_eq!(
            COMBINED_PREVIEW_NOTE,
            "# Preview of this answer's queued changes, planned in order; nothing is applied yet. Each call still asks (or Y allows the rest)."
        );
        assert_eq!(
            COMBINED_NOT_APPLYING,
            "# {title}: its old_string is not in the file as planned so far; it would fail as it stands"
        );
    }

    #[tokio::test]
    async fn burst_counts_the_asked_changes_and_what_is_still_to_come() {
        let s = AnswerState::default();
        s.add_change("a", edit("/p/a.py", "x", "y"));
        // The first call asks while the answer still streams: it waits
        // until every call is known.
        let early = tokio::spawn({
            let s = s.clone();
            async move { s.asking("a").await }
        });
        tokio::task::yield_now().await;
        for id in ["b", "c"] {
            s.add_change(id, edit(&format!("/p/{id}.py"), "x", "y"));
        }
        s.complete();
        let first = early.await.expect("task").expect("burst");
        assert_eq!((first.index, first.total, first.next.len()), (1, 3, 2));
        assert!(!s.finished("a"));
        // b runs without asking (a rule allows it): c is then 2 of 2.
        assert!(!s.finished("b"));
        let third = s.asking("c").await.expect("burst");
        assert_eq!((third.index, third.total, third.next.len()), (2, 2, 0));
        assert!(s.finished("c"));
        assert!(s.asking("not-a-change").await.is_none());
    }

    #[test]
    fn the_combined_preview_plans_a_second_edit_of_a_file_against_the_first() {
        let first = PlannedText {
            title: "Edit cart.py".into(),
            path: PathBuf::from("/p/cart.py"),
            before: Some("a = 1\nb = 2\n".into()),
            after: "a = 10\nb = 2\n".into(),
        };
        let queued = vec![
            edit("/p/cart.py", "a = 10\nb = 2", "a = 10\nb = 20"),
            QueuedChange {
                tool: "Write".into(),
                title: "Write new.py".into(),
                path: Some(PathBuf::from("/p/new.py")),
                input: json!({ "file_path": "/p/new.py", "content": "x = 1\n" }),
            },
            edit("/p/cart.py", "not there", "z"),
        ];
        let text = combined_preview(Some(first), &queued, |_| None, Path::new("/p"));
        assert!(text.starts_with(COMBINED_PREVIEW_NOTE), "{text}");
        assert!(text.contains("-a = 1\n-b = 2\n+a = 10\n+b = 20"), "{text}");
        assert!(text.contains("+x = 1"), "{text}");
        assert!(
            text.contains("Edit /p/cart.py: its old_string is not in the file"),
            "{text}"
        );
    }
}
