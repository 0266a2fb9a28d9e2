//! Inline edit of a selection (`:'<,'>Lathe edit {instruction}`,
//! docs/inline-edit.md): one request outside the conversation, through the
//! session's provider, asking for only the text that replaces the selected
//! lines; the answer streams back as a proposal whose hunks the front end
//! shows in the buffer.
//!
//! This module is pure but for [`run`]: the request ([`request`]: the file,
//! bounded, with the selected lines marked), the answer's text as lines of
//! the proposal ([`proposal_lines`]: a surrounding code fence taken off),
//! and the hunks between the selected lines and the proposal ([`hunks`],
//! made by `checkpoint::merge::hunks`, the review's).

use std::sync::Arc;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::checkpoint::merge;
use crate::config::Config;
use crate::protocol::{ContentBlock, Message, MessagesRequest, Role, Usage};
use crate::provider::assemble::{Assembled, MessageAssembler};
use crate::provider::hints::user_message;
use crate::provider::retry::RetryPolicy;
use crate::provider::Provider;
use crate::text::fill;

/// Model-facing: the system prompt of an inline edit request.
pub const INLINE_SYSTEM: &str = "You edit code inside Neovim. You get a file in which some lines are marked as the selection, and an instruction about them. Answer with only the text that replaces the selected lines, exactly as it must stand in the file: the same indentation style, every line whole. No explanation, no Markdown code fence, no line numbers, none of the lines outside the selection. To remove the selected lines, answer with nothing.";

/// Model-facing: the user message of an inline edit request. `{path}`,
/// `{filetype}`, `{first}`, `{last}`, `{before}`, `{selection}`,
/// `{after}`, `{instruction}`.
pub const INLINE_PROMPT: &str = "<file path=\"{path}\" filetype=\"{filetype}\">\n{before}<selection lines=\"{first}-{last}\">\n{selection}</selection>\n{after}</file>\n\nInstruction for the selected lines: {instruction}\n\nAnswer with the new text of lines {first}-{last} only.";

/// Model-facing: stands for lines of the file left out of the request
/// (before or after the selection). `{n}`: how many.
pub const LINES_LEFT_OUT: &str = "[{n} lines not shown]\n";

/// Bytes of the file's lines outside the selection sent with a request, at
/// most: half before the selection, half after (the nearest lines first).
pub const CONTEXT_BYTES: usize = 60_000;

/// The file type named when the buffer has none.
pub const NO_FILETYPE: &str = "text";

/// User-facing: an answer ended by the stop.
pub const STOPPED: &str = "stopped";

/// What an inline edit is about: the buffer's whole text as lines, the
/// selection in it, and the user's instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlineEdit {
    /// The file's name as the user sees it (relative to the project root
    /// when inside it); empty for a buffer with no name.
    pub path: String,
    /// The buffer's 'filetype' (may be empty).
    pub filetype: String,
    /// Every line of the buffer, without line ends.
    pub lines: Vec<String>,
    /// First selected line, 1-based.
    pub first: usize,
    /// Last selected line, 1-based, inclusive (at least `first`).
    pub last: usize,
    /// What the user asked for.
    pub instruction: String,
}

impl InlineEdit {
    /// The selected lines.
    pub fn selected(&self) -> &[String] {
        let (a, b) = self.bounds();
        &self.lines[a..b]
    }

    /// The selection as 0-based, end-exclusive indexes into `lines`,
    /// clamped to them.
    fn bounds(&self) -> (usize, usize) {
        let b = self.last.min(self.lines.len());
        let a = self.first.saturating_sub(1).min(b);
        (a, b)
    }
}

