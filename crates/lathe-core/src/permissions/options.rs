//! A small, table-driven model of the command-line options of the programs
//! lathe runs without asking (the read-only list of `Bash`) and of the
//! options that make a program read a file a rule must see.
//!
//! One [`Spec`] per program lists every option the program knows that
//! matters: its short letter and long name, whether it takes a value
//! ([`Arity`]), and what it does with it ([`Effect`]: nothing to worry
//! about, writes or runs something, reads the file its value names, or
//! reads a list of further files). [`parse`] walks the arguments the way
//! getopt_long (and git's parse-options) does:
//!
//! - `--` ends the options; `-` alone is an operand; options may follow
//!   operands (GNU permutation);
//! - `--name=value` and `--name value`; a long option that is a unique
//!   prefix of a known name resolves to it (`--o` → `--output`); an
//!   ambiguous or unknown one makes the parse fail;
//! - short clusters are walked letter by letter (`-uo x`): a letter that
//!   takes a value consumes the rest of the cluster, or the next word;
//!   an unknown letter makes the parse fail;
//! - with [`Spec::negations`] (git) `--no-name` negates a known `--name`
//!   (prefixes included);
//! - with [`Spec::numbers`], `-5` (a count) is an option too.
//!
//! A failed parse means "not understood": callers refuse (the read-only
//! answer) or fall back to reading every word (the reads of a command).
//! Being conservative is the point: an option the table does not know is
//! refused rather than guessed at.
//!
//! Soundness of the prefix rule: every option that writes, runs or reads
//! must be in its program's table, so any prefix of it either resolves to it
//! or is ambiguous in the table, and is refused either way.

/// Whether an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arity {
    /// No value (`-u`, `--unique`).
    Flag,
    /// A value: the rest of a short cluster or the next word (`-o x`,
    /// `-ox`), `--name=value` or `--name value`.
    Value,
    /// A value only when attached: `-Ovim`, `--color=never`.
    Optional,
    /// Two words (`jq --rawfile name file`): the value is the second.
    Two,
}

/// What an option does with the files and programs it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Nothing a rule must see.
    Plain,
    /// It writes a file or runs a program (`sort -o`, `rg --pre`): never
    /// read-only.
    Refused,
    /// Its value names a file the program reads (`grep -f`, `date -f`).
    Reads,
    /// Its value names a file that lists further files to read (`wc
    /// --files0-from`, `md5sum -c`): the list is read, and what it names
    /// is known only when the program runs, so never read-only.
    ReadsList,
}

/// One option of a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opt {
    /// Its short letter, `'\0'` when it has none.
    pub short: char,
    /// Its long name without the dashes, `""` when it has none.
    pub long: &'static str,
    /// Whether it takes a value.
    pub arity: Arity,
    /// What it does.
    pub effect: Effect,
}

/// The options of one program and how its parser reads them.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// Every option that matters (see the module docs).
    pub opts: &'static [Opt],
    /// `--no-name` negates `--name` (git's parse-options).
    pub negations: bool,
    /// `-5` is an option (a count: `head -5`, `git log -3`).
    pub numbers: bool,
}

/// One option found in the arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The option.
    pub opt: &'static Opt,
    /// Its value, when it took one.
    pub value: Option<String>,
    /// It was negated (`--no-name`): it does nothing it would do.
    pub negated: bool,
}

/// The arguments sorted by [`parse`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    /// The options found, in order.
    pub found: Vec<Found>,
    /// The operands (words that are neither options nor their values).
    pub operands: Vec<String>,
    /// How many operands came before a `--` (git: revisions before,
    /// paths after), when there was one.
    pub dashdash: Option<usize>,
}

impl Parsed {
    /// `true` when an option that writes, runs or reads a list of files
    /// was given (and not negated).
    pub fn refused(&self) -> bool {
        self.found
            .iter()
            .any(|f| !f.negated && matches!(f.opt.effect, Effect::Refused | Effect::ReadsList))
    }

    /// The files option values name that the program reads.
    pub fn read_files(&self) -> Vec<String> {
        self.found
            .iter()
            .filter(|f| !f.negated && matches!(f.opt.effect, Effect::Reads | Effect::ReadsList))
            .filter_map(|f| f.value.clone())
            .collect()
    }

    /// `true` when the option with long name `long` (or short letter
    /// `short`) was given and not negated.
    pub fn has(&self, short: char, long: &str) -> bool {
        self.found.iter().any(|f| {
            !f.negated
                && ((short != '\0' && f.opt.short == short)
                    || (!long.is_empty() && f.opt.long == long))
        })
    }
}

/// Why [`parse`] gave up: the word it could not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unparsed(pub String);

/// Sorts `args` (the words after the program) by `spec` the way the
/// program's option parser does (see the module docs).
pub fn parse(spec: &Spec, args: &[String]) -> Result<Parsed, Unparsed> {
    let mut out = Parsed::default();
    let mut words = args.iter();
    let fail = |w: &str| Err(Unparsed(w.to_string()));
    while let Some(arg) = words.next() {
        if out.dashdash.is_some() || arg == "-" || !arg.starts_with('-') {
            out.operands.push(arg.clone());
            continue;
        }
        if arg == "--" {
            out.dashdash = Some(out.operands.len());
            continue;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let Some((opt, negated)) = resolve_long(spec, name) else {
                return fail(arg);
            };
            let value = match (opt.arity, attached, negated) {
                (_, Some(_), true) | (Arity::Flag, Some(_), _) => return fail(arg),
                (_, None, true) | (Arity::Flag | Arity::Optional, None, _) => None,
                (Arity::Optional | Arity::Value, Some(v), _) => Some(v),
                (Arity::Two, Some(_), _) => return fail(arg),
                (Arity::Value, None, _) => match words.next() {
                    Some(v) => Some(v.clone()),
                    None => return fail(arg),
                },
                (Arity::Two, None, _) => match (words.next(), words.next()) {
                    (Some(_), Some(v)) => Some(v.clone()),
                    _ => return fail(arg),
                },
            };
            out.found.push(Found {
                opt,
                value,
                negated,
            });
            continue;
        }
        let letters = &arg[1..];
        if spec.numbers && letters.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        for (i, c) in letters.char_indices() {
            let Some(opt) = spec.opts.iter().find(|o| o.short != '\0' && o.short == c) else {
                return fail(arg);
            };
            let rest = &letters[i + c.len_utf8()..];
            let value = match opt.arity {
                Arity::Flag => None,
                Arity::Optional => (!rest.is_empty()).then(|| rest.to_string()),
                Arity::Value | Arity::Two if !rest.is_empty() => Some(rest.to_string()),
                Arity::Value | Arity::Two => match words.next() {
                    Some(v) => Some(v.clone()),
                    None => return fail(arg),
                },
            };
            let ends_cluster = opt.arity != Arity::Flag;
            out.found.push(Found {
                opt,
                value,
                negated: false,
            });
            if ends_cluster {
                break;
            }
        }
    }
    Ok(out)
}

