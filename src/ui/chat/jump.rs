//! `<CR>` in the transcript (`:help lathe-chat-jump`): on the line of a
//! Read, Grep, Edit or Write call, or on a line of its folded result, opens
//! the file at the line it is about in the previous window (another window
//! of the tab, or a new split when there is none); the chat window keeps
//! the chat.

use std::path::{Path, PathBuf};

use nvim_oxi::api;
use serde_json::Value;

use super::VIEW;

/// Where a jump goes: the file, its 1-based line, and for an Edit the text
/// whose first occurrence gives the line once the file is open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Absolute path.
    pub path: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// Text to look for (the first line of an Edit's `new_string`).
    pub find: Option<String>,
}

/// The target of tool `name` (with its normalised `input` and result
/// `content`) from its line (`block_line` `None`) or from one line of its
/// folded result (the line's text, without the two-space indent). Relative
/// paths (Grep prints paths relative to the project root) resolve against
/// `root`. `None` when the call is not about a file.
pub fn target(
    name: &str,
    input: &Value,
    content: &str,
    block_line: Option<&str>,
    root: &Path,
) -> Option<Target> {
    let abs = |p: &str| {
        let p = Path::new(p);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            root.join(p)
        }
    };
    let file_path = input.get("file_path").and_then(Value::as_str);
    match (name, block_line) {
        ("Read", Some(l)) => {
            // Read's lines are `   12\ttext`.
            let (num, _) = l.split_once('\t')?;
            let line = num.trim().parse().ok()?;
            Some(Target {
                path: abs(file_path?),
                line,
                find: None,
            })
        }
        ("Read", None) => Some(Target {
            path: abs(file_path?),
            line: input
                .get("offset")
                .and_then(Value::as_u64)
                .map_or(1, |o| o.max(1) as usize),
            find: None,
        }),
        ("Edit" | "Write", _) => Some(Target {
            path: abs(file_path?),
            line: 1,
            find: input
                .get("new_string")
                .and_then(Value::as_str)
                .and_then(|s| s.lines().find(|l| !l.trim().is_empty()))
                .map(str::to_string),
        }),
        ("Grep", Some(l)) => grep_line(l, root),
        ("Grep", None) => content.lines().find_map(|l| grep_line(l, root)),
        // `path:line: text` lines, like Grep's; the call line goes to the
        // first (the definition).
        ("LspDefinition" | "LspReferences" | "LspSymbols", Some(l)) => grep_line(l, root),
        ("LspDefinition" | "LspReferences" | "LspSymbols", None) => {
            content.lines().find_map(|l| grep_line(l, root))
        }
        ("LspHover", _) => Some(Target {
            path: abs(file_path?),
            line: input
                .get("line")
                .and_then(Value::as_u64)
                .map_or(1, |o| o.max(1) as usize),
            find: None,
        }),
        _ => None,
    }
}

/// The 1-based line of the new text that line `k` (0-based) of the unified
/// diff `diff` shows: an added or context line's own line, a removed line's
/// place, a hunk header's first line. `None` for the file headers and
/// past the end.
pub fn diff_new_line(diff: &str, k: usize) -> Option<usize> {
    let mut next: Option<usize> = None;
    for (i, l) in diff.lines().enumerate() {
        if let Some(rest) = l.strip_prefix("@@ ") {
            // `@@ -a,b +c,d @@`: the new side starts at line c (0 when the
            // new side is empty).
            let start = rest
                .split_whitespace()
                .find_map(|p| p.strip_prefix('+'))
                .and_then(|p| p.split(',').next())
                .and_then(|n| n.parse::<usize>().ok());
            next = start.map(|c| c.max(1));
        }
        let Some(here) = next else {
            // The file headers, before the first hunk.
            if i == k {
                return None;
            }
            continue;
        };
        if i == k {
            return Some(here);
        }
        if l.starts_with('+') || l.starts_with(' ') {
            next = Some(here + 1);
        }
    }
    None
}

/// A Grep output line: `path:line:text` (content mode) or `path` (files
/// mode; only when the file exists).
fn grep_line(l: &str, root: &Path) -> Option<Target> {
    let abs = |p: &str| {
        let p = Path::new(p);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            root.join(p)
        }
    };
    let mut parts = l.splitn(3, ':');
    let (path, num) = (parts.next()?, parts.next());
    if let Some(line) = num.and_then(|n| n.parse::<usize>().ok()) {
        return Some(Target {
            path: abs(path),
            line,
            find: None,
        });
    }
    let p = abs(l.trim());
    p.is_file().then_some(Target {
        path: p,
        line: 1,
        find: None,
    })
}

/// `<CR>` in the transcript: jumps to the target of the tool line (or
/// folded result line) under the cursor; elsewhere moves down a line as
/// `<CR>` does. Main thread.
pub fn jump_quietly() {
    if let Err(e) = jump() {
        crate::host::guard::notify_error(&format!("lathe: {e}"));
    }
}

