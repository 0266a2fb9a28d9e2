//! Keeps every request lathe sends inside the rules the Messages API
//! enforces with HTTP 400 (docs/provider.md, "The model protocol").
//!
//! A request the API rejects is not a one-off: the transcript it came from
//! is sent again on every later request, so one bad block (an assistant
//! answer made only of whitespace, say) would break the conversation for
//! good. So the turn loop passes every request through [`prepare`] before
//! sending it:
//!
//! 1. [`sanitize`] repairs what can be repaired without changing what the
//!    conversation says: blank text blocks, messages left empty, two
//!    messages of one role in a row, trailing whitespace at the very end of
//!    the final assistant message, thinking blocks without a signature.
//! 2. [`validate`] checks every rule in [`RULES`]; what remains after
//!    sanitizing is a lathe bug, and the user is told so instead of the
//!    request being sent (and rejected) again and again.
//!
//! Each rule names where it comes from (the API reference, or the API's own
//! 400 message quoted in public reports). The table with the API's exact
//! messages is in `tests/mock-llm/README.md` ("Request rules"); `mock-llm`
//! answers every violation with that message, so the integration tests
//! catch a request lathe should never have built.

use std::collections::HashSet;
use std::fmt::{self, Write as _};
use std::sync::Arc;

use base64::Engine;
use serde_json::Value;

use crate::protocol::{
    ContentBlock, ImageSource, Message, MessagesRequest, Role, ToolResultContent,
};
use crate::text::fill;

use super::ProviderError;

/// One rule of the Messages API that a request must satisfy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// Stable short name, the [`RequestProblem::rule`] of a violation.
    pub id: &'static str,
    /// What is wrong, for the user: a template filled with the rule's own
    /// placeholders (`{value}`, `{limit}`, …) by [`validate`].
    pub what: &'static str,
    /// Where the rule comes from: the API reference, or the API's 400
    /// message as quoted in a public report.
    pub source: &'static str,
}

/// `max_tokens` must be at least 1.
pub const MAX_TOKENS: Rule = Rule {
    id: "max_tokens",
    what: "max_tokens is {value}; the API needs at least 1",
    source: "API reference, POST /v1/messages: max_tokens, required range x >= 1",
};

/// `messages` must not be empty.
pub const MESSAGES_NON_EMPTY: Rule = Rule {
    id: "messages_non_empty",
    what: "the request has no messages",
    source: "API 400 \"messages: at least one message is required\" (langgenius/dify#25953)",
};

/// The first message must be a user message.
pub const FIRST_MESSAGE_USER: Rule = Rule {
    id: "first_message_user",
    what: "the first message is an assistant message; it must be a user message",
    source:
        "API 400 \"messages: first message must use the \\\"user\\\" role\" (lobehub/lobehub#1601)",
};

/// Every message has content, except an optional final assistant message.
pub const CONTENT_NON_EMPTY: Rule = Rule {
    id: "content_non_empty",
    what: "a {role} message has no content",
    source: "API 400 \"messages.N: all messages must have non-empty content except for the optional final assistant message\" (anthropics/claude-code#4416)",
};

/// Text blocks (also inside tool results) must not be empty.
pub const TEXT_NON_EMPTY: Rule = Rule {
    id: "text_non_empty",
    what: "a text block is empty",
    source:
        "API 400 \"messages: text content blocks must be non-empty\" (anthropics/claude-code#59812)",
};

/// Text blocks of a message must hold more than whitespace.
pub const TEXT_NON_WHITESPACE: Rule = Rule {
    id: "text_non_whitespace",
    what: "a text block holds only whitespace",
    source: "API 400 \"messages: text content blocks must contain non-whitespace text\" (anthropics/claude-code#23440)",
};

/// The final assistant message (a prefill) must not end with whitespace.
pub const FINAL_ASSISTANT_TRAILING_WHITESPACE: Rule = Rule {
    id: "final_assistant_trailing_whitespace",
    what: "the final assistant message ends with whitespace",
    source: "API 400 \"messages: final assistant content cannot end with trailing whitespace\" (tailcallhq/forgecode#1872)",
};

/// Every `tool_use` is answered first thing in the next (user) message, and
/// every `tool_result` answers a `tool_use` of the message right before.
pub const TOOL_RESULT_PAIRING: Rule = Rule {
    id: "tool_result_pairing",
    what: "tool calls and tool results do not pair up: {detail}",
    source: "API 400 \"messages.N: `tool_use` ids were found without `tool_result` blocks immediately after\" / \"unexpected `tool_use_id` found in `tool_result` blocks\" (anthropics/claude-code#3512, #14643)",
};

/// `tool_use` ids are unique in the whole request.
pub const TOOL_USE_ID_UNIQUE: Rule = Rule {
    id: "tool_use_id_unique",
    what: "the tool call id {value} appears twice",
    source: "API 400 \"messages.N.content.M: tool_use ids must be unique\" (anthropics/claude-code#20700, #28515)",
};

/// `tool_use` ids match `^[a-zA-Z0-9_-]+$`.
pub const TOOL_USE_ID_PATTERN: Rule = Rule {
    id: "tool_use_id_pattern",
    what: "the tool call id {value} has characters other than letters, digits, _ and -",
    source: "API 400 \"messages.N.content.M.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'\" (anomalyco/opencode#1279)",
};

/// `tool_use.input` is a JSON object.
pub const TOOL_USE_INPUT_OBJECT: Rule = Rule {
    id: "tool_use_input_object",
    what: "a tool call's input is not a JSON object",
    source: "API 400 \"messages.N.content.M.tool_use.input: Input should be a valid dictionary\" (anthropics/claude-code#6696)",
};

/// Tool names match `^[a-zA-Z0-9_-]{1,64}$` (stricter than the API's
/// current 128, see [`TOOL_NAME_MAX_LEN`]).
pub const TOOL_NAME_PATTERN: Rule = Rule {
    id: "tool_name_pattern",
    what: "the tool name {value} is not 1 to {limit} letters, digits, _ and -",
    source: "API 400 \"tools.N.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'\" (modelcontextprotocol/modelcontextprotocol#1345; {1,64} before mid-2025, apify/tester-mcp-client#11)",
};

/// Tool names are unique.
pub const TOOL_NAME_UNIQUE: Rule = Rule {
    id: "tool_name_unique",
    what: "the tool name {value} appears twice",
    source: "API 400 \"tools: Tool names must be unique.\" (danny-avila/LibreChat#13162)",
};

/// A tool's `input_schema` has no `anyOf`, `oneOf` or `allOf` at its top
/// level (lathe's user tools flatten them: `tools::user::api_schema`).
pub const TOOL_SCHEMA_TOP_LEVEL: Rule = Rule {
    id: "tool_schema_top_level",
    what: "the input_schema of tool {value} has anyOf, oneOf or allOf at its top level",
    source: "API 400 \"tools.N.custom.input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level\" (anthropics/claude-code#5319, mobile-next/mobile-mcp#344)",
};

/// Images are PNG, JPEG, GIF or WebP.
pub const IMAGE_MEDIA_TYPE: Rule = Rule {
    id: "image_media_type",
    what: "an image has media type {value}; the API takes image/jpeg, image/png, image/gif or image/webp",
    source: "API 400 \"….image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'\" (anthropics/claude-code#5955)",
};

/// An image's media type is the one its bytes are.
pub const IMAGE_MEDIA_TYPE_MATCHES: Rule = Rule {
    id: "image_media_type_matches",
    what: "an image is declared {value} but its bytes are {actual}",
    source: "API 400 \"….image.source.base64: The image was specified using the image/jpeg media type, but the image appears to be a image/png image\" (vybestack/llxprt-code#2130)",
};

/// An image's base64 text is at most 5 MB.
pub const IMAGE_SIZE: Rule = Rule {
    id: "image_size",
    what: "an image is {value} bytes of base64; the API takes at most {limit}",
    source: "API 400 \"….image.source.base64: image exceeds 5 MB maximum: N bytes > 5242880 bytes\", N the base64 length (langchain-ai/langchain#21654, earendil-works/pi#424)",
};

/// An image is at most 8000 px wide and high, 2000 px when the request has
/// more than 20 images.
pub const IMAGE_DIMENSIONS: Rule = Rule {
    id: "image_dimensions",
    what: "an image is {value} px; with {count} images in the request the API takes at most {limit} px a side",
    source: "Vision guide (platform.claude.com/docs/en/build-with-claude/vision: 8000x8000 px, 2000x2000 px above 20 images); API 400 \"….image.source.base64.data: At least one of the image dimensions exceed max allowed size: 8000 pixels\" (anthropics/claude-code#4778, #52220)",
};

/// At most 4 blocks carry `cache_control` (system, tools and messages
/// together).
pub const CACHE_CONTROL_LIMIT: Rule = Rule {
    id: "cache_control_limit",
    what: "{value} blocks carry cache_control; the API takes at most {limit}",
    source: "API 400 \"A maximum of 4 blocks with cache_control may be provided. Found 5.\" (tghamm/Anthropic.SDK#50)",
};

