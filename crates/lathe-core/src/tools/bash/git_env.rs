//! The environment that keeps a read-only git command (`git status`,
//! `git log`, `git diff`, …) that lathe runs without asking from running a
//! program a repository's configuration names.
//!
//! A repository's config can make git run programs: `core.fsmonitor` (run
//! by `git status` and `git diff`), hooks (`post-index-change` when status
//! refreshes the index), `gpg.program` (`git log --show-signature`, or any
//! `git log` with `log.showSignature`), `diff.external`, and drivers chosen
//! by attributes (`diff.<name>.textconv` for `git diff`, `git log -p`,
//! `git blame`; `diff.<name>.command`; `filter.<name>.clean`/`process`
//! for `git status`). Writes into any `.git/` folder always ask, but a
//! folder laid out as a bare repository (`HEAD`, `config`, `objects/`,
//! `refs/`) has a `config` the model can write, and a project unpacked
//! from an archive may bring its own `.git/config`.
//!
//! [`read_only_git_env`] turns off what can be turned off without changing
//! what the commands print: config given in the environment
//! (`GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_<n>`/`GIT_CONFIG_VALUE_<n>`, git ≥
//! 2.31) is command-line config, which beats every config file, and is
//! "protected" config, so `safe.bareRepository=explicit` counts. What it
//! cannot turn off (`diff.external`, drivers chosen by attributes) is
//! found by [`program_keys`] in the config listing.
//! Findings with git 2.39.5 and 2.47.3 are in the tests' comments.

/// The empty tree's id (SHA-1), which every SHA-1 repository knows.
pub const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// `GIT_ATTR_SOURCE` set to the empty tree (git ≥ 2.40): attributes are
/// read from it instead of the work tree and index, so no `.gitattributes`
/// selects a diff or filter driver. NOT part of [`read_only_git_env`]:
/// older git ignores it; it does not cover `.git/info/attributes` nor
/// `core.attributesFile`; it makes `git status` and `git diff` fail in a
/// SHA-256 repository ("bad --attr-source or GIT_ATTR_SOURCE": the id is
/// SHA-1's); and it drops the attributes that change what the commands
/// print (`binary`, `eol`, `text`, `filter=lfs`). A driver needs config the
/// model cannot write without asking (anything in `.git/` asks; a fake
/// bare repository is refused), and [`program_keys`] finds one.
pub const ATTR_SOURCE_EMPTY: (&str, &str) = ("GIT_ATTR_SOURCE", EMPTY_TREE);

/// Config set for the command, highest precedence (each tested below):
pub const CONFIG: &[(&str, &str)] = &[
    // `git status`/`git diff` ask the fsmonitor program what changed.
    ("core.fsmonitor", "false"),
    // No hook runs (`post-index-change` when status writes the index).
    ("core.hooksPath", "/dev/null"),
    // A fake bare repository (a folder with HEAD, config, objects/, refs/)
    // is not used unless named by --git-dir or GIT_DIR; only honoured from
    // protected config, which command-line config is (git ≥ 2.38).
    ("safe.bareRepository", "explicit"),
    // Signature checks (`log --show-signature`, `log.showSignature`)
    // run `false`: git then says it could not verify the signature.
    ("gpg.program", "false"),
    ("gpg.openpgp.program", "false"),
    ("gpg.x509.program", "false"),
    ("gpg.ssh.program", "false"),
    // No pager or editor (none runs without a terminal anyway, but
    // `git grep -O` opens the pager whatever the terminal).
    ("core.pager", "cat"),
    ("core.editor", "true"),
    ("sequence.editor", "true"),
    // Nothing goes over the network (a partial clone's lazy fetch, a
    // promisor remote with an `ext::` URL that runs a command): every
    // protocol is refused, each by name too, since a repository's
    // `protocol.<name>.allow` beats `protocol.allow`. GIT_ALLOW_PROTOCOL
    // below beats both.
    ("protocol.allow", "never"),
    ("protocol.ext.allow", "never"),
    ("protocol.file.allow", "never"),
    ("protocol.git.allow", "never"),
    ("protocol.http.allow", "never"),
    ("protocol.https.allow", "never"),
    ("protocol.ssh.allow", "never"),
    ("core.sshCommand", "false"),
    // An empty value empties the list of helpers; an empty askPass is
    // none.
    ("credential.helper", ""),
    ("core.askPass", ""),
    // Only honoured from protected config anyway (upload-pack).
    ("uploadpack.packObjectsHook", ""),
];

