//! The Linux mechanics of the sandbox: probing the kernel, building the
//! Landlock ruleset, the seccomp program and the hiding mounts in the
//! parent, and entering all of it in the child between `fork` and `exec`.
//!
//! Everything the child needs is owned by [`ChildSteps`] and built before
//! the fork; [`enter`] only makes raw system calls (no allocation, no
//! locks), as `pre_exec` requires in a multi-threaded process.

use std::collections::BTreeMap;
use std::ffi::{CStr, CString};
use std::fmt;
use std::fs;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};

use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, ABI,
};
use seccompiler::{SeccompAction, SeccompFilter, SeccompRule, TargetArch};

use super::{Policy, SandboxError, Support, Tier};

/// `LANDLOCK_CREATE_RULESET_VERSION`: `landlock_create_ruleset(NULL, 0,
/// this)` returns the ABI version.
const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;

/// The bit x32 system calls carry on x86_64 (`__X32_SYSCALL_BIT`): the same
/// calls under other numbers, which the filter must refuse too.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: i64 = 0x4000_0000;

/// Device files every command may write (and, from Landlock ABI 5, send
/// ioctls to): the bit buckets and the terminal. The command's own pipes
/// need no rule (Landlock does not check file descriptors opened before).
pub(super) const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// The kernel's Landlock ABI, `None` without Landlock.
pub(super) fn landlock_abi() -> Option<i32> {
    // SAFETY: landlock_create_ruleset(NULL, 0, VERSION) reads no memory and
    // returns the ABI version or -1.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    (abi > 0).then(|| i32::try_from(abi).unwrap_or(i32::MAX))
}

/// A seccomp filter can be installed: the kernel has seccomp and
/// seccompiler knows this architecture.
pub(super) fn seccomp_available() -> bool {
    // SAFETY: PR_GET_SECCOMP takes no memory; -1 (EINVAL) without seccomp.
    let mode = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) };
    mode >= 0 && TargetArch::try_from(std::env::consts::ARCH).is_ok()
}

/// Whether a child can make a user and mount namespace and mount in it: a
/// real attempt (`/bin/true` entering an empty [`Hide`]), since sysctls and
/// AppArmor profiles each can forbid it in their own way.
pub(super) fn user_namespaces_work() -> bool {
    ["/bin/true", "/usr/bin/true"]
        .iter()
        .filter(|p| Path::new(p).exists())
        .any(|true_bin| {
            let hide = Hide {
                uid_map: id_map(current_uid()),
                gid_map: id_map(current_gid()),
                file_source: None,
                dir_source: None,
                mounts: Vec::new(),
                frozen: Vec::new(),
                remount_flags: 0,
            };
            let mut cmd = std::process::Command::new(true_bin);
            cmd.stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
            // SAFETY: the closure only makes raw system calls on memory
            // `hide` owns (see `enter_namespaces`).
            unsafe {
                cmd.pre_exec(move || enter_namespaces(&hide));
            }
            cmd.status().map(|s| s.success()).unwrap_or(false)
        })
}

/// The effective uid.
fn current_uid() -> u32 {
    // SAFETY: geteuid(2) cannot fail.
    unsafe { libc::geteuid() }
}

/// The effective gid.
fn current_gid() -> u32 {
    // SAFETY: getegid(2) cannot fail.
    unsafe { libc::getegid() }
}

/// A `uid_map`/`gid_map` line mapping `id` to itself.
fn id_map(id: u32) -> Vec<u8> {
    format!("{id} {id} 1\n").into_bytes()
}

/// What the Landlock ruleset of a policy holds, before any file is opened:
/// the handled rights and each path with the rights granted beneath it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RulePlan {
    /// The file-system rights the ruleset handles (everything not granted
    /// below is refused).
    pub handled_fs: BitFlags<AccessFs>,
    /// The network rights it handles (none granted): TCP bind and connect
    /// when the network is off and the ABI has them (4+).
    pub handled_net: BitFlags<AccessNet>,
    /// Existing paths and the rights granted beneath each (file rights
    /// only for a path that is not a folder).
    pub rules: Vec<(PathBuf, BitFlags<AccessFs>)>,
}

