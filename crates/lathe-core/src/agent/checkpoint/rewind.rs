//! `:Lathe rewind`: the code, the conversation or both taken back to
//! before a prompt (docs/checkpoints.md, "Rewind"). What is restored goes
//! through the session's `Editor` (a loaded buffer changes as one step the
//! user can undo; the stale rule guards each write), never over text the
//! user changed since ([`merge::restore`]); what the model is told on its
//! next request and what the user is shown are made here.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::merge;
use super::{Checkpoint, FileChange};
use crate::editor::{Editor, EditorError, WriteRequest};
use crate::text::fill;
use crate::tools::support::paths;

/// What a rewind takes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RewindWhat {
    /// The files lathe's tools changed; the conversation stays.
    Code,
    /// The conversation; the files stay as they are.
    Conversation,
    /// Both (the default).
    Both,
}

impl RewindWhat {
    /// `code`, `conversation` or `both`; `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "code" => Some(Self::Code),
            "conversation" => Some(Self::Conversation),
            "both" => Some(Self::Both),
            _ => None,
        }
    }

    /// The word [`RewindWhat::parse`] reads.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Code => "code",
            Self::Conversation => "conversation",
            Self::Both => "both",
        }
    }

    /// Files are restored.
    pub fn code(self) -> bool {
        matches!(self, Self::Code | Self::Both)
    }

    /// The conversation goes back.
    pub fn conversation(self) -> bool {
        matches!(self, Self::Conversation | Self::Both)
    }
}

/// There is no prompt yet.
pub const NO_CHECKPOINT: &str = "lathe: nothing to rewind: no prompt was sent in this session yet";
/// `n` is out of range. `{n}`, `{count}`.
pub const OUT_OF_RANGE: &str =
    "lathe: cannot rewind {n} prompts: this session has {count}; give 1 (the last prompt) to {count}";
/// The word after the count is not one of the three. `{word}`.
pub const BAD_WHAT: &str = "lathe: rewind what? \"{word}\" is not code, conversation or both";
/// The conversation was compacted after the prompt. `{n}`.
pub const COMPACTED: &str = "lathe: the conversation was compacted after that prompt, so it cannot go back to before it; rewind the code alone with :Lathe rewind {n} code";

/// What a rewind did (the user's notice and the model's note are made
/// from it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RewindReport {
    /// The checkpoint rewound to.
    pub to: u64,
    /// Its prompt.
    pub prompt: String,
    /// How many prompts back.
    pub back: usize,
    /// Files were restored.
    pub code: bool,
    /// The conversation went back.
    pub conversation: bool,
    /// Files given their text before the prompt (or with lathe's hunks
    /// taken out around the user's edits).
    pub restored: Vec<PathBuf>,
    /// Files lathe had created, removed.
    pub removed: Vec<PathBuf>,
    /// Files where lathe's hunks stayed because the user changed the same
    /// lines since: path and 1-based lines.
    pub conflicts: Vec<(PathBuf, Vec<usize>)>,
    /// Files whose text before was too large to keep.
    pub not_kept: Vec<PathBuf>,
    /// Files that could not be written: path and why.
    pub failed: Vec<(PathBuf, String)>,
    /// Files the prompts' Bash commands changed (not restored).
    pub bash_touched: Vec<PathBuf>,
}

/// The checkpoint `n` prompts back (1: the last prompt).
pub fn target(list: &[Checkpoint], n: usize) -> Result<&Checkpoint, String> {
    if list.is_empty() {
        return Err(NO_CHECKPOINT.to_string());
    }
    if n == 0 || n > list.len() {
        return Err(fill(
            OUT_OF_RANGE,
            &[("n", &n.to_string()), ("count", &list.len().to_string())],
        ));
    }
    Ok(&list[list.len() - n])
}

/// Restores `changes` through `editor` into `report`.
pub async fn restore_code(editor: &dyn Editor, changes: &[FileChange], report: &mut RewindReport) {
    for f in changes {
        let path = &f.path;
        let (before, after) = match (f.before.text(), f.after.text()) {
            (Ok(b), Ok(Some(a))) => (b, a),
            // Made and removed again (by an earlier rewind): nothing to do.
            (Ok(None), Ok(None)) => continue,
            _ => {
                report.not_kept.push(path.clone());
                continue;
            }
        };
        let now = match editor.read(path).await {
            Ok(doc) => Some(doc),
            Err(EditorError::NotFound(_)) => None,
            Err(e) => {
                report.failed.push((path.clone(), e.to_string()));
                continue;
            }
        };
        let r = merge::restore(before, after, now.as_ref().map(|d| d.text.as_str()));
        if !r.conflicts.is_empty() {
            report.conflicts.push((path.clone(), r.conflicts.clone()));
        }
        match (r.text, now) {
            (Some(text), Some(doc)) if text != doc.text => {
                let req = WriteRequest {
                    base: Some(doc.stamp()),
                    format: doc.format,
                    base_text: Some(Arc::from(doc.text.as_str())),
                    text: Arc::from(text),
                };
                match editor.write(path, req).await {
                    Ok(_) => report.restored.push(path.clone()),
                    Err(e) => report.failed.push((path.clone(), e.to_string())),
                }
            }
            (None, Some(_)) => match std::fs::remove_file(path) {
                Ok(()) => report.removed.push(path.clone()),
                Err(e) => report.failed.push((path.clone(), e.to_string())),
            },
            _ => {}
        }
    }
}

