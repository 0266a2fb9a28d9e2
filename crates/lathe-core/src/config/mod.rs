//! Options from `require("lathe").setup(opts)`, with clear errors.
//!
//! `opts` arrives as JSON (converted from the Lua table). Unknown keys and
//! wrong types are errors that name the key, so a typo never silently falls
//! back to a default. Each option is declared once, in [`settings`]: the
//! parsing, the LuaCATS class and `:help lathe-setup` come from there.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::permissions::{Mode, Rule, RuleBase, RuleKind, RuleSource, Rules};

pub mod keys;
pub mod mcp;
mod sandbox;
pub mod settings;
pub mod settings_files;

pub use sandbox::{DOMAINS_NOT_ENFORCED, SANDBOX_DISABLED};

/// Model used when `setup{ model = ... }` is not given.
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";
/// Messages API base URL when neither `base_url` nor `ANTHROPIC_BASE_URL` is set.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// Environment variable holding the API key.
pub const DEFAULT_API_KEY_ENV: &str = "ANTHROPIC_API_KEY";
/// Model requests per `ask` before the turn stops.
pub const DEFAULT_MAX_TURNS: u32 = 50;
/// Bash timeout when the model gives none, ms (Claude Code's 2 minutes).
pub const DEFAULT_BASH_TIMEOUT_MS: u64 = 120_000;
/// Largest Bash timeout the model may ask for, ms (10 minutes).
pub const DEFAULT_BASH_MAX_TIMEOUT_MS: u64 = 600_000;
/// `max_tokens` of each request.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;
/// `max_tokens` of the one retry after an answer was cut at `max_tokens`
/// (Claude Sonnet 4.5's output limit is 64 000).
pub const DEFAULT_RETRY_MAX_TOKENS: u32 = 32_000;
/// Retries of a failed model request after its first try (so 5 tries in
/// all; see `provider::retry::RetryPolicy::from_config`).
pub const DEFAULT_MAX_RETRIES: u32 = 4;
/// Default of `permission_guard_ms`: long enough that a key typed just
/// before the float appeared is not an answer, short enough not to notice.
pub const DEFAULT_PERMISSION_GUARD_MS: u64 = 400;
/// Default of `diagnostics_wait_ms`: how long an Edit or Write of a buffer
/// with language-server clients waits for their next diagnostics.
pub const DEFAULT_DIAGNOSTICS_WAIT_MS: u64 = 2000;
/// Default of `lsp_timeout_ms`: how long an LSP tool (LspDefinition, …)
/// waits for the language servers, loading and attaching included.
pub const DEFAULT_LSP_TIMEOUT_MS: u64 = 5000;
/// Concurrency-safe tool calls that run at once, at most (`max_tool_concurrency`).
pub const DEFAULT_MAX_TOOL_CONCURRENCY: usize = 10;
/// Longest silence of a streaming answer before it counts as dropped, in ms.
pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 90_000;

/// What the turn loop does after a stream failed once output began:
/// `setup{ stream_fallback = "streaming" | "non_streaming" | "off" }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StreamFallback {
    /// `"streaming"` (default): withdraw the partial answer and retry with
    /// streaming again.
    #[default]
    Streaming,
    /// `"non_streaming"`: withdraw the partial answer and retry once more
    /// without streaming (`Provider::complete`).
    NonStreaming,
    /// `"off"`: end the turn with the error.
    Off,
}

impl StreamFallback {
    /// The setup value for `s` (`"streaming"`, `"non_streaming"`, `"off"`,
    /// exact spelling), `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "streaming" => Some(Self::Streaming),
            "non_streaming" => Some(Self::NonStreaming),
            "off" => Some(Self::Off),
            _ => None,
        }
    }
}

/// How lathe saves a file it edited that is open in an unmodified buffer:
/// `setup{ save = "direct" | "write" }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SaveMode {
    /// `"direct"` (default): lathe writes the file itself, keeping
    /// `:write`'s rules for the modification time and backups.
    #[default]
    Direct,
    /// `"write"`: lathe runs `:write` (slower; runs the user's BufWrite
    /// autocommands).
    Write,
}

impl SaveMode {
    /// Parses `"direct"` or `"write"` (exact spelling).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "direct" => Some(Self::Direct),
            "write" => Some(Self::Write),
            _ => None,
        }
    }

    /// The setting's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Direct => "direct",
            Self::Write => "write",
        }
    }
}

