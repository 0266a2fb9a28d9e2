//! The turn's side of context and compaction (docs/context-and-compaction.md,
//! "Context and compaction"): fitting each request into the window,
//! compacting through the provider, re-reading files. The state, texts and
//! pure steps are in `agent::compact`.

use std::sync::Arc;

use serde_json::json;

use super::Turn;
use crate::agent::compact::*;
use crate::agent::transcript::{repair_pairing, result_bytes};
use crate::events::{AgentEvent, NullSink};
use crate::execution::{run_tool_use, PendingToolUse};
use crate::protocol::{ContentBlock, Message, MessagesRequest, Role, ToolUse};
use crate::provider::hints::user_message;
use crate::provider::retry::RetryPolicy;
use crate::text::fill;

impl Turn {
    /// Tells the chat how full the window is now.
    pub(crate) fn emit_meter(&self) {
        if let Some(m) = self.context.meter() {
            self.sink.emit(AgentEvent::Context {
                used: m.used,
                window: m.window,
            });
        }
    }

    /// Sets the meter to `used` tokens and tells the chat: the winbar,
    /// the statusline and `status()` show the same figure after every
    /// change, a refused request's too.
    pub(crate) fn set_meter(&self, used: u64) {
        self.context.set_used(used);
        self.emit_meter();
    }

    /// The meter set to the estimate of the conversation as it is now
    /// (after a refused prompt was taken out).
    pub(crate) fn refresh_meter(&self) {
        self.set_meter(self.context.estimate(request_bytes(&self.build_request())));
    }

    /// The context window: `setup{ context_window }`, else what the
    /// server publishes, else the model id's; asked once per session.
    pub(crate) async fn window(&self) -> u64 {
        if let Some(w) = self.context.known_window() {
            return w;
        }
        let w = match self.config.context_window {
            Some(w) => w,
            None => {
                let model = self.model();
                match self.provider.context_window(&model).await {
                    Some(w) => w,
                    None => crate::provider::window::for_model(&model),
                }
            }
        };
        self.context.set_window(w);
        w
    }

    /// The next request's body from the transcript as it is now.
    pub(crate) fn build_request(&self) -> MessagesRequest {
        MessagesRequest {
            model: self.model(),
            max_tokens: self.max_tokens.load(std::sync::atomic::Ordering::Relaxed),
            system: crate::agent::system_prompt::for_mode(
                &self.system,
                self.env.permissions.mode(),
            ),
            messages: super::with_context(
                self.transcript.shared(),
                &self.project_context,
                &self.first_with_context,
            ),
            tools: self.env.registry.definitions(),
            stream: true,
        }
    }

    /// Before every request: when `req` would fill the `auto_compact`
    /// share of the window, clears old tool results and, if that is not
    /// enough, compacts; returns the request to send (rebuilt when the
    /// conversation changed) and whether a compaction was tried and
    /// failed (already told: the same conversation is not compacted again
    /// for this request).
    pub(crate) async fn fit_window(&self, req: MessagesRequest) -> (MessagesRequest, bool) {
        let window = self.window().await;
        let bytes = self.provider.request_bytes(&req);
        let estimate = self.context.estimate(bytes);
        self.set_meter(estimate);
        let Some(permille) = self.config.auto_compact_permille else {
            return (req, false);
        };
        let threshold = window * u64::from(permille) / 1000;
        if estimate <= threshold || !self.context.auto_allowed() {
            return (req, false);
        }
        // Cheap first: clear the oldest large tool results.
        let target = threshold * CLEAR_TARGET_PERMILLE / 1000;
        let need = (estimate - target).saturating_mul(bytes) / estimate.max(1);
        let cleared = self.transcript.clear_tool_results(
            KEEP_RECENT_RESULTS,
            MIN_CLEAR_BYTES,
            usize::try_from(need).unwrap_or(usize::MAX),
        );
        let mut req = req;
        if !cleared.is_empty() {
            for c in cleared.iter().filter(|c| c.call.name == "Read") {
                if let Some(p) = c.call.input.get("file_path").and_then(|v| v.as_str()) {
                    let path = crate::tools::support::paths::resolve(&self.env.ctx.root, p);
                    self.env.ctx.file_state.mark_gone(&path);
                }
            }
            req = self.build_request();
            let after = self.context.estimate(self.provider.request_bytes(&req));
            self.context.set_used(after);
            // Told below, after the notice.
            let n = crate::text::plural(cleared.len(), "old tool call", "old tool calls");
            self.notice(
                fill(
                    CLEARED_NOTICE,
                    &[
                        ("n", &n),
                        ("before", &short(estimate)),
                        ("after", &short(after)),
                    ],
                ),
                false,
            );
            self.emit_meter();
            if after <= threshold {
                return (req, false);
            }
        }
        match self.compact(None).await {
            Ok(()) => (self.build_request(), false),
            Err(error) => {
                self.notice(fill(COMPACT_FAILED, &[("error", &error)]), true);
                if self.context.failed() {
                    self.notice(AUTO_COMPACT_OFF.to_string(), true);
                }
                (req, true)
            }
        }
    }

