//! Read: a file's text in `cat -n` form, or an image (Claude Code's Read).
//!
//! The text comes from [`Editor::read`](crate::editor::Editor::read), so a file
//! loaded in Neovim shows the buffer's text, unsaved changes included. Each
//! successful text read is recorded in [`FileState`](crate::tools::FileState) with
//! `offset: Some(first line)`; Edit and Write record with `offset: None`, so a
//! repeated Read of the same range is answered with [`READ_UNCHANGED`] only
//! when the model itself saw that range of that text.
//!
//! A file that is not text goes to [`image`]: the real format from its magic
//! bytes, decoded, scaled and re-encoded when over the API's limits, so that
//! no `image` block the API would reject is ever sent (it would stay in the
//! conversation and fail every later request). A text file with an image's
//! name (`logo.png` holding SVG or a placeholder) is read as text: its bytes
//! decide, as for images.

pub mod image;
pub mod large;

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use base64::Engine;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::task;

use crate::editor::{EditorError, TextHash, MAX_FILE_BYTES};
use crate::protocol::{ContentBlock, ImageSource, ToolResultContent};

use crate::permissions::PermissionPreview;
use crate::text::{fill, plural};
use crate::tools::support::file_common::{editor_error, file_preview, resolve_file_path, shown};
use crate::tools::support::file_state::ReadRecord;
use crate::tools::support::numbered::{number_lines, split_lines, MAX_LINE_CHARS};
use crate::tools::{support::paths, ToolContext, ToolError, ToolOutput, TypedTool};

use self::image::{ImageKind, ImageLimits, ImageProblem, PreparedImage};
pub use self::image::{MAX_DECODE_PIXELS, MAX_IMAGE_BYTES, MAX_LONG_EDGE_PX};
use self::large::{Ended, Opened, ScanBudget};

/// Lines shown when the call gives no `limit`.
pub const DEFAULT_LIMIT: usize = 2000;
/// Byte budget of one Read result (≈25k tokens); longer output stops early
/// and the trailer says where to continue.
pub const MAX_OUTPUT_BYTES: usize = 100_000;
/// Largest image file Read loads to decode, in bytes (64 MiB); a larger one
/// gets [`READ_IMAGE_TOO_LARGE`]. What is sent is at most
/// [`MAX_IMAGE_BYTES`]: a larger file is scaled or re-encoded.
pub const MAX_IMAGE_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Model-facing description of Read.
pub const READ_DESCRIPTION: &str = "Reads a file from the local filesystem. You can access any file directly by using this tool.

Usage:
- file_path should be an absolute path. A relative path is resolved against the project root, and a leading ~/ means the home directory.
- By default it reads up to 2000 lines from the start of the file. For long files, give offset (the 1-based line number to start at) and limit (how many lines) to read one part; reading the whole file is usually best when it is short.
- Lines longer than 2000 characters are cut.
- A file over 64 MiB (a large log, a saved command output) is not loaded whole: read it in parts with offset and limit, or search it with Grep.
- Results are in cat -n format: the line number, a TAB, then the line. The line-number prefix is not part of the file: never copy it into Edit's old_string or new_string.
- When the file is open in the user's Neovim, you get the buffer's text, including changes the user has not saved yet.
- Images (PNG, JPEG, GIF, WebP) are returned as images for you to look at. Other binary files are reported with their kind and size.
- It reads files, not directories: use Glob to list the files in a directory.
- Reading the same range of an unchanged file again returns a short note instead of the text; the earlier result is still current.
- You can call several tools in one response: read all files that may be useful at once.";

/// Result for a file with no text.
pub const READ_EMPTY_FILE: &str = "{path}: empty file. It exists but has no content (0 lines).";
/// Result when `offset` is beyond the last line.
pub const READ_PAST_END: &str = "offset {offset} is past the end ({total}) of {path}. Call Read with a smaller offset, or without offset to read from the start.";
/// Result when the same range of the same text was read before.
pub const READ_UNCHANGED: &str = "File unchanged since your last read of {path} ({lines}). The content of that earlier Read result is still current; refer to it instead of reading again.";
/// Trailer when some shown lines were cut.
pub const READ_LINES_CUT: &str = "[{count} longer than {max} characters cut (marked with \"… [line cut\"). Use Grep to search their full text.]";
/// Trailer when the file goes on after the shown lines.
pub const READ_CONTINUES: &str = "[Showing lines {first}-{last} of {total}. The file continues: call Read with offset={next} to read more.]";
/// Error for a binary file that is not a supported image.
pub const READ_BINARY: &str = "{path} is a binary file ({kind}, {size} bytes), so Read does not show its bytes. Read shows text files and images (PNG, JPEG, GIF, WebP).";
/// Error for an image file too large to load ([`MAX_IMAGE_FILE_BYTES`]).
pub const READ_IMAGE_TOO_LARGE: &str = "{path} is an image ({kind}) of {size} bytes, more than the {max} bytes an image may have. Make a smaller copy (e.g. with Bash) and Read that.";
/// Error for a file whose magic number names an image format but whose
/// bytes do not decode as one (truncated, corrupt): no image is sent.
pub const READ_IMAGE_UNDECODABLE: &str = "{path} starts like a {kind} but does not decode as one ({detail}), so it was not sent as an image. The file may be truncated or corrupt: check it (e.g. with `file` in Bash) or recreate it, then Read it again.";
/// Error for an image of more than [`MAX_DECODE_PIXELS`] pixels.
pub const READ_IMAGE_TOO_MANY_PIXELS: &str = "{path} is a {kind} of {width}×{height} pixels, more than the {max} pixels Read decodes, so it was not sent. Make a smaller copy (e.g. with Bash) and Read that.";
/// Error for an image still over [`MAX_IMAGE_BYTES`] at the smallest size
/// Read tries.
pub const READ_IMAGE_STILL_TOO_LARGE: &str = "{path} is a {kind} of {width}×{height} pixels that is still {size} bytes scaled down to {new_width}×{new_height}, more than the {max} bytes an image may have, so it was not sent. Make a smaller copy (e.g. with Bash) and Read that.";
/// Note (a text block after the image) when the image sent has fewer
/// pixels than the file.
pub const READ_IMAGE_SCALED: &str = "[{path} is {width}×{height} pixels; it was scaled down to {new_width}×{new_height} and sent as {media_type} ({size} bytes) to fit the API's image limits (long edge at most {max_edge} pixels, at most {max} bytes). Positions and sizes you see are in the scaled image: multiply them by {factor} for the file's pixels.]";
/// Note when the file's bytes were over [`MAX_IMAGE_BYTES`] and it was
/// re-encoded at its full size.
pub const READ_IMAGE_REENCODED: &str = "[{path} is {original_size} bytes, more than the {max} bytes an image may have; it was re-encoded as {media_type} at its full {width}×{height} pixels ({size} bytes).]";
/// Note when the file is an animated GIF or WebP: only its first frame is
/// sent, as a still PNG.
pub const READ_IMAGE_FIRST_FRAME: &str = "[{path} is an animated {kind}; this is its first frame only, sent as a still {media_type}. To see other frames, extract them to image files with Bash and Read those.]";

