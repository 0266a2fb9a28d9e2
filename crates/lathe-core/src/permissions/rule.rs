//! Permission rule strings, Claude Code's syntax: `Tool` or `Tool(specifier)`.
//!
//! - `Edit`, `Bash`, `Read`: every call of the tool.
//! - File tools (`Read`, `Edit`, `Write`, `Grep`, `Glob`: a path
//!   [`RuleFamily`] in [`RULE_FAMILIES`]): the specifier is a
//!   gitignore-style path pattern. `//abs/path` is absolute, `~/p` is under
//!   the home directory, `/p` is relative to the project of the settings file
//!   that holds the rule, and `p` (or `./p`) relative to the project root; a
//!   pattern without a slash matches a name at any depth (`*.env`), `dir/`
//!   matches a directory and everything below it, `**` spans directories.
//!   An `Edit` rule covers Write too; a `Read` rule covers Grep and Glob,
//!   and the language-server tools ([`RuleFamily::covered_by`]).
//! - `Bash(npm run test:*)` ([`RuleFamily::Command`]): a prefix at a word boundary; `*` elsewhere is a
//!   wildcard at word boundaries (`Bash(ls *)` does not match `lsof`);
//!   otherwise the exact command. A compound command is matched part by part
//!   (see `decide`).
//! - Any other tool: the specifier is a glob matched against the call's
//!   input as compact JSON.

use std::fmt;
use std::path::{Path, PathBuf};

use globset::{Glob, GlobMatcher};
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::shell::{self, SimpleCommand};

/// Where relative specifiers of a rule resolve: the project root (`p`), the
/// settings file's project (`/p`) and the home directory (`~/p`). Absolute
/// and canonical (symlinks resolved) where they exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleBase {
    /// The project root.
    pub root: PathBuf,
    /// The project of the settings file holding the rule (the folder that
    /// contains its `.claude/`); the root for `setup()` rules.
    pub project: PathBuf,
    /// The user's home directory, if known.
    pub home: Option<PathBuf>,
}

impl RuleBase {
    /// A base where `root` is also the settings project (rules from `setup()`).
    pub fn at_root(root: &Path, home: Option<&Path>) -> Self {
        Self {
            root: root.to_path_buf(),
            project: root.to_path_buf(),
            home: home.map(Path::to_path_buf),
        }
    }
}

/// What a rule's specifier constrains.
#[derive(Debug, Clone)]
enum Spec {
    /// A path pattern (file tools): matched with gitignore rules below `base`.
    Path { base: PathBuf, matcher: Gitignore },
    /// A Bash command pattern, matched per simple command.
    Command(String),
    /// A glob over the input as compact JSON (other tools).
    Input(GlobMatcher),
}

/// One parsed rule.
#[derive(Debug, Clone)]
pub struct Rule {
    tool: String,
    /// The specifier as written (inside the parentheses), if any.
    raw: Option<String>,
    spec: Option<Spec>,
}

impl PartialEq for Rule {
    fn eq(&self, other: &Self) -> bool {
        self.tool == other.tool && self.raw == other.raw
    }
}
impl Eq for Rule {}

/// Why a rule string did not parse; shown to the user with its source.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad permission rule {rule:?}: {why}")]
pub struct RuleParseError {
    /// The rule as written.
    pub rule: String,
    /// The tool it names, when that much could be read (an invalid rule
    /// denies that tool until it is fixed).
    pub tool: Option<String>,
    /// What is wrong.
    pub why: String,
}

/// How a tool's calls meet permission rules: which rules cover them and
/// what a specifier in a rule naming the tool means (docs/permissions.md,
/// "Rule families"). A tool declares it (`TypedTool::RULE_FAMILY`, by
/// default from its kind); the gate reads it from
/// [`Request::family`](super::Request::family).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleFamily {
    /// Reads the path it names (Read, Grep, Glob): path rules; a `Read`
    /// rule covers it, and its reads of lathe's saved tool output are free.
    ReadPath,
    /// Changes the file it names (Edit, Write): path rules; an `Edit` rule
    /// covers it.
    EditPath,
    /// Asks the language server about the file it names (LspDefinition,
    /// LspReferences, LspHover, LspSymbols): a `Read` rule covers a call on
    /// a file, a specifier in a rule naming the tool itself is matched
    /// against its input.
    Lookup,
    /// Runs a command line (Bash): command rules, part by part.
    Command,
    /// Anything else: only rules naming the tool, a specifier matched
    /// against its input.
    Input,
}

