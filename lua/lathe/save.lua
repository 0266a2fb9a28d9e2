-- The direct save's Neovim glue (src/adapters/direct_write.rs calls it;
-- `:help lathe-save`).
local M = {}

--- Whether an autocmd of `events` applies to buffer `buf`: one local to it,
--- or any pattern autocmd (patterns are not matched: any of them keeps
--- Neovim's `:write`). Autocmds of lathe's own `group` do not count.
---@param buf integer
---@param group string
---@param events string[]
---@return boolean
function M.has_write_autocmds(buf, group, events)
  for _, a in ipairs(vim.api.nvim_get_autocmds({ event = events })) do
    if a.group_name ~= group and (not a.buflocal or a.buffer == buf) then
      return true
    end
  end
  return false
end

return M
