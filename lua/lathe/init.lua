-- lathe: a coding agent inside Neovim. Thin Lua layer over the Rust core
-- (`lathe.core`, built by `make`). See `:help lathe`.

--- Options of `setup()` (see `:help lathe-setup`); every key is optional.
---@class lathe.SetupOpts
---@field provider? "anthropic"|"openai" The Anthropic Messages API, or an OpenAI-compatible chat completions API (OpenAI, Ollama, llama.cpp, vLLM, LM Studio, OpenRouter). Default "anthropic".
---@field model? string Model id. Default "claude-sonnet-4-5"; required with provider "openai".
---@field base_url? string The API's base URL. Default $ANTHROPIC_BASE_URL, else "https://api.anthropic.com"; with provider "openai", $OPENAI_BASE_URL, else "https://api.openai.com/v1" (it carries the version path).
---@field api_key_env? string Environment variable holding the API key. Default "ANTHROPIC_API_KEY" ("OPENAI_API_KEY" with provider "openai").
---@field max_turns? integer Model requests per `:Lathe` request, at least 1. Default 50.
---@field max_tokens? integer `max_tokens` of each request. Default 8192.
---@field retry_max_tokens? integer `max_tokens` of the one continuation after an answer was cut at max_tokens. Default 32000.
---@field cwd? string Project root; relative tool paths resolve here. Default the current directory.
---@field save_after_edit? boolean Write a buffer lathe changed if it had no unsaved changes. Default true.
---@field permissions? lathe.Permissions Permission mode and rules.
---@field max_tool_concurrency? integer Read-only tool calls run at once, at most (1..1000). Default 10.
---@field streaming_tools? boolean Start each tool call as soon as the model finished writing it. Default true.
---@field max_retries? integer Retries of a failed request, with backoff. Default 4.
---@field idle_timeout_ms? integer A stream with no data for this long is treated as dropped. Default 90000.
---@field stream_fallback? "streaming"|"non_streaming"|"off" What to do when an answer breaks off. Default "streaming".
---@field bash? lathe.BashOpts The Bash tool's timeouts.
---@field claude_settings? boolean Read .claude/settings.json, .claude/settings.local.json and ~/.claude/settings.json. Default true.
---@field permission_guard_ms? integer The permission float opens only after you typed nothing this long (ms, 0..10000), and takes the cursor only after it showed this long with no key typed (keys typed meanwhile go to your window). Default 400.

--- `setup()`'s `permissions`: mode and rules (see `:help lathe-setup`).
---@class lathe.Permissions
---@field mode? "default"|"acceptEdits"|"plan"|"bypassPermissions" Default "default" (or a settings file's defaultMode).
---@field additional_directories? string[] Folders outside the root that count as inside.
---@field allow? string[] Rules such as "Edit", "Read", "Edit(src/**)".
---@field ask? string[] Rules that always ask.
---@field deny? string[] Rules that always deny (deny > ask > allow).

--- `setup()`'s `bash`: the Bash tool's timeouts in milliseconds.
---@class lathe.BashOpts
---@field timeout_ms? integer The Bash tool's default timeout. Default 120000.
---@field max_timeout_ms? integer The largest timeout a call may ask for. Default 600000.

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

--- Token counts, as `status()` returns them.
---@class lathe.Usage
---@field input integer Input tokens not read from or written to the prompt cache.
---@field output integer Output tokens.
---@field cache_read integer Input tokens read from the prompt cache.
---@field cache_write integer Input tokens written to the prompt cache.

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
--- then the cargo build output.
---@return string[] paths Absolute paths, the installed copy first.
function M.library_candidates()
  local root = plugin_root()
  local ext = (jit and jit.os == "OSX") and "dylib" or "so"
  return {
    root .. "/lua/lathe/lathe.so",
    root .. "/target/release/liblathe." .. ext,
  }
end

--- Loads `lathe.core` (once). Errors when no library is built.
local function load_core()
  local core = package.loaded["lathe.core"]
  if core then
    return core
  end
  for _, path in ipairs(M.library_candidates()) do
    if uv.fs_stat(path) then
      local open, err = package.loadlib(path, "luaopen_lathe")
      if not open then
        error(("lathe: cannot load %s: %s"):format(path, tostring(err)), 0)
      end
      open()
      core = package.loaded["lathe.core"]
      if not core then
        error(("lathe: %s loaded but did not register lathe.core"):format(path), 0)
      end
      return core
    end
  end
  error(
    ("lathe: the native library is not built. Run `make` in %s (lazy.nvim: build = \"make\")"):format(plugin_root()),
    0
  )
end

local core = load_core()

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
  call("setup", opts)
end

--- Reads Claude Code's settings files again (after you fixed or changed
--- one) and starts a new conversation with the options, project root and
--- Lua hooks of the last `setup()`: unlike `setup()` with no options, nothing
--- you configured is reset. See `:help lathe.reload_settings()`.
function M.reload_settings()
  call("reload_settings")
end

--- Starts (or continues) the conversation; returns at once.
---@param prompt string The request; must not be empty.
function M.ask(prompt)
  call("ask", prompt)
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

--- Interrupts the running turn.
function M.stop()
  call("stop")
end

--- Returns `state, last, message`: "idle"|"running", the last turn's outcome
--- ("done"|"error"|"stopped"|nil) and the error text when it failed.
---@return "idle"|"running" state Whether a turn is running.
---@return "done"|"error"|"stopped"|nil last The last turn's outcome; nil before the first.
---@return string|nil message The error text when `last` is "error".
---@return "default"|"acceptEdits"|"plan"|"bypassPermissions" mode The permission mode.
---@return lathe.Usage usage The session's token counts so far.
function M.status()
  return call("status")
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

--- Runs tool `name` with `input` through the pipeline (validation,
--- permissions) without the model; `callback({content=..., is_error=...})`.
---@param name string Tool name, e.g. "Read".
---@param input? table The tool's input; nil is the same as `{}`.
---@param callback fun(result: lathe.ToolResult) Called later on the main thread.
function M.tool(name, input, callback)
  call("tool", name, input, callback)
end

--- Switches the permission mode for the rest of the session (with `name`)
--- and returns the mode in force. See `:help lathe-modes`.
---@param name? "default"|"acceptEdits"|"plan"|"bypassPermissions"
---@return string mode The mode in force.
function M.mode(name)
  return call("mode", name)
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
--- `timeout_ms` passes. Returns "done", "error", "stopped" or "timeout" (or
--- "idle" when no turn ever ran).
---@param timeout_ms number Milliseconds to wait at most.
---@return "done"|"error"|"stopped"|"timeout"|"idle" outcome
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
  local _, last = call("status")
  return last or "idle"
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

return M
