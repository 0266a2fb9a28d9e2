//! The request invariant, as a property: whatever the provider
//! sends and whatever a tool returns, the next request lathe builds is one
//! the API accepts, and every `tool_use` in it has its `tool_result`.
//!
//! proptest builds answers from the shapes real servers send and the
//! shapes they should not (a `tool_use` with `caller`, without `input`,
//! with input that is not JSON or not an object, with a bad or repeated
//! id; cited text, `compaction` blocks, server tool blocks, thinking with
//! and without a signature, unknown blocks, text that is blank or not a
//! string, blocks that never stop, stray deltas), feeds their stream
//! events through lathe's decoder and assembler, answers every reported
//! call (with a built-in tool's text or an MCP server's result — images of
//! types the API refuses or bytes that are not what they say, empty text,
//! only `structuredContent`, audio, resources — through gate 9's repair),
//! and builds the next request as the turn loop does
//! (`validate::prepare`, `cache::body_with_breakpoints`). The request must
//! pass lathe's own check and mock-llm's pairing rule and request rules
//! (the API's, `tests/mock-llm/README.md`), and every call kept in the
//! conversation must have been reported for running.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_core::protocol::{
    ContentBlock, Message, MessagesRequest, Role, ToolResult, ToolResultContent,
};
use lathe_core::provider::anthropic::cache;
use lathe_core::provider::assemble::{Assembled, MessageAssembler};
use lathe_core::provider::sse::parse_data;
use lathe_core::provider::validate;
use proptest::prelude::*;
use serde_json::{json, Value};

/// One content block of an answer: its start, its deltas, and whether its
/// `content_block_stop` comes.
#[derive(Debug, Clone)]
struct Block {
    start: Value,
    deltas: Vec<Value>,
    stops: bool,
}

fn text_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("Sure, ".to_string()),
        Just("   ".to_string()),
        Just("\r\n".to_string()),
        Just(String::new()),
        "[a-z ]{0,12}",
    ]
}

fn text_deltas() -> impl Strategy<Value = Vec<Value>> {
    prop::collection::vec(text_piece(), 0..4).prop_map(|pieces| {
        pieces
            .into_iter()
            .map(|t| json!({"type": "text_delta", "text": t}))
            .collect()
    })
}

fn json_deltas() -> impl Strategy<Value = Vec<Value>> {
    prop_oneof![
        Just(vec![]),
        Just(vec![String::new()]),
        Just(vec!["{\"pattern\": ".to_string(), "\"*.md\"}".to_string()]),
        Just(vec!["{\"pattern\": \"*.md\", \"path\": docs}".to_string()]),
        Just(vec!["[1, 2]".to_string()]),
        Just(vec!["{\"file_path\": \"/a\", \"old_str".to_string()]),
        Just(vec!["null".to_string()]),
    ]
    .prop_map(|pieces| {
        pieces
            .into_iter()
            .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
            .collect()
    })
}

fn tool_use() -> impl Strategy<Value = Block> {
    let id = prop_oneof![
        Just(json!("toolu_01")),
        Just(json!("call_0")),
        Just(json!("call 1")),
        Just(json!("")),
        Just(json!(7)),
    ];
    let name = prop_oneof![Just("Glob"), Just("Read"), Just("get_weather")];
    let input = prop_oneof![
        Just(Some(json!({}))),
        Just(None),
        Just(Some(Value::Null)),
        Just(Some(json!({"pattern": "*"}))),
        Just(Some(json!("raw"))),
    ];
    (id, name, input, any::<bool>(), json_deltas(), any::<bool>()).prop_map(
        |(id, name, input, caller, deltas, stops)| {
            let mut start = json!({"type": "tool_use", "id": id, "name": name});
            if let Some(i) = input {
                start["input"] = i;
            }
            if caller {
                start["caller"] = json!({"type": "direct"});
            }
            Block {
                start,
                deltas,
                stops,
            }
        },
    )
}

