//! A request body whose cost follows what changed (docs/context-and-compaction.md,
//! "Context and compaction"): each message of the conversation is
//! serialized once, when it is first sent, and its JSON text reused in every
//! later request for as long as the same `Arc<Message>` is sent again (the
//! transcript shares its messages with each request and makes a new `Arc`
//! only for a message it changes). A request then costs the new messages
//! plus copying bytes, not a new tree of the whole conversation.
//!
//! Prompt caching's breakpoints (the Messages API's `cache_control`) are
//! placed here, at most [`MAX_BREAKPOINTS`]: on the last message's last
//! cacheable block (serialized fresh with it), the system prompt and the
//! last tool, in that order of priority.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::protocol::{ContentBlock, Message, MessagesRequest};
use crate::provider::json_bytes;

/// Most `cache_control` breakpoints a request may carry (the API's limit).
pub const MAX_BREAKPOINTS: usize = 4;

/// Block types that take a `cache_control` (thinking blocks do not).
const CACHEABLE: &[&str] = &["text", "image", "tool_use", "tool_result", "document"];

/// How many `cache_control` breakpoints `body` carries.
pub fn count_breakpoints(body: &Value) -> usize {
    match body {
        Value::Object(map) => {
            usize::from(map.contains_key("cache_control"))
                + map.values().map(count_breakpoints).sum::<usize>()
        }
        Value::Array(items) => items.iter().map(count_breakpoints).sum(),
        _ => 0,
    }
}

/// The JSON text of the messages last sent, in their order, joined by
/// commas as a body carries them. A conversation grows at its end, so the
/// next request finds the same `Arc`s at the same indices and adds its new
/// messages' text at the end: its cost follows what is new, never the
/// conversation's length (no per-message work for the messages kept, not
/// even a reference count). A message changed in the middle (a cleared
/// result) is serialized again; the messages after it are found by index
/// or by the address of their `Arc`, and their text is copied, not made.
/// Each kept message is held, so an address cannot be reused by another
/// message while it is kept; what the next request no longer carries is
/// let go.
#[derive(Debug, Default)]
pub struct WireCache {
    sent: Mutex<Sent>,
}

#[derive(Debug, Default)]
struct Sent {
    /// The messages, in order.
    messages: Vec<Arc<Message>>,
    /// Their JSON texts joined by commas.
    joined: Vec<u8>,
    /// Where each message's text ends in `joined` (its comma not counted).
    ends: Vec<usize>,
    /// The `cache_control` breakpoints the messages carry, added up.
    breakpoints: usize,
    /// Messages serialized so far (tests).
    made: usize,
}

impl Sent {
    /// Where message `i`'s text starts in `joined`.
    fn start(&self, i: usize) -> usize {
        match i.checked_sub(1) {
            Some(p) => self.ends[p] + 1,
            None => 0,
        }
    }