/// Error for Read without `offset`/`limit` of a file over
/// [`MAX_FILE_BYTES`]: it is read in parts ([`large`]).
pub const READ_LARGE_NEEDS_RANGE: &str = "{path} is {size} bytes, more than the {max} bytes Read loads whole, so it was not read. Read it in parts: call Read with offset=1 and limit={limit} for its first {limit} lines, then with offset set to the next line for the next part; or use Grep to find the lines you need (it searches the whole file).";
/// Trailer of a streamed Read that reached the end of the file.
pub const READ_LARGE_SHOWN_END: &str = "[{path} is a large file ({size} bytes, {total}), streamed rather than loaded: these are lines {first}-{last}, the end of the file.]";
/// Trailer of a streamed Read when the file goes on and its lines were
/// counted.
pub const READ_LARGE_SHOWN_MORE: &str = "[{path} is a large file ({size} bytes, {total}), streamed rather than loaded: showing lines {first}-{last}. The file continues: call Read with offset={next} to read more, or Grep it to find lines.]";
/// Trailer of a streamed Read when the file goes on past what one call
/// counts ([`large::MAX_SCAN_BYTES`], [`large::MAX_SCAN_TIME`]).
pub const READ_LARGE_SHOWN_UNCOUNTED: &str = "[{path} is a large file ({size} bytes), streamed rather than loaded: showing lines {first}-{last}. It has at least {seen} lines (one Read scans at most {budget} bytes or {secs} s of a file, so the rest was not counted). Call Read with offset={next} to read more, or Grep it to find lines.]";
/// Error when a streamed Read ran out of its scan budget before `offset`.
pub const READ_LARGE_NOT_REACHED: &str = "Line {offset} of {path} was not reached: Read scanned {scanned} of its {size} bytes ({lines}) and one Read scans at most {budget} bytes or {secs} s of a file. Use Grep to find the lines you need (it searches the whole file), or Bash (e.g. `tail -n 100 {path}`) to see its end.";

/// What the first bytes of the regular file at `path` look like
/// ([`crate::editor::codec::sniff_kind`]); `""` when it cannot be read.
async fn head_kind(path: &Path) -> &'static str {
    use tokio::io::AsyncReadExt;
    let mut head = [0u8; 64];
    let Ok(mut file) = tokio::fs::File::open(path).await else {
        return "";
    };
    let n = file.read(&mut head).await.unwrap_or(0);
    crate::editor::codec::sniff_kind(&head[..n])
}

/// Input of Read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadInput {
    /// The absolute path to the file to read
    pub file_path: String,
    /// The line number to start reading from (1-based). Only provide if the file is too large to read at once
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<usize>,
    /// The number of lines to read. Only provide if the file is too large to read at once
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub limit: Option<usize>,
}

/// The Read tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReadTool;

impl ReadTool {
    /// The result for a file that is not text: an image block (and a note
    /// when it was changed to fit), or an error that says why not.
    async fn read_image(
        &self,
        path: &std::path::Path,
        shown_path: &str,
        kind: &str,
        size: u64,
    ) -> Result<ToolOutput, ToolError> {
        let binary = || {
            ToolError::new(fill(
                READ_BINARY,
                &[
                    ("path", shown_path),
                    ("kind", kind),
                    ("size", &size.to_string()),
                ],
            ))
        };
        if !kind.ends_with(" image") {
            return Err(binary());
        }
        if size > MAX_IMAGE_FILE_BYTES {
            return Err(ToolError::new(fill(
                READ_IMAGE_TOO_LARGE,
                &[
                    ("path", shown_path),
                    ("kind", kind),
                    ("size", &size.to_string()),
                    ("max", &MAX_IMAGE_FILE_BYTES.to_string()),
                ],
            )));
        }
        let bytes = tokio::fs::read(path).await.map_err(|e| {
            ToolError::new(fill(
                crate::tools::support::file_common::FILE_IO_ERROR,
                &[("path", shown_path), ("detail", &e.to_string())],
            ))
        })?;
        // The bytes decide, not the name nor the kind seen before the read.
        let Some(image_kind) = ImageKind::detect(&bytes) else {
            return Err(binary());
        };
        let file_bytes = bytes.len() as u64;
        let prepared =
            task::spawn_blocking(move || image::prepare(bytes, image_kind, &ImageLimits::API))
                .await
                .unwrap_or_else(|e| {
                    Err(ImageProblem::Undecodable {
                        detail: format!("the decoder stopped: {e}"),
                    })
                })
                .map_err(|problem| {
                    ToolError::new(problem_text(&problem, shown_path, image_kind))
                })?;
        Ok(image_output(&prepared, shown_path, image_kind, file_bytes))
    }
}

