//! Which MCP servers may start without asking (`:help lathe-mcp-trust`).
//!
//! Servers of `setup{ mcp_servers }` are the user's own and always start.
//! Servers of the project's `.mcp.json` (a file the model can write) start
//! only once trusted: by Claude Code's settings keys
//! (`enableAllProjectMcpServers`, `enabledMcpjsonServers`;
//! `disabledMcpjsonServers` never starts a server), or by the user's answer
//! to one question per project, listing what each server runs. The answer
//! is remembered in lathe's state directory ([`TrustFile`]) with a
//! fingerprint of each allowed server's command, args, env and URL
//! ([`fingerprint`]), so a server whose command changes after it was
//! allowed is asked about again.
//!
//! [`decide`] is the pure decision table; [`plan`] applies it to a
//! configuration; [`start`] starts what may start, holds the rest
//! (`mcp::held`) and asks through a [`Prompter`] on the runtime.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::mcp::{McpServerConfig, McpTransport, McpTrustSettings};
use crate::config::Config;
use crate::execution::UserTools;
use crate::permissions::{PermissionPreview, PromptAnswer, Prompter};
use crate::text::fill;

/// User-facing: the title of the question.
pub const ASK_TITLE: &str = "Start MCP servers from .mcp.json?";

/// The "tool" the question is asked for (the float's queue and `:Lathe
/// stop`, which leaves this question waiting).
pub const ASK_TOOL: &str = "MCP servers";

/// User-facing: why the question is asked (the float's "Asks because:").
/// `{path}` (the `.mcp.json`).
pub const ASK_REASON: &str = "{path} names MCP servers lathe has not started in this project, or whose command changed since you allowed it. They run as programs (or are reached at URLs) with your rights. y starts them, n refuses them; lathe remembers the answer for this project (:Lathe mcp reset asks again).";

/// User-facing: one server of the question. `{name}`, `{location}` (its
/// command line or URL).
pub const ASK_SERVER_LINE: &str = "{name}: {location}";

/// User-facing: after [`ASK_SERVER_LINE`] when the server was allowed
/// with another command.
pub const ASK_CHANGED: &str = "  (changed since you allowed it)";

/// User-facing: a variable a stdio server is started with. `{name}`,
/// `{value}`.
pub const ASK_ENV_LINE: &str = "    env {name}={value}";

/// User-facing: where the servers run. `{root}`.
pub const ASK_CWD_LINE: &str = "(they run in {root})";

/// User-facing (checkhealth, `:Lathe tools`): a server waiting for the
/// answer.
pub const WAITING: &str = "waiting for your approval (.mcp.json; :Lathe review shows the question)";

/// User-facing: a server the user refused.
pub const REFUSED_REMEMBERED: &str =
    "refused (.mcp.json, answer remembered: :Lathe mcp reset asks again)";

/// User-facing: a server a settings file disables. `{path}`.
pub const REFUSED_DISABLED: &str =
    "refused (.mcp.json; disabledMcpjsonServers in {path} turns it off)";

/// The name of the trust file in lathe's state directory.
pub const TRUST_FILE: &str = "mcp-trust.json";

/// Why a server may start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trusted {
    /// It is `setup()`'s (the user's own configuration).
    Setup,
    /// `enableAllProjectMcpServers: true` in this file.
    AllProjectServers(PathBuf),
    /// `enabledMcpjsonServers` of this file names it.
    Enabled(PathBuf),
    /// The user allowed it, with this very command.
    Approved,
}

/// Why a server does not start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// `disabledMcpjsonServers` of this file names it.
    Disabled(PathBuf),
    /// The user refused it (remembered).
    Refused,
}

impl Refusal {
    /// The user-facing state ([`REFUSED_DISABLED`], [`REFUSED_REMEMBERED`]).
    pub fn text(&self) -> String {
        match self {
            Refusal::Disabled(p) => fill(REFUSED_DISABLED, &[("path", &p.display().to_string())]),
            Refusal::Refused => REFUSED_REMEMBERED.to_string(),
        }
    }
}

