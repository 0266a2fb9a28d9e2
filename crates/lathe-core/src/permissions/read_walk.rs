//! The file-system side of [`super::bash_reads`]: the words a Bash command
//! reads through, expanded the way the shell and the program would (`~`,
//! the working directory after a `cd`, pathname globs, the files below a
//! folder a recursive reader walks), into canonical [`ReadPath`]s for the
//! pure `decide`. This is I/O the permission gate does before it decides,
//! like [`super::resolve_for_rules`].
//!
//! Bounded: at most [`READ_CHECK_LIMIT`] paths are looked at; past that the
//! result says so and the call asks.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use globset::GlobBuilder;
use ignore::WalkBuilder;

use super::bash_reads::{CommandReads, Reach, ReadPath, Walk};
use super::decide::protected_reason;
use super::paths::{resolve_for_rules, spell, Aliases, Spelled};
use super::shell::SimpleCommand;

/// Most paths (files walked, glob matches) one command line is checked for.
pub const READ_CHECK_LIMIT: usize = 20_000;

/// Why a command's reads were not all checked. `{dir}`, `{limit}`.
pub const READS_UNCHECKED: &str =
    "the command reads more than {limit} files under {dir}, too many to check against the read rules and protected paths";

/// Why a command's reads were not all checked: an operand holds a shell
/// substitution lathe cannot resolve before the command runs. `{word}`.
pub const READS_UNRESOLVED: &str =
    "the command reads `{word}`, which the shell expands only when it runs, so lathe cannot check it against the read rules and protected paths (write the path out to let a rule match)";

/// Why a command's reads were not all checked: a `cd` to a substituted
/// folder comes before a relative path. `{dir}`, `{word}`.
pub const READS_AFTER_UNRESOLVED_CD: &str =
    "the command reads `{word}` after `cd {dir}`, a folder the shell expands only when it runs, so lathe cannot check it against the read rules and protected paths (write the folder out to let a rule match)";

/// Why a command's reads were not all checked: git reads its objects and
/// the index that says which protected files it tracks cannot be read.
/// `{index}`.
pub const READS_INDEX_UNREADABLE: &str =
    "the command reads git's objects, and lathe cannot read the index {index} to tell whether git tracks a protected file (.env files, Claude Code settings), whose content it would show";

/// Folders of version control systems: walked only by readers that read
/// them (`grep -r`), and then checked as a whole.
const VCS_DIRS: &[&str] = &[".git", ".hg", ".svn", ".jj"];

/// What a command line reaches on disk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reached {
    /// Every path it reads or lists, canonical.
    pub paths: Vec<ReadPath>,
    /// The paths its operands name directly (globs expanded), canonical:
    /// they count as named paths (outside the project, protected); also
    /// the real folders and files a walk that follows symlinks reaches
    /// through them (so a link out of the project counts as outside).
    pub named: Vec<PathBuf>,
    /// The other names of `named` (as written, and through each symlink
    /// along them: see `permissions::Spelled`): protected names are
    /// checked on them too.
    pub spellings: Vec<PathBuf>,
    /// Set when not everything could be checked: why (the call then asks).
    pub unchecked: Option<String>,
}

/// Where a command line's reads lead: each command's operands expanded
/// against every working directory it may run in (`root`, then each `cd`
/// target before it: conservative for `cd x | cat y`), `~` under `home`.
/// Name-only reaches and git's whole-repository reads are followed only
/// when `names_matter` (a Read deny or ask rule could cover a path:
/// [`super::Rules::read_rules`]). Never fails: what cannot be read drops out, and a
/// walk past [`READ_CHECK_LIMIT`] sets [`Reached::unchecked`].
pub fn reach(
    commands: &[CommandReads],
    root: &Path,
    home: Option<&Path>,
    names_matter: bool,
) -> Reached {
    reach_following(commands, &[], root, home, names_matter)
}

/// [`reach`], where `follows[i]` says whether the program of
/// `commands[i]` follows symbolic links it meets while walking a folder
/// ([`follows_links`]; missing entries: it does not). Such a walk goes
/// into a linked folder and checks every file below it by its real path
/// and by the name it was reached through, and the real paths count as
/// named (so a link out of the project counts as reading outside it).
pub fn reach_following(
    commands: &[CommandReads],
    follows: &[bool],
    root: &Path,
    home: Option<&Path>,
    names_matter: bool,
) -> Reached {
    let mut walker = Walker {
        out: Reached::default(),
        seen: 0,
        walked: HashSet::new(),
        names_matter,
        follow: false,
        objects: false,
        aliases: Aliases::in_dirs(&[Some(root), home].into_iter().flatten().collect::<Vec<_>>()),
    };
    // Each working directory the commands may run in, as the shell's
    // logical `$PWD` (what `..` in a `cd` folds against); the kernel's
    // directory is its real path.
    let mut cwds = vec![resolve_for_rules(root)];
    // A `cd` to a folder only the shell knows: later relative paths could
    // be anywhere.
    let mut lost_cwd: Option<String> = None;
    for (i, cmd) in commands.iter().enumerate() {
        walker.follow = follows.get(i).copied().unwrap_or(false);
        for op in &cmd.operands {
            let counts = walker.counts(op.reach);
            // Where the operand names nothing under any working directory
            // it may run in: those places, counted by name after the loop.
            let mut missing: Option<Vec<(String, PathBuf)>> = Some(Vec::new());
            for cwd in cwds.clone() {
                let word =
                    resolved(&op.word, op.expands, &cwd, home).and_then(|w| shell_dirs(&w, &cwd));
                let Some(word) = word else {
                    if counts {
                        walker.unresolved(READS_UNRESOLVED, &[("word", &op.word)]);
                    }
                    continue;
                };
                if let Some(dir) = lost_cwd.as_deref().filter(|_| counts && is_relative(&word)) {
                    walker.unresolved(READS_AFTER_UNRESOLVED_CD, &[("dir", dir), ("word", &word)]);
                }
                if walker.git_objects(&word, op.reach, &cwd, home) {
                    continue;
                }
                let paths = walker.expand(&word, &cwd, home);
                if paths.is_empty() {
                    if let Some(m) = missing.as_mut() {
                        m.push((word, cwd));
                    }
                } else {
                    missing = None;
                }
                for path in paths {
                    walker.visit(&path, op.reach);
                }
            }
            for (word, cwd) in missing.unwrap_or_default() {
                walker.missing(&word, op.reach, &cwd, home, root);
            }
        }
        if let Some(target) = &cmd.moves_to {
            for cwd in cwds.clone() {
                let word = resolved(target, cmd.moves_expands, &cwd, home)
                    .filter(|t| t != "-")
                    .and_then(|t| shell_dirs(&t, &cwd));
                let Some(word) = word else {
                    lost_cwd.get_or_insert_with(|| target.clone());
                    continue;
                };
                // `cd dir` folds `..` against `$PWD` (logical), `cd -P dir`
                // lets the kernel resolve it: both are kept.
                let named = expand_named_path(&word, &cwd, home);
                for dir in [fold(&named), resolve_for_rules(&named)] {
                    if resolve_for_rules(&dir).is_dir() && !cwds.contains(&dir) {
                        cwds.push(dir);
                    }
                }
            }
        }
    }
    walker.out
}

