//! Cleanup of the files lathe keeps for the model to Read or Grep: the full
//! output of cut Bash commands (`<state>/bash-output/`, `tools::bash`) and
//! oversized tool results (`<state>/tool-results/<session>/`,
//! `execution::large_result`). Without it they pile up forever (one
//! flooding command keeps up to 1 GiB).
//!
//! The rule ([`sweep`]): a file goes when it was last written more than
//! [`RETENTION`] (7 days) ago **and** no running lathe process still names
//! it:
//! - a Bash output file's name carries the id of the process that wrote it
//!   (`[<shell id>-]<pid>-<n>-<nanos>.log`, `process::JobMarker`); while
//!   that process runs (its background commands and every result it
//!   returned may be read), the file stays;
//! - a session's folder of results holds one `.lathe-pid-<pid>` marker per
//!   process that has the session open ([`hold_marker_name`], written by
//!   `ResultStore` when it saves a result or opens a session that has
//!   results: a resumed one); while one of them runs, the folder stays.
//!   Markers of ended processes, and folders left empty, are removed.
//!
//! So a session resumed more than 7 days after a command may find that
//! command's saved output gone (its Read says the file does not exist),
//! never a file of a session that is running.
//!
//! [`start`] runs the sweep once per process and state directory, on a
//! thread of its own (never Neovim's main thread), the first time the
//! tools of a session are built.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// How long a saved output is kept after it was last written (7 days).
pub const RETENTION: Duration = Duration::from_secs(7 * 24 * 60 * 60);
/// The folder of Bash outputs below the state directory.
pub const BASH_OUTPUT_DIR: &str = "bash-output";
/// The folder of oversized tool results below the state directory.
pub const TOOL_RESULTS_DIR: &str = "tool-results";
/// Prefix of a session folder's marker naming a process that holds it.
pub const HOLD_MARKER_PREFIX: &str = ".lathe-pid-";

/// The marker file name saying process `pid` has a session open
/// (`.lathe-pid-<pid>`).
pub fn hold_marker_name(pid: u32) -> String {
    format!("{HOLD_MARKER_PREFIX}{pid}")
}

/// What one [`sweep`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Swept {
    /// Files removed (saved outputs, results, and markers of ended
    /// processes).
    pub removed: Vec<PathBuf>,
    /// Old files kept because a running process still names them.
    pub kept_live: usize,
}

/// The id of the process that wrote a Bash output file, from its name
/// (`[<shell id>-]<pid>-<n>-<nanos>.log`); `None` when the name is not
/// one lathe makes.
pub fn writer_pid(file_name: &str) -> Option<u32> {
    let stem = file_name.strip_suffix(".log")?;
    let fields: Vec<&str> = stem.split('-').collect();
    let n = fields.len();
    if n < 3 || !fields[n - 2..].iter().all(|f| f.parse::<u64>().is_ok()) {
        return None;
    }
    fields[n - 3].parse().ok()
}