/// Which model API a session talks to: `setup{ provider = … }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProviderKind {
    /// `"anthropic"` (default): the Anthropic Messages API,
    /// `{base_url}/v1/messages`.
    #[default]
    Anthropic,
    /// `"openai"`: an OpenAI-compatible chat completions API (OpenAI,
    /// Ollama, llama.cpp server, vLLM, LM Studio, OpenRouter …),
    /// `{base_url}/chat/completions`, where `base_url` includes the API's
    /// version path (`https://api.openai.com/v1`,
    /// `http://localhost:11434/v1`).
    OpenAi,
}

impl ProviderKind {
    /// Parses `"anthropic"` or `"openai"`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "anthropic" => Some(Self::Anthropic),
            "openai" => Some(Self::OpenAi),
            _ => None,
        }
    }

    /// The setting's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::OpenAi => "openai",
        }
    }
}

/// OpenAI-compatible base URL when neither `base_url` nor `OPENAI_BASE_URL`
/// is set.
pub const DEFAULT_OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// The `setup()` error when `provider = "openai"` comes without a `model`.
pub const OPENAI_NEEDS_MODEL: &str = "setup(): provider = \"openai\" needs a model: the id your server serves, e.g. model = \"gpt-4.1\" (OpenAI) or \"qwen3\" (Ollama)";
/// Environment variable holding the key for `provider = "openai"`.
pub const DEFAULT_OPENAI_API_KEY_ENV: &str = "OPENAI_API_KEY";

/// `auto_compact` when setup() does not set it: compact when a request
/// would fill 85 % of the window.
pub const DEFAULT_AUTO_COMPACT_PERMILLE: u32 = 850;

/// The default `stop_key`.
pub const DEFAULT_STOP_KEY: &str = "<C-c>";

/// User-facing: a `stop_key` that is neither a key nor `false`. `{value}`.
pub const STOP_KEY_INVALID: &str =
    "setup(): stop_key must be a key such as \"<C-c>\", or false, got {value}";

/// The setup() error for a bad `auto_compact`.
pub const AUTO_COMPACT_INVALID: &str =
    "setup(): auto_compact must be false, true, or the share of the context window at which lathe compacts (above 0.1, at most 1; default 0.85), got {value}";

