//! The operating-system sandbox Bash commands run in, so that what the
//! permission decision assumed is held by the kernel, not only by the
//! parser (docs/sandbox.md, "The sandbox").
//!
//! A [`Policy`] says what one command may do: write nowhere
//! ([`Tier::ReadOnly`]: the read-only auto-runs and plan mode) or only
//! below [`Policy::writable`] ([`Tier::Workspace`]: commands a rule, a
//! grant, a mode or the user allowed); use the network or not; and which
//! existing paths it cannot open at all ([`Policy::hidden`]: what Read deny
//! and ask rules and the secret protected names cover).
//!
//! On Linux: Landlock (the `landlock` crate) for file-system writes and,
//! from ABI 4, TCP; a seccomp filter (the `seccompiler` crate) that refuses
//! sockets other than Unix ones (UDP, raw, netlink, io_uring) when the
//! network is off; a user and mount namespace in which each hidden path has
//! an empty, unreadable, read-only file or folder mounted over it. All of it
//! is prepared in the parent ([`prepare`]); the child only makes
//! async-signal-safe system calls between `fork` and `exec`
//! ([`Prepared::install`]).
//!
//! On macOS: a Seatbelt profile with the same policy ([`seatbelt`]), run
//! by `/usr/bin/sandbox-exec` in front of bash ([`Prepared::launcher`]).
//! Built and tested as text here; not yet tried on a Mac.
//!
//! Pure mechanism: which policy a call gets is decided by the permission
//! gate; this module knows nothing of rules.
//!
//! Limits, by design or by the kernel:
//! - A hidden file's name stays visible (its cover is an empty file); a
//!   hidden folder shows as an empty folder. Opening a cover fails with
//!   `EACCES`, for root too (the child drops every capability after its
//!   mounts; with no_new_privs the exec gives none back). Hidden paths are resolved
//!   at [`prepare`] (the caller lists every hard link of a hidden file),
//!   and a hidden path that changed before the spawn fails the spawn
//!   (`ESTALE`).
//! - Without network no socket can be made, Unix ones included (a local
//!   daemon such as ssh-agent or docker could act for the command);
//!   `socketpair` works.
//! - Without network, 32-bit (i386) programs are killed by the seccomp
//!   architecture check.
//! - Files already open when the command starts (its pipes, the terminal)
//!   are not checked; nothing else outside [`Policy::writable`] is writable,
//!   including `/dev/shm` and `~/.cache` unless the caller lists them.

use std::path::PathBuf;
use std::sync::OnceLock;

#[cfg(target_os = "linux")]
mod linux;
pub mod seatbelt;

/// How much a sandboxed command may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// No file-system writes anywhere (the terminal, `/dev/null` and the
    /// command's own pipes excepted).
    ReadOnly,
    /// Writes only below [`Policy::writable`].
    Workspace,
}

/// What one command may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Read-only or workspace writes.
    pub tier: Tier,
    /// Folders (or files) below which a [`Tier::Workspace`] command may
    /// create, write, rename and delete. Ignored for [`Tier::ReadOnly`].
    /// Paths that do not exist are left out.
    pub writable: Vec<PathBuf>,
    /// Existing files and folders the command cannot open: each gets an
    /// empty, unreadable, read-only file or folder mounted over it.
    pub hidden: Vec<PathBuf>,
    /// Existing files and folders inside the writable ones that a
    /// [`Tier::Workspace`] command may read but not change: each is
    /// bind-mounted read-only onto itself (`.git/hooks`, `.git/config`,
    /// `.claude`, …: what would run or grant something later). Ignored for
    /// [`Tier::ReadOnly`], which changes nothing anyway.
    pub frozen: Vec<PathBuf>,
    /// `true`: the network is open; `false`: no socket can be made
    /// (`socketpair` works).
    pub network: bool,
}

impl Policy {
    /// `true` when the policy needs a user and mount namespace (it hides
    /// or freezes a path).
    pub fn needs_namespaces(&self) -> bool {
        !self.hidden.is_empty() || (self.tier == Tier::Workspace && !self.frozen.is_empty())
    }
}

