-- A saved conversation of a working day, written straight into a session
-- file (the format of src/agent/session_log.rs), for the long-session part
-- of `make bench` and the tests of `:Lathe resume` (tests/nvim,
-- tests/all/tui_long_session.rs): `asks` asks of `per_ask` Read calls each, as
-- in ../research/long-sessions.md: every model answer is a line
-- of text and one Read of a distinct ~`size`-byte file, every ask ends
-- with a short answer. The last ask's answer ends with `last_words`.
--
--   local write = dofile(root .. "/bench/long_session.lua")
--   write(path, { cwd = dir, asks = 50, per_ask = 20, size = 1000 })

return function(path, o)
  local asks, per_ask, size = o.asks or 50, o.per_ask or 20, o.size or 1000
  local last_words = o.last_words or "All files read."
  local enc = vim.json.encode
  local out = {}
  local function put(t)
    out[#out + 1] = enc(t)
  end
  put({
    type = "session",
    version = 1,
    id = o.id or "1-1",
    cwd = o.cwd,
    model = "claude-sonnet-4-5",
    created_ms = 1000,
    first_prompt = "read the files of ask 1",
  })
  local line = "local value = 42 -- a line of a file the model reads, about seventy bytes"
  local body = {}
  for i = 1, math.max(1, math.floor(size / (#line + 1))) do
    body[i] = line
  end
  body = table.concat(body, "\n") .. "\n"
  local input, session_in = 0, 0
  local n = 0
  for a = 1, asks do
    put({ type = "user", text = "read the files of ask " .. a })
    for _ = 1, per_ask do
      n = n + 1
      local id = ("toolu_%06d"):format(n)
      local file = ("src/f%05d.lua"):format(n)
      put({
        type = "assistant",
        message = {
          role = "assistant",
          content = {
            { type = "text", text = ("Reading file %d, **%s**, next."):format(n, file) },
            { type = "tool_use", id = id, name = "Read", input = { file_path = o.cwd .. "/" .. file } },
          },
        },
      })
      put({ type = "tool_start", id = id, name = "Read", detail = file })
      put({
        type = "tool_results",
        results = { { tool_use_id = id, content = body, is_error = false } },
      })
      put({ type = "tool_done", id = id, status = "done", summary = "read 13 lines" })
    end
    local answer = a == asks and last_words or ("Ask %d done: `%d` files read."):format(a, per_ask)
    put({
      type = "assistant",
      message = { role = "assistant", content = { { type = "text", text = answer } } },
    })
    input = input + 1000
    session_in = session_in + input
    put({
      type = "turn_end",
      outcome = "done",
      turn = { input_tokens = input, output_tokens = 50 },
      session = { input_tokens = session_in, output_tokens = 50 * a },
    })
  end
  local f = assert(io.open(path, "w"))
  f:write(table.concat(out, "\n"), "\n")
  f:close()
  return n
end
