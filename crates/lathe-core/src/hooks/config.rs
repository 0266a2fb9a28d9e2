//! The `hooks` object of Claude Code's settings, parsed:
//!
//! ```json
//! { "PreToolUse": [ { "matcher": "Edit|Write",
//!                     "hooks": [ { "type": "command", "command": "./fmt.sh", "timeout": 30 } ] } ],
//!   "PostToolUse": [ ... ] }
//! ```
//!
//! Decisions where Claude Code's format leaves room:
//! - A matcher is a regex that must match the **whole** tool name
//!   (`Edit` does not match `NotebookEdit`; `Notebook.*` does), case
//!   sensitive; `""`, `"*"`, `null` or no `matcher` match every tool.
//! - Events other than `PreToolUse`/`PostToolUse` and hooks whose `type` is
//!   not `command` (`prompt`, …) are skipped, not refused, so one settings
//!   file serves Claude Code and lathe; [`HookConfig::unsupported_events`]
//!   and [`HookConfig::unsupported_hooks`] list them for a setup warning.
//! - Unknown keys are ignored (Claude Code adds keys over time); known keys
//!   of the wrong type are errors that name their JSON path.

use std::time::Duration;

use regex::Regex;
use serde_json::Value;

use super::HookEvent;

/// A command hook's timeout when it sets none: 60 s (Claude Code's default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// One command hook: `{ "type": "command", "command": "...", "timeout": 60 }`
/// (`timeout` in seconds, fractions allowed, default [`DEFAULT_TIMEOUT`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandHook {
    /// Run with `bash -c` in the hook input's `cwd`.
    pub command: String,
    /// Wall time before the hook's process group is killed.
    pub timeout: Duration,
}

/// `{ "matcher": "Edit|Write", "hooks": [...] }`: the hooks to run for the
/// tools whose name the matcher matches (see the module doc).
#[derive(Debug, Clone)]
pub struct HookMatcher {
    /// The matcher as written (`""` for none).
    source: String,
    /// The anchored regex; `None` matches every tool.
    regex: Option<Regex>,
    /// The hooks, in settings order.
    pub hooks: Vec<CommandHook>,
}

impl HookMatcher {
    /// A matcher for `matcher` (`""` or `"*"`: every tool) with `hooks`.
    /// Errors: `regex`'s message when `matcher` is not a valid regex.
    pub fn new(matcher: &str, hooks: Vec<CommandHook>) -> Result<Self, regex::Error> {
        let regex = match matcher {
            "" | "*" => None,
            pattern => {
                // Checked alone first, so an error quotes the user's pattern
                // rather than the anchored one.
                Regex::new(pattern)?;
                Some(Regex::new(&format!("^(?:{pattern})$"))?)
            }
        };
        Ok(Self {
            source: matcher.to_string(),
            regex,
            hooks,
        })
    }

    /// The matcher as written (`""` when the settings gave none).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// `true` when the matcher matches the whole of `tool_name`.
    pub fn matches(&self, tool_name: &str) -> bool {
        self.regex.as_ref().is_none_or(|r| r.is_match(tool_name))
    }
}

impl PartialEq for HookMatcher {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source && self.hooks == other.hooks
    }
}

/// Why a `hooks` settings value did not parse, shown to the user by setup:
/// `hooks.PreToolUse[0].matcher: invalid regex ...`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {why}")]
pub struct HookConfigError {
    /// The JSON path of the problem, starting at `hooks`.
    pub path: String,
    /// What is wrong there.
    pub why: String,
}

/// The `hooks` object of Claude Code's settings: the matchers of
/// `PreToolUse` and `PostToolUse`, in settings order; the names of other
/// events and the paths of hooks of other types, kept only to warn about.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookConfig {
    pre_tool_use: Vec<HookMatcher>,
    post_tool_use: Vec<HookMatcher>,
    unsupported_events: Vec<String>,
    unsupported_hooks: Vec<String>,
}

impl HookConfig {
    /// Parses the `hooks` value of one settings source (see the module doc).
    /// Errors name the JSON path of the problem, starting at `hooks`
    /// (`hooks.PreToolUse[0].matcher: invalid regex: ...`).
    pub fn from_json(v: &Value) -> Result<Self, HookConfigError> {
        let events = v.as_object().ok_or_else(|| {
            err(
                "hooks",
                format!("expected an object of hook events, got {}", kind(v)),
            )
        })?;
        let mut config = HookConfig::default();
        for (name, entries) in events {
            let path = format!("hooks.{name}");
            let matchers = match name.as_str() {
                "PreToolUse" => &mut config.pre_tool_use,
                "PostToolUse" => &mut config.post_tool_use,
                _ => {
                    config.unsupported_events.push(name.clone());
                    continue;
                }
            };
            let entries = entries.as_array().ok_or_else(|| {
                err(
                    &path,
                    format!("expected an array of matchers, got {}", kind(entries)),
                )
            })?;
            for (i, entry) in entries.iter().enumerate() {
                let path = format!("{path}[{i}]");
                matchers.push(parse_matcher(entry, &path, &mut config.unsupported_hooks)?);
            }
        }
        Ok(config)
    }

