//! lathe's request rules (`provider::validate`) against mock-llm's
//! (`tests/mock-llm/src/rules.rs`), over real HTTP with lathe's own client:
//! for every rule, the smallest request that breaks it is flagged by
//! `validate` and answered by mock-llm with the real API's 400 message;
//! what `sanitize` can repair, mock-llm then accepts. The two rule sets are
//! written apart (mock-llm cannot use lathe), so this keeps them in step.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;

use base64::Engine;
use lathe_core::events::TurnOutcome;
use lathe_core::protocol::{
    ContentBlock, ImageSource, Message, MessagesRequest, Role, ToolDefinition, ToolResult,
    ToolResultContent, ToolUse,
};
use lathe_core::provider::anthropic::AnthropicProvider;
use lathe_core::provider::validate::{self, Rule};
use lathe_core::provider::{Provider, ProviderError};
use mock_llm::api_error as api;
use mock_llm::MockServer;
use serde_json::{json, Value};

fn text(t: &str) -> ContentBlock {
    ContentBlock::Text { text: t.into() }
}

fn msg(role: Role, content: Vec<ContentBlock>) -> Message {
    Message { role, content }
}

fn user(t: &str) -> Message {
    msg(Role::User, vec![text(t)])
}

fn assistant(t: &str) -> Message {
    msg(Role::Assistant, vec![text(t)])
}

fn call(id: &str, input: Value) -> ContentBlock {
    ContentBlock::ToolUse(ToolUse {
        id: id.into(),
        name: "Read".into(),
        input,
        extra: Default::default(),
    })
}

fn result(id: &str, content: ToolResultContent) -> ContentBlock {
    ContentBlock::ToolResult(ToolResult {
        tool_use_id: id.into(),
        content,
        is_error: false,
    })
}

fn ok(id: &str) -> ContentBlock {
    result(id, ToolResultContent::Text("ok".into()))
}

fn request(messages: Vec<Message>) -> MessagesRequest {
    MessagesRequest {
        model: "claude-test".into(),
        max_tokens: 64,
        system: "You are a test.".into(),
        messages: lathe_core::protocol::shared(messages),
        tools: vec![tool("Read")],
        stream: false,
    }
}

fn tool(name: &str) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: "Reads a file.".into(),
        input_schema: json!({"type": "object", "properties": {}}),
    }
}

/// The header of a PNG of `w` × `h`, padded with zeros to `len` bytes.
fn png(w: u32, h: u32, len: usize) -> Vec<u8> {
    let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    b.extend(w.to_be_bytes());
    b.extend(h.to_be_bytes());
    b.extend([8, 6, 0, 0, 0]);
    b.resize(len.max(b.len()), 0);
    b
}

