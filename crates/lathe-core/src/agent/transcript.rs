//! The conversation as Messages API messages, kept valid at every step:
//! roles alternate and every `tool_use` is answered by a `tool_result` first
//! in the next user message (the rule the API enforces with a 400).

use std::sync::{Arc, Mutex, MutexGuard};

use std::collections::HashMap;

use super::session_log::{Mark, Record, SessionLog};
use crate::execution::interrupted_result;
use crate::protocol::{ContentBlock, Message, Role, ToolResult, ToolResultContent, ToolUse};
use crate::text::fill;

/// Model-facing: what a cleared `tool_result` says instead of its output
/// (docs/context-and-compaction.md, "Context and compaction"). `{tool}`.
pub const TOOL_RESULT_CLEARED: &str = "The output of this {tool} call was cleared from the conversation to keep it within the model's context window. Call {tool} again if you still need it.";

/// A `tool_result` cleared by [`Transcript::clear_tool_results`]: its
/// call, as the model made it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClearedResult {
    /// The `tool_use` the result answered.
    pub call: ToolUse,
    /// Bytes of output taken out.
    pub bytes: usize,
}

/// The session's messages behind a lock, shared by the session and its turn.
/// With a [`SessionLog`], every change is also recorded there (under the
/// lock, so the file holds the changes in the order they happened).
///
/// Each message is kept in an `Arc`: a request shares them
/// ([`Transcript::shared`]) instead of copying the conversation, and a
/// change makes a new `Arc` of only the message it changes
/// (`Arc::make_mut`), so a provider can reuse what it made of every other
/// message (`provider::anthropic::wire`).
#[derive(Debug, Default)]
pub struct Transcript {
    messages: Mutex<Vec<Arc<Message>>>,
    log: Option<SessionLog>,
    /// Counts the changes that are not appends (a compaction).
    generation: std::sync::atomic::AtomicU64,
}

impl Transcript {
    /// A transcript that records its changes in `log` (none: kept in
    /// memory only).
    pub fn with_log(log: Option<SessionLog>) -> Self {
        Self {
            messages: Mutex::default(),
            log,
            generation: Default::default(),
        }
    }

    /// Replaces the messages without recording anything (a resumed
    /// session's, already in its file).
    pub fn restore(&self, messages: Vec<Message>) {
        *self.lock() = messages.into_iter().map(Arc::new).collect();
    }

    /// Makes the messages satisfy the pairing rule ([`repair_pairing`]);
    /// `true` when something changed (a session saved in the middle of a
    /// turn). Not recorded: the next `push_user_text` repairs the same way
    /// when the file is read back.
    pub fn repair(&self) -> bool {
        let mut msgs = self.lock();
        if is_paired(&msgs) {
            return false;
        }
        let mut owned = owned(&msgs);
        let before = owned.clone();
        repair_pairing(&mut owned);
        let changed = owned != before;
        *msgs = owned.into_iter().map(Arc::new).collect();
        changed
    }

    fn record(&self, record: impl FnOnce() -> Record) {
        if let Some(log) = &self.log {
            log.record(&record());
        }
    }

    /// A copy of every message.
    pub fn snapshot(&self) -> Vec<Message> {
        owned(&self.lock())
    }

    /// Every message, shared (pointers, not copies): what a request sends.
    pub fn shared(&self) -> Vec<Arc<Message>> {
        self.lock().clone()
    }

    /// Adds the user's `text`. When the last message is a user message (the
    /// tool_results of an interrupted turn) the text joins it after them, so
    /// roles keep alternating.
    #[cfg(test)]
    pub fn push_user_text(&self, text: &str) {
        self.push_user_blocks(
            text,
            vec![ContentBlock::Text {
                text: text.to_string(),
            }],
        );
    }

    /// Adds the user's `blocks` (the prompt with its context), joining a
    /// last user message like [`Transcript::push_user_text`]; `prompt` is
    /// the prompt as typed (the session log keeps it for listing and the
    /// chat).
    pub fn push_user_blocks(&self, prompt: &str, blocks: Vec<ContentBlock>) {
        let mut msgs = self.lock();
        self.record(|| Record::User {
            text: prompt.to_string(),
            blocks: blocks.clone(),
        });
        if !is_paired(&msgs) {
            let mut all = owned(&msgs);
            repair_pairing(&mut all);
            *msgs = all.into_iter().map(Arc::new).collect();
        }
        match msgs.last_mut() {
            Some(last) if last.role == Role::User => Arc::make_mut(last).content.extend(blocks),
            _ => msgs.push(Arc::new(Message {
                role: Role::User,
                content: blocks,
            })),
        }
    }

