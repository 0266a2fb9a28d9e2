//! A saved session brought back: its records replayed into a transcript
//! (through the same operations that made it), the pairing repaired, the
//! token counts restored, and the [`AgentEvent`]s that draw the
//! conversation in a chat as it was shown (`:help lathe-sessions`).

use std::collections::HashMap;

use super::session_log::{outcome_of, status_of, Record};
use super::transcript::Transcript;
use crate::events::{AgentEvent, ToolStatus, TurnOutcome};
use crate::protocol::{ContentBlock, Message, Usage};

/// Summary of a tool line whose call never got a result (the session
/// ended in the middle of a turn).
pub const NO_RESULT_SUMMARY: &str = "no result: the session ended while it ran";

/// What [`restore`] makes of a session's records.
pub(crate) struct Restored {
    /// The conversation, pairing repaired.
    pub messages: Vec<Message>,
    /// Whether the repair added or moved `tool_result`s.
    pub repaired: bool,
    /// The session's token counts at its last turn's end.
    pub usage: Usage,
    /// Events that draw the conversation in a chat.
    pub events: Vec<AgentEvent>,
    /// The last saved record of the files the model read.
    pub files: Vec<super::session_log::FileStamp>,
    /// The note of a rewind after the last prompt (the next prompt tells
    /// the model).
    pub rewind_note: Option<String>,
    /// The model of the last `Record::Model` (the last switch), if any.
    pub model: Option<String>,
    /// Nested memory files already added to the conversation.
    pub memory: Vec<std::path::PathBuf>,
}