/// A thinking block sent back keeps its signature.
pub const THINKING_SIGNATURE: Rule = Rule {
    id: "thinking_signature",
    what: "a thinking block has no signature",
    source: "API 400 \"messages.N.content.M.thinking.signature: Field required\" / \"messages.N.content.M: Invalid `signature` in `thinking` block\" (JohnnyZ93/oai-compatible-copilot#217, ding113/claude-code-hub#518)",
};

/// Every rule [`validate`] checks, in the order it reports them.
pub const RULES: &[Rule] = &[
    MAX_TOKENS,
    TOOL_NAME_PATTERN,
    TOOL_NAME_UNIQUE,
    TOOL_SCHEMA_TOP_LEVEL,
    MESSAGES_NON_EMPTY,
    FIRST_MESSAGE_USER,
    CONTENT_NON_EMPTY,
    TEXT_NON_EMPTY,
    TEXT_NON_WHITESPACE,
    TOOL_USE_ID_PATTERN,
    TOOL_USE_ID_UNIQUE,
    TOOL_USE_INPUT_OBJECT,
    TOOL_RESULT_PAIRING,
    IMAGE_MEDIA_TYPE,
    IMAGE_SIZE,
    IMAGE_MEDIA_TYPE_MATCHES,
    IMAGE_DIMENSIONS,
    THINKING_SIGNATURE,
    FINAL_ASSISTANT_TRAILING_WHITESPACE,
    CACHE_CONTROL_LIMIT,
];

/// Longest tool name lathe sends. The Messages API takes 128 since mid-2025
/// (64 before); OpenAI-compatible endpoints take 64, so 64 is safe for both.
pub const TOOL_NAME_MAX_LEN: usize = 64;

/// The media types the API takes for an image.
pub const IMAGE_MEDIA_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// Most base64 bytes of one image: 5 MB (5 × 1024 × 1024), measured on the
/// base64 text, not on the decoded bytes.
pub const IMAGE_MAX_BASE64_BYTES: usize = 5 * 1024 * 1024;

/// Longest image side in pixels.
pub const IMAGE_MAX_SIDE: u32 = 8000;

/// Longest image side in pixels when the request has more than
/// [`MANY_IMAGES`] images.
pub const IMAGE_MAX_SIDE_MANY: u32 = 2000;

/// Above this many images in one request, [`IMAGE_MAX_SIDE_MANY`] applies.
pub const MANY_IMAGES: usize = 20;

/// Most blocks with `cache_control` in one request.
pub const CACHE_CONTROL_MAX: usize = 4;

/// The user's text for a problem left after sanitizing. `{problem}` is the
/// rule's `what`, `{path}` where in the request it is.
pub const LATHE_BUG: &str = "lathe built a request the Anthropic API would refuse: {problem} (at {path}). This is a bug in lathe, so the request was not sent: asking again in this conversation would fail the same way. Start a new conversation by calling require(\"lathe\").setup() again (with your options), then ask with :Lathe; please report this message.";

/// Added to [`LATHE_BUG`] when more than one rule is broken: `{n}` how many
/// more, `{list}` their rules and paths.
pub const MORE_PROBLEMS: &str = " ({n} more: {list})";

/// A rule a request breaks, found by [`validate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestProblem {
    /// The [`Rule::id`] of the broken rule.
    pub rule: &'static str,
    /// Where in the request body: `messages.3.content.0`, `tools.2.name`, …
    pub path: String,
    /// What is wrong, that it is a lathe bug, and what the user can do
    /// ([`LATHE_BUG`] filled in).
    pub message: String,
}

impl RequestProblem {
    fn new(rule: &Rule, path: impl Into<String>, values: &[(&str, &str)]) -> Self {
        let path = path.into();
        let problem = fill(rule.what, values);
        Self {
            rule: rule.id,
            message: fill(LATHE_BUG, &[("problem", &problem), ("path", &path)]),
            path,
        }
    }
}

/// One change [`sanitize`] made. Paths are those of the request as it was
/// when that step ran (blocks and messages are dropped first, then messages
/// merged, then the final text trimmed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repair {
    /// An empty or whitespace-only text block was dropped.
    DroppedBlankText {
        /// `messages.I.content.J`
        path: String,
    },
    /// A thinking block without a signature was dropped (the API cannot
    /// check it, and rejects it).
    DroppedUnsignedThinking {
        /// `messages.I.content.J`
        path: String,
    },
    /// A message left without content was dropped.
    DroppedEmptyMessage {
        /// `messages.I`
        path: String,
    },
    /// A message of the same role as the one before was joined to it (the
    /// API combines consecutive same-role turns into one turn anyway).
    MergedIntoPrevious {
        /// `messages.I`, now part of `messages.I-1`
        path: String,
    },
    /// Trailing whitespace was cut from the final assistant message's last
    /// text block.
    TrimmedTrailingWhitespace {
        /// `messages.I.content.J`
        path: String,
    },
    /// A `tool_use` id the API would refuse (characters other than
    /// letters, digits, `_` and `-`, or used before in the request) was
    /// sent as another, and so was the id of its `tool_result`.
    RenamedToolUseId {
        /// `messages.I.content.J`
        path: String,
        /// The id as the model wrote it.
        from: String,
        /// The id sent.
        to: String,
    },
}

impl fmt::Display for Repair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Repair::DroppedBlankText { path } => write!(f, "dropped a blank text block at {path}"),
            Repair::DroppedUnsignedThinking { path } => {
                write!(f, "dropped a thinking block without signature at {path}")
            }
            Repair::DroppedEmptyMessage { path } => write!(f, "dropped the empty message {path}"),
            Repair::MergedIntoPrevious { path } => {
                write!(f, "joined {path} to the message before it")
            }
            Repair::TrimmedTrailingWhitespace { path } => {
                write!(f, "trimmed trailing whitespace at {path}")
            }
            Repair::RenamedToolUseId { path, from, to } => {
                write!(f, "sent the tool call id {from:?} at {path} as {to:?}")
            }
        }
    }
}

/// Sanitizes `req` (see [`sanitize`]), then checks it (see [`validate`]).
/// The one call the turn loop makes before every send.
///
/// Returns the request to send, or [`ProviderError::Request`] (never
/// retried) whose text is the first problem's [`RequestProblem::message`]
/// plus [`MORE_PROBLEMS`] when there are more.
pub fn prepare(mut req: MessagesRequest) -> Result<MessagesRequest, ProviderError> {
    sanitize(&mut req);
    match validate(&req) {
        Ok(()) => Ok(req),
        Err(problems) => Err(ProviderError::Request(summary(&problems))),
    }
}

/// What [`prepare`] found about the start of the last requests, so the
/// next one checks only what is new (a request's cost follows
/// what changed). The transcript shares its messages with each request,
/// so the next request starts with the same `Arc`s: those already passed,
/// with nothing to repair. [`Checked::prepare`] checks the rest, and the
/// places where the rest meets them (role order, pairing, id uniqueness,
/// the limits counted over the whole request); anything it would have to
/// repair, or an image count that changes what an earlier image may be,
/// sends the whole request through [`prepare`] again.
#[derive(Debug, Default)]
pub struct Checked {
    memo: std::sync::Mutex<Memo>,
}

#[derive(Debug, Default)]
struct Memo {
    /// The first messages of a request that passed with nothing repaired
    /// (never its last message, which has rules of its own).
    messages: Vec<Arc<Message>>,
    /// Their `tool_use` ids.
    ids: HashSet<String>,
    /// Images among them, and the request's images when they were checked
    /// (an image's size limit depends on how many a request carries).
    images: usize,
    images_checked_with: usize,
    /// Blocks with a `cache_control` among them.
    cache_controls: usize,
}

impl Memo {
    fn truncate(&mut self, n: usize) {
        if n < self.messages.len() {
            self.messages.truncate(n);
            self.ids = self
                .messages
                .iter()
                .flat_map(|m| m.tool_uses())
                .map(|t| t.id.clone())
                .collect();
            self.images = count_images(&self.messages);
            self.cache_controls = count_cache_control(&self.messages);
        }
    }

    fn push(&mut self, messages: &[Arc<Message>]) {
        self.ids.extend(
            messages
                .iter()
                .flat_map(|m| m.tool_uses())
                .map(|t| t.id.clone()),
        );
        self.images += count_images(messages);
        self.cache_controls += count_cache_control(messages);
        self.messages.extend(messages.iter().cloned());
    }
}

impl Checked {
    /// [`prepare`], checking only what is new since the last request.
    pub fn prepare(&self, req: MessagesRequest) -> Result<MessagesRequest, ProviderError> {
        let mut memo = self.memo.lock().unwrap_or_else(|e| e.into_inner());
        if Self::tail_passes(&mut memo, &req) {
            return Ok(req);
        }
        // The whole request, then what of its start came through untouched.
        let input: Vec<Arc<Message>> = req.messages.clone();
        let req = prepare(req)?;
        let kept = input
            .iter()
            .zip(&req.messages)
            .take_while(|(a, b)| Arc::ptr_eq(a, b))
            .count()
            .min(req.messages.len().saturating_sub(1));
        *memo = Memo::default();
        memo.push(&input[..kept]);
        memo.images_checked_with = count_images(&req.messages);
        Ok(req)
    }

