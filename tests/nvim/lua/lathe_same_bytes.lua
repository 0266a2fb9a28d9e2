-- Generated Edit cases: applying an Edit through a loaded
-- buffer must give the same bytes on disk, and the same result text, as
-- applying it through the disk path to a second copy of the file that no
-- buffer holds. A seeded generator makes every run the same cases; a
-- failure names the seed and case so it can be replayed.
local T = require("lathe_test")
local S = require("lathe_scenarios")
local M = {}

--- A deterministic generator: `next(n)` gives an integer in 1..n.
local function rng(seed)
  local s = seed % 2147483648
  return function(n)
    s = (s * 1103515245 + 12345) % 2147483648
    return math.floor(s / 65536) % n + 1
  end
end

local WORDS = {
  "alpha",
  "beta",
  "x",
  "foo(bar)",
  "if (x) {",
  "}",
  "\t",
  "  ",
  "é",
  "→",
  "// note",
  "return 1;",
  "'q'",
  "\"s\"",
  "int y = 2;",
  "aaa",
  "a",
}

local function pick(next, list)
  return list[next(#list)]
end

--- Random words (no "→" when `latin1`), joined by spaces or nothing.
local function words(next, n, latin1)
  local out = {}
  for _ = 1, n do
    local w
    repeat
      w = pick(next, WORDS)
    until not (latin1 and w == "→")
    table.insert(out, w)
    if next(3) == 1 then
      table.insert(out, " ")
    end
  end
  return table.concat(out)
end

--- One generated file: its logical text (UTF-8, LF) and its bytes on disk.
local function gen_file(next)
  local enc = pick(next, { "utf-8", "utf-8", "bom", "latin1" })
  local latin1 = enc == "latin1"
  local crlf = next(3) == 1
  local lines = {}
  for _ = 1, next(7) do
    table.insert(lines, words(next, next(5) - 1, latin1))
  end
  if latin1 then
    lines[1] = lines[1] .. " café" -- so Neovim and the codec both see Latin-1
  end
  local text = table.concat(lines, "\n")
  local finals = next(3) - 1 -- 0, 1 or 2 final newlines
  if latin1 and finals == 0 and text:find("[\128-\255]$") then
    -- Neovim cannot load a Latin-1 file whose last byte is high without a
    -- final newline (it reads it as broken UTF-8 and sets 'readonly');
    -- lathe then refuses the edit safely, but the paths differ by design.
    text = text .. "."
  end
  text = text .. string.rep("\n", finals)
  local bytes = crlf and text:gsub("\n", "\r\n") or text
  if enc == "bom" then
    bytes = "\239\187\191" .. bytes
  elseif latin1 then
    bytes = assert(vim.iconv(bytes, "utf-8", "latin1"))
  end
  return { text = text, bytes = bytes, enc = enc, crlf = crlf, finals = finals }
end

--- Byte offsets in `s` where a character starts, plus #s + 1.
local function boundaries(s)
  local out = {}
  for i = 1, #s do
    local b = s:byte(i)
    if b < 0x80 or b >= 0xC0 then
      table.insert(out, i)
    end
  end
  table.insert(out, #s + 1)
  return out
end

local function count(s, sub)
  local n, i = 0, 1
  while true do
    local at = s:find(sub, i, true)
    if not at then
      return n
    end
    n, i = n + 1, at + 1
  end
end

--- An Edit input for `text`: a span of it (unique unless replace_all), and
--- a new string (may hold newlines, be empty, or hold "→").
local function gen_edit(next, text)
  local b = boundaries(text)
  if #b < 2 then
    return nil
  end
  for _ = 1, 20 do
    local i = next(#b - 1)
    local j = math.min(#b, i + next(12))
    local old = text:sub(b[i], b[j] - 1)
    local replace_all = next(5) == 1
    if old ~= "" and (replace_all or count(text, old) == 1) then
      local new = ({ "", words(next, next(3), false), words(next, 2, false) .. "\n" .. words(next, 2, false) })[next(3)]
      return { old_string = old, new_string = new, replace_all = replace_all or nil }
    end
  end
  return nil
end

--- Runs `n` cases from `seed`; raises listing every case that differed.
function M.run(seed, n)
  local next = rng(seed)
  local failures, ran = {}, 0
  for case = 1, n do
    local f = gen_file(next)
    local edit = gen_edit(next, f.text)
    if edit then
      ran = ran + 1
      local root = T.project()
      vim.fn.mkdir(root .. "/buf", "p")
      vim.fn.mkdir(root .. "/disk", "p")
      local in_buf, on_disk = root .. "/buf/f.txt", root .. "/disk/f.txt"
      T.write(in_buf, f.bytes)
      T.write(on_disk, f.bytes)
      T.setup(root, { permissions = { mode = "acceptEdits" } })
      local buf = T.open(in_buf)
      local function same(r)
        return { is_error = r.is_error, content = (r.content:gsub("buf/f%.txt", "F"):gsub("disk/f%.txt", "F")) }
      end
      local problems = {}
      local function check(what, got, want)
        if not vim.deep_equal(got, want) then
          table.insert(problems, ("%s: buffer path %s, disk path %s"):format(what, vim.inspect(got), vim.inspect(want)))
        end
      end
      check("Read", same(T.tool("Read", { file_path = in_buf })), same(T.tool("Read", { file_path = on_disk })))
      local rb = T.tool("Edit", vim.tbl_extend("force", edit, { file_path = in_buf }))
      local rd = T.tool("Edit", vim.tbl_extend("force", edit, { file_path = on_disk }))
      check("Edit result", same(rb), same(rd))
      check("bytes on disk", T.bytes(in_buf), T.bytes(on_disk))
      -- The buffer holds the text the disk path decodes from the new bytes.
      check(
        "Read after the Edit",
        same(T.tool("Read", { file_path = in_buf })),
        same(T.tool("Read", { file_path = on_disk }))
      )
      -- And it is set up to write them as Neovim would load them. (Without a
      -- final newline Neovim's own detection is unreliable: no line break
      -- shows no 'fileformat', a trailing Latin-1 byte reads as UTF-8.)
      local written = T.bytes(on_disk)
      if written:sub(-1) == "\n" then
        local got, want = S.view(buf), S.view_of_file(on_disk)
        if not written:find("[\128-\255]") then
          got.fileencoding, want.fileencoding = nil, nil -- ASCII reads as any
        end
        check("buffer vs the disk-path file loaded", got, want)
      end
      check("buffer modified", vim.bo[buf].modified, false)
      vim.cmd("bwipeout! " .. buf)
      if #problems > 0 then
        table.insert(
          failures,
          ("seed %d case %d: file %s (%s%s, %d final newlines), edit %s\n  %s"):format(
            seed,
            case,
            vim.inspect(f.bytes),
            f.enc,
            f.crlf and ", CRLF" or "",
            f.finals,
            vim.inspect(edit),
            table.concat(problems, "\n  ")
          )
        )
      end
    end
  end
  if ran < n / 2 then
    table.insert(failures, ("only %d of %d generated cases had an edit"):format(ran, n))
  end
  if #failures > 0 then
    error(table.concat(failures, "\n"), 0)
  end
  return ran
end

return M
