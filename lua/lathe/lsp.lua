-- What lathe's core (src/nvim/lsp.rs) reads from vim.lsp and vim.diagnostic:
-- plain tables only. Main thread.

--- The module `require("lathe.lsp")`.
---@class lathe.lsp
local M = {}

--- Language-server clients attached to buffer `bufnr` (0 when none), or
--- running at all when `bufnr` is nil.
---@param bufnr integer?
---@return integer
function M.clients(bufnr)
  return #vim.lsp.get_clients(bufnr and { bufnr = bufnr } or nil)
end

--- The diagnostics of buffer `bufnr` (every buffer when nil), as
--- `{ path, line (1-based), severity (1 = error … 4 = hint), source?, message }`,
--- sorted by path and line. Buffers without a name are left out.
---@param bufnr integer?
---@return table[]
function M.get(bufnr)
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    local name = vim.api.nvim_buf_is_valid(d.bufnr) and vim.api.nvim_buf_get_name(d.bufnr) or ""
    if name ~= "" then
      out[#out + 1] = {
        path = name,
        line = d.lnum + 1,
        severity = d.severity or 1,
        source = type(d.source) == "string" and d.source or nil,
        message = tostring(d.message),
      }
    end
  end
  table.sort(out, function(a, b)
    if a.path ~= b.path then
      return a.path < b.path
    end
    return a.line < b.line
  end)
  return out
end

--- Calls `on_change()` on every `DiagnosticChanged` of buffer `bufnr` (a
--- client published, `:help DiagnosticChanged`) until `M.unwatch(id)`.
---@param bufnr integer
---@param on_change fun()
---@return integer id The autocmd's id.
function M.watch(bufnr, on_change)
  return vim.api.nvim_create_autocmd("DiagnosticChanged", {
    buffer = bufnr,
    desc = "lathe: diagnostics after an edit",
    callback = function()
      on_change()
    end,
  })
end

--- Stops a watch of `M.watch` (a no-op when it is gone already).
---@param id integer
function M.unwatch(id)
  pcall(vim.api.nvim_del_autocmd, id)
end

return M
