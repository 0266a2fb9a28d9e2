//! Read on images, through the tool's own gates on a disk editor: the real
//! format comes from the bytes, a file that does not decode is a clear
//! message and never an image block, and an image over the API's limits is
//! scaled down and re-encoded with a note. Every image is made here with the
//! `image` crate (no binary fixtures).

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;

use std::io::Cursor;
use std::path::Path;
use std::sync::Arc;

use base64::Engine;
use image::codecs::gif::GifEncoder;
use image::codecs::jpeg::JpegEncoder;
use image::codecs::webp::WebPEncoder;
use image::{
    DynamicImage, ExtendedColorType, Frame, ImageBuffer, ImageFormat, Rgb, RgbImage, Rgba,
    RgbaImage,
};
use lathe_core::editor::DiskEditor;
use lathe_core::protocol::{ContentBlock, ToolResultContent};
use lathe_core::tools::read::{MAX_IMAGE_BYTES, MAX_LONG_EDGE_PX};
use lathe_core::tools::{ToolContext, ToolOutput};
use serde_json::json;

fn ctx(root: &Path) -> ToolContext {
    common::tool_ctx(root, Arc::new(DiskEditor::new()))
}

/// Read `rel` like the pipeline (prepare, validate, run): the output, or
/// the model-facing error.
async fn read(root: &Path, rel: &str) -> Result<ToolOutput, String> {
    let c = ctx(root);
    let tool = common::builtin("Read");
    let call = tool
        .prepare(&json!({ "file_path": rel }), &c.root)
        .map_err(|e| e.message)?;
    let planned = call.validate(&c).await.map_err(|e| e.message)?;
    planned.run(&c).await.map_err(|e| e.message)
}

/// The model-facing error of a Read that must fail.
async fn refusal(root: &Path, rel: &str) -> String {
    match read(root, rel).await {
        Ok(out) => panic!("expected an error, got {:?}", out.content),
        Err(message) => message,
    }
}

/// What an image result holds: media type, the decoded bytes sent, and the
/// text of the note block (`None` when there is only the image).
struct Sent {
    media_type: String,
    data: Vec<u8>,
    note: Option<String>,
}

impl Sent {
    fn image(&self) -> DynamicImage {
        let format = ImageFormat::from_mime_type(&self.media_type).expect("known type");
        image::load_from_memory_with_format(&self.data, format).expect("the sent image decodes")
    }
}

fn sent(out: &ToolOutput) -> Sent {
    let ToolResultContent::Blocks(blocks) = &out.content else {
        panic!("not blocks: {:?}", out.content)
    };
    let ContentBlock::Image { source } = &blocks[0] else {
        panic!("first block is not an image: {blocks:?}")
    };
    assert_eq!(source.kind, "base64");
    // The API's limit is 5 MB of base64 per image.
    assert!(source.data.len() <= 5_000_000, "{}", source.data.len());
    let note = match &blocks[1..] {
        [] => None,
        [ContentBlock::Text { text }] => Some(text.clone()),
        other => panic!("unexpected blocks after the image: {other:?}"),
    };
    Sent {
        media_type: source.media_type.clone(),
        data: base64::engine::general_purpose::STANDARD
            .decode(&source.data)
            .expect("base64"),
        note,
    }
}

fn encode(img: &DynamicImage, format: ImageFormat) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    img.write_to(&mut out, format).expect("encode");
    out.into_inner()
}

fn jpeg(img: &RgbImage, quality: u8) -> Vec<u8> {
    let mut out = Vec::new();
    img.write_with_encoder(JpegEncoder::new_with_quality(&mut out, quality))
        .expect("jpeg");
    out
}

/// Pixels no encoder can compress (a fixed-seed xorshift).
fn noise(w: u32, h: u32) -> RgbImage {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    RgbImage::from_fn(w, h, |_, _| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let [r, g, b, ..] = state.to_le_bytes();
        Rgb([r, g, b])
    })
}

/// A smooth picture (compresses well).
fn gradient(w: u32, h: u32) -> RgbImage {
    RgbImage::from_fn(w, h, |x, y| {
        Rgb([(x * 255 / w) as u8, (y * 255 / h) as u8, 128])
    })
}

fn write(root: &Path, rel: &str, bytes: &[u8]) {
    std::fs::write(root.join(rel), bytes).expect("write");
}

