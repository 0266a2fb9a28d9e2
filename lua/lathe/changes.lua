-- `:Lathe changes` (the quickfix list and the review tab of what a turn
-- changed) and `:Lathe rewind` (:help lathe-changes, :help lathe-rewind,
-- docs/checkpoints.md). The core keeps the checkpoints and makes the
-- hunks; a revert goes through the file's buffer here, as one change `u`
-- undoes.

--- The module `require("lathe.changes")`.
---@class lathe.changes
local M = {}

--- Lines of context around a hunk in the review.
local CONTEXT = 3

M.EMPTY_TURN = "lathe: no changes in this turn"
M.EMPTY_SESSION = "lathe: no changes in this session"
M.MOVED_ON = "lathe: %s changed since the review was drawn; drawn again, nothing reverted or kept"
-- The keys first: a narrow window cuts the scope at the end (`%<`).
M.WINBAR =
  "<Space> keep · r revert · K keep all · R revert all · <CR> go to · ]c [c next/prev · q close %%<· lathe changes: %s"
M.BASH = "changed by Bash, not tracked"

local function core()
  return require("lathe.core")
end

--- The message of an error raised by the core, without mlua's traceback.
local function message(err)
  return (tostring(err):gsub("\nstack traceback:.*$", ""):gsub("%s+$", ""))
end

local function scope(all)
  return all and "this session" or "this turn"
end

--- What the core reports now: `{ files, bash }` (see `changes()` in
--- src/api/changes.rs).
local function fetch(all)
  return core().changes(all and true or false)
end

local function is_empty(data)
  return #data.files == 0 and #data.bash == 0
end

