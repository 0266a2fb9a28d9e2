//! Read's images: turns a file's bytes into an `image` block the Messages API
//! accepts, or says why it cannot.
//!
//! An image block stays in the conversation, so one the API rejects makes
//! every later request fail. Nothing is therefore sent on trust:
//!
//! 1. The format comes from the magic bytes
//!    ([`crate::editor::codec::image_media_type`]),
//!    never from the file name; only PNG, JPEG, GIF and WebP (the API's
//!    types) are images here, sent with the media type of the real format.
//! 2. The image is decoded with that format's decoder. A file that does not
//!    decode (truncated, corrupt) is an [`ImageProblem::Undecodable`].
//! 3. The file's own bytes are sent when they fit ([`ImageLimits::API`]):
//!    long edge at most [`MAX_LONG_EDGE_PX`] pixels, at most
//!    [`MAX_IMAGE_BYTES`] bytes, one frame. Otherwise the decoded image is
//!    scaled to fit that long edge (aspect ratio kept, EXIF orientation
//!    applied) and re-encoded: PNG stays PNG, JPEG stays JPEG (quality
//!    [`JPEG_QUALITIES`], lower ones first tried only when the bytes do not
//!    fit), GIF and WebP become PNG. While the bytes are still over the
//!    budget the image is made smaller again; what cannot be made to fit is
//!    an [`ImageProblem::StillTooLarge`].
//! 4. An animated GIF or WebP is sent as its first frame, a still PNG: the
//!    API documents no behaviour for animation, and a still is certain to be
//!    read the same way every time. The note tells the model. (An APNG is a
//!    valid PNG whose default image every PNG decoder shows; it is sent as
//!    is.)
//!
//! Limits (Anthropic's vision guide, "Images and vision"): an image over
//! 8000×8000 px is rejected (2000×2000 px when a request has more than 20
//! images); the request limit per image is 5 MB of base64 (the API's error:
//! `image exceeds 5 MB maximum: N bytes > 5242880 bytes`); an image whose
//! long edge is over 1568 px is scaled down by the API anyway, so sending
//! 1568 px saves tokens and upload without losing what the model sees. A
//! 1568 px long edge is under all three pixel limits.

use std::io::Cursor;

use image::codecs::gif::GifDecoder;
use image::codecs::jpeg::{JpegDecoder, JpegEncoder};
use image::codecs::png::{CompressionType, FilterType as PngFilter, PngDecoder, PngEncoder};
use image::codecs::webp::WebPDecoder;
use image::imageops::FilterType;
use image::metadata::Orientation;
use image::{AnimationDecoder, ColorType, DynamicImage, ImageDecoder, ImageError, Limits};

use crate::editor::codec;

/// Longest edge, in pixels, of an image sent as is; a longer one is scaled
/// down to this. The API scales anything longer down itself (and rejects
/// more than 8000 px, or 2000 px with over 20 images in a request).
pub const MAX_LONG_EDGE_PX: u32 = 1568;
/// Largest image sent, in bytes of the encoded file before base64 (the
/// Messages API takes 5 MB of base64 per image, 5 242 880 characters; this
/// budget is 5 000 000 characters of base64, which leaves room to spare).
pub const MAX_IMAGE_BYTES: u64 = 3_750_000;
/// Most pixels (width × height) Read decodes: the area of the largest image
/// the API takes (8000×8000 px). A larger image is refused before its pixels
/// are allocated.
pub const MAX_DECODE_PIXELS: u64 = 64_000_000;
/// Most bytes the decoder may allocate at once, the output image included:
/// [`MAX_DECODE_PIXELS`] at 8 bytes a pixel (16-bit RGBA) fits.
pub const MAX_DECODE_ALLOC_BYTES: u64 = 512 * 1024 * 1024;
/// JPEG qualities (1–100) tried in order when a JPEG is re-encoded; a lower
/// one only when the bytes at the higher one are over the budget.
pub const JPEG_QUALITIES: [u8; 4] = [85, 70, 55, 40];
/// How many times an image whose bytes stay over the budget is made smaller
/// before Read gives up.
const MAX_SHRINKS: u32 = 8;
/// Shortest long edge, in pixels, Read will shrink an image to.
const MIN_LONG_EDGE_PX: u32 = 16;

