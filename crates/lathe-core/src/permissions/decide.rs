//! The pure permission decision (gate 6 in docs/pipeline.md, "The
//! gates"): deny > ask > allow across every source, then the mode, then the
//! defaults. No I/O: the caller resolves paths (symlinks, the deepest
//! existing ancestor of a new file) before asking.

use std::fmt;
use std::path::{Path, PathBuf};

use super::bash_reads::ReadPath;
use super::rule::RuleFamily;
use super::shell::{self, Split};
use super::{Mode, RuleKind, RuleSource, Rules, SourcedRule};

/// A call as the permission gate sees it. Paths are absolute and canonical.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// PascalCase tool name.
    pub tool: &'a str,
    /// How the tool's calls meet rules, as the tool declares it.
    pub family: RuleFamily,
    /// `true` when the call cannot change anything.
    pub read_only: bool,
    /// The file or directory it touches (file tools), its real path (see
    /// `permissions::spell`).
    pub path: Option<&'a Path>,
    /// The other names of `path` and of `command_paths`: as written
    /// (absolute, `..` folded only where the kernel would) and after each
    /// symlink along them was replaced. Deny and ask rules on `path` and
    /// protected names are checked on these too; whether a path is inside
    /// the project is judged on its real path alone.
    pub spellings: &'a [PathBuf],
    /// Writing `path` would add to a folder laid out as a git repository
    /// (`permissions::writes_git_layout`): it asks like a protected path.
    pub git_layout: bool,
    /// `true` when `path` is a directory (Grep/Glob on a folder).
    pub path_is_dir: bool,
    /// The command line (Bash).
    pub command: Option<&'a str>,
    /// Paths the command line names (Bash), resolved against the root.
    pub command_paths: &'a [PathBuf],
    /// What the command line reads or lists (Bash): its operands expanded
    /// (globs, the files below a folder a recursive reader walks), canonical.
    /// Read rules and protected paths apply to them.
    pub read_paths: &'a [ReadPath],
    /// Set when not every path the command reads could be checked: why.
    /// The call then asks.
    pub reads_unchecked: Option<&'a str>,
    /// The normalised input as compact JSON (rules of other tools match it).
    pub input_json: &'a str,
    /// The project root.
    pub root: &'a Path,
}

/// Why the gate decided as it did: the text shown in the float and the
/// result, and the rule (with its source) when one decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason {
    /// What decided, in words: `rule Edit(secret/**) from .claude/settings.json`,
    /// `Edit asks by default`, `plan mode`.
    pub text: String,
    /// The deciding rule as written, when a rule decided.
    pub rule: Option<String>,
    /// Where that rule came from.
    pub source: Option<RuleSource>,
    /// What kind of reason it is (picks the model-facing text of a denial).
    pub kind: ReasonKind,
}

/// Kinds of [`Reason`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReasonKind {
    /// A configured or granted rule.
    Rule,
    /// A rule that did not parse: its tool is denied until it is fixed.
    InvalidRule,
    /// The tool's default without a matching rule.
    Default,
    /// The session mode (`plan`, `acceptEdits`, `bypassPermissions`).
    Mode,
    /// A protected path (`.git/`, `.env*`, settings files): always asks.
    Protected,
    /// The sandbox: a Bash call that would run without it (the sandbox is
    /// off here, or the model asked to run outside it) asks.
    Sandbox,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Reason {
    fn new(kind: ReasonKind, text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            rule: None,
            source: None,
            kind,
        }
    }

    /// This reason for one path a Bash command reads (`denies`: a deny,
    /// else an ask): `rule Read(secret/**) from setup() denies reading
    /// secret/s.txt`, `the command reads .env, and .env (.env files) always
    /// asks`.
    pub(super) fn about(mut self, path: &Path, is_dir: bool, root: &Path, denies: bool) -> Self {
        let path = shown(path, is_dir, root);
        self.text = match (denies, self.kind) {
            (true, ReasonKind::Rule) => format!("{} reading {path}", self.text),
            (true, _) => format!("{} (the command reads {path})", self.text),
            (false, _) => format!("the command reads {path}, and {}", self.text),
        };
        self
    }

    fn rule(r: &SourcedRule, verb: &str) -> Self {
        let kind = if r.invalid.is_some() {
            ReasonKind::InvalidRule
        } else {
            ReasonKind::Rule
        };
        let text = match &r.invalid {
            Some(written) => format!(
                "the invalid rule {written:?} in {} denies {} until it is fixed",
                r.source,
                r.rule.tool_name()
            ),
            None => format!("rule {} from {} {verb}", r.rule, r.source),
        };
        Self {
            text,
            rule: Some(r.rule.to_string()),
            source: Some(r.source.clone()),
            kind,
        }
    }
}

/// The gate's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Allow(Reason),
    /// Ask the user first.
    Ask(Reason),
    /// Refuse.
    Deny(Reason),
}

impl Decision {
    /// The reason, whatever the verdict.
    pub fn reason(&self) -> &Reason {
        match self {
            Decision::Allow(r) | Decision::Ask(r) | Decision::Deny(r) => r,
        }
    }
}

