//! What the permission float shows for one ask, as plain data: its lines,
//! which of them is a header, which hunk each diff line belongs to, its
//! title, footer, width and filetype. Pure (no Neovim calls), so the layout
//! is unit-tested; `float::window` draws it.
//!
//! The float fits the screen: header lines wrap at spaces to its width, the
//! footer drops its less needed keys (never `?`) when it is narrow, and the
//! window's height counts wrapped lines (`float::window`).

use std::collections::BTreeSet;
use std::path::Path;

use lathe_core::permissions::PermissionPreview;
use lathe_core::text::fill;
use lathe_core::tools::support::diff;

/// First header line: why the call asks. `{reason}`.
pub const WHY_LINE: &str = "Asks because: {reason}";
/// Header line naming the rules `a`/`A` add. `{rules}`.
pub const RULE_LINE: &str =
    "a: allow {rules} for this session · A: also save it to .claude/settings.local.json";
/// Header line when `a`/`A` are not offered: no narrow rule for the
/// session would let the call run without asking (an ask rule or a
/// protected path asks anyway, a hook asks, a command cannot be split).
pub const NO_RULE_LINE: &str =
    "a/A not offered: no narrow rule for this session would let this call run without asking";
/// Header line when a PreToolUse hook rewrote the call's input.
pub const HOOK_CHANGED_LINE: &str =
    "A hook changed this call: what you see is the hook's version, not the model's";
/// Header line for Bash. `{cwd}`, `{secs}`.
pub const COMMAND_LINE: &str = "in {cwd} · timeout {secs} s";
/// Header line for Bash run in the background (it has no timeout). `{cwd}`.
pub const COMMAND_LINE_BACKGROUND: &str = "in {cwd} · in the background, no timeout (:Lathe jobs)";
/// Banner when the document changed while the float was open. `{path}`.
pub const STALE_LINE: &str =
    "STALE: {path} changed since this change was planned. r: plan it again · n: deny";
/// Header line after hunks were toggled. `{kept}`, `{total}`.
pub const HUNKS_LINE: &str =
    "{kept} of {total} hunks kept (<Space> toggles the hunk under the cursor); y applies only the kept ones";
/// Header line after an edit in the diff tab.
pub const EDITED_LINE: &str = "You edited the new text in the diff tab; y applies your version";
/// The `?` help before the lines on `a` and `A`.
pub const HELP_TOP: &[&str] =
    &["y        allow this call once (with your hunk selection or edit, if any)"];
/// The `?` help on `a` and `A` when they are offered.
pub const HELP_RULES: &[&str] = &[
    "a        allow it, and the calls the rule above covers, for this session",
    "A        like a, and save the rule to .claude/settings.local.json",
];
/// The `?` help on `a` and `A` after `<Space>` or an edit in the diff tab.
pub const HELP_RULES_REVISED: &[&str] = &[
    "a A      not offered after <Space> or an edit: they allow the change as proposed, y allows yours",
];
/// The `?` help on `a` and `A` when no rule is offered.
pub const HELP_NO_RULES: &[&str] = &[
    "a A      not offered: a rule for this session would not stop this call from asking (an ask rule, a protected path or a hook asks every time), or no narrow rule fits it",
];
/// The `?` help on `Y` and `D` when more of the answer's file changes
/// are queued.
pub const HELP_BURST: &[&str] = &[
    "Y        allow this change and the rest of this answer's file changes (Edit, Write) without asking; no rule is added, commands still ask, the next answer asks again",
    "D        show this change and the answer's queued ones as one diff (a preview, planned in order)",
];
/// The rest of the `?` help.
pub const HELP_REST: &[&str] = &[
    "n        deny (the model is told you declined)",
    "N        deny and tell the model why",
    "d        open the change in a diff tab: edit the right side (do/dp per hunk), :w uses it, :q cancels",
    "<Space>  on a hunk: leave it out of the change (again: keep it)",
    "r        when the file changed: plan the change again",
    "?        show or hide this help",
    "q :q     hide the float: the ask keeps waiting, :Lathe review brings it back",
    "Leave the float (<C-w>w, another tab) and it waits too; <Esc> does nothing here.",
];
/// When a call has nothing to show at all.
pub const NO_PREVIEW: &str = "(no preview for this call)";
/// How far wrapped help lines are indented (past the key column).
const HELP_INDENT: usize = 9;
/// The narrowest float.
const MIN_WIDTH: usize = 20;

