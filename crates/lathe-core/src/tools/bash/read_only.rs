//! The conservative read-only classifier behind `Bash`'s `is_read_only`.
//!
//! A command counts as read-only only when it is made wholly of simple
//! commands from a short allow-list (`ls`, `cat`, `rg`, `git status`, …),
//! joined by `|`, `&&`, `||`, `;` or newlines, with no redirection, no
//! command or process substitution, no parameter or brace expansion, no
//! subshell or group, no background `&`, no comment, no assignment prefix
//! (`PAGER=x git log`) and no option that makes an allowed program write or
//! run something (`find -delete`, `sort -o`, `rg --pre`, `git diff
//! --output`, `test -v 'a[$(cmd)]'`). Pathname globs (`src/*.rs`) are
//! allowed. The line is split by [`crate::permissions::shell::split`];
//! anything it cannot split makes the answer `false`: a wrong `false` only
//! costs a permission prompt, a wrong `true` runs a command unasked.

use crate::permissions::options::{self, Spec};
use crate::permissions::shell::{self, SimpleCommand, Split};

/// One word of a simple command after quote removal.
type Word = String;

/// `true` when `command` is certainly free of side effects (see the module
/// doc for the rules). `false` whenever in doubt.
pub fn is_read_only_command(command: &str) -> bool {
    match split_commands(command) {
        Some(commands) => !commands.is_empty() && commands.iter().all(|c| simple_is_read_only(c)),
        None => false,
    }
}

/// The words of each simple command of `command`, or `None` when the line
/// cannot be split or any command is more than plain words: a redirection
/// (`|&` included), an expansion other than a pathname glob, an assignment
/// prefix, `&`, or a place inside `( … )`, `{ …; }`, a substitution or a
/// `bash -c` script. Lines with a comment are refused too.
fn split_commands(command: &str) -> Option<Vec<Vec<Word>>> {
    if has_comment(command) {
        return None;
    }
    let Split::Commands(commands) = shell::split(command) else {
        return None;
    };
    commands.into_iter().map(plain_words).collect()
}

/// The words of `c` when it is plain (see [`split_commands`]).
fn plain_words(c: SimpleCommand) -> Option<Vec<Word>> {
    let plain = !c.redirects
        && !c.substitutes
        && !c.background
        && !c.nested
        && c.assignments.is_empty()
        && !c.words.is_empty();
    plain.then_some(c.words)
}

/// `true` when a `#` starts a word anywhere, quoted or not (at the start or
/// after a blank or an operator): a comment, or close enough to refuse.
fn has_comment(command: &str) -> bool {
    let mut prev: Option<char> = None;
    for c in command.chars() {
        let word_start = prev.is_none_or(|p| p.is_whitespace() || ";&|()<>".contains(p));
        if c == '#' && word_start {
            return true;
        }
        prev = Some(c);
    }
    false
}

/// One simple command: its program must be allowed and its arguments free
/// of write/exec options, as the program itself parses them
/// ([`options::parse`]: `sort --outp=x`, `git grep -iOvim`, `file
/// --compile` are caught; an option the table does not know is refused).
fn simple_is_read_only(words: &[Word]) -> bool {
    let Some((program, args)) = words.split_first() else {
        return false;
    };
    // `NAME=value cmd` changes the program's environment (PAGER, GIT_*,
    // LD_PRELOAD …); a bare path (`./ls`, `/tmp/cat`) may be anything.
    if program.contains('=') || program.contains('/') {
        return false;
    }
    let parsed = |spec: &Spec| options::parse(spec, args).ok().filter(|p| !p.refused());
    let plain = |spec: &Spec| parsed(spec).is_some();
    match program.as_str() {
        // No option of these writes, runs a program or reads a file other
        // than their operands (checked by the read rules).
        "ls" | "cat" | "head" | "tail" | "pwd" | "echo" | "stat" | "df" | "basename"
        | "dirname" | "realpath" | "readlink" | "cut" | "tr" | "nl" | "cmp" | "comm" | "column"
        | "which" | "type" | "true" | "false" | "uname" | "whoami" | "id" | "od" | "rev"
        | "tac" | "seq" | "sleep" => true,
        "wc" => plain(&options::WC),
        "du" => plain(&options::DU),
        "grep" | "egrep" | "fgrep" => plain(&options::GREP),
        "diff" => plain(&options::DIFF),
        "md5sum" | "sha1sum" | "sha224sum" | "sha256sum" | "sha384sum" | "sha512sum" => {
            plain(&options::SUMS)
        }
        "hexdump" => plain(&options::HEXDUMP),
        // binutils read more options from an `@file` argument.
        "strings" => !args.iter().any(|a| a.starts_with('@')) && plain(&options::STRINGS),
        "jq" => parsed(&options::JQ).is_some_and(|p| {
            p.operands
                .first()
                .is_none_or(|prog| !options::jq_loads_modules(prog))
        }),
        "file" => plain(&options::FILE),
        "rg" => plain(&options::RG),
        "sort" => plain(&options::SORT),
        "tree" => plain(&options::TREE),
        // `uniq IN OUT` writes OUT: at most one operand.
        "uniq" => parsed(&options::UNIQ).is_some_and(|p| p.operands.len() <= 1),
        // An operand other than `+FORMAT` (`date 0101120020`) sets the clock.
        "date" => {
            parsed(&options::DATE).is_some_and(|p| p.operands.iter().all(|a| a.starts_with('+')))
        }
        // `test -v 'a[$(cmd)]'` and `printf -v 'a[$(cmd)]' x` run `cmd`
        // (bash evaluates the array subscript); `printf -v` also assigns.
        // bash's printf takes the name attached too (`-v'a[$(cmd)]'`).
        "test" | "[" => !args.iter().any(|a| a == "-v" || a == "-R"),
        "printf" => !args.iter().any(|a| a.starts_with("-v")),
        // `cd -` goes wherever `$OLDPWD` points, which no path check sees.
        "cd" => !args.iter().any(|a| a == "-"),
        "find" => find_is_read_only(args),
        "git" => git_is_read_only(args),
        _ => false,
    }
}

