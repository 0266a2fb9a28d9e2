//! The transcript part of the chat: the `lathe://chat` buffer and how each
//! [`AgentEvent`] changes it (main thread only).
//!
//! - Streamed text is appended at the end; text after a tool line starts on
//!   a line of its own (never glued onto the tool line).
//! - Each tool call has one line, found again through an extmark and
//!   replaced within the line (`nvim_buf_set_text`), so every update
//!   (queued → running → waiting → done/error/denied/interrupted, a Bash
//!   call's latest output line) stays on it. A second extmark carries the
//!   state's sign and highlights the status word.
//! - A finished call's result is inserted under its line as a fenced block
//!   and folded (manual folds, closed; `za` opens one).

use super::buf::{line_at, windows_of};
use std::collections::{HashMap, HashSet};

use nvim_oxi::api::{self, opts::SetExtmarkOpts, Buffer};

use super::lines::{
    attached_line, compacted_line, continue_long_lines, description_range, diff_fold_highlights,
    fold_lines, notice_lines, progress_line, queued_line, status_range, tool_line, turn_end_line,
    turn_end_lines, user_summary, withdrawn_line, working_text, wrap_note, LineEnd, LineState,
    CONTINUED_SIGN, EMPTY_CHAT_HINT, LATHE_HEADING, YOU_HEADING,
};
use super::{buf_opts, NAMESPACE};
use lathe_core::events::{AgentEvent, AttachedItem, ToolStatus};
use lathe_core::protocol::Usage;

/// Priority of a folded diff's line highlights: above tree-sitter's
/// (`vim.hl.priorities.treesitter`, 100), so a `diff` parser's captures
/// do not hide them.
const DIFF_PRIORITY: u32 = 150;

/// One tool call's line (and, once it ended, its folded result).
pub(super) struct ToolMark {
    /// Extmark at column 0 of the line (carries the sign).
    pub mark: u32,
    /// Extmark highlighting the status word.
    pub status_mark: Option<u32>,
    /// Extmark dimming the model's description of a Bash command.
    desc_mark: Option<u32>,
    pub name: String,
    pub detail: String,
    /// The normalised input (from `ToolStarted`), `null` before.
    pub input: serde_json::Value,
    /// Output seen so far that has not ended a line yet.
    partial: String,
    pub state: LineState,
    /// Extmark at the first line of the folded result, and its line count.
    pub block: Option<(u32, usize)>,
    /// The full result text (for jumps into a Grep result).
    pub content: String,
    /// What the tool made for the chat to fold instead of `content` (Edit's
    /// and Write's diff of what they wrote).
    pub display: Option<String>,
}

impl ToolMark {
    fn open(&self) -> bool {
        !matches!(self.state, LineState::Ended(_))
    }
}

/// What the chat buffer shows and remembers about it.
#[derive(Default)]
pub(super) struct ChatView {
    pub buf: Option<Buffer>,
    ns: Option<u32>,
    pub tools: HashMap<String, ToolMark>,
    working: Option<u32>,
    /// Extmark where the answer being streamed began (for withdrawal).
    answer_start: Option<u32>,
    /// The "waiting for you" line, while a permission ask waits.
    pub waiting_text: Option<String>,
    /// The extmark of the lines under the chat's end: the working or
    /// waiting line, queued messages, the empty chat's hint.
    notes: Option<u32>,
    /// Messages queued for the running turn (`AgentEvent::Queued`).
    pub queued: Vec<String>,
    /// The key that stops a turn from any window (`None`: `<C-c>`, the
    /// default).
    pub stop_key: Option<String>,
    /// No key stops a turn from any window (`setup{ stop_key = false }`).
    pub stop_key_off: bool,
    /// The permission mode shown in the winbar.
    pub mode: String,
    /// The model shown in the winbar.
    pub model: String,
    /// The session's tokens (winbar).
    pub session_usage: Usage,
    /// How full the context window is: (used, window) (winbar).
    pub context: Option<(u64, u64)>,
    /// A turn is being shown as running.
    pub running: bool,
    /// The token counts of the turn that is ending and of the session.
    usage: Option<(Usage, Usage)>,
    /// The permission asks waiting: (tool, float title).
    pub waiting_tools: Vec<(String, String)>,
    /// The last line holds streamed answer text (more text continues it).
    text_open: bool,
    /// The last thing shown is a tool line (and its folded result): text
    /// after it starts after an empty line.
    after_tool: bool,
    /// An error notice was shown in this turn.
    error_shown: bool,
    /// Where the buffer ends (row, byte length of the last line) and the
    /// `changedtick` that was true for (see [`ChatView::end`]).
    end: Option<(u32, usize, usize)>,
    /// The running turn is not highlighted again until it ends (its text
    /// is longer than [`HIGHLIGHT_WHILE_STREAMING_BYTES`]).
    pub highlighting_paused: bool,
    /// Whether the streamed text's last character was a space (where the
    /// next over-long line may be continued, [`continue_long_lines`]).
    line_end: LineEnd,
    /// The `↪` sign marks of the answer being streamed (a withdrawn
    /// answer's go with it).
    continued_marks: Vec<u32>,
    /// Folded summaries under `compacted:` lines: (extmark of the line, lines
    /// folded).
    summaries: Vec<(u32, usize)>,
    /// Extmark at the first row of the running turn (what
    /// [`ChatView::highlight_turn`] parses).
    turn_start: Option<u32>,
    /// The tool calls of the running turn (their folded results are left
    /// out of its highlighting until shown open).
    turn_tools: Vec<String>,
    /// How many of `summaries` came before the running turn.
    turn_summaries: usize,
    /// Drawing a resumed chat in steps: a turn is highlighted when it
    /// ends, in a step of its own, never while it is drawn.
    pub in_steps: bool,
    /// Where the next frame highlights the running turn again from: the
    /// last blank line outside fenced code the last frame saw. The rows
    /// above keep their highlights, so a frame costs the text new since
    /// the last one, not the whole turn (a turn's end parses it whole).
    frame_from: Option<usize>,
    /// Extmark on the running turn's `## lathe` heading: what the prompt
    /// carried is shown above it.
    lathe_heading: Option<u32>,
    /// The retry note of the outage going on (its extmark, which also
    /// highlights it, and its line count): the next retry replaces it.
    retry_note: Option<(u32, usize)>,
}

