//! Grep: regex search over file contents with ripgrep's crates, in process
//! (Claude Code's Grep contract).
//!
//! The walk follows ripgrep's rules ([`search_walk`]). The search runs in
//! two passes on a blocking thread: the first counts matching lines and
//! output lines per file without keeping any text, the second (content mode
//! only) renders just the files that fall in the requested page. Memory is
//! bounded by the number of matching files, never by the size of matches.
//!
//! Ordering: `files_with_matches` newest first (mtime), ties by path;
//! `content` and `count` by path, so paging with `offset` is stable.
//! Every output path is relative to the project root when inside it.
//!
//! Files the permission gate's [`ReadFilter`] does not find free to read
//! (deny and ask rules, protected paths such as `.env`) are never opened;
//! the result ends with a note that says how many and why.
//!
//! A file open in Neovim with unsaved changes is searched in the buffer's
//! text, and a buffer never written counts as a file
//! ([`search_unsaved`]: one snapshot of the editor at the start of the
//! call); the result ends with [`search_unsaved::GREP_UNSAVED_NOTE`] naming
//! the matching files whose text came from a buffer.

mod page;
mod search;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use async_trait::async_trait;
use grep_regex::RegexMatcher;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::editor::UnsavedText;
use crate::permissions::{PermissionPreview, ReadFilter};
use crate::protocol::ToolResultContent;
use crate::text::{fill, plural};
use crate::tools::support::search_unsaved::{self, UnsavedSet};
use crate::tools::support::search_walk::{self, WalkSpec};
use crate::tools::{support::paths, ToolContext, ToolError, ToolOutput, TypedTool};

pub use page::{
    GREP_MORE_ENTRIES, GREP_OFFSET_PAST_END, GREP_OUTPUT_CUT, GREP_PAGE_END, MAX_RESULT_CHARS,
};
pub use search::{GREP_LINE_CUT, MAX_LINE_CHARS, MAX_REGEX_BYTES, MAX_REGEX_CACHE_BYTES};

/// What Grep prints (`output_mode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// Matching lines as `path:line:text` (`rg`).
    Content,
    /// Paths of files with a match, newest first (`rg -l`).
    #[default]
    FilesWithMatches,
    /// Matching lines per file as `path:N` (`rg -c`) and a total.
    Count,
}

/// Grep's input (Claude Code's field names, including `-i`, `-n`, `-A`,
/// `-B`, `-C`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepInput {
    /// The regular expression to search for in file contents (Rust regex syntax, like ripgrep)
    pub pattern: String,
    /// File or directory to search in. Defaults to the project root. Relative paths resolve against the project root
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Glob pattern that filters which files are searched (e.g. "*.js", "*.{ts,tsx}", "!*.min.js"); like rg --glob. A glob that contains / is matched relative to path: with path "src", glob "api/*.ts" searches src/api/*.ts
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glob: Option<String>,
    /// File type to search, from ripgrep's type table (rg --type), e.g. js, py, rust, go, java. Faster than glob for standard file types
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub file_type: Option<String>,
    /// Output mode: "content" shows matching lines (honours -A/-B/-C, -n and head_limit), "files_with_matches" shows paths of matching files, newest first (honours head_limit), "count" shows the number of matching lines per file (honours head_limit). Defaults to "files_with_matches"
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "output_mode_schema")]
    pub output_mode: Option<OutputMode>,
    /// Case-insensitive search (rg -i)
    #[serde(default, rename = "-i", skip_serializing_if = "Option::is_none")]
    pub case_insensitive: Option<bool>,
    /// Show line numbers in the output (rg -n). Only for output_mode "content", ignored otherwise. Defaults to true
    #[serde(default, rename = "-n", skip_serializing_if = "Option::is_none")]
    pub line_numbers: Option<bool>,
    /// Number of lines to show after each match (rg -A). Only for output_mode "content", ignored otherwise
    #[serde(default, rename = "-A", skip_serializing_if = "Option::is_none")]
    pub after: Option<u32>,
    /// Number of lines to show before each match (rg -B). Only for output_mode "content", ignored otherwise
    #[serde(default, rename = "-B", skip_serializing_if = "Option::is_none")]
    pub before: Option<u32>,
    /// Number of lines to show before and after each match (rg -C). Only for output_mode "content", ignored otherwise
    #[serde(default, rename = "-C", skip_serializing_if = "Option::is_none")]
    pub context: Option<u32>,
    /// Let a match span lines, with . also matching newlines (rg -U --multiline-dotall). Needed for patterns that contain \n. Defaults to false
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiline: Option<bool>,
    /// Show at most this many entries (output lines in content mode, files in the other modes), like "| head -N". 0 or absent means no limit; the output is cut at 20000 characters anyway
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_limit: Option<u32>,
    /// Skip this many entries before applying head_limit, like "| tail -n +N+1". Use it to page through large results. Defaults to 0
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u32>,
}

/// `output_mode` as a plain string enum, inline (what Claude Code sends),
/// instead of schemars' `$ref` + `oneOf` for a documented enum.
fn output_mode_schema(_gen: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "enum": ["content", "files_with_matches", "count"]
    })
}

/// Model-facing description of Grep (Claude Code's contract, in lathe's words).
pub const GREP_DESCRIPTION: &str = "Searches file contents with regular expressions, using ripgrep's engine.

Usage:
- Use Grep for every content search. Do not run `grep` or `rg` through Bash: Grep is faster, honours .gitignore and needs no permission inside the project.
- Full regex syntax (Rust regex, like ripgrep), e.g. \"log.*Error\" or \"fn\\s+\\w+\". Escape regex characters to match them literally: `interface\\{\\}` finds `interface{}`.
- Narrow the files with `glob` (e.g. \"*.js\", \"**/*.{ts,tsx}\") or `type` (ripgrep's file types, e.g. \"js\", \"py\", \"rust\").
- output_mode: \"files_with_matches\" (default) lists matching files, newest first; \"content\" shows matching lines as path:line:text; \"count\" shows matching lines per file.
- A pattern matches within one line unless `multiline: true` is set; set it for patterns that span lines, such as `struct \\{[\\s\\S]*?field`.
- Files ignored by .gitignore and binary files are skipped; hidden files are searched; .git is never searched. To search an ignored folder, pass it as `path`.
- A file open in the user's Neovim with unsaved changes is searched as the user sees it (the buffer's text), and a buffer not yet written counts as a file; the result says which matches come from unsaved text.
- Large results are cut; use `head_limit` and `offset` to page through them.";

