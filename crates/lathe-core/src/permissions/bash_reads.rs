//! What a Bash command reads or lists, so Read rules and protected paths
//! cover Bash too (`cat secret/s.txt`, `grep -r SECRET .`, `cat .en*`).
//!
//! Pure: one [`SimpleCommand`] in, the words it reads through out, each with
//! how far it reaches ([`Reach`]). `read_walk` expands them against the file
//! system (globs, folders) into [`ReadPath`]s, and `decide` checks those:
//! a deny rule for Read on any of them denies the call, and a protected path
//! or a Read ask rule on one the command reads the content of asks.
//!
//! Conservative where it cannot be exact: a program it does not know reads
//! every operand (a folder operand is then checked as a whole, not walked);
//! option arguments count as operands unless the program's table says
//! otherwise; a word that names nothing on disk drops out later.

use std::path::PathBuf;

use super::options::{self, Spec};
use super::shell::{self, SimpleCommand};

/// How a command reaches what an operand names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Reads a file's content; a folder is checked as a whole (a rule for
    /// what is in it matches) but not walked.
    Content,
    /// Reads every file below a folder, walked as [`Walk`] says (a file
    /// operand is read itself).
    Tree(Walk),
    /// Lists names only, down to `depth` below a folder (`Some(0)`: the
    /// path itself, `Some(1)`: a folder's entries, `None`: everything
    /// below). Only deny rules apply to names.
    Names {
        /// How deep below a folder operand.
        depth: Option<usize>,
    },
    /// Like [`Reach::Tree`], for a path relative to the root of the git
    /// repository the working directory is in (`git show HEAD:path`), not
    /// to the working directory.
    RepoTree(Walk),
    /// Like [`Reach::Tree`], for a path git reads out of its objects or
    /// index relative to the working directory (`git show HEAD:./path`,
    /// `git diff REV -- path`). Like [`Reach::RepoTree`], a path missing
    /// from the work tree still counts as read, by its name: git holds
    /// what the work tree lacks.
    ObjectTree(Walk),
    /// A git revision or a path (git tells them apart by whether the path
    /// exists): an existing path is read like [`Reach::Tree`]; otherwise
    /// it is a revision whose objects may hold any file's content, so it
    /// counts as [`Reach::Repository`].
    RevOrPath(Walk),
    /// git reads blob content out of the object store (`git show <blob>`,
    /// `git log -p`, `git grep foo HEAD`): every file of the repository
    /// that holds the word's folder, `.git` included, counts as read
    /// ([`ReadPath::object`]). Deny rules and Read ask rules apply (walked
    /// only when one could), protected names only to a file git tracks: a
    /// protected `.git/` or an untracked `.env` would make every `git
    /// show` ask.
    Repository,
}

/// How a recursive reader walks a folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Walk {
    /// Hidden files and folders are read (`grep -r`, `rg --hidden`).
    pub hidden: bool,
    /// `.gitignore`, `.ignore` and `.rgignore` leave files out (rg).
    pub ignore_files: bool,
    /// `.git` folders are read (`grep -r`); otherwise never walked (rg
    /// without `--hidden`, `git grep`).
    pub vcs: bool,
}

/// `grep -r`, `diff -r`: everything, `.git` included.
const EVERYTHING: Walk = Walk {
    hidden: true,
    ignore_files: false,
    vcs: true,
};

/// `git grep`, `git diff -- dir`: the work tree without `.git`.
const WORK_TREE: Walk = Walk {
    hidden: true,
    ignore_files: false,
    vcs: false,
};

/// One word a command reads through, as written (quotes removed; globs and
/// `~` not expanded yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operand {
    /// The word.
    pub word: String,
    /// How the command reaches what it names.
    pub reach: Reach,
    /// The word holds a shell substitution (`$f`, `${HOME}`, `$(…)`, a
    /// backtick, brace expansion): what it names is known only when the
    /// shell runs it. `read_walk` resolves `$PWD` and `$HOME` and counts
    /// any other as a read it cannot check.
    pub expands: bool,
}

/// What one simple command reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandReads {
    /// The words it reads through.
    pub operands: Vec<Operand>,
    /// Where `cd`/`pushd` moves for the commands after it (`~` for a bare
    /// `cd`).
    pub moves_to: Option<String>,
    /// `moves_to` holds a shell substitution (see [`Operand::expands`]).
    pub moves_expands: bool,
}

/// One path a command reaches, canonical (what `decide` checks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadPath {
    /// The path, symlinks resolved.
    pub path: PathBuf,
    /// It is a folder (checked as a whole: a rule for what is in it matches).
    pub is_dir: bool,
    /// The command reads its content (else it only lists its name).
    pub content: bool,
    /// Read out of git's object store by a whole-repository read
    /// ([`Reach::Repository`]): deny rules and Read ask rules apply, but
    /// not protected names (a tracked protected file is pushed as a plain
    /// content read instead).
    pub object: bool,
}

/// Programs that read nothing their operands name (they print, compute or
/// look things up elsewhere).
const READS_NOTHING: &[&str] = &[
    "echo", "printf", "pwd", "true", "false", "seq", "sleep", "uname", "whoami", "id", "df",
    "which", "type", "basename", "dirname", "tr", ":",
];

