-- What `linker/update-startup.sh` runs under valgrind: lathe's load path as
-- users' configs run it — `require("lathe")`, `setup()` with the usual
-- options (each kind of value: strings, numbers, booleans, lists, tables)
-- and with none (Claude Code's settings files read), the statusline
-- component — then quits. LATHE_LIB is the release library.
package.loadlib(os.getenv("LATHE_LIB"), "luaopen_lathe")()
local lathe = require("lathe")
lathe.setup({
  cwd = vim.fn.getcwd(),
  model = "claude-sonnet-4-5",
  base_url = "http://127.0.0.1:9",
  api_key_env = "ANTHROPIC_API_KEY",
  max_turns = 40,
  max_tokens = 8192,
  claude_settings = false,
  save_after_edit = true,
  streaming_tools = true,
  permission_guard_ms = 300,
  bash = { timeout_ms = 120000 },
  permissions = { mode = "default", allow = { "Read", "Bash(git status)" }, deny = { "Read(./.env)" } },
})
lathe.setup({})
lathe.statusline_component()
vim.cmd("qa!")
