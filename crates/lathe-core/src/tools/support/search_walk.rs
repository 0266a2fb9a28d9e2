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
//! - Files a Read of which would be denied or asked about (deny and ask
//!   rules, protected paths: [`ReadFilter`], handed over by the permission
//!   gate) are left out before anything reads them, and counted for the
//!   note the result ends with ([`left_out_note`]).
//!
//! Also the `TypedTool` pieces the two tools share for their optional
//! `path`: normalisation, the chat line and the permission preview, and
//! running the blocking search off the async runtime.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use ignore::overrides::{Override, OverrideBuilder};
use ignore::types::{Types, TypesBuilder};
use ignore::{DirEntry, WalkBuilder, WalkState};
use tokio_util::sync::CancellationToken;

use super::paths;
use super::search_unsaved::{self, UnsavedSet};
use crate::editor::UnsavedText;
use crate::permissions::{spell, Aliases, PermissionPreview, ReadAccess, ReadFilter, Spelled};
use crate::text::{fill, plural};
use crate::tools::{ToolError, ToolOutput};

/// Folder names of version control systems that are never walked below a
/// walk root (`.git`, Mercurial, Subversion, Jujutsu).
pub const VCS_DIRS: &[&str] = &[".git", ".hg", ".svn", ".jj"];

/// Note ending a search result when files were left out because reading
/// them asks (an ask rule, a protected path). `{files}` (`2 files`),
/// `{were}` (`was`/`were`), `{them}` (`it`/`them`), `{which}` (`it`/`one
/// of them`), `{list}` (their paths).
pub const SEARCH_LEFT_OUT_ASKS: &str = "{files} {were} left out because reading {them} needs the user's permission ({list}): Read {which} to ask the user.";

/// Note ending a search result when files were left out because a deny
/// rule covers them (their names are not shown). `{files}`, `{were}`,
/// `{them}`, `{rules}` (`Read(secret/**) from setup()`).
pub const SEARCH_LEFT_OUT_DENIED: &str = "{files} {were} left out because a permission rule denies reading {them} ({rules}). Do not try to read {them} another way; ask the user if you need {them}.";

/// The end of the `{list}` of [`SEARCH_LEFT_OUT_ASKS`] when it names only
/// the first few. `{count}`.
pub const SEARCH_LEFT_OUT_MORE: &str = "and {count} more";

/// How many left-out paths the note names.
const LEFT_OUT_NAMED: usize = 5;

/// A caller's own test of a file before the permission check (Glob: the
/// pattern), so only files it wants are counted as left out.
pub type Wanted = Arc<dyn Fn(&Path) -> bool + Send + Sync>;

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
    /// The caller's own test, applied before `readable`.
    pub wanted: Option<Wanted>,
    /// The permission check of each file (from gate 6); files it does not
    /// find free to read are left out and counted in [`LeftOut`].
    pub readable: Option<ReadFilter>,
    /// The editor's unsaved texts, taken at the start of the call: a file
    /// with one is visited with it, and buffers with no file yet are
    /// visited too ([`walk_files`]). `None`: the disk alone.
    pub unsaved: Option<Arc<UnsavedSet>>,
}

/// The walk ended early because the turn's token was cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;

/// The files a walk left out for permission, for [`left_out_note`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeftOut {
    /// How many ask (an ask rule or a protected path).
    pub asks: usize,
    /// The first of them by path, relative to the root when inside it.
    pub asks_named: BTreeSet<String>,
    /// How many a deny rule covers.
    pub denied: usize,
    /// The deny rules, as `Read(secret/**) from setup()`.
    pub deny_rules: BTreeSet<String>,
}

impl LeftOut {
    /// Counts the file at canonical `path` (root-relative names against the
    /// canonical `root`) as left out for `access`; a free file is ignored.
    pub fn record(&mut self, access: ReadAccess, path: &Path, root: &Path) {
        match access {
            ReadAccess::Free => {}
            ReadAccess::Asks(_) => {
                self.asks += 1;
                self.asks_named.insert(paths::display(root, path));
                if self.asks_named.len() > LEFT_OUT_NAMED {
                    self.asks_named.pop_last();
                }
            }
            ReadAccess::Denied(reason) => {
                self.denied += 1;
                let rule = match (&reason.rule, &reason.source) {
                    (Some(rule), Some(source)) => format!("{rule} from {source}"),
                    _ => reason.text.clone(),
                };
                self.deny_rules.insert(rule);
            }
        }
    }
}

