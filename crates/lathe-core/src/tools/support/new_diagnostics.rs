//! What an Edit or Write adds to its result once the language servers of
//! the buffer answered the change: the errors and warnings that are new, in
//! and near the changed lines (docs/lsp.md, "Diagnostics from
//! language servers"). Pure: the diagnostics come from a
//! [`DiagnosticWatch`](crate::editor::DiagnosticWatch).

use std::collections::HashMap;

use super::numbered::split_lines;
use crate::editor::{Diagnostic, Settled, Severity};
use crate::text::{fill, plural};

/// Lines around an edit's changed span whose new diagnostics are listed.
pub const NEAR_LINES: usize = 3;
/// Most new diagnostics an Edit or Write result lists.
pub const EDIT_MAX_DIAGNOSTICS: usize = 10;

/// Heading of the new diagnostics an Edit or Write result lists.
pub const EDIT_NEW_DIAGNOSTICS: &str =
    "The language server reports new problems in and near this change; fix them before moving on:";
/// Count of new diagnostics of an edit that lie away from the change.
pub const EDIT_NEW_ELSEWHERE: &str =
    "{count} elsewhere in {path}; call Diagnostics with this file_path to see them.";
/// An edit whose servers had not answered when the wait ended.
pub const EDIT_DIAGNOSTICS_UNANSWERED: &str = "The language server had not reported on this change when lathe stopped waiting; call Diagnostics with this file_path to check it.";
/// `{line}: {severity} [{source}] {message}` (no `[source]` when the server
/// names none); the message's own line breaks become spaces.
pub fn one_line(d: &Diagnostic) -> String {
    let message = d.message.split_whitespace().collect::<Vec<_>>().join(" ");
    match &d.source {
        Some(s) if !s.is_empty() => format!("{}: {} [{s}] {message}", d.line, d.severity.as_str()),
        _ => format!("{}: {} {message}", d.line, d.severity.as_str()),
    }
}

/// The errors and warnings of `settled.after` that were not in
/// `settled.before`, split into those in or within [`NEAR_LINES`] of the
/// changed lines (sorted by line) and a count of the rest.
///
/// A diagnostic is old when one of `before` has the same severity, source
/// and message and sat on the same line once the change is accounted for
/// (lines above the change keep their number, lines below move by the
/// change's line delta), or sat inside the changed lines while the new one
/// does too. `before_text`/`after_text`: the document's logical text before
/// and after the change.
pub fn new_near_change(
    before_text: &str,
    after_text: &str,
    settled: &Settled,
) -> (Vec<Diagnostic>, usize) {
    let old = split_lines(before_text);
    let new = split_lines(after_text);
    let prefix = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let max_suffix = old.len().min(new.len()) - prefix;
    let suffix = old
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    // 1-based changed spans: old lines (prefix, old_end], new (prefix, new_end].
    let old_end = old.len() - suffix;
    let new_end = new.len() - suffix;
    let delta = new.len() as i64 - old.len() as i64;
    let in_new_span = |l: usize| l > prefix && l <= new_end.max(prefix + 1);
    let mapped = |l: usize| -> Option<usize> {
        if l <= prefix {
            Some(l)
        } else if l > old_end {
            usize::try_from(l as i64 + delta).ok()
        } else {
            None
        }
    };
    let key = |d: &Diagnostic| (d.severity, d.source.clone(), d.message.clone());
    let mut pool: HashMap<_, Vec<Option<usize>>> = HashMap::new();
    for d in settled
        .before
        .iter()
        .filter(|d| d.severity <= Severity::Warning)
    {
        pool.entry(key(d)).or_default().push(mapped(d.line));
    }
    let mut after: Vec<&Diagnostic> = settled
        .after
        .iter()
        .filter(|d| d.severity <= Severity::Warning)
        .collect();
    after.sort_by_key(|d| d.line);
    let lo = prefix.saturating_sub(NEAR_LINES);
    let hi = new_end.max(prefix + 1) + NEAR_LINES;
    let (mut near, mut elsewhere) = (Vec::new(), 0);
    for d in after {
        let slots = pool.entry(key(d)).or_default();
        let same = slots.iter().position(|m| *m == Some(d.line)).or_else(|| {
            in_new_span(d.line)
                .then(|| slots.iter().position(Option::is_none))
                .flatten()
        });
        if let Some(i) = same {
            slots.swap_remove(i);
        } else if d.line > lo && d.line <= hi {
            near.push(d.clone());
        } else {
            elsewhere += 1;
        }
    }
    (near, elsewhere)
}