    /// Compacts the conversation now (`focus`: what the summary should
    /// keep above all): a summary request through the session's provider,
    /// then the conversation replaced by one user message (the summary,
    /// the files read last re-read, the user's latest messages). The chat
    /// is told (`AgentEvent::Compacted`). Errors: the user-facing reason.
    pub(crate) async fn compact(&self, focus: Option<&str>) -> Result<(), String> {
        let window = self.window().await;
        let history = self.transcript.snapshot();
        if history.is_empty() {
            return Err(NOTHING_TO_COMPACT.to_string());
        }
        let before = self.context.estimate(request_bytes(&self.build_request()));
        let summary = self.summarize(history.clone(), focus, window).await?;
        // The model keeps none of what it read: each file's stamp stays
        // for the stale rule, its text is gone until read again.
        self.env.ctx.file_state.mark_all_gone();
        let mut blocks = vec![ContentBlock::Text {
            text: fill(COMPACTED_INTRO, &[("summary", &summary)]),
        }];
        blocks.extend(self.reattach(window).await);
        let budget = (RECENT_USER_TOKENS.min(window / 20) * 4) as usize;
        let recent = recent_user_messages(&history, budget);
        if !recent.is_empty() {
            let messages = recent
                .iter()
                .map(|m| format!("<user-message>\n{m}\n</user-message>"))
                .collect::<Vec<_>>()
                .join("\n");
            blocks.push(ContentBlock::Text {
                text: fill(RECENT_USER_MESSAGES, &[("messages", &messages)]),
            });
        }
        let compacted = vec![Message {
            role: Role::User,
            content: blocks,
        }];
        let mut probe = self.build_request();
        probe.messages = compacted.iter().cloned().map(Arc::new).collect();
        let after = self.context.estimate(request_bytes(&probe));
        self.transcript
            .replace_compacted(compacted, before, after, &summary);
        self.context.set_used(after);
        self.context.succeeded();
        self.emit_meter();
        self.sink.emit(AgentEvent::Compacted {
            before,
            after,
            summary,
        });
        Ok(())
    }

