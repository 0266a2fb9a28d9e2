//! Switching the model at runtime (`lathe.model()`, `:Lathe model`) and
//! project memory in `:checkhealth lathe`, against an in-process
//! `mock-llm` over real HTTP.

use crate::common::lua_test_with_model;

/// Two answers; mock-llm serves `m-one` and `other` only.
const SWITCH_SCRIPT: &str = r###"{ "models": ["m-one", "other"], "responses": [
  { "content": [ { "type": "text", "text": "First answer." } ] },
  { "content": [ { "type": "text", "text": "Second answer." } ],
    "expect": { "last_user_text_contains": "again" } }
] }"###;

#[nvim_oxi::test]
fn a_model_switch_reaches_the_next_request_and_the_winbar() -> Result<(), String> {
    lua_test_with_model(
        SWITCH_SCRIPT,
        r###"
        local dir = T.project()
        vim.cmd.cd(dir)
        vim.cmd("runtime plugin/lathe.lua")
        T.setup(dir, { base_url = MOCK_URL, model = "m-one" })
        -- A chat wide enough for the winbar's every part.
        vim.o.columns = 300
        vim.cmd("Lathe hello")
        T.eq("first turn", T.lathe.wait(15000), "done")
        local function winbar()
          return vim.wo[vim.fn.bufwinid("lathe://chat")].winbar
        end
        T.has("winbar before", winbar(), "m-one")
        T.eq("model()", T.lathe.model(), "m-one")

        T.eq("model(name)", T.lathe.model("other"), "other")
        T.has("the winbar shows it at once", winbar(), "other")
        T.lacks("the winbar shows it at once", winbar(), "m-one")
        T.eq("status()", T.lathe.status().model, "other")
        T.wait_for("the notice", 5000, function()
          return T.chat_text():find("model: other", 1, true) ~= nil
        end)

        vim.cmd("Lathe again")
        T.eq("second turn", T.lathe.wait(15000), "done")
        local sent = {}
        for _, l in ipairs(vim.fn.readfile(MOCK_LOG)) do
          table.insert(sent, vim.json.decode(l))
        end
        T.eq("models sent", vim.tbl_map(function(r) return r.model end, sent), { "m-one", "other" })
        local second = vim.json.encode(sent[2].messages)
        T.has("the earlier messages are sent", second, "hello")
        T.has("the earlier answer is sent", second, "First answer.")

        -- Completion: the provider's list, fetched in the background.
        local names
        T.lathe.models(function(list) names = list end)
        T.wait_for("the list", 5000, function() return names ~= nil end)
        T.eq("models", names, { "m-one", "other" })
        T.eq(":Lathe model completion", vim.fn.getcompletion("Lathe model ", "cmdline"), { "m-one", "other" })
        T.eq(":Lathe model o<Tab>", vim.fn.getcompletion("Lathe model o", "cmdline"), { "other" })
        vim.cmd("Lathe model m-one")
        T.eq(":Lathe model {name}", T.lathe.model(), "m-one")

        -- A new conversation (/clear) keeps the model and the permission
        -- mode switched at runtime.
        T.lathe.model("other")
        T.lathe.mode("plan")
        require("lathe.commands").run("/clear")
        T.eq("model after /clear", T.lathe.model(), "other")
        T.eq("mode after /clear", T.lathe.mode(), "plan")
        T.has("the winbar after /clear", winbar(), "other")
        T.has("the winbar after /clear", winbar(), "mode: plan")
        "###,
    )
}

#[nvim_oxi::test]
fn checkhealth_lists_the_memory_files_found() -> Result<(), String> {
    lua_test_with_model(
        r###"{ "responses": [] }"###,
        r###"
        local repo = T.project()
        local app = repo .. "/app"
        local home = repo .. "/home"
        vim.fn.mkdir(repo .. "/.git", "p")
        vim.fn.mkdir(app, "p")
        vim.fn.mkdir(home .. "/.claude", "p")
        vim.fn.mkdir(repo .. "/docs", "p")
        T.write(home .. "/.claude/CLAUDE.md", "user rules")
        T.write(repo .. "/CLAUDE.md", "See @docs/more.md and @nope.md")
        T.write(repo .. "/docs/more.md", "more")
        T.write(app .. "/AGENTS.md", "app agents")
        T.write(app .. "/CLAUDE.local.md", "mine")
        vim.env.HOME = home
        vim.cmd.cd(app)
        T.setup(app, { base_url = MOCK_URL })
        vim.cmd("checkhealth lathe")
        local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
        vim.cmd("bwipeout!")
        local function pos(s)
          local i = text:find(s, 1, true)
          if not i then
            error("checkhealth lacks " .. s .. ":\n" .. text)
          end
          return i
        end
        local order = {
          pos("memory file (user): " .. home .. "/.claude/CLAUDE.md"),
          pos("memory file (project): " .. repo .. "/CLAUDE.md"),
          pos("memory file (import): " .. repo .. "/docs/more.md (imported by " .. repo .. "/CLAUDE.md)"),
          pos("memory file (project): " .. app .. "/AGENTS.md"),
          pos("memory file (local): " .. app .. "/CLAUDE.local.md"),
        }
        for i = 2, #order do
          T.eq("in the model's order " .. i, order[i] > order[i - 1], true)
        end
        pos("memory import nope.md (imported by " .. repo .. "/CLAUDE.md) was not found: skipped")
        T.eq("info().memory", #T.lathe.info().memory.files, 5)
        "###,
    )
}
