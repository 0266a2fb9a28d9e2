//! Diagnostics from a real language server (sections 2 and 4):
//! `python-lsp-server` with `pyflakes` from `.venv` (`make .venv/bin/pylsp`)
//! on a small Python project. An Edit that introduces an undefined name gets
//! it in its result, one that fixes it reports nothing, old problems are not
//! repeated, the wait is bounded when a server never publishes and absent
//! without a server, and the Diagnostics tool lists what the server found.

use crate::common::lua_test;

/// Lua run before each test body: `start_pylsp(dir, buf)` starts pylsp
/// for `dir` on `buf` and waits for its first diagnostics; `start_silent(dir,
/// buf)` attaches an in-process server that never publishes.
fn prelude() -> String {
    let pylsp = concat!(env!("CARGO_MANIFEST_DIR"), "/../../.venv/bin/pylsp");
    format!(
        r#"
        local PYLSP = {pylsp:?}
        local function start_pylsp(dir, buf)
          assert(vim.fn.executable(PYLSP) == 1, PYLSP .. " is missing: run `make .venv/bin/pylsp`")
          local published = false
          vim.api.nvim_create_autocmd("DiagnosticChanged", {{
            buffer = buf,
            once = true,
            callback = function() published = true end,
          }})
          vim.lsp.start({{ name = "pylsp", cmd = {{ PYLSP }}, root_dir = dir }}, {{ bufnr = buf }})
          T.wait_for("pylsp's first diagnostics", 15000, function() return published end)
        end
        local function start_silent(dir, buf)
          local function server(dispatchers)
            local closing = false
            return {{
              request = function(method, _, callback)
                if method == "initialize" then
                  callback(nil, {{ capabilities = {{}} }})
                else
                  callback(nil, nil)
                end
                return true, 1
              end,
              notify = function() return true end,
              is_closing = function() return closing end,
              terminate = function() closing = true end,
            }}
          end
          vim.lsp.start({{ name = "silent", cmd = server, root_dir = dir }}, {{ bufnr = buf }})
          T.wait_for("the silent server attached", 5000, function()
            return #vim.lsp.get_clients({{ bufnr = buf }}) > 0
          end)
        end
        local function ms_since(t0) return (vim.uv.hrtime() - t0) / 1e6 end
        "#
    )
}

fn run(body: &str) -> Result<(), String> {
    lua_test(&format!("{}\n{body}", prelude()))
}

