//! Every `setup()` option, declared once: its key, its kind (with the
//! range or the allowed values), the default the docs show and its doc
//! text. From [`SETTINGS`] come the parsing of each option
//! ([`Config::from_setup`](super::Config::from_setup)), the LuaCATS
//! classes of `lua/lathe/init.lua` ([`lua_block`]) and the option list of
//! `:help lathe-setup` in `doc/lathe.txt` ([`help_block`]). A test renders
//! both and compares them with the checked-in files; `BLESS=1` rewrites
//! them (docs/testing.md, "Generated files").
//!
//! Doc texts may hold `{range}` (an integer option's `min to max`) and
//! `{default}` (the default); without `{default}`, " Default X." is
//! appended when the option has one.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{
    is_empty_table, nonempty, settings_files, setup_rules, temperature, whole, Config, ConfigError,
    ProviderKind, RawBash, RawPermissions, SaveMode, StreamFallback, AUTO_COMPACT_INVALID,
    DEFAULT_AUTO_COMPACT_PERMILLE, DEFAULT_OPENAI_API_KEY_ENV, DEFAULT_OPENAI_BASE_URL,
    MAX_CONTEXT_WINDOW, MIN_CONTEXT_WINDOW, OPENAI_NEEDS_MODEL, STOP_KEY_INVALID,
};
use crate::hooks::HookConfig;
use crate::permissions::RuleSource;

/// One `setup()` option.
pub struct Setting {
    /// The key in the options table (`model`, `timeout_ms` inside `bash`).
    pub key: &'static str,
    /// Its type, range or values, and how it lands in [`Config`].
    pub kind: Kind,
    /// The default as the docs show it (`50`, `"streaming"`, `true`);
    /// empty when the doc text says it (or there is none).
    pub default: &'static str,
    /// The `:help lathe-setup` text (wrapped when rendered; may hold
    /// `|tags|`, `{range}`, `{default}`).
    pub help: &'static str,
    /// The one-line LuaCATS text of its `---@field`.
    pub lua: &'static str,
    /// The keys of a table option, documented under it (each with its own
    /// help tag and a field of the table's LuaCATS class).
    pub children: &'static [Setting],
}

/// What the parsing of one input needs besides the value.
pub struct Ctx<'a> {
    /// The whole options table.
    pub opts: &'a Map<String, Value>,
    /// The editor's current directory (a relative `cwd` resolves here).
    pub cwd: &'a Path,
    /// The user's home directory (`~/` in rules).
    pub home: Option<&'a Path>,
}

/// A setter that can fail.
type Set<T> = fn(&mut Config, T, &Ctx) -> Result<(), ConfigError>;

/// A type check of the first pass: the key, the value.
type Check = fn(&str, &Value) -> Result<(), ConfigError>;

/// The kind of a setting: how it is checked and set.
pub enum Kind {
    /// `true` or `false`; another type is serde's error naming the key.
    Bool(fn(&mut Config, bool)),
    /// A whole number from `min` to `max` (a Lua float that is whole
    /// counts). Error: "`{key} must be a whole number{unit} from {min} to
    /// {max}, got {value}`" — or, with `at_least`, the range `0` to `max` in
    /// that message and "`{key} must be at least {min}{at_least}`" for a
    /// number below `min`.
    Int {
        /// The smallest value taken.
        min: u64,
        /// The largest value taken.
        max: u64,
        /// Said after "whole number" (" of tokens").
        unit: &'static str,
        /// A separate message for a number below `min`: its tail.
        at_least: Option<&'static str>,
        /// Stores the value.
        set: fn(&mut Config, u64),
    },
    /// A string; another type is serde's error naming the key.
    Str(Set<String>),
    /// One of `values` (exact spelling). Error: "`{key} must be "a", "b" or
    /// "c", got {value}`"; with `strings_only`, a value that is not a
    /// string is serde's type error instead.
    Enum {
        /// The values taken.
        values: &'static [&'static str],
        /// Whether another type is a type error (`provider`).
        strings_only: bool,
        /// Stores the value (one of `values`).
        set: Set<&'static str>,
    },
    /// Anything else (a table, a number with its own rule): `lua_type` for
    /// LuaCATS, `check` (the type check, run in the table's order with
    /// the others) and `set` (its own parser).
    Other {
        /// The LuaCATS type.
        lua_type: &'static str,
        /// The type check of the first pass, if any.
        check: Option<Check>,
        /// Parses and stores the value.
        set: fn(&mut Config, &Value, &Ctx) -> Result<(), ConfigError>,
    },
    /// Parsed elsewhere: at the top level by the Lua side (the core never
    /// sees it, and refuses it as unknown), inside a table by the table's
    /// own parser. `lua_type` for LuaCATS.
    Elsewhere {
        /// The LuaCATS type.
        lua_type: &'static str,
    },
}