fn image(media_type: &str, bytes: &[u8]) -> ContentBlock {
    ContentBlock::Image {
        source: ImageSource {
            kind: "base64".into(),
            media_type: media_type.into(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        },
    }
}

fn cached(t: &str) -> ContentBlock {
    ContentBlock::Opaque(json!({"type": "text", "text": t, "cache_control": {"type": "ephemeral"}}))
}

/// A request that breaks one rule: what `validate` must report, what
/// mock-llm must answer, and whether `sanitize` repairs it.
struct Case {
    name: &'static str,
    req: MessagesRequest,
    rule: Rule,
    api_message: String,
    repairable: bool,
}

fn cases() -> Vec<Case> {
    let big = 3_932_161; // 5 MB + 4 of base64
    let mut cases = vec![
        Case {
            name: "max_tokens 0",
            req: MessagesRequest {
                max_tokens: 0,
                ..request(vec![user("hi")])
            },
            rule: validate::MAX_TOKENS,
            api_message: api::MAX_TOKENS_BELOW_ONE.into(),
            repairable: false,
        },
        Case {
            name: "no messages",
            req: request(vec![]),
            rule: validate::MESSAGES_NON_EMPTY,
            api_message: api::NO_MESSAGES.into(),
            repairable: false,
        },
        Case {
            name: "assistant first",
            req: request(vec![assistant("Hello."), user("hi")]),
            rule: validate::FIRST_MESSAGE_USER,
            api_message: api::FIRST_MESSAGE_NOT_USER.into(),
            repairable: false,
        },
        Case {
            name: "empty assistant message mid-conversation",
            req: request(vec![user("a"), msg(Role::Assistant, vec![]), user("b")]),
            rule: validate::CONTENT_NON_EMPTY,
            api_message: api::empty_content(1),
            repairable: true,
        },
        Case {
            name: "empty text block",
            req: request(vec![msg(Role::User, vec![text(""), text("hi")])]),
            rule: validate::TEXT_NON_EMPTY,
            api_message: api::EMPTY_TEXT.into(),
            repairable: true,
        },
        Case {
            name: "empty tool result",
            req: request(vec![
                user("read it"),
                msg(Role::Assistant, vec![call("toolu_01", json!({}))]),
                msg(
                    Role::User,
                    vec![result("toolu_01", ToolResultContent::Text(String::new()))],
                ),
            ]),
            rule: validate::TEXT_NON_EMPTY,
            api_message: api::EMPTY_TEXT.into(),
            repairable: false,
        },
        Case {
            name: "whitespace-only assistant answer",
            req: request(vec![user("a"), assistant("\n\n"), user("b")]),
            rule: validate::TEXT_NON_WHITESPACE,
            api_message: api::WHITESPACE_TEXT.into(),
            repairable: true,
        },
        Case {
            name: "prefill ending in a space",
            req: request(vec![user("a"), assistant("The answer is ")]),
            rule: validate::FINAL_ASSISTANT_TRAILING_WHITESPACE,
            api_message: api::TRAILING_WHITESPACE.into(),
            repairable: true,
        },
        Case {
            name: "unanswered tool call",
            req: request(vec![
                user("read it"),
                msg(Role::Assistant, vec![call("toolu_01", json!({}))]),
                user("never mind"),
            ]),
            rule: validate::TOOL_RESULT_PAIRING,
            api_message: api::missing_tool_result(1, &["toolu_01"]),
            repairable: false,
        },
        Case {
            name: "tool call id twice",
            req: request(vec![
                user("read it"),
                msg(
                    Role::Assistant,
                    vec![call("toolu_01", json!({})), call("toolu_01", json!({}))],
                ),
                msg(Role::User, vec![ok("toolu_01"), ok("toolu_01")]),
            ]),
            rule: validate::TOOL_USE_ID_UNIQUE,
            api_message: api::duplicate_tool_use_id(1, 1),
            repairable: true, // sent renamed, with its result (validate::sanitize)
        },
        Case {
            name: "tool call id with a dot",
            req: request(vec![
                user("read it"),
                msg(Role::Assistant, vec![call("call.1", json!({}))]),
                msg(Role::User, vec![ok("call.1")]),
            ]),
            rule: validate::TOOL_USE_ID_PATTERN,
            api_message: api::tool_use_id_pattern(1, 0),
            repairable: true, // sent renamed, with its result (validate::sanitize)
        },
        Case {
            name: "tool call input not an object",
            req: request(vec![
                user("read it"),
                msg(Role::Assistant, vec![call("toolu_01", json!("a.txt"))]),
                msg(Role::User, vec![ok("toolu_01")]),
            ]),
            rule: validate::TOOL_USE_INPUT_OBJECT,
            api_message: api::tool_use_input_not_object(1, 0),
            repairable: false,
        },
        Case {
            name: "tool name with a space",
            req: MessagesRequest {
                tools: vec![tool("Read file")],
                ..request(vec![user("hi")])
            },
            rule: validate::TOOL_NAME_PATTERN,
            api_message: api::tool_name_pattern(0),
            repairable: false,
        },
        Case {
            name: "tool schema with oneOf at its top level",
            req: MessagesRequest {
                tools: vec![ToolDefinition {
                    input_schema: json!({ "type": "object", "oneOf": [{ "required": ["a"] }, { "required": ["b"] }] }),
                    ..tool("Find")
                }],
                ..request(vec![user("hi")])
            },
            rule: validate::TOOL_SCHEMA_TOP_LEVEL,
            api_message: api::tool_schema_top_level_combinator(0),
            repairable: false,
        },
        Case {
            name: "tool name twice",
            req: MessagesRequest {
                tools: vec![tool("Read"), tool("Read")],
                ..request(vec![user("hi")])
            },
            rule: validate::TOOL_NAME_UNIQUE,
            api_message: api::DUPLICATE_TOOL_NAMES.into(),
            repairable: false,
        },
        Case {
            name: "bmp image",
            req: request(vec![msg(
                Role::User,
                vec![image("image/bmp", b"BM"), text("what is it?")],
            )]),
            rule: validate::IMAGE_MEDIA_TYPE,
            api_message: api::image_media_type("messages.0.content.0"),
            repairable: false,
        },
        Case {
            name: "bmp image in a tool result",
            req: request(vec![
                user("look"),
                msg(Role::Assistant, vec![call("toolu_01", json!({}))]),
                msg(
                    Role::User,
                    vec![result(
                        "toolu_01",
                        ToolResultContent::Blocks(vec![image("image/bmp", b"BM")]),
                    )],
                ),
            ]),
            rule: validate::IMAGE_MEDIA_TYPE,
            api_message: api::image_media_type("messages.2.content.0.tool_result.content.0"),
            repairable: false,
        },
        Case {
            name: "png declared jpeg",
            req: request(vec![msg(
                Role::User,
                vec![image("image/jpeg", &png(1, 1, 0)), text("what is it?")],
            )]),
            rule: validate::IMAGE_MEDIA_TYPE_MATCHES,
            api_message: api::image_media_type_mismatch(
                "messages.0.content.0",
                "image/jpeg",
                "image/png",
            ),
            repairable: false,
        },
        Case {
            name: "image over 5 MB of base64",
            req: request(vec![msg(
                Role::User,
                vec![image("image/png", &png(1, 1, big)), text("what is it?")],
            )]),
            rule: validate::IMAGE_SIZE,
            api_message: api::image_too_large("messages.0.content.0", 5_242_884),
            repairable: false,
        },
        Case {
            name: "image 8001 px wide",
            req: request(vec![msg(
                Role::User,
                vec![image("image/png", &png(8001, 1, 0)), text("what is it?")],
            )]),
            rule: validate::IMAGE_DIMENSIONS,
            api_message: api::image_too_wide("messages.0.content.0", false),
            repairable: false,
        },
        Case {
            name: "five cache_control blocks",
            // No system prompt and no tools, and the last block already
            // marked: the client's own prompt-cache breakpoints add none.
            req: MessagesRequest {
                system: String::new(),
                tools: vec![],
                ..request(vec![msg(
                    Role::User,
                    ["a", "b", "c", "d", "e"]
                        .iter()
                        .map(|t| cached(t))
                        .collect(),
                )])
            },
            rule: validate::CACHE_CONTROL_LIMIT,
            api_message: api::too_many_cache_control(5),
            repairable: false,
        },
        Case {
            name: "thinking without signature",
            req: request(vec![
                user("a"),
                msg(
                    Role::Assistant,
                    vec![
                        ContentBlock::Thinking {
                            thinking: "Let me think.".into(),
                            signature: String::new(),
                        },
                        text("Done."),
                    ],
                ),
                user("b"),
            ]),
            rule: validate::THINKING_SIGNATURE,
            api_message: api::thinking_signature_invalid(1, 0),
            repairable: true,
        },
    ];
    let mut many: Vec<ContentBlock> = (0..20)
        .map(|_| image("image/png", &png(10, 10, 0)))
        .collect();
    many.push(image("image/png", &png(2001, 10, 0)));
    many.push(text("compare them"));
    cases.push(Case {
        name: "21 images, one 2001 px",
        req: request(vec![msg(Role::User, many)]),
        rule: validate::IMAGE_DIMENSIONS,
        api_message: api::image_too_wide("messages.0.content.20", true),
        repairable: false,
    });
    cases
}

async fn mock(entries: usize) -> MockServer {
    let responses: Vec<Value> = (0..entries)
        .map(|_| json!({"content": [{"type": "text", "text": "ok"}]}))
        .collect();
    common::spawn_mock(&json!({ "responses": responses })).await
}

fn client(server: &MockServer) -> AnthropicProvider {
    AnthropicProvider::new(server.url(), None, "ANTHROPIC_API_KEY").unwrap()
}

#[tokio::test]
async fn every_rule_is_flagged_by_lathe_and_refused_by_mock_llm_with_the_api_message() {
    let cases = cases();
    let server = mock(cases.len()).await;
    let provider = client(&server);
    for case in cases {
        let problems = validate::validate(&case.req).expect_err(case.name);
        assert!(
            problems.iter().any(|p| p.rule == case.rule.id),
            "{}: validate reported {problems:?}, not {}",
            case.name,
            case.rule.id
        );
        match provider.complete(&case.req).await {
            Err(ProviderError::Http {
                status,
                kind,
                message,
                ..
            }) => {
                assert_eq!(status, 400, "{}", case.name);
                assert_eq!(kind, "invalid_request_error", "{}", case.name);
                assert_eq!(message, case.api_message, "{}", case.name);
            }
            other => panic!("{}: mock-llm accepted the request: {other:?}", case.name),
        }
        match validate::prepare(case.req) {
            Ok(repaired) => {
                assert!(case.repairable, "{}: prepare let it through", case.name);
                let answer = provider.complete(&repaired).await;
                assert!(answer.is_ok(), "{}: repaired, yet {answer:?}", case.name);
            }
            Err(e) => {
                assert!(!case.repairable, "{}: not repaired: {e}", case.name);
                assert!(
                    e.to_string().contains("This is a bug in lathe"),
                    "{}: {e}",
                    case.name
                );
            }
        }
    }
}

#[tokio::test]
async fn a_well_formed_request_passes_both() {
    let server = mock(1).await;
    let req = MessagesRequest {
        tools: vec![tool("Read"), tool("Edit")],
        ..request(vec![
            user("read a.txt"),
            msg(
                Role::Assistant,
                vec![
                    text("Reading."),
                    call("toolu_01", json!({"file_path": "a.txt"})),
                ],
            ),
            msg(
                Role::User,
                vec![
                    result(
                        "toolu_01",
                        ToolResultContent::Blocks(vec![
                            text("a picture"),
                            image("image/png", &png(640, 480, 0)),
                        ]),
                    ),
                    text("and?"),
                ],
            ),
            msg(
                Role::Assistant,
                vec![
                    ContentBlock::Thinking {
                        thinking: "It is a picture.".into(),
                        signature: "EqQBCgIYAhIM".into(),
                    },
                    text("It shows a picture."),
                ],
            ),
            user("thanks"),
        ])
    };
    assert_eq!(validate::validate(&req), Ok(()));
    let prepared = validate::prepare(req.clone()).unwrap();
    assert_eq!(prepared, req, "nothing to repair");
    client(&server).complete(&prepared).await.unwrap();
    assert_eq!(server.served(), 1);
}

/// The bug this guards against: the model answers with whitespace only, and
/// every later request carries that answer and is refused. Needs the turn
/// loop to call `validate::prepare` before each send (src/agent/turn.rs,
/// `Turn::request`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whitespace_only_answer_does_not_break_the_conversation() {
    let h = common::harness(
        json!({"responses": [
            {"content": [{"type": "text", "text": "\n\n"}]},
            {"content": [{"type": "text", "text": "Back on track."}],
             "expect": {"last_user_text_contains": "second"}}
        ]}),
        vec![],
        |_| {},
        vec![],
    )
    .await;
    assert_eq!(h.ask("first").await, TurnOutcome::Done);
    assert_eq!(h.ask("second").await, TurnOutcome::Done);
    assert_eq!(h.server.served(), 2);
    let sent = h.server.requests();
    let mut last = sent.last().unwrap().clone();
    // The project context (system_prompt::project_context) opens the
    // first user message of every request.
    let context = last["messages"][0]["content"]
        .as_array_mut()
        .unwrap()
        .remove(0);
    assert!(context["text"].as_str().unwrap().starts_with("<env>"));
    assert_eq!(
        last["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "first"},
            {"type": "text", "text": "second", "cache_control": {"type": "ephemeral"}}
        ]}]),
        "the whitespace-only answer is gone and the two prompts are one user turn"
    );
}