/// The ruleset `policy` needs under Landlock `abi`. Paths that do not
/// exist are left out.
pub(super) fn plan(policy: &Policy, abi: ABI) -> RulePlan {
    // ResolveUnix (ABI 9: connecting to a Unix socket by path) is left
    // unhandled: Unix sockets are not the network, and a read-only
    // command may talk to ssh-agent or a language server.
    let handled_fs = AccessFs::from_all(abi) & !BitFlags::from(AccessFs::ResolveUnix);
    let file_rights = AccessFs::from_file(abi) & handled_fs;
    let handled_net = if policy.network || abi < ABI::V4 {
        BitFlags::EMPTY
    } else {
        AccessNet::BindTcp | AccessNet::ConnectTcp
    };
    let mut rules = vec![(PathBuf::from("/"), AccessFs::from_read(abi))];
    let device_rights =
        (AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev) & handled_fs;
    for dev in DEVICES {
        if Path::new(dev).exists() {
            rules.push((PathBuf::from(dev), device_rights));
        }
    }
    if policy.tier == Tier::Workspace {
        for path in &policy.writable {
            match fs::metadata(path) {
                Ok(meta) if meta.is_dir() => rules.push((path.clone(), handled_fs)),
                Ok(_) => rules.push((path.clone(), file_rights)),
                Err(_) => {}
            }
        }
    }
    RulePlan {
        handled_fs,
        handled_net,
        rules,
    }
}

/// Landlock errors as this module's error.
fn landlock_error(e: impl fmt::Display) -> SandboxError {
    SandboxError::Io(io::Error::other(format!("Landlock: {e}")))
}

/// Creates the ruleset of `plan`, all of it enforced or an error: its file
/// descriptor, for `landlock_restrict_self` in the child.
pub(super) fn ruleset(plan: &RulePlan) -> Result<OwnedFd, SandboxError> {
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(plan.handled_fs)
        .map_err(landlock_error)?;
    if !plan.handled_net.is_empty() {
        ruleset = ruleset
            .handle_access(plan.handled_net)
            .map_err(landlock_error)?;
    }
    let mut created = ruleset.create().map_err(landlock_error)?;
    for (path, access) in &plan.rules {
        let fd = PathFd::new(path).map_err(landlock_error)?;
        created = created
            .add_rule(PathBeneath::new(fd, *access))
            .map_err(landlock_error)?;
    }
    Option::<OwnedFd>::from(created)
        .ok_or_else(|| landlock_error("the kernel made no ruleset (Landlock is not enforced)"))
}

/// The seccomp program of a command without network: `socket()` of every
/// family and `io_uring_setup()` (io_uring can make sockets without the
/// `socket` system call) fail with `EPERM`; everything else is allowed
/// (`socketpair()` too: an unnamed pair reaches nobody). `AF_UNIX` is
/// refused as well: a daemon listening on a socket file (docker's,
/// ssh-agent, a proxy) would carry the command past the sandbox, and
/// seccomp cannot tell socket files apart (Claude Code's Linux sandbox
/// refuses them the same way). seccompiler puts an architecture check first (another
/// architecture's system calls kill the process).
pub(super) fn network_filter() -> Result<Vec<libc::sock_filter>, SandboxError> {
    let seccomp_error = |e: seccompiler::BackendError| {
        SandboxError::Io(io::Error::other(format!("seccomp filter: {e}")))
    };
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(seccomp_error)?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_socket, Vec::new());
    rules.insert(libc::SYS_io_uring_setup, Vec::new());
    #[cfg(target_arch = "x86_64")]
    {
        rules.insert(libc::SYS_socket | X32_SYSCALL_BIT, Vec::new());
        rules.insert(libc::SYS_io_uring_setup | X32_SYSCALL_BIT, Vec::new());
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(seccomp_error)?;
    let program: seccompiler::BpfProgram = filter.try_into().map_err(seccomp_error)?;
    Ok(program
        .into_iter()
        .map(|i| libc::sock_filter {
            code: i.code,
            jt: i.jt,
            jf: i.jf,
            k: i.k,
        })
        .collect())
}

