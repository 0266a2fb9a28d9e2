-- `:checkhealth lathe`

--- The module `require("lathe.health")`.
---@class lathe.health
local M = {}

--- Milliseconds the `base_url` check waits for an answer.
M.PROBE_TIMEOUT_MS = 3000

--- Reports whether `dir` can be written: creates it when missing and writes
--- (then removes) a small file in it.
---@param dir string
---@return boolean ok
---@return string? err Why not.
function M.writable(dir)
  if vim.fn.isdirectory(dir) == 0 and vim.fn.mkdir(dir, "p") == 0 then
    return false, "cannot create the directory"
  end
  local probe = dir .. "/.lathe-health-" .. tostring((vim.uv or vim.loop).os_getpid())
  local f, err = io.open(probe, "w")
  if not f then
    return false, err
  end
  local ok, werr = f:write("ok")
  f:close()
  os.remove(probe)
  if not ok then
    return false, werr
  end
  return true
end

--- Reports the checks of `:checkhealth lathe` (Neovim version, native
--- library and its version, curl for downloads, API key, base_url reachable,
--- project root, project memory files, permission mode, Claude Code settings files and their
--- problems, hook commands, language servers, the LSP tools, state directory) through `vim.health`, under one
--- heading.
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
  -- base_url: any HTTP answer (even 404) means the server is there.
  local probe = require("lathe.core").probe(info.base_url, M.PROBE_TIMEOUT_MS)
  if probe.ok then
    h.ok(("base_url reachable: %s answered HTTP %d in %d ms"):format(info.base_url, probe.status, probe.ms))
  else
    h.warn(("base_url not reachable: %s (%s)"):format(info.base_url, probe.error or "no answer"), {
      "Check the network, a proxy ($HTTPS_PROXY), or setup{ base_url = ... }; for a local server, start it first",
    })
  end
  h.info("project root: " .. info.cwd .. " (relative tool paths resolve here)")

  -- Project memory the model gets with every request (:help lathe-memory).
  local memory = info.memory or { files = {}, notes = {} }
  if #memory.files == 0 then
    h.info("project memory: none found (CLAUDE.md, AGENTS.md, CLAUDE.local.md, ~/.claude/CLAUDE.md)")
  end
  for _, f in ipairs(memory.files) do
    h.ok(("memory file (%s): %s%s"):format(f.kind, f.path, f.by and (" (imported by " .. f.by .. ")") or ""))
  end
  for _, note in ipairs(memory.notes) do
    h.warn("memory import " .. note, { "Fix the @path in the file; see :help lathe-memory" })
  end

  -- Permissions: the mode in force and the Claude Code settings files.
  h.info("permission mode: " .. tostring(info.mode) .. "; `:Lathe mode {name}` switches it, see :help lathe-modes")
  if info.claude_settings then
    h.info(
      "Claude Code settings files are read: .claude/settings.local.json, .claude/settings.json, ~/.claude/settings.json"
    )
  else
    h.info("Claude Code settings files are not read (setup{ claude_settings = false })")
  end
  for _, f in ipairs(info.settings_files or {}) do
    h.info((f.found and "settings file found: " or "settings file not present: ") .. f.path)
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

  -- The sandbox Bash commands run in: what the kernel enforces, or why it is off.
  local sb = info.sandbox or {}
  if sb.off then
    h.warn(
      ("sandbox: off (%s): every Bash call asks unless an exact allow rule covers it"):format(sb.off),
      { "What the kernel offers: " .. tostring(sb.enforced), "See :help lathe-sandbox" }
    )
  else
    h.ok(
      ("sandbox: on, %s; network %s for sandboxed commands"):format(tostring(sb.enforced), sb.network and "on" or "off")
    )
  end
  for _, p in ipairs(sb.allow_write or {}) do
    h.info("sandbox: commands may also write " .. p .. " (sandbox.filesystem.allowWrite)")
  end
  for _, p in ipairs(sb.deny_read or {}) do
    h.info("sandbox: no command can open " .. p .. " (sandbox.filesystem.denyRead)")
  end

  -- Command hooks: the program each command starts must exist.
  local hooks = info.hook_commands or {}
  if #hooks == 0 then
    h.info("no command hooks configured; see :help lathe-hooks")
  end
  for _, c in ipairs(hooks) do
    if c.problem then
      h.warn(("%s hook `%s`: %s"):format(c.event, c.command, c.problem), {
        "Fix the command in the settings file or setup{ hooks }; until then each call warns in the chat",
      })
    else
      h.ok(("%s hook `%s` can run"):format(c.event, c.command))
    end
  end

  -- Language servers: Edit and Write report their new diagnostics.
  -- Through lathe.lsp, which never loads vim.lsp (nor reads it while it loads).
  local names = require("lathe.lsp").names()
  if #names > 0 then
    h.ok(
      ("language servers running: %s (Edit and Write report the new diagnostics of a change; the Diagnostics tool lists them)"):format(
        table.concat(names, ", ")
      )
    )
  else
    h.info(
      "no language server running: Edit and Write report no diagnostics and the Diagnostics tool has none; see :help lathe-edit-diagnostics"
    )
  end

  -- The LSP tools: offered to the model only while a server runs.
  local servers = info.lsp_servers or 0
  if servers > 0 then
    h.ok(
      ("LSP tools offered to the model (LspDefinition, LspReferences, LspHover, LspSymbols): %d language server%s running"):format(
        servers,
        servers == 1 and "" or "s"
      )
    )
  else
    h.info(
      "LSP tools not offered to the model: no language server is running (they are offered while one runs); see :help lathe-lsp-tools"
    )
  end

  -- MCP servers (setup{ mcp_servers } and .mcp.json): their state and the last line of their log.
  for _, s in ipairs(info.mcp_servers or {}) do
    local name = s.url and ("%s (%s)"):format(s.name, s.url) or s.name
    if s.state == "failed" then
      local advice = s.url and "Check that the server runs at that URL and that its headers (e.g. a token) are right"
        or "Check its command, args and env"
      local lines = { advice }
      if s.last_log_line then
        table.insert(lines, "The last line it logged since its last start: " .. s.last_log_line)
      end
      table.insert(
        lines,
        "Its log is "
          .. s.log
          .. "; it is started again on the next call of one of its tools, before a later request, or on setup()"
      )
      table.insert(lines, "See :help lathe-mcp")
      h.error(("MCP server %s: failed (%s)"):format(name, s.error or "unknown"), lines)
    elseif s.state == "waiting" then
      -- A .mcp.json server not allowed yet: it does not run and its tools are not offered.
      h.warn(("MCP server %s: %s"):format(s.name, s.error), {
        "It would run: " .. s.location,
        "Answer the question (y starts it, n refuses it; remembered for this project); see :help lathe-mcp-trust",
      })
    elseif s.state == "refused" then
      h.info(("MCP server %s: %s; it would run: %s"):format(s.name, s.error, s.location))
    else
      h.ok(("MCP server %s: %s, %d tools (log: %s)"):format(name, s.state, s.tools, s.log))
    end
    -- Tools renamed (two names that are one once cleaned), not offered, or whose schema was repaired.
    for _, note in ipairs(s.tool_notes or {}) do
      h.warn(("MCP server %s: %s"):format(s.name, note), { "See :help lathe-mcp-tool-names" })
    end
  end
  -- Configured (setup{ mcp_servers } or .mcp.json) but not started: before setup() and the first request.
  local started = {}
  for _, s in ipairs(info.mcp_servers or {}) do
    started[s.name] = true
  end
  for _, name in ipairs(info.mcp_configured or {}) do
    if not started[name] then
      h.info(("MCP server %s: not started yet (it starts with setup() or the first request)"):format(name))
    end
  end
  for _, p in ipairs(info.mcp_problems or {}) do
    -- From .mcp.json or setup{ mcp_servers }: lathe-mcp covers both (and links the option).
    h.warn(p, { "See :help lathe-mcp (.mcp.json) and :help lathe-setup.mcp_servers" })
  end

  -- State directory: oversized tool results and saved conversations.
  local state = vim.fn.stdpath("state") .. "/lathe"
  local writable, err = M.writable(state)
  if writable then
    h.ok(("state directory writable: %s (%d saved conversations of this project)"):format(state, #lathe.sessions()))
  else
    h.error(("state directory not writable: %s (%s)"):format(state, tostring(err)), {
      "Conversations are not saved and large tool results stay in the model's context; fix the permissions of the directory",
    })
  end
end

return M