--- The quickfix items of `data`: one a hunk, one a file created or
--- deleted, one a file a Bash command changed.
function M.qf_items(data)
  local items = {}
  for _, f in ipairs(data.files) do
    if f.kind == "created" then
      local n = #(f.now or {})
      table.insert(items, { filename = f.path, lnum = 1, text = ("created +%d %s"):format(n, (f.now or {})[1] or "") })
    elseif f.kind == "deleted" then
      table.insert(items, { filename = f.path, lnum = 0, text = ("deleted -%d"):format(#(f.base or {})) })
    elseif f.kind == "not_kept" then
      table.insert(items, { filename = f.path, lnum = 0, text = "changed; too large to keep its text before" })
    elseif f.kind == "error" then
      table.insert(items, { filename = f.path, lnum = 0, text = f.error or "cannot be read" })
    else
      for _, h in ipairs(f.hunks) do
        local first = h.new_lines[1] or h.base_lines[1] or ""
        local lnum = math.max(1, math.min(h.line, #(f.now or {})))
        table.insert(items, {
          filename = f.path,
          lnum = lnum,
          text = ("+%d -%d %s"):format(#h.new_lines, #h.base_lines, first),
        })
      end
    end
  end
  for _, b in ipairs(data.bash) do
    table.insert(items, { filename = b.path, lnum = 0, text = M.BASH })
  end
  return items
end

local function title(all)
  return ("lathe changes: %s"):format(scope(all))
end

--- Sets the quickfix list (a new one; the same one again when it is
--- lathe's and current).
local function set_qf(data, all)
  local t = title(all)
  local current = vim.fn.getqflist({ title = 1 }).title or ""
  local action = vim.startswith(current, "lathe changes:") and "r" or " "
  vim.fn.setqflist({}, action, { title = t, items = M.qf_items(data) })
end

-- The review: its buffer, scope, data, and what each line is.
local view = nil

--- The review's lines and, for each, `{ file, hunk, lnum }` (the file's
--- index, the hunk's, the line of the file now it shows).
local function render(data, all)
  local lines, map, hls = {}, {}, {}
  local function add(text, info, hl)
    table.insert(lines, text)
    map[#lines] = info
    if hl then
      hls[#lines] = hl
    end
  end
  if is_empty(data) then
    add(all and M.EMPTY_SESSION or M.EMPTY_TURN)
    return lines, map, hls
  end
  for fi, f in ipairs(data.files) do
    local now = f.now or {}
    add(("diff %s (%s)"):format(f.name, f.kind), { file = fi, lnum = 1 })
    if f.kind == "not_kept" then
      add("# too large to keep its text before; nothing to review", { file = fi })
    elseif f.kind == "error" then
      add("# " .. (f.error or "cannot be read"), { file = fi })
    end
    for hi, h in ipairs(f.hunks) do
      local before = math.min(CONTEXT, h.now_start)
      local after = math.min(CONTEXT, #now - h.now_end)
      local old_n = before + #h.base_lines + after
      local new_n = before + #h.new_lines + after
      local at = { file = fi, hunk = hi, lnum = math.max(1, h.line) }
      add(("@@ -%d,%d +%d,%d @@"):format(h.base_start - before + 1, old_n, h.now_start - before + 1, new_n), at)
      for i = h.now_start - before + 1, h.now_start do
        add(" " .. now[i], { file = fi, hunk = hi, lnum = i })
      end
      for _, l in ipairs(h.base_lines) do
        add("-" .. l, at)
      end
      for i, l in ipairs(h.new_lines) do
        add("+" .. l, { file = fi, hunk = hi, lnum = h.now_start + i })
      end
      for i = h.now_end + 1, h.now_end + after do
        add(" " .. now[i], { file = fi, hunk = hi, lnum = i })
      end
    end
  end
  for _, b in ipairs(data.bash) do
    add(("# %s: %s"):format(M.BASH, b.name), { bash = b.path })
  end
  return lines, map, hls
end

local function draw()
  if not (view and vim.api.nvim_buf_is_valid(view.buf)) then
    return
  end
  view.data = fetch(view.all)
  local lines, map = render(view.data, view.all)
  view.map = map
  vim.bo[view.buf].modifiable = true
  vim.api.nvim_buf_set_lines(view.buf, 0, -1, false, lines)
  vim.bo[view.buf].modifiable = false
  vim.bo[view.buf].modified = false
  for _, win in ipairs(vim.fn.win_findbuf(view.buf)) do
    local c = vim.api.nvim_win_get_cursor(win)
    vim.api.nvim_win_set_cursor(win, { math.min(c[1], #lines), 0 })
  end
  set_qf(view.data, view.all)
end

--- The file and hunk under the cursor of the review.
local function here()
  local row = vim.api.nvim_win_get_cursor(0)[1]
  local at = view and view.map[row]
  if not at or not at.file then
    return nil
  end
  local f = view.data.files[at.file]
  return f, at.hunk and f.hunks[at.hunk] or nil, at
end

--- The buffer of `path`, loaded (hidden when it was not).
local function load(path)
  local buf = vim.fn.bufadd(path)
  if not vim.api.nvim_buf_is_loaded(buf) then
    vim.fn.bufload(buf)
  end
  return buf
end

local function buf_lines(buf)
  local ls = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  if #ls == 1 and ls[1] == "" and vim.api.nvim_buf_line_count(buf) == 1 then
    return {}
  end
  return ls
end

--- The buffer holds what the review showed of `f`.
local function unchanged(buf, f)
  return vim.deep_equal(buf_lines(buf), f.now or {})
end

--- Saves `buf` after a revert when the user had no unsaved change in it
--- (and `setup{ save_after_edit }` is not false).
local function save(buf, was_modified)
  if was_modified or (view and view.data and view.data.save == false) then
    return
  end
  vim.api.nvim_buf_call(buf, function()
    vim.cmd("silent write")
  end)
end

local function wipe_if_clean(path)
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(b) == path and not vim.bo[b].modified then
      pcall(vim.api.nvim_buf_delete, b, { force = true })
    end
  end
end

--- Reverts `hunks` (nil: all) of `f` through its buffer, as one change.
--- Returns false when the file moved on since the view was drawn.
local function revert(f, hunks)
  if f.kind == "not_kept" or f.kind == "error" then
    return true
  end
  if f.kind == "created" and (hunks == nil or #f.hunks == 1) then
    local buf = vim.fn.bufnr(f.path)
    if buf ~= -1 and vim.api.nvim_buf_is_loaded(buf) and not unchanged(buf, f) then
      return false
    end
    vim.fn.delete(f.path)
    wipe_if_clean(f.path)
    return true
  end
  local buf = load(f.path)
  if not unchanged(buf, f) then
    return false
  end
  local was_modified = vim.bo[buf].modified
  hunks = hunks or f.hunks
  vim.api.nvim_buf_call(buf, function()
    for i = #hunks, 1, -1 do
      local h = hunks[i]
      if i < #hunks then
        pcall(vim.cmd, "undojoin")
      end
      if #buf_lines(buf) == 0 then
        -- An empty buffer still has one line: the restored text replaces it.
        vim.api.nvim_buf_set_lines(buf, 0, -1, false, h.base_lines)
      else
        vim.api.nvim_buf_set_lines(buf, h.now_start, h.now_end, false, h.base_lines)
      end
    end
  end)
  save(buf, was_modified)
  return true
end

local function moved_on(f)
  vim.notify(M.MOVED_ON:format(f.name), vim.log.levels.WARN)
  draw()
end

local function act_revert(all_files)
  if all_files then
    for _, f in ipairs(view.data.files) do
      if not revert(f, nil) then
        moved_on(f)
        return
      end
    end
    draw()
    return
  end
  local f, h = here()
  if not f then
    return
  end
  if not revert(f, h and { h } or nil) then
    moved_on(f)
    return
  end
  draw()
end

local function act_keep(all_files)
  local function keep(f, h)
    return core().changes_keep(f.path, view.all, h)
  end
  if all_files then
    for _, f in ipairs(view.data.files) do
      keep(f, nil)
    end
    draw()
    return
  end
  local f, h = here()
  if not f then
    return
  end
  if not keep(f, h) then
    moved_on(f)
    return
  end
  draw()
end

--- `<CR>`: the file at the line under the cursor, in the tab the review
--- was opened from.
local function go()
  local f, _, at = here()
  if not f then
    return
  end
  local origin = view.origin
  if origin and vim.api.nvim_tabpage_is_valid(origin) then
    vim.api.nvim_set_current_tabpage(origin)
  else
    vim.cmd("tabnew")
  end
  local buf = nil
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(b) == f.path then
      buf = b
    end
  end
  local win = buf
    and vim.iter(vim.api.nvim_tabpage_list_wins(0)):find(function(w)
      return vim.api.nvim_win_get_buf(w) == buf
    end)
  if win then
    vim.api.nvim_set_current_win(win)
  elseif buf then
    -- Never `:edit`: that reloads a file you have unsaved changes in.
    vim.api.nvim_win_set_buf(0, buf)
  else
    vim.cmd.edit(vim.fn.fnameescape(f.path))
  end
  local last = vim.api.nvim_buf_line_count(0)
  pcall(vim.api.nvim_win_set_cursor, 0, { math.max(1, math.min(at.lnum or 1, last)), 0 })
end

--- Moves to the next (`dir` 1) or previous (-1) hunk header.
local function jump(dir)
  local row = vim.api.nvim_win_get_cursor(0)[1]
  local n = vim.api.nvim_buf_line_count(0)
  local i = row + dir
  while i >= 1 and i <= n do
    local l = vim.api.nvim_buf_get_lines(0, i - 1, i, false)[1] or ""
    if vim.startswith(l, "@@") then
      vim.api.nvim_win_set_cursor(0, { i, 0 })
      return
    end
    i = i + dir
  end
end

local function close()
  if view and vim.api.nvim_buf_is_valid(view.buf) then
    if #vim.api.nvim_list_tabpages() > 1 then
      vim.cmd("tabclose")
    else
      vim.api.nvim_buf_delete(view.buf, { force = true })
    end
  end
end

--- The review's buffer (made once).
local function review_buffer()
  if view and vim.api.nvim_buf_is_valid(view.buf) then
    return view.buf
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, "lathe://changes")
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = "diff"
  local function map(lhs, fn, desc)
    vim.keymap.set("n", lhs, fn, { buffer = buf, nowait = true, desc = "lathe changes: " .. desc })
  end
  map("<Space>", function()
    act_keep(false)
  end, "keep the hunk")
  map("r", function()
    act_revert(false)
  end, "revert the hunk")
  map("K", function()
    act_keep(true)
  end, "keep every change")
  map("R", function()
    act_revert(true)
  end, "revert every change")
  map("<CR>", go, "go to the hunk's line in its file")
  map("]c", function()
    jump(1)
  end, "next hunk")
  map("[c", function()
    jump(-1)
  end, "previous hunk")
  map("q", close, "close the review")
  return buf
end

--- `:Lathe changes [all]`: the quickfix list and the review tab.
---@param opts? { all?: boolean, review?: boolean } `review = false`: the quickfix list alone.
function M.open(opts)
  opts = opts or {}
  local all = opts.all and true or false
  local data = fetch(all)
  set_qf(data, all)
  if is_empty(data) then
    vim.notify(all and M.EMPTY_SESSION or M.EMPTY_TURN)
    if view and vim.api.nvim_buf_is_valid(view.buf) then
      view.all = all
      draw()
    end
    return
  end
  if opts.review == false then
    return
  end
  local origin = vim.api.nvim_get_current_tabpage()
  local buf = review_buffer()
  local wins = vim.fn.win_findbuf(buf)
  if #wins > 0 then
    vim.api.nvim_set_current_win(wins[1])
    origin = view.origin
  else
    vim.cmd("tabnew")
    local scratch = vim.api.nvim_get_current_buf()
    vim.api.nvim_win_set_buf(0, buf)
    if scratch ~= buf and vim.api.nvim_buf_is_valid(scratch) then
      pcall(vim.api.nvim_buf_delete, scratch, { force = true })
    end
  end
  view = { buf = buf, all = all, origin = origin, map = {}, data = data }
  local win = vim.api.nvim_get_current_win()
  local wo = vim.wo[win]
  wo.number = false
  wo.relativenumber = false
  wo.foldcolumn = "0"
  wo.foldenable = false
  wo.signcolumn = "no"
  wo.list = false
  wo.winbar = M.WINBAR:format(scope(all))
  draw()
  vim.api.nvim_win_set_cursor(win, { 1, 0 })
  jump(1)
end

--- The buffers of `paths` (files a rewind removed) wiped when they hold
--- no unsaved change.
function M.wipe_removed(paths)
  for _, p in ipairs(paths or {}) do
    wipe_if_clean(p)
  end
  if view and vim.api.nvim_buf_is_valid(view.buf) then
    draw()
  end
end

M.WHAT = {
  { word = "both", label = "code and conversation" },
  { word = "code", label = "code only" },
  { word = "conversation", label = "conversation only" },
}

--- `:Lathe rewind {n} [what]`: loads every file the rewind restores (so
--- the restore goes through its buffer and one `u` undoes it), then
--- rewinds. Errors are raised with the core's message.
---@param n integer Prompts back (1: the last).
---@param what? "code"|"conversation"|"both"
function M.rewind(n, what)
  what = what or "both"
  if what ~= "conversation" then
    local list = core().checkpoints()
    for i = math.max(1, #list - n + 1), #list do
      for _, p in ipairs(list[i].paths) do
        if vim.fn.filereadable(p) == 1 then
          load(p)
        end
      end
    end
  end
  local ok, err = pcall(core().rewind, n, what)
  if not ok then
    error(message(err), 0)
  end
end

--- One picker line of a prompt.
function M.format_checkpoint(c)
  local prompt = vim.trim((c.prompt or ""):gsub("%s+", " "))
  if vim.fn.strchars(prompt) > 60 then
    prompt = vim.fn.strcharpart(prompt, 0, 59) .. "…"
  end
  local files = #c.files > 0 and table.concat(c.files, ", ") or "no file changed"
  if #c.bash > 0 then
    files = files .. "; Bash: " .. table.concat(c.bash, ", ")
  end
  return ("%d. %s  (%s)"):format(c.number, prompt, files)
end

--- `:Lathe rewind`: picks a prompt (newest first), then what to restore.
function M.pick()
  local list = core().checkpoints()
  if #list == 0 then
    vim.notify("lathe: nothing to rewind: no prompt was sent in this session yet", vim.log.levels.WARN)
    return
  end
  local newest = {}
  for i = #list, 1, -1 do
    table.insert(newest, list[i])
  end
  vim.ui.select(newest, {
    prompt = "lathe: rewind to before which prompt?",
    format_item = M.format_checkpoint,
  }, function(choice)
    if not choice then
      return
    end
    vim.ui.select(M.WHAT, {
      prompt = "lathe: restore what?",
      format_item = function(w)
        return w.label
      end,
    }, function(w)
      if not w then
        return
      end
      local ok, err = pcall(M.rewind, #list - choice.number + 1, w.word)
      if not ok then
        vim.notify(tostring(err), vim.log.levels.WARN)
      end
    end)
  end)
end

return M