/// A file the parent checked: its path and the identity it had then. The
/// child opens it again (mount sources and targets must be in the child's
/// own mount namespace) and uses it only if it is still that file: a
/// command that can write to the temp dir or the project could otherwise
/// swap a cover for a symlink to a secret, or move a hidden file's folder
/// away and put a decoy in its place, between `prepare` and the spawn.
pub(super) struct Known {
    /// The canonical path.
    path: CString,
    /// `st_dev` when checked.
    dev: libc::dev_t,
    /// `st_ino` when checked.
    ino: libc::ino_t,
}

/// The user and mount namespace of a policy that hides paths: the id maps
/// and, for each hidden path, the empty file or folder mounted over it.
pub(super) struct Hide {
    /// `"<uid> <uid> 1\n"`.
    uid_map: Vec<u8>,
    /// `"<gid> <gid> 1\n"`.
    gid_map: Vec<u8>,
    /// The cover of hidden files (when there are any).
    file_source: Option<Known>,
    /// The cover of hidden folders (when there are any).
    dir_source: Option<Known>,
    /// Each hidden path: a folder (`true`) or not, and what it is.
    mounts: Vec<(bool, Known)>,
    /// Each frozen path, with the locked flags of its own mount (its
    /// read-only remount must keep them).
    frozen: Vec<(Known, libc::c_ulong)>,
    /// The flags of the sources' mount that the read-only remount must
    /// keep (`nosuid`, `nodev`, `noexec`: locked in a user namespace).
    remount_flags: libc::c_ulong,
}

impl Hide {
    /// The hidden targets, for tests and messages.
    pub(super) fn targets(&self) -> impl Iterator<Item = &CStr> {
        self.mounts.iter().map(|(_, t)| t.path.as_c_str())
    }
}

/// An existing hidden path, resolved.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Target {
    /// The canonical path.
    pub path: PathBuf,
    /// A folder (covered by an empty folder) or not (an empty file).
    pub is_dir: bool,
    /// `st_dev`.
    pub dev: u64,
    /// `st_ino`.
    pub ino: u64,
}

/// The resolved, existing hidden paths of `hidden`, without those beneath
/// another hidden folder (its mount covers them).
pub(super) fn hidden_targets(hidden: &[PathBuf]) -> io::Result<Vec<Target>> {
    let mut found: Vec<Target> = Vec::new();
    for path in hidden {
        let real = match fs::canonicalize(path) {
            Ok(real) => real,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("cannot resolve hidden path {}: {e}", path.display()),
                ))
            }
        };
        let meta = fs::symlink_metadata(&real)?;
        found.push(Target {
            path: real,
            is_dir: meta.is_dir(),
            dev: meta.dev(),
            ino: meta.ino(),
        });
    }
    found.sort();
    found.dedup_by(|a, b| a.path == b.path);
    let dirs: Vec<PathBuf> = found
        .iter()
        .filter(|t| t.is_dir)
        .map(|t| t.path.clone())
        .collect();
    found.retain(|t| !dirs.iter().any(|d| &t.path != d && t.path.starts_with(d)));
    Ok(found)
}

/// The private folder of this user under the temp dir and its empty,
/// mode-000 file and folder (made once, checked every time): the folder
/// and the two covers.
fn hide_sources() -> io::Result<(PathBuf, Known, Known)> {
    let uid = current_uid();
    let base = fs::canonicalize(std::env::temp_dir())?.join(format!("lathe-sandbox-{uid}"));
    match fs::DirBuilder::new().mode(0o700).create(&base) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = fs::symlink_metadata(&base)?;
    if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
        return Err(io::Error::other(format!(
            "{} is not a private folder of this user",
            base.display()
        )));
    }
    let file = base.join("empty-file");
    match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o000)
        .open(&file)
    {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = fs::symlink_metadata(&file)?;
    if !meta.is_file() || meta.len() != 0 || meta.uid() != uid {
        return Err(io::Error::other(format!(
            "{} is not an empty file",
            file.display()
        )));
    }
    if meta.mode() & 0o7777 != 0 {
        fs::set_permissions(&file, fs::Permissions::from_mode(0o000))?;
    }
    let file_source = Known {
        path: CString::new(file.as_os_str().as_bytes())?,
        dev: meta.dev(),
        ino: meta.ino(),
    };
    let dir = base.join("empty-dir");
    match fs::DirBuilder::new().mode(0o000).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = fs::symlink_metadata(&dir)?;
    if !meta.is_dir() || meta.uid() != uid {
        return Err(io::Error::other(format!(
            "{} is not a folder",
            dir.display()
        )));
    }
    if meta.mode() & 0o7777 != 0 {
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o000))?;
    }
    let dir_source = Known {
        path: CString::new(dir.as_os_str().as_bytes())?,
        dev: meta.dev(),
        ino: meta.ino(),
    };
    Ok((base, file_source, dir_source))
}

