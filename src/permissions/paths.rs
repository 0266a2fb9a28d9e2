//! Paths as permission rules compare them: absolute, symlinks resolved, and
//! for a file that does not exist yet, its deepest existing ancestor
//! resolved with the rest appended. This is the I/O the gate does before it
//! calls the pure `decide`.

use std::path::{Component, Path, PathBuf};

/// `path` (absolute) with symlinks resolved: `fs::canonicalize` of the
/// deepest ancestor that exists, then the components below it that do not
/// exist yet, with `.`/`..` folded lexically. A path none of whose
/// ancestors resolve is returned as given (lexically folded).
pub fn resolve_for_rules(path: &Path) -> PathBuf {
    let path = fold(path);
    let mut existing = path.as_path();
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            return rest.iter().rev().fold(real, |acc, c| acc.join(c));
        }
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent;
            }
            _ => return path.clone(),
        }
    }
}

/// `path` with `.` removed and `..` applied to the preceding component.
fn fold(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_resolve_and_new_files_keep_their_tail() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = dir.path().canonicalize().expect("canonical");
        std::fs::create_dir(real.join("proj")).expect("mkdir");
        std::os::unix::fs::symlink(real.join("proj"), real.join("link")).expect("symlink");
        assert_eq!(
            resolve_for_rules(&real.join("link/new/file.rs")),
            real.join("proj/new/file.rs")
        );
        assert_eq!(
            resolve_for_rules(&real.join("proj/./a/../b.rs")),
            real.join("proj/b.rs")
        );
        // A link inside the project pointing out of it resolves outside.
        std::os::unix::fs::symlink("/etc", real.join("proj/etc-link")).expect("symlink");
        assert!(resolve_for_rules(&real.join("proj/etc-link/hosts")).starts_with("/etc"));
    }
}
