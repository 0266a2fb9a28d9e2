//! The tool executor: concurrency-safe batches, started as early as possible.
//!
//! Calls are added in the model's order — while the answer still streams (a
//! `tool_use` is added the moment its `content_block_stop` arrives) or all at
//! once after it. A call starts when nothing unsafe is running and, if it is
//! unsafe itself, when nothing at all is running; a queued unsafe call blocks
//! every call after it from jumping ahead. So adjacent concurrency-safe calls
//! form one batch (at most `max_concurrency` at once) and an unsafe call is a
//! batch of its own: Grep A, Read B, Edit C, Grep D run as [A, B] → [C] → [D]
//! (Claude Code's `partitionToolCalls` and streaming tool executor).
//!
//! Calls of a batch run on staged copies of the read-file state and the
//! permission grants; the batch commits them in call order when it ends, so
//! the final state never depends on which call finished first. Every call
//! goes through the same gates ([`run_checked`](super::run_checked), on the
//! [`CheckedCall`] made when the call was added and classified): streaming
//! changes when a tool starts, never its checks or its result.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::task::{Id, JoinError, JoinSet};
use tokio_util::sync::CancellationToken;

use crate::events::{AgentEvent, ToolStatus};
use crate::permissions::{PermissionState, QueuedChange};
use crate::protocol::{ToolResult, ToolResultContent, ToolUse};
use crate::tools::FileState;

use super::messages::{SIBLING_FAILED, TOOL_PANICKED};
use super::{
    not_run_result, run_checked, AnswerState, CheckedCall, ExecEnv, PendingToolUse, ToolRun,
};
use crate::text::fill;

/// One batch of [`partition_tool_calls`]: indexes into the calls, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// `true` for a run of concurrency-safe calls; `false` for one unsafe call.
    pub concurrent: bool,
    /// Indexes of the calls, in the model's order.
    pub calls: Vec<usize>,
}

/// Splits `calls` into the batches the executor runs them in (adjacent safe
/// calls together, each unsafe call alone), in order. Pure: used to plan and
/// to explain; [`ToolExecutor`] applies the same rule as calls arrive.
pub fn partition_tool_calls(calls: &[PendingToolUse], env: &ExecEnv) -> Vec<Batch> {
    let mut batches: Vec<Batch> = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        let safe = CheckedCall::new(call.clone(), env).is_concurrency_safe();
        match batches.last_mut() {
            Some(b) if safe && b.concurrent => b.calls.push(i),
            _ => batches.push(Batch {
                concurrent: safe,
                calls: vec![i],
            }),
        }
    }
    batches
}

struct Entry {
    /// The `tool_use`, for the interrupted result of a call that never ran.
    tool_use: ToolUse,
    /// Gates 1–3's outcome, taken when the call starts.
    checked: Option<CheckedCall>,
    safe: bool,
    run: Option<ToolRun>,
    staged: Option<(Arc<FileState>, Arc<PermissionState>)>,
}

/// The running batch of safe calls: its cancellation token (a child of the
/// turn's, cancelled when a Bash call of the batch fails) and its members.
struct Group {
    cancel: CancellationToken,
    members: Vec<usize>,
}

/// Runs the tool calls of one assistant message (see the module docs).
pub struct ToolExecutor {
    env: ExecEnv,
    max_concurrency: usize,
    entries: Vec<Entry>,
    next_to_start: usize,
    running: JoinSet<(usize, ToolRun)>,
    running_ids: HashMap<Id, usize>,
    running_unsafe: bool,
    group: Option<Group>,
}

impl ToolExecutor {
    /// An executor running calls with `env` (whose `ctx.cancel` is the turn's
    /// token), at most `max_concurrency` (≥ 1) at once.
    pub fn new(mut env: ExecEnv, max_concurrency: usize) -> Self {
        // A new answer: its calls share a fresh state (the `Y` grant of
        // the answer before does not carry over).
        env.answer = AnswerState::default();
        Self {
            env,
            max_concurrency: max_concurrency.max(1),
            entries: Vec::new(),
            next_to_start: 0,
            running: JoinSet::new(),
            running_ids: HashMap::new(),
            running_unsafe: false,
            group: None,
        }
    }

