-- lathe: a coding agent inside Neovim. Thin Lua layer over the Rust core
-- (`lathe.core`, built by `make`). See `:help lathe`.

-- <generated: settings>
-- Made from crates/lathe-core/src/config/settings.rs (edit it there, then run
-- `BLESS=1 cargo nextest run -p lathe-core generated_settings`).

--- Options of `setup()` (see `:help lathe-setup`); every key is optional.
---@class lathe.SetupOpts
---@field provider? "anthropic"|"openai" The Anthropic Messages API, or an OpenAI-compatible chat completions API (OpenAI, Ollama, llama.cpp, vLLM, LM Studio, OpenRouter). Default "anthropic".
---@field model? string Model id. Default "claude-sonnet-4-5"; required with provider "openai".
---@field base_url? string The API's base URL. Default $ANTHROPIC_BASE_URL, else "https://api.anthropic.com"; with provider "openai", $OPENAI_BASE_URL, else "https://api.openai.com/v1" (it carries the version path).
---@field api_key_env? string Environment variable holding the API key. Default "ANTHROPIC_API_KEY" ("OPENAI_API_KEY" with provider "openai").
---@field max_turns? integer Model requests per `:Lathe` request, at least 1. Default 50.
---@field max_tokens? integer `max_tokens` of each request. Default 8192.
---@field temperature? number `temperature` of every request: 0 to 1 with the Anthropic API, 0 to 2 with provider "openai". Default: none sent (the server's default).
---@field context_window? integer The model's context window in tokens (1000 to 100000000). Default: what an OpenAI-compatible server publishes, else 1000000 when the model id says `1m`, else 200000.
---@field auto_compact? boolean|number Compact the conversation before a request that would fill this share of the context window (above 0.1, at most 1); false never compacts on its own. Default 0.85.
---@field retry_max_tokens? integer `max_tokens` of the one continuation after an answer was cut at max_tokens. Default 32000.
---@field cwd? string Project root; relative tool paths resolve here. Default the current directory.
---@field save_after_edit? boolean Write a buffer lathe changed if it had no unsaved changes. Default true.
---@field save? "direct"|"write" How lathe saves a file it edited that is open in an unmodified buffer: "direct" writes the file itself when :write would write exactly the same, else runs :write; "write" always runs :write (slower, runs your BufWrite autocommands). Default "direct".
---@field permissions? lathe.Permissions Permission mode and rules.
---@field claude_settings? boolean Read .claude/settings.json, .claude/settings.local.json and ~/.claude/settings.json. Default true.
---@field permission_guard_ms? integer The permission float opens only after you typed nothing this long (ms, 0 to 10000), and takes the cursor only after it showed this long with no key typed (keys typed meanwhile go to your window). Default 400.
---@field diagnostics_wait_ms? integer How long an Edit or Write of a buffer with language-server clients waits for their new diagnostics (ms, 0 to 30000; returns as soon as every client published; 0 turns it off). Default 2000.
---@field lsp_timeout_ms? integer How long an LSP tool (LspDefinition, LspReferences, LspHover, LspSymbols) waits for the language servers (ms, 1 to 60000; loading the file and the attach included), then cancels the request (`:help lathe-lsp-tools`). Default 5000.
---@field hooks? table PreToolUse and PostToolUse hooks: Claude Code's command hooks and Lua functions (`:help lathe-hooks`).
---@field max_tool_concurrency? integer Read-only tool calls run at once, at most (1 to 1000). Default 10.
---@field streaming_tools? boolean Start each tool call as soon as the model finished writing it. Default true.
---@field max_retries? integer Retries of a failed request, with backoff. Default 4.
---@field idle_timeout_ms? integer A stream with no data for this long (ms) is treated as dropped. Default 90000.
---@field stream_fallback? "streaming"|"non_streaming"|"off" What to do when an answer breaks off. Default "streaming".
---@field bash? lathe.BashOpts The Bash tool's timeouts in milliseconds.
---@field sandbox? table The sandbox Bash commands run in, with Claude Code's keys: `{ enabled, network, filesystem = { allowWrite, denyRead } }` (`:help lathe-sandbox`).
---@field default_mappings? boolean Set the default key mappings under `<leader>l` (`:help lathe-default-mappings`); keys you mapped yourself are kept. Default false.
---@field commands? table<string, string|fun(args: string): string?> Slash commands of your own: name → prompt text (`$ARGUMENTS`, `$1`…`$9`) or a function of the arguments returning it (`:help lathe-commands`).
---@field stop_key? string|false The Normal-mode key that stops a running turn from any window; false maps none. Default "<C-c>".
---@field mcp_servers? table<string, lathe.McpServer> MCP servers (stdio or streamable HTTP) to start, by name, added to the project's `.mcp.json`; their tools are offered as `mcp__<server>__<tool>` (`:help lathe-mcp`).

--- `setup()`'s `permissions`: permission mode and rules (see `:help lathe-setup.permissions`).
---@class lathe.Permissions
---@field mode? "default"|"acceptEdits"|"plan"|"bypassPermissions" Default "default" (or a settings file's defaultMode).
---@field allow? string[] Rules such as "Edit", "Read", "Edit(src/**)".
---@field ask? string[] Rules that always ask.
---@field deny? string[] Rules that always deny (deny > ask > allow).
---@field additional_directories? string[] Folders outside the root that count as inside.

--- `setup()`'s `bash`: the Bash tool's timeouts in milliseconds (see `:help lathe-setup.bash`).
---@class lathe.BashOpts
---@field timeout_ms? integer The Bash tool's default timeout. Default 120000.
---@field max_timeout_ms? integer The largest timeout a call may ask for. Default 600000.
-- </generated>

--- One entry of `setup()`'s `mcp_servers`: a stdio MCP server (`command`, `args`, `env`) or, with
--- `type = "http"`, a streamable HTTP one (`url`, `headers`). An entry that is not valid is skipped
--- with a warning (`:help lathe-setup.mcp_servers`).
---@class lathe.McpServer
---@field type? "stdio"|"http" Default "stdio".
---@field command? string stdio: the program, found on $PATH when it has no "/".
---@field args? string[] stdio: its arguments.
---@field env? table<string, string> stdio: variables added to its environment.
---@field url? string http: the server's endpoint, http:// or https://.
---@field headers? table<string, string> http: headers sent with every request (e.g. Authorization).
---@field timeout_ms? integer How long one of its tool calls may take (ms). Default 120000.

--- The result of a tool call, as `tool()`'s callback and `tool_sync()` get it.
---@class lathe.ToolResult
---@field content string The result text (what the model would see).
---@field is_error boolean True when the call failed, was refused or timed out.

--- The effective configuration, for `:checkhealth lathe`.
---@class lathe.Info
---@field provider "anthropic"|"openai" Which API.
---@field model string Model id.
---@field base_url string The API's base URL.
---@field api_key_env string Environment variable holding the API key.
---@field cwd string Project root.
---@field has_key boolean The key's environment variable is set and not empty.
---@field local_server boolean `base_url` is a loopback address (no key needed).
---@field claude_settings boolean Whether Claude Code's settings files are read.
---@field settings_problems string[] Problems found in those files (one line each).
---@field mode string The permission mode in force.
---@field settings_files { path: string, found: boolean }[] Claude Code's settings files, in precedence order (empty when not read).
---@field hook_commands { event: string, command: string, problem?: string }[] Each command hook; `problem` says why its program cannot start.
---@field lsp_servers integer Language servers running now; the LSP tools are offered to the model only when it is not 0.
---@field mcp_servers lathe.McpServerState[] The MCP servers configured, started or held (`:help lathe-mcp`).
---@field mcp_problems string[] Configured MCP servers not started, and why.
---@field mcp_configured string[] The valid configured MCP servers' names, started or not (none starts before `setup()` or the first request).

--- Token counts, as `status()` returns them.
---@class lathe.Usage
---@field input integer Input tokens not read from or written to the prompt cache.
---@field output integer Output tokens.
---@field cache_read integer Input tokens read from the prompt cache.
---@field cache_write integer Input tokens written to the prompt cache.

--- What `status()` returns (see `:help lathe.status()`).
---@class lathe.Status
---@field state "idle"|"running"|"waiting" "waiting" while a permission ask waits for you, "running" while a request runs.
---@field mode "default"|"acceptEdits"|"plan"|"bypassPermissions" The permission mode.
---@field model string The model id.
---@field tool? lathe.StatusTool The newest tool call still running (nil when none).
---@field waiting_ask? lathe.WaitingAsk The permission ask waiting for you (nil when none).
---@field tokens lathe.Usage The session's token counts so far.
---@field spend? string The spend as the winbar shows it, e.g. "44.3k in (32.4k from cache), 84 out" (nil before any request).
---@field context? lathe.Context The context meter (nil before any request).
---@field last? "done"|"error"|"stopped"|"max_turns" How the last request ended (nil before the first, and while one runs).
---@field error? string The error text when `last` is "error".

--- The context meter, as `status().context` shows it.
---@class lathe.Context
---@field used integer Tokens the conversation holds now (the last request's input plus an estimate of what was added since).
---@field window integer The model's context window in tokens.
---@field percent integer `used` as a share of `window`.
---@field label string The meter as the winbar shows it, e.g. "ctx 143k/200k (72%)".

--- A running tool call, as `status().tool` shows it.
---@class lathe.StatusTool
---@field id string The call's `tool_use` id.
---@field name string Tool name, e.g. "Bash".
---@field detail string Its key argument (path, pattern, command).
---@field running integer How many calls run now.

--- A permission ask waiting for you, as `status().waiting_ask` shows it.
---@class lathe.WaitingAsk
---@field tool string Tool name.
---@field title string The float's title, e.g. "Edit greeting.py".
---@field waiting integer How many asks wait in all.

--- A saved conversation, as `sessions()` lists it.
---@class lathe.SavedSession
---@field id string Session id.
---@field path string The session file (JSONL).
---@field first_prompt string The first prompt (at most 200 chars).
---@field model string The model of its first request.
---@field cwd string The project root.
---@field created integer When it began (seconds since the epoch, for `os.date`).
---@field updated integer When it was last written (seconds since the epoch).

--- A background Bash command, as `jobs()` lists it.
---@class lathe.Job
---@field id string Its ID, e.g. "bash_1" (what BashOutput and KillShell take).
---@field command string The command line.
---@field state "running"|"exited"|"stopped" Where it is ("stopped": KillShell or the session ended).
---@field exit_code? integer The exit code when it exited with one.
---@field seconds integer Seconds since it started.
---@field output string The file with all its output.

--- A Messages API message.
---@class lathe.Message
---@field role "user"|"assistant"
---@field content table[] Content blocks, e.g. `{ type = "text", text = "..." }`.

--- The module `require("lathe")`.
---@class lathe
local M = {}

local uv = vim.uv or vim.loop

--- The plugin's root directory (two levels above this file's `lua/lathe/`).
local function plugin_root()
  local src = debug.getinfo(1, "S").source:gsub("^@", "")
  return vim.fn.fnamemodify(src, ":p:h:h:h")
end

--- Where the native library may be, in order: the copy `make` installs,
--- then the cargo build output, then the prebuilt library `:Lathe build`
--- downloads for this version (`lib/lathe-{version}-{platform}.so`). See
--- `:help lathe-install`.
---@return string[] paths Absolute paths, the installed copy first.
function M.library_candidates()
  return require("lathe.install").candidates()
end

--- Loads `lathe.core` (once): the first library found (a local build wins;
--- without any, the prebuilt one is downloaded, see `:help lathe-install`).
--- Errors when none can be had, or when its version is not the plugin's.
local function load_core()
  local core = package.loaded["lathe.core"]
  if core then
    return core
  end
  local install = require("lathe.install")
  local path, is_local = install.ensure()
  local open, err = package.loadlib(path, "luaopen_lathe")
  if not open then
    error(("lathe: cannot load %s: %s"):format(path, tostring(err)), 0)
  end
  local co, is_main = coroutine.running()
  if co and not is_main then
    -- The library keeps the Lua thread it is opened on for every later
    -- call into Lua (nvim-oxi, mlua); opened inside a coroutine (a config
    -- or plugin manager loading lathe from one), that thread is suspended
    -- or dead by then and Neovim aborts. luaeval() runs on the main thread.
    vim.fn.luaeval("package.loadlib(_A, \"luaopen_lathe\")()", path)
  else
    open()
  end
  core = package.loaded["lathe.core"]
  if not core then
    error(("lathe: %s loaded but did not register lathe.core"):format(path), 0)
  end
  local mismatch = install.version_error(core, path, is_local)
  if mismatch then
    -- Not used: the next require("lathe") checks again.
    package.loaded["lathe.core"] = nil
    error(mismatch, 0)
  end
  return core
end

local core_loaded, core = pcall(load_core)
if not core_loaded then
  -- LuaJIT (Lua 5.1) keeps a failed module's sentinel, so every later
  -- require("lathe") would say "loop or previous error loading module":
  -- clear it, so the next one (after :Lathe build, or :checkhealth) tries
  -- again and shows the real reason.
  package.loaded["lathe"] = nil
  error(core, 0)
end

--- The message of an error raised by the core, without mlua's traceback.
local function message(err)
  local s = tostring(err)
  return (s:gsub("\nstack traceback:.*$", ""):gsub("%s+$", ""))
end

local function pack(...)
  return { n = select("#", ...), ... }
end

--- Calls core function `name`, re-raising its error as a plain string.
local function call(name, ...)
  local res = pack(pcall(core[name], ...))
  if not res[1] then
    error(message(res[2]), 0)
  end
  return unpack(res, 2, res.n)
end

--- Configures lathe and starts a new conversation (the old transcript is
--- dropped). See `:help lathe-setup`.
---@param opts? lathe.SetupOpts Options; nil for the defaults.
function M.setup(opts)
  local mappings = false
  if type(opts) == "table" and opts.default_mappings ~= nil then
    -- A Lua-side option: the core never sees it.
    mappings = opts.default_mappings
    if type(mappings) ~= "boolean" then
      error(("lathe.setup(opts): default_mappings must be a boolean, got %s"):format(type(mappings)), 0)
    end
    opts = vim.deepcopy(opts)
    opts.default_mappings = nil
  end
  -- Slash commands of setup{ commands } stay on the Lua side (functions
  -- cannot cross into the core; :help lathe-commands).
  local commands = type(opts) == "table" and opts.commands or nil
  if commands ~= nil then
    opts = vim.deepcopy(opts)
    opts.commands = nil
  end
  call("setup", opts)
  require("lathe.commands").configure(commands)
  if mappings then
    require("lathe.actions").default_mappings()
  end
end

--- Reads Claude Code's settings files again (after you fixed or changed
--- one) and starts a new conversation with the options, project root and
--- Lua hooks of the last `setup()`: unlike `setup()` with no options, nothing
--- you configured is reset. See `:help lathe.reload_settings()`.
function M.reload_settings()
  call("reload_settings")
end

--- Options of `ask()`.
---@class lathe.AskOpts
---@field range? integer[] `{ first, last }`: 1-based lines of the current buffer sent with the prompt (`:'<,'>Lathe`).
---@field queue? boolean While a turn runs, queue the prompt for its next request instead of refusing it (`<C-s>` in the prompt area; `:help lathe-queue`).

--- Starts (or continues) the conversation; returns at once. The prompt may
--- use `@path`, `#buffer`, `#diagnostics` and `#quickfix` (`:help
--- lathe-context`); the user's current file, cursor line and open buffers
--- go with it.
---@param prompt string The request; must not be empty.
---@param opts? lathe.AskOpts
function M.ask(prompt, opts)
  call("ask", prompt, opts)
end

--- Opens (or reuses) the chat window.
function M.open()
  call("open")
end

--- Closes the chat when it shows in this tab, else opens it with the
--- cursor in the prompt area. See `:help lathe.toggle()`.
function M.toggle()
  call("toggle")
end

--- Closes the chat's windows (transcript and prompt area) in this tab; the
--- conversation and the text in the prompt area stay. See `:help lathe.close()`.
function M.close()
  call("close")
end

--- Opens the chat and puts the cursor in the prompt area, in Insert mode
--- (what `:Lathe` with no argument does). See `:help lathe-prompt`.
function M.focus_prompt()
  call("focus_prompt")
end

--- Interrupts the running turn, and cancels the `tool()` calls still running.
function M.stop()
  call("stop")
  if package.loaded["lathe.inline"] then
    package.loaded["lathe.inline"].stop()
  end
end

--- What lathe is doing: a table `{ state, mode, model, tool, waiting_ask,
--- tokens, last, error }` (see `:help lathe.status()`).
---@return lathe.Status status
function M.status()
  return call("status")
end

--- A short text for a statusline ("lathe: Bash(npm test)", "lathe: waiting
--- for you (Edit a.py)", "lathe: idle · 4.3k tokens"; "" until `setup()` or
--- the first request). Cheap: call it on every redraw (lualine, heirline, 'statusline').
---@return string text
function M.statusline_component()
  return call("statusline_component")
end

--- The current project's saved conversations, newest first (the current one
--- left out). See `:help lathe-sessions`.
---@return lathe.SavedSession[] sessions
function M.sessions()
  return call("sessions")