/// One key of the footer: its label, a shorter one for narrow floats, and
/// when it may be left out (`None`: never; else lower goes first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FooterKey {
    /// The label in a wide float.
    pub long: &'static str,
    /// The label in a narrow one.
    pub short: &'static str,
    /// Drop order when even the short labels do not fit (`None`: kept).
    pub drop: Option<u8>,
}

const KEY_ALLOW: FooterKey = FooterKey {
    long: "y allow",
    short: "y allow",
    drop: None,
};
const KEY_REPLAN: FooterKey = FooterKey {
    long: "r plan again",
    short: "r replan",
    drop: None,
};
const KEY_SESSION: FooterKey = FooterKey {
    long: "a session",
    short: "a sess",
    drop: Some(5),
};
const KEY_SAVE: FooterKey = FooterKey {
    long: "A save",
    short: "A save",
    drop: Some(4),
};
const KEY_DENY: FooterKey = FooterKey {
    long: "n deny",
    short: "n deny",
    drop: None,
};
const KEY_WHY: FooterKey = FooterKey {
    long: "N deny+why",
    short: "N why",
    drop: Some(3),
};
const KEY_DIFF: FooterKey = FooterKey {
    long: "d diff tab",
    short: "d diff",
    drop: Some(1),
};
const KEY_HUNK: FooterKey = FooterKey {
    long: "<Space> hunk",
    short: "Spc hunk",
    drop: Some(2),
};
/// `q` and `:q` both hide the float (the ask waits): no single key press
/// answers by accident, so the footer always says it.
const KEY_HIDE: FooterKey = FooterKey {
    long: "q hide (ask waits)",
    short: "q hide",
    drop: None,
};
const KEY_ANSWER: FooterKey = FooterKey {
    long: "Y rest of answer (edits)",
    short: "Y rest",
    drop: Some(6),
};
const KEY_ALL: FooterKey = FooterKey {
    long: "D all changes",
    short: "D all",
    drop: Some(0),
};
const KEY_HELP: FooterKey = FooterKey {
    long: "? help",
    short: "? help",
    drop: None,
};

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

impl AskView {
    /// `true` after `<Space>` left a hunk out or the diff tab edited the
    /// text: `y` then applies the user's version, and `a`/`A` (which allow
    /// the change as proposed) are not offered.
    pub fn revised(&self) -> bool {
        !self.rejected.is_empty() || self.edited.is_some()
    }
}

/// `true` when the float offers `a` and `A` for `preview` in state `view`:
/// a rule fits (the gate leaves `session_rules` empty when none would let
/// the call run without asking) and the user has not revised the change.
pub fn offers_rules(preview: &PermissionPreview, view: &AskView) -> bool {
    !preview.session_rules.is_empty() && !view.revised()
}

/// `true` when the float offers `Y` (allow the rest of this answer's file
/// changes): the call is a file change, more of the answer's file changes
/// (Edit, Write) are queued, and the user has not revised this one.
pub fn offers_answer(preview: &PermissionPreview, view: &AskView) -> bool {
    preview.change.is_some() && !view.revised() && queued_file_changes(preview) > 0
}

/// How many of the answer's file changes (Edit, Write) are queued after
/// this call.
pub fn queued_file_changes(preview: &PermissionPreview) -> usize {
    preview.burst.as_ref().map_or(0, |b| {
        b.next
            .iter()
            .filter(|q| matches!(q.tool.as_str(), "Edit" | "Write"))
            .count()
    })
}

/// A rendered float.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The buffer's lines.
    pub lines: Vec<String>,
    /// How many of the first lines are the header (banners, why, rules,
    /// help, and a blank line before the body).
    pub header: usize,
    /// Rows of the stale banner (empty when not shown).
    pub stale_rows: std::ops::Range<usize>,
    /// For each line, the 0-based hunk it belongs to (diff bodies only).
    pub hunk_of_line: Vec<Option<usize>>,
    /// The window title.
    pub title: String,
    /// The window footer, fitted to `width`.
    pub footer: String,
    /// The window's text width (columns inside the border).
    pub width: usize,
    /// `'filetype'` of the buffer (`diff`, `sh`, `json`).
    pub filetype: &'static str,
}