/// `word` with the shell's and the kernel's names for the working
/// directory `cwd` replaced: `~+` (`$PWD`) and `/proc/self/cwd`,
/// `/proc/thread-self/cwd` (the command's own working directory, not
/// lathe's). `None` for `~-` (`$OLDPWD`, which only the shell knows).
fn shell_dirs(word: &str, cwd: &Path) -> Option<String> {
    let cwd = cwd.to_string_lossy();
    let after = |prefix: &str| {
        word.strip_prefix(prefix)
            .filter(|rest| rest.is_empty() || rest.starts_with('/'))
    };
    if after("~-").is_some() {
        return None;
    }
    for prefix in ["~+", "/proc/self/cwd", "/proc/thread-self/cwd"] {
        if let Some(rest) = after(prefix) {
            return Some(format!("{cwd}{rest}"));
        }
    }
    Some(word.to_string())
}

/// `true` when the program of `cmd` follows symbolic links it meets while
/// walking a folder: `grep -R`/`--dereference-recursive`, `rg -L`/
/// `--follow`, `find -L`/`-follow`, `ls -L`, `du -L`, `tree -l`, and
/// `diff` unless `--no-dereference`. (A link named on the command line is
/// followed by every program; [`reach`] always resolves those.)
pub fn follows_links(cmd: &SimpleCommand) -> bool {
    let Some((program, args)) = cmd.words.split_first() else {
        return false;
    };
    let name = program.rsplit('/').next().unwrap_or(program);
    let options: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .take_while(|a| *a != "--")
        .collect();
    let short = |flag: char| {
        options
            .iter()
            .any(|a| a.starts_with('-') && !a.starts_with("--") && a[1..].contains(flag))
    };
    let long = |opt: &str| options.contains(&opt);
    match name {
        "grep" | "egrep" | "fgrep" => short('R') || long("--dereference-recursive"),
        "rg" => short('L') || long("--follow"),
        "find" => args.iter().any(|a| a == "-L" || a == "-follow"),
        "ls" | "du" => short('L') || long("--dereference"),
        "tree" => short('l'),
        "diff" => !long("--no-dereference"),
        _ => false,
    }
}