/// Every `setup()` option, in the order of `:help lathe-setup`, which is
/// also the order they are applied in (`provider` before `model` and
/// `temperature`, `cwd` before `permissions`).
pub static SETTINGS: &[Setting] = &[
    Setting {
        key: "provider",
        kind: Kind::Enum {
            values: &["anthropic", "openai"],
            strings_only: true,
            set: set_provider,
        },
        default: "\"anthropic\"",
        help: "Which API: \"anthropic\", the Anthropic Messages API, or \"openai\", an OpenAI-compatible chat completions API (|lathe-providers|).",
        lua: "The Anthropic Messages API, or an OpenAI-compatible chat completions API (OpenAI, Ollama, llama.cpp, vLLM, LM Studio, OpenRouter).",
        children: &[],
    },
    Setting {
        key: "model",
        kind: Kind::Str(|c, m, _| {
            c.model = nonempty("model", m)?;
            Ok(())
        }),
        default: "\"claude-sonnet-4-5\"",
        help: "Model id. Default {default}; required with `provider = \"openai\"`.",
        lua: "Model id. Default {default}; required with provider \"openai\".",
        children: &[],
    },
    Setting {
        key: "base_url",
        kind: Kind::Str(set_base_url),
        default: "",
        help: "The API's base URL. Anthropic: requests go to `{base_url}/v1/messages`; default $ANTHROPIC_BASE_URL, else \"https://api.anthropic.com\". OpenAI-compatible: requests go to `{base_url}/chat/completions`, so the URL carries the version path (\"http://localhost:11434/v1\"); default $OPENAI_BASE_URL, else \"https://api.openai.com/v1\".",
        lua: "The API's base URL. Default $ANTHROPIC_BASE_URL, else \"https://api.anthropic.com\"; with provider \"openai\", $OPENAI_BASE_URL, else \"https://api.openai.com/v1\" (it carries the version path).",
        children: &[],
    },
    Setting {
        key: "api_key_env",
        kind: Kind::Str(|c, e, _| {
            c.api_key_env = nonempty("api_key_env", e)?;
            Ok(())
        }),
        default: "",
        help: "Environment variable holding the API key. Default \"ANTHROPIC_API_KEY\" (\"OPENAI_API_KEY\" with `provider = \"openai\"`; a local server needs none).",
        lua: "Environment variable holding the API key. Default \"ANTHROPIC_API_KEY\" (\"OPENAI_API_KEY\" with provider \"openai\").",
        children: &[],
    },
    Setting {
        key: "max_turns",
        kind: Kind::Int {
            min: 1,
            max: u32::MAX as u64,
            unit: "",
            at_least: Some(""),
            set: |c, n| c.max_turns = u32_of(n),
        },
        default: "50",
        help: "Model requests per |:Lathe| request. Default {default}. A request cut there ends as \"max_turns\" (not \"done\") in |lathe.wait()|, |lathe.status()| and |LatheTurnDone|, so a script or statusline can tell it from a finished one.",
        lua: "Model requests per `:Lathe` request, at least 1.",
        children: &[],
    },
    Setting {
        key: "max_tokens",
        kind: Kind::Int {
            min: 0,
            max: u32::MAX as u64,
            unit: "",
            at_least: None,
            set: |c, n| c.max_tokens = u32_of(n),
        },
        default: "8192",
        help: "`max_tokens` of each request.",
        lua: "`max_tokens` of each request.",
        children: &[],
    },
    Setting {
        key: "temperature",
        kind: Kind::Other {
            lua_type: "number",
            check: None,
            set: |c, t, _| {
                c.temperature = Some(temperature(t, c.provider)?);
                Ok(())
            },
        },
        default: "",
        help: "`temperature` of every request, sent by both providers: a number from 0 to 1 with the Anthropic API, 0 to 2 with `provider = \"openai\"`; anything else is an error of setup(). Unset (the default), none is sent and the server's default applies.",
        lua: "`temperature` of every request: 0 to 1 with the Anthropic API, 0 to 2 with provider \"openai\". Default: none sent (the server's default).",
        children: &[],
    },
    Setting {
        key: "context_window",
        kind: Kind::Int {
            min: MIN_CONTEXT_WINDOW,
            max: MAX_CONTEXT_WINDOW,
            unit: " of tokens",
            at_least: None,
            set: |c, n| c.context_window = Some(n),
        },
        default: "",
        help: "The model's context window in tokens, a whole number from {range}. Default: the figure an OpenAI-compatible server publishes (vLLM's `/v1/models` `max_model_len`, llama.cpp's `/props` `n_ctx`), else 1000000 when the model id says `1m` (\"claude-sonnet-4-5[1m]\"), else 200000. See |lathe-context-window|.",
        lua: "The model's context window in tokens ({range}). Default: what an OpenAI-compatible server publishes, else 1000000 when the model id says `1m`, else 200000.",
        children: &[],
    },
    Setting {
        key: "auto_compact",
        kind: Kind::Other {
            lua_type: "boolean|number",
            check: None,
            set: set_auto_compact,
        },
        default: "0.85",
        help: "Before each request that would fill this share of the context window, lathe clears old tool results and, if that is not enough, compacts the conversation (|lathe-context-window|). A number above 0.1 and at most 1, `true` (0.85) or `false` (never on its own, not even when the API refuses a request as too long: the chat then says what you can do; |:Lathe-compact| still works).",
        lua: "Compact the conversation before a request that would fill this share of the context window (above 0.1, at most 1); false never compacts on its own.",
        children: &[],
    },
    Setting {
        key: "retry_max_tokens",
        kind: Kind::Int {
            min: 0,
            max: u32::MAX as u64,
            unit: "",
            at_least: None,
            set: |c, n| c.retry_max_tokens = u32_of(n),
        },
        default: "32000",
        help: "`max_tokens` of the one continuation after an answer was cut at `max_tokens` (|lathe-answers|). Keep it within the model's output limit.",
        lua: "`max_tokens` of the one continuation after an answer was cut at max_tokens.",
        children: &[],
    },
    Setting {
        key: "cwd",
        kind: Kind::Str(|c, d, ctx| {
            let p = PathBuf::from(nonempty("cwd", d)?);
            c.cwd = if p.is_absolute() { p } else { ctx.cwd.join(p) };
            Ok(())
        }),
        default: "",
        help: "Project root; relative tool paths resolve here. Default the current directory.",
        lua: "Project root; relative tool paths resolve here. Default the current directory.",
        children: &[],
    },
    Setting {
        key: "save_after_edit",
        kind: Kind::Bool(|c, b| c.save_after_edit = b),
        default: "true",
        help: "Write a buffer after lathe changed it (only when it had no unsaved changes).",
        lua: "Write a buffer lathe changed if it had no unsaved changes.",
        children: &[],
    },
    Setting {
        key: "save",
        kind: Kind::Enum {
            values: &["direct", "write"],
            strings_only: false,
            set: |c, s, _| {
                c.save = SaveMode::parse(s).unwrap_or_default();
                Ok(())
            },
        },
        default: "\"direct\"",
        help: "How lathe saves a file it edited that is open in an unmodified buffer (|lathe-setup.save_after_edit|): \"direct\" writes the file itself when |:write| would write exactly the same (|lathe-save|), else runs |:write|; \"write\" always runs |:write| (slower; runs your |BufWritePre| and |BufWritePost| autocommands).",
        lua: "How lathe saves a file it edited that is open in an unmodified buffer: \"direct\" writes the file itself when :write would write exactly the same, else runs :write; \"write\" always runs :write (slower, runs your BufWrite autocommands).",
        children: &[],
    },
    Setting {
        key: "permissions",
        kind: Kind::Other {
            lua_type: "lathe.Permissions",
            check: Some(shape::<RawPermissions>),
            set: |c, v, ctx| {
                let raw: RawPermissions = parse_shape("permissions", v)?;
                c.permissions = setup_rules(raw, &c.cwd, ctx.home)?;
                Ok(())
            },
        },
        default: "",
        help: "`{ mode = \"default\", allow = {}, ask = {}, deny = {}, additional_directories = {} }`:",
        lua: "Permission mode and rules.",
        children: &[
            Setting {
                key: "mode",
                kind: Kind::Elsewhere {
                    lua_type: "\"default\"|\"acceptEdits\"|\"plan\"|\"bypassPermissions\"",
                },
                default: "",
                help: "`mode` is the permission mode: \"default\", \"acceptEdits\", \"plan\" or \"bypassPermissions\" (|lathe-modes|); given here, it wins over a settings file's `defaultMode`.",
                lua: "Default \"default\" (or a settings file's defaultMode).",
                children: &[],
            },
            Setting {
                key: "allow",
                kind: Kind::Elsewhere { lua_type: "string[]" },
                default: "",
                help: "",
                lua: "Rules such as \"Edit\", \"Read\", \"Edit(src/**)\".",
                children: &[],
            },
            Setting {
                key: "ask",
                kind: Kind::Elsewhere { lua_type: "string[]" },
                default: "",
                help: "",
                lua: "Rules that always ask.",
                children: &[],
            },
            Setting {
                key: "deny",
                kind: Kind::Elsewhere { lua_type: "string[]" },
                default: "",
                help: "`allow`, `ask` and `deny` hold rule strings such as \"Edit\", \"Edit(src/**)\", \"Read(//etc/**)\", \"Bash(npm run test:*)\" (|lathe-rules|); deny beats ask beats allow. An invalid rule here is an error.",
                lua: "Rules that always deny (deny > ask > allow).",
                children: &[],
            },
            Setting {
                key: "additional_directories",
                kind: Kind::Elsewhere { lua_type: "string[]" },
                default: "",
                help: "`additional_directories` lists folders outside the root that count as inside (relative to the root; `~/` is your home directory). Claude Code's spellings `defaultMode` and `additionalDirectories` are accepted too. What is allowed without rules: |lathe-defaults|.",
                lua: "Folders outside the root that count as inside.",
                children: &[],
            },
        ],
    },
    Setting {
        key: "claude_settings",
        kind: Kind::Bool(|c, b| c.claude_settings = b),
        default: "true",
        help: "Read Claude Code's settings files (.claude/settings.local.json, .claude/settings.json, ~/.claude/settings.json) for rules, the default mode, additional directories and hooks (|lathe-settings-files|).",
        lua: "Read .claude/settings.json, .claude/settings.local.json and ~/.claude/settings.json.",
        children: &[],
    },
    Setting {
        key: "permission_guard_ms",
        kind: Kind::Int {
            min: 0,
            max: 10_000,
            unit: "",
            at_least: None,
            set: |c, n| c.permission_guard_ms = n,
        },
        default: "400",
        help: "The permission float opens only after no key was typed for this many milliseconds, and takes the cursor only after it has been on screen for as long with no key typed (|lathe-float|). {range}.",
        lua: "The permission float opens only after you typed nothing this long (ms, {range}), and takes the cursor only after it showed this long with no key typed (keys typed meanwhile go to your window).",
        children: &[],
    },
    Setting {
        key: "diagnostics_wait_ms",
        kind: Kind::Int {
            min: 0,
            max: 30_000,
            unit: "",
            at_least: None,
            set: |c, n| c.diagnostics_wait_ms = n,
        },
        default: "2000",
        help: "How long an Edit or Write of a buffer with language-server clients waits for their new diagnostics before it returns (it returns as soon as every client published; |lathe-edit-diagnostics|). 0 turns the wait and those diagnostics off. {range}.",
        lua: "How long an Edit or Write of a buffer with language-server clients waits for their new diagnostics (ms, {range}; returns as soon as every client published; 0 turns it off).",
        children: &[],
    },
    Setting {
        key: "lsp_timeout_ms",
        kind: Kind::Int {
            min: 1,
            max: 60_000,
            unit: "",
            at_least: None,
            set: |c, n| c.lsp_timeout_ms = n,
        },
        default: "5000",
        help: "How long an LSP tool (|lathe-lsp-tools|) waits for the language servers' answer, loading the file and waiting for a server to attach included; then the request is cancelled and the model told to try again or use Grep. {range}.",
        lua: "How long an LSP tool (LspDefinition, LspReferences, LspHover, LspSymbols) waits for the language servers (ms, {range}; loading the file and the attach included), then cancels the request (`:help lathe-lsp-tools`).",
        children: &[],
    },
    Setting {
        key: "hooks",
        kind: Kind::Other {
            lua_type: "table",
            check: None,
            set: set_hooks,
        },
        default: "",
        help: "PreToolUse and PostToolUse hooks: Claude Code's command hooks and Lua functions (|lathe-hooks|).",
        lua: "PreToolUse and PostToolUse hooks: Claude Code's command hooks and Lua functions (`:help lathe-hooks`).",
        children: &[],
    },
    Setting {
        key: "max_tool_concurrency",
        kind: Kind::Int {
            min: 1,
            max: 1_000,
            unit: "",
            at_least: Some(""),
            set: |c, n| c.max_tool_concurrency = usize::try_from(n).unwrap_or(usize::MAX),
        },
        default: "10",
        help: "Read-only tool calls run at once, at most ({range}).",
        lua: "Read-only tool calls run at once, at most ({range}).",
        children: &[],
    },
    Setting {
        key: "streaming_tools",
        kind: Kind::Bool(|c, b| c.streaming_tools = b),
        default: "true",
        help: "Start each tool call as soon as the model finished writing it, while the answer still streams; false waits for the whole answer.",
        lua: "Start each tool call as soon as the model finished writing it.",
        children: &[],
    },
    Setting {
        key: "max_retries",
        kind: Kind::Int {
            min: 0,
            max: u32::MAX as u64,
            unit: "",
            at_least: None,
            set: |c, n| c.max_retries = u32_of(n),
        },
        default: "4",
        help: "Retries of a failed request (429, 5xx, overloaded, dropped or idle connection) with backoff; the chat shows \"retrying in Ns (attempt k of n)\".",
        lua: "Retries of a failed request, with backoff.",
        children: &[],
    },
    Setting {
        key: "idle_timeout_ms",
        kind: Kind::Int {
            min: 1,
            max: u64::MAX,
            unit: "",
            at_least: Some(" (milliseconds; default 90000)"),
            set: |c, n| c.idle_timeout_ms = n,
        },
        default: "90000",
        help: "A stream with no data for this long (ms) is treated as dropped (and retried).",
        lua: "A stream with no data for this long (ms) is treated as dropped.",
        children: &[],
    },
    Setting {
        key: "stream_fallback",
        kind: Kind::Enum {
            values: &["streaming", "non_streaming", "off"],
            strings_only: false,
            set: |c, s, _| {
                c.stream_fallback = StreamFallback::parse(s).unwrap_or_default();
                Ok(())
            },
        },
        default: "\"streaming\"",
        help: "When an answer breaks off after it began: {default} (default) asks again, \"non_streaming\" asks again without streaming, \"off\" ends the request with the error. An answer none of whose tool calls had started is withdrawn from the chat; one whose calls started is kept up to where it broke, with their results, and the model continues from there (|lathe-answers|).",
        lua: "What to do when an answer breaks off.",
        children: &[],
    },
    Setting {
        key: "bash",
        kind: Kind::Other {
            lua_type: "lathe.BashOpts",
            check: Some(shape::<RawBash>),
            set: set_bash,
        },
        default: "",
        help: "`{ timeout_ms = 120000, max_timeout_ms = 600000 }`:",
        lua: "The Bash tool's timeouts in milliseconds.",
        children: BASH,
    },
    Setting {
        key: "sandbox",
        // Parsed with the settings files' `sandbox` (`config::sandbox`).
        kind: Kind::Other {
            lua_type: "table",
            check: None,
            set: |_, _, _| Ok(()),
        },
        default: "",
        help: "The sandbox Bash commands run in (|lathe-sandbox|), with Claude Code's keys: `{ enabled = true, network = false, filesystem = { allowWrite = {}, denyRead = {} } }`. `enabled = false` turns it off (then every Bash call asks unless an exact allow rule covers it); `network = true` lets sandboxed commands use the network; `filesystem.allowWrite` adds folders they may write, `filesystem.denyRead` paths none may open (relative to the project root, `~/` your home). The settings files' `sandbox` object says the same (setup() wins for `enabled` and `network`; the lists add up).",
        lua: "The sandbox Bash commands run in, with Claude Code's keys: `{ enabled, network, filesystem = { allowWrite, denyRead } }` (`:help lathe-sandbox`).",
        children: &[],
    },
    Setting {
        key: "default_mappings",
        kind: Kind::Elsewhere { lua_type: "boolean" },
        default: "",
        help: "true sets the default key mappings under `<leader>l` (|lathe-default-mappings|); keys you mapped yourself are kept. Default false (no keys are mapped).",
        lua: "Set the default key mappings under `<leader>l` (`:help lathe-default-mappings`); keys you mapped yourself are kept. Default false.",
        children: &[],
    },
    Setting {
        key: "commands",
        kind: Kind::Elsewhere {
            lua_type: "table<string, string|fun(args: string): string?>",
        },
        default: "",
        help: "Slash commands of your own, by name: `{ name = \"text\" }` sends the text as the prompt (`$ARGUMENTS` and `$1`…`$9` take the arguments), `{ name = function(args) … end }` sends the text the function returns (nil sends nothing). Typed as `/name args` in the prompt area or `:Lathe /name args`; built-in commands keep their names, and these hide command files of the same name. See |lathe-commands|.",
        lua: "Slash commands of your own: name → prompt text (`$ARGUMENTS`, `$1`…`$9`) or a function of the arguments returning it (`:help lathe-commands`).",
        children: &[],
    },
    Setting {
        key: "stop_key",
        kind: Kind::Other {
            lua_type: "string|false",
            check: None,
            set: set_stop_key,
        },
        default: "\"<C-c>\"",
        help: "The Normal-mode key that stops a running turn from any window (|lathe-stop-key|); when no turn runs it does what it did before. `false` maps no key (`<C-c>` still stops in the chat and the prompt area).",
        lua: "The Normal-mode key that stops a running turn from any window; false maps none.",
        children: &[],
    },
    Setting {
        key: "mcp_servers",
        kind: Kind::Other {
            lua_type: "table<string, lathe.McpServer>",
            check: None,
            set: |c, m, _| {
                if !is_empty_table(m) {
                    let (servers, problems) =
                        super::mcp::from_setup(m).map_err(ConfigError)?;
                    c.mcp_servers = servers;
                    c.mcp_problems = problems;
                }
                Ok(())
            },
        },
        default: "",
        help: "MCP servers to start, by name: `{ name = { command, args, env, timeout_ms } }` for a stdio server, `{ name = { type = \"http\", url, headers, timeout_ms } }` for a streamable HTTP one. Added to those of the project's `.mcp.json`; one of the same name replaces it. An entry that is not valid is skipped and `:checkhealth lathe` says why; the others start. These are yours: they start without the question `.mcp.json` servers get (|lathe-mcp-trust|). See |lathe-mcp|.",
        lua: "MCP servers (stdio or streamable HTTP) to start, by name, added to the project's `.mcp.json`; their tools are offered as `mcp__<server>__<tool>` (`:help lathe-mcp`).",
        children: &[],
    },
];

