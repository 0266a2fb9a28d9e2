//! Context and compaction (docs/context-and-compaction.md, "Context and
//! compaction"): how full the model's context window is, and what lathe
//! does before a request that would fill it.
//!
//! Before every request (not once per turn) `Turn::fit_window` estimates
//! its tokens: the last answer's `usage` (input + cache read + cache
//! write) for the bytes that request had, scaled to the bytes of this one
//! ([`ContextState`]). Past the `auto_compact` share of the window, the
//! cheap step first: the oldest large tool results are cleared
//! (`Transcript::clear_tool_results`, pairing kept, the model told it can
//! call again; a cleared Read's file is marked gone in `FileState`, so
//! Read answers with the text again, never "unchanged", while its stamp
//! still holds for the stale rule). Still past it: `Turn::compact`
//! asks the same provider for a summary and replaces the conversation with
//! one user message: the summary, the files read last re-read from disk
//! within a budget, and the user's latest messages verbatim. Three failed
//! compactions in a row turn auto-compaction off for the session, with a
//! notice; `:Lathe compact` still works and turns it back on.
//!
//! This module holds the state, the texts and the pure steps; the steps
//! that send requests and run tools are methods of the turn
//! (`agent::turn::window`).

use std::sync::{Mutex, MutexGuard};

use super::transcript::{repair_pairing, result_bytes};
use crate::protocol::{ContentBlock, Message, MessagesRequest, Role, ToolResultContent, Usage};
use crate::provider::ProviderError;
#[cfg(test)]
use crate::text::fill;

/// Model-facing: the system prompt of a summary request.
pub const COMPACT_SYSTEM: &str = "You summarize a coding session between a user and lathe, a coding agent inside Neovim, so that the work can go on from your summary alone. Answer with text only; do not call tools.";

/// Model-facing: the last user text of a summary request. It starts with
/// `mock_llm::context_window::SUMMARY_REQUEST_PREFIX` (mock-llm answers it
/// itself; a test checks they agree).
pub const COMPACT_PROMPT: &str = "Write a summary of this conversation so far for the model that will continue the work from it alone: the conversation itself will be gone. Keep, in this order:
1. Every request the user made, in their words where the wording matters, and what became of each.
2. Decisions taken and why; constraints and preferences the user stated.
3. Errors met and how each was fixed, or that it was not.
4. Files read, created or changed, each with what matters about it now (functions, types, line numbers).
5. The work in progress at this moment and the next step, as it was planned.
Leave out what no longer matters (superseded attempts, tool output already acted on). Write it inside <summary></summary>.";

/// Model-facing: added to [`COMPACT_PROMPT`] by `:Lathe compact {focus}`.
/// `{focus}`.
pub const COMPACT_FOCUS: &str = "\nThe user asks the summary to focus on: {focus}";

/// Model-facing: the first block of a compacted conversation. `{summary}`.
pub const COMPACTED_INTRO: &str = "This conversation was compacted to fit the model's context window: the earlier messages were replaced by this summary of them. Their tool results are gone; call the tools again for anything you need.\n\n<summary>\n{summary}\n</summary>";

/// Model-facing: a file re-read after a compaction. `{path}`, `{content}`.
pub const REATTACHED_FILE: &str =
    "{path} as it is now (read again after the compaction; this counts as your Read of it):\n{content}";

/// Model-facing: the start of a file re-read after a compaction, when
/// the whole file did not fit the budget (Read's trailer in `{content}`
/// says where it continues). `{path}`, `{content}`.
pub const REATTACHED_PART: &str =
    "{path} as it is now, its first lines (read again after the compaction; the whole file is longer than the room for re-read files; this counts as your Read of these lines):\n{content}";

/// Model-facing: the user's latest messages kept verbatim. `{messages}`.
pub const RECENT_USER_MESSAGES: &str =
    "The user's latest messages, verbatim, the most recent last:\n{messages}";

/// User-facing: old tool results were cleared. `{n}`, `{before}`, `{after}`.
pub const CLEARED_NOTICE: &str =
    "Cleared the output of {n} to keep the conversation within the context window ({before} → {after} tokens).";

/// User-facing: a compaction failed. `{error}`.
pub const COMPACT_FAILED: &str = "Compacting the conversation failed: {error}";