#[nvim_oxi::test]
fn an_edit_that_introduces_an_undefined_name_gets_the_diagnostic() -> Result<(), String> {
    run(r#"
        local dir = T.project()
        local path = dir .. "/m.py"
        T.write(path, "import os\n\n\ndef f():\n    return os.getcwd()\n")
        T.setup(dir, { permissions = { mode = "acceptEdits" }, diagnostics_wait_ms = 8000 })
        local buf = T.open(path)
        start_pylsp(dir, buf)
        T.ok("Read", { file_path = path })
        local t0 = vim.uv.hrtime()
        local r = T.ok("Edit", { file_path = path, old_string = "return os.getcwd()", new_string = "return oss.getcwd()" })
        T.has("the new error, with its line and source", r.content,
          "The language server reports new problems in and near this change; fix them before moving on:\nm.py:5: error [pyflakes] undefined name 'oss'")
        -- `import os` is now unused: new too, but away from the change.
        T.has("the new problem away from the change is counted", r.content,
          "1 more elsewhere in m.py; call Diagnostics with this file_path to see them.")
        assert(ms_since(t0) < 5000, "returned as soon as pylsp published, not at the 8 s bound: " .. ms_since(t0))
    "#)
}

#[nvim_oxi::test]
fn an_edit_that_fixes_an_error_reports_none_and_old_errors_are_not_repeated() -> Result<(), String>
{
    run(r#"
        local dir = T.project()
        local path = dir .. "/m.py"
        T.write(path, "x = undefined_a\n\n\n\n\ndef f():\n    return 1\n")
        T.setup(dir, { permissions = { mode = "acceptEdits" } })
        local buf = T.open(path)
        start_pylsp(dir, buf)
        T.ok("Read", { file_path = path })
        -- A new error at line 7; the one at line 1 was there before.
        local r = T.ok("Edit", { file_path = path, old_string = "return 1", new_string = "return undefined_b" })
        T.has("the new error", r.content, "m.py:7: error [pyflakes] undefined name 'undefined_b'")
        T.lacks("the old error is not repeated", r.content, "undefined_a")
        -- The fix: nothing new to report.
        r = T.ok("Edit", { file_path = path, old_string = "return undefined_b", new_string = "return 2" })
        T.lacks("a fix reports no diagnostics", r.content, "language server")
        -- The server did answer: the Diagnostics tool sees only the old error.
        r = T.ok("Diagnostics", { file_path = path })
        T.eq("Diagnostics of the file", r.content, "m.py:1: error [pyflakes] undefined name 'undefined_a'")
    "#)
}

#[nvim_oxi::test]
fn the_wait_is_bounded_when_a_server_never_publishes_and_absent_without_one() -> Result<(), String>
{
    run(r#"
        local dir = T.project()
        local path = dir .. "/m.py"
        T.write(path, "a = 1\n")
        T.setup(dir, { permissions = { mode = "acceptEdits" }, diagnostics_wait_ms = 1500 })
        local buf = T.open(path)
        -- No server: no wait, nothing added.
        T.ok("Read", { file_path = path })
        local t0 = vim.uv.hrtime()
        local r = T.ok("Edit", { file_path = path, old_string = "a = 1", new_string = "a = 2" })
        T.lacks("no server, no note", r.content, "language server")
        assert(ms_since(t0) < 1000, "an edit without servers does not wait: " .. ms_since(t0))
        -- A server that never publishes: the edit waits diagnostics_wait_ms, then says so.
        start_silent(dir, buf)
        t0 = vim.uv.hrtime()
        r = T.ok("Edit", { file_path = path, old_string = "a = 2", new_string = "a = 3" })
        local took = ms_since(t0)
        T.has("says the server did not answer", r.content,
          "The language server had not reported on this change when lathe stopped waiting; call Diagnostics with this file_path to check it.")
        assert(took >= 1450 and took < 5000, "waited about diagnostics_wait_ms (1500): " .. took)
        T.eq("the edit applied", T.lines(buf), { "a = 3" })
    "#)
}

#[nvim_oxi::test]
fn the_diagnostics_tool_lists_a_file_or_every_open_one_with_a_severity_filter() -> Result<(), String>
{
    run(r#"
        local dir = T.project()
        local a = dir .. "/a.py"
        local b = dir .. "/b.py"
        T.write(a, "import os\nx = missing\n")
        T.write(b, "y = 1\n")
        T.setup(dir)
        local bb = T.open(b)
        start_pylsp(dir, bb)
        local ba = T.open(a)
        start_pylsp(dir, ba)
        T.wait_for("pylsp's diagnostics of a.py", 15000, function()
          return #vim.diagnostic.get(ba) >= 2
        end)
        local r = T.ok("Diagnostics", {})
        T.eq("every open file, warnings and errors", r.content,
          "a.py:1: warning [pyflakes] 'os' imported but unused\na.py:2: error [pyflakes] undefined name 'missing'")
        r = T.ok("Diagnostics", { file_path = "a.py", severity = "error" })
        T.eq("errors of one file", r.content, "a.py:2: error [pyflakes] undefined name 'missing'")
        r = T.ok("Diagnostics", { file_path = b })
        T.eq("a clean file", r.content, "No diagnostics of severity warning or worse for b.py.")
        T.write(dir .. "/c.py", "z = nope\n")
        r = T.ok("Diagnostics", { file_path = "c.py" })
        T.has("a file not open says so", r.content, "No diagnostics for c.py: it is not open in the editor")
    "#)
}

#[nvim_oxi::test]
fn checkhealth_says_whether_a_language_server_runs() -> Result<(), String> {
    run(r#"
        local dir = T.project()
        local path = dir .. "/m.py"
        T.write(path, "a = 1\n")
        T.setup(dir)
        vim.cmd("checkhealth lathe")
        local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
        T.has("none yet", text, "no language server running: Edit and Write report no diagnostics")
        vim.cmd("bwipeout!")
        local buf = T.open(path)
        start_pylsp(dir, buf)
        vim.cmd("checkhealth lathe")
        text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
        T.has("pylsp named", text, "language servers running: pylsp (Edit and Write report the new diagnostics of a change; the Diagnostics tool lists them)")
    "#)
}
