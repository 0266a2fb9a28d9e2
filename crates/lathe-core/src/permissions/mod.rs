//! Permissions: rules from every source, modes, session grants, the pure
//! [`decide`] function (gate 6 in docs/pipeline.md, "The gates") and the
//! [`Prompter`] seam the float implements. Claude Code's permission model:
//! deny > ask > allow, whichever source a rule comes from.

pub mod bash_reads;
mod decide;
pub mod options;
mod paths;
mod prompter;
mod read_access;
mod read_walk;
mod rule;
mod sandboxed;
pub mod shell;
mod suggest;

pub use bash_reads::{command_reads, CommandReads, ReadPath};
pub use decide::{
    decide, is_inside, read_access, wants_no_sandbox, Decision, ReadAccess, Reason, ReasonKind,
    Request, ASKS_SANDBOX_OFF, ASKS_UNSANDBOXED, READ,
};
pub use paths::{
    resolve_for_rules, spell, with_aliases, writes_git_layout, Aliases, Spelled, MAX_LINKS,
};
pub use prompter::{
    Burst, CommandPreview, PermissionPreview, PromptAnswer, Prompter, QueuedChange, Revision,
    ScriptedPrompter,
};
pub use read_access::hidden_twin;
pub use read_access::{read_access_spelled, ReadFilter};
pub use read_walk::{
    expand_named_path, follows_links, reach, reach_following, Reached, READS_UNCHECKED,
    READ_CHECK_LIMIT,
};
pub use rule::{covers, rule_family, Rule, RuleBase, RuleFamily, RuleParseError, RULE_FAMILIES};
pub use sandboxed::{hidden_paths, linked_hidden, HIDE_CHECK_LIMIT};
pub use suggest::suggest_rules;

use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

/// How permissive the session is: `setup{ permissions = { mode = … } }`,
/// `defaultMode` in a settings file, or `:Lathe mode {name}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Edits and commands ask; read-only tools inside the project run.
    #[default]
    Default,
    /// Edits inside the project run without asking.
    AcceptEdits,
    /// Nothing that changes files or runs programs: Edit and Write are
    /// refused, Bash runs only read-only commands; the model is told why.
    Plan,
    /// No asks, not even from ask rules: everything runs unless a deny rule
    /// refuses it (protected paths still ask).
    BypassPermissions,
}

impl Mode {
    /// Every mode, in the order `:Lathe mode` completes them.
    pub const ALL: [Mode; 4] = [
        Mode::Default,
        Mode::AcceptEdits,
        Mode::Plan,
        Mode::BypassPermissions,
    ];

    /// Parses `"default"`, `"acceptEdits"`, `"plan"` or
    /// `"bypassPermissions"` (Claude Code's spellings).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == s)
    }

    /// The setting's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::AcceptEdits => "acceptEdits",
            Mode::Plan => "plan",
            Mode::BypassPermissions => "bypassPermissions",
        }
    }
}

/// Where a rule came from, for messages ("rule Edit(x) from
/// .claude/settings.json").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleSource {
    /// `setup{ permissions = … }`.
    Setup,
    /// The project's `.claude/settings.json`.
    ProjectSettings(PathBuf),
    /// The project's `.claude/settings.local.json`.
    LocalSettings(PathBuf),
    /// The user's `~/.claude/settings.json`.
    UserSettings(PathBuf),
    /// Granted in the float this session (`a`).
    Session,
    /// A slash command's `allowed-tools`, for the one turn it started
    /// (`/name`, docs/commands.md).
    Command(String),
}

impl fmt::Display for RuleSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let RuleSource::Command(name) = self {
            return write!(f, "/{name} for this turn");
        }
        f.write_str(match self {
            RuleSource::Command(_) => "",
            RuleSource::Setup => "setup()",
            RuleSource::ProjectSettings(_) => ".claude/settings.json",
            RuleSource::LocalSettings(_) => ".claude/settings.local.json",
            RuleSource::UserSettings(_) => "~/.claude/settings.json",
            RuleSource::Session => "this session",
        })
    }
}

/// Which list a rule is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleKind {
    /// `permissions.allow`.
    Allow,
    /// `permissions.ask`.
    Ask,
    /// `permissions.deny`.
    Deny,
}