/// User-facing: auto-compaction turned off after repeated failures.
pub const AUTO_COMPACT_OFF: &str = "Compacting failed 3 times in a row, so lathe stops compacting on its own in this session. Run :Lathe compact to try again, or :Lathe new to start afresh.";

/// User-facing: the request is refused as too long even after compacting
/// (or compaction is off). `{error}`.
pub const CONTEXT_FULL: &str = "{error}\nThe conversation does not fit the model's context window. Run :Lathe compact (optionally with what to focus on) and ask again, or :Lathe new to start afresh.";

/// User-facing: the prompt that could not be sent was taken out.
pub const PROMPT_NOT_KEPT: &str =
    "Your last prompt was taken out of the conversation, so it does not pile up; send it again after compacting.";

/// User-facing: `stop_reason: model_context_window_exceeded`.
pub const WINDOW_FULL_STOP: &str = "The answer stopped because the model's context window is full. Run :Lathe compact and ask the model to go on, or :Lathe new to start afresh.";

/// User-facing: `:Lathe compact` of an empty conversation.
pub const NOTHING_TO_COMPACT: &str = "There is nothing to compact yet.";

/// The summary came back empty.
pub const EMPTY_SUMMARY: &str = "the model answered without a summary";

/// The conversation could not be cut short enough for a summary request.
pub const CANNOT_TRIM: &str = "even its newest messages are too long for one summary request";

/// Tool results kept as they are, newest first, when clearing.
pub const KEEP_RECENT_RESULTS: usize = 3;
/// Results this small are not worth clearing (the cleared text is ~160).
pub const MIN_CLEAR_BYTES: usize = 1024;
/// Clearing goes down to this share of the threshold, so it is not
/// needed again at the next request (thousandths).
pub const CLEAR_TARGET_PERMILLE: u64 = 800;
/// Failed compactions in a row before auto-compaction stops.
pub const MAX_FAILURES: u32 = 3;
/// Files re-read after a compaction, at most.
pub const REATTACH_FILES: usize = 5;
/// Tokens of one re-read file, at most.
pub const REATTACH_FILE_TOKENS: u64 = 5_000;
/// Tokens of all re-read files, at most (and a tenth of the window).
pub const REATTACH_TOKENS: u64 = 50_000;
/// Tokens of the user's messages kept verbatim (and a twentieth of the
/// window).
pub const RECENT_USER_TOKENS: u64 = 20_000;
/// A file re-read in part after a compaction shows at least this many
/// lines (`reattach_limit`); less is left out.
pub const REATTACH_MIN_LINES: usize = 20;
/// Trims of the oldest messages before a summary request gives up.
pub const MAX_TRIMS: usize = 8;

/// How full the window is, for the meter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Meter {
    /// Tokens in the context now (estimate).
    pub used: u64,
    /// The window.
    pub window: u64,
}

impl Meter {
    /// `ctx 143.0k/200.0k (72%)`.
    pub fn label(&self) -> String {
        let pct = (self.used * 100).checked_div(self.window).unwrap_or(0);
        format!("ctx {}/{} ({pct}%)", short(self.used), short(self.window))
    }
}