#[tokio::test]
async fn a_png_named_jpg_is_sent_as_png_with_its_own_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let png = encode(&gradient(40, 30).into(), ImageFormat::Png);
    write(dir.path(), "photo.jpg", &png);
    let out = read(dir.path(), "photo.jpg").await.expect("image");
    let s = sent(&out);
    assert_eq!(s.media_type, "image/png");
    assert_eq!(s.data, png, "an image within the limits is sent as it is");
    assert_eq!(s.note, None);
    assert_eq!(out.summary, format!("PNG image, {} bytes", png.len()));
}

#[tokio::test]
async fn a_jpeg_named_png_is_sent_as_jpeg() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = jpeg(&gradient(40, 30), 90);
    write(dir.path(), "icon.png", &bytes);
    let s = sent(&read(dir.path(), "icon.png").await.expect("image"));
    assert_eq!(s.media_type, "image/jpeg");
    assert_eq!(s.data, bytes);
}

#[tokio::test]
async fn a_text_file_named_png_is_read_as_text() {
    // Its bytes are text, so it is text: the model sees what is in it (an
    // SVG saved as .png, a placeholder, a Git LFS pointer), never an image
    // block the API would reject.
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "logo.png",
        b"version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 12345\n",
    );
    let out = read(dir.path(), "logo.png").await.expect("text");
    assert_eq!(
        out.content,
        ToolResultContent::Text(
            "     1\tversion https://git-lfs.github.com/spec/v1\n     2\toid sha256:4d7a\n     3\tsize 12345"
                .into()
        )
    );
}

#[tokio::test]
async fn a_truncated_png_gives_the_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let png = encode(&noise(64, 64).into(), ImageFormat::Png);
    write(dir.path(), "cut.png", &png[..png.len() / 2]);
    let err = refusal(dir.path(), "cut.png").await;
    assert_eq!(
        err,
        "cut.png starts like a PNG image but does not decode as one (unexpected end of file), so it was not sent as an image. The file may be truncated or corrupt: check it (e.g. with `file` in Bash) or recreate it, then Read it again."
    );
}

#[tokio::test]
async fn a_corrupt_or_truncated_gif_or_webp_gives_the_message() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "bad.gif", b"GIF89a\x10\x00\x10\x00garbage");
    write(
        dir.path(),
        "bad.webp",
        b"RIFF\x10\x00\x00\x00WEBPVP8 garbage",
    );
    let gif = encode(&rgba(20, 10, RED).into(), ImageFormat::Gif);
    write(dir.path(), "cut.gif", &gif[..gif.len() - 5]);
    let webp = webp(&rgba(16, 8, BLUE));
    write(dir.path(), "cut.webp", &webp[..webp.len() - 5]);
    for (file, kind, detail) in [
        ("bad.gif", "GIF", "unknown block type encountered"),
        (
            "bad.webp",
            "WebP",
            "Unsupported feature: Non-keyframe frames",
        ),
        ("cut.gif", "GIF", "Unexpected End of File"),
        ("cut.webp", "WebP", "Corrupt bitstream"),
    ] {
        assert_eq!(
            refusal(dir.path(), file).await,
            format!("{file} starts like a {kind} image but does not decode as one ({detail}), so it was not sent as an image. The file may be truncated or corrupt: check it (e.g. with `file` in Bash) or recreate it, then Read it again.")
        );
    }
}

#[tokio::test]
async fn a_3000_by_2000_image_comes_back_1568_by_1045_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "big.png",
        &encode(&gradient(3000, 2000).into(), ImageFormat::Png),
    );
    let out = read(dir.path(), "big.png").await.expect("image");
    let s = sent(&out);
    assert_eq!(s.media_type, "image/png", "a PNG stays a PNG");
    let img = s.image();
    assert_eq!((img.width(), img.height()), (1568, 1045));
    assert_eq!(MAX_LONG_EDGE_PX, 1568);
    assert_eq!(
        s.note.as_deref(),
        Some(format!(
            "[big.png is 3000×2000 pixels; it was scaled down to 1568×1045 and sent as image/png ({} bytes) to fit the API's image limits (long edge at most 1568 pixels, at most 3750000 bytes). Positions and sizes you see are in the scaled image: multiply them by 1.91 for the file's pixels.]",
            s.data.len()
        ).as_str())
    );
    assert!(
        out.summary.ends_with(", scaled 3000×2000 → 1568×1045"),
        "{}",
        out.summary
    );
}

