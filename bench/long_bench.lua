-- A working day in one conversation (`make bench` part h,
-- `LATHE_BENCH_ONLY=long`). Run by bench/run.sh like nvim_bench.lua (as a
-- coroutine in Neovim's own main loop, headless) with LATHE_LIB,
-- LATHE_BENCH_WORK (its `long/` folder: the project, 1 KB files
-- src/fNNNNN.txt), LATHE_BENCH_BASE_URL (mock-llm serving
-- long/script.json: LATHE_BENCH_LONG_ASKS asks of 20 Read calls each, a
-- short answer after each ask, then one more short answer) and
-- LATHE_BENCH_ROOT. Prints; asserts nothing.
--
-- Rows:
--   1. the live session: RSS before and after its 1,000 calls; the
--      longest main-loop stall at a turn's end (1 ms timer lateness from
--      the turn's end until the chat's highlighting is done)
--   2. `:Lathe new` afterwards: RSS (the old chat wiped)
--   3. `:Lathe resume` of a 1,000-call session file: longest main-thread
--      block while it reads and draws, vs one frame (16 ms)
--   4. one short turn at the end of a ~3 MB chat (a resumed 300 x 10 KB
--      session): the longest stall, vs what the chat did before the long-session rework at
--      every turn's end, `vim.treesitter.start` on the same text
--   5. Neovim's CPU per request (all its threads: the core, the front end
--      and the chat), the median of the last 50 requests over that of the
--      first 50 of the live session — the figure measured before the long-session rework (8 ms
--      at the start, 42-48 ms at 1,000 calls)

local uv = vim.uv
local function env(name)
  local v = os.getenv(name)
  if not v or v == "" then
    error(name .. " is not set (run make bench)")
  end
  return v
end
local work, base_url, root = env("LATHE_BENCH_WORK"), env("LATHE_BENCH_BASE_URL"), env("LATHE_BENCH_ROOT")
local asks = tonumber(os.getenv("LATHE_BENCH_LONG_ASKS") or "50")
local project = work .. "/long"

vim.fn.luaeval("package.loadlib(_A, \"luaopen_lathe\")()", env("LATHE_LIB"))
local lathe = require("lathe")
local core = require("lathe.core")
local write_session = dofile(root .. "/bench/long_session.lua")

local function out(s)
  io.stdout:write(s .. "\n")
  io.stdout:flush()
end

--- Yields to Neovim's own loop until `cond()` (polled every `every_ms`,
--- default 1).
local function wait(cond, timeout_ms, every_ms)
  if cond() then
    return
  end
  local co = coroutine.running()
  local deadline = uv.hrtime() + (timeout_ms or 600000) * 1e6
  local timer, resumed = uv.new_timer(), false
  timer:start(every_ms or 1, every_ms or 1, function()
    vim.schedule(function()
      if resumed or not (cond() or uv.hrtime() > deadline) then
        return
      end
      resumed = true
      timer:stop()
      timer:close()
      local ok, err = coroutine.resume(co)
      if not ok then
        io.stderr:write("long_bench.lua: " .. tostring(err) .. "\n")
        vim.cmd("cquit 1")
      end
    end)
  end)
  coroutine.yield()
end

--- Max lateness (ms) of a 1 ms timer, handled through vim.schedule (where
--- keys are handled too), while `start(done)` runs until `done()`.
local function lateness(start)
  local max, n = 0, 0
  local timer = uv.new_timer()
  local expected = uv.hrtime() + 1e6
  local ticking = true
  timer:start(1, 1, function()
    local due = expected
    expected = uv.hrtime() + 1e6
    vim.schedule(function()
      if ticking then
        n = n + 1
        max = math.max(max, (uv.hrtime() - due) / 1e6)
      end
    end)
  end)
  local finished = false
  local t0 = uv.hrtime()
  local wall
  vim.schedule(function()
    start(function()
      wall = (uv.hrtime() - t0) / 1e6
      finished = true
    end)
  end)
  wait(function()
    return finished
  end)
  ticking = false
  timer:stop()
  timer:close()
  return { max = max, wall = wall, ticks = n }
end

local function rss_mb()
  for l in io.lines("/proc/self/status") do
    local kb = l:match("^VmRSS:%s+(%d+)")
    if kb then
      return tonumber(kb) / 1024
    end
  end
  return 0
end

--- Gives back what can be given back before RSS is read: Lua's garbage
--- and glibc's free memory.
local function trimmed_rss()
  collectgarbage("collect")
  collectgarbage("collect")
  pcall(function()
    local ffi = require("ffi")
    pcall(ffi.cdef, "int malloc_trim(size_t pad);")
    ffi.C.malloc_trim(0)
  end)
  return rss_mb()
end

local hl = function()
  return package.loaded["lathe.chat_highlight"]
end
local function highlighted()
  return not hl() or hl().queued == 0
end