/// How the rules of one kind apply to a request.
enum Hit<'r> {
    /// A rule of the kind applies (for Bash: to at least one part).
    Any(&'r SourcedRule),
    /// Every part is covered by some rule of the kind (allow needs this).
    All(&'r SourcedRule),
    None,
}

/// Decides `req` against `rules` (pure; no I/O):
///
/// Deny and ask rules and protected names are checked on every name of a
/// path ([`Request::spellings`]), allow rules and the project's bounds on
/// its real path.
///
/// 1. a **deny** rule from any source that matches (for Bash: any part of a
///    compound command, or a Read deny rule on any path in
///    `req.read_paths`) denies;
/// 2. plan mode denies what would change something;
/// 3. an **ask** rule that matches (any part) asks; so does a protected path
///    (`.git/`, `.env*`, settings files; for a call that may change
///    something also configuration that runs programs, see `protected`) in
///    every mode, and for Bash a path
///    in `req.read_paths` whose content it reads and that a Read ask rule or
///    protected path covers, or reads it could not all check;
/// 4. an **allow** rule (for Bash: one for every part) allows;
/// 5. the mode: `bypassPermissions` allows, `acceptEdits` allows edits
///    inside the project;
/// 6. defaults: read-only calls inside the project (the root and
///    `rules.additional_dirs`) are allowed, everything else asks.
pub fn decide(rules: &Rules, req: &Request<'_>) -> Decision {
    held_by_the_sandbox(rules, req, decide_by_rules(rules, req))
}

/// The text of the ask when the model asked to run a command outside the
/// sandbox (`dangerouslyDisableSandbox`); the float shows it.
pub const ASKS_UNSANDBOXED: &str =
    "the model asks to run it outside the sandbox (dangerouslyDisableSandbox), which always asks";

/// The text of the ask for a Bash call that would run without asking, but
/// the sandbox is off. `{why}`.
pub const ASKS_SANDBOX_OFF: &str =
    "the sandbox is off ({why}), so Bash asks unless an exact allow rule covers the command";

/// A Bash call runs without asking only inside the sandbox
/// (docs/sandbox.md, "The sandbox"): one that asks to run outside it
/// (`dangerouslyDisableSandbox: true`) asks in every mode, and while the
/// sandbox is off ([`super::SandboxSettings::off`]) an allowed call asks
/// unless every part of it is covered by an exact allow rule (no `*`, no
/// `:*`) or the mode is bypassPermissions. Denies and asks stand.
fn held_by_the_sandbox(rules: &Rules, req: &Request<'_>, decision: Decision) -> Decision {
    let (Decision::Allow(_), Some(command)) = (&decision, req.command) else {
        return decision;
    };
    if req.family != RuleFamily::Command {
        return decision;
    }
    if wants_no_sandbox(req.input_json) {
        return Decision::Ask(Reason::new(ReasonKind::Sandbox, ASKS_UNSANDBOXED));
    }
    match &rules.sandbox.off {
        Some(why) if rules.mode != Mode::BypassPermissions && !exactly_allowed(rules, command) => {
            Decision::Ask(Reason::new(
                ReasonKind::Sandbox,
                crate::text::fill(ASKS_SANDBOX_OFF, &[("why", why)]),
            ))
        }
        _ => decision,
    }
}

/// The text of the ask when a Bash deny rule exists and the command line
/// cannot be checked against it. `{rule}`, `{source}`, `{why}`.
pub const ASKS_DENY_UNCHECKED: &str =
    "rule {rule} from {source} covers some commands, and this command line cannot be checked against it ({why})";

/// Why a command line cannot be checked against a Bash deny rule: it
/// cannot be split (`eval`, a function, `if`…).
pub const UNCHECKED_OPAQUE: &str = "lathe cannot split it into its commands";

/// Why a command line cannot be checked against a Bash deny rule: it
/// defines an alias.
pub const UNCHECKED_ALIAS: &str = "it defines an alias, which can make any word another program";

/// Why a command line cannot be checked against a Bash deny rule: a
/// command's program is known only when the shell runs it. `{word}`.
pub const UNCHECKED_PROGRAM: &str = "the program {word} is known only when the shell runs it";

/// A Bash deny (or ask) rule with a specifier holds only if every command
/// of the line can be matched against it: a line that cannot be split
/// (`eval 'r''m x'`, `f(){ rm "$@"; }; f x`) or a command whose program
/// is a substitution (`x=rm; $x victim`) asks while such a rule exists,
/// in every mode (deny must win even in bypassPermissions).
fn deny_unchecked(rules: &Rules, req: &Request<'_>) -> Option<Reason> {
    let command = req.command.filter(|_| req.family == RuleFamily::Command)?;
    let rule = rules.entries.iter().find(|r| {
        matches!(r.kind, RuleKind::Deny | RuleKind::Ask)
            && r.rule.family() == RuleFamily::Command
            && !r.rule.is_whole_tool()
    })?;
    let why = match shell::split(command) {
        Split::Opaque(_) => UNCHECKED_OPAQUE.to_string(),
        Split::Commands(parts) => {
            let inner: Vec<shell::SimpleCommand> =
                parts.iter().flat_map(shell::unwrapped).collect();
            // An alias makes a word another program (with
            // `shopt -s expand_aliases`).
            if inner
                .iter()
                .any(|c| c.words.first().is_some_and(|p| p == "alias"))
            {
                UNCHECKED_ALIAS.to_string()
            } else {
                let word = inner.iter().find_map(|c| {
                    let program = c.words.first()?;
                    c.substituted.contains(program).then(|| program.clone())
                })?;
                crate::text::fill(UNCHECKED_PROGRAM, &[("word", &word)])
            }
        }
    };
    Some(Reason::new(
        ReasonKind::Rule,
        crate::text::fill(
            ASKS_DENY_UNCHECKED,
            &[
                ("rule", &rule.rule.to_string()),
                ("source", &rule.source.to_string()),
                ("why", &why),
            ],
        ),
    ))
}

/// `true` when the call's input sets `dangerouslyDisableSandbox: true`.
pub fn wants_no_sandbox(input_json: &str) -> bool {
    input_json.contains("dangerouslyDisableSandbox")
        && serde_json::from_str::<serde_json::Value>(input_json)
            .ok()
            .and_then(|v| v.get("dangerouslyDisableSandbox")?.as_bool())
            == Some(true)
}

/// `true` when every simple command of `command` is covered by an allow
/// rule for Bash that names it exactly (no wildcard, no `:*` prefix) and
/// none redirects into a file. A slash command's `allowed-tools`
/// ([`RuleSource::Command`]) do not count: the file (maybe the project's)
/// wrote them, not the user, and what runs outside a sandbox is the
/// user's word alone.
fn exactly_allowed(rules: &Rules, command: &str) -> bool {
    let Split::Commands(parts) = shell::split(command) else {
        return false;
    };
    !parts.is_empty()
        && parts.iter().all(|p| {
            !writes_a_file(p)
                && rules.entries.iter().any(|r| {
                    r.kind == RuleKind::Allow
                        && r.invalid.is_none()
                        && !matches!(r.source, RuleSource::Command(_))
                        && r.rule.is_exact_command()
                        && r.rule.matches_command(p)
                })
        })
}

/// [`decide`] by the rules, the mode and the defaults, before the sandbox
/// has its say.
fn decide_by_rules(rules: &Rules, req: &Request<'_>) -> Decision {
    if let Hit::Any(r) | Hit::All(r) = hit(rules, RuleKind::Deny, req) {
        return Decision::Deny(Reason::rule(r, "denies"));
    }
    let reads = check_reads(rules, req);
    if let Some(reason) = reads.denied {
        return Decision::Deny(reason);
    }
    if let Some(reason) = deny_unchecked(rules, req) {
        return Decision::Ask(reason);
    }
    if rules.mode == Mode::Plan && !req.read_only {
        return Decision::Deny(Reason::new(
            ReasonKind::Mode,
            format!("plan mode: {} would change something", req.tool),
        ));
    }
    if let Hit::Any(r) | Hit::All(r) = hit(rules, RuleKind::Ask, req) {
        return Decision::Ask(Reason::rule(r, "asks"));
    }
    if let Some(reason) = reads.asks {
        return Decision::Ask(reason);
    }
    if let Some(what) = protected(req) {
        return Decision::Ask(Reason::new(
            ReasonKind::Protected,
            format!("{what} always asks"),
        ));
    }
    if let Hit::All(r) = hit(rules, RuleKind::Allow, req) {
        return Decision::Allow(Reason::rule(r, "allows"));
    }
    let inside = |p: &Path| is_inside(p, req.root, &rules.additional_dirs);
    let all_inside = req.path.is_none_or(inside) && req.command_paths.iter().all(|p| inside(p));
    match rules.mode {
        Mode::BypassPermissions => {
            return Decision::Allow(Reason::new(ReasonKind::Mode, "bypassPermissions mode"))
        }
        Mode::AcceptEdits if !req.read_only && req.path.is_some_and(inside) => {
            return Decision::Allow(Reason::new(ReasonKind::Mode, "acceptEdits mode"))
        }
        _ => {}
    }
    match (req.read_only, all_inside) {
        (true, true) => Decision::Allow(Reason::new(
            ReasonKind::Default,
            "read-only inside the project",
        )),
        (true, false) if reads_saved_output(rules, req) => Decision::Allow(Reason::new(
            ReasonKind::Default,
            "read-only in lathe's saved tool output",
        )),
        (true, false) => Decision::Ask(Reason::new(
            ReasonKind::Default,
            "it reads outside the project",
        )),
        (false, _) if req.path.is_some() => Decision::Ask(Reason::new(
            ReasonKind::Default,
            format!("{} changes files, and asks by default", req.tool),
        )),
        (false, _) => Decision::Ask(Reason::new(
            ReasonKind::Default,
            format!("{} may change files or run programs", req.tool),
        )),
    }
}

/// `true` when `req` is a file tool's read of a path inside one of
/// `rules.output_dirs` (Bash commands are not covered: they name no single
/// path the gate can vouch for).
fn reads_saved_output(rules: &Rules, req: &Request<'_>) -> bool {
    req.read_only
        && req.command.is_none()
        && req.family.is_path()
        && req
            .path
            .is_some_and(|p| rules.output_dirs.iter().any(|d| p.starts_with(d)))
}

/// The rules of `kind` that apply to `req`.
fn hit<'r>(rules: &'r Rules, kind: RuleKind, req: &Request<'_>) -> Hit<'r> {
    let of_kind = || rules.entries.iter().filter(move |r| r.kind == kind);
    if let Some(command) = req.command.filter(|_| req.family == RuleFamily::Command) {
        // A bare `Bash` rule covers any command, even one that cannot be split.
        if let Some(r) =
            of_kind().find(|r| r.rule.is_whole_tool() && r.rule.family() == RuleFamily::Command)
        {
            return Hit::All(r);
        }
        let parts = match shell::split(command) {
            Split::Commands(parts) if !parts.is_empty() => parts,
            // A line that cannot be decomposed is covered by no specifier.
            _ => return Hit::None,
        };
        let matching: Vec<Option<&SourcedRule>> = parts
            .iter()
            .map(|p| {
                // A rule names a command, not where its output goes: `echo:*`
                // does not allow `echo x > ~/.bashrc`. Writing parts are left
                // to ask (deny and ask rules still match them).
                if kind == RuleKind::Allow && writes_a_file(p) {
                    return None;
                }
                // Deny and ask rules see through wrappers (`env rm x`,
                // `timeout 5 rm x`, `xargs rm`); allow rules match the
                // command as written.
                if kind == RuleKind::Allow {
                    return of_kind().find(|r| r.rule.matches_command(p));
                }
                let inner = shell::unwrapped(p);
                of_kind().find(|r| inner.iter().any(|c| r.rule.matches_command(c)))
            })
            .collect();
        return match (
            matching.iter().all(Option::is_some),
            matching.iter().flatten().next(),
        ) {
            (true, Some(r)) => Hit::All(r),
            (false, Some(r)) => Hit::Any(r),
            _ => Hit::None,
        };
    }
    let found = if req.path.is_some() || req.family.is_path() {
        // Deny and ask rules hold on every name of the path; an allow
        // only on the real path, which is what gets read or written.
        let names = req.spellings.iter().filter(|_| kind != RuleKind::Allow);
        of_kind().find(|r| {
            r.rule
                .matches_path(req.tool, req.family, req.path, req.path_is_dir)
                || (req.path.is_some()
                    && names.clone().any(|n| {
                        r.rule
                            .matches_path(req.tool, req.family, Some(n), req.path_is_dir)
                    }))
        })
    } else {
        of_kind().find(|r| r.rule.matches_input(req.tool, req.input_json))
    };
    found.map_or(Hit::None, Hit::All)
}

/// What a read of one file meets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadAccess {
    /// It may be read without asking.
    Free,
    /// Reading it asks: an ask rule or a protected path (the reason says
    /// which).
    Asks(Reason),
    /// A deny rule refuses reading it (the reason names the rule).
    Denied(Reason),
}