/// The mount flags of the file system `path` is on that a bind remount in
/// a user namespace must keep.
fn locked_flags(path: &Path) -> io::Result<libc::c_ulong> {
    let c = CString::new(path.as_os_str().as_bytes())?;
    // SAFETY: statvfs writes into the zeroed struct it is given; `c` is a
    // NUL-terminated path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut flags = 0;
    for (st_flag, ms_flag) in [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ] {
        if st.f_flag & st_flag != 0 {
            flags |= ms_flag;
        }
    }
    Ok(flags)
}

/// The namespace that hides `targets` (from [`hidden_targets`]).
pub(super) fn hide(targets: &[Target], frozen: &[Target]) -> io::Result<Hide> {
    let (base, file_source, dir_source) = hide_sources()?;
    let mut kept = Vec::with_capacity(frozen.len());
    for t in frozen {
        kept.push((
            Known {
                path: CString::new(t.path.as_os_str().as_bytes())?,
                dev: t.dev,
                ino: t.ino,
            },
            locked_flags(&t.path)?,
        ));
    }
    let mut mounts = Vec::with_capacity(targets.len());
    for t in targets {
        mounts.push((
            t.is_dir,
            Known {
                path: CString::new(t.path.as_os_str().as_bytes())?,
                dev: t.dev,
                ino: t.ino,
            },
        ));
    }
    Ok(Hide {
        uid_map: id_map(current_uid()),
        gid_map: id_map(current_gid()),
        file_source: mounts.iter().any(|(d, _)| !d).then_some(file_source),
        dir_source: mounts.iter().any(|(d, _)| *d).then_some(dir_source),
        mounts,
        frozen: kept,
        remount_flags: locked_flags(&base)?,
    })
}

/// Everything the child does, owned, built in the parent.
pub(super) struct ChildSteps {
    /// The namespace and mounts, when the policy hides paths.
    pub hide: Option<Hide>,
    /// The seccomp program, when the network is off.
    pub filter: Option<Vec<libc::sock_filter>>,
    /// The Landlock ruleset.
    pub ruleset: OwnedFd,
}

impl fmt::Debug for ChildSteps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildSteps")
            .field(
                "hidden",
                &self.hide.as_ref().map(|h| h.targets().collect::<Vec<_>>()),
            )
            .field("filter_len", &self.filter.as_ref().map(Vec::len))
            .field("ruleset", &self.ruleset)
            .finish()
    }
}

/// `-1` as the last OS error.
fn check(ret: libc::c_long) -> io::Result<()> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Writes `data` to the file at `path` in one `write` (what the id map
/// files require). Async-signal-safe.
fn write_proc(path: &CStr, data: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated; `data` is valid for its length.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd == -1 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(fd, data.as_ptr().cast(), data.len());
        let err = io::Error::last_os_error();
        libc::close(fd);
        if written != data.len() as isize {
            return Err(err);
        }
    }
    Ok(())
}

/// An `O_PATH` descriptor, closed when dropped. Async-signal-safe.
struct PathFdRaw(libc::c_int);

impl Drop for PathFdRaw {
    fn drop(&mut self) {
        // SAFETY: the descriptor is ours and open.
        unsafe {
            libc::close(self.0);
        }
    }
}