/// The user message of `edit`'s request: [`INLINE_PROMPT`] with the file,
/// bounded to [`CONTEXT_BYTES`] around the selection.
pub fn prompt(edit: &InlineEdit) -> String {
    let (a, b) = edit.bounds();
    let budget = CONTEXT_BYTES / 2;
    // Before: the nearest lines first, kept while they fit.
    let mut used = 0;
    let mut from = a;
    while from > 0 && used + edit.lines[from - 1].len() < budget {
        used += edit.lines[from - 1].len() + 1;
        from -= 1;
    }
    let mut used = 0;
    let mut to = b;
    while to < edit.lines.len() && used + edit.lines[to].len() < budget {
        used += edit.lines[to].len() + 1;
        to += 1;
    }
    let mut before = String::new();
    if from > 0 {
        before.push_str(&fill(LINES_LEFT_OUT, &[("n", &from.to_string())]));
    }
    for l in &edit.lines[from..a] {
        before.push_str(l);
        before.push('\n');
    }
    let mut selection = String::new();
    for l in &edit.lines[a..b] {
        selection.push_str(l);
        selection.push('\n');
    }
    let mut after = String::new();
    for l in &edit.lines[b..to] {
        after.push_str(l);
        after.push('\n');
    }
    if to < edit.lines.len() {
        after.push_str(&fill(
            LINES_LEFT_OUT,
            &[("n", &(edit.lines.len() - to).to_string())],
        ));
    }
    let filetype = if edit.filetype.is_empty() {
        NO_FILETYPE
    } else {
        &edit.filetype
    };
    fill(
        INLINE_PROMPT,
        &[
            ("path", &edit.path),
            ("filetype", filetype),
            ("first", &edit.first.to_string()),
            ("last", &edit.last.to_string()),
            ("before", &before),
            ("selection", &selection),
            ("after", &after),
            ("instruction", edit.instruction.trim()),
        ],
    )
}

/// The request of `edit`: the configured model and `max_tokens`,
/// [`INLINE_SYSTEM`], one user message ([`prompt`]), no tools, streaming.
pub fn request(edit: &InlineEdit, config: &Config) -> MessagesRequest {
    MessagesRequest {
        model: config.model.clone(),
        max_tokens: config.max_tokens,
        system: INLINE_SYSTEM.to_string(),
        messages: vec![Arc::new(Message {
            role: Role::User,
            content: vec![ContentBlock::Text { text: prompt(edit) }],
        })],
        tools: Vec::new(),
        stream: true,
    }
}

/// `true` for a line that opens or closes a Markdown code fence.
fn is_fence(line: &str) -> bool {
    line.trim_start().starts_with("```")
}

/// The lines the answer `raw` proposes. A code fence around the answer is
/// taken off (its opening line, and its closing line once written). While
/// the answer streams (`done` false) only whole lines count: the line
/// being written shows when its line end arrives.
pub fn proposal_lines(raw: &str, done: bool) -> Vec<String> {
    let mut lines: Vec<&str> = raw.split('\n').collect();
    // The last piece: the line being written, or "" after a final line end.
    let last = lines.pop().unwrap_or("");
    if done && !last.is_empty() {
        lines.push(last);
    }
    let fenced = lines.first().is_some_and(|l| is_fence(l));
    if fenced {
        lines.remove(0);
        if lines.last().is_some_and(|l| is_fence(l)) {
            lines.pop();
        }
    }
    if done && !fenced {
        // A model that adds blank lines around its answer: they are not
        // part of it.
        while lines.first().is_some_and(|l| l.trim().is_empty()) {
            lines.remove(0);
        }
        while lines.last().is_some_and(|l| l.trim().is_empty()) {
            lines.pop();
        }
    }
    lines.into_iter().map(str::to_string).collect()
}

/// One change the proposal makes to the selected lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineHunk {
    /// Where it starts: 0-based, counted from the first selected line.
    pub start: usize,
    /// The selected lines it replaces (empty for a pure insertion before
    /// line `start`).
    pub old: Vec<String>,
    /// The lines it puts there (empty for a pure deletion).
    pub new: Vec<String>,
}

/// The hunks from `original` (the selected lines) to `proposal`, in order.
/// While the answer streams (`streaming`), a deletion at the end of the
/// selection is left out: those lines are not written yet, not removed.
pub fn hunks(original: &[String], proposal: &[String], streaming: bool) -> Vec<LineHunk> {
    let text = |ls: &[String]| ls.iter().map(|l| format!("{l}\n")).collect::<String>();
    let (base, now) = (text(original), text(proposal));
    let strip = |ls: Vec<String>| {
        ls.into_iter()
            .map(|l| l.strip_suffix('\n').map(str::to_string).unwrap_or(l))
            .collect::<Vec<_>>()
    };
    let mut out: Vec<LineHunk> = merge::hunks(Some(&base), Some(&now))
        .into_iter()
        .map(|h| LineHunk {
            start: h.base.start,
            old: strip(h.base_lines),
            new: strip(h.new_lines),
        })
        .collect();
    if streaming {
        if let Some(last) = out.last_mut() {
            if last.start + last.old.len() == original.len() {
                // Only what the answer already wrote in place of lines counts.
                let keep = last.new.len();
                last.old.truncate(keep);
                if last.old.is_empty() && last.new.is_empty() {
                    out.pop();
                }
            }
        }
    }
    out
}

