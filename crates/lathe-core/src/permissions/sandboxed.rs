//! Which existing paths a sandboxed command cannot open
//! (docs/sandbox.md, "The sandbox"): what a Read deny rule covers,
//! what a Read ask rule or a secret protected name covers (`.env*`,
//! `.claude/settings*.json`) unless the user just approved that very ask,
//! and `sandbox.filesystem.denyRead`. The sandbox mounts something empty
//! and unreadable over each, so a command the parser misjudged still cannot
//! read them.
//!
//! I/O: walks the project (and the other folders rules name) once per
//! sandboxed command, by file names only (`d_type`, no `stat`); a folder
//! that is hidden is not walked further. `.git` folders are readable (git
//! needs them) and walked only when some Read rule could cover a path in
//! them.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use super::read_access::{LinkedHidden, ReadFilter};
use super::{covers, Reason, ReasonKind, RuleKind, Rules, READ};
use crate::permissions::ReadAccess;

/// How many folder entries [`hidden_paths`] looks at before it gives up
/// (the command then cannot run in the sandbox without asking).
pub const HIDE_CHECK_LIMIT: usize = 200_000;

/// The error text when the walk passes [`HIDE_CHECK_LIMIT`]. `{limit}`,
/// `{root}`.
pub const HIDE_TOO_MANY: &str =
    "more than {limit} files and folders under {root} would have to be checked for paths the sandbox must hide";

/// The existing paths (canonical) a sandboxed command run for `root`
/// (canonical) must not open under `rules`. `approved` is the ask the user
/// just answered for this call, if any: paths that ask for that same
/// reason stay readable. Errors: `HIDE_TOO_MANY`.
pub fn hidden_paths(
    rules: &Rules,
    root: &Path,
    approved: Option<&Reason>,
) -> Result<Vec<PathBuf>, String> {
    hidden_paths_within(rules, root, approved, HIDE_CHECK_LIMIT)
}

/// [`hidden_paths`] looking at no more than `limit` entries.
fn hidden_paths_within(
    rules: &Rules,
    root: &Path,
    approved: Option<&Reason>,
    limit: usize,
) -> Result<Vec<PathBuf>, String> {
    let mut filter = ReadFilter::new(rules.clone(), READ, root);
    if let Some(reason) = approved {
        filter = filter.approving(reason.clone());
    }
    let by_rules = rules.entries.iter().any(|r| {
        matches!(r.kind, RuleKind::Deny | RuleKind::Ask)
            && covers(r.rule.tool_name(), READ.0, READ.1)
    });
    let mut walk = Walk {
        filter: &filter,
        by_rules,
        seen: 0,
        limit,
        hidden: Vec::new(),
    };
    let mut starts = vec![root.to_path_buf()];
    starts.extend(rules.additional_dirs.iter().cloned());
    starts.extend(rule_starts(rules)?);
    starts.sort();
    starts.dedup();
    // A start inside another start is walked with it.
    let outer: Vec<PathBuf> = starts
        .iter()
        .filter(|s| !starts.iter().any(|o| o != *s && s.starts_with(o)))
        .cloned()
        .collect();
    for start in &outer {
        walk.visit(start, root)?;
    }
    for p in &rules.sandbox.deny_read {
        if p.exists() && !walk.hidden.iter().any(|h| p.starts_with(h)) {
            walk.hidden.push(p.clone());
        }
    }
    walk.other_links(&outer, root)?;
    Ok(walk.hidden)
}

/// The hidden files (by device and inode) that have more than one name,
/// with their hidden names (the walk hides every name it finds): what another name of such a file meets
/// is what that name meets (Read of a hard link to `.env` asks as `.env`
/// does). Empty when the hidden paths cannot be found (the call asks for
/// that reason anyway when it runs a command).
pub fn linked_hidden(rules: &Rules, root: &Path) -> LinkedHidden {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(hidden) = hidden_paths(rules, root, None) else {
        return HashMap::new();
    };
    let mut out = HashMap::new();
    let mut stack = hidden;
    while let Some(path) = stack.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            stack.extend(entries_of(&path).iter().map(|(n, _)| path.join(n)));
        } else if meta.is_file() && meta.nlink() > 1 {
            out.entry((meta.dev(), meta.ino()))
                .or_insert_with(Vec::new)
                .push(path);
        }
    }
    out
}

/// The error text when a hidden file has hard links the walk did not
/// find (they are outside every folder it looks in). `{path}`, `{links}`.
pub const HIDE_LINK_ELSEWHERE: &str =
    "{path} has {links} hard links and not all of them are in folders lathe checks, so the sandbox cannot hide its content under its other names";

