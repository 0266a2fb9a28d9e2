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
/// of write/exec options.
fn simple_is_read_only(words: &[Word]) -> bool {
    let Some((program, args)) = words.split_first() else {
        return false;
    };
    // `NAME=value cmd` changes the program's environment (PAGER, GIT_*,
    // LD_PRELOAD …); a bare path (`./ls`, `/tmp/cat`) may be anything.
    if program.contains('=') || program.contains('/') {
        return false;
    }
    match program.as_str() {
        "ls" | "cat" | "head" | "tail" | "wc" | "pwd" | "echo" | "grep" | "egrep" | "fgrep"
        | "stat" | "du" | "df" | "basename" | "dirname" | "realpath" | "readlink" | "cut"
        | "tr" | "nl" | "diff" | "cmp" | "comm" | "column" | "jq" | "which" | "type" | "true"
        | "false" | "uname" | "whoami" | "id" | "md5sum" | "sha1sum" | "sha256sum" | "od"
        | "hexdump" | "strings" | "rev" | "tac" | "seq" | "sleep" => true,
        // `test -v 'a[$(cmd)]'` and `printf -v 'a[$(cmd)]' x` run `cmd`
        // (bash evaluates the array subscript); `printf -v` also assigns.
        "test" | "[" => !args.iter().any(|a| a == "-v" || a == "-R"),
        "printf" => !args.iter().any(|a| a == "-v"),
        // `cd -` goes wherever `$OLDPWD` points, which no path check sees.
        "cd" => !args.iter().any(|a| a == "-"),
        // `file -C` compiles a magic file and writes it.
        "file" => !has_short_flag(args, 'C'),
        // `--hostname-bin` names a program for rg to run.
        "rg" => !args
            .iter()
            .any(|a| a == "--pre" || a.starts_with("--pre=") || a.starts_with("--hostname-bin")),
        "find" => find_is_read_only(args),
        "sort" => {
            !has_short_flag(args, 'o')
                && !args
                    .iter()
                    .any(|a| a.starts_with("--output") || a.starts_with("--compress-program"))
        }
        "tree" => !has_short_flag(args, 'o') && !args.iter().any(|a| a.starts_with("--o")),
        // `uniq IN OUT` writes OUT: allow at most one operand.
        "uniq" => args.iter().filter(|a| !a.starts_with('-')).count() <= 1,
        "date" => !has_short_flag(args, 's') && !args.iter().any(|a| a.starts_with("--set")),
        "git" => git_is_read_only(args),
        _ => false,
    }
}

/// `true` when a single-dash option cluster in `args` (`-uo`) holds `flag`.
fn has_short_flag(args: &[Word], flag: char) -> bool {
    args.iter()
        .any(|a| a.starts_with('-') && !a.starts_with("--") && a[1..].contains(flag))
}

/// `find` without actions that delete, write or run something.
fn find_is_read_only(args: &[Word]) -> bool {
    const WRITING: &[&str] = &[
        "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
    ];
    !args.iter().any(|a| WRITING.contains(&a.as_str()))
}

/// `git <subcommand>` for subcommands that only read. Global options before
/// the subcommand (`-c core.pager=…`, `-C dir`, `--exec-path`) are refused
/// outright: `-c` can point git at any program.
fn git_is_read_only(args: &[Word]) -> bool {
    let Some((sub, rest)) = args.split_first() else {
        return false;
    };
    let no_output_file = || !rest.iter().any(|a| a.starts_with("--output"));
    match sub.as_str() {
        "status" | "rev-parse" | "ls-files" | "blame" => true,
        "diff" | "log" | "show" => no_output_file(),
        // `git grep -O` opens a pager command.
        "grep" => !rest
            .iter()
            .any(|a| a.starts_with("--open-files-in-pager") || a.starts_with("-O")),
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