/// The effective configuration of a session.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Which API: Anthropic Messages (default) or OpenAI-compatible chat
    /// completions.
    pub provider: ProviderKind,
    /// Model id sent as `model`.
    pub model: String,
    /// Base URL: requests go to `{base_url}/v1/messages` (Anthropic) or
    /// `{base_url}/chat/completions` (OpenAI-compatible, whose base URL
    /// carries its version path, e.g. `http://localhost:11434/v1`).
    pub base_url: String,
    /// Environment variable read for the API key.
    pub api_key_env: String,
    /// Model requests per `ask` at most.
    pub max_turns: u32,
    /// The model's context window in tokens (`setup{ context_window }`);
    /// `None`: the server's published figure, else the model id's
    /// (`provider::window`).
    pub context_window: Option<u64>,
    /// Compact (clear old tool results, then summarize) before a request
    /// that would fill this many thousandths of the window; `None`
    /// (`auto_compact = false`) never compacts on its own. Default
    /// [`DEFAULT_AUTO_COMPACT_PERMILLE`].
    pub auto_compact_permille: Option<u32>,
    /// `max_tokens` of each request.
    pub max_tokens: u32,
    /// `max_tokens` for the continuation after an answer was cut at
    /// `max_tokens` (once per turn); at most the model's output limit.
    /// Default [`DEFAULT_RETRY_MAX_TOKENS`].
    pub retry_max_tokens: u32,
    /// `temperature` of every request (0 to 2; the Messages API takes 0
    /// to 1), `None` for the server's default.
    pub temperature: Option<f64>,
    /// Absolute project root (relative tool paths resolve here).
    pub cwd: PathBuf,
    /// Permission mode and rules.
    pub permissions: Rules,
    /// Bash `timeout` when the model gives none, in ms (default 120 000).
    pub bash_default_timeout_ms: u64,
    /// Largest Bash `timeout` accepted, in ms (default 600 000).
    pub bash_max_timeout_ms: u64,
    /// Concurrency-safe tool calls run at once, at most (≥ 1). Default 10.
    pub max_tool_concurrency: usize,
    /// Start each tool call as soon as its `tool_use` block is complete,
    /// while the model is still writing (default `true`); `false` waits for
    /// the whole answer first.
    pub streaming_tools: bool,
    /// Directory for lathe's state (oversized tool results, …). The Neovim
    /// side sets `stdpath("state")/lathe`; elsewhere the platform's state
    /// directory, else the temp directory.
    pub state_dir: PathBuf,
    /// Where conversations are saved (`{sessions_dir}/{project}/{id}.jsonl`,
    /// `:help lathe-sessions`): the Neovim side sets
    /// `stdpath("state")/lathe/sessions`; `None` (the default, and in the
    /// core's tests) saves nothing.
    pub sessions_dir: Option<PathBuf>,
    /// Write a buffer to disk after lathe changed it (when the user had no
    /// unsaved changes in it). Default `true`.
    pub save_after_edit: bool,
    /// The Normal-mode key that stops a running turn from any window
    /// (`setup{ stop_key }`); `None` when turned off. Default `<C-c>`.
    pub stop_key: Option<String>,
    /// How that save is done: lathe's direct write (default) or `:write`.
    pub save: SaveMode,
    /// Retries of a failed model request after the first try (0 = never
    /// retry). Default [`DEFAULT_MAX_RETRIES`].
    pub max_retries: u32,
    /// Milliseconds without a byte from a streaming answer (headers or
    /// body) before it fails as dropped; at least 1. Default
    /// [`DEFAULT_IDLE_TIMEOUT_MS`].
    pub idle_timeout_ms: u64,
    /// What to do after a stream failed mid-answer. Default
    /// [`StreamFallback::Streaming`].
    pub stream_fallback: StreamFallback,
    /// Read Claude Code's settings files (`.claude/settings.json`,
    /// `.claude/settings.local.json`, `~/.claude/settings.json`) for
    /// permission rules, the default mode, additional directories and hooks.
    /// `setup{ claude_settings = false }` turns it off. Default `true`.
    pub claude_settings: bool,
    /// Problems with the settings files, one line each (a file that does not
    /// parse is ignored whole; an invalid rule denies its tool): shown once
    /// at setup and by `:checkhealth lathe`.
    pub settings_problems: Vec<String>,
    /// Milliseconds without a key before the permission float appears, and
    /// again before it takes focus (keys typed meanwhile go to the user's
    /// window), so keys typed for something else never land in it.
    /// Default [`DEFAULT_PERMISSION_GUARD_MS`].
    pub permission_guard_ms: u64,
    /// Milliseconds an Edit or Write of a buffer with language-server
    /// clients waits for every client's next diagnostics (it returns as soon
    /// as all have published); 0 turns the diagnostics in those results off.
    /// Default [`DEFAULT_DIAGNOSTICS_WAIT_MS`].
    pub diagnostics_wait_ms: u64,
    /// Milliseconds an LSP tool (LspDefinition, LspReferences, LspHover,
    /// LspSymbols) waits for the language servers' answer, loading a file
    /// and waiting for a server to attach included (1 to 60000).
    /// Default [`DEFAULT_LSP_TIMEOUT_MS`].
    pub lsp_timeout_ms: u64,
    /// The `hooks` objects of the settings files, with their source, in
    /// precedence order (parsed by the hooks module).
    pub hook_settings: Vec<(RuleSource, Value)>,
    /// The MCP servers to start: `.mcp.json`'s, then `setup()`'s
    /// `mcp_servers` (which replace a `.mcp.json` server of the same name).
    pub mcp_servers: Vec<crate::config::mcp::McpServerConfig>,
    /// `setup{ mcp_servers }` and `.mcp.json` problems for checkhealth
    /// (servers not started, why).
    pub mcp_problems: Vec<String>,
    /// The names of the servers in `mcp_servers` that come from the
    /// project's `.mcp.json` (not replaced by `setup()`'s): they start only
    /// once trusted (`mcp::trust`, `:help lathe-mcp-trust`).
    pub mcp_project_servers: Vec<String>,
    /// What the settings files say about `.mcp.json` servers
    /// (`enableAllProjectMcpServers`, `enabledMcpjsonServers`,
    /// `disabledMcpjsonServers`).
    pub mcp_trust: crate::config::mcp::McpTrustSettings,
}