/// The four image formats the Messages API accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageKind {
    /// `image/png`.
    Png,
    /// `image/jpeg`.
    Jpeg,
    /// `image/gif`.
    Gif,
    /// `image/webp`.
    WebP,
}

impl ImageKind {
    /// The format of `bytes` from its magic number (the file name plays no
    /// part); `None` when it is none of the four.
    pub fn detect(bytes: &[u8]) -> Option<Self> {
        match codec::image_media_type(bytes)? {
            "image/png" => Some(Self::Png),
            "image/jpeg" => Some(Self::Jpeg),
            "image/gif" => Some(Self::Gif),
            "image/webp" => Some(Self::WebP),
            _ => None,
        }
    }

    /// The MIME type for the `image` block: `image/png`, ….
    pub fn media_type(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Gif => "image/gif",
            Self::WebP => "image/webp",
        }
    }

    /// The human name of the file kind: `PNG image`, `JPEG image`, … (the
    /// same names `codec::sniff_kind` gives).
    pub fn name(self) -> &'static str {
        match self {
            Self::Png => "PNG image",
            Self::Jpeg => "JPEG image",
            Self::Gif => "GIF image",
            Self::WebP => "WebP image",
        }
    }

    /// The format a decoded image of this kind is re-encoded in.
    fn reencoded_as(self) -> Self {
        match self {
            Self::Jpeg => Self::Jpeg,
            Self::Png | Self::Gif | Self::WebP => Self::Png,
        }
    }
}

/// What an image may be to be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageLimits {
    /// Longest edge sent, in pixels.
    pub max_long_edge_px: u32,
    /// Largest encoded image sent, in bytes (before base64).
    pub max_bytes: u64,
    /// Most pixels (width × height) decoded at all.
    pub max_decode_pixels: u64,
}

impl ImageLimits {
    /// The Messages API's limits (see the module docs for the source).
    pub const API: ImageLimits = ImageLimits {
        max_long_edge_px: MAX_LONG_EDGE_PX,
        max_bytes: MAX_IMAGE_BYTES,
        max_decode_pixels: MAX_DECODE_PIXELS,
    };
}

/// An image ready for an `image` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedImage {
    /// The format sent (the real format when the file is sent as is).
    pub kind: ImageKind,
    /// The encoded image (the file's own bytes unless `reencoded`).
    pub data: Vec<u8>,
    /// Width and height of the file's image, in pixels (after its EXIF
    /// orientation when it was re-encoded).
    pub original_px: (u32, u32),
    /// Width and height sent, in pixels.
    pub sent_px: (u32, u32),
    /// `true` when `data` is not the file's bytes.
    pub reencoded: bool,
    /// `true` when the file is animated and `data` is its first frame.
    pub first_frame_only: bool,
}

impl PreparedImage {
    /// `true` when fewer pixels are sent than the file has.
    pub fn scaled(&self) -> bool {
        self.sent_px != self.original_px
    }
}

/// Why an image is not sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageProblem {
    /// The bytes do not decode as the format their magic number names.
    Undecodable {
        /// The decoder's words.
        detail: String,
    },
    /// More pixels than [`ImageLimits::max_decode_pixels`].
    TooManyPixels {
        /// Width in pixels.
        width: u32,
        /// Height in pixels.
        height: u32,
    },
    /// Still over [`ImageLimits::max_bytes`] at the smallest size tried.
    StillTooLarge {
        /// The file's width and height, in pixels.
        original_px: (u32, u32),
        /// The smallest width and height tried, in pixels.
        tried_px: (u32, u32),
        /// Bytes of the image at that size.
        bytes: u64,
    },
}

