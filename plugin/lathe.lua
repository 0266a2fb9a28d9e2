-- :Lathe command and <Plug> mappings. No default key mappings are set.
if vim.g.loaded_lathe then
  return
end
vim.g.loaded_lathe = true

local subcommands = { "stop", "open", "status", "review", "mode" }
local modes = { "default", "acceptEdits", "plan", "bypassPermissions" }

local function run(opts)
  local args = vim.trim(opts.args)
  local ok, err = pcall(function()
    local lathe = require("lathe")
    if args == "" or args == "open" then
      lathe.open()
    elseif args == "stop" then
      lathe.stop()
    elseif args == "status" then
      local state, last, msg, mode = lathe.status()
      vim.notify(
        ("lathe: %s%s%s, mode: %s"):format(
          state,
          last and (", last: " .. last) or "",
          msg and (" (" .. msg .. ")") or "",
          mode
        )
      )
    elseif args == "review" then
      lathe.review()
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
  desc = "lathe: ask the agent (:Lathe {prompt}), or :Lathe stop|open|status|review|mode {name}",
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