impl PathFdRaw {
    /// `/proc/self/fd/<n>` as a NUL-terminated path in a stack buffer.
    fn proc_path(&self) -> [u8; 32] {
        let mut buf = [0u8; 32];
        let prefix = b"/proc/self/fd/";
        buf[..prefix.len()].copy_from_slice(prefix);
        let mut digits = [0u8; 12];
        let (mut n, mut len) = (self.0.unsigned_abs(), 0);
        loop {
            digits[len] = b'0' + (n % 10) as u8;
            len += 1;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        for i in 0..len {
            buf[prefix.len() + i] = digits[len - 1 - i];
        }
        buf
    }
}

/// Opens `path` (without following a final symlink) if it is the file
/// `dev`/`ino` (`ESTALE` otherwise): a descriptor for the mount calls
/// and the file's status. Async-signal-safe.
fn open_same(path: &CStr, dev: u64, ino: u64) -> io::Result<(PathFdRaw, libc::stat)> {
    // SAFETY: a NUL-terminated path; fstat writes into the zeroed struct.
    unsafe {
        let fd = libc::open(
            path.as_ptr(),
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        );
        if fd == -1 {
            return Err(io::Error::last_os_error());
        }
        let fd = PathFdRaw(fd);
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd.0, &mut st) == -1 {
            return Err(io::Error::last_os_error());
        }
        if st.st_dev != dev || st.st_ino != ino {
            return Err(io::Error::from_raw_os_error(libc::ESTALE));
        }
        Ok((fd, st))
    }
}

/// Opens a cover if it is still the empty, mode-000 file or folder the
/// parent checked (`ESTALE` otherwise). Async-signal-safe.
fn open_source(source: &Known, dir: bool) -> io::Result<PathFdRaw> {
    let (fd, st) = open_same(&source.path, source.dev, source.ino)?;
    let kind = if dir { libc::S_IFDIR } else { libc::S_IFREG };
    if st.st_mode & libc::S_IFMT != kind || st.st_mode & 0o7777 != 0 || (!dir && st.st_size != 0) {
        return Err(io::Error::from_raw_os_error(libc::ESTALE));
    }
    Ok(fd)
}

/// In the child: a new user and mount namespace with the caller's ids,
/// private mounts, each hidden path covered by a read-only empty file or
/// folder, and the working directory entered again through the new mounts
/// (a working directory inside a hidden folder would still see the
/// original). Raw system calls only.
fn enter_namespaces(hide: &Hide) -> io::Result<()> {
    // SAFETY: raw system calls on NUL-terminated strings and buffers that
    // `hide` owns or that live on this stack frame.
    unsafe {
        check(libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS).into())?;
        write_proc(c"/proc/self/setgroups", b"deny")?;
        write_proc(c"/proc/self/uid_map", &hide.uid_map)?;
        write_proc(c"/proc/self/gid_map", &hide.gid_map)?;
        check(
            libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            )
            .into(),
        )?;
        // Frozen paths first: a hidden path inside one is then covered
        // on top of its read-only mount (the bind is recursive anyway).
        for (target, flags) in &hide.frozen {
            let (target_fd, _) = open_same(&target.path, target.dev, target.ino)?;
            check(
                libc::mount(
                    target_fd.proc_path().as_ptr().cast(),
                    target_fd.proc_path().as_ptr().cast(),
                    std::ptr::null(),
                    libc::MS_BIND | libc::MS_REC,
                    std::ptr::null(),
                )
                .into(),
            )?;
            drop(target_fd);
            // The path now leads to the new mount (the same file).
            let (bound_fd, _) = open_same(&target.path, target.dev, target.ino)?;
            check(
                libc::mount(
                    std::ptr::null(),
                    bound_fd.proc_path().as_ptr().cast(),
                    std::ptr::null(),
                    libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | *flags,
                    std::ptr::null(),
                )
                .into(),
            )?;
        }
        let file_fd = match &hide.file_source {
            Some(source) => Some(open_source(source, false)?),
            None => None,
        };
        let dir_fd = match &hide.dir_source {
            Some(source) => Some(open_source(source, true)?),
            None => None,
        };
        for (is_dir, target) in &hide.mounts {
            let (source_fd, source) = if *is_dir {
                (&dir_fd, &hide.dir_source)
            } else {
                (&file_fd, &hide.file_source)
            };
            let (Some(source_fd), Some(source)) = (source_fd, source) else {
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            };
            // The hidden file itself, not whatever is at its path now.
            let (target_fd, _) = open_same(&target.path, target.dev, target.ino)?;
            check(
                libc::mount(
                    source_fd.proc_path().as_ptr().cast(),
                    target_fd.proc_path().as_ptr().cast(),
                    std::ptr::null(),
                    libc::MS_BIND,
                    std::ptr::null(),
                )
                .into(),
            )?;
            drop(target_fd);
            // The path now leads to the cover's mount: made read-only.
            let (cover_fd, _) = open_same(&target.path, source.dev, source.ino)?;
            check(
                libc::mount(
                    std::ptr::null(),
                    cover_fd.proc_path().as_ptr().cast(),
                    std::ptr::null(),
                    libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | hide.remount_flags,
                    std::ptr::null(),
                )
                .into(),
            )?;
        }
        if !hide.mounts.is_empty() || !hide.frozen.is_empty() {
            let mut cwd = [0u8; libc::PATH_MAX as usize];
            let n = libc::syscall(libc::SYS_getcwd, cwd.as_mut_ptr(), cwd.len());
            // A working directory outside the root ("(unreachable)…") or
            // too long is left as it is.
            if n > 0 && cwd[0] == b'/' {
                check(libc::chdir(cwd.as_ptr().cast()).into())?;
            }
        }
    }
    Ok(())
}