/// Decodes `bytes` (of format `kind`) and returns what to send within
/// `limits`, or why nothing can be sent. CPU-bound: call it off the async
/// runtime (`spawn_blocking`).
pub fn prepare(
    bytes: Vec<u8>,
    kind: ImageKind,
    limits: &ImageLimits,
) -> Result<PreparedImage, ImageProblem> {
    let decoded = decode(&bytes, kind, limits)?;
    let (w, h) = (decoded.image.width(), decoded.image.height());
    let fits = !decoded.animated
        && w.max(h) <= limits.max_long_edge_px
        && bytes.len() as u64 <= limits.max_bytes;
    if fits {
        return Ok(PreparedImage {
            kind,
            data: bytes,
            original_px: (w, h),
            sent_px: (w, h),
            reencoded: false,
            first_frame_only: false,
        });
    }
    let mut image = decoded.image;
    image.apply_orientation(decoded.orientation);
    let target = kind.reencoded_as();
    let image = eight_bit(image, target);
    let original_px = (image.width(), image.height());
    let mut long_edge = original_px
        .0
        .max(original_px.1)
        .min(limits.max_long_edge_px);
    let mut shrinks = 0;
    loop {
        let sent_px = fit(original_px, long_edge);
        let resized;
        let frame = if sent_px == original_px {
            &image
        } else {
            resized = image.resize_exact(sent_px.0, sent_px.1, FilterType::CatmullRom);
            &resized
        };
        let data = encode(frame, target, limits.max_bytes)?;
        let size = data.len() as u64;
        if size <= limits.max_bytes {
            return Ok(PreparedImage {
                kind: target,
                data,
                original_px,
                sent_px,
                reencoded: true,
                first_frame_only: decoded.animated,
            });
        }
        // The bytes grow about with the pixels: aim under the budget.
        let ratio = (limits.max_bytes as f64 / size as f64).sqrt() * 0.9;
        let next = (f64::from(long_edge) * ratio.clamp(0.25, 0.9)).floor() as u32;
        shrinks += 1;
        if shrinks > MAX_SHRINKS || next < MIN_LONG_EDGE_PX {
            return Err(ImageProblem::StillTooLarge {
                original_px,
                tried_px: sent_px,
                bytes: size,
            });
        }
        long_edge = next;
    }
}

/// `px` scaled so that its long edge is at most `long_edge` pixels, aspect
/// ratio kept (the short edge rounded to the nearest pixel, at least 1);
/// `px` itself when it is no longer.
pub fn fit(px: (u32, u32), long_edge: u32) -> (u32, u32) {
    let (w, h) = px;
    let long = w.max(h);
    if long <= long_edge {
        return px;
    }
    let scale = |edge: u32| -> u32 {
        let scaled =
            (u64::from(edge) * u64::from(long_edge) + u64::from(long) / 2) / u64::from(long);
        u32::try_from(scaled)
            .unwrap_or(long_edge)
            .clamp(1, long_edge)
    };
    if w >= h {
        (long_edge, scale(h))
    } else {
        (scale(w), long_edge)
    }
}

/// The detail of [`ImageProblem::Undecodable`] for a JPEG without its
/// end-of-image marker.
pub const JPEG_CUT_OFF: &str = "it ends before its end-of-image marker";

/// `true` when the JPEG in `bytes` reaches its end-of-image marker (`FF D9`),
/// found by walking the segments (so an EXIF thumbnail's marker does not
/// count) and the entropy-coded data of every scan. Bytes after the marker
/// (camera trailers) and stray bytes between segments are allowed.
pub fn jpeg_is_whole(bytes: &[u8]) -> bool {
    let mut i = 2; // after SOI
    loop {
        // Stray bytes before a marker are skipped (as libjpeg does, with a
        // warning), and so are FF fill bytes.
        while bytes.get(i).is_some_and(|&b| b != 0xFF) {
            i += 1;
        }
        while bytes.get(i) == Some(&0xFF) && bytes.get(i + 1) == Some(&0xFF) {
            i += 1;
        }
        if bytes.get(i) != Some(&0xFF) {
            return false;
        }
        let Some(&marker) = bytes.get(i + 1) else {
            return false;
        };
        match marker {
            0xD9 => return true,
            0x01 | 0xD0..=0xD7 => i += 2,
            _ => {
                let (Some(&hi), Some(&lo)) = (bytes.get(i + 2), bytes.get(i + 3)) else {
                    return false;
                };
                i += 2 + usize::from(u16::from_be_bytes([hi, lo]));
                if marker == 0xDA {
                    // Entropy-coded data: FF 00 is a data byte and FF D0–D7
                    // a restart marker; any other FF xx ends the scan.
                    loop {
                        match (bytes.get(i), bytes.get(i + 1)) {
                            (Some(0xFF), Some(0x00 | 0xD0..=0xD7)) => i += 2,
                            (Some(0xFF), Some(_)) => break,
                            (Some(_), _) => i += 1,
                            (None, _) => return false,
                        }
                    }
                }
            }
        }
    }
}

