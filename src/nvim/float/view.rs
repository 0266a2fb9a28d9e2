//! What the permission float shows for one ask, as plain data: its lines,
//! which of them is a header, which hunk each diff line belongs to, its
//! title, footer and filetype. Pure (no Neovim calls), so the layout is
//! unit-tested; `float::window` draws it.

use std::collections::BTreeSet;
use std::path::Path;

use crate::permissions::PermissionPreview;
use crate::text::fill;
use crate::tools::diff;

/// The float's footer: every key, short.
pub const FOOTER: &str =
    " y allow · a session · A save · n deny · N deny+why · d diff tab · <Space> hunk · ? help · q ";
/// The footer when `a`/`A` are not offered.
pub const FOOTER_NO_RULE: &str =
    " y allow · n deny · N deny+why · d diff tab · <Space> hunk · ? help · q ";
/// The footer of a call without a diff (Bash, a Read outside the project).
pub const FOOTER_NO_DIFF: &str =
    " y allow · a session · A save · n deny · N deny+why · ? help · q ";
/// The footer of a call without a diff and without a rule to offer.
pub const FOOTER_BARE: &str = " y allow · n deny · N deny+why · ? help · q ";
/// First header line: why the call asks. `{reason}`.
pub const WHY_LINE: &str = "Asks because: {reason}";
/// Header line naming the rules `a`/`A` add. `{rules}`.
pub const RULE_LINE: &str =
    "a: allow {rules} for this session · A: also save it to .claude/settings.local.json";
/// Header line for Bash. `{cwd}`, `{secs}`.
pub const COMMAND_LINE: &str = "in {cwd} · timeout {secs} s";
/// Banner when the document changed while the float was open. `{path}`.
pub const STALE_LINE: &str =
    "STALE: {path} changed since this change was planned. r: plan it again · n: deny";
/// Header line after hunks were toggled. `{kept}`, `{total}`.
pub const HUNKS_LINE: &str =
    "{kept} of {total} hunks kept (<Space> toggles the hunk under the cursor); y applies only the kept ones";
/// Header line after an edit in the diff tab.
pub const EDITED_LINE: &str = "You edited the new text in the diff tab; y applies your version";
/// The `?` help, one key per line.
pub const HELP: &[&str] = &[
    "y        allow this call once (with your hunk selection or edit, if any)",
    "a        allow it, and calls like it for this session (the rule is shown above)",
    "A        like a, and save the rule to .claude/settings.local.json",
    "n q Esc  deny (the model is told you declined)",
    "N        deny and tell the model why",
    "d        open the change in a diff tab; edit the right side and :w to use your version",
    "<Space>  on a hunk: leave it out of the change (again: keep it)",
    "r        when the file changed: plan the change again",
    "?        show or hide this help",
    "Leave the float (<C-w>w, another tab) and it waits; :Lathe review brings it back.",
];
/// When a call has nothing to show at all.
pub const NO_PREVIEW: &str = "(no preview for this call)";

/// One ask's view state besides its preview.
#[derive(Debug, Clone, Default)]
pub struct AskView {
    /// 0-based hunks the user left out.
    pub rejected: BTreeSet<usize>,
    /// The new text as edited in the diff tab, if it was.
    pub edited: Option<String>,
    /// The document moved on since the plan.
    pub stale: bool,
    /// `?` help shown.
    pub help: bool,
}

/// A rendered float.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The buffer's lines.
    pub lines: Vec<String>,
    /// How many of the first lines are the header (why, rules, banners).
    pub header: usize,
    /// 0-based row of the stale banner, when shown.
    pub stale_row: Option<usize>,
    /// For each line, the 0-based hunk it belongs to (diff bodies only).
    pub hunk_of_line: Vec<Option<usize>>,
    /// The window title.
    pub title: String,
    /// The window footer.
    pub footer: String,
    /// `'filetype'` of the buffer (`diff`, `sh`, `json`).
    pub filetype: &'static str,
}

/// The new text the ask would apply now: the edit from the diff tab, or
/// the plan's text with the rejected hunks left out. `None` for calls
/// without a change.
pub fn effective_after(preview: &PermissionPreview, view: &AskView) -> Option<String> {
    let (before, after) = preview.change.as_ref()?;
    if let Some(edited) = &view.edited {
        return Some(edited.clone());
    }
    if view.rejected.is_empty() {
        return Some(after.clone());
    }
    let before = before.as_deref().unwrap_or("");
    let total = diff::hunk_count(before, after);
    let keep: Vec<bool> = (0..total).map(|h| !view.rejected.contains(&h)).collect();
    Some(diff::apply_hunks(before, after, &keep))
}