/// The keys of `bash`.
static BASH: &[Setting] = &[
    Setting {
        key: "timeout_ms",
        kind: Kind::Int {
            min: 0,
            max: u64::MAX,
            unit: "",
            at_least: None,
            set: |c, n| c.bash_default_timeout_ms = n,
        },
        default: "120000",
        help: "`timeout_ms`: the Bash tool's timeout when the model gives none (ms, default {default}).",
        lua: "The Bash tool's default timeout.",
        children: &[],
    },
    Setting {
        key: "max_timeout_ms",
        kind: Kind::Int {
            min: 0,
            max: u64::MAX,
            unit: "",
            at_least: None,
            set: |c, n| c.bash_max_timeout_ms = n,
        },
        default: "600000",
        help: "`max_timeout_ms`: the largest timeout a call may ask for (ms, default {default}).",
        lua: "The largest timeout a call may ask for.",
        children: &[],
    },
];

/// `n`, which the range check kept within `u32`.
fn u32_of(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn set_provider(c: &mut Config, p: &str, ctx: &Ctx) -> Result<(), ConfigError> {
    c.provider = ProviderKind::parse(p).unwrap_or_default();
    if c.provider == ProviderKind::OpenAi {
        // The OpenAI-compatible defaults, unless given below.
        c.base_url = std::env::var("OPENAI_BASE_URL")
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| DEFAULT_OPENAI_BASE_URL.into());
        c.api_key_env = DEFAULT_OPENAI_API_KEY_ENV.into();
        // A Claude model id means nothing to another server, and which
        // model a local server serves only its user knows.
        if ctx.opts.get("model").is_none_or(Value::is_null) {
            return Err(ConfigError(OPENAI_NEEDS_MODEL.into()));
        }
    }
    Ok(())
}

