-- lathe: a coding agent inside Neovim. Thin Lua layer over the Rust core
-- (`lathe.core`, built by `make`). See `:help lathe`.
local M = {}

local uv = vim.uv or vim.loop

--- The plugin's root directory (two levels above this file's `lua/lathe/`).
local function plugin_root()
  local src = debug.getinfo(1, "S").source:gsub("^@", "")
  return vim.fn.fnamemodify(src, ":p:h:h:h")
end

--- Where the native library may be, in order: the copy `make` installs,
--- then the cargo build output.
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
function M.setup(opts)
  call("setup", opts)
end

--- Starts (or continues) the conversation; returns at once.
function M.ask(prompt)
  call("ask", prompt)
end

--- Opens (or reuses) the chat window.
function M.open()
  call("open")
end

--- Interrupts the running turn.
function M.stop()
  call("stop")
end

--- Returns `state, last, message`: "idle"|"running", the last turn's outcome
--- ("done"|"error"|"stopped"|nil) and the error text when it failed.
function M.status()
  return call("status")
end

--- The conversation as Messages API messages (Lua tables).
function M.transcript()
  return call("transcript")
end

--- Runs tool `name` with `input` through the pipeline (validation,
--- permissions) without the model; `callback({content=..., is_error=...})`.
--- The effective configuration for `:checkhealth lathe`: `{ model,
--- base_url, api_key_env, cwd, has_key, local_server }`.
function M.info()
  return call("info")
end

function M.tool(name, input, callback)
  call("tool", name, input, callback)
end

--- Pumps the event loop until the turn ends and the chat shows its end, or
--- `timeout_ms` passes. Returns "done", "error", "stopped" or "timeout" (or
--- "idle" when no turn ever ran).
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
function M.tool_sync(name, input, timeout_ms)
  if type(timeout_ms) ~= "number" then
    error(("lathe.tool_sync(timeout_ms): timeout_ms must be a number, got %s"):format(type(timeout_ms)), 0)
  end
  local result
  -- vim.wait() takes no keys, so nobody could answer a permission float:
  -- a call that would ask is refused (use M.tool for those).
  call("tool", name, input, function(r)
    result = r
  end, { interactive = false })
  if vim.wait(timeout_ms, function()
    return result ~= nil
  end, 10) then
    return result
  end
  return { content = ("lathe.tool_sync: %s timed out after %d ms"):format(name, timeout_ms), is_error = true }
end

return M
