//! The one resolver for path-like tool parameters (gate "normalize";
//! docs/edits.md, "Paths and globs mean one thing").
//!
//! Every path-like parameter of Read, Edit, Write, Grep and Glob —
//! `file_path`, `path`, Grep's `glob`, Glob's `pattern` — goes through
//! [`resolve_param`]: relative text resolves against a base (the project
//! root for `file_path` and `path`, the searched folder for a glob) — never
//! a window-local `:lcd` — and only a *leading* `~` or `~/` expands to
//! `$HOME` (`a/~/b` stays as it is). `.` and `..` components are folded
//! lexically. A glob keeps its pattern part: only the leading components
//! without glob syntax are resolved.

use std::path::{Component, Path, PathBuf};

/// How [`resolve_param`] reads a parameter's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// A path: every component is literal (`file_path`, `path`).
    Path,
    /// A glob: the leading components without glob syntax (`*?[]{}\`) name
    /// a folder; the rest, always at least the last component, is the
    /// pattern (Grep's `glob`, Glob's `pattern`).
    Glob,
}

/// A path-like parameter after [`resolve_param`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The absolute, folded path the literal part names: the whole path for
    /// [`ParamKind::Path`], the folder the pattern applies below for
    /// [`ParamKind::Glob`].
    pub literal: PathBuf,
    /// The pattern below `literal` (`/`-separated, never starting with
    /// `/`); empty for [`ParamKind::Path`].
    pub pattern: String,
}

/// The one resolution of a path-like tool parameter: `input` read as
/// `kind`, relative text against `base` (absolute). `~`/`~/x` → `$HOME`,
/// absolute stays, `./` and `..` folded. Pure: does not touch the disk
/// (symlinks stay). Table test: `crates/lathe-core/tests/all/path_params.rs`.
pub fn resolve_param(base: &Path, input: &str, kind: ParamKind) -> Resolved {
    match kind {
        ParamKind::Path => Resolved {
            literal: resolve_literal(base, input),
            pattern: String::new(),
        },
        ParamKind::Glob => {
            let parts: Vec<&str> = input.split('/').collect();
            let literal = parts[..parts.len() - 1]
                .iter()
                .take_while(|c| !has_glob_syntax(c))
                .count();
            let mut head = parts[..literal].join("/");
            if head.is_empty() && input.starts_with('/') {
                head.push('/');
            }
            Resolved {
                literal: resolve_literal(base, &head),
                pattern: parts[literal..].join("/"),
            }
        }
    }
}

/// Absolute form of the path `input` against `root`: [`resolve_param`] with
/// [`ParamKind::Path`]. `~/x` → `$HOME/x`, relative → `root/x`, `.`/`..`
/// folded. Does not touch the disk (symlinks stay).
pub fn resolve(root: &Path, input: &str) -> PathBuf {
    resolve_param(root, input, ParamKind::Path).literal
}

/// `true` when `component` holds glob syntax (`*`, `?`, `[`, `]`, `{`,
/// `}` or an escaping `\`).
fn has_glob_syntax(component: &str) -> bool {
    component.contains(['*', '?', '[', ']', '{', '}', '\\'])
}

/// `input` (every component literal) made absolute against `base`.
fn resolve_literal(base: &Path, input: &str) -> PathBuf {
    let expanded: PathBuf = if input == "~" {
        home().unwrap_or_else(|| PathBuf::from(input))
    } else if let Some(rest) = input.strip_prefix("~/") {
        match home() {
            Some(h) => h.join(rest),
            None => PathBuf::from(input),
        }
    } else {
        PathBuf::from(input)
    };
    let joined = if expanded.is_absolute() {
        expanded
    } else {
        base.join(expanded)
    };
    fold(&joined)
}

/// `path` relative to `root` for display, or `path` itself when outside.
pub fn display(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.display().to_string())
}

/// `true` when `path` (absolute, folded) lies inside `root`.
pub fn is_inside(root: &Path, path: &Path) -> bool {
    path.starts_with(root)
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .or_else(dirs::home_dir)
}

fn fold(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_resolves_against_root() {
        assert_eq!(
            resolve(Path::new("/p"), "src/a.rs"),
            PathBuf::from("/p/src/a.rs")
        );
        assert_eq!(
            resolve(Path::new("/p"), "./src/../b"),
            PathBuf::from("/p/b")
        );
    }

    #[test]
    fn only_leading_tilde_expands() {
        let home = home().expect("HOME");
        assert_eq!(
            resolve(Path::new("/p"), "~/notes.txt"),
            home.join("notes.txt")
        );
        assert_eq!(resolve(Path::new("/p"), "a/~/b"), PathBuf::from("/p/a/~/b"));
    }

    /// `input` × kind → (literal, pattern): relative, `./`, `..`,
    /// absolute and `~` forms of paths and globs.
    #[test]
    fn resolve_param_table() {
        let home = home().expect("HOME");
        let base = Path::new("/p/pkg");
        let g = ParamKind::Glob;
        let rows: Vec<(&str, ParamKind, PathBuf, &str)> = vec![
            ("a.txt", ParamKind::Path, "/p/pkg/a.txt".into(), ""),
            ("sub/*.txt", ParamKind::Path, "/p/pkg/sub/*.txt".into(), ""),
            ("sub/*.txt", g, "/p/pkg/sub".into(), "*.txt"),
            ("./sub/*.txt", g, "/p/pkg/sub".into(), "*.txt"),
            ("././sub/x/*.txt", g, "/p/pkg/sub/x".into(), "*.txt"),
            ("../other/sub/*.txt", g, "/p/other/sub".into(), "*.txt"),
            ("/abs/x/*.md", g, "/abs/x".into(), "*.md"),
            ("/*.md", g, "/".into(), "*.md"),
            ("~/x/*.md", g, home.join("x"), "*.md"),
            ("*.rs", g, "/p/pkg".into(), "*.rs"),
            ("**/sub/*.rs", g, "/p/pkg".into(), "**/sub/*.rs"),
            ("a/{b,c}/*.md", g, "/p/pkg/a".into(), "{b,c}/*.md"),
            ("sub/a.txt", g, "/p/pkg/sub".into(), "a.txt"),
            ("src/[a", g, "/p/pkg/src".into(), "[a"),
            ("pkg/sub/", g, "/p/pkg/pkg/sub".into(), ""),
        ];
        for (input, kind, literal, pattern) in rows {
            assert_eq!(
                resolve_param(base, input, kind),
                Resolved {
                    literal,
                    pattern: pattern.to_string()
                },
                "{input:?} as {kind:?}"
            );
        }
    }
}
