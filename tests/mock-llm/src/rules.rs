//! The Messages API's request rules other than pairing (`pairing.rs`),
//! checked on every request after pairing: a violation is answered HTTP 400
//! `invalid_request_error` with the real API's message (built in
//! [`crate::api_error`]) and the script does not advance. The rules, their
//! messages and where each comes from: `tests/mock-llm/README.md`,
//! "Request rules".
//!
//! Order: first the shape of fields, in body order (`max_tokens`, `tools`,
//! then each message's role and blocks), as the API validates the body's
//! schema before its content; then the content rules, message by message.
//! The first violation found is the answer.

use serde_json::Value;

use crate::api_error::{
    cache_control_on_empty_text, duplicate_tool_use_id, empty_content, image_media_type,
    image_media_type_mismatch, image_too_large, image_too_wide, server_tool_use_input_not_object,
    text_not_string, thinking_signature_invalid, thinking_signature_missing,
    too_many_cache_control, tool_name_pattern, tool_schema_top_level_combinator,
    tool_use_id_pattern, tool_use_input_not_object, unexpected_role, CACHE_CONTROL_MAX,
    DUPLICATE_TOOL_NAMES, EMPTY_TEXT, FIRST_MESSAGE_NOT_USER, IMAGE_MAX_BASE64_BYTES,
    IMAGE_MAX_SIDE, IMAGE_MAX_SIDE_MANY, MAX_TOKENS_BELOW_ONE, NO_MESSAGES, SYSTEM_ROLE,
    TRAILING_WHITESPACE, WHITESPACE_TEXT,
};
use crate::request::{block_type, blocks, messages, role};

/// The media types the API takes for an image.
const IMAGE_MEDIA_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// Above this many images in one request, [`IMAGE_MAX_SIDE_MANY`] applies.
const MANY_IMAGES: usize = 20;

/// Longest custom tool name.
const TOOL_NAME_MAX_LEN: usize = 128;

/// Checks a request body against every rule in the README's table except
/// pairing.
///
/// Returns `Ok(())` when all hold, else `Err` with the real API's
/// `invalid_request_error` message for the first violation. A field that
/// is absent is not checked (`max_tokens`, `tools`, `messages`): the
/// scripted tests send small bodies, and pairing and `expect` read what is
/// there.
pub fn check(body: &Value) -> Result<(), String> {
    check_shapes(body)?;
    check_content(body)
}