/// One rule with its list and source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourcedRule {
    /// The rule.
    pub rule: Rule,
    /// Its list.
    pub kind: RuleKind,
    /// Where it came from.
    pub source: RuleSource,
    /// For a rule that did not parse: the rule as written. It then stands as
    /// a deny of its whole tool until fixed.
    pub invalid: Option<String>,
}

/// The rules in force: every source's, plus those granted this session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    /// The mode.
    pub mode: Mode,
    /// Every rule, in source order (setup, local, project, user, session).
    pub entries: Vec<SourcedRule>,
    /// Folders outside the root that count as inside
    /// (`additionalDirectories`), canonical.
    pub additional_dirs: Vec<PathBuf>,
    /// Folders of lathe's own saved tool output, canonical: Bash output cut
    /// from a result (`<state>/bash-output`) and this session's large
    /// results (`<state>/tool-results/<session>`). A read-only file tool
    /// (Read, Grep, Glob) reads there without the default "outside the
    /// project" ask: the model was handed the path in a `tool_result` and
    /// told to read it (Claude Code likewise lets the model read its saved
    /// tool results). Deny and ask rules and protected paths still apply.
    /// Set by the session ([`Rules::with_output_dirs`]).
    pub output_dirs: Vec<PathBuf>,
    /// The sandbox Bash commands run in (`setup{ sandbox }`, the settings
    /// files' `sandbox`), and whether it can be had here.
    pub sandbox: SandboxSettings,
}

/// What the sandbox settings say, and whether the sandbox is on
/// (docs/sandbox.md, "The sandbox").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxSettings {
    /// Why Bash commands cannot run in the sandbox (`sandbox.enabled =
    /// false`, or what the kernel lacks), `None` when they can. While it is
    /// off, every Bash call asks unless an exact allow rule covers it or
    /// the mode is bypassPermissions.
    pub off: Option<String>,
    /// Commands run without asking may use the network
    /// (`sandbox.network = true`). Default: no network.
    pub network: bool,
    /// Folders a command allowed to write may write besides the project,
    /// the temp dir and lathe's output folders
    /// (`sandbox.filesystem.allowWrite`), canonical.
    pub allow_write: Vec<PathBuf>,
    /// Paths no sandboxed command can open, besides those Read deny and ask
    /// rules and the secret protected names cover
    /// (`sandbox.filesystem.denyRead`), canonical.
    pub deny_read: Vec<PathBuf>,
}

impl Rules {
    /// These rules with `dirs` as [`Rules::output_dirs`], each made canonical
    /// ([`resolve_for_rules`]: a folder not created yet resolves below its
    /// deepest existing parent).
    pub fn with_output_dirs(mut self, dirs: &[PathBuf]) -> Self {
        self.output_dirs = dirs.iter().map(|d| resolve_for_rules(d)).collect();
        self
    }

    /// These rules with the sandbox off for `unavailable` (what the kernel
    /// lacks, `sandbox::support().unavailable()`), unless the settings
    /// turned it off already.
    pub fn with_sandbox_support(mut self, unavailable: Option<String>) -> Self {
        if self.sandbox.off.is_none() {
            self.sandbox.off = unavailable;
        }
        self
    }

    /// Adds `rule` to the `kind` list from `source`.
    pub fn push(&mut self, kind: RuleKind, rule: Rule, source: RuleSource) {
        self.entries.push(SourcedRule {
            rule,
            kind,
            source,
            invalid: None,
        });
    }

    /// Adds what an invalid rule stands for: a deny of its tool, from
    /// `source` (`err.tool` must be set; otherwise nothing is added).
    pub fn push_invalid(&mut self, err: &RuleParseError, source: RuleSource) {
        if let Some(tool) = &err.tool {
            self.entries.push(SourcedRule {
                rule: Rule::tool(tool),
                kind: RuleKind::Deny,
                source,
                invalid: Some(err.rule.clone()),
            });
        }
    }

    /// `true` when some deny or ask rule covers Read: only then can a
    /// whole-repository read of git's objects (`git log -p`) be denied or
    /// ask, so only then is the repository walked.
    pub fn read_rules(&self) -> bool {
        self.entries.iter().any(|r| {
            matches!(r.kind, RuleKind::Deny | RuleKind::Ask)
                && rule::covers(r.rule.tool_name(), READ.0, READ.1)
        })
    }

