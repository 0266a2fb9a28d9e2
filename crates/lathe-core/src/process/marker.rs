//! A job marker: an environment variable every process of one command
//! inherits, so that processes which left the command's process group
//! (`setsid`, a double fork, a daemon) can still be found and stopped.
//!
//! `killpg(2)` reaches only the group; `setsid sleep 300 &` makes a new
//! group and session, and a double fork reparents to init. Both keep the
//! environment they were started with, and `/proc/<pid>/environ` shows it
//! (for processes of the same user). [`JobMarker::signal_all`] scans
//! `/proc` and signals every process whose environment holds
//! `LATHE_JOB=<id>`. Why this rather than a child subreaper is in
//! docs/tools.md ("Bash: stopping everything a command started").
//!
//! What escapes: a process that replaces its whole environment before
//! `exec` (`env -i`, a daemon that sanitizes it). On systems without
//! `/proc` the sweep finds nothing and only the group is stopped.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The environment variable that carries the marker.
pub const MARKER_VAR: &str = "LATHE_JOB";

/// How many times [`JobMarker::kill_all`] scans `/proc` at most: a process
/// may fork between a scan and its SIGKILL, so the sweep repeats until a
/// scan finds nobody.
const KILL_ROUNDS: usize = 20;

/// A marker unique to one command of this process (`<pid>-<n>-<ns>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobMarker {
    value: String,
}

impl Default for JobMarker {
    fn default() -> Self {
        Self::new()
    }
}

impl JobMarker {
    /// A fresh marker (process id, a counter and the clock, so two lathe
    /// processes or two commands never share one).
    pub fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default();
        Self {
            value: format!(
                "{}-{}-{nanos}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ),
        }
    }

    /// The value of [`MARKER_VAR`] for the child's environment.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// Pids of the live (non-zombie) processes carrying this marker; empty
    /// where `/proc` cannot be read. Never this process itself.
    pub fn pids(&self) -> Vec<libc::pid_t> {
        marked_pids(&format!("{MARKER_VAR}={}", self.value), false)
    }

    /// Sends `sig` to every process carrying the marker; returns how many
    /// were signalled.
    pub fn signal_all(&self, sig: libc::c_int) -> usize {
        let pids = self.pids();
        for &pid in &pids {
            if pid > 1 {
                // SAFETY: kill(2) has no memory-safety preconditions; pid > 1
                // keeps a bad id from meaning a group or every process.
                unsafe {
                    libc::kill(pid, sig);
                }
            }
        }
        pids.len()
    }

    /// SIGKILLs every process carrying the marker, scanning again until a
    /// scan finds none (at most a fixed number of rounds).
    pub fn kill_all(&self) {
        for _ in 0..KILL_ROUNDS {
            if self.signal_all(libc::SIGKILL) == 0 {
                return;
            }
        }
    }
}

/// Pids of the live (non-zombie) processes, other than this one, with an
/// environment variable equal to `needle` (or starting with it when
/// `prefix`); empty where `/proc` cannot be read.
fn marked_pids(needle: &str, prefix: bool) -> Vec<libc::pid_t> {
    let own = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            if pid == own {
                return None;
            }
            let base = entry.path();
            let stat = std::fs::read_to_string(base.join("stat")).ok()?;
            if is_zombie(&stat) {
                return None;
            }
            let environ = std::fs::read(base.join("environ")).ok()?;
            environ
                .split(|&b| b == 0)
                .any(|var| {
                    if prefix {
                        var.starts_with(needle.as_bytes())
                    } else {
                        var == needle.as_bytes()
                    }
                })
                .then(|| libc::pid_t::try_from(pid).ok())
                .flatten()
        })
        .collect()
}

/// SIGKILLs every process that carries a marker made by this process
/// (`LATHE_JOB=<our pid>-…`): what any command of any session left running
/// after it exited (`cmd &`, `setsid`, a daemon), scanning again until a
/// scan finds none. Called when Neovim exits, so nothing lathe started
/// outlives it. Returns how many processes were signalled in all.
pub fn kill_everything_marked_by_this_process() -> usize {
    let needle = format!("{MARKER_VAR}={}-", std::process::id());
    let mut total = 0;
    for _ in 0..KILL_ROUNDS {
        let pids = marked_pids(&needle, true);
        if pids.is_empty() {
            break;
        }
        for &pid in &pids {
            if pid > 1 {
                // SAFETY: as in `signal_all`.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
        total += pids.len();
    }
    total
}

/// `true` for a `/proc/<pid>/stat` line of a zombie or dead process.
fn is_zombie(stat: &str) -> bool {
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .is_some_and(|s| s == "Z" || s == "X")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_unique() {
        let a = JobMarker::new();
        let b = JobMarker::new();
        assert_ne!(a, b);
        assert!(a.value().starts_with(&format!("{}-", std::process::id())));
    }

    #[test]
    fn zombie_lines() {
        assert!(is_zombie("12 (a b) Z 1 2"));
        assert!(!is_zombie("12 (a) Z) S 1 2"));
        assert!(!is_zombie("garbage"));
    }

    #[test]
    fn finds_and_kills_an_escaped_process() {
        let marker = JobMarker::new();
        let mut child = std::process::Command::new("setsid")
            .args(["sleep", "300.4711"])
            .env(MARKER_VAR, marker.value())
            .spawn()
            .unwrap();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while marker.pids().is_empty() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(!marker.pids().is_empty());
        marker.kill_all();
        let _ = child.wait();
        assert!(marker.pids().is_empty());
    }
}
