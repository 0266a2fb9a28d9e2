//! What Grep and Glob see of the editor: the unsaved texts of one
//! [`Editor::unsaved_texts`] snapshot, taken once at the start of a call
//! (docs/edits.md, "Search sees unsaved text").
//!
//! A file the walk reaches whose buffer is modified is searched in the
//! buffer's text; a named buffer with no file yet counts as a file when it
//! passes the walk's filters (`search_walk::walk_files` asks
//! [`ignored_by_files`] for the ignore files the walk would have read).
//! Everything else stays on the disk path: with no unsaved buffer the walk
//! does no extra work.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::gitignore::GitignoreBuilder;

use crate::editor::{Editor, UnsavedText};
use crate::permissions::resolve_for_rules;
use crate::text::fill;

/// Note ending a Grep result when some matches come from unsaved text.
/// `{list}` (their paths).
pub const GREP_UNSAVED_NOTE: &str = "Unsaved text: the matches in {list} come from text open in Neovim that is not saved to disk (the file on disk differs or does not exist yet). Read shows the same text; Edit and Write change it in the buffer.";

/// Note ending a Glob result when some listed files exist only in Neovim.
/// `{list}` (their paths), `{is}` (`is`/`are`).
pub const GLOB_UNSAVED_NOTE: &str = "Not on disk yet: {list} {is} open in Neovim but never written. Read shows the buffer's text; Edit and Write change it in the buffer.";

/// The end of a note's `{list}` when it names only the first few. `{count}`.
pub const UNSAVED_MORE: &str = "and {count} more";

/// How many paths a note names before [`UNSAVED_MORE`].
const NAMED: usize = 5;

/// The unsaved texts of one snapshot, found by canonical path.
#[derive(Debug, Default)]
pub struct UnsavedSet {
    by_canonical: HashMap<PathBuf, Arc<UnsavedText>>,
}

impl UnsavedSet {
    /// Takes the editor's snapshot (one main-thread trip in Neovim). When
    /// the editor cannot answer, the search goes on with the disk alone.
    pub async fn take(editor: &dyn Editor) -> Vec<UnsavedText> {
        editor.unsaved_texts().await.unwrap_or_default()
    }

    /// Indexes `texts` by their canonical paths
    /// ([`resolve_for_rules`]: symlinks resolved, a file that does not exist
    /// yet below its deepest existing folder). Does file-system I/O: call
    /// it on the blocking pool.
    pub fn resolve(texts: Vec<UnsavedText>) -> Self {
        let by_canonical = texts
            .into_iter()
            .map(|t| (resolve_for_rules(&t.path), Arc::new(t)))
            .collect();
        Self { by_canonical }
    }

    /// `true` when no buffer holds unsaved text.
    pub fn is_empty(&self) -> bool {
        self.by_canonical.is_empty()
    }

    /// The unsaved text of the file at `canonical`, if a buffer has one.
    pub fn get(&self, canonical: &Path) -> Option<&Arc<UnsavedText>> {
        self.by_canonical.get(canonical)
    }

    /// The buffers whose file does not exist yet, with their canonical
    /// paths, in path order.
    pub fn not_on_disk(&self) -> Vec<(&PathBuf, &Arc<UnsavedText>)> {
        let mut v: Vec<_> = self
            .by_canonical
            .iter()
            .filter(|(_, t)| !t.on_disk)
            .collect();
        v.sort_by(|a, b| a.0.cmp(b.0));
        v
    }
}