/// The model-facing text for an image that is not sent.
fn problem_text(problem: &ImageProblem, path: &str, kind: ImageKind) -> String {
    match problem {
        ImageProblem::Undecodable { detail } => fill(
            READ_IMAGE_UNDECODABLE,
            &[("path", path), ("kind", kind.name()), ("detail", detail)],
        ),
        ImageProblem::TooManyPixels { width, height } => fill(
            READ_IMAGE_TOO_MANY_PIXELS,
            &[
                ("path", path),
                ("kind", kind.name()),
                ("width", &width.to_string()),
                ("height", &height.to_string()),
                ("max", &MAX_DECODE_PIXELS.to_string()),
            ],
        ),
        ImageProblem::StillTooLarge {
            original_px,
            tried_px,
            bytes,
        } => fill(
            READ_IMAGE_STILL_TOO_LARGE,
            &[
                ("path", path),
                ("kind", kind.name()),
                ("width", &original_px.0.to_string()),
                ("height", &original_px.1.to_string()),
                ("size", &bytes.to_string()),
                ("new_width", &tried_px.0.to_string()),
                ("new_height", &tried_px.1.to_string()),
                ("max", &MAX_IMAGE_BYTES.to_string()),
            ],
        ),
    }
}

/// The result for an image that is sent: the image block, then one text
/// block with the notes when it is not the file as it is. `file_bytes` is
/// the file's size in bytes.
fn image_output(
    prepared: &PreparedImage,
    path: &str,
    file_kind: ImageKind,
    file_bytes: u64,
) -> ToolOutput {
    let (width, height) = prepared.original_px;
    let (new_width, new_height) = prepared.sent_px;
    let media_type = prepared.kind.media_type();
    let sent = prepared.data.len().to_string();
    let mut notes = Vec::new();
    let mut summary = format!("{}, {file_bytes} bytes", file_kind.name());
    if prepared.first_frame_only {
        notes.push(fill(
            READ_IMAGE_FIRST_FRAME,
            &[
                ("path", path),
                ("kind", file_kind.name()),
                ("media_type", media_type),
            ],
        ));
        summary.push_str(", first frame");
    }
    if prepared.scaled() {
        let factor = f64::from(width.max(height)) / f64::from(new_width.max(new_height));
        notes.push(fill(
            READ_IMAGE_SCALED,
            &[
                ("path", path),
                ("width", &width.to_string()),
                ("height", &height.to_string()),
                ("new_width", &new_width.to_string()),
                ("new_height", &new_height.to_string()),
                ("media_type", media_type),
                ("size", &sent),
                ("max_edge", &MAX_LONG_EDGE_PX.to_string()),
                ("max", &MAX_IMAGE_BYTES.to_string()),
                ("factor", &format!("{factor:.2}")),
            ],
        ));
        summary.push_str(&format!(
            ", scaled {width}×{height} → {new_width}×{new_height}"
        ));
    } else if prepared.reencoded && !prepared.first_frame_only {
        notes.push(fill(
            READ_IMAGE_REENCODED,
            &[
                ("path", path),
                ("original_size", &file_bytes.to_string()),
                ("max", &MAX_IMAGE_BYTES.to_string()),
                ("media_type", media_type),
                ("width", &width.to_string()),
                ("height", &height.to_string()),
                ("size", &sent),
            ],
        ));
        summary.push_str(&format!(", re-encoded to {sent} bytes"));
    }
    let mut blocks = vec![ContentBlock::Image {
        source: ImageSource {
            kind: "base64".into(),
            media_type: media_type.into(),
            data: base64::engine::general_purpose::STANDARD.encode(&prepared.data),
        },
    }];
    if !notes.is_empty() {
        blocks.push(ContentBlock::Text {
            text: notes.join("\n"),
        });
    }
    ToolOutput::new(ToolResultContent::Blocks(blocks), summary)
}

/// The text of a Read result for `text` from 1-based line `first`, at most
/// `limit` lines: numbered lines, then the trailers. Returns the result and
/// the number of lines shown. `first` must be a line of `text`.
pub fn render(text: &str, first: usize, limit: usize) -> (String, usize) {
    let lines = split_lines(text);
    let total = lines.len();
    let end = first.saturating_add(limit).saturating_sub(1).min(total);
    let numbered = number_lines(&lines[first - 1..end], first, MAX_OUTPUT_BYTES);
    let last = first + numbered.shown - 1;
    let mut out = numbered.text;
    if numbered.cut > 0 {
        out.push_str("\n\n");
        out.push_str(&fill(
            READ_LINES_CUT,
            &[
                ("count", &plural(numbered.cut, "line", "lines")),
                ("max", &MAX_LINE_CHARS.to_string()),
            ],
        ));
    }
    if last < total {
        out.push_str("\n\n");
        out.push_str(&fill(
            READ_CONTINUES,
            &[
                ("first", &first.to_string()),
                ("last", &last.to_string()),
                ("total", &total.to_string()),
                ("next", &(last + 1).to_string()),
            ],
        ));
    }
    (out, numbered.shown)
}

