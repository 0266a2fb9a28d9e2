//! Runs one `bash -c` command in its own session and process group, reads
//! its output into an [`OutputSink`] while it runs, and stops everything it
//! started on timeout or cancellation (the `case12_*` and `case13_*` tests
//! in `crates/lathe-core/tests/all/bash_tool.rs`).
//!
//! - `setsid()` in the child (before `exec`) makes bash the leader of a new
//!   session and process group, with no controlling terminal: nothing can
//!   open `/dev/tty` to prompt, and `killpg` reaches every descendant that
//!   did not leave the group on purpose.
//! - Every descendant inherits the [`JobMarker`] environment variable, so
//!   the ones that did leave the group (`setsid cmd &`, a double fork) are
//!   found in `/proc` and stopped with it.
//! - stdout and stderr are ONE pipe (both fds 1 and 2 of bash are its write
//!   end), as a terminal is one pty: the bytes arrive in the order the
//!   command wrote them, whichever stream it used.
//! - stdin is `/dev/null`, so `read`, `input()` and friends see EOF at once.
//! - Stop: SIGTERM to the group and the marked processes, then SIGKILL to
//!   both once something is still alive after the grace period.
//! - The timeout and the interrupt apply while bash runs; once it has
//!   exited, its result stands even if a background job outlives it.
//! - The call never waits for EOF forever: once bash has exited (or was
//!   stopped), the pipe is drained for at most `drain` and then dropped,
//!   even if a background descendant still holds it open.
//! - If the future is dropped mid-run (the pipeline gave up on it), the
//!   group and the marked processes get SIGKILL from [`Stopper`]'s `Drop`.
//!
//! The session and the group guard are [`crate::process`]'s, shared with
//! command hooks.

use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::AsyncReadExt as _;
use tokio::net::unix::pipe::Receiver;
use tokio::process::{Child, Command};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::output_cap::CappedText;
use super::spill::{OutputSink, Saved};
use crate::process::{new_session, spawner, GroupGuard, JobMarker, MARKER_VAR};

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
    /// Where the full output is saved when it is longer than the head and
    /// the tail ([`OutputSink`]).
    pub output_path: PathBuf,
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
    /// stdout and stderr in the order written, capped.
    pub output: CappedText,
    /// Where the full output is when `output` was cut.
    pub saved: Saved,
}

/// Stops everything one command started: its process group and every
/// process carrying its [`JobMarker`]. SIGKILLs both on drop unless
/// disarmed.
#[derive(Debug)]
pub struct Stopper {
    group: GroupGuard,
    marker: Option<JobMarker>,
}

impl Stopper {
    /// Guards the group led by `pid` and the processes marked `marker`.
    pub fn new(pid: Option<u32>, marker: JobMarker) -> Self {
        Self {
            group: GroupGuard::new(pid),
            marker: Some(marker),
        }
    }

    /// Sends `sig` to the group and to every marked process.
    pub fn signal(&self, sig: libc::c_int) {
        self.group.signal(sig);
        if let Some(m) = &self.marker {
            m.signal_all(sig);
        }
    }

    /// Waits until the group has no live member or `deadline` passes, then
    /// SIGKILLs what is left of the group and of the marked processes.
    pub async fn finish_until(&self, deadline: Instant) {
        self.group.wait_gone_until(deadline).await;
        self.kill_now();
    }

    /// SIGKILL to the group and to every marked process, now.
    pub fn kill_now(&self) {
        self.group.signal(libc::SIGKILL);
        if let Some(m) = &self.marker {
            m.kill_all();
        }
    }

    /// The marker's value (empty once disarmed), to name files after it.
    pub fn marker_value(&self) -> String {
        self.marker
            .as_ref()
            .map(|m| m.value().to_string())
            .unwrap_or_default()
    }

    /// Stops signalling the process group (its leader was reaped, so the
    /// id may be reused once the group is empty); the marker still works.
    pub fn forget_group(&mut self) {
        self.group.disarm();
    }

    /// Stops guarding: drop no longer kills (a finished command's
    /// background jobs keep running, as in a shell).
    pub fn disarm(&mut self) {
        self.group.disarm();
        self.marker = None;
    }
}

impl Drop for Stopper {
    fn drop(&mut self) {
        if let Some(m) = &self.marker {
            m.kill_all();
        }
    }
}

/// A started command: the child, its output pipe and its stopper.
pub struct Started {
    /// bash.
    pub child: Child,
    /// The read end of its one stdout+stderr pipe.
    pub output: Receiver,
    /// Stops it and everything it started.
    pub stopper: Stopper,
}

/// What a command is held to besides its process group: the sandbox
/// prepared for it (entered between `fork` and `exec`, after `setsid`) and
/// variables added to its environment (read-only git's, for example).
/// [`Jail::default`] is neither: the command runs as lathe does.
#[derive(Debug, Default)]
pub struct Jail {
    /// The sandbox to enter, when the command runs in one.
    pub sandbox: Option<crate::sandbox::Prepared>,
    /// More environment variables, after [`CHILD_ENV`].
    pub env: Vec<(String, String)>,
}

