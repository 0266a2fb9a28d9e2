-- The permission float's Neovim glue (src/ui/float/focus.rs calls these;
-- `:help lathe-permissions`): when the user last typed, whether a float
-- may take focus, a one-line prompt.
local M = { last = 0, tracking = false, swallow_until = 0, swallow_ms = 0 }

local uv = vim.uv or vim.loop

-- Keys dropped in Normal mode right after the last ask of an answer
-- closed (`M.swallow`): the float's answer keys and the keys it swallows
-- itself (src/ui/float/window.rs), the ones that would answer nothing
-- but change the user's text ("y y yes" typed as one answers in Claude
-- Code). Each one dropped keeps the window open for another guard time.
local SWALLOWED = {}
for _, k in ipairs({ "y", "a", "A", "n", "N", "d", "D", "Y", " ", "r", "q" }) do
  SWALLOWED[k] = true
end
for _, k in ipairs({ "i", "I", "o", "O", "s", "S", "c", "C", "R", "x", "X", "p", "P", "u", "J" }) do
  SWALLOWED[k] = true
end

--- Starts noting when the user last typed (once per Neovim), and drops
--- the keys of `M.swallow`'s window.
function M.track()
  if M.tracking then
    return
  end
  M.tracking = true
  vim.on_key(function(_, typed)
    local now = uv.hrtime()
    M.last = now
    if now < M.swallow_until and typed and SWALLOWED[typed] and vim.api.nvim_get_mode().mode == "n" then
      M.swallow_until = now + M.swallow_ms * 1e6
      return ""
    end
  end, vim.api.nvim_create_namespace("lathe_keys"))
end

--- After the last ask of an answer closed: for `ms` (and `ms` after each
--- key dropped), the answer keys typed in Normal mode do nothing.
---@param ms number
function M.swallow(ms)
  M.track()
  M.swallow_ms = ms
  M.swallow_until = uv.hrtime() + ms * 1e6
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

--- A Bash float's command as shell, its header as plain text: the
--- buffer gets no 'filetype' (the header is no shell), and the rows from
--- `first` (1-based) to the end get sh syntax (`:syntax include`).
---@param buf integer
---@param first integer
function M.shell_syntax(buf, first)
  vim.api.nvim_buf_call(buf, function()
    vim.cmd("syntax clear")
    local saved = vim.b.current_syntax
    vim.b.current_syntax = nil
    pcall(vim.cmd, "syntax include @LatheShell syntax/sh.vim")
    vim.b.current_syntax = saved
    vim.cmd(("syntax region LatheFloatCommand start=/\\%%%dl/ end=/\\%%$/ keepend contains=@LatheShell"):format(first))
  end)
end

return M