    /// Makes the kept messages `messages`, reusing every text it has.
    fn update(&mut self, messages: &[Arc<Message>]) {
        let same = self
            .messages
            .iter()
            .zip(messages)
            .take_while(|(a, b)| Arc::ptr_eq(a, b))
            .count();
        if same == self.messages.len() && same == messages.len() {
            return;
        }
        // What follows the common start (from its comma on): kept aside
        // for its texts.
        let first = self.start(same);
        let cut = same.checked_sub(1).map_or(0, |p| self.ends[p]);
        let old_bytes = self.joined.split_off(cut);
        let old_messages = self.messages.split_off(same);
        let old_ends: Vec<usize> = self.ends.split_off(same);
        self.breakpoints = self
            .breakpoints
            .saturating_sub(carried_breakpoints(&old_messages));
        // The text of old message `k` (0 = the first after the common start).
        let old_text = |k: usize| -> &[u8] {
            let start = match k.checked_sub(1) {
                Some(p) => old_ends[p] + 1,
                None => first,
            };
            &old_bytes[start - cut..old_ends[k] - cut]
        };
        let mut by_address: Option<HashMap<usize, usize>> = None;
        for (k, m) in messages[same..].iter().enumerate() {
            let found = match old_messages.get(k) {
                Some(o) if Arc::ptr_eq(o, m) => Some(k),
                _ => by_address
                    .get_or_insert_with(|| {
                        old_messages
                            .iter()
                            .enumerate()
                            .map(|(k, o)| (Arc::as_ptr(o) as usize, k))
                            .collect()
                    })
                    .get(&(Arc::as_ptr(m) as usize))
                    .copied()
                    .filter(|&k| Arc::ptr_eq(&old_messages[k], m)),
            };
            if !self.messages.is_empty() {
                self.joined.push(b',');
            }
            match found {
                Some(k) => self.joined.extend_from_slice(old_text(k)),
                None => {
                    self.made += 1;
                    // Plain data serializes without failing.
                    let _ = serde_json::to_writer(&mut self.joined, &**m);
                }
            }
            self.ends.push(self.joined.len());
            self.breakpoints += carried_breakpoints(std::slice::from_ref(m));
            self.messages.push(m.clone());
        }
    }
}

impl WireCache {
    /// Calls `f` with the JSON texts of `messages` joined by commas: kept
    /// from the last call, or serialized now. Only these are kept
    /// afterwards.
    fn with_joined<R>(&self, messages: &[Arc<Message>], f: impl FnOnce(&[u8]) -> R) -> R {
        self.with_sent(messages, |sent| f(&sent.joined))
    }

    fn with_sent<R>(&self, messages: &[Arc<Message>], f: impl FnOnce(&Sent) -> R) -> R {
        let mut sent = self.sent.lock().unwrap_or_else(|e| e.into_inner());
        sent.update(messages);
        f(&sent)
    }

    /// The JSON text of each of `messages`, in order (tests).
    #[cfg(test)]
    fn texts(&self, messages: &[Arc<Message>]) -> Vec<String> {
        let mut sent = self.sent.lock().unwrap_or_else(|e| e.into_inner());
        sent.update(messages);
        (0..sent.messages.len())
            .map(|i| {
                String::from_utf8_lossy(&sent.joined[sent.start(i)..sent.ends[i]]).into_owned()
            })
            .collect()
    }

    /// Messages serialized since this cache was made (tests).
    #[cfg(test)]
    fn made(&self) -> usize {
        self.sent.lock().map(|s| s.made).unwrap_or(0)
    }

    /// How many messages are kept (tests).
    pub fn len(&self) -> usize {
        self.sent.lock().map(|e| e.messages.len()).unwrap_or(0)
    }

    /// `true` when nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of the body [`WireCache::body`] makes for `req` (without the
    /// breakpoints and `stream`, a few dozen bytes): what the context meter
    /// and the window check count.
    pub fn request_bytes(&self, req: &MessagesRequest) -> u64 {
        let messages = self.with_joined(&req.messages, |joined| joined.len() as u64 + 1);
        json_bytes(&Head {
            model: &req.model,
            max_tokens: req.max_tokens,
            system: &req.system,
            tools: &req.tools,
            stream: req.stream,
        }) + messages
            + 12
    }