/// The note a search result ends with when `left` is not empty: one line
/// for the files that ask ([`SEARCH_LEFT_OUT_ASKS`], naming the first
/// few), one for the denied ones ([`SEARCH_LEFT_OUT_DENIED`], naming the
/// rules, not the files).
pub fn left_out_note(left: &LeftOut) -> Option<String> {
    let forms = |n: usize| {
        let files = plural(n, "file", "files");
        let (were, them, which) = if n == 1 {
            ("was", "it", "it")
        } else {
            ("were", "them", "one of them")
        };
        (files, were, them, which)
    };
    let mut lines = Vec::new();
    if left.asks > 0 {
        let (files, were, them, which) = forms(left.asks);
        let mut list: Vec<String> = left.asks_named.iter().cloned().collect();
        if left.asks > list.len() {
            let more = (left.asks - list.len()).to_string();
            list.push(fill(SEARCH_LEFT_OUT_MORE, &[("count", &more)]));
        }
        lines.push(fill(
            SEARCH_LEFT_OUT_ASKS,
            &[
                ("files", &files),
                ("were", were),
                ("them", them),
                ("which", which),
                ("list", &list.join(", ")),
            ],
        ));
    }
    if left.denied > 0 {
        let (files, were, them, _) = forms(left.denied);
        let rules: Vec<&str> = left.deny_rules.iter().map(String::as_str).collect();
        lines.push(fill(
            SEARCH_LEFT_OUT_DENIED,
            &[
                ("files", &files),
                ("were", were),
                ("them", them),
                ("rules", &rules.join("; ")),
            ],
        ));
    }
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// `text`, then a blank line and `note` when there is one.
pub fn with_note(mut text: String, note: Option<&str>) -> String {
    if let Some(note) = note {
        text.push_str("\n\n");
        text.push_str(note);
    }
    text
}

/// Walks `spec.start` in parallel and calls a visitor for every regular
/// file that passes the ignore rules, the type and the glob filters,
/// `spec.wanted` and `spec.readable`, with the file's unsaved text when
/// `spec.unsaved` holds one (search that text, not the file). Then, on the
/// calling thread, the buffers of `spec.unsaved` whose file does not exist
/// yet, below the start, that pass the same filters (ignore files through
/// [`search_unsaved::ignored_by_files`]), as paths below `spec.start`.
/// `make_visitor` is called once per walker thread (so each thread can own
/// its buffers); a visitor returns `false` to stop the whole walk. Entries
/// that cannot be read (permission denied, vanished) are skipped silently,
/// as ripgrep does without `--debug`.
///
/// Returns the files `spec.readable` left out, or `Err(Cancelled)` when
/// `cancel` fired before the walk ended.
pub fn walk_files<M, V>(
    spec: &WalkSpec,
    cancel: &CancellationToken,
    make_visitor: M,
) -> Result<LeftOut, Cancelled>
where
    M: Fn() -> V,
    V: FnMut(&Path, Option<&Arc<UnsavedText>>) -> bool + Send,
{
    let stop = AtomicBool::new(false);
    let left = Mutex::new(LeftOut::default());
    let unsaved = spec.unsaved.as_deref().filter(|u| !u.is_empty());
    // Rules compare canonical paths; below the resolved start nothing is a
    // symlink (links are not followed), so a file's is the start's plus
    // the rest. Deny and ask rules also hold on the names the start goes
    // by (as written, through each link along it).
    let start_names = match &spec.readable {
        Some(filter) => Aliases::in_dirs(&[filter.root()]).apply(spell(&spec.start)),
        None => spell(&spec.start),
    };
    let canonical_start = start_names.real.clone();
    builder(spec).build_parallel().run(|| {
        let mut visit = make_visitor();
        let (stop, left, canonical_start) = (&stop, &left, &canonical_start);
        let start_names = &start_names;
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
            let path = entry.path();
            if spec.wanted.as_ref().is_some_and(|w| !w(path)) {
                return WalkState::Continue;
            }
            let canonical = (spec.readable.is_some() || unsaved.is_some()).then(|| {
                let rel = path.strip_prefix(&spec.start).unwrap_or(Path::new(""));
                canonical_start.join(rel)
            });
            if let (Some(filter), Some(canonical)) = (&spec.readable, &canonical) {
                let rel = path.strip_prefix(&spec.start).unwrap_or(Path::new(""));
                match filter.access_spelled(&start_names.below(rel)) {
                    ReadAccess::Free => {}
                    access => {
                        if let Ok(mut l) = left.lock() {
                            l.record(access, canonical, filter.root());
                        }
                        return WalkState::Continue;
                    }
                }
            }
            let text = unsaved
                .zip(canonical.as_deref())
                .and_then(|(u, c)| u.get(c));
            if visit(path, text) {
                WalkState::Continue
            } else {
                stop.store(true, Ordering::Relaxed);
                WalkState::Quit
            }
        })
    });
    if cancel.is_cancelled() {
        return Err(Cancelled);
    }
    let mut left = left.into_inner().unwrap_or_default();
    if let Some(unsaved) = unsaved {
        if !stop.load(Ordering::Relaxed) {
            visit_new_buffers(spec, unsaved, &start_names, &mut left, make_visitor());
        }
    }
    Ok(left)
}