/// Long options of `ls` that take the next word as their value.
const LS_VALUES: &[&str] = &[
    "ignore",
    "hide",
    "width",
    "tabsize",
    "format",
    "sort",
    "time",
    "time-style",
    "color",
    "quoting-style",
    "block-size",
    "indicator-style",
];

/// Long options of `tree` that take the next word as their value.
const TREE_VALUES: &[&str] = &["filelimit", "charset", "sort", "timefmt"];

/// Long options of `du` that take the next word as their value.
const DU_VALUES: &[&str] = &[
    "max-depth",
    "block-size",
    "threshold",
    "exclude-from",
    "time-style",
];

/// Programs that look at a path's metadata, not its content.
const METADATA: &[&str] = &["stat", "test", "[", "realpath", "readlink"];

/// What `cmd` reads (see the module docs): the files its redirections
/// name, and by program: `cd`/`pushd` move; `ls`, `find`, `tree`, `du`,
/// `git ls-files` list names; `grep -r`, `rg`, `diff`, `git grep` read
/// folders; `git show/diff/log/blame` read the paths they name (`HEAD:path`
/// too); other known readers read their operands; an unknown program reads
/// every operand.
/// Operands and a `cd` target that come from a substituted word are marked
/// ([`Operand::expands`], [`CommandReads::moves_expands`]).
pub fn command_reads(cmd: &SimpleCommand) -> CommandReads {
    let mut reads = program_reads(cmd);
    // What a wrapper runs reads too (`env cat x`, `timeout 5 grep -r x`).
    for inner in shell::unwrapped(cmd).iter().skip(1) {
        let r = program_reads(inner);
        reads.operands.extend(r.operands);
    }
    // `< file` reads it; `>> file` too, as far as a rule can tell.
    let redirected = cmd
        .redirect_targets
        .iter()
        .filter(|t| !matches!(t.as_str(), "/dev/null" | "/dev/stdout" | "/dev/stderr"));
    reads
        .operands
        .extend(each(redirected.cloned().collect(), Reach::Content));
    // An operand cut out of a substituted word (`-f$X` gives `$X`) is
    // inside it; a word that merely shares text gets marked too, which
    // costs nothing: only a substitution left after resolving counts.
    let from_substitution = |word: &str| cmd.substituted.iter().any(|s| s.contains(word));
    for op in &mut reads.operands {
        op.expands = from_substitution(&op.word);
    }
    reads.moves_expands = reads.moves_to.as_deref().is_some_and(from_substitution);
    let mut seen = Vec::new();
    reads.operands.retain(|op| {
        let new = !seen.contains(op);
        if new {
            seen.push(op.clone());
        }
        new
    });
    reads
}

/// What the program of `cmd` reads through its words (see
/// [`command_reads`]).
fn program_reads(cmd: &SimpleCommand) -> CommandReads {
    let Some((program, args)) = cmd.words.split_first() else {
        return CommandReads::default();
    };
    let name = program.rsplit('/').next().unwrap_or(program);
    let reads = |operands: Vec<Operand>| CommandReads {
        operands,
        ..CommandReads::default()
    };
    if let Some(spec) = option_spec(name) {
        let mut out = spec_reads(name, spec, args);
        out.extend(program_reads_by_name(name, args).operands);
        return reads(out);
    }
    program_reads_by_name(name, args)
}

/// The option table of `name` when its options name files it reads
/// ([`options`]).
fn option_spec(name: &str) -> Option<&'static Spec> {
    Some(match name {
        "date" => &options::DATE,
        "file" => &options::FILE,
        "sort" => &options::SORT,
        "wc" => &options::WC,
        "du" => &options::DU,
        "grep" | "egrep" | "fgrep" => &options::GREP,
        "diff" => &options::DIFF,
        "hexdump" => &options::HEXDUMP,
        "tree" => &options::TREE,
        "rg" => &options::RG,
        "jq" => &options::JQ,
        _ => return None,
    })
}

/// The files the options of `name` read (`date -f F`, `grep --fi=F`, `wc
/// --files0-from=F`, `jq --rawfile n F`), by its option table; jq's
/// operands and modules too. When the arguments do not parse, every word
/// that may be a value (see [`words_of`]).
fn spec_reads(name: &str, spec: &Spec, args: &[String]) -> Vec<Operand> {
    let Ok(parsed) = options::parse(spec, args) else {
        return each(words_of(args), Reach::Content);
    };
    let mut out = each(parsed.read_files(), Reach::Content);
    if name == "jq" {
        out.extend(jq_reads(&parsed));
    }
    out
}