fn block() -> impl Strategy<Value = Block> {
    let stops = prop::bool::weighted(0.9);
    let cite = json!({"type": "web_search_result_location", "url": "https://example.com",
                      "title": "x", "encrypted_index": "Eo8B", "cited_text": "Sunny."});
    prop_oneof![
        (text_deltas(), stops).prop_map(|(deltas, stops)| Block {
            start: json!({"type": "text", "text": ""}),
            deltas,
            stops
        }),
        (text_deltas(), any::<bool>(), stops).prop_map(move |(mut deltas, listed, stops)| {
            deltas.insert(0, json!({"type": "citations_delta", "citation": cite.clone()}));
            let start = if listed {
                json!({"type": "text", "text": "", "citations": []})
            } else {
                json!({"type": "text", "text": ""})
            };
            Block { start, deltas, stops }
        }),
        tool_use(),
        (json_deltas(), any::<bool>(), stops).prop_map(|(deltas, with_input, stops)| {
            let mut start = json!({"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search"});
            if with_input {
                start["input"] = json!({});
            }
            Block { start, deltas, stops }
        }),
        (prop::collection::vec(("[a-z ]{0,8}", "[A-Za-z0-9]{0,6}"), 0..3), stops).prop_map(
            |(pieces, stops)| Block {
                start: json!({"type": "compaction", "content": null, "encrypted_content": null}),
                deltas: pieces
                    .into_iter()
                    .map(|(c, e)| json!({"type": "compaction_delta", "content": c, "encrypted_content": e}))
                    .collect(),
                stops
            }
        ),
        ("[a-z ]{0,8}", prop::option::of("[A-Za-z0-9]{0,6}"), stops).prop_map(
            |(thinking, signature, stops)| {
                let mut deltas = vec![json!({"type": "thinking_delta", "thinking": thinking})];
                if let Some(s) = signature {
                    deltas.push(json!({"type": "signature_delta", "signature": s}));
                }
                Block {
                    start: json!({"type": "thinking", "thinking": "", "signature": ""}),
                    deltas,
                    stops,
                }
            }
        ),
        stops.prop_map(|stops| Block {
            start: json!({"type": "future_block", "x": [1, 2]}),
            deltas: vec![json!({"type": "future_delta", "y": 1})],
            stops
        }),
        stops.prop_map(|stops| Block {
            start: json!({"type": "text", "text": 5}),
            deltas: vec![],
            stops
        }),
    ]
}

/// One answer: its blocks, stray deltas for indexes that never started,
/// and its stop reason.
fn answer() -> impl Strategy<Value = (Vec<Block>, bool, Option<&'static str>)> {
    (
        prop::collection::vec(block(), 0..5),
        any::<bool>(),
        prop_oneof![
            Just(Some("tool_use")),
            Just(Some("end_turn")),
            Just(Some("max_tokens")),
            Just(Some("pause_turn")),
            Just(None),
        ],
    )
}

/// A tool's outcome: what gate 9 hands on (its content, whether it failed).
#[derive(Debug, Clone)]
enum Outcome {
    /// A built-in tool's text.
    Text(String, bool),
    /// An MCP server's `tools/call` result, as JSON.
    Mcp(Value),
}

/// A 1×1 PNG.
const PNG_1X1: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg==";

/// One item of an MCP result's `content`: the shapes servers send,
/// including those the API takes only repaired (an image of a type it
/// refuses, or whose bytes are not what it says, empty text).
fn mcp_item() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({"type": "text", "text": ""})),
        "[a-z ]{1,12}".prop_map(|t| json!({"type": "text", "text": t})),
        Just(json!({"type": "image", "mimeType": "image/png", "data": PNG_1X1})),
        Just(json!({"type": "image", "mimeType": "image/jpg", "data": PNG_1X1})),
        Just(json!({"type": "image", "mimeType": "image/svg+xml", "data": "PHN2Zy8+"})),
        Just(json!({"type": "image", "mimeType": "image/png", "data": "bm90IGFuIGltYWdl"})),
        Just(json!({"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="})),
        Just(json!({"type": "resource", "resource": {"uri": "file:///a", "text": "x"}})),
    ]
}

fn outcome() -> impl Strategy<Value = Outcome> {
    let text = (
        prop_oneof![
            Just("README.md".to_string()),
            Just("No files found".to_string()),
            Just(String::new()),
            "[a-z]{1,8}"
        ],
        any::<bool>(),
    )
        .prop_map(|(t, e)| Outcome::Text(t, e));
    let mcp = (
        prop::collection::vec(mcp_item(), 0..4),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(content, structured, is_error)| {
            let mut r = json!({"content": content, "isError": is_error});
            if structured {
                r["structuredContent"] = json!({"temperature": 21, "unit": "C"});
            }
            Outcome::Mcp(r)
        });
    prop_oneof![text, mcp]
}

/// The `tool_result` content and error flag gate 9 makes of `outcome`
/// (`mcp::tools::output_of`, then `execution::sendable::repair`, as a
/// call through the pipeline does).
fn result_of(outcome: &Outcome) -> (ToolResultContent, bool) {
    match outcome {
        Outcome::Text(text, true) => (
            ToolResultContent::Text(lathe_core::execution::sendable::error_text(
                "Glob",
                text.clone(),
            )),
            true,
        ),
        Outcome::Text(text, false) => {
            let out = lathe_core::tools::ToolOutput::text(text.clone(), "");
            (
                lathe_core::execution::sendable::repair("Glob", out).content,
                false,
            )
        }
        Outcome::Mcp(result) => match lathe_core::mcp::tools::output_of("mcp__srv__t", result) {
            Ok(out) => (
                lathe_core::execution::sendable::repair("mcp__srv__t", out).content,
                false,
            ),
            Err(e) => (
                ToolResultContent::Text(lathe_core::execution::sendable::error_text(
                    "mcp__srv__t",
                    e.message,
                )),
                true,
            ),
        },
    }
}

