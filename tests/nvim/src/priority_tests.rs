//! Thread priorities inside Neovim: lathe's runtime threads run nicer than
//! Neovim's main thread (so the editor wins a busy CPU while an answer
//! streams), and the processes lathe starts — Bash commands and
//! command hooks — run at Neovim's own priority, not the workers' lower
//! one (`process::spawner`).

#[nvim_oxi::test]
fn workers_run_nicer_and_commands_run_at_neovims_priority() -> Result<(), String> {
    crate::common::lua_test(
        r###"
        -- Field 19 of a /proc stat line: the nice value.
        local function nice_of(path)
          local f = assert(io.open(path, "r"))
          local stat = f:read("*l")
          f:close()
          local fields = {}
          for w in stat:sub(stat:find(") ", 1, true) + 2):gmatch("%S+") do
            fields[#fields + 1] = w
          end
          return tonumber(fields[17])
        end
        local own = nice_of("/proc/self/stat")
        local dir = T.project()
        vim.cmd.cd(dir)
        T.setup(dir, {
          permissions = { mode = "bypassPermissions" },
          hooks = { PreToolUse = { { matcher = "Bash", hooks = {
            { type = "command", command = "nice > hook-nice.txt" },
          } } } },
        })

        local r = T.ok("Bash", { command = "nice" })
        T.eq("Bash runs at Neovim's priority", r.content, own .. "\n\nExit code 0")
        T.eq("so does a command hook", vim.fn.readfile(dir .. "/hook-nice.txt"), { tostring(own) })

        local workers = {}
        for _, task in ipairs(vim.fn.glob("/proc/self/task/*", false, true)) do
          local comm = vim.fn.readfile(task .. "/comm")[1]
          if comm == "lathe-worker" then
            workers[#workers + 1] = nice_of(task .. "/stat")
          end
        end
        -- The two workers and the blocking pool's threads (same name).
        T.eq("the runtime's threads", #workers >= 2, true)
        for i, nice in ipairs(workers) do
          T.eq("thread " .. i .. " runs nicer than Neovim", nice, math.min(own + 5, 19))
        end
        "###,
    )
}
