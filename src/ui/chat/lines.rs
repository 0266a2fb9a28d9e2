//! The chat's text: every line the chat writes, as pure functions of what
//! happened (no Neovim API), so they are unit-tested here and golden in the
//! nvim tests (`:help lathe-chat`).

use lathe_core::events::{ToolStatus, TurnOutcome};
use lathe_core::protocol::Usage;

/// Heading line of the user's prompt.
pub const YOU_HEADING: &str = "## You";
/// Heading line of the model's answer.
pub const LATHE_HEADING: &str = "## lathe";
/// The line shown under the end of the chat while a turn runs (a line of
/// its own), with the key that stops it from any window
/// ([`working_text`]).
pub const WORKING_TEXT: &str = "lathe is working… (<C-c> stops)";
/// [`WORKING_TEXT`] with another stop key. `{key}`.
pub const WORKING_TEXT_KEY: &str = "lathe is working… ({key} stops)";
/// [`WORKING_TEXT`] when no key stops the turn from any window (`setup{
/// stop_key = false }`): `<C-c>` works in the chat and the prompt area.
pub const WORKING_TEXT_NO_KEY: &str = "lathe is working… (<C-c> in the chat stops)";
/// The line under the chat of a message queued while lathe works (its
/// lines joined). `{text}`.
pub const QUEUED_LINE: &str = "queued: {text}";
/// The empty chat's hint, one line each.
pub const EMPTY_CHAT_HINT: &[&str] = &[
    "Ask below: type your request, then <C-s> (or <CR> in Normal mode).",
    "@file attaches a file, #buffer the current buffer, #diagnostics its problems.",
    "While lathe works, <C-s> queues a message, <C-c> stops.",
    ":help lathe for more.",
];
/// The status of a tool line while a permission ask about the call waits.
pub const WAITING_STATUS: &str = "waiting for you";
/// The status of a tool line queued behind other calls.
pub const QUEUED_STATUS: &str = "queued";
/// The status of a running tool line.
pub const RUNNING_STATUS: &str = "running";
/// Lines of a tool's result shown in its fold, at most; the rest is
/// counted in [`MORE_LINES`].
pub const MAX_FOLD_LINES: usize = 400;
/// The last line of a fold cut at [`MAX_FOLD_LINES`].
pub const MORE_LINES: &str = "… {n} more lines";

/// The state a tool line shows; each has its highlight group and sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineState {
    /// Waiting behind other calls.
    Queued,
    /// Running.
    Running,
    /// A permission ask about it waits for the user.
    Waiting,
    /// Ended as [`ToolStatus`] says.
    Ended(ToolStatus),
}

impl LineState {
    /// The word on the line: `queued`, `running`, `waiting for you`, `done`, …
    pub fn word(self) -> &'static str {
        match self {
            LineState::Queued => QUEUED_STATUS,
            LineState::Running => RUNNING_STATUS,
            LineState::Waiting => WAITING_STATUS,
            LineState::Ended(s) => s.as_str(),
        }
    }

    /// The highlight group of the status word and the sign
    /// (`:help lathe-highlights`).
    pub fn hl_group(self) -> &'static str {
        match self {
            LineState::Queued => "LatheToolQueued",
            LineState::Running => "LatheToolRunning",
            LineState::Waiting => "LatheToolWaiting",
            LineState::Ended(ToolStatus::Done) => "LatheToolDone",
            LineState::Ended(ToolStatus::Failed) => "LatheToolFailed",
            LineState::Ended(ToolStatus::Error) => "LatheToolError",
            LineState::Ended(ToolStatus::Denied) => "LatheToolDenied",
            LineState::Ended(ToolStatus::Interrupted) => "LatheToolInterrupted",
        }
    }

    /// The sign in the chat's sign column (one or two cells).
    pub fn sign(self) -> &'static str {
        match self {
            LineState::Queued => "··",
            LineState::Running => "▶",
            LineState::Waiting => "?",
            LineState::Ended(ToolStatus::Done) => "✓",
            LineState::Ended(ToolStatus::Failed) => "!",
            LineState::Ended(ToolStatus::Error) => "✗",
            LineState::Ended(ToolStatus::Denied) => "⊘",
            LineState::Ended(ToolStatus::Interrupted) => "■",
        }
    }
}

/// Highlight groups the chat uses and the standard groups they link to by
/// default (`nvim_set_hl(0, name, { link = …, default = true })`).
pub const HIGHLIGHTS: &[(&str, &str)] = &[
    ("LatheToolQueued", "Comment"),
    ("LatheToolRunning", "DiagnosticInfo"),
    ("LatheToolWaiting", "DiagnosticWarn"),
    ("LatheToolDone", "DiagnosticOk"),
    ("LatheToolFailed", "DiagnosticWarn"),
    ("LatheToolError", "DiagnosticError"),
    ("LatheToolDenied", "DiagnosticWarn"),
    ("LatheToolInterrupted", "Comment"),
    ("LatheNote", "DiagnosticHint"),
    ("LatheError", "DiagnosticError"),
    ("LatheTurnEnd", "Comment"),
    ("LatheWorking", "Comment"),
    ("LatheWaiting", "WarningMsg"),
    ("LatheQueued", "Comment"),
    ("LatheHint", "Comment"),
    ("LatheContinued", "NonText"),
    ("LatheToolDescription", "Comment"),
    ("LatheDiffAdded", "Added"),
    ("LatheDiffRemoved", "Removed"),
    ("LatheDiffHunk", "Special"),
    ("LatheDiffFile", "Title"),
];

/// The working line for the global stop key `key` (`None`: the key is
/// off).
pub fn working_text(key: Option<&str>) -> String {
    match key {
        Some("<C-c>") => WORKING_TEXT.to_string(),
        Some(k) => lathe_core::text::fill(WORKING_TEXT_KEY, &[("key", k)]),
        None => WORKING_TEXT_NO_KEY.to_string(),
    }
}