/// What `tool` (of `family`) reading the canonical `path` (a directory
/// when `is_dir`) meets under `rules`, with `root` the canonical project
/// root: `decide` for a read-only call of `tool` on that one path, keeping
/// only what rules and protected paths say ([`ReadAccess`]).
pub fn read_access(
    rules: &Rules,
    (tool, family): (&str, RuleFamily),
    path: &Path,
    is_dir: bool,
    root: &Path,
) -> ReadAccess {
    let req = Request {
        tool,
        family,
        read_only: true,
        path: Some(path),
        spellings: &[],
        git_layout: false,
        path_is_dir: is_dir,
        command: None,
        command_paths: &[],
        read_paths: &[],
        reads_unchecked: None,
        input_json: "{}",
        root,
    };
    match decide(rules, &req) {
        Decision::Deny(r) => ReadAccess::Denied(r),
        Decision::Ask(r) if matches!(r.kind, ReasonKind::Rule | ReasonKind::Protected) => {
            ReadAccess::Asks(r)
        }
        _ => ReadAccess::Free,
    }
}

/// The Read tool, as reads are judged: what a command reads is judged as
/// Read's reads would be.
pub const READ: (&str, RuleFamily) = ("Read", RuleFamily::ReadPath);

/// What the paths a command reads meet: the first a deny rule covers, and
/// the first read (not just listed) that asks.
#[derive(Default)]
struct ReadsCheck {
    denied: Option<Reason>,
    asks: Option<Reason>,
}

/// Checks `req.read_paths` as Reads (see [`read_access`]): a deny covers
/// any of them, an ask (rule or protected path) only those whose content
/// is read; reads that were not all checked ask.
fn check_reads(rules: &Rules, req: &Request<'_>) -> ReadsCheck {
    let mut out = ReadsCheck {
        denied: None,
        asks: req
            .reads_unchecked
            .map(|why| Reason::new(ReasonKind::Protected, why)),
    };
    for rp in req.read_paths {
        match read_access(rules, READ, &rp.path, rp.is_dir, req.root) {
            ReadAccess::Denied(r) => {
                out.denied = Some(r.about(&rp.path, rp.is_dir, req.root, true));
                return out;
            }
            // Read out of git's objects: an ask rule asks, a protected
            // name (of a file git does not track) does not.
            ReadAccess::Asks(r) if rp.object && r.kind != ReasonKind::Rule => {}
            ReadAccess::Asks(r) if rp.content && out.asks.is_none() => {
                out.asks = Some(r.about(&rp.path, rp.is_dir, req.root, false));
            }
            _ => {}
        }
    }
    out
}

/// `path` as a reason shows it: relative to `root` when inside it, with a
/// `/` after a folder.
fn shown(path: &Path, is_dir: bool, root: &Path) -> String {
    let rel = match path.strip_prefix(root) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => path.display().to_string(),
    };
    if is_dir {
        format!("{}/", rel.trim_end_matches('/'))
    } else {
        rel
    }
}

/// `true` when `cmd` redirects into or from a file (not `/dev/null`).
fn writes_a_file(cmd: &shell::SimpleCommand) -> bool {
    cmd.redirect_targets
        .iter()
        .any(|t| !matches!(t.as_str(), "/dev/null" | "/dev/stdout" | "/dev/stderr"))
}

/// `true` when `path` is the root, an additional directory, or below one of
/// them, by whole components (`/w/proj-evil` is not inside `/w/proj`).
pub fn is_inside(path: &Path, root: &Path, additional: &[PathBuf]) -> bool {
    path.starts_with(root) || additional.iter().any(|d| path.starts_with(d))
}

/// What makes `req` touch a protected path, if anything: by any name of
/// its path or of a path its command line names ([`Request::spellings`]),
/// a `.git` folder, a `.env*` file or a Claude Code settings file
/// (`.claude/settings*.json`, the project's or the user's); for a call
/// that may change something, also configuration that runs programs or
/// grants permissions ([`write_protected`]), and a write that builds a git
/// repository layout ([`Request::git_layout`]).
fn protected(req: &Request<'_>) -> Option<String> {
    let write = !req.read_only;
    let paths = req
        .path
        .into_iter()
        .chain(req.spellings.iter().map(PathBuf::as_path))
        .chain(req.command_paths.iter().map(PathBuf::as_path));
    for p in paths {
        let what = protected_path(p).or_else(|| write.then(|| write_protected(p)).flatten());
        if what.is_some() {
            return what;
        }
    }
    (write && req.git_layout).then(|| GIT_LAYOUT.to_string())
}

/// What a write that builds a git repository layout is called in reasons.
const GIT_LAYOUT: &str =
    "a write into a folder laid out as a git repository (HEAD, config, objects/, refs/)";