--- Polls `check` every 5 ms on the main loop; `done()` once it is true.
local function poll_until(check, done)
  local poll, over = uv.new_timer(), false
  poll:start(5, 5, function()
    vim.schedule(function()
      if not over and check() then
        over = true
        poll:stop()
        poll:close()
        done()
      end
    end)
  end)
end

local function chat_bytes()
  local b = vim.fn.bufnr("lathe://chat")
  if b < 0 then
    return 0
  end
  return vim.api.nvim_buf_get_offset(b, vim.api.nvim_buf_line_count(b))
end

vim.cmd.cd(vim.fn.fnameescape(project))
lathe.setup({
  cwd = project,
  base_url = base_url,
  claude_settings = false,
  permission_guard_ms = 0,
  permissions = { mode = "bypassPermissions" },
  diagnostics_wait_ms = 0,
})

out(("== a working day in one conversation: %d asks of 20 Read calls of 1 KB files"):format(asks))
local rss0 = trimmed_rss()

-- 1. The live session.
local worst_end, worst_at = 0, 0
--- Neovim's CPU time so far (ms; user + system, every thread).
local function cpu_ms()
  local u = uv.getrusage()
  return (u.utime.sec + u.stime.sec) * 1e3 + (u.utime.usec + u.stime.usec) / 1e3
end
-- CPU at each ask's start and end (after its turn is highlighted), and
-- the main thread's share of it (lathe's steps there and everything else
-- Neovim does).
local cpu_asks, main_asks = {}, {}
local thread_ms = function()
  return 0
end
pcall(function()
  local ffi = require("ffi")
  pcall(ffi.cdef, "struct lathe_ts { long sec; long nsec; }; int clock_gettime(int clk, struct lathe_ts *ts);")
  local ts = ffi.new("struct lathe_ts")
  thread_ms = function()
    ffi.C.clock_gettime(3, ts) -- CLOCK_THREAD_CPUTIME_ID
    return tonumber(ts.sec) * 1e3 + tonumber(ts.nsec) / 1e6
  end
end)
-- Turns ended (the wait below counts them: reading the transcript into
-- Lua at every ask would leave megabytes of garbage for the next ask's
-- requests to collect, and count it as theirs).
local turns_done = 0
vim.api.nvim_create_autocmd("User", {
  pattern = "LatheTurnDone",
  callback = function()
    turns_done = turns_done + 1
  end,
})
local rss_ask1
for a = 1, asks do
  local ended = turns_done
  local cpu0, main0 = cpu_ms(), thread_ms()
  lathe.ask(("read the files of ask %d"):format(a))
  -- Polled every 20 ms: the poll's own CPU is counted as the ask's.
  wait(function()
    return turns_done > ended and lathe.status().state == "idle" and core.settled()
  end, nil, 20)
  -- The turn's end: from here until the chat's highlighting is done.
  local t = lateness(function(done)
    vim.cmd("redraw")
    poll_until(function()
      return highlighted() and core.settled()
    end, done)
  end)
  if t.max > worst_end then
    worst_end, worst_at = t.max, a
  end
  cpu_asks[a] = cpu_ms() - cpu0
  main_asks[a] = thread_ms() - main0
  if a == 1 then
    -- After the first ask: the runtime, the HTTP client, the tools and the
    -- chat exist; what follows is what the conversation's length adds.
    rss_ask1 = trimmed_rss()
  end