/// Error when `path` is a FIFO, a device or a socket: opening it could block
/// (a FIFO without a writer) or never end (`/dev/zero`), as Read refuses it
/// (`FILE_NOT_REGULAR`). `{kind}` is e.g. "a FIFO (named pipe)".
pub const GREP_PATH_NOT_REGULAR: &str = "{path} is {kind}, not a regular file or a directory, so it was not searched: reading it could block or never end. Pass a file or a folder as path, or omit path to search the whole project.";
/// Error when `path` does not exist. `{path}` is what the model asked for.
pub const GREP_PATH_NOT_FOUND: &str =
    "Path does not exist: {path}. Check the path (Glob can find files by name), or omit path to search the whole project.";

/// Error for a regex that does not compile; `{error}` is the regex crate's
/// own message (e.g. `unclosed group` with a caret under the spot).
pub const GREP_BAD_REGEX: &str = "Invalid regex pattern \"{pattern}\":\n{error}\nFix the pattern and try again; to match a special character such as ( [ { . * literally, escape it with a backslash.";

/// Error for a regex that compiles past [`search::MAX_REGEX_BYTES`] (large
/// counted repetitions such as `(\w{100}){100}`); `{error}` is the regex
/// crate's message.
pub const GREP_REGEX_TOO_BIG: &str = "The regex \"{pattern}\" is too big to run: compiled, it exceeds {max} bytes ({error}). Simplify it: use smaller counted repetitions or an open one, or search for a literal part and show context with -A/-B/-C.";

/// Error for a pattern that matches a line break while `multiline` is off.
pub const GREP_NEEDS_MULTILINE: &str = "The pattern \"{pattern}\" contains a line break (\\n), but without multiline a match never spans lines. Set multiline: true to search across lines, or remove the \\n from the pattern.";

/// Error for a `type` that is not in ripgrep's type table.
pub const GREP_UNKNOWN_TYPE: &str = "Unknown file type \"{type}\". type takes ripgrep's type names, for example: {examples}. To filter by file name instead, use glob with the files' extension.";

/// Error for a `glob` that does not parse.
pub const GREP_BAD_GLOB: &str =
    "Invalid glob \"{glob}\": {error}. Fix it (`*` matches within one folder, `**` across folders, `{a,b}` either alternative, `[...]` one character of a set; every brace and bracket must be closed) and try again.";