    /// Queues `call` after the calls already added and starts whatever may
    /// start now. Must be called inside a tokio runtime.
    pub fn add(&mut self, call: PendingToolUse) {
        let tool_use = call.tool_use.clone();
        let checked = CheckedCall::new(call, &self.env);
        let safe = checked.is_concurrency_safe();
        let detail = checked.detail(&self.env.ctx.root);
        let (id, name) = (tool_use.id.clone(), tool_use.name.clone());
        if let Ok(prepared) = &checked.prepared {
            if !prepared.is_read_only() {
                let tool = prepared.tool().name().to_string();
                self.env.answer.add_change(
                    &id,
                    QueuedChange {
                        title: format!("{tool} {detail}"),
                        tool,
                        path: prepared.target_path(),
                        input: prepared.input_json.clone(),
                    },
                );
            }
        }
        self.entries.push(Entry {
            tool_use,
            checked: Some(checked),
            safe,
            run: None,
            staged: None,
        });
        self.start_ready();
        // Still waiting behind an unsafe call or a full batch: say so, so
        // the chat shows it queued rather than not at all.
        if self.next_to_start < self.entries.len() {
            self.env
                .sink
                .emit(AgentEvent::ToolQueued { id, name, detail });
        }
    }

    /// Every call of the answer is added (its stream ended). A changing
    /// call that asks waits for this, so it can count the answer's
    /// changes ([`AnswerState::asking`]); [`ToolExecutor::finish`] and
    /// [`ToolExecutor::abandon`] (which the turn calls once the stream
    /// ended) say it first.
    pub fn stream_ended(&self) {
        self.env.answer.complete();
    }

    /// How many calls have started (running or finished): once this is
    /// above 0, side effects may have happened.
    pub fn started(&self) -> usize {
        self.next_to_start.min(self.entries.len())
    }

    /// `true` while any call is running.
    pub fn has_running(&self) -> bool {
        !self.running.is_empty()
    }

    /// Waits for one running call to finish and starts what may start next.
    /// Returns at once when nothing runs.
    pub async fn next(&mut self) {
        if let Some(done) = self.running.join_next_with_id().await {
            self.complete(done);
        }
        self.start_ready();
    }

    /// Runs every queued call to its end (queued calls after an interrupt get
    /// interrupted results without running) and returns one `tool_result`
    /// per call, in call order.
    pub async fn finish(mut self) -> Vec<ToolResult> {
        self.stream_ended();
        loop {
            self.start_ready();
            if self.running.is_empty() {
                break;
            }
            self.next().await;
        }
        self.commit_group();
        // Calls that never started ask nothing more either.
        self.env.prompter.settled();
        self.entries
            .into_iter()
            .map(|e| match e.run {
                Some(run) => run.result,
                None => {
                    let result = not_run_result(&e.tool_use);
                    self.env.sink.emit(AgentEvent::ToolFinished {
                        id: e.tool_use.id.clone(),
                        name: e.tool_use.name.clone(),
                        status: ToolStatus::Interrupted,
                        summary: "interrupted before it started".into(),
                        content: result.content.as_text(),
                        display: None,
                    });
                    result
                }
            })
            .collect()
    }

    /// Gives up on the calls: queued ones never start, running ones are
    /// awaited (their results dropped). Returns how many calls ran.
    pub async fn abandon(mut self) -> usize {
        self.stream_ended();
        self.next_to_start = self.entries.len();
        while let Some(done) = self.running.join_next_with_id().await {
            self.complete(done);
        }
        self.commit_group();
        self.env.prompter.settled();
        self.entries.iter().filter(|e| e.run.is_some()).count()
    }