    /// The summary of `history`, asked of the provider; the oldest
    /// messages are trimmed while the request is too long for the window.
    async fn summarize(
        &self,
        mut history: Vec<Message>,
        focus: Option<&str>,
        window: u64,
    ) -> Result<String, String> {
        let mut prompt = COMPACT_PROMPT.to_string();
        if let Some(f) = focus.map(str::trim).filter(|f| !f.is_empty()) {
            prompt.push_str(&fill(COMPACT_FOCUS, &[("focus", f)]));
        }
        let policy = RetryPolicy::from_config(&self.config);
        let mut attempt = 1;
        let mut shrink = Shrink {
            result_chars: SUMMARY_RESULT_CHARS,
            trims: 0,
        };
        loop {
            let req = self.summary_request(&history, &prompt);
            let fits = self.context.estimate(request_bytes(&req)) <= window * 95 / 100;
            if !fits {
                if !shrink.step(&mut history) {
                    return Err(CANNOT_TRIM.to_string());
                }
                continue;
            }
            let req = crate::provider::validate::prepare(req)
                .map_err(|e| user_message(&e, &self.config.api_key_env))?;
            let answer = tokio::select! {
                r = self.provider.complete(&req) => r,
                _ = self.cancel.cancelled() => return Err("stopped".into()),
            };
            match answer {
                Ok(response) => {
                    // A summary request is spent like any other.
                    self.add_usage(&response.usage);
                    let text: String = response
                        .content
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text { text } => Some(text.as_str()),
                            _ => None,
                        })
                        .collect::<Vec<_>>()
                        .join("\n");
                    let summary = summary_of(&text);
                    if summary.is_empty() {
                        return Err(EMPTY_SUMMARY.to_string());
                    }
                    return Ok(summary);
                }
                Err(e) if is_context_overflow(&e) => {
                    if !shrink.step(&mut history) {
                        return Err(CANNOT_TRIM.to_string());
                    }
                }
                Err(e) => {
                    let Some(wait) = policy.next_delay(attempt, &e) else {
                        return Err(user_message(&e, &self.config.api_key_env));
                    };
                    attempt += 1;
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = self.cancel.cancelled() => return Err("stopped".into()),
                    }
                }
            }
        }
    }

    fn summary_request(&self, history: &[Message], prompt: &str) -> MessagesRequest {
        let mut messages = history.to_vec();
        repair_pairing(&mut messages);
        let text = ContentBlock::Text {
            text: prompt.to_string(),
        };
        match messages.last_mut() {
            Some(last) if last.role == Role::User => last.content.push(text),
            _ => messages.push(Message {
                role: Role::User,
                content: vec![text],
            }),
        }
        MessagesRequest {
            model: self.model(),
            max_tokens: self.config.max_tokens,
            system: COMPACT_SYSTEM.to_string(),
            messages: messages.into_iter().map(Arc::new).collect(),
            // The same tools: the history has their calls (and the prompt
            // cache its prefix); the prompt asks for text only.
            tools: self.env.registry.definitions(),
            stream: false,
        }
    }

    /// The files the model read (or wrote) last, read again through the
    /// Read tool (no permission asked: a call that would need one is left
    /// out), within [`REATTACH_FILES`], [`REATTACH_FILE_TOKENS`] each and
    /// [`REATTACH_TOKENS`] (at most a tenth of the window) in all, newest
    /// first. A file too long for what is left is re-read in part: its
    /// first lines that fit ([`reattach_limit`]; Read's own trailer says
    /// where it continues), so the file the model read last comes back
    /// even in a small window. A file left out is marked gone: its stamp
    /// stays, its text is not in the conversation.
    async fn reattach(&self, window: u64) -> Vec<ContentBlock> {
        let file_state = &self.env.ctx.file_state;
        let mut env = self.env.clone();
        env.interactive = false;
        env.sink = Arc::new(NullSink);
        let mut left = (REATTACH_TOKENS.min(window / 10) * 4) as usize;
        let per_file = (REATTACH_FILE_TOKENS * 4) as usize;
        let mut out = Vec::new();
        for (i, (path, record)) in file_state
            .recent()
            .into_iter()
            .take(REATTACH_FILES)
            .enumerate()
        {
            let id = format!("toolu_lathe_reattach_{}", i + 1);
            let first = record.offset.filter(|o| *o > 1);
            let mut input = json!({ "file_path": path.display().to_string() });
            if record.limit.is_some() || first.is_some() {
                input["offset"] = json!(first.unwrap_or(1));
                if let Some(l) = record.limit {
                    input["limit"] = json!(l);
                }
            }
            let room = per_file.min(left);
            let mut read = reread(&env, &id, &input).await;
            let mut part = false;
            // Too long whole: its first lines that fit, at most three
            // tries (lines are not all as long).
            for _ in 0..3 {
                let Some((text, _)) = read.as_ref().filter(|(_, size)| *size > room) else {
                    break;
                };
                let shown = record.limit.unwrap_or(usize::MAX);
                let Some(limit) = reattach_limit(text, room).filter(|l| *l < shown) else {
                    read = None;
                    break;
                };
                input["offset"] = json!(first.unwrap_or(1));
                input["limit"] = json!(limit);
                read = reread(&env, &id, &input).await;
                part = true;
            }
            let Some((text, size)) = read.filter(|(_, size)| *size <= room) else {
                // Not shown to the model: its stamp stays, its text is gone.
                file_state.mark_gone(&path);
                continue;
            };
            left -= size;
            let shown = crate::tools::support::paths::display(&self.env.ctx.root, &path);
            let template = if part {
                REATTACHED_PART
            } else {
                REATTACHED_FILE
            };
            out.push(ContentBlock::Text {
                text: fill(template, &[("path", &shown), ("content", &text)]),
            });
        }
        out
    }
}

/// `input` read again through the Read tool: its text and size, `None`
/// when it failed or is not text (an image).
async fn reread(
    env: &crate::execution::ExecEnv,
    id: &str,
    input: &serde_json::Value,
) -> Option<(String, usize)> {
    let call = PendingToolUse::from(ToolUse {
        id: id.to_string(),
        name: "Read".into(),
        input: input.clone(),
        extra: Default::default(),
    });
    let result = run_tool_use(&call, env).await.result;
    let size = result_bytes(&result.content);
    let text = result.content.as_text();
    (!result.is_error && size == text.len()).then_some((text, size))
}

/// How a summary request too long for the window is made shorter: first
/// each tool result cut shorter (halved from [`SUMMARY_RESULT_CHARS`]
/// down to [`SUMMARY_RESULT_FLOOR`]: one turn that read more than the
/// window holds is still summarized), then the oldest messages left out
/// ([`trim_oldest`], at most [`MAX_TRIMS`] times).
struct Shrink {
    result_chars: usize,
    trims: usize,
}

impl Shrink {
    /// One step shorter; `false` when nothing is left to shorten.
    fn step(&mut self, history: &mut Vec<Message>) -> bool {
        while self.result_chars >= SUMMARY_RESULT_FLOOR {
            let cut = shorten_results(history, self.result_chars);
            self.result_chars /= 2;
            if cut {
                return true;
            }
        }
        self.trims += 1;
        self.trims <= MAX_TRIMS && trim_oldest(history)
    }
}
