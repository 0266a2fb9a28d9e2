//! Claude Code's settings files, read on `setup()` and merged with its
//! options: the project's `.claude/settings.local.json` and
//! `.claude/settings.json`, then the user's `~/.claude/settings.json`.
//!
//! Keys used: `permissions.allow`, `.ask`, `.deny`, `.defaultMode`,
//! `.additionalDirectories`, `hooks`, and `enableAllProjectMcpServers`,
//! `enabledMcpjsonServers`, `disabledMcpjsonServers` (which `.mcp.json`
//! servers start without asking, `mcp::trust`); every other key is left to
//! Claude Code. A file that does not parse (bad JSON, a wrong type) is reported and
//! ignored whole, never half-applied. An invalid rule string is reported
//! with its file and stands as a deny of its tool until fixed. A deny from
//! any file beats an allow from any other (`permissions::decide`).

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::Config;
use crate::hooks::HookConfig;
use crate::permissions::{Mode, Rule, RuleBase, RuleKind, RuleSource};
use crate::text::fill;

/// A settings file that could not be used. `{path}`, `{error}`.
pub const SETTINGS_UNREADABLE: &str =
    "{path} does not parse ({error}); lathe ignores the whole file until it is fixed.";
/// A rule in a settings file that could not be used. `{path}`, `{rule}`,
/// `{error}`, `{tool}`.
pub const SETTINGS_BAD_RULE: &str =
    "{path}: the rule {rule} is invalid ({error}); {tool} is denied until it is fixed.";
/// A rule naming no tool at all. `{path}`, `{rule}`, `{error}`.
pub const SETTINGS_BAD_RULE_NO_TOOL: &str =
    "{path}: the rule {rule} is invalid ({error}) and names no tool; it is ignored.";

/// A hook lathe does not run (another event, a type other than `command`).
/// `{path}` (the settings file or `setup()`), `{what}`.
pub const HOOK_NOT_RUN: &str =
    "{path}: {what} is not run by lathe (it runs PreToolUse and PostToolUse command hooks); it is ignored.";

/// The [`HOOK_NOT_RUN`] lines for the hooks `config` skipped, from `place`.
pub fn hooks_not_run(place: &str, config: &HookConfig) -> Vec<String> {
    let events = config
        .unsupported_events()
        .iter()
        .map(|e| format!("hooks.{e}"));
    events
        .chain(config.unsupported_hooks().iter().cloned())
        .map(|what| fill(HOOK_NOT_RUN, &[("path", place), ("what", &what)]))
        .collect()
}

