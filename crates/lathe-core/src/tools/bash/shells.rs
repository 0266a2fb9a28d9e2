//! Background shells: commands started by Bash with `run_in_background:
//! true` (Claude Code's contract), read with `BashOutput`, stopped with
//! `KillShell`, listed by `:Lathe jobs`.
//!
//! - One [`Shells`] per set of built-in tools, i.e. per session
//!   (`builtin_tools`); its ids are `bash_1`, `bash_2`, … and only its own
//!   tools can read or stop its jobs.
//! - A job's output (stdout and stderr on one pipe, in order) goes straight
//!   to `<dir>/<id>-<marker>.log` as it arrives: memory stays bounded
//!   whatever the job prints, and `BashOutput` reads the part of the file
//!   it has not returned yet.
//! - Every job is stopped with everything it started (process group and
//!   [`crate::process::JobMarker`]) by `KillShell`, when its `Shells` is
//!   dropped (the session ended: `:Lathe new`, a new session replacing
//!   it), and by [`kill_every_job`] (Neovim's `VimLeavePre`).

use std::io::{BufRead as _, Read as _, Seek as _, SeekFrom, Write as _};
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use super::output_cap::{CappedText, OutputCap};
use super::process::{read_some, sleep_until_opt, start, Jail, Started, Stopper};
use super::terminal::TerminalText;

/// How long after bash exited its job still counts as running while
/// something it started holds the output pipe.
const DRAIN: Duration = Duration::from_millis(1_000);

/// Every [`Shells`] alive in this process, for [`all_jobs`] and
/// [`kill_every_job`].
static LIVE: Mutex<Vec<Weak<Shells>>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Where a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    /// bash is still running.
    Running,
    /// bash exited by itself (a code, or a signal it did not get from us).
    Exited(ExitStatus),
    /// Stopped by `KillShell`, the end of the session or Neovim exiting.
    Killed,
}

/// One background command.
#[derive(Debug)]
pub struct Job {
    id: String,
    command: String,
    path: PathBuf,
    started: Instant,
    state: Mutex<JobState>,
    killed: AtomicBool,
    stopper: Mutex<Option<Stopper>>,
    /// Bytes written to the file so far.
    written: AtomicU64,
    /// Bytes of the file `BashOutput` has returned (or skipped by a filter).
    read: tokio::sync::Mutex<u64>,
    /// Started by the user (`lathe.tool()`), not by the model.
    by_user: bool,
}

/// What `:Lathe jobs` shows of one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInfo {
    /// `bash_N`.
    pub id: String,
    /// The command line.
    pub command: String,
    /// Where it is.
    pub state: JobState,
    /// Seconds since it started.
    pub elapsed_secs: u64,
    /// The file with its whole output.
    pub output_path: PathBuf,
}

/// New output of a job, as [`Job::read_new`] returns it.
#[derive(Debug, Clone)]
pub struct NewOutput {
    /// The new bytes (or the lines matching the filter), head and tail.
    pub text: CappedText,
    /// The job's state after the read.
    pub state: JobState,
}

impl Job {
    /// `bash_N`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// `true` when the user started it (`lathe.tool()`), `false` when the
    /// model did.
    pub fn started_by_user(&self) -> bool {
        self.by_user
    }

    /// The command line.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// The file with the job's whole output.
    pub fn output_path(&self) -> &Path {
        &self.path
    }

    /// Where it is now.
    pub fn state(&self) -> JobState {
        *lock(&self.state)
    }