/// Result when nothing matched; `{filters}` lists the active filters.
pub const GREP_NO_MATCHES: &str = "No matches for \"{pattern}\" in {path}{filters}.";

/// Added to [`GREP_NO_MATCHES`] only when the project's ignore files did
/// leave out files the search would otherwise have read
/// ([`search_walk::ignore_files_left_out`]).
pub const GREP_NO_MATCHES_IGNORED: &str = " Some files there are ignored by the project's ignore files (.gitignore, .ignore or .rgignore) and were not searched; to search an ignored folder, pass it as path.";

/// Added to [`GREP_NO_MATCHES`] when a glob with a `/` found nothing below
/// a `path` other than the root (a model may have written the glob from
/// the root). `{path}` is the searched path, relative to the root.
pub const GREP_NO_MATCHES_GLOB_HINT: &str = " A glob that contains / is matched relative to the searched path ({path}), not to the project root.";

/// Error for a glob whose folder lies outside the searched path. `{dir}`
/// is that folder, `{path}` the searched path (both relative to the root
/// when inside it).
pub const GREP_GLOB_OUTSIDE_PATH: &str = "The glob \"{glob}\" names {dir}, outside the searched path {path}, so it can match nothing: a glob that contains / is matched relative to path. Set path to a folder that holds {dir}, or write the glob relative to path.";

/// Error when the user interrupted the turn during the search.
pub const GREP_CANCELLED: &str = "The search was cancelled because the user interrupted the turn.";

/// Error when the search thread failed (a bug or a panic).
pub const GREP_FAILED: &str =
    "The search stopped unexpectedly: {error}. Try again, perhaps with a narrower path.";

/// Count-mode total line. Sums the per-file counts above it.
pub const GREP_COUNT_TOTAL: &str = "Found {lines} across {files}.";

/// Files-mode header.
pub const GREP_FILES_HEADER: &str = "Found {files}";

/// How the project root is named in messages (shared with Glob).
pub use crate::tools::support::search_walk::PROJECT_ROOT_NAME;

/// The Grep tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct GrepTool;

#[async_trait]
impl TypedTool for GrepTool {
    type Input = GrepInput;
    type Plan = Plan;
    const NAME: &'static str = "Grep";
    const KIND: crate::tools::ToolKind = crate::tools::ToolKind::Search;
    const MAX_RESULT_CHARS: Option<usize> = Some(MAX_RESULT_CHARS);
    const ALIASES: &'static [&'static str] = &["grep", "rg"];

    fn description(&self) -> String {
        GREP_DESCRIPTION.to_string()
    }

    fn normalize(&self, mut input: GrepInput, root: &Path) -> GrepInput {
        search_walk::normalize_search_path(root, &mut input.path);
        input
    }

    fn target_path(&self, input: &GrepInput) -> Option<PathBuf> {
        search_walk::search_target(input.path.as_deref())
    }

    async fn validate_input(
        &self,
        input: &GrepInput,
        ctx: &ToolContext,
    ) -> Result<Plan, ToolError> {
        let exists = match input.path.as_deref() {
            Some(p) => {
                let search = paths::resolve(&ctx.root, p);
                if let Some(kind) = special_kind(&search) {
                    return Err(ToolError::new(fill(
                        GREP_PATH_NOT_REGULAR,
                        &[
                            ("path", &paths::display(&ctx.root, &search)),
                            ("kind", kind),
                        ],
                    )));
                }
                // A path that is not on disk may be a buffer never written
                // (or a folder of such): that costs a main-thread trip,
                // only on this path.
                search.exists() || has_unsaved_below(ctx, &search).await
            }
            None => true,
        };
        Plan::new(input, &ctx.root, exists)
    }

    fn permission_preview(
        &self,
        input: &GrepInput,
        _plan: &Plan,
        root: &Path,
    ) -> PermissionPreview {
        let described = self.describe(input, root);
        search_walk::search_preview(Self::NAME, input.path.as_deref(), &described)
    }

    fn limit_reads(&self, plan: &mut Plan, filter: ReadFilter) {
        plan.walk.readable = Some(filter);
    }

    async fn call(
        &self,
        _input: GrepInput,
        plan: Plan,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let cancel = ctx.cancel.clone();
        let mut plan = plan;
        let texts = UnsavedSet::take(ctx.editor.as_ref()).await;
        search_walk::run_blocking(
            move || {
                if !texts.is_empty() {
                    plan.walk.unsaved = Some(Arc::new(UnsavedSet::resolve(texts)));
                }
                plan.run(&cancel)
            },
            GREP_FAILED,
        )
        .await
    }

    fn describe(&self, input: &GrepInput, root: &Path) -> String {
        search_walk::describe_search(&shorten(&input.pattern, 60), input.path.as_deref(), root)
    }
}

