-- Slash commands (`:help lathe-commands`): text sent from the prompt area
-- that starts with `/name`, or `:Lathe /name args`. The built-ins first,
-- then `setup{ commands }`, then the command files of the project
-- (`.claude/commands/`) and the user (`~/.claude/commands/`), read by the
-- core on each use (`lathe.core.commands`, `run_command`).
local M = {}

--- User-facing: a `/word` that names no command. `%s`: the word.
M.UNKNOWN = "lathe: unknown command /%s; /help lists them"

--- User-facing: `/model` while lathe has no model switch.
M.NO_MODEL_SWITCH = "lathe: this lathe cannot switch the model (no lathe.model()); the model is %s"

--- User-facing: a command's `allowed-tools`, said before its turn runs.
M.ALLOWS = "lathe: /%s (%s command) allows without asking for this turn: %s"

--- Says `msg` in the chat too, as a note (an error for `ERROR`): from the
--- prompt area, in Insert mode, the message line shows "-- INSERT --"
--- over what a command said.
---@param msg string
---@param level? integer
function M.say(msg, level)
  level = level or vim.log.levels.INFO
  vim.notify(msg, level)
  local core = package.loaded["lathe.core"]
  if core and core.chat_note then
    pcall(core.chat_note, (msg:gsub("^lathe: ", "")), level >= vim.log.levels.ERROR)
  end
end

local function notify(msg, level)
  M.say(msg, level)
end

--- Leaves Insert mode (from the prompt area) before a command that opens
--- a window or a picker of its own, whose keys are Normal mode's.
local function leave_insert()
  if vim.api.nvim_get_mode().mode:sub(1, 1) == "i" then
    vim.cmd("stopinsert")
  end
end

--- The model picker of `/model` and `:Lathe model`: the provider's models
--- (fetched in the background), the current one marked; the chosen one
--- answers from the next request.
function M.pick_model()
  local l = lathe()
  local current = l.model()
  notify("lathe: model " .. current)
  l.models(function(names)
    vim.ui.select(names, {
      prompt = "lathe: switch the model to",
      format_item = function(name)
        return name == current and (name .. " (current)") or name
      end,
    }, function(choice)
      if choice then
        notify("lathe: model " .. l.model(choice))
      end
    end)
  end)
end

local function lathe()
  return require("lathe")
end

--- `:Lathe tools`' list, run through `:Lathe` so both print the same.
local function lathe_cmd(args)
  vim.api.nvim_cmd({ cmd = "Lathe", args = { args } }, {})
end

--- The built-in commands, in the order `/help` lists them: name, the
--- arguments it takes, what it does, and the function running it
--- (`args`: the text after the name, trimmed; `opts`: `range`).
M.BUILTINS = {
  {
    name = "clear",
    hint = "",
    description = "start a new conversation (:Lathe new)",
    run = function()
      lathe().new()
      notify("lathe: new conversation; :Lathe resume brings back the previous one")
    end,
  },
  {
    name = "compact",
    hint = "[instructions]",
    description = "compact the conversation now, keeping what the instructions say",
    run = function(args)
      lathe().compact(args ~= "" and args or nil)
    end,
  },
  {
    name = "model",
    hint = "[name]",
    description = "switch the model from the next request (no name: a picker)",
    run = function(args)
      local l = lathe()
      if type(l.model) ~= "function" then
        notify(M.NO_MODEL_SWITCH:format(l.status().model), vim.log.levels.WARN)
        return
      end
      if args == "" then
        leave_insert()
        M.pick_model()
      else
        notify("lathe: model " .. l.model(args))
      end
    end,
  },
  {
    name = "mode",
    hint = "[name]",
    description = "switch the permission mode, or show it",
    run = function(args)
      notify("lathe: permission mode " .. lathe().mode(args ~= "" and args or nil))
    end,
  },
  {
    name = "rewind",
    hint = "[n [what]]",
    description = "take the code or conversation back to before a prompt",
    run = function(args)
      if args == "" then
        leave_insert()
        return lathe().rewind()
      end
      local n, what = args:match("^(%d+)%s*(%a*)$")
      if not n then
        error("lathe: /rewind [{n} [code|conversation|both]]: n is how many prompts back (1: the last)", 0)
      end
      lathe().rewind(tonumber(n), what ~= "" and what or nil)
    end,
  },
  {
    name = "changes",
    hint = "[all]",
    description = "the quickfix list and review of what the last turn changed",
    run = function(args)
      leave_insert()
      lathe().changes({ all = args == "all" })
    end,
  },
  {
    name = "resume",
    hint = "[last]",
    description = "bring back a saved conversation (a picker)",
    run = function(args)
      if args == "last" then
        lathe().resume("last")
      else
        leave_insert()
        require("lathe.sessions").pick()
      end
    end,
  },
  {
    name = "tools",
    hint = "",
    description = "the tools the model has (:Lathe tools)",
    run = function()
      lathe_cmd("tools")
    end,
  },
  {
    name = "help",
    hint = "",
    description = "this list",
    run = function()
      M.help()
    end,
  },
}

local builtin = {}
for _, b in ipairs(M.BUILTINS) do
  builtin[b.name] = b
end

--- `setup{ commands }`: name → text or function(args) returning text.
local configured = {}