/// The line of a queued message: [`QUEUED_LINE`] with its lines joined by
/// ` ⏎ `.
pub fn queued_line(text: &str) -> String {
    let one: Vec<&str> = text.lines().map(str::trim_end).collect();
    lathe_core::text::fill(QUEUED_LINE, &[("text", &one.join(" ⏎ "))])
}

/// A streamed line longer than this (bytes) goes on in a new chat line at
/// the next word (a letter after a space), see [`continue_long_lines`].
pub const SOFT_LINE_BYTES: usize = 2048;
/// No chat line of streamed text grows past this (bytes): a line without a
/// word break goes on in a new chat line at a character boundary.
pub const HARD_LINE_BYTES: usize = 4096;
/// The sign of a chat line that continues the line above it (a line break
/// the chat added, not the model; `:help lathe-chat-long-lines`).
pub const CONTINUED_SIGN: &str = "↪";

/// Where the streamed text stands: the last chat line's length in bytes and
/// whether its last character is a space or tab.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LineEnd {
    /// Bytes in the last chat line.
    pub len: usize,
    /// Its last character is a space or a tab.
    pub after_space: bool,
    /// The text so far ended with `\r` (shown as a line break): a `\n`
    /// that comes next belongs to it.
    pub after_cr: bool,
}

/// What [`continue_long_lines`] returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Continued {
    /// The text with a line break added wherever a line would grow too long.
    pub text: String,
    /// The lines of `text` (0-based, as `text.split('\n')` counts them)
    /// that continue the line above them.
    pub continued: Vec<usize>,
    /// Where the last line stands after `text`.
    pub end: LineEnd,
}

/// `text`, appended to a chat line that stands at `end`, with its line ends
/// made `\n` (`\r\n` and a lone `\r` too, even split between two pieces:
/// Neovim would show the `\r` as `^M`) and a line break added wherever a
/// line would grow
/// past [`SOFT_LINE_BYTES`] and a word starts (a letter after a space), or
/// past [`HARD_LINE_BYTES`] in any case (at a character boundary), so no
/// chat line of streamed text is longer than [`HARD_LINE_BYTES`] however
/// long the model's line: Neovim measures, draws and parses a line as a
/// whole, so one 200 KB line cost milliseconds in every redraw.
/// Removing the added breaks gives `text` back with its line ends as
/// `\n`. Pure.
pub fn continue_long_lines(end: LineEnd, text: &str) -> Continued {
    let mut out = String::with_capacity(text.len() + text.len() / SOFT_LINE_BYTES + 1);
    let mut continued = Vec::new();
    let (mut len, mut after_space, mut line) = (end.len, end.after_space, 0);
    let mut after_cr = end.after_cr;
    for ch in text.chars() {
        if ch == '\n' && after_cr {
            after_cr = false;
            continue;
        }
        after_cr = ch == '\r';
        if ch == '\n' || ch == '\r' {
            out.push('\n');
            (len, after_space, line) = (0, false, line + 1);
            continue;
        }
        let w = ch.len_utf8();
        let soft = len >= SOFT_LINE_BYTES && after_space && ch.is_alphabetic();
        if len > 0 && (soft || len + w > HARD_LINE_BYTES) {
            out.push('\n');
            line += 1;
            continued.push(line);
            len = 0;
        }
        out.push(ch);
        len += w;
        after_space = ch == ' ' || ch == '\t';
    }
    Continued {
        text: out,
        continued,
        end: LineEnd {
            len,
            after_space,
            after_cr,
        },
    }
}

/// The chat line of a tool call: `- Name(detail): status` plus ` — summary`
/// (its first line). Returns the line and the byte range of the status word.
pub fn tool_line(name: &str, detail: &str, status: &str, summary: &str) -> String {
    let mut line = format!("{}: {status}", tool_head(name, detail));
    let first = summary.lines().next().unwrap_or("").trim();
    if !first.is_empty() {
        line.push_str(" — ");
        line.push_str(first);
    }
    line
}

/// Longest key argument shown on a tool line, in characters.
pub const MAX_KEY_ARGUMENT: usize = 80;

/// The key argument as one line: a multi-line Bash command shows its first
/// line and `…` (a line break in it would split the tool's line, and every
/// later update would add a line instead of replacing it), cut at
/// [`MAX_KEY_ARGUMENT`] characters.
pub fn key_argument(detail: &str) -> String {
    let mut lines = detail.lines();
    let first = lines.next().unwrap_or("").trim_end();
    let mut out: String = first.chars().take(MAX_KEY_ARGUMENT).collect();
    if first.chars().count() > MAX_KEY_ARGUMENT || lines.next().is_some() {
        out.push('…');
    }
    out
}

/// `- Name(key argument)`, or `- Name` when the key argument is empty
/// (never empty parentheses).
fn tool_head(name: &str, detail: &str) -> String {
    let detail = key_argument(detail);
    if detail.is_empty() {
        format!("- {name}")
    } else {
        format!("- {name}({detail})")
    }
}

/// Byte range, in a [`tool_line`] for `name` and `detail`, of the model's
/// description of a Bash command (`# Run the tests` in
/// `- Bash(cargo test  # Run the tests)`), which the chat dims: the end
/// of the key argument when it ends with `  # ` and the first line of
/// `description`. `None` when the line does not show it (no description,
/// or one too long to fit beside the command).
pub fn description_range(name: &str, detail: &str, description: &str) -> Option<(usize, usize)> {
    let first = description.trim().lines().next().unwrap_or("");
    if first.is_empty() {
        return None;
    }
    let shown = key_argument(detail);
    let comment = format!("# {first}");
    if !shown.ends_with(&format!("  {comment}")) {
        return None;
    }
    let end = format!("- {name}(").len() + shown.len();
    Some((end - comment.len(), end))
}

