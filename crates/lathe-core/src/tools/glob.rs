//! Glob: files whose path matches a glob pattern, newest first (Claude
//! Code's Glob contract).
//!
//! - Patterns use `globset` syntax matched against the path relative to the
//!   search directory: `*` and `?` stay within one folder, `**` crosses
//!   folders, `{a,b}` alternates, `[abc]`/`[!a]` are classes. `*.rs` matches
//!   only directly in the search directory; `**/*.rs` at any depth.
//! - Only files are listed, never directories.
//! - The walk is Grep's ([`search_walk`]): `.gitignore` is honoured and
//!   `.git` (and other VCS folders) never listed. **Hidden files are
//!   included**, so `.github/**`, `**/.env` and also `**/*.yml` find
//!   dot-files: skipping them made agents waste calls looking for CI configs
//!   and env files (a known Claude Code complaint), and Grep searches them
//!   too, so the two tools agree.
//! - Leading literal folders of the pattern become the walk's start
//!   (`target/**/*.d` walks `target/`), so, as with an explicit Grep path, a
//!   pattern that names an ignored folder lists it. The pattern resolves
//!   against `path` through [`paths::resolve_param`], the resolver of every
//!   path-like parameter (`./`, `..`, absolute and `~/` forms alike).
//! - At most [`GLOB_MAX_FILES`] files, the most recently modified, with a
//!   note when more matched. Memory stays bounded by that many entries.
//! - Files the permission gate's [`ReadFilter`] does not find free to read
//!   (deny and ask rules, protected paths such as `.env`) are not listed;
//!   the result ends with a note that says how many and why.
//! - A buffer open in Neovim that was never written counts as a file
//!   (listed as modified now, with [`search_unsaved::GLOB_UNSAVED_NOTE`]);
//!   a buffer with unsaved changes counts as modified now
//!   ([`search_unsaved`]: one snapshot of the editor at the start of the call).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use async_trait::async_trait;
use globset::{GlobBuilder, GlobMatcher};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::support::search_unsaved::{self, UnsavedSet};
use super::support::search_walk::{self, WalkSpec};
use super::{support::paths, ToolContext, ToolError, ToolOutput, TypedTool};
use crate::editor::UnsavedText;
use crate::permissions::{PermissionPreview, ReadFilter};
use crate::text::fill;

/// Most files Glob lists; the newest are kept.
pub const GLOB_MAX_FILES: usize = 100;

/// Largest Glob result in chars (the pipeline's `max_result_size_chars`).
pub const GLOB_MAX_RESULT_CHARS: usize = 20_000;

/// Glob's input (Claude Code's field names).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobInput {
    /// The glob pattern to match file paths against, e.g. "**/*.rs" or "src/**/*.{ts,tsx}"
    pub pattern: String,
    /// The directory to search in. Defaults to the project root; omit it rather than passing "undefined" or "null". Relative paths resolve against the project root
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// Model-facing description of Glob (Claude Code's contract, in lathe's words).
pub const GLOB_DESCRIPTION: &str = "Finds files by name pattern, fast in any size of project.

Usage:
- Glob patterns such as \"**/*.js\", \"src/**/*.{ts,tsx}\" or \"test_[a-c]*.py\"; `*` stays within one folder, `**` spans folders.
- Returns matching file paths (not folders), most recently modified first, at most 100.
- Files ignored by .gitignore are skipped unless the pattern starts with their folder; hidden files are included; .git is never listed.
- A file open in the user's Neovim but not yet written to disk is listed too, and the result says so.
- Use Glob to find files by name; use Grep to find files by content. For open-ended searches that need several rounds, plan a sequence of Glob and Grep calls.";

/// Error when `path` does not exist.
pub const GLOB_PATH_NOT_FOUND: &str =
    "Directory does not exist: {path}. Check the path, or omit path to search from the project root.";

/// Error when `path` is not a directory.
pub const GLOB_NOT_A_DIRECTORY: &str = "Not a directory: {path}. Glob searches under a directory: pass the folder that holds the file as path, or use Read to open the file itself.";

/// Error when the pattern does not parse; `{error}` is globset's message.
pub const GLOB_BAD_PATTERN: &str = "Invalid glob pattern \"{pattern}\": {error}. Fix the pattern (`*` matches within one folder, `**` across folders, `{a,b}` either alternative, `[...]` one character of a set; every brace and bracket must be closed) and try again.";

/// Result when nothing matched.
pub const GLOB_NO_FILES: &str = "No files found matching \"{pattern}\" in {path}.";