--- Takes `setup{ commands }` (nil: none). Errors name the bad entry.
---@param cmds? table<string, string|fun(args: string): string>
function M.configure(cmds)
  if cmds == nil then
    configured = {}
    return
  end
  if type(cmds) ~= "table" then
    error(("lathe.setup(opts): commands must be a table, got %s"):format(type(cmds)), 0)
  end
  local out = {}
  for name, v in pairs(cmds) do
    if type(name) ~= "string" or not name:match("^[%w_%.%-:]+$") or name:match("::") then
      error(
        ("lathe.setup(opts): commands: %s is not a command name (letters, digits, _ - . and : between parts)"):format(
          vim.inspect(name)
        ),
        0
      )
    end
    if type(v) ~= "string" and type(v) ~= "function" then
      error(("lathe.setup(opts): commands.%s must be a string or a function, got %s"):format(name, type(v)), 0)
    end
    out[name] = v
  end
  configured = out
end

--- The name and arguments of `text` when it has the form of a command:
--- `/name` at its very start, the name of letters, digits, `_ - . :`,
--- then whitespace or the end. `//…` and paths such as `/tmp/x` are not.
---@param text string
---@return string? name
---@return string? args
function M.parse(text)
  local name, rest = text:match("^/([%w_%.%-:]+)(.*)$")
  if not name or (rest ~= "" and not rest:match("^%s")) then
    return nil
  end
  return name, vim.trim(rest)
end

--- The command files, or an empty list when the core cannot answer.
local function files()
  local ok, core = pcall(require, "lathe.core")
  if not ok or type(core) ~= "table" or not core.commands then
    return {}
  end
  local listed
  ok, listed = pcall(core.commands)
  return ok and listed or {}
end

--- Every command: `{ name, hint, description, origin }`, the built-ins
--- first, then `setup{ commands }`, then the command files (a name taken
--- earlier hides a later one).
function M.list()
  local out, seen = {}, {}
  for _, b in ipairs(M.BUILTINS) do
    out[#out + 1] = { name = b.name, hint = b.hint, description = b.description, origin = "built-in" }
    seen[b.name] = true
  end
  local names = vim.tbl_keys(configured)
  table.sort(names)
  for _, n in ipairs(names) do
    if not seen[n] then
      local v = configured[n]
      local desc = type(v) == "string" and vim.split(vim.trim(v), "\n")[1] or "setup() command"
      out[#out + 1] = { name = n, hint = "", description = desc, origin = "setup" }
      seen[n] = true
    end
  end
  for _, f in ipairs(files()) do
    if not seen[f.name] then
      local desc = f.problem and ("cannot run: " .. f.problem) or f.description
      if f.allowed_tools and #f.allowed_tools > 0 then
        desc = desc .. " [allows " .. table.concat(f.allowed_tools, ", ") .. "]"
      end
      out[#out + 1] = {
        name = f.name,
        hint = f.argument_hint or "",
        description = desc,
        origin = f.origin,
      }
      seen[f.name] = true
    end
  end
  return out
end

--- `/help`: every command with what it does, in one message.
function M.help()
  local lines = { "lathe commands (type them in the prompt area, or :Lathe /name):" }
  for _, c in ipairs(M.list()) do
    local head = "/" .. c.name .. (c.hint ~= "" and (" " .. c.hint) or "")
    lines[#lines + 1] = ("  %-28s %s (%s)"):format(head, c.description, c.origin)
  end
  notify(table.concat(lines, "\n"))
end

--- Names for `:Lathe /…` completion: `/name` of every command starting
--- with `arglead`.
---@param arglead string
---@return string[]
function M.complete(arglead)
  local out = {}
  for _, c in ipairs(M.list()) do
    local w = "/" .. c.name
    if vim.startswith(w, arglead) then
      out[#out + 1] = w
    end
  end
  return out
end

--- Runs the command `text` is (see `M.parse`): a built-in, a `setup{
--- commands }` entry (its text, or what its function returns, sent as the
--- prompt) or a command file. Errors: not a command, an unknown name
--- (`M.UNKNOWN`), what the command raised.
---@param text string
---@param opts? lathe.AskOpts `range` for a prompt it sends
function M.run(text, opts)
  local name, args = M.parse(text)
  if not name then
    error(M.UNKNOWN:format(vim.trim(text):sub(2)), 0)
  end
  local b = builtin[name]
  if b then
    return b.run(args, opts)
  end
  local v = configured[name]
  if v ~= nil then
    local prompt
    if type(v) == "function" then
      prompt = v(args)
      if prompt == nil then
        return
      end
      if type(prompt) ~= "string" then
        error(("lathe: /%s: its function returned %s, not the text of a prompt"):format(name, type(prompt)), 0)
      end
    else
      prompt = require("lathe.core").expand_command(v, args)
    end
    return lathe().ask(prompt, opts)
  end
  local ok, res = pcall(require("lathe.core").run_command, name, args, opts)
  if not ok then
    local msg = tostring(res):gsub("\nstack traceback:.*$", "")
    error(msg, 0)
  end
  if res == nil then
    error(M.UNKNOWN:format(name), 0)
  end
  if res.allowed_tools and #res.allowed_tools > 0 then
    notify(
      M.ALLOWS:format(res.name, res.scope, table.concat(res.allowed_tools, ", ")),
      res.scope == "project" and vim.log.levels.WARN or vim.log.levels.INFO
    )
  end
end

return M