/// How an inline edit request ended without an answer: the user-facing
/// reason ([`STOPPED`] when the stop cancelled it).
pub type InlineError = String;

/// Sends `req` through `provider` and streams the answer's text: `on_text`
/// gets the whole text so far after each piece (after a retry, from the
/// start again). Retryable failures are retried with the configured
/// backoff. Returns the whole text and what the request spent; `cancel`
/// ends it with [`STOPPED`]. Errors: the user-facing reason
/// ([`user_message`]).
pub async fn run(
    provider: &dyn Provider,
    config: &Config,
    req: MessagesRequest,
    cancel: &CancellationToken,
    on_text: &mut (dyn FnMut(&str) + Send),
) -> Result<(String, Usage), InlineError> {
    let req = crate::provider::validate::prepare(req)
        .map_err(|e| user_message(&e, &config.api_key_env))?;
    let policy = RetryPolicy::from_config(config);
    let mut attempt = 1;
    let mut spent = Usage::default();
    loop {
        let error = tokio::select! {
            r = once(provider, &req, on_text) => match r {
                Ok((text, usage)) => {
                    super::turn::add(&mut spent, &usage);
                    return Ok((text, spent));
                }
                Err((e, usage)) => {
                    super::turn::add(&mut spent, &usage);
                    e
                }
            },
            _ = cancel.cancelled() => return Err(STOPPED.to_string()),
        };
        let Some(wait) = policy.next_delay(attempt, &error) else {
            return Err(user_message(&error, &config.api_key_env));
        };
        attempt += 1;
        on_text("");
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = cancel.cancelled() => return Err(STOPPED.to_string()),
        }
    }
}