/// What an Edit or Write of `path` appends to its result once its language
/// servers answered: [`EDIT_NEW_DIAGNOSTICS`] with the new errors and
/// warnings near the change (at most [`EDIT_MAX_DIAGNOSTICS`]) and
/// [`EDIT_NEW_ELSEWHERE`] for the others, or [`EDIT_DIAGNOSTICS_UNANSWERED`]
/// when no server answered; `None` when there is nothing new to say.
pub fn edit_report(
    before_text: &str,
    after_text: &str,
    settled: &Settled,
    shown_path: &str,
) -> Option<String> {
    let (near, elsewhere) = new_near_change(before_text, after_text, settled);
    if near.is_empty() && elsewhere == 0 {
        return settled
            .unanswered
            .then(|| EDIT_DIAGNOSTICS_UNANSWERED.to_string());
    }
    let mut out = vec![EDIT_NEW_DIAGNOSTICS.to_string()];
    let hidden = near.len().saturating_sub(EDIT_MAX_DIAGNOSTICS) + elsewhere;
    out.extend(
        near.iter()
            .take(EDIT_MAX_DIAGNOSTICS)
            .map(|d| format!("{}:{}", shown_path, one_line(d))),
    );
    if hidden > 0 {
        out.push(fill(
            EDIT_NEW_ELSEWHERE,
            &[
                ("count", &plural(hidden, "more", "more")),
                ("path", shown_path),
            ],
        ));
    }
    Some(out.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn diag(line: usize, sev: Severity, msg: &str) -> Diagnostic {
        Diagnostic {
            path: PathBuf::from("/p/m.py"),
            line,
            severity: sev,
            source: Some("pyflakes".into()),
            message: msg.into(),
        }
    }

    #[test]
    fn golden_constants() {
        assert_eq!(
            EDIT_NEW_DIAGNOSTICS,
            "The language server reports new problems in and near this change; fix them before moving on:"
        );
        assert_eq!(
            EDIT_NEW_ELSEWHERE,
            "{count} elsewhere in {path}; call Diagnostics with this file_path to see them."
        );
        assert_eq!(EDIT_DIAGNOSTICS_UNANSWERED, "The language server had not reported on this change when lathe stopped waiting; call Diagnostics with this file_path to check it.");
    }

    #[test]
    fn a_new_error_on_the_changed_line_is_reported_with_its_line() {
        let before = "import os\n\ndef f():\n    return os.getcwd()\n";
        let after = "import os\n\ndef f():\n    return oss.getcwd()\n";
        let settled = Settled {
            before: vec![],
            after: vec![
                diag(1, Severity::Error, "'os' imported but unused"),
                diag(4, Severity::Error, "undefined name 'oss'"),
            ],
            unanswered: false,
        };
        let report = edit_report(before, after, &settled, "m.py").expect("report");
        assert_eq!(
            report,
            format!("{EDIT_NEW_DIAGNOSTICS}\nm.py:1: error [pyflakes] 'os' imported but unused\nm.py:4: error [pyflakes] undefined name 'oss'")
        );
    }

    #[test]
    fn diagnostics_that_were_there_before_are_not_repeated_even_when_lines_move() {
        // An old problem at line 10 moves to line 12 (two lines inserted at 3).
        let before: String = (1..=12).map(|i| format!("l{i}\n")).collect();
        let mut lines: Vec<String> = (1..=12).map(|i| format!("l{i}")).collect();
        lines.insert(2, "new_a".into());
        lines.insert(3, "new_b".into());
        let after = lines.join("\n") + "\n";
        let settled = Settled {
            before: vec![diag(10, Severity::Warning, "old one")],
            after: vec![
                diag(12, Severity::Warning, "old one"),
                diag(4, Severity::Error, "new one"),
                diag(14, Severity::Error, "far away"),
            ],
            unanswered: false,
        };
        let (near, elsewhere) = new_near_change(&before, &after, &settled);
        assert_eq!(near, vec![diag(4, Severity::Error, "new one")]);
        assert_eq!(elsewhere, 1);
        let report = edit_report(&before, &after, &settled, "m.py").expect("report");
        assert!(
            report.ends_with(
                "1 more elsewhere in m.py; call Diagnostics with this file_path to see them."
            ),
            "{report}"
        );
    }

    #[test]
    fn a_fix_reports_nothing_and_hints_are_left_out() {
        let before = "x = oss\n";
        let after = "x = os\n";
        let settled = Settled {
            before: vec![diag(1, Severity::Error, "undefined name 'oss'")],
            after: vec![diag(1, Severity::Hint, "a hint")],
            unanswered: false,
        };
        assert_eq!(edit_report(before, after, &settled, "m.py"), None);
        let unanswered = Settled {
            unanswered: true,
            ..settled
        };
        assert_eq!(
            edit_report(before, after, &unanswered, "m.py").as_deref(),
            Some(EDIT_DIAGNOSTICS_UNANSWERED)
        );
    }

    #[test]
    fn the_same_message_on_the_edited_line_stays_old() {
        let before = "a = undefined_x\n";
        let after = "a = undefined_x  # note\n";
        let settled = Settled {
            before: vec![diag(1, Severity::Error, "undefined name 'undefined_x'")],
            after: vec![diag(1, Severity::Error, "undefined name 'undefined_x'")],
            unanswered: false,
        };
        assert_eq!(edit_report(before, after, &settled, "m.py"), None);
    }
}
