//! The checks behind the `cargo fuzz` targets in `fuzz/` (
//! docs/testing.md, "Fuzzing"). Each takes the fuzzer's raw bytes,
//! decodes its own input from them, runs lathe's code and panics when a
//! property breaks. `crates/lathe-core/tests/all/fuzz_corpus.rs` replays every file under
//! `fuzz/corpus/<target>/` through the same function in `make test`, so
//! seeds and minimized findings stay ordinary regression tests.
//!
//! Only public items of the crate are used: this module adds no API to the
//! code it checks.

use std::path::Path;

use serde_json::Value;

use crate::permissions::shell::{self, Split};
use crate::permissions::{Rule, RuleBase};
use crate::protocol::{
    ContentBlock, ContentBlockDelta, Message, MessagesRequest, Role, StreamEvent, ToolResult,
    ToolResultContent, ToolUse,
};
use crate::provider::assemble::{Assembled, MessageAssembler};
use crate::provider::limits::{json_deeper_than, MAX_TOOL_INPUT_DEPTH};
use crate::provider::sse::{parse_data, SseDecoder, SseEvent};
use crate::provider::validate;
use crate::tools::support::text_match;

/// A check: panics when a property breaks for the input the bytes encode.
pub type Check = fn(&[u8]);

/// The targets, by the name of their `fuzz/fuzz_targets/*.rs` file and
/// corpus folder, with their check.
pub const TARGETS: &[(&str, Check)] = &[
    ("sse_splits", sse_splits),
    ("tool_input_json", tool_input_json),
    ("permission_rule", permission_rule),
    ("edit_apply", edit_apply),
    ("answer_events", answer_events),
];

/// What an SSE byte stream decodes to: the events, then the error that
/// ended it, if any.
fn decode_all(chunks: &[&[u8]]) -> (Vec<SseEvent>, Option<String>) {
    let mut d = SseDecoder::new();
    let mut events = Vec::new();
    for c in chunks {
        match d.feed(c) {
            Ok(evs) => events.extend(evs),
            Err(e) => return (events, Some(e.to_string())),
        }
    }
    (events, d.take_error().map(|e| e.to_string()))
}

/// The SSE decoder on arbitrary bytes in arbitrary splits: the same events
/// (and the same error) whether the stream comes in one read, in the
/// splits the input picks, or one byte at a time; every event's data
/// decodes or is refused without a panic.
///
/// Input: byte 0 = number of cuts (mod 8), the next that many bytes pick
/// where, the rest is the stream.
pub fn sse_splits(data: &[u8]) {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let n = usize::from(n % 8).min(rest.len());
    let (cuts, stream) = rest.split_at(n);
    let whole = decode_all(&[stream]);
    let mut at: Vec<usize> = cuts
        .iter()
        .map(|&c| usize::from(c) * stream.len() / 256)
        .collect();
    at.sort_unstable();
    let mut chunks = Vec::new();
    let mut from = 0;
    for a in at {
        chunks.push(&stream[from..a]);
        from = a;
    }
    chunks.push(&stream[from..]);
    assert_eq!(decode_all(&chunks), whole, "split at {chunks:?}");
    let bytes: Vec<&[u8]> = stream.chunks(1).collect();
    assert_eq!(decode_all(&bytes), whole, "one byte at a time");
    for ev in &whole.0 {
        let _ = parse_data(&ev.data);
    }
}

/// Partial tool-input JSON through the assembler: pieces split at `0xFF`
/// bytes (lossy UTF-8) are the `partial_json` deltas of one `tool_use`. The
/// completed call's input is always an object (what the API needs in the
/// transcript); when the joined text is a JSON object within the caps, the
/// input is exactly that object and there is no refusal.
pub fn tool_input_json(data: &[u8]) {
    let pieces: Vec<String> = data
        .split(|&b| b == 0xFF)
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    let mut a = MessageAssembler::new();
    a.push(StreamEvent::ContentBlockStart {
        index: 0,
        content_block: ContentBlock::ToolUse(ToolUse {
            id: "toolu_fuzz".into(),
            name: "Read".into(),
            input: Value::Object(serde_json::Map::new()),
            extra: Default::default(),
        }),
    });
    for p in &pieces {
        a.push(StreamEvent::ContentBlockDelta {
            index: 0,
            delta: ContentBlockDelta::InputJsonDelta {
                partial_json: p.clone(),
            },
        });
    }
    let Some(Assembled::ToolUseComplete(done)) = a.push(StreamEvent::ContentBlockStop { index: 0 })
    else {
        panic!("a tool_use block that started and stopped completes");
    };
    let stored = done.to_tool_use();
    assert!(stored.input.is_object(), "stored input {:?}", stored.input);
    if let Ok(v) = &done.input {
        assert!(v.is_object(), "parsed input {v:?}");
    }
    let joined = pieces.concat();
    if !json_deeper_than(&joined, MAX_TOOL_INPUT_DEPTH) {
        if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(&joined) {
            assert_eq!(done.refusal, None);
            assert_eq!(done.input, Ok(v));
        }
    }
    let message = a.message();
    assert_eq!(message.tool_uses().count(), 1);
}