    fn start_ready(&mut self) {
        while self.next_to_start < self.entries.len() {
            if self.env.ctx.cancel.is_cancelled() || self.running_unsafe {
                return;
            }
            let i = self.next_to_start;
            if self.entries[i].safe {
                if self.running.len() >= self.max_concurrency {
                    return;
                }
                self.start_in_group(i);
            } else {
                if !self.running.is_empty() {
                    return;
                }
                self.commit_group();
                self.running_unsafe = true;
                let env = self.env.clone();
                self.spawn(i, env);
            }
            self.next_to_start += 1;
        }
    }

    fn start_in_group(&mut self, i: usize) {
        let turn_cancel = self.env.ctx.cancel.clone();
        let group = self.group.get_or_insert_with(|| Group {
            cancel: turn_cancel.child_token(),
            members: Vec::new(),
        });
        group.members.push(i);
        let mut env = self.env.clone();
        let files = Arc::new(FileState::staged(&self.env.ctx.file_state));
        let perms = Arc::new(PermissionState::staged(&self.env.permissions));
        env.ctx.file_state = files.clone();
        env.ctx.cancel = group.cancel.clone();
        env.permissions = perms.clone();
        self.entries[i].staged = Some((files, perms));
        self.spawn(i, env);
    }

    fn spawn(&mut self, i: usize, env: ExecEnv) {
        let checked = self.entries[i].checked.take();
        let tool_use = self.entries[i].tool_use.clone();
        let handle = self.running.spawn(async move {
            let run = match checked {
                Some(checked) => run_checked(checked, &env).await,
                // Each entry starts once; should that ever break, the call
                // still gets its result instead of hanging the batch.
                None => internal_error_run(&tool_use, "the call was started twice"),
            };
            (i, run)
        });
        self.running_ids.insert(handle.id(), i);
    }

    fn complete(&mut self, done: Result<(Id, (usize, ToolRun)), JoinError>) {
        let (i, mut run) = match done {
            Ok((id, (i, run))) => {
                self.running_ids.remove(&id);
                (i, run)
            }
            Err(e) => {
                // run_tool_use catches panics, so this is a runtime shutdown
                // or abort; the call still gets its result.
                let Some(i) = self.running_ids.remove(&e.id()) else {
                    return;
                };
                (
                    i,
                    internal_error_run(&self.entries[i].tool_use, &e.to_string()),
                )
            }
        };
        if !self.entries[i].safe {
            self.running_unsafe = false;
        } else if let Some(group) = &self.group {
            let turn_cancelled = self.env.ctx.cancel.is_cancelled();
            if run.status == ToolStatus::Interrupted
                && group.cancel.is_cancelled()
                && !turn_cancelled
            {
                run.status = ToolStatus::Error;
                run.result.is_error = true;
                run.result.content =
                    ToolResultContent::Text(fill(SIBLING_FAILED, &[("tool", &run.name)]));
            } else if run.name == "Bash" && run.result.is_error && !turn_cancelled {
                group.cancel.cancel();
            }
        }
        let id = self.entries[i].tool_use.id.clone();
        self.entries[i].run = Some(run);
        if self.env.answer.finished(&id) {
            self.env.prompter.settled();
        }
    }

    /// Ends the current batch: applies its staged state in call order.
    fn commit_group(&mut self) {
        if let Some(group) = self.group.take() {
            for i in group.members {
                if let Some((files, perms)) = self.entries[i].staged.take() {
                    files.commit();
                    perms.commit();
                }
            }
        }
    }
}

/// The error result of a call whose task never produced one (`detail` says
/// why), so no `tool_use` goes without its `tool_result`.
fn internal_error_run(call: &ToolUse, detail: &str) -> ToolRun {
    ToolRun {
        result: ToolResult {
            tool_use_id: call.id.clone(),
            content: ToolResultContent::Text(fill(
                TOOL_PANICKED,
                &[("tool", &call.name), ("detail", detail)],
            )),
            is_error: true,
        },
        name: call.name.clone(),
        status: ToolStatus::Error,
        summary: "failed".into(),
        decision: None,
    }
}