    /// Time since it started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    fn info(&self) -> JobInfo {
        JobInfo {
            id: self.id.clone(),
            command: self.command.clone(),
            state: self.state(),
            elapsed_secs: self.elapsed().as_secs(),
            output_path: self.path.clone(),
        }
    }

    /// The output written since the last call (all of it the first time),
    /// at most `head_chars` + `tail_chars` characters shown; with `filter`,
    /// only its lines that match (the others are passed over, and stay in
    /// the file). Reads the file on a blocking thread, streaming: memory
    /// stays bounded however much is new. Errors: the file cannot be read
    /// (the OS error text).
    pub async fn read_new(
        self: &Arc<Self>,
        head_chars: usize,
        tail_chars: usize,
        filter: Option<regex::bytes::Regex>,
    ) -> Result<NewOutput, String> {
        let mut read = self.read.lock().await;
        // The state first: output written before bash exited is all in the
        // file by the time the state says so.
        let state = self.state();
        let end = self.written.load(Ordering::Acquire);
        let from = *read;
        let path = self.path.clone();
        let text = tokio::task::spawn_blocking(move || {
            read_region(&path, from, end, head_chars, tail_chars, filter.as_ref())
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
        *read = end;
        Ok(NewOutput { text, state })
    }

    /// Stops the job and everything it started: SIGTERM, then SIGKILL to
    /// what is left after `grace`. `false` when bash was not running (what
    /// it left behind, if anything, is SIGKILLed all the same).
    pub async fn kill(&self, grace: Duration) -> bool {
        if self.state() != JobState::Running {
            if let Some(stopper) = lock(&self.stopper).take() {
                stopper.kill_now();
            }
            return false;
        }
        let stopper = lock(&self.stopper).take();
        let Some(stopper) = stopper else {
            return false;
        };
        self.killed.store(true, Ordering::Release);
        stopper.signal(libc::SIGTERM);
        stopper
            .finish_until(tokio::time::Instant::now() + grace)
            .await;
        self.mark_killed();
        true
    }

    /// SIGKILL to the job and everything it started, at once (no runtime
    /// needed: the end of a session, Neovim exiting).
    pub fn kill_now(&self) {
        let stopper = lock(&self.stopper).take();
        if let Some(stopper) = stopper {
            self.killed.store(true, Ordering::Release);
            stopper.kill_now();
            self.mark_killed();
        }
    }

    fn mark_killed(&self) {
        let mut state = lock(&self.state);
        if *state == JobState::Running {
            *state = JobState::Killed;
        }
    }

    fn set_exited(&self, status: ExitStatus) {
        let mut state = lock(&self.state);
        if *state == JobState::Running {
            *state = if self.killed.load(Ordering::Acquire) {
                JobState::Killed
            } else {
                JobState::Exited(status)
            };
        }
        // bash is reaped: its group id may be reused once the group is
        // empty, so only the marker is used from now on.
        if let Some(s) = lock(&self.stopper).as_mut() {
            s.forget_group();
        }
    }
}

/// Streams bytes `from..end` of `path` through a head-and-tail cap; with
/// `filter`, only whole lines that match (a last line without `\n` is
/// tested as it is).
fn read_region(
    path: &Path,
    from: u64,
    end: u64,
    head_chars: usize,
    tail_chars: usize,
    filter: Option<&regex::bytes::Regex>,
) -> std::io::Result<CappedText> {
    let mut cap = OutputCap::new(head_chars, tail_chars);
    if end <= from {
        return Ok(cap.finish());
    }
    let mut file = std::fs::File::open(path)?;
    file.seek(SeekFrom::Start(from))?;
    let region = file.take(end - from);
    let mut reader = std::io::BufReader::with_capacity(64 * 1024, region);
    match filter {
        None => {
            let mut terminal = TerminalText::new();
            loop {
                let buf = reader.fill_buf()?;
                if buf.is_empty() {
                    break;
                }
                cap.push(terminal.push(buf).as_bytes());
                let n = buf.len();
                reader.consume(n);
            }
            cap.push(terminal.finish().as_bytes());
        }
        Some(re) => {
            let mut line = Vec::new();
            loop {
                line.clear();
                if reader.read_until(b'\n', &mut line)? == 0 {
                    break;
                }
                let shown = TerminalText::of(&line);
                let body = shown.strip_suffix('\n').unwrap_or(&shown);
                if re.is_match(body.as_bytes()) {
                    cap.push(shown.as_bytes());
                }
            }
        }
    }
    Ok(cap.finish())
}

/// The background shells of one session.
#[derive(Debug)]
pub struct Shells {
    dir: PathBuf,
    jobs: Mutex<Vec<Arc<Job>>>,
    next: AtomicU64,
}

impl Shells {
    /// Shells whose output files go to `dir` (created on the first job).
    pub fn new(dir: PathBuf) -> Arc<Self> {
        let shells = Arc::new(Self {
            dir,
            jobs: Mutex::new(Vec::new()),
            next: AtomicU64::new(1),
        });
        let mut live = lock(&LIVE);
        live.retain(|w| w.strong_count() > 0);
        live.push(Arc::downgrade(&shells));
        shells
    }

    /// Where output files go (also the foreground Bash's cut output).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Starts `bash -c command` in `cwd` in the background (see
    /// [`super::process::start`]) and returns its job at once; a task on
    /// the current tokio runtime copies its output to the file until the
    /// pipe closes. Errors: creating the file, spawning bash.
    pub fn start(&self, command: &str, cwd: &Path, jail: Jail) -> std::io::Result<Arc<Job>> {
        self.start_by(command, cwd, jail, false)
    }

    /// [`Shells::start`], saying whether the user started it (`by_user`)
    /// or the model.
    pub fn start_by(
        &self,
        command: &str,
        cwd: &Path,
        jail: Jail,
        by_user: bool,
    ) -> std::io::Result<Arc<Job>> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let id = format!("bash_{n}");
        std::fs::create_dir_all(&self.dir)?;
        let Started {
            mut child,
            output,
            stopper,
        } = start(command, cwd, jail)?;
        let path = self
            .dir
            .join(format!("{id}-{}.log", stopper.marker_value()));
        // On error `stopper` is dropped here, which kills what was started.
        let mut file = std::fs::File::create(&path)?;
        let job = Arc::new(Job {
            id,
            command: command.to_string(),
            path,
            started: Instant::now(),
            state: Mutex::new(JobState::Running),
            killed: AtomicBool::new(false),
            stopper: Mutex::new(Some(stopper)),
            written: AtomicU64::new(0),
            read: tokio::sync::Mutex::new(0),
            by_user,
        });
        lock(&self.jobs).push(job.clone());
        let task_job = job.clone();
        tokio::spawn(async move {
            let job = task_job;
            let mut pipe = Some(output);
            let mut buf = vec![0u8; 16 * 1024];
            // The exit is published once the pipe is closed too (or after
            // DRAIN, when something bash left running holds it), so a read
            // that sees "exited" has bash's whole output.
            let mut exit: Option<ExitStatus> = None;
            let mut publish_at: Option<tokio::time::Instant> = None;
            loop {
                if exit.is_some() && pipe.is_none() {
                    break;
                }
                tokio::select! {
                    biased;
                    _ = sleep_until_opt(publish_at) => {
                        publish_at = None;
                        if let Some(status) = exit {
                            job.set_exited(status);
                        }
                    }
                    status = child.wait(), if exit.is_none() => {
                        exit = Some(status.unwrap_or_else(|_| ExitStatus::from_raw(libc::SIGKILL)));
                        publish_at = Some(tokio::time::Instant::now() + DRAIN);
                    }
                    r = read_some(&mut pipe, &mut buf) => match r {
                        Ok(0) | Err(_) => pipe = None,
                        Ok(n) => {
                            // A failed write loses output but not the job.
                            if file.write_all(&buf[..n]).is_ok() {
                                job.written.fetch_add(n as u64, Ordering::AcqRel);
                            }
                        }
                    },
                }
            }
            if let Some(status) = exit {
                job.set_exited(status);
            }
        });
        Ok(job)
    }

    /// The job called `id`, if this session started it.
    pub fn get(&self, id: &str) -> Option<Arc<Job>> {
        lock(&self.jobs).iter().find(|j| j.id == id).cloned()
    }

    /// Every job of this session, oldest first.
    pub fn list(&self) -> Vec<JobInfo> {
        lock(&self.jobs).iter().map(|j| j.info()).collect()
    }

    /// SIGKILLs every running job and what it started.
    pub fn kill_all(&self) {
        let jobs: Vec<Arc<Job>> = lock(&self.jobs).clone();
        for job in jobs {
            job.kill_now();
        }
    }
}