/// The new text the ask would apply now: the proposal (the edit from the
/// diff tab, else the plan's text) with the rejected hunks of its diff
/// left out. `None` for calls without a change.
pub fn effective_after(preview: &PermissionPreview, view: &AskView) -> Option<String> {
    let (before, after) = preview.change.as_ref()?;
    let proposal = view.edited.as_ref().unwrap_or(after);
    if view.rejected.is_empty() {
        return Some(proposal.clone());
    }
    let before = before.as_deref().unwrap_or("");
    let total = diff::hunk_count(before, proposal);
    let keep: Vec<bool> = (0..total).map(|h| !view.rejected.contains(&h)).collect();
    Some(diff::apply_hunks(before, proposal, &keep))
}

/// One header line before wrapping: its text, the indent of its
/// continuation rows, and whether it is the stale banner.
struct HeaderLine {
    text: String,
    indent: usize,
    stale: bool,
}

/// Lays out the float for `preview` in state `view`; `position` is
/// `(1-based index, queue length)`, `max_width` the widest the float may
/// be (columns inside its border).
pub fn render(
    tool: &str,
    preview: &PermissionPreview,
    view: &AskView,
    position: (usize, usize),
    max_width: usize,
) -> Rendered {
    let header_lines = header(preview, view);
    let (body, filetype) = body(preview, view);
    // A call of a burst counts its answer's changing calls; else the queue.
    let of = match &preview.burst {
        Some(b) if b.total > 1 => format!(" ({} of {})", b.index, b.total),
        _ if position.1 > 1 => format!(" ({} of {})", position.0, position.1),
        _ => String::new(),
    };
    let title_text = if preview.title.is_empty() {
        tool.to_string()
    } else {
        preview.title.clone()
    };
    let title = format!(" {title_text}{of} ");
    let keys = footer_keys(preview, view);
    let width = {
        let max_width = max_width.max(MIN_WIDTH);
        // What the user's keys may add or take away while the float is
        // open (`<Space>`'s hunk line, the diff tab's line, a stale
        // banner; the rule line and footer keys a revision drops) counts
        // from the start, so the float keeps its width and place. The
        // `?` help wraps to it.
        let first = AskView::default();
        let widest = header(preview, &first)
            .iter()
            .chain(
                header(
                    preview,
                    &AskView {
                        help: false,
                        ..view.clone()
                    },
                )
                .iter(),
            )
            .map(|h| h.text.chars().count())
            .chain(possible_lines(preview).iter().map(|l| l.chars().count()))
            .chain(body.iter().map(|l| l.chars().count()))
            .chain([
                title.chars().count(),
                long_footer(&keys).chars().count(),
                long_footer(&footer_keys(preview, &first)).chars().count(),
            ])
            .max()
            .unwrap_or(MIN_WIDTH);
        widest.clamp(MIN_WIDTH, max_width)
    };
    let mut lines: Vec<String> = Vec::new();
    let mut stale_rows = 0..0;
    for h in &header_lines {
        let start = lines.len();
        lines.extend(wrap(&h.text, width, h.indent));
        if h.stale {
            stale_rows = start..lines.len();
        }
    }
    if !lines.is_empty() {
        lines.push(String::new());
    }
    let header_len = lines.len();
    let mut hunk_of_line = vec![None; header_len];
    let mut hunk: Option<usize> = None;
    for line in &body {
        if filetype == "diff" && preview.change.is_some() {
            if line.starts_with("@@") {
                hunk = Some(hunk.map_or(0, |h| h + 1));
            }
            hunk_of_line.push(hunk);
        } else {
            hunk_of_line.push(None);
        }
    }
    lines.extend(body);
    Rendered {
        lines,
        header: header_len,
        stale_rows,
        hunk_of_line,
        title,
        footer: fit_footer(&keys, width),
        width,
        filetype,
    }
}