impl Config {
    /// Defaults with `cwd` as project root; `base_url` honours
    /// `ANTHROPIC_BASE_URL`.
    pub fn new(cwd: &Path) -> Self {
        Self {
            provider: ProviderKind::Anthropic,
            model: DEFAULT_MODEL.into(),
            base_url: std::env::var("ANTHROPIC_BASE_URL")
                .ok()
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| DEFAULT_BASE_URL.into()),
            api_key_env: DEFAULT_API_KEY_ENV.into(),
            max_turns: DEFAULT_MAX_TURNS,
            context_window: None,
            auto_compact_permille: Some(DEFAULT_AUTO_COMPACT_PERMILLE),
            max_tokens: DEFAULT_MAX_TOKENS,
            retry_max_tokens: DEFAULT_RETRY_MAX_TOKENS,
            temperature: None,
            cwd: cwd.to_path_buf(),
            permissions: Rules::default(),
            save_after_edit: true,
            stop_key: Some(DEFAULT_STOP_KEY.to_string()),
            save: SaveMode::Direct,
            max_tool_concurrency: DEFAULT_MAX_TOOL_CONCURRENCY,
            streaming_tools: true,
            bash_default_timeout_ms: DEFAULT_BASH_TIMEOUT_MS,
            bash_max_timeout_ms: DEFAULT_BASH_MAX_TIMEOUT_MS,
            max_retries: DEFAULT_MAX_RETRIES,
            idle_timeout_ms: DEFAULT_IDLE_TIMEOUT_MS,
            stream_fallback: StreamFallback::default(),
            claude_settings: true,
            settings_problems: Vec::new(),
            permission_guard_ms: DEFAULT_PERMISSION_GUARD_MS,
            diagnostics_wait_ms: DEFAULT_DIAGNOSTICS_WAIT_MS,
            lsp_timeout_ms: DEFAULT_LSP_TIMEOUT_MS,
            hook_settings: Vec::new(),
            mcp_servers: Vec::new(),
            mcp_problems: Vec::new(),
            mcp_project_servers: Vec::new(),
            mcp_trust: Default::default(),
            sessions_dir: None,
            state_dir: dirs::state_dir()
                .unwrap_or_else(std::env::temp_dir)
                .join("lathe"),
        }
    }

    /// Applies `setup` options (a JSON object) on top of [`Config::new`].
    ///
    /// `cwd` is the editor's current directory, used when `opts.cwd` is absent
    /// and to resolve a relative `opts.cwd`. Errors name the offending key.
    ///
    /// Unless `claude_settings = false`, the settings files of the project
    /// and of the user (`~/.claude/settings.json`) are read and merged
    /// (`settings_files::load`); their problems land in
    /// `settings_problems`, never in an error.
    pub fn from_setup(opts: &Value, cwd: &Path) -> Result<Self, ConfigError> {
        Self::from_setup_with_home(opts, cwd, dirs::home_dir().as_deref())
    }

    /// [`Config::from_setup`] with `home` as the user's home directory (for
    /// `~/.claude/settings.json` and `~/` in rules); `None` skips the user's
    /// settings.
    pub fn from_setup_with_home(
        opts: &Value,
        cwd: &Path,
        home: Option<&Path>,
    ) -> Result<Self, ConfigError> {
        let mut cfg = Self::from_setup_options(opts, cwd, home)?;
        let mut sandbox_says: Vec<sandbox::SandboxSays> = Vec::new();
        if let Some(v) = opts.get("sandbox").filter(|v| !is_empty_table(v)) {
            let raw: sandbox::RawSandbox =
                serde_path_to_error::deserialize(v.clone()).map_err(|e| {
                    ConfigError(format!("setup(): sandbox.{}: {}", e.path(), e.inner()))
                })?;
            cfg.settings_problems.extend(raw.problem("setup()"));
            sandbox_says.push(raw.into());
        }
        if cfg.claude_settings {
            let mode_given = ["/permissions/mode", "/permissions/defaultMode"]
                .iter()
                .any(|p| opts.pointer(p).is_some());
            for (place, value) in settings_files::load(&mut cfg, home, mode_given) {
                match sandbox::from_file(value, &place) {
                    Ok((says, problem)) => {
                        cfg.settings_problems.extend(problem);
                        sandbox_says.push(says);
                    }
                    Err(problem) => cfg.settings_problems.push(problem),
                }
            }
        }
        let (mut enabled, mut network) = (None, None);
        for says in sandbox_says {
            sandbox::merge(
                &mut cfg.permissions.sandbox,
                &mut enabled,
                &mut network,
                says,
                &cfg.cwd,
                home,
            );
        }
        sandbox::settle(&mut cfg.permissions.sandbox, enabled, network);
        let (mut servers, problems) = crate::config::mcp::from_project(&cfg.cwd);
        servers.retain(|s| !cfg.mcp_servers.iter().any(|o| o.name == s.name));
        cfg.mcp_project_servers = servers.iter().map(|s| s.name.clone()).collect();
        servers.append(&mut cfg.mcp_servers);
        cfg.mcp_servers = servers;
        cfg.mcp_problems.extend(problems);
        Ok(cfg)
    }

    /// The `setup()` options alone, without settings files.
    fn from_setup_options(
        opts: &Value,
        cwd: &Path,
        home: Option<&Path>,
    ) -> Result<Self, ConfigError> {
        let mut cfg = Config::new(cwd);
        if opts.is_null()
            || opts.as_object().is_some_and(|m| m.is_empty())
            || opts.as_array().is_some_and(|a| a.is_empty())
        {
            return Ok(cfg);
        }
        let opts = Map::<String, Value>::deserialize(opts)
            .map_err(|e| ConfigError(format!("setup(): {e}")))?;
        settings::apply_all(&mut cfg, &opts, cwd, home)?;
        Ok(cfg)
    }
}