    /// The rules of `kind`, in order.
    pub fn of(&self, kind: RuleKind) -> impl Iterator<Item = &Rule> {
        self.entries
            .iter()
            .filter(move |r| r.kind == kind)
            .map(|r| &r.rule)
    }
}

/// The model-facing result text when the user declines a call.
pub const USER_DECLINED: &str =
    "The user declined this tool call; nothing was written or run. Ask the user how to proceed, or try a different approach.";

/// The model-facing result when the user declines and says why. `{message}`.
pub const USER_DECLINED_WITH_MESSAGE: &str =
    "The user declined this tool call; nothing was written or run. The user said: {message}";

/// The model-facing result text when a deny rule refuses a call; `{reason}`
/// names the rule and its source.
pub const DENIED_BY_RULE: &str =
    "Permission to use {tool} was denied ({reason}); nothing was written or run. Do not retry this call; choose another approach or ask the user.";

/// The model-facing result in plan mode. `{tool}`.
pub const DENIED_IN_PLAN_MODE: &str =
    "The session is in plan mode, so {tool} calls that change files or run programs are not available; nothing was written or run. Investigate with Read, Grep, Glob and read-only Bash, then present your plan to the user; they switch modes to let you carry it out.";

/// The rules of one session: the configured ones plus grants the user gave
/// in the float, and the current mode. Shared by every tool call.
///
/// Like `FileState`, a staged state (see [`PermissionState::staged`]) keeps
/// its grants until [`PermissionState::commit`], so concurrent calls apply
/// their grants in call order.
#[derive(Debug, Default)]
pub struct PermissionState {
    rules: Mutex<Rules>,
    parent: Option<Arc<PermissionState>>,
}

impl PermissionState {
    /// Starts from the configured `rules`.
    pub fn new(rules: Rules) -> Self {
        Self {
            rules: Mutex::new(rules),
            parent: None,
        }
    }

    /// A state deciding with `parent`'s rules plus its own, not yet
    /// committed grants.
    pub fn staged(parent: &Arc<PermissionState>) -> Self {
        Self {
            rules: Mutex::new(Rules::default()),
            parent: Some(parent.clone()),
        }
    }

    /// [`decide`] against the rules in force (a staged state adds its own
    /// grants to the parent's).
    pub fn decide(&self, req: &Request<'_>) -> Decision {
        decide(&self.rules(), req)
    }

    /// A copy of the rules in force (a staged state's include its grants).
    pub fn rules(&self) -> Rules {
        match &self.parent {
            None => self.lock().clone(),
            Some(parent) => {
                let mut rules = parent.rules();
                rules.entries.extend(self.lock().entries.iter().cloned());
                rules
            }
        }
    }

    /// The mode in force.
    pub fn mode(&self) -> Mode {
        match &self.parent {
            None => self.lock().mode,
            Some(parent) => parent.mode(),
        }
    }

    /// Switches the session to `mode` (`:Lathe mode`); on a staged state,
    /// its parent's.
    pub fn set_mode(&self, mode: Mode) {
        match &self.parent {
            None => self.lock().mode = mode,
            Some(parent) => parent.set_mode(mode),
        }
    }

    /// Moves a staged state's grants into its parent (no-op without one).
    pub fn commit(&self) {
        if let Some(parent) = &self.parent {
            let grants: Vec<SourcedRule> = std::mem::take(&mut self.lock().entries);
            for g in grants {
                parent.grant(g.rule);
            }
        }
    }

    /// Allows calls matching `rule` for the rest of the session (still below
    /// deny and ask rules and protected paths). A rule already granted is
    /// not added twice.
    pub fn grant(&self, rule: Rule) {
        let mut rules = self.lock();
        let exists = rules.entries.iter().any(|r| {
            r.kind == RuleKind::Allow && r.source == RuleSource::Session && r.rule == rule
        });
        if !exists {
            rules.push(RuleKind::Allow, rule, RuleSource::Session);
        }
    }

    /// Allows calls matching `rules` until [`PermissionState::revoke_command`]
    /// (a slash command's `allowed-tools` for its turn); still below deny
    /// and ask rules, protected paths and the sandbox, like any allow rule.
    pub fn grant_command(&self, command: &str, rules: &[Rule]) {
        let mut state = self.lock();
        for rule in rules {
            state.push(
                RuleKind::Allow,
                rule.clone(),
                RuleSource::Command(command.to_string()),
            );
        }
    }