/// The reason a read of `p` asks because `p` is protected, if it is.
pub(super) fn protected_reason(p: &Path) -> Option<Reason> {
    protected_path(p).map(|what| Reason::new(ReasonKind::Protected, format!("{what} always asks")))
}

/// The names of `p`'s components, lowercased: protected names are matched
/// without regard to case (a case-insensitive file system opens `.ENV` as
/// `.env`).
fn lower_names(p: &Path) -> Vec<String> {
    p.components()
        .filter_map(|c| match c {
            std::path::Component::Normal(n) => n.to_str().map(str::to_lowercase),
            _ => None,
        })
        .collect()
}

/// What protects `p` from reads and writes: `.git/`, `.env*`,
/// `.claude/settings*.json`.
fn protected_path(p: &Path) -> Option<String> {
    let names = lower_names(p);
    if names.iter().any(|n| n == ".git") {
        return Some("anything inside .git/".into());
    }
    let file = names.last().map(String::as_str).unwrap_or("");
    let shown = p
        .file_name()
        .map(|f| f.to_string_lossy())
        .unwrap_or_default();
    if file.starts_with(".env") {
        return Some(format!("{shown} (.env files)"));
    }
    let in_claude = names.len() >= 2 && names[names.len() - 2] == ".claude";
    if in_claude && file.starts_with("settings") && file.ends_with(".json") {
        return Some(format!(".claude/{shown} (settings files)"));
    }
    None
}

/// Folders whose every file is configuration that grants permissions or
/// runs programs: writes into them ask (reads do not).
const WRITE_PROTECTED_DIRS: &[(&str, &str)] = &[
    (".claude", "Claude Code's settings, commands and hooks"),
    (".vscode", "editor tasks and settings, which run programs"),
    (".ssh", "ssh keys and configuration"),
];

/// Files that are configuration that runs programs (shell start-up files,
/// git and package-manager configuration) or starts servers: writes to
/// them ask (reads do not). `.envrc` is a `.env*` file already.
const WRITE_PROTECTED_FILES: &[&str] = &[
    ".mcp.json",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".cshrc",
    ".tcshrc",
    ".login",
    ".logout",
    ".inputrc",
    // Neovim's and Vim's project config ('exrc'), run when the editor
    // lathe lives in starts in the project.
    ".nvim.lua",
    ".nvimrc",
    ".exrc",
    ".xinitrc",
    ".xprofile",
    ".xsessionrc",
    ".gitconfig",
    ".gitmodules",
    ".gitattributes",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
];

/// Files inside a folder (`.config/fish/…`) whose configuration runs
/// programs: `(folder path, what)`, any file below the folder.
const WRITE_PROTECTED_SUBDIRS: &[(&[&str], &str)] = &[
    (&[".config", "fish"], "fish start-up files"),
    (&[".config", "git"], "git configuration"),
    (&[".cargo", "config"], "cargo configuration"),
    (&[".cargo", "config.toml"], "cargo configuration"),
];