/// The error text when a Read deny or ask rule covers paths in every
/// folder of the file system (`//**/x`): the sandbox hides what it finds
/// by walking folders, and it does not walk them all. `{rule}`.
pub const HIDE_RULE_EVERYWHERE: &str =
    "{rule} covers files in every folder of the file system, and the sandbox can hide only what it finds in the folders it walks; a rule written for a folder (under // or ~/) can be held";

/// The folders (or files) named by the literal start of Read deny and ask
/// rules written as absolute (`//abs/…`) or home (`~/…`) patterns: those
/// outside the project are walked too. Errors: [`HIDE_RULE_EVERYWHERE`]
/// for a rule whose pattern starts at `/` (never walked whole).
fn rule_starts(rules: &Rules) -> Result<Vec<PathBuf>, String> {
    let home = dirs::home_dir();
    let mut out = Vec::new();
    for r in rules
        .entries
        .iter()
        .filter(|r| matches!(r.kind, RuleKind::Deny | RuleKind::Ask))
        .filter(|r| covers(r.rule.tool_name(), READ.0, READ.1))
    {
        let Some(spec) = r.rule.specifier() else {
            continue;
        };
        let path = if let Some(abs) = spec.strip_prefix("//") {
            PathBuf::from("/").join(abs)
        } else if let Some(rest) = spec.strip_prefix("~/") {
            match &home {
                Some(h) => h.join(rest),
                None => continue,
            }
        } else {
            continue;
        };
        let literal: PathBuf = path
            .components()
            .take_while(|c| {
                !c.as_os_str()
                    .to_string_lossy()
                    .contains(['*', '?', '[', '{'])
            })
            .collect();
        if literal.components().count() <= 1 {
            return Err(crate::text::fill(
                HIDE_RULE_EVERYWHERE,
                &[("rule", &r.rule.to_string())],
            ));
        }
        let start = super::resolve_for_rules(&literal);
        if start.exists() {
            out.push(start);
        }
    }
    Ok(out)
}

/// A name no real entry has: asking about `folder/ANY_ENTRY` tells
/// whether a rule covers every entry of the folder.
const ANY_ENTRY: &str = ".lathe-any-entry-6b1d";

/// One walk's state.
struct Walk<'a> {
    filter: &'a ReadFilter,
    /// Some Read deny or ask rule exists: every entry is checked, not only
    /// protected names.
    by_rules: bool,
    seen: usize,
    /// Entries looked at, at most.
    limit: usize,
    hidden: Vec<PathBuf>,
}

