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

--- In window `w` (`nvim_win_call`), scrolls with `zb` when its last fully
--- shown line (`line("w$")`, computed from the window's topline, no redraw
--- needed) is above line `n` and the last line does not start the view (a
--- line taller than the window), or when the view shows line `n` with rows
--- empty below it while there are lines above the view to fill them (a fold
--- closed after the view was set), or when its topline is inside a closed
--- fold. Runs at every frame.
---@param w integer
---@param n integer
---@return boolean scrolled
function M.show_end(w, n)
  return api.nvim_win_call(w, function()
    -- "w$" first: it is measured from the topline as it is ("w0" would
    -- move the topline to the cursor first, unseen).
    local last = vim.fn.line("w$")
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
    if last >= n then
      if top == 1 then
        return false
      end
      local rows = api.nvim_win_text_height(w, { start_row = top - 1, end_row = n - 1 }).all
      if rows >= vim.fn.winheight(0) then
        return false
      end
    end
    vim.cmd("normal! zb")
    return true
  end)
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