/// `path` with `.` removed and `..` applied to the component before it
/// (the shell's logical `cd`).
fn fold(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// `word` with the substitutions lathe knows the value of replaced: `$PWD`
/// and `${PWD}` (the working directory `cwd`), `$HOME` and `${HOME}`
/// (`home`). `None` when `expands` and a substitution is left (`$f`,
/// `$(…)`, a backtick, `{a,b}`): the shell alone knows what it names.
fn resolved(word: &str, expands: bool, cwd: &Path, home: Option<&Path>) -> Option<String> {
    if !expands {
        return Some(word.to_string());
    }
    let mut out = word.to_string();
    let cwd = cwd.to_string_lossy();
    let mut known: Vec<(&str, &str)> = vec![("PWD", &cwd)];
    let home = home.map(|h| h.to_string_lossy().into_owned());
    if let Some(h) = home.as_deref() {
        known.push(("HOME", h));
    }
    for (name, value) in known {
        out = out.replace(&format!("${{{name}}}"), value);
        out = replace_var(&out, name, value);
    }
    if out.contains(['$', '`', '{']) {
        return None;
    }
    Some(out)
}

/// `text` with each `$name` not followed by a name character replaced.
fn replace_var(text: &str, name: &str, value: &str) -> String {
    let pat = format!("${name}");
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(&pat) {
        let after = &rest[i + pat.len()..];
        out.push_str(&rest[..i]);
        if after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            out.push_str(&pat);
        } else {
            out.push_str(value);
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// A path the working directory decides (not `/…` or `~…`).
fn is_relative(word: &str) -> bool {
    !(word.starts_with('/') || word.starts_with('~'))
}

/// A path a command line names, made absolute: `~` and `~/…` under `home`,
/// `~+` and `~+/…` (`$PWD`) against `cwd`, `~user/…` (another user's home,
/// or `~-`, `$OLDPWD`) as an absolute path outside any project, others
/// against `cwd`.
pub fn expand_named_path(p: &str, cwd: &Path, home: Option<&Path>) -> PathBuf {
    if let Some(rest) = p
        .strip_prefix("~+")
        .filter(|r| r.is_empty() || r.starts_with('/'))
    {
        return cwd.join(rest.trim_start_matches('/'));
    }
    match (p.strip_prefix('~'), home) {
        (Some(""), Some(h)) => h.to_path_buf(),
        (Some(rest), Some(h)) if rest.starts_with('/') => h.join(rest.trim_start_matches('/')),
        (Some(_), _) => PathBuf::from("/").join(p),
        (None, _) => cwd.join(p),
    }
}

/// The state of one [`reach`].
struct Walker {
    out: Reached,
    /// Paths looked at so far (against [`READ_CHECK_LIMIT`]).
    seen: usize,
    /// Folders already walked, with how.
    walked: HashSet<(PathBuf, String)>,
    names_matter: bool,
    /// The current command follows symlinks it meets in a walk.
    follow: bool,
    /// The links in the root and the home folder: the names a path also
    /// goes by through them are checked too.
    aliases: Aliases,
    /// Inside a whole-repository read: what is pushed is read out of
    /// git's objects ([`ReadPath::object`]).
    objects: bool,
}

impl Walker {
    /// The existing paths `word` names from `cwd`: itself, or what its glob
    /// matches (plus itself when a file has that literal name).
    fn expand(&mut self, word: &str, cwd: &Path, home: Option<&Path>) -> Vec<PathBuf> {
        let abs = expand_named_path(word, cwd, home);
        let mut out = Vec::new();
        if has_glob(word) {
            match expand_glob(&abs, READ_CHECK_LIMIT.saturating_sub(self.seen)) {
                Ok(found) => {
                    self.seen += found.len();
                    out.extend(found);
                }
                Err(TooMany) => self.too_many(cwd),
            }
        }
        if abs.symlink_metadata().is_ok() {
            out.push(abs);
        }
        out
    }

    /// Whether an operand reaching this way is checked at all: names only
    /// when a deny rule could cover a name.
    fn counts(&self, reach: Reach) -> bool {
        self.names_matter || !matches!(reach, Reach::Names { .. } | Reach::Repository)
    }

    /// Expands the git reaches ([`Reach::RepoTree`], [`Reach::RevOrPath`],
    /// [`Reach::Repository`]) of `word` from `cwd`; `false` for the
    /// others, which [`Walker::expand`] and [`Walker::visit`] handle.
    fn git_objects(&mut self, word: &str, reach: Reach, cwd: &Path, home: Option<&Path>) -> bool {
        match reach {
            Reach::RepoTree(walk) => {
                let top = repository_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
                self.object_paths(word, Reach::Tree(walk), &top, home);
            }
            Reach::ObjectTree(walk) => {
                let paths = self.object_paths(word, Reach::Tree(walk), cwd, home);
                // A pathspec that names nothing on disk may be a git glob
                // or carry magic (`:(top)`, `:/`): any file may match.
                if paths == 0 && (has_glob(word) || word.starts_with(':')) {
                    self.repository(cwd);
                }
            }
            Reach::RevOrPath(walk) => {
                let paths = self.expand(word, cwd, home);
                if paths.is_empty() {
                    self.repository(cwd);
                }
                for path in paths {
                    self.visit(&path, Reach::Tree(walk));
                }
            }
            Reach::Repository => {
                let start = resolve_for_rules(&expand_named_path(word, cwd, home));
                self.repository(&start);
            }
            _ => return false,
        }
        true
    }

    /// The paths a git object path `word` names from `base`, visited as
    /// `reach`; when none exists, the path as git reads it (folded, not
    /// resolved: git's trees hold no work-tree links) still counts as a
    /// content read, as a file and as a folder, since git holds what the
    /// work tree lacks. How many existed.
    fn object_paths(
        &mut self,
        word: &str,
        reach: Reach,
        base: &Path,
        home: Option<&Path>,
    ) -> usize {
        let paths = self.expand(word, base, home);
        if paths.is_empty() {
            let named = spell(&fold(&expand_named_path(word, base, home)));
            self.out.named.push(named.real.clone());
            self.out.spellings.extend(named.names.iter().cloned());
            self.push(&named, false, true);
            self.push(&named, true, true);
        }
        for path in &paths {
            self.visit(path, reach);
        }
        paths.len()
    }

    /// A read of `word` that names nothing yet: an earlier command of the
    /// same line may create it (`git checkout HEAD -- secret; cat
    /// secret/s.txt`), after the sandbox's covers were made, so it counts
    /// by its name, as a file and as a folder, like a path git holds.
    /// Lists of names, globs that match nothing and paths outside the
    /// project `root` are left out.
    fn missing(&mut self, word: &str, reach: Reach, cwd: &Path, home: Option<&Path>, root: &Path) {
        if !matches!(reach, Reach::Content | Reach::Tree(_)) || has_glob(word) {
            return;
        }
        let named = self
            .aliases
            .apply(spell(&expand_named_path(word, cwd, home)));
        // Only the project's: a command that runs without asking creates
        // nothing outside it but in the temp dir.
        if !named.real.starts_with(resolve_for_rules(root)) {
            return;
        }
        self.out.named.push(named.real.clone());
        self.out.spellings.extend(named.names.iter().cloned());
        self.push(&named, false, true);
        self.push(&named, true, true);
    }

    /// Every file of the git repository `dir` is in (or of `dir` outside
    /// one), `.git` included, as read out of git's objects
    /// ([`ReadPath::object`]): git may read any of them out of its object
    /// store. Walked only when a Read deny or ask rule could cover one.
    /// Each protected file the index lists counts as a plain content read
    /// whatever the rules ([`tracked_protected`]).
    fn repository(&mut self, dir: &Path) {
        let top = repository_root(dir).unwrap_or_else(|| dir.to_path_buf());
        let top = resolve_for_rules(&top);
        if !top.is_dir() || !self.walked.insert((top.clone(), "repository".into())) {
            return;
        }
        match tracked_protected(&top) {
            Some(paths) => {
                for p in paths {
                    self.push(&spell(&p), false, true);
                }
            }
            None => self.unresolved(
                READS_INDEX_UNREADABLE,
                &[(
                    "index",
                    &top.join(".git").join("index").display().to_string(),
                )],
            ),
        }
        if !self.names_matter {
            return;
        }
        let spelled = spell(&top);
        let was = std::mem::replace(&mut self.objects, true);
        self.push(&spelled, true, false);
        self.walk(&spelled, None, None);
        self.objects = was;
    }

    /// Records that not every read could be checked: `template` filled
    /// with `vars` (the first such reason is kept).
    fn unresolved(&mut self, template: &str, vars: &[(&str, &str)]) {
        if self.out.unchecked.is_none() {
            self.out.unchecked = Some(crate::text::fill(template, vars));
        }
    }

    /// Records what `reach` reaches through the existing `path` (every
    /// name of it: see [`Spelled`]).
    fn visit(&mut self, path: &Path, reach: Reach) {
        let spelled = self.aliases.apply(spell(path));
        let is_dir = spelled.real.is_dir();
        self.out.named.push(spelled.real.clone());
        self.out.spellings.extend(spelled.names.iter().cloned());
        match reach {
            Reach::Content => self.push(&spelled, is_dir, true),
            Reach::Tree(walk) if is_dir => self.walk(&spelled, Some(walk), None),
            Reach::Tree(_) => self.push(&spelled, false, true),
            Reach::RepoTree(walk) | Reach::RevOrPath(walk) | Reach::ObjectTree(walk) if is_dir => {
                self.walk(&spelled, Some(walk), None)
            }
            Reach::RepoTree(_) | Reach::RevOrPath(_) | Reach::ObjectTree(_) => {
                self.push(&spelled, false, true)
            }
            Reach::Repository => self.repository(&spelled.real),
            Reach::Names { .. } if !self.names_matter => {}
            Reach::Names { depth } => {
                self.push(&spelled, is_dir, false);
                if is_dir && depth != Some(0) {
                    self.walk(&spelled, None, depth);
                }
            }
        }
    }

    /// Records the path `spelled` by each of its names (and those it goes
    /// by through the links in the root and home folders).
    fn push(&mut self, spelled: &Spelled, is_dir: bool, content: bool) {
        let spelled = self.aliases.apply(spelled.clone());
        for path in spelled.all() {
            self.out.paths.push(ReadPath {
                path: path.to_path_buf(),
                is_dir,
                content: content || self.objects,
                object: self.objects,
            });
        }
    }

    fn too_many(&mut self, dir: &Path) {
        if self.out.unchecked.is_none() {
            self.out.unchecked = Some(crate::text::fill(
                READS_UNCHECKED,
                &[
                    ("limit", &READ_CHECK_LIMIT.to_string()),
                    ("dir", &dir.display().to_string()),
                ],
            ));
        }
    }

    /// Walks the folder `dir` (its real path; what is found is recorded by
    /// each name of the folder too): the files a recursive reader reads
    /// (`walk`), or the names a lister lists down to `depth` (`walk` is
    /// `None`). A symbolic link met on the way is checked as what it
    /// points to (a folder as a whole) when the program does not follow
    /// links; when it does, a linked folder is walked in turn and its
    /// real path counts as named. A VCS folder is checked as a whole when
    /// the reader reads it, else skipped.
    fn walk(&mut self, dir_names: &Spelled, walk: Option<Walk>, depth: Option<usize>) {
        let dir = dir_names.real.as_path();
        if !self
            .walked
            .insert((dir.to_path_buf(), format!("{walk:?}{depth:?}")))
        {
            return;
        }
        let content = walk.is_some();
        let w = walk.unwrap_or(Walk {
            hidden: true,
            ignore_files: false,
            vcs: true,
        });
        let vcs_found: Arc<Mutex<Vec<PathBuf>>> = Arc::default();
        let mut b = WalkBuilder::new(dir);
        b.standard_filters(false)
            .hidden(!w.hidden)
            .follow_links(false)
            .max_depth(depth);
        if w.ignore_files {
            b.ignore(true)
                .git_ignore(true)
                .git_global(true)
                .git_exclude(true)
                .parents(true)
                .add_custom_ignore_filename(".rgignore");
        }
        let found = vcs_found.clone();
        b.filter_entry(move |e| {
            let vcs = e.depth() > 0
                && e.file_type().is_some_and(|t| t.is_dir())
                && e.file_name()
                    .to_str()
                    .is_some_and(|n| VCS_DIRS.contains(&n));
            if vcs {
                if let Ok(mut v) = found.lock() {
                    v.push(e.path().to_path_buf());
                }
            }
            !vcs
        });
        for entry in b.build().flatten() {
            let Some(kind) = entry.file_type() else {
                continue;
            };
            if entry.depth() == 0 || kind.is_dir() {
                continue;
            }
            self.seen += 1;
            if self.seen > READ_CHECK_LIMIT {
                self.too_many(dir);
                return;
            }
            let rel = entry.path().strip_prefix(dir).unwrap_or(Path::new(""));
            let found = dir_names.below(rel);
            if kind.is_symlink() {
                let target = spell(entry.path());
                let mut names = found.names.clone();
                names.push(found.real.clone());
                names.extend(target.names.iter().cloned());
                names.retain(|n| *n != target.real);
                let linked = Spelled {
                    real: target.real,
                    names,
                };
                let is_dir = linked.real.is_dir();
                let below = depth.map(|d| d.saturating_sub(entry.depth()));
                if self.follow {
                    self.out.named.push(linked.real.clone());
                }
                if self.follow && is_dir && below != Some(0) {
                    if walk.is_none() {
                        self.push(&linked, true, false);
                    }
                    self.walk(&linked, walk, below);
                } else {
                    self.push(&linked, is_dir, content);
                }
            } else {
                self.push(&found, false, content);
            }
        }
        let vcs: Vec<PathBuf> = vcs_found.lock().map(|v| v.clone()).unwrap_or_default();
        if w.vcs {
            for v in vcs {
                let rel = v.strip_prefix(dir).unwrap_or(Path::new(""));
                self.push(&dir_names.below(rel), true, content);
            }
        }
    }
}

/// The root of the git repository `dir` is in: the nearest folder, `dir`
/// or above, that holds a `.git` (a folder, or a file for a worktree or
/// submodule); for a `.git` folder itself, the folder above it. `None`
/// outside any repository. Separate from path resolution: it only looks
/// for `.git` entries.
fn repository_root(dir: &Path) -> Option<PathBuf> {
    if dir.file_name().is_some_and(|n| n == ".git") {
        return dir.parent().map(Path::to_path_buf);
    }
    dir.ancestors()
        .find(|d| d.join(".git").symlink_metadata().is_ok())
        .map(Path::to_path_buf)
}

/// The files with a protected name (`.env*`, `.claude/settings*.json`)
/// that the index of the repository whose work tree is `top` lists, as
/// paths below `top`: git holds their content. The index is `.git/index`
/// or the `index` of the folder a `.git` file names (`gitdir: …`: a
/// worktree or submodule), with the `sharedindex.*` files of a split
/// index. Empty without an index; `None` when one cannot be read or
/// parsed.
fn tracked_protected(top: &Path) -> Option<Vec<PathBuf>> {
    let dot_git = top.join(".git");
    let git_dir = if dot_git.is_dir() {
        dot_git
    } else {
        let text = std::fs::read_to_string(&dot_git).ok()?;
        top.join(text.strip_prefix("gitdir:")?.trim())
    };
    let mut files = vec![git_dir.join("index")];
    if let Ok(entries) = std::fs::read_dir(&git_dir) {
        files.extend(
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("sharedindex."))
                .map(|e| e.path()),
        );
    }
    let mut out = Vec::new();
    for file in files {
        let bytes = match std::fs::read(&file) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(_) => return None,
        };
        for rel in index_paths(&bytes)? {
            // A sparse index folds a folder outside the cone into one
            // entry: anything may be below it.
            if rel.ends_with('/') {
                return None;
            }
            let path = top.join(&rel);
            if protected_reason(&path).is_some() && !committed_template(&rel) {
                out.push(path);
            }
        }
    }
    Some(out)
}

/// `true` for the committed `.env` templates projects keep next to the
/// real file (`.env.example`, `.env.sample`, `.env.template`,
/// `.env.dist`): committed on purpose, they hold no secret, and counting
/// them would make every `git log -p` ask in most projects.
fn committed_template(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel).to_ascii_lowercase();
    [".example", ".sample", ".template", ".dist"]
        .iter()
        .any(|t| name.starts_with(".env") && name.ends_with(t))
}