end
local rss1 = trimmed_rss()
out(
  ("live session: RSS %.0f MB after setup, %.0f MB after ask 1, %.0f MB after %d calls: %+.0f MB since setup, %+.0f MB since ask 1 (target: at most +60 MB; before the long-session rework: 41 -> 206-216 MB); chat %.2f MB"):format(
    rss0,
    rss_ask1 or rss0,
    rss1,
    asks * 20,
    rss1 - rss0,
    rss1 - (rss_ask1 or rss0),
    chat_bytes() / 1e6
  )
)
out(
  ("longest stall at a turn's end (1 ms timer, until the turn is highlighted): %.1f ms (after ask %d) | one frame 16 ms | ratio %.2fx"):format(
    worst_end,
    worst_at,
    worst_end / 16
  )
)
-- 5. CPU per request: an ask's CPU (its 21 requests, its 20 Reads, the
-- chat and the turn's end) over its requests; the median of asks 2-6 (the
-- first opens the chat) next to that of the last five.
local function median(list)
  table.sort(list)
  return list[math.floor(#list / 2) + 1] or 0
end
if asks >= 12 then
  local first = median(vim.list_slice(cpu_asks, 2, 6)) / 21
  local last = median(vim.list_slice(cpu_asks, asks - 4, asks)) / 21
  local main_first = median(vim.list_slice(main_asks, 2, 6)) / 21
  local main_last = median(vim.list_slice(main_asks, asks - 4, asks)) / 21
  out(
    ("  of which Neovim's main thread: %.2f ms at the start, %.2f ms at the end; the core's threads: %.2f ms, %.2f ms"):format(
      main_first,
      main_last,
      first - main_first,
      last - main_last
    )
  )
  out(
    ("Neovim CPU per request (all threads, an ask's CPU / its 21 requests), asks 2-6: %.2f ms; asks %d-%d: %.2f ms (%s) | last / first: %.2fx (target <= 2x; before the long-session rework: 8 -> 42-48 ms)"):format(
      first,
      asks - 4,
      asks,
      last,
      (lathe.status().context or {}).label or "?",
      last / math.max(first, 0.001)
    )
  )
end

-- 2. :Lathe new (lathe.new(), what the command calls); the old chat is
-- wiped in steps (chat::wipe), settled() once it is gone.
core.main_thread_stats(true)
local renew = lateness(function(done)
  lathe.new()
  poll_until(core.settled, done)
end)
local wiped = core.main_thread_stats().chat_wipe
local rss2 = trimmed_rss()
out(
  ("after :Lathe new: longest block %.1f ms (1 ms timer; the old chat wiped in %d steps of at most %.1f ms) | RSS %.0f MB (%+.0f MB vs before the session, %+.0f MB vs its end; the old chat buffer %s)"):format(
    renew.max,
    wiped.count,
    wiped.longest_ms,
    rss2,
    rss2 - rss0,
    rss2 - rss1,
    #vim.tbl_filter(function(b)
            return vim.api.nvim_buf_get_name(b):find("lathe://chat (old", 1, true) ~= nil
          end, vim.api.nvim_list_bufs())
          == 0
        and "wiped"
      or "still there"
  )
)

-- 3. :Lathe resume of a 1,000-call session file.
local function resume_row(name, opts)
  local path = work .. "/long/" .. name .. ".jsonl"
  write_session(path, vim.tbl_extend("force", { cwd = project }, opts))
  local size = vim.fn.getfsize(path)
  core.main_thread_stats(true)
  local r = lateness(function(done)
    lathe.resume(path)
    poll_until(function()
      return core.settled() and highlighted()
    end, done)
  end)
  local st = core.main_thread_stats()
  out(
    ("resume %-28s longest block %6.1f ms (1 ms timer), longest chat step %5.1f ms in %d steps, all drawn in %.0f ms | one frame 16 ms | ratio %.2fx (before the long-session rework: 226-430 ms in one block)"):format(
      ("%d calls (%.1f MB file, %.1f MB chat)"):format(opts.asks * opts.per_ask, size / 1e6, chat_bytes() / 1e6),
      r.max,
      st.chat_frame.longest_ms,
      st.chat_frame.count,
      r.wall,
      r.max / 16
    )
  )
  -- lathe's own main-thread pieces of it (main_thread_stats): the resume
  -- made current, each step wiping the old chat, each bridge wake-up.
  out(
    ("  its main-thread pieces: session made current + chat reset %.1f ms, old chat wiped in %d steps of at most %.1f ms, longest bridge wake-up %.1f ms"):format(
      st.resume.longest_ms,
      st.chat_wipe.count,
      st.chat_wipe.longest_ms,
      st.bridge.longest_ms
    )
  )
end
resume_row("day-1k", { asks = 50, per_ask = 20, size = 1000 })

-- 4. A short turn at the end of a ~3 MB chat.
resume_row("day-3mb", { asks = 15, per_ask = 20, size = 10000 })
local turn = lateness(function(done)
  local n = #lathe.transcript()
  lathe.ask("one more thing")
  poll_until(function()
    return lathe.status().state == "idle" and core.settled() and #lathe.transcript() > n and highlighted()
  end, done)
end)
-- The reference: what the chat did at every turn's end before the long-session rework,
-- vim.treesitter.start on the whole chat, here on a copy of its text.
local chat = vim.fn.bufnr("lathe://chat")
local lines = vim.api.nvim_buf_get_lines(chat, 0, -1, false)
local ref = lateness(function(done)
  local b = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(b, 0, -1, false, lines)
  vim.bo[b].filetype = "markdown"
  vim.treesitter.start(b, "markdown")
  local t0 = uv.hrtime()
  poll_until(function()
    local parser = vim.treesitter.get_parser(b, "markdown", { error = false })
    -- The highlighter parses when the buffer is drawn; headless, ask for
    -- the parse as its redraw would (async, in steps).
    if parser and not parser:is_valid(true) then
      parser:parse(true, function() end)
    end
    return (parser and parser:is_valid(true)) or uv.hrtime() - t0 > 10e9
  end, function()
    vim.api.nvim_buf_delete(b, { force = true })
    done()
  end)
end)
out(
  ("one short turn in a %.1f MB chat: longest stall %.1f ms (turn %.0f ms) | vim.treesitter.start on the same text (each turn's end before the long-session rework): longest stall %.1f ms (%.0f ms) | ratio %.2fx"):format(
    chat_bytes() / 1e6,
    turn.max,
    turn.wall,
    ref.max,
    ref.wall,
    turn.max / math.max(ref.max, 0.001)
  )
)
vim.cmd("qa!")
