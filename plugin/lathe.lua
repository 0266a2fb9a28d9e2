-- :Lathe command and <Plug> mappings. No default key mappings are set
-- (unless setup{ default_mappings = true }, :help lathe-default-mappings).
if vim.g.loaded_lathe then
  return
end
vim.g.loaded_lathe = true

local subcommands = {
  "stop",
  "open",
  "toggle",
  "close",
  "status",
  "review",
  "mode",
  "model",
  "reload",
  "new",
  "resume",
  "build",
  "tools",
  "jobs",
  "mcp",
  "compact",
  "context",
  "changes",
  "rewind",
  "edit",
}
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
  if args == "build" then
    -- Needs no library (it gets one): never goes through require("lathe").
    require("lathe.install").build()
    return
  end
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
      -- chat keeps it whole). The mode and the meter go first so they are never cut.
      local s = lathe.status()
      vim.notify(
        one_line(
          ("lathe: %s, mode: %s%s%s, model: %s%s%s%s"):format(
            s.state,
            s.mode,
            s.tool and (", running " .. s.tool.name .. "(" .. s.tool.detail .. ")") or "",
            s.context and (", " .. s.context.label) or "",
            s.model,
            s.spend and (", spend " .. s.spend) or "",
            s.last and (", last: " .. s.last) or "",
            s.error and (" (" .. s.error .. ")") or ""
          )
        )
      )
    elseif args == "review" then
      lathe.review()
    elseif args == "new" then
      lathe.new()
      vim.notify("lathe: new conversation; :Lathe resume brings back the previous one")
    elseif args == "resume last" then
      lathe.resume("last")
    elseif args == "resume" then
      require("lathe.sessions").pick()
    elseif args == "reload" then
      lathe.reload_settings()
      vim.notify("lathe: settings files read again; a new conversation starts")
    elseif args == "tools" then
      local lines = { "lathe tools: name, source, read-only, offered to the model now" }
      for _, t in ipairs(lathe.tools()) do
        table.insert(
          lines,
          ("  %-24s %-14s %-10s %s"):format(t.name, t.source, t.read_only, t.offered and "offered" or "not offered")
        )
      end
      -- MCP servers that offer no tools: waiting for approval, refused, failed (:help lathe-mcp-trust).
      for _, s in ipairs(lathe.mcp_servers()) do
        if s.state ~= "running" and s.state ~= "starting" then
          table.insert(lines, ("  MCP server %s: %s"):format(s.name, s.error or s.state))
        end
        -- Its tools renamed, not offered, or with a repaired schema (:help lathe-mcp-tool-names).
        for _, note in ipairs(s.tool_notes or {}) do
          table.insert(lines, ("  MCP server %s: %s"):format(s.name, note))
        end
      end
      vim.notify(table.concat(lines, "\n"))
    elseif args == "mcp" then
      -- Every MCP server, started or held, and what it runs (:help :Lathe-mcp).
      local lines = { "lathe MCP servers: name, state, command or URL" }
      for _, s in ipairs(lathe.mcp_servers()) do
        local why = (s.state ~= "running" and s.state ~= "starting" and s.error) and ("\n      " .. s.error) or ""
        table.insert(lines, ("  %-16s %-9s %s%s"):format(s.name, s.state, s.location, why))
      end
      if #lines == 1 then
        lines[1] = "lathe: no MCP server is configured (:help lathe-mcp)"
      end
      vim.notify(table.concat(lines, "\n"))
    elseif args == "mcp reset" then
      -- Forget this project's answers about its .mcp.json servers and ask again.
      local had = lathe.mcp_reset()
      vim.notify(
        had and "lathe: answers about this project's .mcp.json servers forgotten; lathe asks again"
          or "lathe: no answer about this project's .mcp.json servers was remembered"
      )
    elseif args == "jobs" then
      -- The background Bash commands in a list with keys (:help :Lathe-jobs).
      require("lathe.jobs").open()
    elseif args:match("^jobs stop%s") then
      -- :Lathe jobs stop {id}: as x in the list (the KillShell path).
      require("lathe.jobs").stop(vim.trim(args:sub(10)))
    elseif args == "compact" or args:match("^compact%s") then
      -- :Lathe compact [focus] (:help :Lathe-compact).
      local focus = vim.trim(args:sub(8))
      lathe.compact(focus ~= "" and focus or nil)
    elseif args == "changes" or args == "changes all" then
      -- The quickfix list and review of what the turn changed (:help lathe-changes).
      lathe.changes({ all = args == "changes all" })
    elseif args == "rewind" then
      -- A picker of the session's prompts (:help lathe-rewind).
      lathe.rewind()
    elseif args:match("^rewind%s") then
      local n, what = args:match("^rewind%s+(%d+)%s*(%a*)$")
      if not n then
        error("lathe: :Lathe rewind [{n} [code|conversation|both]]: n is how many prompts back (1: the last)", 0)
      end
      lathe.rewind(tonumber(n), what ~= "" and what or nil)
    elseif args == "edit accept" then
      require("lathe.inline").accept_all()
    elseif args == "edit reject" then
      require("lathe.inline").reject_all()
    elseif (args == "edit" or args:match("^edit%s")) and (opts.range or 0) > 0 then
      -- :'<,'>Lathe edit {instruction}: an inline edit of the lines (:help lathe-edit);
      -- without a range, "edit …" is a prompt for the chat as before.
      local instruction = vim.trim(args:sub(5))
      if instruction == "" then
        error(require("lathe.inline").USAGE, 0)
      end
      lathe.edit({ first = opts.line1, last = opts.line2, instruction = instruction })
    elseif args == "context" then
      -- What the context holds (:help :Lathe-context).
      vim.notify(table.concat(lathe.context(), "\n"))
    elseif args == "model" then
      -- The current model, and a picker of the provider's (:help :Lathe-model).
      require("lathe.commands").pick_model()
    elseif args:match("^model%s+%S+$") then
      vim.notify("lathe: model " .. lathe.model(vim.trim(args:sub(6))))
    elseif args == "mode" or args:match("^mode%s+%S+$") then
      local name = vim.trim(args:sub(5))
      local mode = lathe.mode(name ~= "" and name or nil)
      vim.notify("lathe: permission mode " .. mode)
    elseif require("lathe.commands").parse(args) then
      -- :Lathe /name args runs a slash command (:help lathe-commands).
      require("lathe.commands").run(args, (opts.range or 0) > 0 and { range = { opts.line1, opts.line2 } } or nil)
    else
      -- :'<,'>Lathe {prompt} sends the lines with their file (:help lathe-context).
      lathe.ask(args, (opts.range or 0) > 0 and { range = { opts.line1, opts.line2 } } or nil)
    end
  end)
  if not ok then
    vim.notify(tostring(err), vim.log.levels.ERROR)
  end