/// The paths a git index (versions 2 to 4) lists; `None` when `bytes` is
/// not one. The object id is 20 bytes (SHA-1) or 32 (SHA-256): the one
/// that parses every entry is taken.
fn index_paths(bytes: &[u8]) -> Option<Vec<String>> {
    if bytes.get(0..4) != Some(b"DIRC") {
        return None;
    }
    let word = |at: usize| -> Option<usize> {
        let b = bytes.get(at..at + 4)?;
        Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
    };
    let version = word(4)?;
    let count = word(8)?;
    if !(2..=4).contains(&version) {
        return None;
    }
    [20, 32]
        .into_iter()
        .find_map(|id| index_entries(bytes, version, count, id))
}

/// The `count` entry paths of an index of `version` whose object ids are
/// `id` bytes long, or `None` when they do not parse that way.
fn index_entries(bytes: &[u8], version: usize, count: usize, id: usize) -> Option<Vec<String>> {
    let mut out = Vec::with_capacity(count.min(bytes.len() / 62));
    let mut at = 12;
    let mut prev: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = at;
        // ctime, mtime, dev, ino, mode, uid, gid, size; the id; flags.
        at += 40 + id;
        let f = bytes.get(at..at + 2)?;
        let flags = u16::from_be_bytes([f[0], f[1]]);
        at += 2;
        if version >= 3 && flags & 0x4000 != 0 {
            at += 2;
        }
        let name_len = usize::from(flags & 0x0fff);
        let name = if version == 4 {
            // How many bytes of the previous path to drop (git's varint).
            let mut c = *bytes.get(at)?;
            at += 1;
            let mut drop = usize::from(c & 127);
            while c & 128 != 0 {
                c = *bytes.get(at)?;
                at += 1;
                drop = (drop.checked_add(1)?).checked_shl(7)? | usize::from(c & 127);
            }
            let end = at + bytes.get(at..)?.iter().position(|b| *b == 0)?;
            let mut name = prev.get(..prev.len().checked_sub(drop)?)?.to_vec();
            name.extend_from_slice(bytes.get(at..end)?);
            at = end + 1;
            name
        } else {
            let end = at + bytes.get(at..)?.iter().position(|b| *b == 0)?;
            if name_len < 0x0fff && end - at != name_len {
                return None;
            }
            let name = bytes.get(at..end)?.to_vec();
            // NUL padding up to a multiple of eight from the entry start.
            at = start + (end + 1 - start).div_ceil(8) * 8;
            name
        };
        if name_len < 0x0fff && name.len() != name_len {
            return None;
        }
        out.push(String::from_utf8_lossy(&name).into_owned());
        prev = name;
    }
    // What follows the entries: extensions and the checksum.
    (bytes.len() >= at + id).then_some(out)
}