/// The header lines of the float, unwrapped, in order: the stale banner,
/// why it asks, the rule `a`/`A` add (or why they are not offered), Bash's
/// directory and timeout, the user's revision, the help.
fn header(preview: &PermissionPreview, view: &AskView) -> Vec<HeaderLine> {
    let line = |text: String| HeaderLine {
        text,
        indent: 0,
        stale: false,
    };
    let mut out = Vec::new();
    if view.stale {
        let name = preview
            .path
            .as_deref()
            .and_then(Path::file_name)
            .map_or_else(
                || "the file".to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
        out.push(HeaderLine {
            stale: true,
            ..line(fill(STALE_LINE, &[("path", &name)]))
        });
    }
    if !preview.reason.is_empty() {
        out.push(line(fill(WHY_LINE, &[("reason", &preview.reason)])));
    }
    if preview.hook_changed {
        out.push(line(HOOK_CHANGED_LINE.to_string()));
    }
    if offers_rules(preview, view) {
        out.push(line(fill(
            RULE_LINE,
            &[("rules", &preview.session_rules.join(", "))],
        )));
    } else if preview.session_rules.is_empty() {
        out.push(line(NO_RULE_LINE.to_string()));
    }
    if let Some(c) = &preview.command {
        let cwd = c.cwd.display().to_string();
        out.push(line(if c.background {
            fill(COMMAND_LINE_BACKGROUND, &[("cwd", &cwd)])
        } else {
            fill(
                COMMAND_LINE,
                &[
                    ("cwd", &cwd),
                    ("secs", &(c.timeout_ms.div_ceil(1000)).to_string()),
                ],
            )
        }));
        if !c.sandbox.is_empty() {
            out.push(line(c.sandbox.clone()));
        }
    }
    if view.edited.is_some() {
        out.push(line(EDITED_LINE.to_string()));
    }
    if !view.rejected.is_empty() {
        let total = preview.change.as_ref().map_or(0, |(b, a)| {
            let proposal = view.edited.as_ref().unwrap_or(a);
            diff::hunk_count(b.as_deref().unwrap_or(""), proposal)
        });
        let kept = total.saturating_sub(view.rejected.len());
        out.push(line(fill(
            HUNKS_LINE,
            &[("kept", &kept.to_string()), ("total", &total.to_string())],
        )));
    }
    if view.help {
        let rules = if offers_rules(preview, view) {
            HELP_RULES
        } else if view.revised() && !preview.session_rules.is_empty() {
            HELP_RULES_REVISED
        } else {
            HELP_NO_RULES
        };
        let burst: &[&str] = if queued_file_changes(preview) > 0 {
            HELP_BURST
        } else {
            &[]
        };
        for h in HELP_TOP.iter().chain(rules).chain(burst).chain(HELP_REST) {
            out.push(HeaderLine {
                indent: HELP_INDENT,
                ..line((*h).to_string())
            });
        }
    }
    out
}

/// The header lines a file change's float may come to show while it is
/// open, at their widest: the hunk count after `<Space>`, the line after
/// an edit in the diff tab, the stale banner.
fn possible_lines(preview: &PermissionPreview) -> Vec<String> {
    let mut out = Vec::new();
    let Some((before, after)) = &preview.change else {
        return out;
    };
    let total = diff::hunk_count(before.as_deref().unwrap_or(""), after).to_string();
    out.push(fill(HUNKS_LINE, &[("kept", &total), ("total", &total)]));
    out.push(EDITED_LINE.to_string());
    if let Some(name) = preview.path.as_deref().and_then(Path::file_name) {
        out.push(fill(STALE_LINE, &[("path", &name.to_string_lossy())]));
    }
    out
}

/// The body lines and their filetype: the diff, the command, the input.
fn body(preview: &PermissionPreview, view: &AskView) -> (Vec<String>, &'static str) {
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
    }
}

/// The keys the footer lists for `preview` in state `view`: only those
/// that do something now.
pub fn footer_keys(preview: &PermissionPreview, view: &AskView) -> Vec<FooterKey> {
    let mut keys = Vec::new();
    if view.stale {
        keys.push(KEY_REPLAN);
    } else {
        keys.push(KEY_ALLOW);
        if offers_answer(preview, view) {
            keys.push(KEY_ANSWER);
        }
        if offers_rules(preview, view) {
            keys.extend([KEY_SESSION, KEY_SAVE]);
        }
    }
    keys.extend([KEY_DENY, KEY_WHY]);
    if preview.change.is_some() {
        keys.extend([KEY_DIFF, KEY_HUNK]);
    }
    if queued_file_changes(preview) > 0 {
        keys.push(KEY_ALL);
    }
    keys.extend([KEY_HIDE, KEY_HELP]);
    keys
}