struct Decoded {
    image: DynamicImage,
    orientation: Orientation,
    animated: bool,
}

/// A decoder's error in its own words, without the crate's
/// `Format error decoding Png: ` prefix (the message names the format).
fn undecodable(e: ImageError) -> ImageProblem {
    let text = e.to_string();
    let detail = match text.strip_prefix("Format error decoding ") {
        Some(rest) => rest.split_once(": ").map_or(rest, |(_, d)| d).to_string(),
        None => text,
    };
    ImageProblem::Undecodable { detail }
}

/// A decoder's error: over the allocation limit is too many pixels (at
/// `px`), anything else does not decode.
fn too_many(px: (u32, u32), e: ImageError) -> ImageProblem {
    match e {
        ImageError::Limits(_) => ImageProblem::TooManyPixels {
            width: px.0,
            height: px.1,
        },
        e => undecodable(e),
    }
}

/// Refuses an image of more than `limits.max_decode_pixels` before its
/// pixels are decoded.
fn check_pixels(px: (u32, u32), limits: &ImageLimits) -> Result<(), ImageProblem> {
    if u64::from(px.0) * u64::from(px.1) > limits.max_decode_pixels {
        return Err(ImageProblem::TooManyPixels {
            width: px.0,
            height: px.1,
        });
    }
    Ok(())
}

/// Decodes the (first frame of the) image with the decoder of `kind`.
fn decode(bytes: &[u8], kind: ImageKind, limits: &ImageLimits) -> Result<Decoded, ImageProblem> {
    let mut alloc = Limits::default();
    alloc.max_alloc = Some(MAX_DECODE_ALLOC_BYTES);
    let cursor = Cursor::new(bytes);
    // Each arm: the header, the pixel check, then the pixels.
    fn still(
        mut decoder: impl ImageDecoder,
        alloc: Limits,
        limits: &ImageLimits,
    ) -> Result<Decoded, ImageProblem> {
        let px = decoder.dimensions();
        check_pixels(px, limits)?;
        decoder.set_limits(alloc).map_err(|e| too_many(px, e))?;
        let orientation = decoder.orientation().unwrap_or(Orientation::NoTransforms);
        let image = DynamicImage::from_decoder(decoder).map_err(|e| too_many(px, e))?;
        Ok(Decoded {
            image,
            orientation,
            animated: false,
        })
    }
    fn first_frame<'a>(
        decoder: impl AnimationDecoder<'a>,
        px: (u32, u32),
    ) -> Result<Decoded, ImageProblem> {
        let mut frames = decoder.into_frames();
        let first = frames
            .next()
            .ok_or_else(|| ImageProblem::Undecodable {
                detail: "it has no frames".into(),
            })?
            .map_err(|e| too_many(px, e))?;
        // A second frame that does not decode is a broken file all the same.
        let animated = frames
            .next()
            .transpose()
            .map_err(|e| too_many(px, e))?
            .is_some();
        let image = DynamicImage::ImageRgba8(first.into_buffer());
        debug_assert_eq!((image.width(), image.height()), px);
        Ok(Decoded {
            image,
            orientation: Orientation::NoTransforms,
            animated,
        })
    }
    match kind {
        ImageKind::Png => {
            let decoder = PngDecoder::new(cursor).map_err(undecodable)?;
            still(decoder, alloc, limits)
        }
        ImageKind::Jpeg => {
            // The JPEG decoder fills a cut-off scan with grey instead of
            // failing; the API's does not, so the file must be whole.
            if !jpeg_is_whole(bytes) {
                return Err(ImageProblem::Undecodable {
                    detail: JPEG_CUT_OFF.into(),
                });
            }
            let decoder = JpegDecoder::new(cursor).map_err(undecodable)?;
            still(decoder, alloc, limits)
        }
        ImageKind::Gif => {
            let mut decoder = GifDecoder::new(cursor).map_err(undecodable)?;
            let px = decoder.dimensions();
            check_pixels(px, limits)?;
            decoder.set_limits(alloc).map_err(|e| too_many(px, e))?;
            first_frame(decoder, px)
        }
        ImageKind::WebP => {
            let mut decoder = WebPDecoder::new(cursor).map_err(undecodable)?;
            if !decoder.has_animation() {
                return still(decoder, alloc, limits);
            }
            let px = decoder.dimensions();
            check_pixels(px, limits)?;
            decoder.set_limits(alloc).map_err(|e| too_many(px, e))?;
            first_frame(decoder, px)
        }
    }
}