#[tokio::test]
async fn a_tall_jpeg_is_scaled_and_stays_jpeg() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "tall.jpg", &jpeg(&gradient(1000, 4000), 90));
    let s = sent(&read(dir.path(), "tall.jpg").await.expect("image"));
    assert_eq!(s.media_type, "image/jpeg");
    let img = s.image();
    assert_eq!((img.width(), img.height()), (392, 1568));
    assert!(s.note.unwrap().starts_with(
        "[tall.jpg is 1000×4000 pixels; it was scaled down to 392×1568 and sent as image/jpeg ("
    ));
}

#[tokio::test]
async fn a_large_noisy_png_is_kept_under_5_mb() {
    // 1800×1200 of noise is 6.5 MB of PNG; at 1568×1045 it is still 4.9 MB,
    // so it is made smaller again until it fits.
    let dir = tempfile::tempdir().unwrap();
    let png = encode(&noise(1800, 1200).into(), ImageFormat::Png);
    assert!(png.len() as u64 > MAX_IMAGE_BYTES);
    write(dir.path(), "noise.png", &png);
    let out = read(dir.path(), "noise.png").await.expect("image");
    let s = sent(&out);
    assert_eq!(s.media_type, "image/png");
    assert!(s.data.len() as u64 <= MAX_IMAGE_BYTES, "{}", s.data.len());
    let img = s.image();
    assert!(img.width() < 1568 && img.width() > 800, "{}", img.width());
    // The aspect ratio is kept (3:2, to the pixel).
    assert!((img.width() * 2).abs_diff(img.height() * 3) <= 3);
    let factor = 1800.0 / f64::from(img.width());
    assert_eq!(
        s.note.unwrap(),
        format!(
            "[noise.png is 1800×1200 pixels; it was scaled down to {}×{} and sent as image/png ({} bytes) to fit the API's image limits (long edge at most 1568 pixels, at most 3750000 bytes). Positions and sizes you see are in the scaled image: multiply them by {factor:.2} for the file's pixels.]",
            img.width(),
            img.height(),
            s.data.len()
        )
    );
}

#[tokio::test]
async fn a_large_noisy_jpeg_is_kept_under_5_mb_as_jpeg() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = jpeg(&noise(2400, 1600), 100);
    assert!(bytes.len() as u64 > MAX_IMAGE_BYTES, "{}", bytes.len());
    write(dir.path(), "noise.jpg", &bytes);
    let s = sent(&read(dir.path(), "noise.jpg").await.expect("image"));
    assert_eq!(s.media_type, "image/jpeg");
    assert!(s.data.len() as u64 <= MAX_IMAGE_BYTES);
    let img = s.image();
    assert_eq!((img.width(), img.height()), (1568, 1045));
}

#[tokio::test]
async fn a_16_bit_png_over_the_byte_limit_is_re_encoded_at_full_size() {
    let dir = tempfile::tempdir().unwrap();
    let small = noise(1000, 800);
    let deep: ImageBuffer<Rgb<u16>, Vec<u16>> = ImageBuffer::from_fn(1000, 800, |x, y| {
        let Rgb([r, g, b]) = *small.get_pixel(x, y);
        Rgb([
            u16::from(r) << 8 | u16::from(g),
            u16::from(g) << 8 | u16::from(b),
            u16::from(b) << 8 | u16::from(r),
        ])
    });
    let png = encode(&DynamicImage::ImageRgb16(deep), ImageFormat::Png);
    assert!(png.len() as u64 > MAX_IMAGE_BYTES, "{}", png.len());
    write(dir.path(), "deep.png", &png);
    let out = read(dir.path(), "deep.png").await.expect("image");
    let s = sent(&out);
    assert_eq!(s.media_type, "image/png");
    let img = s.image();
    assert_eq!((img.width(), img.height()), (1000, 800));
    assert_eq!(
        s.note.unwrap(),
        format!(
            "[deep.png is {} bytes, more than the 3750000 bytes an image may have; it was re-encoded as image/png at its full 1000×800 pixels ({} bytes).]",
            png.len(),
            s.data.len()
        )
    );
    assert_eq!(
        out.summary,
        format!(
            "PNG image, {} bytes, re-encoded to {} bytes",
            png.len(),
            s.data.len()
        )
    );
}

fn rgba(w: u32, h: u32, color: [u8; 4]) -> RgbaImage {
    RgbaImage::from_pixel(w, h, Rgba(color))
}

const RED: [u8; 4] = [255, 0, 0, 255];
const BLUE: [u8; 4] = [0, 0, 255, 255];