/// The buffers of `unsaved` with no file yet that a walk of `spec` would
/// have met had they been written: below the start, not in a VCS folder,
/// within `max_depth`, through the type, glob and ignore-file filters,
/// `wanted` and `readable` (a file it does not find free is counted in
/// `left`). Each goes to `visit` as the path below `spec.start`.
fn visit_new_buffers<V>(
    spec: &WalkSpec,
    unsaved: &UnsavedSet,
    start_names: &Spelled,
    left: &mut LeftOut,
    mut visit: V,
) where
    V: FnMut(&Path, Option<&Arc<UnsavedText>>) -> bool,
{
    for (canonical, text) in unsaved.not_on_disk() {
        let Ok(rel) = canonical.strip_prefix(&start_names.real) else {
            continue;
        };
        // The start itself (a Grep of the new file) is never filtered, as
        // an explicit path is not in ripgrep.
        let below = !rel.as_os_str().is_empty();
        let path = if below {
            spec.start.join(rel)
        } else {
            spec.start.clone()
        };
        if below && !found_by_walk(spec, rel, &path) {
            continue;
        }
        if spec.wanted.as_ref().is_some_and(|w| !w(&path)) {
            continue;
        }
        if let Some(filter) = &spec.readable {
            match filter.access_spelled(&start_names.below(rel)) {
                ReadAccess::Free => {}
                access => {
                    left.record(access, canonical, filter.root());
                    continue;
                }
            }
        }
        if !visit(&path, Some(text)) {
            return;
        }
    }
}

/// `true` when a walk of `spec` would reach `path` (`rel` below the start)
/// had the file been written: not in a VCS folder, within `max_depth`,
/// through the type and glob filters and the ignore files.
fn found_by_walk(spec: &WalkSpec, rel: &Path, path: &Path) -> bool {
    let dirs = rel.parent().map(Path::components).into_iter().flatten();
    if dirs
        .filter_map(|c| c.as_os_str().to_str())
        .any(|c| VCS_DIRS.contains(&c))
    {
        return false;
    }
    if spec.max_depth.is_some_and(|d| rel.components().count() > d) {
        return false;
    }
    if spec
        .types
        .as_ref()
        .is_some_and(|t| t.matched(path, false).is_ignore())
    {
        return false;
    }
    let listed = match spec.overrides.as_ref().map(|o| o.matched(path, false)) {
        Some(m) if m.is_ignore() => return false,
        Some(m) => m.is_whitelist(),
        None => false,
    };
    listed || !search_unsaved::ignored_by_files(path)
}

