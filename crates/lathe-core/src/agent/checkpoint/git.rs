//! What `git status` tells about the files a turn's Bash commands changed:
//! a snapshot of the project's changed and untracked files (with their
//! size and modification time) at the start of a turn and another at its
//! end; a file whose entry appeared, went or moved is listed. lathe does
//! not track what commands change, so this is a list, never a restore.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How long one `git` call may take before the list is given up.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(3);

/// One file's `git status` entry and its size and modification time.
type Entry = (String, Option<(u64, Option<SystemTime>)>);

/// The project's changed files at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    files: HashMap<PathBuf, Entry>,
}

/// `git status` of the work tree holding `root`, for the files below
/// `root`; `None` when `root` is not in a git work tree, git is missing or
/// slow.
pub async fn snapshot(root: &Path) -> Option<Snapshot> {
    let top = run(root, &["rev-parse", "--show-toplevel"]).await?;
    let top = PathBuf::from(String::from_utf8(top).ok()?.trim_end_matches('\n'));
    let out = run(
        root,
        &[
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--no-renames",
            "--",
            ".",
        ],
    )
    .await?;
    let mut files = HashMap::new();
    for entry in out.split(|b| *b == 0) {
        if entry.len() < 4 {
            continue;
        }
        let status = String::from_utf8_lossy(&entry[..2]).into_owned();
        let rel = String::from_utf8_lossy(&entry[3..]).into_owned();
        let path = top.join(rel);
        if !path.starts_with(root) {
            continue;
        }
        let meta = std::fs::symlink_metadata(&path)
            .ok()
            .map(|m| (m.len(), m.modified().ok()));
        files.insert(path, (status, meta));
    }
    Some(Snapshot { files })
}

/// The files whose entry differs between `before` and `after`, sorted.
pub fn touched(before: &Snapshot, after: &Snapshot) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = after
        .files
        .iter()
        .filter(|(p, v)| before.files.get(*p) != Some(v))
        .map(|(p, _)| p.clone())
        .chain(
            before
                .files
                .keys()
                .filter(|p| !after.files.contains_key(*p))
                .cloned(),
        )
        .collect();
    out.sort();
    out
}

async fn run(root: &Path, args: &[&str]) -> Option<Vec<u8>> {
    let mut cmd = tokio::process::Command::new("git");
    cmd.arg("-C")
        .arg(root)
        .args(args)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(GIT_TIMEOUT, cmd.output())
        .await
        .ok()?
        .ok()?;
    out.status.success().then_some(out.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    }

    #[tokio::test]
    async fn a_file_a_command_changed_is_listed_and_others_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        git(&root, &["init", "-q"]);
        std::fs::write(root.join("kept.txt"), "same\n").unwrap();
        std::fs::write(root.join("dirty.txt"), "one\n").unwrap();
        let before = snapshot(&root).await.expect("a git work tree");
        std::fs::write(root.join("new.log"), "made by a command\n").unwrap();
        std::fs::write(root.join("dirty.txt"), "one and more\n").unwrap();
        let after = snapshot(&root).await.unwrap();
        assert_eq!(
            touched(&before, &after),
            vec![root.join("dirty.txt"), root.join("new.log")]
        );
    }

    #[tokio::test]
    async fn outside_a_work_tree_there_is_no_list() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(snapshot(dir.path()).await, None);
    }
}