/// The running turn as [`ChatView::highlight_turn`] parses it.
struct TurnParts {
    /// Its first row (0-based).
    first: usize,
    /// The row after its last.
    last: usize,
    /// Its folded results and summaries: rows, end exclusive.
    skip: Vec<(usize, usize)>,
    /// Bytes of its text without them.
    bytes: usize,
}

/// Up to this size (bytes of text, folded results left out) the running
/// turn is highlighted again at every frame while an answer streams
/// (parsing it costs ~1 ms per 10 KB); past this its highlighting pauses
/// until the turn ends, when it is parsed once, in steps of this size.
/// Earlier turns are never parsed again, so the chat's length does not
/// matter.
pub(super) const HIGHLIGHT_WHILE_STREAMING_BYTES: usize = 16 * 1024;

impl ChatView {
    pub fn ns(&mut self) -> u32 {
        *self
            .ns
            .get_or_insert_with(|| api::create_namespace(NAMESPACE))
    }

    /// Forgets what the transcript showed (it was emptied): tool lines,
    /// marks, the turn's state and the session's tokens. The buffer, its
    /// namespace, the mode, the model and waiting asks stay.
    pub fn reset(&mut self) {
        self.tools.clear();
        self.working = None;
        self.answer_start = None;
        self.notes = None;
        self.queued.clear();
        self.session_usage = Usage::default();
        self.context = None;
        self.running = false;
        self.usage = None;
        self.text_open = false;
        self.after_tool = false;
        self.error_shown = false;
        self.end = None;
        self.highlighting_paused = false;
        self.line_end = LineEnd::default();
        self.continued_marks.clear();
        self.summaries.clear();
        self.turn_start = None;
        self.frame_from = None;
        self.turn_tools.clear();
        self.turn_summaries = 0;
        self.retry_note = None;
        self.lathe_heading = None;
    }

    /// The chat buffer, created on first use.
    pub fn buffer(&mut self) -> Result<Buffer, String> {
        if let Some(b) = self.buf.as_ref().filter(|b| b.is_valid()) {
            return Ok(b.clone());
        }
        self.tools.clear();
        self.working = None;
        self.text_open = false;
        self.after_tool = false;
        self.end = None;
        self.highlighting_paused = false;
        let buf = super::window::create_chat_buffer()?;
        self.buf = Some(buf.clone());
        self.notes = None;
        // The empty chat's hint.
        self.place_notes(&buf);
        Ok(buf)
    }

    /// Where the buffer ends: the last line's row (0-based) and its length
    /// in bytes. Remembered from the last append (with the `changedtick`
    /// it left), so streaming never reads the growing last line back; any
    /// other change of the buffer moves the tick and the end is read once.
    fn end(&mut self, buf: &Buffer) -> (usize, usize) {
        let tick = changedtick(buf);
        if let Some((t, row, col)) = self.end {
            if Some(t) == tick {
                return (row, col);
            }
        }
        let n = buf.line_count().unwrap_or(1).max(1);
        let end = (n - 1, line_at(buf, n - 1).len());
        self.end = tick.map(|t| (t, end.0, end.1));
        end
    }

    /// Appends `text` at the very end of the buffer (it may hold
    /// newlines): one `nvim_buf_set_text`, nothing read back.
    fn append(&mut self, buf: &mut Buffer, text: &str) {
        let (row, col) = self.end(buf);
        if buf.set_text(row..row, col, col, text.split('\n')).is_err() {
            self.end = None;
            return;
        }
        super::edited();
        let breaks = text.matches('\n').count();
        let tail = text.rsplit('\n').next().map_or(0, str::len);
        let new_end = if breaks == 0 {
            (row, col + tail)
        } else {
            (row + breaks, tail)
        };
        self.end = changedtick(buf).map(|t| (t, new_end.0, new_end.1));
    }

    /// Starts a fresh line unless the last line is empty; returns its row.
    fn fresh_line(&mut self, buf: &mut Buffer) -> usize {
        let (row, len) = self.end(buf);
        if len == 0 {
            row
        } else {
            self.append(buf, "\n");
            row + 1
        }
    }