/// jq: the input files (the operands after the program; with `-f` the
/// program file too), and the folders modules are loaded from when the
/// program imports any (`import "secret/s" as s;`): each string in the
/// program, below the working directory, each `-L` folder and `~/.jq`.
fn jq_reads(parsed: &options::Parsed) -> Vec<Operand> {
    let from_file = parsed.has('f', "from-file");
    let mut operands = parsed.operands.clone();
    let program = if from_file || operands.is_empty() {
        None
    } else {
        Some(operands.remove(0))
    };
    let mut out = each(operands, Reach::Content);
    let Some(program) = program.filter(|p| options::jq_loads_modules(p)) else {
        return out;
    };
    let mut bases = vec![".".to_string(), "~/.jq".to_string()];
    bases.extend(
        parsed
            .found
            .iter()
            .filter(|f| f.opt.short == 'L')
            .filter_map(|f| f.value.clone()),
    );
    for module in quoted_strings(&program) {
        let folder = module.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
        for base in &bases {
            let word = if folder.is_empty() {
                base.clone()
            } else if folder.starts_with('/') {
                folder.to_string()
            } else {
                format!("{}/{folder}", base.trim_end_matches('/'))
            };
            out.extend(each(vec![word], Reach::Tree(EVERYTHING)));
        }
    }
    out
}

/// The `"…"` strings of a jq program (escapes kept as written).
fn quoted_strings(program: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    let mut escaped = false;
    for c in program.chars() {
        match (&mut current, c) {
            (None, '"') => current = Some(String::new()),
            (Some(_), _) if escaped => {
                escaped = false;
                if let Some(s) = current.as_mut() {
                    s.push(c);
                }
            }
            (Some(_), '\\') => escaped = true,
            (Some(s), '"') => {
                out.push(std::mem::take(s));
                current = None;
            }
            (Some(s), c) => s.push(c),
            (None, _) => {}
        }
    }
    out
}

/// What `name` reads through its operands (see [`command_reads`]).
fn program_reads_by_name(name: &str, args: &[String]) -> CommandReads {
    let reads = |operands: Vec<Operand>| CommandReads {
        operands,
        ..CommandReads::default()
    };
    match name {
        _ if READS_NOTHING.contains(&name) => CommandReads::default(),
        // `date` reads only what its options name (`-f`, `-r`); jq's
        // operands are sorted by [`jq_reads`].
        "date" | "jq" => CommandReads::default(),
        "cd" | "pushd" => CommandReads {
            operands: Vec::new(),
            moves_expands: false,
            moves_to: Some(
                plain_operands(args)
                    .into_iter()
                    .next()
                    .unwrap_or_else(|| "~".to_string()),
            ),
        },
        _ if METADATA.contains(&name) => {
            reads(each(words_of(args), Reach::Names { depth: Some(0) }))
        }
        "ls" => {
            let depth = if has_short(args, 'R') || args.iter().any(|a| a == "--recursive") {
                None
            } else {
                Some(1)
            };
            let words = parse_args(args, "ITw", LS_VALUES).operands;
            reads(each(or_cwd(words), Reach::Names { depth }))
        }
        "tree" => {
            let words = parse_args(args, "LPIHT", TREE_VALUES).operands;
            reads(each(or_cwd(words), Reach::Names { depth: None }))
        }
        "du" => {
            let words = parse_args(args, "dBtX", DU_VALUES).operands;
            reads(each(or_cwd(words), Reach::Names { depth: None }))
        }
        "find" => reads(each(
            or_cwd(find_starts(args)),
            Reach::Names { depth: None },
        )),
        "grep" | "egrep" | "fgrep" => reads(grep_reads(args)),
        "rg" => reads(rg_reads(args)),
        "diff" => reads(each(words_of(args), Reach::Tree(EVERYTHING))),
        "git" => reads(git_reads(args)),
        _ => reads(each(words_of(args), Reach::Content)),
    }
}

/// `words` each with `reach`.
fn each(words: Vec<String>, reach: Reach) -> Vec<Operand> {
    words
        .into_iter()
        .map(|word| Operand {
            word,
            reach,
            expands: false,
        })
        .collect()
}

/// `words`, or `.` (the working directory) when there are none.
fn or_cwd(mut words: Vec<String>) -> Vec<String> {
    if words.is_empty() {
        words.push(".".to_string());
    }
    words
}

/// Every word that may name a path, for a program whose options are not
/// known: operands, the values of `--opt=value`, and what follows each
/// letter of a short option cluster (`-f.env` may be `-f .env`).
fn words_of(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut options_end = false;
    for arg in args {
        if options_end || arg == "-" || !arg.starts_with('-') {
            out.push(arg.clone());
        } else if arg == "--" {
            options_end = true;
        } else if let Some(long) = arg.strip_prefix("--") {
            out.extend(long.split_once('=').map(|(_, v)| v.to_string()));
        } else {
            out.extend(glued_values(arg));
        }
    }
    out.retain(|w| !w.is_empty());
    out
}

/// The possible values glued to a short option cluster: `-rf.env` →
/// `f.env`, `.env`.
fn glued_values(cluster: &str) -> Vec<String> {
    cluster
        .char_indices()
        .skip(2)
        .map(|(i, _)| cluster[i..].to_string())
        .collect()
}

/// The words of `args` that are not options (everything after `--`).
fn plain_operands(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut options_end = false;
    for arg in args {
        if options_end || arg == "-" || !arg.starts_with('-') {
            out.push(arg.clone());
        } else if arg == "--" {
            options_end = true;
        }
    }
    out
}