/// `true` while process `pid` exists (`kill(pid, 0)` succeeds or is
/// refused for permission); `false` for 0 and ids out of range.
pub fn pid_alive(pid: u32) -> bool {
    let Ok(id) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if id <= 0 {
        return false;
    }
    // SAFETY: signal 0 sends nothing; it only checks the process exists.
    let rc = unsafe { libc::kill(id, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// `true` when `meta` was last written more than `retention` before `now`.
fn is_old(meta: &fs::Metadata, now: SystemTime, retention: Duration) -> bool {
    meta.modified()
        .ok()
        .and_then(|t| now.duration_since(t).ok())
        .is_some_and(|age| age > retention)
}

/// Removes, below `state_dir`, the saved outputs older than `retention` at
/// `now` that no running process names (see the module's rule), with
/// `alive` telling whether a process id runs. Errors are skipped (a file
/// that cannot be removed stays); symlinks and folders inside are left
/// alone. Returns what was removed and how many old files were kept.
pub fn sweep(
    state_dir: &Path,
    now: SystemTime,
    retention: Duration,
    alive: &dyn Fn(u32) -> bool,
) -> Swept {
    let mut swept = Swept::default();
    sweep_bash_outputs(
        &state_dir.join(BASH_OUTPUT_DIR),
        now,
        retention,
        alive,
        &mut swept,
    );
    if let Ok(sessions) = fs::read_dir(state_dir.join(TOOL_RESULTS_DIR)) {
        for session in sessions.flatten() {
            if session.file_type().is_ok_and(|t| t.is_dir()) {
                sweep_session(&session.path(), now, retention, alive, &mut swept);
            }
        }
    }
    swept
}

fn sweep_bash_outputs(
    dir: &Path,
    now: SystemTime,
    retention: Duration,
    alive: &dyn Fn(u32) -> bool,
    swept: &mut Swept,
) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.file_type().is_file() || !is_old(&meta, now, retention) {
            continue;
        }
        let name = entry.file_name();
        if writer_pid(&name.to_string_lossy()).is_some_and(alive) {
            swept.kept_live += 1;
            continue;
        }
        if fs::remove_file(entry.path()).is_ok() {
            swept.removed.push(entry.path());
        }
    }
}

/// One session's folder of results: kept whole while a holder runs; else
/// the dead holders' markers and the old results go, and the folder when
/// it is left empty.
fn sweep_session(
    dir: &Path,
    now: SystemTime,
    retention: Duration,
    alive: &dyn Fn(u32) -> bool,
    swept: &mut Swept,
) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut markers = Vec::new();
    let mut old = Vec::new();
    let mut held = false;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(pid) = name.strip_prefix(HOLD_MARKER_PREFIX) {
            match pid.parse::<u32>() {
                Ok(pid) if alive(pid) => held = true,
                _ => markers.push(entry.path()),
            }
            continue;
        }
        let Ok(meta) = entry.metadata() else { continue };
        if meta.file_type().is_file() && is_old(&meta, now, retention) {
            old.push(entry.path());
        }
    }
    if held {
        swept.kept_live += old.len();
        return;
    }
    for path in markers.into_iter().chain(old) {
        if fs::remove_file(&path).is_ok() {
            swept.removed.push(path);
        }
    }
    // Only an empty folder goes (`remove_dir` refuses any other).
    let _ = fs::remove_dir(dir);
}

/// State directories already swept by this process.
static STARTED: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

/// How many state directories this process has started sweeping
/// ([`start`]): 0 until the first prompt or tool call (`setup()` starts no
/// thread; a test reads it).
pub fn sweeps_started() -> usize {
    STARTED
        .lock()
        .map(|s| s.as_ref().map_or(0, HashSet::len))
        .unwrap_or(0)
}

