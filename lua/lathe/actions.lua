-- What the <Plug> maps of plugin/lathe.lua do (`:help lathe-mappings`):
-- Grep into the quickfix list, Read into a preview float, ask about a
-- selection, and the default mappings. Grep and Read run through
-- `require("lathe").tool`, the pipeline the model's calls take
-- (permissions, hooks).
local M = {}

local api = vim.api

local function notify(msg, level)
  vim.notify(msg, level or vim.log.levels.INFO)
end

--- The project root lathe resolves paths against (`setup{ cwd }`).
local function root()
  local ok, info = pcall(require("lathe").info)
  return ok and info.cwd or vim.fn.getcwd()
end

--- `text` with Rust regex metacharacters escaped.
local function regex_escape(text)
  return (text:gsub("[\\.+*?()|%[%]{}^$#&%-~]", "\\%0"))
end

--- Quickfix items from Grep's "content" output (`path:line:text` lines,
--- paths relative to `base`): `{ filename, lnum, col, text }`, the column
--- being the first match of `pattern` in the line (1 when none is found).
---@param content string Grep's result.
---@param pattern string The Grep pattern (Rust regex syntax).
---@param base string The project root.
---@param ignore_case? boolean Whether the search ignored case.
---@return table[] items
function M.grep_items(content, pattern, base, ignore_case)
  local core = package.loaded["lathe.core"]
  local items = {}
  for line in vim.gsplit(content, "\n", { plain = true }) do
    local file, lnum, text = line:match("^(.-):(%d+):(.*)$")
    if file and file ~= "" then
      local abs = file:sub(1, 1) == "/" and file or (base .. "/" .. file)
      if (vim.uv or vim.loop).fs_stat(abs) then
        local col = core and core.match_col(pattern, text, ignore_case or false) or nil
        table.insert(items, { filename = abs, lnum = tonumber(lnum), col = col or 1, text = text })
      end
    end
  end
  return items
end

--- Runs Grep for `pattern` (content mode, line numbers) and puts the
--- matches in the quickfix list, then opens it. A refusal or no match is
--- shown with `vim.notify`.
---@param pattern string Rust regex syntax.
function M.grep(pattern)
  if not pattern or pattern == "" then
    return
  end
  require("lathe").tool("Grep", { pattern = pattern, output_mode = "content", ["-n"] = true }, function(r)
    if r.is_error then
      notify("lathe: Grep: " .. r.content, vim.log.levels.WARN)
      return
    end
    local items = M.grep_items(r.content, pattern, root())
    if #items == 0 then
      notify("lathe: " .. vim.split(r.content, "\n")[1])
      return
    end
    vim.fn.setqflist({}, " ", { title = "lathe Grep: " .. pattern, items = items })
    vim.cmd("botright copen")
  end)
end

--- Grep for the word under the cursor (`<cword>`), as a whole word.
function M.grep_word()
  local word = vim.fn.expand("<cword>")
  if word == "" then
    notify("lathe: no word under the cursor", vim.log.levels.WARN)
    return
  end
  local pattern = regex_escape(word)
  if word:match("^[%w_]") then
    pattern = "\\b" .. pattern
  end
  if word:match("[%w_]$") then
    pattern = pattern .. "\\b"
  end
  M.grep(pattern)
end

--- Asks for a pattern with `vim.ui.input`, then `M.grep`.
function M.grep_prompt()
  vim.ui.input({ prompt = "lathe Grep (regex): " }, function(input)
    if input and input ~= "" then
      M.grep(input)
    end
  end)
end