/// `true` when a short option cluster in `args` (`-la`) holds `flag`.
fn has_short(args: &[String], flag: char) -> bool {
    args.iter()
        .take_while(|a| *a != "--")
        .any(|a| a.starts_with('-') && !a.starts_with("--") && a[1..].contains(flag))
}

/// `find`'s starting points: the words before the expression (after the
/// leading `-H`/`-L`/`-P`/`-D x`/`-O3` options).
fn find_starts(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut words = args.iter().peekable();
    while let Some(arg) = words.next() {
        match arg.as_str() {
            "-H" | "-L" | "-P" => {}
            "-D" => {
                words.next();
            }
            a if a.starts_with("-O") && out.is_empty() => {}
            a if a.starts_with('-') || matches!(a, "(" | "!" | ")" | ",") => break,
            a => out.push(a.to_string()),
        }
    }
    out
}

/// A program's arguments, sorted by a table of the options that take a
/// value.
#[derive(Default)]
struct Args {
    /// The words that are not options or option values.
    operands: Vec<String>,
    /// Every option word, for flag checks.
    options: Vec<String>,
    /// `(option, value)` for options that took one: `("e", "x")` for
    /// `-e x` or `-ex`, `("file", "p")` for `--file p` or `--file=p`.
    values: Vec<(String, String)>,
}

/// Sorts `args`: `short_values` are the short options that take a value
/// (the rest of their cluster, or the next word), `long_values` the long
/// options that take the next word as one (`--x=v` always carries its
/// own).
fn parse_args(args: &[String], short_values: &str, long_values: &[&str]) -> Args {
    let mut out = Args::default();
    let mut options_end = false;
    let mut words = args.iter();
    while let Some(arg) = words.next() {
        if options_end || arg == "-" || !arg.starts_with('-') {
            out.operands.push(arg.clone());
            continue;
        }
        if arg == "--" {
            options_end = true;
            continue;
        }
        out.options.push(arg.clone());
        if let Some(long) = arg.strip_prefix("--") {
            let value = match long.split_once('=') {
                Some((n, v)) => Some((n.to_string(), v.to_string())),
                None if long_values.contains(&long) => {
                    words.next().map(|v| (long.to_string(), v.clone()))
                }
                None => None,
            };
            out.values.extend(value);
            continue;
        }
        // The first letter of a short cluster that takes a value ends it.
        let taking = arg
            .char_indices()
            .skip(1)
            .find(|(_, c)| short_values.contains(*c));
        if let Some((i, c)) = taking {
            let rest = &arg[i + c.len_utf8()..];
            let value = if rest.is_empty() {
                words.next().cloned()
            } else {
                Some(rest.to_string())
            };
            out.values.extend(value.map(|v| (c.to_string(), v)));
        }
    }
    out
}

/// A search program's arguments: the paths to search (the pattern operand
/// left out unless `-e`/`-f`/`--regexp`/`--file` give the patterns), the
/// files patterns are read from (`-f`, `--file`, rg's `--ignore-file`),
/// and the option words.
struct SearchArgs {
    /// Files and folders to search.
    paths: Vec<String>,
    /// Files read for patterns or ignore rules.
    pattern_files: Vec<String>,
    /// Every option word, for flag checks.
    options: Vec<String>,
}

/// [`parse_args`] for grep-like programs, sorted into [`SearchArgs`].
fn search_args(args: &[String], short_values: &str, long_values: &[&str]) -> SearchArgs {
    let Args {
        mut operands,
        options,
        values,
    } = parse_args(args, short_values, long_values);
    let patterns_given = values
        .iter()
        .any(|(o, _)| matches!(o.as_str(), "e" | "f" | "regexp" | "file"));
    if !patterns_given && !operands.is_empty() {
        operands.remove(0);
    }
    let pattern_files = values
        .into_iter()
        .filter(|(o, _)| matches!(o.as_str(), "f" | "file" | "ignore-file"))
        .map(|(_, v)| v)
        .collect();
    SearchArgs {
        paths: operands,
        pattern_files,
        options,
    }
}

/// `grep`: files are read; with `-r`/`-R`/`--recursive`/`-d recurse`
/// folders are read whole, and no path means the working directory.
fn grep_reads(args: &[String]) -> Vec<Operand> {
    const LONG: &[&str] = &[
        "regexp",
        "file",
        "max-count",
        "context",
        "after-context",
        "before-context",
        "directories",
        "devices",
        "include",
        "exclude",
        "exclude-dir",
        "exclude-from",
        "label",
        "binary-files",
    ];
    let s = search_args(args, "ABCDdefm", LONG);
    let recursive = s.options.iter().any(|o| {
        matches!(
            o.as_str(),
            "--recursive" | "--dereference-recursive" | "--directories=recurse"
        ) || (!o.starts_with("--") && (o.contains('r') || o.contains('R')))
    }) || args.windows(2).any(|w| w[0] == "-d" && w[1] == "recurse");
    let mut out = each(s.pattern_files, Reach::Content);
    if recursive {
        out.extend(each(or_cwd(s.paths), Reach::Tree(EVERYTHING)));
    } else {
        out.extend(each(s.paths, Reach::Content));
    }
    out
}