fn set_base_url(c: &mut Config, u: String, _: &Ctx) -> Result<(), ConfigError> {
    let u = nonempty("base_url", u)?.trim_end_matches('/').to_string();
    let scheme = reqwest::Url::parse(&u).map(|p| p.scheme().to_string());
    if !matches!(scheme.as_deref(), Ok("http" | "https")) {
        return Err(ConfigError(format!(
            "setup(): base_url must be an http:// or https:// URL, got {u:?}"
        )));
    }
    c.base_url = u;
    Ok(())
}

fn set_auto_compact(c: &mut Config, v: &Value, _: &Ctx) -> Result<(), ConfigError> {
    c.auto_compact_permille = match v {
        Value::Bool(false) => None,
        Value::Bool(true) => Some(DEFAULT_AUTO_COMPACT_PERMILLE),
        _ => Some(
            v.as_f64()
                .filter(|f| *f > 0.1 && *f <= 1.0)
                .map(|f| (f * 1000.0).round() as u32)
                .ok_or_else(|| {
                    ConfigError(crate::text::fill(
                        AUTO_COMPACT_INVALID,
                        &[("value", &v.to_string())],
                    ))
                })?,
        ),
    };
    Ok(())
}

fn set_stop_key(c: &mut Config, v: &Value, _: &Ctx) -> Result<(), ConfigError> {
    c.stop_key = match v {
        Value::Bool(false) => None,
        Value::String(k) if !k.trim().is_empty() => Some(k.trim().to_string()),
        _ => {
            return Err(ConfigError(crate::text::fill(
                STOP_KEY_INVALID,
                &[("value", &v.to_string())],
            )))
        }
    };
    Ok(())
}