/// The chat's line about a rewind. `{what}`, `{n}`, `{prompt}`.
pub const REWOUND: &str = "rewound {what} to before prompt {n} (“{prompt}”)";
/// Restored files. `{files}`.
pub const REWOUND_RESTORED: &str = "restored: {files}";
/// Removed files. `{files}`.
pub const REWOUND_REMOVED: &str = "removed (lathe had created them): {files}";
/// Conflicts. `{places}`.
pub const REWOUND_CONFLICTS: &str =
    "kept your edits where the turn changed the same lines (lathe's change is still there): {places}";
/// Texts not kept. `{files}`.
pub const REWOUND_NOT_KEPT: &str = "not restored, too large to keep a copy of: {files}";
/// Failed writes. `{failures}`.
pub const REWOUND_FAILED: &str = "could not restore: {failures}";
/// Bash's files. `{files}`.
pub const REWOUND_BASH: &str = "not tracked, changed by Bash commands: {files}";
/// Nothing to restore.
pub const REWOUND_NO_FILES: &str = "no file changed by lathe's tools needed restoring";

fn names(root: &Path, files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|p| paths::display(root, p))
        .collect::<Vec<_>>()
        .join(", ")
}

fn what(report: &RewindReport) -> &'static str {
    match (report.code, report.conversation) {
        (true, true) => "the code and the conversation",
        (true, false) => "the code",
        _ => "the conversation",
    }
}

fn prompt_line(prompt: &str) -> String {
    let first = prompt.lines().next().unwrap_or("");
    let mut short: String = first.chars().take(60).collect();
    if short.len() < first.len() || prompt.lines().nth(1).is_some() {
        short.push('…');
    }
    short
}

/// What the chat shows after a rewind (a notice; the first line says what
/// went back, one more line for each kind of outcome).
pub fn notice(report: &RewindReport, number: usize, root: &Path) -> String {
    let mut lines = vec![fill(
        REWOUND,
        &[
            ("what", what(report)),
            ("n", &number.to_string()),
            ("prompt", &prompt_line(&report.prompt)),
        ],
    )];
    if report.code {
        if !report.restored.is_empty() {
            lines.push(fill(
                REWOUND_RESTORED,
                &[("files", &names(root, &report.restored))],
            ));
        }
        if !report.removed.is_empty() {
            lines.push(fill(
                REWOUND_REMOVED,
                &[("files", &names(root, &report.removed))],
            ));
        }
        if !report.conflicts.is_empty() {
            let places = report
                .conflicts
                .iter()
                .flat_map(|(p, ls)| {
                    ls.iter()
                        .map(move |l| format!("{}:{l}", paths::display(root, p)))
                })
                .collect::<Vec<_>>()
                .join(", ");
            lines.push(fill(REWOUND_CONFLICTS, &[("places", &places)]));
        }
        if !report.not_kept.is_empty() {
            lines.push(fill(
                REWOUND_NOT_KEPT,
                &[("files", &names(root, &report.not_kept))],
            ));
        }
        if !report.failed.is_empty() {
            let failures = report
                .failed
                .iter()
                .map(|(p, e)| format!("{} ({e})", paths::display(root, p)))
                .collect::<Vec<_>>()
                .join(", ");
            lines.push(fill(REWOUND_FAILED, &[("failures", &failures)]));
        }
        if report.restored.is_empty()
            && report.removed.is_empty()
            && report.conflicts.is_empty()
            && report.not_kept.is_empty()
            && report.failed.is_empty()
        {
            lines.push(REWOUND_NO_FILES.to_string());
        }
        if !report.bash_touched.is_empty() {
            lines.push(fill(
                REWOUND_BASH,
                &[("files", &names(root, &report.bash_touched))],
            ));
        }
    }
    lines.join("\n")
}

/// What the model is told with the next prompt after a rewind of the code.
/// `{prompt}`, `{files}`.
pub const NOTE_CODE: &str = "Before this message the user rewound the files to how they were before their earlier prompt \"{prompt}\": the changes made since through Edit and Write are undone in {files}, and the conversation was kept. Do not assume those changes are in place: Read a file again before you edit it.";
/// The same for the conversation. `{prompt}`.
pub const NOTE_CONVERSATION: &str = "Before this message the user rewound the conversation to before their earlier prompt \"{prompt}\": what followed it was taken out, but the files keep every change made since. Read a file again before you rely on what you remember of it.";
/// The same for both. `{prompt}`, `{files}`.
pub const NOTE_BOTH: &str = "Before this message the user rewound the conversation and the files to before their earlier prompt \"{prompt}\": what followed it was taken out, and the changes made since through Edit and Write are undone in {files}. Read a file again before you edit it.";
/// Added when some of lathe's changes stayed. `{places}`.
pub const NOTE_CONFLICTS: &str =
    " Some changes stayed because the user edited the same lines since: {places}.";
