-- `:Lathe jobs`: the background Bash commands in a list window with keys
-- to follow a job's output and stop it (`:help :Lathe-jobs`).
local M = {}

local api = vim.api

--- The list's first line: what its keys do.
M.HEADER = "lathe jobs · <CR>/o output · x/K stop · r refresh · q close"

--- How often an output buffer reads its file again, in ms.
local FOLLOW_MS = 500

local list_buf = nil

--- The line of job `j` in the list.
---@param j lathe.Job
---@return string
local function line_of(j)
  local state = j.state == "exited" and j.exit_code and ("exited " .. j.exit_code) or j.state
  return ("%s  %-10s %5ds  %s"):format(j.id, state, j.seconds, j.command:gsub("\n", " ⏎ "))
end

--- The job on the cursor's line of the list, if any.
---@return lathe.Job?
local function job_under_cursor()
  local id = api.nvim_get_current_line():match("^(bash_%d+)%s")
  if not id then
    return nil
  end
  for _, j in ipairs(require("lathe").jobs()) do
    if j.id == id then
      return j
    end
  end
end

--- Draws the list again in `buf`.
---@param buf integer
function M.refresh(buf)
  if not api.nvim_buf_is_valid(buf) then
    return
  end
  local lines = { M.HEADER }
  local jobs = require("lathe").jobs()
  for _, j in ipairs(jobs) do
    lines[#lines + 1] = line_of(j)
  end
  if #jobs == 0 then
    lines[#lines + 1] = "(no background jobs)"
  end
  vim.bo[buf].modifiable = true
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  local ns = api.nvim_create_namespace("lathe_jobs")
  api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  api.nvim_buf_set_extmark(buf, ns, 0, 0, { line_hl_group = "Comment" })
end

--- Opens job `j`'s output in a split: a read-only buffer that reads the
--- file again while it grows (the cursor on the last line follows it).
---@param j lathe.Job
function M.open_output(j)
  vim.cmd("botright split")
  local buf = api.nvim_create_buf(false, true)
  api.nvim_win_set_buf(0, buf)
  pcall(api.nvim_buf_set_name, buf, "lathe://jobs/" .. j.id)
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].modifiable = false
  local size = -1
  local timer = vim.uv.new_timer()
  local function read()
    if not api.nvim_buf_is_valid(buf) then
      timer:stop()
      timer:close()
      return
    end
    local st = vim.uv.fs_stat(j.output)
    if not st or st.size == size then
      return
    end
    size = st.size
    local lines = vim.fn.readfile(j.output)
    local wins = vim.fn.win_findbuf(buf)
    local follow = {}
    for _, w in ipairs(wins) do
      follow[w] = api.nvim_win_get_cursor(w)[1] >= api.nvim_buf_line_count(buf)
    end
    vim.bo[buf].modifiable = true
    api.nvim_buf_set_lines(buf, 0, -1, false, lines)
    vim.bo[buf].modifiable = false
    vim.bo[buf].modified = false
    for w, at_end in pairs(follow) do
      if at_end then
        api.nvim_win_set_cursor(w, { api.nvim_buf_line_count(buf), 0 })
      end
    end
  end
  read()
  api.nvim_win_set_cursor(0, { api.nvim_buf_line_count(buf), 0 })
  timer:start(FOLLOW_MS, FOLLOW_MS, vim.schedule_wrap(read))
  vim.keymap.set("n", "q", "<Cmd>close<CR>", { buffer = buf, nowait = true, silent = true })
end

--- Stops job `id` the way KillShell does (the same tool, through the
--- permission pipeline), then calls `done(result)`.
---@param id string
---@param done? fun(result: lathe.ToolResult)
function M.stop(id, done)
  require("lathe").tool("KillShell", { shell_id = id }, function(r)
    vim.notify("lathe: " .. id .. ": " .. (r.content:match("^[^\n]*") or ""), r.is_error and vim.log.levels.WARN or nil)
    if done then
      done(r)
    end
  end)
end

--- Opens the list (or goes to it when it is open).
function M.open()
  if list_buf and api.nvim_buf_is_valid(list_buf) then
    local win = vim.fn.bufwinid(list_buf)
    if win ~= -1 then
      api.nvim_set_current_win(win)
      M.refresh(list_buf)
      return
    end
  else
    list_buf = api.nvim_create_buf(false, true)
    pcall(api.nvim_buf_set_name, list_buf, "lathe://jobs")
    vim.bo[list_buf].bufhidden = "wipe"
    local buf = list_buf
    local opts = { buffer = buf, nowait = true, silent = true }
    local function output()
      local j = job_under_cursor()
      if j then
        M.open_output(j)
      end
    end
    local function stop()
      local j = job_under_cursor()
      if j then
        M.stop(j.id, function()
          M.refresh(buf)
        end)
      end
    end
    vim.keymap.set("n", "<CR>", output, opts)
    vim.keymap.set("n", "o", output, opts)
    vim.keymap.set("n", "x", stop, opts)
    vim.keymap.set("n", "K", stop, opts)
    vim.keymap.set("n", "r", function()
      M.refresh(buf)
    end, opts)
    vim.keymap.set("n", "q", "<Cmd>close<CR>", opts)
  end
  M.refresh(list_buf)
  local height = math.min(api.nvim_buf_line_count(list_buf), 10)
  vim.cmd(("botright %dsplit"):format(height))
  api.nvim_win_set_buf(0, list_buf)
  vim.wo.winfixheight = true
  vim.wo.cursorline = true
  if api.nvim_buf_line_count(list_buf) > 1 then
    api.nvim_win_set_cursor(0, { 2, 0 })
  end
end

return M