fn set_bash(c: &mut Config, v: &Value, ctx: &Ctx) -> Result<(), ConfigError> {
    let _: RawBash = parse_shape("bash", v)?;
    for s in BASH {
        if let Some(x) = v.get(s.key).filter(|x| !x.is_null()) {
            apply(c, s, &format!("bash.{}", s.key), x, ctx)?;
        }
    }
    if c.bash_default_timeout_ms == 0 || c.bash_default_timeout_ms > c.bash_max_timeout_ms {
        return Err(ConfigError(format!(
            "setup(): bash.timeout_ms must be from 1 to bash.max_timeout_ms ({} ms), got {}",
            c.bash_max_timeout_ms, c.bash_default_timeout_ms
        )));
    }
    Ok(())
}

fn set_hooks(c: &mut Config, h: &Value, _: &Ctx) -> Result<(), ConfigError> {
    if is_empty_table(h) {
        return Ok(());
    }
    let parsed = HookConfig::from_json(h).map_err(|e| ConfigError(format!("setup(): {e}")))?;
    c.settings_problems
        .extend(settings_files::hooks_not_run("setup()", &parsed));
    c.hook_settings.push((RuleSource::Setup, h.clone()));
    Ok(())
}

/// `v` as the table `T` (`RawBash`, `RawPermissions`), the error naming
/// the path inside `key` as serde_path_to_error reads it.
fn parse_shape<T: for<'de> Deserialize<'de>>(key: &str, v: &Value) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let inner = e.path().to_string();
        let path = if inner == "." {
            key.to_string()
        } else if inner.starts_with('[') {
            format!("{key}{inner}")
        } else {
            format!("{key}.{inner}")
        };
        ConfigError(format!("setup(): {path}: {}", e.inner()))
    })
}

