//! Runs one `bash -c` command in its own session and process group, reads
//! its output into an [`OutputCap`] while it runs, and stops the whole group
//! on timeout or cancellation (the `case12_*` and `case13_*` tests in
//! `tests/bash_tool.rs`).
//!
//! - `setsid()` in the child (before `exec`) makes bash the leader of a new
//!   session and process group, with no controlling terminal: nothing can
//!   open `/dev/tty` to prompt, and `killpg` reaches every descendant that
//!   did not leave the group on purpose.
//! - stdin is `/dev/null`, so `read`, `input()` and friends see EOF at once.
//! - Stop: SIGTERM to the group, then SIGKILL once the group is still alive
//!   after the grace period.
//! - The timeout and the interrupt apply while bash runs; once it has
//!   exited, its result stands even if a background job outlives it.
//! - The call never waits for EOF forever: once bash has exited (or was
//!   stopped), the pipes are drained for at most `drain` and then dropped,
//!   even if a background descendant still holds them open.
//! - If the future is dropped mid-run (the pipeline gave up on it), the
//!   group gets SIGKILL from `GroupGuard`'s `Drop`.
//!
//! The session and the group guard are [`crate::process`]'s, shared with
//! command hooks.

use std::io;
use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::AsyncReadExt as _;
use tokio::process::Command;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::output_cap::{CappedText, OutputCap};
use crate::process::{new_session, GroupGuard};

/// Variables added to the command's environment, so that nothing waits for
/// a terminal that is not there:
/// - `GIT_TERMINAL_PROMPT=0`: git fails instead of asking for credentials.
/// - `GIT_EDITOR=true`, `EDITOR=true`, `VISUAL=true`: `git commit`, `git
///   rebase -i`, `crontab -e`… accept the prepared text instead of opening
///   an editor that would hang without a terminal (a commit without `-m`
///   then aborts with git's "empty commit message", which the model can read).
/// - `PAGER=cat`, `GIT_PAGER=cat`: no pager, even where a program forces one.
pub const CHILD_ENV: &[(&str, &str)] = &[
    ("GIT_TERMINAL_PROMPT", "0"),
    ("GIT_EDITOR", "true"),
    ("EDITOR", "true"),
    ("VISUAL", "true"),
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
];

pub use crate::tools::ProgressFn;

/// What to run and the time limits.
#[derive(Debug, Clone)]
pub struct RunSpec<'a> {
    /// Passed to `bash -c`.
    pub command: &'a str,
    /// Working directory (the project root).
    pub cwd: &'a Path,
    /// Wall time before the group is stopped.
    pub timeout: Duration,
    /// Time between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// How long to keep reading after bash exited or was stopped.
    pub drain: Duration,
    /// Characters kept from the start of the output.
    pub head_chars: usize,
    /// Characters kept from the end of the output.
    pub tail_chars: usize,
}

/// How the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// bash exited by itself (with a code or killed by a signal).
    Exited(ExitStatus),
    /// The timeout elapsed; the group was stopped.
    TimedOut,
    /// The cancellation token fired; the group was stopped.
    Cancelled,
}

/// The result of [`run`].
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// Why it ended.
    pub ending: Ending,
    /// stdout and stderr, interleaved, capped.
    pub output: CappedText,
}

