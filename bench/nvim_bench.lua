-- Main-loop lateness and Edit latency inside the real Neovim binary
-- (`make bench` parts b and c). Run by bench/run.sh:
--
--   nvim --headless -u NONE -i NONE -n --cmd "set rtp^=ROOT" -c "lua ..."
--
-- where the `lua ...` runs this file as a coroutine once Neovim's main loop
-- runs (see `wait` below; not `-l`, which runs a script before that loop).
-- with LATHE_LIB (the release library), LATHE_BENCH_TREE (bench/tree.sh),
-- LATHE_BENCH_RG (rg), LATHE_BENCH_BASE_URL (mock-llm serving the 200 KB
-- answer in 8-character deltas), LATHE_BENCH_WORK (a scratch directory).
--
-- A 1 ms vim.uv timer records how late each tick is handled by the main
-- loop (ms, through vim.schedule) while lathe does
-- a piece of work, then while the usual Lua way does the same work; prints
-- p50/p99/max of both and the ratio of the maxima. Timings are printed,
-- never asserted.
--
-- With LATHE_BENCH_UI=1 (bench/ui_bench.sh: the same binary with its TUI in
-- tmux, a file open, LATHE_BENCH_OUT naming where to write, LATHE_BENCH_PID
-- where to write this Neovim's process id) it runs only
-- the idle and streaming rows, with the chat split next to the file as a
-- user has it and the Lua way's buffer shown in the chat's window; then
-- quits. Neovim then redraws the screen after every frame, which the
-- headless run never does.

local uv = vim.uv
local env = function(name)
  local v = os.getenv(name)
  if not v or v == "" then
    error(name .. " is not set (run make bench)")
  end
  return v
end
local tree, rg, work = env("LATHE_BENCH_TREE"), env("LATHE_BENCH_RG"), env("LATHE_BENCH_WORK")
local base_url = env("LATHE_BENCH_BASE_URL")
local ui = os.getenv("LATHE_BENCH_UI") == "1"
local out_file = ui and assert(io.open(env("LATHE_BENCH_OUT"), "a")) or io.stdout
if ui then
  -- bench/ui_bench.sh ends this process when it must (the TUI runs this
  -- Neovim as a detached child, out of the pane's process group).
  local f = assert(io.open(env("LATHE_BENCH_PID"), "w"))
  f:write(vim.fn.getpid())
  f:close()
end

-- Opened on the main thread (this file runs as a coroutine; the library
-- keeps the thread it is opened on, see lua/lathe/init.lua).
vim.fn.luaeval("package.loadlib(_A, \"luaopen_lathe\")()", env("LATHE_LIB"))
local lathe = require("lathe")

--- Waits until `cond()` is true (at most `timeout_ms`, default 10 min) by
--- yielding this coroutine to Neovim's own main loop, which resumes it from
--- a 1 ms poll: the editor idles as a user's does. `vim.wait` would drain
--- Neovim's event queue back to back instead, so work Neovim splits into
--- chained `vim.schedule` steps (tree-sitter's async parse after a turn)
--- would show as one stall that the real loop splits with timers and keys.
local function wait(cond, timeout_ms)
  if cond() then
    return
  end
  local co = coroutine.running()
  assert(co, "nvim_bench.lua runs as a coroutine (see bench/run.sh)")
  local deadline = uv.hrtime() + (timeout_ms or 600000) * 1e6
  local timer, resumed = uv.new_timer(), false
  timer:start(1, 1, function()
    vim.schedule(function()
      if resumed or not (cond() or uv.hrtime() > deadline) then
        return
      end
      resumed = true
      timer:stop()
      timer:close()
      local ok, err = coroutine.resume(co)
      if not ok then
        io.stderr:write("nvim_bench.lua: " .. tostring(err) .. "\n")
        out_file:write("nvim_bench.lua: " .. tostring(err) .. "\n")
        out_file:flush()
        vim.cmd("cquit 1")
      end
    end)
  end)
  coroutine.yield()
end

local function out(s)
  out_file:write(s .. "\n")
  out_file:flush()
end

local function ms(ns)
  return ns / 1e6
end

--- Runs `start(done)` while a 1 ms timer measures lateness; returns
--- { p50, p99, max, wall } in ms once `done()` was called.
local function lateness(start)
  local late = {}
  local timer = uv.new_timer()
  local expected = uv.hrtime() + 1e6
  -- Each tick is recorded from a scheduled callback: it runs when the main
  -- loop handles its queue (where typed keys are handled too), so a call
  -- that keeps the loop busy (systemlist waits inside the loop) shows.
  local ticking = true
  timer:start(1, 1, function()
    local due = expected
    expected = uv.hrtime() + 1e6
    vim.schedule(function()
      if ticking then
        late[#late + 1] = math.max(0, ms(uv.hrtime() - due))
      end
    end)
  end)
  local finished = false
  local t0 = uv.hrtime()
  local wall
  vim.schedule(function()
    start(function()
      wall = ms(uv.hrtime() - t0)
      finished = true
    end)
  end)
  wait(function()
    return finished
  end)
  if not finished then
    error("a measured piece of work did not end within 10 min")
  end
  ticking = false
  timer:stop()
  timer:close()
  table.sort(late)
  local function pct(p)
    if #late == 0 then
      return 0
    end
    return late[math.max(1, math.ceil(#late * p))]
  end
  return { p50 = pct(0.5), p99 = pct(0.99), max = late[#late] or 0, wall = wall }
end

local function row(name, ours, ref)
  out(
    ("%-34s lathe p50 %5.1f p99 %6.1f max %6.1f ms (%.0f ms) | Lua way p50 %5.1f p99 %6.1f max %6.1f ms (%.0f ms) | max ratio %.2fx"):format(
      name,
      ours.p50,
      ours.p99,
      ours.max,
      ours.wall,
      ref.p50,
      ref.p99,
      ref.max,
      ref.wall,
      ours.max / math.max(ref.max, 0.001)
    )
  )
end

local function tool(name, input, done)
  lathe.tool(name, input, function(r)
    if r.is_error then
      error(("%s failed: %s"):format(name, r.content))
    end
    done(r)
  end)
end

vim.cmd.cd(vim.fn.fnameescape(work))
lathe.setup({
  cwd = work,
  base_url = base_url,
  claude_settings = false,
  permission_guard_ms = 0,
  permissions = { mode = "bypassPermissions" },
  diagnostics_wait_ms = 0,
})

out(
  ui and "== the same with a real UI: nvim's TUI in tmux 200x50, the chat split next to a file (bench/ui_bench.sh)"
    or "== main-loop lateness (1 ms vim.uv timer), lathe vs the usual Lua way"
)
local idle = lateness(function(done)
  vim.defer_fn(done, 300)
end)
out(("%-34s p50 %5.1f p99 %6.1f max %6.1f ms"):format("idle (300 ms)", idle.p50, idle.p99, idle.max))

-- (a) a whole-tree Grep vs systemlist(rg) (not with the UI: only the
-- streaming rows redraw much).
local pattern = "def __init_subclass__"
if not ui then
  row(
    "whole-tree Grep (count)",
    lateness(function(done)
      tool("Grep", { pattern = pattern, path = tree, output_mode = "count" }, done)
    end),
    lateness(function(done)
      vim.fn.systemlist({ rg, "--hidden", "--no-require-git", "-c", pattern, tree })
      done()
    end)
  )
end

-- (b) a 200 KB answer streamed in 8-character deltas vs the same deltas
-- each put into a buffer as they arrive (vim.system + nvim_buf_set_text):
-- first as a model writes, in lines and paragraphs, then as one 200 KB
-- line (the worst case: Neovim measures the wrapped line whenever a
-- cursor moves past it, and re-parses the one paragraph).
local function ended(n)
  return function()
    return lathe.status().state == "idle" and #lathe.transcript() >= n
  end
end
-- Warm-up, not measured: the first ask opens the chat (its window, the
-- prompt area, the markdown parser and its queries: ~10 ms of query
-- compiling once per Neovim), a one-time cost that is not streaming. The
-- scripted answer ends before the chat has shown it, so the warm-up waits
-- for the chat and the prompt area to show, then lets the loop settle.
lathe.ask("warm up")
wait(function()
  local shown = table.concat(vim.fn.getbufline("lathe://chat", 1, "$"), "\n")
  return ended(2)() and vim.fn.bufwinid("lathe://prompt") ~= -1 and shown:find("warm up", 1, true) ~= nil
end, 60000)
local settled = uv.hrtime() + 200e6
wait(function()
  return uv.hrtime() > settled
end, 1000)
local core = require("lathe.core")

--- Calls `done()` once `check()` (run on the main loop every 5 ms) is
--- true; `check` is not called again after that.
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

--- With the UI: times Neovim's redraw after each change of `buf` (a frame
--- of the stream): the first change in a turn of the loop schedules a
--- `:redraw`, which runs before the loop would redraw by itself, so it
--- does that same work, timed. Returns `stop()`, which gives { median,
--- max, n } (ms) and detaches.
local function time_redraws(buf)
  local times, pending, stopped = {}, false, false
  vim.api.nvim_buf_attach(buf, false, {
    on_bytes = function()
      if stopped then
        return true
      end
      if not pending then
        pending = true
        vim.schedule(function()
          pending = false
          local t = uv.hrtime()
          vim.cmd("redraw")
          times[#times + 1] = ms(uv.hrtime() - t)
        end)
      end
    end,
  })
  return function()
    stopped = true
    table.sort(times)
    return { median = times[math.max(1, math.ceil(#times / 2))] or 0, max = times[#times] or 0, n = #times }
  end
end

--- One streaming row: the `n`th answer of the script (transcript length
--- `2 * n` once it ended) vs the Lua way on `answer_file`; then lathe's own
--- main-thread time during the stream (the timer also counts the
--- machine's load): its longest single step, per kind. With `paced`
--- ({ chars, ms }) the Lua way appends `chars` of the file every `ms` from
--- a timer, as the paced answer arrives, instead of as `cat` writes it.
--- With the UI, Neovim's redraws after each change are timed too (the Lua
--- way's bursts of cat's output redraw once or not at all before the row
--- ends; its paced row redraws at every piece).
local function stream_row(name, n, answer_file, paced)
  local before = core.main_thread_stats(true)
  local chat_redraws
  local ours = lateness(function(done)
    if ui then
      chat_redraws = time_redraws(vim.fn.bufnr("lathe://chat"))
    end
    lathe.ask("stream")
    poll_until(ended(2 * n), done)
  end)
  local ours_redraw = chat_redraws and chat_redraws()
  -- The turn's end highlights the turn (lathe.chat_highlight: a string
  -- parse of the turn, in 16 KiB steps chained with vim.schedule; Neovim's
  -- own loop, where this bench waits, runs timers and keys between them).
  -- Measured here, until the last step ran (at most 3 s), so it counts for
  -- the answer that caused it, not for the next row.
  local settle = lateness(function(done)
    local t0 = uv.hrtime()
    poll_until(function()
      local hl = package.loaded["lathe.chat_highlight"]
      local highlighted = core.settled() and (not hl or hl.queued == 0)
      return highlighted or uv.hrtime() - t0 > 3e9
    end, done)
  end)
  local st = core.main_thread_stats()
  -- With the UI, the Lua way's buffer shows in the chat's window (same
  -- size and options) and follows the end as the chat does.
  local chat_win = ui and vim.fn.bufwinid(vim.fn.bufnr("lathe://chat")) or -1
  assert(not ui or chat_win > 0, "the chat window is not open")
  local ref_buf, ref_redraws
  local ref = lateness(function(done)
    local buf = vim.api.nvim_create_buf(false, true)
    ref_buf = buf
    if ui then
      vim.api.nvim_win_set_buf(chat_win, buf)
      ref_redraws = time_redraws(buf)
    end
    local function put(data)
      for i = 1, #data, 8 do
        local piece = vim.split(data:sub(i, i + 7), "\n", { plain = true })
        local last = vim.api.nvim_buf_line_count(buf) - 1
        local col = #vim.api.nvim_buf_get_lines(buf, last, last + 1, false)[1]
        vim.api.nvim_buf_set_text(buf, last, col, last, col, piece)
      end
      if ui then
        vim.api.nvim_win_set_cursor(chat_win, { vim.api.nvim_buf_line_count(buf), 0 })
      end
    end
    if paced then
      -- As the model's answer came: `paced.chars` every `paced.ms`.
      local f = assert(io.open(answer_file))
      local text = f:read("a")
      f:close()
      local at, timer = 1, uv.new_timer()
      timer:start(paced.ms, paced.ms, function()
        vim.schedule(function()
          if at > #text then
            return
          end
          put(text:sub(at, at + paced.chars - 1))
          at = at + paced.chars
          if at > #text then
            timer:stop()
            timer:close()
            done()
          end
        end)
      end)
      return
    end
    vim.system({ "cat", answer_file }, {
      stdout = function(_, data)
        if data then
          vim.schedule(function()
            put(data)
          end)
        end
      end,
    }, function()
      vim.schedule(done)
    end)
  end)
  local ref_redraw = ref_redraws and ref_redraws()
  if ui then
    vim.api.nvim_win_set_buf(chat_win, vim.fn.bufnr("lathe://chat"))
    vim.api.nvim_buf_delete(ref_buf, { force = true })
  end
  row(name, ours, ref)
  if ui then
    out(
      ("%-34s lathe median %5.2f max %5.2f ms (%d redraws) | Lua way median %5.2f max %5.2f ms (%d redraws)"):format(
        "  Neovim's redraw after a change",
        ours_redraw.median,
        ours_redraw.max,
        ours_redraw.n,
        ref_redraw.median,
        ref_redraw.max,
        ref_redraw.n
      )
    )
  end
  out(
    ("%-34s p50 %5.1f p99 %6.1f max %6.1f ms (%.0f ms)"):format(
      "  then highlighting back (Neovim)",
      settle.p50,
      settle.p99,
      settle.max,
      settle.wall
    )
  )
  out(
    ("%-34s longest %5.2f ms (chat frame %5.2f, bridge wake-up %5.2f, ask %5.2f); %d frames, %d edits, %d lines continued, %.0f ms in all"):format(
      "  lathe's own main-thread steps",
      st.longest_ms,
      st.chat_frame.longest_ms,
      st.bridge.longest_ms,
      st.ask.longest_ms,
      st.chat_frames - before.chat_frames,
      st.chat_edits - before.chat_edits,
      (st.chat_continued or 0) - (before.chat_continued or 0),
      st.bridge.total_ms + st.ask.total_ms
    )
  )
end
-- Paragraphs first: a cursor moving past the one 200 KB line would be
-- measured in the next row otherwise.
stream_row("stream 200 KB in lines, paragraphs", 2, work .. "/answer_paragraphs.txt")
stream_row("stream 200 KB in 8-char deltas", 3, work .. "/answer.txt")
if ui then
  -- As a model streams (and as the fresh user's run had it): a 100 KB
  -- one-line answer in 100-character deltas every 10 ms (bench/ui_bench.sh
  -- adds it to the script).
  stream_row("paced: 100 KB, 100 chars / 10 ms", 4, work .. "/ui/answer_paced.txt", { chars = 100, ms = 10 })
  -- bench/ui_bench.sh waits for this line, then ends tmux.
  out("ui bench done")
  vim.cmd("qa!")
  return
end

-- (c) ten concurrent Reads vs ten vim.system cat + a buffer each.
local files = {}
for i = 1, 10 do
  files[i] = ("%s/read%d.txt"):format(work, i)
end
row(
  "ten concurrent Reads (5000 lines)",
  lateness(function(done)
    local left = #files
    for _, f in ipairs(files) do
      tool("Read", { file_path = f }, function()
        left = left - 1
        if left == 0 then
          done()
        end
      end)
    end
  end),
  lateness(function(done)
    local left = #files
    for _, f in ipairs(files) do
      vim.system({ "cat", f }, { text = true }, function(r)
        vim.schedule(function()
          local buf = vim.api.nvim_create_buf(false, true)
          vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(r.stdout, "\n", { plain = true }))
          left = left - 1
          if left == 0 then
            done()
          end
        end)
      end)
    end
  end)
)

-- (d) an Edit of one line in a loaded 100 000-line buffer (after a Read)
-- vs the Lua way: read the buffer, find the line, set it, :write.
local big = work .. "/big.txt"
vim.cmd.edit(vim.fn.fnameescape(big))
local bigbuf = vim.api.nvim_get_current_buf()
local read_done = false
tool("Read", { file_path = big, limit = 10 }, function()
  read_done = true
end)
wait(function()
  return read_done
end, 60000)
core.main_thread_stats(true)
local ours = lateness(function(done)
  tool("Edit", {
    file_path = big,
    old_string = "line 50000 of the big file\n",
    new_string = "line 50000 edited\n",
  }, done)
end)
local edit_stats = core.main_thread_stats(true)
local ref = lateness(function(done)
  local lines = vim.api.nvim_buf_get_lines(bigbuf, 0, -1, false)
  for i, l in ipairs(lines) do
    if l == "line 50001 of the big file" then
      vim.api.nvim_buf_set_text(bigbuf, i - 1, 0, i - 1, #l, { "line 50001 edited" })
      break
    end
  end
  vim.api.nvim_buf_call(bigbuf, function()
    vim.cmd("silent write")
  end)
  done()
end)
row("Edit in a 100k-line buffer", ours, ref)
-- lathe's own main-thread time (main_thread_stats()): what the Edit itself held
-- the loop for, whatever else the machine was doing.
out(
  ("%-34s lathe's longest main-thread step %6.2f ms (CPU %.2f ms; %d steps, %.2f ms in all; :write %d, direct %d)"):format(
    "",
    edit_stats.bridge.longest_ms,
    edit_stats.bridge_cpu_longest_ms,
    edit_stats.bridge.count,
    edit_stats.bridge.total_ms,
    edit_stats.nvim_writes,
    edit_stats.direct_writes
  )
)

-- (c) Edit latency, `tool()` to result, vs nvim_buf_set_lines of one line.
out("== Edit latency on a 100 000-line buffer (tool() to result) vs nvim_buf_set_lines")
local lat, set = {}, {}
read_done = false
tool("Read", { file_path = big, limit = 10 }, function()
  read_done = true
end)
wait(function()
  return read_done
end, 60000)
local steps, cpus = {}, {}
for i = 1, 7 do
  -- Each Edit follows the last (FileState keeps its text): no new Read.
  core.main_thread_stats(true)
  local n = 60000 + i
  local finished = false
  local t = uv.hrtime()
  tool("Edit", {
    file_path = big,
    old_string = ("line %d of the big file\n"):format(n),
    new_string = ("line %d edited\n"):format(n),
  }, function()
    lat[#lat + 1] = ms(uv.hrtime() - t)
    finished = true
  end)
  wait(function()
    return finished
  end, 60000)
  local st = core.main_thread_stats(true)
  steps[#steps + 1] = st.bridge.longest_ms
  cpus[#cpus + 1] = st.bridge_cpu_longest_ms
end
for i = 1, 7 do
  local m = 70000 + i
  local t = uv.hrtime()
  vim.api.nvim_buf_set_lines(bigbuf, m - 1, m, true, { ("line %d set"):format(m) })
  set[#set + 1] = ms(uv.hrtime() - t)
end
table.sort(lat)
table.sort(set)
table.sort(steps)
table.sort(cpus)
out(
  ("%-34s lathe min %6.2f median %6.2f ms | nvim_buf_set_lines min %6.3f median %6.3f ms | median ratio %.0fx"):format(
    "Edit one line",
    lat[1],
    lat[4],
    set[1],
    set[4],
    lat[4] / math.max(set[4], 0.001)
  )
)
out(
  ("%-34s lathe's longest main-thread step per Edit: min %6.2f median %6.2f max %6.2f ms (CPU: median %.2f max %.2f ms)"):format(
    "",
    steps[1],
    steps[4],
    steps[7],
    cpus[4],
    cpus[7]
  )
)
vim.cmd("qa!")
