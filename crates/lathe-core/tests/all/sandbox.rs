//! The OS sandbox (src/sandbox) against the real kernel: `bash -c` commands
//! spawned the way the Bash tool spawns them (tokio, `new_session`, then
//! the sandbox's `pre_exec`), with assertions on what a user would see —
//! exit codes, output, and the files left behind.
//!
//! Needs Linux with Landlock (ABI 2+), seccomp and unprivileged user
//! namespaces; on a machine without them every test says so and passes
//! without checking anything (the probe's answer is printed).

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![cfg(target_os = "linux")]

use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use lathe_core::sandbox::{self, Policy, SandboxError, Support, Tier};

/// The sandbox is usable here; otherwise prints why and the test returns.
fn available() -> bool {
    match sandbox::support().unavailable() {
        None => true,
        Some(why) => {
            eprintln!("sandbox unavailable, test skipped: {why}");
            false
        }
    }
}

/// What a command left: its exit code and its stdout and stderr together.
#[derive(Debug)]
struct Ran {
    ok: bool,
    out: String,
}

/// Runs `script` under `bash -c` in `cwd`, sandboxed by `policy`, with
/// `env` added.
async fn run_in(policy: &Policy, cwd: &Path, script: &str, env: &[(&str, &str)]) -> Ran {
    let mut cmd = tokio::process::Command::new("bash");
    cmd.arg("-c")
        .arg(script)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    lathe_core::process::new_session(&mut cmd);
    sandbox::prepare(policy).unwrap().install(&mut cmd);
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("the command finished")
        .expect("the sandboxed command started");
    Ran {
        ok: out.status.success(),
        out: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

async fn run(policy: &Policy, cwd: &Path, script: &str) -> Ran {
    run_in(policy, cwd, script, &[]).await
}

/// A project folder (canonical path) with `a.txt`.
fn project() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(dir.path()).unwrap();
    fs::write(root.join("a.txt"), "alpha\n").unwrap();
    (dir, root)
}

fn read_only(network: bool) -> Policy {
    Policy {
        tier: Tier::ReadOnly,
        writable: Vec::new(),
        hidden: Vec::new(),
        frozen: Vec::new(),
        network,
    }
}

fn workspace(writable: Vec<PathBuf>) -> Policy {
    Policy {
        tier: Tier::Workspace,
        writable,
        hidden: Vec::new(),
        frozen: Vec::new(),
        network: false,
    }
}

fn has(program: &str) -> bool {
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {program}"))
        .stdout(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

#[test]
fn the_probe_finds_the_kernels_features() {
    let s = sandbox::support();
    eprintln!("{s:?}: {}", s.describe());
    if s.unavailable().is_none() {
        assert!(
            s.describe().starts_with("Landlock ABI "),
            "{}",
            s.describe()
        );
    }
}

#[tokio::test]
async fn read_only_writes_nowhere_but_reads_and_lists() {
    if !available() {
        return;
    }
    let (_d, root) = project();
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("x");
    let p = read_only(false);

    let r = run(&p, &root, "echo x > f").await;
    assert!(!r.ok, "{r:?}");
    assert!(!root.join("f").exists());

    let r = run(&p, &root, &format!("touch {}", outside.display())).await;
    assert!(!r.ok, "{r:?}");
    assert!(!outside.exists());

    // Changing existing files is refused too: truncate, append, remove, rename.
    for script in [
        ": > a.txt",
        "echo more >> a.txt",
        "rm a.txt",
        "mv a.txt b.txt",
        "mkdir d",
        "ln -s a.txt l",
    ] {
        let r = run(&p, &root, script).await;
        assert!(!r.ok, "{script}: {r:?}");
    }
    assert_eq!(fs::read_to_string(root.join("a.txt")).unwrap(), "alpha\n");
    assert_eq!(fs::read_dir(&root).unwrap().count(), 1);

    let r = run(
        &p,
        &root,
        "echo hi > /dev/null && echo to-stderr >&2 && echo via-dev-stdout > /dev/stdout \
         && head -c 4 /dev/zero | wc -c && cat a.txt && ls",
    )
    .await;
    assert!(r.ok, "{r:?}");
    for want in ["to-stderr", "via-dev-stdout", "4", "alpha", "a.txt"] {
        assert!(r.out.contains(want), "{want} missing: {r:?}");
    }
}

#[tokio::test]
async fn git_status_works_read_only() {
    if !available() || !has("git") {
        return;
    }
    let (_d, root) = project();
    let git = |args: &[&str]| {
        let st = std::process::Command::new("git")
            .args(args)
            .current_dir(&root)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "a.txt"]);
    git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-qm",
        "one",
    ]);
    fs::write(root.join("a.txt"), "changed\n").unwrap();
    fs::write(root.join("new.txt"), "n\n").unwrap();
    let p = read_only(false);
    // Without GIT_OPTIONAL_LOCKS=0: git cannot take index.lock to refresh
    // the index, skips that quietly, and still reports.
    let r = run(&p, &root, "git status").await;
    assert!(r.ok, "{r:?}");
    assert!(
        r.out.contains("modified:") && r.out.contains("new.txt"),
        "{r:?}"
    );
    assert!(!root.join(".git/index.lock").exists());
    let r = run_in(
        &p,
        &root,
        "git status --short",
        &[("GIT_OPTIONAL_LOCKS", "0")],
    )
    .await;
    assert!(r.ok, "{r:?}");
    assert!(
        r.out.contains(" M a.txt") && r.out.contains("?? new.txt"),
        "{r:?}"
    );
    let r = run(&p, &root, "git log --oneline && git diff --stat").await;
    assert!(r.ok && r.out.contains("one"), "{r:?}");
}

