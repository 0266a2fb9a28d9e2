//! The crate's one shell lexer: splits a Bash command line into the simple
//! commands it runs, for Bash permission rules (Claude Code's rule
//! semantics: [`matches_rule`], [`suggest_rule`]) and for the read-only
//! classifier of the Bash tool.
//!
//! It understands the part of Bash that agents' commands use: words and the
//! quotings (`'…'`, `"…"`, `$'…'`, backslashes), lists (`&&`, `||`, `;`,
//! `&`, newlines), pipelines (`|`, `|&`), subshells `( … )` and groups
//! `{ …; }`, command and process substitution, parameter and arithmetic
//! expansion, redirections, comments, and the scripts of `bash -c '…'`.
//! Anything else (here-documents, `eval`, `case`/`if`/`for`/`while`,
//! function definitions, `[[ … ]]`, `(( … ))`, deep nesting) makes the line
//! [`Split::Opaque`]: a wrong "this is one simple command" lets a rule allow
//! what it should not, a wrong `Opaque` only costs a question.
//!
//! Pure: no I/O and no environment. Words are kept as written after quote
//! removal: `$HOME` stays `$HOME`, `~/x` stays `~/x`, `*.rs` stays `*.rs`.

/// Most commands [`unwrapped`] gives for one simple command (wrappers of
/// unknown syntax fan out into every suffix of their words).
const MAX_UNWRAPPED: usize = 256;

/// How deep subshells, groups, substitutions and `bash -c` scripts may nest.
const MAX_DEPTH: usize = 8;

/// Words that start syntax this lexer does not split (compound commands,
/// function definitions, `[[ … ]]`, pipeline negation), when they stand
/// unquoted where a program name would be.
const RESERVED: &[&str] = &[
    "!", "[[", "]]", "{", "}", "case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for",
    "function", "if", "in", "select", "then", "until", "while",
];

/// Programs that run a string argument as a command line later or now.
const EVAL_LIKE: &[&str] = &["eval", "trap"];

/// Builtins that run the next word as the program (`exec rm x`).
const PASS_THROUGH: &[&str] = &["builtin", "command", "exec"];

/// Shells whose `-c` script is split too.
const SHELLS: &[&str] = &["ash", "bash", "dash", "ksh", "mksh", "sh", "zsh"];

/// Programs that run code named by their arguments (interpreters, shells,
/// wrappers, package runners, remote shells): [`suggest_rule`] offers only
/// the exact command for them. Version suffixes (`python3.12`) count too.
const RUNS_CODE: &[&str] = &[
    "python",
    "pypy",
    "node",
    "nodejs",
    "deno",
    "bun",
    "bunx",
    "npx",
    "pnpx",
    "uvx",
    "ruby",
    "perl",
    "php",
    "lua",
    "luajit",
    "tclsh",
    "osascript",
    "Rscript",
    "pwsh",
    "bash",
    "sh",
    "zsh",
    "dash",
    "ksh",
    "mksh",
    "ash",
    "fish",
    "csh",
    "tcsh",
    "env",
    "sudo",
    "doas",
    "su",
    "xargs",
    "exec",
    "eval",
    "command",
    "builtin",
    "source",
    ".",
    "nohup",
    "timeout",
    "nice",
    "time",
    "stdbuf",
    "setsid",
    "watch",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "ssh",
];

/// Programs that write, move or delete files (or can, with an option: `sed
/// -i`, `sort -o`, `find -delete`, `rg --pre`): [`suggest_rule`] offers only
/// the exact command for them, since `tee:*` would let tee overwrite any
/// file without asking.
const WRITES_FILES: &[&str] = &[
    "tee", "cp", "mv", "dd", "sed", "rm", "rmdir", "ln", "install", "rsync", "scp", "truncate",
    "shred", "chmod", "chown", "chgrp", "patch", "tar", "unzip", "gzip", "gunzip", "bzip2",
    "bunzip2", "xz", "unxz", "zstd", "zip", "curl", "wget", "sort", "uniq", "tree", "find",
    "split", "csplit", "ed", "ex", "vi", "vim", "nvim", "nano", "emacs", "rg", "date", "file",
    "mkfifo", "mknod", "cpio", "sponge", "perl",
];

/// One simple command of a command line, after quote removal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimpleCommand {
    /// Leading `NAME=value` assignments, in order.
    pub assignments: Vec<String>,
    /// The words (program first), quotes removed. The keyword `time` (and
    /// its `-p`) in front of a pipeline is not a word: `time cargo build`
    /// gives `cargo build`.
    pub words: Vec<String>,
    /// true when it has a redirection (`>`, `>>`, `<`, `2>&1`, `&>`, `<<<`,
    /// a `|&` pipe, or one on the `( … )`/`{ …; }` it sits in).
    pub redirects: bool,
    /// Files its redirections name, as written (`> out.txt`, `2>>log`,
    /// `< in`, also those on an enclosing `( … )`/`{ …; }`); not `>&2`-style
    /// duplications or here-strings.
    pub redirect_targets: Vec<String>,
    /// true when a word contains an unquoted or double-quoted expansion
    /// (`$x`, `${x}`, `$(...)`, backticks, `$((..))`, `<(...)`, brace
    /// expansion `{a,b}`) or a glob char that the shell would expand (`*`,
    /// `?`, `[`) outside quotes. Assignment values and redirection targets
    /// count too.
    pub expands: bool,
    /// true for the expansions of `expands` other than pathname globs: what
    /// the command runs with depends on variables, other commands or brace
    /// expansion, not only on the files present.
    pub substitutes: bool,
    /// The words and redirection targets (as in `words` and
    /// `redirect_targets`) that hold one of those substitutions: their
    /// value is known only when the shell runs the command (`"$f"`,
    /// `$(ls)`, `{a,b}.txt`).
    pub substituted: Vec<String>,
    /// true when run in the background (`&`).
    pub background: bool,
    /// true when the command sits inside `( … )`, `{ …; }`, `$( … )`,
    /// backticks, `<( … )`/`>( … )` or a `bash -c` script.
    pub nested: bool,
}

impl SimpleCommand {
    /// The words joined by single spaces (assignments and redirections
    /// left out): `npm run test --watch`.
    pub fn text(&self) -> String {
        self.words.join(" ")
    }