/// Spawns `bash -c spec.command` and waits for it as described in the
/// module doc. Errors: the `io::Error` of spawning bash (not installed,
/// `cwd` missing). Output read errors end the reading of that pipe.
pub async fn run(
    spec: &RunSpec<'_>,
    cancel: &CancellationToken,
    progress: Option<&ProgressFn>,
) -> io::Result<RunOutcome> {
    let mut cap = OutputCap::new(spec.head_chars, spec.tail_chars);
    if cancel.is_cancelled() {
        return Ok(RunOutcome {
            ending: Ending::Cancelled,
            output: cap.finish(),
        });
    }
    let mut child = spawn(spec)?;
    let mut guard = GroupGuard::new(child.id());
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let mut out_buf = vec![0u8; 16 * 1024];
    let mut err_buf = vec![0u8; 16 * 1024];

    let timeout_at = Instant::now() + spec.timeout;
    let mut exit: Option<ExitStatus> = None;
    let mut stopped: Option<Ending> = None;
    let mut kill_at: Option<Instant> = None;
    let mut drain_until: Option<Instant> = None;

    loop {
        if exit.is_some() && stdout.is_none() && stderr.is_none() {
            break;
        }
        // `biased`: deadlines first, so a flood of output cannot starve the
        // timeout; then stdout before stderr, a fixed order for chunks that
        // are ready together.
        tokio::select! {
            biased;
            _ = sleep_until_opt(drain_until) => break,
            _ = cancel.cancelled(), if stopped.is_none() => {
                if exit.is_some() {
                    break; // bash already finished: keep its result
                }
                stopped = Some(Ending::Cancelled);
                guard.signal(libc::SIGTERM);
                kill_at = Some(Instant::now() + spec.kill_grace);
            }
            // Only while bash runs: a job it left in the background is not
            // "the command" and must not turn a finished call into a timeout.
            _ = tokio::time::sleep_until(timeout_at), if stopped.is_none() && exit.is_none() => {
                stopped = Some(Ending::TimedOut);
                guard.signal(libc::SIGTERM);
                kill_at = Some(Instant::now() + spec.kill_grace);
            }
            _ = sleep_until_opt(kill_at) => {
                guard.signal(libc::SIGKILL);
                kill_at = None;
            }
            status = child.wait(), if exit.is_none() => {
                // A wait error means the child is gone from our view; treat
                // it as a kill so the result still says something true.
                exit = Some(status.unwrap_or_else(|_| ExitStatus::from_raw(libc::SIGKILL)));
                drain_until = Some(Instant::now() + spec.drain);
            }
            r = read_some(&mut stdout, &mut out_buf) => {
                take_chunk(r, &mut stdout, &out_buf, &mut cap, progress);
            }
            r = read_some(&mut stderr, &mut err_buf) => {
                take_chunk(r, &mut stderr, &err_buf, &mut cap, progress);
            }
        }
    }

    match stopped {
        Some(ending) => {
            // bash is gone, but a descendant may have trapped SIGTERM.
            if let Some(at) = kill_at {
                guard.wait_gone_until(at).await;
                guard.signal(libc::SIGKILL);
            }
            guard.disarm();
            Ok(RunOutcome {
                ending,
                output: cap.finish(),
            })
        }
        None => {
            // A normal exit leaves background jobs (`server > log 2>&1 &`)
            // running, as a shell would.
            guard.disarm();
            let status = exit.unwrap_or_else(|| ExitStatus::from_raw(libc::SIGKILL));
            Ok(RunOutcome {
                ending: Ending::Exited(status),
                output: cap.finish(),
            })
        }
    }
}

fn spawn(spec: &RunSpec<'_>) -> io::Result<tokio::process::Child> {
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(spec.command)
        .current_dir(spec.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (key, value) in CHILD_ENV {
        cmd.env(key, value);
    }
    new_session(&mut cmd).spawn()
}

/// Reads from `pipe`, or waits forever when it is already closed (so the
/// `select!` branch stays quiet).
async fn read_some<R: tokio::io::AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buf: &mut [u8],
) -> io::Result<usize> {
    match pipe {
        Some(p) => p.read(buf).await,
        None => std::future::pending().await,
    }
}

/// Feeds a read result into the cap; EOF or an error closes the pipe.
fn take_chunk<R>(
    read: io::Result<usize>,
    pipe: &mut Option<R>,
    buf: &[u8],
    cap: &mut OutputCap,
    progress: Option<&ProgressFn>,
) {
    match read {
        Ok(0) | Err(_) => *pipe = None,
        Ok(n) => {
            cap.push(&buf[..n]);
            if let Some(p) = progress {
                p(&buf[..n]);
            }
        }
    }
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
