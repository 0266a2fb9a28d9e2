//! Permission rules and the pure [`decide`] function (gate 6 in
//! docs/architecture.md, "The gates").
//!
//! Order is strict: a matching **deny** rule wins, then **ask**, then
//! **allow** (configured or granted for the session); without a matching rule
//! the tool's default applies: read-only tools inside the project root are
//! allowed, everything else asks (in `acceptEdits` mode, edits inside the root
//! are allowed). This follows Claude Code's permission model.

mod prompter;
mod rule;

pub use prompter::{PermissionPreview, PromptAnswer, Prompter, ScriptedPrompter};
pub use rule::{Rule, RuleParseError};

use std::path::{Path, PathBuf};

/// How permissive the session is, from `setup{ permissions = { mode = … } }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Edits ask; read-only tools inside the root are allowed.
    #[default]
    Default,
    /// Edits inside the project root are allowed without asking.
    AcceptEdits,
}

impl Mode {
    /// Parses `"default"` or `"acceptEdits"`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "default" => Some(Mode::Default),
            "acceptEdits" => Some(Mode::AcceptEdits),
            _ => None,
        }
    }
}

/// The rules in force: configured ones plus those granted this session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    /// The mode.
    pub mode: Mode,
    /// Rules that allow without asking.
    pub allow: Vec<Rule>,
    /// Rules that always ask.
    pub ask: Vec<Rule>,
    /// Rules that refuse.
    pub deny: Vec<Rule>,
}

/// A call as the permission gate sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request<'a> {
    /// PascalCase tool name.
    pub tool: &'a str,
    /// `true` when the call cannot change anything.
    pub read_only: bool,
    /// The absolute path it touches, if any.
    pub path: Option<&'a Path>,
    /// The project root.
    pub root: &'a Path,
}

/// The gate's verdict, with the reason recorded on the result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Allow(String),
    /// Ask the user first.
    Ask(String),
    /// Refuse.
    Deny(String),
}

/// Decides one request against `rules` (pure; no I/O).
pub fn decide(rules: &Rules, req: &Request<'_>) -> Decision {
    if let Some(r) = rules.deny.iter().find(|r| r.matches(req)) {
        return Decision::Deny(format!("denied by rule {r}"));
    }
    if let Some(r) = rules.ask.iter().find(|r| r.matches(req)) {
        return Decision::Ask(format!("rule {r} asks"));
    }
    if let Some(r) = rules.allow.iter().find(|r| r.matches(req)) {
        return Decision::Allow(format!("allowed by rule {r}"));
    }
    let inside = req.path.is_none_or(|p| p.starts_with(req.root));
    // acceptEdits covers file edits inside the root: calls with a target
    // path. A call that changes things without naming a path (Bash) asks.
    let edit_inside = req.path.is_some_and(|p| p.starts_with(req.root));
    match (req.read_only, inside, rules.mode) {
        (true, true, _) => Decision::Allow("read-only inside the project".into()),
        (false, _, Mode::AcceptEdits) if edit_inside => Decision::Allow("acceptEdits mode".into()),
        (true, false, _) => Decision::Ask("outside the project root".into()),
        (false, _, _) => Decision::Ask("may change files or run programs".into()),
    }
}

/// The model-facing result text when the user declines a call.
pub const USER_DECLINED: &str =
    "The user declined this tool call; nothing was written or run. Ask the user how to proceed, or try a different approach.";

/// The model-facing result text when a deny rule refuses a call; `{reason}`
/// names the rule.
pub const DENIED_BY_RULE: &str =
    "Permission to use {tool} was denied ({reason}); nothing was written or run. Do not retry this call; choose another approach or ask the user.";

/// Absolute root-relative helper for tests and rule matching.
pub fn root_relative(root: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(root)
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| path.to_path_buf())
}

/// The rules of one session: the configured ones plus "always allow" grants
/// the user gave with `a` in the prompt. Shared by every tool call.
///
/// Like `FileState`, a staged state (see [`PermissionState::staged`]) keeps
/// its grants until [`PermissionState::commit`], so concurrent calls apply
/// their grants in call order.
#[derive(Debug, Default)]
pub struct PermissionState {
    rules: std::sync::Mutex<Rules>,
    parent: Option<std::sync::Arc<PermissionState>>,
}

impl PermissionState {
    /// Starts from the configured `rules`.
    pub fn new(rules: Rules) -> Self {
        Self {
            rules: std::sync::Mutex::new(rules),
            parent: None,
        }
    }

    /// A state deciding with `parent`'s rules plus its own, not yet
    /// committed grants.
    pub fn staged(parent: &std::sync::Arc<PermissionState>) -> Self {
        Self {
            rules: std::sync::Mutex::new(Rules::default()),
            parent: Some(parent.clone()),
        }
    }

    /// [`decide`] against the current rules (a staged state adds its own
    /// grants to the parent's allow rules).
    pub fn decide(&self, req: &Request<'_>) -> Decision {
        match &self.parent {
            None => decide(&self.lock(), req),
            Some(parent) => {
                let mut rules = parent.rules();
                rules.allow.extend(self.lock().allow.iter().cloned());
                decide(&rules, req)
            }
        }
    }