    /// Adds `blocks` (queued messages, `text` as typed) to the last
    /// message when it is a user message (the `tool_result`s of the last
    /// answer, or the prompt): after its blocks, as the API requires.
    /// `false` (nothing added) when the last message is the assistant's
    /// (the next request continues an answer).
    pub fn push_queued(&self, text: &str, blocks: Vec<ContentBlock>) -> bool {
        let mut msgs = self.lock();
        let Some(last) = msgs.last_mut().filter(|m| m.role == Role::User) else {
            return false;
        };
        self.record(|| Record::Queued {
            text: text.to_string(),
            blocks: blocks.clone(),
        });
        Arc::make_mut(last).content.extend(blocks);
        true
    }

    /// Adds an assistant message (ignored when it has no content: the API
    /// rejects empty messages). When the last message is an assistant
    /// message without `tool_use` — an answer paused by the server
    /// (`pause_turn`) or cut at `max_tokens`, sent back so the model goes on
    /// — `message` continues it: its blocks join that message, and a text
    /// block right after a text block extends it.
    pub fn push_assistant(&self, message: Message) {
        if message.content.is_empty() {
            return;
        }
        let mut msgs = self.lock();
        self.record(|| Record::Assistant {
            message: message.clone(),
        });
        match msgs.last_mut() {
            Some(last) if last.role == Role::Assistant && last.tool_uses().next().is_none() => {
                let last = Arc::make_mut(last);
                for block in message.content {
                    match (last.content.last_mut(), block) {
                        (Some(ContentBlock::Text { text }), ContentBlock::Text { text: more }) => {
                            text.push_str(&more)
                        }
                        (_, block) => last.content.push(block),
                    }
                }
            }
            _ => msgs.push(Arc::new(message)),
        }
    }

    /// Where the conversation is now, for a later
    /// [`Transcript::rewind_to`]: taken before a prompt is added.
    pub fn mark(&self) -> Mark {
        let msgs = self.lock();
        Mark {
            len: msgs.len(),
            last_blocks: msgs
                .last()
                .filter(|m| m.role == Role::User)
                .map(|m| m.content.len()),
        }
    }

    /// Takes the conversation back to `mark` (`:Lathe rewind`): the
    /// messages after it go, and a last user message that a later prompt
    /// joined (the results of an interrupted turn) loses the blocks added
    /// since. Recorded as [`Record::Rewind`].
    /// `note`: what the model is told with the next prompt.
    pub fn rewind_to(&self, mark: Mark, checkpoint: u64, code: bool, note: &str) {
        let mut msgs = self.lock();
        self.record(|| Record::Rewind {
            to: checkpoint,
            code,
            conversation: Some(mark),
            note: note.to_string(),
            restored: Vec::new(),
            texts: Default::default(),
        });
        rewind(&mut msgs, mark);
    }

    /// How many messages there are.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Drops every message from index `len` on (a refused exchange, which
    /// the API asks to take out of the context sent next).
    pub fn truncate(&self, len: usize) {
        let mut msgs = self.lock();
        self.record(|| Record::Truncate { len });
        msgs.truncate(len);
    }

    /// Replaces the output of the oldest `tool_result`s with
    /// [`TOOL_RESULT_CLEARED`] until at least `need` bytes are freed (or
    /// none is left): results of more than `min_bytes`, not already
    /// cleared, leaving the newest `keep_recent` results as they are. The
    /// pairing is kept (the blocks stay, with their ids and `is_error`).
    /// Returns what was cleared, oldest first.
    pub fn clear_tool_results(
        &self,
        keep_recent: usize,
        min_bytes: usize,
        need: usize,
    ) -> Vec<ClearedResult> {
        let mut msgs = self.lock();
        let ids = pick_results_to_clear(&msgs, keep_recent, min_bytes, need);
        if ids.is_empty() {
            return Vec::new();
        }
        self.record(|| Record::ClearToolResults { ids: ids.clone() });
        clear_results(&mut msgs, &ids)
    }