fn shape<T: for<'de> Deserialize<'de>>(key: &str, v: &Value) -> Result<(), ConfigError> {
    parse_shape::<T>(key, v).map(|_| ())
}

/// The setting of a top-level key the core parses (not Lua-only).
fn find(key: &str) -> Option<&'static Setting> {
    SETTINGS
        .iter()
        .find(|s| s.key == key && !matches!(s.kind, Kind::Elsewhere { .. }))
}

/// The keys the core takes, as serde's "expected one of" lists them.
fn expected() -> String {
    let keys: Vec<String> = SETTINGS
        .iter()
        .filter(|s| !matches!(s.kind, Kind::Elsewhere { .. }))
        .map(|s| format!("`{}`", s.key))
        .collect();
    keys.join(", ")
}

/// Applies the options table `opts` (an object) to `cfg`. First each key
/// in the table's order: an unknown key, or a value of the wrong type for
/// a boolean, string or table option, is an error naming it (serde's
/// words). Then each option in [`SETTINGS`]' order: its range or values,
/// and its own rules.
pub(super) fn apply_all(
    cfg: &mut Config,
    opts: &Map<String, Value>,
    cwd: &Path,
    home: Option<&Path>,
) -> Result<(), ConfigError> {
    for (key, v) in opts {
        let Some(s) = find(key) else {
            return Err(ConfigError(format!(
                "setup(): {key}: unknown field `{key}`, expected one of {}",
                expected()
            )));
        };
        if v.is_null() {
            continue;
        }
        let typed = match &s.kind {
            Kind::Bool(_) => bool::deserialize(v).err(),
            Kind::Str(_)
            | Kind::Enum {
                strings_only: true, ..
            } => String::deserialize(v).err(),
            Kind::Other {
                check: Some(check), ..
            } => {
                check(key, v)?;
                None
            }
            _ => None,
        };
        if let Some(e) = typed {
            return Err(ConfigError(format!("setup(): {key}: {e}")));
        }
    }
    let ctx = Ctx { opts, cwd, home };
    for s in SETTINGS {
        if let Some(v) = opts.get(s.key).filter(|v| !v.is_null()) {
            apply(cfg, s, s.key, v, &ctx)?;
        }
    }
    Ok(())
}