    /// Whether `req` starts with messages the memo holds and the rest
    /// needs no repair and breaks no rule; the memo then holds all but
    /// its last message.
    fn tail_passes(memo: &mut Memo, req: &MessagesRequest) -> bool {
        let n = req.messages.len();
        let same = memo
            .messages
            .iter()
            .zip(&req.messages)
            .take_while(|(a, b)| Arc::ptr_eq(a, b))
            .count()
            .min(n.saturating_sub(1));
        if same == 0 {
            return false;
        }
        memo.truncate(same);
        let tail = &req.messages[same..];
        // Nothing sanitize would repair: no blank text or unsigned
        // thinking, no empty message, roles alternating, no trailing
        // whitespace to trim at the end, ids valid and new.
        let droppable = |b: &ContentBlock| {
            text_of(b).is_some_and(|t| t.trim().is_empty())
                || is_textless_text(b)
                || is_thinking(b) && !has_signature(b)
        };
        let mut role = req.messages[same - 1].role;
        let mut tail_ids: HashSet<&str> = HashSet::new();
        for m in tail {
            if m.content.is_empty() || m.role == role || m.content.iter().any(droppable) {
                return false;
            }
            role = m.role;
            for t in m.tool_uses() {
                if !is_id_text(&t.id) || memo.ids.contains(&t.id) || !tail_ids.insert(&t.id) {
                    return false;
                }
            }
        }
        let ends_in_whitespace = req.messages[n - 1].role == Role::Assistant
            && req.messages[n - 1]
                .content
                .last()
                .and_then(text_of)
                .is_some_and(|t| t.ends_with(char::is_whitespace));
        if ends_in_whitespace {
            return false;
        }
        // The rules, on the new messages and where they meet the old.
        let images = memo.images + count_images(tail);
        if memo.images > 0 && images != memo.images_checked_with {
            return false;
        }
        let mut problems = Vec::new();
        if req.max_tokens < 1 {
            return false;
        }
        check_tools(req, &mut problems);
        let mut ids = HashSet::new();
        let mut path = String::new();
        for (i, message) in tail.iter().enumerate() {
            for (j, block) in message.content.iter().enumerate() {
                path.clear();
                let _ = write!(path, "messages.{}.content.{j}", same + i);
                check_block(block, &path, images, &mut ids, &mut problems);
            }
        }
        for i in same - 1..n {
            check_pairing(&req.messages, i, &mut problems);
        }
        check_final_assistant(&req.messages, &mut problems);
        if memo.cache_controls + count_cache_control(tail) > CACHE_CONTROL_MAX {
            return false;
        }
        if !problems.is_empty() {
            return false;
        }
        memo.push(&req.messages[same..n - 1]);
        memo.images_checked_with = images;
        true
    }
}

fn summary(problems: &[RequestProblem]) -> String {
    let Some((first, rest)) = problems.split_first() else {
        return String::new();
    };
    let mut text = first.message.clone();
    if !rest.is_empty() {
        let list = rest
            .iter()
            .map(|p| format!("{} at {}", p.rule, p.path))
            .collect::<Vec<_>>()
            .join(", ");
        text.push_str(&fill(
            MORE_PROBLEMS,
            &[("n", &rest.len().to_string()), ("list", &list)],
        ));
    }
    text
}

/// Repairs in place what breaks a rule and can be repaired without changing
/// what the conversation says, and returns what it did (for a debug log or
/// a test). Never panics; a request it cannot repair is left for
/// [`validate`] to report.
///
/// In order:
/// 1. drops text blocks of messages that are empty or only whitespace
///    ([`TEXT_NON_EMPTY`], [`TEXT_NON_WHITESPACE`]), and thinking blocks
///    without a signature ([`THINKING_SIGNATURE`]);
/// 2. drops messages left without content ([`CONTENT_NON_EMPTY`]; a message
///    with a `tool_use` or `tool_result` never gets empty, as those blocks
///    are kept);
/// 3. joins a message to the one before when both have the same role, so
///    roles alternate again; the API documents that it combines
///    consecutive same-role turns into one, so this says the same;
/// 4. trims trailing whitespace from the last block of a final assistant
///    message when it is text ([`FINAL_ASSISTANT_TRAILING_WHITESPACE`]);
/// 5. sends a `tool_use` id that breaks [`TOOL_USE_ID_PATTERN`] or
///    [`TOOL_USE_ID_UNIQUE`] (a server that numbers its calls anew in
///    every answer) as another, its `tool_result` in the next message too.
///
/// Text inside `tool_result` content is left alone: what a tool said is
/// not lathe's to edit.
pub fn sanitize(req: &mut MessagesRequest) -> Vec<Repair> {
    let mut repairs = Vec::new();
    let droppable = |block: &ContentBlock| {
        text_of(block).is_some_and(|t| t.trim().is_empty())
            || is_textless_text(block)
            || is_thinking(block) && !has_signature(block)
    };
    // A message is copied (`Arc::make_mut`) only when it is repaired: the
    // others stay shared with the transcript.
    for (i, message) in req.messages.iter_mut().enumerate() {
        if !message.content.iter().any(droppable) {
            continue;
        }
        let mut j = 0;
        Arc::make_mut(message).content.retain(|block| {
            let path = format!("messages.{i}.content.{j}");
            j += 1;
            if text_of(block).is_some_and(|t| t.trim().is_empty()) || is_textless_text(block) {
                repairs.push(Repair::DroppedBlankText { path });
                false
            } else if is_thinking(block) && !has_signature(block) {
                repairs.push(Repair::DroppedUnsignedThinking { path });
                false
            } else {
                true
            }
        });
    }
    let mut i = 0;
    req.messages.retain(|m| {
        let keep = !m.content.is_empty();
        if !keep {
            repairs.push(Repair::DroppedEmptyMessage {
                path: format!("messages.{i}"),
            });
        }
        i += 1;
        keep
    });
    let mut merged: Vec<Arc<Message>> = Vec::with_capacity(req.messages.len());
    for (i, message) in std::mem::take(&mut req.messages).into_iter().enumerate() {
        match merged.last_mut() {
            Some(last) if last.role == message.role => {
                repairs.push(Repair::MergedIntoPrevious {
                    path: format!("messages.{i}"),
                });
                Arc::make_mut(last)
                    .content
                    .extend(message.content.iter().cloned());
            }
            _ => merged.push(message),
        }
    }
    req.messages = merged;
    let last_index = req.messages.len().saturating_sub(1);
    if let Some(last) = req.messages.last_mut() {
        let trailing = last.role == Role::Assistant
            && last
                .content
                .last()
                .and_then(text_of)
                .is_some_and(|t| t.ends_with(char::is_whitespace));
        if trailing {
            let last = Arc::make_mut(last);
            let j = last.content.len().saturating_sub(1);
            if let Some(text) = last.content.last_mut().and_then(text_mut) {
                text.truncate(text.trim_end().len());
                repairs.push(Repair::TrimmedTrailingWhitespace {
                    path: format!("messages.{last_index}.content.{j}"),
                });
            }
        }
    }
    rename_tool_use_ids(&mut req.messages, &mut repairs);
    repairs
}