/// One try of [`run`].
async fn once(
    provider: &dyn Provider,
    req: &MessagesRequest,
    on_text: &mut (dyn FnMut(&str) + Send),
) -> Result<(String, Usage), (crate::provider::ProviderError, Usage)> {
    let mut stream = provider
        .stream(req)
        .await
        .map_err(|e| (e, Usage::default()))?;
    let mut asm = MessageAssembler::new();
    let mut text = String::new();
    while let Some(event) = stream.next().await {
        match event {
            Ok(event) => {
                if let Some(Assembled::TextDelta { text: piece, .. }) = asm.push(event) {
                    text.push_str(&piece);
                    on_text(&text);
                }
            }
            Err(e) => return Err((e, asm.usage().clone())),
        }
    }
    Ok((text, asm.usage().clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn edit(lines: &[&str], first: usize, last: usize) -> InlineEdit {
        InlineEdit {
            path: "shop/pricing.py".into(),
            filetype: "python".into(),
            lines: lines.iter().map(|s| s.to_string()).collect(),
            first,
            last,
            instruction: "  use a dict  ".into(),
        }
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// The request, as the API gets it (golden).
    #[test]
    fn golden_request() {
        let mut config = Config::new(std::path::Path::new("/p"));
        config.model = "claude-sonnet-4-5".into();
        config.max_tokens = 8192;
        let req = request(&edit(&["a = 1", "b = 2", "c = 3", "d = 4"], 2, 3), &config);
        let body = serde_json::to_value(&req).unwrap();
        assert_eq!(
            body,
            serde_json::json!({
                "model": "claude-sonnet-4-5",
                "max_tokens": 8192,
                "system": INLINE_SYSTEM,
                "messages": [{ "role": "user", "content": [{ "type": "text", "text":
                    "<file path=\"shop/pricing.py\" filetype=\"python\">\na = 1\n<selection lines=\"2-3\">\nb = 2\nc = 3\n</selection>\nd = 4\n</file>\n\nInstruction for the selected lines: use a dict\n\nAnswer with the new text of lines 2-3 only."
                }] }],
                "stream": true
            })
        );
        // A request the API accepts as it is.
        assert!(crate::provider::validate::validate(&req).is_ok());
        assert_eq!(
            INLINE_SYSTEM,
            "You edit code inside Neovim. You get a file in which some lines are marked as the selection, and an instruction about them. Answer with only the text that replaces the selected lines, exactly as it must stand in the file: the same indentation style, every line whole. No explanation, no Markdown code fence, no line numbers, none of the lines outside the selection. To remove the selected lines, answer with nothing."
        );
    }

    #[test]
    fn a_buffer_without_filetype_or_lines_still_makes_a_whole_request() {
        let mut e = edit(&[""], 1, 1);
        e.filetype.clear();
        let p = prompt(&e);
        assert!(p.contains("filetype=\"text\""), "{p}");
        assert!(
            p.contains("<selection lines=\"1-1\">\n\n</selection>"),
            "{p}"
        );
    }

    #[test]
    fn a_large_file_is_sent_around_the_selection() {
        let long = "x".repeat(99);
        let lines: Vec<&str> = std::iter::repeat_n(long.as_str(), 2000).collect();
        let p = prompt(&edit(&lines, 1000, 1001));
        assert!(p.len() < CONTEXT_BYTES + 2_000, "{}", p.len());
        assert!(p.contains("[699 lines not shown]\n"), "{}", &p[..200]);
        assert!(p.contains("<selection lines=\"1000-1001\">"));
        let tail = "lines not shown]\n</file>";
        assert!(p.contains(tail));
    }

    #[test]
    fn a_code_fence_around_the_answer_is_taken_off() {
        assert_eq!(
            proposal_lines("```python\nx = 1\ny = 2\n```\n", true),
            strings(&["x = 1", "y = 2"])
        );
        assert_eq!(proposal_lines("```\nx = 1\n```", true), strings(&["x = 1"]));
        // While streaming: the opening line already, the closing one once written.
        assert_eq!(
            proposal_lines("```py\nx = 1\ny", false),
            strings(&["x = 1"])
        );
        assert_eq!(
            proposal_lines("```py\nx = 1\n```\n", false),
            strings(&["x = 1"])
        );
        // No fence: the text as it is, blank lines around it dropped at the end.
        assert_eq!(proposal_lines("\nx = 1\n\n", true), strings(&["x = 1"]));
        assert_eq!(
            proposal_lines("  x = 1\n\n  y", true),
            strings(&["  x = 1", "", "  y"])
        );
        assert_eq!(proposal_lines("", true), Vec::<String>::new());
        // A fence inside the answer stays.
        assert_eq!(
            proposal_lines("s = '''\n```\n'''", true),
            strings(&["s = '''", "```", "'''"])
        );
    }

    #[test]
    fn hunks_split_the_proposal_by_change() {
        let original = strings(&["a", "b", "c", "d", "e"]);
        let proposal = strings(&["A", "b", "c", "d", "E", "F"]);
        assert_eq!(
            hunks(&original, &proposal, false),
            vec![
                LineHunk {
                    start: 0,
                    old: strings(&["a"]),
                    new: strings(&["A"])
                },
                LineHunk {
                    start: 4,
                    old: strings(&["e"]),
                    new: strings(&["E", "F"])
                },
            ]
        );
        assert_eq!(hunks(&original, &original, false), vec![]);
        // Removing every line is one hunk.
        assert_eq!(
            hunks(&original, &[], false),
            vec![LineHunk {
                start: 0,
                old: original.clone(),
                new: vec![]
            }]
        );
    }

    #[test]
    fn while_streaming_the_lines_not_yet_written_are_not_removed() {
        let original = strings(&["a", "b", "c"]);
        assert_eq!(hunks(&original, &strings(&["a"]), true), vec![]);
        assert_eq!(
            hunks(&original, &strings(&["A"]), true),
            vec![LineHunk {
                start: 0,
                old: strings(&["a"]),
                new: strings(&["A"])
            }]
        );
        assert_eq!(hunks(&original, &[], true), vec![]);
        // Once done, they are.
        assert_eq!(
            hunks(&original, &strings(&["a"]), false),
            vec![LineHunk {
                start: 1,
                old: strings(&["b", "c"]),
                new: vec![]
            }]
        );
    }
}
