//! Gate 9's repair of what a tool returned (docs/pipeline.md,
//! "The gates"): whatever a tool returns — a built-in one, a Lua tool, an
//! MCP server — its `tool_result` is one the Messages API accepts. A
//! `tool_result` stays in the conversation, so one the API refuses would
//! make every later request fail.
//!
//! - An image is sent with the media type its bytes are (an `image/jpg`
//!   JPEG goes as `image/jpeg`), decoded and scaled to the API's limits as
//!   Read does ([`crate::tools::read::image::prepare`]); one that cannot be
//!   sent (an SVG, bytes that are no PNG, JPEG, GIF or WebP, an image too
//!   large even scaled) becomes a note in its place, and the rest of the
//!   result is kept.
//! - An empty result (no text, or only empty text blocks) says so in
//!   words: the API refuses an empty text block.

use base64::Engine;

use crate::protocol::{ContentBlock, ImageSource, ToolResultContent};
use crate::text::fill;
use crate::tools::read::image::{prepare, ImageKind, ImageLimits, ImageProblem};
use crate::tools::ToolOutput;

/// Model-facing: an image of a result that cannot be sent, in its place.
/// `{mime}` (as the tool declared it), `{bytes}` (decoded, approximate),
/// `{why}` (one of the `IMAGE_WHY_…` texts).
pub const IMAGE_NOT_SENT: &str = "[image ({mime}, about {bytes} bytes) not sent: {why}]";

/// `{why}` of [`IMAGE_NOT_SENT`]: a type the API does not take.
pub const IMAGE_WHY_TYPE: &str = "the model takes only PNG, JPEG, GIF and WebP images";

/// `{why}` of [`IMAGE_NOT_SENT`]: bytes that are no image of the four
/// types, or do not decode. `{detail}`.
pub const IMAGE_WHY_UNDECODABLE: &str =
    "its data is not a PNG, JPEG, GIF or WebP image that decodes ({detail})";

/// `{why}` of [`IMAGE_NOT_SENT`]: too large even scaled down.
pub const IMAGE_WHY_TOO_LARGE: &str = "it is too large to send, even scaled down";

/// Model-facing: a result with nothing in it. `{tool}`.
pub const EMPTY_RESULT: &str = "{tool} finished and returned no output.";

/// Model-facing: a failure with no message (an MCP `isError` result with
/// no text, a Lua tool's `error("")`). `{tool}`.
pub const EMPTY_ERROR: &str = "{tool} failed and gave no message.";

/// The text of a failed call's `tool_result`: `message`, or
/// [`EMPTY_ERROR`] when it is blank (the API refuses an empty one).
pub fn error_text(tool: &str, message: String) -> String {
    if message.trim().is_empty() {
        fill(EMPTY_ERROR, &[("tool", tool)])
    } else {
        message
    }
}

/// Makes `out` sendable (see the module docs). CPU-bound when the result
/// has images (they are decoded): run off the async runtime's workers.
pub fn repair(tool: &str, mut out: ToolOutput) -> ToolOutput {
    out.content = match out.content {
        ToolResultContent::Text(t) if t.is_empty() => {
            ToolResultContent::Text(fill(EMPTY_RESULT, &[("tool", tool)]))
        }
        ToolResultContent::Text(t) => ToolResultContent::Text(t),
        ToolResultContent::Blocks(blocks) => {
            let blocks: Vec<ContentBlock> = blocks
                .into_iter()
                .filter(|b| !matches!(b, ContentBlock::Text { text } if text.is_empty()))
                .map(|b| match b {
                    ContentBlock::Image { source } => image_block(source),
                    other => other,
                })
                .collect();
            if blocks.is_empty() {
                ToolResultContent::Text(fill(EMPTY_RESULT, &[("tool", tool)]))
            } else if blocks
                .iter()
                .all(|b| matches!(b, ContentBlock::Text { .. }))
            {
                ToolResultContent::Text(ToolResultContent::Blocks(blocks).as_text())
            } else {
                ToolResultContent::Blocks(blocks)
            }
        }
    };
    out
}

/// `true` when [`repair`] has images to decode (worth moving off the
/// runtime's workers).
pub fn has_images(out: &ToolOutput) -> bool {
    matches!(&out.content, ToolResultContent::Blocks(b)
        if b.iter().any(|b| matches!(b, ContentBlock::Image { .. })))
}