/// `rg`: always recursive, the working directory when no path is given;
/// hidden files only with `--hidden`/`-.`/`-uu`, ignore files unless
/// `--no-ignore*`/`-u`.
fn rg_reads(args: &[String]) -> Vec<Operand> {
    const LONG: &[&str] = &[
        "regexp",
        "file",
        "glob",
        "iglob",
        "type",
        "type-not",
        "type-add",
        "type-clear",
        "max-count",
        "max-depth",
        "max-filesize",
        "context",
        "after-context",
        "before-context",
        "replace",
        "encoding",
        "threads",
        "sort",
        "sortr",
        "color",
        "colors",
        "path-separator",
        "ignore-file",
        "pre-glob",
        "context-separator",
        "field-match-separator",
        "field-context-separator",
        "max-columns",
        "dfa-size-limit",
        "regex-size-limit",
        "engine",
    ];
    let s = search_args(args, "ABCEMTdefgjmrt", LONG);
    let mut unrestricted = 0;
    let mut hidden = false;
    let mut ignore_files = true;
    for o in &s.options {
        if let Some(long) = o.strip_prefix("--") {
            hidden |= long == "hidden" || long == "unrestricted";
            ignore_files &= !(long.starts_with("no-ignore") || long == "unrestricted");
        } else {
            unrestricted += o.matches('u').count();
            hidden |= o.contains('.');
        }
    }
    hidden |= unrestricted >= 2;
    ignore_files &= unrestricted == 0;
    let walk = Walk {
        hidden,
        ignore_files,
        vcs: hidden,
    };
    let mut out = each(s.pattern_files, Reach::Content);
    out.extend(each(or_cwd(s.paths), Reach::Tree(walk)));
    out
}

/// `git`, after its global options (`-C dir`, `--git-dir`, `--work-tree`
/// move it elsewhere: that repository counts as read whole): `grep` reads
/// the work tree (or the paths it names); `show`, `diff`, `log -p`,
/// `grep` with revisions, `cat-file`, `status -v` read blobs out of the
/// object store (see [`git_object_reads`]); `ls-files` lists names;
/// `status`, `branch` and `rev-parse` read nothing a rule covers; options
/// that name files are reads of them (`blame --contents F`, `grep -f F`,
/// `diff -O F`); other subcommands read every operand.
fn git_reads(args: &[String]) -> Vec<Operand> {
    let mut i = 0;
    let mut elsewhere = Vec::new();
    while let Some(arg) = args.get(i) {
        match arg.as_str() {
            "-C" | "--git-dir" | "--work-tree" => {
                elsewhere.extend(args.get(i + 1).cloned());
                i += 2;
            }
            "-c" | "--namespace" | "--config-env" | "--exec-path" | "--super-prefix" => i += 2,
            a if a.starts_with("--git-dir=") || a.starts_with("--work-tree=") => {
                elsewhere.extend(a.split_once('=').map(|(_, v)| v.to_string()));
                i += 1;
            }
            a if a.starts_with('-') => i += 1,
            _ => break,
        }
    }
    let rest_all = args.get(i..).unwrap_or_default();
    let Some((sub, rest)) = rest_all.split_first() else {
        return Vec::new();
    };
    if !elsewhere.is_empty() {
        elsewhere.push(".".to_string());
        let mut out = each(elsewhere, Reach::Repository);
        out.extend(each(words_of(rest), Reach::Content));
        return out;
    }
    let spec = match sub.as_str() {
        "grep" => Some(&options::GIT_GREP),
        "show" | "diff" | "log" | "whatchanged" | "reflog" => Some(&options::GIT_LOG),
        "blame" | "annotate" => Some(&options::GIT_BLAME),
        "ls-files" => Some(&options::GIT_LS_FILES),
        "status" => Some(&options::GIT_STATUS),
        _ => None,
    };
    let parsed = spec.map(|s| options::parse(s, rest));
    let parsed = match parsed {
        Some(Ok(p)) => p,
        // Not understood: every word, and the whole repository.
        Some(Err(_)) => {
            let mut out = each(vec![".".to_string()], Reach::Repository);
            out.extend(each(words_of(rest), Reach::Content));
            return out;
        }
        None => options::Parsed::default(),
    };
    let mut out = each(parsed.read_files(), Reach::Content);
    match sub.as_str() {
        "branch" | "rev-parse" => {}
        "status" if parsed.has('v', "verbose") => {
            out.extend(each(vec![".".to_string()], Reach::Repository));
        }
        "status" => {}
        "ls-files" => out.extend(each(or_cwd(parsed.operands), Reach::Names { depth: None })),
        "grep" => {
            let mut operands = parsed.operands.clone();
            let patterns_given = parsed.has('e', "") || parsed.has('f', "");
            if !patterns_given && !operands.is_empty() {
                operands.remove(0);
            }
            let dashdash = parsed
                .dashdash
                .map(|d| d.saturating_sub(usize::from(!patterns_given)));
            let in_objects = parsed.has(N, "cached") || parsed.has(N, "index");
            // Without operands it searches the work tree below the
            // working directory; a revision (or `--cached`) searches blobs.
            if operands.is_empty() && !in_objects {
                out.extend(each(or_cwd(operands), Reach::Tree(WORK_TREE)));
            } else {
                out.extend(git_object_reads(&operands, dashdash, in_objects));
            }
        }
        "log" | "whatchanged" | "reflog" if !shows_content(&parsed) => {
            out.extend(each(path_words(&parsed.operands), Reach::Tree(WORK_TREE)));
        }
        "show" | "diff" | "log" | "whatchanged" | "reflog" => {
            let staged = parsed.has(N, "cached") || parsed.has(N, "staged");
            out.extend(git_object_reads(&parsed.operands, parsed.dashdash, staged));
        }
        "blame" | "annotate" => {
            out.extend(each(
                path_words(&parsed.operands),
                Reach::ObjectTree(WORK_TREE),
            ));
        }
        "cat-file" | "archive" | "format-patch" | "fast-export" | "bundle" | "range-diff"
        | "difftool" | "notes" | "stash" | "show-branch" | "cherry" | "request-pull" => {
            let objects: Vec<Operand> = plain_operands(rest)
                .iter()
                .filter_map(|w| object_path(w))
                .collect();
            out.extend(objects);
            out.extend(each(vec![".".to_string()], Reach::Repository));
            out.extend(each(words_of(rest), Reach::Content));
        }
        _ => out.extend(each(words_of(rest), Reach::Content)),
    }
    out
}