#[tokio::test]
async fn workspace_writes_only_below_writable_paths() {
    if !available() {
        return;
    }
    let (_d, root) = project();
    let tmp = tempfile::tempdir().unwrap();
    let tmp_root = fs::canonicalize(tmp.path()).unwrap();
    let outside_dir = tempfile::tempdir().unwrap();
    let outside = fs::canonicalize(outside_dir.path()).unwrap();
    let p = workspace(vec![root.clone(), tmp_root.clone(), root.join("missing")]);

    let r = run(
        &p,
        &root,
        "echo x > f && mkdir target && echo y > target/x && mv target/x target/y \
         && mkdir -p deep/er && mv target/y deep/er/z && rm a.txt && ln -s f l && cat l",
    )
    .await;
    assert!(r.ok, "{r:?}");
    assert_eq!(fs::read_to_string(root.join("deep/er/z")).unwrap(), "y\n");
    assert!(!root.join("a.txt").exists());

    let r = run(&p, &root, &format!("echo t > {}/t", tmp_root.display())).await;
    assert!(r.ok, "{r:?}");
    assert_eq!(fs::read_to_string(tmp_root.join("t")).unwrap(), "t\n");

    let r = run(&p, &root, &format!("echo o > {}/o", outside.display())).await;
    assert!(!r.ok, "{r:?}");
    assert!(!outside.join("o").exists());
    // Moving a project file out of the project is a write outside it.
    let r = run(&p, &root, &format!("mv f {}/moved", outside.display())).await;
    assert!(!r.ok, "{r:?}");
    assert!(root.join("f").exists() && !outside.join("moved").exists());
}

#[tokio::test]
async fn a_symlink_out_of_the_project_does_not_open_a_way_out() {
    if !available() {
        return;
    }
    let (_d, root) = project();
    let outside_dir = tempfile::tempdir().unwrap();
    let outside = fs::canonicalize(outside_dir.path()).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
    let r = run(&workspace(vec![root.clone()]), &root, "echo x > link/f").await;
    assert!(!r.ok, "{r:?}");
    assert!(!outside.join("f").exists());
}

#[tokio::test]
async fn a_small_build_runs_in_the_workspace() {
    if !available() || !has("make") {
        return;
    }
    let (_d, root) = project();
    let tmp = tempfile::tempdir().unwrap();
    let tmp_root = fs::canonicalize(tmp.path()).unwrap();
    let p = workspace(vec![root.clone(), tmp_root.clone()]);
    fs::write(
        root.join("hello.c"),
        "#include <stdio.h>\nint main(void) { puts(\"built and ran\"); return 0; }\n",
    )
    .unwrap();
    let recipe = if has("cc") {
        "target/hello: hello.c\n\tmkdir -p target\n\tcc -o $@ hello.c\n\ttarget/hello > target/out\n"
    } else {
        "target/hello: hello.c\n\tmkdir -p target\n\tcp hello.c $@\n\techo built and ran > target/out\n"
    };
    fs::write(root.join("Makefile"), recipe).unwrap();
    let tmp_s = tmp_root.display().to_string();
    let r = run_in(
        &p,
        &root,
        "make -s && cat target/out",
        &[("TMPDIR", &tmp_s)],
    )
    .await;
    assert!(r.ok, "{r:?}");
    assert!(r.out.contains("built and ran"), "{r:?}");
    assert!(root.join("target/hello").exists());
}

