//! Runs one command hook: `bash -c command` in the hook input's `cwd`, in a
//! session and process group of its own ([`crate::process`]), with the
//! input JSON on stdin, stdout and stderr read in full (up to
//! [`MAX_OUTPUT_BYTES`] each).
//!
//! - stdin is an unlinked temporary file holding the JSON, not a pipe: a
//!   hook that never reads it cannot block lathe on a full pipe, and lathe
//!   never writes to a pipe whose reader is gone (no `SIGPIPE` in Neovim's
//!   process). The hook sees the same bytes and end-of-file.
//! - `CLAUDE_PROJECT_DIR` is set to `cwd`, as Claude Code sets it, so hooks
//!   written for Claude Code (`"$CLAUDE_PROJECT_DIR"/.claude/hooks/x.sh`) run
//!   unchanged.
//! - At the timeout or when the cancellation token fires, the whole group
//!   gets SIGKILL at once (a hook is a short script with nothing to save),
//!   and the run returns once no live process is left in it (bounded by
//!   [`KILL_WAIT`]).
//! - Once bash has exited, its result stands; the pipes are read for at
//!   most [`DRAIN`] more (a background job may hold them open) and the
//!   background job keeps running, as after a shell's `cmd &`.
//! - If the future is dropped mid-run, `GroupGuard`'s `Drop` kills the
//!   group.

use std::io::{self, Seek as _, SeekFrom, Write as _};
use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt as _};
use tokio::process::Command;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::process::{new_session, spawner, GroupGuard};

/// Bytes kept of each of stdout and stderr (1 MiB); the rest is read and
/// dropped, so a chatty hook never blocks on a full pipe.
pub const MAX_OUTPUT_BYTES: usize = 1024 * 1024;

/// How long the pipes are still read after bash exited.
pub const DRAIN: Duration = Duration::from_secs(1);

/// How long a killed hook's group is given to disappear before the run
/// returns anyway.
pub const KILL_WAIT: Duration = Duration::from_secs(2);

/// How a command hook's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// bash exited by itself (with a code or killed by a signal).
    Exited(ExitStatus),
    /// The timeout elapsed; the group was killed.
    TimedOut,
    /// The cancellation token fired; the group was killed.
    Cancelled,
}

/// What a command hook did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRun {
    /// Why it ended.
    pub ending: Ending,
    /// stdout, lossily decoded as UTF-8, at most [`MAX_OUTPUT_BYTES`].
    pub stdout: String,
    /// stderr, likewise.
    pub stderr: String,
}

/// Runs `command` as described in the module doc, with `stdin` as its
/// standard input. Errors: the `io::Error` of writing the stdin file or of
/// spawning bash (not installed, `cwd` missing).
pub async fn run(
    command: &str,
    timeout: Duration,
    cwd: &Path,
    stdin: &[u8],
    cancel: &CancellationToken,
) -> io::Result<CommandRun> {
    if cancel.is_cancelled() {
        return Ok(CommandRun {
            ending: Ending::Cancelled,
            stdout: String::new(),
            stderr: String::new(),
        });
    }
    let mut input = tempfile::tempfile()?;
    input.write_all(stdin)?;
    input.seek(SeekFrom::Start(0))?;

    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .env("CLAUDE_PROJECT_DIR", cwd)
        .stdin(Stdio::from(input))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    new_session(&mut cmd);
    let mut child = spawner::spawn(cmd)?;
    let mut guard = GroupGuard::new(child.id());

    let deadline = Instant::now() + timeout;
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let ending = {
        let reading = futures::future::join(
            read_capped(child.stdout.take(), &mut stdout),
            read_capped(child.stderr.take(), &mut stderr),
        );
        tokio::pin!(reading);
        let mut read_all = false;
        loop {
            // `biased`: cancellation and the deadline first, so output
            // cannot starve them.
            tokio::select! {
                biased;
                _ = cancel.cancelled() => break Ending::Cancelled,
                _ = tokio::time::sleep_until(deadline) => break Ending::TimedOut,
                _ = &mut reading, if !read_all => read_all = true,
                status = child.wait() => {
                    // A wait error means the child is gone from our view;
                    // report it as killed so the result says something true.
                    let status = status.unwrap_or_else(|_| ExitStatus::from_raw(libc::SIGKILL));
                    if !read_all {
                        tokio::select! {
                            _ = &mut reading => {}
                            _ = tokio::time::sleep(DRAIN) => {}
                            _ = cancel.cancelled() => {}
                        }
                    }
                    break Ending::Exited(status);
                }
            }
        }
    };
    if !matches!(ending, Ending::Exited(_)) {
        guard.signal(libc::SIGKILL);
        let _ = tokio::time::timeout(KILL_WAIT, child.wait()).await;
        guard.wait_gone_until(Instant::now() + KILL_WAIT).await;
    }
    // Killed and gone, or exited: background jobs of a finished hook keep
    // running, as a shell would leave them.
    guard.disarm();
    Ok(CommandRun {
        ending,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    })
}