/// Checks `v` against `s` (named `key` in errors) and stores it.
fn apply(
    cfg: &mut Config,
    s: &Setting,
    key: &str,
    v: &Value,
    ctx: &Ctx,
) -> Result<(), ConfigError> {
    match &s.kind {
        Kind::Bool(set) => set(cfg, v.as_bool().unwrap_or_default()),
        Kind::Int {
            min,
            max,
            unit,
            at_least,
            set,
        } => set(cfg, int(key, v, *min, *max, unit, *at_least)?),
        Kind::Str(set) => set(cfg, v.as_str().unwrap_or_default().to_string(), ctx)?,
        Kind::Enum {
            values,
            strings_only,
            set,
        } => {
            let Some(value) = v.as_str().and_then(|x| values.iter().find(|w| **w == x)) else {
                // A string-only option shows the string as Rust does
                // (`provider`'s message always did), the others the JSON.
                let shown = match v.as_str() {
                    Some(x) if *strings_only => format!("{x:?}"),
                    _ => v.to_string(),
                };
                return Err(ConfigError(format!(
                    "setup(): {key} must be {}, got {shown}",
                    one_of(values)
                )));
            };
            set(cfg, value, ctx)?
        }
        Kind::Other { set, .. } => set(cfg, v, ctx)?,
        Kind::Elsewhere { .. } => {}
    }
    Ok(())
}

/// The integer `v` of an [`Kind::Int`] option.
fn int(
    key: &str,
    v: &Value,
    min: u64,
    max: u64,
    unit: &str,
    at_least: Option<&str>,
) -> Result<u64, ConfigError> {
    match at_least {
        Some(tail) => {
            let n: u64 = whole(key, v, max)?;
            if n < min {
                return Err(ConfigError(format!(
                    "setup(): {key} must be at least {min}{tail}"
                )));
            }
            Ok(n)
        }
        None => whole::<u64>(key, v, max)
            .ok()
            .filter(|n| *n >= min)
            .ok_or_else(|| {
                ConfigError(format!(
                    "setup(): {key} must be a whole number{unit} from {min} to {max}, got {v}"
                ))
            }),
    }
}

/// `"a" or "b"`, `"a", "b" or "c"`.
fn one_of(values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("\"{v}\"")).collect();
    match quoted.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The LuaCATS type of `s`.
fn lua_type(s: &Setting) -> String {
    match &s.kind {
        Kind::Bool(_) => "boolean".into(),
        Kind::Int { .. } => "integer".into(),
        Kind::Str(_) => "string".into(),
        Kind::Enum { values, .. } => values
            .iter()
            .map(|v| format!("\"{v}\""))
            .collect::<Vec<_>>()
            .join("|"),
        Kind::Other { lua_type, .. } | Kind::Elsewhere { lua_type } => lua_type.to_string(),
    }
}

/// `text` with `{range}` and `{default}` filled in, and " Default X."
/// appended when it has no `{default}` and `s` has a default.
fn doc(s: &Setting, text: &str) -> String {
    let range = match &s.kind {
        Kind::Int { min, max, .. } => format!("{min} to {max}"),
        _ => String::new(),
    };
    let mut out = text.replace("{range}", &range);
    if out.contains("{default}") {
        out = out.replace("{default}", s.default);
    } else if !s.default.is_empty() {
        out = format!("{out} Default {}.", s.default);
    }
    out
}

/// Where [`lua_block`] goes in `lua/lathe/init.lua`: between these lines.
pub const LUA_BEGIN: &str = "-- <generated: settings>";
/// The end of [`lua_block`] in `lua/lathe/init.lua`.
pub const LUA_END: &str = "-- </generated>";

/// The LuaCATS classes of `setup()`'s options: `lathe.SetupOpts` and one
/// class for each table option with declared keys.
pub fn lua_block() -> String {
    let mut out = String::from(
        "-- Made from crates/lathe-core/src/config/settings.rs (edit it there, then run\n-- `BLESS=1 cargo nextest run -p lathe-core generated_settings`).\n\n",
    );
    out.push_str(
        "--- Options of `setup()` (see `:help lathe-setup`); every key is optional.\n---@class lathe.SetupOpts\n",
    );
    for s in SETTINGS {
        out.push_str(&lua_field(s));
    }
    for s in SETTINGS.iter().filter(|s| !s.children.is_empty()) {
        out.push_str(&format!(
            "\n--- `setup()`'s `{}`: {} (see `:help lathe-setup.{}`).\n---@class {}\n",
            s.key,
            lower_first(s.lua.trim_end_matches('.')),
            s.key,
            lua_type(s)
        ));
        for c in s.children {
            out.push_str(&lua_field(c));
        }
    }
    out
}

fn lua_field(s: &Setting) -> String {
    format!("---@field {}? {} {}\n", s.key, lua_type(s), doc(s, s.lua))
}

fn lower_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Width of `doc/lathe.txt` (its 'textwidth').
const HELP_WIDTH: usize = 78;
/// Column of an option's text in `:help lathe-setup`.
const HELP_INDENT: usize = 24;