/// One settings file of Claude Code's format (the keys lathe reads).
#[derive(Debug, Default, Deserialize)]
struct SettingsFile {
    #[serde(default)]
    permissions: FilePermissions,
    #[serde(default)]
    hooks: Option<Value>,
    #[serde(default)]
    sandbox: Option<Value>,
    #[serde(default, rename = "enableAllProjectMcpServers")]
    enable_all_project_mcp_servers: Option<bool>,
    #[serde(default, rename = "enabledMcpjsonServers")]
    enabled_mcpjson_servers: Vec<String>,
    #[serde(default, rename = "disabledMcpjsonServers")]
    disabled_mcpjson_servers: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FilePermissions {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    ask: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
    #[serde(default)]
    default_mode: Option<String>,
    #[serde(default)]
    additional_directories: Vec<String>,
}

/// The settings files for project `root` and `home`, in precedence order
/// (local, project, user), with their source and the project folder their
/// `/p` rules are relative to. Files that do not exist are left out by
/// `load`.
pub fn candidates(root: &Path, home: Option<&Path>) -> Vec<(RuleSource, PathBuf, PathBuf)> {
    let mut files = vec![
        (
            RuleSource::LocalSettings(root.join(".claude/settings.local.json")),
            root.join(".claude/settings.local.json"),
            root.to_path_buf(),
        ),
        (
            RuleSource::ProjectSettings(root.join(".claude/settings.json")),
            root.join(".claude/settings.json"),
            root.to_path_buf(),
        ),
    ];
    if let Some(h) = home {
        let user = h.join(".claude/settings.json");
        // The home folder as a project: its own settings are the user's.
        if user != root.join(".claude/settings.json") {
            files.push((
                RuleSource::UserSettings(user.clone()),
                user,
                h.to_path_buf(),
            ));
        }
    }
    files
}

/// Reads every settings file of `cfg.cwd` and `home` and merges it into
/// `cfg`: rules after `setup()`'s (all kinds, with their source), the first
/// `defaultMode` found unless `setup_set_mode` (setup()'s mode wins),
/// additional directories, hooks. Problems go to `cfg.settings_problems`.
/// Returns each file's `sandbox` object with the file's path, in
/// precedence order (`config::sandbox` reads them).
pub(super) fn load(
    cfg: &mut Config,
    home: Option<&Path>,
    setup_set_mode: bool,
) -> Vec<(String, Value)> {
    let mut sandbox = Vec::new();
    let root = cfg.cwd.clone();
    let mut mode: Option<Mode> = None;
    let mut enable_all: Option<bool> = None;
    for (source, path, project) in candidates(&root, home) {
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                cfg.settings_problems
                    .push(unreadable(&path, &e.to_string()));
                continue;
            }
        };
        let file: SettingsFile = match serde_json::from_str(&text) {
            Ok(f) => f,
            Err(e) => {
                cfg.settings_problems
                    .push(unreadable(&path, &e.to_string()));
                continue;
            }
        };
        let file_mode = match file
            .permissions
            .default_mode
            .as_deref()
            .map(|m| (m, Mode::parse(m)))
        {
            None => None,
            Some((_, Some(m))) => Some(m),
            Some((m, None)) => {
                cfg.settings_problems.push(unreadable(
                    &path,
                    &format!("permissions.defaultMode {m:?} is not default, acceptEdits, plan or bypassPermissions"),
                ));
                continue;
            }
        };
        if let Some(hooks) = &file.hooks {
            match HookConfig::from_json(hooks) {
                Ok(parsed) => cfg
                    .settings_problems
                    .extend(hooks_not_run(&path.display().to_string(), &parsed)),
                Err(e) => {
                    cfg.settings_problems
                        .push(unreadable(&path, &e.to_string()));
                    continue;
                }
            }
        }
        if let Some(hooks) = file.hooks {
            cfg.hook_settings.push((source.clone(), hooks));
        }
        if let Some(s) = file.sandbox {
            sandbox.push((path.display().to_string(), s));
        }
        mode = mode.or(file_mode);
        if enable_all.is_none() {
            if let Some(on) = file.enable_all_project_mcp_servers {
                enable_all = Some(on);
                if on {
                    cfg.mcp_trust.enable_all = Some(path.clone());
                }
            }
        }
        let trust = &mut cfg.mcp_trust;
        for name in file.enabled_mcpjson_servers {
            trust.enabled.push((name, path.clone()));
        }
        for name in file.disabled_mcpjson_servers {
            trust.disabled.push((name, path.clone()));
        }
        let base = RuleBase {
            root: root.clone(),
            project,
            home: home.map(Path::to_path_buf),
        };
        let p = file.permissions;
        for (kind, list) in [
            (RuleKind::Allow, p.allow),
            (RuleKind::Ask, p.ask),
            (RuleKind::Deny, p.deny),
        ] {
            for written in list {
                match Rule::parse(&written, &base) {
                    Ok(rule) => cfg.permissions.push(kind, rule, source.clone()),
                    Err(e) => {
                        cfg.settings_problems.push(bad_rule(&path, &written, &e));
                        cfg.permissions.push_invalid(&e, source.clone());
                    }
                }
            }
        }
        for d in p.additional_directories {
            let dir = resolve_dir(&d, &root, home);
            if !cfg.permissions.additional_dirs.contains(&dir) {
                cfg.permissions.additional_dirs.push(dir);
            }
        }
    }
    if !setup_set_mode {
        if let Some(m) = mode {
            cfg.permissions.mode = m;
        }
    }
    sandbox
}