/// Step 5 of [`sanitize`]: every `tool_use` id valid and unique, each
/// renamed one's `tool_result` (in the next message) renamed alike. The
/// new id is the old one with other characters as `_` (`toolu_lathe` when
/// none is left), plus `_2`, `_3`, … until unused. Deterministic, so the
/// same transcript gives the same request every time.
fn rename_tool_use_ids(messages: &mut [Arc<Message>], repairs: &mut Vec<Repair>) {
    // Nearly every request needs no renaming: checked without a copy.
    let mut ids: HashSet<&str> = HashSet::new();
    if messages
        .iter()
        .flat_map(|m| m.tool_uses())
        .all(|t| is_id_text(&t.id) && ids.insert(&t.id))
    {
        return;
    }
    let mut seen: HashSet<String> = HashSet::new();
    for i in 0..messages.len() {
        // Most messages need nothing: looked at without copying them.
        let mut fine: Vec<&str> = Vec::new();
        let all_fine = messages[i].tool_uses().all(|t| {
            let ok = is_id_text(&t.id) && !seen.contains(&t.id) && !fine.contains(&t.id.as_str());
            fine.push(&t.id);
            ok
        });
        if all_fine {
            let ids: Vec<String> = fine.into_iter().map(str::to_string).collect();
            seen.extend(ids);
            continue;
        }
        // (original id, its occurrence among this message's calls, new id)
        let mut renamed: Vec<(String, usize, String)> = Vec::new();
        let mut occurrences: std::collections::HashMap<String, usize> = Default::default();
        for (j, block) in Arc::make_mut(&mut messages[i])
            .content
            .iter_mut()
            .enumerate()
        {
            let ContentBlock::ToolUse(t) = block else {
                continue;
            };
            let occ = occurrences.entry(t.id.clone()).or_insert(0);
            let this = *occ;
            *occ += 1;
            if is_id_text(&t.id) && seen.insert(t.id.clone()) {
                continue;
            }
            let mut base: String =
                t.id.chars()
                    .map(|c| {
                        if c.is_ascii_alphanumeric() || c == '-' {
                            c
                        } else {
                            '_'
                        }
                    })
                    .collect();
            if base.trim_matches('_').is_empty() {
                base = "toolu_lathe".into();
            }
            let mut n = 2;
            let mut to = base.clone();
            while seen.contains(&to) {
                to = format!("{base}_{n}");
                n += 1;
            }
            seen.insert(to.clone());
            repairs.push(Repair::RenamedToolUseId {
                path: format!("messages.{i}.content.{j}"),
                from: t.id.clone(),
                to: to.clone(),
            });
            renamed.push((std::mem::replace(&mut t.id, to.clone()), this, to));
        }
        let Some(next) = messages.get_mut(i + 1).filter(|_| !renamed.is_empty()) else {
            continue;
        };
        // The n-th result for an id answers the n-th call with it.
        let mut results: std::collections::HashMap<String, usize> = Default::default();
        for block in &mut Arc::make_mut(next).content {
            let ContentBlock::ToolResult(r) = block else {
                continue;
            };
            let occ = results.entry(r.tool_use_id.clone()).or_insert(0);
            let this = *occ;
            *occ += 1;
            if let Some((_, _, to)) = renamed
                .iter()
                .find(|(from, n, _)| *from == r.tool_use_id && *n == this)
            {
                r.tool_use_id = to.clone();
            }
        }
    }
}