/// Starts `bash -c command` in `cwd` in a new session, with stdin
/// `/dev/null`, stdout and stderr on one pipe, [`CHILD_ENV`] and a fresh
/// [`JobMarker`], held to `jail`. Must run inside a tokio runtime. Errors:
/// creating the pipe, spawning bash (not installed, `cwd` missing, the
/// sandbox refused by the kernel).
pub fn start(command: &str, cwd: &Path, jail: Jail) -> io::Result<Started> {
    let (reader, writer) = io::pipe()?;
    let marker = JobMarker::new();
    // macOS: `sandbox-exec PROFILE -- bash -c …`; Linux enters the
    // sandbox between fork and exec instead (`install` below).
    let mut cmd = match jail.sandbox.as_ref().and_then(|s| s.launcher()) {
        Some((program, args)) => {
            let mut cmd = Command::new(program);
            cmd.args(args).arg("bash");
            cmd
        }
        None => Command::new("bash"),
    };
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer.try_clone()?))
        .stderr(Stdio::from(writer))
        .env(MARKER_VAR, marker.value())
        .kill_on_drop(true);
    for (key, value) in CHILD_ENV {
        cmd.env(key, value);
    }
    for (key, value) in &jail.env {
        cmd.env(key, value);
    }
    new_session(&mut cmd);
    if let Some(sandbox) = jail.sandbox {
        sandbox.install(&mut cmd);
    }
    // The Command holds the write ends; `spawn` drops it right after the
    // fork, leaving bash (and what it starts) as the only writers, so EOF
    // means they all closed it.
    let child = spawner::spawn(cmd)?;
    let output = Receiver::from_owned_fd(OwnedFd::from(reader))?;
    let stopper = Stopper::new(child.id(), marker);
    Ok(Started {
        child,
        output,
        stopper,
    })
}

/// Spawns `bash -c spec.command` (held to `jail`) and waits for it as described in the
/// module doc. Errors: the `io::Error` of spawning bash (not installed,
/// `cwd` missing). Output read errors end the reading of the pipe.
pub async fn run(
    spec: &RunSpec<'_>,
    jail: Jail,
    cancel: &CancellationToken,
    progress: Option<&ProgressFn>,
) -> io::Result<RunOutcome> {
    let mut sink = OutputSink::new(spec.head_chars, spec.tail_chars, spec.output_path.clone());
    if cancel.is_cancelled() {
        let (output, saved) = sink.finish();
        return Ok(RunOutcome {
            ending: Ending::Cancelled,
            output,
            saved,
        });
    }
    let Started {
        mut child,
        output,
        mut stopper,
    } = start(spec.command, spec.cwd, jail)?;
    let mut pipe = Some(output);
    let mut buf = vec![0u8; 16 * 1024];

    let timeout_at = Instant::now() + spec.timeout;
    let mut exit: Option<ExitStatus> = None;
    let mut stopped: Option<Ending> = None;
    let mut kill_at: Option<Instant> = None;
    let mut drain_until: Option<Instant> = None;

    loop {
        if exit.is_some() && pipe.is_none() {
            break;
        }
        // `biased`: deadlines first, so a flood of output cannot starve the
        // timeout.
        tokio::select! {
            biased;
            _ = sleep_until_opt(drain_until) => break,
            _ = cancel.cancelled(), if stopped.is_none() => {
                if exit.is_some() {
                    break; // bash already finished: keep its result
                }
                stopped = Some(Ending::Cancelled);
                stopper.signal(libc::SIGTERM);
                kill_at = Some(Instant::now() + spec.kill_grace);
            }
            // Only while bash runs: a job it left in the background is not
            // "the command" and must not turn a finished call into a timeout.
            _ = tokio::time::sleep_until(timeout_at), if stopped.is_none() && exit.is_none() => {
                stopped = Some(Ending::TimedOut);
                stopper.signal(libc::SIGTERM);
                kill_at = Some(Instant::now() + spec.kill_grace);
            }
            _ = sleep_until_opt(kill_at) => {
                stopper.kill_now();
                kill_at = None;
            }
            status = child.wait(), if exit.is_none() => {
                // A wait error means the child is gone from our view; treat
                // it as a kill so the result still says something true.
                exit = Some(status.unwrap_or_else(|_| ExitStatus::from_raw(libc::SIGKILL)));
                drain_until = Some(Instant::now() + spec.drain);
            }
            r = read_some(&mut pipe, &mut buf) => {
                take_chunk(r, &mut pipe, &buf, &mut sink, progress);
            }
        }
    }

    let ending = match stopped {
        Some(ending) => {
            // bash is gone, but a descendant may have trapped SIGTERM.
            stopper
                .finish_until(kill_at.unwrap_or_else(Instant::now))
                .await;
            ending
        }
        None => Ending::Exited(exit.unwrap_or_else(|| ExitStatus::from_raw(libc::SIGKILL))),
    };
    // A normal exit leaves background jobs (`server > log 2>&1 &`)
    // running, as a shell would; a stopped command is dead by now.
    stopper.disarm();
    let (output, saved) = sink.finish();
    Ok(RunOutcome {
        ending,
        output,
        saved,
    })
}

/// Reads from `pipe`, or waits forever when it is already closed (so the
/// `select!` branch stays quiet).
pub async fn read_some<R: tokio::io::AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buf: &mut [u8],
) -> io::Result<usize> {
    match pipe {
        Some(p) => p.read(buf).await,
        None => std::future::pending().await,
    }
}

/// Feeds a read result into the sink; EOF or an error closes the pipe.
fn take_chunk<R>(
    read: io::Result<usize>,
    pipe: &mut Option<R>,
    buf: &[u8],
    sink: &mut OutputSink,
    progress: Option<&ProgressFn>,
) {
    match read {
        Ok(0) | Err(_) => *pipe = None,
        Ok(n) => {
            sink.push(&buf[..n]);
            if let Some(p) = progress {
                p(&buf[..n]);
            }
        }
    }
}

/// Sleeps until `at`, or forever when `None`.
pub async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