/// Field shapes: `max_tokens`, tool names, roles, `tool_use` ids and
/// inputs, image media types, thinking signatures.
fn check_shapes(body: &Value) -> Result<(), String> {
    if let Some(max_tokens) = body.get("max_tokens") {
        if max_tokens.as_u64().is_none_or(|n| n < 1) {
            return Err(MAX_TOKENS_BELOW_ONE.into());
        }
    }
    for (k, tool) in tools(body).iter().enumerate() {
        let custom = tool
            .get("type")
            .and_then(Value::as_str)
            .is_none_or(|t| t == "custom");
        let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
        if custom && !(name.len() <= TOOL_NAME_MAX_LEN && is_id_text(name)) {
            return Err(tool_name_pattern(k));
        }
        let schema = tool.get("input_schema");
        if custom
            && ["anyOf", "oneOf", "allOf"]
                .iter()
                .any(|key| schema.and_then(|s| s.get(key)).is_some())
        {
            return Err(tool_schema_top_level_combinator(k));
        }
    }
    for (i, message) in messages(body).iter().enumerate() {
        match role(message) {
            "user" | "assistant" => {}
            "system" => return Err(SYSTEM_ROLE.into()),
            other => return Err(unexpected_role(other)),
        }
        for (j, block) in blocks(message).iter().enumerate() {
            match block_type(block) {
                "tool_use" => {
                    let id = block.get("id").and_then(Value::as_str).unwrap_or("");
                    if !is_id_text(id) {
                        return Err(tool_use_id_pattern(i, j));
                    }
                    if !block.get("input").is_some_and(Value::is_object) {
                        return Err(tool_use_input_not_object(i, j));
                    }
                }
                "server_tool_use" if !block.get("input").is_some_and(Value::is_object) => {
                    return Err(server_tool_use_input_not_object(i, j));
                }
                "text" if !block.get("text").is_some_and(Value::is_string) => {
                    return Err(text_not_string(i, j));
                }
                "image" => check_media_type(block, &format!("messages.{i}.content.{j}"))?,
                "tool_result" => {
                    for (k, inner) in result_blocks(block).iter().enumerate() {
                        if block_type(inner) == "image" {
                            let path = format!("messages.{i}.content.{j}.tool_result.content.{k}");
                            check_media_type(inner, &path)?;
                        }
                    }
                }
                "thinking" if block.get("signature").is_none() => {
                    return Err(thinking_signature_missing(i, j));
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// Content rules, in message order.
fn check_content(body: &Value) -> Result<(), String> {
    let mut names = Vec::new();
    for tool in tools(body) {
        if let Some(name) = tool.get("name").and_then(Value::as_str) {
            if names.contains(&name) {
                return Err(DUPLICATE_TOOL_NAMES.into());
            }
            names.push(name);
        }
    }
    let Some(all) = body.get("messages").and_then(Value::as_array) else {
        return Ok(());
    };
    if all.is_empty() {
        return Err(NO_MESSAGES.into());
    }
    if all.first().is_some_and(|m| role(m) != "user") {
        return Err(FIRST_MESSAGE_NOT_USER.into());
    }
    let images = count_images(all);
    let mut tool_use_ids: std::collections::HashSet<&str> = Default::default();
    let last = all.len() - 1;
    for (i, message) in all.iter().enumerate() {
        let final_assistant = i == last && role(message) == "assistant";
        match message.get("content") {
            Some(Value::String(s)) => check_text(s)?,
            Some(Value::Array(items)) if items.is_empty() && !final_assistant => {
                return Err(empty_content(i));
            }
            _ => {}
        }
        for (j, block) in blocks(message).iter().enumerate() {
            let path = format!("messages.{i}.content.{j}");
            match block_type(block) {
                "text" => {
                    let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                    if text.is_empty() && has_cache_control(block) {
                        return Err(cache_control_on_empty_text(&path));
                    }
                    check_text(text)?;
                }
                "image" => check_image(block, &path, images)?,
                "tool_use" => {
                    let id = block.get("id").and_then(Value::as_str).unwrap_or("");
                    if !tool_use_ids.insert(id) {
                        return Err(duplicate_tool_use_id(i, j));
                    }
                }
                "tool_result" => check_tool_result(block, &path, images)?,
                "thinking" => {
                    let signature = block.get("signature").and_then(Value::as_str);
                    if signature.is_none_or(|s| s.trim().is_empty()) {
                        return Err(thinking_signature_invalid(i, j));
                    }
                }
                _ => {}
            }
        }
        if final_assistant && ends_with_whitespace(message) {
            return Err(TRAILING_WHITESPACE.into());
        }
    }
    let cached = count_cache_control(body);
    if cached > CACHE_CONTROL_MAX {
        return Err(too_many_cache_control(cached));
    }
    Ok(())
}

/// The `tools` array; empty when missing.
fn tools(body: &Value) -> &[Value] {
    body.get("tools")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The blocks of a `tool_result`'s `content`; empty when it is a string.
fn result_blocks(block: &Value) -> &[Value] {
    block
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// `^[a-zA-Z0-9_-]+$`.
fn is_id_text(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A text block's (or string content's) text: non-empty, not only
/// whitespace.
fn check_text(text: &str) -> Result<(), String> {
    if text.is_empty() {
        Err(EMPTY_TEXT.into())
    } else if text.trim().is_empty() {
        Err(WHITESPACE_TEXT.into())
    } else {
        Ok(())
    }
}

fn has_cache_control(block: &Value) -> bool {
    block.get("cache_control").is_some_and(|c| !c.is_null())
}

fn check_tool_result(block: &Value, path: &str, images: usize) -> Result<(), String> {
    if block.get("content").and_then(Value::as_str) == Some("") {
        return Err(EMPTY_TEXT.into());
    }
    for (k, inner) in result_blocks(block).iter().enumerate() {
        match block_type(inner) {
            "text" if inner.get("text").and_then(Value::as_str) == Some("") => {
                return Err(EMPTY_TEXT.into());
            }
            "image" => check_image(inner, &format!("{path}.tool_result.content.{k}"), images)?,
            _ => {}
        }
    }
    Ok(())
}

/// The base64 `source` of an image block, `None` for URL and file sources.
fn base64_source(block: &Value) -> Option<&Value> {
    let source = block.get("source")?;
    (source.get("type").and_then(Value::as_str) == Some("base64")).then_some(source)
}

fn check_media_type(block: &Value, path: &str) -> Result<(), String> {
    let Some(source) = base64_source(block) else {
        return Ok(());
    };
    let media_type = source.get("media_type").and_then(Value::as_str);
    if media_type.is_some_and(|m| IMAGE_MEDIA_TYPES.contains(&m)) {
        Ok(())
    } else {
        Err(image_media_type(path))
    }
}

/// Size (base64 length), declared type against the bytes, and dimensions
/// (8000 px, 2000 px when the request holds more than 20 images).
fn check_image(block: &Value, path: &str, images: usize) -> Result<(), String> {
    let Some(source) = base64_source(block) else {
        return Ok(());
    };
    let data = source.get("data").and_then(Value::as_str).unwrap_or("");
    if data.len() > IMAGE_MAX_BASE64_BYTES {
        return Err(image_too_large(path, data.len()));
    }
    let Some(bytes) = decode_base64(data) else {
        return Ok(());
    };
    let Some(actual) = sniff_image(&bytes) else {
        return Ok(());
    };
    let declared = source
        .get("media_type")
        .and_then(Value::as_str)
        .unwrap_or("");
    if declared != actual {
        return Err(image_media_type_mismatch(path, declared, actual));
    }
    let many = images > MANY_IMAGES;
    let limit = if many {
        IMAGE_MAX_SIDE_MANY
    } else {
        IMAGE_MAX_SIDE
    };
    match image_dimensions(&bytes) {
        Some((w, h)) if w > limit || h > limit => Err(image_too_wide(path, many)),
        _ => Ok(()),
    }
}

/// The final assistant message ends with whitespace: its string content,
/// or its last block when that is text. A blank text is left to
/// [`check_text`].
fn ends_with_whitespace(message: &Value) -> bool {
    let text = match message.get("content") {
        Some(Value::String(s)) => Some(s.as_str()),
        Some(Value::Array(items)) => items
            .last()
            .filter(|b| block_type(b) == "text")
            .and_then(|b| b.get("text"))
            .and_then(Value::as_str),
        _ => None,
    };
    text.is_some_and(|t| !t.trim().is_empty() && t.ends_with(char::is_whitespace))
}

/// Images in the messages, including those inside tool results.
fn count_images(all: &[Value]) -> usize {
    all.iter()
        .flat_map(|m| blocks(m).iter())
        .map(|b| match block_type(b) {
            "image" => 1,
            "tool_result" => result_blocks(b)
                .iter()
                .filter(|inner| block_type(inner) == "image")
                .count(),
            _ => 0,
        })
        .sum()
}

/// Blocks with `cache_control` in `system` (block form), `tools` and the
/// messages (tool result content included).
fn count_cache_control(body: &Value) -> usize {
    let system = body
        .get("system")
        .and_then(Value::as_array)
        .map_or(0, |s| s.iter().filter(|b| has_cache_control(b)).count());
    let tools = tools(body).iter().filter(|t| has_cache_control(t)).count();
    let in_messages: usize = messages(body)
        .iter()
        .flat_map(|m| blocks(m).iter())
        .map(|b| {
            usize::from(has_cache_control(b))
                + result_blocks(b)
                    .iter()
                    .filter(|inner| has_cache_control(inner))
                    .count()
        })
        .sum();
    system + tools + in_messages
}

/// Standard base64 (padding optional), `None` on any other character.
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for c in text.bytes().take_while(|&c| c != b'=') {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

/// The media type an image's bytes are, from their magic numbers.
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

/// Width and height from a PNG, GIF, JPEG or WebP header.
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
                let is_sof = matches!(marker, 0xC0..=0xCF) && !matches!(marker, 0xC4 | 0xC8 | 0xCC);
                if is_sof {
                    return Some((be16(i + 5)?, be16(i + 3)?));
                }
                i += be16(i)? as usize;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn base64_decodes_with_and_without_padding() {
        assert_eq!(decode_base64("aGk=").as_deref(), Some(&b"hi"[..]));
        assert_eq!(decode_base64("aGk").as_deref(), Some(&b"hi"[..]));
        assert_eq!(decode_base64("aGVsbG8h").as_deref(), Some(&b"hello!"[..]));
        assert_eq!(decode_base64("a b"), None);
    }

    #[test]
    fn dimensions_of_png_gif_and_jpeg_headers() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        png.extend(640u32.to_be_bytes());
        png.extend(480u32.to_be_bytes());
        assert_eq!(image_dimensions(&png), Some((640, 480)));
        let gif = [b"GIF87a".as_slice(), &[0x80, 0x02, 0xE0, 0x01]].concat();
        assert_eq!(image_dimensions(&gif), Some((640, 480)));
        let jpeg = [
            0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x02, 0xFF, 0xC2, 0x00, 0x11, 0x08, 0x01, 0xE0, 0x02,
            0x80,
        ];
        assert_eq!(image_dimensions(&jpeg), Some((640, 480)));
    }

    #[test]
    fn a_url_image_is_not_measured() {
        let body = json!({"messages":[{"role":"user","content":[
            {"type":"image","source":{"type":"url","url":"https://example.com/x.png"}}]}]});
        assert_eq!(check(&body), Ok(()));
    }

    #[test]
    fn server_tool_blocks_echoed_back_are_accepted() {
        let assistant = json!({"role":"assistant","content":[
            {"type":"text","text":"Let me search."},
            {"type":"server_tool_use","id":"srvtoolu_01","name":"web_search",
             "input":{"query":"x"}},
            {"type":"web_search_tool_result","tool_use_id":"srvtoolu_01","content":[]},
            {"type":"text","text":"Found it.","citations":[]}]});
        // pause_turn: the assistant message is sent back as the final one.
        let paused = json!({"messages":[{"role":"user","content":"search x"}, assistant]});
        assert_eq!(check(&paused), Ok(()));
        assert_eq!(crate::pairing::check(&paused), Ok(()));
        let answered = json!({"messages":[
            {"role":"user","content":"search x"}, assistant,
            {"role":"user","content":"thanks"}]});
        assert_eq!(check(&answered), Ok(()));
        assert_eq!(crate::pairing::check(&answered), Ok(()));
    }
}