#[tokio::test]
async fn a_still_gif_is_sent_as_gif() {
    let dir = tempfile::tempdir().unwrap();
    let gif = encode(&rgba(20, 10, RED).into(), ImageFormat::Gif);
    write(dir.path(), "still.gif", &gif);
    let s = sent(&read(dir.path(), "still.gif").await.expect("image"));
    assert_eq!(s.media_type, "image/gif");
    assert_eq!(s.data, gif);
    assert_eq!(s.note, None);
}

#[tokio::test]
async fn an_animated_gif_is_sent_as_its_first_frame_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let mut gif = Vec::new();
    {
        let mut enc = GifEncoder::new(&mut gif);
        enc.encode_frames([
            Frame::new(rgba(20, 10, RED)),
            Frame::new(rgba(20, 10, BLUE)),
        ])
        .expect("gif");
    }
    write(dir.path(), "spin.gif", &gif);
    let out = read(dir.path(), "spin.gif").await.expect("image");
    let s = sent(&out);
    assert_eq!(s.media_type, "image/png");
    let img = s.image().into_rgba8();
    assert_eq!(img.dimensions(), (20, 10));
    assert_eq!(img.get_pixel(5, 5).0, RED, "the first frame");
    assert_eq!(
        s.note.as_deref(),
        Some("[spin.gif is an animated GIF image; this is its first frame only, sent as a still image/png. To see other frames, extract them to image files with Bash and Read those.]")
    );
    assert_eq!(
        out.summary,
        format!("GIF image, {} bytes, first frame", gif.len())
    );
}

/// A lossless WebP of `img` (the image crate's encoder).
fn webp(img: &RgbaImage) -> Vec<u8> {
    let mut out = Vec::new();
    WebPEncoder::new_lossless(&mut out)
        .encode(
            img.as_raw(),
            img.width(),
            img.height(),
            ExtendedColorType::Rgba8,
        )
        .expect("webp");
    out
}

fn chunk(fourcc: &[u8; 4], payload: &[u8]) -> Vec<u8> {
    let mut c = fourcc.to_vec();
    c.extend_from_slice(&u32::try_from(payload.len()).unwrap().to_le_bytes());
    c.extend_from_slice(payload);
    if payload.len() % 2 == 1 {
        c.push(0);
    }
    c
}

fn u24(v: u32) -> [u8; 3] {
    let [a, b, c, _] = v.to_le_bytes();
    [a, b, c]
}

/// An animated WebP (VP8X + ANIM + one ANMF per frame, each frame the VP8L
/// chunk of a still lossless WebP), by the container spec; the image crate
/// does not write animations.
fn animated_webp(frames: &[RgbaImage]) -> Vec<u8> {
    let (w, h) = frames[0].dimensions();
    let mut vp8x = vec![0x02 | 0x10, 0, 0, 0]; // animation, alpha
    vp8x.extend_from_slice(&u24(w - 1));
    vp8x.extend_from_slice(&u24(h - 1));
    let mut body = b"WEBP".to_vec();
    body.extend(chunk(b"VP8X", &vp8x));
    body.extend(chunk(b"ANIM", &[0, 0, 0, 0, 0, 0]));
    for f in frames {
        let still = webp(f);
        assert_eq!(&still[12..16], b"VP8L", "a simple lossless file");
        let mut anmf = Vec::new();
        anmf.extend_from_slice(&u24(0)); // x / 2
        anmf.extend_from_slice(&u24(0)); // y / 2
        anmf.extend_from_slice(&u24(w - 1));
        anmf.extend_from_slice(&u24(h - 1));
        anmf.extend_from_slice(&u24(100)); // duration, ms
        anmf.push(0b10); // do not blend, no disposal
        anmf.extend_from_slice(&still[12..]);
        body.extend(chunk(b"ANMF", &anmf));
    }
    chunk(b"RIFF", &body)
}

#[tokio::test]
async fn a_still_webp_is_sent_as_webp() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = webp(&rgba(16, 8, BLUE));
    write(dir.path(), "still.webp", &bytes);
    let s = sent(&read(dir.path(), "still.webp").await.expect("image"));
    assert_eq!(s.media_type, "image/webp");
    assert_eq!(s.data, bytes);
    assert_eq!(s.note, None);
}