/// `find` without actions that delete, write or run something, or that
/// read a list of starting points from a file.
fn find_is_read_only(args: &[Word]) -> bool {
    const WRITING: &[&str] = &[
        "-exec",
        "-execdir",
        "-ok",
        "-okdir",
        "-delete",
        "-fprint",
        "-fprint0",
        "-fprintf",
        "-fls",
        "-files0-from",
    ];
    !args.iter().any(|a| WRITING.contains(&a.as_str()))
}

/// `git <subcommand>` for subcommands that only read, with their options
/// parsed as git does ([`options::GIT_LOG`], …: `--output`, `--ext-diff`,
/// `--textconv`, `git grep -O` and their abbreviations are refused).
/// Global options before the subcommand (`-c core.pager=…`, `-C dir`,
/// `--exec-path`, `--git-dir`) are refused outright: `-c` can point git at
/// any program.
fn git_is_read_only(args: &[Word]) -> bool {
    let Some((sub, rest)) = args.split_first() else {
        return false;
    };
    let plain = |spec: &Spec| options::parse(spec, rest).is_ok_and(|p| !p.refused());
    match sub.as_str() {
        "rev-parse" => true,
        "status" => plain(&options::GIT_STATUS),
        "ls-files" => plain(&options::GIT_LS_FILES),
        "blame" => plain(&options::GIT_BLAME),
        "diff" | "log" | "show" => plain(&options::GIT_LOG),
        "grep" => plain(&options::GIT_GREP),
        // With arguments, `branch` creates, renames or deletes; only listing
        // flags are allowed.
        "branch" => rest.iter().all(|a| {
            matches!(
                a.as_str(),
                "-a" | "-r" | "-v" | "-vv" | "--all" | "--remotes" | "--list" | "--show-current"
            )
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifier_table() {
        let table: &[(&str, bool)] = &[
            // plain read-only programs and lists of them
            ("ls", true),
            ("ls -la src", true),
            ("cat README.md | head -n 20", true),
            ("rg -n 'fn main' src && wc -l src/*.rs", true),
            ("git status; git diff --stat", true),
            ("git log --oneline -5 || echo none", true),
            ("git show HEAD~1 -- src/lib.rs", true),
            ("git branch", true),
            ("git branch -a", true),
            ("find . -name '*.rs' -type f", true),
            ("grep -rn 'a|b' .", true),
            ("grep \"x > y\" notes.txt", true),
            ("echo 'cost: $5 (approx) > 3'", true),
            ("cd src && ls", true),
            ("pwd\nls", true),
            ("ls;", true),
            ("sort names.txt | uniq -c", true),
            ("rg foo\\ bar", true),
            // redirection and substitution
            ("ls > out.txt", false),
            ("cat < in.txt", false),
            ("echo hi >> log", false),
            ("ls 2>/dev/null", false),
            ("echo $(rm -rf x)", false),
            ("echo `rm x`", false),
            ("diff <(ls a) <(ls b)", false),
            ("echo \"$(touch x)\"", false),
            ("echo \"$HOME\"", false),
            ("echo $HOME", false),
            ("echo ${x:=1}", false),
            // assignment prefixes, paths, unknown programs
            ("PAGER=evil git log", false),
            ("FOO=1 ls", false),
            ("./ls", false),
            ("/bin/cat x", false),
            ("rm -rf target", false),
            ("ls && rm x", false),
            ("cat x | tee y", false),
            ("sed -i s/a/b/ f", false),
            ("awk 'BEGIN{system(\"rm x\")}'", false),
            ("xargs rm", false),
            ("env ls", false),
            ("command rm x", false),
            // write/exec options of allowed programs
            ("find . -delete", false),
            ("find . -exec rm {} ;", false),
            ("find . -name x -execdir touch y \\;", false),
            ("find . -fprint out", false),
            ("file src/main.rs", true),
            ("file -C -m magic", false),
            ("sort -o out.txt in.txt", false),
            ("sort -uo out in", false),
            ("sort --output=out in", false),
            ("rg --pre ./script x", false),
            ("rg --pre=sh x", false),
            ("tree -o out.txt", false),
            ("uniq in.txt out.txt", false),
            ("date -s 2020-01-01", false),
            ("git diff --output=patch.txt", false),
            ("git -c core.pager=sh log", false),
            ("git -C /tmp status", false),
            ("git commit -m x", false),
            ("git push", false),
            ("git checkout main", false),
            ("git branch -D main", false),
            ("git branch new-feature", false),
            ("git grep -O vim foo", false),
            ("git", false),
            // shell syntax we do not classify
            ("ls &", false),
            ("sleep 10 & ls", false),
            ("(ls)", false),
            ("{ ls; }", false),
            ("! ls", false),
            ("ls # comment", false),
            ("if true; then ls; fi", false),
            ("for f in *; do cat $f; done", false),
            ("ls |& cat", false),
            ("| ls", false),
            ("ls &&", false),
            ("ls ;; pwd", false),
            ("echo 'unterminated", false),
            ("echo \"unterminated", false),
            ("ls \\", false),
            ("", false),
            ("   ", false),
        ];
        let wrong: Vec<String> = table
            .iter()
            .filter(|(cmd, want)| is_read_only_command(cmd) != *want)
            .map(|(cmd, want)| format!("{cmd:?}: expected {want}"))
            .collect();
        assert!(wrong.is_empty(), "misclassified:\n{}", wrong.join("\n"));
    }

    #[test]
    fn options_that_run_code_or_hide_paths_are_refused() {
        let table: &[(&str, bool)] = &[
            ("test -f x", true),
            ("[ -d src ]", true),
            ("test -v 'a[$(touch x)]'", false),
            ("[ -v 'a[$(touch x)]' ]", false),
            ("printf '%s\\n' a", true),
            ("printf -v 'a[$(touch x)]' x", false),
            ("printf -v'a[$(touch x)]' x", false),
            ("printf -va x", false),
            ("rg --hostname-bin=./x foo", false),
            ("cd - && cat x", false),
            ("ls src/*.rs", true),
            ("echo {a,b}", false),
            ("bash -c 'ls'", false),
            ("echo $'a\\tb'", true),
        ];
        let wrong: Vec<String> = table
            .iter()
            .filter(|(cmd, want)| is_read_only_command(cmd) != *want)
            .map(|(cmd, want)| format!("{cmd:?}: expected {want}"))
            .collect();
        assert!(wrong.is_empty(), "misclassified:\n{}", wrong.join("\n"));
    }

    #[test]
    fn words_lose_their_quotes() {
        assert_eq!(
            split_commands("grep -n 'a b' \"c d\" e\\ f | wc -l"),
            Some(vec![
                vec![
                    "grep".into(),
                    "-n".into(),
                    "a b".into(),
                    "c d".into(),
                    "e f".into()
                ],
                vec!["wc".into(), "-l".into()],
            ])
        );
    }
}

#[cfg(test)]
mod option_spelling_tests {
    use super::*;

    /// Kind 1 of the red-team report: option spellings the programs accept
    /// (getopt_long and git prefixes, clusters, long twins, positional
    /// outputs). Every `false` row ran unasked before the option model.
    pub(super) const SPELLINGS: &[(&str, bool)] = &[
        ("sort --o=OUT file", false),
        ("sort --ou=OUT file", false),
        ("sort --outp=OUT file", false),
        ("sort --o OUT file", false),
        ("sort -mo x in", false),
        ("sort -uo", false),
        ("sort --compress=gzip in", false),
        ("sort --comp=sh in", false),
        ("sort -T /tmp in", false),
        ("sort --temporary-directory=/tmp in", false),
        ("sort --files0-from=list", false),
        ("git grep --op='vim' x", false),
        ("git grep --open=vim x", false),
        ("git grep --open-files=x foo", false),
        ("git grep -iO'sh -c id' x", false),
        ("git grep -nO x", false),
        ("file --compile -m magic", false),
        ("file --comp", false),
        ("file -zC -m x", false),
        ("uniq - OUT", false),
        ("uniq in out", false),
        ("uniq -c in out", false),
        ("uniq -f 1 in out", false),
        ("rg --pr=sh x", false),
        ("rg --host=./x foo", false),
        ("rg --hostname=./x foo", false),
        ("rg -z foo", false),
        ("tree --output=x", false),
        ("tree -ao x", false),
        ("tree -R", false),
        ("date --se=2020-01-01", false),
        ("date -us 2020-01-01", false),
        ("date -f dates.txt", true),
        ("date 0101120020", false),
        ("date -u 0101120020", false),
        ("git diff --out=x", false),
        ("git log --outp=x", false),
        ("git show --output x", false),
        ("git log --ext-diff", false),
        ("git diff --ext", false),
        ("git log -p --textconv", false),
        ("git --no-pager -c core.pager=sh log", false),
        ("git --exec-path=/tmp log", false),
        ("git --git-dir=/tmp/x log", false),
        ("git --work-tree=/tmp status", false),
        ("wc --files0-from=list", false),
        ("wc --files0=list", false),
        ("du --files0-from=list", false),
        ("md5sum -c sums", false),
        ("sha256sum --check sums", false),
        ("sha256sum --ch sums", false),
        ("sha1sum -bc sums", false),
        ("find . -fls out", false),
        ("find . -files0-from list", false),
        ("find . -fprintf out %p", false),
        ("jq -n 'import \"secret/s\" as s; s'", false),
        ("jq -n 'include \"x\"; 1'", false),
        ("jq --rawfile s secret/s.txt -n '$s'", true),
        ("strings @secret/opts", false),
        ("hexdump -f fmt x", true),
        ("git status -v", true),
        // own attacks
        ("diff -l a b", false),
        ("diff --pag a b", false),
        ("diff -ql a b", false),
        ("file -p x", false),
        ("file --pres x", false),
        ("file -z x.gz", false),
        ("tree --fromfile list", false),
        ("tree --out x", false),
        ("jq -f prog.jq data.json", false),
        ("jq --from-f prog.jq", false),
        ("jq -n '\"x\" | modulemeta'", false),
        ("git grep --text=1 x", false),
        ("git grep --no-index -O x", false),
        ("git log --pretty=x --ext-d", false),
        ("git show --text --textc HEAD", false),
        ("git blame --textconv f", false),
        ("git diff --o x", false),
        ("git -P log", false),
        ("rg --pre-glob '*' --pre sh x", false),
        ("rg --search-z x", false),
        ("sort -S 1M -T. x", false),
        ("sort --ch=quiet -o x y", false),
        ("wc --files0 x", false),
        ("uniq -- a b", false),
        ("date -- 0101", false),
        // controls: still read-only
        ("sort -u names.txt", true),
        ("sort -k 2 -t , data.csv", true),
        ("sort --reverse names.txt", true),
        ("sort --rev names.txt", true),
        ("uniq -c in", true),
        ("uniq", true),
        ("git grep -n foo", true),
        ("git grep -e -O foo", true),
        ("git log --oneline -5", true),
        ("git log --no-ext-diff -p", true),
        ("git diff --stat HEAD~1", true),
        ("file -b src/main.rs", true),
        ("rg -n --hidden foo src", true),
        ("date +%s", true),
        ("date -u -d @0", true),
        ("tree -L 2 src", true),
        ("df --output=source,size", true),
        ("jq -r '.name' package.json", true),
        ("wc -l src/*.rs", true),
        ("sha256sum Cargo.lock", true),
        ("tail -f log.txt", true),
        ("head -5 README.md", true),
    ];

    #[test]
    fn option_spellings_are_parsed_like_the_programs_do() {
        let wrong: Vec<String> = SPELLINGS
            .iter()
            .filter(|(cmd, want)| is_read_only_command(cmd) != *want)
            .map(|(cmd, want)| format!("{cmd:?}: expected {want}"))
            .collect();
        assert!(wrong.is_empty(), "misclassified:\n{}", wrong.join("\n"));
    }
}