impl Walk<'_> {
    /// Checks `start` and everything below it (depth first, symlinks not
    /// followed), adding what must be hidden.
    fn visit(&mut self, start: &Path, root: &Path) -> Result<(), String> {
        let mut stack = vec![(start.to_path_buf(), start.is_dir())];
        while let Some((path, is_dir)) = stack.pop() {
            self.seen += 1;
            if self.seen > self.limit {
                return Err(crate::text::fill(
                    HIDE_TOO_MANY,
                    &[
                        ("limit", &self.limit.to_string()),
                        ("root", &root.display().to_string()),
                    ],
                ));
            }
            if self.must_hide(&path) {
                self.hidden.push(path);
                continue;
            }
            // A folder (or a link to one) whose every entry a rule covers
            // (`Read(./secret/**)`) is hidden whole: what a command puts
            // in it later (a checkout, an unpacked archive) is covered
            // too, and through a link the rule is written on, the folder
            // it leads to (the walk does not follow links).
            let leads_to_dir = is_dir || (self.by_rules && path.is_dir());
            if leads_to_dir && self.by_rules && self.must_hide(&path.join(ANY_ENTRY)) {
                self.hidden.push(path);
                continue;
            }
            let is_git = path.file_name().is_some_and(|n| n == ".git");
            if !is_dir || (is_git && !self.by_rules) {
                continue;
            }
            for (name, dir) in entries_of(&path).iter() {
                stack.push((path.join(name), *dir));
            }
        }
        Ok(())
    }

    /// Hides the other names of each hidden file that has more than one
    /// (a hard link made before lathe ran: `ln .env notes.txt`; the
    /// sandbox itself cannot make one, a link across its covers fails).
    /// A cover is mounted over a name, and the content is the inode's:
    /// every name must be covered. Costs a `stat` per file below `starts`,
    /// only when some hidden file (or a file in a hidden folder) has
    /// links. Errors: [`HIDE_LINK_ELSEWHERE`] when not every name is found.
    fn other_links(&mut self, starts: &[PathBuf], root: &Path) -> Result<(), String> {
        use std::collections::HashSet;
        use std::os::unix::fs::MetadataExt as _;
        // (dev, ino) → (a hidden name, its link count).
        let mut linked: HashMap<(u64, u64), (PathBuf, u64)> = HashMap::new();
        let mut stack: Vec<PathBuf> = self.hidden.clone();
        while let Some(path) = stack.pop() {
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                self.seen += 1;
                if self.seen > self.limit {
                    return Err(self.too_many(root));
                }
                stack.extend(entries_of(&path).iter().map(|(n, _)| path.join(n)));
            } else if meta.is_file() && meta.nlink() > 1 {
                linked.insert((meta.dev(), meta.ino()), (path, meta.nlink()));
            }
        }
        if linked.is_empty() {
            return Ok(());
        }
        let mut found: HashMap<(u64, u64), HashSet<PathBuf>> = HashMap::new();
        let mut stack: Vec<PathBuf> = starts.to_vec();
        while let Some(path) = stack.pop() {
            self.seen += 1;
            if self.seen > self.limit {
                return Err(self.too_many(root));
            }
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                stack.extend(entries_of(&path).iter().map(|(n, _)| path.join(n)));
            } else if meta.is_file() && linked.contains_key(&(meta.dev(), meta.ino())) {
                found
                    .entry((meta.dev(), meta.ino()))
                    .or_default()
                    .insert(path);
            }
        }
        for (key, (name, links)) in &linked {
            let names = found.remove(key).unwrap_or_default();
            if (names.len() as u64) < *links {
                return Err(crate::text::fill(
                    HIDE_LINK_ELSEWHERE,
                    &[
                        ("path", &name.display().to_string()),
                        ("links", &links.to_string()),
                    ],
                ));
            }
            for other in names {
                if !self.hidden.iter().any(|h| other.starts_with(h)) {
                    self.hidden.push(other);
                }
            }
        }
        Ok(())
    }

    /// [`HIDE_TOO_MANY`], filled.
    fn too_many(&self, root: &Path) -> String {
        crate::text::fill(
            HIDE_TOO_MANY,
            &[
                ("limit", &self.limit.to_string()),
                ("root", &root.display().to_string()),
            ],
        )
    }

    /// `true` when reading `path` is not free: a deny rule, or an ask (a
    /// rule or a secret protected name) the user did not just approve.
    /// `.git` stays readable unless a rule covers it.
    fn must_hide(&self, path: &Path) -> bool {
        if !self.by_rules && !secret_name(path) {
            return false;
        }
        match self.filter.access(path) {
            ReadAccess::Free => false,
            ReadAccess::Denied(_) => true,
            ReadAccess::Asks(r) => !(r.kind == ReasonKind::Protected && in_git(path)),
        }
    }
}

/// The entries of one folder the walk read, with the folder's mtime then.
type Listing = (SystemTime, Arc<[(OsString, bool)]>);

/// Folders listed before, by path: a folder whose mtime has not changed
/// has the same entries (adding, removing or renaming one changes it), so
/// the next command's walk costs a `stat` per folder instead of a
/// `readdir`. A folder changed within the last second is read again (the
/// clock may not have moved). Bounded: cleared past
/// [`LISTING_CACHE_LIMIT`] entries.
static LISTINGS: Mutex<Option<(HashMap<PathBuf, Listing>, usize)>> = Mutex::new(None);

/// Entries the listing cache holds at most.
const LISTING_CACHE_LIMIT: usize = 400_000;

/// The entries of the folder `dir` (name, is a folder; links are not
/// followed), from [`LISTINGS`] when it has not changed.
fn entries_of(dir: &Path) -> Arc<[(OsString, bool)]> {
    let mtime = std::fs::symlink_metadata(dir)
        .and_then(|m| m.modified())
        .ok();
    let settled = mtime.filter(|t| {
        SystemTime::now()
            .duration_since(*t)
            .is_ok_and(|age| age >= Duration::from_secs(1))
    });
    if let Some(t) = settled {
        let cache = LISTINGS.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, entries)) = cache.as_ref().and_then(|(c, _)| c.get(dir)) {
            if *at == t {
                return entries.clone();
            }
        }
    }
    let entries: Arc<[(OsString, bool)]> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .flatten()
            .map(|e| (e.file_name(), e.file_type().is_ok_and(|t| t.is_dir())))
            .collect(),
        Err(_) => return Arc::from(Vec::new()),
    };
    if let Some(t) = settled {
        let mut cache = LISTINGS.lock().unwrap_or_else(|p| p.into_inner());
        let (map, held) = cache.get_or_insert_with(|| (HashMap::new(), 0));
        if *held + entries.len() > LISTING_CACHE_LIMIT {
            map.clear();
            *held = 0;
        }
        *held += entries.len();
        map.insert(dir.to_path_buf(), (t, entries.clone()));
    }
    entries
}