#[tokio::test]
async fn an_animated_webp_is_sent_as_its_first_frame_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = animated_webp(&[rgba(16, 8, BLUE), rgba(16, 8, RED)]);
    write(dir.path(), "anim.webp", &bytes);
    let out = read(dir.path(), "anim.webp").await.expect("image");
    let s = sent(&out);
    assert_eq!(s.media_type, "image/png");
    let img = s.image().into_rgba8();
    assert_eq!(img.dimensions(), (16, 8));
    assert_eq!(img.get_pixel(3, 3).0, BLUE, "the first frame");
    assert_eq!(
        s.note.as_deref(),
        Some("[anim.webp is an animated WebP image; this is its first frame only, sent as a still image/png. To see other frames, extract them to image files with Bash and Read those.]")
    );
}

#[tokio::test]
async fn a_large_animated_gif_is_its_first_frame_scaled() {
    let dir = tempfile::tempdir().unwrap();
    let mut gif = Vec::new();
    {
        let mut enc = GifEncoder::new(&mut gif);
        enc.encode_frames([
            Frame::new(rgba(2000, 100, RED)),
            Frame::new(rgba(2000, 100, BLUE)),
        ])
        .expect("gif");
    }
    write(dir.path(), "wide.gif", &gif);
    let s = sent(&read(dir.path(), "wide.gif").await.expect("image"));
    assert_eq!(s.media_type, "image/png");
    let img = s.image();
    assert_eq!((img.width(), img.height()), (1568, 78));
    let note = s.note.unwrap();
    let (first, second) = note.split_once('\n').expect("two notes");
    assert_eq!(first, "[wide.gif is an animated GIF image; this is its first frame only, sent as a still image/png. To see other frames, extract them to image files with Bash and Read those.]");
    assert!(
        second.starts_with(
            "[wide.gif is 2000×100 pixels; it was scaled down to 1568×78 and sent as image/png ("
        ),
        "{second}"
    );
}

/// A PNG chunk with its CRC (CRC-32/ISO-HDLC over type and data).
fn png_chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut crc = 0xFFFF_FFFFu32;
    for &byte in kind.iter().chain(data) {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    let mut c = u32::try_from(data.len()).unwrap().to_be_bytes().to_vec();
    c.extend_from_slice(kind);
    c.extend_from_slice(data);
    c.extend_from_slice(&(!crc).to_be_bytes());
    c
}

#[tokio::test]
async fn an_image_of_too_many_pixels_is_refused_before_decoding() {
    // A header that claims 10000×9000 RGB: refused from the header, without
    // allocating 270 MB for its pixels.
    let dir = tempfile::tempdir().unwrap();
    let mut ihdr = 10_000u32.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&9_000u32.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend(png_chunk(b"IHDR", &ihdr));
    png.extend(png_chunk(b"IDAT", &[0x78, 0x9c, 0x03, 0x00]));
    png.extend(png_chunk(b"IEND", &[]));
    write(dir.path(), "huge.png", &png);
    assert_eq!(
        refusal(dir.path(), "huge.png").await,
        "huge.png is a PNG image of 10000×9000 pixels, more than the 64000000 pixels Read decodes, so it was not sent. Make a smaller copy (e.g. with Bash) and Read that."
    );
}

#[tokio::test]
async fn a_truncated_jpeg_gives_the_clear_message() {
    // The JPEG decoder would paint the missing part grey; the API refuses
    // such a file, so Read does too.
    let dir = tempfile::tempdir().unwrap();
    let bytes = jpeg(&noise(64, 64), 90);
    for cut in [bytes.len() / 2, bytes.len() - 2] {
        write(dir.path(), "cut.jpg", &bytes[..cut]);
        assert_eq!(
            refusal(dir.path(), "cut.jpg").await,
            "cut.jpg starts like a JPEG image but does not decode as one (it ends before its end-of-image marker), so it was not sent as an image. The file may be truncated or corrupt: check it (e.g. with `file` in Bash) or recreate it, then Read it again."
        );
    }
}

#[tokio::test]
async fn an_image_file_over_the_load_limit_is_refused_unread() {
    // A sparse file: a PNG signature, then zeros up to 64 MiB + 1 byte.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vast.png");
    std::fs::write(&path, b"\x89PNG\r\n\x1a\n").unwrap();
    let size = lathe_core::tools::read::MAX_IMAGE_FILE_BYTES + 1;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(size)
        .unwrap();
    assert_eq!(
        refusal(dir.path(), "vast.png").await,
        "vast.png is an image (PNG image) of 67108865 bytes, more than the 67108864 bytes an image may have. Make a smaller copy (e.g. with Bash) and Read that."
    );
}