/// Checks `req` against every rule in [`RULES`] and returns all problems
/// found (empty `Ok` when there are none). Pure: nothing is changed or
/// sent. After [`sanitize`] a transcript lathe built should have none; one
/// that remains is a lathe bug, and each [`RequestProblem::message`] tells
/// the user so and what to do.
pub fn validate(req: &MessagesRequest) -> Result<(), Vec<RequestProblem>> {
    let mut problems = Vec::new();
    if req.max_tokens < 1 {
        problems.push(RequestProblem::new(
            &MAX_TOKENS,
            "max_tokens",
            &[("value", &req.max_tokens.to_string())],
        ));
    }
    check_tools(req, &mut problems);
    if req.messages.is_empty() {
        problems.push(RequestProblem::new(&MESSAGES_NON_EMPTY, "messages", &[]));
    }
    if req.messages.first().is_some_and(|m| m.role != Role::User) {
        problems.push(RequestProblem::new(
            &FIRST_MESSAGE_USER,
            "messages.0.role",
            &[],
        ));
    }
    let images = count_images(&req.messages);
    let mut tool_use_ids = HashSet::new();
    let mut path = String::new();
    let last = req.messages.len().saturating_sub(1);
    for (i, message) in req.messages.iter().enumerate() {
        if message.content.is_empty() && !(i == last && message.role == Role::Assistant) {
            problems.push(RequestProblem::new(
                &CONTENT_NON_EMPTY,
                format!("messages.{i}.content"),
                &[("role", role_name(message.role))],
            ));
        }
        for (j, block) in message.content.iter().enumerate() {
            // One buffer for every block's path: a request of thousands of
            // blocks costs no allocation per block.
            path.clear();
            let _ = write!(path, "messages.{i}.content.{j}");
            check_block(block, &path, images, &mut tool_use_ids, &mut problems);
        }
        check_pairing(&req.messages, i, &mut problems);
    }
    check_final_assistant(&req.messages, &mut problems);
    let cache_controls = count_cache_control(&req.messages);
    if cache_controls > CACHE_CONTROL_MAX {
        problems.push(RequestProblem::new(
            &CACHE_CONTROL_LIMIT,
            "cache_control",
            &[
                ("value", &cache_controls.to_string()),
                ("limit", &CACHE_CONTROL_MAX.to_string()),
            ],
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

fn check_tools(req: &MessagesRequest, problems: &mut Vec<RequestProblem>) {
    let mut seen = HashSet::new();
    for (k, tool) in req.tools.iter().enumerate() {
        let path = format!("tools.{k}.name");
        let name = tool.name.as_str();
        if !(1..=TOOL_NAME_MAX_LEN).contains(&name.len()) || !is_id_text(name) {
            problems.push(RequestProblem::new(
                &TOOL_NAME_PATTERN,
                path.clone(),
                &[
                    ("value", &format!("{name:?}")),
                    ("limit", &TOOL_NAME_MAX_LEN.to_string()),
                ],
            ));
        }
        if !seen.insert(name) {
            problems.push(RequestProblem::new(
                &TOOL_NAME_UNIQUE,
                path,
                &[("value", &format!("{name:?}"))],
            ));
        }
        if ["anyOf", "oneOf", "allOf"]
            .iter()
            .any(|k| tool.input_schema.get(k).is_some())
        {
            problems.push(RequestProblem::new(
                &TOOL_SCHEMA_TOP_LEVEL,
                format!("tools.{k}.input_schema"),
                &[("value", &format!("{name:?}"))],
            ));
        }
    }
}

/// `^[a-zA-Z0-9_-]+$` without the length: the alphabet of tool ids and names.
fn is_id_text(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn check_block<'a>(
    block: &'a ContentBlock,
    path: &str,
    images: usize,
    tool_use_ids: &mut HashSet<&'a str>,
    problems: &mut Vec<RequestProblem>,
) {
    if let Some(text) = text_of(block) {
        if text.is_empty() {
            problems.push(RequestProblem::new(&TEXT_NON_EMPTY, path, &[]));
        } else if text.trim().is_empty() {
            problems.push(RequestProblem::new(&TEXT_NON_WHITESPACE, path, &[]));
        }
        return;
    }
    if is_thinking(block) && !has_signature(block) {
        problems.push(RequestProblem::new(&THINKING_SIGNATURE, path, &[]));
        return;
    }
    match block {
        ContentBlock::Image { source } => check_image(source, path, images, problems),
        ContentBlock::ToolUse(t) => {
            let shown = || format!("{:?}", t.id);
            if !is_id_text(&t.id) {
                problems.push(RequestProblem::new(
                    &TOOL_USE_ID_PATTERN,
                    format!("{path}.id"),
                    &[("value", &shown())],
                ));
            }
            if !tool_use_ids.insert(&t.id) {
                problems.push(RequestProblem::new(
                    &TOOL_USE_ID_UNIQUE,
                    path,
                    &[("value", &shown())],
                ));
            }
            if !t.input.is_object() {
                problems.push(RequestProblem::new(
                    &TOOL_USE_INPUT_OBJECT,
                    format!("{path}.input"),
                    &[],
                ));
            }
        }
        ContentBlock::ToolResult(r) => match &r.content {
            ToolResultContent::Text(s) if s.is_empty() => {
                problems.push(RequestProblem::new(
                    &TEXT_NON_EMPTY,
                    format!("{path}.content"),
                    &[],
                ));
            }
            ToolResultContent::Text(_) => {}
            ToolResultContent::Blocks(blocks) => {
                for (k, inner) in blocks.iter().enumerate() {
                    let inner_path = format!("{path}.content.{k}");
                    if text_of(inner).is_some_and(str::is_empty) {
                        problems.push(RequestProblem::new(&TEXT_NON_EMPTY, inner_path, &[]));
                    } else if let ContentBlock::Image { source } = inner {
                        check_image(source, &inner_path, images, problems);
                    }
                }
            }
        },
        _ => {}
    }
}

fn check_image(
    source: &ImageSource,
    path: &str,
    images: usize,
    problems: &mut Vec<RequestProblem>,
) {
    if source.kind != "base64" {
        return;
    }
    if !IMAGE_MEDIA_TYPES.contains(&source.media_type.as_str()) {
        problems.push(RequestProblem::new(
            &IMAGE_MEDIA_TYPE,
            format!("{path}.source.media_type"),
            &[("value", &format!("{:?}", source.media_type))],
        ));
        return;
    }
    if source.data.len() > IMAGE_MAX_BASE64_BYTES {
        problems.push(RequestProblem::new(
            &IMAGE_SIZE,
            format!("{path}.source.data"),
            &[
                ("value", &source.data.len().to_string()),
                ("limit", &IMAGE_MAX_BASE64_BYTES.to_string()),
            ],
        ));
        return;
    }
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(&source.data) else {
        return;
    };
    let Some(actual) = sniff_image(&bytes) else {
        return;
    };
    if actual != source.media_type {
        problems.push(RequestProblem::new(
            &IMAGE_MEDIA_TYPE_MATCHES,
            format!("{path}.source.data"),
            &[("value", &source.media_type), ("actual", actual)],
        ));
        return;
    }
    let limit = if images > MANY_IMAGES {
        IMAGE_MAX_SIDE_MANY
    } else {
        IMAGE_MAX_SIDE
    };
    if let Some((w, h)) = image_dimensions(&bytes) {
        if w > limit || h > limit {
            problems.push(RequestProblem::new(
                &IMAGE_DIMENSIONS,
                format!("{path}.source.data"),
                &[
                    ("value", &format!("{w}x{h}")),
                    ("count", &images.to_string()),
                    ("limit", &limit.to_string()),
                ],
            ));
        }
    }
}

/// Appends the pairing problems of `messages[i]`: an assistant message's
/// `tool_use` ids must all be answered by the `tool_result` blocks that open
/// the next (user) message; a user message's `tool_result`s must answer
/// `tool_use`s of the assistant message right before it.
/// Above this many calls in one answer, pairing is checked through a set:
/// an answer with thousands of calls must not cost a quadratic check on
/// every request, and the usual one or two calls no
/// allocation.
const FEW_IDS: usize = 16;

fn check_pairing(messages: &[Arc<Message>], i: usize, problems: &mut Vec<RequestProblem>) {
    let message = &messages[i];
    match message.role {
        Role::Assistant => {
            let next: &[ContentBlock] = match messages.get(i + 1) {
                Some(next) if next.role == Role::User => &next.content,
                _ => &[],
            };
            let results = || {
                next.iter().map_while(|b| match b {
                    ContentBlock::ToolResult(r) => Some(r.tool_use_id.as_str()),
                    _ => None,
                })
            };
            let set: Option<HashSet<&str>> =
                (message.tool_uses().count() > FEW_IDS).then(|| results().collect());
            let answered = |id: &str| match &set {
                Some(set) => set.contains(id),
                None => results().any(|r| r == id),
            };
            let missing: Vec<&str> = message
                .tool_uses()
                .map(|t| t.id.as_str())
                .filter(|id| !answered(id))
                .collect();
            if !missing.is_empty() {
                let detail = format!("no result right after for {}", missing.join(", "));
                problems.push(RequestProblem::new(
                    &TOOL_RESULT_PAIRING,
                    format!("messages.{i}"),
                    &[("detail", &detail)],
                ));
            }
        }
        Role::User => {
            let prev = i
                .checked_sub(1)
                .map(|p| &messages[p])
                .filter(|p| p.role == Role::Assistant);
            let calls = || {
                prev.into_iter()
                    .flat_map(|p| p.tool_uses())
                    .map(|t| t.id.as_str())
            };
            let set: Option<HashSet<&str>> = (calls().count() > FEW_IDS).then(|| calls().collect());
            let called = |id: &str| match &set {
                Some(set) => set.contains(id),
                None => calls().any(|c| c == id),
            };
            for (j, block) in message.content.iter().enumerate() {
                if let ContentBlock::ToolResult(r) = block {
                    if !called(&r.tool_use_id) {
                        let detail = format!(
                            "the result for {} answers no call of the message before",
                            r.tool_use_id
                        );
                        problems.push(RequestProblem::new(
                            &TOOL_RESULT_PAIRING,
                            format!("messages.{i}.content.{j}"),
                            &[("detail", &detail)],
                        ));
                    }
                }
            }
        }
    }
}

fn check_final_assistant(messages: &[Arc<Message>], problems: &mut Vec<RequestProblem>) {
    let Some(last) = messages.last() else {
        return;
    };
    if last.role != Role::Assistant {
        return;
    }
    let Some(block) = last.content.last() else {
        return;
    };
    if text_of(block).is_some_and(|t| !t.trim().is_empty() && t.ends_with(char::is_whitespace)) {
        problems.push(RequestProblem::new(
            &FINAL_ASSISTANT_TRAILING_WHITESPACE,
            format!(
                "messages.{}.content.{}",
                messages.len() - 1,
                last.content.len() - 1
            ),
            &[],
        ));
    }
}

/// The text of a text block (known, or kept as JSON with extra fields such
/// as `citations`); `None` for every other block.
fn text_of(block: &ContentBlock) -> Option<&str> {
    match block {
        ContentBlock::Text { text } => Some(text),
        ContentBlock::Opaque(v) if block.kind() == "text" => v.get("text").and_then(Value::as_str),
        _ => None,
    }
}

/// A text block kept as JSON whose `text` is not a string: nothing the
/// API would take, and nothing to show.
fn is_textless_text(block: &ContentBlock) -> bool {
    matches!(block, ContentBlock::Opaque(v) if block.kind() == "text" && !v.get("text").is_some_and(Value::is_string))
}

fn text_mut(block: &mut ContentBlock) -> Option<&mut String> {
    match block {
        ContentBlock::Text { text } => Some(text),
        ContentBlock::Opaque(v) if v.get("type").and_then(Value::as_str) == Some("text") => {
            match v.get_mut("text") {
                Some(Value::String(s)) => Some(s),
                _ => None,
            }
        }
        _ => None,
    }
}

fn is_thinking(block: &ContentBlock) -> bool {
    block.kind() == "thinking"
}

/// A thinking block's signature is there and not blank.
fn has_signature(block: &ContentBlock) -> bool {
    match block {
        ContentBlock::Thinking { signature, .. } => !signature.trim().is_empty(),
        ContentBlock::Opaque(v) => v
            .get("signature")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.trim().is_empty()),
        _ => true,
    }
}

/// Images in the request, in messages and inside tool results.
fn count_images(messages: &[Arc<Message>]) -> usize {
    let in_blocks = |blocks: &[ContentBlock]| {
        blocks
            .iter()
            .filter(|b| matches!(b, ContentBlock::Image { .. }))
            .count()
    };
    messages
        .iter()
        .flat_map(|m| m.content.iter())
        .map(|b| match b {
            ContentBlock::Image { .. } => 1,
            ContentBlock::ToolResult(r) => match &r.content {
                ToolResultContent::Blocks(inner) => in_blocks(inner),
                ToolResultContent::Text(_) => 0,
            },
            _ => 0,
        })
        .sum()
}

/// Blocks with a (non-null) `cache_control`. lathe's own system prompt and
/// tools carry none; only blocks kept as JSON can.
fn count_cache_control(messages: &[Arc<Message>]) -> usize {
    messages
        .iter()
        .flat_map(|m| m.content.iter())
        .filter(|b| match b {
            ContentBlock::Opaque(v) => v.get("cache_control").is_some_and(|c| !c.is_null()),
            _ => false,
        })
        .count()
}

/// The media type an image's bytes are (magic numbers), `None` when they
/// are none of the four the API takes.
fn sniff_image(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Width and height of a PNG, GIF, JPEG or WebP image from its header;
/// `None` when the header cannot be read.
fn image_dimensions(b: &[u8]) -> Option<(u32, u32)> {
    let be16 = |i: usize| Some(u32::from(u16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?])));
    let le16 = |i: usize| Some(u32::from(u16::from_le_bytes([*b.get(i)?, *b.get(i + 1)?])));
    let le24 = |i: usize| {
        Some(
            u32::from(*b.get(i)?)
                | u32::from(*b.get(i + 1)?) << 8
                | u32::from(*b.get(i + 2)?) << 16,
        )
    };
    let be32 = |i: usize| Some(u32::from_be_bytes(b.get(i..i + 4)?.try_into().ok()?));
    match sniff_image(b)? {
        "image/png" => Some((be32(16)?, be32(20)?)),
        "image/gif" => Some((le16(6)?, le16(8)?)),
        "image/webp" => match b.get(12..16)? {
            b"VP8 " => Some((le16(26)? & 0x3FFF, le16(28)? & 0x3FFF)),
            b"VP8L" => {
                let bits = u32::from_le_bytes(b.get(21..25)?.try_into().ok()?);
                Some(((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1))
            }
            b"VP8X" => Some((le24(24)? + 1, le24(27)? + 1)),
            _ => None,
        },
        _ => {
            // JPEG: walk the segments to the first start-of-frame marker.
            let mut i = 2;
            loop {
                while *b.get(i)? != 0xFF {
                    i += 1;
                }
                while *b.get(i)? == 0xFF {
                    i += 1;
                }
                let marker = *b.get(i)?;
                i += 1;
                if matches!(marker, 0x01 | 0xD0..=0xD9) {
                    continue;
                }
                let len = be16(i)? as usize;
                let is_sof = matches!(marker, 0xC0..=0xCF) && !matches!(marker, 0xC4 | 0xC8 | 0xCC);
                if is_sof {
                    return Some((be16(i + 5)?, be16(i + 3)?));
                }
                i += len;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ToolDefinition, ToolResult, ToolUse};
    use pretty_assertions::assert_eq;
    use serde_json::json;

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

    fn use_block(id: &str) -> ContentBlock {
        ContentBlock::ToolUse(ToolUse {
            id: id.into(),
            name: "Read".into(),
            input: json!({}),
            extra: Default::default(),
        })
    }

    fn result_block(id: &str, content: &str) -> ContentBlock {
        ContentBlock::ToolResult(ToolResult {
            tool_use_id: id.into(),
            content: ToolResultContent::Text(content.into()),
            is_error: false,
        })
    }

    fn request(messages: Vec<Message>) -> MessagesRequest {
        MessagesRequest {
            model: "m".into(),
            max_tokens: 100,
            system: String::new(),
            messages: crate::protocol::shared(messages),
            tools: vec![],
            stream: true,
        }
    }

    fn tool(name: &str) -> ToolDefinition {
        ToolDefinition {
            name: name.into(),
            description: "d".into(),
            input_schema: json!({"type": "object"}),
        }
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

    /// The header of a PNG of `w` × `h` (enough for the checks).
    fn png(w: u32, h: u32) -> Vec<u8> {
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        b.extend(w.to_be_bytes());
        b.extend(h.to_be_bytes());
        b.extend([8, 6, 0, 0, 0]);
        b
    }

    /// The rules broken by `req`, as `(rule, path)`.
    fn broken(req: &MessagesRequest) -> Vec<(&'static str, String)> {
        match validate(req) {
            Ok(()) => vec![],
            Err(ps) => ps.into_iter().map(|p| (p.rule, p.path)).collect(),
        }
    }

    fn one(rule: &Rule, path: &str) -> Vec<(&'static str, String)> {
        vec![(rule.id, path.to_string())]
    }

    #[test]
    fn bad_and_repeated_tool_use_ids_are_sent_renamed_with_their_results() {
        let call = |id: &str| {
            ContentBlock::ToolUse(ToolUse {
                id: id.into(),
                name: "Read".into(),
                input: json!({}),
                extra: Default::default(),
            })
        };
        let answer = |id: &str, text: &str| {
            ContentBlock::ToolResult(ToolResult {
                tool_use_id: id.into(),
                content: ToolResultContent::Text(text.into()),
                is_error: false,
            })
        };
        let mut req = MessagesRequest {
            model: "m".into(),
            max_tokens: 10,
            system: String::new(),
            messages: crate::protocol::shared(vec![
                msg(Role::User, vec![text("go")]),
                msg(
                    Role::Assistant,
                    vec![call("call_0"), call("call 1"), call("call_0")],
                ),
                msg(
                    Role::User,
                    vec![
                        answer("call_0", "a"),
                        answer("call 1", "b"),
                        answer("call_0", "c"),
                    ],
                ),
                msg(Role::Assistant, vec![call("call_0"), call("")]),
                msg(Role::User, vec![answer("call_0", "d"), answer("", "e")]),
            ]),
            tools: vec![],
            stream: false,
        };
        let repairs = sanitize(&mut req);
        assert_eq!(repairs.len(), 4, "{repairs:?}");
        assert_eq!(validate(&req), Ok(()));
        let ids = |m: &Message| -> Vec<String> {
            m.content
                .iter()
                .map(|b| match b {
                    ContentBlock::ToolUse(t) => t.id.clone(),
                    ContentBlock::ToolResult(r) => {
                        format!("{}={}", r.tool_use_id, r.content.as_text())
                    }
                    _ => String::new(),
                })
                .collect()
        };
        assert_eq!(ids(&req.messages[1]), ["call_0", "call_1", "call_0_2"]);
        assert_eq!(
            ids(&req.messages[2]),
            ["call_0=a", "call_1=b", "call_0_2=c"]
        );
        assert_eq!(ids(&req.messages[3]), ["call_0_3", "toolu_lathe"]);
        assert_eq!(ids(&req.messages[4]), ["call_0_3=d", "toolu_lathe=e"]);
    }

    #[test]
    fn a_well_formed_request_passes() {
        let mut req = request(vec![
            user("hi"),
            msg(
                Role::Assistant,
                vec![text("Looking."), use_block("toolu_01")],
            ),
            msg(
                Role::User,
                vec![result_block("toolu_01", "ok"), text("go on")],
            ),
            assistant("Done."),
            user("thanks"),
        ]);
        req.tools = vec![tool("Read"), tool("Edit")];
        assert_eq!(broken(&req), vec![]);
        let before = req.clone();
        assert_eq!(sanitize(&mut req), vec![]);
        assert_eq!(req, before, "sanitize leaves a good request alone");
    }

    #[test]
    fn max_tokens_at_least_one() {
        let mut req = request(vec![user("hi")]);
        req.max_tokens = 0;
        assert_eq!(broken(&req), one(&MAX_TOKENS, "max_tokens"));
    }

    #[test]
    fn messages_non_empty() {
        assert_eq!(
            broken(&request(vec![])),
            one(&MESSAGES_NON_EMPTY, "messages")
        );
    }

    #[test]
    fn first_message_user() {
        assert_eq!(
            broken(&request(vec![assistant("hi"), user("x")])),
            one(&FIRST_MESSAGE_USER, "messages.0.role")
        );
    }

    #[test]
    fn content_non_empty_except_a_final_assistant_message() {
        let req = request(vec![msg(Role::User, vec![]), assistant("x"), user("y")]);
        assert_eq!(broken(&req), one(&CONTENT_NON_EMPTY, "messages.0.content"));
        let prefill = request(vec![user("x"), msg(Role::Assistant, vec![])]);
        assert_eq!(broken(&prefill), vec![]);
    }

    #[test]
    fn text_non_empty() {
        let req = request(vec![msg(Role::User, vec![text(""), text("x")])]);
        assert_eq!(broken(&req), one(&TEXT_NON_EMPTY, "messages.0.content.0"));
    }

    #[test]
    fn text_non_empty_inside_tool_results() {
        let req = request(vec![
            user("x"),
            msg(Role::Assistant, vec![use_block("a")]),
            msg(Role::User, vec![result_block("a", "")]),
        ]);
        assert_eq!(
            broken(&req),
            one(&TEXT_NON_EMPTY, "messages.2.content.0.content")
        );
    }

    #[test]
    fn text_non_whitespace() {
        let req = request(vec![user("x"), assistant(" \n\t"), user("y")]);
        assert_eq!(
            broken(&req),
            one(&TEXT_NON_WHITESPACE, "messages.1.content.0")
        );
    }

    #[test]
    fn opaque_text_blocks_count_as_text() {
        let cited = ContentBlock::Opaque(json!({"type":"text","text":"  ","citations":[]}));
        let req = request(vec![
            user("x"),
            msg(Role::Assistant, vec![cited]),
            user("y"),
        ]);
        assert_eq!(
            broken(&req),
            one(&TEXT_NON_WHITESPACE, "messages.1.content.0")
        );
    }

    #[test]
    fn final_assistant_trailing_whitespace() {
        let req = request(vec![user("x"), assistant("The answer is ")]);
        assert_eq!(
            broken(&req),
            one(&FINAL_ASSISTANT_TRAILING_WHITESPACE, "messages.1.content.0")
        );
        let earlier = request(vec![user("x"), assistant("fine \n"), user("y")]);
        assert_eq!(broken(&earlier), vec![], "only the final message counts");
    }

    #[test]
    fn tool_result_pairing() {
        let missing = request(vec![
            user("x"),
            msg(Role::Assistant, vec![use_block("a"), use_block("b")]),
            msg(Role::User, vec![result_block("a", "ok")]),
        ]);
        assert_eq!(broken(&missing), one(&TOOL_RESULT_PAIRING, "messages.1"));
        let late = request(vec![
            user("x"),
            msg(Role::Assistant, vec![use_block("a")]),
            msg(Role::User, vec![text("first"), result_block("a", "ok")]),
        ]);
        assert_eq!(broken(&late), one(&TOOL_RESULT_PAIRING, "messages.1"));
        let stray = request(vec![msg(Role::User, vec![result_block("z", "ok")])]);
        assert_eq!(
            broken(&stray),
            one(&TOOL_RESULT_PAIRING, "messages.0.content.0")
        );
    }

    #[test]
    fn tool_use_ids_unique() {
        let req = request(vec![
            user("x"),
            msg(Role::Assistant, vec![use_block("a"), use_block("a")]),
            msg(
                Role::User,
                vec![result_block("a", "1"), result_block("a", "2")],
            ),
        ]);
        assert_eq!(
            broken(&req),
            one(&TOOL_USE_ID_UNIQUE, "messages.1.content.1")
        );
    }

    #[test]
    fn tool_use_id_pattern() {
        let req = request(vec![
            user("x"),
            msg(Role::Assistant, vec![use_block("call.1")]),
            msg(Role::User, vec![result_block("call.1", "ok")]),
        ]);
        assert_eq!(
            broken(&req),
            one(&TOOL_USE_ID_PATTERN, "messages.1.content.0.id")
        );
    }

    #[test]
    fn tool_use_input_object() {
        let call = ContentBlock::ToolUse(ToolUse {
            id: "a".into(),
            name: "Read".into(),
            input: json!("path"),
            extra: Default::default(),
        });
        let req = request(vec![
            user("x"),
            msg(Role::Assistant, vec![call]),
            msg(Role::User, vec![result_block("a", "ok")]),
        ]);
        assert_eq!(
            broken(&req),
            one(&TOOL_USE_INPUT_OBJECT, "messages.1.content.0.input")
        );
    }

    #[test]
    fn tool_names_pattern_and_unique() {
        let mut req = request(vec![user("x")]);
        req.tools = vec![
            tool("Read"),
            tool("my tool"),
            tool(&"a".repeat(65)),
            tool("Read"),
        ];
        assert_eq!(
            broken(&req),
            vec![
                (TOOL_NAME_PATTERN.id, "tools.1.name".to_string()),
                (TOOL_NAME_PATTERN.id, "tools.2.name".to_string()),
                (TOOL_NAME_UNIQUE.id, "tools.3.name".to_string()),
            ]
        );
        req.tools = vec![tool(&"a".repeat(64)), tool("x-y_Z9")];
        assert_eq!(broken(&req), vec![]);
    }

    #[test]
    fn image_media_type() {
        let req = request(vec![msg(Role::User, vec![image("image/bmp", b"BM")])]);
        assert_eq!(
            broken(&req),
            one(&IMAGE_MEDIA_TYPE, "messages.0.content.0.source.media_type")
        );
    }

    #[test]
    fn image_media_type_matches_the_bytes() {
        let req = request(vec![msg(Role::User, vec![image("image/jpeg", &png(1, 1))])]);
        assert_eq!(
            broken(&req),
            one(
                &IMAGE_MEDIA_TYPE_MATCHES,
                "messages.0.content.0.source.data"
            )
        );
    }

    #[test]
    fn image_size_counts_base64_bytes() {
        // 3.9 MB of bytes is 5.2 MB of base64: over the limit.
        let mut bytes = png(10, 10);
        bytes.resize(3_932_161, 0);
        let req = request(vec![msg(Role::User, vec![image("image/png", &bytes)])]);
        assert_eq!(
            broken(&req),
            one(&IMAGE_SIZE, "messages.0.content.0.source.data")
        );
        bytes.truncate(3_932_160);
        let req = request(vec![msg(Role::User, vec![image("image/png", &bytes)])]);
        assert_eq!(broken(&req), vec![], "exactly 5 MB of base64 passes");
    }

    #[test]
    fn image_dimensions_8000_or_2000_above_20_images() {
        let req = request(vec![msg(
            Role::User,
            vec![image("image/png", &png(8001, 10))],
        )]);
        assert_eq!(
            broken(&req),
            one(&IMAGE_DIMENSIONS, "messages.0.content.0.source.data")
        );
        let mut many: Vec<ContentBlock> =
            (0..20).map(|_| image("image/png", &png(10, 10))).collect();
        many.push(image("image/png", &png(10, 2001)));
        let req = request(vec![msg(Role::User, many.clone())]);
        assert_eq!(
            broken(&req),
            one(&IMAGE_DIMENSIONS, "messages.0.content.20.source.data")
        );
        many.pop();
        many.push(image("image/png", &png(10, 2000)));
        assert_eq!(broken(&request(vec![msg(Role::User, many)])), vec![]);
    }

    #[test]
    fn images_inside_tool_results_are_checked() {
        let result = ContentBlock::ToolResult(ToolResult {
            tool_use_id: "a".into(),
            content: ToolResultContent::Blocks(vec![image("image/tiff", b"II")]),
            is_error: false,
        });
        let req = request(vec![
            user("x"),
            msg(Role::Assistant, vec![use_block("a")]),
            msg(Role::User, vec![result]),
        ]);
        assert_eq!(
            broken(&req),
            one(
                &IMAGE_MEDIA_TYPE,
                "messages.2.content.0.content.0.source.media_type"
            )
        );
    }

    #[test]
    fn image_dimensions_of_each_format() {
        assert_eq!(image_dimensions(&png(640, 480)), Some((640, 480)));
        let gif = [b"GIF89a".as_slice(), &[0x80, 0x02, 0xE0, 0x01]].concat();
        assert_eq!(image_dimensions(&gif), Some((640, 480)));
        // JPEG: SOI, an APP0 segment, then SOF0 with height 480, width 640.
        let jpeg = [
            0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x00, 0x00, 0xFF, 0xC0, 0x00, 0x11, 0x08, 0x01,
            0xE0, 0x02, 0x80, 0x03,
        ];
        assert_eq!(image_dimensions(&jpeg), Some((640, 480)));
        let mut vp8x = b"RIFF\0\0\0\0WEBPVP8X\0\0\0\0\0\0\0\0".to_vec();
        vp8x.extend([0x7F, 0x02, 0x00, 0xDF, 0x01, 0x00]);
        assert_eq!(image_dimensions(&vp8x), Some((640, 480)));
        // VP8L: 14 bits width-1, 14 bits height-1 after the signature byte.
        let bits: u32 = 639 | (479 << 14);
        let mut vp8l = b"RIFF\0\0\0\0WEBPVP8L\0\0\0\0\x2f".to_vec();
        vp8l.extend(bits.to_le_bytes());
        assert_eq!(image_dimensions(&vp8l), Some((640, 480)));
        let mut vp8 = b"RIFF\0\0\0\0WEBPVP8 \0\0\0\0\0\0\0\x9d\x01\x2a".to_vec();
        vp8.extend([0x80, 0x02, 0xE0, 0x01]);
        assert_eq!(image_dimensions(&vp8), Some((640, 480)));
        assert_eq!(image_dimensions(b"\xFF\xD8\xFF"), None, "cut short");
    }

    #[test]
    fn cache_control_at_most_four() {
        let cached = |t: &str| {
            ContentBlock::Opaque(
                json!({"type":"text","text":t,"cache_control":{"type":"ephemeral"}}),
            )
        };
        let blocks: Vec<ContentBlock> = ["a", "b", "c", "d", "e"]
            .iter()
            .map(|t| cached(t))
            .collect();
        let req = request(vec![msg(Role::User, blocks.clone())]);
        assert_eq!(broken(&req), one(&CACHE_CONTROL_LIMIT, "cache_control"));
        let req = request(vec![msg(Role::User, blocks[..4].to_vec())]);
        assert_eq!(broken(&req), vec![]);
    }

    #[test]
    fn thinking_signature() {
        let unsigned = ContentBlock::Thinking {
            thinking: "hmm".into(),
            signature: String::new(),
        };
        let req = request(vec![
            user("x"),
            msg(Role::Assistant, vec![unsigned, text("a")]),
            user("y"),
        ]);
        assert_eq!(
            broken(&req),
            one(&THINKING_SIGNATURE, "messages.1.content.0")
        );
    }

    #[test]
    fn every_rule_is_listed_once() {
        let ids: HashSet<&str> = RULES.iter().map(|r| r.id).collect();
        assert_eq!(ids.len(), RULES.len());
        assert!(RULES.iter().all(|r| !r.source.is_empty()));
    }

    #[test]
    fn a_whitespace_only_assistant_answer_is_repaired() {
        // The model answered "\n\n" and nothing else; the user asked again.
        let mut req = request(vec![user("first"), assistant("\n\n"), user("second")]);
        assert_eq!(
            broken(&req),
            one(&TEXT_NON_WHITESPACE, "messages.1.content.0")
        );
        let repairs = sanitize(&mut req);
        assert_eq!(
            repairs,
            vec![
                Repair::DroppedBlankText {
                    path: "messages.1.content.0".into()
                },
                Repair::DroppedEmptyMessage {
                    path: "messages.1".into()
                },
                Repair::MergedIntoPrevious {
                    path: "messages.1".into()
                },
            ]
        );
        assert_eq!(
            req.messages,
            crate::protocol::shared(vec![msg(Role::User, vec![text("first"), text("second")])])
        );
        assert_eq!(validate(&req), Ok(()));
    }

    #[test]
    fn blank_text_next_to_a_tool_call_is_dropped_and_the_call_kept() {
        let mut req = request(vec![
            user("x"),
            msg(Role::Assistant, vec![text(""), use_block("a")]),
            msg(Role::User, vec![result_block("a", "ok")]),
        ]);
        sanitize(&mut req);
        assert_eq!(req.messages[1].content, vec![use_block("a")]);
        assert_eq!(validate(&req), Ok(()));
    }

    #[test]
    fn the_final_assistant_text_is_trimmed() {
        let mut req = request(vec![
            user("x"),
            msg(Role::Assistant, vec![text("Sure, "), text("  ")]),
        ]);
        let repairs = sanitize(&mut req);
        assert_eq!(
            repairs.last(),
            Some(&Repair::TrimmedTrailingWhitespace {
                path: "messages.1.content.0".into()
            })
        );
        assert_eq!(req.messages[1].content, vec![text("Sure,")]);
        assert_eq!(validate(&req), Ok(()));
    }

    #[test]
    fn unsigned_thinking_is_dropped() {
        let unsigned = ContentBlock::Thinking {
            thinking: "hmm".into(),
            signature: " ".into(),
        };
        let signed = ContentBlock::Thinking {
            thinking: "ok".into(),
            signature: "EqQB".into(),
        };
        let mut req = request(vec![
            user("x"),
            msg(Role::Assistant, vec![unsigned, signed.clone(), text("a")]),
            user("y"),
        ]);
        assert_eq!(
            sanitize(&mut req),
            vec![Repair::DroppedUnsignedThinking {
                path: "messages.1.content.0".into()
            }]
        );
        assert_eq!(req.messages[1].content, vec![signed, text("a")]);
    }

    #[test]
    fn an_empty_final_assistant_message_is_dropped() {
        let mut req = request(vec![user("x"), msg(Role::Assistant, vec![text(" ")])]);
        sanitize(&mut req);
        assert_eq!(req.messages, crate::protocol::shared(vec![user("x")]));
    }

    #[test]
    fn prepare_repairs_or_refuses_without_retry() {
        let ok = prepare(request(vec![user("a"), assistant(" "), user("b")])).expect("repaired");
        assert_eq!(ok.messages.len(), 1);
        let mut bad = request(vec![user("a")]);
        bad.max_tokens = 0;
        bad.tools = vec![tool("no spaces please")];
        let err = prepare(bad).expect_err("refused");
        assert!(!crate::provider::retry::is_retryable(&err));
        assert_eq!(
            err.to_string(),
            "could not send the request: lathe built a request the Anthropic API would refuse: max_tokens is 0; the API needs at least 1 (at max_tokens). This is a bug in lathe, so the request was not sent: asking again in this conversation would fail the same way. Start a new conversation by calling require(\"lathe\").setup() again (with your options), then ask with :Lathe; please report this message. (1 more: tool_name_pattern at tools.0.name)"
        );
    }

    #[test]
    fn repairs_read_as_sentences() {
        let r = Repair::MergedIntoPrevious {
            path: "messages.2".into(),
        };
        assert_eq!(r.to_string(), "joined messages.2 to the message before it");
    }

    /// The memo's answer is the whole check's, request after request,
    /// whatever the conversation holds (blank text, unsigned thinking,
    /// repeated or bad ids, unanswered calls, same-role neighbours,
    /// images, breakpoints) and however it changes between requests (it
    /// grows, a message changes or goes, the last one is another).
    mod memo {
        use super::*;
        use pretty_assertions::assert_eq;
        use proptest::prelude::*;

        fn block() -> impl Strategy<Value = ContentBlock> {
            prop_oneof![
                4 => prop::sample::select(vec!["a", "b c", "", " ", "d "]).prop_map(text),
                2 => prop::sample::select(vec!["t1", "t2", "t3", "bad id"]).prop_map(use_block),
                2 => prop::sample::select(vec!["t1", "t2", "t3", "bad id"]).prop_map(|id| result_block(id, "r")),
                1 => prop::sample::select(vec!["", "sig"]).prop_map(|sig| ContentBlock::Thinking {
                    thinking: "hm".into(),
                    signature: sig.into(),
                }),
                1 => prop::sample::select(vec![1u32, 3000]).prop_map(|side| image("image/png", &png(side, side))),
                1 => Just(ContentBlock::Opaque(json!({"type": "text", "text": "k", "cache_control": {"type": "ephemeral"}}))),
            ]
        }

        fn message() -> impl Strategy<Value = Message> {
            (any::<bool>(), proptest::collection::vec(block(), 0..3)).prop_map(|(user, content)| {
                msg(if user { Role::User } else { Role::Assistant }, content)
            })
        }

        #[derive(Debug, Clone)]
        enum Op {
            /// A call answered: an assistant `tool_use` and its result; the
            /// id new or an earlier one again, and the text before the call
            /// plain, with a breakpoint, or with an image.
            Call(bool, u8),
            Push(Message),
            Change(usize, Message),
            Remove(usize),
            Send(usize),
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                6 => (prop::bool::weighted(0.8), 0u8..4).prop_map(|(new, extra)| Op::Call(new, extra)),
                1 => message().prop_map(Op::Push),
                1 => (any::<usize>(), message()).prop_map(|(i, m)| Op::Change(i, m)),
                1 => any::<usize>().prop_map(Op::Remove),
                4 => any::<usize>().prop_map(Op::Send),
            ]
        }

        fn outcome(r: Result<MessagesRequest, ProviderError>) -> Result<Vec<Message>, String> {
            r.map(|req| req.messages.iter().map(|m| (**m).clone()).collect())
                .map_err(|e| e.to_string())
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]
            #[test]
            fn the_memo_answers_as_the_whole_check(
                first in prop_oneof![3 => Just(user("go")), 1 => message()],
                ops in proptest::collection::vec(op(), 1..30),
            ) {
                let checked = Checked::default();
                let mut messages: Vec<Arc<Message>> = vec![Arc::new(first)];
                let mut calls = 0;
                let mut passed = 0;
                for op in ops {
                    match op {
                        Op::Call(new, extra) => {
                            calls += usize::from(new);
                            let id = format!("toolu_{calls}");
                            let before = match extra {
                                1 => ContentBlock::Opaque(json!({"type": "text", "text": "k", "cache_control": {"type": "ephemeral"}})),
                                2 => image("image/png", &png(3000, 3000)),
                                3 => image("image/png", &png(1, 1)),
                                _ => text("x"),
                            };
                            messages.push(Arc::new(msg(Role::Assistant, vec![before, use_block(&id)])));
                            messages.push(Arc::new(msg(Role::User, vec![result_block(&id, "r")])));
                        }
                        Op::Push(m) => messages.push(Arc::new(m)),
                        Op::Change(i, m) => {
                            let i = i % messages.len();
                            messages[i] = Arc::new(m);
                        }
                        Op::Remove(i) if messages.len() > 1 => {
                            messages.remove(i % messages.len());
                        }
                        Op::Remove(_) => {}
                        Op::Send(n) => {
                            let n = 1 + n % messages.len();
                            let mut req = request(vec![]);
                            req.messages = messages[..n].to_vec();
                            let whole = outcome(prepare(req.clone()));
                            passed += usize::from(whole.is_ok());
                            prop_assert_eq!(outcome(checked.prepare(req)), whole);
                        }
                    }
                }
                let _ = passed;
            }
        }

        /// One conversation sent a call longer each time, with `before`
        /// the text of every call: the memo's answer and the whole
        /// check's, request after request.
        fn both_answers(before: impl Fn(usize) -> ContentBlock) -> Vec<(bool, bool)> {
            let checked = Checked::default();
            let mut messages = vec![Arc::new(user("go"))];
            (0..30)
                .map(|k| {
                    let id = format!("toolu_{k}");
                    messages.push(Arc::new(msg(
                        Role::Assistant,
                        vec![before(k), use_block(&id)],
                    )));
                    messages.push(Arc::new(msg(Role::User, vec![result_block(&id, "r")])));
                    let mut req = request(vec![]);
                    req.messages = messages.clone();
                    (checked.prepare(req.clone()).is_ok(), prepare(req).is_ok())
                })
                .collect()
        }

        /// The limits counted over the whole request hold when the memo
        /// answers: breakpoints past the API's four, and an image that was
        /// fine alone but is too large once the request carries many.
        #[test]
        fn limits_over_the_whole_request_hold_through_the_memo() {
            let breakpoints = both_answers(|_| {
                ContentBlock::Opaque(
                    json!({"type": "text", "text": "k", "cache_control": {"type": "ephemeral"}}),
                )
            });
            assert!(
                breakpoints.iter().all(|(memo, whole)| memo == whole),
                "{breakpoints:?}"
            );
            assert!(
                !breakpoints[CACHE_CONTROL_MAX].1,
                "the fifth breakpoint is refused"
            );
            let images =
                both_answers(|k| image("image/png", &png(if k == 0 { 3000 } else { 1 }, 1)));
            assert!(
                images.iter().all(|(memo, whole)| memo == whole),
                "{images:?}"
            );
            assert!(images[0].1 && !images[MANY_IMAGES].1, "{images:?}");
        }

        /// A conversation that grows by a call and its result per request
        /// passes through the memo (the whole check is not run again).
        #[test]
        fn a_growing_conversation_is_checked_by_what_is_new() {
            let checked = Checked::default();
            let mut messages = vec![Arc::new(user("go"))];
            for k in 0..50 {
                let id = format!("toolu_{k}");
                messages.push(Arc::new(msg(Role::Assistant, vec![use_block(&id)])));
                messages.push(Arc::new(msg(Role::User, vec![result_block(&id, "r")])));
                let mut req = request(vec![]);
                req.messages = messages.clone();
                let sent = checked.prepare(req).unwrap();
                assert_eq!(sent.messages.len(), messages.len());
                let memo = checked.memo.lock().unwrap();
                assert_eq!(
                    memo.messages.len(),
                    messages.len() - 1,
                    "all but the last held"
                );
                assert_eq!(memo.ids.len(), k + 1);
            }
        }
    }
}