/// Starts [`sweep`] of `state_dir` with [`RETENTION`] and [`pid_alive`] on
/// a thread of its own, the first time it is called for that directory in
/// this process (later calls return at once). Returns `true` when it
/// started one. Nothing is reported: a sweep that fails leaves the files.
pub fn start(state_dir: &Path) -> bool {
    let first = match STARTED.lock() {
        Ok(mut started) => started
            .get_or_insert_with(HashSet::new)
            .insert(state_dir.to_path_buf()),
        Err(_) => false,
    };
    if !first {
        return false;
    }
    let dir = state_dir.to_path_buf();
    std::thread::Builder::new()
        .name("lathe-retention".into())
        .spawn(move || {
            sweep(&dir, SystemTime::now(), RETENTION, &pid_alive);
        })
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: Duration = Duration::from_secs(24 * 60 * 60);

    /// A file at `path` last written `age` before `now`.
    fn file(path: &Path, now: SystemTime, age: Duration) {
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).expect("mkdir");
        }
        fs::write(path, "output\n").expect("write");
        let f = fs::File::options().write(true).open(path).expect("open");
        f.set_modified(now - age).expect("set mtime");
    }

    #[test]
    fn golden_names() {
        assert_eq!(RETENTION, Duration::from_secs(604_800));
        assert_eq!(hold_marker_name(42), ".lathe-pid-42");
        assert_eq!(
            (BASH_OUTPUT_DIR, TOOL_RESULTS_DIR),
            ("bash-output", "tool-results")
        );
    }

    #[test]
    fn the_writer_is_read_from_the_names_lathe_makes() {
        assert_eq!(writer_pid("1234-5-678.log"), Some(1234));
        assert_eq!(writer_pid("bash_1-1234-5-678.log"), Some(1234));
        let marker = crate::process::JobMarker::new();
        assert_eq!(
            writer_pid(&format!("bash_9-{}.log", marker.value())),
            Some(std::process::id())
        );
        assert_eq!(
            writer_pid(&format!("{}.log", marker.value())),
            Some(std::process::id())
        );
        for other in ["notes.txt", "a-b-c.log", "5-6.log", "x.log"] {
            assert_eq!(writer_pid(other), None, "{other}");
        }
    }

    #[test]
    fn pid_alive_sees_this_process_and_not_an_ended_one() {
        assert!(pid_alive(std::process::id()));
        assert!(!pid_alive(0));
        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let pid = child.id();
        child.wait().expect("wait");
        assert!(!pid_alive(pid));
    }

    #[test]
    fn old_outputs_of_ended_processes_go_and_live_or_recent_ones_stay() {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path();
        let now = SystemTime::now();
        let out = state.join(BASH_OUTPUT_DIR);
        let (dead, live) = (111, 222);
        let alive = |pid: u32| pid == live;
        file(&out.join("111-1-5.log"), now, 8 * DAY); // old, ended: goes
        file(&out.join("bash_2-111-2-5.log"), now, 8 * DAY); // old, ended: goes
        file(&out.join("222-1-5.log"), now, 30 * DAY); // its writer runs
        file(&out.join("bash_1-222-3-5.log"), now, 30 * DAY); // a live background job
        file(&out.join("111-3-5.log"), now, 6 * DAY); // recent
        file(&out.join("stray.log"), now, 8 * DAY); // no writer: age decides
        let results = state.join(TOOL_RESULTS_DIR);
        // An ended session: its old results and its dead holder go, then
        // its folder; a recent result in another ended session stays.
        file(&results.join("s-ended/toolu_1.txt"), now, 9 * DAY);
        file(
            &results.join("s-ended").join(hold_marker_name(dead)),
            now,
            9 * DAY,
        );
        file(&results.join("s-recent/toolu_2.txt"), now, DAY);
        file(&results.join("s-recent/toolu_3.txt"), now, 9 * DAY);
        // A session a running process holds (e.g. resumed): all stays.
        file(&results.join("s-open/toolu_4.txt"), now, 40 * DAY);
        file(
            &results.join("s-open").join(hold_marker_name(live)),
            now,
            40 * DAY,
        );
        file(
            &results.join("s-open").join(hold_marker_name(dead)),
            now,
            40 * DAY,
        );

        let swept = sweep(state, now, RETENTION, &alive);

        let mut left: Vec<String> = walk(state);
        left.sort();
        assert_eq!(
            left,
            [
                "bash-output/111-3-5.log",
                "bash-output/222-1-5.log",
                "bash-output/bash_1-222-3-5.log",
                "tool-results/s-open/.lathe-pid-111",
                "tool-results/s-open/.lathe-pid-222",
                "tool-results/s-open/toolu_4.txt",
                "tool-results/s-recent/toolu_2.txt",
            ]
        );
        assert_eq!(swept.removed.len(), 6, "{:?}", swept.removed);
        assert_eq!(swept.kept_live, 3);
        assert!(!results.join("s-ended").exists(), "an emptied folder goes");
    }

    #[test]
    fn a_missing_state_directory_is_nothing_to_do() {
        let dir = tempfile::tempdir().expect("tempdir");
        let swept = sweep(
            &dir.path().join("none"),
            SystemTime::now(),
            RETENTION,
            &|_| false,
        );
        assert_eq!(swept, Swept::default());
    }

    #[test]
    fn start_sweeps_once_per_directory_off_the_calling_thread() {
        let dir = tempfile::tempdir().expect("tempdir");
        let now = SystemTime::now();
        let old = dir.path().join(BASH_OUTPUT_DIR).join("stray.log");
        file(&old, now, 8 * DAY);
        assert!(start(dir.path()));
        assert!(!start(dir.path()), "once per process and directory");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while old.exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!old.exists(), "the sweep ran");
    }

    /// Files below `root`, relative, with `/`.
    fn walk(root: &Path) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for e in fs::read_dir(&dir).expect("read_dir").flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if let Ok(rel) = p.strip_prefix(root) {
                    out.push(rel.display().to_string());
                }
            }
        }
        out
    }
}
