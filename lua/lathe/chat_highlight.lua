-- The chat's markdown highlighting (`:help lathe-chat`), loaded by the Rust
-- side (src/ui/chat/highlight.rs, compiled into the library, so it needs
-- nothing on 'runtimepath').
--
-- The chat buffer has no tree-sitter parser of its own: Neovim parses a
-- buffer's whole text and keeps its trees (~80 bytes per byte of chat), so
-- a day's chat cost hundreds of MB and a 100 ms stall at every turn's end
--. Instead a piece of the chat (a turn, an opened result) is
-- parsed once as a string, with its injections (fenced code in its
-- language), its captures become extmarks in the namespace
-- `lathe_chat_hl`, and the trees are dropped. What a piece costs follows
-- its own size, never the chat's.
--
-- A tool's folded result is left out of its turn's parse and waits as a
-- mark in `lathe_chat_pending` until a window shows it open: a decoration
-- provider sees it on the screen (`on_win`) and highlights it right after
-- that redraw.

local M = {}

local api = vim.api
local ns = api.nvim_create_namespace("lathe_chat_hl")
local pending = api.nvim_create_namespace("lathe_chat_pending")
M.ns = ns
M.pending_ns = pending

--- Bytes of text parsed in one step; a longer range is split (at blank
--- lines outside fenced code) and its other pieces run in later steps of
--- the main loop.
M.STEP_BYTES = 16 * 1024

--- The same for a range highlighted later (`defer`: a resumed turn). Its
--- pieces run in the chat's steps, several per step until the step's
--- budget is spent, so smaller pieces keep a step near its budget: the
--- parse costs 2-3 ms per KiB of chat text (its inline injections).
M.DEFERRED_STEP_BYTES = 1024

-- Counters (tests, bench): bytes parsed, pieces parsed, pieces waiting
-- for a later step.
M.parsed_bytes = 0
M.pieces = 0
M.queued = 0

--- Pieces waiting for a later step, oldest first (`M.step` runs them).
local waiting, first_waiting = {}, 1

--- Buffers whose folded results are highlighted when shown.
local chats = {}

--- Captures that are not colours.
local function skipped(name)
  return name == "spell" or name == "nospell" or name == "conceal" or name:sub(1, 1) == "_"
end

--- Highlights `lines` (a list of strings, rows `row0`.. of `buf`) as
--- markdown with injections: one string parse, its captures as extmarks.
--- Highlight queries by language, held here: Neovim's own cache of them
--- is weak, and the garbage of many small parses would have them compiled
--- again and again.
local queries = {}

local function query_of(lang)
  if queries[lang] == nil then
    local ok, q = pcall(vim.treesitter.query.get, lang, "highlights")
    queries[lang] = ok and q or false
  end
  return queries[lang] or nil
end

local function apply(buf, row0, lines)
  local text = table.concat(lines, "\n")
  if text:match("^%s*$") then
    return
  end
  M.parsed_bytes = M.parsed_bytes + #text
  M.pieces = M.pieces + 1
  local ok, parser = pcall(vim.treesitter.get_string_parser, text, "markdown")
  if not ok or not parser then
    return
  end
  if not pcall(parser.parse, parser, true) then
    return
  end
  parser:for_each_tree(function(tree, ltree)
    local lang = ltree:lang()
    local query = query_of(lang)
    if not query then
      return
    end
    for id, node, metadata in query:iter_captures(tree:root(), text) do
      local name = query.captures[id]
      if not skipped(name) then
        local sr, sc, er, ec = node:range()
        local prio = tonumber(metadata.priority or (metadata[id] and metadata[id].priority))
          or vim.hl.priorities.treesitter
        pcall(api.nvim_buf_set_extmark, buf, ns, row0 + sr, sc, {
          end_row = row0 + er,
          end_col = ec,
          hl_group = "@" .. name .. "." .. lang,
          priority = prio,
          strict = false,
        })
      end
    end
  end)
  pcall(parser.destroy, parser)
end