/// `true` for the protected names whose content is secret or grants
/// permissions: `.env*`, `.claude/settings*.json`.
fn secret_name(path: &Path) -> bool {
    // Without regard to case, as the permission gate's protected names
    // (`.Env` asks there, so it is hidden here too).
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let in_claude = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|n| n.to_string_lossy().to_lowercase() == ".claude");
    name.starts_with(".env")
        || (in_claude && name.starts_with("settings") && name.ends_with(".json"))
}

/// `true` when a component of `path` is `.git`.
fn in_git(path: &Path) -> bool {
    path.components().any(|c| c.as_os_str() == ".git")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permissions::{Mode, Rule, RuleBase, RuleSource};
    use std::fs;

    fn rules(root: &Path, list: &[(RuleKind, &str)]) -> Rules {
        let base = RuleBase::at_root(root, None);
        let mut r = Rules {
            mode: Mode::Default,
            ..Rules::default()
        };
        for (kind, text) in list {
            r.push(*kind, Rule::parse(text, &base).unwrap(), RuleSource::Setup);
        }
        r
    }

    fn project() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        for f in [
            "src/main.rs",
            "secret/s.txt",
            "secret/deep/t.txt",
            ".env",
            "app/.env.local",
            ".git/config",
            ".claude/settings.local.json",
            "notes/n.txt",
        ] {
            let p = root.join(f);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(&p, "x").unwrap();
        }
        (dir, root)
    }

    fn shown(root: &Path, hidden: &[PathBuf]) -> Vec<String> {
        let mut v: Vec<String> = hidden
            .iter()
            .map(|p| p.strip_prefix(root).unwrap().display().to_string())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn secrets_and_rule_paths_are_hidden_git_is_not() {
        let (_d, root) = project();
        let none = hidden_paths(&rules(&root, &[]), &root, None).unwrap();
        assert_eq!(
            shown(&root, &none),
            [".claude/settings.local.json", ".env", "app/.env.local"]
        );
        let r = rules(
            &root,
            &[
                (RuleKind::Deny, "Read(./secret/**)"),
                (RuleKind::Ask, "Read(notes/n.txt)"),
            ],
        );
        let with = hidden_paths(&r, &root, None).unwrap();
        assert_eq!(
            shown(&root, &with),
            [
                ".claude/settings.local.json",
                ".env",
                "app/.env.local",
                "notes/n.txt",
                "secret"
            ]
        );
    }

    #[test]
    fn an_approved_ask_stays_readable_a_deny_never_does() {
        let (_d, root) = project();
        let r = rules(&root, &[(RuleKind::Deny, "Read(./secret/**)")]);
        let approved =
            match crate::permissions::read_access(&r, READ, &root.join(".env"), false, &root) {
                ReadAccess::Asks(reason) => reason,
                other => panic!("{other:?}"),
            };
        let hidden = hidden_paths(&r, &root, Some(&approved)).unwrap();
        let shown = shown(&root, &hidden);
        assert!(!shown.contains(&".env".to_string()), "{shown:?}");
        assert!(shown.contains(&"secret".to_string()), "{shown:?}");
    }

    #[test]
    fn absolute_rules_outside_the_project_and_deny_read_settings() {
        let (_d, root) = project();
        let outside = tempfile::tempdir().unwrap();
        let out = fs::canonicalize(outside.path()).unwrap();
        fs::write(out.join("key.pem"), "k").unwrap();
        fs::write(out.join("ok.txt"), "k").unwrap();
        let mut r = rules(
            &root,
            &[(RuleKind::Deny, &format!("Read(/{}/*.pem)", out.display()))],
        );
        r.sandbox.deny_read = vec![root.join("src")];
        let hidden = hidden_paths(&r, &root, None).unwrap();
        assert!(hidden.contains(&out.join("key.pem")), "{hidden:?}");
        assert!(!hidden.contains(&out.join("ok.txt")), "{hidden:?}");
        assert!(hidden.contains(&root.join("src")), "{hidden:?}");
    }

    #[test]
    fn a_folder_a_rule_covers_whole_is_hidden_whole_also_through_a_link() {
        let (_d, root) = project();
        let outside = tempfile::tempdir().unwrap();
        let out = fs::canonicalize(outside.path()).unwrap();
        fs::write(out.join("o.txt"), "o").unwrap();
        std::os::unix::fs::symlink(&out, root.join("lnk")).unwrap();
        let r = rules(
            &root,
            &[
                (RuleKind::Deny, "Read(./secret/**)"),
                (RuleKind::Deny, "Read(./lnk/**)"),
                (RuleKind::Deny, "Read(notes/n.txt)"),
            ],
        );
        let hidden = hidden_paths(&r, &root, None).unwrap();
        let shown = shown(&root, &hidden);
        assert!(shown.contains(&"secret".to_string()), "{shown:?}");
        assert!(shown.contains(&"lnk".to_string()), "{shown:?}");
        // One file of a folder: that file, not the folder.
        assert!(shown.contains(&"notes/n.txt".to_string()), "{shown:?}");
        assert!(!shown.contains(&"notes".to_string()), "{shown:?}");
    }

    #[test]
    fn a_secret_added_to_a_folder_walked_before_is_found() {
        let (_d, root) = project();
        let old = SystemTime::now() - Duration::from_secs(60);
        let age = |p: &Path| fs::File::open(p).unwrap().set_modified(old).unwrap();
        for d in [root.clone(), root.join("src"), root.join("app")] {
            age(&d);
        }
        let r = rules(&root, &[]);
        let first = hidden_paths(&r, &root, None).unwrap();
        assert!(!first.contains(&root.join("src/.env.new")));
        // Listed from the cache now; a new entry changes the folder's mtime.
        assert_eq!(hidden_paths(&r, &root, None).unwrap(), first);
        fs::write(root.join("src/.env.new"), "k").unwrap();
        let again = hidden_paths(&r, &root, None).unwrap();
        assert!(again.contains(&root.join("src/.env.new")), "{again:?}");
    }

    #[test]
    fn past_the_limit_it_says_so_instead_of_hiding_half() {
        let (_d, root) = project();
        let err = hidden_paths_within(&rules(&root, &[]), &root, None, 3).unwrap_err();
        assert_eq!(
            err,
            crate::text::fill(
                HIDE_TOO_MANY,
                &[("limit", "3"), ("root", &root.display().to_string())]
            )
        );
        assert!(hidden_paths_within(&rules(&root, &[]), &root, None, 100).is_ok());
    }

    #[test]
    fn every_hard_link_to_a_hidden_file_is_hidden_or_it_says_why_not() {
        let (_d, root) = project();
        fs::hard_link(root.join(".env"), root.join("notes/plain.txt")).unwrap();
        fs::hard_link(root.join("secret/deep/t.txt"), root.join("src/t.rs")).unwrap();
        let r = rules(&root, &[(RuleKind::Deny, "Read(./secret/**)")]);
        let hidden = hidden_paths(&r, &root, None).unwrap();
        let shown = shown(&root, &hidden);
        assert!(shown.contains(&"notes/plain.txt".to_string()), "{shown:?}");
        assert!(shown.contains(&"src/t.rs".to_string()), "{shown:?}");
        assert!(!shown.contains(&"notes/n.txt".to_string()), "{shown:?}");
        // A name outside every folder the walk looks in (same file system).
        let elsewhere = tempfile::tempdir_in(root.parent().unwrap()).unwrap();
        fs::hard_link(root.join(".env"), elsewhere.path().join("e")).unwrap();
        let err = hidden_paths(&r, &root, None).unwrap_err();
        assert_eq!(
            err,
            crate::text::fill(
                HIDE_LINK_ELSEWHERE,
                &[
                    ("path", &root.join(".env").display().to_string()),
                    ("links", "3")
                ]
            )
        );
    }

    #[test]
    fn golden_texts() {
        assert_eq!(
            crate::text::fill(HIDE_TOO_MANY, &[("limit", "200000"), ("root", "/w/p")]),
            "more than 200000 files and folders under /w/p would have to be checked for paths the sandbox must hide"
        );
        assert_eq!(
            crate::text::fill(HIDE_RULE_EVERYWHERE, &[("rule", "Read(//**/*.pem)")]),
            "Read(//**/*.pem) covers files in every folder of the file system, and the sandbox can hide only what it finds in the folders it walks; a rule written for a folder (under // or ~/) can be held"
        );
        assert_eq!(
            crate::text::fill(HIDE_LINK_ELSEWHERE, &[("path", "/w/p/.env"), ("links", "2")]),
            "/w/p/.env has 2 hard links and not all of them are in folders lathe checks, so the sandbox cannot hide its content under its other names"
        );
    }
}