/// Why `policy` cannot be held here ([`Support::unavailable`], or a policy
/// that hides or freezes paths without user namespaces), `None` when it
/// can: what the permission gate checks before it lets a command run
/// without asking.
pub fn cannot_hold(policy: &Policy) -> Option<String> {
    let support = support();
    if let Some(why) = support.unavailable() {
        return Some(why);
    }
    (policy.needs_namespaces() && !support.user_namespaces).then(|| {
        "it hides or protects paths, and unprivileged user namespaces are not available".into()
    })
}

/// What the kernel offers, probed once per process ([`support`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Support {
    /// The Landlock ABI version, `None` when Landlock is not available.
    pub landlock_abi: Option<i32>,
    /// A seccomp filter can be installed.
    pub seccomp: bool,
    /// Paths can be hidden and frozen (needed only when a policy does):
    /// on Linux, unprivileged user and mount namespaces can be made; on
    /// macOS, always (the profile denies them).
    pub user_namespaces: bool,
    /// Set when the sandbox was turned off on purpose (`LATHE_SANDBOX=off`
    /// in the environment, for tests of the fallback): why.
    pub forced_off: Option<String>,
}

impl Support {
    /// `Some(why)` when commands cannot be sandboxed at all: no Landlock
    /// (or an ABI too old), no seccomp, not Linux, or forced off.
    pub fn unavailable(&self) -> Option<String> {
        if let Some(why) = &self.forced_off {
            return Some(why.clone());
        }
        if cfg!(target_os = "macos") {
            return (!std::path::Path::new(seatbelt::SANDBOX_EXEC).exists())
                .then(|| format!("{} is missing", seatbelt::SANDBOX_EXEC));
        }
        if !cfg!(target_os = "linux") {
            return Some("lathe's sandbox is built for Linux and macOS only".into());
        }
        match self.landlock_abi {
            None => return Some("the kernel has no Landlock".into()),
            Some(abi) if abi < MIN_LANDLOCK_ABI => {
                return Some(format!(
                    "the kernel's Landlock ABI {abi} is older than {MIN_LANDLOCK_ABI}"
                ))
            }
            Some(_) => {}
        }
        if !self.seccomp {
            return Some("seccomp filters cannot be installed".into());
        }
        None
    }
}

/// The oldest Landlock ABI lathe uses: 2 (`REFER`, so a command can move
/// files within the project).
pub const MIN_LANDLOCK_ABI: i32 = 2;

/// The environment variable that turns the sandbox off (`off`), for tests
/// of the fallback and for users on a kernel that misbehaves.
pub const FORCE_OFF_VAR: &str = "LATHE_SANDBOX";

/// Why a policy could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The sandbox is not available here ([`Support::unavailable`]).
    #[error("{0}")]
    Unavailable(String),
    /// The policy hides paths and user namespaces cannot be made.
    #[error("the sandbox cannot hide {path}: unprivileged user namespaces are not available")]
    CannotHide {
        /// The first hidden path.
        path: String,
    },
    /// A system call failed while the policy was prepared.
    #[error("the sandbox could not be prepared: {0}")]
    Io(#[from] std::io::Error),
}

/// Why commands cannot be sandboxed here ([`Support::unavailable`]),
/// without the user-namespace probe's fork: cheap enough for `setup()`.
/// The answer of [`support`] once that has been probed.
pub fn unavailable() -> Option<String> {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    SUPPORT
        .get_or_init(|| Support::probe_with(false))
        .unavailable()
}

/// What the kernel offers, probed once (the first call) and kept. The
/// first call forks a short-lived `/bin/true` that tries a user namespace.
pub fn support() -> &'static Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    SUPPORT.get_or_init(Support::probe)
}

impl Support {
    /// Probes the kernel now (uncached; [`support`] keeps the first
    /// answer) and reads [`FORCE_OFF_VAR`] from the environment.
    pub fn probe() -> Support {
        Support::probe_with(true)
    }

    /// [`Support::probe`], trying user namespaces (a fork) only when
    /// `namespaces` is set (else `user_namespaces` is `false`).
    fn probe_with(namespaces: bool) -> Support {
        let forced_off = forced_off_by(std::env::var_os(FORCE_OFF_VAR).as_deref());
        #[cfg(target_os = "linux")]
        {
            linux::probe(forced_off, namespaces)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = namespaces;
            Support {
                landlock_abi: None,
                seccomp: false,
                user_namespaces: cfg!(target_os = "macos"),
                forced_off,
            }
        }
    }