/// Replays `records` (see `session_log`).
pub(crate) fn restore(records: &[Record]) -> Restored {
    let transcript = Transcript::default();
    let mut usage = Usage::default();
    let mut details: HashMap<&str, &str> = HashMap::new();
    let mut done: HashMap<&str, (&str, &str, &Option<String>)> = HashMap::new();
    let mut model = None;
    let mut memory = Vec::new();
    for r in records {
        match r {
            Record::ToolStart { id, detail, .. } => {
                details.insert(id, detail);
            }
            Record::ToolDone {
                id,
                status,
                summary,
                display,
            } => {
                done.insert(id, (status, summary, display));
            }
            _ => {}
        }
    }
    let mut events = Vec::new();
    let mut files = Vec::new();
    let mut turn_open = false;
    // An error notice was shown in the open turn.
    let mut error_shown = false;
    // Calls shown as started and not finished yet: id → name.
    let mut open_calls: Vec<(String, String)> = Vec::new();
    // Where each checkpoint's prompt begins in the chat's events.
    let mut checkpoint_at: HashMap<u64, usize> = HashMap::new();
    // A rewind's note no prompt has carried to the model yet.
    let mut rewind_note: Option<String> = None;
    // The prompt as the chat showed it (a command line as typed), from the
    // checkpoint its turn opened, until that turn's user message.
    let mut shown_prompt: Option<String> = None;
    for r in records {
        match r {
            Record::User { text, blocks } => {
                rewind_note = None;
                let blocks = if blocks.is_empty() {
                    vec![ContentBlock::Text { text: text.clone() }]
                } else {
                    blocks.clone()
                };
                transcript.push_user_blocks(text, blocks);
                if turn_open {
                    close_turn(
                        &mut events,
                        &mut open_calls,
                        &mut error_shown,
                        TurnOutcome::Stopped,
                    );
                }
                events.push(AgentEvent::TurnStarted {
                    prompt: shown_prompt.take().unwrap_or_else(|| text.clone()),
                });
                turn_open = true;
            }
            Record::Assistant { message } => {
                transcript.push_assistant(message.clone());
                events.push(AgentEvent::AssistantStarted);
                for block in &message.content {
                    match block {
                        ContentBlock::Text { text } => {
                            events.push(AgentEvent::TextDelta { text: text.clone() })
                        }
                        // Cited text (kept as JSON with its citations).
                        ContentBlock::Opaque(v) if block.kind() == "text" => {
                            if let Some(text) = v.get("text").and_then(serde_json::Value::as_str) {
                                events.push(AgentEvent::TextDelta {
                                    text: text.to_string(),
                                })
                            }
                        }
                        ContentBlock::ToolUse(u) => {
                            events.push(AgentEvent::ToolStarted {
                                id: u.id.clone(),
                                name: u.name.clone(),
                                detail: details.get(u.id.as_str()).unwrap_or(&"").to_string(),
                                input: u.input.clone(),
                            });
                            open_calls.push((u.id.clone(), u.name.clone()));
                        }
                        _ => {}
                    }
                }
            }
            Record::ToolResults { results } => {
                transcript.push_tool_results(results.clone());
                for result in results {
                    let name = open_calls
                        .iter()
                        .position(|(id, _)| *id == result.tool_use_id)
                        .map(|p| open_calls.remove(p).1)
                        .unwrap_or_default();
                    let (status, summary, display) = match done.get(result.tool_use_id.as_str()) {
                        Some((s, m, d)) => (status_of(s), m.to_string(), (*d).clone()),
                        None if result.is_error => (ToolStatus::Error, String::new(), None),
                        None => (ToolStatus::Done, String::new(), None),
                    };
                    events.push(AgentEvent::ToolFinished {
                        id: result.tool_use_id.clone(),
                        name,
                        status,
                        summary,
                        content: result.content.as_text(),
                        display,
                    });
                }
            }
            Record::Truncate { len } => {
                transcript.truncate(*len);
                events.push(AgentEvent::AssistantWithdrawn {
                    reason: "refused".into(),
                });
            }
            Record::TurnEnd {
                outcome,
                error,
                turn,
                session,
            } => {
                usage = session.clone();
                if turn_open {
                    events.push(AgentEvent::Usage {
                        turn: turn.clone(),
                        session: session.clone(),
                    });
                    close_turn(
                        &mut events,
                        &mut open_calls,
                        &mut error_shown,
                        outcome_of(outcome, error.as_deref()),
                    );
                    turn_open = false;
                }
            }
            Record::ClearToolResults { ids } => transcript.clear_results_by_id(ids),
            Record::Compacted {
                messages,
                before,
                after,
                summary,
            } => {
                transcript.restore(messages.clone());
                events.push(AgentEvent::Compacted {
                    before: *before,
                    after: *after,
                    summary: summary.clone(),
                });
            }
            Record::Withdraw { blocks } => transcript.withdraw_user_blocks(*blocks),
            Record::Queued { text, blocks } => {
                if transcript.push_queued(text, blocks.clone()) {
                    events.push(AgentEvent::QueuedSent { text: text.clone() });
                }
            }
            Record::FileStamps { files: saved } => files = saved.clone(),
            Record::Attached { items } if turn_open => {
                events.push(AgentEvent::Attached {
                    items: items.clone(),
                });
            }
            Record::Notice { text, is_error } => {
                error_shown |= *is_error;
                events.push(AgentEvent::Notice {
                    text: text.clone(),
                    is_error: *is_error,
                });
            }
            Record::CheckpointBegin { id, prompt, .. } => {
                checkpoint_at.insert(*id, events.len());
                shown_prompt = Some(prompt.clone());
            }
            Record::Rewind {
                to,
                code,
                conversation: Some(mark),
                note,
                ..
            } => {
                // The conversation went back: so does the chat (the notice
                // saying so follows as a record of its own).
                transcript.rewind_to(*mark, *to, *code, note);
                add_note(&mut rewind_note, note);
                if let Some(at) = checkpoint_at.get(to) {
                    events.truncate(*at);
                }
                checkpoint_at.retain(|id, _| id < to);
            }
            Record::Rewind { note, .. } => add_note(&mut rewind_note, note),
            Record::Model { model: m } => model = Some(m.clone()),
            Record::Memory { paths } => memory.extend(paths.iter().cloned()),
            Record::ToolStart { .. }
            | Record::ToolDone { .. }
            | Record::CheckpointFiles { .. }
            | Record::Attached { .. } => {}
        }
    }
    if turn_open {
        close_turn(
            &mut events,
            &mut open_calls,
            &mut error_shown,
            TurnOutcome::Stopped,
        );
    }
    let repaired = transcript.repair();
    Restored {
        messages: transcript.snapshot(),
        repaired,
        usage,
        events,
        files,
        rewind_note,
        model,
        memory,
    }
}