    /// Adds `other`'s hooks after `self`'s: settings sources are merged by
    /// concatenation (identical commands still run once per call, see
    /// [`run`](super::run)).
    pub fn merge(&mut self, other: HookConfig) {
        self.pre_tool_use.extend(other.pre_tool_use);
        self.post_tool_use.extend(other.post_tool_use);
        for name in other.unsupported_events {
            if !self.unsupported_events.contains(&name) {
                self.unsupported_events.push(name);
            }
        }
        self.unsupported_hooks.extend(other.unsupported_hooks);
    }

    /// `true` when no command hook is configured for any supported event.
    pub fn is_empty(&self) -> bool {
        self.pre_tool_use
            .iter()
            .chain(&self.post_tool_use)
            .all(|m| m.hooks.is_empty())
    }

    /// The matchers of `event`, in settings order.
    pub fn matchers(&self, event: HookEvent) -> &[HookMatcher] {
        match event {
            HookEvent::PreToolUse => &self.pre_tool_use,
            HookEvent::PostToolUse => &self.post_tool_use,
        }
    }

    /// Adds a matcher for `event` after the others (for code and tests that
    /// build a configuration without JSON).
    pub fn push(&mut self, event: HookEvent, matcher: HookMatcher) {
        match event {
            HookEvent::PreToolUse => self.pre_tool_use.push(matcher),
            HookEvent::PostToolUse => self.post_tool_use.push(matcher),
        }
    }

    /// Event names of the settings that lathe does not run (`Stop`,
    /// `UserPromptSubmit`, typos), each once, so setup can warn.
    pub fn unsupported_events(&self) -> &[String] {
        &self.unsupported_events
    }

    /// Hooks skipped because their `type` is not `command`, as
    /// `hooks.PreToolUse[0].hooks[1]: type "prompt"`, so setup can warn.
    pub fn unsupported_hooks(&self) -> &[String] {
        &self.unsupported_hooks
    }
}

fn err(path: &str, why: String) -> HookConfigError {
    HookConfigError {
        path: path.to_string(),
        why,
    }
}

/// `a string`, `an object`, … for error texts.
pub(super) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// One `{ "matcher": ..., "hooks": [...] }` at `path`.
fn parse_matcher(
    v: &Value,
    path: &str,
    unsupported: &mut Vec<String>,
) -> Result<HookMatcher, HookConfigError> {
    let obj = v.as_object().ok_or_else(|| {
        err(
            path,
            format!(
                "expected an object with `matcher` and `hooks`, got {}",
                kind(v)
            ),
        )
    })?;
    let matcher = match obj.get("matcher") {
        None | Some(Value::Null) => "",
        Some(Value::String(s)) => s.as_str(),
        Some(other) => {
            return Err(err(
                &format!("{path}.matcher"),
                format!(
                    "expected a string (a regex over the tool name), got {}",
                    kind(other)
                ),
            ))
        }
    };
    let hooks_path = format!("{path}.hooks");
    let list = match obj.get("hooks") {
        Some(Value::Array(list)) => list,
        None => {
            return Err(err(
                &hooks_path,
                "missing: expected an array of hooks".into(),
            ))
        }
        Some(other) => {
            return Err(err(
                &hooks_path,
                format!("expected an array of hooks, got {}", kind(other)),
            ))
        }
    };
    let mut hooks = Vec::new();
    for (i, hook) in list.iter().enumerate() {
        let path = format!("{hooks_path}[{i}]");
        if let Some(hook) = parse_hook(hook, &path, unsupported)? {
            hooks.push(hook);
        }
    }
    HookMatcher::new(matcher, hooks)
        .map_err(|e| err(&format!("{path}.matcher"), format!("invalid regex: {e}")))
}