    /// Replays a [`Record::ClearToolResults`].
    pub fn clear_results_by_id(&self, ids: &[String]) {
        let mut msgs = self.lock();
        self.record(|| Record::ClearToolResults { ids: ids.to_vec() });
        clear_results(&mut msgs, ids);
    }

    /// Replaces the whole conversation with `messages` (a compaction's
    /// result), recorded as a [`Record::Compacted`] marker so a resumed
    /// session starts from it. `before` and `after` are the estimated
    /// tokens, `summary` the summary as written (for the chat).
    pub fn replace_compacted(
        &self,
        messages: Vec<Message>,
        before: u64,
        after: u64,
        summary: &str,
    ) {
        let mut msgs = self.lock();
        self.record(|| Record::Compacted {
            messages: messages.clone(),
            before,
            after,
            summary: summary.to_string(),
        });
        *msgs = messages.into_iter().map(Arc::new).collect();
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// How many times the conversation was replaced (compacted).
    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Takes the last `blocks` blocks out of the last user message (the
    /// message goes when nothing is left): a prompt that could not be sent
    /// does not stay in the conversation. Recorded.
    pub fn withdraw_user_blocks(&self, blocks: usize) {
        let mut msgs = self.lock();
        self.record(|| Record::Withdraw { blocks });
        withdraw(&mut msgs, blocks);
    }

    /// Adds the `tool_result`s answering the last assistant message, in order.
    pub fn push_tool_results(&self, results: Vec<ToolResult>) {
        if results.is_empty() {
            return;
        }
        let mut msgs = self.lock();
        self.record(|| Record::ToolResults {
            results: results.clone(),
        });
        let content = results.into_iter().map(ContentBlock::ToolResult).collect();
        msgs.push(Arc::new(Message {
            role: Role::User,
            content,
        }));
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Arc<Message>>> {
        self.messages.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// `msgs` taken back to `mark` (see [`Transcript::rewind_to`]).
pub(crate) fn rewind(msgs: &mut Vec<Arc<Message>>, mark: Mark) {
    msgs.truncate(mark.len);
    if let (Some(blocks), Some(last)) = (mark.last_blocks, msgs.last_mut()) {
        if last.role == Role::User && last.content.len() > blocks && blocks > 0 {
            Arc::make_mut(last).content.truncate(blocks);
        }
    }
}

/// The last `blocks` blocks of the last user message taken out (see
/// [`Transcript::withdraw_user_blocks`]).
fn withdraw(msgs: &mut Vec<Arc<Message>>, blocks: usize) {
    let Some(last) = msgs.last_mut().filter(|m| m.role == Role::User) else {
        return;
    };
    let last = Arc::make_mut(last);
    let keep = last.content.len().saturating_sub(blocks);
    last.content.truncate(keep);
    if last.content.is_empty() {
        msgs.pop();
    }
}

/// Bytes a `tool_result`'s output takes in a request (text and image data).
pub fn result_bytes(content: &ToolResultContent) -> usize {
    match content {
        ToolResultContent::Text(t) => t.len(),
        ToolResultContent::Blocks(blocks) => blocks
            .iter()
            .map(|b| match b {
                ContentBlock::Text { text } => text.len(),
                ContentBlock::Image { source } => source.data.len(),
                _ => 0,
            })
            .sum(),
    }
}

/// Whether a result's output is already the cleared text.
fn is_cleared(content: &ToolResultContent) -> bool {
    let prefix = TOOL_RESULT_CLEARED
        .split("{tool}")
        .next()
        .unwrap_or_default();
    matches!(content, ToolResultContent::Text(t) if t.starts_with(prefix))
}

/// The ids [`Transcript::clear_tool_results`] clears, oldest first.
fn pick_results_to_clear(
    msgs: &[Arc<Message>],
    keep_recent: usize,
    min_bytes: usize,
    need: usize,
) -> Vec<String> {
    let results: Vec<&ToolResult> = msgs
        .iter()
        .filter(|m| m.role == Role::User)
        .flat_map(|m| m.content.iter())
        .filter_map(|b| match b {
            ContentBlock::ToolResult(r) => Some(r),
            _ => None,
        })
        .collect();
    let candidates = results.len().saturating_sub(keep_recent);
    let mut freed = 0;
    let mut ids = Vec::new();
    for r in &results[..candidates] {
        if freed >= need {
            break;
        }
        let bytes = result_bytes(&r.content);
        if bytes <= min_bytes || is_cleared(&r.content) {
            continue;
        }
        freed += bytes;
        ids.push(r.tool_use_id.clone());
    }
    ids
}

/// Replaces the output of the results with these ids by
/// [`TOOL_RESULT_CLEARED`] naming their tool.
fn clear_results(msgs: &mut [Arc<Message>], ids: &[String]) -> Vec<ClearedResult> {
    let calls: HashMap<String, ToolUse> = msgs
        .iter()
        .flat_map(|m| m.tool_uses())
        .map(|u| (u.id.clone(), u.clone()))
        .collect();
    let answers = |m: &Arc<Message>| {
        m.role == Role::User
            && m.content
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolResult(r) if ids.contains(&r.tool_use_id)))
    };
    let mut out = Vec::new();
    for block in msgs
        .iter_mut()
        .filter(|m| answers(m))
        .flat_map(|m| Arc::make_mut(m).content.iter_mut())
    {
        let ContentBlock::ToolResult(r) = block else {
            continue;
        };
        if !ids.contains(&r.tool_use_id) {
            continue;
        }
        let call = calls
            .get(&r.tool_use_id)
            .cloned()
            .unwrap_or_else(|| ToolUse {
                id: r.tool_use_id.clone(),
                name: "tool".into(),
                input: serde_json::json!({}),
                extra: Default::default(),
            });
        let bytes = result_bytes(&r.content);
        r.content = ToolResultContent::Text(fill(TOOL_RESULT_CLEARED, &[("tool", &call.name)]));
        out.push(ClearedResult { call, bytes });
    }
    out
}

/// Deep copies of `msgs`.
fn owned(msgs: &[Arc<Message>]) -> Vec<Message> {
    msgs.iter().map(|m| Message::clone(m)).collect()
}

/// Whether `messages` satisfy the pairing rule as they are (what
/// [`repair_pairing`] would leave unchanged), looked at without copying.
fn is_paired(messages: &[Arc<Message>]) -> bool {
    messages.iter().enumerate().all(|(i, m)| {
        if m.role != Role::Assistant {
            return true;
        }
        let mut uses = m.tool_uses().peekable();
        if uses.peek().is_none() {
            return true;
        }
        let Some(next) = messages.get(i + 1).filter(|n| n.role == Role::User) else {
            return false;
        };
        let mut results = next.content.iter().map(|b| match b {
            ContentBlock::ToolResult(r) => Some(r.tool_use_id.as_str()),
            _ => None,
        });
        uses.all(|u| results.next() == Some(Some(u.id.as_str()))) && results.all(|r| r.is_none())
    })
}

/// Makes `messages` satisfy the pairing rule: after every assistant message
/// with `tool_use` blocks comes a user message that starts with one
/// `tool_result` per `tool_use`, in order. Missing results are added as
/// "interrupted" errors; existing ones are moved to the front in call order.
pub fn repair_pairing(messages: &mut Vec<Message>) {
    let mut i = 0;
    while i < messages.len() {
        let uses: Vec<_> = messages[i].tool_uses().cloned().collect();
        if messages[i].role != Role::Assistant || uses.is_empty() {
            i += 1;
            continue;
        }
        if messages.get(i + 1).is_none_or(|m| m.role != Role::User) {
            messages.insert(
                i + 1,
                Message {
                    role: Role::User,
                    content: Vec::new(),
                },
            );
        }
        let next = &mut messages[i + 1];
        let mut rest = Vec::new();
        let mut found: Vec<ToolResult> = Vec::new();
        for block in next.content.drain(..) {
            match block {
                ContentBlock::ToolResult(r) => found.push(r),
                other => rest.push(other),
            }
        }
        let mut content: Vec<ContentBlock> = uses
            .iter()
            .map(|u| {
                let r = found
                    .iter()
                    .position(|r| r.tool_use_id == u.id)
                    .map(|p| found.remove(p))
                    .unwrap_or_else(|| interrupted_result(u));
                ContentBlock::ToolResult(r)
            })
            .collect();
        content.extend(rest);
        next.content = content;
        i += 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ToolResultContent, ToolUse};
    use serde_json::json;

    fn assistant_with(ids: &[&str]) -> Message {
        Message {
            role: Role::Assistant,
            content: ids
                .iter()
                .map(|id| {
                    ContentBlock::ToolUse(ToolUse {
                        id: id.to_string(),
                        name: "Read".into(),
                        input: json!({}),
                        extra: Default::default(),
                    })
                })
                .collect(),
        }
    }

    fn result_ids(m: &Message) -> Vec<String> {
        m.content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolResult(r) => Some(r.tool_use_id.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn missing_results_are_added_in_order() {
        let mut msgs = vec![Message::user_text("hi"), assistant_with(&["a", "b"])];
        repair_pairing(&mut msgs);
        assert_eq!(msgs.len(), 3);
        assert_eq!(result_ids(&msgs[2]), vec!["a", "b"]);
        assert!(matches!(&msgs[2].content[0], ContentBlock::ToolResult(r) if r.is_error));
    }

    #[test]
    fn results_move_before_text_and_follow_call_order() {
        let tr = |id: &str| {
            ContentBlock::ToolResult(ToolResult {
                tool_use_id: id.into(),
                content: ToolResultContent::Text("ok".into()),
                is_error: false,
            })
        };
        let mut msgs = vec![
            Message::user_text("hi"),
            assistant_with(&["a", "b"]),
            Message {
                role: Role::User,
                content: vec![
                    ContentBlock::Text {
                        text: "more".into(),
                    },
                    tr("b"),
                    tr("a"),
                ],
            },
        ];
        repair_pairing(&mut msgs);
        assert_eq!(result_ids(&msgs[2]), vec!["a", "b"]);
        assert!(matches!(&msgs[2].content[2], ContentBlock::Text { text } if text == "more"));
    }

    #[test]
    fn the_oldest_big_results_are_cleared_pairing_kept_and_the_newest_kept() {
        let tr = |id: &str, text: &str| {
            ContentBlock::ToolResult(ToolResult {
                tool_use_id: id.into(),
                content: ToolResultContent::Text(text.into()),
                is_error: false,
            })
        };
        let t = Transcript::default();
        t.push_user_text("go");
        for (id, size) in [("a", 5000), ("b", 10), ("c", 5000), ("d", 5000)] {
            t.push_assistant(assistant_with(&[id]));
            t.push_tool_results(vec![match tr(id, &"x".repeat(size)) {
                ContentBlock::ToolResult(r) => r,
                _ => unreachable!(),
            }]);
        }
        // Need 6000 bytes, keep the newest result: a and c go, b is too
        // small to be worth it, d is the newest.
        let cleared = t.clear_tool_results(1, 100, 6000);
        let ids: Vec<_> = cleared.iter().map(|c| c.call.id.as_str()).collect();
        assert_eq!(ids, ["a", "c"]);
        assert_eq!(cleared[0].call.name, "Read");
        let msgs = t.snapshot();
        assert_eq!(result_ids(&msgs[2]), vec!["a"], "pairing kept");
        assert!(matches!(&msgs[2].content[0], ContentBlock::ToolResult(r)
            if r.content.as_text() == "The output of this Read call was cleared from the conversation to keep it within the model's context window. Call Read again if you still need it."));
        assert!(t.clear_tool_results(1, 100, 6000).is_empty(), "never twice");
        t.push_user_text("next");
        t.withdraw_user_blocks(1);
        assert_eq!(t.snapshot(), msgs, "the withdrawn prompt is gone");
    }

    #[test]
    fn user_text_after_tool_results_joins_that_message() {
        let t = Transcript::default();
        t.push_user_text("first");
        t.push_assistant(assistant_with(&["a"]));
        t.push_user_text("second");
        let msgs = t.snapshot();
        assert_eq!(msgs.len(), 3);
        assert_eq!(result_ids(&msgs[2]), vec!["a"]);
        assert!(matches!(&msgs[2].content[1], ContentBlock::Text { text } if text == "second"));
    }
}
