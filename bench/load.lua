-- `require("lathe")` + `setup()` inside the real Neovim binary (issue 12,
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
local hr = vim.uv.hrtime
local r0, t0 = rss_kb(), hr()
package.loadlib(os.getenv("LATHE_LIB"), "luaopen_lathe")()
local lathe = require("lathe")
local t1 = hr()
lathe.setup({ cwd = os.getenv("LATHE_BENCH_WORK"), claude_settings = false })
local t2 = hr()
io.stdout:write(
  ("require %.2f ms, setup %.2f ms, together %.2f ms, RSS +%.1f MB\n"):format(
    (t1 - t0) / 1e6,
    (t2 - t1) / 1e6,
    (t2 - t0) / 1e6,
    (rss_kb() - r0) / 1024
  )
)
vim.cmd("qa!")