/// `n` for people: `950`, `12.3k`, `1.2M`.
pub fn short(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{:.1}k", n as f64 / 1_000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

/// A session's view of its context window, shared by its turns.
#[derive(Debug, Default)]
pub struct ContextState {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    window: Option<u64>,
    /// The last answer's input tokens and the bytes of its request.
    calibration: Option<(u64, u64)>,
    /// Tokens in context after the last request or change (estimate).
    used: u64,
    failures: u32,
    auto_off: bool,
}

impl ContextState {
    /// The window, once known.
    pub(crate) fn known_window(&self) -> Option<u64> {
        self.lock().window
    }

    pub(crate) fn set_window(&self, window: u64) {
        self.lock().window = Some(window);
    }

    /// Forgets the window, so the next request asks for it again (the
    /// model changed and the window came from the model).
    pub(crate) fn forget_window(&self) {
        self.lock().window = None;
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The meter, once the window is known (the first request).
    pub fn meter(&self) -> Option<Meter> {
        let inner = self.lock();
        inner.window.map(|window| Meter {
            used: inner.used,
            window,
        })
    }

    /// Tokens of a request of `bytes` bytes: scaled from the last answer's
    /// count (between 1/8 and 1/2 token per byte), else bytes / 4.
    pub fn estimate(&self, bytes: u64) -> u64 {
        match self.lock().calibration {
            Some((tokens, b)) if b > 0 => {
                let t = (u128::from(bytes) * u128::from(tokens) / u128::from(b)) as u64;
                t.clamp(bytes / 8, bytes / 2)
            }
            _ => bytes / 4,
        }
    }

    /// A request of `bytes` bytes was answered with `usage`.
    pub fn measured(&self, bytes: u64, usage: &Usage) {
        let input = usage.input_tokens.unwrap_or(0)
            + usage.cache_read_input_tokens.unwrap_or(0)
            + usage.cache_creation_input_tokens.unwrap_or(0);
        let mut inner = self.lock();
        if input > 0 {
            inner.calibration = Some((input, bytes));
            inner.used = input + usage.output_tokens.unwrap_or(0);
        }
    }

    pub(crate) fn set_used(&self, used: u64) {
        self.lock().used = used;
    }

    /// Restores the meter of a resumed session (its last estimate).
    pub fn restore_used(&self, used: u64) {
        self.set_used(used);
    }

    pub(crate) fn auto_allowed(&self) -> bool {
        !self.lock().auto_off
    }

    /// Counts a failed automatic compaction; `true` when that turned
    /// auto-compaction off.
    pub(crate) fn failed(&self) -> bool {
        let mut inner = self.lock();
        inner.failures += 1;
        if inner.failures >= MAX_FAILURES && !inner.auto_off {
            inner.auto_off = true;
            return true;
        }
        false
    }

    pub(crate) fn succeeded(&self) {
        let mut inner = self.lock();
        inner.failures = 0;
        inner.auto_off = false;
    }
}

/// What the context holds, by part, in tokens (estimates): `:Lathe
/// context`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ContextReport {
    /// The meter (`None` before the first request).
    pub meter: Option<Meter>,
    /// The system prompt.
    pub system: u64,
    /// The tool definitions.
    pub tools: u64,
    /// The messages, tool results left out.
    pub messages: u64,
    /// Tool results by tool name, largest first.
    pub tool_results: Vec<(String, u64)>,
    /// What clearing old tool results would free now.
    pub clearable: u64,
}

impl ContextReport {
    /// The lines `:Lathe context` shows.
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![match self.meter {
            Some(m) => format!("lathe context: {}", m.label()),
            None => "lathe context: no request sent yet (estimates)".to_string(),
        }];
        let mut rows = vec![
            ("system prompt".to_string(), self.system),
            ("tools".to_string(), self.tools),
            ("messages".to_string(), self.messages),
        ];
        rows.extend(
            self.tool_results
                .iter()
                .map(|(name, n)| (format!("results of {name}"), *n)),
        );
        // One label width for every row, so the figures line up.
        let width = rows
            .iter()
            .map(|(l, _)| l.chars().count())
            .max()
            .unwrap_or(0);
        for (label, n) in rows {
            out.push(format!("  {label:<width$}  {}", short(n)));
        }
        out.push(format!(
            "  clearing old tool results would free {}; :Lathe compact summarizes the rest",
            short(self.clearable)
        ));
        out
    }
}

/// The report of a request `req` (with its transcript as `messages`).
pub(crate) fn report(context: &ContextState, req: &MessagesRequest) -> ContextReport {
    let tokens = |bytes: usize| context.estimate(bytes as u64);
    let names: std::collections::HashMap<&str, &str> = req
        .messages
        .iter()
        .flat_map(|m| m.tool_uses())
        .map(|u| (u.id.as_str(), u.name.as_str()))
        .collect();
    let mut by_tool: std::collections::BTreeMap<String, usize> = Default::default();
    let mut other = 0usize;
    let mut results: Vec<usize> = Vec::new();
    for m in &req.messages {
        for b in &m.content {
            match b {
                ContentBlock::ToolResult(r) => {
                    let n = result_bytes(&r.content);
                    let name = names.get(r.tool_use_id.as_str()).unwrap_or(&"tool");
                    *by_tool.entry(name.to_string()).or_default() += n;
                    results.push(n);
                }
                other_block => other += serde_json::to_vec(other_block).map_or(0, |v| v.len()),
            }
        }
    }
    let keep = results.len().saturating_sub(KEEP_RECENT_RESULTS);
    let clearable: usize = results[..keep]
        .iter()
        .filter(|n| **n > MIN_CLEAR_BYTES)
        .sum();
    let mut tool_results: Vec<(String, u64)> =
        by_tool.into_iter().map(|(k, v)| (k, tokens(v))).collect();
    tool_results.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    ContextReport {
        meter: context.meter(),
        system: tokens(req.system.len()),
        tools: tokens(serde_json::to_vec(&req.tools).map_or(0, |v| v.len())),
        messages: tokens(other),
        tool_results,
        clearable: tokens(clearable),
    }
}

