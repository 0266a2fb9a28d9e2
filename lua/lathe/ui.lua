-- Small Neovim glue of the front end's ui layer outside the chat (the
-- permission float's diff tab, the status sink; src/ui/float/diff_tab.rs,
-- src/ui/status_sink.rs and src/ui/chat/view.rs call these).
local M = {}

--- Neovim's file type for `path` (`vim.filetype.match`), or nil.
---@param path string
---@return string?
function M.filetype(path)
  local ft = vim.filetype.match({ filename = path })
  return ft
end

--- Redraws every statusline (`:redrawstatus!`) in a step of its own,
--- queued after this one (`vim.schedule`).
function M.redraw_statuslines_later()
  vim.schedule(function()
    vim.cmd("redrawstatus!")
  end)
end

return M