/// In the child, between `fork` and `exec`: namespaces and mounts (if any),
/// `no_new_privs`, the seccomp filter (if any), then Landlock. Raw system
/// calls only; an error fails the spawn.
pub(super) fn enter(steps: &ChildSteps) -> io::Result<()> {
    if let Some(hide) = &steps.hide {
        enter_namespaces(hide)?;
    }
    // SAFETY: raw system calls; the seccomp program is a slice `steps`
    // owns, read by the kernel during the call.
    unsafe {
        check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0).into())?;
        if let Some(filter) = &steps.filter {
            let prog = libc::sock_fprog {
                len: u16::try_from(filter.len()).unwrap_or(u16::MAX),
                filter: filter.as_ptr().cast_mut(),
            };
            check(libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                &prog as *const libc::sock_fprog,
            ))?;
        }
        check(libc::syscall(
            libc::SYS_landlock_restrict_self,
            steps.ruleset.as_raw_fd(),
            0,
        ))?;
        // In its own user namespace the command holds every capability
        // there (and uid 0 when lathe runs as root): with
        // CAP_DAC_OVERRIDE a cover (mode 000) opens, as an empty file.
        // None is kept, and with no_new_privs the exec cannot give root's
        // back.
        if steps.hide.is_some() {
            let header = CapHeader {
                version: LINUX_CAPABILITY_VERSION_3,
                pid: 0,
            };
            let data = [CapData::default(); 2];
            check(libc::syscall(
                libc::SYS_capset,
                &header as *const CapHeader,
                data.as_ptr(),
            ))?;
        }
    }
    Ok(())
}

/// `capset`'s header (`struct __user_cap_header_struct`).
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

/// `capset`'s data (`struct __user_cap_data_struct`), two of them for
/// version 3 (64 capabilities).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// `_LINUX_CAPABILITY_VERSION_3`.
const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// Probes the kernel (uncached).
/// `namespaces`: also try a user namespace (a fork of `/bin/true`).
pub(super) fn probe(forced_off: Option<String>, namespaces: bool) -> Support {
    if forced_off.is_some() {
        return Support {
            landlock_abi: landlock_abi(),
            seccomp: seccomp_available(),
            user_namespaces: false,
            forced_off,
        };
    }
    Support {
        landlock_abi: landlock_abi(),
        seccomp: seccomp_available(),
        user_namespaces: namespaces && user_namespaces_work(),
        forced_off: None,
    }
}