    /// One line for `:checkhealth`: what commands are held to, e.g.
    /// "Landlock ABI 7 (writes, TCP), seccomp (other sockets), user
    /// namespaces (hidden paths)", or why there is no sandbox.
    pub fn describe(&self) -> String {
        if let Some(why) = self.unavailable() {
            return format!("no sandbox: {why}");
        }
        if cfg!(target_os = "macos") {
            return format!(
                "Seatbelt ({}: writes, network, hidden paths)",
                seatbelt::SANDBOX_EXEC
            );
        }
        let abi = self.landlock_abi.unwrap_or(0);
        let landlock = if abi >= 4 {
            format!("Landlock ABI {abi} (writes, TCP)")
        } else {
            format!("Landlock ABI {abi} (writes)")
        };
        let namespaces = if self.user_namespaces {
            "user namespaces (hidden paths)"
        } else {
            "no user namespaces (commands that must not see a hidden path cannot run)"
        };
        format!("{landlock}, seccomp (other sockets), {namespaces}")
    }
}

/// Why the sandbox is off when [`FORCE_OFF_VAR`] has `value`: `Some` for
/// `off` (any case), `None` otherwise.
pub fn forced_off_by(value: Option<&std::ffi::OsStr>) -> Option<String> {
    value
        .and_then(|v| v.to_str())
        .filter(|v| v.trim().eq_ignore_ascii_case("off"))
        .map(|_| format!("{FORCE_OFF_VAR}=off is set"))
}

/// A policy made ready to install in a child: the Landlock ruleset's file
/// descriptor, the seccomp program and the mounts, all built in the parent.
#[derive(Debug)]
pub struct Prepared {
    #[cfg(target_os = "linux")]
    steps: linux::ChildSteps,
    /// macOS: `sandbox-exec`'s arguments before the command
    /// ([`seatbelt::arguments`]); `None` on Linux.
    launcher: Option<Vec<std::ffi::OsString>>,
}

/// Builds everything `policy` needs in the calling process (opens the
/// paths, makes the ruleset and the filter). Errors: [`SandboxError`].
pub fn prepare(policy: &Policy) -> Result<Prepared, SandboxError> {
    prepare_with(support(), policy)
}

/// [`prepare`] against a given [`Support`] instead of the probed one (for
/// tests of the refusals: a `Support` without user namespaces, forced off).
/// A `Support` that claims more than the kernel has fails at
/// [`prepare`] time, never at run time.
pub fn prepare_with(support: &Support, policy: &Policy) -> Result<Prepared, SandboxError> {
    if let Some(why) = support.unavailable() {
        return Err(SandboxError::Unavailable(why));
    }
    #[cfg(target_os = "linux")]
    {
        Ok(Prepared {
            steps: linux::prepare(support, policy)?,
            launcher: None,
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        // `unavailable` passed: macOS with sandbox-exec.
        Ok(Prepared {
            launcher: Some(seatbelt::arguments(policy)),
        })
    }
}

impl Prepared {
    /// Whether the child enters a user and mount namespace (the policy
    /// hides paths that exist).
    pub fn uses_namespaces(&self) -> bool {
        #[cfg(target_os = "linux")]
        {
            self.steps.hide.is_some()
        }
        #[cfg(not(target_os = "linux"))]
        {
            false
        }
    }

    /// The program to run in front of the command, with its arguments
    /// (macOS: `sandbox-exec` and the profile); `None` where the sandbox
    /// is entered in the child instead ([`Prepared::install`], Linux).
    pub fn launcher(&self) -> Option<(&'static str, &[std::ffi::OsString])> {
        self.launcher
            .as_deref()
            .map(|args| (seatbelt::SANDBOX_EXEC, args))
    }

    /// Adds a `pre_exec` step to `cmd` that enters the sandbox between
    /// `fork` and `exec` (async-signal-safe system calls only; the prepared
    /// values move into the closure). Call it after any other `pre_exec`
    /// step that must run outside the sandbox (`setsid`).
    pub fn install(self, cmd: &mut tokio::process::Command) {
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::process::CommandExt as _;
            let steps = self.steps;
            // SAFETY: the closure runs in the forked child before exec and
            // makes only raw system calls on memory `steps` owns (built in
            // the parent by `prepare`); it allocates nothing and takes no
            // lock.
            unsafe {
                cmd.as_std_mut().pre_exec(move || linux::enter(&steps));
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = cmd;
        }
    }
}