impl RuleFamily {
    /// The tool whose rules cover every tool of the family besides the
    /// tools' own: `Read` for reading and lookups, `Edit` for editing.
    pub const fn covered_by(self) -> Option<&'static str> {
        match self {
            RuleFamily::ReadPath | RuleFamily::Lookup => Some("Read"),
            RuleFamily::EditPath => Some("Edit"),
            RuleFamily::Command | RuleFamily::Input => None,
        }
    }

    /// `true` when a specifier in a rule naming a tool of the family is a
    /// path pattern, and its calls are judged by path rules even without a
    /// path (a Grep of the whole project).
    pub const fn is_path(self) -> bool {
        matches!(self, RuleFamily::ReadPath | RuleFamily::EditPath)
    }
}

/// The family of each built-in tool whose calls are not judged by their
/// own input alone: what a rule written in settings (`Read(path)`, where
/// there is only a name) means. Every other name is
/// [`RuleFamily::Input`]. A test in `tools` checks that each built-in
/// tool declares the family this table gives its name.
pub const RULE_FAMILIES: &[(&str, RuleFamily)] = &[
    ("Read", RuleFamily::ReadPath),
    ("Grep", RuleFamily::ReadPath),
    ("Glob", RuleFamily::ReadPath),
    ("Edit", RuleFamily::EditPath),
    ("Write", RuleFamily::EditPath),
    ("LspDefinition", RuleFamily::Lookup),
    ("LspReferences", RuleFamily::Lookup),
    ("LspHover", RuleFamily::Lookup),
    ("LspSymbols", RuleFamily::Lookup),
    ("Bash", RuleFamily::Command),
];

/// The family of the tool named `tool` as a rule names it ([`RULE_FAMILIES`]).
pub fn rule_family(tool: &str) -> RuleFamily {
    RULE_FAMILIES
        .iter()
        .find(|(name, _)| *name == tool)
        .map_or(RuleFamily::Input, |(_, family)| *family)
}

/// `true` when a rule for `rule_tool` applies to calls of `call_tool`, of
/// `family`: the same tool, or the tool whose rules cover the family
/// ([`RuleFamily::covered_by`]: `Edit` for Write, `Read` for Grep, Glob and
/// the language-server tools; Claude Code's grouping of file tools).
pub fn covers(rule_tool: &str, call_tool: &str, family: RuleFamily) -> bool {
    rule_tool == call_tool || family.covered_by() == Some(rule_tool)
}