    /// Starts a block of its own: a fresh line with an empty line above
    /// it, as a prompt's block has (none at the top of the chat).
    fn block_start(&mut self, buf: &mut Buffer) {
        if self.is_blank(buf) {
            return;
        }
        let row = self.fresh_line(buf);
        if row > 0 && !line_at(buf, row - 1).is_empty() {
            self.append(buf, "\n");
        }
    }

    fn is_blank(&mut self, buf: &Buffer) -> bool {
        self.end(buf) == (0, 0)
    }

    /// Appends a whole line (on a fresh line) highlighted with `hl`.
    fn append_line(&mut self, buf: &mut Buffer, line: &str, hl: &str) {
        self.append_lines(buf, &[line], hl);
    }

    /// Appends whole lines (from a fresh line) highlighted with `hl`.
    fn append_lines<S: AsRef<str>>(&mut self, buf: &mut Buffer, lines: &[S], hl: &str) {
        let Some(last) = lines.last() else {
            return;
        };
        let row = self.fresh_line(buf);
        let mut text = String::new();
        for l in lines {
            text.push_str(l.as_ref());
            text.push('\n');
        }
        self.append(buf, &text);
        let ns = self.ns();
        let opts = SetExtmarkOpts::builder()
            .end_row(row + lines.len() - 1)
            .end_col(last.as_ref().len())
            .hl_group(hl)
            .build();
        let _ = buf.set_extmark(ns, row, 0, &opts);
        self.text_open = false;
        self.after_tool = false;
    }