/// Added to [`GLOB_NO_FILES`] only when the project's ignore files did
/// leave out files that match ([`search_walk::ignore_files_left_out`]).
pub const GLOB_NO_FILES_IGNORED: &str = " Files that match are ignored by the project's ignore files (.gitignore, .ignore or .rgignore), and Glob skips ignored files: pass their folder as path to list them.";

/// Note after the list when more than [`GLOB_MAX_FILES`] files matched (or
/// the char cap was reached).
pub const GLOB_TRUNCATED: &str = "(Showing the {shown} most recently modified of {total} matching files. Use a more specific pattern or path to see the others.)";

/// Error when the user interrupted the turn during the walk.
pub const GLOB_CANCELLED: &str =
    "The file search was cancelled because the user interrupted the turn.";

/// Error when the walk thread failed (a bug or a panic).
pub const GLOB_FAILED: &str =
    "The file search stopped unexpectedly: {error}. Try again, perhaps with a narrower path.";

/// The Glob tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct GlobTool;

#[async_trait]
impl TypedTool for GlobTool {
    type Input = GlobInput;
    type Plan = Plan;
    const NAME: &'static str = "Glob";
    const KIND: crate::tools::ToolKind = crate::tools::ToolKind::Search;
    const MAX_RESULT_CHARS: Option<usize> = Some(GLOB_MAX_RESULT_CHARS);
    const ALIASES: &'static [&'static str] = &["glob", "find_files"];

    fn description(&self) -> String {
        GLOB_DESCRIPTION.to_string()
    }

    fn normalize(&self, mut input: GlobInput, root: &Path) -> GlobInput {
        search_walk::normalize_search_path(root, &mut input.path);
        input
    }

    fn target_path(&self, input: &GlobInput) -> Option<PathBuf> {
        search_walk::search_target(input.path.as_deref())
    }

    async fn validate_input(
        &self,
        input: &GlobInput,
        ctx: &ToolContext,
    ) -> Result<Plan, ToolError> {
        Plan::new(input, &ctx.root)
    }

    fn permission_preview(
        &self,
        input: &GlobInput,
        _plan: &Plan,
        root: &Path,
    ) -> PermissionPreview {
        let described = self.describe(input, root);
        search_walk::search_preview(Self::NAME, input.path.as_deref(), &described)
    }

    fn limit_reads(&self, plan: &mut Plan, filter: ReadFilter) {
        plan.readable = Some(filter);
    }

    async fn call(
        &self,
        _input: GlobInput,
        plan: Plan,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let cancel = ctx.cancel.clone();
        let mut plan = plan;
        let texts = UnsavedSet::take(ctx.editor.as_ref()).await;
        search_walk::run_blocking(
            move || {
                if !texts.is_empty() {
                    plan.unsaved = Some(Arc::new(UnsavedSet::resolve(texts)));
                }
                plan.run(&cancel)
            },
            GLOB_FAILED,
        )
        .await
    }

    fn describe(&self, input: &GlobInput, root: &Path) -> String {
        search_walk::describe_search(&input.pattern, input.path.as_deref(), root)
    }
}

/// A checked, ready-to-run file search: Glob's plan, made once by
/// `validate_input` and run by `call`.
pub struct Plan {
    root: PathBuf,
    dir: PathBuf,
    pattern: String,
    /// Where the walk starts: `dir` plus the pattern's literal folders.
    start: PathBuf,
    matcher: GlobMatcher,
    max_depth: Option<usize>,
    /// Gate 6's check of each matching file ([`TypedTool::limit_reads`]).
    readable: Option<ReadFilter>,
    /// The editor's unsaved texts, taken when the call starts.
    unsaved: Option<Arc<UnsavedSet>>,
}

impl Plan {
    fn new(input: &GlobInput, root: &Path) -> Result<Plan, ToolError> {
        let dir = match input.path.as_deref() {
            Some(p) => paths::resolve(root, p),
            None => root.to_path_buf(),
        };
        let shown = || {
            input
                .path
                .clone()
                .unwrap_or_else(|| root.display().to_string())
        };
        if !dir.exists() {
            return Err(ToolError::new(fill(
                GLOB_PATH_NOT_FOUND,
                &[("path", &shown())],
            )));
        }
        if !dir.is_dir() {
            return Err(ToolError::new(fill(
                GLOB_NOT_A_DIRECTORY,
                &[("path", &shown())],
            )));
        }
        let paths::Resolved {
            literal: start,
            pattern: rest,
        } = paths::resolve_param(&dir, &input.pattern, paths::ParamKind::Glob);
        let matcher = GlobBuilder::new(&rest)
            .literal_separator(true)
            .build()
            .map_err(|e| {
                ToolError::new(fill(
                    GLOB_BAD_PATTERN,
                    &[
                        ("pattern", &input.pattern),
                        ("error", &e.kind().to_string()),
                    ],
                ))
            })?
            .compile_matcher();
        let max_depth = if rest.contains("**") {
            None
        } else {
            Some(rest.split('/').count())
        };
        Ok(Plan {
            root: root.to_path_buf(),
            dir,
            pattern: input.pattern.clone(),
            start,
            matcher,
            max_depth,
            readable: None,
            unsaved: None,
        })
    }