/// The `data:` lines of an answer, in order.
fn events(blocks: &[Block], stray: bool, stop: Option<&str>) -> Vec<Value> {
    let mut out = vec![json!({"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
        "content": [], "stop_reason": null, "usage": {"input_tokens": 1, "output_tokens": 1}}})];
    for (index, b) in blocks.iter().enumerate() {
        out.push(json!({"type": "content_block_start", "index": index, "content_block": b.start}));
        for d in &b.deltas {
            out.push(json!({"type": "content_block_delta", "index": index, "delta": d}));
        }
        if stray {
            out.push(json!({"type": "content_block_delta", "index": index + 100,
                            "delta": {"type": "text_delta", "text": "ghost"}}));
        }
        if b.stops {
            out.push(json!({"type": "content_block_stop", "index": index}));
        }
    }
    out.push(json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 5}}));
    out.push(json!({"type": "message_stop"}));
    out
}

/// The request lathe builds after `answers` (each answered with
/// `outcomes`, in turn), checked by lathe and by mock-llm's rules.
fn check(answers: &[(Vec<Block>, bool, Option<&'static str>)], outcomes: &[Outcome]) {
    let mut messages = vec![Message::user_text("go")];
    let mut outcome = outcomes.iter().cycle();
    for (blocks, stray, stop) in answers {
        let mut asm = MessageAssembler::new();
        let mut reported = Vec::new();
        for line in events(blocks, *stray, *stop) {
            let Ok(event) = parse_data(&line.to_string()) else {
                continue; // a shape the decoder refuses ends the stream as an error
            };
            if let Some(Assembled::ToolUseComplete(done)) = asm.push(event) {
                reported.push(done.id.clone());
            }
        }
        let message = asm.finish();
        let kept: Vec<String> = message.tool_uses().map(|t| t.id.clone()).collect();
        assert_eq!(kept, reported, "every call kept was reported for running");
        let results: Vec<ContentBlock> = kept
            .iter()
            .map(|id| {
                let (content, is_error) = outcome
                    .next()
                    .map(result_of)
                    .unwrap_or((ToolResultContent::Text("ok".into()), false));
                ContentBlock::ToolResult(ToolResult {
                    tool_use_id: id.clone(),
                    content,
                    is_error,
                })
            })
            .collect();
        messages.push(message);
        if results.is_empty() {
            messages.push(Message::user_text("next"));
        } else {
            messages.push(Message {
                role: Role::User,
                content: results,
            });
        }
    }
    let req = MessagesRequest {
        model: "claude-test".into(),
        max_tokens: 1024,
        system: "You are a test.".into(),
        messages: lathe_core::protocol::shared(messages),
        tools: vec![],
        stream: true,
    };
    let req = match validate::prepare(req.clone()) {
        Ok(r) => r,
        Err(e) => panic!("lathe refuses its own request: {e}\n{:#?}", req.messages),
    };
    let body = cache::body_with_breakpoints(&req, true);
    if let Err(e) = mock_llm::pairing::check(&body) {
        panic!("the API would refuse it: {e}\n{body:#}");
    }
    if let Err(e) = mock_llm::rules::check(&body) {
        panic!("the API would refuse it: {e}\n{body:#}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_next_request_is_always_one_the_api_accepts(
        answers in prop::collection::vec(answer(), 1..4),
        outcomes in prop::collection::vec(outcome(), 1..4),
    ) {
        check(&answers, &outcomes);
    }
}

/// The shapes found from outside (recorded real streams), one answer each.
#[test]
fn the_issue_23_answers_make_requests_the_api_accepts() {
    let tool = |start: Value, pieces: &[&str]| Block {
        start,
        deltas: pieces
            .iter()
            .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
            .collect(),
        stops: true,
    };
    let answers = vec![
        (
            vec![tool(
                json!({"type": "tool_use", "id": "toolu_01", "name": "Glob", "caller": {"type": "direct"}, "input": {}}),
                &["", "{\"location\": \"Paris\", \"unit\": celsius}"],
            )],
            false,
            Some("tool_use"),
        ),
        (
            vec![tool(
                json!({"type": "tool_use", "id": "call_0", "name": "Glob"}),
                &["{\"pattern\": \"*\"}"],
            )],
            false,
            Some("end_turn"),
        ),
        (
            vec![tool(
                json!({"type": "tool_use", "id": "call_0", "name": "Glob"}),
                &["{}"],
            )],
            false,
            Some("tool_use"),
        ),
    ];
    check(&answers, &[Outcome::Text("ok".into(), false)]);
}
