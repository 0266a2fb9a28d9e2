//! Paths as permission rules compare them, resolved the way the kernel
//! resolves them, with every name they go by ([`Spelled`]). This is the I/O
//! the gate does before it calls the pure `decide`.
//!
//! The kernel walks a path left to right: each symlink is replaced by its
//! target before the next component is looked at, so a `..` after a link
//! goes to the parent of the link's *target* (`cat link/../x` reads
//! `<target's parent>/x`, not `./x`). [`spell`] does the same, follows
//! links that dangle (their target is read even when it does not exist
//! yet: a write through them creates it), and keeps the names met on the
//! way: the path as written, and the path after each link was replaced.
//! Rules and protected names are checked against all of them, so neither
//! a link inside the project that leads out nor a link with an innocent
//! name that leads to a protected file gets past them.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::path::{Component, Path, PathBuf};

/// Most symlinks one resolution follows (Linux's `MAXSYMLINKS`); past it
/// the rest of the path is taken as written (the kernel would fail with
/// `ELOOP`).
pub const MAX_LINKS: usize = 40;

/// A path resolved the kernel's way, with the other names it goes by.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spelled {
    /// The real path: absolute, every symlink resolved (a dangling one to
    /// its target), `..` applied to what the kernel would apply it to.
    /// Components that do not exist are kept as written.
    pub real: PathBuf,
    /// The other names of the same file, in the order met: the path as
    /// written (absolute, `.` removed, `..` folded only where that is what
    /// the kernel does: not right after a symlink), then the path after
    /// each symlink along it was replaced by its target. Without `real`
    /// and without repeats; empty when no symlink was met.
    pub names: Vec<PathBuf>,
}

impl Spelled {
    /// `real`, then every name in [`Spelled::names`].
    pub fn all(&self) -> impl Iterator<Item = &Path> {
        std::iter::once(self.real.as_path()).chain(self.names.iter().map(PathBuf::as_path))
    }

    /// Each name (the real path first) with `rel` appended: the names of
    /// a file `rel` below this folder.
    pub fn below(&self, rel: &Path) -> Spelled {
        if rel.as_os_str().is_empty() {
            return self.clone();
        }
        Spelled {
            real: self.real.join(rel),
            names: self.names.iter().map(|n| n.join(rel)).collect(),
        }
    }
}

/// `path` resolved the kernel's way: see [`Spelled`]. A relative `path` is
/// taken against the process's working directory.
pub fn spell(path: &Path) -> Spelled {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(path)
    };
    let mut names = vec![lexical(&abs)];
    let mut pending: VecDeque<OsString> = parts(&abs).into();
    let mut real = PathBuf::from("/");
    let mut links = 0;
    // A loop or a link that cannot be read: the rest is taken as written.
    let mut stuck = false;
    while let Some(part) = pending.pop_front() {
        if part == ".." {
            // `real` holds no symlink, so its parent is the kernel's `..`.
            real.pop();
            continue;
        }
        let next = real.join(&part);
        if !stuck && is_symlink(&next) {
            links += 1;
            let target = (links <= MAX_LINKS)
                .then(|| std::fs::read_link(&next).ok())
                .flatten();
            if let Some(target) = target {
                if target.is_absolute() {
                    real = PathBuf::from("/");
                }
                for p in parts(&target).into_iter().rev() {
                    pending.push_front(p);
                }
                let mut spelled = real.clone();
                spelled.extend(pending.iter());
                names.push(lexical(&spelled));
                continue;
            }
            stuck = true;
        }
        real = next;
    }
    let mut unique: Vec<PathBuf> = Vec::new();
    for n in names {
        if n != real && !unique.contains(&n) {
            unique.push(n);
        }
    }
    Spelled {
        real,
        names: unique,
    }
}

/// The symlinks directly in some folders (the project root, the home
/// directory), each with its real target: what gives a file the names it
/// goes by through them ([`Aliases::apply`]). Links found elsewhere are
/// not looked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Aliases {
    links: Vec<(PathBuf, PathBuf)>,
}

impl Aliases {
    /// The links directly in each of `dirs` (I/O: one listing per folder).
    pub fn in_dirs(dirs: &[&Path]) -> Self {
        let mut links = Vec::new();
        for dir in dirs {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_symlink()) {
                    let link = entry.path();
                    let target = spell(&link).real;
                    links.push((link, target));
                }
            }
        }
        Self { links }
    }

    /// `spelled` with the names it also goes by through these links: for
    /// each link whose real target holds `spelled.real`, the link's name
    /// with the rest appended (`.claude` → `other` gives
    /// `other/settings.local.json` the name `.claude/settings.local.json`,
    /// which is what reads it).
    pub fn apply(&self, mut spelled: Spelled) -> Spelled {
        for (link, target) in &self.links {
            let Ok(rel) = spelled.real.strip_prefix(target) else {
                continue;
            };
            let alias = if rel.as_os_str().is_empty() {
                link.clone()
            } else {
                link.join(rel)
            };
            if alias != spelled.real && !spelled.names.contains(&alias) {
                spelled.names.push(alias);
            }
        }
        spelled
    }
}