/// `true` when `word` holds a character the shell expands as a pathname
/// glob.
fn has_glob(word: &str) -> bool {
    word.contains(['*', '?', '['])
}

/// The glob matched more paths than allowed.
#[derive(Debug)]
struct TooMany;

/// The existing paths the absolute glob `pattern` matches, the shell's way:
/// component by component, `*`/`?`/`[…]` within one name, a leading `.`
/// matched only by a pattern that starts with `.`. At most `limit` paths.
fn expand_glob(pattern: &Path, limit: usize) -> Result<Vec<PathBuf>, TooMany> {
    let mut current = vec![PathBuf::from("/")];
    for comp in pattern.components() {
        let name = match comp {
            Component::RootDir | Component::Prefix(_) | Component::CurDir => continue,
            Component::ParentDir => {
                current.iter_mut().for_each(|p| p.push(".."));
                continue;
            }
            Component::Normal(n) => n.to_string_lossy().to_string(),
        };
        current = if has_glob(&name) {
            matches_in(&current, &name, limit)?
        } else {
            current.into_iter().map(|p| p.join(&name)).collect()
        };
        if current.is_empty() {
            break;
        }
    }
    Ok(current
        .into_iter()
        .filter(|p| p.symlink_metadata().is_ok())
        .collect())
}