/// What becomes of one configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Start it.
    Start(Trusted),
    /// Ask the user first; `changed` when it was allowed with another
    /// command, args, env or URL.
    Ask {
        /// It was allowed before, as something else.
        changed: bool,
    },
    /// Never start it (and do not ask).
    Refuse(Refusal),
}

/// The remembered answers of one project.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectTrust {
    /// Allowed servers by name, with the [`fingerprint`] of what was
    /// allowed.
    #[serde(default)]
    pub approved: BTreeMap<String, String>,
    /// Refused servers' names.
    #[serde(default)]
    pub refused: BTreeSet<String>,
}

/// The trust file (`<stdpath("state")>/lathe/mcp-trust.json`): the
/// answers of every project, by the real path of its root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustFile {
    /// The format's version (1).
    #[serde(default = "version_one")]
    pub version: u32,
    /// The answers by project root (canonical path).
    #[serde(default)]
    pub projects: BTreeMap<String, ProjectTrust>,
}

fn version_one() -> u32 {
    1
}

impl Default for TrustFile {
    fn default() -> Self {
        Self {
            version: version_one(),
            projects: BTreeMap::new(),
        }
    }
}

/// The key of project `root` in the trust file: its real path.
pub fn project_key(root: &Path) -> String {
    std::fs::canonicalize(root)
        .unwrap_or_else(|_| root.to_path_buf())
        .display()
        .to_string()
}

impl TrustFile {
    /// The file at `path`; empty when it is missing or does not parse (the
    /// servers are then asked about again).
    pub fn load(path: &Path) -> Self {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }

    /// Writes it to `path` atomically (temp file + rename), creating the
    /// folder. Errors: the message, naming the file.
    pub fn save(&self, path: &Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())? + "\n";
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let tmp = path.with_extension(format!("json.{}.tmp", std::process::id()));
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, path))
            .map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                format!("cannot write {}: {e}", path.display())
            })
    }

    /// The answers of project `root` (none remembered: empty).
    pub fn project(&self, root: &Path) -> ProjectTrust {
        self.projects
            .get(&project_key(root))
            .cloned()
            .unwrap_or_default()
    }

    /// Remembers the answer for `servers` of project `root`: allowed (with
    /// their fingerprints) or refused.
    pub fn remember(&mut self, root: &Path, servers: &[McpServerConfig], allowed: bool) {
        let p = self.projects.entry(project_key(root)).or_default();
        for s in servers {
            if allowed {
                p.refused.remove(&s.name);
                p.approved.insert(s.name.clone(), fingerprint(s));
            } else {
                p.approved.remove(&s.name);
                p.refused.insert(s.name.clone());
            }
        }
    }

    /// Forgets every answer of project `root`; `true` when there was one.
    pub fn forget(&mut self, root: &Path) -> bool {
        self.projects.remove(&project_key(root)).is_some()
    }
}

