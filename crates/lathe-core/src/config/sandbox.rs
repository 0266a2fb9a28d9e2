//! The `sandbox` settings (Claude Code's keys): `setup{ sandbox = { … } }`
//! and the `sandbox` object of the settings files
//! (docs/sandbox.md, "The sandbox").
//!
//! - `enabled` (default `true`): `false` turns the sandbox off; then every
//!   Bash call asks unless an exact allow rule covers it.
//! - `network`: `true`/`false` (default `false`: commands run without
//!   asking have no network), or Claude Code's `{ allowedDomains = {…} }`:
//!   lathe cannot hold a command to some domains, so a list that is not
//!   `["*"]` keeps the network off and says so.
//! - `filesystem.allowWrite`: more folders commands may write;
//!   `filesystem.denyRead`: more paths no command can open. Relative to
//!   the project root; `~/` is the home directory.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::settings_files::resolve_dir;
use crate::permissions::SandboxSettings;

/// Why the sandbox is off when the settings turn it off.
pub const SANDBOX_DISABLED: &str = "sandbox.enabled is false";

/// The problem reported for a domain list lathe cannot enforce. `{place}`.
pub const DOMAINS_NOT_ENFORCED: &str = "{place}: sandbox.network.allowedDomains is not enforced per domain by lathe, so the network stays off for sandboxed commands; set sandbox.network = true to open it";

/// The `sandbox` table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSandbox {
    enabled: Option<bool>,
    network: Option<Value>,
    filesystem: Option<RawFilesystem>,
}

impl RawSandbox {
    /// What the user should hear about this table (a domain list lathe
    /// cannot enforce), said from `place`.
    pub(super) fn problem(&self, place: &str) -> Option<String> {
        network_problem(self.network.as_ref(), place)
    }
}

/// A settings file's `sandbox` object (the file is `place`): what it
/// says and what the user should hear about it. Errors: the object does
/// not parse (only it is ignored, as [`SANDBOX_UNREADABLE`] says).
pub(super) fn from_file(
    value: Value,
    place: &str,
) -> Result<(SandboxSays, Option<String>), String> {
    let file: FileSandbox = serde_json::from_value(value).map_err(|e| {
        crate::text::fill(
            SANDBOX_UNREADABLE,
            &[("place", place), ("error", &e.to_string())],
        )
    })?;
    let problem = network_problem(file.network.as_ref(), place);
    Ok((file.into(), problem))
}

/// A settings file's `sandbox` object that does not parse. `{place}`,
/// `{error}`.
pub const SANDBOX_UNREADABLE: &str =
    "{place}: the sandbox settings are ignored ({error}); the sandbox keeps its defaults";

/// `sandbox.filesystem`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFilesystem {
    #[serde(default, alias = "allowWrite", deserialize_with = "super::list")]
    allow_write: Vec<String>,
    #[serde(default, alias = "denyRead", deserialize_with = "super::list")]
    deny_read: Vec<String>,
}

/// The `sandbox` object of a settings file: Claude Code's other keys
/// (`autoAllowBashIfSandboxed`, `excludedCommands`, …) are left to it.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileSandbox {
    enabled: Option<bool>,
    network: Option<Value>,
    #[serde(default)]
    filesystem: FileFilesystem,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileFilesystem {
    #[serde(default)]
    allow_write: Vec<String>,
    #[serde(default)]
    deny_read: Vec<String>,
}

/// What one source says; `None` where it says nothing.
#[derive(Debug, Default)]
pub(super) struct SandboxSays {
    enabled: Option<bool>,
    network: Option<bool>,
    allow_write: Vec<String>,
    deny_read: Vec<String>,
}

impl From<RawSandbox> for SandboxSays {
    fn from(r: RawSandbox) -> Self {
        let fs = r.filesystem.unwrap_or_default();
        Self {
            enabled: r.enabled,
            network: None,
            allow_write: fs.allow_write,
            deny_read: fs.deny_read,
        }
        .with_network(r.network)
    }
}

impl From<FileSandbox> for SandboxSays {
    fn from(r: FileSandbox) -> Self {
        Self {
            enabled: r.enabled,
            network: None,
            allow_write: r.filesystem.allow_write,
            deny_read: r.filesystem.deny_read,
        }
        .with_network(r.network)
    }
}

impl SandboxSays {
    fn with_network(mut self, v: Option<Value>) -> Self {
        self.network = v.map(|v| network_of(&v));
        self
    }
}

/// `network` as written: a boolean, or `{ allowedDomains }` (open only for
/// `["*"]`).
fn network_of(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::Object(m) => m
            .get("allowedDomains")
            .and_then(Value::as_array)
            .is_some_and(|d| d.iter().any(|x| x.as_str() == Some("*"))),
        _ => false,
    }
}

