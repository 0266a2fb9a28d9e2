-- What the editor shows, as plain tables for the Rust core
-- (src/adapters/context.rs reads them; `:help lathe-context`). "The user's
-- window" is the window the user works in: when the current window is
-- lathe's own (the chat, its prompt, a float), the previous one.
local M = {}

local api = vim.api

--- Whether `win` is lathe's own window or a float.
local function is_lathe(win)
  local buf = api.nvim_win_get_buf(win)
  if api.nvim_buf_get_name(buf):match("^lathe://") or vim.bo[buf].filetype:match("^lathe") then
    return true
  end
  return api.nvim_win_get_config(win).relative ~= ""
end

--- The user's window: the current one, else the previous window (`:help
--- CTRL-W_p`), else the first window of the tab page that is not lathe's.
---@return integer win
function M.user_win()
  local cur = api.nvim_get_current_win()
  if not is_lathe(cur) then
    return cur
  end
  local prev = vim.fn.win_getid(vim.fn.winnr("#"))
  if prev ~= 0 and api.nvim_win_is_valid(prev) and not is_lathe(prev) then
    return prev
  end
  for _, w in ipairs(api.nvim_tabpage_list_wins(0)) do
    if not is_lathe(w) then
      return w
    end
  end
  return cur
end

--- The absolute file of `buf`, or nil when it is no file (a scratch,
--- terminal or help buffer, a directory, or unnamed).
local function file_of(buf)
  local name = api.nvim_buf_get_name(buf)
  if name == "" or vim.bo[buf].buftype ~= "" or name:match("^%a[%w+.-]*://") or vim.fn.isdirectory(name) == 1 then
    return nil
  end
  return vim.fn.fnamemodify(name, ":p")
end

local function text_of(buf, first, last)
  return table.concat(api.nvim_buf_get_lines(buf, first, last, false), "\n")
end

--- `{ file?, line, line_count, buffers? }`: the user's file, its cursor
--- line (1-based) and line count, and the files of the listed buffers.
function M.state()
  local win = M.user_win()
  local buf = api.nvim_win_get_buf(win)
  local buffers = {}
  for _, b in ipairs(api.nvim_list_bufs()) do
    local f = vim.bo[b].buflisted and file_of(b)
    if f then
      table.insert(buffers, f)
    end
  end
  return {
    file = file_of(buf),
    line = api.nvim_win_get_cursor(win)[1],
    line_count = api.nvim_buf_line_count(buf),
    buffers = #buffers > 0 and buffers or nil,
  }
end

--- `#buffer`: `{ kind = "file", path }` or `{ kind = "text", name,
--- filetype, text }` for the buffer in the user's window.
function M.current_buffer()
  local buf = api.nvim_win_get_buf(M.user_win())
  local file = file_of(buf)
  if file then
    return { kind = "file", path = file }
  end
  local name = api.nvim_buf_get_name(buf)
  return {
    kind = "text",
    name = name ~= "" and name or "[No Name]",
    filetype = vim.bo[buf].filetype,
    text = text_of(buf, 0, -1),
  }
end

--- `#diagnostics`: `{ path, items = { { line, severity, source, message } } }`
--- for the buffer in the user's window, by line (1-based).
function M.diagnostics()
  local buf = api.nvim_win_get_buf(M.user_win())
  local list = vim.diagnostic.get(buf)
  table.sort(list, function(a, b)
    if a.lnum ~= b.lnum then
      return a.lnum < b.lnum
    end
    return a.severity < b.severity
  end)
  local items = {}
  for _, d in ipairs(list) do
    table.insert(items, {
      line = d.lnum + 1,
      severity = vim.diagnostic.severity[d.severity] or tostring(d.severity),
      source = d.source,
      message = d.message,
    })
  end
  local name = api.nvim_buf_get_name(buf)
  return {
    path = file_of(buf) or (name ~= "" and name or "[No Name]"),
    items = #items > 0 and items or nil,
  }
end

--- `#quickfix`: `{ title, items = { { path?, line, col, text } } }`.
function M.quickfix()
  local qf = vim.fn.getqflist({ title = 1, items = 1 })
  local items = {}
  for _, it in ipairs(qf.items or {}) do
    local path = it.bufnr > 0 and api.nvim_buf_get_name(it.bufnr) or ""
    table.insert(items, {
      path = path ~= "" and vim.fn.fnamemodify(path, ":p") or nil,
      line = it.lnum,
      col = it.col,
      text = it.text,
    })
  end
  return { title = qf.title or "", items = #items > 0 and items or nil }
end

--- Lines `first`..`last` (1-based, inclusive) of the current buffer (the
--- one a `:'<,'>` range refers to): `{ path, first, last, filetype, text }`,
--- or nil when the range is not in the buffer.
function M.selection(first, last)
  local buf = api.nvim_get_current_buf()
  if first < 1 or last < first or last > api.nvim_buf_line_count(buf) then
    return nil
  end
  local name = api.nvim_buf_get_name(buf)
  return {
    path = file_of(buf) or (name ~= "" and name or "[No Name]"),
    first = first,
    last = last,
    filetype = vim.bo[buf].filetype,
    text = text_of(buf, first - 1, last),
  }
end

return M
