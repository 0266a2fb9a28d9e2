//! A child's process group: signals to all of it, a liveness check that
//! ignores zombies, and SIGKILL on drop.
//!
//! [`super::new_session`] made the child's pid the group id, so `killpg(2)`
//! reaches every descendant that did not move to another group on purpose.

use std::time::Duration;

use tokio::time::Instant;

/// How often [`GroupGuard::wait_gone_until`] looks again.
const POLL: Duration = Duration::from_millis(20);

/// The child's process group; SIGKILLs it on drop unless disarmed.
#[derive(Debug)]
pub struct GroupGuard {
    /// Process group id (= the leader's pid); `None` once disarmed or if the
    /// pid was unavailable.
    pgid: Option<libc::pid_t>,
}

impl GroupGuard {
    /// Guards the group led by `pid` (`Child::id()` of a child spawned with
    /// [`super::new_session`]); `None` (the child already reaped) guards
    /// nothing.
    pub fn new(pid: Option<u32>) -> Self {
        Self {
            pgid: pid.and_then(|p| libc::pid_t::try_from(p).ok()),
        }
    }

    /// Sends `sig` to the whole group; `false` when no process (not even a
    /// zombie) is left in it, or the guard is disarmed.
    pub fn signal(&self, sig: libc::c_int) -> bool {
        match self.pgid {
            // SAFETY: killpg has no memory-safety preconditions; pgid > 1
            // keeps a bad id from meaning "every process".
            Some(pgid) if pgid > 1 => unsafe { libc::killpg(pgid, sig) == 0 },
            _ => false,
        }
    }

    /// Polls until no live process is left in the group or `deadline`
    /// passes. Zombies waiting for their new parent to reap them do not
    /// count: they can hold nothing open.
    pub async fn wait_gone_until(&self, deadline: Instant) {
        while self.has_live_members() && Instant::now() < deadline {
            tokio::time::sleep(POLL).await;
        }
    }

    /// `true` when a non-zombie process is in the group. Uses `/proc` where
    /// it exists; elsewhere any member, zombie or not, counts.
    fn has_live_members(&self) -> bool {
        if !self.signal(0) {
            return false;
        }
        let Some(pgid) = self.pgid else {
            return false;
        };
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return true;
        };
        entries.flatten().any(|entry| {
            std::fs::read_to_string(entry.path().join("stat"))
                .ok()
                .and_then(|stat| live_group_of(&stat))
                == Some(pgid)
        })
    }

    /// Stops guarding: drop no longer kills.
    pub fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.signal(libc::SIGKILL);
    }
}

/// The process group of a `/proc/<pid>/stat` line (`pid (comm) S ppid pgrp
/// …`), or `None` for a zombie/dead process or a line that does not parse.
/// `comm` may hold spaces and parentheses, so parsing starts after the last `)`.
fn live_group_of(stat: &str) -> Option<libc::pid_t> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    if state == "Z" || state == "X" {
        return None;
    }
    fields.next()?; // ppid
    fields.next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines() {
        assert_eq!(
            live_group_of("123 (sleep) S 1 120 120 0 -1 4194560"),
            Some(120)
        );
        assert_eq!(live_group_of("123 (a) b (c)) R 1 77 77 0"), Some(77));
        assert_eq!(live_group_of("123 (bash) Z 1 120 120 0"), None);
        assert_eq!(live_group_of("garbage"), None);
    }
}