/// `image` as 8 bits per channel in a color type `target` can encode
/// (grey or RGB, with alpha for PNG only): 16-bit or float pixels would
/// double the bytes for nothing the model sees.
fn eight_bit(image: DynamicImage, target: ImageKind) -> DynamicImage {
    let grey = matches!(
        image.color(),
        ColorType::L8 | ColorType::L16 | ColorType::La8 | ColorType::La16
    );
    let alpha = image.color().has_alpha() && target == ImageKind::Png;
    match (grey, alpha) {
        (true, false) if image.color() == ColorType::L8 => image,
        (true, false) => DynamicImage::ImageLuma8(image.into_luma8()),
        (true, true) if image.color() == ColorType::La8 => image,
        (true, true) => DynamicImage::ImageLumaA8(image.into_luma_alpha8()),
        (false, false) if image.color() == ColorType::Rgb8 => image,
        (false, false) => DynamicImage::ImageRgb8(image.into_rgb8()),
        (false, true) if image.color() == ColorType::Rgba8 => image,
        (false, true) => DynamicImage::ImageRgba8(image.into_rgba8()),
    }
}

/// Encodes `image` as `target`: PNG, or JPEG at the first of
/// [`JPEG_QUALITIES`] whose bytes are at most `max_bytes` (the lowest
/// quality's bytes when none is).
fn encode(
    image: &DynamicImage,
    target: ImageKind,
    max_bytes: u64,
) -> Result<Vec<u8>, ImageProblem> {
    let failed = |e: ImageError| ImageProblem::Undecodable {
        detail: format!("re-encoding failed: {e}"),
    };
    let mut out = Vec::new();
    if target == ImageKind::Jpeg {
        for quality in JPEG_QUALITIES {
            out.clear();
            image
                .write_with_encoder(JpegEncoder::new_with_quality(&mut out, quality))
                .map_err(failed)?;
            if out.len() as u64 <= max_bytes {
                break;
            }
        }
    } else {
        image
            .write_with_encoder(PngEncoder::new_with_quality(
                &mut out,
                CompressionType::Default,
                PngFilter::Adaptive,
            ))
            .map_err(failed)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{ImageFormat, Rgb, RgbImage};

    fn png(img: &RgbImage) -> Vec<u8> {
        let mut out = Cursor::new(Vec::new());
        img.write_to(&mut out, ImageFormat::Png).expect("encode");
        out.into_inner()
    }

    /// Pixels no encoder can compress (a fixed-seed xorshift).
    fn noise(w: u32, h: u32) -> RgbImage {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        RgbImage::from_fn(w, h, |_, _| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let [r, g, b, ..] = state.to_le_bytes();
            Rgb([r, g, b])
        })
    }

    #[test]
    fn fit_keeps_the_aspect_ratio_and_rounds() {
        assert_eq!(fit((3000, 2000), 1568), (1568, 1045));
        assert_eq!(fit((2000, 3000), 1568), (1045, 1568));
        assert_eq!(fit((1568, 10), 1568), (1568, 10));
        assert_eq!(fit((100_000, 1), 1568), (1568, 1));
        assert_eq!(fit((4000, 4000), 1568), (1568, 1568));
        // 1999 × 1568 / 3000 = 1044.81…, rounded to the nearest pixel.
        assert_eq!(fit((3000, 1999), 1568), (1568, 1045));
    }

    #[test]
    fn detect_reads_magic_bytes_only() {
        assert_eq!(
            ImageKind::detect(b"\x89PNG\r\n\x1a\nrest"),
            Some(ImageKind::Png)
        );
        assert_eq!(
            ImageKind::detect(&[0xFF, 0xD8, 0xFF, 0xE0]),
            Some(ImageKind::Jpeg)
        );
        assert_eq!(ImageKind::detect(b"GIF89a...."), Some(ImageKind::Gif));
        assert_eq!(
            ImageKind::detect(b"RIFF\0\0\0\0WEBPVP8L"),
            Some(ImageKind::WebP)
        );
        assert_eq!(
            ImageKind::detect(b"<svg xmlns=\"http://www.w3.org/2000/svg\"/>"),
            None
        );
        assert_eq!(ImageKind::detect(b"BM\0\0"), None, "BMP is not an API type");
    }

    #[test]
    fn an_image_that_fits_is_its_own_bytes() {
        let bytes = png(&RgbImage::from_pixel(30, 20, Rgb([1, 2, 3])));
        let p = prepare(bytes.clone(), ImageKind::Png, &ImageLimits::API).expect("prepared");
        assert_eq!(p.data, bytes);
        assert_eq!((p.original_px, p.sent_px), ((30, 20), (30, 20)));
        assert!(!p.reencoded && !p.scaled() && !p.first_frame_only);
    }

    #[test]
    fn bytes_over_the_budget_shrink_until_they_fit() {
        let limits = ImageLimits {
            max_bytes: 20_000,
            ..ImageLimits::API
        };
        // 100×100 noise is ~30 kB of PNG; it must come down to fit 20 kB.
        let p = prepare(png(&noise(100, 100)), ImageKind::Png, &limits).expect("prepared");
        assert!(p.data.len() <= 20_000, "{}", p.data.len());
        assert_eq!(p.original_px, (100, 100));
        assert!(p.sent_px.0 < 100 && p.sent_px.0 == p.sent_px.1);
        assert_eq!(p.kind, ImageKind::Png);
    }

    #[test]
    fn what_cannot_fit_is_still_too_large() {
        let limits = ImageLimits {
            max_bytes: 100,
            ..ImageLimits::API
        };
        let err = prepare(png(&noise(200, 100)), ImageKind::Png, &limits).expect_err("too large");
        let ImageProblem::StillTooLarge {
            original_px,
            tried_px,
            bytes,
        } = err
        else {
            panic!("{err:?}")
        };
        assert_eq!(original_px, (200, 100));
        assert!(
            tried_px.0 >= MIN_LONG_EDGE_PX && tried_px.0 < 200,
            "{tried_px:?}"
        );
        assert!(bytes > 100);
    }

    #[test]
    fn more_pixels_than_the_decode_limit_are_refused_before_decoding() {
        let limits = ImageLimits {
            max_decode_pixels: 599,
            ..ImageLimits::API
        };
        let err = prepare(png(&noise(30, 20)), ImageKind::Png, &limits).expect_err("too many");
        assert_eq!(
            err,
            ImageProblem::TooManyPixels {
                width: 30,
                height: 20
            }
        );
    }

    #[test]
    fn a_jpeg_is_whole_only_with_its_end_marker() {
        let mut bytes = Vec::new();
        noise(40, 40)
            .write_with_encoder(JpegEncoder::new_with_quality(&mut bytes, 90))
            .expect("jpeg");
        assert!(jpeg_is_whole(&bytes));
        let mut trailer = bytes.clone();
        trailer.extend_from_slice(b"camera trailer \xFF\xD8");
        assert!(jpeg_is_whole(&trailer), "bytes after EOI are allowed");
        for cut in [bytes.len() - 2, bytes.len() - 1, bytes.len() / 2, 3, 2] {
            assert!(!jpeg_is_whole(&bytes[..cut]), "cut at {cut}");
        }
        // A thumbnail's EOI inside APP1 does not make a cut-off file whole.
        let mut app1 = vec![0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x08, 0xFF, 0xD8, 0xFF, 0xD9];
        app1.extend_from_slice(&bytes[2..bytes.len() / 2]);
        assert!(!jpeg_is_whole(&app1));
        let err = prepare(
            bytes[..bytes.len() - 2].to_vec(),
            ImageKind::Jpeg,
            &ImageLimits::API,
        )
        .expect_err("cut off");
        assert_eq!(
            err,
            ImageProblem::Undecodable {
                detail: JPEG_CUT_OFF.into()
            }
        );
    }

    #[test]
    fn bytes_of_another_format_do_not_decode() {
        let bytes = png(&noise(4, 4));
        let err = prepare(bytes, ImageKind::Jpeg, &ImageLimits::API).expect_err("not a JPEG");
        assert!(matches!(err, ImageProblem::Undecodable { .. }), "{err:?}");
    }
}