/// The highlight group of one line of a folded diff (without the fold's
/// indent): added, removed, a hunk header or (`in_header`: before the
/// first hunk) a file header line; `None` for context and other lines.
pub fn diff_line_hl(line: &str, in_header: bool) -> Option<&'static str> {
    if in_header && (line.starts_with("+++ ") || line.starts_with("--- ")) {
        Some("LatheDiffFile")
    } else if line.starts_with("@@ ") {
        Some("LatheDiffHunk")
    } else if line.starts_with('+') {
        Some("LatheDiffAdded")
    } else if line.starts_with('-') {
        Some("LatheDiffRemoved")
    } else {
        None
    }
}

/// The highlights of a folded diff ([`fold_lines`] of a diff with the
/// `diff` info string): for each line of `lines` that [`diff_line_hl`]
/// names, its index in `lines`, the byte column where the diff line starts
/// (after the indent) and the group. The fences and the
/// [`MORE_LINES`] line are left alone.
pub fn diff_fold_highlights(lines: &[String]) -> Vec<(usize, usize, &'static str)> {
    let last = lines.len().saturating_sub(1);
    let mut in_header = true;
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate().take(last).skip(1) {
        let Some(text) = l.strip_prefix("  ") else {
            continue;
        };
        in_header &= !text.starts_with("@@ ");
        if let Some(g) = diff_line_hl(text, in_header) {
            out.push((i, 2, g));
        }
    }
    out
}

/// Byte range of the status word in a [`tool_line`] for `name`, `detail`.
pub fn status_range(name: &str, detail: &str, status: &str) -> (usize, usize) {
    let start = tool_head(name, detail).len() + 2;
    (start, start + status.len())
}

/// What the chat says about a failed, denied or interrupted call: the first
/// sentence of the first line of the result the model reads (that sentence
/// says what happened; the rest tells the model what to do next, e.g.
/// "Read it first, then edit it"). Markup for the model (`<system-reminder>`
/// and other tag lines) is skipped. A denial with the user's reason (`N`)
/// keeps its whole first line: the reason is what the user wrote.
pub fn user_summary(message: &str) -> String {
    let first = strip_for_user(message)
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .to_string();
    let said = lathe_core::permissions::USER_DECLINED_WITH_MESSAGE
        .split("{message}")
        .next()
        .unwrap_or_default();
    if !said.is_empty() && first.starts_with(said) {
        return first;
    }
    match first.find(". ") {
        Some(i) => first[..=i].to_string(),
        None => first,
    }
}