/// Read of the file at `path` (shown as `shown`, `size` bytes), too large
/// to load: without `offset` and `limit` the [`READ_LARGE_NEEDS_RANGE`]
/// error; else the lines streamed by [`large::scan`] within `budget`, with a
/// trailer saying the file is large and, when counted, how many lines it
/// has. Records no read in `FileState` (the model saw a part, and no text
/// is kept), so Edit and Write refuse the file from its size. Errors: the
/// file is binary ([`READ_BINARY`]), `offset` is past the end
/// ([`READ_PAST_END`]) or beyond the budget ([`READ_LARGE_NOT_REACHED`]),
/// I/O ([`FILE_IO_ERROR`](crate::tools::support::file_common::FILE_IO_ERROR)).
pub async fn read_large(
    input: &ReadInput,
    path: &Path,
    shown: &str,
    size: u64,
    ctx: &ToolContext,
    budget: ScanBudget,
) -> Result<ToolOutput, ToolError> {
    if input.offset.is_none() && input.limit.is_none() {
        return Err(ToolError::new(fill(
            READ_LARGE_NEEDS_RANGE,
            &[
                ("path", shown),
                ("size", &size.to_string()),
                ("max", &MAX_FILE_BYTES.to_string()),
                ("limit", &DEFAULT_LIMIT.to_string()),
            ],
        )));
    }
    let first = input.offset.unwrap_or(1).max(1);
    let limit = input.limit.unwrap_or(DEFAULT_LIMIT).max(1);
    // Whatever the model read of this file before no longer stands for it.
    ctx.file_state.forget(path);
    let cancel = ctx.cancel.clone();
    let file = path.to_path_buf();
    let scanned = task::spawn_blocking(move || match large::open(&file)? {
        Opened::Binary(kind) => Ok(Err(kind)),
        Opened::Text(mut reader) => {
            large::scan(&mut reader, first, limit, budget, &|| cancel.is_cancelled()).map(Ok)
        }
    })
    .await
    .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())))
    .map_err(|e| {
        ToolError::new(fill(
            crate::tools::support::file_common::FILE_IO_ERROR,
            &[("path", shown), ("detail", &e.to_string())],
        ))
    })?;
    let scanned = match scanned {
        Ok(scanned) => scanned,
        Err(kind) => {
            return Err(ToolError::new(fill(
                READ_BINARY,
                &[("path", shown), ("kind", kind), ("size", &size.to_string())],
            )))
        }
    };
    let size_text = size.to_string();
    let budget_bytes = budget.bytes.to_string();
    let secs = budget.time.as_secs().to_string();
    if scanned.shown == 0 {
        let msg = match scanned.ended {
            Ended::Eof { total } => fill(
                READ_PAST_END,
                &[
                    ("offset", &first.to_string()),
                    ("total", &plural(total, "line", "lines")),
                    ("path", shown),
                ],
            ),
            Ended::Budget { scanned, lines } => fill(
                READ_LARGE_NOT_REACHED,
                &[
                    ("offset", &first.to_string()),
                    ("path", shown),
                    ("scanned", &scanned.to_string()),
                    ("size", &size_text),
                    ("lines", &plural(lines, "line", "lines")),
                    ("budget", &budget_bytes),
                    ("secs", &secs),
                ],
            ),
        };
        return Err(ToolError::new(msg));
    }
    let last = first + scanned.shown - 1;
    let mut out = scanned.text;
    if scanned.cut > 0 {
        out.push_str("\n\n");
        out.push_str(&fill(
            READ_LINES_CUT,
            &[
                ("count", &plural(scanned.cut, "line", "lines")),
                ("max", &MAX_LINE_CHARS.to_string()),
            ],
        ));
    }
    let (first_s, last_s, next_s) = (first.to_string(), last.to_string(), (last + 1).to_string());
    let (trailer, summary) = match scanned.ended {
        Ended::Eof { total } if last >= total => (
            fill(
                READ_LARGE_SHOWN_END,
                &[
                    ("path", shown),
                    ("size", &size_text),
                    ("total", &plural(total, "line", "lines")),
                    ("first", &first_s),
                    ("last", &last_s),
                ],
            ),
            format!("lines {first}-{last} of {total} (large file, streamed)"),
        ),
        Ended::Eof { total } => (
            fill(
                READ_LARGE_SHOWN_MORE,
                &[
                    ("path", shown),
                    ("size", &size_text),
                    ("total", &plural(total, "line", "lines")),
                    ("first", &first_s),
                    ("last", &last_s),
                    ("next", &next_s),
                ],
            ),
            format!("lines {first}-{last} of {total} (large file, streamed)"),
        ),
        Ended::Budget { lines, .. } => (
            fill(
                READ_LARGE_SHOWN_UNCOUNTED,
                &[
                    ("path", shown),
                    ("size", &size_text),
                    ("first", &first_s),
                    ("last", &last_s),
                    ("seen", &lines.to_string()),
                    ("budget", &budget_bytes),
                    ("secs", &secs),
                    ("next", &next_s),
                ],
            ),
            format!("lines {first}-{last} of at least {lines} (large file, streamed)"),
        ),
    };
    out.push_str("\n\n");
    out.push_str(&trailer);
    Ok(ToolOutput::text(out, summary))
}