    /// The assignments, then the words, joined by single spaces: the text
    /// a rule must match.
    fn full_text(&self) -> String {
        self.assignments
            .iter()
            .chain(&self.words)
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// What [`split`] makes of a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Split {
    /// Every simple command the line runs, in source order, including those
    /// inside `( … )`, `{ …; }`, `$( … )`, backticks, `<( … )`/`>( … )`, and
    /// `bash -c '…'`/`sh -c '…'` arguments (recursively, depth-limited). A
    /// command with substitutions comes before the commands inside them.
    Commands(Vec<SimpleCommand>),
    /// The line cannot be decomposed with confidence (unterminated quote,
    /// heredoc `<<`, `eval`, unbalanced parens, `case`/`if`/`for`/`while`/
    /// function definitions, more than a depth limit, …); the string says
    /// why, for messages.
    Opaque(String),
}

/// Splits `command` at `&&`, `||`, `;`, `|`, `|&`, `&` and newlines into
/// the simple commands it runs (see [`Split`]). An empty line, or one of
/// only comments, gives `Commands(vec![])`.
pub fn split(command: &str) -> Split {
    match split_at(command, 0) {
        Ok(commands) => Split::Commands(commands),
        Err(why) => Split::Opaque(why),
    }
}

/// Claude Code's Bash rule specifier matched against ONE simple command:
/// - `npm run test:*` — prefix: the command's text equals `npm run test` or
///   starts with `npm run test ` (word boundary; `npm run testing` does NOT
///   match);
/// - a `*` elsewhere is a wildcard that matches any run of characters, with
///   the word boundaries written around it: `ls *` matches `ls` and
///   `ls -la /tmp` but not `lsof` (`ls*` matches `lsof`); `git * main`
///   matches `git merge main` (not `git main`);
/// - `\*` is a literal `*` and `\\` a literal `\` (what [`suggest_rule`]
///   writes for them);
/// - otherwise exact match of the text.
///
/// Assignments (`FOO=1 npm test`) are never matched by a rule that doesn't
/// name them: a command with assignments matches only if the rule text
/// starts with them literally (`FOO=1 npm test:*`).
///
/// Only the words count: redirections and expansions are the caller's to
/// weigh ([`SimpleCommand::redirects`], [`SimpleCommand::expands`]).
pub fn matches_rule(spec: &str, cmd: &SimpleCommand) -> bool {
    if spec.is_empty() {
        return false;
    }
    let parts = pattern_parts(spec);
    if !cmd.assignments.is_empty() {
        let named = cmd.assignments.join(" ");
        let first = parts.first().map(String::as_str).unwrap_or("");
        // The first literal run must spell all of them out; a wildcard may
        // not stand in for one.
        if !(first == named || first.starts_with(&format!("{named} "))) {
            return false;
        }
    }
    let text = cmd.full_text();
    if glob_matches(&parts, &text) {
        return true;
    }
    // A trailing ` *` also matches nothing at all: `ls *` matches `ls`.
    match parts.split_last() {
        Some((last, init)) if last.is_empty() && init.last().is_some_and(|p| p.ends_with(' ')) => {
            let mut shorter = init.to_vec();
            if let Some(p) = shorter.last_mut() {
                p.pop();
            }
            glob_matches(&shorter, &text)
        }
        _ => false,
    }
}

/// The rule the permission float offers for "allow for this session" for
/// one simple command: for programs that take a subcommand
/// (`SUBCOMMAND_PROGRAMS`: git, npm, cargo, …) the program plus that
/// subcommand (lowercase letters/digits/-/_ only), else their exact text;
/// for other programs the program alone; then `:*`: `npm test --watch` →
/// `npm test:*`, `ls src` → `ls:*`, `npm --version` → itself;
/// `cargo build --release` → `cargo build:*`; `ls -la` → `ls:*`.
///
/// The exact command text instead (with `*` and `\` escaped, so it matches
/// only itself) for programs that run code their arguments name
/// (`python3 script.py`, `bash x.sh`, `env`, `sudo`, `xargs`, …), for
/// programs that write files (`WRITES_FILES`: `tee out.txt`, `cp a b`,
/// `sed -i s/a/b/ f`), and for a
/// program written with an expansion or glob (`$TOOL run`). Assignments
/// stay in front (`FOO=1 npm test:*`). A bare redirection (`> out.txt`, no
/// words) gets `:`, the shell's no-op, which allows nothing else. Never
/// returns an empty string or `*`.
pub fn suggest_rule(cmd: &SimpleCommand) -> String {
    let exact = || match escape_rule_text(&cmd.full_text()) {
        t if t.is_empty() => ":".to_string(),
        t => t,
    };
    let Some(program) = cmd.words.first() else {
        return exact();
    };
    let name = program.rsplit('/').next().unwrap_or(program);
    let unversioned = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let runs_code = RUNS_CODE.contains(&name)
        || RUNS_CODE.contains(&unversioned)
        || WRITES_FILES.contains(&name);
    let unsafe_char = |c: char| c.is_whitespace() || "$`*?[{\\=".contains(c);
    if runs_code || program.is_empty() || program.contains(unsafe_char) {
        return exact();
    }
    let mut prefix: Vec<&str> = cmd.assignments.iter().map(String::as_str).collect();
    prefix.push(program);
    if has_subcommands(name) {
        // `npm test` → `npm test:*`; `npm --version` or `git` alone gets the
        // exact text: `npm:*` would allow `npm install` of anything.
        match cmd.words.get(1).filter(|s| looks_like_subcommand(s)) {
            Some(sub) => prefix.push(sub),
            None => return exact(),
        }
    }
    format!("{}:*", escape_rule_text(&prefix.join(" ")))
}

/// Programs whose first operand is a subcommand that decides what they do
/// (`git push` vs `git status`): a rule for them names the subcommand.
const SUBCOMMAND_PROGRAMS: &[&str] = &[
    "git",
    "npm",
    "pnpm",
    "yarn",
    "bun",
    "cargo",
    "go",
    "docker",
    "podman",
    "kubectl",
    "helm",
    "pip",
    "pip3",
    "uv",
    "poetry",
    "pipenv",
    "conda",
    "gradle",
    "gradlew",
    "mvn",
    "mvnw",
    "dotnet",
    "brew",
    "apt",
    "apt-get",
    "dnf",
    "yum",
    "systemctl",
    "gh",
    "rustup",
    "bundle",
    "rake",
    "mix",
    "deno",
    "composer",
    "terraform",
    "make",
    "just",
    "nix",
    "hg",
    "svn",
    "aws",
    "gcloud",
    "az",
    "swift",
    "zig",
    "stack",
    "cabal",
    "opam",
    "dune",
];

/// `true` when `name` (the program's file name) takes a subcommand.
fn has_subcommands(name: &str) -> bool {
    SUBCOMMAND_PROGRAMS.contains(&name)
}

/// Arguments of `cmd` that name file-system paths, as written: words (not
/// the program) that are absolute, start with `~` or `.` (`./x`, `..`,
/// `.env`), or contain `/`; the value of `--opt=/path` and `key=/path`
/// words; a path glued to a short option (`-I/usr/include`); the files its
/// redirections name; and `~/` for a `cd` without an operand (it goes
/// home). Other options are skipped until `--`. Used to ask before a
/// read-only command touches files outside the project, and to find
/// protected paths (`.git/`, `.env`) a command names.
pub fn named_paths(cmd: &SimpleCommand) -> Vec<String> {
    let mut paths = Vec::new();
    let mut operands = 0;
    let mut options_end = false;
    for arg in cmd.words.iter().skip(1) {
        if !options_end && arg == "--" {
            options_end = true;
            continue;
        }
        if !options_end && arg.starts_with("--") {
            if let Some((_, value)) = arg.split_once('=').filter(|(_, v)| is_path_like(v)) {
                paths.push(value.to_string());
            }
            continue;
        }
        if !options_end && arg.len() > 1 && arg.starts_with('-') {
            paths.extend(glued_path(arg));
            continue;
        }
        operands += 1;
        if is_path_like(arg) {
            paths.push(arg.clone());
        }
        if let Some((_, value)) = arg.split_once('=').filter(|(_, v)| is_path_like(v)) {
            paths.push(value.to_string());
        }
    }
    if operands == 0 && cmd.words.first().is_some_and(|p| p == "cd" || p == "pushd") {
        paths.push("~/".to_string());
    }
    paths.extend(cmd.redirect_targets.iter().cloned());
    paths
}

/// The command itself, then each command it runs through a wrapper
/// (`env FOO=1 rm x` → `rm x`, `timeout 5 rm x`, `nice -n 5 rm x`, `xargs
/// rm`, `sudo -u root rm x`, `find . -exec rm {} ;`, `watch 'rm x'`, …),
/// recursively (`nice env rm x`), each wrapper's own options skipped the way
/// it parses them; a command with assignment prefixes (`FOO=1 rm x`) also
/// gives itself without them. A wrapper whose options are not understood
/// gives every suffix of its words as a possible inner command, and a
/// script it runs (`env -S 'rm x'`, `flock f -c 'rm x'`, `bash -c 'rm x'`
/// behind a wrapper) is split. For deny and ask rules, which must see
/// through wrappers (allow rules must not: `Bash(env:*)` allows no more
/// than it did), and for the reads of a command.
pub fn unwrapped(cmd: &SimpleCommand) -> Vec<SimpleCommand> {
    let mut out = vec![cmd.clone()];
    unwrap_into(cmd, 0, &mut out);
    out.truncate(MAX_UNWRAPPED);
    // A program named by its path (`/bin/rm`, `./node_modules/.bin/x`)
    // is also that name (`rm`), as rules write it.
    let by_name: Vec<SimpleCommand> = out
        .iter()
        .filter_map(|c| {
            let (program, rest) = c.words.split_first()?;
            let name = program
                .rsplit('/')
                .next()
                .filter(|n| program.contains('/') && !n.is_empty())?;
            let mut words = vec![name.to_string()];
            words.extend(rest.iter().cloned());
            Some(SimpleCommand { words, ..c.clone() })
        })
        .collect();
    out.extend(by_name);
    out
}

/// Appends to `out` what [`unwrapped`] finds inside `cmd`, at `depth`.
fn unwrap_into(cmd: &SimpleCommand, depth: usize, out: &mut Vec<SimpleCommand>) {
    if depth > MAX_DEPTH || out.len() > MAX_UNWRAPPED {
        return;
    }
    let with = |words: Vec<String>| SimpleCommand {
        assignments: Vec::new(),
        words,
        ..cmd.clone()
    };
    if !cmd.assignments.is_empty() {
        let bare = with(cmd.words.clone());
        out.push(bare.clone());
        unwrap_into(&bare, depth + 1, out);
        return;
    }
    let inner = match cmd.words.split_first() {
        Some((program, args)) => wrapped(program, args),
        None => Inner::None,
    };
    let run = |words: Vec<String>, out: &mut Vec<SimpleCommand>| {
        if words.is_empty() || out.len() > MAX_UNWRAPPED {
            return;
        }
        let c = with(words);
        out.push(c.clone());
        unwrap_into(&c, depth + 1, out);
    };
    match inner {
        Inner::None => {}
        Inner::Words(words) => run(words, out),
        Inner::Many(commands) => commands.into_iter().for_each(|w| run(w, out)),
        Inner::Script(script) => {
            if let Ok(commands) = split_at(&script, depth + 1) {
                for c in commands {
                    out.push(c.clone());
                    unwrap_into(&c, depth + 1, out);
                }
            }
        }
        Inner::Unknown(words) => {
            for i in 0..words.len() {
                if words[i].contains(' ') {
                    if let Ok(commands) = split_at(&words[i], depth + 1) {
                        for c in commands {
                            out.push(c.clone());
                            unwrap_into(&c, depth + 1, out);
                        }
                    }
                }
                run(words[i..].to_vec(), out);
            }
        }
    }
    if let Some(i) = shell_script_index(&cmd.words) {
        let name = cmd.words[0].rsplit('/').next().unwrap_or(&cmd.words[0]);
        // The lexer splits a shell's script only where the shell is the
        // program; behind a wrapper it is split here.
        if SHELLS.contains(&name) && depth > 0 {
            if let Ok(commands) = split_at(&cmd.words[i], depth + 1) {
                for c in commands {
                    out.push(c.clone());
                    unwrap_into(&c, depth + 1, out);
                }
            }
        }
    }
}

/// What a wrapper runs.
enum Inner {
    /// Not a wrapper (or it runs nothing).
    None,
    /// The words of the command it runs.
    Words(Vec<String>),
    /// Several commands (`find -exec a ; -exec b ;`).
    Many(Vec<Vec<String>>),
    /// A command line it hands to a shell.
    Script(String),
    /// Its options were not understood: these words, one of whose
    /// suffixes is the command.
    Unknown(Vec<String>),
}

/// How one wrapper's options look: short letters that take a value, long
/// names that take the next word, operands before the command (`timeout
/// DURATION`), and whether `NAME=value` words may follow (env, sudo).
struct WrapperSyntax {
    short_flags: &'static str,
    short_values: &'static str,
    long_flags: &'static [&'static str],
    long_values: &'static [&'static str],
    operands: usize,
    assignments: bool,
    /// `-5` is an option (`nice -5`).
    numbers: bool,
}