/// `true` when the ignore files (`.gitignore`, `.ignore`, `.rgignore`,
/// git's excludes) leave out at least one file below `spec.start` that a
/// walk of `spec` would otherwise visit (through its types, globs, depth
/// and `wanted`; its permission check is not asked). Two walks that only
/// count, run when a search found nothing, so that its message names the
/// ignore files only when they did leave something out; `false` when
/// `cancel` fires.
pub fn ignore_files_left_out(spec: &WalkSpec, cancel: &CancellationToken) -> bool {
    let count = |ignores: bool, stop_past: usize| -> Option<usize> {
        let mut n = 0usize;
        for entry in builder_with(spec, ignores).build() {
            if cancel.is_cancelled() {
                return None;
            }
            let Ok(entry) = entry else { continue };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            if spec.wanted.as_ref().is_some_and(|w| !w(entry.path())) {
                continue;
            }
            n += 1;
            if n > stop_past {
                break;
            }
        }
        Some(n)
    };
    let Some(kept) = count(true, usize::MAX) else {
        return false;
    };
    count(false, kept).is_some_and(|all| all > kept)
}

fn builder(spec: &WalkSpec) -> WalkBuilder {
    builder_with(spec, true)
}

/// The walk of `spec`, reading the ignore files when `ignores`.
fn builder_with(spec: &WalkSpec, ignores: bool) -> WalkBuilder {
    let mut b = WalkBuilder::new(&spec.start);
    b.hidden(false)
        .parents(ignores)
        .ignore(ignores)
        .git_ignore(ignores)
        .git_global(ignores)
        .git_exclude(ignores)
        .require_git(false)
        .follow_links(false)
        .max_depth(spec.max_depth)
        .filter_entry(|e| e.depth() == 0 || !is_vcs_dir(e));
    if ignores {
        b.add_custom_ignore_filename(".rgignore");
    }
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

/// Gate 3 of the `path` both searches take (Grep's and Glob's input):
/// [`resolve_search_path`], so a normalised search always names its folder.
pub fn normalize_search_path(root: &Path, path: &mut Option<String>) {
    *path = Some(resolve_search_path(root, path.as_deref()));
}

/// The target of a search for permission rules: its (normalised) `path`.
pub fn search_target(path: Option<&str>) -> Option<PathBuf> {
    path.map(PathBuf::from)
}

/// How the project root is named in messages.
pub const PROJECT_ROOT_NAME: &str = "the project root";

/// Where a search looked, for messages: [`PROJECT_ROOT_NAME`] for the
/// root, else `search` relative to `root` when inside it.
pub fn search_place(root: &Path, search: &Path) -> String {
    if search == root {
        PROJECT_ROOT_NAME.to_string()
    } else {
        paths::display(root, search)
    }
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
    fn golden_left_out_texts() {
        assert_eq!(
            SEARCH_LEFT_OUT_ASKS,
            "{files} {were} left out because reading {them} needs the user's permission ({list}): Read {which} to ask the user."
        );
        assert_eq!(
            SEARCH_LEFT_OUT_DENIED,
            "{files} {were} left out because a permission rule denies reading {them} ({rules}). Do not try to read {them} another way; ask the user if you need {them}."
        );
        assert_eq!(SEARCH_LEFT_OUT_MORE, "and {count} more");
    }

    #[test]
    fn the_left_out_note_names_files_that_ask_and_rules_that_deny() {
        assert_eq!(left_out_note(&LeftOut::default()), None);
        let one = LeftOut {
            asks: 1,
            asks_named: [".env".to_string()].into(),
            ..LeftOut::default()
        };
        assert_eq!(
            left_out_note(&one).as_deref(),
            Some("1 file was left out because reading it needs the user's permission (.env): Read it to ask the user.")
        );
        let many = LeftOut {
            asks: 7,
            asks_named: (1..=5).map(|i| format!("n/{i}.md")).collect(),
            denied: 2,
            deny_rules: ["Read(secret/**) from setup()".to_string()].into(),
        };
        assert_eq!(
            left_out_note(&many).as_deref(),
            Some("7 files were left out because reading them needs the user's permission (n/1.md, n/2.md, n/3.md, n/4.md, n/5.md, and 2 more): Read one of them to ask the user.\n2 files were left out because a permission rule denies reading them (Read(secret/**) from setup()). Do not try to read them another way; ask the user if you need them.")
        );
    }

    #[test]
    fn the_walk_leaves_out_what_the_read_filter_does_not_find_free() {
        use crate::permissions::{Rule, RuleBase, RuleKind, RuleSource, Rules};
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        for rel in [".env", "secret/s.txt", "src/a.rs"] {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, "x").expect("write");
        }
        let mut rules = Rules::default();
        let rule = Rule::parse("Read(secret/**)", &RuleBase::at_root(&root, None)).expect("rule");
        rules.push(RuleKind::Deny, rule, RuleSource::Setup);
        let spec = WalkSpec {
            start: root.clone(),
            types: None,
            overrides: None,
            max_depth: None,
            wanted: None,
            readable: Some(ReadFilter::new(
                rules,
                ("Grep", crate::permissions::RuleFamily::ReadPath),
                &root,
            )),
            unsaved: None,
        };
        let seen = Mutex::new(Vec::new());
        let left = walk_files(&spec, &CancellationToken::new(), || {
            let (seen, root) = (&seen, &root);
            move |p: &Path, _: Option<&Arc<UnsavedText>>| {
                if let Ok(mut v) = seen.lock() {
                    v.push(p.strip_prefix(root).expect("inside").display().to_string());
                }
                true
            }
        })
        .expect("not cancelled");
        assert_eq!(seen.into_inner().expect("lock"), ["src/a.rs"]);
        assert_eq!(left.asks, 1);
        assert_eq!(left.asks_named, [".env".to_string()].into());
        assert_eq!(left.denied, 1);
        assert_eq!(
            left.deny_rules,
            ["Read(secret/**) from setup()".to_string()].into()
        );
    }

    /// Without Neovim: a modified file is visited with its unsaved text, a
    /// buffer never written is visited after the walk unless the ignore
    /// files, a VCS folder or the type filter would have kept it out.
    #[test]
    fn the_walk_visits_unsaved_texts_and_buffers_never_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        std::fs::write(root.join(".gitignore"), "build/\n").expect("write");
        std::fs::write(root.join("a.rs"), "on disk\n").expect("write");
        let text = |rel: &str, on_disk: bool| UnsavedText {
            path: root.join(rel),
            text: format!("{rel} typed\n"),
            changedtick: 3,
            on_disk,
        };
        let unsaved = UnsavedSet::resolve(vec![
            text("a.rs", true),
            text("new/b.rs", false),
            text("build/c.rs", false),
            text(".git/d.rs", false),
            text("e.py", false),
        ]);
        let spec = WalkSpec {
            start: root.clone(),
            types: Some(select_type("rust").expect("rust")),
            overrides: None,
            max_depth: None,
            wanted: None,
            readable: None,
            unsaved: Some(Arc::new(unsaved)),
        };
        let seen = Mutex::new(Vec::new());
        walk_files(&spec, &CancellationToken::new(), || {
            let (seen, root) = (&seen, &root);
            move |p: &Path, t: Option<&Arc<UnsavedText>>| {
                let rel = p.strip_prefix(root).expect("inside").display().to_string();
                if let Ok(mut v) = seen.lock() {
                    v.push((rel, t.map(|t| t.text.clone())));
                }
                true
            }
        })
        .expect("not cancelled");
        let mut seen = seen.into_inner().expect("lock");
        seen.sort();
        assert_eq!(
            seen,
            [
                ("a.rs".to_string(), Some("a.rs typed\n".to_string())),
                ("new/b.rs".to_string(), Some("new/b.rs typed\n".to_string())),
            ]
        );
    }

    #[test]
    fn bad_glob_reports_the_glob_and_the_problem() {
        let (glob, msg) =
            build_overrides(Path::new("/p"), &["*.{rs".to_string()]).expect_err("unclosed brace");
        assert_eq!(glob, "*.{rs");
        assert!(msg.contains("unclosed"), "{msg}");
    }
}