/// One hook at `path`; `None` (and an entry in `unsupported`) for a type
/// other than `command`.
fn parse_hook(
    v: &Value,
    path: &str,
    unsupported: &mut Vec<String>,
) -> Result<Option<CommandHook>, HookConfigError> {
    let obj = v.as_object().ok_or_else(|| {
        err(
            path,
            format!(
                "expected an object like {{\"type\": \"command\", \"command\": \"...\"}}, got {}",
                kind(v)
            ),
        )
    })?;
    match obj.get("type") {
        Some(Value::String(t)) if t == "command" => {}
        Some(Value::String(t)) => {
            unsupported.push(format!("{path}: type {t:?}"));
            return Ok(None);
        }
        None => {
            return Err(err(
                &format!("{path}.type"),
                "missing: expected \"command\"".into(),
            ))
        }
        Some(other) => {
            return Err(err(
                &format!("{path}.type"),
                format!("expected a string (\"command\"), got {}", kind(other)),
            ))
        }
    }
    let command = match obj.get("command") {
        Some(Value::String(c)) if !c.trim().is_empty() => c.clone(),
        Some(Value::String(_)) => {
            return Err(err(
                &format!("{path}.command"),
                "is empty: expected a shell command".into(),
            ))
        }
        None => {
            return Err(err(
                &format!("{path}.command"),
                "missing: expected a shell command".into(),
            ))
        }
        Some(other) => {
            return Err(err(
                &format!("{path}.command"),
                format!("expected a string (a shell command), got {}", kind(other)),
            ))
        }
    };
    let timeout = match obj.get("timeout") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT,
        Some(t) => t
            .as_f64()
            .filter(|secs| *secs > 0.0)
            .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
            .ok_or_else(|| {
                err(
                    &format!("{path}.timeout"),
                    format!("expected a positive number of seconds, got {t}"),
                )
            })?,
    };
    Ok(Some(CommandHook { command, timeout }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> HookConfig {
        HookConfig::from_json(&v).unwrap()
    }

    fn error(v: Value) -> String {
        HookConfig::from_json(&v).unwrap_err().to_string()
    }

    fn hook(command: &str, secs: u64) -> CommandHook {
        CommandHook {
            command: command.into(),
            timeout: Duration::from_secs(secs),
        }
    }

    #[test]
    fn parses_matchers_hooks_and_defaults() {
        let c = parse(json!({
            "PreToolUse": [
                {"matcher": "Edit|Write", "hooks": [
                    {"type": "command", "command": "./fmt.sh", "timeout": 5},
                    {"type": "command", "command": "./lint.sh"}
                ]},
                {"hooks": [{"type": "command", "command": "./all.sh", "timeout": 0.5}]}
            ],
            "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./log.sh"}]}]
        }));
        let pre = c.matchers(HookEvent::PreToolUse);
        assert_eq!(pre.len(), 2);
        assert_eq!(pre[0].source(), "Edit|Write");
        assert_eq!(
            pre[0].hooks,
            vec![hook("./fmt.sh", 5), hook("./lint.sh", 60)]
        );
        assert_eq!(pre[1].source(), "");
        assert_eq!(pre[1].hooks[0].timeout, Duration::from_millis(500));
        let post = c.matchers(HookEvent::PostToolUse);
        assert_eq!(post[0].hooks, vec![hook("./log.sh", 60)]);
        assert!(!c.is_empty());
        assert!(c.unsupported_events().is_empty());
    }

    #[test]
    fn matchers_match_the_whole_tool_name() {
        let m = |p: &str| HookMatcher::new(p, vec![]).unwrap();
        assert!(m("Edit").matches("Edit"));
        assert!(!m("Edit").matches("NotebookEdit"));
        assert!(!m("Edit").matches("Edits"));
        assert!(!m("Edit").matches("edit"));
        assert!(m("Edit|Write").matches("Write"));
        assert!(!m("Edit|Write").matches("WriteFile"));
        assert!(m("Notebook.*").matches("NotebookEdit"));
        assert!(m("mcp__memory__.*").matches("mcp__memory__create"));
        for all in ["", "*"] {
            assert!(m(all).matches("Bash"));
            assert!(m(all).matches("NotebookEdit"));
        }
        let none = parse(json!({"PreToolUse": [{"matcher": null, "hooks": []}]}));
        assert!(none.matchers(HookEvent::PreToolUse)[0].matches("Read"));
    }

    #[test]
    fn other_events_and_hook_types_are_listed_not_refused() {
        let c = parse(json!({
            "Stop": [{"hooks": [{"type": "command", "command": "x"}]}],
            "UserPromptSubmit": "anything",
            "PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "prompt", "prompt": "is this safe?"},
                {"type": "command", "command": "./ok.sh", "statusMessage": "unknown keys are ignored"}
            ]}]
        }));
        assert_eq!(c.unsupported_events(), ["Stop", "UserPromptSubmit"]);
        assert_eq!(
            c.unsupported_hooks(),
            ["hooks.PreToolUse[0].hooks[0]: type \"prompt\""]
        );
        assert_eq!(
            c.matchers(HookEvent::PreToolUse)[0].hooks,
            vec![hook("./ok.sh", 60)]
        );
    }

    #[test]
    fn empty_configs() {
        assert!(parse(json!({})).is_empty());
        assert!(parse(json!({"PreToolUse": [{"matcher": "Edit", "hooks": []}]})).is_empty());
        assert!(parse(json!({"Stop": []})).is_empty());
        assert!(HookConfig::default().is_empty());
    }

    #[test]
    fn errors_name_the_json_path() {
        let cases = [
            (json!([]), "hooks: expected an object of hook events, got an array"),
            (
                json!({"PreToolUse": {}}),
                "hooks.PreToolUse: expected an array of matchers, got an object",
            ),
            (
                json!({"PostToolUse": ["Edit"]}),
                "hooks.PostToolUse[0]: expected an object with `matcher` and `hooks`, got a string",
            ),
            (
                json!({"PreToolUse": [{"matcher": 3, "hooks": []}]}),
                "hooks.PreToolUse[0].matcher: expected a string (a regex over the tool name), got a number",
            ),
            (
                json!({"PreToolUse": [{"matcher": "Edit"}]}),
                "hooks.PreToolUse[0].hooks: missing: expected an array of hooks",
            ),
            (
                json!({"PreToolUse": [{"hooks": {"type": "command"}}]}),
                "hooks.PreToolUse[0].hooks: expected an array of hooks, got an object",
            ),
            (
                json!({"PreToolUse": [{"hooks": ["./x.sh"]}]}),
                "hooks.PreToolUse[0].hooks[0]: expected an object like {\"type\": \"command\", \"command\": \"...\"}, got a string",
            ),
            (
                json!({"PreToolUse": [{"hooks": [{"command": "./x.sh"}]}]}),
                "hooks.PreToolUse[0].hooks[0].type: missing: expected \"command\"",
            ),
            (
                json!({"PreToolUse": [{"hooks": [{"type": 1, "command": "./x.sh"}]}]}),
                "hooks.PreToolUse[0].hooks[0].type: expected a string (\"command\"), got a number",
            ),
            (
                json!({"PreToolUse": [{"hooks": [{"type": "command"}]}]}),
                "hooks.PreToolUse[0].hooks[0].command: missing: expected a shell command",
            ),
            (
                json!({"PreToolUse": [{"hooks": [{"type": "command", "command": " "}]}]}),
                "hooks.PreToolUse[0].hooks[0].command: is empty: expected a shell command",
            ),
            (
                json!({"PreToolUse": [{"hooks": [{"type": "command", "command": ["ls"]}]}]}),
                "hooks.PreToolUse[0].hooks[0].command: expected a string (a shell command), got an array",
            ),
            (
                json!({"PreToolUse": [{"hooks": []}, {"hooks": [{"type": "command", "command": "x", "timeout": 0}]}]}),
                "hooks.PreToolUse[1].hooks[0].timeout: expected a positive number of seconds, got 0",
            ),
            (
                json!({"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": -1}]}]}),
                "hooks.PreToolUse[0].hooks[0].timeout: expected a positive number of seconds, got -1",
            ),
            (
                json!({"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": "60"}]}]}),
                "hooks.PreToolUse[0].hooks[0].timeout: expected a positive number of seconds, got \"60\"",
            ),
            (
                json!({"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": 1e300}]}]}),
                "hooks.PreToolUse[0].hooks[0].timeout: expected a positive number of seconds, got 1e+300",
            ),
        ];
        for (v, want) in cases {
            assert_eq!(error(v.clone()), want, "for {v}");
        }
    }

    #[test]
    fn a_bad_regex_names_the_matcher() {
        let e = HookConfig::from_json(&json!({"PostToolUse": [{"matcher": "Edit(", "hooks": []}]}))
            .unwrap_err();
        assert_eq!(e.path, "hooks.PostToolUse[0].matcher");
        assert!(e.why.starts_with("invalid regex: "), "{}", e.why);
        // The user's pattern is quoted, not the anchored one lathe compiles.
        assert!(e.why.contains("Edit("), "{}", e.why);
        assert!(!e.why.contains("^(?:"), "{}", e.why);
        assert!(e
            .to_string()
            .starts_with("hooks.PostToolUse[0].matcher: invalid regex: "));
    }

    #[test]
    fn merge_concatenates_sources() {
        let mut user = parse(json!({
            "PreToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "a"}]}],
            "Stop": []
        }));
        let project = parse(json!({
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "b"}]}],
            "PostToolUse": [{"hooks": [{"type": "command", "command": "c"}]}],
            "Stop": [],
            "Notification": []
        }));
        user.merge(project);
        let pre: Vec<&str> = user
            .matchers(HookEvent::PreToolUse)
            .iter()
            .map(|m| m.source())
            .collect();
        assert_eq!(pre, ["Edit", "Bash"]);
        assert_eq!(user.matchers(HookEvent::PostToolUse).len(), 1);
        assert_eq!(user.unsupported_events(), ["Stop", "Notification"]);

        let mut empty = HookConfig::default();
        empty.merge(HookConfig::default());
        assert!(empty.is_empty());
    }
}