    pub fn apply(&mut self, buf: &Buffer, ev: AgentEvent) {
        let mut buf = buf.clone();
        if !matches!(
            ev,
            AgentEvent::Retrying { .. }
                | AgentEvent::AssistantStarted
                | AgentEvent::Usage { .. }
                | AgentEvent::Context { .. }
        ) {
            // Anything shown after a retry note ends its outage.
            self.retry_note = None;
        }
        match ev {
            AgentEvent::Retrying { text } => self.retry_note(&mut buf, &text),
            AgentEvent::Attached { items } => self.attached(&mut buf, &items),
            AgentEvent::TurnStarted { prompt } => {
                let mut block = String::new();
                if !self.is_blank(&buf) {
                    self.fresh_line(&mut buf);
                    block.push('\n');
                }
                block.push_str(YOU_HEADING);
                block.push_str("\n\n");
                block.push_str(prompt.trim_end());
                block.push_str("\n\n");
                block.push_str(LATHE_HEADING);
                block.push_str("\n\n");
                let (row, col) = self.end(&buf);
                self.append(&mut buf, &block);
                // Left gravity: the turn's text goes after the mark.
                let ns = self.ns();
                let opts = SetExtmarkOpts::builder().right_gravity(false).build();
                if let Some(old) = self.turn_start.take() {
                    let _ = buf.del_extmark(ns, old);
                }
                self.turn_start = buf.set_extmark(ns, row, col, &opts).ok();
                // The block ends with the heading and two empty lines.
                if let Some(old) = self.lathe_heading.take() {
                    let _ = buf.del_extmark(ns, old);
                }
                let (end_row, _) = self.end(&buf);
                self.lathe_heading = buf
                    .set_extmark(ns, end_row.saturating_sub(2), 0, &SetExtmarkOpts::default())
                    .ok();
                self.frame_from = None;
                self.turn_tools.clear();
                self.turn_summaries = self.summaries.len();
                self.highlighting_paused = false;
                self.working = Some(0);
                self.running = true;
                self.text_open = false;
                self.after_tool = false;
                self.error_shown = false;
            }
            AgentEvent::AssistantStarted => {
                let (row, col) = self.end(&buf);
                let ns = self.ns();
                // Left gravity: text streamed at the mark goes after it, so
                // the mark keeps pointing at where the answer began.
                let opts = SetExtmarkOpts::builder().right_gravity(false).build();
                self.answer_start = buf.set_extmark(ns, row, col, &opts).ok();
                self.continued_marks.clear();
            }
            AgentEvent::AssistantWithdrawn { reason } => {
                // The failed answer is not part of the conversation: remove
                // what it streamed and say so.
                if let Some(mark) = self.answer_start.take() {
                    let ns = self.ns();
                    if let Ok((row, col, _)) = buf.get_extmark_by_id(ns, mark, &Default::default())
                    {
                        let (end_row, end_col) = self.end(&buf);
                        for id in std::mem::take(&mut self.continued_marks) {
                            let _ = buf.del_extmark(ns, id);
                        }
                        let _ = buf.set_text(row..end_row, col, end_col, [""]);
                        super::edited();
                    }
                }
                self.tools.retain(|_, t| !t.open());
                self.append_line(&mut buf, &withdrawn_line(&reason), "LatheNote");
            }
            AgentEvent::TextDelta { text } => {
                if !self.text_open {
                    // Text after a notice starts a line of its own, never
                    // glued onto it; after tool lines, after an empty line.
                    if self.after_tool {
                        self.block_start(&mut buf);
                    } else {
                        self.fresh_line(&mut buf);
                    }
                    self.line_end = LineEnd::default();
                }
                // An over-long line goes on in new chat lines, each marked
                // with a sign (`:help lathe-chat-long-lines`).
                let (row, len) = self.end(&buf);
                let at = LineEnd {
                    len,
                    after_space: len > 0 && self.line_end.after_space,
                    after_cr: self.line_end.after_cr,
                };
                let wrapped = continue_long_lines(at, &text);
                self.append(&mut buf, &wrapped.text);
                self.line_end = wrapped.end;
                self.mark_continued(&mut buf, row, &wrapped.continued);
                self.text_open = true;
                self.after_tool = false;
            }
            AgentEvent::ToolQueued { id, name, detail } => {
                self.new_tool(&mut buf, id, name, detail, LineState::Queued, None);
            }
            AgentEvent::ToolStarted {
                id,
                name,
                detail,
                input,
            } => {
                if let Some(t) = self.tools.get_mut(&id) {
                    t.state = LineState::Running;
                    if !detail.is_empty() {
                        t.detail = detail;
                    }
                    t.input = input;
                    self.redraw_tool(&mut buf, &id);
                } else {
                    self.new_tool(&mut buf, id, name, detail, LineState::Running, Some(input));
                }
            }
            AgentEvent::ToolProgress { id, text } => {
                // Show the latest output line on the tool's own line.
                let Some(t) = self.tools.get_mut(&id) else {
                    return;
                };
                t.partial.push_str(&text);
                // Only the tail matters; keep memory bounded.
                if t.partial.len() > 4096 {
                    let mut cut = t.partial.len() - 2048;
                    while !t.partial.is_char_boundary(cut) {
                        cut += 1;
                    }
                    t.partial.drain(..cut);
                }
                self.redraw_tool(&mut buf, &id);
            }
            AgentEvent::ToolFinished {
                id,
                name,
                status,
                summary,
                content,
                display,
            } => {
                if !self.tools.contains_key(&id) {
                    self.new_tool(
                        &mut buf,
                        id.clone(),
                        name,
                        String::new(),
                        LineState::Running,
                        None,
                    );
                }
                let Some(t) = self.tools.get_mut(&id) else {
                    return;
                };
                t.state = LineState::Ended(status);
                let ran = matches!(status, ToolStatus::Done | ToolStatus::Failed);
                t.partial = if ran { summary } else { user_summary(&summary) };
                t.content = content;
                t.display = display;
                self.redraw_tool(&mut buf, &id);
                if ran {
                    self.add_block(&mut buf, &id);
                }
            }
            AgentEvent::Compacted {
                before,
                after,
                summary,
            } => {
                // A block of its own, live or from `:Lathe compact`.
                self.block_start(&mut buf);
                let shown = !fold_lines(&summary, "").is_empty();
                self.append_line(&mut buf, &compacted_line(before, after, shown), "LatheNote");
                self.add_summary(&mut buf, &summary);
            }
            AgentEvent::Context { used, window } => {
                self.context = Some((used, window));
            }
            AgentEvent::Notice { text, is_error } => {
                let hl = if is_error { "LatheError" } else { "LatheNote" };
                if !self.running {
                    // Outside a turn (`:Lathe compact`): a block of its own.
                    self.block_start(&mut buf);
                }
                self.error_shown |= is_error;
                self.append_lines(&mut buf, &notice_lines(&text, is_error), hl);
            }
            AgentEvent::Usage { turn, session } => {
                self.session_usage = session.clone();
                self.usage = Some((turn, session));
            }
            AgentEvent::Queued { messages } => self.queued = messages,
            AgentEvent::QueuedSent { text } => {
                // The user's message in the running turn, where the model
                // got it; the answer goes on under its own heading.
                self.fresh_line(&mut buf);
                let block = format!(
                    "\n{YOU_HEADING}\n\n{}\n\n{LATHE_HEADING}\n\n",
                    text.trim_end()
                );
                self.append(&mut buf, &block);
                self.text_open = false;
                self.after_tool = false;
            }
            AgentEvent::QueuedReturned { text } => super::prompt::give_back(&text),
            AgentEvent::TurnEnded { outcome } => {
                let open: Vec<String> = self
                    .tools
                    .iter()
                    .filter(|(_, t)| t.open())
                    .map(|(id, _)| id.clone())
                    .collect();
                for id in open {
                    if let Some(t) = self.tools.get_mut(&id) {
                        t.state = LineState::Ended(ToolStatus::Interrupted);
                        t.partial.clear();
                    }
                    self.redraw_tool(&mut buf, &id);
                }
                self.fresh_line(&mut buf);
                self.append(&mut buf, "\n");
                let (turn, session) = self.usage.take().unwrap_or_default();
                let end = turn_end_line(&outcome, self.error_shown);
                let end = turn_end_lines(&end, &turn, &session, text_width(&buf));
                self.append_lines(&mut buf, &end, "LatheTurnEnd");
                self.highlight_turn(&buf);
                self.highlighting_paused = false;
                self.frame_from = None;
                self.turn_tools.clear();
                if let (Some(mark), Some(ns)) = (self.turn_start.take(), self.ns) {
                    let _ = buf.del_extmark(ns, mark);
                }
                self.working = None;
                self.running = false;
            }
        }
    }