/// What `path` is when it is neither a regular file nor a directory (after
/// symlinks): "a FIFO (named pipe)", "a character device", "a block
/// device", "a socket" (the words of Read's `FILE_NOT_REGULAR`); `None`
/// for files, directories and paths that cannot be stat'ed. One `stat`,
/// nothing opened.
fn special_kind(path: &Path) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let t = std::fs::metadata(path).ok()?.file_type();
    if t.is_file() || t.is_dir() {
        None
    } else if t.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        Some("not a regular file")
    }
}

/// `true` when the editor holds unsaved text at `path` or below it.
async fn has_unsaved_below(ctx: &ToolContext, path: &Path) -> bool {
    let texts = UnsavedSet::take(ctx.editor.as_ref()).await;
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let wanted = crate::permissions::resolve_for_rules(&path);
        UnsavedSet::resolve(texts)
            .not_on_disk()
            .iter()
            .any(|(c, _)| c.starts_with(&wanted))
    })
    .await
    .unwrap_or(false)
}

/// `s` cut to `max` chars with `…` when longer.
fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(max).collect();
        out.push('…');
        out
    }
}

/// A matching file after the first pass.
#[derive(Debug, Clone)]
struct Hit {
    path: PathBuf,
    matched_lines: u64,
    entries: u64,
    /// The buffer's text searched instead of the file.
    unsaved: Option<Arc<UnsavedText>>,
}

/// A checked, ready-to-run search: Grep's plan, made once by
/// `validate_input` and run by `call`.
pub struct Plan {
    root: PathBuf,
    search: PathBuf,
    pattern: String,
    matcher: RegexMatcher,
    mode: OutputMode,
    shape: search::SearchShape,
    line_numbers: bool,
    walk: WalkSpec,
    offset: u64,
    head_limit: Option<u64>,
    filters: Vec<String>,
    /// A glob with a `/` was given: "no matches" says how it anchors.
    anchored_glob: bool,
}