/// Adds a rewind's `note` to the ones no prompt carried yet (as the live
/// session does).
fn add_note(pending: &mut Option<String>, note: &str) {
    if note.is_empty() {
        return;
    }
    *pending = Some(match pending.take() {
        Some(earlier) => format!("{earlier}\n\n{note}"),
        None => note.to_string(),
    });
}

/// Ends the open turn: calls still shown as running end as interrupted;
/// an error is shown as the live turn showed it, as an error notice before
/// the turn's end (which then points at it).
fn close_turn(
    events: &mut Vec<AgentEvent>,
    open_calls: &mut Vec<(String, String)>,
    error_shown: &mut bool,
    outcome: TurnOutcome,
) {
    for (id, name) in open_calls.drain(..) {
        events.push(AgentEvent::ToolFinished {
            id,
            name,
            status: ToolStatus::Interrupted,
            summary: NO_RESULT_SUMMARY.into(),
            content: String::new(),
            display: None,
        });
    }
    if let TurnOutcome::Error(text) = &outcome {
        // A file saved before notices were recorded: the turn's error is
        // all it kept.
        if !*error_shown && !text.trim().is_empty() {
            events.push(AgentEvent::Notice {
                text: text.clone(),
                is_error: true,
            });
        }
    }
    *error_shown = false;
    events.push(AgentEvent::TurnEnded { outcome });
}

