//! Path normalisation shared by the tools (gate "normalize").
//!
//! Relative paths resolve against the project root — never a window-local
//! `:lcd` — and only a *leading* `~` or `~/` expands to `$HOME`
//! (`a/~/b` stays as it is). `.` and `..` components are folded lexically.

use std::path::{Component, Path, PathBuf};

/// Absolute form of `input`: `~/x` → `$HOME/x`, relative → `root/x`,
/// with `.`/`..` folded. Does not touch the disk (symlinks stay).
pub fn resolve(root: &Path, input: &str) -> PathBuf {
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
        root.join(expanded)
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
}