    /// A copy of the rules in force.
    pub fn rules(&self) -> Rules {
        self.lock().clone()
    }

    /// Moves a staged state's grants into its parent (no-op without one).
    pub fn commit(&self) {
        if let Some(parent) = &self.parent {
            let grants: Vec<Rule> = std::mem::take(&mut self.lock().allow);
            for g in grants {
                parent.grant(g);
            }
        }
    }

    fn grant(&self, rule: Rule) {
        let mut rules = self.lock();
        if !rules.allow.contains(&rule) {
            rules.allow.push(rule);
        }
    }

    /// Allows every call of `tool` for the rest of the session (still below
    /// deny and ask rules).
    pub fn grant_tool(&self, tool: &str) {
        self.grant(Rule::tool(tool));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Rules> {
        self.rules.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req<'a>(tool: &'a str, read_only: bool, path: &'a Path) -> Request<'a> {
        Request {
            tool,
            read_only,
            path: Some(path),
            root: Path::new("/p"),
        }
    }

    #[test]
    fn defaults_allow_reads_inside_and_ask_for_edits() {
        let rules = Rules::default();
        assert!(matches!(
            decide(&rules, &req("Read", true, Path::new("/p/a"))),
            Decision::Allow(_)
        ));
        assert!(matches!(
            decide(&rules, &req("Read", true, Path::new("/etc/passwd"))),
            Decision::Ask(_)
        ));
        assert!(matches!(
            decide(&rules, &req("Edit", false, Path::new("/p/a"))),
            Decision::Ask(_)
        ));
    }

    #[test]
    fn deny_beats_ask_beats_allow() {
        let rules = Rules {
            mode: Mode::AcceptEdits,
            allow: vec![Rule::tool("Edit")],
            ask: vec![Rule::parse("Edit(secret/**)").unwrap()],
            deny: vec![Rule::parse("Edit(secret/keys)").unwrap()],
        };
        assert!(matches!(
            decide(&rules, &req("Edit", false, Path::new("/p/secret/keys"))),
            Decision::Deny(_)
        ));
        assert!(matches!(
            decide(&rules, &req("Edit", false, Path::new("/p/secret/x"))),
            Decision::Ask(_)
        ));
        assert!(matches!(
            decide(&rules, &req("Edit", false, Path::new("/p/src/x"))),
            Decision::Allow(_)
        ));
    }

    #[test]
    fn accept_edits_does_not_cover_commands_without_a_path() {
        let rules = Rules {
            mode: Mode::AcceptEdits,
            ..Rules::default()
        };
        let bash = Request {
            tool: "Bash",
            read_only: false,
            path: None,
            root: Path::new("/p"),
        };
        assert!(matches!(decide(&rules, &bash), Decision::Ask(_)));
        let ls = Request {
            read_only: true,
            ..bash
        };
        assert!(matches!(decide(&rules, &ls), Decision::Allow(_)));
    }

    #[test]
    fn accept_edits_allows_inside_only() {
        let rules = Rules {
            mode: Mode::AcceptEdits,
            ..Rules::default()
        };
        assert!(matches!(
            decide(&rules, &req("Write", false, Path::new("/p/a"))),
            Decision::Allow(_)
        ));
        assert!(matches!(
            decide(&rules, &req("Write", false, Path::new("/q/a"))),
            Decision::Ask(_)
        ));
    }

    #[test]
    fn session_grant_does_not_skip_ask_rules() {
        let state = PermissionState::new(Rules {
            ask: vec![Rule::tool("Write")],
            ..Rules::default()
        });
        state.grant_tool("Write");
        state.grant_tool("Edit");
        assert!(matches!(
            state.decide(&req("Write", false, Path::new("/p/a"))),
            Decision::Ask(_)
        ));
        assert!(matches!(
            state.decide(&req("Edit", false, Path::new("/p/a"))),
            Decision::Allow(_)
        ));
    }

    #[test]
    fn staged_grants_wait_for_commit() {
        let shared = std::sync::Arc::new(PermissionState::new(Rules::default()));
        let staged = PermissionState::staged(&shared);
        staged.grant_tool("Read");
        let outside = req("Read", true, Path::new("/etc/hosts"));
        assert!(matches!(staged.decide(&outside), Decision::Allow(_)));
        assert!(matches!(shared.decide(&outside), Decision::Ask(_)));
        staged.commit();
        assert!(matches!(shared.decide(&outside), Decision::Allow(_)));
    }

    #[test]
    fn golden_texts() {
        assert_eq!(
            USER_DECLINED,
            "The user declined this tool call; nothing was written or run. Ask the user how to proceed, or try a different approach."
        );
        assert_eq!(
            DENIED_BY_RULE,
            "Permission to use {tool} was denied ({reason}); nothing was written or run. Do not retry this call; choose another approach or ask the user."
        );
    }
}