/// The option list of `:help lathe-setup`: for each option its right-aligned
/// tag, `    key ~` and its text at column 24; the keys of a table option
/// follow with their own tags (a key with no text shares the next one's).
pub fn help_block() -> String {
    let mut out = String::new();
    for s in SETTINGS {
        out.push_str(&tag_line(s.key));
        let head = format!("    {} ~", s.key);
        let text = doc(s, s.help);
        if head.len() + 2 <= HELP_INDENT {
            let first = format!("{head:<HELP_INDENT$}");
            out.push_str(&wrap(&text, &first));
        } else {
            out.push_str(&head);
            out.push('\n');
            out.push_str(&wrap(&text, &" ".repeat(HELP_INDENT)));
        }
        for c in s.children {
            out.push_str(&tag_line(&format!("{}.{}", s.key, c.key)));
            if !c.help.is_empty() {
                out.push_str(&wrap(&doc(c, c.help), &" ".repeat(HELP_INDENT)));
            }
        }
    }
    out
}

/// `*lathe-setup.{key}*` right-aligned at the help's width.
fn tag_line(key: &str) -> String {
    format!("{:>HELP_WIDTH$}\n", format!("*lathe-setup.{key}*"))
}

/// `text` filled to [`HELP_WIDTH`], the first line after `first` (already
/// [`HELP_INDENT`] wide), the others indented as far.
fn wrap(text: &str, first: &str) -> String {
    let indent = " ".repeat(HELP_INDENT);
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in words(text) {
        if !empty && line.len() + 1 + word.len() > HELP_WIDTH {
            out.push_str(line.trim_end());
            out.push('\n');
            line = indent.clone();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(&word);
        empty = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// The words of `text`, a short `code span` with spaces kept whole (a
/// line break inside it reads badly), a long one broken at its spaces.
fn words(text: &str) -> Vec<String> {
    /// The longest code span kept on one line.
    const SPAN: usize = 32;
    let mut out: Vec<String> = Vec::new();
    let mut open = false;
    for w in text.split_whitespace() {
        match out.last_mut() {
            Some(last) if open && last.len() + 1 + w.len() <= SPAN => {
                last.push(' ');
                last.push_str(w);
            }
            _ => out.push(w.to_string()),
        }
        if w.matches('`').count() % 2 == 1 {
            open = !open;
        }
    }
    out
}

/// Every option's name as its help tag has it: the top-level keys, then
/// the declared keys of table options (`bash.timeout_ms`).
pub fn keys() -> Vec<String> {
    let mut out: Vec<String> = SETTINGS.iter().map(|s| s.key.to_string()).collect();
    for s in SETTINGS {
        out.extend(s.children.iter().map(|c| format!("{}.{}", s.key, c.key)));
    }
    out
}

/// The core's options: [`keys`] without the Lua-only ones.
pub fn core_keys() -> Vec<String> {
    keys()
        .into_iter()
        .filter(|k| {
            SETTINGS
                .iter()
                .all(|s| s.key != k || !matches!(s.kind, Kind::Elsewhere { .. }))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn setup(v: Value) -> Result<Config, ConfigError> {
        Config::from_setup_with_home(&v, Path::new("/nonexistent-project"), None)
    }

    #[test]
    fn every_default_the_docs_show_is_the_real_one() {
        let defaults = setup(json!({})).unwrap();
        let mut checked = 0;
        for (table, list) in std::iter::once((None, SETTINGS))
            .chain(SETTINGS.iter().map(|s| (Some(s.key), s.children)))
        {
            for s in list.iter().filter(|s| !s.default.is_empty()) {
                if matches!(s.kind, Kind::Elsewhere { .. }) {
                    continue;
                }
                let value: Value = serde_json::from_str(s.default)
                    .unwrap_or_else(|e| panic!("{}: default {:?}: {e}", s.key, s.default));
                let opts = match table {
                    None => json!({ s.key: value }),
                    Some(t) => json!({ t: { s.key: value } }),
                };
                assert_eq!(setup(opts.clone()).unwrap(), defaults, "{opts}");
                checked += 1;
            }
        }
        assert!(checked >= 15, "{checked}");
    }

    #[test]
    fn enum_errors_name_every_value() {
        let err = |v: Value| setup(json!({ "save": v })).unwrap_err().0;
        assert_eq!(
            err(json!("writ")),
            "setup(): save must be \"direct\" or \"write\", got \"writ\""
        );
        assert_eq!(
            err(json!(true)),
            "setup(): save must be \"direct\" or \"write\", got true"
        );
        assert_eq!(setup(json!({})).unwrap().save, SaveMode::Direct);
        assert_eq!(
            setup(json!({ "save": "write" })).unwrap().save,
            SaveMode::Write
        );
        assert_eq!(one_of(&["a"]), "\"a\"");
    }

    #[test]
    fn help_text_wraps_at_the_help_width_and_keeps_short_code_whole() {
        assert_eq!(words("a `{ b = 1 }` c"), vec!["a", "`{ b = 1 }`", "c"]);
        let indent = " ".repeat(HELP_INDENT);
        let w = wrap(&"word ".repeat(30), &indent);
        assert!(w
            .lines()
            .all(|l| l.len() <= HELP_WIDTH && l.starts_with(&indent)));
        assert_eq!(tag_line("x").len(), HELP_WIDTH + 1);
    }
}