    /// Puts [`CONTINUED_SIGN`] on the chat lines `row + k` (for each `k` in
    /// `continued`): they go on from the line above (a break the chat added).
    fn mark_continued(&mut self, buf: &mut Buffer, row: usize, continued: &[usize]) {
        if continued.is_empty() {
            return;
        }
        let ns = self.ns();
        let opts = SetExtmarkOpts::builder()
            .sign_text(CONTINUED_SIGN)
            .sign_hl_group("LatheContinued")
            .build();
        for k in continued {
            if let Ok(id) = buf.set_extmark(ns, row + k, 0, &opts) {
                self.continued_marks.push(id);
            }
        }
        super::continued(continued.len());
    }

    /// Where the buffer ends: the last line's row (0-based) and its length
    /// in bytes, as [`ChatView::end`] knows it (nothing read back while
    /// streaming).
    pub fn last_line_end(&mut self, buf: &Buffer) -> (usize, usize) {
        self.end(buf)
    }

    /// Adds the line of a new tool call at the end.
    fn new_tool(
        &mut self,
        buf: &mut Buffer,
        id: String,
        name: String,
        detail: String,
        state: LineState,
        input: Option<serde_json::Value>,
    ) {
        // Tool lines after text start after an empty line; one after
        // another they stay together.
        if self.text_open {
            self.block_start(buf);
        }
        let row = self.fresh_line(buf);
        self.append(buf, &tool_line(&name, &detail, state.word(), ""));
        let ns = self.ns();
        let mark = buf
            .set_extmark(ns, row, 0, &SetExtmarkOpts::default())
            .unwrap_or(0);
        self.append(buf, "\n");
        self.text_open = false;
        self.after_tool = true;
        self.turn_tools.push(id.clone());
        self.tools.insert(
            id.clone(),
            ToolMark {
                mark,
                status_mark: None,
                desc_mark: None,
                name,
                detail,
                input: input.unwrap_or(serde_json::Value::Null),
                partial: String::new(),
                state,
                block: None,
                content: String::new(),
                display: None,
            },
        );
        self.redraw_tool(buf, &id);
    }

    /// Writes the line of tool `id` as its state says, with its sign and
    /// status highlight. Returns `false` when the line is gone.
    fn redraw_tool(&mut self, buf: &mut Buffer, id: &str) -> bool {
        let ns = self.ns();
        let Some(t) = self.tools.get_mut(id) else {
            return false;
        };
        let extra = match t.state {
            LineState::Ended(_) => t.partial.clone(),
            _ => progress_line(&t.partial),
        };
        let word = t.state.word();
        let line = tool_line(&t.name, &t.detail, word, &extra);
        let Ok((row, _, _)) = buf.get_extmark_by_id(ns, t.mark, &Default::default()) else {
            return false;
        };
        let old_len = line_at(buf, row).len();
        // Within the line, never the line itself: `nvim_buf_set_lines`
        // would move the mark to the next line, and the next update of the
        // same tool line would overwrite whatever follows it.
        if buf.set_text(row..row, 0, old_len, [line.as_str()]).is_err() {
            return false;
        }
        super::edited();
        let hl = t.state.hl_group();
        let opts = SetExtmarkOpts::builder()
            .id(t.mark)
            .sign_text(t.state.sign())
            .sign_hl_group(hl)
            .build();
        let _ = buf.set_extmark(ns, row, 0, &opts);
        let (start, end) = status_range(&t.name, &t.detail, word);
        let mut b = SetExtmarkOpts::builder();
        b.end_row(row).end_col(end).hl_group(hl);
        if let Some(id) = t.status_mark {
            b.id(id);
        }
        t.status_mark = buf.set_extmark(ns, row, start, &b.build()).ok();
        // A Bash line's description after its command, dimmed.
        let description = t.input.get("description").and_then(|d| d.as_str());
        match description.and_then(|d| description_range(&t.name, &t.detail, d)) {
            Some((start, end)) => {
                let mut b = SetExtmarkOpts::builder();
                b.end_row(row).end_col(end).hl_group("LatheToolDescription");
                if let Some(id) = t.desc_mark {
                    b.id(id);
                }
                t.desc_mark = buf.set_extmark(ns, row, start, &b.build()).ok();
            }
            None => {
                if let Some(id) = t.desc_mark.take() {
                    let _ = buf.del_extmark(ns, id);
                }
            }
        }
        true
    }