/// The problem of a `network` value lathe cannot enforce, if any.
pub(super) fn network_problem(v: Option<&Value>, place: &str) -> Option<String> {
    let domains = v?.get("allowedDomains")?.as_array()?;
    let all = domains.iter().any(|x| x.as_str() == Some("*"));
    (!domains.is_empty() && !all)
        .then(|| crate::text::fill(DOMAINS_NOT_ENFORCED, &[("place", place)]))
}

/// Merges `says` (from a source of lower precedence than what `into`
/// holds) into `into`: a yes/no already set stays, lists add up. Paths
/// resolve against `root` (`~/` under `home`), canonical.
pub(super) fn merge(
    into: &mut SandboxSettings,
    enabled: &mut Option<bool>,
    network: &mut Option<bool>,
    says: SandboxSays,
    root: &Path,
    home: Option<&Path>,
) {
    if enabled.is_none() {
        *enabled = says.enabled;
    }
    if network.is_none() {
        *network = says.network;
    }
    for (list, out) in [
        (says.allow_write, &mut into.allow_write),
        (says.deny_read, &mut into.deny_read),
    ] {
        for d in list {
            let p = resolve_dir(&d, root, home);
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
}

/// Settles the merged yes/no values into `into`.
pub(super) fn settle(into: &mut SandboxSettings, enabled: Option<bool>, network: Option<bool>) {
    if enabled == Some(false) {
        into.off = Some(SANDBOX_DISABLED.to_string());
    }
    into.network = network.unwrap_or(false);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn network_values() {
        assert!(network_of(&json!(true)));
        assert!(!network_of(&json!(false)));
        assert!(network_of(&json!({"allowedDomains": ["*"]})));
        assert!(!network_of(&json!({"allowedDomains": ["github.com"]})));
        assert_eq!(
            network_problem(Some(&json!({"allowedDomains": ["github.com"]})), "setup()"),
            Some("setup(): sandbox.network.allowedDomains is not enforced per domain by lathe, so the network stays off for sandboxed commands; set sandbox.network = true to open it".to_string())
        );
        assert_eq!(network_problem(Some(&json!(true)), "setup()"), None);
    }

    #[test]
    fn setup_wins_for_yes_and_no_lists_add_up_and_files_are_read() {
        use crate::config::Config;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".claude")).unwrap();
        std::fs::create_dir_all(root.join("cache")).unwrap();
        std::fs::create_dir_all(root.join("keys")).unwrap();
        std::fs::write(
            root.join(".claude/settings.json"),
            json!({"sandbox": {"enabled": false, "network": {"allowedDomains": ["github.com"]},
                   "filesystem": {"allowWrite": ["cache"], "denyRead": ["keys"]},
                   "autoAllowBashIfSandboxed": true}})
            .to_string(),
        )
        .unwrap();
        let cfg = Config::from_setup_with_home(&json!({}), &root, None).unwrap();
        let s = &cfg.permissions.sandbox;
        assert_eq!(s.off.as_deref(), Some(SANDBOX_DISABLED));
        assert!(!s.network);
        assert_eq!(s.allow_write, [root.join("cache")]);
        assert_eq!(s.deny_read, [root.join("keys")]);
        assert!(
            cfg.settings_problems
                .iter()
                .any(|p| p.contains("allowedDomains is not enforced")),
            "{:?}",
            cfg.settings_problems
        );
        let cfg = Config::from_setup_with_home(
            &json!({"sandbox": {"enabled": true, "network": true, "filesystem": {"allow_write": ["../x"]}}}),
            &root,
            None,
        )
        .unwrap();
        let s = &cfg.permissions.sandbox;
        assert_eq!(s.off, None, "setup() wins");
        assert!(s.network);
        assert_eq!(s.allow_write.len(), 2, "{:?}", s.allow_write);
        let err = Config::from_setup_with_home(&json!({"sandbox": {"enable": true}}), &root, None)
            .unwrap_err();
        assert!(err.to_string().contains("enable"), "{err}");
        std::fs::write(
            root.join(".claude/settings.json"),
            r#"{"sandbox": {"enabled": "yes"}}"#,
        )
        .unwrap();
        let cfg = Config::from_setup_with_home(&json!({}), &root, None).unwrap();
        assert_eq!(cfg.permissions.sandbox.off, None);
        assert!(cfg
            .settings_problems
            .iter()
            .any(|p| p.contains("the sandbox settings are ignored")));
    }

    #[test]
    fn golden_texts() {
        assert_eq!(SANDBOX_DISABLED, "sandbox.enabled is false");
        assert_eq!(
            crate::text::fill(SANDBOX_UNREADABLE, &[("place", "/p/.claude/settings.json"), ("error", "invalid type")]),
            "/p/.claude/settings.json: the sandbox settings are ignored (invalid type); the sandbox keeps its defaults"
        );
    }
}