/// No short letter (for [`options::Parsed::has`]).
const N: char = '\0';

/// `true` when `git log` options show blob content: a patch, a word diff,
/// pickaxe searches, line history, a whitespace check.
fn shows_content(parsed: &options::Parsed) -> bool {
    const CONTENT: &[&str] = &[
        "patch",
        "unified",
        "patch-with-raw",
        "patch-with-stat",
        "function-context",
        "word-diff",
        "word-diff-regex",
        "color-words",
        "cc",
        "dd",
        "remerge-diff",
        "check",
        "binary",
        "full-diff",
        "find-object",
        "textconv",
        "ext-diff",
    ];
    parsed.found.iter().any(|f| {
        !f.negated
            && (CONTENT.contains(&f.opt.long)
                || matches!(
                    f.opt.short,
                    'p' | 'u' | 'U' | 'W' | 'S' | 'G' | 'L' | 'c' | 'm'
                ))
    })
}

/// The operands of a git command with `REV:path` turned into `path`.
fn path_words(operands: &[String]) -> Vec<String> {
    operands
        .iter()
        .map(|w| match w.split_once(':') {
            Some((_, path)) if !path.is_empty() => path.to_string(),
            _ => w.clone(),
        })
        .collect()
}

/// What a `REV:path` word reads: `path` below the repository root, or
/// below the working directory when it starts with `./` or `../`; the
/// whole repository for `REV:` (a root tree) and `:/text` (a commit
/// search). `None` for a word without `:`.
fn object_path(word: &str) -> Option<Operand> {
    let (rev, path) = word.split_once(':')?;
    // `:0:path` names a stage of the index.
    let path = match (rev, path.split_once(':')) {
        ("", Some((stage, p))) if stage.len() == 1 && stage.chars().all(|c| c.is_ascii_digit()) => {
            p
        }
        _ => path,
    };
    let one = |word: &str, reach| each(vec![word.to_string()], reach).pop();
    if path.is_empty() || path.starts_with('/') || rev.contains('{') {
        return one(".", Reach::Repository);
    }
    if path.starts_with("./") || path.starts_with("../") || path == "." || path == ".." {
        return one(path, Reach::ObjectTree(WORK_TREE));
    }
    one(path, Reach::RepoTree(WORK_TREE))
}

/// `true` when `word` names a commit for certain (`HEAD`, `@`, `HEAD~2`,
/// `main^`, `a..b`): git applies pathspecs to what it shows. Any other
/// revision may name a blob, tree or tag, whose content git shows whatever
/// the pathspecs say.
fn is_commit(word: &str) -> bool {
    if word.contains(':') || word.contains('{') {
        return false;
    }
    let navigated = word
        .trim_end_matches(|c: char| c.is_ascii_digit())
        .ends_with(['~', '^']);
    matches!(
        word,
        "HEAD" | "@" | "ORIG_HEAD" | "FETCH_HEAD" | "MERGE_HEAD"
    ) || navigated
        || word.contains("..")
}

