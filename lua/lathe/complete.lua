-- Completion of `@path` and `#` words (`:help lathe-context`): `omnifunc`
-- for the chat's prompt area (<C-x><C-o>) and `cmdline()` for `:Lathe`.
-- Files come from the project root: `git ls-files` (tracked and untracked,
-- .gitignore respected) in a git work tree, else a walk that skips hidden
-- folders.
local M = {}

--- The `#` words a prompt may use.
M.WORDS = { "#buffer", "#diagnostics", "#quickfix" }

--- Most candidates returned.
M.MAX_ITEMS = 200

--- Files walked at most outside git.
M.MAX_FILES = 20000

--- Folders the walk outside git never enters.
local SKIP = { node_modules = true, target = true }

--- The project root: lathe's (`setup{ cwd }`) when lathe is loaded, else
--- Neovim's current directory.
local function root()
  if package.loaded["lathe"] then
    local ok, info = pcall(package.loaded["lathe"].info)
    if ok and type(info) == "table" and info.cwd then
      return info.cwd
    end
  end
  return vim.fn.getcwd()
end

--- Files under `dir`, relative to it.
---@param dir string
---@return string[]
function M.files(dir)
  local ok, res = pcall(function()
    return vim
      .system({ "git", "ls-files", "--cached", "--others", "--exclude-standard" }, { cwd = dir, text = true })
      :wait(3000)
  end)
  if ok and res.code == 0 then
    local out = vim.split(res.stdout or "", "\n", { trimempty = true })
    if #out > 0 then
      return out
    end
  end
  local files = {}
  for name, kind in
    vim.fs.dir(dir, {
      depth = 20,
      skip = function(d)
        local base = vim.fs.basename(d)
        return not (base:sub(1, 1) == "." or SKIP[base])
      end,
    })
  do
    if kind == "file" and not vim.fs.basename(name):match("^%.") then
      table.insert(files, name)
      if #files >= M.MAX_FILES then
        break
      end
    end
  end
  table.sort(files)
  return files
end

--- Candidates for `base` (starting with `@` or `#`): the `#` words it
--- starts, or `@file` for the project's files that match the rest (prefix
--- matches first, then fuzzy ones).
---@param base string
---@return string[]
function M.candidates(base)
  local head, rest = base:sub(1, 1), base:sub(2)
  if head == "#" then
    return vim.tbl_filter(function(w)
      return vim.startswith(w, base)
    end, M.WORDS)
  end
  if head ~= "@" then
    return {}
  end
  local files = M.files(root())
  local out, seen = {}, {}
  for _, f in ipairs(files) do
    if vim.startswith(f, rest) then
      table.insert(out, "@" .. f)
      seen[f] = true
      if #out >= M.MAX_ITEMS then
        return out
      end
    end
  end
  if rest ~= "" then
    for _, f in ipairs(vim.fn.matchfuzzy(files, rest)) do
      if not seen[f] then
        table.insert(out, "@" .. f)
        if #out >= M.MAX_ITEMS then
          break
        end
      end
    end
  end
  return out
end

--- `:Lathe` completion of the argument being typed (`arglead`).
---@param arglead string
---@return string[]
function M.cmdline(arglead)
  return M.candidates(arglead)
end

--- The text before the cursor is a slash command's name being typed: `/`
--- and name characters from the start of the first line.
local function command_start()
  local row, col = unpack(vim.api.nvim_win_get_cursor(0))
  local before = vim.api.nvim_get_current_line():sub(1, col)
  return row == 1 and before:match("^/[%w_%.%-:]*$") ~= nil
end

--- Items of the slash commands starting with `base` (`/na`), their
--- arguments and description in the menu.
local function command_items(base)
  local items = {}
  for _, c in ipairs(require("lathe.commands").list()) do
    local w = "/" .. c.name
    if vim.startswith(w, base) then
      table.insert(items, {
        word = w,
        abbr = w .. (c.hint ~= "" and (" " .. c.hint) or ""),
        menu = c.description,
      })
    end
  end
  return items
end

--- 'omnifunc' (`:help complete-functions`) for `@path` and `#` words and,
--- at the start of the prompt, slash command names: the word before the
--- cursor must start with `@` or `#` at the start of the line or after
--- whitespace, or be `/name` at the start of the first line; otherwise
--- completion is cancelled quietly.
---@param findstart integer
---@param base string
---@return integer|table
function M.omnifunc(findstart, base)
  if findstart == 1 then
    if command_start() then
      return 0
    end
    local col = vim.api.nvim_win_get_cursor(0)[2]
    local before = vim.api.nvim_get_current_line():sub(1, col)
    local s = before:find("[@#][^%s]*$")
    if not s or (s > 1 and not before:sub(s - 1, s - 1):match("%s")) then
      return -3
    end
    return s - 1
  end
  if base:sub(1, 1) == "/" then
    return command_items(base)
  end
  local items = {}
  for _, c in ipairs(M.candidates(base)) do
    table.insert(items, { word = c, menu = c:sub(1, 1) == "#" and "[lathe context]" or "[lathe file]" })
  end
  return items
end

--- Opens the completion menu in `buf` (the prompt area) as `@`, `#` (at
--- the start of a word) or `/` (at the start of the prompt) is typed, with
--- no extra key; while the menu shows, `<Tab>` and `<S-Tab>` move in it
--- (as `<C-n>` and `<C-p>` do), else they type as before.
---@param buf integer
function M.attach(buf)
  pcall(function()
    vim.bo[buf].completeopt = "menuone,noselect"
  end)
  vim.api.nvim_create_autocmd("InsertCharPre", {
    buffer = buf,
    desc = "lathe: open the completion menu for @, # and /",
    callback = function()
      local c = vim.v.char
      if c ~= "@" and c ~= "#" and c ~= "/" then
        return
      end
      local row, col = unpack(vim.api.nvim_win_get_cursor(0))
      local before = vim.api.nvim_get_current_line():sub(1, col)
      if c == "/" then
        if row ~= 1 or before ~= "" then
          return
        end
      elseif before ~= "" and not before:sub(-1):match("%s") then
        return
      end
      vim.schedule(function()
        if
          vim.api.nvim_get_current_buf() == buf
          and vim.api.nvim_get_mode().mode:sub(1, 1) == "i"
          and vim.fn.pumvisible() == 0
        then
          vim.api.nvim_feedkeys(vim.keycode("<C-x><C-o>"), "n", false)
        end
      end)
    end,
  })
  local function pum(key, other)
    return function()
      return vim.fn.pumvisible() == 1 and vim.keycode(key) or vim.keycode(other)
    end
  end
  vim.keymap.set("i", "<Tab>", pum("<C-n>", "<Tab>"), {
    buffer = buf,
    expr = true,
    replace_keycodes = false,
    desc = "lathe: next completion item (a tab without the menu)",
  })
  vim.keymap.set("i", "<S-Tab>", pum("<C-p>", "<S-Tab>"), {
    buffer = buf,
    expr = true,
    replace_keycodes = false,
    desc = "lathe: previous completion item",
  })
end

return M