/// The first prompt of a restored conversation as the user typed it (for
/// a title), if any: from the chat events, since the first text block the
/// model got may be the editor context lathe added.
pub fn first_prompt(events: &[AgentEvent]) -> Option<&str> {
    events.iter().find_map(|e| match e {
        AgentEvent::TurnStarted { prompt } => Some(prompt.as_str()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Role, ToolResult, ToolResultContent, ToolUse};
    use serde_json::json;

    fn use_block(id: &str) -> ContentBlock {
        ContentBlock::ToolUse(ToolUse {
            id: id.into(),
            name: "Read".into(),
            input: json!({ "file_path": "a.txt" }),
            extra: Default::default(),
        })
    }

    fn assistant(blocks: Vec<ContentBlock>) -> Record {
        Record::Assistant {
            message: Message {
                role: Role::Assistant,
                content: blocks,
            },
        }
    }

    fn ok(id: &str) -> ToolResult {
        ToolResult {
            tool_use_id: id.into(),
            content: ToolResultContent::Text("1\thello".into()),
            is_error: false,
        }
    }

    fn text(t: &str) -> ContentBlock {
        ContentBlock::Text { text: t.into() }
    }

    /// A failed command and an edit's diff, as the live chat got them,
    /// written by the session's `LoggingSink`, read back and replayed: the
    /// resumed chat gets the same status, summary and diff.
    #[test]
    fn a_failed_line_and_an_edit_diff_come_back_after_a_resume() {
        use super::super::session_log::{load, LoggingSink, SessionLog};
        use crate::events::{EventSink, RecordingSink};
        use std::sync::Arc;
        let dir = std::env::temp_dir().join(format!(
            "lathe-resume-display-{}-{:?}",
            std::process::id(),
            std::time::SystemTime::now()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let live = Arc::new(RecordingSink::default());
        let log = SessionLog::create(&dir, "s", std::path::Path::new("/p"), "m", live.clone());
        log.record(&Record::User {
            text: "fix it".into(),
            blocks: Vec::new(),
        });
        let bash = ContentBlock::ToolUse(ToolUse {
            id: "b1".into(),
            name: "Bash".into(),
            input: json!({ "command": "false", "description": "Fail" }),
            extra: Default::default(),
        });
        let edit = ContentBlock::ToolUse(ToolUse {
            id: "e1".into(),
            name: "Edit".into(),
            input: json!({ "file_path": "a.txt", "old_string": "a", "new_string": "b" }),
            extra: Default::default(),
        });
        if let Record::Assistant { message } = assistant(vec![bash, edit]) {
            log.record(&Record::Assistant { message });
        }
        let sink = LoggingSink {
            inner: live.clone(),
            log: log.clone(),
        };
        let diff = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+b\n";
        let finished = [
            AgentEvent::ToolFinished {
                id: "b1".into(),
                name: "Bash".into(),
                status: ToolStatus::Failed,
                summary: "exit 1".into(),
                content: "\n\nExit code 1 (failure)".into(),
                display: None,
            },
            AgentEvent::ToolFinished {
                id: "e1".into(),
                name: "Edit".into(),
                status: ToolStatus::Done,
                summary: "1 replacement".into(),
                content: "The file a.txt has been updated.".into(),
                display: Some(diff.into()),
            },
        ];
        for (e, id) in finished.iter().zip(["b1", "e1"]) {
            sink.emit(AgentEvent::ToolStarted {
                id: id.into(),
                name: String::new(),
                detail: String::new(),
                input: serde_json::Value::Null,
            });
            sink.emit(e.clone());
        }
        let content = |e: &AgentEvent| match e {
            AgentEvent::ToolFinished { content, .. } => content.clone(),
            _ => String::new(),
        };
        log.record(&Record::ToolResults {
            results: finished
                .iter()
                .zip(["b1", "e1"])
                .map(|(e, id)| ToolResult {
                    tool_use_id: id.into(),
                    content: ToolResultContent::Text(content(e)),
                    is_error: false,
                })
                .collect(),
        });
        log.flush();
        let records = load(log.path()).unwrap().records;
        let replayed: Vec<AgentEvent> = restore(&records)
            .events
            .into_iter()
            .filter(|e| matches!(e, AgentEvent::ToolFinished { .. }))
            .collect();
        assert_eq!(replayed, finished.to_vec());
    }

    #[test]
    fn cited_text_is_shown_again() {
        let cited = ContentBlock::Opaque(json!({"type": "text", "text": "it will be sunny",
                                                "citations": [{"type": "x"}]}));
        let records = vec![
            Record::User {
                text: "weather?".into(),
                blocks: Vec::new(),
            },
            assistant(vec![text("The forecast: "), cited]),
        ];
        let shown: String = restore(&records)
            .events
            .into_iter()
            .filter_map(|e| match e {
                AgentEvent::TextDelta { text } => Some(text),
                _ => None,
            })
            .collect();
        assert_eq!(shown, "The forecast: it will be sunny");
    }

    #[test]
    fn a_finished_session_replays_its_messages_usage_and_chat() {
        let session_usage = Usage {
            input_tokens: Some(10),
            output_tokens: Some(5),
            ..Usage::default()
        };
        let records = vec![
            Record::User {
                text: "read a".into(),
                blocks: Vec::new(),
            },
            assistant(vec![text("Reading."), use_block("t1")]),
            Record::ToolStart {
                id: "t1".into(),
                name: "Read".into(),
                detail: "a.txt".into(),
            },
            Record::ToolDone {
                id: "t1".into(),
                status: "done".into(),
                summary: "1 line".into(),
                display: None,
            },
            Record::ToolResults {
                results: vec![ok("t1")],
            },
            assistant(vec![text("It says hello.")]),
            Record::TurnEnd {
                outcome: "done".into(),
                error: None,
                turn: session_usage.clone(),
                session: session_usage.clone(),
            },
        ];
        let r = restore(&records);
        assert!(!r.repaired);
        assert_eq!(r.messages.len(), 4);
        assert_eq!(r.usage, session_usage);
        assert_eq!(
            r.events,
            vec![
                AgentEvent::TurnStarted {
                    prompt: "read a".into()
                },
                AgentEvent::AssistantStarted,
                AgentEvent::TextDelta {
                    text: "Reading.".into()
                },
                AgentEvent::ToolStarted {
                    id: "t1".into(),
                    name: "Read".into(),
                    detail: "a.txt".into(),
                    input: json!({ "file_path": "a.txt" }),
                },
                AgentEvent::ToolFinished {
                    id: "t1".into(),
                    name: "Read".into(),
                    status: ToolStatus::Done,
                    summary: "1 line".into(),
                    content: "1\thello".into(),
                    display: None,
                },
                AgentEvent::AssistantStarted,
                AgentEvent::TextDelta {
                    text: "It says hello.".into()
                },
                AgentEvent::Usage {
                    turn: session_usage.clone(),
                    session: session_usage.clone()
                },
                AgentEvent::TurnEnded {
                    outcome: TurnOutcome::Done
                },
            ]
        );
    }

    #[test]
    fn a_session_that_ended_mid_turn_is_repaired_and_shown_interrupted() {
        let records = vec![
            Record::User {
                text: "go".into(),
                blocks: Vec::new(),
            },
            assistant(vec![use_block("t1"), use_block("t2")]),
            Record::ToolStart {
                id: "t1".into(),
                name: "Read".into(),
                detail: "a.txt".into(),
            },
        ];
        let r = restore(&records);
        assert!(r.repaired);
        assert_eq!(r.messages.len(), 3);
        let ids: Vec<(&str, bool)> = r.messages[2]
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolResult(t) => Some((t.tool_use_id.as_str(), t.is_error)),
                _ => None,
            })
            .collect();
        assert_eq!(ids, vec![("t1", true), ("t2", true)]);
        let tail: Vec<&AgentEvent> = r.events.iter().rev().take(3).collect();
        assert_eq!(
            tail[0],
            &AgentEvent::TurnEnded {
                outcome: TurnOutcome::Stopped
            }
        );
        assert!(
            matches!(tail[1], AgentEvent::ToolFinished { id, status: ToolStatus::Interrupted, .. } if id == "t2")
        );
        assert!(
            matches!(tail[2], AgentEvent::ToolFinished { id, status: ToolStatus::Interrupted, .. } if id == "t1")
        );
    }

    #[test]
    fn the_model_gets_back_what_it_got_and_the_chat_the_prompt_as_typed() {
        // A prompt sent with editor context and an @file: the restored
        // conversation holds every block the model got; the chat shows
        // the prompt as typed.
        let blocks = vec![
            text("<editor-context>…</editor-context>"),
            text("fix @a.py"),
        ];
        let records = vec![Record::User {
            text: "fix @a.py".into(),
            blocks: blocks.clone(),
        }];
        let r = restore(&records);
        assert_eq!(r.messages.len(), 1);
        assert_eq!(r.messages[0].content, blocks);
        assert_eq!(
            r.events.first(),
            Some(&AgentEvent::TurnStarted {
                prompt: "fix @a.py".into()
            })
        );
        assert_eq!(first_prompt(&r.events), Some("fix @a.py"));
    }

    #[test]
    fn an_error_of_a_file_without_notices_is_shown_as_a_notice() {
        let records = vec![
            Record::User {
                text: "go".into(),
                blocks: Vec::new(),
            },
            Record::TurnEnd {
                outcome: "error".into(),
                error: Some("overloaded".into()),
                turn: Usage::default(),
                session: Usage::default(),
            },
        ];
        let tail: Vec<AgentEvent> = restore(&records).events.into_iter().skip(2).collect();
        assert_eq!(
            tail,
            vec![
                AgentEvent::Notice {
                    text: "overloaded".into(),
                    is_error: true
                },
                AgentEvent::TurnEnded {
                    outcome: TurnOutcome::Error("overloaded".into())
                }
            ]
        );
    }

    #[test]
    fn a_refused_exchange_stays_out_of_the_restored_conversation() {
        let records = vec![
            Record::User {
                text: "one".into(),
                blocks: Vec::new(),
            },
            assistant(vec![text("fine")]),
            Record::TurnEnd {
                outcome: "done".into(),
                error: None,
                turn: Usage::default(),
                session: Usage::default(),
            },
            Record::User {
                text: "bad".into(),
                blocks: Vec::new(),
            },
            Record::Truncate { len: 2 },
            Record::TurnEnd {
                outcome: "done".into(),
                error: None,
                turn: Usage::default(),
                session: Usage::default(),
            },
        ];
        let r = restore(&records);
        assert_eq!(r.messages.len(), 2);
        assert_eq!(first_prompt(&r.events), Some("one"));
        assert!(r
            .events
            .iter()
            .any(|e| matches!(e, AgentEvent::AssistantWithdrawn { .. })));
    }
}
