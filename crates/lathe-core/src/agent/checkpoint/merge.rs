//! The text side of checkpoints, pure: the hunks between a checkpoint and
//! a file now (`:Lathe changes`), one hunk reverted or kept, and a rewind's
//! three-way restore that takes lathe's changes back out of a file without
//! touching what the user changed since (docs/checkpoints.md).
//!
//! Texts are logical texts (`\n` line ends, see `editor`); lines keep their
//! terminator, so a text splits and joins back byte for byte.

use std::ops::Range;

use similar::{DiffOp, TextDiff};

/// One changed region between a checkpoint's text (`base`) and the text
/// now: `base_lines` there became `new_lines` here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// Lines of `base` replaced (0-based, end exclusive; empty for a pure
    /// insertion, placed before line `base.start`).
    pub base: Range<usize>,
    /// Lines of the text now that replaced them (0-based, end exclusive;
    /// empty for a pure deletion).
    pub now: Range<usize>,
    /// The base's lines, each with its terminator.
    pub base_lines: Vec<String>,
    /// The lines now, each with its terminator.
    pub new_lines: Vec<String>,
}

impl Hunk {
    /// 1-based line of the text now where the hunk is (its first new line,
    /// or the line after a deletion; at least 1).
    pub fn line(&self) -> usize {
        self.now.start + 1
    }
}

/// Lines of `text`, each with its `\n` (the last one may have none).
pub fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// The changed regions from `base` to `now`, in order, without context (a
/// missing text is an empty one: a file created or deleted is one hunk).
pub fn hunks(base: Option<&str>, now: Option<&str>) -> Vec<Hunk> {
    let (base, now) = (base.unwrap_or(""), now.unwrap_or(""));
    let diff = TextDiff::from_lines(base, now);
    let (old, new) = (diff.old_slices(), diff.new_slices());
    let mut out: Vec<Hunk> = Vec::new();
    // Positions are counted here: `similar` may report a deletion's
    // position in the new text one line early.
    let (mut o, mut n) = (0usize, 0usize);
    for op in diff.ops() {
        let (old_len, new_len) = match *op {
            DiffOp::Equal { len, .. } => {
                o += len;
                n += len;
                continue;
            }
            DiffOp::Delete { old_len, .. } => (old_len, 0),
            DiffOp::Insert { new_len, .. } => (0, new_len),
            DiffOp::Replace {
                old_len, new_len, ..
            } => (old_len, new_len),
        };
        let (b, m) = (o..o + old_len, n..n + new_len);
        o += old_len;
        n += new_len;
        match out.last_mut() {
            // Adjacent ops (a delete then an insert) are one hunk.
            Some(last) if last.base.end == b.start && last.now.end == m.start => {
                last.base.end = b.end;
                last.now.end = m.end;
                last.base_lines
                    .extend(old[b].iter().map(|s| (*s).to_string()));
                last.new_lines
                    .extend(new[m].iter().map(|s| (*s).to_string()));
            }
            _ => out.push(Hunk {
                base_lines: old[b.clone()].iter().map(|s| (*s).to_string()).collect(),
                new_lines: new[m.clone()].iter().map(|s| (*s).to_string()).collect(),
                base: b,
                now: m,
            }),
        }
    }
    out
}

/// `now` with `hunk` put back as it was in the base: its new lines
/// replaced by its base lines. `None` when `now` no longer holds the hunk's
/// new lines where the hunk says (the text moved on since the hunks were
/// taken: take them again).
pub fn revert_hunk(now: &str, hunk: &Hunk) -> Option<String> {
    splice(now, &hunk.now, &hunk.new_lines, &hunk.base_lines)
}

/// `base` with `hunk` accepted: its base lines replaced by its new lines,
/// so the hunk is no longer a change against the returned base. `None` as
/// for [`revert_hunk`].
pub fn keep_hunk(base: &str, hunk: &Hunk) -> Option<String> {
    splice(base, &hunk.base, &hunk.base_lines, &hunk.new_lines)
}

/// `text` with the lines `at` (which must read `expect`) replaced by `with`.
fn splice(text: &str, at: &Range<usize>, expect: &[String], with: &[String]) -> Option<String> {
    let ls = lines(text);
    if at.end > ls.len() || ls[at.clone()] != *expect {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    for l in &ls[..at.start] {
        out.push_str(l);
    }
    let mut replaced = with.concat();
    // A replacement in the middle must end its last line.
    if at.end < ls.len() && !replaced.is_empty() && !replaced.ends_with('\n') {
        replaced.push('\n');
    }
    out.push_str(&replaced);
    for l in &ls[at.end..] {
        out.push_str(l);
    }
    Some(out)
}

/// What [`restore`] makes of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    /// The file's text after the restore; `None`: the file goes (lathe
    /// created it and nobody changed it since).
    pub text: Option<String>,
    /// lathe's hunks left in place because the user changed the same
    /// lines since: 1-based lines of the returned text where each is.
    pub conflicts: Vec<usize>,
    /// How many of lathe's hunks were taken back out.
    pub reverted: usize,
}

