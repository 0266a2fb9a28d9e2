-- Helpers for the tests inside Neovim that drive lathe through its Lua API
-- (`require("lathe")`), like a user's script would. Assertions raise Lua
-- errors whose text says what was checked, what came and what was wanted.
local T = {}

local uv = vim.uv or vim.loop
local lathe = require("lathe")
T.lathe = lathe

--- Milliseconds a single tool call may take before the test fails.
T.TOOL_TIMEOUT_MS = 10000

local counter = 0

--- A fresh, empty project directory (absolute path, no trailing slash).
function T.project()
  counter = counter + 1
  local dir = ("%s/lathe-nvim-%d-%d-%d"):format(
    vim.fn.resolve(vim.fn.fnamemodify(vim.fn.tempname(), ":h")),
    uv.os_getpid(),
    counter,
    uv.hrtime() % 1000000
  )
  vim.fn.mkdir(dir, "p")
  return dir
end

--- Writes `bytes` (exactly) to `path`.
function T.write(path, bytes)
  local f = assert(io.open(path, "wb"))
  f:write(bytes)
  f:close()
end

--- The bytes of `path`.
function T.bytes(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

--- Raises "`what`: got X, want Y" unless `got == want` (deep for tables).
function T.eq(what, got, want)
  if not vim.deep_equal(got, want) then
    error(("%s:\n  got  %s\n  want %s"):format(what, vim.inspect(got), vim.inspect(want)), 2)
  end
end

--- Raises unless string `s` contains `sub` (plain).
function T.has(what, s, sub)
  if type(s) ~= "string" or not s:find(sub, 1, true) then
    error(("%s: %s does not contain %s"):format(what, vim.inspect(s), vim.inspect(sub)), 2)
  end
end

--- Raises if string `s` contains `sub` (plain).
function T.lacks(what, s, sub)
  if type(s) == "string" and s:find(sub, 1, true) then
    error(("%s: %s should not contain %s"):format(what, vim.inspect(s), vim.inspect(sub)), 2)
  end
end

--- `lathe.setup` with the project root `cwd`; `extra` is merged in. The
--- tests answer floats the moment they open (with feedkeys "x"), so the
--- float's guard time is 0 unless `extra` sets it, and no Claude Code
--- settings file of the machine takes part.
function T.setup(cwd, extra)
  lathe.setup(vim.tbl_deep_extend("force", {
    cwd = cwd,
    permission_guard_ms = 0,
    claude_settings = false,
  }, extra or {}))
end

--- Runs tool `name` with `input` through `lathe.tool` (interactive: a
--- permission float may open and be answered, see `T.answer_floats`) and
--- waits for the result.
function T.tool(name, input)
  local result
  lathe.tool(name, input, function(r)
    result = r
  end)
  if not vim.wait(T.TOOL_TIMEOUT_MS, function()
    return result ~= nil
  end, 5) then
    error(("%s timed out after %d ms"):format(name, T.TOOL_TIMEOUT_MS), 2)
  end
  return result
end

--- Like `T.tool`, but raises when the result is an error.
function T.ok(name, input)
  local r = T.tool(name, input)
  if r.is_error then
    error(("%s %s failed: %s"):format(name, vim.inspect(input), r.content), 2)
  end
  return r
end

--- `:edit path`; returns the buffer number.
function T.open(path)
  vim.cmd.edit(vim.fn.fnameescape(path))
  return vim.api.nvim_get_current_buf()
end

--- All lines of `buf`.
function T.lines(buf)
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

--- Types `keys` (with <> notation) in Normal mode as if from the keyboard
--- (mappings apply), and executes them now.
function T.type(keys)
  vim.api.nvim_feedkeys(vim.keycode(keys), "tx", false)
end

--- Answers permission floats in order with `keys` (e.g. {"y", "n"}); one
--- entry per expected ask. Returns a table whose `asks` lists, per ask, the
--- float's title, footer and lines. An ask beyond `keys` is answered `n`
--- and recorded too (so a test sees it).
function T.answer_floats(keys)
  local rec = { asks = {} }
  local function text(t)
    if type(t) == "table" then
      local s = ""
      for _, c in ipairs(t) do
        s = s .. c[1]
      end
      return s
    end
    return t or ""
  end
  vim.api.nvim_create_autocmd("User", {
    pattern = "LathePermissionAsk",
    callback = function()
      local win = vim.api.nvim_get_current_win()
      local cfg = vim.api.nvim_win_get_config(win)
      table.insert(rec.asks, {
        title = text(cfg.title),
        footer = text(cfg.footer),
        lines = vim.api.nvim_buf_get_lines(0, 0, -1, false),
      })
      local key = keys[#rec.asks] or "n"
      -- Typed input is not processed while vim.wait pumps the loop
      -- (:help lathe-float); feedkeys "x" executes the key now.
      vim.api.nvim_feedkeys(key, "x", false)
    end,
  })
  return rec
end

--- Number of floating windows open.
function T.floats()
  local n = 0
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(w).relative ~= "" then
      n = n + 1
    end
  end
  return n
end

--- The `lathe://chat` buffer (nil before the first ask).
function T.chat_buf()
  local b = vim.fn.bufnr("lathe://chat")
  if b > 0 then
    return b
  end
end

--- The chat's text, lines joined with "\n".
function T.chat_text()
  local b = T.chat_buf()
  return b and table.concat(T.lines(b), "\n") or ""
end

--- The highlight groups lathe put (`lathe.chat_highlight`) over the first
--- chat line holding `needle` (plain), where `needle` starts on it.
function T.chat_hl(needle)
  local b = T.chat_buf()
  local ns = vim.api.nvim_get_namespaces()["lathe_chat_hl"]
  if not b or not ns then
    return {}
  end
  for i, l in ipairs(T.lines(b)) do
    local col = l:find(needle, 1, true)
    if col then
      local out = {}
      local marks = vim.api.nvim_buf_get_extmarks(
        b,
        ns,
        { i - 1, 0 },
        { i - 1, -1 },
        { details = true, overlap = true }
      )
      for _, m in ipairs(marks) do
        local d = m[4]
        local starts = m[2] < i - 1 or m[3] <= col - 1
        local ends = (d.end_row or m[2]) > i - 1 or (d.end_col or 0) >= col
        if starts and ends then
          table.insert(out, d.hl_group)
        end
      end
      table.sort(out)
      return out
    end
  end
  error("no chat line holds " .. needle)
end

--- Whether one of `groups` starts with `prefix`.
function T.any_starts(groups, prefix)
  for _, g in ipairs(groups) do
    if vim.startswith(g, prefix) then
      return true
    end
  end
  return false
end

--- Virtual texts and lines shown in the chat buffer (e.g. the "working"
--- line), a virtual line's chunks joined.
function T.chat_virt_texts()
  local b = T.chat_buf()
  local out = {}
  if not b then
    return out
  end
  local ns = vim.api.nvim_get_namespaces()["lathe_chat"]
  if not ns then
    return out
  end
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(b, ns, 0, -1, { details = true })) do
    for _, chunk in ipairs(m[4].virt_text or {}) do
      table.insert(out, chunk[1])
    end
    for _, line in ipairs(m[4].virt_lines or {}) do
      local text = {}
      for _, chunk in ipairs(line) do
        table.insert(text, chunk[1])
      end
      table.insert(out, table.concat(text))
    end
  end
  return out
end

--- The texts of the chat's inline virtual texts (none: every note under
--- the chat is a line of its own).
---@return string[]
function T.chat_inline_texts()
  local b = T.chat_buf()
  local out = {}
  local ns = b and vim.api.nvim_get_namespaces()["lathe_chat"]
  if not ns then
    return out
  end
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(b, ns, 0, -1, { details = true })) do
    if m[4].virt_text_pos == "inline" then
      for _, chunk in ipairs(m[4].virt_text or {}) do
        table.insert(out, chunk[1])
      end
    end
  end
  return out
end

--- Pumps the loop until `cond()` is true; raises after `ms` naming `what`.
function T.wait_for(what, ms, cond)
  if not vim.wait(ms, cond, 10) then
    error(("timed out after %d ms waiting for %s"):format(ms, what), 2)
  end
end

return T
