-- `require("lathe")` + `setup()` inside the real Neovim binary (
-- `make bench` part d): prints the time of each step (ms) and the growth of
-- the process's resident memory (VmRSS) across both, then quits. LATHE_LIB
-- is the library to load; LATHE_BENCH_WORK the setup's cwd.
local function rss_kb()
  for line in io.lines("/proc/self/status") do
    local kb = line:match("^VmRSS:%s+(%d+)")
    if kb then
      return tonumber(kb)
    end
  end
  return 0
end
local function threads()
  local n = 0
  for _ in vim.fs.dir("/proc/self/task") do
    n = n + 1
  end
  return n
end
local hr = vim.uv.hrtime
local th0 = threads()
local r0, t0 = rss_kb(), hr()
package.loadlib(os.getenv("LATHE_LIB"), "luaopen_lathe")()
local lathe = require("lathe")
local t1 = hr()
lathe.setup({ cwd = os.getenv("LATHE_BENCH_WORK"), claude_settings = false })
local t2 = hr()
local r2 = rss_kb()
io.stdout:write(
  ("require %.2f ms, setup %.2f ms, together %.2f ms, RSS +%.1f MB, threads +%d, runtime started: %s, sessions made: %d\n"):format(
    (t1 - t0) / 1e6,
    (t2 - t1) / 1e6,
    (t2 - t0) / 1e6,
    (r2 - r0) / 1024,
    threads() - th0,
    require("lathe.core").main_thread_stats().runtime_started and "yes" or "no",
    require("lathe.core").main_thread_stats().sessions_made
  )
)
vim.cmd("qa!")