/// Bytes of `req` serialized (no copy is made).
pub fn request_bytes(req: &MessagesRequest) -> u64 {
    crate::provider::json_bytes(req)
}

/// Whether the API refused a request for its length: HTTP 413, a 400
/// `prompt is too long` (Messages API), `context_length_exceeded`
/// (OpenAI-compatible servers, as the code or in the message).
pub fn is_context_overflow(err: &ProviderError) -> bool {
    let says = |kind: &str, message: &str| {
        kind == "context_length_exceeded"
            || message.contains("prompt is too long")
            || message.contains("context_length_exceeded")
            || message.contains("maximum context length")
    };
    match err {
        ProviderError::Http { status: 413, .. } => true,
        ProviderError::Http { kind, message, .. } | ProviderError::Stream { kind, message } => {
            says(kind, message)
        }
        _ => false,
    }
}

/// `messages` with the oldest quarter (at least two) taken off, starting
/// again at a user message with no `tool_result` whose call is gone;
/// `false` when nothing would be left.
/// How much of each tool result's text a summary request keeps at first
/// when it is too long: halved at each step down to
/// [`SUMMARY_RESULT_FLOOR`] before whole messages are left out.
pub const SUMMARY_RESULT_CHARS: usize = 8000;

/// The least of each tool result a summary request keeps.
pub const SUMMARY_RESULT_FLOOR: usize = 250;

/// Marks where a tool result was cut for a summary request.
pub const CUT_FOR_SUMMARY: &str = "[… cut for the summary]";