/// Builds the child's steps for `policy` (support already checked).
pub(super) fn prepare(support: &Support, policy: &Policy) -> Result<ChildSteps, SandboxError> {
    let abi = ABI::from(support.landlock_abi.unwrap_or(0));
    let targets = hidden_targets(&policy.hidden)?;
    let frozen = match policy.tier {
        // Not what a hidden folder covers already.
        Tier::Workspace => hidden_targets(&policy.frozen)?
            .into_iter()
            .filter(|f| !targets.iter().any(|t| f.path.starts_with(&t.path)))
            .collect(),
        Tier::ReadOnly => Vec::new(),
    };
    let hide = if targets.is_empty() && frozen.is_empty() {
        None
    } else if !support.user_namespaces {
        let first = targets.first().or(frozen.first());
        return Err(SandboxError::CannotHide {
            path: first
                .map(|t| t.path.display().to_string())
                .unwrap_or_default(),
        });
    } else {
        Some(hide(&targets, &frozen)?)
    };
    let filter = if policy.network {
        None
    } else {
        Some(network_filter()?)
    };
    let ruleset = ruleset(&plan(policy, abi))?;
    Ok(ChildSteps {
        hide,
        filter,
        ruleset,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(tier: Tier, writable: Vec<PathBuf>, network: bool) -> Policy {
        Policy {
            tier,
            writable,
            hidden: Vec::new(),
            frozen: Vec::new(),
            network,
        }
    }

    #[test]
    fn read_only_grants_reading_everywhere_and_writing_only_devices() {
        let dir = tempfile::tempdir().unwrap();
        let p = policy(Tier::ReadOnly, vec![dir.path().to_path_buf()], false);
        let plan = plan(&p, ABI::V7);
        assert_eq!(plan.handled_fs, AccessFs::from_all(ABI::V7));
        assert_eq!(plan.handled_net, AccessNet::BindTcp | AccessNet::ConnectTcp);
        assert_eq!(
            plan.rules[0],
            (PathBuf::from("/"), AccessFs::from_read(ABI::V7))
        );
        // The writable folder is ignored in ReadOnly.
        assert!(plan.rules.iter().all(|(p, _)| p != dir.path()));
        for (path, access) in &plan.rules[1..] {
            assert!(path.starts_with("/dev"), "{path:?}");
            assert_eq!(
                *access,
                AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev
            );
        }
        assert!(plan.rules.iter().any(|(p, _)| p == Path::new("/dev/null")));
    }

    #[test]
    fn workspace_grants_everything_beneath_existing_writable_paths() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        fs::write(&file, "").unwrap();
        let missing = dir.path().join("missing");
        let p = policy(
            Tier::Workspace,
            vec![dir.path().to_path_buf(), file.clone(), missing.clone()],
            true,
        );
        let plan = plan(&p, ABI::V3);
        assert!(plan.handled_net.is_empty(), "network on handles no TCP");
        let rights = |path: &Path| plan.rules.iter().find(|(p, _)| p == path).map(|(_, a)| *a);
        assert_eq!(rights(dir.path()), Some(AccessFs::from_all(ABI::V3)));
        assert_eq!(rights(&file), Some(AccessFs::from_file(ABI::V3)));
        assert_eq!(rights(&missing), None);
        // ABI 3 has no IoctlDev: devices get write and truncate only.
        assert_eq!(
            rights(Path::new("/dev/null")),
            Some(AccessFs::WriteFile | AccessFs::Truncate)
        );
    }

    #[test]
    fn old_abis_handle_no_tcp_and_new_ones_leave_unix_sockets_alone() {
        let p = policy(Tier::ReadOnly, Vec::new(), false);
        assert!(plan(&p, ABI::V3).handled_net.is_empty());
        let v9 = plan(&p, ABI::V9);
        assert!(!v9.handled_fs.contains(AccessFs::ResolveUnix));
        assert!(v9.handled_fs.contains(AccessFs::Refer | AccessFs::IoctlDev));
    }

    /// Runs the BPF program on one system call (a tiny classic-BPF
    /// interpreter for the instructions seccompiler emits).
    fn run_filter(prog: &[libc::sock_filter], arch: u32, nr: i64, args: [u64; 6]) -> u32 {
        let mut data = Vec::new();
        data.extend_from_slice(&(nr as i32).to_ne_bytes());
        data.extend_from_slice(&arch.to_ne_bytes());
        data.extend_from_slice(&0u64.to_ne_bytes());
        for a in args {
            data.extend_from_slice(&a.to_ne_bytes());
        }
        let load = |off: u32| {
            let off = off as usize;
            u32::from_ne_bytes(data[off..off + 4].try_into().unwrap())
        };
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let i = &prog[pc];
            pc += 1;
            match i.code {
                0x20 => acc = load(i.k),                                         // ld w abs
                0x06 => return i.k,                                              // ret k
                0x05 => pc += i.k as usize,                                      // ja
                0x15 => pc += if acc == i.k { i.jt } else { i.jf } as usize,     // jeq
                0x25 => pc += if acc > i.k { i.jt } else { i.jf } as usize,      // jgt
                0x35 => pc += if acc >= i.k { i.jt } else { i.jf } as usize,     // jge
                0x45 => pc += if acc & i.k != 0 { i.jt } else { i.jf } as usize, // jset
                0x54 => acc &= i.k,                                              // and k
                other => panic!("unexpected BPF code {other:#x}"),
            }
        }
    }

    #[test]
    fn the_network_filter_refuses_every_socket_and_io_uring() {
        let prog = network_filter().unwrap();
        let arch = match std::env::consts::ARCH {
            "x86_64" => 0xC000_003E,
            "aarch64" => 0xC000_00B7,
            "riscv64" => 0xC000_00F3,
            _ => return,
        };
        let eperm = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
        let allow = libc::SECCOMP_RET_ALLOW;
        let sock = |domain: i32| {
            run_filter(
                &prog,
                arch,
                libc::SYS_socket,
                [domain as u64, 1, 0, 0, 0, 0],
            )
        };
        assert_eq!(sock(libc::AF_UNIX), eperm);
        assert_eq!(sock(libc::AF_INET), eperm);
        assert_eq!(sock(libc::AF_INET6), eperm);
        assert_eq!(sock(libc::AF_NETLINK), eperm);
        assert_eq!(sock(libc::AF_PACKET), eperm);
        assert_eq!(
            run_filter(&prog, arch, libc::SYS_io_uring_setup, [8, 0, 0, 0, 0, 0]),
            eperm
        );
        assert_eq!(
            run_filter(&prog, arch, libc::SYS_socketpair, [1, 1, 0, 0, 0, 0]),
            allow
        );
        assert_eq!(
            run_filter(&prog, arch, libc::SYS_openat, [0, 0, 0, 0, 0, 0]),
            allow
        );
        #[cfg(target_arch = "x86_64")]
        assert_eq!(
            run_filter(
                &prog,
                arch,
                libc::SYS_socket | X32_SYSCALL_BIT,
                [libc::AF_INET as u64, 2, 0, 0, 0, 0]
            ),
            eperm
        );
        // Another architecture's calls kill the process.
        assert_eq!(
            run_filter(&prog, 0x4000_0003, libc::SYS_socket, [1, 1, 0, 0, 0, 0]),
            libc::SECCOMP_RET_KILL_PROCESS
        );
    }

    #[test]
    fn the_proc_path_of_a_descriptor_names_it() {
        use std::os::fd::IntoRawFd as _;
        for _ in 0..3 {
            let fd = PathFdRaw(fs::File::open("/").unwrap().into_raw_fd());
            let buf = fd.proc_path();
            let path = CStr::from_bytes_until_nul(&buf).unwrap().to_str().unwrap();
            assert_eq!(path, format!("/proc/self/fd/{}", fd.0));
            assert_eq!(fs::read_link(path).unwrap(), Path::new("/"));
        }
    }

    #[test]
    fn hidden_targets_resolve_links_skip_missing_and_covered_paths() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        fs::create_dir(root.join("secret")).unwrap();
        fs::write(root.join("secret/s.txt"), "s").unwrap();
        fs::write(root.join(".env"), "e").unwrap();
        std::os::unix::fs::symlink(root.join(".env"), root.join("link")).unwrap();
        let targets: Vec<(PathBuf, bool)> = hidden_targets(&[
            root.join("secret/s.txt"),
            root.join("secret"),
            root.join("link"),
            root.join(".env"),
            root.join("missing"),
        ])
        .unwrap()
        .into_iter()
        .map(|t| (t.path, t.is_dir))
        .collect();
        assert_eq!(
            targets,
            vec![(root.join(".env"), false), (root.join("secret"), true)]
        );
    }
}