end

--- Makes a saved conversation the current one and shows it in the chat.
---@param which string A session's `path` from `sessions()`, or "last" (the newest).
function M.resume(which)
  call("resume", which)
end

--- Compacts the conversation now: a summary replaces it (see `:help
--- lathe-context-window`); the chat shows "compacted: before → after", or
--- why it failed (also with `vim.notify`, ERROR).
---@param focus? string What the summary should keep above all.
function M.compact(focus)
  call("compact", focus)
end

--- What the context holds, by part, as lines (`:Lathe context`).
---@return string[] lines
function M.context()
  return call("context")
end

--- Starts a new conversation; the current one stays saved.
function M.new()
  call("new")
end

--- The conversation as Messages API messages (Lua tables).
---@return lathe.Message[] messages In order; empty before the first ask.
function M.transcript()
  return call("transcript")
end

--- The effective configuration for `:checkhealth lathe` (see
--- `lathe.Info`): model, endpoint, key, root, permission mode, settings
--- files and their problems.
---@return lathe.Info info After `setup()`, else what the first request would use.
function M.info()
  return call("info")
end

--- The library's version (Cargo.toml's `version`). It is always the
--- plugin's (`lua/lathe/version.lua`): `require("lathe")` refuses a library
--- of another version. See `:help lathe-install`.
---@return string version e.g. "0.1.0"
function M.version()
  return call("version")