impl Drop for Shells {
    fn drop(&mut self) {
        self.kill_all();
    }
}

fn live_shells() -> Vec<Arc<Shells>> {
    lock(&LIVE).iter().filter_map(Weak::upgrade).collect()
}

/// Every background job of every live session in this process (`:Lathe
/// jobs`), oldest session first.
pub fn all_jobs() -> Vec<JobInfo> {
    live_shells().iter().flat_map(|s| s.list()).collect()
}

/// SIGKILLs every background job of every session and what they started
/// (Neovim's `VimLeavePre`).
pub fn kill_every_job() {
    for shells in live_shells() {
        shells.kill_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn wait_state(job: &Job, pred: impl Fn(JobState) -> bool) {
        let until = Instant::now() + Duration::from_secs(10);
        while !pred(job.state()) && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test]
    async fn output_is_read_once_in_order_and_the_exit_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let shells = Shells::new(dir.path().join("out"));
        let job = shells
            .start(
                "echo a; echo b >&2; echo c; exit 3",
                dir.path(),
                Jail::default(),
            )
            .unwrap();
        assert_eq!(job.id(), "bash_1");
        wait_state(&job, |s| s != JobState::Running).await;
        let new = job.read_new(100, 100, None).await.unwrap();
        assert_eq!(new.text.head, "a\nb\nc\n");
        assert_eq!(new.state.map_code(), Some(3));
        let again = job.read_new(100, 100, None).await.unwrap();
        assert_eq!(again.text.total_bytes, 0);
        assert_eq!(
            std::fs::read_to_string(job.output_path()).unwrap(),
            "a\nb\nc\n"
        );
    }

    #[tokio::test]
    async fn filter_keeps_matching_lines() {
        let dir = tempfile::tempdir().unwrap();
        let shells = Shells::new(dir.path().to_path_buf());
        let job = shells
            .start(
                "printf 'ok 1\\nerror 2\\nok 3\\nerror 4'",
                dir.path(),
                Jail::default(),
            )
            .unwrap();
        wait_state(&job, |s| s != JobState::Running).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        let re = regex::bytes::Regex::new("^error").unwrap();
        let new = job.read_new(100, 100, Some(re)).await.unwrap();
        assert_eq!(new.text.head, "error 2\nerror 4");
    }

    #[tokio::test]
    async fn dropping_the_shells_kills_the_jobs() {
        let dir = tempfile::tempdir().unwrap();
        let shells = Shells::new(dir.path().to_path_buf());
        let job = shells
            .start("sleep 300", dir.path(), Jail::default())
            .unwrap();
        assert_eq!(shells.list().len(), 1);
        assert!(all_jobs().iter().any(|j| j.output_path == job.path));
        drop(shells);
        assert_eq!(job.state(), JobState::Killed);
        assert!(!all_jobs().iter().any(|j| j.output_path == job.path));
    }

    impl JobState {
        fn map_code(self) -> Option<i32> {
            match self {
                JobState::Exited(s) => s.code(),
                _ => None,
            }
        }
    }
}