/// `keys` by their long labels, between ` · `.
fn long_footer(keys: &[FooterKey]) -> String {
    let parts: Vec<&str> = keys.iter().map(|k| k.long).collect();
    format!(" {} ", parts.join(" · "))
}

/// `keys` by their short labels, two spaces apart.
fn short_footer(keys: &[FooterKey]) -> String {
    let parts: Vec<&str> = keys.iter().map(|k| k.short).collect();
    format!(" {} ", parts.join("  "))
}

/// The footer for `keys` in a float `width` columns wide: the long labels
/// when they fit, else the short ones, leaving out keys in their drop
/// order until it fits; the keys that are never left out always show, and
/// when even they do not fit, `? help` comes first (Neovim cuts the end).
pub fn fit_footer(keys: &[FooterKey], width: usize) -> String {
    let long = long_footer(keys);
    if long.chars().count() <= width {
        return long;
    }
    let mut shown: Vec<FooterKey> = keys.to_vec();
    loop {
        let short = short_footer(&shown);
        if short.chars().count() <= width {
            return short;
        }
        let next = shown
            .iter()
            .enumerate()
            .filter_map(|(i, k)| k.drop.map(|d| (d, i)))
            .min();
        match next {
            Some((_, i)) => {
                shown.remove(i);
            }
            None => {
                shown.sort_by_key(|k| *k != KEY_HELP);
                return short_footer(&shown);
            }
        }
    }
}