/// The entries of each folder in `dirs` whose name matches the glob `name`.
fn matches_in(dirs: &[PathBuf], name: &str, limit: usize) -> Result<Vec<PathBuf>, TooMany> {
    let Ok(glob) = GlobBuilder::new(name)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
    else {
        return Ok(dirs.iter().map(|d| d.join(name)).collect());
    };
    let matcher = glob.compile_matcher();
    let dots = name.starts_with('.');
    let mut out = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let file = entry.file_name();
            let file = file.to_string_lossy();
            if (dots || !file.starts_with('.')) && matcher.is_match(file.as_ref()) {
                out.push(dir.join(file.as_ref()));
                if out.len() > limit {
                    return Err(TooMany);
                }
            }
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permissions::bash_reads::command_reads;
    use crate::permissions::shell::{split, Split};

    /// A project with `.env`, `secret/s.txt`, `src/a.rs`, `.git/config`.
    fn project() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        for (path, text) in [
            (".env", "SECRET=abc"),
            ("secret/s.txt", "TOKEN=1"),
            ("src/a.rs", "fn main() {}"),
            (".git/config", "[core]"),
        ] {
            let p = root.join(path);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        }
        (dir, root)
    }

    /// The paths `line` reaches, relative to `root`, as `path:c` (content)
    /// or `path:n` (name), `/` after a folder.
    fn reached(line: &str, root: &Path, names_matter: bool) -> Vec<String> {
        let Split::Commands(cmds) = split(line) else {
            panic!("{line}");
        };
        let reads: Vec<CommandReads> = cmds.iter().map(command_reads).collect();
        let mut out: Vec<String> = reach(&reads, root, None, names_matter)
            .paths
            .iter()
            .map(|p| {
                let rel = p.path.strip_prefix(root).unwrap_or(&p.path).display();
                let slash = if p.is_dir { "/" } else { "" };
                format!("{rel}{slash}:{}", if p.content { "c" } else { "n" })
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn globs_expand_like_the_shell() {
        let (_d, root) = project();
        assert_eq!(reached("cat .en*", &root, false), [".env:c"]);
        assert_eq!(reached("cat secret/*", &root, false), ["secret/s.txt:c"]);
        assert_eq!(
            reached("cat *", &root, false),
            ["secret/:c", "src/:c"],
            "a plain * skips dot files, and folders are checked as a whole"
        );
        assert_eq!(
            reached("cat s?cret/[st].txt", &root, false),
            ["secret/s.txt:c"]
        );
        assert!(reached("cat nothing*", &root, false).is_empty());
    }

    #[test]
    fn recursive_readers_reach_everything_below() {
        let (_d, root) = project();
        assert_eq!(
            reached("grep -r SECRET .", &root, false),
            [".env:c", ".git/:c", "secret/s.txt:c", "src/a.rs:c"]
        );
        assert_eq!(
            reached("rg SECRET", &root, false),
            ["secret/s.txt:c", "src/a.rs:c"],
            "rg skips hidden files by default"
        );
        assert_eq!(
            reached("rg --hidden SECRET", &root, false),
            [".env:c", ".git/:c", "secret/s.txt:c", "src/a.rs:c"]
        );
    }

    #[test]
    fn a_read_of_a_path_an_earlier_command_may_create_counts_by_its_name() {
        let (_d, root) = project();
        std::fs::remove_dir_all(root.join("secret")).unwrap();
        assert_eq!(
            reached("true; cat secret/s.txt", &root, false),
            ["secret/s.txt/:c", "secret/s.txt:c"]
        );
        assert!(
            reached("cat /nowhere/x.txt", &root, false).is_empty(),
            "outside the project nothing is created without asking"
        );
        assert!(reached("cat nothing*", &root, false).is_empty());
    }

    #[test]
    fn cd_moves_later_reads() {
        let (_d, root) = project();
        assert_eq!(
            reached("cd secret && cat s.txt", &root, false),
            ["secret/s.txt:c"]
        );
    }

    #[test]
    fn listers_reach_names_only_when_a_deny_rule_could_match() {
        let (_d, root) = project();
        assert!(reached("find . -name x", &root, false).is_empty());
        assert_eq!(
            reached("ls secret", &root, true),
            ["secret/:n", "secret/s.txt:n"]
        );
        assert!(reached("find .", &root, true).contains(&"secret/s.txt:n".to_string()));
    }

    #[test]
    fn symlinks_are_checked_as_their_target() {
        let (_d, root) = project();
        std::os::unix::fs::symlink(root.join("secret/s.txt"), root.join("src/link"))
            .expect("symlink");
        assert!(reached("grep -r x src", &root, false).contains(&"secret/s.txt:c".to_string()));
        assert!(reached("cat src/link", &root, false).contains(&"secret/s.txt:c".to_string()));
    }

    #[test]
    fn a_walk_past_the_limit_says_so() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        let reads = vec![CommandReads {
            operands: vec![crate::permissions::bash_reads::Operand {
                expands: false,
                word: ".".into(),
                reach: Reach::Tree(Walk {
                    hidden: true,
                    ignore_files: false,
                    vcs: true,
                }),
            }],
            moves_to: None,
            moves_expands: false,
        }];
        let mut walker = Walker {
            out: Reached::default(),
            seen: READ_CHECK_LIMIT,
            walked: HashSet::new(),
            names_matter: false,
            follow: false,
            objects: false,
            aliases: Aliases::default(),
        };
        std::fs::write(root.join("a"), "").expect("write");
        walker.visit(&root, reads[0].operands[0].reach);
        assert!(walker.out.unchecked.is_some());
        assert!(reach(&reads, &root, None, false).unchecked.is_none());
    }

    #[test]
    fn substitutions_resolve_or_leave_the_reads_unchecked() {
        let (_dir, root) = project();
        let home = root.join("src");
        let check = |line: &str, names_matter: bool| {
            let Split::Commands(cmds) = split(line) else {
                panic!("{line}");
            };
            let reads: Vec<CommandReads> = cmds.iter().map(command_reads).collect();
            let out = reach(&reads, &root, Some(&home), names_matter);
            let paths: Vec<String> = out
                .paths
                .iter()
                .map(|p| {
                    p.path
                        .strip_prefix(&root)
                        .unwrap_or(&p.path)
                        .display()
                        .to_string()
                })
                .collect();
            (paths, out.unchecked)
        };
        // Known values: the working directory (after a `cd` too) and home.
        for line in [
            r#"cat "$PWD/secret/s.txt""#,
            "cat ${PWD}/secret/s.txt",
            "cd secret && cat $PWD/s.txt",
            "cat $HOME/../secret/s.txt",
        ] {
            let (paths, unchecked) = check(line, false);
            assert!(
                paths.contains(&"secret/s.txt".to_string()),
                "{line}: {paths:?}"
            );
            assert_eq!(unchecked, None, "{line}");
        }
        // Unknown values leave the reads unchecked, naming the word.
        for (line, word) in [
            (r#"cat "$f""#, "$f"),
            ("cat $PWDX/a", "$PWDX/a"),
            ("cat `ls`", "`ls`"),
            ("wc -l < $IN", "$IN"),
            ("grep -r x $DIR", "$DIR"),
        ] {
            let (_, unchecked) = check(line, false);
            let want = crate::text::fill(READS_UNRESOLVED, &[("word", word)]);
            assert_eq!(unchecked.as_deref(), Some(want.as_str()), "{line}");
        }
        let (_, unchecked) = check(r#"cd "$D" && cat s.txt"#, false);
        assert!(unchecked.is_some_and(|u| u.contains("after `cd $D`")));
        // Not a substitution: single quotes; nothing read: echo; names only
        // matter when a deny rule could cover one.
        for line in ["cat '$f'", "echo $f", "ls $D", "cd $D && cat /etc/hostname"] {
            assert_eq!(check(line, false).1, None, "{line}");
        }
        assert!(check("ls $D", true).1.is_some());
    }

    #[test]
    fn golden_unresolved_texts() {
        assert_eq!(
            READS_UNRESOLVED,
            "the command reads `{word}`, which the shell expands only when it runs, so lathe cannot check it against the read rules and protected paths (write the path out to let a rule match)"
        );
        assert_eq!(
            READS_AFTER_UNRESOLVED_CD,
            "the command reads `{word}` after `cd {dir}`, a folder the shell expands only when it runs, so lathe cannot check it against the read rules and protected paths (write the folder out to let a rule match)"
        );
    }

    #[test]
    fn golden_unchecked_text() {
        assert_eq!(
            READS_UNCHECKED,
            "the command reads more than {limit} files under {dir}, too many to check against the read rules and protected paths"
        );
    }

    #[test]
    fn named_paths_expand_like_the_shell_does() {
        let root = Path::new("/w/proj");
        let home = Some(Path::new("/home/u"));
        let cases = [
            ("~", "/home/u"),
            ("~/", "/home/u"),
            ("~/x/y", "/home/u/x/y"),
            ("~bob/x", "/~bob/x"),
            ("src/a", "/w/proj/src/a"),
            ("/etc", "/etc"),
        ];
        for (word, want) in cases {
            assert_eq!(
                expand_named_path(word, root, home),
                Path::new(want),
                "{word}"
            );
        }
    }

    /// The verdict of the gate for `line` in `root` (the repository's
    /// `.git` may be above it) under `rules` (`(deny?, rule)`), with the
    /// reads expanded on disk as the gate does.
    fn gate(line: &str, root: &Path, rules: &[(bool, &str)]) -> &'static str {
        use crate::permissions::{
            decide, Decision, Mode, Request, Rule, RuleBase, RuleKind, RuleSource, Rules,
        };
        let base = RuleBase::at_root(root, None);
        let mut r = Rules {
            mode: Mode::Default,
            ..Rules::default()
        };
        for (deny, text) in rules {
            let kind = if *deny { RuleKind::Deny } else { RuleKind::Ask };
            r.push(
                kind,
                Rule::parse(text, &base).expect("rule"),
                RuleSource::Setup,
            );
        }
        let Split::Commands(cmds) = split(line) else {
            panic!("{line}");
        };
        let reads: Vec<CommandReads> = cmds.iter().map(command_reads).collect();
        let reached = reach(&reads, root, None, r.read_rules());
        let req = Request {
            tool: "Bash",
            family: crate::permissions::RuleFamily::Command,
            read_only: crate::tools::bash::read_only::is_read_only_command(line),
            path: None,
            path_is_dir: false,
            command: Some(line),
            command_paths: &[],
            read_paths: &reached.paths,
            reads_unchecked: reached.unchecked.as_deref(),
            input_json: "{}",
            root,
            spellings: &reached.spellings,
            git_layout: false,
        };
        match decide(&r, &req) {
            Decision::Allow(_) => "allow",
            Decision::Ask(_) => "ask",
            Decision::Deny(_) => "deny",
        }
    }

    #[test]
    fn read_rules_hold_for_options_wrappers_and_git_objects() {
        let (_d, root) = project();
        let deny = [(true, "Read(./secret/**)")];
        let cases = [
            ("date -f secret/s.txt", "deny"),
            ("env cat secret/s.txt", "deny"),
            ("timeout 5 grep -r TOKEN .", "deny"),
            ("git show HEAD:secret/s.txt", "deny"),
            ("git show HEAD:./secret/s.txt", "deny"),
            ("git grep foo HEAD", "deny"),
            ("git log -p", "deny"),
            ("git show", "deny"),
            ("git show 3f2a1b", "deny"),
            ("git diff", "deny"),
            ("jq -n 'import \"secret/s\" as s; s'", "deny"),
            // limited by a path, or not reading blobs: no blanket deny
            ("git show HEAD -- src", "allow"),
            ("git log --oneline", "allow"),
            ("git grep foo -- src", "allow"),
            ("date +%s", "allow"),
        ];
        for (line, want) in cases {
            assert_eq!(gate(line, &root, &deny), want, "{line}");
        }
        // Without rules, git's object reads stay free.
        for line in [
            "git grep foo HEAD",
            "git show HEAD",
            "git log -p",
            "git diff HEAD~1",
        ] {
            assert_eq!(gate(line, &root, &[]), "allow", "{line}");
        }
        // `.env` is protected: reading it through a wrapper asks.
        assert_eq!(gate("timeout 5 cat .env", &root, &[]), "ask");
    }

    /// A version 2 git index listing `paths` (SHA-1 ids), as git writes it.
    fn index_v2(paths: &[&str]) -> Vec<u8> {
        let mut b = b"DIRC".to_vec();
        b.extend(2u32.to_be_bytes());
        b.extend(u32::try_from(paths.len()).expect("count").to_be_bytes());
        for p in paths {
            let start = b.len();
            b.extend([0u8; 60]);
            b.extend(u16::try_from(p.len()).expect("len").to_be_bytes());
            b.extend(p.as_bytes());
            b.push(0);
            while !(b.len() - start).is_multiple_of(8) {
                b.push(0);
            }
        }
        b.extend([0u8; 20]);
        b
    }

    #[test]
    fn git_objects_are_read_whether_or_not_the_work_tree_has_them() {
        let (_d, root) = project();
        std::fs::write(
            root.join(".git/index"),
            index_v2(&["secret/s.txt", "src/a.rs"]),
        )
        .expect("index");
        let deny = [(true, "Read(./secret/**)")];
        let ask = [(false, "Read(./secret/**)")];
        let elsewhere = [(false, "Read(./notes/**)")];
        type Row<'a> = (&'a str, &'a [(bool, &'a str)], &'a str);
        let cases: &[Row] = &[
            // A path missing from the work tree is still in git's objects.
            ("git show HEAD:secret/gone.txt", &deny, "deny"),
            ("git show HEAD:./secret/gone.txt", &deny, "deny"),
            ("git show :0:secret/gone.txt", &deny, "deny"),
            ("git show HEAD:gone/x.txt", &deny, "allow"),
            ("git diff HEAD~1 -- secret/gone", &deny, "deny"),
            ("git show v1 -- secret/gone", &deny, "deny"),
            ("git blame HEAD -- secret/gone.txt", &deny, "deny"),
            ("git log -p -- 'secr*'", &deny, "deny"),
            ("git show HEAD:secret/gone.txt", &ask, "ask"),
            // A whole-repository read meets Read ask rules too ...
            ("git grep foo HEAD", &ask, "ask"),
            ("git log -p", &ask, "ask"),
            ("git show HEAD -- src", &ask, "allow"),
            // ... but not an untracked protected name.
            ("git log -p", &elsewhere, "allow"),
            ("git log -p", &[], "allow"),
        ];
        for (line, rules, want) in cases {
            assert_eq!(gate(line, &root, rules), *want, "{line} {rules:?}");
        }
        // A tracked protected file: whole-repository reads ask, rules or not.
        std::fs::write(root.join(".git/index"), index_v2(&[".env", "src/a.rs"])).expect("index");
        for line in ["git log -p", "git show HEAD", "git grep foo HEAD"] {
            assert_eq!(gate(line, &root, &[]), "ask", "{line}");
        }
        assert_eq!(gate("git log --oneline", &root, &[]), "allow");
        // An index lathe cannot parse asks.
        std::fs::write(root.join(".git/index"), b"DIRC junk").expect("index");
        assert_eq!(gate("git log -p", &root, &[]), "ask");
    }

    #[test]
    fn committed_env_templates_are_not_secrets() {
        assert!(committed_template(".env.example"));
        assert!(committed_template("app/.env.SAMPLE"));
        assert!(committed_template(".env.local.template"));
        assert!(!committed_template(".env"));
        assert!(!committed_template(".env.production"));
        assert!(!committed_template("example/.env"));
    }

    #[test]
    fn index_paths_parse_versions_two_to_four() {
        let v2 = index_v2(&[".env", "a/b.rs"]);
        assert_eq!(
            index_paths(&v2),
            Some(vec![".env".to_string(), "a/b.rs".to_string()])
        );
        // Version 4: no padding, each path after dropping bytes of the last.
        let mut v4 = b"DIRC".to_vec();
        v4.extend(4u32.to_be_bytes());
        v4.extend(2u32.to_be_bytes());
        for (drop, suffix, len) in [(0u8, "a/.env", 6u16), (4, "b.rs", 6)] {
            v4.extend([0u8; 60]);
            v4.extend(len.to_be_bytes());
            v4.push(drop);
            v4.extend(suffix.as_bytes());
            v4.push(0);
        }
        v4.extend([0u8; 20]);
        assert_eq!(
            index_paths(&v4),
            Some(vec!["a/.env".to_string(), "a/b.rs".to_string()])
        );
        assert_eq!(index_paths(b"DIRC\0\0\0\x02"), None);
        assert_eq!(index_paths(b"not an index"), None);
    }

    #[test]
    fn golden_index_unreadable_text() {
        assert_eq!(
            READS_INDEX_UNREADABLE,
            "the command reads git's objects, and lathe cannot read the index {index} to tell whether git tracks a protected file (.env files, Claude Code settings), whose content it would show"
        );
    }

    #[test]
    fn rev_paths_are_relative_to_the_repository_root() {
        let dir = tempfile::tempdir().expect("tempdir");
        let top = dir.path().canonicalize().expect("canonical");
        for (path, text) in [
            (".git/HEAD", "ref: refs/heads/main"),
            ("secret/s.txt", "TOKEN=1"),
            ("proj/src/a.rs", ""),
        ] {
            let p = top.join(path);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        }
        let root = top.join("proj");
        let deny = format!("Read(/{}/secret/**)", top.display());
        let rules = [(true, deny.as_str())];
        assert_eq!(gate("git show HEAD:secret/s.txt", &root, &rules), "deny");
        assert_eq!(gate("git show HEAD:./src/a.rs", &root, &rules), "allow");
        assert_eq!(gate("git grep foo HEAD", &root, &rules), "deny");
    }
}