/// Cuts each tool result of `messages` to its first `max_chars`
/// characters (an image becomes a note): a summary needs what a result
/// was about, not all of it. `true` when something was cut.
pub(crate) fn shorten_results(messages: &mut [Message], max_chars: usize) -> bool {
    let cut = |text: &mut String| -> bool {
        if let Some(kept) = text.strip_suffix(CUT_FOR_SUMMARY) {
            let kept = kept.strip_suffix('\n').unwrap_or(kept);
            if kept.chars().count() <= max_chars {
                return false;
            }
            *text = kept.to_string();
        }
        match text.char_indices().nth(max_chars) {
            Some((at, _)) => {
                text.truncate(at);
                text.push('\n');
                text.push_str(CUT_FOR_SUMMARY);
                true
            }
            None => false,
        }
    };
    let mut changed = false;
    for block in messages.iter_mut().flat_map(|m| m.content.iter_mut()) {
        let ContentBlock::ToolResult(result) = block else {
            continue;
        };
        match &mut result.content {
            ToolResultContent::Text(text) => changed |= cut(text),
            ToolResultContent::Blocks(blocks) => {
                for b in blocks.iter_mut() {
                    match b {
                        ContentBlock::Text { text } => changed |= cut(text),
                        ContentBlock::Image { .. } => {
                            *b = ContentBlock::Text {
                                text: "[image]".into(),
                            };
                            changed = true;
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    changed
}

pub(crate) fn trim_oldest(messages: &mut Vec<Message>) -> bool {
    let cut = (messages.len() / 4).max(2);
    if cut >= messages.len() {
        return false;
    }
    messages.drain(..cut);
    while let Some(first) = messages.first_mut() {
        if first.role == Role::Assistant {
            messages.remove(0);
            continue;
        }
        first
            .content
            .retain(|b| !matches!(b, ContentBlock::ToolResult(_)));
        if first.content.is_empty() {
            messages.remove(0);
            continue;
        }
        break;
    }
    repair_pairing(messages);
    !messages.is_empty()
}

/// How many lines of a Read result `text` (numbered lines, then maybe a
/// trailer) fit in `room` bytes, the trailer of a cut Read counted
/// (`tools::read::READ_CONTINUES`, about 100 bytes); `None` below
/// [`REATTACH_MIN_LINES`], a part too short to be worth its room.
pub(crate) fn reattach_limit(text: &str, room: usize) -> Option<usize> {
    const TRAILER: usize = 128;
    let lines: Vec<&str> = text.lines().take_while(|l| !l.is_empty()).collect();
    let mut used = 0;
    let mut fit = 0;
    for l in &lines {
        used += l.len() + 1;
        if used + TRAILER > room {
            break;
        }
        fit += 1;
    }
    (fit >= REATTACH_MIN_LINES).then_some(fit)
}

/// The text of the `<summary>` of an answer (the whole text when it has
/// none), trimmed.
pub(crate) fn summary_of(text: &str) -> String {
    let inner = text
        .split_once("<summary>")
        .map(|(_, rest)| rest.split_once("</summary>").map_or(rest, |(s, _)| s))
        .unwrap_or(text);
    inner.trim().to_string()
}

/// The user's latest typed messages (the last text of each user message
/// that has text), oldest first, the newest that fit `budget` bytes.
pub(crate) fn recent_user_messages(messages: &[Message], budget: usize) -> Vec<String> {
    let intro = COMPACTED_INTRO.split('\n').next().unwrap_or_default();
    let mut out = Vec::new();
    let mut used = 0;
    for m in messages.iter().rev().filter(|m| m.role == Role::User) {
        if matches!(m.content.first(), Some(ContentBlock::Text { text }) if text.starts_with(intro))
        {
            // An earlier compaction's message: its summary says it.
            break;
        }
        let Some(text) = m.content.iter().rev().find_map(|b| match b {
            ContentBlock::Text { text } => Some(text),
            _ => None,
        }) else {
            continue;
        };
        if used + text.len() > budget {
            // The newest that does not fit whole is kept cut.
            let mut cut = budget - used;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            if cut > 0 {
                out.push(format!("{}[…]", &text[..cut]));
            }
            break;
        }
        used += text.len();
        out.push(text.clone());
    }
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToolUse;
    use serde_json::json;

    #[test]
    fn the_context_report_lines_up_its_figures() {
        let report = ContextReport {
            meter: None,
            system: 3_100,
            tools: 4_100,
            messages: 900,
            tool_results: vec![("Read".into(), 7_400), ("Bash".into(), 1_200)],
            clearable: 0,
        };
        let lines = report.lines();
        assert_eq!(
            &lines[1..6],
            [
                "  system prompt    3.1k",
                "  tools            4.1k",
                "  messages         900",
                "  results of Read  7.4k",
                "  results of Bash  1.2k",
            ]
        );
        // A long tool name widens every row alike.
        let wide = ContextReport {
            tool_results: vec![("mcp__github__search_issues".into(), 2_000)],
            ..report
        };
        let lines = wide.lines();
        let column = |l: &str| l.rfind(' ').map(|i| i + 1);
        let first = column(&lines[1]);
        assert!(lines[1..5].iter().all(|l| column(l) == first), "{lines:?}");
    }

    #[test]
    fn a_summary_request_keeps_the_start_of_each_tool_result() {
        let result = |content| Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult(crate::protocol::ToolResult {
                tool_use_id: "a".into(),
                content,
                is_error: false,
            })],
        };
        let mut messages = vec![
            result(ToolResultContent::Text("é".repeat(600))),
            result(ToolResultContent::Text("short".into())),
        ];
        assert!(shorten_results(&mut messages, 250));
        let ContentBlock::ToolResult(r) = &messages[0].content[0] else {
            panic!()
        };
        assert_eq!(
            r.content.as_text(),
            format!("{}\n{CUT_FOR_SUMMARY}", "é".repeat(250))
        );
        let ContentBlock::ToolResult(r) = &messages[1].content[0] else {
            panic!()
        };
        assert_eq!(r.content.as_text(), "short");
        assert!(!shorten_results(&mut messages, 250), "nothing more to cut");
    }

    #[test]
    fn golden_texts() {
        assert!(COMPACT_PROMPT.starts_with(mock_llm::context_window::SUMMARY_REQUEST_PREFIX));
        assert_eq!(
            fill(
                CLEARED_NOTICE,
                &[("n", "4 old tool calls"), ("before", "180.0k"), ("after", "120.0k")]
            ),
            "Cleared the output of 4 old tool calls to keep the conversation within the context window (180.0k → 120.0k tokens)."
        );
        assert_eq!(
            Meter {
                used: 143_000,
                window: 200_000
            }
            .label(),
            "ctx 143.0k/200.0k (71%)"
        );
    }

    #[test]
    fn a_file_too_long_to_re_attach_whole_keeps_the_lines_that_fit() {
        let numbered: String = (1..=500)
            .map(|n| format!("{n:>6}\tline {n:03} of the file\n"))
            .collect();
        let text = format!("{numbered}\n[Showing lines 1-500 of 900. The file continues: call Read with offset=501 to read more.]");
        // 28 bytes a line: 8000 bytes hold 281 lines and the trailer.
        assert_eq!(reattach_limit(&text, 8000), Some(281));
        assert_eq!(reattach_limit(&text, 28 * 20 + 128), Some(20));
        assert_eq!(reattach_limit(&text, 28 * 20 + 127), None, "under 20 lines");
        assert_eq!(
            fill(REATTACHED_PART, &[("path", "src/a.rs"), ("content", "     1\tx")]),
            "src/a.rs as it is now, its first lines (read again after the compaction; the whole file is longer than the room for re-read files; this counts as your Read of these lines):\n     1\tx"
        );
    }

    #[test]
    fn overflow_errors_are_recognised() {
        let http = |status, kind: &str, message: &str| ProviderError::Http {
            status,
            kind: kind.into(),
            message: message.into(),
            retry_after: None,
            should_retry: None,
        };
        assert!(is_context_overflow(&http(
            400,
            "invalid_request_error",
            "prompt is too long: 210287 tokens > 200000 maximum"
        )));
        assert!(is_context_overflow(&http(
            400,
            "context_length_exceeded",
            "x"
        )));
        assert!(is_context_overflow(&http(413, "request_too_large", "big")));
        assert!(!is_context_overflow(&http(
            400,
            "invalid_request_error",
            "bad"
        )));
    }

    #[test]
    fn estimates_scale_the_last_count_within_bounds() {
        let c = ContextState::default();
        assert_eq!(c.estimate(4000), 1000, "bytes / 4 before any count");
        c.measured(
            4000,
            &Usage {
                input_tokens: Some(100),
                cache_read_input_tokens: Some(1100),
                output_tokens: Some(50),
                ..Usage::default()
            },
        );
        assert_eq!(c.estimate(8000), 2400, "3.33 bytes per token, as measured");
        assert_eq!(c.lock().used, 1250, "input + cache + output");
    }

    #[test]
    fn trimming_starts_again_at_a_user_message() {
        let user = |t: &str| Message::user_text(t);
        let call = Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse(ToolUse {
                id: "a".into(),
                name: "Read".into(),
                input: json!({}),
                extra: Default::default(),
            })],
        };
        let result = Message {
            role: Role::User,
            content: vec![
                ContentBlock::ToolResult(crate::protocol::ToolResult {
                    tool_use_id: "a".into(),
                    content: crate::protocol::ToolResultContent::Text("x".into()),
                    is_error: false,
                }),
                ContentBlock::Text {
                    text: "more".into(),
                },
            ],
        };
        let answer = Message {
            role: Role::Assistant,
            content: vec![ContentBlock::Text { text: "ok".into() }],
        };
        let mut msgs = vec![user("one"), call, result, answer];
        assert!(trim_oldest(&mut msgs));
        assert_eq!(msgs.len(), 2);
        assert_eq!(
            msgs[0].content,
            vec![ContentBlock::Text {
                text: "more".into()
            }]
        );
        assert_eq!(summary_of("x <summary>\n kept \n</summary> y"), "kept");
        assert_eq!(summary_of(" plain "), "plain");
    }
}
