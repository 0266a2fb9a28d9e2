//! The rules the float offers for "allow for this session" (`a`) and "allow
//! and save" (`A`): as narrow as still useful, and shown to the user before
//! they press the key. Never a whole `Bash`, and never a program-wide rule
//! for a program that writes files (`tee:*` would let tee overwrite any
//! file without asking).

use std::path::Path;

use super::shell::{self, Split};
use super::RuleFamily;

/// The rules that would allow a call like this one again, in the rule
/// syntax (`Edit(src/**)`, `Read(//etc/**)`, `Bash(npm test:*)`), or none
/// when nothing narrower than the whole tool fits (a Bash line that cannot
/// be split):
///
/// - Edit and Write: `Edit(<dir>/**)` for the file's folder relative to
///   `root` (`Edit(/name)` for a file at the root); outside the root, the
///   folder as `//abs/**`. An Edit rule covers Write too.
/// - Read, Grep, Glob: `Read(...)` the same way (a Read rule covers Grep
///   and Glob); a directory target stands for itself.
/// - Bash: one rule per simple command (`shell::suggest_rule`: the exact
///   command for programs that write files or run code).
/// - Other tools: the tool name.
///
/// Which of these follows from the family of `tool` (name and family).
pub fn suggest_rules(
    (tool, family): (&str, RuleFamily),
    path: Option<&Path>,
    path_is_dir: bool,
    command: Option<&str>,
    root: &Path,
) -> Vec<String> {
    match (family, family.covered_by()) {
        (RuleFamily::Command, _) => match command.map(shell::split) {
            Some(Split::Commands(parts)) if !parts.is_empty() => {
                let mut rules: Vec<String> = Vec::new();
                for p in &parts {
                    let r = format!("{tool}({})", shell::suggest_rule(p));
                    if !rules.contains(&r) {
                        rules.push(r);
                    }
                }
                rules
            }
            _ => Vec::new(),
        },
        (RuleFamily::EditPath, Some(by)) => path
            .map(|p| vec![format!("{by}({})", folder_pattern(p, false, root))])
            .unwrap_or_default(),
        (RuleFamily::ReadPath, Some(by)) => path
            .map(|p| vec![format!("{by}({})", folder_pattern(p, path_is_dir, root))])
            .unwrap_or_default(),
        _ => vec![tool.to_string()],
    }
}

/// The gitignore-style pattern for `path`'s folder (or `path` itself when it
/// is a directory): root-relative inside `root`, `//abs` outside.
fn folder_pattern(path: &Path, is_dir: bool, root: &Path) -> String {
    let folder = if is_dir { Some(path) } else { path.parent() };
    match folder.and_then(|f| f.strip_prefix(root).ok()) {
        Some(rel) if rel.as_os_str().is_empty() => match (is_dir, path.file_name()) {
            (false, Some(name)) => format!("/{}", name.to_string_lossy()),
            _ => "**".to_string(),
        },
        Some(rel) => format!("{}/**", rel.display()),
        None => {
            let abs = folder.unwrap_or(path).display().to_string();
            format!("/{}/**", abs.trim_end_matches('/'))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = "/w/proj";

    fn named(tool: &str) -> (&str, RuleFamily) {
        (tool, crate::permissions::rule_family(tool))
    }

    fn file(tool: &str, path: &str) -> Vec<String> {
        suggest_rules(
            named(tool),
            Some(Path::new(path)),
            false,
            None,
            Path::new(ROOT),
        )
    }

    #[test]
    fn file_tools_suggest_the_folder() {
        assert_eq!(file("Edit", "/w/proj/src/greeting.py"), ["Edit(src/**)"]);
        assert_eq!(file("Write", "/w/proj/src/a/b.rs"), ["Edit(src/a/**)"]);
        assert_eq!(file("Edit", "/w/proj/greeting.py"), ["Edit(/greeting.py)"]);
        assert_eq!(file("Read", "/etc/ssl/certs.pem"), ["Read(//etc/ssl/**)"]);
        assert_eq!(
            suggest_rules(
                named("Grep"),
                Some(Path::new("/opt/data")),
                true,
                None,
                Path::new(ROOT)
            ),
            ["Read(//opt/data/**)"]
        );
        assert_eq!(
            suggest_rules(
                named("Glob"),
                Some(Path::new(ROOT)),
                true,
                None,
                Path::new(ROOT)
            ),
            ["Read(**)"]
        );
    }

    #[test]
    fn bash_suggests_one_rule_per_part_and_never_the_whole_tool() {
        let bash = |c: &str| suggest_rules(named("Bash"), None, false, Some(c), Path::new(ROOT));
        assert_eq!(bash("npm test --watch"), ["Bash(npm test:*)"]);
        assert_eq!(
            bash("cargo build && cargo test"),
            ["Bash(cargo build:*)", "Bash(cargo test:*)"]
        );
        assert!(bash("cat <<EOF\nx\nEOF").is_empty());
        assert!(bash("").is_empty());
    }

    #[test]
    fn writing_programs_get_the_exact_command_only() {
        let bash = |c: &str| suggest_rules(named("Bash"), None, false, Some(c), Path::new(ROOT));
        assert_eq!(
            bash("make 2>&1 | tee log.txt"),
            ["Bash(make)", "Bash(tee log.txt)"]
        );
        assert_eq!(bash("cp a.txt b.txt"), ["Bash(cp a.txt b.txt)"]);
        assert_eq!(bash("sed -i s/a/b/ f.rs"), ["Bash(sed -i s/a/b/ f.rs)"]);
        assert_eq!(bash("dd if=a of=b"), ["Bash(dd if=a of=b)"]);
        for c in [
            "tee x",
            "cp a b",
            "mv a b",
            "dd if=a of=b",
            "sed -i s/a/b/ f",
            "rm x",
        ] {
            assert!(
                bash(c).iter().all(|r| !r.ends_with(":*)")),
                "{c}: {:?}",
                bash(c)
            );
        }
    }

    #[test]
    fn other_tools_suggest_their_name() {
        assert_eq!(
            suggest_rules(named("SearchIssues"), None, false, None, Path::new(ROOT)),
            ["SearchIssues"]
        );
    }
}