/// `sha256:<hex>` of what a server runs or reaches: a stdio server's
/// command, args and env; an HTTP server's URL (not its headers, which
/// hold tokens that change and run nothing). Stable across runs.
pub fn fingerprint(cfg: &McpServerConfig) -> String {
    let what = match &cfg.transport {
        McpTransport::Stdio { command, args, env } => {
            serde_json::json!({ "command": command, "args": args, "env": env })
        }
        McpTransport::Http { url, .. } => serde_json::json!({ "url": url }),
    };
    let digest = Sha256::digest(what.to_string().as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The decision table for one server `name` (from the project's
/// `.mcp.json` when `from_project`), whose [`fingerprint`] is `print`,
/// given the settings files' keys and the remembered answers. In order:
/// `setup()`'s start; `disabledMcpjsonServers` refuses; a remembered
/// refusal refuses; `enableAllProjectMcpServers` or
/// `enabledMcpjsonServers` start; a remembered approval of the same
/// fingerprint starts; one of another fingerprint asks again (`changed`);
/// anything else asks.
pub fn decide(
    name: &str,
    from_project: bool,
    print: &str,
    settings: &McpTrustSettings,
    remembered: &ProjectTrust,
) -> Verdict {
    if !from_project {
        return Verdict::Start(Trusted::Setup);
    }
    if let Some((_, path)) = settings.disabled.iter().find(|(n, _)| n == name) {
        return Verdict::Refuse(Refusal::Disabled(path.clone()));
    }
    if remembered.refused.contains(name) {
        return Verdict::Refuse(Refusal::Refused);
    }
    if let Some(path) = &settings.enable_all {
        return Verdict::Start(Trusted::AllProjectServers(path.clone()));
    }
    if let Some((_, path)) = settings.enabled.iter().find(|(n, _)| n == name) {
        return Verdict::Start(Trusted::Enabled(path.clone()));
    }
    match remembered.approved.get(name) {
        Some(p) if p == print => Verdict::Start(Trusted::Approved),
        Some(_) => Verdict::Ask { changed: true },
        None => Verdict::Ask { changed: false },
    }
}

/// A configuration's servers sorted by [`decide`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// The servers to start now.
    pub start: Vec<McpServerConfig>,
    /// The servers to ask about, each with `changed` (see [`Verdict::Ask`]).
    pub ask: Vec<(McpServerConfig, bool)>,
    /// The servers that do not start, and why.
    pub refused: Vec<(McpServerConfig, Refusal)>,
}

/// [`decide`] for every server of `config` with the answers `remembered`
/// for its project.
pub fn plan(config: &Config, remembered: &ProjectTrust) -> Plan {
    let mut out = Plan::default();
    for s in &config.mcp_servers {
        let from_project = config.mcp_project_servers.contains(&s.name);
        match decide(
            &s.name,
            from_project,
            &fingerprint(s),
            &config.mcp_trust,
            remembered,
        ) {
            Verdict::Start(_) => out.start.push(s.clone()),
            Verdict::Ask { changed } => out.ask.push((s.clone(), changed)),
            Verdict::Refuse(why) => out.refused.push((s.clone(), why)),
        }
    }
    out
}

/// `s` as a shell word (single-quoted when it holds anything but plain
/// characters), so the question shows exactly what runs.
fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// What a server runs or reaches, for the question: its command line
/// (each word shell-quoted when needed) or its URL.
pub fn shown_location(cfg: &McpServerConfig) -> String {
    match &cfg.transport {
        McpTransport::Stdio { command, args, .. } => std::iter::once(command)
            .chain(args)
            .map(|w| shell_word(w))
            .collect::<Vec<_>>()
            .join(" "),
        McpTransport::Http { url, .. } => url.clone(),
    }
}

/// The question about `servers` (each with `changed`) of project `root`,
/// as the permission float shows it: [`ASK_TITLE`], [`ASK_REASON`], and
/// one [`ASK_SERVER_LINE`] per server with its env lines.
pub fn question(servers: &[(McpServerConfig, bool)], root: &Path) -> PermissionPreview {
    let mut body = Vec::new();
    for (s, changed) in servers {
        let mut line = fill(
            ASK_SERVER_LINE,
            &[("name", &s.name), ("location", &shown_location(s))],
        );
        if *changed {
            line.push_str(ASK_CHANGED);
        }
        body.push(line);
        if let McpTransport::Stdio { env, .. } = &s.transport {
            for (k, v) in env {
                body.push(fill(ASK_ENV_LINE, &[("name", k), ("value", v)]));
            }
        }
    }
    body.push(fill(ASK_CWD_LINE, &[("root", &root.display().to_string())]));
    PermissionPreview {
        title: ASK_TITLE.to_string(),
        reason: fill(
            ASK_REASON,
            &[("path", &root.join(".mcp.json").display().to_string())],
        ),
        input: body.join("\n"),
        ..Default::default()
    }
}

/// `true` when `answer` allows (`y`, or `a`/`A`); every other answer
/// refuses.
pub fn allows(answer: &PromptAnswer) -> bool {
    matches!(
        answer,
        PromptAnswer::AllowOnce
            | PromptAnswer::AllowSession
            | PromptAnswer::AllowAndSave
            | PromptAnswer::AllowRevised(_)
    )
}

/// Where and how [`start`] starts servers.
#[derive(Clone)]
pub struct Starter {
    /// The table their tools go into.
    pub user: Arc<UserTools>,
    /// Their logs' folder.
    pub log_dir: PathBuf,
    /// The trust file ([`TRUST_FILE`] in lathe's state directory).
    pub trust_file: PathBuf,
    /// The runtime they (and the question) run on.
    pub rt: tokio::runtime::Handle,
    /// Asks the question.
    pub prompter: Arc<dyn Prompter>,
}

/// The servers of the last [`start`] and its question.
struct Current {
    starter: Starter,
    root: PathBuf,
    plan: Plan,
    /// The servers (name, fingerprint) the running question is about, and
    /// its task.
    asking: Option<(Vec<(String, String)>, tokio::task::AbortHandle)>,
}

impl Current {
    /// Makes the plan's `start` the running servers and the rest held.
    fn apply(&self) {
        super::replace(
            self.plan.start.clone(),
            self.starter.user.clone(),
            &self.starter.log_dir,
            &self.root,
            &self.starter.rt,
        );
        let mut held: Vec<super::Held> = self
            .plan
            .ask
            .iter()
            .map(|(c, _)| super::Held {
                config: c.clone(),
                refused: None,
            })
            .collect();
        held.extend(self.plan.refused.iter().map(|(c, why)| super::Held {
            config: c.clone(),
            refused: Some(why.text()),
        }));
        super::set_held(held);
    }
}

static CURRENT: Mutex<Option<Current>> = Mutex::new(None);

/// Starts the servers of `config` that may start ([`plan`] with the
/// answers remembered in `starter.trust_file`), holds the others (shown
/// as waiting or refused by `mcp::statuses`), and asks about the waiting
/// ones on the runtime: allowed ones start once the user says yes, and the
/// answer is remembered. A question already asked about the same servers
/// keeps waiting (`setup()` again does not ask twice); one about others is
/// withdrawn.
pub fn start(config: &Config, starter: Starter) {
    let root = config.cwd.clone();
    let remembered = TrustFile::load(&starter.trust_file).project(&root);
    let plan = plan(config, &remembered);
    let key: Vec<(String, String)> = plan
        .ask
        .iter()
        .map(|(c, _)| (c.name.clone(), fingerprint(c)))
        .collect();
    let mut current = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
    let mut asking = current.take().and_then(|c| c.asking.map(|a| (c.root, a)));
    let same = asking
        .as_ref()
        .is_some_and(|(r, (k, _))| *r == root && *k == key);
    if !same {
        if let Some((_, (_, handle))) = asking.take() {
            handle.abort();
        }
        if !key.is_empty() {
            let task = starter.rt.spawn(ask(
                starter.prompter.clone(),
                root.clone(),
                starter.trust_file.clone(),
                plan.ask.clone(),
            ));
            asking = Some((root.clone(), (key, task.abort_handle())));
        }
    }
    let c = Current {
        starter,
        root,
        plan,
        asking: asking.map(|(_, a)| a),
    };
    c.apply();
    *current = Some(c);
}

/// Asks about `servers` of project `root`, remembers the answer in
/// `trust_file`, and applies it to the current servers when they are
/// still this project's.
async fn ask(
    prompter: Arc<dyn Prompter>,
    root: PathBuf,
    trust_file: PathBuf,
    servers: Vec<(McpServerConfig, bool)>,
) {
    let answer = prompter.ask(ASK_TOOL, &question(&servers, &root)).await;
    let allowed = allows(&answer);
    let configs: Vec<McpServerConfig> = servers.iter().map(|(c, _)| c.clone()).collect();
    let mut file = TrustFile::load(&trust_file);
    file.remember(&root, &configs, allowed);
    // When the file cannot be written the answer still holds until Neovim
    // exits, and the question comes again the next time.
    let _ = file.save(&trust_file);
    let mut current = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
    let Some(c) = current.as_mut().filter(|c| c.root == root) else {
        return;
    };
    c.asking = None;
    let answered: Vec<McpServerConfig> = c
        .plan
        .ask
        .iter()
        .filter(|(s, _)| configs.contains(s))
        .map(|(s, _)| s.clone())
        .collect();
    c.plan.ask.retain(|(s, _)| !configs.contains(s));
    for s in answered {
        if allowed {
            c.plan.start.push(s);
        } else {
            c.plan.refused.push((s, Refusal::Refused));
        }
    }
    c.apply();
}

/// Forgets the answers about project `root` in `trust_file` (`:Lathe mcp
/// reset`); the caller starts the servers again, which asks again.
/// Errors: the file cannot be written.
pub fn forget(trust_file: &Path, root: &Path) -> Result<bool, String> {
    let mut file = TrustFile::load(trust_file);
    let had = file.forget(root);
    if had {
        file.save(trust_file)?;
    }
    Ok(had)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> McpTrustSettings {
        McpTrustSettings::default()
    }

    #[test]
    fn the_decision_table() {
        let local = PathBuf::from("/p/.claude/settings.local.json");
        let user = PathBuf::from("/h/.claude/settings.json");
        let s = McpServerConfig::stdio("docs", "docs-mcp", vec!["--stdio".into()]);
        let print = fingerprint(&s);
        let none = ProjectTrust::default();
        let approved = ProjectTrust {
            approved: [("docs".to_string(), print.clone())].into(),
            ..Default::default()
        };
        let approved_other = ProjectTrust {
            approved: [("docs".to_string(), "sha256:old".to_string())].into(),
            ..Default::default()
        };
        let refused = ProjectTrust {
            refused: ["docs".to_string()].into(),
            ..Default::default()
        };
        let all = McpTrustSettings {
            enable_all: Some(local.clone()),
            ..settings()
        };
        let enabled = McpTrustSettings {
            enabled: vec![("docs".into(), local.clone())],
            ..settings()
        };
        let disabled = McpTrustSettings {
            disabled: vec![("docs".into(), user.clone())],
            ..settings()
        };
        let all_but_disabled = McpTrustSettings {
            enable_all: Some(local.clone()),
            enabled: vec![("docs".into(), local.clone())],
            disabled: vec![("docs".into(), user.clone())],
        };
        let plain = settings();
        use Verdict::*;
        let cases: Vec<(&str, bool, &McpTrustSettings, &ProjectTrust, Verdict)> = vec![
            // setup()'s servers never ask, whatever the files say.
            ("setup", false, &disabled, &refused, Start(Trusted::Setup)),
            // Nothing known: ask.
            ("new", true, &plain, &none, Ask { changed: false }),
            // Remembered answers.
            (
                "approved",
                true,
                &plain,
                &approved,
                Start(Trusted::Approved),
            ),
            (
                "changed command",
                true,
                &plain,
                &approved_other,
                Ask { changed: true },
            ),
            ("refused", true, &plain, &refused, Refuse(Refusal::Refused)),
            // Settings keys.
            (
                "enable all",
                true,
                &all,
                &none,
                Start(Trusted::AllProjectServers(local.clone())),
            ),
            (
                "enable all, changed",
                true,
                &all,
                &approved_other,
                Start(Trusted::AllProjectServers(local.clone())),
            ),
            (
                "enabled",
                true,
                &enabled,
                &none,
                Start(Trusted::Enabled(local.clone())),
            ),
            (
                "enabled, changed",
                true,
                &enabled,
                &approved_other,
                Start(Trusted::Enabled(local.clone())),
            ),
            (
                "disabled",
                true,
                &disabled,
                &none,
                Refuse(Refusal::Disabled(user.clone())),
            ),
            (
                "disabled beats an approval",
                true,
                &disabled,
                &approved,
                Refuse(Refusal::Disabled(user.clone())),
            ),
            (
                "disabled beats enable",
                true,
                &all_but_disabled,
                &none,
                Refuse(Refusal::Disabled(user.clone())),
            ),
            // The user's refusal beats a project file's enable.
            (
                "refusal beats enable all",
                true,
                &all,
                &refused,
                Refuse(Refusal::Refused),
            ),
            (
                "refusal beats enabled",
                true,
                &enabled,
                &refused,
                Refuse(Refusal::Refused),
            ),
        ];
        for (what, from_project, set, remembered, want) in cases {
            assert_eq!(
                decide("docs", from_project, &print, set, remembered),
                want,
                "{what}"
            );
        }
        // Another server's answer says nothing about this one.
        assert_eq!(
            decide("other", true, &print, &enabled, &approved),
            Ask { changed: false }
        );
    }

    #[test]
    fn a_fingerprint_covers_command_args_env_and_url_but_not_headers() {
        let base = McpServerConfig::stdio("docs", "docs-mcp", vec!["--stdio".into()]);
        let p = fingerprint(&base);
        assert!(p.starts_with("sha256:") && p.len() == 7 + 64, "{p}");
        assert_eq!(p, fingerprint(&base.clone()), "stable");
        let mut other_args = base.clone();
        let mut other_env = base.clone();
        let mut other_cmd = base.clone();
        if let McpTransport::Stdio { args, .. } = &mut other_args.transport {
            args.push("-x".into());
        }
        if let McpTransport::Stdio { env, .. } = &mut other_env.transport {
            env.insert("LD_PRELOAD".into(), "/tmp/x.so".into());
        }
        if let McpTransport::Stdio { command, .. } = &mut other_cmd.transport {
            *command = "sh".into();
        }
        for changed in [&other_args, &other_env, &other_cmd] {
            assert_ne!(fingerprint(changed), p);
        }
        let web = McpServerConfig::http("web", "https://a/mcp");
        let mut headers = web.clone();
        if let McpTransport::Http { headers: h, .. } = &mut headers.transport {
            h.insert("Authorization".into(), "Bearer t".into());
        }
        assert_eq!(fingerprint(&web), fingerprint(&headers));
        assert_ne!(
            fingerprint(&web),
            fingerprint(&McpServerConfig::http("web", "https://b/mcp"))
        );
    }

    #[test]
    fn answers_are_remembered_per_project_and_forgotten() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("state/mcp-trust.json");
        let root = dir.path().join("proj");
        std::fs::create_dir_all(&root).expect("mkdir");
        let docs = McpServerConfig::stdio("docs", "docs-mcp", vec![]);
        let evil = McpServerConfig::stdio("evil", "sh", vec!["-c".into(), "touch x".into()]);
        let mut t = TrustFile::load(&file);
        assert_eq!(t, TrustFile::default());
        t.remember(&root, std::slice::from_ref(&docs), true);
        t.remember(&root, std::slice::from_ref(&evil), false);
        t.save(&file).expect("save");
        let back = TrustFile::load(&file);
        // The key is the root's real path: a symlinked root finds it too.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&root, &link).expect("symlink");
        let p = back.project(&link);
        assert_eq!(p.approved.get("docs"), Some(&fingerprint(&docs)));
        assert!(p.refused.contains("evil"));
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).expect("read")).expect("json");
        let key = project_key(&root);
        assert_eq!(json["version"], 1);
        assert_eq!(
            json["projects"][&key]["refused"],
            serde_json::json!(["evil"])
        );
        // Allowing a refused server moves it.
        let mut t = back;
        t.remember(&root, std::slice::from_ref(&evil), true);
        assert!(!t.project(&root).refused.contains("evil"));
        t.save(&file).expect("save");
        assert!(forget(&file, &root).expect("forget"));
        assert_eq!(
            TrustFile::load(&file).project(&root),
            ProjectTrust::default()
        );
        assert!(!forget(&file, &root).expect("nothing to forget"));
        // A file that does not parse counts as no answers.
        std::fs::write(&file, "{ broken").expect("write");
        assert_eq!(TrustFile::load(&file), TrustFile::default());
    }

    #[test]
    fn the_question_lists_what_each_server_runs() {
        let mut docs = McpServerConfig::stdio(
            "docs",
            "/usr/bin/python3",
            vec!["server.py".into(), "--name".into(), "it's here".into()],
        );
        if let McpTransport::Stdio { env, .. } = &mut docs.transport {
            env.insert("TOKEN".into(), "x".into());
        }
        let web = McpServerConfig::http("web", "https://example.com/mcp");
        let q = question(&[(docs, false), (web, true)], Path::new("/p"));
        assert_eq!(q.title, "Start MCP servers from .mcp.json?");
        assert_eq!(
            q.input,
            "docs: /usr/bin/python3 server.py --name 'it'\\''s here'\n    env TOKEN=x\nweb: https://example.com/mcp  (changed since you allowed it)\n(they run in /p)"
        );
        assert!(q.session_rules.is_empty(), "only y and n");
        assert_eq!(
            q.reason,
            "/p/.mcp.json names MCP servers lathe has not started in this project, or whose command changed since you allowed it. They run as programs (or are reached at URLs) with your rights. y starts them, n refuses them; lathe remembers the answer for this project (:Lathe mcp reset asks again)."
        );
    }

    #[test]
    fn a_configuration_is_planned_with_its_settings_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path().canonicalize().expect("canonical");
        let (root, home) = (base.join("proj"), base.join("home"));
        for d in [root.join(".claude"), home.join(".claude")] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        let mcp_json = serde_json::json!({ "mcpServers": {
            "known": { "command": "known-mcp" },
            "new": { "command": "new-mcp" },
            "off": { "command": "off-mcp" },
            "mine": { "command": "project-version" },
            "listed": { "command": "listed-mcp" },
        } });
        std::fs::write(root.join(".mcp.json"), mcp_json.to_string()).expect("write");
        std::fs::write(
            home.join(".claude/settings.json"),
            r#"{"disabledMcpjsonServers": ["off"]}"#,
        )
        .expect("write");
        std::fs::write(
            root.join(".claude/settings.local.json"),
            r#"{"enabledMcpjsonServers": ["listed"], "enableAllProjectMcpServers": false}"#,
        )
        .expect("write");
        let setup = serde_json::json!({ "mcp_servers": { "mine": { "command": "my-mcp" } } });
        let cfg = Config::from_setup_with_home(&setup, &root, Some(&home)).expect("config");
        assert!(
            cfg.settings_problems.is_empty(),
            "{:?}",
            cfg.settings_problems
        );
        assert_eq!(cfg.mcp_trust.enable_all, None, "local's false decides");
        let mut remembered = ProjectTrust::default();
        let known = cfg
            .mcp_servers
            .iter()
            .find(|s| s.name == "known")
            .expect("known");
        remembered
            .approved
            .insert("known".into(), fingerprint(known));
        let p = plan(&cfg, &remembered);
        let names = |v: Vec<&McpServerConfig>| v.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
        assert_eq!(
            names(p.start.iter().collect()),
            ["known", "listed", "mine"],
            "setup()'s mine replaces the project's and needs no answer"
        );
        assert_eq!(names(p.ask.iter().map(|(s, _)| s).collect()), ["new"]);
        assert_eq!(
            p.refused,
            vec![(
                McpServerConfig::stdio("off", "off-mcp", vec![]),
                Refusal::Disabled(home.join(".claude/settings.json"))
            )]
        );
        // enableAllProjectMcpServers in the project's settings starts the rest.
        std::fs::write(
            root.join(".claude/settings.json"),
            r#"{"enableAllProjectMcpServers": true}"#,
        )
        .expect("write");
        std::fs::write(root.join(".claude/settings.local.json"), "{}").expect("write");
        let cfg = Config::from_setup_with_home(&setup, &root, Some(&home)).expect("config");
        let p = plan(&cfg, &ProjectTrust::default());
        assert!(p.ask.is_empty());
        assert_eq!(p.start.len(), 4);
        assert_eq!(p.refused.len(), 1, "disabled still wins");
        // claude_settings = false: no file counts, every project server asks.
        let off = serde_json::json!({ "claude_settings": false });
        let cfg = Config::from_setup_with_home(&off, &root, Some(&home)).expect("config");
        assert_eq!(plan(&cfg, &ProjectTrust::default()).ask.len(), 5);
    }

    #[test]
    fn golden_texts() {
        assert_eq!(
            WAITING,
            "waiting for your approval (.mcp.json; :Lathe review shows the question)"
        );
        assert_eq!(
            Refusal::Refused.text(),
            "refused (.mcp.json, answer remembered: :Lathe mcp reset asks again)"
        );
        assert_eq!(
            Refusal::Disabled(PathBuf::from("/h/.claude/settings.json")).text(),
            "refused (.mcp.json; disabledMcpjsonServers in /h/.claude/settings.json turns it off)"
        );
        assert!(allows(&PromptAnswer::AllowOnce));
        assert!(!allows(&PromptAnswer::Deny));
        assert!(!allows(&PromptAnswer::DenyWithMessage("no".into())));
    }
}