    /// Walks and renders, with the note on files left out for permission
    /// at the end. Blocking.
    fn run(self, cancel: &CancellationToken) -> Result<ToolOutput, ToolError> {
        // A folder not written yet may hold buffers never written.
        let walk = self.start.is_dir() || (self.unsaved.is_some() && !self.start.exists());
        let (total, newest, left, new_files) = if walk {
            self.collect(cancel)?
        } else {
            Default::default()
        };
        let mut new_names: Vec<String> = new_files
            .iter()
            .filter(|p| newest.iter().any(|(n, _)| n == *p))
            .map(|p| paths::display(&self.root, p))
            .collect();
        new_names.sort();
        let notes: Vec<String> = [
            search_unsaved::glob_note(&new_names),
            search_walk::left_out_note(&left),
        ]
        .into_iter()
        .flatten()
        .collect();
        let note = (!notes.is_empty()).then(|| notes.join("\n"));
        if total == 0 {
            let place = search_walk::search_place(&self.root, &self.dir);
            let mut text = fill(
                GLOB_NO_FILES,
                &[("pattern", &self.pattern), ("path", &place)],
            );
            if walk && left == search_walk::LeftOut::default() {
                let spec = self.walk_spec();
                if search_walk::ignore_files_left_out(&spec, cancel) {
                    text.push_str(GLOB_NO_FILES_IGNORED);
                }
            }
            let text = search_walk::with_note(text, note.as_deref());
            return Ok(ToolOutput::text(text, "no files"));
        }
        let reserve = note.as_ref().map_or(0, |n| n.chars().count() + 2);
        let budget = GLOB_MAX_RESULT_CHARS - 300 - reserve;
        let mut out = String::new();
        let mut shown = 0usize;
        for (path, _) in &newest {
            let line = paths::display(&self.root, path);
            let cost = line.chars().count() + usize::from(shown > 0);
            if out.chars().count() + cost > budget {
                break;
            }
            if shown > 0 {
                out.push('\n');
            }
            out.push_str(&line);
            shown += 1;
        }
        if (shown as u64) < total {
            out.push_str("\n\n");
            out.push_str(&fill(
                GLOB_TRUNCATED,
                &[("shown", &shown.to_string()), ("total", &total.to_string())],
            ));
        }
        let summary = if total == 1 {
            "1 file".to_string()
        } else {
            format!("{total} files")
        };
        Ok(ToolOutput::text(
            search_walk::with_note(out, note.as_deref()),
            summary,
        ))
    }

    /// The walk of this search: below its start, files the pattern matches.
    fn walk_spec(&self) -> WalkSpec {
        let (start, matcher) = (self.start.clone(), self.matcher.clone());
        let wanted: search_walk::Wanted = Arc::new(move |path: &Path| {
            path.strip_prefix(&start)
                .is_ok_and(|rel| matcher.is_match(rel))
        });
        WalkSpec {
            start: self.start.clone(),
            types: None,
            overrides: None,
            max_depth: self.max_depth,
            wanted: Some(wanted),
            readable: self.readable.clone(),
            unsaved: self.unsaved.clone(),
        }
    }

    /// The number of matching files, the newest [`GLOB_MAX_FILES`] of
    /// them, newest first, the matching files left out for permission, and
    /// the matching buffers never written (an unsaved buffer counts as
    /// modified now).
    fn collect(&self, cancel: &CancellationToken) -> Result<Collected, ToolError> {
        let newest = Mutex::new(Newest::default());
        let new_files = Mutex::new(Vec::new());
        // One time for every unsaved text, so they sort among themselves by path.
        let now = SystemTime::now();
        let spec = self.walk_spec();
        let left = search_walk::walk_files(&spec, cancel, || {
            let (newest, new_files) = (&newest, &new_files);
            move |path: &Path, unsaved: Option<&Arc<UnsavedText>>| {
                let t = match unsaved {
                    Some(_) => now,
                    None => search_walk::mtime(path),
                };
                if let Ok(mut n) = newest.lock() {
                    n.push(path.to_path_buf(), t);
                }
                if unsaved.is_some_and(|u| !u.on_disk) {
                    if let Ok(mut v) = new_files.lock() {
                        v.push(path.to_path_buf());
                    }
                }
                true
            }
        })
        .map_err(|_| ToolError::new(GLOB_CANCELLED))?;
        let newest = newest.into_inner().unwrap_or_default();
        let total = newest.total;
        let mut items: Vec<_> = newest
            .heap
            .into_iter()
            .map(|Reverse((t, Reverse(p)))| (p, t))
            .collect();
        search_walk::sort_newest_first(&mut items);
        let new_files = new_files.into_inner().unwrap_or_default();
        Ok((total, items, left, new_files))
    }
}