impl Plan {
    /// Checks the input against the world: path exists (`exists`: on disk
    /// or as unsaved text), type known, glob and regex compile. Each
    /// failure is its model-facing error.
    fn new(input: &GrepInput, root: &Path, exists: bool) -> Result<Plan, ToolError> {
        let search = match input.path.as_deref() {
            Some(p) => paths::resolve(root, p),
            None => root.to_path_buf(),
        };
        if !exists {
            let shown = input.path.clone().unwrap_or_default();
            return Err(ToolError::new(fill(
                GREP_PATH_NOT_FOUND,
                &[("path", &shown)],
            )));
        }
        let case_insensitive = input.case_insensitive.unwrap_or(false);
        let multiline = input.multiline.unwrap_or(false);
        let matcher = search::build_matcher(&input.pattern, case_insensitive, multiline).map_err(
            |e| match e {
                search::PatternError::NeedsMultiline => {
                    ToolError::new(fill(GREP_NEEDS_MULTILINE, &[("pattern", &input.pattern)]))
                }
                search::PatternError::Regex(error) => ToolError::new(fill(
                    GREP_BAD_REGEX,
                    &[("pattern", &input.pattern), ("error", &error)],
                )),
                search::PatternError::TooBig(error) => ToolError::new(fill(
                    GREP_REGEX_TOO_BIG,
                    &[
                        ("pattern", &input.pattern),
                        ("error", &error),
                        ("max", &search::MAX_REGEX_BYTES.to_string()),
                    ],
                )),
            },
        )?;
        let mut filters = Vec::new();
        let types = match input.file_type.as_deref().map(str::trim) {
            Some(t) if !t.is_empty() => {
                filters.push(format!("type \"{t}\""));
                Some(search_walk::select_type(t).map_err(|examples| {
                    ToolError::new(fill(
                        GREP_UNKNOWN_TYPE,
                        &[("type", t), ("examples", &examples)],
                    ))
                })?)
            }
            _ => None,
        };
        let globs = input
            .glob
            .as_deref()
            .map(search_walk::split_globs)
            .unwrap_or_default();
        let anchored_glob = globs.iter().any(|g| is_anchored_glob(g));
        let overrides = if globs.is_empty() {
            None
        } else {
            filters.insert(0, format!("glob \"{}\"", globs.join(" ")));
            // Globs match below the searched folder (a file's folder): a
            // glob with a `/` names a place there, as `cd {path} && rg
            // --glob {glob}` would read it.
            let base = if search.is_file() {
                search
                    .parent()
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| search.clone())
            } else {
                search.clone()
            };
            let globs = globs
                .iter()
                .map(|g| anchor_glob(&base, g))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|(glob, dir)| {
                    ToolError::new(fill(
                        GREP_GLOB_OUTSIDE_PATH,
                        &[
                            ("glob", &glob),
                            ("dir", &paths::display(root, &dir)),
                            ("path", &search_walk::search_place(root, &search)),
                        ],
                    ))
                })?;
            Some(
                search_walk::build_overrides(&base, &globs).map_err(|(glob, error)| {
                    ToolError::new(fill(GREP_BAD_GLOB, &[("glob", &glob), ("error", &error)]))
                })?,
            )
        };
        if case_insensitive {
            filters.push("case-insensitive (-i)".to_string());
        }
        if multiline {
            filters.push("multiline".to_string());
        }
        let mode = input.output_mode.unwrap_or_default();
        let content = mode == OutputMode::Content;
        let context = input.context.unwrap_or(0) as usize;
        let shape = search::SearchShape {
            before: if content {
                input.before.map_or(context, |b| b as usize)
            } else {
                0
            },
            after: if content {
                input.after.map_or(context, |a| a as usize)
            } else {
                0
            },
            multiline,
        };
        Ok(Plan {
            root: root.to_path_buf(),
            walk: WalkSpec {
                start: search.clone(),
                types,
                overrides,
                max_depth: None,
                wanted: None,
                readable: None,
                unsaved: None,
            },
            search,
            pattern: input.pattern.clone(),
            matcher,
            mode,
            shape,
            line_numbers: input.line_numbers.unwrap_or(true),
            offset: u64::from(input.offset.unwrap_or(0)),
            head_limit: input.head_limit.map(u64::from),
            filters,
            anchored_glob,
        })
    }

    /// Runs both passes and renders the result, with the note on files
    /// left out for permission at the end. Blocking.
    fn run(self, cancel: &CancellationToken) -> Result<ToolOutput, ToolError> {
        let (hits, left) = self.first_pass(cancel)?;
        let mut unsaved: Vec<String> = hits
            .iter()
            .filter(|h| h.unsaved.is_some())
            .map(|h| self.label(&h.path))
            .collect();
        unsaved.sort();
        let notes: Vec<String> = [
            search_unsaved::grep_note(&unsaved),
            search_walk::left_out_note(&left),
        ]
        .into_iter()
        .flatten()
        .collect();
        let note = (!notes.is_empty()).then(|| notes.join("\n"));
        if hits.is_empty() {
            let mut text = self.no_matches();
            if self.search.is_dir()
                && left == search_walk::LeftOut::default()
                && search_walk::ignore_files_left_out(&self.walk, cancel)
            {
                text.push_str(GREP_NO_MATCHES_IGNORED);
            }
            let text = search_walk::with_note(text, note.as_deref());
            return Ok(ToolOutput::text(text, "no matches"));
        }
        let mut out = self.render(
            hits,
            note.as_ref().map_or(0, |n| n.chars().count() + 2),
            cancel,
        )?;
        if let ToolResultContent::Text(t) = &mut out.content {
            *t = search_walk::with_note(std::mem::take(t), note.as_deref());
        }
        Ok(out)
    }

    /// The result for `hits` in the output mode, `reserve` chars left free
    /// for the note after it.
    fn render(
        &self,
        mut hits: Vec<Hit>,
        reserve: usize,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        match self.mode {
            OutputMode::FilesWithMatches => {
                // One time for every unsaved text, so they sort among
                // themselves by path.
                let now = SystemTime::now();
                let mut dated: Vec<_> = hits
                    .into_iter()
                    .map(|h| {
                        // Unsaved text is what the user is editing now.
                        let t = match h.unsaved {
                            Some(_) => now,
                            None => search_walk::mtime(&h.path),
                        };
                        (h.path, t)
                    })
                    .collect();
                search_walk::sort_newest_first(&mut dated);
                let lines: Vec<String> = dated.iter().map(|(p, _)| self.label(p)).collect();
                Ok(self.render_list(lines, "file", None, reserve))
            }
            OutputMode::Count => {
                hits.sort_by(|a, b| a.path.cmp(&b.path));
                let total: u64 = hits.iter().map(|h| h.matched_lines).sum();
                let lines: Vec<String> = hits
                    .iter()
                    .map(|h| format!("{}:{}", self.label(&h.path), h.matched_lines))
                    .collect();
                let footer = fill(
                    GREP_COUNT_TOTAL,
                    &[
                        ("lines", &plural(total, "matching line", "matching lines")),
                        ("files", &plural(hits.len(), "file", "files")),
                    ],
                );
                Ok(self.render_list(lines, "file", Some(footer), reserve))
            }
            OutputMode::Content => {
                hits.sort_by(|a, b| a.path.cmp(&b.path));
                self.render_content(&hits, reserve, cancel)
            }
        }
    }

    /// Pass 1: which files match, with their counts, and the files left
    /// out for permission (never opened). Keeps no text.
    fn first_pass(
        &self,
        cancel: &CancellationToken,
    ) -> Result<(Vec<Hit>, search_walk::LeftOut), ToolError> {
        let hits = Mutex::new(Vec::new());
        let first_match_only = self.mode == OutputMode::FilesWithMatches;
        let left = search_walk::walk_files(&self.walk, cancel, || {
            let mut searcher = search::build_searcher(self.shape);
            let hits = &hits;
            move |path: &Path, unsaved: Option<&Arc<UnsavedText>>| {
                let report = search::Report {
                    label: "",
                    line_numbers: false,
                    first_match_only,
                    keep: None,
                    cancel: Some(cancel),
                };
                let source = search::Source::of(path, unsaved.map(|u| u.text.as_str()));
                if let Ok(r) = search::search(&mut searcher, &self.matcher, source, &report) {
                    if r.matched_lines > 0 && !r.binary {
                        if let Ok(mut v) = hits.lock() {
                            v.push(Hit {
                                path: path.to_path_buf(),
                                matched_lines: r.matched_lines,
                                entries: r.entries,
                                unsaved: unsaved.cloned(),
                            });
                        }
                    }
                }
                true
            }
        })
        .map_err(|_| ToolError::new(GREP_CANCELLED))?;
        Ok((hits.into_inner().unwrap_or_default(), left))
    }

    /// Files and count modes: one entry per file, paged and capped, with
    /// `reserve` chars left free after it.
    fn render_list(
        &self,
        lines: Vec<String>,
        noun: &str,
        footer: Option<String>,
        reserve: usize,
    ) -> ToolOutput {
        let total = lines.len() as u64;
        let files = plural(total, "file", "files");
        let win = page::window(total, self.offset, self.head_limit);
        if win.is_empty() {
            return ToolOutput::text(page::offset_past_end(noun, self.offset, total), files);
        }
        let header = match (self.mode, &footer) {
            (OutputMode::FilesWithMatches, _) => {
                Some(fill(GREP_FILES_HEADER, &[("files", &files)]))
            }
            _ => None,
        };
        let header_chars = header.as_ref().map_or(0, |h| h.chars().count())
            + footer.as_ref().map_or(0, |f| f.chars().count())
            + reserve;
        let slice = &lines[win.start as usize..win.end as usize];
        let (body, shown) = page::fit(slice, page::entry_budget(header_chars));
        let mut out = String::new();
        if let Some(h) = header {
            out.push_str(&h);
            out.push('\n');
        }
        out.push_str(&body);
        if let Some(f) = footer {
            out.push_str("\n\n");
            out.push_str(&f);
        }
        if let Some(t) = page::trailer(&format!("{noun}s"), win.start, shown as u64, win.end, total)
        {
            out.push_str("\n\n");
            out.push_str(&t);
        }
        ToolOutput::text(out, files)
    }

    /// Content mode: pass 2 renders only the files in the page, with
    /// `reserve` chars left free after it.
    fn render_content(
        &self,
        hits: &[Hit],
        reserve: usize,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let separators = self.shape.before > 0 || self.shape.after > 0;
        let total: u64 = hits.iter().map(|h| h.entries).sum::<u64>()
            + if separators { hits.len() as u64 - 1 } else { 0 };
        let win = page::window(total, self.offset, self.head_limit);
        if win.is_empty() {
            return Ok(ToolOutput::text(
                page::offset_past_end("line", self.offset, total),
                plural(total, "line", "lines"),
            ));
        }
        let mut searcher = search::build_searcher(self.shape);
        let mut lines = Vec::new();
        let mut pos = 0u64;
        for (i, hit) in hits.iter().enumerate() {
            if pos >= win.end {
                break;
            }
            if cancel.is_cancelled() {
                return Err(ToolError::new(GREP_CANCELLED));
            }
            if separators && i > 0 {
                if win.contains(&pos) {
                    lines.push("--".to_string());
                }
                pos += 1;
            }
            let seg = pos..pos + hit.entries;
            let lo = seg.start.max(win.start);
            let hi = seg.end.min(win.end);
            if lo < hi {
                let label = self.label(&hit.path);
                let report = search::Report {
                    label: &label,
                    line_numbers: self.line_numbers,
                    first_match_only: false,
                    keep: Some(lo - seg.start..hi - seg.start),
                    cancel: Some(cancel),
                };
                let text = hit.unsaved.as_ref().map(|u| u.text.as_str());
                let source = search::Source::of(&hit.path, text);
                if let Ok(r) = search::search(&mut searcher, &self.matcher, source, &report) {
                    lines.extend(r.lines);
                }
            }
            pos = seg.end;
        }
        let (body, shown) = page::fit(&lines, page::entry_budget(reserve));
        let mut out = body;
        if let Some(t) = page::trailer("lines", win.start, shown as u64, win.end, total) {
            out.push_str("\n\n");
            out.push_str(&t);
        }
        Ok(ToolOutput::text(out, plural(shown, "line", "lines")))
    }

    /// `path` as shown in output: relative to the root when inside it.
    fn label(&self, path: &Path) -> String {
        paths::display(&self.root, path)
    }

    /// [`GREP_NO_MATCHES`] filled in.
    fn no_matches(&self) -> String {
        let filters = if self.filters.is_empty() {
            String::new()
        } else {
            format!(" (filters: {})", self.filters.join(", "))
        };
        let mut text = fill(
            GREP_NO_MATCHES,
            &[
                ("pattern", &self.pattern),
                ("path", &self.place()),
                ("filters", &filters),
            ],
        );
        if self.anchored_glob && self.search != self.root {
            text.push_str(&fill(GREP_NO_MATCHES_GLOB_HINT, &[("path", &self.place())]));
        }
        text
    }

    /// The searched path for messages.
    fn place(&self) -> String {
        search_walk::search_place(&self.root, &self.search)
    }
}

