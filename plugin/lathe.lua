-- :Lathe command and <Plug> mappings. No default key mappings are set.
if vim.g.loaded_lathe then
  return
end
vim.g.loaded_lathe = true

local subcommands = { "stop", "open", "status", "review", "mode", "reload", "toggle", "close" }
local modes = { "default", "acceptEdits", "plan", "bypassPermissions" }

--- `text` on one screen line: whitespace runs (newlines too) become one
--- space, and text wider than the room the command line has for a message
--- without a hit-enter prompt (|v:echospace|) is cut, ending with "…".
local function one_line(text)
  text = vim.trim((text:gsub("%s+", " ")))
  local room = vim.v.echospace
  if vim.fn.strdisplaywidth(text) <= room then
    return text
  end
  local n = math.max(room - 1, 0)
  local cut = vim.fn.strcharpart(text, 0, n)
  while n > 0 and vim.fn.strdisplaywidth(cut) > room - 1 do
    n = n - 1
    cut = vim.fn.strcharpart(text, 0, n)
  end
  return cut .. "…"
end

local function run(opts)
  local args = vim.trim(opts.args)
  local ok, err = pcall(function()
    local lathe = require("lathe")
    if args == "" then
      lathe.focus_prompt()
    elseif args == "open" then
      lathe.open()
    elseif args == "toggle" then
      lathe.toggle()
    elseif args == "close" then
      lathe.close()
    elseif args == "stop" then
      lathe.stop()
    elseif args == "status" then
      -- One line, so it never asks for Enter; a long error is cut (the
      -- chat keeps it whole). The mode goes first so it is never cut.
      local state, last, msg, mode = lathe.status()
      vim.notify(
        one_line(
          ("lathe: %s, mode: %s%s%s"):format(
            state,
            mode,
            last and (", last: " .. last) or "",
            msg and (" (" .. msg .. ")") or ""
          )
        )
      )
    elseif args == "review" then
      lathe.review()
    elseif args == "reload" then
      lathe.reload_settings()
      vim.notify("lathe: settings files read again; a new conversation starts")
    elseif args == "mode" or args:match("^mode%s+%S+$") then
      local name = vim.trim(args:sub(5))
      local mode = lathe.mode(name ~= "" and name or nil)
      vim.notify("lathe: permission mode " .. mode)
    else
      lathe.ask(args)
    end
  end)
  if not ok then
    vim.notify(tostring(err), vim.log.levels.ERROR)
  end
end

vim.api.nvim_create_user_command("Lathe", run, {
  nargs = "*",
  desc = "lathe: ask the agent (:Lathe {prompt}; no argument: the prompt area), or :Lathe stop|open|toggle|close|status|review|mode {name}|reload",
  complete = function(arglead, cmdline)
    if cmdline:match("^%s*%S+%s+mode%s+%S*$") then
      return vim.tbl_filter(function(s)
        return vim.startswith(s, arglead)
      end, modes)
    end
    if cmdline:match("^%s*%S+%s+%S+%s") then
      return {}
    end
    return vim.tbl_filter(function(s)
      return vim.startswith(s, arglead)
    end, subcommands)
  end,
})

vim.keymap.set("n", "<Plug>(lathe-stop)", function()
  run({ args = "stop" })
end, { desc = "lathe: stop the running request" })

vim.keymap.set("n", "<Plug>(lathe-review)", function()
  run({ args = "review" })
end, { desc = "lathe: bring back the waiting permission ask" })

vim.keymap.set("n", "<Plug>(lathe-ask)", function()
  vim.ui.input({ prompt = "lathe: " }, function(input)
    if input and vim.trim(input) ~= "" then
      run({ args = input })
    end
  end)
end, { desc = "lathe: ask (prompts for the request)" })