/// What [`Plan::collect`] found: how many files matched, the newest of
/// them with their times, the files left out for permission, and the
/// matching buffers that have no file yet.
type Collected = (
    u64,
    Vec<(PathBuf, SystemTime)>,
    search_walk::LeftOut,
    Vec<PathBuf>,
);

/// The newest [`GLOB_MAX_FILES`] files seen, plus how many were seen.
#[derive(Default)]
struct Newest {
    /// Min-heap on (mtime, reversed path): the top is the entry to drop.
    heap: BinaryHeap<Reverse<(SystemTime, Reverse<PathBuf>)>>,
    total: u64,
}

impl Newest {
    fn push(&mut self, path: PathBuf, mtime: SystemTime) {
        self.total += 1;
        self.heap.push(Reverse((mtime, Reverse(path))));
        if self.heap.len() > GLOB_MAX_FILES {
            self.heap.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_keeps_the_most_recent_and_counts_all() {
        let mut n = Newest::default();
        for i in 0..(GLOB_MAX_FILES as u64 + 5) {
            n.push(
                PathBuf::from(format!("f{i}")),
                SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(i),
            );
        }
        assert_eq!(n.total, GLOB_MAX_FILES as u64 + 5);
        assert_eq!(n.heap.len(), GLOB_MAX_FILES);
        let oldest_kept = n.heap.peek().map(|Reverse((t, _))| *t);
        assert_eq!(
            oldest_kept,
            Some(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(5))
        );
    }

    #[test]
    fn golden_glob_messages() {
        assert_eq!(
            GLOB_PATH_NOT_FOUND,
            "Directory does not exist: {path}. Check the path, or omit path to search from the project root."
        );
        assert_eq!(
            GLOB_NOT_A_DIRECTORY,
            "Not a directory: {path}. Glob searches under a directory: pass the folder that holds the file as path, or use Read to open the file itself."
        );
        assert_eq!(
            GLOB_BAD_PATTERN,
            "Invalid glob pattern \"{pattern}\": {error}. Fix the pattern (`*` matches within one folder, `**` across folders, `{a,b}` either alternative, `[...]` one character of a set; every brace and bracket must be closed) and try again."
        );
        assert_eq!(
            GLOB_NO_FILES,
            "No files found matching \"{pattern}\" in {path}."
        );
        assert_eq!(
            GLOB_NO_FILES_IGNORED,
            " Files that match are ignored by the project's ignore files (.gitignore, .ignore or .rgignore), and Glob skips ignored files: pass their folder as path to list them."
        );
        assert_eq!(
            GLOB_TRUNCATED,
            "(Showing the {shown} most recently modified of {total} matching files. Use a more specific pattern or path to see the others.)"
        );
        assert_eq!(
            GLOB_CANCELLED,
            "The file search was cancelled because the user interrupted the turn."
        );
        assert_eq!(
            GLOB_FAILED,
            "The file search stopped unexpectedly: {error}. Try again, perhaps with a narrower path."
        );
        assert_eq!(GLOB_MAX_FILES, 100);
        assert!(GLOB_DESCRIPTION
            .starts_with("Finds files by name pattern, fast in any size of project.\n"));
        assert!(GLOB_DESCRIPTION.contains("hidden files are included; .git is never listed."));
    }

    #[test]
    fn schema_has_pattern_and_path_only() {
        let schema = crate::tools::schema_for::<GlobInput>();
        let props = schema["properties"].as_object().expect("properties");
        let mut names: Vec<&str> = props.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, vec!["path", "pattern"]);
        assert_eq!(schema["required"], serde_json::json!(["pattern"]));
    }

    #[test]
    fn describe_is_pattern_and_relative_dir() {
        let input = GlobInput {
            pattern: "**/*.rs".into(),
            path: Some("/p/src".into()),
        };
        assert_eq!(
            GlobTool.describe(&input, Path::new("/p")),
            "\"**/*.rs\" in src"
        );
    }
}
