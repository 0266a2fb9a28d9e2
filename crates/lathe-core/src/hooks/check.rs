//! Whether a command hook can run at all, for `:checkhealth lathe`: the
//! program its command line starts with exists and is executable. Commands
//! run with `bash -c` in the project root with `$CLAUDE_PROJECT_DIR` set to
//! it (see `command`), so the check resolves the first word the same way:
//! `~/` is the home folder, `$CLAUDE_PROJECT_DIR` the root, a word with a
//! `/` is a path (relative to the root), any other is looked up in `$PATH`;
//! shell builtins and keywords always run. A first word that needs more
//! of the shell (other variables, command substitution) is not checked.

use std::path::{Path, PathBuf};

use super::{HookConfig, HookEvent};

/// Problem: the program is not found. `{program}`.
pub const NOT_FOUND: &str = "{program} was not found (not in $PATH, or no such file)";
/// Problem: the file exists but is not executable. `{program}`.
pub const NOT_EXECUTABLE: &str = "{program} is not executable (chmod +x it)";

/// Builtins and keywords of bash that a command may start with.
const SHELL_WORDS: &[&str] = &[
    "!", "[", "[[", "{", "(", ".", ":", "alias", "case", "cd", "command", "echo", "eval", "exec",
    "exit", "export", "false", "for", "if", "printf", "read", "set", "source", "test", "true",
    "type", "until", "while",
];

/// One command hook as checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandCheck {
    /// `PreToolUse` or `PostToolUse`.
    pub event: &'static str,
    /// The command line.
    pub command: String,
    /// Why it cannot run ([`NOT_FOUND`], [`NOT_EXECUTABLE`] filled), or
    /// `None` when it can (or could not be checked).
    pub problem: Option<String>,
}

/// Checks every command hook of `config` (each command once per event).
pub fn check_commands(config: &HookConfig, root: &Path, home: Option<&Path>) -> Vec<CommandCheck> {
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    let path: Vec<PathBuf> = std::env::split_paths(&path_var).collect();
    let mut out: Vec<CommandCheck> = Vec::new();
    for event in [HookEvent::PreToolUse, HookEvent::PostToolUse] {
        for m in config.matchers(event) {
            for h in &m.hooks {
                if out
                    .iter()
                    .any(|c| c.event == event.as_str() && c.command == h.command)
                {
                    continue;
                }
                out.push(CommandCheck {
                    event: event.as_str(),
                    command: h.command.clone(),
                    problem: problem(&h.command, root, home, &path),
                });
            }
        }
    }
    out
}

/// Why `command` cannot start, if it cannot. `path` is `$PATH` split.
pub fn problem(
    command: &str,
    root: &Path,
    home: Option<&Path>,
    path: &[PathBuf],
) -> Option<String> {
    let word = first_program(command)?;
    let mut w = word
        .replace("${CLAUDE_PROJECT_DIR}", &root.to_string_lossy())
        .replace("$CLAUDE_PROJECT_DIR", &root.to_string_lossy());
    if let (Some(rest), Some(h)) = (w.strip_prefix("~/"), home) {
        w = h.join(rest).to_string_lossy().into_owned();
    }
    if w.contains(['$', '`', '*', '?']) || SHELL_WORDS.contains(&w.as_str()) {
        return None;
    }
    let fill = |t: &str| crate::text::fill(t, &[("program", &word)]);
    if w.contains('/') {
        let p = root.join(&w);
        return match std::fs::metadata(&p) {
            Ok(m) if m.is_file() && is_executable(&m) => None,
            Ok(m) if m.is_file() => Some(fill(NOT_EXECUTABLE)),
            _ => Some(fill(NOT_FOUND)),
        };
    }
    let found = path
        .iter()
        .any(|d| std::fs::metadata(d.join(&w)).is_ok_and(|m| m.is_file() && is_executable(&m)));
    (!found).then(|| fill(NOT_FOUND))
}

/// The program word of a command line: the first word after any
/// `NAME=value` assignments, with its quotes taken off. `None` for an
/// empty command.
fn first_program(command: &str) -> Option<String> {
    let mut words = command.split_whitespace().map(unquote);
    loop {
        let w = words.next()?;
        let is_assignment = w.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty() && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
        });
        if !is_assignment {
            return Some(w);
        }
    }
}

fn unquote(w: &str) -> String {
    w.chars().filter(|c| *c != '"' && *c != '\'').collect()
}

#[cfg(unix)]
fn is_executable(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_: &std::fs::Metadata) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn commands_are_checked_the_way_bash_would_start_them() {
        let root = std::env::temp_dir().join(format!("lathe-hook-check-{}", std::process::id()));
        std::fs::create_dir_all(root.join(".claude/hooks")).unwrap();
        let script = root.join(".claude/hooks/ok.sh");
        std::fs::write(&script, "#!/bin/sh\n").unwrap();
        let plain = root.join("plain.sh");
        std::fs::write(&plain, "#!/bin/sh\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        let path = vec![PathBuf::from("/bin"), PathBuf::from("/usr/bin")];
        let p = |c: &str| problem(c, &root, None, &path);
        assert_eq!(p("\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/ok.sh --x"), None);
        assert_eq!(p("FOO=1 sh -c 'exit 0'"), None);
        assert_eq!(p("echo hi"), None);
        assert_eq!(p("$MY_TOOL run"), None, "not checked");
        assert_eq!(
            p("./no-such-hook"),
            Some("./no-such-hook was not found (not in $PATH, or no such file)".into())
        );
        assert_eq!(
            p("lathe-no-such-program-xyz"),
            Some("lathe-no-such-program-xyz was not found (not in $PATH, or no such file)".into())
        );
        #[cfg(unix)]
        assert_eq!(
            p("./plain.sh"),
            Some("./plain.sh is not executable (chmod +x it)".into())
        );
        let config = HookConfig::from_json(&json!({
            "PreToolUse": [ { "matcher": "Bash", "hooks": [
                { "type": "command", "command": "./no-such-hook" },
                { "type": "command", "command": "./no-such-hook" } ] } ],
            "PostToolUse": [ { "hooks": [ { "type": "command", "command": "echo ok" } ] } ]
        }))
        .unwrap();
        let checks = check_commands(&config, &root, None);
        assert_eq!(checks.len(), 2);
        assert_eq!(checks[0].event, "PreToolUse");
        assert!(checks[0].problem.is_some());
        assert_eq!(checks[1].problem, None);
    }
}
