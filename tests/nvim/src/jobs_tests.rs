//! Background Bash commands in Neovim: `:Lathe jobs` / `lathe.jobs()` list
//! them, KillShell stops one, and `VimLeavePre` stops every one with what
//! it started (section 3).

/// Lua helpers: `alive(arg)` counts live processes with `arg` as an
/// argument (from /proc), `notes` collects what `vim.notify` shows.
const HELPERS: &str = r###"
local function alive(arg)
  local n = 0
  for _, p in ipairs(vim.fn.glob("/proc/[0-9]*", false, true)) do
    local f = io.open(p .. "/cmdline", "rb")
    local cmd = f and f:read("*a") or ""
    if f then f:close() end
    local s = io.open(p .. "/stat", "r")
    local stat = s and s:read("*l") or ""
    if s then s:close() end
    local zombie = stat:match("%) (%a)") == "Z"
    for part in cmd:gmatch("[^%z]+") do
      if part == arg and not zombie then n = n + 1 end
    end
  end
  return n
end
local notes = {}
vim.notify = function(msg) notes[#notes + 1] = msg end
"###;

#[nvim_oxi::test]
fn lathe_jobs_lists_background_commands_and_killshell_stops_one() -> Result<(), String> {
    crate::common::lua_test(&format!(
        "{HELPERS}{}",
        r###"
        local arg = "300." .. vim.fn.getpid() .. "1"
        local dir = T.project()
        vim.cmd.cd(dir)
        vim.cmd("runtime plugin/lathe.lua")
        T.setup(dir, { permissions = { mode = "bypassPermissions" } })
        local r = T.ok("Bash", { command = "echo hi; sleep " .. arg, run_in_background = true })
        T.has("started", r.content, "Command running in the background with ID: bash_1.")
        local jobs = T.lathe.jobs()
        T.eq("one job", #jobs, 1)
        T.eq("fields", { jobs[1].id, jobs[1].state, jobs[1].command },
          { "bash_1", "running", "echo hi; sleep " .. arg })
        T.eq("output file", vim.wait(5000, function()
          return vim.fn.filereadable(jobs[1].output) == 1 and vim.fn.readfile(jobs[1].output)[1] == "hi"
        end, 20), true)
        T.eq("sleep runs", alive(arg), 1)

        local k = T.ok("KillShell", { shell_id = "bash_1" })
        T.has("killed", k.content, "Stopped background shell bash_1")
        T.eq("gone", vim.wait(5000, function() return alive(arg) == 0 end, 20), true)
        T.eq("stopped", T.lathe.jobs()[1].state, "stopped")
        local out = T.ok("BashOutput", { bash_id = "bash_1" })
        T.eq("output then status", out.content,
          "hi\n\nStatus: stopped by KillShell.\nAll output so far: " .. jobs[1].output)
        "###
    ))
}

#[nvim_oxi::test]
fn vim_leave_pre_stops_every_background_command() -> Result<(), String> {
    crate::common::lua_test(&format!(
        "{HELPERS}{}",
        r###"
        local arg = "300." .. vim.fn.getpid() .. "2"
        local dir = T.project()
        vim.cmd.cd(dir)
        vim.cmd("runtime plugin/lathe.lua")
        T.setup(dir, { permissions = { mode = "bypassPermissions" } })
        -- One that stays in its group and one that leaves it.
        T.ok("Bash", { command = "setsid sleep " .. arg .. " & sleep " .. arg, run_in_background = true })
        T.eq("both run", vim.wait(5000, function() return alive(arg) == 2 end, 20), true)
        vim.api.nvim_exec_autocmds("VimLeavePre", {})
        T.eq("none left", vim.wait(5000, function() return alive(arg) == 0 end, 20), true)
        "###
    ))
}

#[nvim_oxi::test]
fn vim_leave_pre_stops_what_a_finished_bash_call_left_running() -> Result<(), String> {
    crate::common::lua_test(&format!(
        "{HELPERS}{}",
        r###"
        local arg = "300." .. vim.fn.getpid() .. "3"
        local dir = T.project()
        vim.cmd.cd(dir)
        vim.cmd("runtime plugin/lathe.lua")
        T.setup(dir, { permissions = { mode = "bypassPermissions" } })
        -- The call ends normally; what it started keeps running, as in a
        -- shell, one process in its group and one that left it.
        local r = T.ok("Bash", { command = "setsid sleep " .. arg .. " >/dev/null 2>&1 & (sleep " .. arg .. " >/dev/null 2>&1 &); echo started" })
        T.has("finished", r.content, "started")
        T.eq("both still run", vim.wait(5000, function() return alive(arg) == 2 end, 20), true)
        vim.api.nvim_exec_autocmds("VimLeavePre", {})
        T.eq("none left", vim.wait(5000, function() return alive(arg) == 0 end, 20), true)
        "###
    ))
}

/// `:Lathe jobs` opens a list whose first line names its keys: `<CR>` on a
/// job opens its output in a buffer that follows the file as it grows, `x`
/// stops the job the way KillShell does (the model's own job: no ask), `q`
/// closes the list; `:Lathe jobs stop {id}` stops one too.
#[nvim_oxi::test]
fn the_jobs_list_opens_a_jobs_output_and_stops_it() -> Result<(), String> {
    crate::common::lua_test(&format!(
        "{HELPERS}{}",
        r###"
        local arg = "300." .. vim.fn.getpid() .. "3"
        local dir = T.project()
        vim.cmd.cd(dir)
        vim.cmd("runtime plugin/lathe.lua")
        T.setup(dir)
        vim.cmd("Lathe jobs")
        T.eq("the list", T.lines(0), { require("lathe.jobs").HEADER, "(no background jobs)" })
        T.has("names its keys", T.lines(0)[1], "<CR>/o output · x/K stop")
        vim.cmd("close")
        -- Started as the model would (Bash in the background asks in the
        -- default mode: allowed here).
        T.lathe.mode("bypassPermissions")
        T.ok("Bash", { command = "for i in 1 2 3 4 5 6 7 8 9; do echo line$i; sleep 0.2; done; sleep " .. arg, run_in_background = true })
        T.ok("Bash", { command = "sleep " .. arg, run_in_background = true })
        T.lathe.mode("default")
        vim.cmd("Lathe jobs")
        local list_win = vim.api.nvim_get_current_win()
        T.has("job 1", T.lines(0)[2], "bash_1  running")
        T.has("job 2", T.lines(0)[3], "bash_2  running")
        vim.api.nvim_win_set_cursor(0, { 2, 0 })
        T.type("<CR>")
        local out = vim.api.nvim_get_current_buf()
        T.eq("the output's buffer", vim.api.nvim_buf_get_name(out), "lathe://jobs/bash_1")
        T.eq("it follows the file", vim.wait(5000, function()
          local l = T.lines(out)
          return l[#l] == "line9"
        end, 50), true)
        T.eq("the cursor follows it", vim.api.nvim_win_get_cursor(0)[1], vim.api.nvim_buf_line_count(out))
        T.type("q")
        -- x: stopped through KillShell, without asking (no float).
        vim.api.nvim_set_current_win(list_win)
        vim.api.nvim_win_set_cursor(0, { 2, 0 })
        T.type("x")
        T.eq("stopped", vim.wait(5000, function() return T.lathe.jobs()[1].state == "stopped" end, 20), true)
        T.eq("no float asked", T.floats(), 0)
        T.eq("the list shows it", vim.wait(2000, function() return T.lines(0)[2]:find("stopped") ~= nil end, 20), true)
        T.type("q")
        T.eq("the list closed", vim.fn.bufwinid("lathe://jobs"), -1)
        vim.cmd("Lathe jobs stop bash_2")
        T.eq("stopped by the command", vim.wait(5000, function() return T.lathe.jobs()[2].state == "stopped" end, 20), true)
        T.eq("none left", vim.wait(5000, function() return alive(arg) == 0 end, 20), true)
        "###
    ))
}