/// Variables set for the command besides [`CONFIG`]:
pub const VARS: &[(&str, &str)] = &[
    // `git status` does not write the index (no index.lock, no
    // post-index-change hook).
    ("GIT_OPTIONAL_LOCKS", "0"),
    // An empty list: no transport is allowed, whatever the config says.
    ("GIT_ALLOW_PROTOCOL", ""),
    // git ≥ 2.44: a partial clone does not fetch missing objects.
    ("GIT_NO_LAZY_FETCH", "1"),
    ("GIT_PAGER", "cat"),
    ("GIT_EDITOR", "true"),
    ("GIT_SEQUENCE_EDITOR", "true"),
    ("GIT_TERMINAL_PROMPT", "0"),
];

/// The environment variables to add to a read-only git command that runs
/// without asking: `GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_<n>`,
/// `GIT_CONFIG_VALUE_<n>` for [`CONFIG`], then [`VARS`]. Replaces (not
/// extends) any `GIT_CONFIG_COUNT` in lathe's environment. Does not cover
/// `diff.external` (an empty value makes `git diff` fail: "cannot run")
/// nor drivers chosen by attributes (`diff.<name>.textconv`,
/// `filter.<name>.clean`, …; see [`ATTR_SOURCE_EMPTY`]): check the
/// listing with [`program_keys`].
pub fn read_only_git_env() -> Vec<(String, String)> {
    let mut env = vec![("GIT_CONFIG_COUNT".to_string(), CONFIG.len().to_string())];
    for (i, (k, v)) in CONFIG.iter().enumerate() {
        env.push((format!("GIT_CONFIG_KEY_{i}"), (*k).to_string()));
        env.push((format!("GIT_CONFIG_VALUE_{i}"), (*v).to_string()));
    }
    env.extend(
        VARS.iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string())),
    );
    env
}