const fn syntax(
    short_flags: &'static str,
    short_values: &'static str,
    long_flags: &'static [&'static str],
    long_values: &'static [&'static str],
    operands: usize,
) -> WrapperSyntax {
    WrapperSyntax {
        short_flags,
        short_values,
        long_flags,
        long_values,
        operands,
        assignments: false,
        numbers: false,
    }
}

/// Wrappers whose options are known, by program name.
fn wrapper_syntax(name: &str) -> Option<WrapperSyntax> {
    Some(match name {
        "env" => WrapperSyntax {
            assignments: true,
            ..syntax(
                "i0v",
                "uCS",
                &[
                    "ignore-environment",
                    "null",
                    "debug",
                    "default-signal",
                    "ignore-signal",
                    "block-signal",
                    "list-signal-handling",
                ],
                &["unset", "chdir", "split-string"],
                0,
            )
        },
        "command" => syntax("pvV", "", &[], &[], 0),
        "builtin" | "nohup" => syntax("", "", &[], &[], 0),
        "exec" => syntax("cl", "a", &[], &[], 0),
        "nice" => WrapperSyntax {
            numbers: true,
            ..syntax("", "n", &[], &["adjustment"], 0)
        },
        "timeout" => syntax(
            "v",
            "sk",
            &["preserve-status", "foreground", "verbose"],
            &["signal", "kill-after"],
            1,
        ),
        "time" => syntax(
            "apvq",
            "fo",
            &["append", "portability", "verbose", "quiet"],
            &["format", "output"],
            0,
        ),
        "stdbuf" => syntax("", "ioe", &[], &["input", "output", "error"], 0),
        "xargs" => syntax(
            "0prtxo",
            "adEIsLnP",
            &[
                "null",
                "interactive",
                "no-run-if-empty",
                "verbose",
                "exit",
                "open-tty",
                "show-limits",
            ],
            &[
                "arg-file",
                "delimiter",
                "max-args",
                "max-procs",
                "max-chars",
                "process-slot-var",
            ],
            0,
        ),
        "setsid" => syntax("cfw", "", &["ctty", "fork", "wait"], &[], 0),
        "ionice" => syntax(
            "t",
            "cnpPu",
            &["ignore"],
            &["class", "classdata", "pid", "pgid", "uid"],
            0,
        ),
        "chrt" => syntax(
            "abdfiormRev",
            "TPD",
            &[
                "all-tasks",
                "batch",
                "deadline",
                "fifo",
                "idle",
                "other",
                "rr",
                "reset-on-fork",
                "ext",
                "max",
                "verbose",
            ],
            &["sched-runtime", "sched-period", "sched-deadline"],
            1,
        ),
        "taskset" => syntax("acp", "", &["all-tasks", "cpu-list", "pid"], &[], 1),
        "sudo" => WrapperSyntax {
            assignments: true,
            ..syntax(
                "AbEeHhiKklnPSsVv",
                "ugpCDrtTUR",
                &[
                    "askpass",
                    "background",
                    "preserve-env",
                    "edit",
                    "set-home",
                    "login",
                    "remove-timestamp",
                    "reset-timestamp",
                    "list",
                    "non-interactive",
                    "preserve-groups",
                    "stdin",
                    "shell",
                    "validate",
                    "bell",
                ],
                &[
                    "user",
                    "group",
                    "prompt",
                    "close-from",
                    "chdir",
                    "role",
                    "type",
                    "command-timeout",
                    "other-user",
                    "chroot",
                    "host",
                ],
                0,
            )
        },
        "doas" => syntax("nsL", "uC", &[], &[], 0),
        "chroot" => syntax("", "", &["skip-chdir"], &["userspec", "groups"], 1),
        _ => return None,
    })
}

/// Programs that run a command given in their arguments with a syntax
/// lathe does not model: every suffix of their words may be it.
const OPAQUE_WRAPPERS: &[&str] = &[
    "strace",
    "ltrace",
    "unbuffer",
    "firejail",
    "proot",
    "nsenter",
    "unshare",
    "runuser",
    "su",
    "sg",
    "setpriv",
    "prlimit",
    "numactl",
    "cgexec",
    "valgrind",
    "faketime",
    "torsocks",
    "proxychains",
    "proxychains4",
    "systemd-run",
    "pkexec",
    "script",
    "catchsegv",
    "parallel",
    "caffeinate",
    "gdb",
    "busybox",
    "toybox",
];

/// What the wrapper `program` runs with `args` (see [`Inner`]).
fn wrapped(program: &str, args: &[String]) -> Inner {
    let name = program.rsplit('/').next().unwrap_or(program);
    match name {
        "find" => return find_exec(args),
        "watch" => {
            return match skip_options(args, &syntax("bcdeghprtx", "nq", &[], &["interval"], 0)) {
                Some((i, _)) if i < args.len() => Inner::Script(args[i..].join(" ")),
                Some(_) => Inner::None,
                None => Inner::Unknown(args.to_vec()),
            }
        }
        "flock" => {
            let s = syntax("sxnouFe", "wEc", &[], &[], 1);
            return match skip_options(args, &s) {
                Some((_, Some(script))) => Inner::Script(script),
                // `flock FILE -c 'cmd'`: the script comes after the file.
                Some((i, None)) if args.get(i).is_some_and(|a| a == "-c" || a == "--command") => {
                    match args.get(i + 1) {
                        Some(script) => Inner::Script(script.clone()),
                        None => Inner::None,
                    }
                }
                Some((i, None)) => Inner::Words(args.get(i..).unwrap_or_default().to_vec()),
                None => Inner::Unknown(args.to_vec()),
            };
        }
        _ if OPAQUE_WRAPPERS.contains(&name) => return Inner::Unknown(args.to_vec()),
        _ => {}
    }
    let Some(s) = wrapper_syntax(name) else {
        return Inner::None;
    };
    match skip_options(args, &s) {
        // `env -S 'rm x' y` splits its string into the command.
        Some((i, Some(script))) if name == "env" => {
            let mut line = script;
            for a in args.get(i..).unwrap_or_default() {
                line.push(' ');
                line.push_str(a);
            }
            Inner::Script(line)
        }
        Some((i, _)) => Inner::Words(args.get(i..).unwrap_or_default().to_vec()),
        None => Inner::Unknown(args.to_vec()),
    }
}

/// The index in `args` where the command of a wrapper with syntax `s`
/// starts (after its options, its own operands and, for env/sudo,
/// `NAME=value` words), and the value of `-S`/`-c`/`--split-string`
/// when one was given (a script). `None` when an option is not known.
fn skip_options(args: &[String], s: &WrapperSyntax) -> Option<(usize, Option<String>)> {
    let mut i = 0;
    let mut script = None;
    while let Some(arg) = args.get(i) {
        if arg == "--" {
            i += 1;
            break;
        }
        if arg == "-" || !arg.starts_with('-') {
            break;
        }
        i += 1;
        if let Some(long) = arg.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let value = if s.long_values.contains(&name) {
                match attached {
                    Some(v) => Some(v),
                    None => {
                        i += 1;
                        Some(args.get(i - 1)?.clone())
                    }
                }
            } else if s.long_flags.contains(&name) {
                None
            } else {
                return None;
            };
            if name == "split-string" {
                script = value;
            }
            continue;
        }
        let letters = &arg[1..];
        if s.numbers && letters.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        for (j, c) in letters.char_indices() {
            if s.short_flags.contains(c) {
                continue;
            }
            if !s.short_values.contains(c) {
                return None;
            }
            let rest = &letters[j + c.len_utf8()..];
            let value = if rest.is_empty() {
                i += 1;
                args.get(i - 1)?.clone()
            } else {
                rest.to_string()
            };
            if c == 'S' || c == 'c' {
                script = Some(value);
            }
            break;
        }
    }
    if s.assignments {
        while args
            .get(i)
            .is_some_and(|a| a.split_once('=').is_some_and(|(n, _)| is_name(n)))
        {
            i += 1;
        }
    }
    Some((i + s.operands, script))
}

/// The commands of `find`'s `-exec`, `-execdir`, `-ok` and `-okdir`
/// actions (up to their `;` or `+`).
fn find_exec(args: &[String]) -> Inner {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        if matches!(args[i].as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = i + 1;
            let mut end = start;
            while end < args.len() && args[end] != ";" && args[end] != "+" {
                end += 1;
            }
            out.push(args[start..end].to_vec());
            i = end;
        }
        i += 1;
    }
    if out.is_empty() {
        Inner::None
    } else {
        Inner::Many(out)
    }
}