fn unreadable(path: &Path, error: &str) -> String {
    fill(
        SETTINGS_UNREADABLE,
        &[("path", &path.display().to_string()), ("error", error)],
    )
}

fn bad_rule(path: &Path, written: &str, e: &crate::permissions::RuleParseError) -> String {
    let p = path.display().to_string();
    let rule = format!("{written:?}");
    match &e.tool {
        Some(tool) => fill(
            SETTINGS_BAD_RULE,
            &[
                ("path", &p),
                ("rule", &rule),
                ("error", &e.why),
                ("tool", tool),
            ],
        ),
        None => fill(
            SETTINGS_BAD_RULE_NO_TOOL,
            &[("path", &p), ("rule", &rule), ("error", &e.why)],
        ),
    }
}

/// An `additionalDirectories` entry as a canonical absolute folder: `~/`
/// under `home`, relative entries against `root`.
pub fn resolve_dir(d: &str, root: &Path, home: Option<&Path>) -> PathBuf {
    let p = match (d.strip_prefix("~/"), home) {
        (Some(rest), Some(h)) => h.join(rest),
        _ if Path::new(d).is_absolute() => PathBuf::from(d),
        _ => root.join(d),
    };
    crate::permissions::resolve_for_rules(&p)
}

/// Adds `rules` to `permissions.allow` of the project's
/// `.claude/settings.local.json` (the `A` key of the float), creating the
/// file and folder when missing and keeping every other key. Written
/// atomically (temp file + rename). Returns the file's path.
///
/// Errors (for the chat): the existing file does not parse (it is left as
/// it is), or it cannot be written.
pub fn save_local_allow(root: &Path, rules: &[String]) -> Result<PathBuf, String> {
    let path = root.join(".claude/settings.local.json");
    let mut doc: Value = match std::fs::read_to_string(&path) {
        Ok(t) => serde_json::from_str(&t)
            .map_err(|e| format!("{} does not parse ({e}); not changed", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Object(Default::default()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let not_object = || format!("{} is not a JSON object; not changed", path.display());
    let obj = doc.as_object_mut().ok_or_else(not_object)?;
    let perms = obj
        .entry("permissions")
        .or_insert_with(|| Value::Object(Default::default()))
        .as_object_mut()
        .ok_or_else(not_object)?;
    let allow = perms
        .entry("allow")
        .or_insert_with(|| Value::Array(Vec::new()))
        .as_array_mut()
        .ok_or_else(not_object)?;
    for r in rules {
        if !allow.iter().any(|v| v.as_str() == Some(r)) {
            allow.push(Value::String(r.clone()));
        }
    }
    let text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())? + "\n";
    let dir = root.join(".claude");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let tmp = dir.join(format!(".settings.local.json.{}.tmp", std::process::id()));
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("cannot write {}: {e}", path.display())
        })?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permissions::{decide, Decision, Request};
    use serde_json::json;

    struct Fixture {
        _dir: tempfile::TempDir,
        root: PathBuf,
        home: PathBuf,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path().canonicalize().expect("canonical");
        let root = base.join("proj");
        let home = base.join("home");
        std::fs::create_dir_all(root.join(".claude")).expect("mkdir");
        std::fs::create_dir_all(home.join(".claude")).expect("mkdir");
        Fixture {
            _dir: dir,
            root,
            home,
        }
    }

    fn write(path: &Path, v: &str) {
        std::fs::write(path, v).expect("write");
    }

    fn config(f: &Fixture, setup: Value) -> Config {
        Config::from_setup_with_home(&setup, &f.root, Some(&f.home)).expect("setup")
    }

    fn edit<'a>(path: &'a Path, root: &'a Path) -> Request<'a> {
        Request {
            tool: "Edit",
            family: crate::permissions::RuleFamily::EditPath,
            read_only: false,
            path: Some(path),
            spellings: &[],
            git_layout: false,
            path_is_dir: false,
            command: None,
            command_paths: &[],
            read_paths: &[],
            reads_unchecked: None,
            input_json: "{}",
            root,
        }
    }

    #[test]
    fn every_source_merges_and_deny_anywhere_wins() {
        let f = fixture();
        write(
            &f.home.join(".claude/settings.json"),
            &json!({"permissions": {"deny": ["Edit(secret/**)"], "defaultMode": "plan"}})
                .to_string(),
        );
        write(
            &f.root.join(".claude/settings.json"),
            &json!({"permissions": {"allow": ["Edit"], "additionalDirectories": ["../shared"]}, "model": "ignored"}).to_string(),
        );
        write(
            &f.root.join(".claude/settings.local.json"),
            &json!({"permissions": {"defaultMode": "acceptEdits"}}).to_string(),
        );
        let c = config(&f, json!({}));
        assert!(c.settings_problems.is_empty(), "{:?}", c.settings_problems);
        assert_eq!(c.permissions.mode, Mode::AcceptEdits, "local beats user");
        let secret = f.root.join("secret/k");
        let d = decide(&c.permissions, &edit(&secret, &f.root));
        assert!(matches!(d, Decision::Deny(_)), "{d:?}");
        assert_eq!(
            d.reason().text,
            "rule Edit(secret/**) from ~/.claude/settings.json denies"
        );
        let other = f.root.join("src/a");
        assert!(matches!(
            decide(&c.permissions, &edit(&other, &f.root)),
            Decision::Allow(_)
        ));
        assert_eq!(
            c.permissions.additional_dirs,
            vec![f.root.parent().expect("parent").join("shared")]
        );
        // setup()'s mode wins over every file, even "default".
        let c = config(
            &f,
            json!({"permissions": {"mode": "default", "allow": ["Read"]}}),
        );
        assert_eq!(c.permissions.mode, Mode::Default);
        let c = config(&f, json!({"permissions": {"mode": "plan"}}));
        assert_eq!(c.permissions.mode, Mode::Plan);
    }

    #[test]
    fn a_file_that_does_not_parse_is_ignored_whole_and_reported() {
        let f = fixture();
        let project = f.root.join(".claude/settings.json");
        write(
            &project,
            r#"{"permissions": {"allow": ["Edit"], "deny": "Bash"}}"#,
        );
        let c = config(&f, json!({}));
        assert_eq!(c.permissions.entries.len(), 0, "nothing half-applied");
        assert_eq!(c.settings_problems.len(), 1);
        assert!(
            c.settings_problems[0].starts_with(&format!("{} does not parse (", project.display())),
            "{:?}",
            c.settings_problems
        );
        assert!(c.settings_problems[0].ends_with("lathe ignores the whole file until it is fixed."));
        write(&project, "{ not json");
        assert_eq!(config(&f, json!({})).settings_problems.len(), 1);
        write(
            &project,
            r#"{"permissions": {"defaultMode": "yolo", "allow": ["Edit"]}}"#,
        );
        let c = config(&f, json!({}));
        assert!(c.permissions.entries.is_empty());
        assert!(c.settings_problems[0].contains("\"yolo\""));
    }

    #[test]
    fn an_invalid_rule_denies_its_tool_and_is_reported_with_its_file() {
        let f = fixture();
        let local = f.root.join(".claude/settings.local.json");
        write(
            &local,
            &json!({"permissions": {"allow": ["Bash(npm test", "Read", "(oops)"]}}).to_string(),
        );
        let c = config(&f, json!({}));
        assert_eq!(
            c.settings_problems,
            vec![
                format!("{}: the rule \"Bash(npm test\" is invalid (missing closing ')'); Bash is denied until it is fixed.", local.display()),
                format!("{}: the rule \"(oops)\" is invalid (expected a tool name like Edit or Bash) and names no tool; it is ignored.", local.display()),
            ]
        );
        let bash = c
            .permissions
            .entries
            .iter()
            .find(|r| r.invalid.is_some())
            .expect("invalid");
        assert_eq!(bash.kind, RuleKind::Deny);
        assert_eq!(bash.rule.tool_name(), "Bash");
    }

    #[test]
    fn claude_settings_false_reads_no_file() {
        let f = fixture();
        write(
            &f.root.join(".claude/settings.json"),
            r#"{"permissions": {"allow": ["Edit"]}}"#,
        );
        let c = config(&f, json!({"claude_settings": false}));
        assert!(c.permissions.entries.is_empty());
    }

    #[test]
    fn hooks_are_kept_with_their_source() {
        let f = fixture();
        let hooks = json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]});
        write(
            &f.root.join(".claude/settings.json"),
            &json!({"hooks": hooks}).to_string(),
        );
        let c = config(&f, json!({}));
        assert_eq!(c.hook_settings.len(), 1);
        assert_eq!(c.hook_settings[0].1, hooks);
    }

    #[test]
    fn a_file_with_bad_hooks_is_ignored_whole() {
        let f = fixture();
        let project = f.root.join(".claude/settings.json");
        write(
            &project,
            &json!({"permissions": {"allow": ["Edit"]}, "hooks": {"PreToolUse": [{"matcher": "(", "hooks": []}]}}).to_string(),
        );
        let c = config(&f, json!({}));
        assert!(c.permissions.entries.is_empty());
        assert!(c.hook_settings.is_empty());
        assert_eq!(c.settings_problems.len(), 1);
        assert!(
            c.settings_problems[0].contains("hooks.PreToolUse[0].matcher"),
            "{:?}",
            c.settings_problems
        );
    }

    #[test]
    fn saving_a_rule_keeps_other_keys_and_does_not_repeat() {
        let f = fixture();
        let local = f.root.join(".claude/settings.local.json");
        write(
            &local,
            r#"{"env": {"A": "1"}, "permissions": {"allow": ["Read"]}}"#,
        );
        save_local_allow(&f.root, &["Edit(src/**)".into()]).expect("save");
        save_local_allow(&f.root, &["Edit(src/**)".into()]).expect("again");
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(&local).expect("read")).expect("json");
        assert_eq!(v["env"]["A"], "1");
        assert_eq!(v["permissions"]["allow"], json!(["Read", "Edit(src/**)"]));
        write(&local, "{ broken");
        let e = save_local_allow(&f.root, &["Edit".into()]).expect_err("broken file");
        assert!(e.ends_with("; not changed"), "{e}");
        assert_eq!(std::fs::read_to_string(&local).expect("read"), "{ broken");
        let fresh = fixture();
        std::fs::remove_dir(fresh.root.join(".claude")).expect("rmdir");
        save_local_allow(&fresh.root, &["Bash(npm test:*)".into()]).expect("creates");
        assert!(fresh.root.join(".claude/settings.local.json").exists());
    }

    #[test]
    fn hooks_lathe_does_not_run_are_named() {
        let f = fixture();
        let project = f.root.join(".claude/settings.json");
        write(
            &project,
            &json!({"hooks": {"Stop": [], "PreToolUse": [{"hooks": [{"type": "prompt", "prompt": "x"}]}]}}).to_string(),
        );
        let c = config(&f, json!({}));
        let p = project.display();
        assert_eq!(
            c.settings_problems,
            vec![
                format!("{p}: hooks.Stop is not run by lathe (it runs PreToolUse and PostToolUse command hooks); it is ignored."),
                format!("{p}: hooks.PreToolUse[0].hooks[0]: type \"prompt\" is not run by lathe (it runs PreToolUse and PostToolUse command hooks); it is ignored."),
            ]
        );
        assert_eq!(
            c.hook_settings.len(),
            1,
            "the file's other hooks still apply"
        );
    }

    #[test]
    fn golden_texts() {
        assert_eq!(
            SETTINGS_UNREADABLE,
            "{path} does not parse ({error}); lathe ignores the whole file until it is fixed."
        );
        assert_eq!(
            SETTINGS_BAD_RULE,
            "{path}: the rule {rule} is invalid ({error}); {tool} is denied until it is fixed."
        );
        assert_eq!(
            SETTINGS_BAD_RULE_NO_TOOL,
            "{path}: the rule {rule} is invalid ({error}) and names no tool; it is ignored."
        );
    }
}