impl Rule {
    /// Parses `Tool` or `Tool(specifier)`, resolving relative path
    /// specifiers against `base`. Errors: a missing `)`, a tool name that is
    /// not `[A-Za-z0-9_-]+`, a pattern that does not compile.
    pub fn parse(s: &str, base: &RuleBase) -> Result<Self, RuleParseError> {
        let s = s.trim();
        let tool_part = s.split('(').next().unwrap_or("").trim();
        let named = (!tool_part.is_empty()
            && tool_part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .then(|| tool_part.to_string());
        let err = |why: String| RuleParseError {
            rule: s.to_string(),
            tool: named.clone(),
            why,
        };
        let Some(tool) = named.clone() else {
            return Err(err("expected a tool name like Edit or Bash".into()));
        };
        let inner = match s.find('(') {
            None => None,
            Some(i) => Some(
                s[i + 1..]
                    .strip_suffix(')')
                    .ok_or_else(|| err("missing closing ')'".into()))?,
            ),
        };
        let raw = inner.map(str::trim).filter(|p| !p.is_empty() && *p != "*");
        let spec = match raw {
            None => None,
            Some(p) if rule_family(&tool) == RuleFamily::Command => {
                Some(Spec::Command(p.to_string()))
            }
            Some(p) if rule_family(&tool).is_path() => Some(path_spec(p, base).map_err(err)?),
            Some(p) => Some(Spec::Input(
                Glob::new(p)
                    .map_err(|e| err(e.to_string()))?
                    .compile_matcher(),
            )),
        };
        Ok(Rule {
            tool,
            raw: raw.map(str::to_string),
            spec,
        })
    }

    /// A rule matching every call of `tool` (what an invalid rule becomes
    /// for deny, and session grants without a specifier).
    pub fn tool(tool: &str) -> Self {
        Rule {
            tool: tool.to_string(),
            raw: None,
            spec: None,
        }
    }

    /// The tool the rule names.
    pub fn tool_name(&self) -> &str {
        &self.tool
    }

    /// The family of the tool the rule names ([`rule_family`]): what its
    /// specifier means.
    pub fn family(&self) -> RuleFamily {
        rule_family(&self.tool)
    }

    /// `true` when the rule has no specifier (it covers every call).
    pub fn is_whole_tool(&self) -> bool {
        self.spec.is_none()
    }

    /// The specifier as written inside the parentheses (`./secret/**`,
    /// `npm test:*`), `None` for a whole-tool rule.
    pub fn specifier(&self) -> Option<&str> {
        self.raw.as_deref()
    }

    /// `true` for a Bash rule that names one command exactly: a specifier
    /// with no wildcard and no `:*` prefix (`Bash(npm test)`). A literal
    /// `\*` counts as a wildcard here (erring toward "not exact").
    pub fn is_exact_command(&self) -> bool {
        self.family() == RuleFamily::Command
            && matches!(&self.spec, Some(Spec::Command(_)))
            && self.raw.as_deref().is_some_and(|r| !r.contains('*'))
    }

    /// `true` when the rule applies to a call of `tool`, of `family`, on
    /// the canonical `path` (file tools; `is_dir` when it is a directory: a
    /// pattern then also counts when it matches something inside it).
    pub fn matches_path(
        &self,
        tool: &str,
        family: RuleFamily,
        path: Option<&Path>,
        is_dir: bool,
    ) -> bool {
        if !covers(&self.tool, tool, family) {
            return false;
        }
        match (&self.spec, path) {
            (None, _) => true,
            (Some(Spec::Path { base, matcher }), Some(path)) => {
                path_matches(base, matcher, path, is_dir)
            }
            _ => false,
        }
    }

    /// `true` when the rule applies to the simple command `cmd` of a Bash
    /// call.
    pub fn matches_command(&self, cmd: &SimpleCommand) -> bool {
        if self.family() != RuleFamily::Command {
            return false;
        }
        match &self.spec {
            None => true,
            Some(Spec::Command(pattern)) => shell::matches_rule(pattern, cmd),
            _ => false,
        }
    }

    /// `true` when the rule applies to a call of another tool whose input is
    /// `input_json` (compact JSON).
    pub fn matches_input(&self, tool: &str, input_json: &str) -> bool {
        if self.tool != tool {
            return false;
        }
        match &self.spec {
            None => true,
            Some(Spec::Input(glob)) => glob.is_match(input_json),
            _ => false,
        }
    }
}

/// The `Spec::Path` of specifier `p` (see the module docs for the forms).
fn path_spec(p: &str, base: &RuleBase) -> Result<Spec, String> {
    let (dir, pattern) = if let Some(abs) = p.strip_prefix("//") {
        (PathBuf::from("/"), format!("/{abs}"))
    } else if let Some(rest) = p.strip_prefix("~/") {
        let home = base
            .home
            .clone()
            .ok_or_else(|| "the home directory is unknown, so ~/ cannot be resolved".to_string())?;
        (home, format!("/{rest}"))
    } else if p.starts_with('/') {
        (base.project.clone(), p.to_string())
    } else {
        let rel = p.strip_prefix("./").unwrap_or(p);
        // A leading "./" anchors the pattern at the root, as a slash does.
        let pattern = if p.starts_with("./") {
            format!("/{rel}")
        } else {
            rel.to_string()
        };
        (base.root.clone(), pattern)
    };
    let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
    let mut builder = GitignoreBuilder::new(&dir);
    builder
        .add_line(None, &pattern)
        .map_err(|e| e.to_string())?;
    let matcher = builder.build().map_err(|e| e.to_string())?;
    Ok(Spec::Path { base: dir, matcher })
}

/// `true` when `path` (canonical) is below `base` by whole components and
/// the gitignore `matcher` matches it or one of its parents — or, for a
/// directory, anything inside it (probed with a child name).
fn path_matches(base: &Path, matcher: &Gitignore, path: &Path, is_dir: bool) -> bool {
    if !path.starts_with(base) {
        return false;
    }
    if matcher
        .matched_path_or_any_parents(path, is_dir)
        .is_ignore()
    {
        return true;
    }
    is_dir
        && matcher
            .matched_path_or_any_parents(path.join(".lathe-any-child"), false)
            .is_ignore()
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.raw {
            None => f.write_str(&self.tool),
            Some(p) => write!(f, "{}({})", self.tool, p),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> RuleBase {
        RuleBase {
            root: PathBuf::from("/w/proj"),
            project: PathBuf::from("/w/proj"),
            home: Some(PathBuf::from("/home/u")),
        }
    }

    fn rule(s: &str) -> Rule {
        Rule::parse(s, &base()).expect("parses")
    }

    #[test]
    fn path_specifier_forms() {
        let p = |s: &str| PathBuf::from(s);
        let cases: &[(&str, &str, &str, bool)] = &[
            ("Edit(src/**)", "Edit", "/w/proj/src/a/b.rs", true),
            ("Edit(src/**)", "Edit", "/w/proj/lib/src/a.rs", false),
            ("Edit(src/**)", "Write", "/w/proj/src/new.rs", true),
            ("Edit(*.env)", "Edit", "/w/proj/deep/er/prod.env", true),
            ("Edit(/config.toml)", "Edit", "/w/proj/config.toml", true),
            (
                "Edit(/config.toml)",
                "Edit",
                "/w/proj/sub/config.toml",
                false,
            ),
            (
                "Edit(./config.toml)",
                "Edit",
                "/w/proj/sub/config.toml",
                false,
            ),
            ("Read(//etc/**)", "Read", "/etc/hosts", true),
            ("Read(//etc/**)", "Grep", "/etc/ssl/x", true),
            ("Read(//etc/**)", "Edit", "/etc/hosts", false),
            ("Read(//etc/**)", "LspDefinition", "/etc/x.py", true),
            ("Read(//etc/**)", "LspSymbols", "/etc/x.py", true),
            ("Read(//etc/**)", "LspHover", "/w/proj/x.py", false),
            ("Read(~/notes/**)", "Glob", "/home/u/notes/a.md", true),
            ("Read(~/notes/**)", "Read", "/home/u/other.md", false),
            ("Edit(build/)", "Edit", "/w/proj/build/out/x.o", true),
            // Whole components: a sibling with the same prefix is outside.
            ("Edit(/src/**)", "Edit", "/w/proj-evil/src/a.rs", false),
        ];
        for (r, tool, path, want) in cases {
            assert_eq!(
                rule(r).matches_path(tool, rule_family(tool), Some(&p(path)), false),
                *want,
                "{r} on {tool} {path}"
            );
        }
    }

    #[test]
    fn a_directory_target_matches_a_pattern_for_its_contents() {
        let r = rule("Read(secrets/**)");
        let grep = RuleFamily::ReadPath;
        assert!(r.matches_path("Grep", grep, Some(Path::new("/w/proj/secrets")), true));
        assert!(!r.matches_path("Grep", grep, Some(Path::new("/w/proj/secrets")), false));
    }

    #[test]
    fn parse_errors_name_the_tool_when_they_can() {
        let e = Rule::parse("Bash(npm test", &base()).expect_err("bad");
        assert_eq!(e.tool.as_deref(), Some("Bash"));
        assert_eq!(e.why, "missing closing ')'");
        let e = Rule::parse("(x)", &base()).expect_err("bad");
        assert_eq!(e.tool, None);
        assert_eq!(
            e.to_string(),
            "bad permission rule \"(x)\": expected a tool name like Edit or Bash"
        );
    }

    #[test]
    fn display_round_trips_and_star_means_the_whole_tool() {
        assert_eq!(rule("Edit(src/**)").to_string(), "Edit(src/**)");
        assert_eq!(rule("Bash(*)").to_string(), "Bash");
        assert!(rule("Bash()").is_whole_tool());
    }

    #[test]
    fn other_tools_match_their_input_json() {
        let r = rule("SearchIssues(*\"query\":\"lathe*)");
        assert!(r.matches_input("SearchIssues", r#"{"query":"lathe crash"}"#));
        assert!(!r.matches_input("SearchIssues", r#"{"query":"other"}"#));
        assert!(!r.matches_input("Other", r#"{"query":"lathe"}"#));
    }
}