/// `true` for a glob (after an optional `!`) with a `/` before its last
/// char: gitignore anchors it, so it names a place below the searched
/// folder. `*.rs` and `build/` match a name at any depth instead.
fn is_anchored_glob(glob: &str) -> bool {
    let body = glob.strip_prefix('!').unwrap_or(glob);
    body.trim_end_matches('/').contains('/')
}

/// `glob` as an `rg --glob` override rooted at `base` (the searched
/// folder): a glob with a `/` goes through [`paths::resolve_param`] (`./`,
/// `..`, absolute and `~/` forms) and comes back anchored below `base`
/// (`/sub/*.txt`); other globs stay as they are. `!` is kept.
///
/// Errors: `Err((glob, folder))` when the glob's folder lies outside
/// `base`, where it can match nothing.
fn anchor_glob(base: &Path, glob: &str) -> Result<String, (String, PathBuf)> {
    if !is_anchored_glob(glob) {
        return Ok(glob.to_string());
    }
    let (bang, body) = match glob.strip_prefix('!') {
        Some(rest) => ("!", rest),
        None => ("", glob),
    };
    let resolved = paths::resolve_param(base, body, paths::ParamKind::Glob);
    let below = resolved
        .literal
        .strip_prefix(base)
        .map_err(|_| (glob.to_string(), resolved.literal.clone()))?;
    let mut out = format!("{bang}/");
    for c in below.components() {
        out.push_str(&c.as_os_str().to_string_lossy());
        out.push('/');
    }
    out.push_str(&resolved.pattern);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_grep_messages() {
        assert_eq!(GREP_PATH_NOT_REGULAR, "{path} is {kind}, not a regular file or a directory, so it was not searched: reading it could block or never end. Pass a file or a folder as path, or omit path to search the whole project.");
        assert_eq!(
            GREP_PATH_NOT_FOUND,
            "Path does not exist: {path}. Check the path (Glob can find files by name), or omit path to search the whole project."
        );
        assert_eq!(
            GREP_BAD_REGEX,
            "Invalid regex pattern \"{pattern}\":\n{error}\nFix the pattern and try again; to match a special character such as ( [ { . * literally, escape it with a backslash."
        );
        assert_eq!(
            GREP_NEEDS_MULTILINE,
            "The pattern \"{pattern}\" contains a line break (\\n), but without multiline a match never spans lines. Set multiline: true to search across lines, or remove the \\n from the pattern."
        );
        assert_eq!(
            GREP_UNKNOWN_TYPE,
            "Unknown file type \"{type}\". type takes ripgrep's type names, for example: {examples}. To filter by file name instead, use glob with the files' extension."
        );
        assert_eq!(
            GREP_BAD_GLOB,
            "Invalid glob \"{glob}\": {error}. Fix it (`*` matches within one folder, `**` across folders, `{a,b}` either alternative, `[...]` one character of a set; every brace and bracket must be closed) and try again."
        );
        assert_eq!(
            GREP_NO_MATCHES,
            "No matches for \"{pattern}\" in {path}{filters}."
        );
        assert_eq!(
            GREP_NO_MATCHES_IGNORED,
            " Some files there are ignored by the project's ignore files (.gitignore, .ignore or .rgignore) and were not searched; to search an ignored folder, pass it as path."
        );
        assert_eq!(
            GREP_CANCELLED,
            "The search was cancelled because the user interrupted the turn."
        );
        assert_eq!(
            GREP_FAILED,
            "The search stopped unexpectedly: {error}. Try again, perhaps with a narrower path."
        );
        assert_eq!(GREP_COUNT_TOTAL, "Found {lines} across {files}.");
        assert_eq!(GREP_FILES_HEADER, "Found {files}");
        assert_eq!(PROJECT_ROOT_NAME, "the project root");
        assert_eq!(
            GREP_REGEX_TOO_BIG,
            "The regex \"{pattern}\" is too big to run: compiled, it exceeds {max} bytes ({error}). Simplify it: use smaller counted repetitions or an open one, or search for a literal part and show context with -A/-B/-C."
        );
        assert_eq!(
            GREP_NO_MATCHES_GLOB_HINT,
            " A glob that contains / is matched relative to the searched path ({path}), not to the project root."
        );
        assert_eq!(
            GREP_GLOB_OUTSIDE_PATH,
            "The glob \"{glob}\" names {dir}, outside the searched path {path}, so it can match nothing: a glob that contains / is matched relative to path. Set path to a folder that holds {dir}, or write the glob relative to path."
        );
    }

    #[test]
    fn golden_grep_description() {
        assert!(GREP_DESCRIPTION.starts_with(
            "Searches file contents with regular expressions, using ripgrep's engine.\n"
        ));
        assert!(GREP_DESCRIPTION
            .contains("\"files_with_matches\" (default) lists matching files, newest first"));
        assert!(GREP_DESCRIPTION.ends_with("use `head_limit` and `offset` to page through them."));
    }

    #[test]
    fn schema_uses_claude_code_field_names_and_hides_internal_fields() {
        let schema = crate::tools::schema_for::<GrepInput>();
        let props = schema["properties"].as_object().expect("properties");
        let mut names: Vec<&str> = props.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            vec![
                "-A",
                "-B",
                "-C",
                "-i",
                "-n",
                "glob",
                "head_limit",
                "multiline",
                "offset",
                "output_mode",
                "path",
                "pattern",
                "type"
            ]
        );
        assert_eq!(schema["required"], serde_json::json!(["pattern"]));
        assert_eq!(schema["additionalProperties"], serde_json::json!(false));
        assert!(props["pattern"]["description"]
            .as_str()
            .is_some_and(|d| !d.is_empty()));
    }

    #[test]
    fn describe_shows_pattern_and_root_relative_path() {
        let root = PathBuf::from("/p");
        let mut input = GrepInput {
            pattern: "Helo".into(),
            path: Some("/p/src".into()),
            ..Default::default()
        };
        assert_eq!(GrepTool.describe(&input, &root), "\"Helo\" in src");
        input.path = Some("/p".into());
        assert_eq!(GrepTool.describe(&input, &root), "\"Helo\"");
        input.path = Some("/elsewhere".into());
        assert_eq!(GrepTool.describe(&input, &root), "\"Helo\" in /elsewhere");
    }
}
