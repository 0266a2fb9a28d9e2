-- Inline edit of a selection (`:'<,'>Lathe edit {instruction}`, `:help
-- lathe-edit`, docs/inline-edit.md). The core sends the request and makes
-- the proposal's hunks (src/api/inline.rs calls `update`); here they are
-- shown in the buffer with extmarks (removed lines highlighted, added lines
-- as virtual lines), and what the user accepts is written into the buffer
-- as one change `u` undoes. The buffer's own lines stay as they are until
-- then; when the user changes the selected lines meanwhile, the proposal
-- is stale and never applied.

--- The module `require("lathe.inline")`.
---@class lathe.inline
local M = {}

local api = vim.api

--- Extmarks that show a proposal.
local ns = api.nvim_create_namespace("lathe_inline")
--- The two extmarks that follow the selected lines through edits elsewhere.
local ns_region = api.nvim_create_namespace("lathe_inline_region")

--- The keys of a shown proposal (buffer-local, Normal mode, only while it
--- shows). `d` followed by a key that is no motion shadows nothing; `do`
--- and `dp` mean what they mean in diff mode (obtain the other side's
--- change, put yours over it).
M.KEYS = {
  accept_hunk = "do",
  reject_hunk = "dp",
  accept_all = "dA",
  reject_all = "dR",
  stop = "<C-c>",
}

M.HINT_STREAMING = " lathe edit: writing… <C-c> stops "
M.HINT_READY = " lathe edit: do accept hunk · dp reject hunk · dA accept all · dR reject all "
M.HINT_STALE = " lathe edit: stale: the lines changed — :Lathe edit again (dR dismisses) "
M.NO_CHANGE = "lathe: the model proposed no change to these lines"
M.STOPPED = "lathe: inline edit stopped"
M.STALE = "lathe: the selected lines changed since the edit was asked for: not applied; :Lathe edit again"
M.STILL_WRITING = "lathe: the proposal is still being written (<C-c> stops it)"
M.NONE_SHOWN = "lathe: no inline edit proposal in this buffer"
M.ERROR = "lathe: inline edit: %s"
M.USAGE = "lathe: :'<,'>Lathe edit {instruction}"
M.PROMPT = "lathe edit: "

--- The highlight groups and what they link to by default.
M.HIGHLIGHTS = {
  { "LatheInlineRemoved", "DiffDelete" },
  { "LatheInlineAdded", "DiffAdd" },
  { "LatheInlineHint", "Comment" },
}

local highlights_defined = false

local function define_highlights()
  if highlights_defined then
    return
  end
  highlights_defined = true
  local function apply()
    for _, p in ipairs(M.HIGHLIGHTS) do
      api.nvim_set_hl(0, p[1], { link = p[2], default = true })
    end
  end
  apply()
  api.nvim_create_autocmd("ColorScheme", {
    group = api.nvim_create_augroup("lathe_inline_highlights", { clear = true }),
    callback = apply,
    desc = "lathe: link the LatheInline* highlight groups again",
  })
end

--- Every proposal shown or being written, by id; and the id by buffer.
local edits = {}
local by_buf = {}
local next_id = 0

local function core()
  return require("lathe.core")
end

--- The rows (0-based) the selected lines take now, or nil when they cannot
--- be found as they were (changed, or gone).
local function region(e)
  if not api.nvim_buf_is_valid(e.buf) then
    return nil
  end
  local s = api.nvim_buf_get_extmark_by_id(e.buf, ns_region, e.start_mark, {})
  local t = api.nvim_buf_get_extmark_by_id(e.buf, ns_region, e.end_mark, {})
  if not s[1] or not t[1] or s[2] ~= 0 then
    return nil
  end
  local first, last = s[1], t[1]
  if last - first + 1 ~= #e.base then
    return nil
  end
  local now = api.nvim_buf_get_lines(e.buf, first, last + 1, false)
  if not vim.deep_equal(now, e.base) or t[2] ~= #now[#now] then
    return nil
  end
  return first
end

