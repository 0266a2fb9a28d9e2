//! A simulated prompt cache for `POST /v1/messages`, so a client's
//! `cache_control` breakpoints show in `usage` (`cache_creation_input_tokens`,
//! `cache_read_input_tokens`). A simplification of the real one (README,
//! "Prompt cache"): no minimum prefix length, no 20-block lookback, no
//! expiry.
//!
//! A request is flattened into cacheable units, in the API's prefix order:
//! each tool definition, each `system` block (a string `system` is one text
//! block), then each content block of each message (a string `content` is
//! one text block). A unit is its compact JSON without `cache_control`; a
//! breakpoint is a unit that carried `cache_control` (a `tool_result` also
//! when a block of its `content` did). The server remembers a hash of every
//! prefix ending at a breakpoint of an admitted request; a later request
//! reads the longest remembered prefix up to its own last breakpoint and
//! creates the rest up to that breakpoint.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashSet;
use std::hash::{Hash, Hasher};

use serde_json::Value;

use crate::request::{block_type, messages, role};

/// The cache counts of one request, before a scripted `usage` may replace
/// them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheCounts {
    /// Bytes of the units up to and including the last breakpoint (0 without
    /// breakpoints): left out of the default `input_tokens`.
    pub cached_bytes: usize,
    /// `cache_creation_input_tokens`.
    pub creation: u64,
    /// `cache_read_input_tokens`.
    pub read: u64,
}

/// What [`PromptCache::lookup`] found: the counts, and the prefix hashes
/// this request writes when it is admitted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lookup {
    /// The request's cache counts.
    pub counts: CacheCounts,
    /// Hashes of the prefixes ending at each of the request's breakpoints.
    writes: Vec<u64>,
}

/// The prefixes written so far (hashes), for the server's lifetime.
#[derive(Debug, Default)]
pub struct PromptCache {
    written: HashSet<u64>,
}

impl PromptCache {
    /// Measures `body` against the prefixes written so far, without writing.
    ///
    /// Returns zero counts and nothing to write when the request has no
    /// breakpoint. Else, with `last` its last breakpoint: a hit at `k` (the
    /// longest written prefix `units[0..=k]`, `k ≤ last`) reads
    /// tokens(units[0..=k]) and creates tokens(units[k+1..=last]); no hit
    /// creates tokens(units[0..=last]).
    pub fn lookup(&self, body: &Value) -> Lookup {
        let units = units(body);
        let Some(last) = units.iter().rposition(|u| u.breakpoint) else {
            return Lookup::default();
        };
        let mut hasher = DefaultHasher::new();
        let hashes: Vec<u64> = units[..=last]
            .iter()
            .map(|unit| {
                unit.place.hash(&mut hasher);
                unit.json.hash(&mut hasher);
                hasher.finish()
            })
            .collect();
        let bytes = |range: &[Unit]| range.iter().map(|u| u.json.len()).sum::<usize>();
        let hit = (0..=last)
            .rev()
            .find(|&k| self.written.contains(&hashes[k]));
        let (read, creation) = match hit {
            Some(k) => (
                tokens(bytes(&units[..=k])),
                tokens(bytes(&units[k + 1..=last])),
            ),
            None => (0, tokens(bytes(&units[..=last]))),
        };
        Lookup {
            counts: CacheCounts {
                cached_bytes: bytes(&units[..=last]),
                creation,
                read,
            },
            writes: (0..=last)
                .filter(|&k| units[k].breakpoint)
                .map(|k| hashes[k])
                .collect(),
        }
    }

    /// Writes every breakpoint prefix of a looked-up request.
    pub fn write(&mut self, lookup: &Lookup) {
        self.written.extend(lookup.writes.iter().copied());
    }
}

/// Tokens of `bytes` serialized bytes: bytes / 4, at least 1 when non-empty.
pub fn tokens(bytes: usize) -> u64 {
    if bytes == 0 {
        0
    } else {
        (bytes / 4).max(1) as u64
    }
}

/// One cacheable unit of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Unit {
    /// Where it sits: `tools`, `system`, or `messages.i.<role>`; hashed with
    /// the JSON so a block cannot stand in for one of another section or
    /// turn.
    place: String,
    /// Compact JSON, `cache_control` removed.
    json: String,
    /// It carried `cache_control` (non-null).
    breakpoint: bool,
}

/// The request's units in prefix order: tools, system, message blocks.
fn units(body: &Value) -> Vec<Unit> {
    let mut out = Vec::new();
    let empty = Vec::new();
    let tools = body
        .get("tools")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    for tool in tools {
        out.push(unit("tools".into(), tool));
    }
    match body.get("system") {
        Some(Value::String(text)) => out.push(unit("system".into(), &text_block(text))),
        Some(Value::Array(blocks)) => {
            for block in blocks {
                out.push(unit("system".into(), block));
            }
        }
        _ => {}
    }
    for (i, message) in messages(body).iter().enumerate() {
        let place = format!("messages.{i}.{}", role(message));
        match message.get("content") {
            Some(Value::String(text)) => out.push(unit(place, &text_block(text))),
            Some(Value::Array(blocks)) => {
                for block in blocks {
                    out.push(unit(place.clone(), block));
                }
            }
            _ => {}
        }
    }
    out
}

fn text_block(text: &str) -> Value {
    serde_json::json!({"type": "text", "text": text})
}

/// A unit of `value`: `cache_control` removed from it (and from the blocks
/// of a `tool_result`'s `content`), a breakpoint when any was non-null.
fn unit(place: String, value: &Value) -> Unit {
    let mut value = value.clone();
    let mut breakpoint = take_cache_control(&mut value);
    if block_type(&value) == "tool_result" {
        if let Some(inner) = value.get_mut("content").and_then(Value::as_array_mut) {
            for block in inner {
                breakpoint |= take_cache_control(block);
            }
        }
    }
    Unit {
        place,
        json: value.to_string(),
        breakpoint,
    }
}