/// `true` when the ignore files a walk would read (`.rgignore`, `.ignore`,
/// `.gitignore` in `path`'s folders and their parents, `.git/info/exclude`,
/// the global git excludes) ignore `path`, a file that does not exist yet.
/// The deepest folder that decides wins, as in ripgrep; a `!` rule
/// whitelists.
pub fn ignored_by_files(path: &Path) -> bool {
    for dir in path.ancestors().skip(1) {
        let files = [
            dir.join(".rgignore"),
            dir.join(".ignore"),
            dir.join(".gitignore"),
            dir.join(".git/info/exclude"),
        ];
        for file in files {
            if !file.is_file() {
                continue;
            }
            let mut b = GitignoreBuilder::new(dir);
            if b.add(&file).is_some() {
                continue;
            }
            let Ok(gi) = b.build() else { continue };
            let m = gi.matched_path_or_any_parents(path, false);
            if m.is_ignore() {
                return true;
            }
            if m.is_whitelist() {
                return false;
            }
        }
    }
    // Rooted at the file system's root, so every absolute path is below it.
    let Some(top) = path.ancestors().last().filter(|t| t.has_root()) else {
        return false;
    };
    let (global, _) = GitignoreBuilder::new(top).build_global();
    global.matched_path_or_any_parents(path, false).is_ignore()
}

/// `names` (root-relative, sorted) as a list for a note: the first few,
/// then "and N more".
fn list(names: &[String]) -> String {
    let mut shown: Vec<String> = names.iter().take(NAMED).cloned().collect();
    if names.len() > NAMED {
        let more = (names.len() - NAMED).to_string();
        shown.push(fill(UNSAVED_MORE, &[("count", &more)]));
    }
    shown.join(", ")
}

/// [`GREP_UNSAVED_NOTE`] for the matching files `names` that came from
/// unsaved text; `None` when there are none.
pub fn grep_note(names: &[String]) -> Option<String> {
    (!names.is_empty()).then(|| fill(GREP_UNSAVED_NOTE, &[("list", &list(names))]))
}

/// [`GLOB_UNSAVED_NOTE`] for the listed files `names` that exist only in a
/// buffer; `None` when there are none.
pub fn glob_note(names: &[String]) -> Option<String> {
    (!names.is_empty()).then(|| {
        fill(
            GLOB_UNSAVED_NOTE,
            &[
                ("list", &list(names)),
                ("is", if names.len() == 1 { "is" } else { "are" }),
            ],
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_unsaved_notes() {
        assert_eq!(GREP_UNSAVED_NOTE, "Unsaved text: the matches in {list} come from text open in Neovim that is not saved to disk (the file on disk differs or does not exist yet). Read shows the same text; Edit and Write change it in the buffer.");
        assert_eq!(GLOB_UNSAVED_NOTE, "Not on disk yet: {list} {is} open in Neovim but never written. Read shows the buffer's text; Edit and Write change it in the buffer.");
        assert_eq!(UNSAVED_MORE, "and {count} more");
        assert_eq!(grep_note(&[]), None);
        assert_eq!(
            grep_note(&["src/a.rs".into()]).as_deref(),
            Some("Unsaved text: the matches in src/a.rs come from text open in Neovim that is not saved to disk (the file on disk differs or does not exist yet). Read shows the same text; Edit and Write change it in the buffer.")
        );
        let many: Vec<String> = (1..=7).map(|i| format!("n{i}.py")).collect();
        assert_eq!(
            glob_note(&many).as_deref(),
            Some("Not on disk yet: n1.py, n2.py, n3.py, n4.py, n5.py, and 2 more are open in Neovim but never written. Read shows the buffer's text; Edit and Write change it in the buffer.")
        );
    }

    #[test]
    fn ignore_files_decide_for_a_file_not_written_yet() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        std::fs::write(root.join(".gitignore"), "build/\n*.log\n").expect("write");
        std::fs::create_dir_all(root.join("keep")).expect("mkdir");
        std::fs::write(root.join("keep/.ignore"), "!*.log\n").expect("write");
        assert!(ignored_by_files(&root.join("build/new.rs")));
        assert!(ignored_by_files(&root.join("x.log")));
        assert!(!ignored_by_files(&root.join("src/new.rs")));
        assert!(
            !ignored_by_files(&root.join("keep/x.log")),
            "a deeper whitelist wins"
        );
    }
}