#[async_trait]
impl TypedTool for ReadTool {
    type Input = ReadInput;
    type Plan = ();
    const NAME: &'static str = "Read";
    const KIND: crate::tools::ToolKind = crate::tools::ToolKind::Read;
    const ALIASES: &'static [&'static str] = &["read_file", "read", "view"];

    fn description(&self) -> String {
        READ_DESCRIPTION.to_string()
    }

    fn normalize(&self, input: ReadInput, root: &Path) -> ReadInput {
        ReadInput {
            file_path: resolve_file_path(root, &input.file_path),
            ..input
        }
    }

    fn target_path(&self, input: &ReadInput) -> Option<PathBuf> {
        Some(PathBuf::from(&input.file_path))
    }

    async fn validate_input(
        &self,
        _input: &ReadInput,
        _ctx: &ToolContext,
    ) -> Result<(), ToolError> {
        // Every failure of Read depends on the file at call time; `call` reports it.
        Ok(())
    }

    fn permission_preview(&self, input: &ReadInput, _plan: &(), root: &Path) -> PermissionPreview {
        file_preview("Read", root, Path::new(&input.file_path))
    }

    async fn call(
        &self,
        input: ReadInput,
        _plan: (),
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let path = PathBuf::from(&input.file_path);
        let p = shown(&ctx.root, &path);
        let doc = match ctx.editor.read(&path).await {
            Ok(doc) => doc,
            Err(EditorError::NotText { kind, size, .. }) => {
                return self.read_image(&path, &p, &kind, size).await
            }
            // An image over the load limit gets the image's own message;
            // text is streamed (docs/hostile-input.md, "Hostile input").
            Err(EditorError::TooLarge { size, .. }) => {
                let kind = head_kind(&path).await;
                if kind.ends_with(" image") {
                    return self.read_image(&path, &p, kind, size).await;
                }
                return read_large(&input, &path, &p, size, ctx, ScanBudget::DEFAULT).await;
            }
            Err(e) => return Err(editor_error(&ctx.root, &path, &e)),
        };
        let first = input.offset.unwrap_or(1).max(1);
        let limit = input.limit.unwrap_or(DEFAULT_LIMIT).max(1);
        let total = split_lines(&doc.text).len();
        if total == 0 {
            ctx.file_state.record(
                &path,
                ReadRecord {
                    stamp: doc.stamp(),
                    offset: Some(first),
                    limit: input.limit,
                },
            );
            return Ok(ToolOutput::text(
                fill(READ_EMPTY_FILE, &[("path", &p)]),
                "empty file",
            ));
        }
        if first > total {
            let msg = fill(
                READ_PAST_END,
                &[
                    ("offset", &first.to_string()),
                    ("total", &plural(total, "line", "lines")),
                    ("path", &p),
                ],
            );
            return Ok(ToolOutput::text(msg, "offset past the end"));
        }
        let stamp = doc.stamp();
        let (text, shown_lines) = render(&doc.text, first, limit);
        let last = first + shown_lines - 1;
        let previous = ctx.file_state.get(&path);
        // A result cleared from the conversation (or compacted away) is
        // not "unchanged": the model no longer has that text.
        if ctx.file_state.content_in_context(&path)
            && previous.is_some_and(|r| {
                r.offset == Some(first)
                    && r.limit == input.limit
                    && !r.stamp.is_stale(&doc.version, || TextHash::of(&doc.text))
            })
        {
            let lines = if first == last {
                format!("line {first}")
            } else {
                format!("lines {first}-{last}")
            };
            let msg = fill(READ_UNCHANGED, &[("path", &p), ("lines", &lines)]);
            return Ok(ToolOutput::text(msg, "unchanged since last read"));
        }
        ctx.file_state.record(
            &path,
            ReadRecord {
                stamp: stamp.clone(),
                offset: Some(first),
                limit: input.limit,
            },
        );
        if doc.is_buffer() {
            // An Edit of this buffer at this tick plans against this text
            // without reading the buffer again (docs/edits.md,
            // "Edits through buffers").
            ctx.file_state
                .remember_text(&path, &stamp, std::sync::Arc::from(doc.text));
        }
        let summary = if first == 1 && last == total {
            plural(total, "line", "lines")
        } else {
            format!("lines {first}-{last} of {total}")
        };
        Ok(ToolOutput::text(text, summary))
    }

    fn describe(&self, input: &ReadInput, root: &Path) -> String {
        paths::display(root, Path::new(&input.file_path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::schema_for;
    use crate::tools::support::file_common::testing::{disk_ctx as ctx, run};
    use std::sync::Arc;

    async fn read(ctx: &ToolContext, input: serde_json::Value) -> Result<ToolOutput, ToolError> {
        run(Arc::new(ReadTool), ctx, input).await
    }

    fn text(out: Result<ToolOutput, ToolError>) -> String {
        match out {
            Ok(o) => o.content.as_text(),
            Err(e) => panic!("expected success, got {e}"),
        }
    }

    #[test]
    fn golden_constants() {
        assert_eq!(
            READ_EMPTY_FILE,
            "{path}: empty file. It exists but has no content (0 lines)."
        );
        assert_eq!(READ_PAST_END, "offset {offset} is past the end ({total}) of {path}. Call Read with a smaller offset, or without offset to read from the start.");
        assert_eq!(READ_UNCHANGED, "File unchanged since your last read of {path} ({lines}). The content of that earlier Read result is still current; refer to it instead of reading again.");
        assert_eq!(READ_LINES_CUT, "[{count} longer than {max} characters cut (marked with \"… [line cut\"). Use Grep to search their full text.]");
        assert_eq!(READ_CONTINUES, "[Showing lines {first}-{last} of {total}. The file continues: call Read with offset={next} to read more.]");
        assert_eq!(READ_BINARY, "{path} is a binary file ({kind}, {size} bytes), so Read does not show its bytes. Read shows text files and images (PNG, JPEG, GIF, WebP).");
        assert_eq!(READ_IMAGE_TOO_LARGE, "{path} is an image ({kind}) of {size} bytes, more than the {max} bytes an image may have. Make a smaller copy (e.g. with Bash) and Read that.");
        assert_eq!(READ_IMAGE_UNDECODABLE, "{path} starts like a {kind} but does not decode as one ({detail}), so it was not sent as an image. The file may be truncated or corrupt: check it (e.g. with `file` in Bash) or recreate it, then Read it again.");
        assert_eq!(READ_IMAGE_TOO_MANY_PIXELS, "{path} is a {kind} of {width}×{height} pixels, more than the {max} pixels Read decodes, so it was not sent. Make a smaller copy (e.g. with Bash) and Read that.");
        assert_eq!(READ_IMAGE_STILL_TOO_LARGE, "{path} is a {kind} of {width}×{height} pixels that is still {size} bytes scaled down to {new_width}×{new_height}, more than the {max} bytes an image may have, so it was not sent. Make a smaller copy (e.g. with Bash) and Read that.");
        assert_eq!(READ_IMAGE_SCALED, "[{path} is {width}×{height} pixels; it was scaled down to {new_width}×{new_height} and sent as {media_type} ({size} bytes) to fit the API's image limits (long edge at most {max_edge} pixels, at most {max} bytes). Positions and sizes you see are in the scaled image: multiply them by {factor} for the file's pixels.]");
        assert_eq!(READ_IMAGE_REENCODED, "[{path} is {original_size} bytes, more than the {max} bytes an image may have; it was re-encoded as {media_type} at its full {width}×{height} pixels ({size} bytes).]");
        assert_eq!(READ_IMAGE_FIRST_FRAME, "[{path} is an animated {kind}; this is its first frame only, sent as a still {media_type}. To see other frames, extract them to image files with Bash and Read those.]");
        assert_eq!(READ_LARGE_NEEDS_RANGE, "{path} is {size} bytes, more than the {max} bytes Read loads whole, so it was not read. Read it in parts: call Read with offset=1 and limit={limit} for its first {limit} lines, then with offset set to the next line for the next part; or use Grep to find the lines you need (it searches the whole file).");
        assert_eq!(READ_LARGE_SHOWN_END, "[{path} is a large file ({size} bytes, {total}), streamed rather than loaded: these are lines {first}-{last}, the end of the file.]");
        assert_eq!(READ_LARGE_SHOWN_MORE, "[{path} is a large file ({size} bytes, {total}), streamed rather than loaded: showing lines {first}-{last}. The file continues: call Read with offset={next} to read more, or Grep it to find lines.]");
        assert_eq!(READ_LARGE_SHOWN_UNCOUNTED, "[{path} is a large file ({size} bytes), streamed rather than loaded: showing lines {first}-{last}. It has at least {seen} lines (one Read scans at most {budget} bytes or {secs} s of a file, so the rest was not counted). Call Read with offset={next} to read more, or Grep it to find lines.]");
        assert_eq!(READ_LARGE_NOT_REACHED, "Line {offset} of {path} was not reached: Read scanned {scanned} of its {size} bytes ({lines}) and one Read scans at most {budget} bytes or {secs} s of a file. Use Grep to find the lines you need (it searches the whole file), or Bash (e.g. `tail -n 100 {path}`) to see its end.");
        assert!(READ_DESCRIPTION.starts_with("Reads a file from the local filesystem."));
    }

    #[test]
    fn schema_describes_fields_and_rejects_unknown() {
        let s = schema_for::<ReadInput>();
        assert_eq!(
            s["properties"]["file_path"]["description"],
            "The absolute path to the file to read"
        );
        assert_eq!(s["required"], serde_json::json!(["file_path"]));
        assert_eq!(s["additionalProperties"], false);
        assert!(
            s["properties"].get("root").is_none(),
            "internal field leaked into the schema"
        );
        assert!(serde_json::from_value::<ReadInput>(
            serde_json::json!({"file_path": "a", "root": "/"})
        )
        .is_err());
    }

    #[tokio::test]
    async fn cat_n_output_with_offset_limit_and_trailer() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("abc.txt"), "a\nb\nc").expect("write");
        let c = ctx(dir.path());
        assert_eq!(
            text(
                read(
                    &c,
                    serde_json::json!({"file_path": "abc.txt", "offset": 3, "limit": 1})
                )
                .await
            ),
            "     3\tc"
        );
        assert_eq!(
            text(read(&c, serde_json::json!({"file_path": "abc.txt", "limit": 2})).await),
            "     1\ta\n     2\tb\n\n[Showing lines 1-2 of 3. The file continues: call Read with offset=3 to read more.]"
        );
    }

    #[tokio::test]
    async fn second_read_of_unchanged_range_is_a_note_until_it_changes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = dir.path().join("a.txt");
        std::fs::write(&f, "one\n").expect("write");
        let c = ctx(dir.path());
        let input = serde_json::json!({"file_path": f.display().to_string()});
        assert_eq!(text(read(&c, input.clone()).await), "     1\tone");
        assert_eq!(
            text(read(&c, input.clone()).await),
            "File unchanged since your last read of a.txt (line 1). The content of that earlier Read result is still current; refer to it instead of reading again."
        );
        // Another range is not "unchanged".
        assert_eq!(
            text(
                read(
                    &c,
                    serde_json::json!({"file_path": "a.txt", "offset": 1, "limit": 5})
                )
                .await
            ),
            "     1\tone"
        );
        std::fs::write(&f, "two\n").expect("write");
        assert_eq!(text(read(&c, input).await), "     1\ttwo");
        let rec = c.file_state.get(&f).expect("recorded");
        assert_eq!((rec.offset, rec.limit), (Some(1), None));
    }

    #[tokio::test]
    async fn png_comes_back_as_image_block() {
        let dir = tempfile::tempdir().expect("tempdir");
        // A whole 1×1 RGB PNG (IHDR, IDAT, IEND): it decodes, so its own
        // bytes are sent.
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0\x90\x77\x53\xde\0\0\0\x0cIDAT\x78\x9c\x63\xf8\xcf\xc0\0\0\x03\x01\x01\0\xc9\xfe\x92\xef\0\0\0\0IEND\xae\x42\x60\x82";
        std::fs::write(dir.path().join("dot.png"), png).expect("write");
        let out = read(
            &ctx(dir.path()),
            serde_json::json!({"file_path": "dot.png"}),
        )
        .await
        .expect("image");
        let ToolResultContent::Blocks(blocks) = out.content else {
            panic!("not blocks")
        };
        let ContentBlock::Image { source } = &blocks[0] else {
            panic!("not an image")
        };
        assert_eq!(source.media_type, "image/png");
        assert_eq!(
            base64::engine::general_purpose::STANDARD
                .decode(&source.data)
                .expect("b64"),
            png
        );
        assert_eq!(blocks.len(), 1, "no note for an image sent as it is");
        assert_eq!(out.summary, "PNG image, 69 bytes");
    }

    #[tokio::test]
    async fn a_png_header_without_pixels_is_not_sent() {
        // Only the signature and IHDR: every image viewer (and the API)
        // fails on it, so no image block may carry it.
        let dir = tempfile::tempdir().expect("tempdir");
        let png =
            b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";
        std::fs::write(dir.path().join("dot.png"), png).expect("write");
        let err = read(
            &ctx(dir.path()),
            serde_json::json!({"file_path": "dot.png"}),
        )
        .await
        .expect_err("not an image");
        assert!(
            err.message
                .starts_with("dot.png starts like a PNG image but does not decode as one ("),
            "{}",
            err.message
        );
        assert!(err.message.ends_with("), so it was not sent as an image. The file may be truncated or corrupt: check it (e.g. with `file` in Bash) or recreate it, then Read it again."));
    }

    #[test]
    fn problem_texts() {
        let kind = ImageKind::Png;
        assert_eq!(
            problem_text(
                &ImageProblem::TooManyPixels {
                    width: 10_000,
                    height: 9_000
                },
                "huge.png",
                kind
            ),
            "huge.png is a PNG image of 10000×9000 pixels, more than the 64000000 pixels Read decodes, so it was not sent. Make a smaller copy (e.g. with Bash) and Read that."
        );
        assert_eq!(
            problem_text(
                &ImageProblem::StillTooLarge {
                    original_px: (4000, 3000),
                    tried_px: (20, 15),
                    bytes: 4_000_000
                },
                "noise.png",
                kind
            ),
            "noise.png is a PNG image of 4000×3000 pixels that is still 4000000 bytes scaled down to 20×15, more than the 3750000 bytes an image may have, so it was not sent. Make a smaller copy (e.g. with Bash) and Read that."
        );
        assert_eq!(
            problem_text(
                &ImageProblem::Undecodable {
                    detail: "unexpected end of file".into()
                },
                "cut.gif",
                ImageKind::Gif
            ),
            "cut.gif starts like a GIF image but does not decode as one (unexpected end of file), so it was not sent as an image. The file may be truncated or corrupt: check it (e.g. with `file` in Bash) or recreate it, then Read it again."
        );
    }

    #[tokio::test]
    async fn binary_gets_a_notice_not_bytes() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("x.bin"), b"\x7FELF\x02\x01\0\0").expect("write");
        let err = read(&ctx(dir.path()), serde_json::json!({"file_path": "x.bin"}))
            .await
            .expect_err("binary");
        assert_eq!(
            err.message,
            "x.bin is a binary file (ELF executable, 8 bytes), so Read does not show its bytes. Read shows text files and images (PNG, JPEG, GIF, WebP)."
        );
    }

    #[test]
    fn huge_single_line_is_cut_with_a_note() {
        let text = "x".repeat(300_000);
        let (out, shown) = render(&text, 1, DEFAULT_LIMIT);
        assert_eq!(shown, 1);
        assert!(out.len() < 3_000, "far below the cap: {}", out.len());
        assert!(out.starts_with("     1\txxx"));
        assert!(out.ends_with("… [line cut: 300000 chars in full]\n\n[1 line longer than 2000 characters cut (marked with \"… [line cut\"). Use Grep to search their full text.]"));
    }

    #[test]
    fn output_budget_stops_early_and_says_where_to_continue() {
        let text = format!("{}\n", "y".repeat(1500)).repeat(200);
        let (out, shown) = render(&text, 1, DEFAULT_LIMIT);
        assert!(shown < 200 && out.len() <= MAX_OUTPUT_BYTES + 200);
        assert!(out.ends_with(&format!(
            "call Read with offset={} to read more.]",
            shown + 1
        )));
    }

    /// A file of `lines` text lines ("line N") made larger than
    /// [`MAX_FILE_BYTES`] by a sparse hole after them (no disk used): the
    /// hole reads as one last line of NUL bytes.
    fn large_file(dir: &Path, lines: usize) -> PathBuf {
        let path = dir.join("big.log");
        let text: String = (1..=lines).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&path, text).expect("write");
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("open");
        file.set_len(MAX_FILE_BYTES + 1).expect("set_len");
        path
    }

    fn err(out: Result<ToolOutput, ToolError>) -> String {
        match out {
            Ok(o) => panic!("expected an error, got {}", o.content.as_text()),
            Err(e) => e.message,
        }
    }

    #[tokio::test]
    async fn a_file_over_the_load_limit_is_paged_with_offset_and_limit() {
        let dir = tempfile::tempdir().expect("tempdir");
        large_file(dir.path(), 3000);
        let c = ctx(dir.path());
        // Through the tool's default budget, a page whose trailer depends
        // on how far the scan got in 2 s:
        let out = text(
            read(
                &c,
                serde_json::json!({"file_path": "big.log", "offset": 1500, "limit": 3}),
            )
            .await,
        );
        assert!(out.starts_with("  1500\tline 1500\n  1501\tline 1501\n  1502\tline 1502\n\n[big.log is a large file (67108865 bytes"), "{out}");
        // Without a time limit, the whole file is counted.
        let read = |input: serde_json::Value| {
            let input: ReadInput = serde_json::from_value(input).expect("input");
            let path = dir.path().join(&input.file_path);
            let c = &c;
            async move {
                read_large(
                    &input,
                    &path,
                    "big.log",
                    MAX_FILE_BYTES + 1,
                    c,
                    large::tests::UNTIMED,
                )
                .await
            }
        };
        let out = read(serde_json::json!({"file_path": "big.log", "offset": 1500, "limit": 3}))
            .await
            .expect("streamed");
        assert_eq!(
            out.content.as_text(),
            "  1500\tline 1500\n  1501\tline 1501\n  1502\tline 1502\n\n[big.log is a large file (67108865 bytes, 3001 lines), streamed rather than loaded: showing lines 1500-1502. The file continues: call Read with offset=1503 to read more, or Grep it to find lines.]"
        );
        assert_eq!(
            out.summary,
            "lines 1500-1502 of 3001 (large file, streamed)"
        );
        // Only `limit`: from the first line.
        let out = text(read(serde_json::json!({"file_path": "big.log", "limit": 1})).await);
        assert!(
            out.starts_with("     1\tline 1\n\n[big.log is a large file"),
            "{out}"
        );
        // The last line is the hole's NUL bytes, cut like any long line.
        let out = text(
            read(serde_json::json!({"file_path": "big.log", "offset": 3001, "limit": 5})).await,
        );
        assert!(
            out.contains(" chars in full]\n\n[1 line longer than 2000"),
            "{out}"
        );
        assert!(
            out.ends_with("these are lines 3001-3001, the end of the file.]"),
            "{out}"
        );
    }

    #[tokio::test]
    async fn a_file_over_the_load_limit_without_a_range_says_how_to_read_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        large_file(dir.path(), 10);
        let msg = err(read(
            &ctx(dir.path()),
            serde_json::json!({"file_path": "big.log"}),
        )
        .await);
        assert_eq!(msg, "big.log is 67108865 bytes, more than the 67108864 bytes Read loads whole, so it was not read. Read it in parts: call Read with offset=1 and limit=2000 for its first 2000 lines, then with offset set to the next line for the next part; or use Grep to find the lines you need (it searches the whole file).");
    }

    #[tokio::test]
    async fn an_offset_past_the_end_of_a_large_file_says_so() {
        let dir = tempfile::tempdir().expect("tempdir");
        large_file(dir.path(), 2000);
        let path = dir.path().join("big.log");
        let input = ReadInput {
            file_path: path.display().to_string(),
            offset: Some(5000),
            limit: Some(5),
        };
        let c = ctx(dir.path());
        let msg = err(read_large(
            &input,
            &path,
            "big.log",
            MAX_FILE_BYTES + 1,
            &c,
            large::tests::UNTIMED,
        )
        .await);
        assert_eq!(msg, "offset 5000 is past the end (2001 lines) of big.log. Call Read with a smaller offset, or without offset to read from the start.");
    }

    #[tokio::test]
    async fn the_scan_budget_bounds_a_large_read_and_says_how_far_it_got() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = large_file(dir.path(), 3000);
        let c = ctx(dir.path());
        let budget = ScanBudget {
            bytes: 10_000,
            time: large::tests::UNTIMED.time,
        };
        let input = |offset: usize| ReadInput {
            file_path: path.display().to_string(),
            offset: Some(offset),
            limit: Some(2),
        };
        let msg = err(read_large(
            &input(2000),
            &path,
            "big.log",
            MAX_FILE_BYTES + 1,
            &c,
            budget,
        )
        .await);
        // "line N\n" is 7 bytes up to 9, 8 up to 99, 9 up to 999, then 10.
        assert_eq!(msg, "Line 2000 of big.log was not reached: Read scanned 10000 of its 67108865 bytes (1111 lines) and one Read scans at most 10000 bytes or 600 s of a file. Use Grep to find the lines you need (it searches the whole file), or Bash (e.g. `tail -n 100 big.log`) to see its end.");
        let out =
            text(read_large(&input(5), &path, "big.log", MAX_FILE_BYTES + 1, &c, budget).await);
        assert_eq!(out, "     5\tline 5\n     6\tline 6\n\n[big.log is a large file (67108865 bytes), streamed rather than loaded: showing lines 5-6. It has at least 1111 lines (one Read scans at most 10000 bytes or 600 s of a file, so the rest was not counted). Call Read with offset=7 to read more, or Grep it to find lines.]");
    }

    #[tokio::test]
    async fn a_partial_read_of_a_large_file_keeps_no_record_and_edit_refuses_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let c = ctx(dir.path());
        let f = dir.path().join("big.log");
        std::fs::write(&f, "line 1\n").expect("write");
        text(read(&c, serde_json::json!({"file_path": "big.log"})).await);
        assert!(c.file_state.get(&f).is_some());
        large_file(dir.path(), 2000);
        text(
            read(
                &c,
                serde_json::json!({"file_path": "big.log", "offset": 1, "limit": 1}),
            )
            .await,
        );
        assert!(
            c.file_state.get(&f).is_none(),
            "a part of the file is no read of it"
        );
        let msg = err(
            run(
                Arc::new(crate::tools::edit::EditTool),
                &c,
                serde_json::json!({"file_path": "big.log", "old_string": "line 1\n", "new_string": "x\n"}),
            )
            .await,
        );
        assert_eq!(msg, "big.log is 67108865 bytes, more than the 67108864 bytes lathe loads whole, so it was not opened and nothing was changed. Edit and Write change only files up to that size: Read shows a larger file in parts, never enough to change it safely. Change only the lines you need with a Bash command instead.");
    }

    #[tokio::test]
    async fn a_large_binary_file_is_reported_not_streamed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("disk.img");
        let file = std::fs::File::create(&path).expect("create");
        file.set_len(MAX_FILE_BYTES + 1).expect("set_len");
        let msg = err(read(
            &ctx(dir.path()),
            serde_json::json!({"file_path": "disk.img", "offset": 1, "limit": 1}),
        )
        .await);
        assert_eq!(msg, "disk.img is a binary file (binary, 67108865 bytes), so Read does not show its bytes. Read shows text files and images (PNG, JPEG, GIF, WebP).");
    }

    #[test]
    fn describe_is_root_relative_after_normalize() {
        let c = ctx(std::path::Path::new("/proj"));
        let input = TypedTool::normalize(
            &ReadTool,
            ReadInput {
                file_path: "src/a.rs".into(),
                ..Default::default()
            },
            &c.root,
        );
        assert_eq!(input.file_path, "/proj/src/a.rs");
        assert_eq!(TypedTool::describe(&ReadTool, &input, &c.root), "src/a.rs");
        assert!(
            TypedTool::is_read_only(&ReadTool, &input)
                && TypedTool::is_concurrency_safe(&ReadTool, &input)
        );
    }
}