/// `text` without what is written for the model only: `<system-reminder>`
/// blocks (Claude Code's convention) are removed.
pub fn strip_for_user(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<system-reminder>") {
        out.push_str(&rest[..start]);
        match rest[start..].find("</system-reminder>") {
            Some(end) => rest = &rest[start + end + "</system-reminder>".len()..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out.trim_end().to_string()
}

/// The lines of a tool's folded result under its line: a fenced code block
/// indented into the tool's list item, fenced with one more backtick than
/// the longest run in `content`, `lang` as its info string (tree-sitter
/// injects that language). Empty when there is nothing to show.
pub fn fold_lines(content: &str, lang: &str) -> Vec<String> {
    let content = strip_for_user(content);
    if content.trim().is_empty() {
        return Vec::new();
    }
    let longest = content.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat((longest + 1).max(3));
    let mut lines = vec![format!("  {fence}{lang}")];
    let all: Vec<&str> = content.lines().collect();
    for l in all.iter().take(MAX_FOLD_LINES) {
        if l.is_empty() {
            lines.push(String::new());
        } else {
            lines.push(format!("  {l}"));
        }
    }
    if all.len() > MAX_FOLD_LINES {
        let n = (all.len() - MAX_FOLD_LINES).to_string();
        lines.push(format!(
            "  {}",
            lathe_core::text::fill(MORE_LINES, &[("n", &n)])
        ));
    }
    lines.push(format!("  {fence}"));
    lines
}

/// The chat line that ends a turn. An error already shown as a notice in
/// this turn (`shown`) is not repeated: each error is shown once.
pub fn turn_end_line(outcome: &TurnOutcome, shown: bool) -> String {
    match outcome {
        TurnOutcome::Done => "*(done)*".to_string(),
        TurnOutcome::Stopped => "*(stopped)*".to_string(),
        TurnOutcome::MaxTurns => "*(cut at max_turns)*".to_string(),
        TurnOutcome::Error(_) if shown => "*(error, see above)*".to_string(),
        TurnOutcome::Error(m) => format!("*(error: {})*", m.lines().next().unwrap_or("")),
    }
}

/// Token counts of `u` for people: `12.3k in (8.1k from cache), 1.2k out`.
pub fn tokens(u: &Usage) -> String {
    let cached = u.cache_read_input_tokens.unwrap_or(0);
    let input = u.input_tokens.unwrap_or(0) + cached + u.cache_creation_input_tokens.unwrap_or(0);
    let mut s = format!("{} in", short(input));
    if cached > 0 {
        s.push_str(&format!(" ({} from cache)", short(cached)));
    }
    s.push_str(&format!(", {} out", out_count(u)));
    s
}

/// The output count of `u`: `~1.2k` when it is an estimate (an answer
/// stopped before the API's final count).
fn out_count(u: &Usage) -> String {
    let n = short(u.output_tokens.unwrap_or(0));
    if u.output_estimated {
        format!("~{n}")
    } else {
        n
    }
}

/// The token line after a turn's end: this turn's and the session's counts,
/// e.g. `tokens: 12.3k in (8.1k from cache), 1.2k out · session 40.1k in,
/// 3.3k out`. Empty when the API reported nothing.
pub fn usage_line(turn: &Usage, session: &Usage) -> String {
    if turn.input_tokens.is_none() && turn.output_tokens.is_none() {
        return String::new();
    }
    format!("tokens: {} · session {}", tokens(turn), tokens(session))
}

/// Token counts of `u` without the cache's share: `12.3k in, 1.2k out`
/// (a narrow window's form of [`tokens`]).
fn tokens_short(u: &Usage) -> String {
    let input = u.input_tokens.unwrap_or(0)
        + u.cache_read_input_tokens.unwrap_or(0)
        + u.cache_creation_input_tokens.unwrap_or(0);
    format!("{} in, {} out", short(input), out_count(u))
}

/// The chat lines that end a turn: `end` ([`turn_end_line`]) and the
/// token counts ([`usage_line`]), one line when it fits `width` columns
/// (the narrowest chat window's text; `None`: no window, one line).
/// Else the line is broken between its parts (`*(done)*`, `tokens: …`,
/// `· session …`), never inside one: the chat wraps with 'linebreak',
/// which breaks after any 'breakat' character, the `.` of `12.3k` too.
/// A part too wide for a line of its own drops its "from cache" figure.
pub fn turn_end_lines(
    end: &str,
    turn: &Usage,
    session: &Usage,
    width: Option<usize>,
) -> Vec<String> {
    let usage = usage_line(turn, session);
    let one = if usage.is_empty() {
        end.to_string()
    } else {
        format!("{end} {usage}")
    };
    let Some(width) = width.filter(|w| one.chars().count() > *w) else {
        return vec![one];
    };
    let fit = |long: String, short: String| {
        if long.chars().count() > width {
            short
        } else {
            long
        }
    };
    let mut parts = vec![end.to_string()];
    if !usage.is_empty() {
        parts.push(fit(
            format!("tokens: {}", tokens(turn)),
            format!("tokens: {}", tokens_short(turn)),
        ));
        parts.push(fit(
            format!("· session {}", tokens(session)),
            format!("· session {}", tokens_short(session)),
        ));
    }
    let mut lines: Vec<String> = Vec::new();
    for part in parts {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + part.chars().count() <= width => {
                line.push(' ');
                line.push_str(&part);
            }
            _ => lines.push(part),
        }
    }
    lines
}

/// `n` for people: `950`, `12.3k`, `1.2M`.
pub fn short(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{:.1}k", n as f64 / 1_000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

/// The chat's line for one thing a prompt carried, under it:
/// `⎿ Attached shop/cart.py (40 lines)`.
pub fn attached_line(label: &str) -> String {
    format!("⎿ {label}")
}

/// The chat line of a compaction: `compacted: 180.0k → 24.0k tokens`
/// (estimates; the summary is folded under it). A summary with nothing to
/// show (`summary_shown` false) is said on the line, never an empty fold.
pub fn compacted_line(before: u64, after: u64, summary_shown: bool) -> String {
    let mut line = format!(
        "> **compacted:** {} → {} tokens",
        short(before),
        short(after)
    );
    if !summary_shown {
        line.push_str(" (the summary is empty)");
    }
    // Not smaller, or not smaller as shown (`5.7k → 5.7k`).
    if after >= before || short(after) == short(before) {
        line.push_str(NOTHING_FREED);
    }
    line
}

/// User-facing: appended to the chat line of a compaction whose result is
/// not smaller than the conversation it replaced.
pub const NOTHING_FREED: &str =
    " — nothing to free: the conversation is already as short as a summary makes it";

/// The chat lines of a notice, a quoted block; errors are marked
/// `**error:**`. Each line of `text` stays a line of its own: an API's
/// error and lathe's advice after it (`provider::hints::user_message`,
/// `CONTEXT_FULL`) are two sentences, never run together on one line.
/// Blank lines are left out (a quote line with nothing in it says
/// nothing); a notice is never less than its first line.
pub fn notice_lines(text: &str, is_error: bool) -> Vec<String> {
    let tag = if is_error { "**error:**" } else { "**note:**" };
    let mut lines = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty());
    let first = lines.next().unwrap_or("");
    let mut out = vec![format!("> {tag} {first}")];
    out.extend(lines.map(|l| format!("> {l}")));
    out
}

/// The last non-empty line of `output`, cut to 80 chars, for a running
/// tool's line.
pub fn progress_line(output: &str) -> String {
    let last = output
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    // A terminal's carriage return redraws the line: show what it shows.
    let last = last
        .rsplit('\r')
        .find(|p| !p.trim().is_empty())
        .unwrap_or("");
    let mut cut: String = last.chars().take(80).collect();
    if last.chars().count() > 80 {
        cut.push('…');
    }
    cut
}

/// The chat line replacing a withdrawn answer.
pub fn withdrawn_line(reason: &str) -> String {
    format!("> ~~answer withdrawn~~ ({})", reason.replace('\n', " "))
}

/// `text` broken at spaces into rows of at most `width` characters, for a
/// line under the chat's end (a virtual line is never wrapped by Neovim,
/// only cut at the window's edge); rows after the first are indented by
/// two spaces, and a word longer than a row is broken inside. Pure.
pub fn wrap_note(text: &str, width: usize) -> Vec<String> {
    let width = width.max(8);
    let mut rows: Vec<String> = Vec::new();
    let mut row = String::new();
    let mut len = 0;
    for word in text.split(' ') {
        let wlen = word.chars().count();
        if len > 0 && len + 1 + wlen > width {
            rows.push(std::mem::take(&mut row));
            len = 0;
        }
        if len == 0 {
            // Rows after the first are indented.
            let lead = if rows.is_empty() { 0 } else { 2 };
            row.push_str(&" ".repeat(lead));
            len = lead;
        } else {
            row.push(' ');
            len += 1;
        }
        let mut rest: Vec<char> = word.chars().collect();
        while len + rest.len() > width {
            let take = width - len;
            row.extend(rest.drain(..take));
            rows.push(std::mem::take(&mut row));
            row.push_str("  ");
            len = 2;
        }
        len += rest.len();
        row.extend(rest);
    }
    rows.push(row);
    rows
}

/// The winbar's title, before its parts.
pub const WINBAR_TITLE: &str = " lathe";

/// Between the winbar's title and parts.
pub const WINBAR_SEPARATOR: &str = " · ";

/// What the winbar shows (`:help lathe-winbar`) in a window `width`
/// columns wide: model, permission mode, the session's spend, turn state
/// and the context meter, with `%` escaped for `'winbar'`. Whole parts
/// only, never a part cut: where all do not fit, the spend's cache figure
/// goes first, then the spend, the model, the title, the meter's figures
/// (`ctx 71%` is left), the state. The permission mode always stays: it
/// says what lathe may do without asking.
pub fn winbar(
    width: usize,
    model: &str,
    mode: &str,
    state: &str,
    context: Option<(u64, u64)>,
    session: &Usage,
) -> String {
    let has_spend = session.input_tokens.is_some() || session.output_tokens.is_some();
    let model = (!model.is_empty()).then(|| model.to_string());
    let mode = Some(format!(
        "mode: {}",
        if mode.is_empty() { "default" } else { mode }
    ));
    let spend = has_spend.then(|| format!("spend {}", tokens(session)));
    let spend_short = has_spend.then(|| format!("spend {}", tokens_short(session)));
    let meter = context.map(|(used, window)| lathe_core::agent::Meter { used, window }.label());
    let meter_short = context.map(|(used, window)| {
        let pct = (used * 100).checked_div(window).unwrap_or(0);
        format!("ctx {pct}%")
    });
    let state = Some(state.to_string());
    // Each a title and its parts, richest first; the last is shown
    // whatever the width.
    let choices: [(bool, [&Option<String>; 5]); 8] = [
        (true, [&model, &mode, &spend, &state, &meter]),
        (true, [&model, &mode, &spend_short, &state, &meter]),
        (true, [&model, &mode, &None, &state, &meter]),
        (true, [&None, &mode, &None, &state, &meter]),
        (false, [&None, &mode, &None, &state, &meter]),
        (false, [&None, &mode, &None, &state, &meter_short]),
        (false, [&None, &mode, &None, &None, &meter_short]),
        (false, [&None, &mode, &None, &None, &None]),
    ];
    let mut text = String::new();
    for (title, parts) in choices {
        text.clear();
        if title {
            text.push_str(WINBAR_TITLE);
        }
        for part in parts.into_iter().flatten() {
            text.push_str(if text.is_empty() {
                " "
            } else {
                WINBAR_SEPARATOR
            });
            text.push_str(part);
        }
        if text.chars().count() <= width {
            break;
        }
    }
    text.replace('%', "%%")
}

/// The last blank line of `lines` outside fenced code (an index), where
/// markdown may be parsed anew without what comes before: the next frame
/// highlights the running turn again from there (what is above keeps its
/// highlights). Lines for which `skipped` is true (folded results, parsed
/// as blank) count as blank. `None` when there is none.
pub fn last_block_boundary(lines: &[String], skipped: impl Fn(usize) -> bool) -> Option<usize> {
    let mut fence: Option<(char, usize)> = None;
    let mut boundary = None;
    for (i, line) in lines.iter().enumerate() {
        if skipped(i) {
            if fence.is_none() {
                boundary = Some(i);
            }
            continue;
        }
        let t = line.trim_start();
        let marker = t.chars().next().filter(|c| *c == '`' || *c == '~');
        let run = marker.map_or(0, |c| t.chars().take_while(|x| *x == c).count());
        match (fence, marker) {
            (None, Some(c)) if run >= 3 => fence = Some((c, run)),
            (Some((open, n)), Some(c)) if c == open && run >= n && t[run..].trim().is_empty() => {
                fence = None;
            }
            (None, _) if line.trim().is_empty() => boundary = Some(i),
            _ => {}
        }
    }
    boundary
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The added breaks removed, the text is whole.
    fn unbroken(c: &Continued) -> String {
        let mut out = String::new();
        for (i, l) in c.text.split('\n').enumerate() {
            if i > 0 && !c.continued.contains(&i) {
                out.push('\n');
            }
            out.push_str(l);
        }
        out
    }

    #[test]
    fn a_long_line_goes_on_in_new_lines_at_words_and_no_line_passes_the_bound() {
        let words = "lathe streams this answer in small deltas ".repeat(5000);
        let c = continue_long_lines(LineEnd::default(), &words);
        assert_eq!(unbroken(&c), words);
        assert!(c.continued.len() >= words.len() / HARD_LINE_BYTES);
        for l in c.text.split('\n') {
            assert!(l.len() <= HARD_LINE_BYTES, "{}", l.len());
            // Each break comes after a space and before a word.
            assert!(l.starts_with(char::is_alphabetic));
        }
        // No space at all (minified code, base64): cut at the bound, on a
        // character boundary.
        let dense = "é".repeat(10_000);
        let c = continue_long_lines(LineEnd::default(), &dense);
        assert_eq!(unbroken(&c), dense);
        assert!(c.text.split('\n').all(|l| l.len() <= HARD_LINE_BYTES));
        // Short lines and the model's own breaks stay as they are.
        let short = "a\nshort answer\n\n";
        let c = continue_long_lines(LineEnd::default(), short);
        assert_eq!((c.text.as_str(), c.continued.len()), (short, 0));
        assert_eq!(c.end, LineEnd::default());
    }

    #[test]
    fn streaming_in_small_deltas_breaks_where_one_piece_would() {
        let words = "word ".repeat(3000);
        let whole = continue_long_lines(LineEnd::default(), &words);
        let (mut end, mut text) = (LineEnd::default(), String::new());
        let mut rows = Vec::new();
        let mut lines_before = 0;
        for piece in words.as_bytes().chunks(8) {
            let c = continue_long_lines(end, std::str::from_utf8(piece).unwrap());
            rows.extend(c.continued.iter().map(|r| r + lines_before));
            lines_before += c.text.matches('\n').count();
            text.push_str(&c.text);
            end = c.end;
        }
        assert_eq!(text, whole.text);
        assert_eq!(rows, whole.continued);
        assert_eq!(end, whole.end);
    }

    #[test]
    fn an_estimated_output_count_is_marked() {
        let u = Usage {
            input_tokens: Some(58_501),
            output_tokens: Some(312),
            output_estimated: true,
            ..Usage::default()
        };
        assert_eq!(tokens(&u), "58.5k in, ~312 out");
        assert_eq!(tokens_short(&u), "58.5k in, ~312 out");
    }

    #[test]
    fn errors_show_their_first_sentence_without_the_advice_for_the_model() {
        let msg = "/p/a.py has not been read in this conversation. Read it first, then edit it: Edit needs to know the file's current text.";
        assert_eq!(
            user_summary(msg),
            "/p/a.py has not been read in this conversation."
        );
        assert_eq!(
            user_summary("<system-reminder>do X</system-reminder>\nExit code 1"),
            "Exit code 1"
        );
        // The reason typed with `N` is shown whole.
        let said = lathe_core::text::fill(
            lathe_core::permissions::USER_DECLINED_WITH_MESSAGE,
            &[("message", "also fix the discount. In one go, please.")],
        );
        assert_eq!(user_summary(&said), said);
    }

    #[test]
    fn fold_lines_fence_longer_than_any_backtick_run() {
        let l = fold_lines("a ``` b\n\nc", "");
        assert_eq!(l, ["  ````", "  a ``` b", "", "  c", "  ````"]);
        assert!(fold_lines("  \n", "").is_empty());
        let long: String = (0..MAX_FOLD_LINES + 3).map(|i| format!("{i}\n")).collect();
        let l = fold_lines(&long, "rust");
        assert_eq!(l[0], "  ```rust");
        assert_eq!(l[l.len() - 2], "  … 3 more lines");
    }

    #[test]
    fn crlf_and_lone_cr_are_line_ends_even_split_between_pieces() {
        let whole = continue_long_lines(LineEnd::default(), "one\r\ntwo\rthree\r\n\r\nfour");
        assert_eq!(whole.text, "one\ntwo\nthree\n\nfour");
        // The same answer streamed one byte at a time.
        let mut end = LineEnd::default();
        let mut text = String::new();
        for ch in "one\r\ntwo\rthree\r\n\r\nfour".chars() {
            let c = continue_long_lines(end, &ch.to_string());
            text.push_str(&c.text);
            end = c.end;
        }
        assert_eq!(text, whole.text);
        assert!(!text.contains('\r'));
    }

    #[test]
    fn a_cut_turn_ends_with_its_own_line() {
        assert_eq!(
            turn_end_line(&TurnOutcome::MaxTurns, false),
            "*(cut at max_turns)*"
        );
    }

    #[test]
    fn an_error_shown_as_a_notice_is_not_repeated_at_the_turn_end() {
        let e = TurnOutcome::Error("overloaded".into());
        assert_eq!(turn_end_line(&e, true), "*(error, see above)*");
        assert_eq!(turn_end_line(&e, false), "*(error: overloaded)*");
    }

    #[test]
    fn a_note_is_broken_at_spaces_into_rows_of_the_width() {
        assert_eq!(wrap_note("waiting for you", 40), vec!["waiting for you"]);
        assert_eq!(
            wrap_note("waiting for you: Write new3.py (:Lathe review)", 30),
            vec!["waiting for you: Write new3.py", "  (:Lathe review)"]
        );
        let rows = wrap_note(&format!("queued: {}", "x".repeat(50)), 20);
        assert!(rows.iter().all(|r| r.chars().count() <= 20), "{rows:?}");
        assert_eq!(
            rows.concat().replace(' ', ""),
            format!("queued:{}", "x".repeat(50))
        );
        for width in 8..60 {
            for r in wrap_note(crate::ui::chat::lines::EMPTY_CHAT_HINT[0], width) {
                assert!(r.chars().count() <= width, "{width}: {r:?}");
            }
        }
    }

    #[test]
    fn winbar_names_model_mode_state_and_tokens() {
        let u = Usage {
            input_tokens: Some(1500),
            output_tokens: Some(20),
            ..Default::default()
        };
        assert_eq!(
            winbar(200, "m-1", "plan", "running", Some((143_000, 200_000)), &u),
            " lathe · m-1 · mode: plan · spend 1.5k in, 20 out · running · ctx 143.0k/200.0k (71%%)"
        );
        assert_eq!(
            winbar(200, "", "", "idle 100%", None, &Usage::default()),
            " lathe · mode: default · idle 100%%"
        );
    }

    /// A user's report: a 65-column chat cut the winbar inside
    /// `127.9k`. Whole parts go instead, the cache figure first.
    #[test]
    fn a_narrow_winbar_drops_whole_parts_lowest_first() {
        let u = Usage {
            input_tokens: Some(3_000),
            cache_read_input_tokens: Some(127_900),
            output_tokens: Some(196),
            ..Default::default()
        };
        let ctx = Some((13_400, 20_000));
        let at = |w| winbar(w, "claude-sonnet-4-5", "default", "idle", ctx, &u);
        assert_eq!(
            at(200),
            " lathe · claude-sonnet-4-5 · mode: default · spend 130.9k in (127.9k from cache), 196 out · idle · ctx 13.4k/20.0k (67%%)"
        );
        assert_eq!(
            at(110),
            " lathe · claude-sonnet-4-5 · mode: default · spend 130.9k in, 196 out · idle · ctx 13.4k/20.0k (67%%)"
        );
        assert_eq!(
            at(90),
            " lathe · claude-sonnet-4-5 · mode: default · idle · ctx 13.4k/20.0k (67%%)"
        );
        assert_eq!(
            at(65),
            " lathe · mode: default · idle · ctx 13.4k/20.0k (67%)".replace('%', "%%")
        );
        assert_eq!(at(45), " mode: default · idle · ctx 13.4k/20.0k (67%%)");
        assert_eq!(at(40), " mode: default · idle · ctx 67%%");
        assert_eq!(at(30), " mode: default · ctx 67%%");
        // The mode stays, even where it does not fit.
        assert_eq!(at(10), " mode: default");
    }

    /// At every width the winbar is whole parts, and it keeps the
    /// permission mode, then the meter (its figures or its share).
    #[test]
    fn at_every_width_the_winbar_fits_in_whole_parts_and_keeps_the_mode() {
        let u = Usage {
            input_tokens: Some(44_265),
            cache_read_input_tokens: Some(127_900),
            cache_creation_input_tokens: Some(1_200),
            output_tokens: Some(84_000),
            ..Usage::default()
        };
        let meter = lathe_core::agent::Meter {
            used: 143_000,
            window: 200_000,
        }
        .label();
        let full = [
            "claude-sonnet-4-5".to_string(),
            "mode: acceptEdits".to_string(),
            format!("spend {}", tokens(&u)),
            format!("spend {}", tokens_short(&u)),
            "waiting for you".to_string(),
            meter.clone(),
            "ctx 71%".to_string(),
        ];
        for width in 20..=160 {
            let bar = winbar(
                width,
                "claude-sonnet-4-5",
                "acceptEdits",
                "waiting for you",
                Some((143_000, 200_000)),
                &u,
            )
            .replace("%%", "%");
            assert!(bar.chars().count() <= width, "{width}: {bar}");
            let titled = format!("{WINBAR_TITLE}{WINBAR_SEPARATOR}");
            let parts: Vec<&str> = bar
                .strip_prefix(titled.as_str())
                .unwrap_or(bar.trim_start())
                .split(WINBAR_SEPARATOR)
                .filter(|p| !p.is_empty())
                .collect();
            for p in &parts {
                assert!(
                    full.iter().any(|f| f == p),
                    "{width}: a cut part {p:?} in {bar:?}"
                );
            }
            assert!(
                parts.contains(&"mode: acceptEdits"),
                "{width}: no mode in {bar:?}"
            );
            if width >= " mode: acceptEdits · ctx 71%".chars().count() {
                assert!(
                    parts.contains(&meter.as_str()) || parts.contains(&"ctx 71%"),
                    "{width}: no meter in {bar:?}"
                );
            }
            if width >= 160 {
                assert_eq!(parts.len(), 5, "{width}: {bar:?}");
            }
        }
    }

    #[test]
    fn a_multi_line_command_stays_on_one_tool_line() {
        assert_eq!(
            tool_line("Bash", "cd x &&\nmake test", "running", ""),
            "- Bash(cd x &&…): running"
        );
        assert_eq!(status_range("Bash", "cd x &&\nmake", "running"), (20, 27));
    }

    #[test]
    fn a_compaction_without_a_summary_to_show_says_so() {
        assert_eq!(
            compacted_line(180_000, 24_000, true),
            "> **compacted:** 180.0k → 24.0k tokens"
        );
        assert_eq!(
            compacted_line(180_000, 24_000, false),
            "> **compacted:** 180.0k → 24.0k tokens (the summary is empty)"
        );
    }

    #[test]
    fn a_compaction_that_frees_nothing_says_so() {
        let nothing = "> **compacted:** 5.7k → 5.7k tokens — nothing to free: the conversation is already as short as a summary makes it";
        assert_eq!(compacted_line(5_700, 5_700, true), nothing);
        // Smaller by less than the figures show.
        assert_eq!(compacted_line(5_712, 5_690, true), nothing);
        assert_eq!(
            compacted_line(5_700, 6_100, true),
            "> **compacted:** 5.7k → 6.1k tokens — nothing to free: the conversation is already as short as a summary makes it"
        );
        assert_eq!(
            compacted_line(5_700, 2_100, true),
            "> **compacted:** 5.7k → 2.1k tokens"
        );
    }

    #[test]
    fn a_tool_line_without_a_key_argument_has_no_empty_parentheses() {
        assert_eq!(
            tool_line("Read", "", "error", "bad input"),
            "- Read: error — bad input"
        );
        assert_eq!(status_range("Read", " ", "error"), (8, 13));
    }

    #[test]
    fn an_error_and_the_advice_after_it_are_lines_of_their_own() {
        let text = "HTTP 400 invalid_request_error: prompt is too long: 21000 tokens > 20000 maximum\nThe conversation does not fit the model's context window.";
        assert_eq!(
            notice_lines(text, true),
            [
                "> **error:** HTTP 400 invalid_request_error: prompt is too long: 21000 tokens > 20000 maximum",
                "> The conversation does not fit the model's context window.",
            ]
        );
        assert_eq!(
            notice_lines("one\n\n  \ntwo  ", false),
            ["> **note:** one", "> two"]
        );
        assert_eq!(notice_lines("", true), ["> **error:** "]);
    }

    #[test]
    fn a_turn_end_too_wide_for_the_window_breaks_between_its_parts() {
        let u = |input, read, output| Usage {
            input_tokens: Some(input),
            cache_read_input_tokens: Some(read),
            output_tokens: Some(output),
            ..Default::default()
        };
        let (turn, session) = (u(1_300, 3_000, 100), u(38_000, 2_000_000, 3_456));
        let one = "*(done)* tokens: 4.3k in (3.0k from cache), 100 out · session 2.0M in (2.0M from cache), 3.5k out";
        assert_eq!(turn_end_lines("*(done)*", &turn, &session, None), [one]);
        assert_eq!(
            turn_end_lines("*(done)*", &turn, &session, Some(200)),
            [one]
        );
        assert_eq!(
            turn_end_lines("*(done)*", &turn, &session, Some(60)),
            [
                "*(done)* tokens: 4.3k in (3.0k from cache), 100 out",
                "· session 2.0M in (2.0M from cache), 3.5k out",
            ]
        );
        // Too narrow for a part whole: it drops the cache's figure.
        assert_eq!(
            turn_end_lines("*(done)*", &turn, &session, Some(36)),
            [
                "*(done)* tokens: 4.3k in, 100 out",
                "· session 2.0M in, 3.5k out",
            ]
        );
        for width in 30..120 {
            for line in turn_end_lines("*(done)*", &turn, &session, Some(width)) {
                assert!(line.chars().count() <= width, "{width}: {line}");
            }
        }
        // No token counts: the end alone.
        assert_eq!(
            turn_end_lines("*(stopped)*", &Usage::default(), &Usage::default(), Some(5)),
            ["*(stopped)*"]
        );
    }

    #[test]
    fn progress_shows_the_last_redraw_of_a_carriage_return_line() {
        assert_eq!(progress_line("a\n 10%\r 50%\r\n"), " 50%");
        assert_eq!(status_range("Bash", "ls", "running"), (12, 19));
    }

    #[test]
    fn a_block_boundary_is_a_blank_line_outside_fenced_code() {
        let l = |t: &str| t.lines().map(str::to_string).collect::<Vec<_>>();
        let none = |_: usize| false;
        assert_eq!(last_block_boundary(&l("a\n\nb\nc"), none), Some(1));
        assert_eq!(last_block_boundary(&l("a\nb"), none), None);
        // Inside an open fence: the blank line before it.
        assert_eq!(last_block_boundary(&l("a\n\n```sh\nx\n\ny"), none), Some(1));
        // A closed fence (longer closer, other char does not close).
        assert_eq!(
            last_block_boundary(&l("```\n\n~~~\n\n````\n\nz"), none),
            Some(5)
        );
        // A fence line with text after it does not close.
        assert_eq!(last_block_boundary(&l("```\n``` x\n\n"), none), None);
        // Folded rows count as blank, but not inside a fence.
        assert_eq!(last_block_boundary(&l("a\nfold\nb"), |i| i == 1), Some(1));
        assert_eq!(last_block_boundary(&l("```\nfold\nb"), |i| i == 1), None);
    }

    #[test]
    fn a_failed_command_has_its_own_word_sign_and_group() {
        let failed = LineState::Ended(ToolStatus::Failed);
        let done = LineState::Ended(ToolStatus::Done);
        let error = LineState::Ended(ToolStatus::Error);
        assert_eq!(
            tool_line("Bash", "make", failed.word(), "exit 1"),
            "- Bash(make): failed — exit 1"
        );
        assert_eq!((failed.sign(), failed.hl_group()), ("!", "LatheToolFailed"));
        for other in [done, error] {
            assert_ne!(failed.sign(), other.sign());
            assert_ne!(failed.hl_group(), other.hl_group());
            assert_ne!(failed.word(), other.word());
        }
        assert!(HIGHLIGHTS.contains(&("LatheToolFailed", "DiagnosticWarn")));
    }

    #[test]
    fn a_commands_description_is_dimmed_after_it() {
        let detail = "cargo test  # Run the tests";
        let line = tool_line("Bash", detail, "done", "exit 0");
        let (a, b) = description_range("Bash", detail, "Run the tests\nmore").unwrap();
        assert_eq!(&line[a..b], "# Run the tests");
        // No description, another one, or one left out for want of room.
        assert_eq!(description_range("Bash", detail, ""), None);
        assert_eq!(
            description_range("Bash", "cargo test", "Run the tests"),
            None
        );
        assert_eq!(description_range("Bash", detail, "Build"), None);
        // Multi-byte text before it.
        let detail = "echo é  # Say é";
        let line = tool_line("Bash", detail, "running", "");
        let (a, b) = description_range("Bash", detail, "Say é").unwrap();
        assert_eq!(&line[a..b], "# Say é");
    }

    #[test]
    fn a_folded_diff_colours_its_added_removed_and_hunk_lines() {
        let diff = "--- a/f.py\n+++ b/f.py\n@@ -1,2 +1,2 @@\n ctx\n--- gone\n-old\n+new\n";
        let lines = fold_lines(diff, "diff");
        assert_eq!(lines[0], "  ```diff");
        let hl: Vec<(&str, &str)> = diff_fold_highlights(&lines)
            .into_iter()
            .map(|(i, col, g)| (&lines[i][col..], g))
            .collect();
        assert_eq!(
            hl,
            vec![
                ("--- a/f.py", "LatheDiffFile"),
                ("+++ b/f.py", "LatheDiffFile"),
                ("@@ -1,2 +1,2 @@", "LatheDiffHunk"),
                // A removed line that reads like a header is a removed line.
                ("--- gone", "LatheDiffRemoved"),
                ("-old", "LatheDiffRemoved"),
                ("+new", "LatheDiffAdded"),
            ]
        );
    }
}