/// Removes `cache_control`; true when it was there and not null.
fn take_cache_control(value: &mut Value) -> bool {
    value
        .as_object_mut()
        .and_then(|o| o.remove("cache_control"))
        .is_some_and(|c| !c.is_null())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CC: &str = "ephemeral";

    fn first() -> Value {
        json!({
            "system": [{"type": "text", "text": "You are a test.", "cache_control": {"type": CC}}],
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "hello there", "cache_control": {"type": CC}}]}
            ]
        })
    }

    fn second() -> Value {
        json!({
            "system": [{"type": "text", "text": "You are a test.", "cache_control": {"type": CC}}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "hello there"}]},
                {"role": "assistant", "content": "Hi! What next?"},
                {"role": "user", "content": [
                    {"type": "text", "text": "read the file", "cache_control": {"type": CC}}]}
            ]
        })
    }

    fn bytes(values: &[Value]) -> usize {
        values.iter().map(|v| v.to_string().len()).sum()
    }

    #[test]
    fn units_are_tools_system_then_blocks_without_cache_control() {
        let body = json!({
            "tools": [{"name": "Read", "input_schema": {}, "cache_control": {"type": CC}}],
            "system": "sys",
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Read", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                    "content": [{"type": "text", "text": "x", "cache_control": {"type": CC}}]}]}
            ]
        });
        let units = units(&body);
        let jsons: Vec<&str> = units.iter().map(|u| u.json.as_str()).collect();
        assert_eq!(
            jsons,
            [
                r#"{"input_schema":{},"name":"Read"}"#,
                r#"{"text":"sys","type":"text"}"#,
                r#"{"text":"hi","type":"text"}"#,
                r#"{"id":"t","input":{},"name":"Read","type":"tool_use"}"#,
                r#"{"content":[{"text":"x","type":"text"}],"tool_use_id":"t","type":"tool_result"}"#,
            ]
        );
        let breakpoints: Vec<bool> = units.iter().map(|u| u.breakpoint).collect();
        assert_eq!(breakpoints, [true, false, false, false, true]);
        assert_eq!(units[3].place, "messages.1.assistant");
    }

    #[test]
    fn no_breakpoint_counts_nothing_and_writes_nothing() {
        let cache = PromptCache::default();
        let lookup =
            cache.lookup(&json!({"system": "s", "messages": [{"role": "user", "content": "hi"}]}));
        assert_eq!(lookup, Lookup::default());
        let null = json!({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "hi", "cache_control": null}]}]});
        assert_eq!(cache.lookup(&null), Lookup::default());
    }

    #[test]
    fn a_moved_breakpoint_reads_the_earlier_prefix_and_creates_the_rest() {
        let mut cache = PromptCache::default();
        let one = cache.lookup(&first());
        let prefix = bytes(&[
            json!({"type": "text", "text": "You are a test."}),
            json!({"type": "text", "text": "hello there"}),
        ]);
        assert_eq!(
            one.counts,
            CacheCounts {
                cached_bytes: prefix,
                creation: tokens(prefix),
                read: 0
            }
        );
        // Looking up does not write: the same request misses again.
        assert_eq!(cache.lookup(&first()).counts.read, 0);
        cache.write(&one);
        let again = cache.lookup(&first());
        assert_eq!(again.counts.read, tokens(prefix));
        assert_eq!(again.counts.creation, 0);

        let two = cache.lookup(&second());
        let rest = bytes(&[
            json!({"type": "text", "text": "Hi! What next?"}),
            json!({"type": "text", "text": "read the file"}),
        ]);
        assert_eq!(
            two.counts,
            CacheCounts {
                cached_bytes: prefix + rest,
                creation: tokens(rest),
                read: tokens(prefix)
            }
        );
    }

    #[test]
    fn the_system_breakpoint_alone_hits_when_messages_change() {
        let mut cache = PromptCache::default();
        cache.write(&cache.lookup(&first()));
        let mut other = first();
        other["messages"][0]["content"][0]["text"] = json!("something else");
        let lookup = cache.lookup(&other);
        let system = json!({"type": "text", "text": "You are a test."})
            .to_string()
            .len();
        assert_eq!(lookup.counts.read, tokens(system));
        let changed = json!({"type": "text", "text": "something else"})
            .to_string()
            .len();
        assert_eq!(lookup.counts.creation, tokens(changed));
    }

    #[test]
    fn a_changed_system_text_misses() {
        let mut cache = PromptCache::default();
        cache.write(&cache.lookup(&first()));
        let mut other = first();
        other["system"][0]["text"] = json!("You are another test.");
        let lookup = cache.lookup(&other);
        assert_eq!(lookup.counts.read, 0);
        assert_eq!(lookup.counts.creation, tokens(lookup.counts.cached_bytes));
    }

    #[test]
    fn a_block_moved_to_another_turn_does_not_hit() {
        let mut cache = PromptCache::default();
        let one = json!({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "a"},
            {"type": "text", "text": "b", "cache_control": {"type": CC}}]}]});
        cache.write(&cache.lookup(&one));
        let two = json!({"messages": [
            {"role": "user", "content": [{"type": "text", "text": "a"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "b", "cache_control": {"type": CC}}]}]});
        assert_eq!(cache.lookup(&two).counts.read, 0);
    }

    #[test]
    fn tokens_round_down_but_never_to_zero() {
        assert_eq!(tokens(0), 0);
        assert_eq!(tokens(3), 1);
        assert_eq!(tokens(9), 2);
    }
}
