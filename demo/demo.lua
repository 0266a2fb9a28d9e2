-- Drives one `:Lathe` request in headless Neovim for `make demo`.
-- Inputs come from the environment (see demo/run.sh). Exits Neovim with 0
-- when the turn ended "done", else 1.
local cwd = assert(os.getenv("LATHE_DEMO_CWD"), "LATHE_DEMO_CWD not set")
local base_url = os.getenv("LATHE_DEMO_BASE_URL") or ""
local prompt = os.getenv("LATHE_DEMO_PROMPT") or "fix the typo in the greeting"
local provider = os.getenv("LATHE_DEMO_PROVIDER") or "anthropic"
local model = os.getenv("LATHE_DEMO_MODEL") or ""

local function out(s)
  io.stdout:write(s, "\n")
end

local function finish(code)
  io.stdout:flush()
  vim.cmd((code == 0) and "qall!" or "cquit " .. code)
end

local ok, err = pcall(function()
  vim.cmd.cd(vim.fn.fnameescape(cwd))
  -- The file is open in a buffer, so the edit goes through the buffer.
  vim.cmd.edit(vim.fn.fnameescape(cwd .. "/greeting.py"))
  local source_buf = vim.api.nvim_get_current_buf()

  -- `-u NONE` loads no plugins; source lathe's like a plugin manager would.
  vim.cmd.runtime("plugin/lathe.lua")
  local lathe = require("lathe")
  lathe.setup({
    cwd = cwd,
    provider = provider,
    model = (model ~= "" and model or nil),
    base_url = (base_url ~= "" and base_url or nil),
  })

  -- Answer the permission float like a user would: it fires this event when
  -- it takes the cursor (after it has been on screen for the guard time, so
  -- a keystroke meant for something else never lands in it); show it, pause
  -- a moment as a reader would, then press `y`.
  vim.api.nvim_create_autocmd("User", {
    pattern = "LathePermissionAsk",
    callback = function()
      vim.defer_fn(function()
        for _, win in ipairs(vim.api.nvim_list_wins()) do
          if vim.api.nvim_win_get_config(win).relative ~= "" then
            local buf = vim.api.nvim_win_get_buf(win)
            out("== permission float")
            for _, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
              out("   | " .. line)
            end
            vim.api.nvim_set_current_win(win)
          end
        end
        out("== pressing y")
        vim.api.nvim_feedkeys("y", "x", false)
      end, 600)
    end,
  })

  vim.cmd("Lathe " .. prompt)
  local status = lathe.wait(180000)

  out("== chat (lathe://chat)")
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(buf):match("lathe://chat") then
      for _, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
        out("   " .. line)
      end
    end
  end
  out(("== buffer greeting.py: modified=%s, line 8: %s"):format(
    tostring(vim.bo[source_buf].modified),
    vim.api.nvim_buf_get_lines(source_buf, 7, 8, false)[1] or ""
  ))
  out("== turn ended: " .. tostring(status))
  finish(status == "done" and 0 or 1)
end)
if not ok then
  out("demo failed: " .. tostring(err))
  finish(1)
end