#[tokio::test]
async fn without_network_no_socket_works_but_a_socketpair() {
    if !available() {
        return;
    }
    let (_d, root) = project();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let p = read_only(false);

    let r = run(&p, &root, &format!("exec 3<>/dev/tcp/127.0.0.1/{port}")).await;
    assert!(!r.ok, "{r:?}");
    assert!(listener.accept().is_err(), "no connection may arrive");

    if has("python3") {
        let py = |code: &str| format!("python3 -c '{code}'");
        let r = run(
            &p,
            &root,
            &py(&format!(
                "import socket; socket.create_connection((\"127.0.0.1\", {port}), timeout=5)"
            )),
        )
        .await;
        assert!(!r.ok && r.out.contains("PermissionError"), "{r:?}");
        let r = run(
            &p,
            &root,
            &py(
                "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); \
                 s.sendto(b\"x\", (\"127.0.0.1\", 9))",
            ),
        )
        .await;
        assert!(!r.ok && r.out.contains("PermissionError"), "{r:?}");
        let r = run(
            &p,
            &root,
            &py("import socket; socket.socket(socket.AF_INET6, socket.SOCK_STREAM)"),
        )
        .await;
        assert!(!r.ok, "{r:?}");
        // io_uring_setup (which could open sockets past the filter) fails
        // with EPERM.
        let r = run(
            &p,
            &root,
            &py(&format!(
                "import ctypes; libc = ctypes.CDLL(None, use_errno=True); \
                 params = ctypes.create_string_buffer(120); \
                 r = libc.syscall({}, 4, params); print(r, ctypes.get_errno())",
                libc::SYS_io_uring_setup
            )),
        )
        .await;
        assert!(r.ok, "{r:?}");
        assert_eq!(r.out.trim(), format!("-1 {}", libc::EPERM), "{r:?}");
        let r = run(
            &p,
            &root,
            &py(
                "import socket; a, b = socket.socketpair(); a.sendall(b\"pair ok\"); \
                 print(b.recv(16).decode())",
            ),
        )
        .await;
        assert!(r.ok && r.out.contains("pair ok"), "{r:?}");
        // A socket file (docker's, ssh-agent's) is a way out too: no
        // AF_UNIX socket either.
        let server = tempfile::tempdir().unwrap();
        let path = server.path().join("daemon.sock");
        let daemon = std::os::unix::net::UnixListener::bind(&path).unwrap();
        daemon.set_nonblocking(true).unwrap();
        let r = run(
            &p,
            &root,
            &py(&format!(
                "import socket; u = socket.socket(socket.AF_UNIX); u.connect(\"{}\"); print(\"connected\")",
                path.display()
            )),
        )
        .await;
        assert!(!r.ok && !r.out.contains("connected"), "{r:?}");
        assert!(daemon.accept().is_err(), "no connection may arrive");
    }
}

#[tokio::test]
async fn with_network_tcp_connects() {
    if !available() {
        return;
    }
    let (_d, root) = project();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accept = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut got = String::new();
        s.read_to_string(&mut got).unwrap();
        got
    });
    let r = run(
        &read_only(true),
        &root,
        &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo hello >&3"),
    )
    .await;
    assert!(r.ok, "{r:?}");
    assert_eq!(accept.join().unwrap(), "hello\n");
}

/// A project with `secret/s.txt`, `.env` and a link to `.env`; the policy
/// hides the folder and `.env`.
fn secret_project() -> (tempfile::TempDir, PathBuf, Policy) {
    let (d, root) = project();
    fs::create_dir(root.join("secret")).unwrap();
    fs::write(root.join("secret/s.txt"), "TOPSECRET-FOLDER\n").unwrap();
    fs::write(root.join(".env"), "TOPSECRET-ENV\n").unwrap();
    std::os::unix::fs::symlink(root.join(".env"), root.join("env-link")).unwrap();
    let policy = Policy {
        tier: Tier::Workspace,
        writable: vec![root.clone()],
        hidden: vec![root.join("secret"), root.join(".env")],
        frozen: Vec::new(),
        network: false,
    };
    (d, root, policy)
}