/// The keys of a config listing that name a program [`read_only_git_env`]
/// does not turn off: `diff.external`, `diff.<driver>.textconv`,
/// `diff.<driver>.command`, `filter.<driver>.clean`/`smudge`/`process`,
/// lowercased as git prints them. The listing is the output of `git config
/// --list --show-scope -z` (`scope` NUL `name` LF `value` NUL …; without
/// `-z`, `scope` TAB `name=value` lines; without `--show-scope`, every
/// entry counts): entries of the `system` and `global` scopes (the
/// machine's and the user's own files, outside the project) are left out,
/// so a user's `git lfs install` does not count. A caller can run that
/// command (it runs no program of the config) with [`read_only_git_env`]
/// in the command's directory and ask before the command when this is not
/// empty.
pub fn program_keys(listing: &str) -> Vec<String> {
    const SCOPES: &[&str] = &[
        "system", "global", "local", "worktree", "command", "unknown",
    ];
    let mut out: Vec<String> = Vec::new();
    let mut scope = "";
    let nul = listing.contains('\0');
    let entries: Vec<&str> = if nul {
        listing.split('\0').collect()
    } else {
        listing.lines().collect()
    };
    for entry in entries {
        if nul && SCOPES.contains(&entry) {
            scope = entry;
            continue;
        }
        let (entry_scope, rest) = match entry.split_once('\t') {
            Some((s, r)) if !nul && SCOPES.contains(&s) => (s, r),
            _ => (scope, entry),
        };
        if matches!(entry_scope, "system" | "global") {
            continue;
        }
        let sep: &[char] = if nul { &['\n'] } else { &['='] };
        let name = rest
            .split(sep)
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        if runs_program(&name) && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// `true` for a config key naming a program that [`read_only_git_env`]
/// does not turn off.
fn runs_program(name: &str) -> bool {
    let parts: Vec<&str> = name.split('.').collect();
    match parts.as_slice() {
        ["diff", "external"] => true,
        ["diff", _, .., last] => matches!(*last, "textconv" | "command"),
        ["filter", _, .., last] => matches!(*last, "clean" | "smudge" | "process"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    //! Real git in real temporary repositories: each attack sets a key to
    //! a command that creates a marker file, then runs the read-only
    //! command that triggers it, with [`read_only_git_env`] (the marker
    //! must not appear) and without it (the control: it must, so the test
    //! proves something).
    //!
    //! Findings (git 2.39.5, Debian's /usr/bin/git, and 2.47.3,
    //! /usr/local/bin/git):
    //! - fixed keys (fsmonitor, hooks, gpg, protocols): turned off by
    //!   both.
    //! - `diff.external`: cannot be turned off; `-c diff.external=` (and
    //!   `GIT_EXTERNAL_DIFF=`) make every `git diff` fail with "cannot run
    //!   : No such file or directory". Found by [`program_keys`].
    //! - drivers chosen by `.gitattributes` (textconv for diff, log -p and
    //!   blame; diff command; clean filter for status): turned off by
    //!   `GIT_ATTR_SOURCE=<empty tree>` with 2.47, not with 2.39 (ignored);
    //!   in a SHA-256 repository that id makes status and diff fail, so
    //!   it is not part of the env ([`ATTR_SOURCE_EMPTY`]).
    //! - drivers chosen by `.git/info/attributes`: not turned off by
    //!   either (GIT_ATTR_SOURCE replaces only the tree's attributes).
    //! - a submodule's own config: the env's config reaches the git that
    //!   `git status` runs in it (both versions).
    //! - `GIT_ALLOW_PROTOCOL=` (empty) refuses `ext::` even where the
    //!   repository sets `protocol.ext.allow=always`.
    //! - a fake bare repository: with the default `safe.bareRepository`
    //!   (all) it is used (`git log` runs its gpg program); with
    //!   `explicit` git refuses it.
    //! - `git status` with the default GIT_OPTIONAL_LOCKS refreshes the
    //!   index and runs `post-index-change`.
    use super::*;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    /// The `git` on PATH and its version (major, minor); `None` when git
    /// is missing or older than 2.31 (no GIT_CONFIG_COUNT).
    fn git_version() -> Option<(u32, u32)> {
        let out = Command::new("git").arg("--version").output().ok()?;
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let v = text.split_whitespace().nth(2)?;
        let mut it = v.split('.');
        let major = it.next()?.parse().ok()?;
        let minor = it.next()?.parse().ok()?;
        ((major, minor) >= (2, 31)).then_some((major, minor))
    }

    struct Repo {
        _dir: tempfile::TempDir,
        path: PathBuf,
        marker: PathBuf,
    }

    /// `git` in `dir` with a clean environment (no user or system config)
    /// plus `extra`; its output.
    fn git(dir: &Path, args: &[&str], extra: &[(String, String)]) -> std::process::Output {
        let mut c = Command::new("git");
        c.args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("HOME", dir)
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_CONFIG_COUNT")
            .envs(extra.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        c.output().expect("git runs")
    }

    fn ok(dir: &Path, args: &[&str]) {
        let out = git(dir, args, &[]);
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A repository with one commit of `a.txt`, then `a.txt` changed.
    fn repo() -> Repo {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().canonicalize().expect("canonical").join("r");
        std::fs::create_dir_all(&path).expect("mkdir");
        let marker = dir.path().canonicalize().expect("canonical").join("marker");
        ok(&path, &["init", "-q", "."]);
        ok(&path, &["config", "user.email", "a@b"]);
        ok(&path, &["config", "user.name", "a"]);
        std::fs::write(path.join("a.txt"), "hi\n").expect("write");
        ok(&path, &["add", "a.txt"]);
        ok(&path, &["commit", "-qm", "init"]);
        std::fs::write(path.join("a.txt"), "hi\nmore\n").expect("write");
        Repo {
            _dir: dir,
            path,
            marker,
        }
    }

    impl Repo {
        /// A shell command that creates the marker (then copies stdin to
        /// stdout, as a filter or textconv would).
        fn touch(&self) -> String {
            format!(
                "touch {}; cat >/dev/null; cat /dev/null",
                self.marker.display()
            )
        }

        /// An executable script creating the marker (for programs git runs
        /// without a shell, like gpg.program).
        fn script(&self) -> String {
            use std::os::unix::fs::PermissionsExt;
            let p = self.path.join("evil.sh");
            std::fs::write(&p, format!("#!/bin/sh\ntouch {}\n", self.marker.display()))
                .expect("write");
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
            p.display().to_string()
        }

        fn set(&self, key: &str, value: &str) {
            ok(&self.path, &["config", key, value]);
        }

        /// Runs `args` in `dir` with `env`; whether the marker appeared.
        fn ran_with(&self, dir: &Path, args: &[&str], env: &[(String, String)]) -> bool {
            let _ = std::fs::remove_file(&self.marker);
            git(dir, args, env);
            self.marker.exists()
        }

        /// [`Repo::ran_with`] with [`read_only_git_env`] or nothing.
        fn ran(&self, dir: &Path, args: &[&str], with_env: bool) -> bool {
            let env = if with_env {
                read_only_git_env()
            } else {
                Vec::new()
            };
            self.ran_with(dir, args, &env)
        }

        /// The attack is real (control) and the env stops it.
        fn stopped(&self, args: &[&str]) {
            self.stopped_in(&self.path, args);
        }

        fn stopped_in(&self, dir: &Path, args: &[&str]) {
            self.stopped_by(dir, args, &read_only_git_env());
        }

        fn stopped_by(&self, dir: &Path, args: &[&str], env: &[(String, String)]) {
            assert!(
                self.ran_with(dir, args, &[]),
                "control: git {args:?} should run the program"
            );
            assert!(
                !self.ran_with(dir, args, env),
                "git {args:?} ran the program with the env"
            );
        }

        /// Makes `a.txt`'s stat info stale with the same content, so that
        /// `git status` must read (and clean-filter) it.
        fn racy(&self) {
            ok(&self.path, &["checkout", "-q", "a.txt"]);
            std::thread::sleep(std::time::Duration::from_millis(1100));
            std::fs::write(self.path.join("a.txt"), "hi\n").expect("write");
        }
    }

    #[test]
    fn the_env_is_well_formed() {
        let env = read_only_git_env();
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let count: usize = get("GIT_CONFIG_COUNT")
            .expect("count")
            .parse()
            .expect("number");
        assert_eq!(count, CONFIG.len());
        for i in 0..count {
            assert!(get(&format!("GIT_CONFIG_KEY_{i}")).is_some());
            assert!(get(&format!("GIT_CONFIG_VALUE_{i}")).is_some());
        }
        assert_eq!(get("GIT_OPTIONAL_LOCKS").as_deref(), Some("0"));
        assert_eq!(get("GIT_ATTR_SOURCE"), None, "see ATTR_SOURCE_EMPTY");
    }

    #[test]
    fn the_commands_still_work_and_print_the_same() {
        if git_version().is_none() {
            return;
        }
        let r = repo();
        for args in [
            &["status", "--short"][..],
            &["diff"],
            &["log", "-p", "--format=%s"],
            &["show", "--stat", "--format=%s"],
            &["blame", "a.txt"],
            &["ls-files"],
            &["rev-parse", "HEAD"],
            &["branch"],
            &["grep", "hi"],
        ] {
            let plain = git(&r.path, args, &[]);
            let with = git(&r.path, args, &read_only_git_env());
            assert!(
                with.status.success(),
                "git {args:?}: {}",
                String::from_utf8_lossy(&with.stderr)
            );
            assert_eq!(plain.stdout, with.stdout, "git {args:?}");
        }
    }

    #[test]
    fn fsmonitor_does_not_run() {
        if git_version().is_none() {
            return;
        }
        let r = repo();
        r.set("core.fsmonitor", &r.touch());
        r.stopped(&["status"]);
        r.stopped(&["diff"]);
    }

    #[test]
    fn hooks_do_not_run() {
        if git_version().is_none() {
            return;
        }
        let r = repo();
        let hooks = r.path.join("hk");
        std::fs::create_dir_all(&hooks).expect("mkdir");
        let hook = hooks.join("post-index-change");
        std::fs::write(&hook, format!("#!/bin/sh\ntouch {}\n", r.marker.display())).expect("write");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        r.set("core.hooksPath", &hooks.display().to_string());
        // status refreshes the stale index and writes it: the hook runs.
        std::fs::write(r.path.join("a.txt"), "hi\n").expect("write");
        let touch_stale = || {
            std::thread::sleep(std::time::Duration::from_millis(1100));
            std::fs::write(r.path.join("a.txt"), "hi\n").expect("write");
        };
        touch_stale();
        assert!(
            r.ran(&r.path, &["status"], false),
            "control: post-index-change"
        );
        touch_stale();
        assert!(!r.ran(&r.path, &["status"], true));
        // core.hooksPath alone (the index is written).
        touch_stale();
        let mut env = read_only_git_env();
        env.retain(|(k, _)| k != "GIT_OPTIONAL_LOCKS");
        let _ = std::fs::remove_file(&r.marker);
        git(&r.path, &["status"], &env);
        assert!(!r.marker.exists(), "core.hooksPath=/dev/null");
    }

    #[test]
    fn signature_programs_do_not_run() {
        if git_version().is_none() {
            return;
        }
        let r = repo();
        // A commit object with a signature header, written as is.
        let tree = String::from_utf8(git(&r.path, &["rev-parse", "HEAD^{tree}"], &[]).stdout)
            .expect("utf8");
        let commit = format!(
            "tree {}\nauthor a <a@b> 1 +0000\ncommitter a <a@b> 1 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n x\n -----END PGP SIGNATURE-----\n\nsigned\n",
            tree.trim()
        );
        let file = r.path.join("c.txt");
        std::fs::write(&file, commit).expect("write");
        let id = git(
            &r.path,
            &["hash-object", "--literally", "-t", "commit", "-w", "c.txt"],
            &[],
        );
        let id = String::from_utf8(id.stdout).expect("utf8");
        ok(&r.path, &["reset", "-q", "--soft", id.trim()]);
        r.set("gpg.program", &r.script());
        r.stopped(&["log", "--show-signature"]);
        r.set("log.showSignature", "true");
        r.stopped(&["log"]);
        r.stopped(&["show"]);
    }

    #[test]
    fn drivers_chosen_by_gitattributes_run_unless_attributes_come_from_the_empty_tree() {
        let Some(version) = git_version() else {
            return;
        };
        let mut attr = read_only_git_env();
        attr.push((ATTR_SOURCE_EMPTY.0.into(), ATTR_SOURCE_EMPTY.1.into()));
        let r = repo();
        std::fs::write(r.path.join(".gitattributes"), "* diff=x\n").expect("write");
        r.set("diff.x.textconv", &r.touch());
        // The env alone does not stop a driver (program_keys finds it).
        assert!(r.ran(&r.path, &["diff"], true));
        // GIT_ATTR_SOURCE is git 2.40's; older git ignores it.
        if version < (2, 40) {
            assert!(r.ran_with(&r.path, &["diff"], &attr), "git < 2.40");
            return;
        }
        r.stopped_by(&r.path, &["diff"], &attr);
        r.stopped_by(&r.path, &["blame", "a.txt"], &attr);
        ok(&r.path, &["commit", "-qam", "two"]);
        r.stopped_by(&r.path, &["log", "-p"], &attr);
        r.stopped_by(&r.path, &["show"], &attr);
        let r = repo();
        std::fs::write(r.path.join(".gitattributes"), "* diff=x\n").expect("write");
        r.set("diff.x.command", &r.touch());
        r.stopped_by(&r.path, &["diff"], &attr);
        let r = repo();
        std::fs::write(r.path.join(".gitattributes"), "* filter=y\n").expect("write");
        r.set("filter.y.clean", &r.touch());
        r.racy();
        r.stopped_by(&r.path, &["status"], &attr);
        // But not through .git/info/attributes.
        let r = repo();
        std::fs::write(r.path.join(".git/info/attributes"), "* diff=x\n").expect("write");
        r.set("diff.x.textconv", &r.touch());
        assert!(
            r.ran_with(&r.path, &["diff"], &attr),
            ".git/info/attributes"
        );
        // And a SHA-256 repository has another empty tree: git fails.
        let dir = tempfile::tempdir().expect("tempdir");
        ok(dir.path(), &["init", "-q", "--object-format=sha256", "."]);
        std::fs::write(dir.path().join("a"), "a\n").expect("write");
        ok(dir.path(), &["add", "a"]);
        let out = git(dir.path(), &["status"], &attr);
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("GIT_ATTR_SOURCE"));
        let out = git(dir.path(), &["status"], &read_only_git_env());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[test]
    fn a_fake_bare_repository_is_not_used() {
        if git_version().is_none() {
            return;
        }
        let r = repo();
        let fake = r.path.join("fake");
        for d in ["objects", "refs/heads"] {
            std::fs::create_dir_all(fake.join(d)).expect("mkdir");
        }
        std::fs::write(fake.join("HEAD"), "ref: refs/heads/main\n").expect("write");
        // A bare repository's `git log` verifies signatures with its
        // gpg.program (`git status` needs a work tree; a fake one with
        // core.worktree is the same attack).
        std::fs::write(
            fake.join("config"),
            format!(
                "[core]\n\trepositoryformatversion = 0\n\tbare = true\n\tfsmonitor = {}\n[log]\n\tshowSignature = true\n[gpg]\n\tprogram = {}\n",
                r.touch(),
                r.script()
            ),
        )
        .expect("write");
        // Give it the signed commit: copy the outer repository's objects.
        let outer_objects = r.path.join(".git/objects");
        let tree = String::from_utf8(git(&r.path, &["rev-parse", "HEAD^{tree}"], &[]).stdout)
            .expect("utf8");
        std::fs::write(
            r.path.join("c.txt"),
            format!(
                "tree {}\nauthor a <a@b> 1 +0000\ncommitter a <a@b> 1 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n x\n -----END PGP SIGNATURE-----\n\nsigned\n",
                tree.trim()
            ),
        )
        .expect("write");
        let id = git(
            &r.path,
            &["hash-object", "--literally", "-t", "commit", "-w", "c.txt"],
            &[],
        );
        let id = String::from_utf8(id.stdout).expect("utf8");
        std::fs::write(fake.join("refs/heads/main"), format!("{}\n", id.trim())).expect("write");
        std::fs::create_dir_all(fake.join("objects/info")).expect("mkdir");
        std::fs::write(
            fake.join("objects/info/alternates"),
            format!("{}\n", outer_objects.display()),
        )
        .expect("write");
        r.stopped_in(&fake, &["log"]);
        // A work tree named in the fake config: status runs fsmonitor.
        let wt = r.path.join("wt");
        std::fs::create_dir_all(&wt).expect("mkdir");
        let cfg = std::fs::read_to_string(fake.join("config")).expect("read");
        std::fs::write(
            fake.join("config"),
            cfg.replace(
                "bare = true",
                &format!("bare = false\n\tworktree = {}", wt.display()),
            ),
        )
        .expect("write");
        r.stopped_in(&fake, &["status"]);
        let out = git(&fake, &["status"], &read_only_git_env());
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("safe.bareRepository"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[test]
    fn a_submodules_config_is_overridden_too() {
        if git_version().is_none() {
            return;
        }
        let lib = repo();
        ok(&lib.path, &["commit", "-qam", "two"]);
        let r = repo();
        let url = lib.path.display().to_string();
        ok(
            &r.path,
            &[
                "-c",
                "protocol.file.allow=always",
                "submodule",
                "add",
                "-q",
                &url,
                "lib",
            ],
        );
        ok(&r.path, &["commit", "-qm", "sub"]);
        // `git status` runs a status in the submodule, which reads its own
        // config: the command-line config reaches it.
        ok(
            &r.path,
            &[
                "config",
                "-f",
                ".git/modules/lib/config",
                "core.fsmonitor",
                &r.touch(),
            ],
        );
        std::fs::write(r.path.join("lib/a.txt"), "changed\n").expect("write");
        r.stopped(&["status"]);
    }

    #[test]
    fn a_lazy_fetch_runs_no_command() {
        if git_version().is_none() {
            return;
        }
        let r = repo();
        // An ext:: remote runs its command when git connects to it.
        let url = format!("ext::sh -c touch% {}", r.marker.display());
        r.set("protocol.ext.allow", "always");
        r.set("remote.origin.url", &url);
        assert!(r.ran(&r.path, &["ls-remote", "origin"], false), "control");
        assert!(!r.ran(&r.path, &["ls-remote", "origin"], true));
    }

    #[test]
    fn program_keys_finds_what_the_env_cannot_turn_off() {
        let listing = "core.fsmonitor=x\ndiff.external=sh x\ndiff.x.textconv=cat\ndiff.a.b.command=x\nfilter.lfs.clean=git-lfs clean -- %f\nfilter.y.process=p\nfilter.y.required=true\ndiff.renames=true\nuser.name=a\n";
        assert_eq!(
            program_keys(listing),
            [
                "diff.external",
                "diff.x.textconv",
                "diff.a.b.command",
                "filter.lfs.clean",
                "filter.y.process"
            ]
        );
        assert_eq!(
            program_keys("diff.external\nsh x\0Diff.X.Textconv\ncat\0user.name\na\0"),
            ["diff.external", "diff.x.textconv"]
        );
        assert!(program_keys("").is_empty());
        // With --show-scope: the user's and the machine's files do not count.
        assert_eq!(
            program_keys("global\0filter.lfs.clean\ngit-lfs clean -- %f\0local\0diff.x.textconv\ncat\0system\0diff.external\nx\0"),
            ["diff.x.textconv"]
        );
        assert_eq!(
            program_keys("global\tfilter.lfs.clean=git-lfs clean\nlocal\tfilter.y.smudge=x\n"),
            ["filter.y.smudge"]
        );
        // Real git: the listing of a repository with diff.external and a
        // textconv driver in its .git/config.
        if git_version().is_none() {
            return;
        }
        let r = repo();
        r.set("diff.external", &r.touch());
        r.set("diff.evil.textconv", &r.touch());
        let global = r.path.join("global-config");
        std::fs::write(&global, "[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n")
            .expect("write");
        let mut env = read_only_git_env();
        env.push(("GIT_CONFIG_GLOBAL".into(), global.display().to_string()));
        let out = git(&r.path, &["config", "--list", "--show-scope", "-z"], &env);
        assert!(!r.marker.exists());
        let listing = String::from_utf8_lossy(&out.stdout);
        assert!(listing.contains("filter.lfs.clean"), "{listing:?}");
        assert_eq!(
            program_keys(&listing),
            ["diff.external", "diff.evil.textconv"]
        );
        // And the reason it is needed: the env does not stop either.
        assert!(
            r.ran(&r.path, &["diff"], true),
            "diff.external is not turned off"
        );
        let r = repo();
        std::fs::create_dir_all(r.path.join(".git/info")).expect("mkdir");
        std::fs::write(r.path.join(".git/info/attributes"), "* diff=x\n").expect("write");
        r.set("diff.x.textconv", &r.touch());
        assert!(
            r.ran(&r.path, &["diff"], true),
            ".git/info/attributes is not covered by GIT_ATTR_SOURCE"
        );
    }
}