/// See [`jump_quietly`]. Errors: the file cannot be opened (`:edit`'s
/// message).
pub fn jump() -> Result<(), String> {
    let win = api::get_current_win();
    let (row, _) = win.get_cursor().map_err(|e| e.to_string())?;
    let root = super::project_root()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_default();
    let target = VIEW.with(|v| {
        let mut v = v.borrow_mut();
        let buf = v.buf.clone()?;
        let line = super::buf::line_at(&buf, row - 1);
        let (t, off) = v.tool_at(&buf, row - 1)?;
        let block_line = off.map(|_| line.strip_prefix("  ").unwrap_or(&line).to_string());
        let mut found = target(&t.name, &t.input, &t.content, block_line.as_deref(), &root)?;
        // A line of an Edit's or Write's folded diff: that line of the file
        // (the fold's first line is the fence).
        let in_diff = off
            .and_then(|o| o.checked_sub(1))
            .zip(t.display.as_deref())
            .and_then(|(k, d)| diff_new_line(d, k));
        if let (Some(line), "Edit" | "Write") = (in_diff, t.name.as_str()) {
            found.line = line;
            found.find = None;
        }
        Some(found)
    });
    let Some(t) = target else {
        let _ = api::command("normal! +");
        return Ok(());
    };
    open_in_other_window(&t)
}

/// Opens `t` in the previous window (or another one of the tab that does
/// not show the chat, or a new split on the left) and moves there.
fn open_in_other_window(t: &Target) -> Result<(), String> {
    crate::host::lua_handle::module_fn("lathe.chat", "open_in_other_window")
        .and_then(|f| {
            f.call::<()>((
                t.path.to_string_lossy().into_owned(),
                t.line,
                t.find.clone(),
            ))
        })
        .map_err(|e| {
            let s = e.to_string();
            s.lines().next().unwrap_or_default().to_string()
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_diff_line_is_at_its_line_of_the_new_text() {
        let d =
            "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n@@ -20,2 +20,3 @@\n t\n+u\n v\n";
        let at: Vec<Option<usize>> = (0..d.lines().count() + 1)
            .map(|k| diff_new_line(d, k))
            .collect();
        assert_eq!(
            at,
            vec![
                None,
                None,
                Some(1),
                Some(1),
                Some(2),
                Some(2),
                Some(3),
                Some(20),
                Some(20),
                Some(21),
                Some(22),
                None
            ]
        );
        // A new file's diff and a file emptied.
        assert_eq!(
            diff_new_line("--- /dev/null\n+++ b/n\n@@ -0,0 +1,2 @@\n+x\n+y\n", 4),
            Some(2)
        );
        assert_eq!(
            diff_new_line("--- a/n\n+++ b/n\n@@ -1 +0,0 @@\n-x\n", 3),
            Some(1)
        );
    }

    #[test]
    fn targets_of_read_edit_and_grep() {
        let root = Path::new("/p");
        let read = json!({"file_path": "/p/a.rs", "offset": 40});
        assert_eq!(
            target("Read", &read, "", None, root).map(|t| t.line),
            Some(40)
        );
        assert_eq!(
            target("Read", &read, "", Some("    42\tfn x()"), root).map(|t| t.line),
            Some(42)
        );
        let edit = json!({"file_path": "/p/b.py", "new_string": "\n  print('hi')\n"});
        assert_eq!(
            target("Edit", &edit, "", None, root).and_then(|t| t.find),
            Some("  print('hi')".into())
        );
        let grep = json!({"pattern": "x"});
        let content = "Found 2 matches\nsrc/a.rs:12:let x = 1;\nsrc/b.rs:3:x";
        assert_eq!(
            target("Grep", &grep, content, None, root),
            Some(Target {
                path: "/p/src/a.rs".into(),
                line: 12,
                find: None
            })
        );
        assert_eq!(
            target("Grep", &grep, content, Some("src/b.rs:3:x"), root).map(|t| t.line),
            Some(3)
        );
        assert_eq!(target("Bash", &json!({}), "", None, root), None);
        let lsp = "main.py:3: value = helper(2)\nutil.py:1: def helper(x):";
        assert_eq!(
            target(
                "LspReferences",
                &json!({}),
                lsp,
                Some("util.py:1: def helper(x):"),
                root
            ),
            Some(Target {
                path: "/p/util.py".into(),
                line: 1,
                find: None
            })
        );
        assert_eq!(
            target("LspDefinition", &json!({}), lsp, None, root).map(|t| t.line),
            Some(3)
        );
        let hover = json!({"file_path": "/p/main.py", "line": 4, "symbol": "helper"});
        assert_eq!(
            target("LspHover", &hover, "def helper(x)", None, root).map(|t| t.line),
            Some(4)
        );
    }
}
