-- The scenario folders of `tests/fixtures/<tool>/NNN_name/` (see
-- crates/lathe-core/tests/all/file_tool_scenarios.rs for the format), run through Neovim buffers:
-- the file the call names is loaded in a buffer before any call, so Read,
-- Edit and Write go through `NvimEditor`, and the result text, the bytes on
-- disk after the save and the buffer must match what the folder expects.
local T = require("lathe_test")
local S = {}

local FIXTURES =
  vim.fs.normalize(vim.fn.fnamemodify(debug.getinfo(1, "S").source:gsub("^@", ""), ":p:h") .. "/../../fixtures")

local function is_dir(p)
  return vim.fn.isdirectory(p) == 1
end

local function exists(p)
  return (vim.uv or vim.loop).fs_stat(p) ~= nil
end

--- Copies the regular files under `from` into `to` (folders created).
local function copy_tree(from, to)
  vim.fn.mkdir(to, "p")
  for name, kind in vim.fs.dir(from) do
    if kind == "directory" then
      copy_tree(from .. "/" .. name, to .. "/" .. name)
    elseif kind == "file" then
      T.write(to .. "/" .. name, T.bytes(from .. "/" .. name))
    else
      error(("%s/%s: only regular files are supported here"):format(from, name))
    end
  end
end

--- `{ [relative path] = bytes }` of the regular files under `dir`.
local function tree(dir)
  local out = {}
  if not is_dir(dir) then
    return out
  end
  for name, kind in vim.fs.dir(dir, { depth = 20 }) do
    if kind == "file" then
      out[name] = T.bytes(dir .. "/" .. name)
    end
  end
  return out
end

--- `v` with `{root}` replaced by `root` in every string.
local function subst(v, root)
  if type(v) == "string" then
    return (v:gsub("{root}", function()
      return root
    end))
  elseif type(v) == "table" then
    local t = {}
    for k, x in pairs(v) do
      t[k] = subst(x, root)
    end
    return t
  end
  return v
end

--- An expected-text file: one trailing newline dropped, `{root}` replaced.
local function expected(path, root)
  return subst((T.bytes(path):gsub("\n$", "")), root)
end

--- What a user sees of buffer `buf`: its lines and how it will be written.
function S.view(buf)
  return {
    lines = T.lines(buf),
    fileformat = vim.bo[buf].fileformat,
    bomb = vim.bo[buf].bomb,
    fileencoding = vim.bo[buf].fileencoding,
    eol = vim.bo[buf].eol,
  }
end

--- The view of file `path` as Neovim loads it (in a buffer wiped at once).
function S.view_of_file(path)
  local b = vim.fn.bufadd(path)
  vim.fn.bufload(b)
  local v = S.view(b)
  vim.cmd("bwipeout! " .. b)
  return v
end

--- Runs case `tool/name`; returns a list of problems (empty when it passed).
function S.run(tool, name)
  local case = FIXTURES .. "/" .. tool .. "/" .. name
  local spec = vim.json.decode(T.bytes(case .. "/call.json"))
  local problems = {}
  local function check(what, got, want)
    if not vim.deep_equal(got, want) then
      table.insert(problems, ("%s: got %s, want %s"):format(what, vim.inspect(got), vim.inspect(want)))
    end
  end
  local root = T.project()
  if is_dir(case .. "/before") then
    copy_tree(case .. "/before", root)
  end
  T.setup(root, { permissions = { mode = "acceptEdits" } })
  local input = subst(spec.input, root)
  local target = input.file_path:sub(1, 1) == "/" and input.file_path or (root .. "/" .. input.file_path)
  if not exists(target) then
    return { "the case's file must exist (this harness loads it in a buffer first): " .. target }
  end
  local buf = T.open(target)
  for i, c in ipairs(spec.setup or {}) do
    local r = T.tool(c.tool, subst(c.input, root))
    if r.is_error then
      table.insert(problems, ("setup[%d] %s failed: %s"):format(i, c.tool, r.content))
    end
  end
  local tree_before, view_before = tree(root), S.view(buf)
  local r = T.tool(spec.tool, input)

  if exists(case .. "/error.txt") then
    check("is_error", r.is_error, true)
    check("error text", r.content, expected(case .. "/error.txt", root))
    check("files after the failed call", tree(root), tree_before)
    check("buffer after the failed call", S.view(buf), view_before)
    check("buffer modified", vim.bo[buf].modified, false)
    return problems
  end
  check("is_error", r.is_error, false)
  if r.is_error then
    table.insert(problems, "error: " .. r.content)
  end
  if exists(case .. "/output.txt") then
    check("result text", r.content, expected(case .. "/output.txt", root))
  end
  if is_dir(case .. "/after") then
    local want = tree(case .. "/after")
    check("bytes on disk", tree(root), want)
    -- The buffer shows what Neovim shows when it loads the expected file.
    local rel = target:sub(#root + 2)
    local copy = T.project() .. "/" .. vim.fs.basename(target)
    T.write(copy, want[rel] or "")
    check("buffer", S.view(buf), S.view_of_file(copy))
  else
    check("files", tree(root), tree_before)
    check("buffer", S.view(buf), view_before)
  end
  check("buffer modified after the save", vim.bo[buf].modified, false)
  return problems
end

--- Runs every case in `names` (under `tool`); raises listing all problems.
function S.run_all(tool, names)
  local all = {}
  for _, name in ipairs(names) do
    local ok, problems = pcall(S.run, tool, name)
    if not ok then
      problems = { tostring(problems) }
    end
    for _, p in ipairs(problems) do
      table.insert(all, ("%s/%s: %s"):format(tool, name, p))
    end
  end
  if #all > 0 then
    error(table.concat(all, "\n"), 0)
  end
end

return S
