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

use super::shell::SimpleCommand;

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
}

/// Programs that read nothing their operands name (they print, compute or
/// look things up elsewhere).
const READS_NOTHING: &[&str] = &[
    "echo", "printf", "pwd", "true", "false", "seq", "sleep", "date", "uname", "whoami", "id",
    "df", "which", "type", "basename", "dirname", "tr", ":",
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
    match name {
        _ if READS_NOTHING.contains(&name) => CommandReads::default(),
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

/// `git`: `grep` reads the work tree (or the paths it names); `show`,
/// `diff`, `log` and `blame` read the paths they name (`HEAD:path` names
/// `path`); `ls-files` lists names; `status`, `branch` and `rev-parse` read
/// nothing a rule covers; other subcommands read every operand.
fn git_reads(args: &[String]) -> Vec<Operand> {
    let Some((sub, rest)) = args.split_first() else {
        return Vec::new();
    };
    match sub.as_str() {
        "status" | "branch" | "rev-parse" => Vec::new(),
        "ls-files" => each(or_cwd(plain_operands(rest)), Reach::Names { depth: None }),
        "grep" => {
            let s = search_args(rest, "ABCefm", &["regexp", "file", "max-count", "context"]);
            let mut out = each(s.pattern_files, Reach::Content);
            out.extend(each(or_cwd(s.paths), Reach::Tree(WORK_TREE)));
            out
        }
        "show" | "diff" | "log" | "blame" => {
            let words = plain_operands(rest)
                .into_iter()
                .map(|w| match w.split_once(':') {
                    Some((_, path)) if !path.is_empty() => path.to_string(),
                    _ => w,
                })
                .collect();
            each(words, Reach::Tree(WORK_TREE))
        }
        _ => each(words_of(rest), Reach::Content),
    }
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
            ("git show HEAD:secret/s.txt", &["secret/s.txt:th"]),
            ("git diff -- secret", &["secret:th"]),
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
}