    /// Shows what the prompt carried above the running turn's `## lathe`
    /// heading: a line per item (`⎿ Selected lines 11–13 of a.py`), each
    /// folded to the text sent for it (`za` opens it).
    fn attached(&mut self, buf: &mut Buffer, items: &[AttachedItem]) {
        let ns = self.ns();
        let Some(row) = self
            .lathe_heading
            .and_then(|m| buf.get_extmark_by_id(ns, m, &Default::default()).ok())
            .map(|(row, _, _)| row)
        else {
            return;
        };
        let mut lines: Vec<String> = Vec::new();
        // (row of an item's line, lines folded under it)
        let mut folds: Vec<(usize, usize)> = Vec::new();
        for item in items {
            let label_row = row + lines.len();
            lines.push(attached_line(&item.label));
            let text = fold_lines(&item.text, "");
            folds.push((label_row, text.len()));
            lines.extend(text);
        }
        lines.push(String::new());
        if buf
            .set_lines(row..row, false, lines.iter().map(String::as_str))
            .is_err()
        {
            return;
        }
        super::edited();
        // Rows moved: the next frame highlights the turn from its start.
        self.frame_from = None;
        for &(r, n) in &folds {
            let label_len = line_at(buf, r).len();
            let opts = SetExtmarkOpts::builder()
                .end_row(r)
                .end_col(label_len)
                .hl_group("LatheNote")
                .build();
            let _ = buf.set_extmark(ns, r, 0, &opts);
            if n == 0 {
                continue;
            }
            if let Ok(mark) = buf.set_extmark(ns, r, 0, &SetExtmarkOpts::default()) {
                self.summaries.push((mark, n));
                for w in super::window::chat_windows(buf) {
                    super::window::fold(&w, r + 1, r + 1 + n);
                }
            }
        }
    }

    /// Shows the retry note `text`: in place of the outage's last one, or
    /// appended as a note when it is the first.
    fn retry_note(&mut self, buf: &mut Buffer, text: &str) {
        let lines = notice_lines(text, false);
        let Some(last) = lines.last() else {
            return;
        };
        let ns = self.ns();
        let hl = |row: usize, id: Option<u32>| {
            let mut b = SetExtmarkOpts::builder();
            b.end_row(row + lines.len() - 1)
                .end_col(last.len())
                .hl_group("LatheNote");
            if let Some(id) = id {
                b.id(id);
            }
            b.build()
        };
        if let Some((mark, n)) = self.retry_note {
            if let Ok((row, _, _)) = buf.get_extmark_by_id(ns, mark, &Default::default()) {
                if buf
                    .set_lines(row..row + n, false, lines.iter().map(String::as_str))
                    .is_ok()
                {
                    super::edited();
                    let _ = buf.set_extmark(ns, row, 0, &hl(row, Some(mark)));
                    self.retry_note = Some((mark, lines.len()));
                    return;
                }
            }
        }
        let row = self.fresh_line(buf);
        let mut all = lines.join("\n");
        all.push('\n');
        self.append(buf, &all);
        self.text_open = false;
        self.after_tool = false;
        self.retry_note = buf
            .set_extmark(ns, row, 0, &hl(row, None))
            .ok()
            .map(|m| (m, lines.len()));
    }

    /// Inserts the folded result of tool `id` under its line.
    fn add_block(&mut self, buf: &mut Buffer, id: &str) {
        let ns = self.ns();
        let Some(t) = self.tools.get_mut(id) else {
            return;
        };
        let diff = t.display.as_deref().filter(|d| !d.trim().is_empty());
        let lines = match diff {
            Some(d) => fold_lines(d, "diff"),
            None => fold_lines(&t.content, &fence_lang(&t.name, &t.input)),
        };
        if lines.is_empty() {
            return;
        }
        let Ok((row, _, _)) = buf.get_extmark_by_id(ns, t.mark, &Default::default()) else {
            return;
        };
        let len = line_at(buf, row).len();
        let mut text = vec![String::new()];
        text.extend(lines.iter().cloned());
        if buf.set_text(row..row, len, len, text).is_err() {
            return;
        }
        super::edited();
        if diff.is_some() {
            // Added, removed and hunk lines in their own colours, whether
            // or not a `diff` parser is installed for the fence.
            for (i, col, group) in diff_fold_highlights(&lines) {
                let r = row + 1 + i;
                let end = lines.get(i).map_or(0, String::len);
                let opts = SetExtmarkOpts::builder()
                    .end_row(r)
                    .end_col(end)
                    .hl_group(group)
                    .priority(DIFF_PRIORITY)
                    .build();
                let _ = buf.set_extmark(ns, r, col, &opts);
            }
        }
        let start = buf
            .set_extmark(ns, row + 1, 0, &SetExtmarkOpts::default())
            .ok();
        if let Some(start) = start {
            t.block = Some((start, lines.len()));
            // The fold starts at the tool line: closed, it shows that line
            // (`'foldtext'`: `foldtext` in `lua/lathe/chat.lua`), and `za` on it opens the result.
            let (first, last) = (row + 1, row + 1 + lines.len());
            for w in super::window::chat_windows(buf) {
                super::window::fold(&w, first, last);
            }
        }
    }

    /// The summary of a compaction, folded under the `compacted:` line
    /// just written (`za` on it opens it).
    fn add_summary(&mut self, buf: &mut Buffer, summary: &str) {
        let lines = fold_lines(summary, "");
        if lines.is_empty() {
            return;
        }
        let (end_row, _) = self.end(buf);
        // The `compacted:` line is the one before the empty last line.
        let row = end_row.saturating_sub(1);
        let mut text = lines.join("\n");
        text.push('\n');
        self.append(buf, &text);
        let ns = self.ns();
        if let Ok(mark) = buf.set_extmark(ns, row, 0, &SetExtmarkOpts::default()) {
            self.summaries.push((mark, lines.len()));
            for w in super::window::chat_windows(buf) {
                super::window::fold(&w, row + 1, row + 1 + lines.len());
            }
        }
        self.text_open = false;
        self.after_tool = false;
    }