/// Lays out the float for `preview` in state `view`; `position` is
/// `(1-based index, queue length)`.
pub fn render(
    tool: &str,
    preview: &PermissionPreview,
    view: &AskView,
    position: (usize, usize),
) -> Rendered {
    let is_bash = preview.command.is_some();
    // Bash bodies are shell: header lines become comments there.
    let prefix = if is_bash { "# " } else { "" };
    let mut lines: Vec<String> = Vec::new();
    let mut stale_row = None;
    if view.stale {
        let name = preview
            .path
            .as_deref()
            .and_then(Path::file_name)
            .map_or_else(
                || "the file".to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
        stale_row = Some(lines.len());
        lines.push(format!("{prefix}{}", fill(STALE_LINE, &[("path", &name)])));
    }
    if view.help {
        lines.extend(HELP.iter().map(|h| format!("{prefix}{h}")));
    }
    if !preview.reason.is_empty() {
        lines.push(format!(
            "{prefix}{}",
            fill(WHY_LINE, &[("reason", &preview.reason)])
        ));
    }
    if !preview.session_rules.is_empty() {
        lines.push(format!(
            "{prefix}{}",
            fill(RULE_LINE, &[("rules", &preview.session_rules.join(", "))])
        ));
    }
    if let Some(c) = &preview.command {
        lines.push(format!(
            "{prefix}{}",
            fill(
                COMMAND_LINE,
                &[
                    ("cwd", &c.cwd.display().to_string()),
                    ("secs", &(c.timeout_ms.div_ceil(1000)).to_string()),
                ]
            )
        ));
    }
    let total_hunks = preview
        .change
        .as_ref()
        .map_or(0, |(b, a)| diff::hunk_count(b.as_deref().unwrap_or(""), a));
    if view.edited.is_some() {
        lines.push(EDITED_LINE.to_string());
    } else if !view.rejected.is_empty() {
        let kept = total_hunks.saturating_sub(view.rejected.len());
        lines.push(fill(
            HUNKS_LINE,
            &[
                ("kept", &kept.to_string()),
                ("total", &total_hunks.to_string()),
            ],
        ));
    }
    if !lines.is_empty() {
        lines.push(String::new());
    }
    let header = lines.len();
    let mut hunk_of_line = vec![None; header];
    let (body, filetype): (Vec<String>, &'static str) =
        if let Some((before, after)) = &preview.change {
            let name = preview
                .title
                .split_once(' ')
                .map_or(preview.title.as_str(), |(_, n)| n);
            let shown_after = view.edited.as_deref().unwrap_or(after);
            let text = diff::unified_diff(before.as_deref(), shown_after, name);
            (split(&text), "diff")
        } else if let Some(c) = &preview.command {
            (split(&c.command), "sh")
        } else if !preview.diff.is_empty() {
            (split(&preview.diff), "diff")
        } else if !preview.input.is_empty() {
            (split(&preview.input), "json")
        } else {
            (vec![NO_PREVIEW.to_string()], "text")
        };
    let mut hunk: Option<usize> = None;
    for line in &body {
        if filetype == "diff" && view.edited.is_none() {
            if line.starts_with("@@") {
                hunk = Some(hunk.map_or(0, |h| h + 1));
            }
            hunk_of_line.push(hunk);
        } else {
            hunk_of_line.push(None);
        }
    }
    lines.extend(body);
    let of = if position.1 > 1 {
        format!(" ({} of {})", position.0, position.1)
    } else {
        String::new()
    };
    let title_text = if preview.title.is_empty() {
        tool.to_string()
    } else {
        preview.title.clone()
    };
    let has_diff = preview.change.is_some();
    let has_rule = !preview.session_rules.is_empty();
    let footer = match (has_diff, has_rule) {
        (true, true) => FOOTER,
        (true, false) => FOOTER_NO_RULE,
        (false, true) => FOOTER_NO_DIFF,
        (false, false) => FOOTER_BARE,
    };
    Rendered {
        lines,
        header,
        stale_row,
        hunk_of_line,
        title: format!(" {title_text}{of} "),
        footer: footer.to_string(),
        filetype,
    }
}

/// `text` as buffer lines (no trailing empty line for a final newline).
fn split(text: &str) -> Vec<String> {
    text.trim_end_matches('\n')
        .split('\n')
        .map(str::to_string)
        .collect()
}

/// The chat and statusline text while an ask waits. `{title}`, `{count}`
/// (` (+2 more)` or empty).
pub const WAITING_TEXT: &str = "waiting for you: {title}{count} (:Lathe review)";

/// [`WAITING_TEXT`] for the front ask's `title` with `queued` asks in all.
pub fn waiting_text(title: &str, queued: usize) -> String {
    let count = if queued > 1 {
        format!(" (+{} more)", queued - 1)
    } else {
        String::new()
    };
    fill(WAITING_TEXT, &[("title", title), ("count", &count)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permissions::CommandPreview;
    use std::path::PathBuf;

    fn edit_preview() -> PermissionPreview {
        let before: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let after = before
            .replace("line 2\n", "line two\n")
            .replace("line 18\n", "line eighteen\n");
        PermissionPreview {
            path: Some(PathBuf::from("/p/f.txt")),
            title: "Edit f.txt".into(),
            reason: "Edit changes files, and asks by default".into(),
            session_rules: vec!["Edit(/f.txt)".into()],
            diff: diff::unified_diff(Some(&before), &after, "f.txt"),
            change: Some((Some(before), after)),
            ..PermissionPreview::default()
        }
    }

    #[test]
    fn an_edit_shows_why_the_rule_and_the_diff_with_its_hunks() {
        let r = render("Edit", &edit_preview(), &AskView::default(), (1, 1));
        assert_eq!(
            r.lines[0],
            "Asks because: Edit changes files, and asks by default"
        );
        assert_eq!(
            r.lines[1],
            "a: allow Edit(/f.txt) for this session · A: also save it to .claude/settings.local.json"
        );
        assert_eq!(r.lines[2], "");
        assert_eq!(r.header, 3);
        assert_eq!(r.lines[3], "--- a/f.txt");
        assert_eq!(r.filetype, "diff");
        assert_eq!(r.title, " Edit f.txt ");
        assert_eq!(r.footer, FOOTER);
        let hunks: Vec<usize> = r.hunk_of_line.iter().flatten().copied().collect();
        assert_eq!(hunks.first(), Some(&0));
        assert_eq!(hunks.last(), Some(&1));
        assert_eq!(r.lines.len(), r.hunk_of_line.len());
    }

    #[test]
    fn rejecting_a_hunk_changes_what_would_be_applied() {
        let p = edit_preview();
        let view = AskView {
            rejected: [1].into(),
            ..AskView::default()
        };
        let after = effective_after(&p, &view).expect("a change");
        assert!(after.contains("line two\n") && after.contains("line 18\n"));
        let r = render("Edit", &p, &view, (2, 3));
        assert_eq!(r.title, " Edit f.txt (2 of 3) ");
        assert!(r.lines.contains(&"1 of 2 hunks kept (<Space> toggles the hunk under the cursor); y applies only the kept ones".to_string()));
    }

    #[test]
    fn stale_and_help_come_first() {
        let view = AskView {
            stale: true,
            help: true,
            ..AskView::default()
        };
        let r = render("Edit", &edit_preview(), &view, (1, 1));
        assert_eq!(r.stale_row, Some(0));
        assert_eq!(
            r.lines[0],
            "STALE: f.txt changed since this change was planned. r: plan it again · n: deny"
        );
        assert_eq!(r.lines[1], HELP[0]);
    }

    #[test]
    fn bash_is_shell_with_its_directory_and_timeout() {
        let p = PermissionPreview {
            title: "Bash: npm test && npm run lint".into(),
            reason: "Bash may change files or run programs".into(),
            session_rules: vec!["Bash(npm test:*)".into(), "Bash(npm run lint:*)".into()],
            command: Some(CommandPreview {
                command: "npm test &&\n  npm run lint".into(),
                cwd: PathBuf::from("/w/proj"),
                timeout_ms: 120_000,
            }),
            ..PermissionPreview::default()
        };
        let r = render("Bash", &p, &AskView::default(), (1, 1));
        assert_eq!(r.filetype, "sh");
        assert_eq!(
            r.lines,
            vec![
                "# Asks because: Bash may change files or run programs",
                "# a: allow Bash(npm test:*), Bash(npm run lint:*) for this session · A: also save it to .claude/settings.local.json",
                "# in /w/proj · timeout 120 s",
                "",
                "npm test &&",
                "  npm run lint",
            ]
        );
        assert_eq!(r.footer, FOOTER_NO_DIFF);
    }

    #[test]
    fn other_calls_show_their_input_as_json() {
        let p = PermissionPreview {
            title: "Read /etc/hosts".into(),
            reason: "it reads outside the project".into(),
            input: "{\n  \"file_path\": \"/etc/hosts\"\n}".into(),
            ..PermissionPreview::default()
        };
        let r = render("Read", &p, &AskView::default(), (1, 1));
        assert_eq!(r.filetype, "json");
        assert_eq!(r.lines.last().map(String::as_str), Some("}"));
        assert_eq!(r.footer, FOOTER_BARE);
    }

    #[test]
    fn waiting_text_counts_the_queue() {
        assert_eq!(
            waiting_text("Edit greeting.py", 1),
            "waiting for you: Edit greeting.py (:Lathe review)"
        );
        assert_eq!(
            waiting_text("Edit greeting.py", 3),
            "waiting for you: Edit greeting.py (+2 more) (:Lathe review)"
        );
    }
}
