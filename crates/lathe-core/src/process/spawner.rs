//! Child processes are forked from one thread of their own, at Neovim's
//! priority, while lathe's runtime threads run at a lower one
//! (docs/threads.md, "Threads and the FFI boundary").
//!
//! Why: while an answer streams, lathe's worker threads (network, SSE
//! decoding, tools) and Neovim's main thread want the CPU at the same time.
//! On a machine with few cores the main thread then waits for a CPU with
//! the user's keys and timers queued behind it. [`lower_this_thread`] makes
//! each runtime thread a little nicer (`nice(2)`, per thread on Linux, see
//! `setpriority(2)` NOTES), so the kernel prefers Neovim; an idle main
//! thread still leaves the workers every cycle.
//!
//! A child inherits the nice value of the thread that forks it, and an
//! unprivileged process cannot lower its nice value again. A Bash command,
//! a hook or an MCP server forked from a worker would run slower than the
//! user's own shell for its whole life. So every child lathe starts is
//! forked by [`spawn`] on the `lathe-spawner` thread, which [`start`] makes
//! from the thread that starts the runtime (Neovim's main thread): children
//! get Neovim's own priority, whatever the worker that asked for them.

use std::io;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc;
use std::sync::Mutex;

use tokio::process::{Child, Command};
use tokio::runtime::Handle;

/// How much nicer than the thread that started the runtime lathe's runtime
/// threads run (a `nice(2)` increment; the kernel clamps the result at 19).
/// Under Linux's scheduler a nice 5 thread gets about a third of a CPU's
/// share next to a busy nice 0 thread, and all of it next to an idle one.
pub const WORKER_NICE_INCREMENT: i32 = 5;

/// The error text of a [`spawn`] called outside a tokio runtime (tokio's
/// child-process reaping needs one).
pub const NO_RUNTIME: &str = "lathe could not start the process: no background runtime is running";

/// The error text of a [`spawn`] whose spawner thread could not be started
/// or is gone.
pub const SPAWNER_GONE: &str =
    "lathe could not start the process: its spawner thread is not running";

type Job = Box<dyn FnOnce() + Send>;

/// The spawner thread's queue; `None` until [`start`] (or the first
/// [`spawn`]) makes the thread.
static SPAWNER: Mutex<Option<mpsc::Sender<Job>>> = Mutex::new(None);

/// [`BASE_NICE`] before [`start`] (no nice value is this large).
const UNSET: i32 = i32::MAX;

/// The nice value of the thread that called [`start`] first.
static BASE_NICE: AtomicI32 = AtomicI32::new(UNSET);

/// Sets the calling thread's nice value to [`WORKER_NICE_INCREMENT`] above
/// the nice of the thread that called [`start`] (or its own, before
/// that). Meant for a runtime builder's `on_thread_start`. Absolute, not
/// relative: a blocking-pool thread made by a worker inherits the worker's
/// nice and must not go lower still. Best effort: a failure (a seccomp
/// filter) leaves the thread as it was; the kernel clamps at 19. Linux
/// only: elsewhere the nice value belongs to the whole process, so this
/// does nothing.
pub fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    {
        let base = match BASE_NICE.load(Ordering::Relaxed) {
            UNSET => this_threads_nice(),
            base => base,
        };
        // SAFETY: setpriority(2) with who = 0 changes only the calling
        // thread's nice value on Linux (NPTL; see its NOTES); no memory is
        // passed.
        unsafe {
            libc::setpriority(libc::PRIO_PROCESS, 0, base + WORKER_NICE_INCREMENT);
        }
    }
}

/// The calling thread's nice value (-20..=19).
#[cfg(target_os = "linux")]
fn this_threads_nice() -> i32 {
    // SAFETY: getpriority(2) with who = 0 reads the calling thread's nice
    // value; it cannot fail for the caller itself.
    unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }
}

/// Starts the spawner thread from the calling thread, whose nice value
/// every child of [`spawn`] then gets and which [`lower_this_thread`]
/// counts from. Call it before the threads that [`lower_this_thread`]
/// lowers exist (the runtime's start does). Does nothing when the thread
/// runs already. Errors: the OS refused the thread.
pub fn start() -> io::Result<()> {
    let started = sender().map(drop);
    #[cfg(target_os = "linux")]
    let _ = BASE_NICE.compare_exchange(
        UNSET,
        this_threads_nice(),
        Ordering::Relaxed,
        Ordering::Relaxed,
    );
    started
}

