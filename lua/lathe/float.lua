-- The permission float's Neovim glue (src/ui/float/focus.rs calls these;
-- `:help lathe-permissions`): when the user last typed, whether a float
-- may take focus, a one-line prompt.
local M = { last = 0, tracking = false }

local uv = vim.uv or vim.loop

--- Starts noting when the user last typed (once per Neovim).
function M.track()
  if M.tracking then
    return
  end
  M.tracking = true
  vim.on_key(function()
    M.last = uv.hrtime()
  end, vim.api.nvim_create_namespace("lathe_keys"))
end

--- Whether a float may take focus now: Normal mode, not blocked, no
--- typeahead, and no key typed for `idle_ms`.
---@param idle_ms number
---@return boolean
function M.may_focus(idle_ms)
  local m = vim.api.nvim_get_mode()
  if m.mode ~= "n" or m.blocking then
    return false
  end
  if vim.fn.getchar(1) ~= 0 then
    return false
  end
  return (uv.hrtime() - M.last) / 1e6 >= idle_ms
end

--- The operator the user started and has not finished (Operator-pending
--- mode), else nil.
---@return string?
function M.pending_operator()
  local m = vim.api.nvim_get_mode().mode
  if m:sub(1, 2) == "no" then
    return vim.v.operator
  end
  return nil
end

--- One line asked on the command line (`input()`); nil when cancelled.
---@param prompt string
---@return string?
function M.input_line(prompt)
  local ok, r = pcall(vim.fn.input, { prompt = prompt, cancelreturn = "\0" })
  vim.cmd("redraw")
  if not ok or r == "\0" then
    return nil
  end
  return r
end

return M