/// The image as the API takes it, or the note that replaces it.
fn image_block(source: ImageSource) -> ContentBlock {
    let engine = base64::engine::general_purpose::STANDARD;
    let declared = source.media_type.clone();
    let note = |bytes: usize, why: &str| ContentBlock::Text {
        text: fill(
            IMAGE_NOT_SENT,
            &[
                (
                    "mime",
                    if declared.is_empty() {
                        "no type"
                    } else {
                        &declared
                    },
                ),
                ("bytes", &bytes.to_string()),
                ("why", why),
            ],
        ),
    };
    let approx = source.data.len() / 4 * 3;
    let Ok(bytes) = engine.decode(source.data.trim()) else {
        return note(
            approx,
            &fill(IMAGE_WHY_UNDECODABLE, &[("detail", "invalid base64")]),
        );
    };
    let size = bytes.len();
    let Some(kind) = ImageKind::detect(&bytes) else {
        let known = [
            "image/png",
            "image/jpeg",
            "image/jpg",
            "image/gif",
            "image/webp",
        ];
        let why = if known.contains(&declared.to_ascii_lowercase().as_str()) {
            fill(
                IMAGE_WHY_UNDECODABLE,
                &[("detail", "its bytes are of no such type")],
            )
        } else {
            IMAGE_WHY_TYPE.to_string()
        };
        return note(size, &why);
    };
    match prepare(bytes, kind, &ImageLimits::API) {
        Ok(p) if !p.reencoded && p.kind.media_type() == source.media_type => {
            ContentBlock::Image { source }
        }
        Ok(p) => ContentBlock::Image {
            source: ImageSource {
                kind: "base64".into(),
                media_type: p.kind.media_type().into(),
                data: engine.encode(&p.data),
            },
        },
        Err(ImageProblem::Undecodable { detail }) => {
            note(size, &fill(IMAGE_WHY_UNDECODABLE, &[("detail", &detail)]))
        }
        Err(ImageProblem::TooManyPixels { .. } | ImageProblem::StillTooLarge { .. }) => {
            note(size, IMAGE_WHY_TOO_LARGE)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(format: image::ImageFormat) -> String {
        let img = image::DynamicImage::new_rgb8(3, 2);
        let mut buf = std::io::Cursor::new(Vec::new());
        img.write_to(&mut buf, format).unwrap();
        base64::engine::general_purpose::STANDARD.encode(buf.into_inner())
    }

    fn image(mime: &str, data: &str) -> ContentBlock {
        ContentBlock::Image {
            source: ImageSource {
                kind: "base64".into(),
                media_type: mime.into(),
                data: data.into(),
            },
        }
    }

    fn blocks(b: Vec<ContentBlock>) -> ToolOutput {
        ToolOutput::new(ToolResultContent::Blocks(b), "")
    }

    #[test]
    fn golden_texts() {
        assert_eq!(
            IMAGE_NOT_SENT,
            "[image ({mime}, about {bytes} bytes) not sent: {why}]"
        );
        assert_eq!(
            IMAGE_WHY_TYPE,
            "the model takes only PNG, JPEG, GIF and WebP images"
        );
        assert_eq!(
            IMAGE_WHY_UNDECODABLE,
            "its data is not a PNG, JPEG, GIF or WebP image that decodes ({detail})"
        );
        assert_eq!(
            IMAGE_WHY_TOO_LARGE,
            "it is too large to send, even scaled down"
        );
        assert_eq!(EMPTY_RESULT, "{tool} finished and returned no output.");
        assert_eq!(
            error_text("mcp__srv__t", " ".into()),
            "mcp__srv__t failed and gave no message."
        );
        assert_eq!(error_text("Glob", "bad".into()), "bad");
    }

    #[test]
    fn image_jpg_is_sent_as_image_jpeg_and_a_wrong_type_as_what_the_bytes_are() {
        let jpeg = encoded(image::ImageFormat::Jpeg);
        let png = encoded(image::ImageFormat::Png);
        let out = repair(
            "t",
            blocks(vec![image("image/jpg", &jpeg), image("image/jpeg", &png)]),
        );
        let ToolResultContent::Blocks(b) = out.content else {
            panic!("{:?}", out.content)
        };
        assert_eq!(
            b,
            vec![image("image/jpeg", &jpeg), image("image/png", &png)]
        );
    }

    #[test]
    fn an_svg_becomes_a_note_and_the_text_is_kept() {
        let svg = base64::engine::general_purpose::STANDARD
            .encode("<svg xmlns='http://www.w3.org/2000/svg'/>");
        let out = repair(
            "t",
            blocks(vec![
                ContentBlock::Text {
                    text: "chart:".into(),
                },
                image("image/svg+xml", &svg),
            ]),
        );
        assert_eq!(
            out.content,
            ToolResultContent::Text(
                "chart:\n[image (image/svg+xml, about 41 bytes) not sent: the model takes only PNG, JPEG, GIF and WebP images]".into()
            )
        );
        let out = repair("t", blocks(vec![image("image/png", "bm90IGFuIGltYWdl")]));
        assert_eq!(
            out.content.as_text(),
            "[image (image/png, about 12 bytes) not sent: its data is not a PNG, JPEG, GIF or WebP image that decodes (its bytes are of no such type)]"
        );
    }

    #[test]
    fn an_empty_result_says_so() {
        let empty = ToolOutput::text(String::new(), "");
        assert_eq!(
            repair("Probe", empty).content,
            ToolResultContent::Text("Probe finished and returned no output.".into())
        );
        let out = repair(
            "Probe",
            blocks(vec![ContentBlock::Text {
                text: String::new(),
            }]),
        );
        assert_eq!(
            out.content.as_text(),
            "Probe finished and returned no output."
        );
    }
}
