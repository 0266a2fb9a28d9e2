//! Child processes in a session and process group of their own, so that
//! everything a command starts can be stopped together. Used by the Bash
//! tool (`tools::bash::process`) and by command hooks (`hooks`).
//!
//! - [`new_session`] makes the child call `setsid()` before `exec`: it leads
//!   a new session and process group, with no controlling terminal (nothing
//!   can open `/dev/tty` to prompt), and its pid is the group id.
//! - [`GroupGuard`] signals that group with `killpg(2)`, waits for its live
//!   members to go, and SIGKILLs it when dropped unless disarmed.
//! - [`JobMarker`] is an environment variable every descendant inherits, so
//!   the ones that left the group (`setsid`, double fork) are found in
//!   `/proc` and stopped too.
//! - [`spawner::spawn`] forks every child on a thread at Neovim's priority,
//!   while lathe's runtime threads run lower ([`spawner::lower_this_thread`]).

mod group;
mod marker;
pub mod spawner;

pub use group::GroupGuard;
pub use marker::{kill_everything_marked_by_this_process, JobMarker, MARKER_VAR};

use std::io;
use std::os::unix::process::CommandExt as _;

use tokio::process::Command;

/// Makes the child of `cmd` call `setsid(2)` between `fork` and `exec`, so
/// that it leads a new session and process group (its pid is the group id
/// [`GroupGuard::new`] takes). Spawning then fails with the `setsid` error,
/// which cannot happen for a freshly forked child that is not a group
/// leader.
pub fn new_session(cmd: &mut Command) -> &mut Command {
    // SAFETY: the closure runs in the forked child before exec and only
    // calls setsid(2), which is async-signal-safe; it allocates nothing.
    unsafe {
        cmd.as_std_mut().pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd
}