/// What a git command that reads blobs out of the object store reads
/// through `operands` (`dashdash`: how many come before `--`): each
/// `REV:path` its path ([`object_path`]); paths after `--` and words that
/// may be paths or revisions ([`Reach::RevOrPath`]) as paths; and the
/// whole repository when a commit it shows is limited by no path (`git
/// show`, `git show HEAD`, `git diff --cached`, `git log -p`) or
/// `in_objects` with no path.
fn git_object_reads(
    operands: &[String],
    dashdash: Option<usize>,
    in_objects: bool,
) -> Vec<Operand> {
    let split = dashdash.unwrap_or(operands.len()).min(operands.len());
    let (before, after) = operands.split_at(split);
    let mut out = each(after.to_vec(), Reach::ObjectTree(WORK_TREE));
    let mut commits = 0;
    let mut objects = 0;
    let mut maybe_paths = 0;
    for w in before {
        if let Some(op) = object_path(w) {
            objects += 1;
            out.push(op);
        } else if is_commit(w) {
            commits += 1;
        } else {
            maybe_paths += 1;
            out.extend(each(vec![w.clone()], Reach::RevOrPath(WORK_TREE)));
        }
    }
    let limited = !after.is_empty() || maybe_paths > 0;
    let shows_commits = commits > 0 || (objects == 0 && maybe_paths == 0) || in_objects;
    if shows_commits && !limited {
        out.extend(each(vec![".".to_string()], Reach::Repository));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permissions::shell::{split, Split};

    /// The reads of the one simple command `line`, as `word:how` strings
    /// (`c` content, `t` tree + `h` hidden, `i` ignore files, `v` .git,
    /// `n0`/`n1`/`n` names), and the `cd` target.
    fn reads(line: &str) -> (Vec<String>, Option<String>) {
        let Split::Commands(cmds) = split(line) else {
            panic!("{line} does not split");
        };
        let r = command_reads(&cmds[0]);
        let ops = r
            .operands
            .iter()
            .map(|o| {
                let how = match o.reach {
                    Reach::Content => "c".to_string(),
                    Reach::Tree(w) => format!(
                        "t{}{}{}",
                        if w.hidden { "h" } else { "" },
                        if w.ignore_files { "i" } else { "" },
                        if w.vcs { "v" } else { "" }
                    ),
                    Reach::Names { depth } => {
                        format!("n{}", depth.map(|d| d.to_string()).unwrap_or_default())
                    }
                    Reach::RepoTree(_) => "repo-path".to_string(),
                    Reach::ObjectTree(_) => "object-path".to_string(),
                    Reach::RevOrPath(_) => "rev-or-path".to_string(),
                    Reach::Repository => "repository".to_string(),
                };
                format!("{}:{how}", o.word)
            })
            .collect();
        (ops, r.moves_to)
    }

    #[test]
    fn command_reads_table() {
        let table: &[(&str, &[&str])] = &[
            ("cat .en*", &[".en*:c"]),
            ("cat secret/s.txt notes", &["secret/s.txt:c", "notes:c"]),
            ("head -n 5 a.txt", &["5:c", "a.txt:c"]),
            ("echo secret/s.txt", &[]),
            ("grep SECRET .env", &[".env:c"]),
            ("grep -rn SECRET .", &[".:thv"]),
            ("grep -r SECRET", &[".:thv"]),
            ("grep -R -e SECRET -e TOKEN src", &["src:thv"]),
            ("grep -A 3 foo bar.txt", &["bar.txt:c"]),
            ("grep -f .env notes.txt", &[".env:c", "notes.txt:c"]),
            ("grep -f.env notes.txt", &[".env:c", "notes.txt:c"]),
            ("grep --file=.env x", &[".env:c", "x:c"]),
            ("grep -d recurse foo dir", &["dir:thv"]),
            ("rg SECRET", &[".:ti"]),
            ("rg -n SECRET src lib", &["src:ti", "lib:ti"]),
            ("rg --hidden SECRET", &[".:thiv"]),
            ("rg -uu SECRET", &[".:thv"]),
            ("rg -u SECRET", &[".:t"]),
            ("rg -g '!x' -t rust SECRET", &[".:ti"]),
            ("ls", &[".:n1"]),
            ("ls -la secret", &["secret:n1"]),
            ("ls -R", &[".:n"]),
            ("find . -name '*.rs'", &[".:n"]),
            ("find -L src lib -type f", &["src:n", "lib:n"]),
            ("find -name x", &[".:n"]),
            ("tree -L 2", &[".:n"]),
            ("tree -L 2 src", &["src:n"]),
            ("du -d 1", &[".:n"]),
            ("ls -I '*.o' -la", &[".:n1"]),
            ("du -sh", &[".:n"]),
            ("stat .env", &[".env:n0"]),
            ("diff -r a b", &["a:thv", "b:thv"]),
            ("git grep SECRET", &[".:th"]),
            ("git show HEAD:secret/s.txt", &["secret/s.txt:repo-path"]),
            ("git diff -- secret", &["secret:object-path"]),
            ("git status", &[]),
            ("git ls-files", &[".:n"]),
            ("python3 x.py --in=data.csv", &["x.py:c", "data.csv:c"]),
            ("wc -l < .env", &[".env:c"]),
            ("echo x 2>/dev/null >> log.txt", &["log.txt:c"]),
        ];
        let wrong: Vec<String> = table
            .iter()
            .filter_map(|(line, want)| {
                let (got, _) = reads(line);
                (got != *want).then(|| format!("{line:?}: expected {want:?}, got {got:?}"))
            })
            .collect();
        assert!(wrong.is_empty(), "wrong reads:\n{}", wrong.join("\n"));
    }

    #[test]
    fn cd_moves_the_commands_after_it() {
        assert_eq!(reads("cd secret").1.as_deref(), Some("secret"));
        assert_eq!(reads("cd").1.as_deref(), Some("~"));
        assert_eq!(reads("cat x").1, None);
    }

    /// Kind 2 of the red-team report: options and operands that read files
    /// the reads table did not know, and git objects. `(line, reads that
    /// must be among the command's reads)`; each row failed before.
    const HIDDEN_READS: &[(&str, &[&str])] = &[
        ("date -f secret/s.txt", &["secret/s.txt:c"]),
        ("date --file=secret/s.txt", &["secret/s.txt:c"]),
        ("date --fi secret/s.txt", &["secret/s.txt:c"]),
        ("date -r secret/s.txt", &["secret/s.txt:c"]),
        ("du --files0-from=secret/l", &["secret/l:c"]),
        ("du -X secret/l", &["secret/l:c"]),
        ("grep --fi=secret/p x", &["secret/p:c"]),
        ("grep --exclude-from=secret/p x y", &["secret/p:c"]),
        ("rg --ignore-f=secret/i foo", &["secret/i:c"]),
        ("hexdump -f secret/fmt x", &["secret/fmt:c"]),
        ("file -m secret/magic x", &["secret/magic:c"]),
        ("file --files-from secret/l", &["secret/l:c"]),
        ("sort --random-source=secret/r x", &["secret/r:c"]),
        ("jq -n 'import \"secret/s\" as s; s'", &["./secret:thv"]),
        ("jq -n -L lib 'include \"m\"; 1'", &["lib:thv"]),
        ("env cat secret/s.txt", &["secret/s.txt:c"]),
        ("timeout 5 grep -r x secret", &["secret:thv"]),
        ("xargs -a secret/l grep -r x", &[".:thv"]),
        ("git show HEAD:secret/s.txt", &["secret/s.txt:repo-path"]),
        ("git show HEAD:./s.txt", &["./s.txt:object-path"]),
        ("git show :0:secret/s.txt", &["secret/s.txt:repo-path"]),
        ("git show", &[".:repository"]),
        ("git show HEAD", &[".:repository"]),
        ("git show 3f2a1b", &["3f2a1b:rev-or-path"]),
        (
            "git show v1.0 -- src",
            &["v1.0:rev-or-path", "src:object-path"],
        ),
        (
            "git cat-file -p HEAD:secret/s.txt",
            &["secret/s.txt:repo-path"],
        ),
        ("git cat-file -p 3f2a1b", &[".:repository"]),
        ("git log -p", &[".:repository"]),
        ("git log --patch --oneline", &[".:repository"]),
        ("git log -S TOKEN", &[".:repository"]),
        ("git diff", &[".:repository"]),
        ("git diff HEAD~1", &[".:repository"]),
        ("git diff --cached", &[".:repository"]),
        ("git diff -O secret/order", &["secret/order:c"]),
        ("git grep foo HEAD", &[".:repository"]),
        ("git grep --cached foo", &[".:repository"]),
        ("git grep -f secret/p HEAD", &["secret/p:c"]),
        (
            "git blame --contents secret/s.txt src/a.rs",
            &["secret/s.txt:c"],
        ),
        ("git ls-files -X secret/x", &["secret/x:c"]),
        ("git status -v", &[".:repository"]),
        ("git -C /other/repo show HEAD", &["/other/repo:repository"]),
        ("git --git-dir=/x/.git log -p", &["/x/.git:repository"]),
    ];

    /// Rows that must not read more than they did: no blanket read of the
    /// repository where a path limits what git shows.
    const LIMITED_READS: &[(&str, &[&str])] = &[
        ("git show HEAD~1 -- src/lib.rs", &["src/lib.rs:object-path"]),
        ("git diff -- secret", &["secret:object-path"]),
        ("git diff src/a.rs", &["src/a.rs:rev-or-path"]),
        ("git log --oneline -5", &[]),
        ("git log -- secret", &["secret:th"]),
        ("git grep SECRET", &[".:th"]),
        ("git grep foo -- src", &["src:object-path"]),
        ("git status", &[]),
        ("date +%s", &[]),
        ("jq -r .name package.json", &["package.json:c"]),
    ];

    #[test]
    fn options_and_git_objects_that_read_files_are_reads() {
        let mut wrong = Vec::new();
        for (line, want) in HIDDEN_READS {
            let (got, _) = reads(line);
            for w in *want {
                if !got.iter().any(|g| g == w) {
                    wrong.push(format!("{line:?}: {w:?} missing from {got:?}"));
                }
            }
        }
        for (line, want) in LIMITED_READS {
            let (got, _) = reads(line);
            if got != *want {
                wrong.push(format!("{line:?}: expected {want:?}, got {got:?}"));
            }
        }
        assert!(wrong.is_empty(), "wrong reads:\n{}", wrong.join("\n"));
    }
}