/// A whole answer through the decoder's parser and the assembler, then the
/// next request as the turn loop builds it (the invariant): every
/// line of the input (lossy UTF-8) is one event's `data:` JSON; lines that
/// do not decode are skipped. Every `tool_use` kept in the message was
/// reported complete (so it is run or answered), and the request of the
/// conversation — the prompt, the answer, one result per call, and a next
/// prompt when there was none — passes `validate::prepare`: lathe never
/// builds a request that its own check, and so the API, refuses forever.
/// `crates/lathe-core/tests/all/request_invariant.rs` checks the same with mock-llm's rules.
pub fn answer_events(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut a = MessageAssembler::new();
    let mut reported = Vec::new();
    for line in text.lines() {
        let Ok(event) = parse_data(line) else {
            continue;
        };
        if let Some(Assembled::ToolUseComplete(done)) = a.push(event) {
            reported.push(done.id);
        }
    }
    let message = a.finish();
    let kept: Vec<String> = message.tool_uses().map(|t| t.id.clone()).collect();
    assert_eq!(kept, reported, "a kept call was never reported");
    let results: Vec<ContentBlock> = kept
        .iter()
        .map(|id| {
            ContentBlock::ToolResult(ToolResult {
                tool_use_id: id.clone(),
                content: ToolResultContent::Text("ok".into()),
                is_error: false,
            })
        })
        .collect();
    let mut messages = vec![Message::user_text("go"), message];
    if results.is_empty() {
        messages.push(Message::user_text("next"));
    } else {
        messages.push(Message {
            role: Role::User,
            content: results,
        });
    }
    let req = MessagesRequest {
        model: "m".into(),
        max_tokens: 1024,
        system: String::new(),
        messages: messages.into_iter().map(std::sync::Arc::new).collect(),
        tools: Vec::new(),
        stream: true,
    };
    if let Err(e) = validate::prepare(req) {
        panic!("the next request is refused: {e}");
    }
}

/// The permission rule parser and matcher: any text either parses or is
/// refused with the tool it could read; a parsed rule prints back to text
/// that parses to the same rule; matching it against any path, command or
/// input never panics.
///
/// Input (lossy UTF-8), lines: the rule, then a path, then a Bash command,
/// then a tool input.
pub fn permission_rule(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.split('\n');
    let rule_text = lines.next().unwrap_or("");
    let path = lines.next().unwrap_or("");
    let command = lines.next().unwrap_or("");
    let input = lines.next().unwrap_or("");
    let base = RuleBase::at_root(Path::new("/p/proj"), Some(Path::new("/home/u")));
    let rule = match Rule::parse(rule_text, &base) {
        Ok(r) => r,
        Err(e) => {
            assert_eq!(e.rule, rule_text.trim());
            return;
        }
    };
    let printed = rule.to_string();
    match Rule::parse(&printed, &base) {
        Ok(again) => assert_eq!(again, rule, "{rule_text:?} printed as {printed:?}"),
        Err(e) => panic!("{rule_text:?} printed as {printed:?}, which does not parse: {e}"),
    }
    let path = if path.starts_with('/') {
        Path::new("/p/proj").join(path.trim_start_matches('/'))
    } else {
        Path::new("/p/proj").join(path)
    };
    for tool in ["Read", "Edit", "Write", "Grep", "Glob", "Bash", "Other"] {
        let family = crate::permissions::rule_family(tool);
        let _ = rule.matches_path(tool, family, Some(&path), false);
        let _ = rule.matches_path(tool, family, Some(&path), true);
        let _ = rule.matches_input(tool, input);
    }
    if let Split::Commands(cmds) = shell::split(command) {
        for c in &cmds {
            let _ = rule.matches_command(c);
            let _ = shell::suggest_rule(c);
        }
    }
}

/// Edit application: `text_match::plan` then `apply` never changes a byte
/// outside the matched spans; the spans are in order, apart, on char
/// boundaries, hold `old` (or, with quotes folded, its folded form), and
/// there is exactly one unless `replace_all`.
///
/// Input: byte 0's low bit is `replace_all`; the rest split at `0x00` into
/// text, old and new (lossy UTF-8).
pub fn edit_apply(data: &[u8]) {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let replace_all = flags & 1 == 1;
    let mut parts = rest
        .split(|&b| b == 0)
        .map(|p| String::from_utf8_lossy(p).into_owned());
    let text = parts.next().unwrap_or_default();
    let old = parts.next().unwrap_or_default();
    let new = parts.next().unwrap_or_default();
    if old.is_empty() {
        return; // Edit refuses an empty old_string before matching.
    }
    let Ok(plan) = text_match::plan(&text, &old, &new, replace_all) else {
        return;
    };
    assert!(!plan.replacements.is_empty());
    if !replace_all {
        assert_eq!(plan.replacements.len(), 1);
    }
    let out = text_match::apply(&text, &plan);
    let mut at_in = 0; // position in `text`
    let mut at_out = 0; // position in `out`
    let (folded_old, _) = text_match::fold_quotes(&old);
    for r in &plan.replacements {
        assert!(r.range.start >= at_in && r.range.start < r.range.end);
        assert!(text.is_char_boundary(r.range.start) && text.is_char_boundary(r.range.end));
        let matched = &text[r.range.clone()];
        if plan.quotes_folded {
            assert_eq!(text_match::fold_quotes(matched).0, folded_old);
        } else {
            assert_eq!(matched, old);
            assert_eq!(r.with, new);
        }
        let kept = &text[at_in..r.range.start];
        assert_eq!(
            &out[at_out..at_out + kept.len()],
            kept,
            "bytes before a span"
        );
        at_out += kept.len();
        assert_eq!(&out[at_out..at_out + r.with.len()], r.with);
        at_out += r.with.len();
        at_in = r.range.end;
    }
    assert_eq!(&out[at_out..], &text[at_in..], "bytes after the last span");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_check_takes_empty_and_small_inputs() {
        for (name, check) in TARGETS {
            for data in [&b""[..], b"\x00", b"\x01a\x00a\x00b", b"{\xff}\n"] {
                check(data);
                let _ = name;
            }
        }
    }
}
