-- `:Lathe resume`: pick a saved conversation with vim.ui.select.

--- The module `require("lathe.sessions")`.
---@class lathe.sessions
local M = {}

--- One picker line: when it was last written, then its first prompt on one
--- line (at most 80 characters).
---@param s lathe.SavedSession
---@return string
function M.format(s)
  local prompt = vim.trim((s.first_prompt or ""):gsub("%s+", " "))
  if vim.fn.strchars(prompt) > 80 then
    prompt = vim.fn.strcharpart(prompt, 0, 79) .. "…"
  end
  return ("%s  %s"):format(os.date("%Y-%m-%d %H:%M", s.updated), prompt)
end

--- Lists the project's saved conversations, newest first, with
--- |vim.ui.select()| and resumes the one chosen. Says so when there is none.
function M.pick()
  local lathe = require("lathe")
  local list = lathe.sessions()
  if #list == 0 then
    vim.notify("lathe: no saved conversation of this project yet")
    return
  end
  vim.ui.select(list, { prompt = "lathe: resume a conversation", format_item = M.format }, function(choice)
    if not choice then
      return
    end
    local ok, err = pcall(lathe.resume, choice.path)
    if not ok then
      vim.notify(tostring(err), vim.log.levels.ERROR)
    end
  end)
end

return M