/// Spawns `cmd` on the spawner thread, with the caller's tokio runtime
/// entered there (its reaper and I/O driver own the child), and returns the
/// child. The command is dropped on that thread right after the fork, so
/// the parent's copies of pipe ends it held are closed when this returns.
/// Blocks the caller for as long as the fork and exec take, as
/// `Command::spawn` itself does.
///
/// Errors: what `Command::spawn` gives (program missing, `cwd` missing, a
/// `pre_exec` failure); [`NO_RUNTIME`] outside a tokio runtime;
/// [`SPAWNER_GONE`] when the thread cannot be started.
pub fn spawn(cmd: Command) -> io::Result<Child> {
    let runtime = Handle::try_current().map_err(|_| io::Error::other(NO_RUNTIME))?;
    let (reply, answer) = mpsc::sync_channel(1);
    let mut job: Job = Box::new(move || {
        let _entered = runtime.enter();
        let mut cmd = cmd;
        let child = std::panic::catch_unwind(AssertUnwindSafe(|| cmd.spawn()))
            .unwrap_or_else(|_| Err(io::Error::other(SPAWNER_GONE)));
        drop(cmd);
        let _ = reply.send(child);
    });
    // A thread that died (it never should: jobs cannot panic out of it)
    // is replaced once.
    for _ in 0..2 {
        match sender()?.send(job) {
            Ok(()) => {
                return answer
                    .recv()
                    .unwrap_or_else(|_| Err(io::Error::other(SPAWNER_GONE)))
            }
            Err(mpsc::SendError(back)) => {
                job = back;
                *SPAWNER.lock().unwrap_or_else(|p| p.into_inner()) = None;
            }
        }
    }
    Err(io::Error::other(SPAWNER_GONE))
}

/// The spawner thread's queue, starting the thread from the calling thread
/// when there is none.
fn sender() -> io::Result<mpsc::Sender<Job>> {
    let mut slot = SPAWNER.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(tx) = &*slot {
        return Ok(tx.clone());
    }
    let (tx, rx) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("lathe-spawner".into())
        .spawn(move || {
            for job in rx {
                job();
            }
        })?;
    *slot = Some(tx.clone());
    Ok(tx)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use std::process::Stdio;

    /// The nice value of the process's main thread (the test harness never
    /// changes it).
    fn process_nice() -> i32 {
        nice_of(&format!("/proc/{}/stat", std::process::id()))
    }

    /// Field 19 of a `/proc/…/stat` line: the nice value.
    fn nice_of(stat_path: &str) -> i32 {
        let stat = std::fs::read_to_string(stat_path).unwrap();
        let after_name = &stat[stat.rfind(')').unwrap() + 2..];
        after_name.split(' ').nth(16).unwrap().parse().unwrap()
    }

    /// What `nice` prints in a child spawned from a runtime whose threads
    /// were lowered, as lathe's are.
    fn child_nice_from_a_lowered_runtime() -> (i32, i32) {
        start().unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .on_thread_start(lower_this_thread)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            tokio::spawn(async {
                let worker = this_threads_nice();
                // A blocking-pool thread, made by the lowered worker.
                let blocking = tokio::task::spawn_blocking(this_threads_nice)
                    .await
                    .unwrap();
                assert_eq!(blocking, worker, "not lowered twice");
                let mut cmd = Command::new("nice");
                cmd.stdout(Stdio::piped());
                let out = spawn(cmd).unwrap().wait_with_output().await.unwrap();
                let child: i32 = String::from_utf8(out.stdout)
                    .unwrap()
                    .trim()
                    .parse()
                    .unwrap();
                (worker, child)
            })
            .await
            .unwrap()
        })
    }

    #[test]
    fn children_of_lowered_workers_get_the_starting_threads_priority() {
        let (worker, child) = child_nice_from_a_lowered_runtime();
        assert_eq!(
            worker,
            (process_nice() + WORKER_NICE_INCREMENT).min(19),
            "the worker runs nicer"
        );
        assert_eq!(child, process_nice(), "the child does not inherit it");
    }

    #[tokio::test]
    async fn spawns_in_a_current_thread_runtime_and_closes_the_commands_pipe_ends() {
        let (reader, writer) = std::io::pipe().unwrap();
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo hi"]).stdout(Stdio::from(writer));
        let mut child = spawn(cmd).unwrap();
        assert!(child.wait().await.unwrap().success());
        // EOF only arrives if the command's copy of the write end was
        // dropped with it.
        let mut text = String::new();
        std::io::Read::read_to_string(&mut &reader, &mut text).unwrap();
        assert_eq!(text, "hi\n");
    }

    #[tokio::test]
    async fn a_missing_program_is_the_spawn_error() {
        let err = spawn(Command::new("/nonexistent/lathe-no-such-program")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn outside_a_runtime_it_says_so() {
        let err = spawn(Command::new("true")).unwrap_err();
        assert_eq!(err.to_string(), NO_RUNTIME);
    }

    #[test]
    fn error_texts() {
        assert_eq!(
            NO_RUNTIME,
            "lathe could not start the process: no background runtime is running"
        );
        assert_eq!(
            SPAWNER_GONE,
            "lathe could not start the process: its spawner thread is not running"
        );
    }
}