end

vim.api.nvim_create_user_command("Lathe", run, {
  nargs = "*",
  range = true,
  desc = "lathe: ask the agent (:Lathe {prompt}; no argument: the prompt area), or :Lathe stop|open|toggle|close|status|review|mode {name}|model [name]|reload|new|resume [last]|build|tools|jobs [stop {id}]|mcp [reset]|compact [focus]|context|changes [all]|rewind [{n} [code|conversation|both]]|edit {instruction}|edit accept|reject|/{command} [args]",
  complete = function(arglead, cmdline)
    -- @path and #words anywhere in a prompt (:help lathe-context).
    if arglead:match("^[@#]") then
      return require("lathe.complete").cmdline(arglead)
    end
    -- :Lathe /name: the slash commands (:help lathe-commands).
    if arglead:match("^/") and cmdline:match("^%s*%S+%s+/%S*$") then
      return require("lathe.commands").complete(arglead)
    end
    if cmdline:match("^%s*%S+%s+mode%s+%S*$") then
      return vim.tbl_filter(function(s)
        return vim.startswith(s, arglead)
      end, modes)
    end
    if cmdline:match("^%s*%S+%s+model%s+%S*$") then
      -- What is known now; the first completion starts fetching the
      -- provider's list for the next.
      return vim.tbl_filter(function(s)
        return vim.startswith(s, arglead)
      end, require("lathe").models(function() end))
    end
    if cmdline:match("^%s*%S+%s+mcp%s+%S*$") then
      return vim.startswith("reset", arglead) and { "reset" } or {}
    end
    if cmdline:match("^%s*%S+%s+resume%s+%S*$") then
      return vim.startswith("last", arglead) and { "last" } or {}
    end
    if cmdline:match("^%s*%S+%s+changes%s+%S*$") then
      return vim.startswith("all", arglead) and { "all" } or {}
    end
    if cmdline:match("^%s*%S+%s+edit%s+%S*$") then
      return vim.tbl_filter(function(s)
        return vim.startswith(s, arglead)
      end, { "accept", "reject" })
    end
    if cmdline:match("^%s*%S+%s+rewind%s+%d+%s+%S*$") then
      return vim.tbl_filter(function(s)
        return vim.startswith(s, arglead)
      end, { "both", "code", "conversation" })
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

vim.keymap.set("n", "<Plug>(lathe-changes)", function()
  run({ args = "changes" })
end, { desc = "lathe: the quickfix list and review of what the last turn changed" })

vim.keymap.set("n", "<Plug>(lathe-rewind)", function()
  run({ args = "rewind" })
end, { desc = "lathe: rewind the code or conversation to before a prompt (picker)" })

vim.keymap.set("n", "<Plug>(lathe-ask)", function()
  require("lathe.actions").ask()
end, { desc = "lathe: ask (prompts for the request)" })

vim.keymap.set("x", "<Plug>(lathe-ask)", function()
  require("lathe.actions").ask_visual()
end, { desc = "lathe: ask about the selected lines (prompts for the request)" })

vim.keymap.set("n", "<Plug>(lathe-grep-word)", function()
  require("lathe.actions").grep_word()
end, { desc = "lathe: Grep the word under the cursor into the quickfix list" })

vim.keymap.set("n", "<Plug>(lathe-grep)", function()
  require("lathe.actions").grep_prompt()
end, { desc = "lathe: Grep a pattern (prompts for it) into the quickfix list" })

vim.keymap.set("n", "<Plug>(lathe-read)", function()
  require("lathe.actions").read()
end, { desc = "lathe: Read the file under the cursor (or this file) into a preview float" })

vim.keymap.set("n", "<Plug>(lathe-toggle)", function()
  require("lathe.actions").toggle()
end, { desc = "lathe: open or close the chat window" })

vim.keymap.set({ "n", "x" }, "<Plug>(lathe-edit)", function()
  require("lathe.inline").edit_visual()
end, { desc = "lathe: inline edit of the selected lines (prompts for the instruction)" })