/// The option `--name` means, and whether it is negated: the exact name,
/// else (with negations) `no-` + an exact name, else the one option a
/// unique prefix names. `None` when unknown or ambiguous.
fn resolve_long(spec: &Spec, name: &str) -> Option<(&'static Opt, bool)> {
    if name.is_empty() {
        return None;
    }
    let named = |o: &&'static Opt| !o.long.is_empty();
    if let Some(o) = spec.opts.iter().filter(named).find(|o| o.long == name) {
        return Some((o, false));
    }
    let negated_name = name.strip_prefix("no-").filter(|_| spec.negations);
    if let Some(n) = negated_name {
        if let Some(o) = spec.opts.iter().filter(named).find(|o| o.long == n) {
            return Some((o, true));
        }
    }
    let mut hits: Vec<(&'static Opt, bool)> = spec
        .opts
        .iter()
        .filter(named)
        .filter(|o| o.long.starts_with(name))
        .map(|o| (o, false))
        .collect();
    if spec.negations {
        hits.extend(
            spec.opts
                .iter()
                .filter(named)
                .filter(|o| format!("no-{}", o.long).starts_with(name))
                .map(|o| (o, true)),
        );
    }
    hits.dedup_by(|a, b| std::ptr::eq(a.0, b.0) && a.1 == b.1);
    match hits.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

/// `true` when a jq program may load modules (`import`, `include`,
/// `modulemeta`): files read from search paths, so never read-only, and
/// their folders count as read.
pub fn jq_loads_modules(program: &str) -> bool {
    ["import", "include", "modulemeta"]
        .iter()
        .any(|k| program.contains(k))
}

/// An option row (see [`Opt`]).
const fn o(short: char, long: &'static str, arity: Arity, effect: Effect) -> Opt {
    Opt {
        short,
        long,
        arity,
        effect,
    }
}

use Arity::{Flag as F, Optional as O, Two as T, Value as V};
use Effect::{Plain as P, Reads as R, ReadsList as L, Refused as X};

/// No short letter.
const N: char = '\0';

const fn spec(opts: &'static [Opt]) -> Spec {
    Spec {
        opts,
        negations: false,
        numbers: false,
    }
}

const fn git_spec(opts: &'static [Opt]) -> Spec {
    Spec {
        opts,
        negations: true,
        numbers: true,
    }
}

/// GNU `sort`. `-T` writes temporary files into a folder it names: refused
/// (a folder outside the project, or a full disk, is a side effect).
pub const SORT: Spec = spec(&[
    o('b', "ignore-leading-blanks", F, P),
    o('d', "dictionary-order", F, P),
    o('f', "ignore-case", F, P),
    o('g', "general-numeric-sort", F, P),
    o('i', "ignore-nonprinting", F, P),
    o('M', "month-sort", F, P),
    o('h', "human-numeric-sort", F, P),
    o('n', "numeric-sort", F, P),
    o('R', "random-sort", F, P),
    o(N, "random-source", V, R),
    o('r', "reverse", F, P),
    o(N, "sort", V, P),
    o('V', "version-sort", F, P),
    o(N, "batch-size", V, P),
    o('c', "check", O, P),
    o('C', "", F, P),
    o(N, "compress-program", V, X),
    o(N, "debug", F, P),
    o(N, "files0-from", V, L),
    o('k', "key", V, P),
    o('m', "merge", F, P),
    o('o', "output", V, X),
    o('s', "stable", F, P),
    o('S', "buffer-size", V, P),
    o('t', "field-separator", V, P),
    o('T', "temporary-directory", V, X),
    o(N, "parallel", V, P),
    o('u', "unique", F, P),
    o('z', "zero-terminated", F, P),
    o(N, "help", F, P),
    o(N, "version", F, P),
]);

/// GNU `uniq` (its second operand is an output file: see the caller).
pub const UNIQ: Spec = spec(&[
    o('c', "count", F, P),
    o('d', "repeated", F, P),
    o('D', "", F, P),
    o(N, "all-repeated", O, P),
    o('f', "skip-fields", V, P),
    o(N, "group", O, P),
    o('i', "ignore-case", F, P),
    o('s', "skip-chars", V, P),
    o('u', "unique", F, P),
    o('z', "zero-terminated", F, P),
    o('w', "check-chars", V, P),
    o(N, "help", F, P),
    o(N, "version", F, P),
]);

/// GNU `date`: `-s` sets the clock; `-f` prints each line of a file in
/// its errors; `-r` looks at a file.
pub const DATE: Spec = spec(&[
    o('d', "date", V, P),
    o(N, "debug", F, P),
    o('f', "file", V, R),
    o('I', "iso-8601", O, P),
    o(N, "resolution", F, P),
    o('R', "rfc-email", F, P),
    o(N, "rfc-822", F, P),
    o(N, "rfc-2822", F, P),
    o(N, "rfc-3339", V, P),
    o('r', "reference", V, R),
    o('s', "set", V, X),
    o('u', "utc", F, P),
    o(N, "universal", F, P),
    o(N, "help", F, P),
    o(N, "version", F, P),
]);

/// `file`: `-C` writes a compiled magic file, `-z`/`-Z` may run
/// decompressors, `-p` resets access times; `-m` reads magic files, `-f`
/// a list of files.
pub const FILE: Spec = spec(&[
    o(N, "help", F, P),
    o('v', "version", F, P),
    o('m', "magic-file", V, R),
    o('z', "uncompress", F, X),
    o('Z', "uncompress-noreport", F, X),
    o('b', "brief", F, P),
    o('c', "checking-printout", F, P),
    o('e', "exclude", V, P),
    o(N, "exclude-quiet", V, P),
    o('f', "files-from", V, L),
    o('F', "separator", V, P),
    o('i', "mime", F, P),
    o(N, "apple", F, P),
    o(N, "extension", F, P),
    o(N, "mime-type", F, P),
    o(N, "mime-encoding", F, P),
    o('k', "keep-going", F, P),
    o('l', "list", F, P),
    o('L', "dereference", F, P),
    o('h', "no-dereference", F, P),
    o('n', "no-buffer", F, P),
    o('N', "no-pad", F, P),
    o('0', "print0", F, P),
    o('p', "preserve-date", F, X),
    o('P', "parameter", V, P),
    o('r', "raw", F, P),
    o('s', "special-files", F, P),
    o('S', "no-sandbox", F, P),
    o('C', "compile", F, X),
    o('d', "debug", F, P),
]);

/// GNU `wc`.
pub const WC: Spec = spec(&[
    o('c', "bytes", F, P),
    o('m', "chars", F, P),
    o('l', "lines", F, P),
    o(N, "files0-from", V, L),
    o('L', "max-line-length", F, P),
    o('w', "words", F, P),
    o(N, "total", V, P),
    o(N, "debug", F, P),
    o(N, "help", F, P),
    o(N, "version", F, P),
]);

/// GNU `du`.
pub const DU: Spec = spec(&[
    o('0', "null", F, P),
    o('a', "all", F, P),
    o('A', "apparent-size", F, P),
    o('B', "block-size", V, P),
    o('b', "bytes", F, P),
    o('c', "total", F, P),
    o('D', "dereference-args", F, P),
    o('H', "", F, P),
    o('d', "max-depth", V, P),
    o(N, "files0-from", V, L),
    o('h', "human-readable", F, P),
    o(N, "inodes", F, P),
    o('k', "", F, P),
    o('L', "dereference", F, P),
    o('l', "count-links", F, P),
    o('m', "", F, P),
    o('P', "no-dereference", F, P),
    o('S', "separate-dirs", F, P),
    o(N, "si", F, P),
    o('s', "summarize", F, P),
    o('t', "threshold", V, P),
    o(N, "time", O, P),
    o(N, "time-style", V, P),
    o('X', "exclude-from", V, R),
    o(N, "exclude", V, P),
    o('x', "one-file-system", F, P),
    o(N, "help", F, P),
    o(N, "version", F, P),
]);

/// GNU `md5sum`, `sha1sum`, `sha256sum`, …: `-c` reads the files a list
/// names.
pub const SUMS: Spec = spec(&[
    o('b', "binary", F, P),
    o('c', "check", F, X),
    o(N, "tag", F, P),
    o('t', "text", F, P),
    o('z', "zero", F, P),
    o(N, "ignore-missing", F, P),
    o(N, "quiet", F, P),
    o(N, "status", F, P),
    o(N, "strict", F, P),
    o('w', "warn", F, P),
    o(N, "help", F, P),
    o(N, "version", F, P),
]);

/// GNU `grep` (`egrep`, `fgrep`).
pub const GREP: Spec = Spec {
    opts: &[
        o('E', "extended-regexp", F, P),
        o('F', "fixed-strings", F, P),
        o('G', "basic-regexp", F, P),
        o('P', "perl-regexp", F, P),
        o('e', "regexp", V, P),
        o('f', "file", V, R),
        o('i', "ignore-case", F, P),
        o('y', "", F, P),
        o(N, "no-ignore-case", F, P),
        o('w', "word-regexp", F, P),
        o('x', "line-regexp", F, P),
        o('z', "null-data", F, P),
        o('s', "no-messages", F, P),
        o('v', "invert-match", F, P),
        o('V', "version", F, P),
        o(N, "help", F, P),
        o('m', "max-count", V, P),
        o('b', "byte-offset", F, P),
        o('n', "line-number", F, P),
        o(N, "line-buffered", F, P),
        o('H', "with-filename", F, P),
        o('h', "no-filename", F, P),
        o(N, "label", V, P),
        o('o', "only-matching", F, P),
        o('q', "quiet", F, P),
        o(N, "silent", F, P),
        o(N, "binary-files", V, P),
        o('a', "text", F, P),
        o('I', "", F, P),
        o('d', "directories", V, P),
        o('D', "devices", V, P),
        o('r', "recursive", F, P),
        o('R', "dereference-recursive", F, P),
        o(N, "include", V, P),
        o(N, "exclude", V, P),
        o(N, "exclude-from", V, R),
        o(N, "exclude-dir", V, P),
        o('L', "files-without-match", F, P),
        o('l', "files-with-matches", F, P),
        o('c', "count", F, P),
        o('T', "initial-tab", F, P),
        o('Z', "null", F, P),
        o('B', "before-context", V, P),
        o('A', "after-context", V, P),
        o('C', "context", V, P),
        o(N, "group-separator", V, P),
        o(N, "no-group-separator", F, P),
        o(N, "color", O, P),
        o(N, "colour", O, P),
        o('U', "binary", F, P),
    ],
    negations: false,
    numbers: true,
};

/// GNU `diff`: `-l` pipes its output through `pr`.
pub const DIFF: Spec = spec(&[
    o(N, "normal", F, P),
    o('q', "brief", F, P),
    o('s', "report-identical-files", F, P),
    o('c', "", F, P),
    o('C', "context", O, P),
    o('u', "", F, P),
    o('U', "unified", O, P),
    o('e', "ed", F, P),
    o('n', "rcs", F, P),
    o('y', "side-by-side", F, P),
    o('W', "width", V, P),
    o(N, "left-column", F, P),
    o(N, "suppress-common-lines", F, P),
    o('p', "show-c-function", F, P),
    o('F', "show-function-line", V, P),
    o(N, "label", V, P),
    o('t', "expand-tabs", F, P),
    o('T', "initial-tab", F, P),
    o(N, "tabsize", V, P),
    o(N, "suppress-blank-empty", F, P),
    o('l', "paginate", F, X),
    o('r', "recursive", F, P),
    o(N, "no-dereference", F, P),
    o('N', "new-file", F, P),
    o(N, "unidirectional-new-file", F, P),
    o(N, "ignore-file-name-case", F, P),
    o(N, "no-ignore-file-name-case", F, P),
    o('x', "exclude", V, P),
    o('X', "exclude-from", V, R),
    o('S', "starting-file", V, P),
    o(N, "from-file", V, R),
    o(N, "to-file", V, R),
    o('i', "ignore-case", F, P),
    o('E', "ignore-tab-expansion", F, P),
    o('Z', "ignore-trailing-space", F, P),
    o('b', "ignore-space-change", F, P),
    o('w', "ignore-all-space", F, P),
    o('B', "ignore-blank-lines", F, P),
    o('I', "ignore-matching-lines", V, P),
    o('a', "text", F, P),
    o(N, "strip-trailing-cr", F, P),
    o('D', "ifdef", V, P),
    o(N, "old-group-format", V, P),
    o(N, "new-group-format", V, P),
    o(N, "changed-group-format", V, P),
    o(N, "unchanged-group-format", V, P),
    o(N, "line-format", V, P),
    o(N, "old-line-format", V, P),
    o(N, "new-line-format", V, P),
    o(N, "unchanged-line-format", V, P),
    o('d', "minimal", F, P),
    o(N, "horizon-lines", V, P),
    o(N, "speed-large-files", F, P),
    o(N, "color", O, P),
    o(N, "palette", V, P),
    o(N, "help", F, P),
    o('v', "version", F, P),
]);

/// util-linux `hexdump`: `-f` reads a format file.
pub const HEXDUMP: Spec = spec(&[
    o('b', "one-byte-octal", F, P),
    o('X', "one-byte-hex", F, P),
    o('c', "one-byte-char", F, P),
    o('C', "canonical", F, P),
    o('d', "two-bytes-decimal", F, P),
    o('o', "two-bytes-octal", F, P),
    o('x', "two-bytes-hex", F, P),
    o('L', "color", O, P),
    o('e', "format", V, P),
    o('f', "format-file", V, R),
    o('n', "length", V, P),
    o('s', "skip", V, P),
    o('v', "no-squeezing", F, P),
    o('h', "help", F, P),
    o('V', "version", F, P),
]);

/// binutils `strings` (an `@file` operand is refused by the caller: it
/// reads options from that file).
pub const STRINGS: Spec = spec(&[
    o('a', "all", F, P),
    o('d', "data", F, P),
    o('f', "print-file-name", F, P),
    o('n', "bytes", V, P),
    o('t', "radix", V, P),
    o('o', "", F, P),
    o('w', "include-all-whitespace", F, P),
    o('T', "target", V, P),
    o('e', "encoding", V, P),
    o(N, "unicode", V, P),
    o('U', "", V, P),
    o('s', "output-separator", V, P),
    o('h', "help", F, P),
    o('v', "version", F, P),
    o('V', "", F, P),
]);

/// `tree` (2.x): `-o` writes its output, `-R` writes `00Tree.html` files,
/// `--fromfile` reads listings from its operands; `--infofile` reads a
/// file.
pub const TREE: Spec = spec(&[
    o('a', "", F, P),
    o('d', "", F, P),
    o('l', "", F, P),
    o('f', "", F, P),
    o('x', "", F, P),
    o('L', "", V, P),
    o('R', "", F, X),
    o('P', "", V, P),
    o('I', "", V, P),
    o(N, "gitignore", F, P),
    o(N, "gitfile", V, R),
    o(N, "ignore-case", F, P),
    o(N, "matchdirs", F, P),
    o(N, "metafirst", F, P),
    o(N, "prune", F, P),
    o(N, "info", F, P),
    o(N, "infofile", V, R),
    o(N, "noreport", F, P),
    o(N, "charset", V, P),
    o(N, "filelimit", V, P),
    o('o', "output", V, X),
    o('q', "", F, P),
    o('N', "", F, P),
    o('Q', "", F, P),
    o('p', "", F, P),
    o('u', "", F, P),
    o('g', "", F, P),
    o('s', "", F, P),
    o('h', "", F, P),
    o(N, "si", F, P),
    o(N, "du", F, P),
    o('D', "", F, P),
    o(N, "timefmt", V, P),
    o('F', "", F, P),
    o(N, "inodes", F, P),
    o(N, "device", F, P),
    o('v', "", F, P),
    o('t', "", F, P),
    o('c', "", F, P),
    o('U', "", F, P),
    o('r', "", F, P),
    o(N, "dirsfirst", F, P),
    o(N, "filesfirst", F, P),
    o(N, "sort", V, P),
    o('i', "", F, P),
    o('A', "", F, P),
    o('S', "", F, P),
    o('n', "", F, P),
    o('C', "", F, P),
    o('X', "", F, P),
    o('J', "", F, P),
    o('H', "", V, P),
    o('T', "", V, P),
    o(N, "nolinks", F, P),
    o(N, "hintro", V, R),
    o(N, "houtro", V, R),
    o(N, "fromfile", F, X),
    o(N, "fromtabfile", F, X),
    o(N, "fflinks", F, P),
    o(N, "help", F, P),
    o(N, "version", F, P),
]);

/// `jq`: `-f` reads the program from a file (which may import modules),
/// `--rawfile`/`--slurpfile` read files, `--run-tests` reads a test file;
/// `-L` names a module folder (see the callers for `import`).
pub const JQ: Spec = spec(&[
    o('c', "compact-output", F, P),
    o('n', "null-input", F, P),
    o('e', "exit-status", F, P),
    o('s', "slurp", F, P),
    o('r', "raw-output", F, P),
    o(N, "raw-output0", F, P),
    o('j', "join-output", F, P),
    o('a', "ascii-output", F, P),
    o('R', "raw-input", F, P),
    o('C', "color-output", F, P),
    o('M', "monochrome-output", F, P),
    o('S', "sort-keys", F, P),
    o(N, "tab", F, P),
    o(N, "indent", V, P),
    o(N, "unbuffered", F, P),
    o(N, "stream", F, P),
    o(N, "stream-errors", F, P),
    o(N, "seq", F, P),
    o('f', "from-file", F, X),
    o('L', "library-path", V, P),
    o(N, "arg", T, P),
    o(N, "argjson", T, P),
    o(N, "slurpfile", T, R),
    o(N, "rawfile", T, R),
    o(N, "args", F, P),
    o(N, "jsonargs", F, P),
    o(N, "run-tests", O, X),
    o(N, "debug-dump-disasm", F, P),
    o(N, "debug-trace", O, P),
    o('h', "help", F, P),
    o('V', "version", F, P),
    o(N, "build-configuration", F, P),
]);

/// ripgrep (14): `--pre` and `--hostname-bin` run programs, `-z` runs
/// decompressors; `-f` and `--ignore-file` read files.
pub const RG: Spec = spec(&[
    o('A', "after-context", V, P),
    o('B', "before-context", V, P),
    o('C', "context", V, P),
    o(N, "binary", F, P),
    o(N, "block-buffered", F, P),
    o('b', "byte-offset", F, P),
    o('s', "case-sensitive", F, P),
    o(N, "color", V, P),
    o(N, "colors", V, P),
    o(N, "column", F, P),
    o(N, "context-separator", V, P),
    o('c', "count", F, P),
    o(N, "count-matches", F, P),
    o(N, "crlf", F, P),
    o(N, "debug", F, P),
    o(N, "dfa-size-limit", V, P),
    o('E', "encoding", V, P),
    o(N, "engine", V, P),
    o(N, "field-context-separator", V, P),
    o(N, "field-match-separator", V, P),
    o('f', "file", V, R),
    o(N, "files", F, P),
    o('l', "files-with-matches", F, P),
    o(N, "files-without-match", F, P),
    o('F', "fixed-strings", F, P),
    o('L', "follow", F, P),
    o(N, "generate", V, P),
    o('g', "glob", V, P),
    o(N, "glob-case-insensitive", F, P),
    o(N, "heading", F, P),
    o('h', "help", F, P),
    o('.', "hidden", F, P),
    o(N, "hostname-bin", V, X),
    o(N, "hyperlink-format", V, P),
    o(N, "iglob", V, P),
    o('i', "ignore-case", F, P),
    o(N, "ignore-file", V, R),
    o(N, "ignore-file-case-insensitive", F, P),
    o(N, "include-zero", F, P),
    o('v', "invert-match", F, P),
    o(N, "json", F, P),
    o(N, "line-buffered", F, P),
    o('n', "line-number", F, P),
    o('N', "no-line-number", F, P),
    o('x', "line-regexp", F, P),
    o('M', "max-columns", V, P),
    o(N, "max-columns-preview", F, P),
    o('m', "max-count", V, P),
    o('d', "max-depth", V, P),
    o(N, "maxdepth", V, P),
    o(N, "max-filesize", V, P),
    o(N, "mmap", F, P),
    o('U', "multiline", F, P),
    o(N, "multiline-dotall", F, P),
    o(N, "no-config", F, P),
    o('I', "no-filename", F, P),
    o(N, "no-heading", F, P),
    o(N, "no-ignore", F, P),
    o(N, "no-ignore-dot", F, P),
    o(N, "no-ignore-exclude", F, P),
    o(N, "no-ignore-files", F, P),
    o(N, "no-ignore-global", F, P),
    o(N, "no-ignore-messages", F, P),
    o(N, "no-ignore-parent", F, P),
    o(N, "no-ignore-vcs", F, P),
    o(N, "no-messages", F, P),
    o(N, "no-mmap", F, P),
    o(N, "no-pcre2-unicode", F, P),
    o(N, "no-require-git", F, P),
    o(N, "no-unicode", F, P),
    o(N, "no-binary", F, P),
    o(N, "no-block-buffered", F, P),
    o(N, "no-byte-offset", F, P),
    o(N, "no-column", F, P),
    o(N, "no-context-separator", F, P),
    o(N, "no-crlf", F, P),
    o(N, "no-encoding", F, P),
    o(N, "no-fixed-strings", F, P),
    o(N, "no-follow", F, P),
    o(N, "no-glob-case-insensitive", F, P),
    o(N, "no-hidden", F, P),
    o(N, "no-ignore-file-case-insensitive", F, P),
    o(N, "no-include-zero", F, P),
    o(N, "no-invert-match", F, P),
    o(N, "no-json", F, P),
    o(N, "no-line-buffered", F, P),
    o(N, "no-max-columns-preview", F, P),
    o(N, "no-multiline", F, P),
    o(N, "no-multiline-dotall", F, P),
    o(N, "no-one-file-system", F, P),
    o(N, "no-pcre2", F, P),
    o(N, "no-search-zip", F, P),
    o(N, "no-sort-files", F, P),
    o(N, "no-text", F, P),
    o(N, "no-trim", F, P),
    o('0', "null", F, P),
    o(N, "null-data", F, P),
    o(N, "one-file-system", F, P),
    o('o', "only-matching", F, P),
    o(N, "passthru", F, P),
    o(N, "path-separator", V, P),
    o('P', "pcre2", F, P),
    o(N, "pcre2-version", F, P),
    o(N, "pre", V, X),
    o(N, "pre-glob", V, X),
    o('p', "pretty", F, P),
    o('q', "quiet", F, P),
    o(N, "regex-size-limit", V, P),
    o('e', "regexp", V, P),
    o('r', "replace", V, P),
    o('z', "search-zip", F, X),
    o('S', "smart-case", F, P),
    o(N, "sort", V, P),
    o(N, "sort-files", F, P),
    o(N, "sortr", V, P),
    o(N, "stats", F, P),
    o(N, "stop-on-nonmatch", F, P),
    o('a', "text", F, P),
    o('j', "threads", V, P),
    o(N, "trace", F, P),
    o(N, "trim", F, P),
    o('t', "type", V, P),
    o(N, "type-add", V, P),
    o(N, "type-clear", V, P),
    o(N, "type-list", F, P),
    o('T', "type-not", V, P),
    o('u', "unrestricted", F, P),
    o('V', "version", F, P),
    o(N, "vimgrep", F, P),
    o('H', "with-filename", F, P),
    o('w', "word-regexp", F, P),
    o(N, "auto-hybrid-regex", F, P),
    o(N, "no-auto-hybrid-regex", F, P),
]);

/// `git grep`: `-O` opens the matching files in a pager command,
/// `--textconv` runs filter programs from the configuration; `-f` reads
/// patterns from a file.
pub const GIT_GREP: Spec = git_spec(&[
    o(N, "cached", F, P),
    o(N, "no-index", F, P),
    o(N, "untracked", F, P),
    o(N, "index", F, P),
    o(N, "exclude-standard", F, P),
    o(N, "recurse-submodules", F, P),
    o('a', "text", F, P),
    o(N, "textconv", F, X),
    o('i', "ignore-case", F, P),
    o('I', "", F, P),
    o(N, "max-depth", V, P),
    o('r', "recursive", F, P),
    o('w', "word-regexp", F, P),
    o('v', "invert-match", F, P),
    o('h', "", F, P),
    o('H', "", F, P),
    o(N, "full-name", F, P),
    o('E', "extended-regexp", F, P),
    o('G', "basic-regexp", F, P),
    o('F', "fixed-strings", F, P),
    o('P', "perl-regexp", F, P),
    o('n', "line-number", F, P),
    o(N, "column", F, P),
    o('l', "files-with-matches", F, P),
    o(N, "name-only", F, P),
    o('L', "files-without-match", F, P),
    o('o', "only-matching", F, P),
    o('z', "null", F, P),
    o('c', "count", F, P),
    o(N, "color", O, P),
    o(N, "break", F, P),
    o(N, "heading", F, P),
    o('p', "show-function", F, P),
    o('A', "after-context", V, P),
    o('B', "before-context", V, P),
    o('C', "context", V, P),
    o('W', "function-context", F, P),
    o(N, "threads", V, P),
    o('f', "", V, R),
    o('e', "", V, P),
    o(N, "and", F, P),
    o(N, "or", F, P),
    o(N, "not", F, P),
    o(N, "all-match", F, P),
    o('q', "quiet", F, P),
    o('m', "max-count", V, P),
    o('O', "open-files-in-pager", O, X),
    o(N, "ext-grep", F, P),
]);

/// `git diff`, `git log` and `git show` (their diff and revision options):
/// `--output` writes a file, `--ext-diff` and `--textconv` run programs
/// from the configuration; `-O` reads an order file.
pub const GIT_LOG: Spec = git_spec(&[
    // diff output
    o('p', "patch", F, P),
    o('u', "", F, P),
    o('s', "no-patch", F, P),
    o('U', "unified", V, P),
    o(N, "output", V, X),
    o(N, "output-indicator-new", V, P),
    o(N, "output-indicator-old", V, P),
    o(N, "output-indicator-context", V, P),
    o(N, "raw", F, P),
    o(N, "patch-with-raw", F, P),
    o(N, "indent-heuristic", F, P),
    o(N, "minimal", F, P),
    o(N, "patience", F, P),
    o(N, "histogram", F, P),
    o(N, "anchored", V, P),
    o(N, "diff-algorithm", V, P),
    o(N, "stat", O, P),
    o(N, "stat-width", V, P),
    o(N, "stat-name-width", V, P),
    o(N, "stat-graph-width", V, P),
    o(N, "stat-count", V, P),
    o(N, "compact-summary", F, P),
    o(N, "numstat", F, P),
    o(N, "shortstat", F, P),
    o('X', "dirstat", O, P),
    o(N, "cumulative", F, P),
    o(N, "dirstat-by-file", O, P),
    o(N, "summary", F, P),
    o(N, "patch-with-stat", F, P),
    o('z', "", F, P),
    o(N, "name-only", F, P),
    o(N, "name-status", F, P),
    o(N, "submodule", O, P),
    o(N, "color", O, P),
    o(N, "color-moved", O, P),
    o(N, "color-moved-ws", V, P),
    o(N, "word-diff", O, P),
    o(N, "word-diff-regex", V, P),
    o(N, "color-words", O, P),
    o(N, "no-renames", F, P),
    o(N, "rename-empty", F, P),
    o(N, "check", F, P),
    o(N, "ws-error-highlight", V, P),
    o(N, "full-index", F, P),
    o(N, "binary", F, P),
    o(N, "abbrev", O, P),
    o('B', "break-rewrites", O, P),
    o('M', "find-renames", O, P),
    o('C', "find-copies", O, P),
    o(N, "find-copies-harder", F, P),
    o('D', "irreversible-delete", F, P),
    o('l', "", V, P),
    o(N, "diff-filter", V, P),
    o('S', "", V, P),
    o('G', "", V, P),
    o(N, "find-object", V, P),
    o(N, "pickaxe-all", F, P),
    o(N, "pickaxe-regex", F, P),
    o('O', "", V, R),
    o(N, "skip-to", V, P),
    o(N, "rotate-to", V, P),
    o('R', "", F, P),
    o(N, "relative", O, P),
    o('a', "text", F, P),
    o(N, "ignore-cr-at-eol", F, P),
    o(N, "ignore-space-at-eol", F, P),
    o('b', "ignore-space-change", F, P),
    o('w', "ignore-all-space", F, P),
    o(N, "ignore-blank-lines", F, P),
    o('I', "ignore-matching-lines", V, P),
    o(N, "inter-hunk-context", V, P),
    o('W', "function-context", F, P),
    o(N, "exit-code", F, P),
    o(N, "quiet", F, P),
    o(N, "ext-diff", F, X),
    o(N, "textconv", F, X),
    o(N, "ignore-submodules", O, P),
    o(N, "src-prefix", V, P),
    o(N, "dst-prefix", V, P),
    o(N, "no-prefix", F, P),
    o(N, "default-prefix", F, P),
    o(N, "line-prefix", V, P),
    o(N, "ita-invisible-in-index", F, P),
    o(N, "cached", F, P),
    o(N, "staged", F, P),
    o(N, "merge-base", F, P),
    o(N, "no-index", F, P),
    o('1', "base", F, P),
    o('2', "ours", F, P),
    o('3', "theirs", F, P),
    o('0', "", F, P),
    // commit limiting and formatting (log, show)
    o('n', "max-count", V, P),
    o(N, "skip", V, P),
    o(N, "since", V, P),
    o(N, "after", V, P),
    o(N, "since-as-filter", V, P),
    o(N, "until", V, P),
    o(N, "before", V, P),
    o(N, "author", V, P),
    o(N, "committer", V, P),
    o(N, "grep-reflog", V, P),
    o(N, "grep", V, P),
    o(N, "all-match", F, P),
    o(N, "invert-grep", F, P),
    o('i', "regexp-ignore-case", F, P),
    o(N, "basic-regexp", F, P),
    o('E', "extended-regexp", F, P),
    o('F', "fixed-strings", F, P),
    o('P', "perl-regexp", F, P),
    o(N, "remove-empty", F, P),
    o(N, "merges", F, P),
    o(N, "no-merges", F, P),
    o(N, "min-parents", V, P),
    o(N, "max-parents", V, P),
    o(N, "first-parent", F, P),
    o(N, "exclude-first-parent-only", F, P),
    o(N, "not", F, P),
    o(N, "all", F, P),
    o(N, "branches", O, P),
    o(N, "tags", O, P),
    o(N, "remotes", O, P),
    o(N, "glob", V, P),
    o(N, "exclude", V, P),
    o(N, "reflog", F, P),
    o(N, "alternate-refs", F, P),
    o(N, "single-worktree", F, P),
    o(N, "ignore-missing", F, P),
    o(N, "bisect", F, P),
    o(N, "cherry-mark", F, P),
    o(N, "cherry-pick", F, P),
    o(N, "left-only", F, P),
    o(N, "right-only", F, P),
    o(N, "cherry", F, P),
    o('g', "walk-reflogs", F, P),
    o(N, "merge", F, P),
    o(N, "boundary", F, P),
    o(N, "simplify-by-decoration", F, P),
    o(N, "show-pulls", F, P),
    o(N, "full-history", F, P),
    o(N, "dense", F, P),
    o(N, "sparse", F, P),
    o(N, "simplify-merges", F, P),
    o(N, "ancestry-path", O, P),
    o(N, "date-order", F, P),
    o(N, "author-date-order", F, P),
    o(N, "topo-order", F, P),
    o(N, "reverse", F, P),
    o(N, "no-walk", O, P),
    o(N, "do-walk", F, P),
    o(N, "pretty", O, P),
    o(N, "format", V, P),
    o(N, "abbrev-commit", F, P),
    o(N, "oneline", F, P),
    o(N, "encoding", V, P),
    o(N, "expand-tabs", O, P),
    o(N, "notes", O, P),
    o(N, "show-notes", O, P),
    o(N, "show-notes-by-default", F, P),
    o(N, "standard-notes", F, P),
    o(N, "show-signature", F, P),
    o(N, "relative-date", F, P),
    o(N, "date", V, P),
    o(N, "parents", F, P),
    o(N, "children", F, P),
    o(N, "left-right", F, P),
    o(N, "graph", F, P),
    o(N, "show-linear-break", O, P),
    o('c', "", F, P),
    o(N, "cc", F, P),
    o(N, "dd", F, P),
    o(N, "remerge-diff", F, P),
    o('m', "", F, P),
    o('r', "", F, P),
    o('t', "", F, P),
    o(N, "diff-merges", V, P),
    o(N, "combined-all-paths", F, P),
    o(N, "follow", F, P),
    o(N, "decorate", O, P),
    o(N, "decorate-refs", V, P),
    o(N, "decorate-refs-exclude", V, P),
    o(N, "clear-decorations", F, P),
    o(N, "source", F, P),
    o(N, "mailmap", F, P),
    o(N, "use-mailmap", F, P),
    o(N, "full-diff", F, P),
    o(N, "log-size", F, P),
    o('L', "", V, P),
    o(N, "stdin", F, P),
    o(N, "no-color", F, P),
    o(N, "no-stat", F, P),
    o(N, "no-decorate", F, P),
    o(N, "no-abbrev-commit", F, P),
]);

/// `git blame`: `--contents` and `-S`/`--ignore-revs-file` read files.
pub const GIT_BLAME: Spec = git_spec(&[
    o('b', "", F, P),
    o(N, "root", F, P),
    o(N, "show-stats", F, P),
    o(N, "score-debug", F, P),
    o('f', "show-name", F, P),
    o('n', "show-number", F, P),
    o('p', "porcelain", F, P),
    o(N, "line-porcelain", F, P),
    o('c', "", F, P),
    o('t', "", F, P),
    o('l', "", F, P),
    o('s', "", F, P),
    o('e', "show-email", F, P),
    o('w', "", F, P),
    o(N, "incremental", F, P),
    o(N, "abbrev", O, P),
    o('L', "", V, P),
    o('S', "", V, R),
    o(N, "contents", V, R),
    o(N, "reverse", V, P),
    o(N, "first-parent", F, P),
    o('M', "", O, P),
    o('C', "", O, P),
    o(N, "ignore-rev", V, P),
    o(N, "ignore-revs-file", V, R),
    o(N, "color-lines", F, P),
    o(N, "color-by-age", F, P),
    o(N, "minimal", F, P),
    o(N, "progress", F, P),
    o(N, "encoding", V, P),
    o(N, "since", V, P),
    o(N, "date", V, P),
    o(N, "textconv", F, X),
]);

/// `git ls-files`: `-X`/`--exclude-from` read a file.
pub const GIT_LS_FILES: Spec = git_spec(&[
    o('c', "cached", F, P),
    o('d', "deleted", F, P),
    o('o', "others", F, P),
    o('i', "ignored", F, P),
    o('s', "stage", F, P),
    o('u', "unmerged", F, P),
    o('k', "killed", F, P),
    o('m', "modified", F, P),
    o('f', "", F, P),
    o('t', "", F, P),
    o('v', "", F, P),
    o('z', "", F, P),
    o(N, "directory", F, P),
    o(N, "empty-directory", F, P),
    o(N, "eol", F, P),
    o(N, "full-name", F, P),
    o(N, "recurse-submodules", F, P),
    o(N, "abbrev", O, P),
    o(N, "debug", F, P),
    o(N, "deduplicate", F, P),
    o(N, "error-unmatch", F, P),
    o('x', "exclude", V, P),
    o('X', "exclude-from", V, R),
    o(N, "exclude-per-directory", V, P),
    o(N, "exclude-standard", F, P),
    o(N, "with-tree", V, P),
    o(N, "format", V, P),
    o(N, "resolve-undo", F, P),
    o(N, "sparse", F, P),
]);

/// `git status`: `-v` shows the staged diff (content from the index).
pub const GIT_STATUS: Spec = git_spec(&[
    o('s', "short", F, P),
    o('b', "branch", F, P),
    o(N, "show-stash", F, P),
    o(N, "porcelain", O, P),
    o(N, "long", F, P),
    o('v', "verbose", F, P),
    o('u', "untracked-files", O, P),
    o(N, "ignore-submodules", O, P),
    o(N, "ignored", O, P),
    o('z', "", F, P),
    o(N, "column", O, P),
    o(N, "ahead-behind", F, P),
    o(N, "renames", F, P),
    o(N, "find-renames", O, P),
]);

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    /// `(long or short name, value)` of each option found, `!` before a
    /// negated one, then `|` and the operands; `ERR word` when it fails.
    fn shown(spec: &Spec, line: &str) -> String {
        match parse(spec, &words(line)) {
            Ok(p) => {
                let mut parts: Vec<String> = p
                    .found
                    .iter()
                    .map(|f| {
                        let name = if f.opt.long.is_empty() {
                            f.opt.short.to_string()
                        } else {
                            f.opt.long.to_string()
                        };
                        let neg = if f.negated { "!" } else { "" };
                        match &f.value {
                            Some(v) => format!("{neg}{name}={v}"),
                            None => format!("{neg}{name}"),
                        }
                    })
                    .collect();
                parts.push("|".into());
                parts.extend(p.operands);
                parts.join(" ")
            }
            Err(Unparsed(w)) => format!("ERR {w}"),
        }
    }

    #[test]
    fn parses_like_getopt_long() {
        let table: &[(&Spec, &str, &str)] = &[
            (&SORT, "--o=x in", "output=x | in"),
            (&SORT, "--outp x in", "output=x | in"),
            (&SORT, "-uo x", "unique output=x |"),
            (&SORT, "-uox in", "unique output=x | in"),
            (&SORT, "in -r", "reverse | in"),
            (&SORT, "-- -o x", "| -o x"),
            (&SORT, "- --rev", "reverse | -"),
            (&SORT, "--s x", "ERR --s"),
            (&SORT, "--c", "ERR --c"),
            (&SORT, "--check=quiet", "check=quiet |"),
            (&SORT, "--unique=1", "ERR --unique=1"),
            (&SORT, "-o", "ERR -o"),
            (&SORT, "-q", "ERR -q"),
            (&SORT, "--nope", "ERR --nope"),
            (
                &GIT_GREP,
                "-iOvim x",
                "ignore-case open-files-in-pager=vim | x",
            ),
            (&GIT_GREP, "-O x", "open-files-in-pager | x"),
            (&GIT_GREP, "--op=sh x", "open-files-in-pager=sh | x"),
            (&GIT_GREP, "-e -O x", "e=-O | x"),
            (&GIT_GREP, "--no-textconv x", "!textconv | x"),
            (&GIT_GREP, "--no-text x", "!text | x"),
            (&GIT_GREP, "--no-textc x", "!textconv | x"),
            (&GIT_LOG, "-5 --oneline", "oneline |"),
            (&GIT_LOG, "--no-ext-diff -p", "!ext-diff patch |"),
            (&GIT_LOG, "--ext", "ERR --ext"),
            (&GIT_LOG, "--ext-d", "ext-diff |"),
            (&GIT_LOG, "--text", "text |"),
            (&GIT_LOG, "HEAD -- a b", "| HEAD a b"),
            (&JQ, "--rawfile s f -n .", "rawfile=f null-input | ."),
            (&JQ, "--rawfile s", "ERR --rawfile"),
        ];
        let wrong: Vec<String> = table
            .iter()
            .filter(|(spec, line, want)| shown(spec, line) != *want)
            .map(|(spec, line, want)| {
                format!("{line:?}: expected {want:?}, got {:?}", shown(spec, line))
            })
            .collect();
        assert!(wrong.is_empty(), "wrong parses:\n{}", wrong.join("\n"));
    }

    #[test]
    fn every_table_names_each_option_once() {
        for spec in [
            &SORT,
            &UNIQ,
            &DATE,
            &FILE,
            &WC,
            &DU,
            &SUMS,
            &GREP,
            &DIFF,
            &HEXDUMP,
            &STRINGS,
            &TREE,
            &JQ,
            &RG,
            &GIT_GREP,
            &GIT_LOG,
            &GIT_BLAME,
            &GIT_LS_FILES,
            &GIT_STATUS,
        ] {
            for (i, a) in spec.opts.iter().enumerate() {
                for b in &spec.opts[i + 1..] {
                    assert!(
                        a.short == N || a.short != b.short,
                        "-{} twice ({} {})",
                        a.short,
                        a.long,
                        b.long
                    );
                    assert!(a.long.is_empty() || a.long != b.long, "--{} twice", a.long);
                }
            }
        }
    }
}