    /// The folds of every result, 1-based line ranges from the tool line
    /// to the result's last line (for a new window).
    pub fn block_ranges(&mut self, buf: &Buffer) -> Vec<(usize, usize)> {
        let ns = self.ns();
        let mut out: Vec<(usize, usize)> = self
            .tools
            .values()
            .filter_map(|t| {
                let (mark, n) = t.block?;
                let (row, _, _) = buf.get_extmark_by_id(ns, mark, &Default::default()).ok()?;
                // 1-based: the tool line (just above the block) to its end.
                Some((row, row + n))
            })
            .chain(self.summaries.iter().filter_map(|(mark, n)| {
                let (row, _, _) = buf.get_extmark_by_id(ns, *mark, &Default::default()).ok()?;
                Some((row + 1, row + 1 + n))
            }))
            .collect();
        out.sort_unstable();
        out
    }

    /// The tool whose line or folded result holds `row` (0-based), and
    /// whether `row` is its line.
    pub fn tool_at(&mut self, buf: &Buffer, row: usize) -> Option<(&ToolMark, Option<usize>)> {
        let ns = self.ns();
        let mut found: Option<(String, Option<usize>)> = None;
        for (id, t) in &self.tools {
            let Ok((r, _, _)) = buf.get_extmark_by_id(ns, t.mark, &Default::default()) else {
                continue;
            };
            if r == row {
                found = Some((id.clone(), None));
                break;
            }
            if let Some((mark, n)) = t.block {
                if let Ok((b, _, _)) = buf.get_extmark_by_id(ns, mark, &Default::default()) {
                    if row >= b && row < b + n {
                        found = Some((id.clone(), Some(row - b)));
                        break;
                    }
                }
            }
        }
        let (id, off) = found?;
        self.tools.get(&id).map(|t| (t, off))
    }

    /// Puts the lines under the end of the chat (virtual lines, each a
    /// line of its own, never glued to streamed text): "waiting for you:
    /// …" while an ask waits, else the working line (naming the key that
    /// stops the turn) while a turn runs; then each queued message; in an
    /// empty chat, the hint. Removes them when there is nothing to show.
    /// A window that follows the chat's end scrolls to show them
    /// (`show_end` in `lua/lathe/chat.lua`).
    pub fn place_notes(&mut self, buf: &Buffer) {
        let ns = self.ns();
        let mut buf = buf.clone();
        let mut lines: Vec<(String, &str)> = Vec::new();
        if let Some(text) = &self.waiting_text {
            lines.push((text.clone(), "LatheWaiting"));
        } else if self.working.is_some() {
            let key = (!self.stop_key_off).then(|| self.stop_key.as_deref().unwrap_or("<C-c>"));
            lines.push((working_text(key), "LatheWorking"));
        }
        for q in &self.queued {
            lines.push((queued_line(q), "LatheQueued"));
        }
        let blank = self.is_blank(&buf);
        if blank && lines.is_empty() && self.working.is_none() {
            for l in EMPTY_CHAT_HINT {
                lines.push((l.to_string(), "LatheHint"));
            }
        }
        if lines.is_empty() {
            if let Some(id) = self.notes.take() {
                let _ = buf.del_extmark(ns, id);
            }
            return;
        }
        // Broken to the narrowest chat window: Neovim cuts a virtual
        // line at the window's edge.
        let width = text_width(&buf).unwrap_or(usize::MAX);
        let lines: Vec<(String, &str)> = lines
            .into_iter()
            .flat_map(|(t, hl)| {
                if t.chars().count() <= width {
                    vec![(t, hl)]
                } else {
                    wrap_note(&t, width).into_iter().map(|r| (r, hl)).collect()
                }
            })
            .collect();
        let (row, _) = self.end(&buf);
        let mut b = SetExtmarkOpts::builder();
        b.virt_lines(lines.iter().map(|(t, hl)| [(t.as_str(), *hl)]));
        if let Some(id) = self.notes {
            b.id(id);
        }
        match buf.set_extmark(ns, row, 0, &b.build()) {
            Ok(id) => self.notes = Some(id),
            Err(_) => self.notes = None,
        }
    }

    /// Says "waiting for you" on the tool lines of calls a permission ask
    /// waits on, "running" again on the others.
    pub fn mark_waiting_tools(&mut self, buf: &Buffer) {
        let ids = waiting_ids(&self.tools, &self.waiting_tools);
        let mut changed = Vec::new();
        for (id, t) in &mut self.tools {
            let now = match t.state {
                LineState::Running if ids.contains(id) => LineState::Waiting,
                LineState::Waiting if !ids.contains(id) => LineState::Running,
                _ => continue,
            };
            t.state = now;
            changed.push(id.clone());
        }
        if changed.is_empty() {
            return;
        }
        let mut buf = buf.clone();
        let _ = api::set_option_value("modifiable", true, &buf_opts(&buf));
        for id in changed {
            self.redraw_tool(&mut buf, &id);
        }
        let _ = api::set_option_value("modifiable", false, &buf_opts(&buf));
    }