fn assert_no_secret(r: &Ran) {
    assert!(!r.out.contains("TOPSECRET"), "a secret leaked: {r:?}");
}

#[tokio::test]
async fn hidden_paths_cannot_be_read_or_written() {
    if !available() || !sandbox::support().user_namespaces {
        return;
    }
    hidden_scenario().await;
}

/// What a user sees of hidden paths: nothing of their content, whatever
/// way they try, and no way to change them; the rest works as before. As
/// root (CI) the covering file opens but is empty; as another user opening
/// it fails.
async fn hidden_scenario() {
    let (_d, root, p) = secret_project();
    assert!(sandbox::prepare(&p).unwrap().uses_namespaces());
    // SAFETY: geteuid(2) cannot fail.
    let root_user = unsafe { libc::geteuid() } == 0;

    for script in [
        "cat .env",
        "cat env-link",
        "cat secret/s.txt",
        "ls -la secret",
        "cat secret/*",
        "grep -r TOPSECRET . 2>&1",
        // Through another process's root (the test's own): Landlock refuses
        // the ptrace-like access to a process outside the sandbox.
        "cat /proc/$PPID/root$PWD/.env",
        "cat /proc/$$/root$PWD/.env",
        "cd secret && cat s.txt",
        "cat < .env",
        "umount .env; cat .env",
        "python3 -c 'import ctypes; l = ctypes.CDLL(None, use_errno=True); \
         print(l.umount2(b\".env\", 2), ctypes.get_errno())'; cat .env",
        "unshare -Urm sh -c 'umount -l .env; umount -l secret; cat .env secret/s.txt'",
    ] {
        let r = run(&p, &root, script).await;
        assert_no_secret(&r);
    }
    if !root_user {
        for script in ["cat .env", "ls secret"] {
            let r = run(&p, &root, script).await;
            assert!(
                !r.ok && r.out.contains("Permission denied"),
                "{script}: {r:?}"
            );
        }
    }
    // Writing, truncating, removing or moving them fails and changes nothing.
    for script in [
        "echo x > .env",
        "echo x >> .env",
        ": > .env",
        "rm -f .env",
        "mv .env moved",
        "echo x > secret/s.txt",
        "rm -rf secret",
        "mv secret moved",
    ] {
        let r = run(&p, &root, script).await;
        assert!(!r.ok, "{script}: {r:?}");
    }
    assert_eq!(
        fs::read_to_string(root.join(".env")).unwrap(),
        "TOPSECRET-ENV\n"
    );
    assert_eq!(
        fs::read_to_string(root.join("secret/s.txt")).unwrap(),
        "TOPSECRET-FOLDER\n"
    );
    // Everything else works as before.
    let r = run(&p, &root, "cat a.txt && echo w > w.txt && cat w.txt").await;
    assert!(
        r.ok && r.out.contains("alpha") && r.out.contains('w'),
        "{r:?}"
    );

    // A command started inside a hidden folder starts in the empty cover,
    // not in the original (whose files it would otherwise reach by
    // relative paths); another user cannot even list it.
    let mut cmd = tokio::process::Command::new("bash");
    cmd.arg("-c")
        .arg("cat s.txt; ls -a")
        .current_dir(root.join("secret"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    sandbox::prepare(&p).unwrap().install(&mut cmd);
    match cmd.output().await {
        Ok(out) => {
            let r = Ran {
                ok: out.status.success(),
                out: format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ),
            };
            assert_no_secret(&r);
            assert!(!r.out.contains("s.txt\n"), "{r:?}");
            if !root_user {
                assert!(r.out.contains("Permission denied"), "{r:?}");
            }
        }
        Err(e) => assert!(!root_user, "root could not start in the cover: {e}"),
    }
}

/// Runs only as the child of the tests below ([`CHILD_VAR`] = `hide`).
#[tokio::test]
async fn hide_child() {
    if std::env::var_os(CHILD_VAR).as_deref() != Some("hide".as_ref()) {
        return;
    }
    let s = sandbox::support();
    assert!(s.unavailable().is_none() && s.user_namespaces, "{s:?}");
    hidden_scenario().await;
}

/// Runs [`hide_child`] through `wrapper` (a command line that ends with
/// the test binary and its arguments) and checks it passed.
/// The full name of test `name` of this module in the test binary
/// (`sandbox::name`: the binary gathers many modules), to run it alone in a
/// child with `--exact`.
fn child_test(name: &str) -> String {
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    format!("{module}::{name}")
}

fn run_hide_child(wrapper: &[&str], env: &[(&str, &Path)]) {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = std::process::Command::new(wrapper[0]);
    cmd.args(&wrapper[1..])
        .arg(&exe)
        .args([
            child_test("hide_child").as_str(),
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_VAR, "hide");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("1 passed"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs only as the child of the test below ([`CHILD_VAR`] = `swap`, a
/// temp dir of its own).
#[tokio::test]
async fn swap_child() {
    if std::env::var_os(CHILD_VAR).as_deref() != Some("swap".as_ref()) {
        return;
    }
    let (_d, root, p) = secret_project();
    let prepared = sandbox::prepare(&p).unwrap();
    // What a command writing to the temp dir could do between prepare and
    // spawn: the cover of hidden files becomes a link to the secret.
    let tmp = fs::canonicalize(std::env::temp_dir()).unwrap();
    // SAFETY: geteuid(2) cannot fail.
    let cover = tmp.join(format!("lathe-sandbox-{}/empty-file", unsafe {
        libc::geteuid()
    }));
    fs::remove_file(&cover).unwrap();
    std::os::unix::fs::symlink(root.join(".env"), &cover).unwrap();
    let mut cmd = tokio::process::Command::new("cat");
    cmd.arg(".env")
        .current_dir(&root)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    prepared.install(&mut cmd);
    match cmd.output().await {
        Ok(out) => panic!(
            "the command ran with a swapped cover: {}",
            String::from_utf8_lossy(&out.stdout)
        ),
        Err(e) => assert_eq!(e.raw_os_error(), Some(libc::ESTALE), "{e}"),
    }
    // The next prepare refuses the link instead of mounting it.
    assert!(sandbox::prepare(&p).is_err());
    fs::remove_file(&cover).unwrap();
    let r = run(&p, &root, "cat .env").await;
    assert_no_secret(&r);

    // A hidden file moved away and a decoy put at its path between prepare
    // and spawn: the spawn fails rather than cover the decoy.
    let prepared = sandbox::prepare(&p).unwrap();
    fs::rename(root.join(".env"), root.join("moved")).unwrap();
    fs::write(root.join(".env"), "decoy\n").unwrap();
    let mut cmd = tokio::process::Command::new("cat");
    cmd.arg("moved")
        .current_dir(&root)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    prepared.install(&mut cmd);
    match cmd.output().await {
        Ok(out) => panic!(
            "the command ran with a decoy: {}",
            String::from_utf8_lossy(&out.stdout)
        ),
        Err(e) => assert_eq!(e.raw_os_error(), Some(libc::ESTALE), "{e}"),
    }
}

#[test]
fn a_cover_or_hidden_file_swapped_after_prepare_fails_the_spawn() {
    if !available() || !sandbox::support().user_namespaces {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            child_test("swap_child").as_str(),
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_VAR, "swap")
        .env("TMPDIR", dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("1 passed"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn is_root() -> bool {
    // SAFETY: geteuid(2) cannot fail.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn hiding_works_for_a_user_other_than_root() {
    if !available() || !sandbox::support().user_namespaces || !is_root() || !has("setpriv") {
        return;
    }
    // nobody: its own uid in uid_map, and EACCES on the covers.
    run_hide_child(
        &[
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ],
        &[("TMPDIR", Path::new("/tmp")), ("HOME", Path::new("/tmp"))],
    );
}

#[test]
fn hiding_works_when_the_temp_dir_is_nosuid_nodev_noexec() {
    if !available() || !sandbox::support().user_namespaces || !is_root() || !has("unshare") {
        return;
    }
    // The covers then live on a mount whose flags are locked in the
    // command's user namespace: the read-only remount must keep them.
    let dir = tempfile::tempdir().unwrap();
    run_hide_child(
        &[
            "unshare",
            "-m",
            "--propagation",
            "private",
            "sh",
            "-c",
            "mount -t tmpfs -o nosuid,nodev,noexec,mode=1777 tmpfs \"$TMPDIR\" && exec \"$@\"",
            "sh",
        ],
        &[("TMPDIR", dir.path())],
    );
}

#[tokio::test]
async fn no_namespaces_without_hidden_paths_and_a_refusal_without_user_namespaces() {
    if !available() {
        return;
    }
    let (_d, root, mut p) = secret_project();
    let without = Support {
        user_namespaces: false,
        ..sandbox::support().clone()
    };
    match sandbox::prepare_with(&without, &p) {
        Err(SandboxError::CannotHide { path }) => assert!(path.contains(".env"), "{path}"),
        other => panic!("expected CannotHide, got {other:?}"),
    }
    // Hidden paths that do not exist need nothing.
    p.hidden = vec![root.join("no-such-file")];
    let prepared = sandbox::prepare_with(&without, &p).unwrap();
    assert!(!prepared.uses_namespaces());
    p.hidden.clear();
    assert!(!sandbox::prepare(&p).unwrap().uses_namespaces());
    // Without namespaces the command runs in the parent's user namespace.
    let r = run(&p, &root, "readlink /proc/self/ns/user").await;
    let mine = fs::read_link("/proc/self/ns/user").unwrap();
    assert_eq!(r.out.trim(), mine.display().to_string(), "{r:?}");
}

/// The environment variable that tells the child copy of this binary that
/// it runs [`forced_off_child`] (`forced-off`), [`hide_child`] (`hide`) or
/// [`swap_child`] (`swap`).
const CHILD_VAR: &str = "LATHE_SANDBOX_TEST_CHILD";

#[test]
fn forced_off_makes_the_probe_say_unavailable_and_prepare_fail() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            child_test("forced_off_child").as_str(),
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(sandbox::FORCE_OFF_VAR, "off")
        .env(CHILD_VAR, "forced-off")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("1 passed"), "{text}");
    assert_eq!(
        sandbox::forced_off_by(Some("on".as_ref())),
        None,
        "only `off` turns it off"
    );
}

/// Runs only as the child of the test above (with `LATHE_SANDBOX=off`).
#[test]
fn forced_off_child() {
    if std::env::var_os(CHILD_VAR).as_deref() != Some("forced-off".as_ref()) {
        return;
    }
    let s = sandbox::support();
    let why = s.unavailable().expect("forced off");
    assert_eq!(why, "LATHE_SANDBOX=off is set");
    assert!(
        s.describe().contains("LATHE_SANDBOX=off"),
        "{}",
        s.describe()
    );
    match sandbox::prepare(&read_only(false)) {
        Err(SandboxError::Unavailable(w)) => assert_eq!(w, why),
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

#[tokio::test]
async fn frozen_paths_can_be_read_not_changed_and_the_rest_of_the_project_can() {
    if !available() || !sandbox::support().user_namespaces {
        return;
    }
    let (_d, root) = project();
    fs::create_dir_all(root.join(".git/hooks")).unwrap();
    fs::write(root.join(".git/config"), "[core]\n").unwrap();
    fs::create_dir_all(root.join(".claude")).unwrap();
    fs::write(root.join(".claude/settings.local.json"), "{}").unwrap();
    let mut p = workspace(vec![root.clone()]);
    p.frozen = vec![
        root.join(".git/hooks"),
        root.join(".git/config"),
        root.join(".claude"),
        root.join(".mcp.json"), // missing: nothing to cover
    ];
    let tries = [
        "echo 'touch /tmp/x' > .git/hooks/pre-commit",
        "echo '[core] fsmonitor = x' >> .git/config",
        "echo '{\"permissions\":{\"allow\":[\"Bash\"]}}' > .claude/settings.local.json",
        "rm .claude/settings.local.json",
        "mv .claude .claude-old",
        "rm -rf .git/hooks",
        "touch .claude/commands",
    ];
    for t in tries {
        let r = run(&p, &root, t).await;
        assert!(!r.ok, "{t}: {r:?}");
    }
    assert!(!root.join(".git/hooks/pre-commit").exists());
    assert_eq!(
        fs::read_to_string(root.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert_eq!(
        fs::read_to_string(root.join(".claude/settings.local.json")).unwrap(),
        "{}"
    );
    assert!(root.join(".claude").is_dir() && root.join(".git/hooks").is_dir());
    // Read, and the rest of the project (and of .git) written as before.
    let r = run(
        &p,
        &root,
        "cat .git/config && echo new > b.txt && echo ref > .git/HEAD && ls .claude",
    )
    .await;
    assert!(
        r.ok && r.out.contains("[core]") && r.out.contains("settings.local.json"),
        "{r:?}"
    );
    assert_eq!(fs::read_to_string(root.join("b.txt")).unwrap(), "new\n");
    // A read-only policy ignores the list (it changes nothing anyway).
    let mut ro = read_only(false);
    ro.frozen = p.frozen.clone();
    assert!(!ro.needs_namespaces());
}