/// `true` when `s` is written like a path: absolute, `~…`, `.…`, or with a
/// `/` in it.
fn is_path_like(s: &str) -> bool {
    s.starts_with('/') || s.starts_with('~') || s.starts_with('.') || s.contains('/')
}

/// The path glued to a short option (`-I/usr/include` → `/usr/include`,
/// `-o../x` → `../x`), if any.
fn glued_path(option: &str) -> Option<String> {
    option
        .char_indices()
        .skip(1)
        .map(|(i, _)| &option[i..])
        .find(|rest| ["/", "~/", "./", "../"].iter().any(|p| rest.starts_with(p)))
        .map(str::to_string)
}

/// `true` for a word like `test`, `run-all`, `build_2`: lowercase letters,
/// digits, `-` and `_`, not starting with `-`.
fn looks_like_subcommand(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('-')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// `text` as rule text matching only itself: `\` → `\\`, `*` → `\*`.
fn escape_rule_text(text: &str) -> String {
    text.replace('\\', "\\\\").replace('*', "\\*")
}

/// The literal runs of a rule specifier between its wildcards (`git * main`
/// → `["git ", " main"]`; `ls *` → `["ls ", ""]`); a `:*` suffix becomes a
/// ` *` wildcard. One part means no wildcard.
fn pattern_parts(spec: &str) -> Vec<String> {
    let (body, prefix_rule) = match spec.strip_suffix(":*") {
        Some(body) => (body, true),
        None => (spec, false),
    };
    let mut parts = vec![String::new()];
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        let last = parts.len() - 1;
        match c {
            '\\' if matches!(chars.peek(), Some('*' | '\\')) => {
                if let Some(escaped) = chars.next() {
                    parts[last].push(escaped);
                }
            }
            '*' => parts.push(String::new()),
            c => parts[last].push(c),
        }
    }
    if prefix_rule {
        let last = parts.len() - 1;
        parts[last].push(' ');
        parts.push(String::new());
    }
    parts
}

/// `true` when `text` matches the wildcard pattern whose literal runs are
/// `parts` (see [`pattern_parts`]).
fn glob_matches(parts: &[String], text: &str) -> bool {
    let (Some(first), Some(last)) = (parts.first(), parts.last()) else {
        return false;
    };
    if parts.len() == 1 {
        return text == first;
    }
    let Some(rest) = text.strip_prefix(first.as_str()) else {
        return false;
    };
    let Some(mut rest) = rest.strip_suffix(last.as_str()) else {
        return false;
    };
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle.as_str()) {
            Some(i) => rest = &rest[i + middle.len()..],
            None => return false,
        }
    }
    true
}

/// [`split`] at nesting `depth` (a `bash -c` script or backticks parse
/// their text one level deeper).
fn split_at(command: &str, depth: usize) -> Result<Vec<SimpleCommand>, String> {
    if depth > MAX_DEPTH {
        return Err(too_deep());
    }
    let mut parser = Parser {
        src: command.chars().collect(),
        pos: 0,
        depth,
        out: Vec::new(),
    };
    parser.list(End::Eof)?;
    Ok(parser.out)
}

fn too_deep() -> String {
    format!("it nests more than {MAX_DEPTH} levels deep")
}

/// Marks a command as found inside another construct.
fn nested(mut cmd: SimpleCommand) -> SimpleCommand {
    cmd.nested = true;
    cmd
}

/// `true` for a shell variable name: `[A-Za-z_][A-Za-z0-9_]*`.
fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `true` when `c` ends a word or a reserved word (`}` of a group).
fn is_delimiter(c: Option<char>) -> bool {
    matches!(
        c,
        None | Some(' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>')
    )
}

/// The index of the script of a shell invocation `words` (`bash -lc
/// 'script'`, `sh -e -c 'script' name`), or `None` without `-c`.
fn shell_script_index(words: &[String]) -> Option<usize> {
    let mut has_c = false;
    let mut i = 1;
    while let Some(arg) = words.get(i) {
        if arg == "--" || arg == "-" {
            i += 1;
            break;
        }
        if arg.starts_with("--") {
            if arg == "--rcfile" || arg == "--init-file" {
                i += 1;
            }
            i += 1;
            continue;
        }
        if arg.len() > 1 && (arg.starts_with('-') || arg.starts_with('+')) {
            has_c |= arg.starts_with('-') && arg.contains('c');
            // `-o pipefail`, `-O extglob` take the next word.
            if arg.contains('o') || arg.contains('O') {
                i += 1;
            }
            i += 1;
            continue;
        }
        break;
    }
    (has_c && i < words.len()).then_some(i)
}

/// What ends a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The end of the text.
    Eof,
    /// `)` of a subshell, `$( … )` or `<( … )`.
    Paren,
    /// `}` of a group.
    Brace,
}

impl End {
    fn unterminated(self) -> String {
        match self {
            End::Eof => "the line ends early".to_string(),
            End::Paren => "a `(` is never closed".to_string(),
            End::Brace => "a `{` is never closed with `}`".to_string(),
        }
    }
}

/// One word while it is read.
#[derive(Debug, Default)]
struct Word {
    value: String,
    /// Some part was quoted or escaped (so it is no reserved word or fd).
    quoted: bool,
    /// An unquoted `*`, `?` or `[`.
    glob: bool,
    /// A `$`/backtick/process substitution or brace expansion.
    substitutes: bool,
    /// How many chars at the start are plain unquoted text.
    plain_len: usize,
    /// Something other than plain text was added.
    tainted: bool,
}

impl Word {
    fn push_plain(&mut self, c: char) {
        self.value.push(c);
        if !self.tainted {
            self.plain_len += 1;
        }
    }

    fn mark_quoted(&mut self) {
        self.quoted = true;
        self.tainted = true;
    }

    fn push_expansion(&mut self, raw: &str) {
        self.tainted = true;
        self.substitutes = true;
        self.value.push_str(raw);
    }

    /// `NAME=value` or `NAME+=value` with the name and `=` unquoted.
    fn is_assignment(&self) -> bool {
        let Some(eq) = self.value.find('=') else {
            return false;
        };
        let name = &self.value[..eq];
        let name = name.strip_suffix('+').unwrap_or(name);
        self.value[..=eq].chars().count() <= self.plain_len && is_name(name)
    }

    /// An unquoted fd number (`2`) or `{name}` right before `<`/`>`.
    fn is_fd(&self) -> bool {
        let v = &self.value;
        let braced = v
            .strip_prefix('{')
            .and_then(|v| v.strip_suffix('}'))
            .is_some_and(is_name);
        !self.quoted && (braced || (!v.is_empty() && v.chars().all(|c| c.is_ascii_digit())))
    }
}

/// A simple command while it is read, with the commands found inside its
/// substitutions (they follow it in the output).
#[derive(Debug, Default)]
struct Building {
    cmd: SimpleCommand,
    inner: Vec<SimpleCommand>,
    /// Per word: it had an expansion or glob.
    expanded: Vec<bool>,
    /// The command starts a pipeline, where `time` is a keyword.
    pipeline_start: bool,
    /// The first word was quoted or escaped.
    first_quoted: bool,
}

impl Building {
    fn add(&mut self, w: Word) -> Result<(), String> {
        if self.cmd.words.is_empty() {
            if w.is_assignment() {
                self.cmd.expands |= w.substitutes;
                self.cmd.substitutes |= w.substitutes;
                self.cmd.assignments.push(w.value);
                return Ok(());
            }
            if !w.quoted && RESERVED.contains(&w.value.as_str()) {
                return Err(format!(
                    "`{}` starts a compound command, function or test that is not split",
                    w.value
                ));
            }
        }
        if w.value.is_empty() && !w.quoted {
            return Ok(());
        }
        if self.cmd.words.is_empty() {
            self.first_quoted = w.quoted;
        }
        self.cmd.expands |= w.glob || w.substitutes;
        self.cmd.substitutes |= w.substitutes;
        self.expanded.push(w.glob || w.substitutes);
        if w.substitutes {
            self.cmd.substituted.push(w.value.clone());
        }
        self.cmd.words.push(w.value);
        Ok(())
    }

    /// Drops the keyword `time` (and its `-p`) in front of a pipeline's
    /// first command: `time cargo build` runs `cargo build`.
    fn drop_time_keyword(&mut self) {
        let words = &self.cmd.words;
        let timed = self.pipeline_start
            && !self.first_quoted
            && self.cmd.assignments.is_empty()
            && words.len() > 1
            && words[0] == "time";
        if !timed {
            return;
        }
        let n = if words.len() > 2 && words[1] == "-p" {
            2
        } else {
            1
        };
        self.cmd.words.drain(..n);
        self.expanded.drain(..n);
    }
}

/// What a redirection's word is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// A file (`> out`, `< in`, `&> log`).
    File,
    /// An fd to duplicate or close, or a file (`>&2`, `<&-`, `>& log`).
    Duplicate,
    /// Text for stdin (`<<< word`).
    Data,
}