--- The file `<cfile>` names when it is a readable file (relative to the
--- project root, the current file's folder, or 'path'), else the current
--- buffer's file, else nil. In a quickfix or location list window: the
--- entry's file and its line (second result).
---@return string? path
---@return integer? line
local function file_to_read()
  if vim.bo.buftype == "quickfix" then
    local info = vim.fn.getwininfo(api.nvim_get_current_win())[1] or {}
    local items = info.loclist == 1 and vim.fn.getloclist(0) or vim.fn.getqflist()
    local item = items[vim.fn.line(".")]
    if item and item.bufnr > 0 then
      local name = api.nvim_buf_get_name(item.bufnr)
      if name ~= "" and vim.fn.filereadable(name) == 1 then
        return vim.fn.fnamemodify(name, ":p"), item.lnum > 0 and item.lnum or nil
      end
    end
  end
  local cfile = vim.fn.expand("<cfile>")
  if cfile ~= "" then
    local here = vim.fn.expand("%:p:h")
    for _, cand in ipairs({ cfile, root() .. "/" .. cfile, here .. "/" .. cfile }) do
      if vim.fn.filereadable(cand) == 1 then
        return vim.fn.fnamemodify(cand, ":p")
      end
    end
    local found = vim.fn.findfile(cfile)
    if found ~= "" then
      return vim.fn.fnamemodify(found, ":p")
    end
  end
  local name = api.nvim_buf_get_name(0)
  if name ~= "" and vim.bo.buftype == "" then
    return vim.fn.fnamemodify(name, ":p")
  end
end

--- The lines of Read's numbered output (`     N<Tab>text`) without the
--- numbers, the first line's number, and the other lines (notes).
local function unnumber(content)
  local lines, notes, first = {}, {}, nil
  for line in vim.gsplit(content, "\n", { plain = true }) do
    local n, text = line:match("^%s*(%d+)\t(.*)$")
    if n then
      first = first or tonumber(n)
      table.insert(lines, text)
    elseif line ~= "" then
      table.insert(notes, line)
    end
  end
  return lines, first or 1, notes
end

--- Shows `lines` of `path` (the first being line `first`) in a read-only
--- preview float with the file's filetype; `q`/`<Esc>` close it, `<CR>`
--- opens the file at that line in the window it came from. Returns the
--- float's window.
---@param path string Absolute path.
---@param lines string[]
---@param first integer 1-based number of the first line.
---@param note? string Shown in the footer (e.g. where the file continues).
---@param at? integer 1-based line of the file to put the cursor on.
---@return integer win
function M.preview(path, lines, first, note, at)
  local from = api.nvim_get_current_win()
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].modifiable = false
  vim.bo[buf].readonly = true
  local ft = vim.filetype.match({ filename = path, buf = buf })
  if ft then
    vim.bo[buf].filetype = ft
  end
  local width = math.max(20, math.floor(vim.o.columns * 0.8))
  local height = math.max(3, math.min(#lines, math.floor((vim.o.lines - 2) * 0.7)))
  local shown = path
  local base = root()
  if vim.startswith(path, base .. "/") then
    shown = path:sub(#base + 2)
  end
  local win = api.nvim_open_win(buf, true, {
    relative = "editor",
    width = width,
    height = height,
    row = math.floor((vim.o.lines - height) / 2) - 1,
    col = math.floor((vim.o.columns - width) / 2),
    border = "rounded",
    title = " " .. shown .. " ",
    footer = " " .. (note and (note .. " · ") or "") .. "q close · <CR> open ",
    style = "minimal",
  })
  vim.wo[win].number = true
  if first > 1 then
    -- Line numbers as in the file, not the float.
    vim.wo[win].statuscolumn = ("%%{v:lnum + %d} "):format(first - 1)
  end
  vim.wo[win].cursorline = true
  if at and at >= first and at < first + #lines then
    api.nvim_win_set_cursor(win, { at - first + 1, 0 })
    vim.cmd("normal! zz")
  end
  local function close()
    if api.nvim_win_is_valid(win) then
      api.nvim_win_close(win, true)
    end
    if api.nvim_win_is_valid(from) then
      api.nvim_set_current_win(from)
    end
  end
  local opts = { buffer = buf, nowait = true, silent = true }
  vim.keymap.set("n", "q", close, opts)
  vim.keymap.set("n", "<Esc>", close, opts)
  vim.keymap.set("n", "<CR>", function()
    local lnum = api.nvim_win_get_cursor(win)[1] + first - 1
    close()
    vim.cmd(("edit +%d %s"):format(lnum, vim.fn.fnameescape(path)))
  end, opts)
  api.nvim_create_autocmd("WinLeave", { buffer = buf, once = true, callback = close })
  return win
end

-- A quickfix entry's line past this is read from `READ_ABOVE` lines above
-- it, not from the top (Read shows at most 2000 lines).
local READ_FROM_TOP = 1500
local READ_ABOVE = 20

--- Runs Read on the file under the cursor (or the current file; in the
--- quickfix window, the entry's file, with the cursor on its line) and
--- shows it in a preview float (`M.preview`). A refusal is shown with
--- `vim.notify`.
function M.read()
  local path, at = file_to_read()
  if not path then
    notify("lathe: no file under the cursor, and this buffer is no file", vim.log.levels.WARN)
    return
  end
  local input = { file_path = path }
  if at and at > READ_FROM_TOP then
    -- A line far down: Read from a little above it.
    input.offset = at - READ_ABOVE
  end
  -- record = false: showing you the file is not the model reading it.
  require("lathe").tool("Read", input, function(r)
    if r.is_error then
      notify("lathe: Read: " .. r.content, vim.log.levels.WARN)
      return
    end
    local lines, first, notes = unnumber(r.content)
    if #lines == 0 and r.content:match("^File unchanged since your last read") then
      -- The pipeline let this Read through; the text is what it read.
      lines, first, notes = vim.fn.readfile(path), 1, {}
    end
    if #lines == 0 then
      notify("lathe: " .. r.content)
      return
    end
    M.preview(path, lines, first, notes[1], at)
  end, { record = false })
end

--- Asks for a prompt with `vim.ui.input` and sends it (with `range`, 1-based
--- `{ first, last }` lines of the current buffer, when given).
---@param range? integer[]
function M.ask(range)
  local label = range and ("lathe (lines %d-%d): "):format(range[1], range[2]) or "lathe: "
  vim.ui.input({ prompt = label }, function(input)
    if input and vim.trim(input) ~= "" then
      local ok, err = pcall(require("lathe").ask, input, range and { range = range } or nil)
      if not ok then
        notify(tostring(err), vim.log.levels.ERROR)
      end
    end
  end)
end

--- `<Plug>(lathe-ask)` in Visual mode: the selected lines (whole lines),
--- then `M.ask`.
function M.ask_visual()
  local a, b = vim.fn.line("v"), vim.fn.line(".")
  if a > b then
    a, b = b, a
  end
  api.nvim_feedkeys(vim.keycode("<Esc>"), "nx", false)
  M.ask({ a, b })
end

--- Toggles the chat window (`require("lathe").toggle()`; before it exists,
--- opens the chat).
function M.toggle()
  local lathe = require("lathe")
  if type(lathe.toggle) == "function" then
    lathe.toggle()
  else
    lathe.open()
  end
end

--- The default mappings (`:help lathe-default-mappings`): `{ modes, lhs,
--- rhs }`.
M.DEFAULTS = {
  { { "n", "x" }, "<leader>la", "<Plug>(lathe-ask)" },
  { "n", "<leader>lw", "<Plug>(lathe-grep-word)" },
  { "n", "<leader>lg", "<Plug>(lathe-grep)" },
  { "n", "<leader>lr", "<Plug>(lathe-read)" },
  { "n", "<leader>ls", "<Plug>(lathe-stop)" },
  { "n", "<leader>lt", "<Plug>(lathe-toggle)" },
  { "n", "<leader>lv", "<Plug>(lathe-review)" },
}

--- Sets `M.DEFAULTS`, leaving every key that is already mapped in that
--- mode as it is.
function M.default_mappings()
  for _, m in ipairs(M.DEFAULTS) do
    local modes = type(m[1]) == "table" and m[1] or { m[1] }
    for _, mode in ipairs(modes) do
      if vim.fn.maparg(m[2], mode) == "" then
        vim.keymap.set(mode, m[2], m[3], { remap = true, desc = "lathe: " .. m[3] })
      end
    end
  end
end

return M