/// Reads `pipe` to its end (or first error) into `buf`, keeping at most
/// [`MAX_OUTPUT_BYTES`].
async fn read_capped<R: AsyncRead + Unpin>(pipe: Option<R>, buf: &mut Vec<u8>) {
    let Some(mut pipe) = pipe else {
        return;
    };
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let room = MAX_OUTPUT_BYTES.saturating_sub(buf.len());
                buf.extend_from_slice(&chunk[..n.min(room)]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn sh(command: &str, stdin: &str) -> CommandRun {
        let dir = tempfile::tempdir().unwrap();
        run(
            command,
            Duration::from_secs(10),
            dir.path(),
            stdin.as_bytes(),
            &CancellationToken::new(),
        )
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn reads_stdin_and_both_outputs() {
        let r = sh("cat; echo err >&2; exit 3", "{\"a\":1}").await;
        assert_eq!(r.ending, Ending::Exited(ExitStatus::from_raw(3 << 8)));
        assert_eq!(r.stdout, "{\"a\":1}");
        assert_eq!(r.stderr, "err\n");
    }

    #[tokio::test]
    async fn runs_in_cwd_with_claude_project_dir() {
        let dir = tempfile::tempdir().unwrap();
        let r = run(
            "pwd; echo \"$CLAUDE_PROJECT_DIR\"",
            Duration::from_secs(10),
            dir.path(),
            b"",
            &CancellationToken::new(),
        )
        .await
        .unwrap();
        let real = dir.path().canonicalize().unwrap();
        let lines: Vec<&str> = r.stdout.lines().collect();
        assert_eq!(Path::new(lines[0]).canonicalize().unwrap(), real);
        assert_eq!(lines[1], dir.path().to_str().unwrap());
    }

    #[tokio::test]
    async fn output_is_capped() {
        let r = sh("head -c 3000000 /dev/zero | tr '\\0' x", "").await;
        assert_eq!(r.stdout.len(), MAX_OUTPUT_BYTES);
        assert!(matches!(r.ending, Ending::Exited(s) if s.success()));
    }

    #[tokio::test]
    async fn a_missing_cwd_is_a_spawn_error() {
        let err = run(
            "true",
            Duration::from_secs(10),
            Path::new("/nonexistent/lathe-hooks"),
            b"",
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }

    #[tokio::test]
    async fn an_already_cancelled_token_runs_nothing() {
        let cancel = CancellationToken::new();
        cancel.cancel();
        let dir = tempfile::tempdir().unwrap();
        let r = run(
            "touch ran",
            Duration::from_secs(10),
            dir.path(),
            b"",
            &cancel,
        )
        .await
        .unwrap();
        assert_eq!(r.ending, Ending::Cancelled);
        assert!(!dir.path().join("ran").exists());
    }
}