/// A recursive-descent reader of one command line.
struct Parser {
    src: Vec<char>,
    pos: usize,
    depth: usize,
    /// The simple commands read so far, in source order.
    out: Vec<SimpleCommand>,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.at(0)
    }

    fn at(&self, n: usize) -> Option<char> {
        self.src.get(self.pos + n).copied()
    }

    fn looking_at(&self, s: &str) -> bool {
        s.chars().enumerate().all(|(i, c)| self.at(i) == Some(c))
    }

    fn eat(&mut self, s: &str) -> bool {
        let found = self.looking_at(s);
        if found {
            self.pos += s.chars().count();
        }
        found
    }

    fn text(&self, from: usize, to: usize) -> String {
        self.src[from..to].iter().collect()
    }

    /// One level deeper, or an error past [`MAX_DEPTH`].
    fn enter(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(too_deep());
        }
        Ok(())
    }

    /// Skips spaces, tabs and line continuations.
    fn skip_blanks(&mut self) {
        loop {
            match self.peek() {
                Some(' ' | '\t') => self.pos += 1,
                Some('\\') if self.at(1) == Some('\n') => self.pos += 2,
                _ => return,
            }
        }
    }

    /// Skips a comment up to (not including) the newline.
    fn skip_comment(&mut self) {
        while !matches!(self.peek(), None | Some('\n')) {
            self.pos += 1;
        }
    }

    /// Skips blanks, newlines and comments.
    fn skip_lines(&mut self) {
        loop {
            self.skip_blanks();
            match self.peek() {
                Some('\n') => self.pos += 1,
                Some('#') => self.skip_comment(),
                _ => return,
            }
        }
    }

    /// Commands separated by `;`, `&` or newlines, up to `end` (not
    /// consumed).
    fn list(&mut self, end: End) -> Result<(), String> {
        loop {
            self.skip_lines();
            match (self.peek(), end) {
                (None, End::Eof) | (Some(')'), End::Paren) => return Ok(()),
                (Some('}'), End::Brace) if is_delimiter(self.at(1)) => return Ok(()),
                (None, _) => return Err(end.unterminated()),
                (Some(')'), _) => return Err("a `)` has no matching `(`".to_string()),
                (Some(op @ (';' | '|')), _) => {
                    return Err(format!("`{op}` has no command before it"))
                }
                (Some('&'), _) if self.at(1) != Some('>') => {
                    return Err("`&` has no command before it".to_string())
                }
                _ => {}
            }
            let start = self.out.len();
            self.and_or()?;
            self.skip_blanks();
            match self.peek() {
                None if end == End::Eof => return Ok(()),
                None => return Err(end.unterminated()),
                Some('\n') => self.pos += 1,
                Some(';') if matches!(self.at(1), Some(';' | '&')) => {
                    return Err("`;;` or `;&` outside a `case`".to_string())
                }
                Some(';') => self.pos += 1,
                Some('&') => {
                    self.pos += 1;
                    for c in &mut self.out[start..] {
                        c.background = true;
                    }
                }
                Some(')') if end == End::Paren => return Ok(()),
                Some(')') => return Err("a `)` has no matching `(`".to_string()),
                Some(c) => return Err(format!("unexpected `{c}`")),
            }
        }
    }

    /// Pipelines joined by `&&` and `||`.
    fn and_or(&mut self) -> Result<(), String> {
        self.pipeline()?;
        loop {
            self.skip_blanks();
            let op = if self.eat("&&") {
                "&&"
            } else if self.eat("||") {
                "||"
            } else {
                return Ok(());
            };
            self.skip_lines();
            self.expect_command(op)?;
            self.pipeline()?;
        }
    }

    /// Commands joined by `|` and `|&`.
    fn pipeline(&mut self) -> Result<(), String> {
        let mut first = true;
        loop {
            let start = self.out.len();
            self.command(first)?;
            first = false;
            self.skip_blanks();
            if self.looking_at("||") {
                return Ok(());
            }
            let op = if self.eat("|&") {
                // `a |& b` is `a 2>&1 | b`.
                for c in &mut self.out[start..] {
                    c.redirects = true;
                }
                "|&"
            } else if self.eat("|") {
                "|"
            } else {
                return Ok(());
            };
            self.skip_lines();
            self.expect_command(op)?;
        }
    }

    fn expect_command(&self, after: &str) -> Result<(), String> {
        let missing = match self.peek() {
            None | Some(';' | '|' | ')') => true,
            Some('&') => self.at(1) != Some('>'),
            _ => false,
        };
        if missing {
            return Err(format!("`{after}` has no command after it"));
        }
        Ok(())
    }

    /// A subshell, a group or a simple command (`pipeline_start` when it
    /// is the first of its pipeline).
    fn command(&mut self, pipeline_start: bool) -> Result<(), String> {
        match self.peek() {
            Some('(') if self.at(1) == Some('(') => {
                Err("an arithmetic command `(( … ))` is not split".to_string())
            }
            Some('(') => {
                self.pos += 1;
                self.compound(End::Paren)
            }
            Some('{') if matches!(self.at(1), Some(' ' | '\t' | '\n' | '(')) => {
                self.pos += 1;
                self.compound(End::Brace)
            }
            _ => self.simple(pipeline_start),
        }
    }

    /// The rest of `( … )` or `{ …; }` after its opening, with the
    /// redirections that follow it.
    fn compound(&mut self, end: End) -> Result<(), String> {
        self.enter()?;
        let start = self.out.len();
        self.list(end)?;
        self.pos += 1; // the `)` or `}` that `list` stopped at
        self.depth -= 1;
        if self.out.len() == start {
            return Err("an empty `( )` or `{ }`".to_string());
        }
        let mut trailing = Building::default();
        loop {
            self.skip_blanks();
            let digits = self.src[self.pos..]
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count();
            let op = self.pos + digits;
            let redirection = match (self.src.get(op), self.src.get(op + 1)) {
                (Some('<' | '>'), Some('(')) => false,
                (Some('<' | '>'), _) => true,
                (Some('&'), Some('>')) => digits == 0,
                _ => false,
            };
            if !redirection {
                break;
            }
            self.pos = op;
            self.redirect(&mut trailing)?;
        }
        match self.peek() {
            None | Some('\n' | ';' | '&' | '|' | ')') => {}
            Some('#') => self.skip_comment(),
            Some(c) => return Err(format!("unexpected `{c}` after a `)` or `}}`")),
        }
        let t = &trailing.cmd;
        for c in &mut self.out[start..] {
            c.nested = true;
            c.redirects |= t.redirects;
            c.expands |= t.expands;
            c.substitutes |= t.substitutes;
            c.substituted.extend(t.substituted.iter().cloned());
            c.redirect_targets
                .extend(t.redirect_targets.iter().cloned());
        }
        self.out.extend(trailing.inner);
        Ok(())
    }

    /// Assignments, words and redirections up to an operator.
    fn simple(&mut self, pipeline_start: bool) -> Result<(), String> {
        let mut b = Building {
            pipeline_start,
            ..Building::default()
        };
        loop {
            self.skip_blanks();
            match self.peek() {
                None | Some('\n' | ';' | '|' | ')') => break,
                Some('&') if self.at(1) == Some('>') => self.redirect(&mut b)?,
                Some('&') => break,
                Some('(') => {
                    return Err(
                        "a `(` inside a command (a function definition or an array)".to_string()
                    )
                }
                Some('#') => {
                    self.skip_comment();
                    break;
                }
                Some('<' | '>') if self.at(1) != Some('(') => self.redirect(&mut b)?,
                Some(_) => {
                    let w = self.word(&mut b.inner)?;
                    let at_redirection =
                        matches!(self.peek(), Some('<' | '>')) && self.at(1) != Some('(');
                    if at_redirection && w.is_fd() {
                        self.redirect(&mut b)?;
                    } else {
                        b.add(w)?;
                    }
                }
            }
        }
        self.finish(b)
    }

    /// Checks a finished simple command (`eval`, `bash -c`) and records it
    /// with the commands inside it.
    fn finish(&mut self, mut b: Building) -> Result<(), String> {
        b.drop_time_keyword();
        let cmd = &b.cmd;
        if cmd.words.is_empty() && cmd.assignments.is_empty() && !cmd.redirects {
            return Err("an empty command".to_string());
        }
        let skip = cmd
            .words
            .iter()
            .take_while(|w| PASS_THROUGH.contains(&w.as_str()))
            .count();
        if let Some(program) = cmd.words.get(skip) {
            if EVAL_LIKE.contains(&program.as_str()) {
                return Err(format!("`{program}` runs a string as a command line"));
            }
            let name = program.rsplit('/').next().unwrap_or(program);
            if SHELLS.contains(&name) {
                if let Some(i) = shell_script_index(&cmd.words[skip..]).map(|i| i + skip) {
                    if b.expanded.get(i).copied().unwrap_or(true) {
                        return Err(format!(
                            "the script of `{name} -c` is expanded when it runs"
                        ));
                    }
                    let script = split_at(&cmd.words[i], self.depth + 1)?;
                    b.inner.extend(script.into_iter().map(nested));
                }
            }
        }
        self.out.push(b.cmd);
        self.out.extend(b.inner);
        Ok(())
    }

    /// A redirection operator and its word (an fd number before it is
    /// already read).
    fn redirect(&mut self, b: &mut Building) -> Result<(), String> {
        if self.looking_at("<<") && !self.looking_at("<<<") {
            return Err("a here-document (`<<`) is not split".to_string());
        }
        let target = if self.eat("<<<") {
            Target::Data
        } else if [">&", "<&"].iter().any(|op| self.eat(op)) {
            Target::Duplicate
        } else if ["&>>", "&>", ">>", ">|", "<>", ">", "<"]
            .iter()
            .any(|op| self.eat(op))
        {
            Target::File
        } else {
            return Err("an unknown redirection".to_string());
        };
        b.cmd.redirects = true;
        self.skip_blanks();
        let starts_word = match self.peek() {
            None | Some('\n' | ';' | '&' | '|' | '(' | ')' | '#') => false,
            Some('<' | '>') => self.at(1) == Some('('),
            Some(_) => true,
        };
        if !starts_word {
            return Err("a redirection has no target".to_string());
        }
        let w = self.word(&mut b.inner)?;
        b.cmd.expands |= w.glob || w.substitutes;
        b.cmd.substitutes |= w.substitutes;
        let fd = !w.quoted
            && (w.value == "-"
                || w.value
                    .strip_suffix('-')
                    .unwrap_or(&w.value)
                    .chars()
                    .all(|c| c.is_ascii_digit()));
        if target == Target::File || (target == Target::Duplicate && !fd) {
            if w.substitutes {
                b.cmd.substituted.push(w.value.clone());
            }
            b.cmd.redirect_targets.push(w.value);
        }
        Ok(())
    }

    /// One word, up to a blank or an operator; substitutions in it add
    /// their commands to `inner`.
    fn word(&mut self, inner: &mut Vec<SimpleCommand>) -> Result<Word, String> {
        let mut w = Word::default();
        let mut bracket = false;
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' => break,
                '<' | '>' if self.at(1) == Some('(') => {
                    let start = self.pos;
                    self.pos += 2;
                    self.substitution(inner)?;
                    w.push_expansion(&self.text(start, self.pos));
                }
                '<' | '>' => break,
                '\'' => self.single_quoted(&mut w)?,
                '"' => self.double_quoted(&mut w, inner)?,
                '\\' => match self.at(1) {
                    None => return Err("the line ends with a backslash".to_string()),
                    Some('\n') => self.pos += 2,
                    Some(escaped) => {
                        w.mark_quoted();
                        w.value.push(escaped);
                        self.pos += 2;
                    }
                },
                '$' => self.dollar(&mut w, inner, false)?,
                '`' => self.backticks(&mut w, inner, false)?,
                '*' | '?' => {
                    w.glob = true;
                    w.push_plain(c);
                    self.pos += 1;
                }
                '[' => {
                    bracket = true;
                    w.push_plain(c);
                    self.pos += 1;
                }
                '{' => {
                    // Brace expansion (`{a,b}`, `{1..3}`); `{}` stays as is.
                    w.substitutes |= self.at(1) != Some('}');
                    w.push_plain(c);
                    self.pos += 1;
                }
                _ => {
                    w.push_plain(c);
                    self.pos += 1;
                }
            }
        }
        // A lone unquoted `[` is the test command, not a glob.
        let test_command = w.value == "[" && !w.quoted;
        w.glob |= bracket && !test_command;
        Ok(w)
    }

    fn single_quoted(&mut self, w: &mut Word) -> Result<(), String> {
        w.mark_quoted();
        self.pos += 1;
        loop {
            match self.peek() {
                None => return Err("a single quote is never closed".to_string()),
                Some('\'') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(c) => {
                    w.value.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    fn double_quoted(
        &mut self,
        w: &mut Word,
        inner: &mut Vec<SimpleCommand>,
    ) -> Result<(), String> {
        w.mark_quoted();
        self.pos += 1;
        loop {
            match self.peek() {
                None => return Err("a double quote is never closed".to_string()),
                Some('"') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some('\\') => match self.at(1) {
                    Some(c @ ('$' | '`' | '"' | '\\')) => {
                        w.value.push(c);
                        self.pos += 2;
                    }
                    Some('\n') => self.pos += 2,
                    Some(_) => {
                        w.value.push('\\');
                        self.pos += 1;
                    }
                    None => return Err("a double quote is never closed".to_string()),
                },
                Some('$') => self.dollar(w, inner, true)?,
                Some('`') => self.backticks(w, inner, true)?,
                Some(c) => {
                    w.value.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    /// `$…`: a parameter, `${…}`, `$(…)`, `$((…))`, `$'…'`, `$"…"`, or a
    /// literal `$`.
    fn dollar(
        &mut self,
        w: &mut Word,
        inner: &mut Vec<SimpleCommand>,
        in_quotes: bool,
    ) -> Result<(), String> {
        let start = self.pos;
        match self.at(1) {
            Some('(') => {
                if self.at(2) == Some('(') {
                    if let Some(close) = self.arithmetic_end()? {
                        self.pos = close + 2;
                        w.push_expansion(&self.text(start, self.pos));
                        return Ok(());
                    }
                }
                self.pos += 2;
                self.substitution(inner)?;
                w.push_expansion(&self.text(start, self.pos));
            }
            Some('{') => {
                let mut i = self.pos + 2;
                loop {
                    match self.src.get(i) {
                        None => return Err("a `${` is never closed".to_string()),
                        Some('}') => break,
                        Some('\'' | '"' | '`') => {
                            return Err("quotes or backquotes inside `${…}`".to_string())
                        }
                        Some('$') if matches!(self.src.get(i + 1), Some('(' | '{')) => {
                            return Err("an expansion inside `${…}`".to_string())
                        }
                        Some('\\') => i += 2,
                        Some(_) => i += 1,
                    }
                }
                self.pos = i + 1;
                w.push_expansion(&self.text(start, self.pos));
            }
            Some('\'') if !in_quotes => self.ansi_c_quoted(w)?,
            Some('"') if !in_quotes => {
                self.pos += 1;
                self.double_quoted(w, inner)?;
            }
            Some('[') => return Err("`$[…]` arithmetic is not split".to_string()),
            Some(c) if c.is_ascii_digit() || "?#@*!$-".contains(c) => {
                self.pos += 2;
                w.push_expansion(&self.text(start, self.pos));
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                self.pos += 1;
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    self.pos += 1;
                }
                w.push_expansion(&self.text(start, self.pos));
            }
            _ => {
                w.push_plain('$');
                self.pos += 1;
            }
        }
        Ok(())
    }

    /// At `$((`: the index of the first `)` of the closing `))` when this
    /// is arithmetic, `None` when it is a command substitution starting
    /// with a subshell (`$((ls) | wc)`). Refuses quotes, backquotes and
    /// substitutions inside the arithmetic.
    fn arithmetic_end(&self) -> Result<Option<usize>, String> {
        let mut depth = 1;
        let mut i = self.pos + 3;
        while let Some(&c) = self.src.get(i) {
            match c {
                '\'' | '"' | '`' | '\\' => {
                    return Err("quotes or backquotes inside `$((…))`".to_string())
                }
                '$' if self.src.get(i + 1) == Some(&'(') => {
                    return Err("a command substitution inside `$((…))`".to_string())
                }
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok((self.src.get(i + 1) == Some(&')')).then_some(i));
                    }
                }
                _ => {}
            }
            i += 1;
        }
        Ok(None)
    }

    /// After `$(`, `<(` or `>(`: the commands up to the closing `)`.
    fn substitution(&mut self, inner: &mut Vec<SimpleCommand>) -> Result<(), String> {
        self.enter()?;
        let outer = std::mem::take(&mut self.out);
        let result = self.list(End::Paren);
        let found = std::mem::replace(&mut self.out, outer);
        result?;
        self.pos += 1; // the `)`
        self.depth -= 1;
        inner.extend(found.into_iter().map(nested));
        Ok(())
    }

    /// `` `…` ``: the text up to the closing backquote, unescaped, split
    /// one level deeper.
    fn backticks(
        &mut self,
        w: &mut Word,
        inner: &mut Vec<SimpleCommand>,
        in_quotes: bool,
    ) -> Result<(), String> {
        let start = self.pos;
        self.pos += 1;
        let mut script = String::new();
        loop {
            match self.peek() {
                None => return Err("a backquote is never closed".to_string()),
                Some('`') => {
                    self.pos += 1;
                    break;
                }
                Some('\\') => match self.at(1) {
                    Some(c @ ('$' | '`' | '\\')) => {
                        script.push(c);
                        self.pos += 2;
                    }
                    Some('"') if in_quotes => {
                        script.push('"');
                        self.pos += 2;
                    }
                    Some(_) => {
                        script.push('\\');
                        self.pos += 1;
                    }
                    None => return Err("a backquote is never closed".to_string()),
                },
                Some(c) => {
                    script.push(c);
                    self.pos += 1;
                }
            }
        }
        let found = split_at(&script, self.depth + 1)?;
        inner.extend(found.into_iter().map(nested));
        w.push_expansion(&self.text(start, self.pos));
        Ok(())
    }

    /// `$'…'` with its backslash escapes decoded; escapes that name a
    /// character by number (`\x72`, `\0`, `\u`) are refused, so no program
    /// name hides behind them.
    fn ansi_c_quoted(&mut self, w: &mut Word) -> Result<(), String> {
        w.mark_quoted();
        self.pos += 2;
        loop {
            match self.peek() {
                None => return Err("a `$'` quote is never closed".to_string()),
                Some('\'') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some('\\') => {
                    let decoded = match self.at(1) {
                        Some('n') => '\n',
                        Some('t') => '\t',
                        Some('r') => '\r',
                        Some('a') => '\x07',
                        Some('b') => '\x08',
                        Some('e' | 'E') => '\x1b',
                        Some('f') => '\x0c',
                        Some('v') => '\x0b',
                        Some(c @ ('\\' | '\'' | '"' | '?')) => c,
                        Some(c) => return Err(format!("the escape `\\{c}` inside `$'…'`")),
                        None => return Err("a `$'` quote is never closed".to_string()),
                    };
                    w.value.push(decoded);
                    self.pos += 2;
                }
                Some(c) => {
                    w.value.push(c);
                    self.pos += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One command as `assignments words [flags]`: words with spaces (or
    /// empty) in «», flags `>` redirects, `$` substitutes, `*` globs only,
    /// `&` background, `()` nested.
    fn render(c: &SimpleCommand) -> String {
        let mut parts: Vec<String> = c.assignments.clone();
        parts.extend(c.words.iter().map(|w| {
            if w.is_empty() || w.contains(' ') {
                format!("«{w}»")
            } else {
                w.clone()
            }
        }));
        let flags: Vec<&str> = [
            (c.redirects, ">"),
            (c.substitutes, "$"),
            (c.expands && !c.substitutes, "*"),
            (c.background, "&"),
            (c.nested, "()"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, f)| *f)
        .collect();
        if !flags.is_empty() {
            parts.push(format!("[{}]", flags.join(" ")));
        }
        parts.join(" ")
    }

    fn rendered(line: &str) -> Option<Vec<String>> {
        match split(line) {
            Split::Commands(cs) => Some(cs.iter().map(render).collect()),
            Split::Opaque(_) => None,
        }
    }

    /// The one simple command of `line`.
    fn one(line: &str) -> SimpleCommand {
        match split(line) {
            Split::Commands(mut cs) if cs.len() == 1 => cs.remove(0),
            other => panic!("{line:?} is not one simple command: {other:?}"),
        }
    }

    #[test]
    fn split_table() {
        let table: &[(&str, Option<&[&str]>)] = &[
            // lists and pipelines
            ("a && b || c; d | e", Some(&["a", "b", "c", "d", "e"])),
            ("ls\npwd", Some(&["ls", "pwd"])),
            ("ls;", Some(&["ls"])),
            ("ls &&\n  pwd", Some(&["ls", "pwd"])),
            ("ls&&pwd|wc", Some(&["ls", "pwd", "wc"])),
            ("", Some(&[])),
            ("  \n# only a comment", Some(&[])),
            // subshells, groups, substitutions, shell scripts
            ("(cd x && make)", Some(&["cd x [()]", "make [()]"])),
            ("{ ls; pwd; } > out", Some(&["ls [> ()]", "pwd [> ()]"])),
            (
                "echo $(rm -rf /)",
                Some(&["echo «$(rm -rf /)» [$]", "rm -rf / [()]"]),
            ),
            ("echo `rm x`", Some(&["echo «`rm x`» [$]", "rm x [()]"])),
            (
                "echo \"$(echo \")\")\"",
                Some(&["echo «$(echo \")\")» [$]", "echo ) [()]"]),
            ),
            (
                "diff <(ls a) <(ls b)",
                Some(&["diff «<(ls a)» «<(ls b)» [$]", "ls a [()]", "ls b [()]"]),
            ),
            ("bash -c 'rm x'", Some(&["bash -c «rm x»", "rm x [()]"])),
            (
                "bash -lc \"git status && rm -rf x\"",
                Some(&[
                    "bash -lc «git status && rm -rf x»",
                    "git status [()]",
                    "rm -rf x [()]",
                ]),
            ),
            (
                "sh -c 'sh -c \"rm x\"'",
                Some(&["sh -c «sh -c \"rm x\"»", "sh -c «rm x» [()]", "rm x [()]"]),
            ),
            (
                "exec bash -c 'rm x'",
                Some(&["exec bash -c «rm x»", "rm x [()]"]),
            ),
            ("time -p rm x | time y", Some(&["rm x", "time y"])),
            ("time", Some(&["time"])),
            ("bash -c \"$CMD\"", None),
            // quotes and escapes
            ("echo \"a && b\"", Some(&["echo «a && b»"])),
            ("echo 'a | b' \"c; d\"", Some(&["echo «a | b» «c; d»"])),
            ("echo a\\ b\\;c", Some(&["echo «a b;c»"])),
            ("echo '$(rm x)' \"a*\" \\*", Some(&["echo «$(rm x)» a* *"])),
            ("ls \\\n  -la", Some(&["ls -la"])),
            (
                "git commit -m \"fix: a; b\"",
                Some(&["git commit -m «fix: a; b»"]),
            ),
            // comments
            ("ls # && rm x", Some(&["ls"])),
            ("echo a#b", Some(&["echo a#b"])),
            // background
            ("ls &", Some(&["ls [&]"])),
            ("sleep 1 & ls", Some(&["sleep 1 [&]", "ls"])),
            ("a && b &", Some(&["a [&]", "b [&]"])),
            // redirections
            ("cat a > b", Some(&["cat a [>]"])),
            ("make 2>&1 | tee log", Some(&["make [>]", "tee log"])),
            ("ls |& cat", Some(&["ls [>]", "cat"])),
            ("ls &>/dev/null", Some(&["ls [>]"])),
            ("cat <<< hi", Some(&["cat [>]"])),
            ("> out", Some(&["[>]"])),
            // assignments and expansions
            ("FOO=1 npm test", Some(&["FOO=1 npm test"])),
            ("X=1", Some(&["X=1"])),
            ("\"FOO\"=1 ls", Some(&["FOO=1 ls"])),
            ("echo $HOME \"${x}\"", Some(&["echo $HOME ${x} [$]"])),
            ("echo $((1 + 2))", Some(&["echo «$((1 + 2))» [$]"])),
            ("echo $ a", Some(&["echo $ a"])),
            ("ls *.rs", Some(&["ls *.rs [*]"])),
            ("[ -f x ]", Some(&["[ -f x ]"])),
            ("echo {a,b}", Some(&["echo {a,b} [$]"])),
            ("find . -exec rm {} \\;", Some(&["find . -exec rm {} ;"])),
            // not decomposed
            ("cat <<EOF\nx\nEOF", None),
            ("echo 'unterminated", None),
            ("echo \"unterminated", None),
            ("ls \\", None),
            ("for f in *; do rm $f; done", None),
            ("if true; then ls; fi", None),
            ("while true; do ls; done", None),
            ("case x in a) ls;; esac", None),
            ("f() { rm x; }", None),
            ("function f { rm x; }", None),
            ("a=(1 2)", None),
            ("[[ -f x ]]", None),
            ("! ls", None),
            ("((x++))", None),
            ("eval \"rm x\"", None),
            ("command eval x", None),
            ("trap 'rm x' EXIT", None),
            ("echo $(( $(rm x) ))", None),
            ("echo ${x:-$(rm x)}", None),
            ("echo $'\\x72m'", None),
            ("(ls", None),
            ("ls)", None),
            ("( )", None),
            ("ls &&", None),
            ("| ls", None),
            ("ls ;; pwd", None),
            ("; ls", None),
            ("ls >", None),
            ("(ls) foo", None),
        ];
        let wrong: Vec<String> = table
            .iter()
            .filter_map(|(line, want)| {
                let want = want.map(|w| w.iter().map(|s| s.to_string()).collect::<Vec<_>>());
                let got = rendered(line);
                (got != want).then(|| format!("{line:?}: expected {want:?}, got {got:?}"))
            })
            .collect();
        assert!(wrong.is_empty(), "wrong splits:\n{}", wrong.join("\n"));
    }

    #[test]
    fn words_lose_their_quotes() {
        let c = one(r#"grep -n 'a b' "c \"d\"" e\ f $'x\ty' 'it'\''s' "" "$x/y""#);
        assert_eq!(
            c.words,
            ["grep", "-n", "a b", "c \"d\"", "e f", "x\ty", "it's", "", "$x/y"]
        );
        assert_eq!(c.text(), "grep -n a b c \"d\" e f x\ty it's  $x/y");
    }

    #[test]
    fn redirect_targets_are_files_only() {
        let c = one("cmd < in 2>&1 >> log &> all 3>&- > \"a b\" <<< text");
        assert_eq!(c.redirect_targets, ["in", "log", "all", "a b"]);
        assert_eq!(c.words, ["cmd"]);
    }

    #[test]
    fn opaque_says_why() {
        assert_eq!(
            split("cat <<EOF"),
            Split::Opaque("a here-document (`<<`) is not split".to_string())
        );
        assert_eq!(
            split("echo 'x"),
            Split::Opaque("a single quote is never closed".to_string())
        );
    }

    #[test]
    fn nesting_is_depth_limited() {
        let deep = |n: usize| format!("{}ls{}", "$(".repeat(n), ")".repeat(n));
        assert!(matches!(split(&deep(MAX_DEPTH)), Split::Commands(c) if c.len() == MAX_DEPTH + 1));
        assert!(matches!(split(&deep(MAX_DEPTH + 1)), Split::Opaque(_)));
        let subshells = format!("{}ls{}", "( ".repeat(100), " )".repeat(100));
        assert!(matches!(split(&subshells), Split::Opaque(_)));
        let mut script = "rm x".to_string();
        for _ in 0..MAX_DEPTH + 1 {
            script = format!("bash -c '{}'", script.replace('\'', "'\\''"));
        }
        assert!(matches!(split(&script), Split::Opaque(_)));
    }

    #[test]
    fn matches_rule_table() {
        let table: &[(&str, &str, bool)] = &[
            // prefix `:*`
            ("npm run test:*", "npm run test", true),
            ("npm run test:*", "npm run test --watch", true),
            ("npm run test:*", "npm run testing", false),
            ("npm run test:*", "npm run", false),
            ("rm:*", "rm -rf /", true),
            // wildcards at word boundaries as written
            ("ls *", "ls", true),
            ("ls *", "ls -la /tmp", true),
            ("ls *", "lsof", false),
            ("ls*", "lsof", true),
            ("git * main", "git merge main", true),
            ("git * main", "git merge mainline", false),
            ("git * main", "git main", false),
            ("* --version", "cargo --version", true),
            ("*", "anything at all", true),
            // exact
            ("git status", "git status", true),
            ("git status", "git status -s", false),
            ("git status", "git  status", true),
            ("echo a\\*b", "echo 'a*b'", true),
            ("echo a\\*b", "echo axxb", false),
            ("", "ls", false),
            // assignments must be named
            ("npm test", "FOO=1 npm test", false),
            ("npm test:*", "FOO=1 npm test", false),
            ("*", "FOO=1 npm test", false),
            ("* npm test", "FOO=1 npm test", false),
            ("FOO=1 npm test", "FOO=1 npm test", true),
            ("FOO=1 npm test:*", "FOO=1 npm test -w", true),
            ("FOO=1 *", "FOO=1 npm test", true),
            ("FOO=12 npm test", "FOO=1 npm test", false),
        ];
        let wrong: Vec<String> = table
            .iter()
            .filter(|(spec, line, want)| matches_rule(spec, &one(line)) != *want)
            .map(|(spec, line, want)| format!("{spec:?} vs {line:?}: expected {want}"))
            .collect();
        assert!(wrong.is_empty(), "wrong matches:\n{}", wrong.join("\n"));
    }

    #[test]
    fn suggest_rule_table() {
        let table: &[(&str, &str)] = &[
            ("npm test --watch", "npm test:*"),
            ("cargo build --release", "cargo build:*"),
            ("ls -la", "ls:*"),
            ("ls *.rs", "ls:*"),
            ("make", "make"),
            ("make test", "make test:*"),
            ("npm --version", "npm --version"),
            ("touch made", "touch:*"),
            ("tee out.txt", "tee out.txt"),
            ("cp a b", "cp a b"),
            ("mv a b", "mv a b"),
            ("dd if=a of=b", "dd if=a of=b"),
            ("sed -i s/a/b/ f", "sed -i s/a/b/ f"),
            ("sed -n 1p f", "sed -n 1p f"),
            ("find . -name x", "find . -name x"),
            ("sort -o out in", "sort -o out in"),
            ("ls src", "ls:*"),
            ("git status", "git status:*"),
            ("./gradlew build", "./gradlew build:*"),
            ("docker Build x", "docker Build x"),
            ("python3 script.py", "python3 script.py"),
            ("python3.12 -m pytest", "python3.12 -m pytest"),
            ("/usr/bin/python3 x.py", "/usr/bin/python3 x.py"),
            ("node build.js", "node build.js"),
            ("bash x.sh", "bash x.sh"),
            ("sudo rm -rf /", "sudo rm -rf /"),
            ("xargs rm", "xargs rm"),
            ("env FOO=1 ls", "env FOO=1 ls"),
            ("python3 -c 'print(2*3)'", "python3 -c print(2\\*3)"),
            ("$TOOL run", "$TOOL run"),
            ("FOO=1 npm test", "FOO=1 npm test:*"),
            ("X=1", "X=1"),
            ("> out", ":"),
        ];
        let mut wrong = Vec::new();
        for (line, want) in table {
            let cmd = one(line);
            let got = suggest_rule(&cmd);
            if got != *want {
                wrong.push(format!("{line:?}: expected {want:?}, got {got:?}"));
            }
            if got.is_empty() || got == "*" || (!cmd.words.is_empty() && !matches_rule(&got, &cmd))
            {
                wrong.push(format!("{line:?}: {got:?} must be a rule that matches it"));
            }
        }
        assert!(wrong.is_empty(), "wrong suggestions:\n{}", wrong.join("\n"));
    }

    #[test]
    fn named_paths_table() {
        let table: &[(&str, &[&str])] = &[
            (
                "cat /etc/passwd ./a b ../c ~/x src/lib.rs .env plain",
                &["/etc/passwd", "./a", "../c", "~/x", "src/lib.rs", ".env"],
            ),
            ("ls -la --color=auto", &[]),
            (
                "rg --file=/tmp/p -I/usr/include -n x",
                &["/tmp/p", "/usr/include"],
            ),
            ("cat -- -/x", &["-/x"]),
            ("dd if=/dev/sda of=x", &["if=/dev/sda", "/dev/sda"]),
            ("/bin/cat x", &[]),
            ("cd", &["~/"]),
            ("cd ..", &[".."]),
            ("cat a > /tmp/out", &["/tmp/out"]),
            ("ls 2>&1", &[]),
        ];
        let wrong: Vec<String> = table
            .iter()
            .filter(|(line, want)| named_paths(&one(line)) != *want)
            .map(|(line, want)| {
                format!(
                    "{line:?}: expected {want:?}, got {:?}",
                    named_paths(&one(line))
                )
            })
            .collect();
        assert!(wrong.is_empty(), "wrong paths:\n{}", wrong.join("\n"));
    }

    /// Kind 3 of the red-team report: deny and ask rules must see through
    /// wrappers. Each row: a line, and whether `Bash(rm:*)` matches one
    /// of its unwrapped commands (before [`unwrapped`], only the command
    /// itself was matched: every `true` row but the controls was missed).
    const WRAPPED: &[(&str, bool)] = &[
        ("env rm -rf x", true),
        ("env -i FOO=1 rm x", true),
        ("env FOO=1 BAR=2 rm x", true),
        ("env -u HOME rm x", true),
        ("env --chdir=/tmp rm x", true),
        ("env -S 'rm -rf x'", true),
        ("command rm x", true),
        ("command -p rm x", true),
        ("builtin rm x", true),
        ("exec rm x", true),
        ("exec -a name rm x", true),
        ("nice rm x", true),
        ("nice -n 5 rm x", true),
        ("nice -5 rm x", true),
        ("nice --adjustment=5 rm x", true),
        ("nohup rm x", true),
        ("timeout 5 rm x", true),
        ("timeout -s KILL -k 1 5 rm x", true),
        ("timeout --signal=9 5s rm x", true),
        ("stdbuf -oL rm x", true),
        ("stdbuf -o L -e 0 rm x", true),
        ("xargs rm", true),
        ("xargs -0 -n 1 rm -f", true),
        ("xargs -I{} rm {}", true),
        ("setsid rm x", true),
        ("setsid -f rm x", true),
        ("ionice -c 3 rm x", true),
        ("chrt -f 10 rm x", true),
        ("taskset -c 0 rm x", true),
        ("taskset 0x1 rm x", true),
        ("sudo rm x", true),
        ("sudo -u root -E rm x", true),
        ("sudo FOO=1 rm x", true),
        ("doas -u root rm x", true),
        ("FOO=1 rm x", true),
        ("nice env timeout 5 rm x", true),
        ("env bash -c 'rm x'", true),
        ("xargs sh -c 'rm \"$@\"' _", true),
        ("find . -name '*.o' -exec rm {} ;", true),
        ("find . -execdir rm -f {} +", true),
        ("watch -n 1 'rm x'", true),
        ("flock /tmp/l rm x", true),
        ("flock /tmp/l -c 'rm x'", true),
        ("strace -f -o /dev/null rm x", true),
        ("su -c 'rm x'", true),
        ("/usr/bin/env rm x", true),
        ("chroot / rm x", true),
        // controls
        ("rm x", true),
        ("env ls", false),
        ("timeout 5 ls", false),
        ("echo rm x", false),
        ("env", false),
        ("xargs", false),
        ("sudo -l", false),
        ("find . -name rm", false),
        ("timeout", false),
        ("nice -n", false),
        ("env -S", false),
    ];

    #[test]
    fn deny_rules_see_through_wrappers() {
        let wrong: Vec<String> = WRAPPED
            .iter()
            .filter(|(line, want)| {
                let got = unwrapped(&one(line))
                    .iter()
                    .any(|c| matches_rule("rm:*", c));
                got != *want
            })
            .map(|(line, want)| {
                let inner: Vec<String> = unwrapped(&one(line)).iter().map(|c| c.text()).collect();
                format!("{line:?}: expected {want}, unwrapped {inner:?}")
            })
            .collect();
        assert!(wrong.is_empty(), "wrong unwrapping:\n{}", wrong.join("\n"));
    }

    #[test]
    fn unwrapping_is_bounded() {
        let line = format!("{} rm x", "strace ".repeat(40));
        let n = unwrapped(&one(&line)).len();
        assert!(n <= MAX_UNWRAPPED, "{n}");
        assert_eq!(
            unwrapped(&one("env FOO=1 timeout 5 rm x"))
                .iter()
                .map(SimpleCommand::text)
                .collect::<Vec<_>>(),
            ["env FOO=1 timeout 5 rm x", "timeout 5 rm x", "rm x"]
        );
    }
}