/// The `permissions` table of `setup()` as rules from [`RuleSource::Setup`]:
/// `mode` (or `defaultMode`), `allow`, `ask`, `deny`,
/// `additional_directories` (or `additionalDirectories`, relative to the
/// root). Unlike a settings file, a bad rule here is an error naming it.
fn setup_rules(p: RawPermissions, root: &Path, home: Option<&Path>) -> Result<Rules, ConfigError> {
    let mut rules = Rules::default();
    if let Some(m) = p.mode.or(p.default_mode) {
        rules.mode = Mode::parse(&m).ok_or_else(|| {
            ConfigError(format!(
                "setup(): permissions.mode must be \"default\", \"acceptEdits\", \"plan\" or \"bypassPermissions\", got {m:?}"
            ))
        })?;
    }
    let base = RuleBase::at_root(root, home);
    for (kind, list) in [
        (RuleKind::Allow, p.allow),
        (RuleKind::Ask, p.ask),
        (RuleKind::Deny, p.deny),
    ] {
        for r in list {
            let rule = Rule::parse(&r, &base)
                .map_err(|e| ConfigError(format!("setup(): permissions: {e}")))?;
            rules.push(kind, rule, RuleSource::Setup);
        }
    }
    for d in p
        .additional_directories
        .into_iter()
        .chain(p.additional_directories_camel)
    {
        rules
            .additional_dirs
            .push(settings_files::resolve_dir(&d, root, home));
    }
    Ok(rules)
}

/// A `setup` option that could not be used; the text names the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

/// The smallest `setup{ context_window }` taken, in tokens.
pub const MIN_CONTEXT_WINDOW: u64 = 1000;
/// The largest `setup{ context_window }` taken, in tokens.
pub const MAX_CONTEXT_WINDOW: u64 = 100_000_000;
/// User-facing: a `setup{ context_window }` that is not a whole number
/// of tokens from [`MIN_CONTEXT_WINDOW`] to [`MAX_CONTEXT_WINDOW`]
/// (followed by `, got <value>`).
pub const BAD_CONTEXT_WINDOW: &str =
    "setup(): context_window must be a whole number of tokens from 1000 to 100000000";

/// `v` as an unsigned integer that fits `T` (`u32` or `u64`); an integral
/// float (`4.0`, as a Lua number may arrive) counts. The error names `key`,
/// the range (`0..=max`, `T`'s largest value) and the value given.
fn whole<T: TryFrom<u64>>(key: &str, v: &Value, max: u64) -> Result<T, ConfigError> {
    v.as_u64()
        .or_else(|| {
            v.as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < u64::MAX as f64)
                // Integral and in range: the cast is exact.
                .map(|f| f as u64)
        })
        .filter(|n| *n <= max)
        .and_then(|n| T::try_from(n).ok())
        .ok_or_else(|| {
            ConfigError(format!(
                "setup(): {key} must be a whole number from 0 to {max}, got {v}"
            ))
        })
}

/// `setup{ temperature }`: a number from 0 to 1 for the Messages API (its
/// range), 0 to 2 for OpenAI-compatible servers (theirs).
fn temperature(v: &Value, provider: ProviderKind) -> Result<f64, ConfigError> {
    let max = match provider {
        ProviderKind::Anthropic => 1.0,
        ProviderKind::OpenAi => 2.0,
    };
    v.as_f64()
        .filter(|t| (0.0..=max).contains(t))
        .ok_or_else(|| {
            ConfigError(format!(
                "setup(): temperature must be a number from 0 to {max} for this provider, got {v}"
            ))
        })
}