--- Rows `first`..`last` (0-based, end exclusive) split into pieces of about
--- STEP_BYTES at blank lines outside fenced code: a list of {first, last}.
local function pieces(lines, first, step_bytes)
  local out, start, bytes, fence = {}, 1, 0, nil
  for i, l in ipairs(lines) do
    bytes = bytes + #l + 1
    local f = l ~= "" and (l:match("^%s*(```+)") or l:match("^%s*(~~~+)"))
    if f then
      if not fence then
        fence = f
      elseif f:sub(1, 1) == fence:sub(1, 1) and #f >= #fence and l:match("^%s*[`~]+%s*$") then
        fence = nil
      end
    end
    if bytes >= step_bytes and not fence and l == "" then
      out[#out + 1] = { first + start - 1, first + i }
      start, bytes = i + 1, 0
    end
  end
  if start <= #lines then
    out[#out + 1] = { first + start - 1, first + #lines }
  end
  return out
end

--- Highlights rows `first`..`last` of `buf` (0-based, end exclusive) as
--- markdown, replacing what that range had. The rows of `skip` (a list of
--- {first, last}, end exclusive, in order: folded results) are left out:
--- not read, parsed as blank lines, each marked pending until a window
--- shows it open. The first STEP_BYTES are highlighted now, the rest
--- wait for later steps (`M.step`); with `defer` all of it waits, in
--- pieces of DEFERRED_STEP_BYTES (rows of a finished turn stay where they
--- are: the chat only grows at its end).
function M.range(buf, first, last, skip, defer)
  if not api.nvim_buf_is_valid(buf) or last <= first then
    return
  end
  chats[buf] = true
  local lines, row = {}, first
  local function take(to)
    if to > row then
      vim.list_extend(lines, api.nvim_buf_get_lines(buf, row, to, false))
      row = to
    end
  end
  for _, r in ipairs(skip or {}) do
    local a, b = math.max(r[1], row), math.min(r[2], last)
    if b > a then
      take(a)
      for _ = a, b - 1 do
        lines[#lines + 1] = ""
      end
      row = b
      api.nvim_buf_clear_namespace(buf, pending, a, b)
      pcall(api.nvim_buf_set_extmark, buf, pending, a, 0, { end_row = b, end_col = 0, strict = false })
    end
  end
  take(last)
  local parts = pieces(lines, first, defer and M.DEFERRED_STEP_BYTES or M.STEP_BYTES)
  local function run(p)
    -- A chat cleared since (`M.forget`) is not highlighted any more.
    if not chats[buf] or not api.nvim_buf_is_valid(buf) then
      return
    end
    api.nvim_buf_clear_namespace(buf, ns, p[1], p[2])
    apply(buf, p[1], vim.list_slice(lines, p[1] - first + 1, p[2] - first))
  end
  for k, p in ipairs(parts) do
    if k == 1 and not defer then
      run(p)
    else
      M.queued = M.queued + 1
      waiting[first_waiting + M.queued - 1] = function()
        run(p)
      end
    end
  end
end

--- Runs the pieces waiting, oldest first, until `budget_ms` milliseconds
--- have gone by (at least one); returns how many still wait. The chat's
--- steps call it (src/ui/chat/mod.rs), so the pieces share their
--- budget with the chat's drawing.
function M.step(budget_ms)
  local start = vim.uv.hrtime()
  while M.queued > 0 do
    local f = waiting[first_waiting]
    waiting[first_waiting] = nil
    first_waiting = first_waiting + 1
    M.queued = M.queued - 1
    f()
    if (vim.uv.hrtime() - start) / 1e6 >= budget_ms then
      break
    end
  end
  return M.queued
end

--- Highlights the folded results of `buf` that window `win` shows open
--- between rows `top` and `bot` (0-based), each once.
local function show_open(win, buf, top, bot)
  if not api.nvim_buf_is_valid(buf) or not api.nvim_win_is_valid(win) then
    return
  end
  local marks = api.nvim_buf_get_extmarks(buf, pending, { top, 0 }, { bot, -1 }, { details = true, overlap = true })
  for _, m in ipairs(marks) do
    local id, row, d = m[1], m[2], m[4]
    local open = api.nvim_win_call(win, function()
      return vim.fn.foldclosed(row + 1) == -1
    end)
    if open then
      api.nvim_buf_del_extmark(buf, pending, id)
      local last = d.end_row or row + 1
      api.nvim_buf_clear_namespace(buf, ns, row, last)
      apply(buf, row, api.nvim_buf_get_lines(buf, row, last, false))
    end
  end
end

--- Forgets `buf` (wiped or emptied).
function M.forget(buf)
  chats[buf] = nil
end

--- Highlights now the folded results window `win` shows open (tests; the
--- decoration provider does it after each redraw).
function M.show(win)
  local buf = api.nvim_win_get_buf(win)
  local top = vim.fn.line("w0", win) - 1
  local bot = vim.fn.line("w$", win)
  show_open(win, buf, top, bot)
end

api.nvim_set_decoration_provider(pending, {
  on_win = function(_, win, buf, top, bot)
    if not chats[buf] then
      return false
    end
    -- Only look when something waits on the screen; the work itself runs
    -- after the redraw (no buffer changes inside one).
    if #api.nvim_buf_get_extmarks(buf, pending, { top, 0 }, { bot, -1 }, { limit = 1, overlap = true }) > 0 then
      vim.schedule(function()
        show_open(win, buf, top, bot)
      end)
    end
    return false
  end,
})

return M
