-- `:checkhealth lathe`

--- The module `require("lathe.health")`.
---@class lathe.health
local M = {}

--- Reports the checks of `:checkhealth lathe` (Neovim version, native
--- library and its version, curl for downloads, API key, project root, permission mode, Claude Code settings
--- files and their problems) through `vim.health`.
function M.check()
  local h = vim.health
  h.start("lathe")

  if vim.fn.has("nvim-0.11") == 1 then
    h.ok("Neovim " .. tostring(vim.version()))
  else
    h.error("Neovim 0.11 or newer is required, found " .. tostring(vim.version()))
  end

  local ok, lathe = pcall(require, "lathe")
  if ok then
    local found
    for _, p in ipairs(lathe.library_candidates()) do
      if (vim.uv or vim.loop).fs_stat(p) then
        found = p
        break
      end
    end
    h.ok("native library loaded" .. (found and (": " .. found) or " (lathe.core)"))
    h.ok(("library version %s matches the plugin's (lua/lathe/version.lua)"):format(lathe.version()))
  else
    h.error(tostring(lathe), {
      "Run :Lathe build (downloads the prebuilt library), or `make` in the plugin directory (lazy.nvim: build = \"make\"); see :help lathe-install",
    })
  end
  if vim.fn.executable("curl") == 1 then
    h.ok("curl found (:Lathe build downloads the prebuilt library with it)")
  elseif ok then
    h.info("curl not found: :Lathe build could not download a prebuilt library (not needed: one is loaded)")
  else
    h.warn("curl not found: :Lathe build cannot download the prebuilt library", {
      "Install curl, or build from source with `make` (needs cargo)",
    })
  end

  if not ok then
    return
  end
  -- What lathe will use: setup() options, else the defaults.
  local info = lathe.info()
  h.info(("provider: %s, model: %s, base_url: %s"):format(info.provider, info.model, info.base_url))
  if info.has_key then
    h.ok("API key found in $" .. info.api_key_env)
  elseif info.local_server then
    h.ok("no API key needed: base_url points at a local server (" .. info.base_url .. ")")
  else
    h.warn("$" .. info.api_key_env .. " is not set: requests to " .. info.base_url .. " will fail", {
      "export " .. info.api_key_env .. "=...",
      "or setup{ api_key_env = \"...\" }, or setup{ base_url = \"http://127.0.0.1:PORT\" } for a local server",
    })
  end
  h.info("project root: " .. info.cwd .. " (relative tool paths resolve here)")

  -- Permissions: the mode in force and the Claude Code settings files.
  h.info("permission mode: " .. tostring(info.mode) .. "; `:Lathe mode {name}` switches it, see :help lathe-modes")
  if info.claude_settings then
    h.info(
      "Claude Code settings files are read: .claude/settings.local.json, .claude/settings.json, ~/.claude/settings.json"
    )
  else
    h.info("Claude Code settings files are not read (setup{ claude_settings = false })")
  end
  local problems = info.settings_problems or {}
  if #problems == 0 then
    h.ok("no problems found in the Claude Code settings files")
  else
    for _, problem in ipairs(problems) do
      h.warn(problem, {
        "Fix the file, then run :Lathe reload (reads the settings files again and keeps your setup() options; a new conversation starts); see :help lathe-settings-files",
      })
    end
  end
end

return M