    /// Takes back what [`PermissionState::grant_command`] allowed.
    pub fn revoke_command(&self) {
        self.lock()
            .entries
            .retain(|r| !matches!(r.source, RuleSource::Command(_)));
    }

    /// Allows every call of `tool` for the rest of the session.
    pub fn grant_tool(&self, tool: &str) {
        self.grant(Rule::tool(tool));
    }

    fn lock(&self) -> MutexGuard<'_, Rules> {
        self.rules.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn req(tool: &'static str, read_only: bool, path: &'static str) -> Request<'static> {
        Request {
            tool,
            family: rule::rule_family(tool),
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
            root: Path::new("/p"),
        }
    }

    #[test]
    fn command_grant_lasts_until_revoked_and_never_beats_deny() {
        let mut rules = Rules::default();
        rules.push(RuleKind::Deny, Rule::tool("Write"), RuleSource::Setup);
        let state = PermissionState::new(rules);
        state.grant_command("review", &[Rule::tool("Write"), Rule::tool("Edit")]);
        assert!(matches!(
            state.decide(&req("Write", false, "/p/a")),
            Decision::Deny(_)
        ));
        let d = state.decide(&req("Edit", false, "/p/a"));
        assert!(matches!(d, Decision::Allow(_)));
        assert_eq!(
            d.reason().text,
            "rule Edit from /review for this turn allows"
        );
        state.revoke_command();
        assert!(matches!(
            state.decide(&req("Edit", false, "/p/a")),
            Decision::Ask(_)
        ));
    }

    #[test]
    fn session_grant_does_not_skip_ask_rules() {
        let mut rules = Rules::default();
        rules.push(RuleKind::Ask, Rule::tool("Write"), RuleSource::Setup);
        let state = PermissionState::new(rules);
        state.grant_tool("Write");
        state.grant_tool("Edit");
        assert!(matches!(
            state.decide(&req("Write", false, "/p/a")),
            Decision::Ask(_)
        ));
        let d = state.decide(&req("Edit", false, "/p/a"));
        assert!(matches!(d, Decision::Allow(_)));
        assert_eq!(d.reason().text, "rule Edit from this session allows");
    }

    #[test]
    fn staged_grants_wait_for_commit() {
        let shared = Arc::new(PermissionState::new(Rules::default()));
        let staged = PermissionState::staged(&shared);
        staged.grant_tool("Read");
        let outside = req("Read", true, "/etc/hosts");
        assert!(matches!(staged.decide(&outside), Decision::Allow(_)));
        assert!(matches!(shared.decide(&outside), Decision::Ask(_)));
        staged.commit();
        assert!(matches!(shared.decide(&outside), Decision::Allow(_)));
    }

    #[test]
    fn mode_switches_reach_the_session_from_a_staged_state() {
        let shared = Arc::new(PermissionState::new(Rules::default()));
        let staged = PermissionState::staged(&shared);
        staged.set_mode(Mode::Plan);
        assert_eq!(shared.mode(), Mode::Plan);
        assert_eq!(staged.mode(), Mode::Plan);
    }

    #[test]
    fn modes_parse_in_claude_codes_spelling() {
        for m in Mode::ALL {
            assert_eq!(Mode::parse(m.as_str()), Some(m));
        }
        assert_eq!(Mode::parse("yolo"), None);
    }

    #[test]
    fn golden_texts() {
        assert_eq!(
            USER_DECLINED,
            "The user declined this tool call; nothing was written or run. Ask the user how to proceed, or try a different approach."
        );
        assert_eq!(
            USER_DECLINED_WITH_MESSAGE,
            "The user declined this tool call; nothing was written or run. The user said: {message}"
        );
        assert_eq!(
            DENIED_BY_RULE,
            "Permission to use {tool} was denied ({reason}); nothing was written or run. Do not retry this call; choose another approach or ask the user."
        );
        assert_eq!(
            DENIED_IN_PLAN_MODE,
            "The session is in plan mode, so {tool} calls that change files or run programs are not available; nothing was written or run. Investigate with Read, Grep, Glob and read-only Bash, then present your plan to the user; they switch modes to let you carry it out."
        );
    }
}