    /// The running turn's rows, its folded results and summaries and the
    /// bytes of its text without them.
    fn turn_parts(&mut self, buf: &Buffer) -> Option<TurnParts> {
        let ns = self.ns();
        let mark = self.turn_start?;
        let (first, _, _) = buf.get_extmark_by_id(ns, mark, &Default::default()).ok()?;
        let last = buf.line_count().ok()?;
        let mut skip = Vec::new();
        for id in &self.turn_tools {
            let Some((m, n)) = self.tools.get(id).and_then(|t| t.block) else {
                continue;
            };
            if let Ok((row, _, _)) = buf.get_extmark_by_id(ns, m, &Default::default()) {
                skip.push((row, row + n));
            }
        }
        for (m, n) in self.summaries.iter().skip(self.turn_summaries) {
            if let Ok((row, _, _)) = buf.get_extmark_by_id(ns, *m, &Default::default()) {
                skip.push((row + 1, row + 1 + n));
            }
        }
        let offset = |row: usize| buf.get_offset(row.min(last)).unwrap_or(0);
        let folded: usize = skip.iter().map(|&(a, b)| offset(b) - offset(a)).sum();
        let bytes = (offset(last) - offset(first)).saturating_sub(folded);
        Some(TurnParts {
            first,
            last,
            skip,
            bytes,
        })
    }

    /// Highlights the running turn (`:help lathe-chat-highlighting`):
    /// its text parsed as markdown, its folded results when shown open.
    fn highlight_turn(&mut self, buf: &Buffer) {
        if let Some(mut t) = self.turn_parts(buf) {
            t.skip.sort_unstable();
            super::highlight::range(buf, t.first, t.last, &t.skip, self.in_steps);
        }
    }

    /// After a frame: highlights the running turn again while its text is
    /// at most [`HIGHLIGHT_WHILE_STREAMING_BYTES`], else pauses that until
    /// the turn ends.
    pub fn highlight_frame(&mut self, buf: &Buffer) {
        if !self.running || self.highlighting_paused || self.in_steps {
            return;
        }
        let Some(t) = self.turn_parts(buf) else {
            return;
        };
        if t.bytes > HIGHLIGHT_WHILE_STREAMING_BYTES {
            self.highlighting_paused = true;
            return;
        }
        let mut skip = t.skip;
        skip.sort_unstable();
        let from = self
            .frame_from
            .filter(|r| (t.first..=t.last).contains(r))
            .unwrap_or(t.first);
        super::highlight::range(buf, from, t.last, &skip, false);
        let lines: Vec<String> = buf
            .get_lines(from..t.last, false)
            .map(|lines| lines.map(|l| l.to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        let skipped = |i: usize| skip.iter().any(|&(a, b)| (a..b).contains(&(from + i)));
        self.frame_from =
            Some(super::lines::last_block_boundary(&lines, skipped).map_or(from, |i| from + i));
    }

    /// `true` while the "working" indicator is shown.
    pub fn working_shown(&self) -> bool {
        self.working.is_some()
    }
}

/// The text width of the narrowest window showing `buf` (its width less
/// the sign and fold columns), `None` when none does.
fn text_width(buf: &Buffer) -> Option<usize> {
    use nvim_oxi::conversion::FromObject;
    windows_of(buf)
        .iter()
        .filter_map(|w| {
            let info: nvim_oxi::Array = api::call_function("getwininfo", (w.handle(),)).ok()?;
            let info = nvim_oxi::Dictionary::from_object(info.into_iter().next()?).ok()?;
            let field = |k: &str| i64::from_object(info.get(k)?.clone()).ok();
            usize::try_from(field("width")? - field("textoff")?).ok()
        })
        .filter(|w| *w > 0)
        .min()
}

/// `buf`'s `changedtick`, `None` when it is gone (nvim-oxi's
/// `get_changedtick` panics on the -1 Neovim returns for a buffer wiped,
/// e.g. by a frame that runs while Neovim exits).
fn changedtick(buf: &Buffer) -> Option<u32> {
    crate::host::changedtick(buf).ok()
}

/// The fenced block's language: a Read's file type (`vim.filetype.match`),
/// else none.
fn fence_lang(tool: &str, input: &serde_json::Value) -> String {
    if tool != "Read" {
        return String::new();
    }
    let Some(path) = input.get("file_path").and_then(|p| p.as_str()) else {
        return String::new();
    };
    crate::host::lua_handle::module_fn("lathe.ui", "filetype")
        .and_then(|f| f.call::<Option<String>>(path))
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// The ids of the running calls `asks` are about: per ask, the call of that
/// tool whose `Name detail` is the float's title, else the only running
/// call of that tool.
fn waiting_ids(tools: &HashMap<String, ToolMark>, asks: &[(String, String)]) -> HashSet<String> {
    let mut ids = HashSet::new();
    for (tool, title) in asks {
        let of_tool: Vec<(&String, &ToolMark)> = tools
            .iter()
            .filter(|(_, t)| &t.name == tool)
            .filter(|(_, t)| matches!(t.state, LineState::Running | LineState::Waiting))
            .collect();
        let titled = of_tool
            .iter()
            .find(|(_, t)| &format!("{} {}", t.name, t.detail) == title);
        match (titled, of_tool.as_slice()) {
            (Some((id, _)), _) | (None, [(id, _)]) => {
                ids.insert((*id).clone());
            }
            _ => {}
        }
    }
    ids
}