end

--- Options of `tool()`.
---@class lathe.ToolOpts
---@field record? boolean false: what the call reads does not count as read by the model (a Read shown to you leaves the model's next Read of that file whole). Default true.

--- Runs tool `name` with `input` through the pipeline (validation,
--- permissions) without the model; `callback({content=..., is_error=...})`.
---@param name string Tool name, e.g. "Read".
---@param input? table The tool's input; nil is the same as `{}`.
---@param callback fun(result: lathe.ToolResult) Called later on the main thread.
---@param opts? lathe.ToolOpts
function M.tool(name, input, callback, opts)
  if opts ~= nil then
    if type(opts) ~= "table" then
      error(("lathe.tool(opts): opts must be a table, got %s"):format(type(opts)), 0)
    end
    call("tool", name, input, callback, { record = opts.record })
  else
    call("tool", name, input, callback)
  end
end

--- Switches the permission mode for the rest of the session (with `name`)
--- and returns the mode in force. See `:help lathe-modes`.
---@param name? "default"|"acceptEdits"|"plan"|"bypassPermissions"
---@return string mode The mode in force.
function M.mode(name)
  return call("mode", name)
end

--- Switches the model from the next request on (with `name`; the
--- conversation is kept) and returns the model in force. See
--- `:help lathe.model()`.
---@param name? string A model id the provider serves.
---@return string model The model in force.
function M.model(name)
  return call("model", name)
end

--- The model names known now (the current and configured ones first,
--- then the provider's list once fetched). With `callback`, also fetches
--- the provider's list (once per session, in the background) and calls
--- `callback(names)` with it. See `:help lathe.models()`.
---@param callback? fun(names: string[])
---@return string[] names
function M.models(callback)
  return call("models", callback)
end

--- Brings a waiting permission ask back as a float in the current tab.
--- Errors when nothing waits.
function M.review()
  call("review")
end

--- For the statusline: "waiting for you: Edit greeting.py (:Lathe review)"
--- while a permission ask waits, else "".
---@return string text
function M.statusline()
  return call("statusline")
end

--- Pumps the event loop until the turn ends and the chat shows its end, or
--- `timeout_ms` passes. Returns "done", "error", "stopped", "max_turns" or "timeout" (or
--- "idle" when no turn ever ran).
---@param timeout_ms number Milliseconds to wait at most.
---@return "done"|"error"|"stopped"|"max_turns"|"timeout"|"idle" outcome
function M.wait(timeout_ms)
  if type(timeout_ms) ~= "number" then
    error(("lathe.wait(timeout_ms): timeout_ms must be a number, got %s"):format(type(timeout_ms)), 0)
  end
  local finished = vim.wait(timeout_ms, function()
    return call("settled")
  end, 10)
  if not finished then
    return "timeout"
  end
  return call("status").last or "idle"
end

--- Runs a tool and waits for its result (pumping the event loop at most
--- `timeout_ms`). Returns `{content=..., is_error=...}`; on timeout
--- `{content="timed out ...", is_error=true}`. Permission floats cannot be
--- answered by typed keys while this waits (see `:help lathe-float`).
---@param name string Tool name, e.g. "Read".
---@param input? table The tool's input; nil is the same as `{}`.
---@param timeout_ms number Milliseconds to wait at most.
---@return lathe.ToolResult result
function M.tool_sync(name, input, timeout_ms)
  if type(timeout_ms) ~= "number" then
    error(("lathe.tool_sync(timeout_ms): timeout_ms must be a number, got %s"):format(type(timeout_ms)), 0)
  end
  local result
  -- vim.wait() takes no keys, so nobody could answer a permission float:
  -- a call that would ask is refused (use M.tool for those).
  local ok, err = pcall(call, "tool", name, input, function(r)
    result = r
  end, { interactive = false })
  if not ok then
    -- The core names the function it implements; this caller is tool_sync.
    error((tostring(err):gsub("^lathe%.tool%(", "lathe.tool_sync(")), 0)
  end
  if vim.wait(timeout_ms, function()
    return result ~= nil
  end, 10) then
    return result
  end
  return { content = ("lathe.tool_sync: %s timed out after %d ms"):format(name, timeout_ms), is_error = true }
end

--- A tool defined in Lua (`:help lathe-user-tools`).
---@class lathe.ToolSpec
---@field name string 1 to 64 letters, digits, "_" or "-"; not a built-in's or another tool's name (ignoring case).
---@field description string What the tool does, for the model.
---@field input_schema table JSON Schema of the input; `type = "object"`. Checked at registration, sent to the model, validates every call.
---@field is_read_only? boolean|fun(input: table): boolean Read-only calls inside the project run without asking; others ask by default. Default false.
---@field is_concurrency_safe? boolean|fun(input: table): boolean May run alongside other calls. Default: as is_read_only.
---@field validate_input? fun(input: table): boolean, string? Return false and a reason to refuse the input (the model reads the reason).
---@field call fun(input: table, ctx: lathe.ToolCallCtx, done: fun(result: lathe.ToolCallResult|string)): (lathe.ToolCallResult|string|nil) Runs on the main thread; answer with `done(result)` (now or later) or by returning the result.
---@field max_result_size_chars? integer Longer text results are saved to a file and the model gets a preview and the path. Default 30000.
---@field timeout_ms? integer A call that has not answered after this long ends with an error. Default 120000.

--- The second argument of a Lua tool's `call`.
---@class lathe.ToolCallCtx
---@field cancelled fun(): boolean True once the turn was stopped (or `stop()` ran during a `tool()` call) or the call timed out: stop working, the result is dropped.
---@field progress fun(text: string) Shows partial output in the chat.

--- What a Lua tool's `call` answers.
---@class lathe.ToolCallResult
---@field content string|table The result the model reads (a table is sent as JSON).
---@field is_error? boolean The call failed; `content` says why.

--- One line of `tools()`.
---@class lathe.ToolListing
---@field name string
---@field source string "built-in" or "lua".
---@field read_only "yes"|"no"|"per input"
---@field offered boolean Sent to the model in the next request.

--- Registers a tool written in Lua for every conversation of this Neovim
--- (it survives `setup()` and `:Lathe new`); the running conversation
--- offers it from its next request. Errors name the problem in `spec`.
--- See `:help lathe.register_tool()`.
---@param spec lathe.ToolSpec
function M.register_tool(spec)
  call("register_tool", spec)
end

--- Removes a tool registered with `register_tool()`.
---@param name string
---@return boolean removed false when no Lua tool has that name.
function M.unregister_tool(name)
  return call("unregister_tool", name)
end

--- Every tool of the current conversation, the built-ins first (`:Lathe tools`).
---@return lathe.ToolListing[] tools
function M.tools()
  return call("tools")
end

--- One MCP server's state (`mcp_servers()`).
---@class lathe.McpServerState
---@field name string
---@field state "running"|"starting"|"failed"|"waiting"|"refused" `waiting`: a `.mcp.json` server waiting for your approval; `refused`: not started (`:help lathe-mcp-trust`).
---@field error? string Why it failed, why it is refused, or that it waits.
---@field last_log_line? string
---@field log string Its log file ("" for a server that never ran).
---@field tools integer How many tools it registered.
---@field tool_notes string[] Its tools renamed, not offered, or with a repaired schema.
---@field url? string An HTTP server's URL.
---@field location string Its command line or URL.

--- Every configured MCP server's state: the started ones, then those
--- waiting for approval or refused. See `:help lathe.mcp_servers()`.
---@return lathe.McpServerState[] servers
function M.mcp_servers()
  return call("mcp_servers")
end

--- Forgets the answers about this project's `.mcp.json` servers and asks
--- again (`:Lathe mcp reset`, `:help lathe-mcp-trust`).
---@return boolean forgotten false when no answer was remembered.
function M.mcp_reset()
  return call("mcp_reset")
end

--- Options of `changes()`.
---@class lathe.ChangesOpts
---@field all? boolean The whole session's changes, not only the last prompt's turn.
---@field review? boolean false: set the quickfix list only, no review tab. Default true.

--- What the last prompt's turn (or, with `all`, the session) changed
--- through lathe's tools: the quickfix list of every hunk and a review tab
--- where each hunk can be kept or reverted (`:Lathe changes`, `:help
--- lathe-changes`).
---@param opts? lathe.ChangesOpts
function M.changes(opts)
  require("lathe.changes").open(opts)
end

--- One prompt of the session, as `checkpoints()` lists it.
---@class lathe.Checkpoint
---@field number integer Its place in the session, 1 the first prompt.
---@field prompt string The prompt.
---@field files string[] The files its turn changed through lathe's tools (relative to the root).
---@field paths string[] The same, absolute.
---@field bash string[] Files its Bash commands changed, as git tells (not tracked).

--- The session's prompts and what each changed, oldest first (`:help
--- lathe-checkpoints`).
---@return lathe.Checkpoint[] checkpoints
function M.checkpoints()
  return call("checkpoints")
end

--- Takes the code, the conversation or both back to before the prompt `n`
--- prompts ago (1: the last); with no `n`, a picker asks which prompt and
--- what (`:Lathe rewind`, `:help lathe-rewind`). Returns at once; the chat
--- says what was done.
---@param n? integer
---@param what? "code"|"conversation"|"both" Default "both".
function M.rewind(n, what)
  if n == nil then
    require("lathe.changes").pick()
    return
  end
  if type(n) ~= "number" or n < 1 or n % 1 ~= 0 then
    error(("lathe.rewind(n): n must be a whole number of prompts back, at least 1, got %s"):format(vim.inspect(n)), 0)
  end
  require("lathe.changes").rewind(n, what)
end

--- Asks the model for a replacement of lines `first`..`last` of `buf` and
--- shows it in the buffer as an inline diff while it streams; the user
--- accepts or rejects it as a whole or by hunk (`:help lathe-edit`). The
--- request is one of its own, outside the conversation. Returns at once.
---@param opts lathe.EditOpts `{ buf?, first, last, instruction }`
function M.edit(opts)
  require("lathe.inline").start(opts)
end

--- The background Bash commands (`run_in_background`) of this Neovim,
--- oldest first. They are stopped when their session ends or Neovim exits.
--- See `:help lathe.jobs()`.
---@return lathe.Job[] jobs
function M.jobs()
  return call("jobs")
end

return M
