//! The file walk shared by Grep and Glob: ripgrep's rules through the
//! `ignore` crate, so lathe sees the same files `rg` would.
//!
//! - `.gitignore`, `.ignore`, `.rgignore`, `.git/info/exclude` and the global
//!   git excludes are honoured, also when the directory is not a git
//!   repository (`require_git(false)`, like `rg --no-require-git`: a fresh
//!   project folder with a `.gitignore` behaves as users expect).
//! - Hidden files and folders are walked (`rg --hidden`); the folders of
//!   version control systems ([`VCS_DIRS`]) never are.
//! - The walk roots themselves are never filtered (ripgrep's rule for
//!   explicit paths): a path into an ignored or hidden folder is walked.
//! - Symbolic links are not followed (ripgrep's default).
//! - The walk is parallel and stops early when the turn is cancelled.
//!
//! Also the `TypedTool` pieces the two tools share for their optional
//! `path`: normalisation, the chat line and the permission preview, and
//! running the blocking search off the async runtime.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use ignore::overrides::{Override, OverrideBuilder};
use ignore::types::{Types, TypesBuilder};
use ignore::{DirEntry, WalkBuilder, WalkState};
use tokio_util::sync::CancellationToken;

use super::{paths, ToolError, ToolOutput};
use crate::permissions::PermissionPreview;
use crate::text::fill;

/// Folder names of version control systems that are never walked below a
/// walk root (`.git`, Mercurial, Subversion, Jujutsu).
pub const VCS_DIRS: &[&str] = &[".git", ".hg", ".svn", ".jj"];

/// What to walk and which files to keep.
#[derive(Clone)]
pub struct WalkSpec {
    /// The directory or file to walk (absolute).
    pub start: PathBuf,
    /// `--type` selection from ripgrep's type table, if any.
    pub types: Option<Types>,
    /// `--glob` overrides, if any.
    pub overrides: Option<Override>,
    /// Deepest level to descend to below `start` (`1` = its entries only);
    /// `None` = no limit.
    pub max_depth: Option<usize>,
}

/// The walk ended early because the turn's token was cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;