/// `spelled` with the names it also goes by through the symlinks directly
/// in `dirs` ([`Aliases`]).
pub fn with_aliases(spelled: Spelled, dirs: &[&Path]) -> Spelled {
    Aliases::in_dirs(dirs).apply(spelled)
}

/// `path` (absolute) with symlinks resolved the kernel's way: the real
/// path of [`spell`]. For a file that does not exist yet, its deepest
/// existing ancestor resolved with the rest appended; a dangling link
/// resolves to its target.
pub fn resolve_for_rules(path: &Path) -> PathBuf {
    spell(path).real
}

/// The normal components of `path` and its `..`s, in order (`.`, the root
/// and prefixes dropped).
fn parts(path: &Path) -> Vec<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            _ => None,
        })
        .collect()
}

/// `path` (absolute) as written, with `.` removed and each `..` applied to
/// the component before it, except where that component is a symlink (or
/// an unapplied `..`): there the kernel goes to the parent of the link's
/// target, which no lexical fold can say, so the `..` is kept.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir if out.ends_with("..") || is_symlink(&out) => out.push(".."),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out
}

fn is_symlink(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// The names in a folder that make it look like a git repository to git
/// (a bare repository, or the inside of a `.git` folder).
const REPO_FILES: &[&str] = &["HEAD", "config"];
/// See [`REPO_FILES`].
const REPO_DIRS: &[&str] = &["objects", "refs"];
/// Folders of a repository whose files git reads or runs.
const REPO_WRITABLE_DIRS: &[&str] = &["objects", "refs", "hooks", "info"];

/// `true` when writing the file `spelled` (by any of its names) would add
/// to or change a folder laid out as a git repository outside `.git/`: a
/// file named `HEAD` or `config`, or anything under a folder named
/// `objects`, `refs`, `hooks` or `info`, in a folder that holds (or with
/// this write would hold) two or more of `HEAD`, `config`, `objects/`,
/// `refs/`. Git treats such a folder as a repository and runs what its
/// `config` names (`core.fsmonitor`, hooks), so building one is asked
/// about like a write into `.git/`.
pub fn writes_git_layout(spelled: &Spelled) -> bool {
    spelled.all().any(|p| {
        let name = p.file_name().and_then(OsStr::to_str).unwrap_or("");
        if one_of(REPO_FILES, name) && p.parent().is_some_and(|d| looks_like_repo(d, name)) {
            return true;
        }
        p.ancestors().skip(1).any(|a| {
            let name = a.file_name().and_then(OsStr::to_str).unwrap_or("");
            one_of(REPO_WRITABLE_DIRS, name) && a.parent().is_some_and(|d| looks_like_repo(d, name))
        })
    })
}

/// `true` when `name` is one of `names`, whatever its case (a
/// case-insensitive file system opens `Head` as `HEAD`).
fn one_of(names: &[&str], name: &str) -> bool {
    names.iter().any(|n| n.eq_ignore_ascii_case(name))
}

/// `true` when `dir` holds two or more of `HEAD` and `config` (files),
/// `objects/` and `refs/` (folders), counting `adding` as there.
fn looks_like_repo(dir: &Path, adding: &str) -> bool {
    let files = REPO_FILES
        .iter()
        .filter(|f| f.eq_ignore_ascii_case(adding) || dir.join(f).is_file())
        .count();
    let dirs = REPO_DIRS
        .iter()
        .filter(|d| d.eq_ignore_ascii_case(adding) || dir.join(d).is_dir())
        .count();
    files + dirs >= 2
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn symlinks_resolve_and_new_files_keep_their_tail() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = dir.path().canonicalize().expect("canonical");
        std::fs::create_dir(real.join("proj")).expect("mkdir");
        symlink(real.join("proj"), real.join("link")).expect("symlink");
        assert_eq!(
            resolve_for_rules(&real.join("link/new/file.rs")),
            real.join("proj/new/file.rs")
        );
        assert_eq!(
            resolve_for_rules(&real.join("proj/./a/../b.rs")),
            real.join("proj/b.rs")
        );
        // A link inside the project pointing out of it resolves outside.
        symlink("/etc", real.join("proj/etc-link")).expect("symlink");
        assert!(resolve_for_rules(&real.join("proj/etc-link/hosts")).starts_with("/etc"));
    }

    /// `(path written, real path, other names)` relative to a temp folder
    /// holding `proj/{a/b/c.txt, .env-real}`, `out/{x.txt, deep/y}` and
    /// the links of each row.
    #[test]
    fn paths_resolve_like_the_kernel_and_keep_every_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let t = dir.path().canonicalize().expect("canonical");
        for d in ["proj/a/b", "out/deep"] {
            std::fs::create_dir_all(t.join(d)).expect("mkdir");
        }
        for f in [
            "proj/a/b/c.txt",
            "proj/.env-real",
            "out/x.txt",
            "out/deep/y",
        ] {
            std::fs::write(t.join(f), "").expect("write");
        }
        let links: &[(&str, &str)] = &[
            ("proj/out", "../out"),
            ("proj/deep", "../out/deep"),
            ("proj/dangling", "../out/new.txt"),
            ("proj/chain1", "chain2"),
            ("proj/chain2", "deep"),
            ("proj/loop1", "loop2"),
            ("proj/loop2", "loop1"),
            ("proj/.env", ".env-real"),
            ("proj/innocent", ".env"),
        ];
        for (link, target) in links {
            symlink(target, t.join(link)).expect("symlink");
        }
        let cases: &[(&str, &str, &[&str])] = &[
            ("proj/a/b/c.txt", "proj/a/b/c.txt", &[]),
            ("proj/a/./b/../b/c.txt", "proj/a/b/c.txt", &[]),
            // `..` after a link is the parent of its target.
            ("proj/deep/../x.txt", "out/x.txt", &["proj/deep/../x.txt"]),
            ("proj/out/x.txt", "out/x.txt", &["proj/out/x.txt"]),
            ("proj/out/new/f", "out/new/f", &["proj/out/new/f"]),
            ("proj/dangling", "out/new.txt", &["proj/dangling"]),
            (
                "proj/chain1/y",
                "out/deep/y",
                &["proj/chain1/y", "proj/chain2/y", "proj/deep/y"],
            ),
            (
                "proj/chain1/../x.txt",
                "out/x.txt",
                &[
                    "proj/chain1/../x.txt",
                    "proj/chain2/../x.txt",
                    "proj/deep/../x.txt",
                ],
            ),
            (
                "proj/innocent",
                "proj/.env-real",
                &["proj/innocent", "proj/.env"],
            ),
        ];
        for (written, want, names) in cases {
            let s = spell(&t.join(written));
            assert_eq!(s.real, t.join(want), "{written}");
            let names: Vec<PathBuf> = names.iter().map(|n| t.join(n)).collect();
            assert_eq!(s.names, names, "{written}");
        }
        // Links directly in a folder give their name to what they lead to.
        let aliases = |p: &str| {
            let mut names = with_aliases(spell(&t.join(p)), &[&t.join("proj")]).names;
            names.sort();
            names
        };
        assert_eq!(
            aliases("proj/.env-real"),
            [t.join("proj/.env"), t.join("proj/innocent")]
        );
        let via = ["chain1", "chain2", "deep", "out/deep"];
        let want: Vec<PathBuf> = via
            .iter()
            .map(|v| t.join("proj").join(v).join("y"))
            .collect();
        assert_eq!(aliases("out/deep/y"), want);
        // A loop stops after MAX_LINKS links, with every name kept once.
        let s = spell(&t.join("proj/loop1/x"));
        let all: Vec<&Path> = s.all().collect();
        assert_eq!(all.len(), 2, "{all:?}");
        assert!(all.contains(&t.join("proj/loop1/x").as_path()));
        assert!(all.contains(&t.join("proj/loop2/x").as_path()));
    }

    #[test]
    fn writes_that_build_a_repository_layout_are_found() {
        let dir = tempfile::tempdir().expect("tempdir");
        let t = dir.path().canonicalize().expect("canonical");
        for d in ["bare/objects", "half/refs", "src/hooks", "src/config"] {
            std::fs::create_dir_all(t.join(d)).expect("mkdir");
        }
        std::fs::write(t.join("bare/HEAD"), "ref: refs/heads/main").expect("write");
        std::fs::write(t.join("src/HEAD.md"), "").expect("write");
        let cases = [
            ("bare/config", true),
            ("bare/HEAD", true),
            ("bare/refs/heads/main", true),
            ("bare/hooks/pre-commit", true),
            ("bare/info/attributes", true),
            ("half/HEAD", true),
            ("half/Head", true),
            ("half/objects/ab/cd", true),
            ("half/hooks/x", false),
            ("half/notes.txt", false),
            ("src/hooks/useThing.ts", false),
            ("src/config/app.json", false),
            ("src/HEAD", false),
            ("fresh/HEAD", false),
        ];
        for (path, want) in cases {
            assert_eq!(writes_git_layout(&spell(&t.join(path))), want, "{path}");
        }
        // Through a link: the link's name counts, and the folder's content.
        symlink(t.join("bare"), t.join("innocent")).expect("symlink");
        assert!(writes_git_layout(&spell(&t.join("innocent/config"))));
        symlink(t.join("notes.txt"), t.join("half/HEAD")).expect("symlink");
        assert!(writes_git_layout(&spell(&t.join("half/HEAD"))));
    }
}