/// `text` in rows of at most `width` characters, broken at spaces (the
/// spaces at a break are dropped); a word longer than a row is cut.
/// Continuation rows start with `indent` spaces.
pub fn wrap(text: &str, width: usize, indent: usize) -> Vec<String> {
    let width = width.max(1);
    let indent = indent.min(width / 2);
    let mut rows = Vec::new();
    let mut row = String::new();
    let mut len = 0usize;
    // The row holds no word yet (only its indent or leading spaces).
    let mut empty = true;
    let mut rest = text;
    while !rest.is_empty() {
        let trimmed = rest.trim_start_matches(' ');
        let spaces = rest.len() - trimmed.len();
        let end = trimmed.find(' ').unwrap_or(trimmed.len());
        let mut word = &trimmed[..end];
        rest = &trimmed[end..];
        if !empty && len + spaces + word.chars().count() > width {
            rows.push(std::mem::take(&mut row));
            row = " ".repeat(indent);
            len = indent;
            empty = true;
        } else if !empty || rows.is_empty() {
            row.push_str(&" ".repeat(spaces));
            len += spaces;
        }
        while !word.is_empty() {
            let wlen = word.chars().count();
            if len + wlen <= width {
                row.push_str(word);
                len += wlen;
                empty = false;
                break;
            }
            // Longer than a whole row: cut it.
            let room = width.saturating_sub(len).max(1);
            let cut = word.char_indices().nth(room).map_or(word.len(), |(i, _)| i);
            row.push_str(&word[..cut]);
            rows.push(std::mem::take(&mut row));
            row = " ".repeat(indent);
            len = indent;
            empty = true;
            word = &word[cut..];
        }
    }
    if !empty || rows.is_empty() {
        rows.push(row);
    }
    rows
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
    use lathe_core::permissions::CommandPreview;
    use std::path::PathBuf;

    const WIDE: usize = 200;

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
    fn golden_texts() {
        assert_eq!(
            NO_RULE_LINE,
            "a/A not offered: no narrow rule for this session would let this call run without asking"
        );
        assert_eq!(
            fit_footer(&footer_keys(&edit_preview(), &AskView::default()), WIDE),
            " y allow · a session · A save · n deny · N deny+why · d diff tab · <Space> hunk · q hide (ask waits) · ? help "
        );
    }

    #[test]
    fn a_burst_counts_its_answer_and_offers_y_and_d_while_edits_are_queued() {
        use lathe_core::permissions::{Burst, QueuedChange};
        let queued = |tool: &str| QueuedChange {
            tool: tool.into(),
            title: format!("{tool} x.py"),
            ..QueuedChange::default()
        };
        let preview = PermissionPreview {
            burst: Some(Burst {
                index: 1,
                total: 3,
                next: vec![queued("Edit"), queued("Write")],
            }),
            ..edit_preview()
        };
        let r = render("Edit", &preview, &AskView::default(), (1, 1), WIDE);
        assert!(r.title.contains("(1 of 3)"), "{}", r.title);
        assert!(
            r.footer.contains("Y rest of answer (edits)"),
            "{}",
            r.footer
        );
        assert!(r.footer.contains("D all changes"), "{}", r.footer);
        // After <Space> left a hunk out, Y (the change as proposed) goes.
        let view = AskView {
            rejected: [0].into_iter().collect(),
            ..AskView::default()
        };
        assert!(!offers_answer(&preview, &view));
        // Only a Bash call queued: neither Y nor D.
        let bash_next = PermissionPreview {
            burst: Some(Burst {
                index: 1,
                total: 2,
                next: vec![queued("Bash")],
            }),
            ..edit_preview()
        };
        let r = render("Edit", &bash_next, &AskView::default(), (1, 1), WIDE);
        assert!(r.title.contains("(1 of 2)"), "{}", r.title);
        assert!(!r.footer.contains("Y rest"), "{}", r.footer);
        assert!(!r.footer.contains("D all"), "{}", r.footer);
    }

    #[test]
    fn a_call_a_hook_rewrote_says_so_under_the_reason() {
        let preview = PermissionPreview {
            hook_changed: true,
            ..edit_preview()
        };
        let r = render("Edit", &preview, &AskView::default(), (1, 1), WIDE);
        assert_eq!(
            r.lines[1],
            "A hook changed this call: what you see is the hook's version, not the model's"
        );
        let plain = render("Edit", &edit_preview(), &AskView::default(), (1, 1), WIDE);
        assert!(!plain.lines.iter().any(|l| l.starts_with("A hook changed")));
    }

    #[test]
    fn an_edit_shows_why_the_rule_and_the_diff_with_its_hunks() {
        let r = render("Edit", &edit_preview(), &AskView::default(), (1, 1), WIDE);
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
        assert!(r.footer.contains(" a session · A save "), "{}", r.footer);
        let hunks: Vec<usize> = r.hunk_of_line.iter().flatten().copied().collect();
        assert_eq!(hunks.first(), Some(&0));
        assert_eq!(hunks.last(), Some(&1));
        assert_eq!(r.lines.len(), r.hunk_of_line.len());
        assert_eq!(r.width, r.footer.chars().count());
    }

    #[test]
    fn rejecting_a_hunk_changes_what_would_be_applied_and_withdraws_a() {
        let p = edit_preview();
        let view = AskView {
            rejected: [1].into(),
            ..AskView::default()
        };
        let after = effective_after(&p, &view).expect("a change");
        assert!(after.contains("line two\n") && after.contains("line 18\n"));
        let r = render("Edit", &p, &view, (2, 3), WIDE);
        assert_eq!(r.title, " Edit f.txt (2 of 3) ");
        assert!(r.lines.contains(&"1 of 2 hunks kept (<Space> toggles the hunk under the cursor); y applies only the kept ones".to_string()));
        // a/A allow the change as proposed: not offered for a revision.
        assert!(!r.lines.iter().any(|l| l.starts_with("a: allow")), "{r:?}");
        assert!(!r.footer.contains("a session") && !r.footer.contains("A save"));
        let help = render("Edit", &p, &AskView { help: true, ..view }, (1, 1), WIDE);
        assert!(help.lines.contains(&HELP_RULES_REVISED[0].to_string()));
    }

    #[test]
    fn without_a_rule_a_is_not_offered_and_the_float_says_why() {
        let p = PermissionPreview {
            reason: "rule Edit from setup() asks".into(),
            session_rules: Vec::new(),
            ..edit_preview()
        };
        let view = AskView {
            help: true,
            ..AskView::default()
        };
        let r = render("Edit", &p, &view, (1, 1), WIDE);
        assert_eq!(r.lines[0], "Asks because: rule Edit from setup() asks");
        assert_eq!(r.lines[1], NO_RULE_LINE);
        assert!(!r.footer.contains("a session"), "{}", r.footer);
        // The help wraps to the float's width (it does not widen it).
        assert!(r
            .lines
            .iter()
            .any(|l| l.starts_with("a A      not offered")));
    }

    #[test]
    fn stale_comes_first_and_help_after_the_rule_it_names() {
        let view = AskView {
            stale: true,
            help: true,
            ..AskView::default()
        };
        let r = render("Edit", &edit_preview(), &view, (1, 1), WIDE);
        assert_eq!(r.stale_rows, 0..1);
        assert_eq!(
            r.lines[0],
            "STALE: f.txt changed since this change was planned. r: plan it again · n: deny"
        );
        assert!(r.lines[2].starts_with("a: allow Edit(/f.txt)"));
        assert_eq!(r.lines[3], HELP_TOP[0]);
        assert_eq!(r.lines[4], HELP_RULES[0]);
        // While stale, y/a/A are refused: the footer offers r instead.
        assert!(
            r.footer.starts_with(" r plan again · n deny"),
            "{}",
            r.footer
        );
    }

    #[test]
    fn a_narrow_float_wraps_the_header_at_spaces_and_keeps_help_in_the_footer() {
        let p = PermissionPreview {
            reason:
                "rule Edit(src/**) from /home/someone/projects/app/.claude/settings.local.json asks"
                    .into(),
            ..edit_preview()
        };
        let r = render("Edit", &p, &AskView::default(), (1, 1), 76);
        assert_eq!(r.width, 76);
        assert!(r.lines.iter().all(|l| l.chars().count() <= 76), "{r:#?}");
        assert_eq!(
            &r.lines[..4],
            &[
                "Asks because: rule Edit(src/**) from",
                "/home/someone/projects/app/.claude/settings.local.json asks",
                "a: allow Edit(/f.txt) for this session · A: also save it to",
                ".claude/settings.local.json",
            ]
        );
        assert!(r.footer.chars().count() <= 76, "{}", r.footer);
        assert!(r.footer.ends_with(" ? help "), "{}", r.footer);
        assert!(r.footer.contains("n deny"), "{}", r.footer);
        assert!(r.footer.contains("q hide"), "{}", r.footer);
        // The hunks still map to the body rows after the wrapped header.
        assert_eq!(r.lines[r.header], "--- a/f.txt");
        let first_hunk = r.lines.iter().position(|l| l.starts_with("@@"));
        assert_eq!(first_hunk.map(|row| r.hunk_of_line[row]), Some(Some(0)));
    }

    #[test]
    fn the_footer_drops_keys_in_order_but_never_y_n_q_or_help() {
        let keys = footer_keys(&edit_preview(), &AskView::default());
        assert_eq!(
            fit_footer(&keys, 76),
            " y allow  a sess  A save  n deny  N why  d diff  Spc hunk  q hide  ? help "
        );
        assert_eq!(
            fit_footer(&keys, 50),
            " y allow  a sess  A save  n deny  q hide  ? help "
        );
        assert_eq!(fit_footer(&keys, 20), " ? help  y allow  n deny  q hide ");
    }

    #[test]
    fn an_edited_text_keeps_its_hunks_for_space() {
        let p = edit_preview();
        let (before, after) = p.change.clone().expect("a change");
        let edited = after.replace("line eighteen\n", "line 18!\n");
        let view = AskView {
            edited: Some(edited.clone()),
            ..AskView::default()
        };
        let r = render("Edit", &p, &view, (1, 1), WIDE);
        assert!(r.lines.contains(&EDITED_LINE.to_string()), "{r:?}");
        assert!(r.footer.contains("<Space> hunk"), "{}", r.footer);
        let hunks: Vec<usize> = r.hunk_of_line.iter().flatten().copied().collect();
        assert_eq!(hunks.last(), Some(&1));
        // Leaving out the edit's second hunk keeps its first one.
        let left_out = AskView {
            rejected: [1].into(),
            ..view
        };
        let want = before
            .as_deref()
            .unwrap_or("")
            .replace("line 2\n", "line two\n");
        assert_eq!(effective_after(&p, &left_out), Some(want));
        let r = render("Edit", &p, &left_out, (1, 1), WIDE);
        assert!(
            r.lines.iter().any(|l| l.starts_with("1 of 2 hunks kept")),
            "{r:?}"
        );
    }

    #[test]
    fn wrap_breaks_at_spaces_indents_and_cuts_long_words() {
        assert_eq!(wrap("one two three", 7, 0), ["one two", "three"]);
        assert_eq!(
            wrap("y        allow it once", 18, 9),
            ["y        allow it", "         once"]
        );
        // An indent too deep for the width is cut to half of it.
        assert_eq!(wrap("ab cd ef", 4, 9), ["ab", "  cd", "  ef"]);
        assert_eq!(wrap("abcdefghij", 4, 0), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap("", 10, 0), [""]);
        assert_eq!(wrap("short", 10, 2), ["short"]);
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
                background: false,
                sandbox: "sandbox: off · the kernel has no Landlock".into(),
            }),
            ..PermissionPreview::default()
        };
        let r = render("Bash", &p, &AskView::default(), (1, 1), WIDE);
        assert_eq!(r.filetype, "sh");
        // The header is plain text (no `# `): the window gives only the
        // command's rows sh syntax.
        assert_eq!(
            r.lines,
            vec![
                "Asks because: Bash may change files or run programs",
                "a: allow Bash(npm test:*), Bash(npm run lint:*) for this session · A: also save it to .claude/settings.local.json",
                "in /w/proj · timeout 120 s",
                "sandbox: off · the kernel has no Landlock",
                "",
                "npm test &&",
                "  npm run lint",
            ]
        );
        assert!(!r.footer.contains("diff"), "{}", r.footer);
        let narrow = render("Bash", &p, &AskView::default(), (1, 1), 60);
        assert!(narrow.lines[..narrow.header - 1]
            .iter()
            .all(|l| !l.starts_with('#') && l.chars().count() <= 60));
        // In the background: no timeout.
        let mut bg = p.clone();
        if let Some(c) = bg.command.as_mut() {
            c.background = true;
        }
        let r = render("Bash", &bg, &AskView::default(), (1, 1), WIDE);
        assert!(
            r.lines
                .contains(&"in /w/proj · in the background, no timeout (:Lathe jobs)".to_string()),
            "{:?}",
            r.lines
        );
        assert!(!r.lines.iter().any(|l| l.contains("timeout 120")));
    }

    #[test]
    fn the_width_stays_when_space_adds_the_hunk_line() {
        let before = (1..=40).map(|i| format!("line {i}\n")).collect::<String>();
        let after = before
            .replace("line 3\n", "line three\n")
            .replace("line 30\n", "line thirty\n");
        let p = PermissionPreview {
            title: "Write a.txt".into(),
            reason: "Write changes files".into(),
            session_rules: vec!["Write(a.txt)".into()],
            path: Some(PathBuf::from("/w/a.txt")),
            change: Some((Some(before), after)),
            ..PermissionPreview::default()
        };
        let plain = render("Write", &p, &AskView::default(), (1, 1), WIDE);
        let view = AskView {
            rejected: [0].into_iter().collect(),
            ..AskView::default()
        };
        let toggled = render("Write", &p, &view, (1, 1), WIDE);
        assert!(toggled
            .lines
            .iter()
            .any(|l| l.starts_with("1 of 2 hunks kept")));
        assert_eq!(plain.width, toggled.width);
        let help = AskView {
            help: true,
            ..view.clone()
        };
        assert_eq!(render("Write", &p, &help, (1, 1), WIDE).width, plain.width);
        for w in [60, 100] {
            assert_eq!(
                render("Write", &p, &AskView::default(), (1, 1), w).width,
                render("Write", &p, &view, (1, 1), w).width
            );
        }
    }

    #[test]
    fn other_calls_show_their_input_as_json() {
        let p = PermissionPreview {
            title: "Read /etc/hosts".into(),
            reason: "it reads outside the project".into(),
            input: "{\n  \"file_path\": \"/etc/hosts\"\n}".into(),
            ..PermissionPreview::default()
        };
        let r = render("Read", &p, &AskView::default(), (1, 1), WIDE);
        assert_eq!(r.filetype, "json");
        assert_eq!(r.lines.last().map(String::as_str), Some("}"));
        assert_eq!(
            r.footer,
            " y allow · n deny · N deny+why · q hide (ask waits) · ? help "
        );
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