    /// The body of `req` with `stream` set, `extra` fields added (e.g.
    /// `temperature`) and an ephemeral `cache_control` on the last cacheable
    /// block of the last message, on the system prompt (sent as one text
    /// block) and on the last tool — as many as the API's limit leaves
    /// after the breakpoints blocks kept byte for byte already carry.
    pub fn body(&self, req: &MessagesRequest, stream: bool, extra: &[(&str, Value)]) -> Vec<u8> {
        let (last, earlier) = match req.messages.split_last() {
            Some((last, earlier)) => (Some(last), earlier),
            None => (None, &[][..]),
        };
        let carried = self.with_sent(earlier, |sent| sent.breakpoints)
            + last.map_or(0, |m| carried_breakpoints(std::slice::from_ref(m)));
        let mut budget = MAX_BREAKPOINTS.saturating_sub(carried);
        let mut mark = |obj: &mut serde_json::Map<String, Value>| {
            if budget > 0 && !obj.contains_key("cache_control") {
                budget -= 1;
                obj.insert("cache_control".into(), json!({ "type": "ephemeral" }));
            }
        };
        // The conversation's breakpoint covers the most, so it goes first.
        let last = last.map(|m| {
            let mut value = serde_json::to_value(&**m).unwrap_or(Value::Null);
            if let Some(block) = value
                .get_mut("content")
                .and_then(Value::as_array_mut)
                .and_then(|blocks| {
                    blocks.iter_mut().rev().find(|b| {
                        let cacheable = b
                            .get("type")
                            .and_then(Value::as_str)
                            .is_some_and(|t| CACHEABLE.contains(&t));
                        cacheable && b.get("text") != Some(&json!(""))
                    })
                })
                .and_then(Value::as_object_mut)
            {
                mark(block);
            }
            value.to_string()
        });
        let mut head = head(req);
        head.insert("stream".into(), Value::Bool(stream));
        // An empty text block may not carry a breakpoint (the API says so).
        if let Some(Value::String(system)) = head.get("system").filter(|s| *s != "").cloned() {
            let mut block = serde_json::Map::new();
            block.insert("type".into(), json!("text"));
            block.insert("text".into(), Value::String(system));
            mark(&mut block);
            head.insert("system".into(), Value::Array(vec![Value::Object(block)]));
        }
        if let Some(tool) = head
            .get_mut("tools")
            .and_then(Value::as_array_mut)
            .and_then(|t| t.last_mut())
            .and_then(Value::as_object_mut)
        {
            mark(tool);
        }
        for (key, value) in extra {
            head.insert((*key).to_string(), value.clone());
        }
        let head = Value::Object(head).to_string();
        self.with_joined(earlier, |joined| {
            let size = head.len() + joined.len() + last.as_ref().map_or(0, String::len) + 16;
            // Sizes rounded up to a power of two: the allocator can give
            // the last request's freed buffer again, where a body a little
            // larger each time would map fresh pages (and fault them in)
            // for every request.
            let mut out = Vec::with_capacity(size.next_power_of_two());
            // `head` is a JSON object: its `}` is replaced by the messages.
            out.extend_from_slice(head.trim_end_matches('}').as_bytes());
            if head != "{}" {
                out.push(b',');
            }
            out.extend_from_slice(b"\"messages\":[");
            out.extend_from_slice(joined);
            if let Some(last) = &last {
                if !joined.is_empty() {
                    out.push(b',');
                }
                out.extend_from_slice(last.as_bytes());
            }
            out.extend_from_slice(b"]}");
            out
        })
    }
}

/// Every field of a request but `messages`, borrowed (to count its bytes
/// without a copy): the same fields and rules as [`MessagesRequest`].
#[derive(serde::Serialize)]
struct Head<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "str::is_empty")]
    system: &'a str,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tools: &'a [crate::protocol::ToolDefinition],
    stream: bool,
}