/// `true` for `{}` or `[]` (Lua's empty table arrives as either).
fn is_empty_table(v: &Value) -> bool {
    v.as_object().is_some_and(|m| m.is_empty()) || v.as_array().is_some_and(|a| a.is_empty())
}

fn nonempty(key: &str, v: String) -> Result<String, ConfigError> {
    if v.trim().is_empty() {
        Err(ConfigError(format!("setup(): {key} must not be empty")))
    } else {
        Ok(v)
    }
}

/// The `bash` table's shape (its keys are parsed from `settings::BASH`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct RawBash {
    timeout_ms: Option<Value>,
    max_timeout_ms: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPermissions {
    mode: Option<String>,
    #[serde(rename = "defaultMode")]
    default_mode: Option<String>,
    #[serde(default, deserialize_with = "list")]
    additional_directories: Vec<String>,
    #[serde(default, rename = "additionalDirectories", deserialize_with = "list")]
    additional_directories_camel: Vec<String>,
    #[serde(default, deserialize_with = "list")]
    allow: Vec<String>,
    #[serde(default, deserialize_with = "list")]
    ask: Vec<String>,
    #[serde(default, deserialize_with = "list")]
    deny: Vec<String>,
}

/// Lua's empty table `{}` arrives as an empty object; accept it as `[]`.
fn list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum L {
        List(Vec<String>),
        Empty(serde_json::Map<String, Value>),
    }
    match L::deserialize(d)? {
        L::List(v) => Ok(v),
        L::Empty(m) if m.is_empty() => Ok(Vec::new()),
        L::Empty(_) => Err(serde::de::Error::custom("expected a list of strings")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn temperature_is_checked_against_the_provider_range() {
        let setup = |v: Value| Config::from_setup(&v, Path::new("/p"));
        assert_eq!(
            setup(json!({"temperature": 0.2})).unwrap().temperature,
            Some(0.2)
        );
        assert_eq!(setup(json!({})).unwrap().temperature, None);
        assert_eq!(
            setup(json!({"temperature": 1.5})).unwrap_err().0,
            "setup(): temperature must be a number from 0 to 1 for this provider, got 1.5"
        );
        let c = setup(json!({"provider": "openai", "model": "qwen3", "temperature": 1.5})).unwrap();
        assert_eq!(c.temperature, Some(1.5));
        assert!(setup(json!({"temperature": "warm"})).is_err());
        assert!(setup(json!({"temperature": -0.1})).is_err());
    }

    #[test]
    fn unknown_key_is_named() {
        let e = Config::from_setup(&json!({"modle": "x"}), Path::new("/p")).unwrap_err();
        assert!(e.0.contains("modle"), "{e}");
    }

    #[test]
    fn rules_and_mode_parse() {
        let c = Config::from_setup(
            &json!({"permissions": {"mode": "acceptEdits", "deny": ["Write"], "allow": {}}}),
            Path::new("/p"),
        )
        .unwrap();
        assert_eq!(c.permissions.mode, Mode::AcceptEdits);
        assert_eq!(
            c.permissions.of(RuleKind::Deny).collect::<Vec<_>>(),
            vec![&Rule::tool("Write")]
        );
    }

    #[test]
    fn context_options_default_and_parse() {
        let d = Config::from_setup(&json!({}), Path::new("/p")).unwrap();
        assert_eq!(d.context_window, None);
        assert_eq!(d.auto_compact_permille, Some(850));
        let c = Config::from_setup(
            &json!({"context_window": 32768, "auto_compact": 0.9}),
            Path::new("/p"),
        )
        .unwrap();
        assert_eq!(c.context_window, Some(32768));
        assert_eq!(c.auto_compact_permille, Some(900));
        let off = Config::from_setup(&json!({"auto_compact": false}), Path::new("/p")).unwrap();
        assert_eq!(off.auto_compact_permille, None);
        assert_eq!(
            Config::from_setup(&json!({"auto_compact": 2}), Path::new("/p"))
                .unwrap_err()
                .0,
            "setup(): auto_compact must be false, true, or the share of the context window at which lathe compacts (above 0.1, at most 1; default 0.85), got 2"
        );
        assert!(Config::from_setup(&json!({"context_window": 10}), Path::new("/p")).is_err());
    }

    #[test]
    fn every_bad_context_window_names_the_real_range() {
        let err = |v: Value| {
            Config::from_setup(&json!({ "context_window": v }), Path::new("/p"))
                .unwrap_err()
                .0
        };
        for (v, shown) in [
            (json!(500), "500"),
            (json!(999), "999"),
            (json!(12000.5), "12000.5"),
            (json!(200_000_000u64), "200000000"),
            (json!(-1), "-1"),
            (json!("big"), "\"big\""),
        ] {
            assert_eq!(
                err(v),
                format!("setup(): context_window must be a whole number of tokens from 1000 to 100000000, got {shown}")
            );
        }
        assert!(BAD_CONTEXT_WINDOW.contains(&MIN_CONTEXT_WINDOW.to_string()));
        assert!(BAD_CONTEXT_WINDOW.contains(&MAX_CONTEXT_WINDOW.to_string()));
        for ok in [1000u64, 100_000_000] {
            let c = Config::from_setup(&json!({ "context_window": ok }), Path::new("/p")).unwrap();
            assert_eq!(c.context_window, Some(ok));
        }
    }

    #[test]
    fn retry_options_default_and_parse() {
        let d = Config::from_setup(&json!({}), Path::new("/p")).unwrap();
        assert_eq!(d.max_retries, 4);
        assert_eq!(d.idle_timeout_ms, 90_000);
        assert_eq!(d.stream_fallback, StreamFallback::Streaming);
        let c = Config::from_setup(
            &json!({"max_retries": 0, "idle_timeout_ms": 250, "stream_fallback": "non_streaming"}),
            Path::new("/p"),
        )
        .unwrap();
        assert_eq!(c.max_retries, 0);
        assert_eq!(c.idle_timeout_ms, 250);
        assert_eq!(c.stream_fallback, StreamFallback::NonStreaming);
        let off = Config::from_setup(&json!({"stream_fallback": "off"}), Path::new("/p")).unwrap();
        assert_eq!(off.stream_fallback, StreamFallback::Off);
        let lua = Config::from_setup(&json!({"max_retries": 2.0}), Path::new("/p")).unwrap();
        assert_eq!(lua.max_retries, 2);
    }

    #[test]
    fn lsp_timeout_defaults_to_five_seconds_and_its_errors_name_the_key() {
        let d = Config::from_setup(&json!({}), Path::new("/p")).unwrap();
        assert_eq!(d.lsp_timeout_ms, 5000);
        let c = Config::from_setup(&json!({"lsp_timeout_ms": 800}), Path::new("/p")).unwrap();
        assert_eq!(c.lsp_timeout_ms, 800);
        for bad in [json!(0), json!(60001), json!("1s")] {
            assert_eq!(
                Config::from_setup(&json!({"lsp_timeout_ms": bad}), Path::new("/p"))
                    .unwrap_err()
                    .0,
                format!(
                    "setup(): lsp_timeout_ms must be a whole number from 1 to 60000, got {bad}"
                )
            );
        }
    }

    #[test]
    fn diagnostics_wait_defaults_to_two_seconds_and_its_errors_name_the_key() {
        let d = Config::from_setup(&json!({}), Path::new("/p")).unwrap();
        assert_eq!(d.diagnostics_wait_ms, 2000);
        let c = Config::from_setup(&json!({"diagnostics_wait_ms": 0}), Path::new("/p")).unwrap();
        assert_eq!(c.diagnostics_wait_ms, 0);
        assert_eq!(
            Config::from_setup(&json!({"diagnostics_wait_ms": 40000}), Path::new("/p"))
                .unwrap_err()
                .0,
            "setup(): diagnostics_wait_ms must be a whole number from 0 to 30000, got 40000"
        );
    }

    #[test]
    fn retry_option_errors_name_the_key() {
        let err = |v| Config::from_setup(&v, Path::new("/p")).unwrap_err().0;
        assert_eq!(
            err(json!({"stream_fallback": "nonstreaming"})),
            "setup(): stream_fallback must be \"streaming\", \"non_streaming\" or \"off\", got \"nonstreaming\""
        );
        assert_eq!(
            err(json!({"idle_timeout_ms": 0})),
            "setup(): idle_timeout_ms must be at least 1 (milliseconds; default 90000)"
        );
        assert_eq!(
            err(json!({"max_retries": -1})),
            "setup(): max_retries must be a whole number from 0 to 4294967295, got -1"
        );
        assert_eq!(
            err(json!({"idle_timeout_ms": "90s"})),
            "setup(): idle_timeout_ms must be a whole number from 0 to 18446744073709551615, got \"90s\""
        );
        assert_eq!(
            err(json!({"max_retries": 2.5})),
            "setup(): max_retries must be a whole number from 0 to 4294967295, got 2.5"
        );
        assert_eq!(
            err(json!({"stream_fallback": false})),
            "setup(): stream_fallback must be \"streaming\", \"non_streaming\" or \"off\", got false"
        );
    }

    #[test]
    fn lua_numbers_arrive_as_floats_and_are_accepted_when_whole() {
        let c = Config::from_setup(
            &json!({"max_turns": 7.0, "max_tool_concurrency": 2.0, "max_tokens": 1024}),
            Path::new("/p"),
        )
        .unwrap();
        assert_eq!(
            (c.max_turns, c.max_tool_concurrency, c.max_tokens),
            (7, 2, 1024)
        );
        let e = Config::from_setup(&json!({"max_turns": 1.5}), Path::new("/p")).unwrap_err();
        assert!(e.0.contains("max_turns"), "{e}");
        let e =
            Config::from_setup(&json!({"max_tool_concurrency": 0}), Path::new("/p")).unwrap_err();
        assert!(
            e.0.contains("max_tool_concurrency must be at least 1"),
            "{e}"
        );
    }

    #[test]
    fn bash_limits_are_configurable_and_checked() {
        let c = Config::from_setup(
            &json!({"bash": {"timeout_ms": 5000, "max_timeout_ms": 60000}}),
            Path::new("/p"),
        )
        .unwrap();
        assert_eq!(
            (c.bash_default_timeout_ms, c.bash_max_timeout_ms),
            (5000, 60000)
        );
        let e = Config::from_setup(&json!({"bash": {"timeout_ms": 700000}}), Path::new("/p"))
            .unwrap_err();
        assert!(
            e.0.contains("bash.timeout_ms must be from 1 to bash.max_timeout_ms (600000 ms)"),
            "{e}"
        );
    }

    #[test]
    fn type_errors_name_the_key() {
        let e = Config::from_setup(&json!({"model": 1}), Path::new("/p")).unwrap_err();
        assert_eq!(
            e.0,
            "setup(): model: invalid type: integer `1`, expected a string"
        );
        let e = Config::from_setup(&json!({"permissions": {"allow": [3]}}), Path::new("/p"))
            .unwrap_err();
        assert!(e.0.starts_with("setup(): permissions.allow"), "{e}");
    }

    #[test]
    fn provider_openai_has_its_own_defaults() {
        let e = Config::from_setup(&json!({"provider": "openai"}), Path::new("/p")).unwrap_err();
        assert_eq!(e.0, "setup(): provider = \"openai\" needs a model: the id your server serves, e.g. model = \"gpt-4.1\" (OpenAI) or \"qwen3\" (Ollama)");
        let c = Config::from_setup(
            &json!({"provider": "openai", "model": "gpt-4.1"}),
            Path::new("/p"),
        )
        .unwrap();
        assert_eq!(c.provider, ProviderKind::OpenAi);
        assert_eq!(c.api_key_env, "OPENAI_API_KEY");
        if std::env::var_os("OPENAI_BASE_URL").is_none() {
            assert_eq!(c.base_url, "https://api.openai.com/v1");
        }
        let c = Config::from_setup(
            &json!({"provider": "openai", "base_url": "http://localhost:11434/v1", "model": "qwen3"}),
            Path::new("/p"),
        )
        .unwrap();
        assert_eq!(
            (c.base_url.as_str(), c.model.as_str()),
            ("http://localhost:11434/v1", "qwen3")
        );
        let e = Config::from_setup(&json!({"provider": "gemini"}), Path::new("/p")).unwrap_err();
        assert_eq!(
            e.0,
            "setup(): provider must be \"anthropic\" or \"openai\", got \"gemini\""
        );
    }

    #[test]
    fn base_url_must_be_http() {
        let e = Config::from_setup(&json!({"base_url": "not a url"}), Path::new("/p")).unwrap_err();
        assert_eq!(
            e.0,
            "setup(): base_url must be an http:// or https:// URL, got \"not a url\""
        );
        let c = Config::from_setup(
            &json!({"base_url": "http://127.0.0.1:8080/"}),
            Path::new("/p"),
        )
        .unwrap();
        assert_eq!(c.base_url, "http://127.0.0.1:8080");
    }

    #[test]
    fn bad_mode_is_an_error() {
        let e = Config::from_setup(&json!({"permissions": {"mode": "yolo"}}), Path::new("/p"))
            .unwrap_err();
        assert!(e.0.contains("yolo"));
    }
}