--- Puts the region's extmarks around `count` lines from `first` (the end
--- one stays before text added after the last line).
local function mark_region(e, first)
  local last = first + #e.base - 1
  local line = api.nvim_buf_get_lines(e.buf, last, last + 1, false)[1] or ""
  e.start_mark = api.nvim_buf_set_extmark(e.buf, ns_region, first, 0, { id = e.start_mark })
  e.end_mark = api.nvim_buf_set_extmark(e.buf, ns_region, last, #line, { id = e.end_mark, right_gravity = false })
end

--- `text` with its tabs as the buffer shows them (virtual text shows a tab
--- as one cell).
local function expand_tabs(buf, text)
  if not text:find("\t", 1, true) then
    return text
  end
  local ts = vim.bo[buf].tabstop
  local out, col = {}, 0
  for ch in text:gmatch(".") do
    if ch == "\t" then
      local n = ts - (col % ts)
      table.insert(out, string.rep(" ", n))
      col = col + n
    else
      table.insert(out, ch)
      col = col + 1
    end
  end
  return table.concat(out)
end

--- The rows of hunk `h` (0-based): where its removed lines are, or the
--- row its added lines show next to.
local function hunk_rows(e, first, h)
  local row = first + h.start
  if #h.old > 0 then
    return row, row + #h.old - 1
  end
  if h.start >= #e.base then
    return first + #e.base - 1, first + #e.base - 1
  end
  return row, row
end

--- Draws `e`: each hunk's removed lines highlighted, its added lines as
--- virtual lines under them, and the hint after the first selected line.
local function render(e)
  if not api.nvim_buf_is_valid(e.buf) then
    return
  end
  api.nvim_buf_clear_namespace(e.buf, ns, 0, -1)
  local first = region(e)
  if e.state == "stale" or not first then
    local s = api.nvim_buf_get_extmark_by_id(e.buf, ns_region, e.start_mark, {})
    if s[1] then
      api.nvim_buf_set_extmark(e.buf, ns, s[1], 0, {
        virt_text = { { M.HINT_STALE, "LatheInlineHint" } },
        virt_text_pos = "eol",
      })
    end
    return
  end
  local width = math.max(vim.o.columns, 20)
  for _, h in ipairs(e.hunks) do
    for i = 0, #h.old - 1 do
      api.nvim_buf_set_extmark(e.buf, ns, first + h.start + i, 0, {
        line_hl_group = "LatheInlineRemoved",
        priority = 200,
      })
    end
    if #h.new > 0 then
      local virt = {}
      for _, l in ipairs(h.new) do
        local text = expand_tabs(e.buf, l)
        local pad = math.max(width - vim.fn.strdisplaywidth(text), 0)
        table.insert(virt, { { text .. string.rep(" ", pad), "LatheInlineAdded" } })
      end
      local top, bottom = hunk_rows(e, first, h)
      local above = #h.old == 0 and h.start < #e.base
      api.nvim_buf_set_extmark(e.buf, ns, above and top or bottom, 0, {
        virt_lines = virt,
        virt_lines_above = above,
      })
    end
  end
  api.nvim_buf_set_extmark(e.buf, ns, first, 0, {
    virt_text = { { e.state == "streaming" and M.HINT_STREAMING or M.HINT_READY, "LatheInlineHint" } },
    virt_text_pos = "eol",
  })
end

local set_keys, clear_keys

--- Ends `e`: its extmarks and keys go, a request still running stops.
local function finish(e)
  if edits[e.id] ~= e then
    return
  end
  edits[e.id] = nil
  if by_buf[e.buf] == e.id then
    by_buf[e.buf] = nil
  end
  if e.state == "streaming" then
    pcall(core().inline_stop, e.id)
  end
  e.detached = true
  if api.nvim_buf_is_valid(e.buf) then
    api.nvim_buf_clear_namespace(e.buf, ns, 0, -1)
    api.nvim_buf_clear_namespace(e.buf, ns_region, 0, -1)
    clear_keys(e)
  end
end

--- Marks `e` stale when its lines cannot be found as they were: the
--- request stops, the hint says so. Returns whether it is stale.
local function check_stale(e)
  if e.state == "stale" then
    return true
  end
  if region(e) then
    return false
  end
  if e.state == "streaming" then
    pcall(core().inline_stop, e.id)
  end
  e.state = "stale"
  render(e)
  return true
end

--- The proposal shown in `buf` (default: the current buffer).
local function shown(buf)
  if buf == nil or buf == 0 then
    buf = api.nvim_get_current_buf()
  end
  local id = by_buf[buf]
  return id and edits[id] or nil
end

--- The index of the hunk under the cursor, else the next one below it,
--- else the last one.
local function hunk_at_cursor(e, first)
  local row = api.nvim_win_get_cursor(0)[1] - 1
  local after
  for i, h in ipairs(e.hunks) do
    local top, bottom = hunk_rows(e, first, h)
    if row >= top and row <= bottom then
      return i
    end
    if not after and top > row then
      after = i
    end
  end
  return after or #e.hunks
end

--- Writes the hunks `which` (indexes into `e.hunks`) into the buffer as one
--- change, then shows the rest (or ends when none is left). Refused while
--- the answer is written; a stale proposal is never applied.
local function accept(e, which)
  if e.state == "streaming" then
    vim.notify(M.STILL_WRITING, vim.log.levels.WARN)
    return false
  end
  if check_stale(e) then
    vim.notify(M.STALE, vim.log.levels.WARN)
    return false
  end
  local first = region(e)
  local chosen = {}
  for _, i in ipairs(which) do
    chosen[i] = true
  end
  -- The new selected lines, the chosen hunks applied.
  local base, lo, hi, delta = {}, math.huge, -1, 0
  local rest = {}
  local pos = 0 -- next line of e.base to copy (0-based)
  for i, h in ipairs(e.hunks) do
    if chosen[i] then
      for k = pos + 1, h.start do
        table.insert(base, e.base[k])
      end
      vim.list_extend(base, h.new)
      pos = h.start + #h.old
      lo = math.min(lo, h.start)
      hi = math.max(hi, h.start + #h.old)
      delta = delta + #h.new - #h.old
    else
      table.insert(rest, { start = h.start + delta, old = h.old, new = h.new })
    end
  end
  for k = pos + 1, #e.base do
    table.insert(base, e.base[k])
  end
  if hi < 0 then
    return false
  end
  local replacement = vim.list_slice(base, lo + 1, hi + delta)
  local ok, err = pcall(api.nvim_buf_set_lines, e.buf, first + lo, first + hi, true, replacement)
  if not ok then
    vim.notify(M.ERROR:format(tostring(err)), vim.log.levels.ERROR)
    return false
  end
  e.base = base
  e.hunks = rest
  if #rest == 0 or #base == 0 then
    finish(e)
  else
    mark_region(e, first)
    render(e)
  end
  return true
end

--- Drops the hunks `which` (the buffer is not touched); ends when none is left.
local function reject(e, which)
  local drop = {}
  for _, i in ipairs(which) do
    drop[i] = true
  end
  local rest = {}
  for i, h in ipairs(e.hunks) do
    if not drop[i] then
      table.insert(rest, h)
    end
  end
  e.hunks = rest
  if #rest == 0 or e.state == "stale" then
    finish(e)
  else
    render(e)
  end
end

local function all(e)
  local list = {}
  for i = 1, #e.hunks do
    list[i] = i
  end
  return list
end

--- Accepts every hunk of the proposal in `buf` (default: the current
--- buffer) as one change. Returns whether it was applied.
function M.accept_all(buf)
  local e = shown(buf)
  if not e then
    vim.notify(M.NONE_SHOWN, vim.log.levels.WARN)
    return false
  end
  return accept(e, all(e))
end

--- Rejects the proposal in `buf` (default: the current buffer); a request
--- still running stops. The buffer is not touched.
function M.reject_all(buf)
  local e = shown(buf)
  if not e then
    vim.notify(M.NONE_SHOWN, vim.log.levels.WARN)
    return false
  end
  finish(e)
  return true
end

--- Accepts the hunk under the cursor (or the next one below it).
function M.accept_hunk(buf)
  local e = shown(buf)
  if not e then
    return false
  end
  if e.state ~= "done" then
    return accept(e, {})
  end
  local first = region(e)
  if not first then
    return accept(e, {})
  end
  return accept(e, { hunk_at_cursor(e, first) })
end

--- Rejects the hunk under the cursor (or the next one below it).
function M.reject_hunk(buf)
  local e = shown(buf)
  if not e then
    return false
  end
  local first = region(e)
  if e.state ~= "done" or not first then
    finish(e)
    return true
  end
  reject(e, { hunk_at_cursor(e, first) })
  return true
end

--- Stops the inline edits still being written (`:Lathe stop`, `<C-c>`).
function M.stop()
  for _, e in pairs(edits) do
    if e.state == "streaming" then
      pcall(core().inline_stop, e.id)
    end
  end
end

--- Whether an inline edit is being written now.
function M.streaming()
  for _, e in pairs(edits) do
    if e.state == "streaming" then
      return true
    end
  end
  return false
end

set_keys = function(e)
  e.saved_maps = {}
  local function map(lhs, fn, desc)
    local old = vim.fn.maparg(lhs, "n", false, true)
    if old.buffer == 1 then
      table.insert(e.saved_maps, old)
    end
    vim.keymap.set("n", lhs, fn, { buffer = e.buf, nowait = true, desc = "lathe edit: " .. desc })
  end
  api.nvim_buf_call(e.buf, function()
    map(M.KEYS.accept_hunk, function()
      M.accept_hunk(e.buf)
    end, "accept the hunk under the cursor")
    map(M.KEYS.reject_hunk, function()
      M.reject_hunk(e.buf)
    end, "reject the hunk under the cursor")
    map(M.KEYS.accept_all, function()
      M.accept_all(e.buf)
    end, "accept the whole proposal")
    map(M.KEYS.reject_all, function()
      M.reject_all(e.buf)
    end, "reject the whole proposal")
    map(M.KEYS.stop, function()
      if edits[e.id] and e.state == "streaming" then
        pcall(core().inline_stop, e.id)
      else
        -- Not writing: what <C-c> does otherwise.
        api.nvim_feedkeys(vim.keycode("<C-c>"), "n", false)
      end
    end, "stop writing the proposal")
  end)
end

clear_keys = function(e)
  for _, lhs in pairs(M.KEYS) do
    pcall(vim.keymap.del, "n", lhs, { buffer = e.buf })
  end
  api.nvim_buf_call(e.buf, function()
    for _, old in ipairs(e.saved_maps or {}) do
      vim.fn.mapset("n", false, old)
    end
  end)
end

--- Options of `lathe.edit()`.
---@class lathe.EditOpts
---@field buf? integer The buffer (default: the current one).
---@field first integer First line of the selection, 1-based.
---@field last integer Last line, 1-based, inclusive.
---@field instruction string What to do with the lines.

--- Asks the model for a replacement of lines `first`..`last` of `buf` and
--- shows it in the buffer as it streams (`:help lathe-edit`). A proposal
--- already shown in that buffer is dropped. Returns at once.
---@param opts lathe.EditOpts
function M.start(opts)
  if type(opts) ~= "table" then
    error(("lathe.edit(opts): opts must be a table, got %s"):format(type(opts)), 0)
  end
  local buf = opts.buf
  if buf == nil or buf == 0 then
    buf = api.nvim_get_current_buf()
  end
  if type(buf) ~= "number" or not api.nvim_buf_is_valid(buf) then
    error(("lathe.edit(opts): opts.buf must be a valid buffer, got %s"):format(vim.inspect(opts.buf)), 0)
  end
  local instruction = opts.instruction
  if type(instruction) ~= "string" or vim.trim(instruction) == "" then
    error("lathe.edit(opts): opts.instruction must be a non-empty string; " .. M.USAGE:sub(8), 0)
  end
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  local first, last = tonumber(opts.first), tonumber(opts.last)
  if not first or not last then
    error("lathe.edit(opts): opts.first and opts.last must be line numbers", 0)
  end
  first, last = math.min(first, last), math.max(first, last)
  if first < 1 or last > #lines then
    error(("lathe.edit(opts): lines %d-%d are not in the buffer (%d lines)"):format(first, last, #lines), 0)
  end
  local old = shown(buf)
  if old then
    finish(old)
  end
  define_highlights()
  next_id = next_id + 1
  local e = {
    id = next_id,
    buf = buf,
    base = vim.list_slice(lines, first, last),
    hunks = {},
    state = "streaming",
  }
  mark_region(e, first - 1)
  local name = api.nvim_buf_get_name(buf)
  local ok, err = pcall(core().inline_edit, {
    id = e.id,
    path = name ~= "" and vim.fn.fnamemodify(name, ":.") or "",
    filetype = vim.bo[buf].filetype,
    lines = lines,
    first = first,
    last = last,
    instruction = instruction,
  })
  if not ok then
    api.nvim_buf_clear_namespace(buf, ns_region, 0, -1)
    error((tostring(err):gsub("\nstack traceback:.*$", "")), 0)
  end
  edits[e.id] = e
  by_buf[buf] = e.id
  set_keys(e)
  api.nvim_buf_attach(buf, false, {
    on_lines = function()
      if e.detached then
        return true
      end
      if not e.check_queued then
        e.check_queued = true
        vim.schedule(function()
          e.check_queued = false
          if edits[e.id] == e then
            check_stale(e)
          end
        end)
      end
    end,
    on_detach = function()
      if edits[e.id] == e then
        -- The buffer is being unloaded: what cannot be cleared goes with it.
        pcall(finish, e)
      end
    end,
  })
  render(e)
  return e.id
end

--- What the core reports (src/api/inline.rs): `{ state, hunks, error }`.
---@param id integer
---@param u { state: string, hunks: table[], error?: string }
function M.update(id, u)
  local e = edits[id]
  if not e then
    return
  end
  if u.state == "error" then
    finish(e)
    vim.notify(M.ERROR:format(u.error or "failed"), vim.log.levels.ERROR)
    return
  end
  if e.state == "stale" then
    return
  end
  if u.state == "stopped" then
    finish(e)
    vim.notify(M.STOPPED)
    return
  end
  -- Plain tables: what the core sends carries mlua's array metatable.
  e.hunks = {}
  for _, h in ipairs(u.hunks or {}) do
    local old, new = {}, {}
    for i, l in ipairs(h.old) do
      old[i] = l
    end
    for i, l in ipairs(h.new) do
      new[i] = l
    end
    table.insert(e.hunks, { start = h.start, old = old, new = new })
  end
  if u.state == "done" then
    e.state = "done"
    pcall(vim.keymap.del, "n", M.KEYS.stop, { buffer = e.buf })
    if check_stale(e) then
      return
    end
    if #e.hunks == 0 then
      finish(e)
      vim.notify(M.NO_CHANGE)
      return
    end
  elseif check_stale(e) then
    return
  end
  render(e)
end

--- `<Plug>(lathe-edit)` in Visual mode: asks for the instruction
--- (`vim.ui.input`), then edits the selected lines.
function M.edit_visual()
  local a, b = vim.fn.line("v"), vim.fn.line(".")
  if a > b then
    a, b = b, a
  end
  api.nvim_feedkeys(vim.keycode("<Esc>"), "nx", false)
  local buf = api.nvim_get_current_buf()
  vim.ui.input({ prompt = M.PROMPT }, function(text)
    if not text or vim.trim(text) == "" then
      return
    end
    local ok, err = pcall(M.start, { buf = buf, first = a, last = b, instruction = text })
    if not ok then
      vim.notify(tostring(err), vim.log.levels.ERROR)
    end
  end)
end

--- For tests: the proposal shown in `buf` as `{ state, hunks, base }`, or nil.
function M.proposal(buf)
  local e = shown(buf)
  if not e then
    return nil
  end
  return { state = e.state, hunks = vim.deepcopy(e.hunks), base = vim.deepcopy(e.base) }
end

M.ns = ns

return M