/// What protects `p` from writes besides [`protected_path`]: the project's
/// (or the user's) configuration that grants permissions or runs programs
/// the next time a shell, an editor, git or a package manager starts.
fn write_protected(p: &Path) -> Option<String> {
    let names = lower_names(p);
    for (dir, what) in WRITE_PROTECTED_DIRS {
        if names.iter().any(|n| n == dir) {
            return Some(format!("anything inside {dir}/ ({what})"));
        }
    }
    let file = names.last().map(String::as_str).unwrap_or("");
    if WRITE_PROTECTED_FILES.contains(&file) {
        return Some(format!("{file} (configuration that runs programs)"));
    }
    for (dir, what) in WRITE_PROTECTED_SUBDIRS {
        if names.windows(dir.len()).any(|w| w.iter().eq(dir.iter())) {
            return Some(format!("{} ({what})", dir.join("/")));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permissions::{Rule, RuleBase};

    const ROOT: &str = "/w/proj";

    fn rules(mode: Mode, list: &[(RuleKind, &str, RuleSource)]) -> Rules {
        let base = RuleBase::at_root(Path::new(ROOT), Some(Path::new("/home/u")));
        Rules {
            mode,
            entries: list
                .iter()
                .map(|(kind, r, source)| SourcedRule {
                    rule: Rule::parse(r, &base).expect("rule"),
                    kind: *kind,
                    source: source.clone(),
                    invalid: None,
                })
                .collect(),
            additional_dirs: vec![PathBuf::from("/w/shared")],
            output_dirs: Vec::new(),
            sandbox: Default::default(),
        }
    }

    fn file(tool: &'static str, read_only: bool, path: &'static str) -> Request<'static> {
        Request {
            tool,
            family: crate::permissions::rule_family(tool),
            read_only,
            path: Some(Path::new(path)),
            spellings: &[],
            git_layout: false,
            path_is_dir: false,
            command: None,
            command_paths: &[],
            read_paths: &[],
            reads_unchecked: None,
            input_json: "{}",
            root: Path::new(ROOT),
        }
    }

    fn bash<'a>(command: &'a str, read_only: bool, paths: &'a [PathBuf]) -> Request<'a> {
        Request {
            tool: "Bash",
            family: RuleFamily::Command,
            read_only,
            path: None,
            spellings: &[],
            git_layout: false,
            path_is_dir: false,
            command: Some(command),
            command_paths: paths,
            read_paths: &[],
            reads_unchecked: None,
            input_json: "{}",
            root: Path::new(ROOT),
        }
    }

    fn verdict(d: &Decision) -> &'static str {
        match d {
            Decision::Allow(_) => "allow",
            Decision::Ask(_) => "ask",
            Decision::Deny(_) => "deny",
        }
    }

    #[test]
    fn defaults_table() {
        let none = rules(Mode::Default, &[]);
        let in_shared = file("Read", true, "/w/shared/a.txt");
        let etc = [PathBuf::from("/etc/passwd")];
        let cases: Vec<(&str, Request<'_>, &str)> = vec![
            ("Read inside", file("Read", true, "/w/proj/a.rs"), "allow"),
            ("Grep inside", file("Grep", true, "/w/proj/src"), "allow"),
            ("Read outside", file("Read", true, "/etc/hosts"), "ask"),
            (
                "Read sibling with the root as prefix",
                file("Read", true, "/w/proj-evil/a"),
                "ask",
            ),
            ("Read in an additional directory", in_shared, "allow"),
            ("Edit inside", file("Edit", false, "/w/proj/a.rs"), "ask"),
            ("read-only Bash", bash("ls -la", true, &[]), "allow"),
            (
                "read-only Bash naming a path outside",
                bash("cat /etc/passwd", true, &etc),
                "ask",
            ),
            ("other Bash", bash("make", false, &[]), "ask"),
            ("Read .env", file("Read", true, "/w/proj/.env.local"), "ask"),
            (
                "Read inside .git",
                file("Read", true, "/w/proj/.git/config"),
                "ask",
            ),
            (
                "Edit settings",
                file("Edit", false, "/w/proj/.claude/settings.local.json"),
                "ask",
            ),
        ];
        for (what, req, want) in cases {
            assert_eq!(verdict(&decide(&none, &req)), want, "{what}");
        }
    }

    #[test]
    fn saved_tool_output_is_read_without_asking_by_file_tools_only() {
        let mut with_out = rules(
            Mode::Default,
            &[(
                RuleKind::Deny,
                "Read(//s/bash-output/secret.log)",
                RuleSource::Setup,
            )],
        );
        with_out.output_dirs = vec![PathBuf::from("/s/bash-output")];
        let cat = [PathBuf::from("/s/bash-output/1.log")];
        let cases: Vec<(&str, Request<'_>, &str)> = vec![
            (
                "Read a saved output",
                file("Read", true, "/s/bash-output/1.log"),
                "allow",
            ),
            (
                "Grep a saved output",
                file("Grep", true, "/s/bash-output/1.log"),
                "allow",
            ),
            (
                "Read next to it",
                file("Read", true, "/s/bash-output-x/1.log"),
                "ask",
            ),
            (
                "Read elsewhere in the state dir",
                file("Read", true, "/s/sessions/a.jsonl"),
                "ask",
            ),
            (
                "Edit a saved output",
                file("Edit", false, "/s/bash-output/1.log"),
                "ask",
            ),
            (
                "Bash cat of a saved output",
                bash("cat /s/bash-output/1.log", true, &cat),
                "ask",
            ),
            (
                "a deny rule still denies",
                file("Read", true, "/s/bash-output/secret.log"),
                "deny",
            ),
        ];
        for (what, req, want) in cases {
            assert_eq!(verdict(&decide(&with_out, &req)), want, "{what}");
        }
        let without = rules(Mode::Default, &[]);
        let read = file("Read", true, "/s/bash-output/1.log");
        assert_eq!(verdict(&decide(&without, &read)), "ask");
    }

    #[test]
    fn deny_beats_ask_beats_allow_across_sources() {
        let user = RuleSource::UserSettings(PathBuf::from("/home/u/.claude/settings.json"));
        let project = RuleSource::ProjectSettings(PathBuf::from("/w/proj/.claude/settings.json"));
        let r = rules(
            Mode::AcceptEdits,
            &[
                (RuleKind::Allow, "Edit", RuleSource::Setup),
                (RuleKind::Ask, "Edit(secret/**)", project.clone()),
                (RuleKind::Deny, "Edit(secret/keys)", user.clone()),
            ],
        );
        let d = decide(&r, &file("Edit", false, "/w/proj/secret/keys"));
        assert_eq!(verdict(&d), "deny");
        assert_eq!(d.reason().source, Some(user));
        assert_eq!(d.reason().rule.as_deref(), Some("Edit(secret/keys)"));
        assert_eq!(
            d.reason().text,
            "rule Edit(secret/keys) from ~/.claude/settings.json denies"
        );
        let d = decide(&r, &file("Write", false, "/w/proj/secret/x"));
        assert_eq!(verdict(&d), "ask", "an Edit rule covers Write");
        assert_eq!(d.reason().source, Some(project));
        assert_eq!(
            verdict(&decide(&r, &file("Edit", false, "/w/proj/src/x"))),
            "allow"
        );
    }

    #[test]
    fn read_rules_govern_grep_and_glob() {
        let r = rules(
            Mode::Default,
            &[(RuleKind::Deny, "Read(secrets/**)", RuleSource::Setup)],
        );
        let mut grep = file("Grep", true, "/w/proj/secrets");
        grep.path_is_dir = true;
        assert_eq!(verdict(&decide(&r, &grep)), "deny");
        assert_eq!(
            verdict(&decide(&r, &file("Glob", true, "/w/proj/secrets/a"))),
            "deny"
        );
        assert_eq!(
            verdict(&decide(&r, &file("Read", true, "/w/proj/src/a"))),
            "allow"
        );
    }

    /// A read-only Bash request for `command` that reads `paths` (`c:` for
    /// content, `n:` for a name; a trailing `/` for a folder).
    fn reading(
        mode: Mode,
        list: &[(RuleKind, &str, RuleSource)],
        command: &str,
        paths: &[&str],
    ) -> Decision {
        let read_paths: Vec<ReadPath> = paths
            .iter()
            .map(|p| {
                let (how, path) = p.split_at(2);
                ReadPath {
                    path: Path::new(ROOT).join(path.trim_end_matches('/')),
                    is_dir: path.ends_with('/'),
                    content: how == "c:" || how == "o:",
                    object: how == "o:",
                }
            })
            .collect();
        let mut req = bash(command, true, &[]);
        req.read_paths = &read_paths;
        decide(&rules(mode, list), &req)
    }

    #[test]
    fn read_rules_and_protected_paths_cover_what_bash_reads() {
        let deny = [(RuleKind::Deny, "Read(secret/**)", RuleSource::Setup)];
        let d = reading(
            Mode::Default,
            &deny,
            "cat secret/s.txt",
            &["c:secret/s.txt"],
        );
        assert_eq!(verdict(&d), "deny");
        assert_eq!(
            d.reason().text,
            "rule Read(secret/**) from setup() denies reading secret/s.txt"
        );
        assert_eq!(d.reason().rule.as_deref(), Some("Read(secret/**)"));
        let d = reading(
            Mode::Default,
            &deny,
            "grep -r SECRET .",
            &["c:.env", "c:src/a.rs", "c:secret/s.txt"],
        );
        assert_eq!(verdict(&d), "deny", "a deny beats an ask from another path");
        let d = reading(Mode::Default, &[], "cat .en*", &["c:.env"]);
        assert_eq!(verdict(&d), "ask");
        assert_eq!(d.reason().kind, ReasonKind::Protected);
        assert_eq!(
            d.reason().text,
            "the command reads .env, and .env (.env files) always asks"
        );
        let d = reading(Mode::Default, &[], "grep -r x .", &["c:.git/"]);
        assert_eq!(
            d.reason().text,
            "the command reads .git/, and anything inside .git/ always asks"
        );
        let ask = [(RuleKind::Ask, "Read(notes/**)", RuleSource::Setup)];
        let d = reading(Mode::Default, &ask, "cat notes/a.md", &["c:notes/a.md"]);
        assert_eq!(verdict(&d), "ask");
        assert_eq!(
            d.reason().text,
            "the command reads notes/a.md, and rule Read(notes/**) from setup() asks"
        );
        assert_eq!(
            verdict(&reading(
                Mode::Default,
                &[],
                "cat src/a.rs",
                &["c:src/a.rs"]
            )),
            "allow"
        );
    }

    #[test]
    fn git_objects_meet_deny_and_ask_rules_but_not_protected_names() {
        let deny = [(RuleKind::Deny, "Read(secret/**)", RuleSource::Setup)];
        let ask = [(RuleKind::Ask, "Read(secret/**)", RuleSource::Setup)];
        type Row<'a> = (
            &'a [(RuleKind, &'a str, RuleSource)],
            &'a [&'a str],
            &'a str,
        );
        let cases: &[Row] = &[
            (&deny, &["o:src/a.rs", "o:secret/s.txt"], "deny"),
            (&ask, &["o:src/a.rs", "o:secret/s.txt"], "ask"),
            (&ask, &["o:src/a.rs", "o:.env", "o:.git/"], "allow"),
            (&[], &["o:.env", "o:.claude/settings.json"], "allow"),
            (&[], &["o:src/a.rs", "c:.env"], "ask"),
        ];
        for (list, paths, want) in cases {
            let d = reading(Mode::Default, list, "git log -p", paths);
            assert_eq!(verdict(&d), *want, "{paths:?}");
        }
    }

    #[test]
    fn names_only_meet_deny_rules() {
        let deny = [(RuleKind::Deny, "Read(secret/**)", RuleSource::Setup)];
        assert_eq!(
            verdict(&reading(
                Mode::Default,
                &deny,
                "find .",
                &["n:.env", "n:src/a.rs"]
            )),
            "allow"
        );
        assert_eq!(
            verdict(&reading(
                Mode::Default,
                &deny,
                "find .",
                &["n:secret/s.txt"]
            )),
            "deny"
        );
        assert_eq!(
            verdict(&reading(Mode::Default, &deny, "ls", &["n:secret/"])),
            "deny",
            "a folder a deny rule covers the contents of"
        );
    }

    #[test]
    fn reads_ask_in_every_mode_and_beat_allow_rules() {
        let allow = [(RuleKind::Allow, "Bash(cat:*)", RuleSource::Setup)];
        assert_eq!(
            verdict(&reading(Mode::Default, &allow, "cat .env", &["c:.env"])),
            "ask"
        );
        assert_eq!(
            verdict(&reading(
                Mode::BypassPermissions,
                &[],
                "cat .env",
                &["c:.env"]
            )),
            "ask"
        );
        let deny = [(RuleKind::Deny, "Read(secret/**)", RuleSource::Setup)];
        assert_eq!(
            verdict(&reading(
                Mode::Plan,
                &deny,
                "cat secret/s.txt",
                &["c:secret/s.txt"]
            )),
            "deny"
        );
    }

    #[test]
    fn reads_that_were_not_all_checked_ask() {
        let mut req = bash("grep -r x /", true, &[]);
        req.reads_unchecked = Some("too many");
        let d = decide(&rules(Mode::BypassPermissions, &[]), &req);
        assert_eq!(verdict(&d), "ask");
        assert_eq!(d.reason().text, "too many");
    }

    #[test]
    fn compound_bash_is_allowed_only_when_every_part_is() {
        let r = rules(
            Mode::Default,
            &[
                (RuleKind::Allow, "Bash(npm run test:*)", RuleSource::Setup),
                (RuleKind::Allow, "Bash(git status)", RuleSource::Setup),
                (RuleKind::Deny, "Bash(rm:*)", RuleSource::Setup),
            ],
        );
        let cases = [
            ("npm run test -- --watch", "allow"),
            ("npm run test && git status", "allow"),
            ("npm run testing", "ask"),
            ("npm run test && make", "ask"),
            ("npm run test; rm -rf build", "deny"),
            ("echo $(rm -rf /)", "deny"),
            ("git status > status.txt", "ask"),
            ("git status 2>/dev/null", "allow"),
            ("git status | rm x", "deny"),
        ];
        for (cmd, want) in cases {
            assert_eq!(verdict(&decide(&r, &bash(cmd, false, &[]))), want, "{cmd}");
        }
    }

    #[test]
    fn a_bare_bash_rule_covers_even_a_line_that_cannot_be_split() {
        let r = rules(
            Mode::Default,
            &[(RuleKind::Allow, "Bash", RuleSource::Setup)],
        );
        assert_eq!(
            verdict(&decide(&r, &bash("cat <<EOF\nx\nEOF", false, &[]))),
            "allow"
        );
        let r = rules(
            Mode::Default,
            &[(RuleKind::Allow, "Bash(cat:*)", RuleSource::Setup)],
        );
        assert_eq!(
            verdict(&decide(&r, &bash("cat <<EOF\nx\nEOF", false, &[]))),
            "ask"
        );
    }

    #[test]
    fn modes() {
        let plan = rules(Mode::Plan, &[(RuleKind::Allow, "Edit", RuleSource::Setup)]);
        let d = decide(&plan, &file("Edit", false, "/w/proj/a"));
        assert_eq!(verdict(&d), "deny");
        assert_eq!(d.reason().kind, ReasonKind::Mode);
        assert_eq!(verdict(&decide(&plan, &bash("make", false, &[]))), "deny");
        assert_eq!(verdict(&decide(&plan, &bash("ls", true, &[]))), "allow");

        let bypass = rules(
            Mode::BypassPermissions,
            &[(RuleKind::Deny, "Bash(rm:*)", RuleSource::Setup)],
        );
        assert_eq!(
            verdict(&decide(&bypass, &bash("make", false, &[]))),
            "allow"
        );
        assert_eq!(verdict(&decide(&bypass, &bash("rm x", false, &[]))), "deny");
        assert_eq!(
            verdict(&decide(&bypass, &file("Edit", false, "/w/proj/.env"))),
            "ask",
            "protected paths ask in every mode"
        );
        let bypass_asking = rules(
            Mode::BypassPermissions,
            &[(RuleKind::Ask, "Bash(git push:*)", RuleSource::Setup)],
        );
        assert_eq!(
            verdict(&decide(&bypass_asking, &bash("git push", false, &[]))),
            "ask",
            "an ask rule asks in every mode (:help lathe-modes)"
        );

        let accept = rules(Mode::AcceptEdits, &[]);
        assert_eq!(
            verdict(&decide(&accept, &file("Write", false, "/w/proj/a"))),
            "allow"
        );
        assert_eq!(
            verdict(&decide(&accept, &file("Write", false, "/q/a"))),
            "ask"
        );
        assert_eq!(verdict(&decide(&accept, &bash("make", false, &[]))), "ask");
    }

    #[test]
    fn protected_paths_ask_even_with_an_allow_rule_but_obey_deny() {
        let r = rules(
            Mode::Default,
            &[
                (RuleKind::Allow, "Read", RuleSource::Setup),
                (RuleKind::Deny, "Read(.env.prod)", RuleSource::Setup),
            ],
        );
        assert_eq!(
            verdict(&decide(&r, &file("Read", true, "/w/proj/.env"))),
            "ask"
        );
        assert_eq!(
            verdict(&decide(&r, &file("Read", true, "/w/proj/.env.prod"))),
            "deny"
        );
    }

    #[test]
    fn every_name_of_a_path_meets_deny_and_ask_rules_and_protected_names() {
        let r = rules(
            Mode::BypassPermissions,
            &[
                (RuleKind::Deny, "Edit(//abs/outside/**)", RuleSource::Setup),
                (RuleKind::Ask, "Read(./link/**)", RuleSource::Setup),
                (RuleKind::Allow, "Read(./allowed/**)", RuleSource::Setup),
            ],
        );
        fn spelled<'a>(
            tool: &'static str,
            read_only: bool,
            real: &'static str,
            names: &'a [PathBuf],
        ) -> Request<'a> {
            let mut req: Request<'a> = file(tool, read_only, real);
            req.spellings = names;
            req
        }
        let out = [PathBuf::from("/w/proj/out/new.txt")];
        let link = [PathBuf::from("/w/proj/link/a")];
        let env = [PathBuf::from("/w/proj/.env")];
        let claude = [PathBuf::from("/w/proj/.claude/settings.local.json")];
        let allowed = [PathBuf::from("/w/proj/allowed/a")];
        let cases: Vec<(&str, Request<'_>, &str)> = vec![
            (
                "deny on the real path",
                spelled("Write", false, "/abs/outside/new.txt", &out),
                "deny",
            ),
            (
                "deny on the real path, in the project as given",
                spelled("Write", false, "/abs/outside/x", &[]),
                "deny",
            ),
            (
                "ask on the name as given",
                spelled("Read", true, "/elsewhere/a", &link),
                "ask",
            ),
            (
                "protected by the link's name",
                spelled("Read", true, "/w/proj/envs/dev", &env),
                "ask",
            ),
            (
                "settings through a link",
                spelled("Write", false, "/w/proj/other/settings.local.json", &claude),
                "ask",
            ),
            (
                "an allow on another name opens nothing",
                spelled("Read", true, "/w/proj/x/a", &allowed),
                "allow",
            ),
        ];
        for (what, req, want) in cases {
            assert_eq!(verdict(&decide(&r, &req)), want, "{what}");
        }
        let default = rules(
            Mode::Default,
            &[(RuleKind::Allow, "Read(./allowed/**)", RuleSource::Setup)],
        );
        let req = spelled("Read", true, "/elsewhere/a", &allowed);
        assert_eq!(
            verdict(&decide(&default, &req)),
            "ask",
            "allow rules go by the real path"
        );
    }

    #[test]
    fn writes_to_configuration_that_runs_programs_ask_reads_do_not() {
        let accept = rules(Mode::AcceptEdits, &[]);
        for p in [
            "/w/proj/.vscode/tasks.json",
            "/w/proj/.claude/commands/x.md",
            "/w/proj/.mcp.json",
            "/w/proj/.bashrc",
            "/w/proj/.ZSHRC",
            "/w/proj/.config/fish/config.fish",
            "/w/proj/.gitattributes",
            "/w/proj/.npmrc",
            "/w/proj/.cargo/config.toml",
        ] {
            let path: &'static str = p;
            assert_eq!(
                verdict(&decide(&accept, &file("Write", false, path))),
                "ask",
                "{p}"
            );
            assert_eq!(
                verdict(&decide(&accept, &file("Read", true, path))),
                "allow",
                "{p}"
            );
        }
        let mut layout = file("Write", false, "/w/proj/bare/HEAD");
        assert_eq!(verdict(&decide(&accept, &layout)), "allow");
        layout.git_layout = true;
        let d = decide(&accept, &layout);
        assert_eq!(verdict(&d), "ask");
        assert_eq!(d.reason().kind, ReasonKind::Protected);
        let bypass = rules(Mode::BypassPermissions, &[]);
        assert_eq!(
            verdict(&decide(&bypass, &file("Edit", false, "/w/proj/.bashrc"))),
            "ask"
        );
        let sed = [PathBuf::from("/w/proj/.bashrc")];
        assert_eq!(
            verdict(&decide(
                &bypass,
                &bash("sed -i s/a/b/ .bashrc", false, &sed)
            )),
            "ask"
        );
        assert_eq!(
            verdict(&decide(&bypass, &bash("cat .bashrc", true, &sed))),
            "allow"
        );
    }

    #[test]
    fn an_invalid_rule_denies_its_tool_and_says_so() {
        let mut r = rules(Mode::Default, &[]);
        let source = RuleSource::ProjectSettings(PathBuf::from("/w/proj/.claude/settings.json"));
        r.entries.push(SourcedRule {
            rule: Rule::tool("Bash"),
            kind: RuleKind::Deny,
            source,
            invalid: Some("Bash(npm test".into()),
        });
        let d = decide(&r, &bash("ls", true, &[]));
        assert_eq!(verdict(&d), "deny");
        assert_eq!(d.reason().kind, ReasonKind::InvalidRule);
        assert_eq!(
            d.reason().text,
            "the invalid rule \"Bash(npm test\" in .claude/settings.json denies Bash until it is fixed"
        );
    }

    #[test]
    fn other_tools_match_rules_on_their_input() {
        let r = rules(
            Mode::Default,
            &[(RuleKind::Allow, "SearchIssues(*lathe*)", RuleSource::Setup)],
        );
        let mut req = bash("", false, &[]);
        req.tool = "SearchIssues";
        req.command = None;
        req.input_json = r#"{"query":"lathe"}"#;
        assert_eq!(verdict(&decide(&r, &req)), "allow");
        req.input_json = r#"{"query":"x"}"#;
        assert_eq!(verdict(&decide(&r, &req)), "ask");
    }

    /// A slash command's `allowed-tools` are allow rules like any other:
    /// deny and ask rules, protected paths, plan mode, compound lines and
    /// the sandbox still win; with the sandbox off, its exact rule is not
    /// the user's, so the command asks.
    #[test]
    fn a_commands_allowed_tools_meet_every_gate_an_allow_rule_meets() {
        use RuleKind::{Allow, Ask, Deny};
        let cmd = || RuleSource::Command("evil".into());
        let with = |mode: Mode, list: &[(RuleKind, &str)], sandbox_off: bool| {
            let list: Vec<(RuleKind, &str, RuleSource)> = list
                .iter()
                .map(|(k, r)| {
                    let source = if *k == Allow {
                        cmd()
                    } else {
                        RuleSource::Setup
                    };
                    (*k, *r, source)
                })
                .collect();
            let mut r = rules(mode, &list);
            if sandbox_off {
                r.sandbox.off = Some("the kernel has no Landlock".into());
            }
            r
        };
        let git = [(Allow, "Bash(git diff:*)")];
        let mut unsandboxed = bash("ls", false, &[]);
        unsandboxed.input_json = r#"{"command":"ls","dangerouslyDisableSandbox":true}"#;
        let cases: Vec<(&str, Rules, Request<'_>, &str)> = vec![
            (
                "its prefix",
                with(Mode::Default, &git, false),
                bash("git diff HEAD", false, &[]),
                "allow",
            ),
            (
                "a second command",
                with(Mode::Default, &git, false),
                bash("git diff && rm -rf src", false, &[]),
                "ask",
            ),
            (
                "a substitution",
                with(Mode::Default, &git, false),
                bash("git diff $(rm -rf src)", false, &[]),
                "ask",
            ),
            (
                "a pipe",
                with(Mode::Default, &git, false),
                bash("git diff | sh", false, &[]),
                "ask",
            ),
            (
                "a redirect",
                with(Mode::Default, &[(Allow, "Bash(echo:*)")], false),
                bash("echo x > .bashrc", false, &[]),
                "ask",
            ),
            (
                "a deny rule",
                with(
                    Mode::Default,
                    &[(Allow, "Bash"), (Deny, "Bash(rm:*)")],
                    false,
                ),
                bash("rm -rf src", false, &[]),
                "deny",
            ),
            (
                "an ask rule",
                with(
                    Mode::Default,
                    &[(Allow, "Bash(git:*)"), (Ask, "Bash(git push:*)")],
                    false,
                ),
                bash("git push", false, &[]),
                "ask",
            ),
            (
                "plan mode",
                with(Mode::Plan, &[(Allow, "Write")], false),
                file("Write", false, "/w/proj/a.txt"),
                "deny",
            ),
            (
                "settings",
                with(
                    Mode::Default,
                    &[(Allow, "Edit(.claude/settings*.json)")],
                    false,
                ),
                file("Edit", false, "/w/proj/.claude/settings.local.json"),
                "ask",
            ),
            (
                "its own folder",
                with(Mode::Default, &[(Allow, "Write(.claude/**)")], false),
                file("Write", false, "/w/proj/.claude/commands/evil.md"),
                "ask",
            ),
            (
                "git's hooks",
                with(Mode::Default, &[(Allow, "Write")], false),
                file("Write", false, "/w/proj/.git/hooks/pre-commit"),
                "ask",
            ),
            (
                "the whole tool, sandboxed",
                with(Mode::Default, &[(Allow, "Bash")], false),
                bash("curl x | sh", false, &[]),
                "allow",
            ),
            (
                "out of the sandbox",
                with(Mode::Default, &[(Allow, "Bash")], false),
                unsandboxed,
                "ask",
            ),
            (
                "sandbox off: its exact rule",
                with(Mode::Default, &[(Allow, "Bash(make deploy)")], true),
                bash("make deploy", false, &[]),
                "ask",
            ),
            (
                "sandbox off: the whole tool",
                with(Mode::Default, &[(Allow, "Bash")], true),
                bash("make deploy", false, &[]),
                "ask",
            ),
        ];
        for (what, rules, req, want) in &cases {
            let d = decide(rules, req);
            assert_eq!(verdict(&d), *want, "{what}: {d:?}");
        }
        // The same exact rule from the user runs with the sandbox off.
        let mut mine = rules(
            Mode::Default,
            &[(Allow, "Bash(make deploy)", RuleSource::Setup)],
        );
        mine.sandbox.off = Some("the kernel has no Landlock".into());
        assert_eq!(
            verdict(&decide(&mine, &bash("make deploy", false, &[]))),
            "allow"
        );
    }

    #[test]
    fn bash_runs_without_asking_only_inside_the_sandbox() {
        use RuleKind::{Allow, Deny};
        let src = RuleSource::Setup;
        let off = |mode: Mode, list: &[(RuleKind, &str, RuleSource)]| {
            let mut r = rules(mode, list);
            r.sandbox.off = Some("the kernel has no Landlock".into());
            r
        };
        let flagged = r#"{"command":"ls","dangerouslyDisableSandbox":true}"#;
        let unflagged = r#"{"command":"ls","dangerouslyDisableSandbox":false}"#;
        let with_input = |command: &'static str, read_only: bool, json: &'static str| {
            let mut req = bash(command, read_only, &[]);
            req.input_json = json;
            req
        };
        let cases: Vec<(&str, Rules, Request<'_>, &str)> = vec![
            // The sandbox off: what would run without asking asks …
            (
                "off: read-only list",
                off(Mode::Default, &[]),
                bash("ls -la", true, &[]),
                "ask",
            ),
            (
                "off: plan mode read-only",
                off(Mode::Plan, &[]),
                bash("git status", true, &[]),
                "ask",
            ),
            (
                "off: a prefix rule",
                off(
                    Mode::Default,
                    &[(Allow, "Bash(npm run test:*)", src.clone())],
                ),
                bash("npm run test", false, &[]),
                "ask",
            ),
            (
                "off: a wildcard rule",
                off(Mode::Default, &[(Allow, "Bash(npm *)", src.clone())]),
                bash("npm test", false, &[]),
                "ask",
            ),
            (
                "off: the whole tool",
                off(Mode::Default, &[(Allow, "Bash", src.clone())]),
                bash("make", false, &[]),
                "ask",
            ),
            (
                "off: one part not exact",
                off(
                    Mode::Default,
                    &[
                        (Allow, "Bash(npm test)", src.clone()),
                        (Allow, "Bash(ls:*)", src.clone()),
                    ],
                ),
                bash("npm test && ls", false, &[]),
                "ask",
            ),
            // … except what an exact rule names, and bypassPermissions.
            (
                "off: an exact rule",
                off(Mode::Default, &[(Allow, "Bash(npm test)", src.clone())]),
                bash("npm test", false, &[]),
                "allow",
            ),
            (
                "off: bypass",
                off(Mode::BypassPermissions, &[]),
                bash("make", false, &[]),
                "allow",
            ),
            (
                "off: deny still denies",
                off(
                    Mode::BypassPermissions,
                    &[(Deny, "Bash(rm:*)", src.clone())],
                ),
                bash("rm -rf x", false, &[]),
                "deny",
            ),
            // The model asking to leave the sandbox always asks.
            (
                "flag: read-only",
                rules(Mode::Default, &[]),
                with_input("ls", true, flagged),
                "ask",
            ),
            (
                "flag: bypass",
                rules(Mode::BypassPermissions, &[]),
                with_input("ls", true, flagged),
                "ask",
            ),
            (
                "flag: allowed by rule",
                rules(Mode::Default, &[(Allow, "Bash", src.clone())]),
                with_input("ls", true, flagged),
                "ask",
            ),
            (
                "flag: deny still denies",
                rules(Mode::Default, &[(Deny, "Bash(ls:*)", src.clone())]),
                with_input("ls", true, flagged),
                "deny",
            ),
            (
                "flag false: as usual",
                rules(Mode::Default, &[]),
                with_input("ls", true, unflagged),
                "allow",
            ),
            (
                "on: read-only list",
                rules(Mode::Default, &[]),
                bash("ls -la", true, &[]),
                "allow",
            ),
        ];
        let wrong: Vec<String> = cases
            .iter()
            .filter_map(|(name, rules, req, want)| {
                let got = decide(rules, req);
                (verdict(&got) != *want).then(|| format!("{name}: want {want}, got {got:?}"))
            })
            .collect();
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
        let asked = decide(&off(Mode::Default, &[]), &bash("ls", true, &[]));
        assert_eq!(
            asked.reason().text,
            "the sandbox is off (the kernel has no Landlock), so Bash asks unless an exact allow rule covers the command"
        );
        assert_eq!(asked.reason().kind, ReasonKind::Sandbox);
        assert_eq!(
            decide(&rules(Mode::Default, &[]), &with_input("ls", true, flagged)).reason().text,
            "the model asks to run it outside the sandbox (dangerouslyDisableSandbox), which always asks"
        );
    }

    #[test]
    fn deny_and_ask_rules_see_through_wrappers_allow_rules_do_not() {
        let r = rules(
            Mode::Default,
            &[
                (RuleKind::Deny, "Bash(rm:*)", RuleSource::Setup),
                (RuleKind::Ask, "Bash(git push:*)", RuleSource::Setup),
                (RuleKind::Allow, "Bash(env:*)", RuleSource::Setup),
                (RuleKind::Allow, "Bash(curl:*)", RuleSource::Setup),
            ],
        );
        let cases = [
            ("env rm -rf x", "deny"),
            ("command rm x", "deny"),
            ("nice -n 5 rm x", "deny"),
            ("timeout 5 rm x", "deny"),
            ("find . | xargs rm", "deny"),
            ("env -i FOO=1 rm x", "deny"),
            ("sudo rm x", "deny"),
            ("FOO=1 rm x", "deny"),
            ("nohup env git push", "ask"),
            ("timeout 60 git push origin main", "ask"),
            // an allow rule allows the command as written, no more
            ("env FOO=1 make", "allow"),
            ("timeout 5 curl x", "ask"),
            ("env ls", "allow"),
        ];
        for (cmd, want) in cases {
            assert_eq!(verdict(&decide(&r, &bash(cmd, false, &[]))), want, "{cmd}");
        }
    }

    #[test]
    fn bash_deny_rules_hold_where_the_line_cannot_be_checked() {
        use RuleKind::{Allow, Deny};
        let src = RuleSource::Setup;
        let r = |mode| {
            rules(
                mode,
                &[
                    (Allow, "Bash", src.clone()),
                    (Deny, "Bash(rm:*)", src.clone()),
                ],
            )
        };
        let cases: &[(&str, Mode, &str)] = &[
            ("/bin/rm victim", Mode::Default, "deny"),
            // By its name too: conservative for a local script called rm.
            ("./rm victim", Mode::Default, "deny"),
            ("env /usr/bin/rm victim", Mode::Default, "deny"),
            ("eval 'r''m victim'", Mode::Default, "ask"),
            ("x=rm; $x victim", Mode::Default, "ask"),
            (
                "f(){ rm \"$@\"; }; f victim",
                Mode::BypassPermissions,
                "ask",
            ),
            ("$(echo rm) victim", Mode::BypassPermissions, "ask"),
            (
                "shopt -s expand_aliases; alias r=rm\nr victim",
                Mode::Default,
                "ask",
            ),
            ("ls $HOME", Mode::Default, "allow"),
            ("echo $(date)", Mode::Default, "allow"),
        ];
        let wrong: Vec<String> = cases
            .iter()
            .filter_map(|(line, mode, want)| {
                let got = decide(&r(*mode), &bash(line, false, &[]));
                (verdict(&got) != *want).then(|| format!("{line}: want {want}, got {got:?}"))
            })
            .collect();
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
        assert_eq!(
            decide(&r(Mode::Default), &bash("x=rm; $x victim", false, &[])).reason().text,
            "rule Bash(rm:*) from setup() covers some commands, and this command line cannot be checked against it (the program $x is known only when the shell runs it)"
        );
        // Without a specifier rule, nothing changes.
        let plain = rules(Mode::Default, &[(Allow, "Bash", src.clone())]);
        assert_eq!(
            verdict(&decide(&plain, &bash("eval 'r''m victim'", false, &[]))),
            "allow"
        );
    }
}