/// Walks `spec.start` in parallel and calls a visitor for every regular
/// file that passes the ignore rules, the type and the glob filters.
/// `make_visitor` is called once per walker thread (so each thread can own
/// its buffers); a visitor returns `false` to stop the whole walk. Entries
/// that cannot be read (permission denied, vanished) are skipped silently,
/// as ripgrep does without `--debug`.
///
/// Returns `Err(Cancelled)` when `cancel` fired before the walk ended.
pub fn walk_files<M, V>(
    spec: &WalkSpec,
    cancel: &CancellationToken,
    make_visitor: M,
) -> Result<(), Cancelled>
where
    M: Fn() -> V,
    V: FnMut(&Path) -> bool + Send,
{
    let stop = AtomicBool::new(false);
    builder(spec).build_parallel().run(|| {
        let mut visit = make_visitor();
        let stop = &stop;
        Box::new(move |entry: Result<DirEntry, ignore::Error>| {
            if cancel.is_cancelled() || stop.load(Ordering::Relaxed) {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            if visit(entry.path()) {
                WalkState::Continue
            } else {
                stop.store(true, Ordering::Relaxed);
                WalkState::Quit
            }
        })
    });
    if cancel.is_cancelled() {
        Err(Cancelled)
    } else {
        Ok(())
    }
}

fn builder(spec: &WalkSpec) -> WalkBuilder {
    let mut b = WalkBuilder::new(&spec.start);
    b.hidden(false)
        .parents(true)
        .ignore(true)
        .git_ignore(true)
        .git_global(true)
        .git_exclude(true)
        .require_git(false)
        .follow_links(false)
        .add_custom_ignore_filename(".rgignore")
        .max_depth(spec.max_depth)
        .filter_entry(|e| e.depth() == 0 || !is_vcs_dir(e));
    if let Some(types) = &spec.types {
        b.types(types.clone());
    }
    if let Some(overrides) = &spec.overrides {
        b.overrides(overrides.clone());
    }
    b
}

fn is_vcs_dir(entry: &DirEntry) -> bool {
    entry.file_type().is_some_and(|t| t.is_dir())
        && entry
            .file_name()
            .to_str()
            .is_some_and(|name| VCS_DIRS.contains(&name))
}

/// The modification time of `path`, or the Unix epoch when unknown (such
/// files sort as oldest).
pub fn mtime(path: &Path) -> SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// Sorts `(path, mtime)` pairs newest first; equal times by path ascending
/// so the order is stable across runs (Claude Code's Grep/Glob ordering).
pub fn sort_newest_first(items: &mut [(PathBuf, SystemTime)]) {
    items.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
}

/// ripgrep's type table selecting only `name` (`rg --type name`).
///
/// Errors: `Err(examples)` when the name is unknown, with a comma-separated
/// list of valid names to show the model (common ones first, then names
/// that share the first letter).
pub fn select_type(name: &str) -> Result<Types, String> {
    let mut b = TypesBuilder::new();
    b.add_defaults();
    let known = b.definitions();
    if !known.iter().any(|d| d.name() == name) {
        return Err(type_examples(name, known.iter().map(|d| d.name())));
    }
    b.select(name);
    b.build().map_err(|e| e.to_string())
}

/// Type names shown first when a `type` is unknown: the languages models ask
/// for most often.
const COMMON_TYPES: &[&str] = &[
    "rust", "py", "js", "ts", "go", "java", "c", "cpp", "rb", "php", "sh", "lua", "md", "json",
    "yaml", "toml", "html", "css",
];

fn type_examples<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> String {
    let known: Vec<&str> = known.collect();
    let mut out: Vec<&str> = COMMON_TYPES
        .iter()
        .copied()
        .filter(|c| known.contains(c))
        .collect();
    let lower = name.to_ascii_lowercase();
    let first = lower.chars().next();
    let similar: Vec<&str> = known
        .iter()
        .copied()
        .filter(|k| {
            !out.contains(k)
                && (lower.contains(*k) && k.len() > 1
                    || k.contains(lower.as_str())
                    || first.is_some_and(|f| k.starts_with(f)) && k.len() <= 4)
        })
        .take(8)
        .collect();
    out.extend(similar);
    out.join(", ")
}

/// Splits the `glob` parameter into single globs: on whitespace and on
/// commas outside `{…}` (`"*.ts, *.tsx"`, `"*.{ts,tsx} !*.d.ts"`), as
/// Claude Code's Grep does for `rg --glob`.
pub fn split_globs(input: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    for ch in input.chars() {
        match ch {
            '{' => {
                depth += 1;
                cur.push(ch);
            }
            '}' => {
                depth = depth.saturating_sub(1);
                cur.push(ch);
            }
            ',' if depth == 0 => out.push(std::mem::take(&mut cur)),
            c if c.is_whitespace() && depth == 0 => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out.retain(|g| !g.is_empty());
    out
}

/// `rg --glob` overrides for `globs`, matched relative to `base` with
/// gitignore semantics (a glob without `/` matches the file name at any
/// depth; `!glob` excludes).
///
/// Errors: `Err((glob, message))` for the first glob that does not parse.
pub fn build_overrides(base: &Path, globs: &[String]) -> Result<Override, (String, String)> {
    let mut b = OverrideBuilder::new(base);
    for g in globs {
        b.add(g).map_err(|e| (g.clone(), glob_error_text(&e)))?;
    }
    b.build()
        .map_err(|e| (globs.join(" "), glob_error_text(&e)))
}

/// The message of an `ignore` glob error without the file/line decoration.
fn glob_error_text(e: &ignore::Error) -> String {
    match e {
        ignore::Error::Glob { err, .. } => err.clone(),
        other => other.to_string(),
    }
}

/// Gate 3 for the optional `path` of Grep and Glob: the directory or file
/// to search, absolute. A missing or blank `path`, or the strings
/// `"undefined"` and `"null"` (what models send for "no path"), mean `root`;
/// anything else is resolved against `root` by [`paths::resolve`]. Pure, no
/// I/O.
pub fn resolve_search_path(root: &Path, path: Option<&str>) -> String {
    let path = match path {
        Some(p) if !p.trim().is_empty() && p != "undefined" && p != "null" => {
            paths::resolve(root, p)
        }
        _ => root.to_path_buf(),
    };
    path.display().to_string()
}

/// The chat's short line for a search for `pattern` (as it should be shown,
/// already shortened) in the absolute `path`: `"pattern"` when the search
/// covers the project `root` (or has no path), else `"pattern" in dir` with
/// `dir` relative to `root` when inside it.
pub fn describe_search(pattern: &str, path: Option<&str>, root: &Path) -> String {
    let where_ = path.and_then(|p| {
        let p = Path::new(p);
        (p != root).then(|| paths::display(root, p))
    });
    match where_ {
        Some(w) => format!("\"{pattern}\" in {w}"),
        None => format!("\"{pattern}\""),
    }
}

/// The permission prompt's view of a search: title `{tool} {described}`
/// (`described` from [`describe_search`]), the searched `path` as the target
/// and no diff (a search changes nothing).
pub fn search_preview(tool: &str, path: Option<&str>, described: &str) -> PermissionPreview {
    PermissionPreview {
        path: path.map(PathBuf::from),
        title: format!("{tool} {described}"),
        ..PermissionPreview::default()
    }
}

/// Runs the blocking search `job` on tokio's blocking pool and returns its
/// result. Errors: the job's own error, or `failed` with `{error}` filled in
/// when the job's thread panicked or was cancelled by the runtime.
pub async fn run_blocking<F>(job: F, failed: &str) -> Result<ToolOutput, ToolError>
where
    F: FnOnce() -> Result<ToolOutput, ToolError> + Send + 'static,
{
    tokio::task::spawn_blocking(job)
        .await
        .map_err(|e| ToolError::new(fill(failed, &[("error", &e.to_string())])))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_globs_on_spaces_and_commas_outside_braces() {
        assert_eq!(split_globs("*.ts, *.tsx"), vec!["*.ts", "*.tsx"]);
        assert_eq!(
            split_globs("*.{ts,tsx} !*.d.ts"),
            vec!["*.{ts,tsx}", "!*.d.ts"]
        );
        assert_eq!(split_globs("  "), Vec::<String>::new());
    }

    #[test]
    fn unknown_type_lists_common_and_similar_names() {
        let err = select_type("klingon").expect_err("klingon is not a ripgrep type");
        assert!(err.starts_with("rust, py, js, ts, go"), "{err}");
        assert!(select_type("rust").is_ok());
    }

    #[test]
    fn bad_glob_reports_the_glob_and_the_problem() {
        let (glob, msg) =
            build_overrides(Path::new("/p"), &["*.{rs".to_string()]).expect_err("unclosed brace");
        assert_eq!(glob, "*.{rs");
        assert!(msg.contains("unclosed"), "{msg}");
    }
}