/// Every field of `req` but `messages`, as sent.
fn head(req: &MessagesRequest) -> serde_json::Map<String, Value> {
    let mut head = match serde_json::to_value(MessagesRequest {
        messages: Vec::new(),
        model: req.model.clone(),
        max_tokens: req.max_tokens,
        system: req.system.clone(),
        tools: req.tools.clone(),
        stream: req.stream,
    }) {
        Ok(Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    head.remove("messages");
    head
}

/// The `cache_control` breakpoints that blocks kept byte for byte carry
/// (also inside a `tool_result`).
fn carried_breakpoints(messages: &[Arc<Message>]) -> usize {
    fn in_block(b: &ContentBlock) -> usize {
        match b {
            ContentBlock::Opaque(v) => count_breakpoints(v),
            ContentBlock::ToolResult(r) => match &r.content {
                crate::protocol::ToolResultContent::Blocks(blocks) => {
                    blocks.iter().map(in_block).sum()
                }
                _ => 0,
            },
            _ => 0,
        }
    }
    messages
        .iter()
        .flat_map(|m| m.content.iter())
        .map(in_block)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Role, ToolDefinition};
    use pretty_assertions::assert_eq;

    fn text(role: Role, t: &str) -> Arc<Message> {
        Arc::new(Message {
            role,
            content: vec![ContentBlock::Text { text: t.into() }],
        })
    }

    fn request(messages: Vec<Arc<Message>>) -> MessagesRequest {
        MessagesRequest {
            model: "m".into(),
            max_tokens: 64,
            system: "be brief".into(),
            messages,
            tools: vec![ToolDefinition {
                name: "Read".into(),
                description: "reads".into(),
                input_schema: json!({"type": "object"}),
            }],
            stream: true,
        }
    }

    /// The body is the request as serialized, plus `stream` and the
    /// breakpoints (their places: `provider::cache`'s tests), the same
    /// whether the messages come from the cache or not.
    #[test]
    fn the_body_is_the_request_with_its_breakpoints_cached_or_not() {
        let cases = [
            request(vec![]),
            request(vec![text(Role::User, "hi")]),
            request(vec![
                text(Role::User, "hi"),
                text(Role::Assistant, "hello"),
                text(Role::User, "again"),
            ]),
            MessagesRequest {
                system: String::new(),
                tools: vec![],
                ..request(vec![text(Role::User, "hi")])
            },
            request(vec![Arc::new(Message {
                role: Role::User,
                content: vec![
                    ContentBlock::Opaque(
                        json!({"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}),
                    ),
                    ContentBlock::Opaque(
                        json!({"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}}),
                    ),
                    ContentBlock::Opaque(
                        json!({"type": "text", "text": "c", "cache_control": {"type": "ephemeral"}}),
                    ),
                    ContentBlock::Text { text: "d".into() },
                ],
            })]),
        ];
        for stream in [true, false] {
            for req in &cases {
                let cache = WireCache::default();
                let cold: Value = serde_json::from_slice(&cache.body(req, stream, &[])).unwrap();
                let mut plain = serde_json::to_value(req).unwrap();
                plain["stream"] = json!(stream);
                if let Some(system) = plain.get("system").cloned() {
                    plain["system"] = json!([{"type": "text", "text": system}]);
                }
                assert_eq!(
                    without_breakpoints(cold.clone()),
                    without_breakpoints(plain)
                );
                // Twice: the second body comes from the cache.
                cache.texts(&req.messages);
                let warm: Value = serde_json::from_slice(&cache.body(req, stream, &[])).unwrap();
                assert_eq!(warm, cold);
            }
        }
    }

    /// `body` without any `cache_control`.
    fn without_breakpoints(mut body: Value) -> Value {
        fn strip(v: &mut Value) {
            match v {
                Value::Object(map) => {
                    map.remove("cache_control");
                    map.values_mut().for_each(strip);
                }
                Value::Array(items) => items.iter_mut().for_each(strip),
                _ => {}
            }
        }
        strip(&mut body);
        body
    }

    #[test]
    fn extra_fields_are_added() {
        let cache = WireCache::default();
        let body: Value = serde_json::from_slice(&cache.body(
            &request(vec![text(Role::User, "hi")]),
            true,
            &[("temperature", json!(0.5))],
        ))
        .unwrap();
        assert_eq!(body["temperature"], json!(0.5));
    }

    /// A message is serialized once while the same `Arc` is sent; a
    /// changed message (a new `Arc`) is serialized again, and a message
    /// no longer sent is let go.
    #[test]
    fn a_message_is_kept_while_its_arc_is_sent_and_let_go_after() {
        let cache = WireCache::default();
        let a = text(Role::User, "a");
        let b = text(Role::Assistant, "b");
        let first = cache.texts(&[a.clone(), b.clone()]);
        let second = cache.texts(&[a.clone(), b.clone()]);
        assert_eq!(first, second);
        assert_eq!(cache.made(), 2, "reused, not made again");
        let mut changed = b.clone();
        Arc::make_mut(&mut changed)
            .content
            .push(ContentBlock::Text {
                text: "more".into(),
            });
        let third = cache.texts(&[a.clone(), changed.clone()]);
        assert_eq!(third[0], first[0]);
        assert_eq!(third[1], serde_json::to_string(&*changed).unwrap());
        assert_eq!(cache.made(), 3, "only the changed message made again");
        cache.texts(&[changed]);
        assert_eq!(cache.len(), 1, "the messages no longer sent are let go");
    }

    #[test]
    fn request_bytes_is_the_size_of_the_body_give_or_take_the_breakpoints() {
        let req = request(vec![text(Role::User, "hi"), text(Role::Assistant, "yo")]);
        let cache = WireCache::default();
        let counted = cache.request_bytes(&req);
        let plain = json_bytes(&req);
        assert!(counted.abs_diff(plain) <= 16, "{counted} vs {plain}");
    }

    /// Whatever the conversation does between two requests (grow, a
    /// message changed or taken out, a shorter request such as the body's
    /// messages before the last), the joined text is the plain
    /// serialization, and a message kept is never serialized again.
    mod joined {
        use super::*;
        use proptest::prelude::*;

        #[derive(Debug, Clone)]
        enum Op {
            Push(String),
            Change(usize),
            Remove(usize),
            Send(usize),
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                3 => "[a-z\"\\\\ ]{0,6}".prop_map(Op::Push),
                1 => any::<usize>().prop_map(Op::Change),
                1 => any::<usize>().prop_map(Op::Remove),
                3 => any::<usize>().prop_map(Op::Send),
            ]
        }

        proptest! {
            #[test]
            fn the_joined_text_is_the_plain_one(ops in proptest::collection::vec(op(), 1..40)) {
                let cache = WireCache::default();
                let mut messages: Vec<Arc<Message>> = Vec::new();
                let mut made_before = 0;
                let mut fresh = 0;
                for op in ops {
                    match op {
                        Op::Push(t) => {
                            let mut m = text(Role::User, &t);
                            if t.len() % 3 == 0 {
                                // Kept byte for byte, with a breakpoint.
                                Arc::make_mut(&mut m).content.push(ContentBlock::Opaque(
                                    json!({"type": "text", "text": "k", "cache_control": {"type": "ephemeral"}}),
                                ));
                            }
                            messages.push(m);
                            fresh += 1;
                        }
                        Op::Change(i) if !messages.is_empty() => {
                            let i = i % messages.len();
                            let mut m = messages[i].clone();
                            Arc::make_mut(&mut m).content.push(ContentBlock::Text { text: "x".into() });
                            messages[i] = m;
                            fresh += 1;
                        }
                        Op::Remove(i) if !messages.is_empty() => {
                            messages.remove(i % messages.len());
                        }
                        Op::Send(n) => {
                            let n = n % (messages.len() + 1);
                            let plain: Vec<String> = messages[..n]
                                .iter()
                                .map(|m| serde_json::to_string(&**m).unwrap())
                                .collect();
                            let joined = cache.with_joined(&messages[..n], |j| j.to_vec());
                            prop_assert_eq!(String::from_utf8(joined).unwrap(), plain.join(","));
                            prop_assert_eq!(cache.texts(&messages[..n]), plain);
                            prop_assert_eq!(
                                cache.with_sent(&messages[..n], |s| s.breakpoints),
                                carried_breakpoints(&messages[..n])
                            );
                            // Never more made than the messages new since.
                            prop_assert!(cache.made() - made_before <= fresh.max(n));
                            made_before = cache.made();
                            fresh = 0;
                        }
                        _ => {}
                    }
                }
            }
        }
    }
}