/// Added when commands changed files. `{files}`.
pub const NOTE_BASH: &str = " Files changed by shell commands were not restored: {files}.";

/// The note the model gets at the start of the next prompt.
pub fn model_note(report: &RewindReport, root: &Path) -> String {
    let mut files: Vec<PathBuf> = report.restored.clone();
    files.extend(report.removed.iter().cloned());
    let files = if files.is_empty() {
        "no file (none needed it)".to_string()
    } else {
        names(root, &files)
    };
    let prompt = prompt_line(&report.prompt);
    let mut note = match (report.code, report.conversation) {
        (true, true) => fill(NOTE_BOTH, &[("prompt", &prompt), ("files", &files)]),
        (true, false) => fill(NOTE_CODE, &[("prompt", &prompt), ("files", &files)]),
        _ => fill(NOTE_CONVERSATION, &[("prompt", &prompt)]),
    };
    if report.code && !report.conflicts.is_empty() {
        let places = report
            .conflicts
            .iter()
            .map(|(p, _)| paths::display(root, p))
            .collect::<Vec<_>>()
            .join(", ");
        note.push_str(&fill(NOTE_CONFLICTS, &[("places", &places)]));
    }
    if report.code && !report.bash_touched.is_empty() {
        note.push_str(&fill(
            NOTE_BASH,
            &[("files", &names(root, &report.bash_touched))],
        ));
    }
    note
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(code: bool, conversation: bool) -> RewindReport {
        let root = Path::new("/p");
        RewindReport {
            to: 2,
            prompt: "fix the tests\nand more".into(),
            back: 1,
            code,
            conversation,
            restored: vec![root.join("shop/cart.py")],
            removed: vec![root.join("shop/new.py")],
            conflicts: vec![(root.join("shop/cart.py"), vec![12])],
            not_kept: Vec::new(),
            failed: Vec::new(),
            bash_touched: vec![root.join("out.log")],
        }
    }

    #[test]
    fn model_notes_golden() {
        let root = Path::new("/p");
        assert_eq!(
            model_note(&report(true, true), root),
            "Before this message the user rewound the conversation and the files to before their earlier prompt \"fix the tests…\": what followed it was taken out, and the changes made since through Edit and Write are undone in shop/cart.py, shop/new.py. Read a file again before you edit it. Some changes stayed because the user edited the same lines since: shop/cart.py. Files changed by shell commands were not restored: out.log."
        );
        assert_eq!(
            model_note(&report(true, false), root),
            "Before this message the user rewound the files to how they were before their earlier prompt \"fix the tests…\": the changes made since through Edit and Write are undone in shop/cart.py, shop/new.py, and the conversation was kept. Do not assume those changes are in place: Read a file again before you edit it. Some changes stayed because the user edited the same lines since: shop/cart.py. Files changed by shell commands were not restored: out.log."
        );
        assert_eq!(
            model_note(&report(false, true), root),
            "Before this message the user rewound the conversation to before their earlier prompt \"fix the tests…\": what followed it was taken out, but the files keep every change made since. Read a file again before you rely on what you remember of it."
        );
    }

    #[test]
    fn user_notice_golden() {
        let root = Path::new("/p");
        assert_eq!(
            notice(&report(true, true), 3, root),
            "rewound the code and the conversation to before prompt 3 (“fix the tests…”)\n\
             restored: shop/cart.py\n\
             removed (lathe had created them): shop/new.py\n\
             kept your edits where the turn changed the same lines (lathe's change is still there): shop/cart.py:12\n\
             not tracked, changed by Bash commands: out.log"
        );
        let mut nothing = report(true, false);
        nothing.restored.clear();
        nothing.removed.clear();
        nothing.conflicts.clear();
        nothing.bash_touched.clear();
        assert_eq!(
            notice(&nothing, 1, root),
            "rewound the code to before prompt 1 (“fix the tests…”)\nno file changed by lathe's tools needed restoring"
        );
        assert_eq!(
            fill(OUT_OF_RANGE, &[("n", "4"), ("count", "2")]),
            "lathe: cannot rewind 4 prompts: this session has 2; give 1 (the last prompt) to 2"
        );
    }

    #[test]
    fn what_to_rewind_reads_its_three_words() {
        for w in [RewindWhat::Code, RewindWhat::Conversation, RewindWhat::Both] {
            assert_eq!(RewindWhat::parse(w.as_str()), Some(w));
        }
        assert_eq!(RewindWhat::parse("files"), None);
    }
}