/// Takes lathe's changes out of a file: `before` is the file before the
/// prompt (`None`: it did not exist), `after` what lathe's last write left,
/// `now` the file now (`None`: it is gone). Where the user changed nothing
/// since, the result is `before`; otherwise every hunk of lathe's change
/// that does not touch a line the user changed is reverted and the user's
/// changes stay, and the hunks that do touch are left as they are and
/// reported in `conflicts` (nothing the user typed is lost).
pub fn restore(before: Option<&str>, after: &str, now: Option<&str>) -> Restored {
    let Some(now) = now else {
        // Deleted since: not brought back behind the user's back.
        return Restored {
            text: None,
            conflicts: if before.is_some() {
                vec![1]
            } else {
                Vec::new()
            },
            reverted: 0,
        };
    };
    if now == after {
        let reverted = hunks(Some(after), before).len();
        return Restored {
            text: before.map(str::to_string),
            conflicts: Vec::new(),
            reverted,
        };
    }
    let Some(before) = before else {
        // Created by lathe, changed since by the user: it stays.
        return Restored {
            text: Some(now.to_string()),
            conflicts: vec![1],
            reverted: 0,
        };
    };
    // Both sides as changes of `after`: lathe's revert (after → before)
    // and the user's edits (after → now).
    let ours = hunks(Some(after), Some(before));
    let users = hunks(Some(after), Some(now));
    let touches = |a: &Range<usize>, b: &Range<usize>| a.start <= b.end && b.start <= a.end;
    enum Side<'a> {
        Revert(&'a Hunk),
        User(&'a Hunk),
    }
    let mut chosen: Vec<(usize, Side)> = users
        .iter()
        .map(|u| (u.base.start, Side::User(u)))
        .collect();
    let mut conflicted: Vec<&Hunk> = Vec::new();
    for h in &ours {
        if users.iter().any(|u| touches(&h.base, &u.base)) {
            conflicted.push(h);
        } else {
            chosen.push((h.base.start, Side::Revert(h)));
        }
    }
    chosen.sort_by_key(|(start, side)| (*start, matches!(side, Side::Revert(_))));
    let after_lines = lines(after);
    let mut out = String::with_capacity(now.len().max(before.len()));
    let mut at = 0usize;
    // Where each conflicted hunk's lines land: track the output line count
    // at each after-line we copy.
    let mut out_line = 0usize;
    let mut line_of_after: Vec<usize> = vec![0; after_lines.len() + 1];
    let copy_until = |to: usize,
                      at: &mut usize,
                      out: &mut String,
                      out_line: &mut usize,
                      map: &mut Vec<usize>| {
        while *at < to {
            map[*at] = *out_line;
            out.push_str(after_lines[*at]);
            *out_line += 1;
            *at += 1;
        }
        map[*at] = *out_line;
    };
    let mut reverted = 0;
    for (_, side) in &chosen {
        let (range, with) = match side {
            Side::Revert(h) => (&h.base, &h.new_lines),
            Side::User(u) => (&u.base, &u.new_lines),
        };
        copy_until(
            range.start,
            &mut at,
            &mut out,
            &mut out_line,
            &mut line_of_after,
        );
        let mut text = with.concat();
        if range.end < after_lines.len() && !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        out_line += with.len();
        out.push_str(&text);
        at = range.end;
        if matches!(side, Side::Revert(_)) {
            reverted += 1;
        }
    }
    copy_until(
        after_lines.len(),
        &mut at,
        &mut out,
        &mut out_line,
        &mut line_of_after,
    );
    let conflicts = conflicted
        .iter()
        .map(|h| line_of_after[h.base.start.min(after_lines.len())] + 1)
        .collect();
    Restored {
        text: Some(out),
        conflicts,
        reverted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn hunks_of_an_edit_a_creation_and_a_deletion() {
        let h = hunks(Some("a\nb\nc\n"), Some("a\nB\nc\nd\n"));
        assert_eq!(h.len(), 2);
        assert_eq!(h[0].base, 1..2);
        assert_eq!(h[0].now, 1..2);
        assert_eq!(h[0].base_lines, vec!["b\n"]);
        assert_eq!(h[0].new_lines, vec!["B\n"]);
        assert_eq!(h[0].line(), 2);
        assert_eq!(h[1].base, 3..3);
        assert_eq!(h[1].new_lines, vec!["d\n"]);
        assert_eq!(hunks(None, Some("x\n")).len(), 1);
        assert_eq!(hunks(Some("x\n"), None)[0].base_lines, vec!["x\n"]);
        assert!(hunks(Some("same\n"), Some("same\n")).is_empty());
    }

    #[test]
    fn reverting_or_keeping_every_hunk_gives_the_base_or_now() {
        let (base, now) = ("a\nb\nc\nd\ne\n", "a\nX\nc\nd\ne\nf\n");
        let mut text = now.to_string();
        for h in hunks(Some(base), Some(now)).iter().rev() {
            text = revert_hunk(&text, h).unwrap();
        }
        assert_eq!(text, base);
        let mut kept = base.to_string();
        for h in hunks(Some(base), Some(now)).iter().rev() {
            kept = keep_hunk(&kept, h).unwrap();
        }
        assert_eq!(kept, now);
    }

    #[test]
    fn a_hunk_of_a_text_that_moved_on_is_refused() {
        let h = &hunks(Some("a\nb\n"), Some("a\nB\n"))[0];
        assert_eq!(revert_hunk("a\nzzz\n", h), None);
        assert_eq!(revert_hunk("a\n", h), None);
    }

    #[test]
    fn restore_with_no_user_change_is_the_text_before() {
        let r = restore(Some("one\ntwo\n"), "one\n2\n", Some("one\n2\n"));
        assert_eq!(r.text.as_deref(), Some("one\ntwo\n"));
        assert!(r.conflicts.is_empty());
        assert_eq!(r.reverted, 1);
    }

    #[test]
    fn a_file_lathe_created_goes_unless_the_user_changed_it() {
        assert_eq!(restore(None, "new\n", Some("new\n")).text, None);
        let kept = restore(None, "new\n", Some("new\nmine\n"));
        assert_eq!(kept.text.as_deref(), Some("new\nmine\n"));
        assert_eq!(kept.conflicts, vec![1]);
    }

    #[test]
    fn a_file_the_user_deleted_is_not_brought_back() {
        let r = restore(Some("a\n"), "b\n", None);
        assert_eq!(r.text, None);
        assert_eq!(r.conflicts, vec![1]);
    }

    #[test]
    fn the_users_edits_elsewhere_stay_and_lathes_are_taken_out() {
        let before = "l1\nl2\nl3\nl4\nl5\nl6\nl7\n";
        let after = "l1\nLATHE\nl3\nl4\nl5\nl6\nl7\n";
        let now = "l1\nLATHE\nl3\nl4\nl5\nl6\nmine\nl7\n";
        let r = restore(Some(before), after, Some(now));
        assert_eq!(
            r.text.as_deref(),
            Some("l1\nl2\nl3\nl4\nl5\nl6\nmine\nl7\n")
        );
        assert!(r.conflicts.is_empty());
        assert_eq!(r.reverted, 1);
    }

    #[test]
    fn lathes_hunk_on_lines_the_user_changed_stays_and_is_reported() {
        let before = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let after = "a\nB\nc\nd\ne\nf\nG\nh\n";
        // The user changed lathe's B line; lathe's G hunk is clean.
        let now = "a\nB and mine\nc\nd\ne\nf\nG\nh\n";
        let r = restore(Some(before), after, Some(now));
        assert_eq!(r.text.as_deref(), Some("a\nB and mine\nc\nd\ne\nf\ng\nh\n"));
        assert_eq!(r.conflicts, vec![2]);
        assert_eq!(r.reverted, 1);
    }

    fn text_of(lines: &[u8]) -> String {
        lines.iter().map(|l| format!("l{l}\n")).collect()
    }

    proptest! {
        /// Whatever the three texts, the restore keeps every line the user
        /// added (nothing typed is lost), and with no user change it is
        /// exactly the text before.
        #[test]
        fn restore_never_loses_a_user_line(
            before in proptest::collection::vec(0u8..6, 0..12),
            after in proptest::collection::vec(0u8..6, 0..12),
            added in proptest::collection::vec((0usize..14, 100u8..110), 0..4),
        ) {
            let (before, after) = (text_of(&before), text_of(&after));
            let mut now_lines: Vec<String> = lines(&after).iter().map(|s| s.to_string()).collect();
            for (at, l) in &added {
                let at = (*at).min(now_lines.len());
                now_lines.insert(at, format!("l{l}\n"));
            }
            let now: String = now_lines.concat();
            let r = restore(Some(&before), &after, Some(&now));
            let text = r.text.unwrap_or_default();
            for (_, l) in &added {
                let line = format!("l{l}\n");
                prop_assert!(text.contains(&line), "lost {line:?}: {text:?}");
            }
            if added.is_empty() {
                prop_assert_eq!(text, before);
            }
        }

        /// Reverting every hunk of any pair of texts gives the base back.
        #[test]
        fn reverting_all_hunks_gives_the_base(
            base in proptest::collection::vec(0u8..5, 0..10),
            now in proptest::collection::vec(0u8..5, 0..10),
        ) {
            let (base, now) = (text_of(&base), text_of(&now));
            let mut text = now.clone();
            for h in hunks(Some(&base), Some(&now)).iter().rev() {
                text = revert_hunk(&text, h).unwrap();
            }
            prop_assert_eq!(text, base);
        }
    }
}
