-- The chat's Neovim glue that is plainer in Lua than through the API one
-- call at a time (src/ui/chat/window.rs, jump.rs, prompt.rs and buf.rs call
-- these; `:help lathe-chat`).
local M = {}

local api = vim.api

--- Links the `Lathe*` highlight groups as defaults (a colour scheme or the
--- user's own `:highlight` wins), now and after every `:colorscheme`.
---@param pairs_ string[][] `{ group, link }` pairs
function M.define_highlights(pairs_)
  local function apply()
    for _, p in ipairs(pairs_) do
      api.nvim_set_hl(0, p[1], { link = p[2], default = true })
    end
  end
  apply()
  api.nvim_create_autocmd("ColorScheme", {
    group = api.nvim_create_augroup("lathe_highlights", { clear = true }),
    callback = apply,
    desc = "lathe: link the Lathe* highlight groups again",
  })
end

--- When the last window of the tab showing the transcript `chat` closes,
--- closes the prompt area docked under it too.
---@param chat integer the transcript buffer
function M.close_prompt_with_chat(chat)
  api.nvim_create_autocmd("WinClosed", {
    buffer = chat,
    desc = "lathe: close the prompt area with the chat",
    callback = function()
      vim.schedule(function()
        local wins = api.nvim_tabpage_list_wins(0)
        for _, w in ipairs(wins) do
          if api.nvim_win_get_buf(w) == chat then
            return
          end
        end
        for _, w in ipairs(wins) do
          local b = api.nvim_win_get_buf(w)
          if api.nvim_buf_get_name(b) == "lathe://prompt" and #api.nvim_tabpage_list_wins(0) > 1 then
            pcall(api.nvim_win_close, w, false)
          end
        end
      end)
    end,
  })
end

--- In window `w` (`nvim_win_call`), whose cursor is on the last line `n`,
--- scrolls with `zb` when the rows from its topline to the end of the
--- buffer (the virtual lines under the last line included: the working
--- line, the waiting and queued notes) do not fit in it, unless the last
--- line starts the view (a line taller than the window); or when they
--- leave rows empty below while the line above the view would fit in them
--- (a fold closed after the view was set); or when its topline is inside a
--- closed fold. Neovim's own scrolling to the cursor leaves the virtual
--- lines under the last line out. Runs at every frame.
---@param w integer
---@param n integer
---@return boolean scrolled
function M.show_end(w, n)
  return api.nvim_win_call(w, function()
    local top = vim.fn.line("w0")
    if top >= n then
      return false
    end
    -- A topline inside a closed fold (a result folded under a line above
    -- the view) would show a line of the fold, raw: scroll.
    local fold = vim.fn.foldclosed(top)
    if fold ~= -1 and fold ~= top then
      vim.cmd("normal! zb")
      return true
    end
    local height = vim.fn.winheight(0)
    -- No end_row: counts the virtual lines under the last line.
    local rows = api.nvim_win_text_height(w, { start_row = top - 1 }).all
    if rows == height then
      return false
    end
    if rows < height then
      if top == 1 then
        return false
      end
      local above = api.nvim_win_text_height(w, { start_row = top - 2, end_row = top - 2 }).all
      if rows + above > height then
        return false
      end
    end
    vim.cmd("normal! zb")
    return true
  end)
end

--- 'foldtext' of a transcript window: the first line of a closed fold (a
--- tool line above its result, an attached item above its text) with its
--- highlights from lathe's namespace, fitted to the window. A closed fold
--- is one row, never wrapped: a longer tool line loses the end of its key
--- argument ("…"), never its state and result; another line is cut at the
--- end. Runs in the window, for each closed fold Neovim draws.
---@return string|table
function M.foldtext()
  local info = vim.fn.getwininfo(api.nvim_get_current_win())[1]
  local width = info and (info.width - info.textoff) or 80
  return M.fitted_line(api.nvim_get_current_buf(), vim.v.foldstart, width)
end

--- Line `lnum` of `buf` as chunks (text, highlight group) at most `width`
--- cells wide (|M.foldtext|).
---@param buf integer
---@param lnum integer
---@param width integer
---@return table
function M.fitted_line(buf, lnum, width)
  local line = api.nvim_buf_get_lines(buf, lnum - 1, lnum, false)[1] or ""
  -- The highlight of each byte, from the namespace's marks on the line.
  local hl = {}
  local status
  local ns = api.nvim_get_namespaces()["lathe_chat"]
  if ns then
    local marks = api.nvim_buf_get_extmarks(buf, ns, { lnum - 1, 0 }, { lnum - 1, -1 }, { details = true })
    for _, m in ipairs(marks) do
      local d = m[4]
      if d.hl_group and (d.end_row or m[2]) == m[2] then
        local group = type(d.hl_group) == "table" and d.hl_group[1] or d.hl_group
        for i = m[3] + 1, math.min(d.end_col or #line, #line) do
          hl[i] = group
        end
        if type(group) == "string" and group:find("^LatheTool") and group ~= "LatheToolDescription" then
          status = status or m[3]
        end
      end
    end
  end
  -- The byte range to leave out: the end of the key argument (before
  -- "): " and the state), or the line's end.
  local cut_from, cut_to = nil, nil
  -- Cells without the window's 'linebreak' (`strdisplaywidth()` counts
  -- the cells a break would add).
  local cells = api.nvim_strwidth(line)
  if cells > width then
    local over = cells - width + 1
    local open = line:find("(", 1, true)
    local close = status and status >= 3 and status - 3 or nil
    if open and close and close > open then
      -- Leave out characters before `close` until the line fits.
      local keep =
        vim.fn.strcharpart(line:sub(open + 1, close), 0, math.max(0, vim.fn.strchars(line:sub(open + 1, close)) - over))
      cut_from, cut_to = open + #keep + 1, close
    end
    if not cut_from then
      local keep = vim.fn.strcharpart(line, 0, math.max(0, vim.fn.strchars(line) - over))
      cut_from, cut_to = #keep + 1, #line
    end
  end
  local chunks = {}
  local function add(text, group)
    local last = chunks[#chunks]
    if last and last[2] == group then
      last[1] = last[1] .. text
    else
      table.insert(chunks, { text, group })
    end
  end
  local i = 1
  while i <= #line do
    if cut_from and i == cut_from then
      add("…", hl[i] or "Normal")
      i = cut_to + 1
    else
      add(line:sub(i, i), hl[i] or "Normal")
      i = i + 1
    end
  end
  if cut_from and cut_from > #line then
    add("…", "Normal")
  end
  return chunks
end

--- Opens `path` in the previous window (or another one of the tab that does
--- not show the chat, or a new split on the left), moves there and puts the
--- cursor on `line`, or on the first line containing `find` when given.
---@param path string
---@param line integer
---@param find string?
function M.open_in_other_window(path, line, find)
  local chat = api.nvim_get_current_win()
  local function usable(w)
    if w == 0 or w == chat or not api.nvim_win_is_valid(w) then
      return false
    end
    if api.nvim_win_get_config(w).relative ~= "" then
      return false
    end
    local name = api.nvim_buf_get_name(api.nvim_win_get_buf(w))
    return not name:match("^lathe://")
  end
  local target = vim.fn.win_getid(vim.fn.winnr("#"))
  if not usable(target) then
    target = nil
    for _, w in ipairs(api.nvim_tabpage_list_wins(0)) do
      if usable(w) then
        target = w
        break
      end
    end
  end
  if target then
    api.nvim_set_current_win(target)
  end
  -- Relative to the window's directory when inside it, as buffers the
  -- user opens are named (`:ls`).
  local name = vim.fn.fnameescape(vim.fn.fnamemodify(path, ":."))
  vim.cmd((target and "edit " or "topleft vsplit ") .. name)
  if find then
    for i, l in ipairs(api.nvim_buf_get_lines(0, 0, -1, false)) do
      if l:find(find, 1, true) then
        line = i
        break
      end
    end
  end
  line = math.max(1, math.min(line, api.nvim_buf_line_count(0)))
  api.nvim_win_set_cursor(0, { line, 0 })
  vim.cmd("normal! zv")
end

--- Sends the prompt area's `text` with `require("lathe").ask` (while a
--- turn runs, queued for the turn's next request), or runs the slash
--- command it is (`:help lathe-commands`).
---@param text string
---@return boolean ok
---@return string? err Why not, when `ask` or the command raised (an
--- unknown `/word` too: the text then stays in the prompt area).
function M.send(text)
  local commands = require("lathe.commands")
  local run = commands.parse(text) and function(t)
    return commands.run(t)
  end or function(t)
    return require("lathe").ask(t, { queue = true })
  end
  local ok, err = pcall(run, text)
  if not ok and commands.parse(text) then
    -- What went wrong with a command stays in view in the chat (the
    -- message line shows the mode, or the completion menu's message).
    local core = package.loaded["lathe.core"]
    if core and core.chat_note then
      pcall(core.chat_note, (tostring(err):gsub("^lathe: ", "")), true)
    end
  end
  return ok, err and tostring(err) or nil
end

--- Keeps the winbar of the windows showing the prompt area `buf` naming
--- the keys of the mode the user is in: `insert_bar` in Insert mode,
--- `normal_bar` in the others (at every mode change in it, and when a
--- window shows it).
---@param buf integer
---@param insert_bar string
---@param normal_bar string
function M.prompt_winbar(buf, insert_bar, normal_bar)
  local function apply()
    local mode = api.nvim_get_mode().mode
    local bar = mode:sub(1, 1) == "i" and api.nvim_get_current_buf() == buf and insert_bar or normal_bar
    for _, w in ipairs(vim.fn.win_findbuf(buf)) do
      if vim.wo[w].winbar ~= bar then
        vim.wo[w].winbar = bar
      end
    end
  end
  local group = api.nvim_create_augroup("lathe_prompt_winbar", { clear = true })
  api.nvim_create_autocmd({ "ModeChanged", "BufWinEnter", "BufLeave" }, {
    group = group,
    buffer = buf,
    desc = "lathe: the prompt area's winbar names the keys of the mode you are in",
    callback = function()
      -- BufLeave: the mode may still read Insert while leaving.
      vim.schedule(apply)
    end,
  })
end

--- The key `stop_key` mapped, nil when none.
local stop_mapped = nil

--- Maps `key` in Normal mode, for every window: while a turn runs it stops
--- it (`lathe.stop()`), else it does what it did before (the key's own
--- action). nil removes the map lathe made. A map of the user's own on
--- that key is kept (lathe maps nothing then).
---@param key string?
function M.stop_key(key)
  if stop_mapped then
    local m = vim.fn.maparg(stop_mapped, "n", false, true)
    if m.desc == M.STOP_KEY_DESC then
      pcall(vim.keymap.del, "n", stop_mapped)
    end
    stop_mapped = nil
  end
  if not key or vim.fn.maparg(key, "n") ~= "" then
    return
  end
  vim.keymap.set("n", key, function()
    local ok, status = pcall(function()
      return require("lathe").status()
    end)
    if ok and status.state ~= "idle" then
      -- Not in the expression itself: stopping closes floats.
      vim.schedule(function()
        pcall(require("lathe").stop)
      end)
      return ""
    end
    return key
  end, { expr = true, desc = M.STOP_KEY_DESC })
  stop_mapped = key
end

--- The description of the `stop_key` map.
M.STOP_KEY_DESC = "lathe: stop the running request (else the key's own action)"

--- Starts tree-sitter highlighting of `buf` as markdown; without a parser
--- it stays plain text.
---@param buf integer
function M.start_treesitter(buf)
  pcall(vim.treesitter.start, buf, "markdown")
end

return M
