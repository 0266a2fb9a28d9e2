//! Navigation through a real language server (sections 3 and 4):
//! LspDefinition, LspReferences, LspHover and LspSymbols against
//! `python-lsp-server` from `.venv` on a two-module Python project, the
//! clear messages when there is no server or it cannot answer, a server
//! that never answers (timeout and the turn's stop both return promptly
//! and cancel the request with the server), and the tools reaching the
//! model only while a server runs.

use crate::common::{load, lua_test};

/// Lua run before each test body. `project()` makes the two modules;
/// `enable_pylsp(dir)` configures pylsp for Python buffers the 0.11 way
/// (`vim.lsp.config` + `vim.lsp.enable`, as users do), so files the tools
/// load get it too; `wait_attached(buf)` waits for it; `start_slow(dir,
/// buf, caps, answers?)` attaches an in-process server with capabilities
/// `caps` that answers only the methods in `answers` (method → result),
/// never the others, and records what it was sent in `SLOW`.
fn prelude() -> String {
    let pylsp = concat!(env!("CARGO_MANIFEST_DIR"), "/../../.venv/bin/pylsp");
    format!(
        r#"
        local PYLSP = {pylsp:?}
        vim.cmd("filetype on")
        local UTIL = table.concat({{
          "def helper(x):",
          "    \"\"\"Doubles x.\"\"\"",
          "    return x * 2",
          "",
          "",
          "class Greeter:",
          "    def greet(self, name):",
          "        return 'hi ' + name",
          "",
        }}, "\n")
        local MAIN = table.concat({{
          "from util import helper, Greeter",
          "",
          "label = '😀😀😀😀'; value = helper(label)",
          "print(helper(3))",
          "Greeter().greet('a')",
          "",
        }}, "\n")
        local function project()
          local dir = T.project()
          T.write(dir .. "/util.py", UTIL)
          T.write(dir .. "/main.py", MAIN)
          return dir
        end
        local function enable_pylsp(dir)
          assert(vim.fn.executable(PYLSP) == 1, PYLSP .. " is missing: run `make .venv/bin/pylsp`")
          vim.lsp.config("pylsp", {{
            cmd = {{ PYLSP }},
            filetypes = {{ "python" }},
            root_dir = function(_, on_dir) on_dir(dir) end,
          }})
          vim.lsp.enable("pylsp")
        end
        local function wait_attached(buf)
          T.wait_for("a language server attached", 15000, function()
            return #vim.lsp.get_clients({{ bufnr = buf }}) > 0
          end)
        end
        SLOW = {{ requests = {{}}, notes = {{}} }}
        local function start_slow(dir, buf, caps, answers)
          local id = 0
          local function server(dispatchers)
            local closing = false
            return {{
              request = function(method, _, callback)
                id = id + 1
                if method == "initialize" then
                  callback(nil, {{ capabilities = caps }})
                elseif method == "shutdown" then
                  callback(nil, nil)
                elseif answers and answers[method] then
                  table.insert(SLOW.requests, method)
                  vim.schedule(function() callback(nil, answers[method]) end)
                else
                  table.insert(SLOW.requests, method)
                  if SLOW.on_request then SLOW.on_request(method) end
                end
                return true, id
              end,
              notify = function(method)
                table.insert(SLOW.notes, method)
                return true
              end,
              is_closing = function() return closing end,
              terminate = function()
                if not closing then
                  closing = true
                  vim.schedule(function() dispatchers.on_exit(0, 15) end)
                end
              end,
            }}
          end
          vim.lsp.start({{ name = "slow", cmd = server, root_dir = dir }}, {{ bufnr = buf }})
          wait_attached(buf)
        end
        local function ms_since(t0) return (vim.uv.hrtime() - t0) / 1e6 end
        local function err(r)
          assert(r.is_error, "expected an error, got: " .. tostring(r.content))
          return r.content
        end
        "#
    )
}

fn run(body: &str) -> Result<(), String> {
    lua_test(&format!("{}\n{body}", prelude()))
}

#[nvim_oxi::test]
fn definition_goes_across_files_and_counts_columns_in_utf16() -> Result<(), String> {
    run(r#"
        local dir = project()
        enable_pylsp(dir)
        T.setup(dir, { lsp_timeout_ms = 20000 })
        local main = T.open(dir .. "/main.py")
        wait_attached(main)
        -- Four emoji before `helper` are 16 bytes but 8 UTF-16 units: a
        -- byte column would land inside `label` and find its assignment.
        local r = T.ok("LspDefinition", { file_path = "main.py", line = 3, symbol = "helper" })
        T.eq("the definition in the other module", r.content, "util.py:1: def helper(x):")
        r = T.ok("LspDefinition", { file_path = dir .. "/main.py", line = 3, symbol = "label", occurrence = 2 })
        T.eq("the second occurrence on the line", r.content, "main.py:3: label = '😀😀😀😀'; value = helper(label)")
        -- util.py was not open: the tool loaded it hidden, unlisted, with the server attached.
        local util = vim.fn.bufnr(dir .. "/util.py")
        T.eq("util.py is not loaded yet (definition lines come from disk)", util == -1 or not vim.api.nvim_buf_is_loaded(util), true)
        r = T.ok("LspDefinition", { file_path = "util.py", line = 7, symbol = "greet" })
        T.eq("a definition asked from a file that was not open", r.content, "util.py:7: def greet(self, name):")
        util = vim.fn.bufnr(dir .. "/util.py")
        T.eq("loaded", vim.api.nvim_buf_is_loaded(util), true)
        T.eq("unlisted", vim.bo[util].buflisted, false)
        T.eq("no window shows it", vim.fn.bufwinid(util), -1)
        T.eq("pylsp attached to it", #vim.lsp.get_clients({ bufnr = util }), 1)
    "#)
}

#[nvim_oxi::test]
fn references_span_both_modules_and_hover_shows_the_docstring() -> Result<(), String> {
    run(r#"
        local dir = project()
        enable_pylsp(dir)
        T.setup(dir, { lsp_timeout_ms = 20000 })
        local main = T.open(dir .. "/main.py")
        wait_attached(main)
        local r = T.ok("LspReferences", { file_path = "util.py", line = 1, symbol = "helper" })
        T.eq("every reference, sorted, with its line", r.content, table.concat({
          "main.py:1: from util import helper, Greeter",
          "main.py:3: label = '😀😀😀😀'; value = helper(label)",
          "main.py:4: print(helper(3))",
          "util.py:1: def helper(x):",
        }, "\n"))
        r = T.ok("LspHover", { file_path = "main.py", line = 4, symbol = "helper" })
        T.has("the signature", r.content, "helper(x)")
        T.has("the docstring", r.content, "Doubles x.")
    "#)
}

#[nvim_oxi::test]
fn document_symbols_are_qualified_and_workspace_symbols_say_what_to_use() -> Result<(), String> {
    run(r#"
        local dir = project()
        enable_pylsp(dir)
        T.setup(dir, { lsp_timeout_ms = 20000 })
        local main = T.open(dir .. "/main.py")
        wait_attached(main)
        local r = T.ok("LspSymbols", { file_path = "util.py" })
        T.has("the function", r.content, "util.py:1: function helper")
        T.has("the class", r.content, "util.py:6: class Greeter")
        T.has("the method, qualified", r.content, "util.py:7: method Greeter.greet")
        r = T.ok("LspSymbols", { file_path = "util.py", query = "greet" })
        T.lacks("the query filters", r.content, "helper")
        -- pylsp has no workspace/symbol (no workspaceSymbolProvider).
        local e = err(T.tool("LspSymbols", { query = "helper" }))
        T.eq("pylsp has no workspace symbols: use Grep", e,
          "No running language server (pylsp) supports searching the workspace for symbols. Use Grep instead (e.g. Grep for \"\\bhelper\\b\"), or LspSymbols with a file_path for the symbols of one file.")
    "#)
}

#[nvim_oxi::test]
fn workspace_symbols_come_from_a_server_that_supports_them() -> Result<(), String> {
    run(r#"
        local dir = project()
        T.setup(dir)
        local main = T.open(dir .. "/main.py")
        local uri = vim.uri_from_fname(dir .. "/util.py")
        local function at(line) return { start = { line = line, character = 0 }, ["end"] = { line = line, character = 1 } } end
        start_slow(dir, main, { workspaceSymbolProvider = true }, {
          ["workspace/symbol"] = {
            { name = "greet", kind = 6, containerName = "Greeter", location = { uri = uri, range = at(6) } },
            { name = "helper", kind = 12, location = { uri = uri, range = at(0) } },
            { name = "len", kind = 12, location = { uri = "file:///usr/lib/python3/builtins.pyi", range = at(9) } },
          },
        })
        local r = T.ok("LspSymbols", { query = "e" })
        -- A symbol outside the project is left out, as Grep leaves out
        -- what reading would ask about, and the note says so.
        T.eq("the project's symbols, by path and line", r.content, table.concat({
          "util.py:1: function helper",
          "util.py:7: method Greeter.greet",
          "",
          "1 file was left out because reading it needs the user's permission (/usr/lib/python3/builtins.pyi): Read it to ask the user.",
        }, "\n"))
        T.eq("asked once", SLOW.requests, { "workspace/symbol" })
    "#)
}

#[nvim_oxi::test]
fn a_symbol_not_on_the_line_or_a_file_without_a_server_names_what_to_do() -> Result<(), String> {
    run(r#"
        local dir = project()
        enable_pylsp(dir)
        T.write(dir .. "/notes.txt", "helper notes\n")
        T.setup(dir, { lsp_timeout_ms = 20000 })
        local main = T.open(dir .. "/main.py")
        wait_attached(main)
        local e = err(T.tool("LspDefinition", { file_path = "main.py", line = 4, symbol = "Greeter" }))
        T.eq("the line's text and what to do", e,
          "Greeter is not on line 4 of main.py, which reads:\nprint(helper(3))\nRead the file or Grep for it to find the line where it is, then call LspDefinition again with that line and the symbol exactly as written there.")
        e = err(T.tool("LspDefinition", { file_path = "main.py", line = 40, symbol = "helper" }))
        T.has("past the end", e, "main.py has 5 lines, so there is no line 40.")
        e = err(T.tool("LspDefinition", { file_path = "main.py", line = 4, symbol = "helper", occurrence = 2 }))
        T.has("one occurrence only", e, "Line 4 of main.py has helper 1 time(s), so there is no occurrence 2.")
        e = err(T.tool("LspReferences", { file_path = "missing.py", line = 1, symbol = "x" }))
        T.has("a missing file", e, "File does not exist: missing.py.")
        local t0 = vim.uv.hrtime()
        e = err(T.tool("LspReferences", { file_path = "notes.txt", line = 1, symbol = "helper" }))
        T.eq("no server for a text file: use Grep", e,
          "No language server is attached to notes.txt (none of the running servers handles this kind of file), so LspReferences cannot answer. Use Grep instead (e.g. Grep for \"\\bhelper\\b\").")
        assert(ms_since(t0) < 8000, "the wait for an attach is bounded: " .. ms_since(t0))
    "#)
}

#[nvim_oxi::test]
fn a_read_deny_rule_refuses_the_lsp_tools_too() -> Result<(), String> {
    run(r#"
        local dir = project()
        enable_pylsp(dir)
        T.setup(dir, { lsp_timeout_ms = 20000, permissions = { deny = { "Read(util.py)" } } })
        local main = T.open(dir .. "/main.py")
        wait_attached(main)
        local e = err(T.tool("LspSymbols", { file_path = "util.py" }))
        T.has("denied like Read", e, "Read(util.py)")
        T.ok("LspSymbols", { file_path = "main.py" })
    "#)
}

#[nvim_oxi::test]
fn a_server_that_never_answers_times_out_and_the_request_is_cancelled() -> Result<(), String> {
    run(r#"
        local dir = project()
        T.setup(dir, { lsp_timeout_ms = 1000 })
        local main = T.open(dir .. "/main.py")
        start_slow(dir, main, { definitionProvider = true })
        local t0 = vim.uv.hrtime()
        local e = err(T.tool("LspDefinition", { file_path = "main.py", line = 4, symbol = "helper" }))
        local took = ms_since(t0)
        T.eq("the timeout names the server and the option", e,
          "The language server (slow) did not answer within 1000 ms (setup option lsp_timeout_ms), so the request was cancelled. It may still be starting or indexing: try again in a moment, or use Grep instead (e.g. Grep for \"\\bhelper\\b\").")
        assert(took >= 950 and took < 5000, "waited about lsp_timeout_ms (1000): " .. took)
        T.eq("the request reached the server", SLOW.requests, { "textDocument/definition" })
        T.wait_for("$/cancelRequest", 2000, function() return vim.tbl_contains(SLOW.notes, "$/cancelRequest") end)
        -- A method the server does not support: Grep named at once.
        e = err(T.tool("LspHover", { file_path = "main.py", line = 4, symbol = "helper" }))
        T.eq("unsupported", e,
          "The language server of main.py (slow) does not support hover. Use Grep instead (e.g. Grep for \"\\bhelper\\b\").")
    "#)
}

/// The model calls LspDefinition on a server that never answers, then the
/// user stops the turn: it ends at once (not at the 30 s bound) and the
/// request is cancelled with the server. The turn's first request was
/// sent with the LSP tools (a server runs).
const STOP_SCRIPT: &str = r#"{ "responses": [
  { "content": [
      { "type": "tool_use", "id": "toolu_d", "name": "LspDefinition",
        "input": { "file_path": "main.py", "line": 4, "symbol": "helper" } } ] }
] }"#;

#[nvim_oxi::test]
fn stopping_the_turn_ends_a_pending_request_at_once() -> Result<(), String> {
    crate::common::lua_test_with_model(
        STOP_SCRIPT,
        &format!(
            "{}\n{}",
            prelude(),
            r#"
        local dir = project()
        T.setup(dir, { base_url = MOCK_URL, lsp_timeout_ms = 30000 })
        local main = T.open(dir .. "/main.py")
        start_slow(dir, main, { definitionProvider = true })
        T.lathe.ask("where is helper defined?")
        T.wait_for("the request reached the server", 10000, function() return #SLOW.requests > 0 end)
        local t0 = vim.uv.hrtime()
        T.lathe.stop()
        T.eq("the turn ended", T.lathe.wait(5000), "stopped")
        assert(ms_since(t0) < 3000, "stopped promptly: " .. ms_since(t0))
        T.wait_for("$/cancelRequest", 2000, function() return vim.tbl_contains(SLOW.notes, "$/cancelRequest") end)
        "#
        ),
    )
}

/// The turn stopped inside the main-thread step that sends the request
/// (before the request's id reaches the waiting side, which is then
/// dropped): the request is still cancelled with the server.
#[nvim_oxi::test]
fn a_turn_stopped_while_its_request_is_being_sent_still_cancels_it() -> Result<(), String> {
    crate::common::lua_test_with_model(
        STOP_SCRIPT,
        &format!(
            "{}\n{}",
            prelude(),
            r#"
        local dir = project()
        T.setup(dir, { base_url = MOCK_URL, lsp_timeout_ms = 30000 })
        local main = T.open(dir .. "/main.py")
        start_slow(dir, main, { definitionProvider = true })
        SLOW.on_request = function() T.lathe.stop() end
        T.lathe.ask("where is helper defined?")
        T.eq("the turn ended", T.lathe.wait(5000), "stopped")
        T.eq("the request reached the server", SLOW.requests, { "textDocument/definition" })
        T.wait_for("$/cancelRequest", 5000, function() return vim.tbl_contains(SLOW.notes, "$/cancelRequest") end)
        "#
        ),
    )
}

/// The tools of each request the model got, by name, while `chunk` runs
/// three plain turns against mock-llm.
fn tools_per_request(chunk: &str) -> Result<Vec<Vec<String>>, String> {
    load();
    let script = r#"{ "responses": [
      { "content": [ { "type": "text", "text": "one" } ] },
      { "content": [ { "type": "text", "text": "two" } ] },
      { "content": [ { "type": "text", "text": "three" } ] }
    ] }"#;
    let script = mock_llm::Script::from_json(script).map_err(|e| format!("script: {e}"))?;
    let rt = lathe::host::runtime::handle().map_err(|e| e.to_string())?;
    let server = rt
        .block_on(mock_llm::spawn(script, None))
        .map_err(|e| format!("mock-llm: {e}"))?;
    lathe::host::lua_handle::lua()
        .globals()
        .set("MOCK_URL", server.url())
        .map_err(|e| e.to_string())?;
    lua_test(&format!("{}\n{chunk}", prelude()))?;
    Ok(server
        .requests()
        .iter()
        .map(|body| {
            body["tools"]
                .as_array()
                .map(|tools| {
                    tools
                        .iter()
                        .filter_map(|t| t["name"].as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect())
}

#[nvim_oxi::test]
fn the_lsp_tools_reach_the_model_only_while_a_server_runs() -> Result<(), String> {
    let tools = tools_per_request(
        r#"
        local dir = project()
        T.setup(dir, { base_url = MOCK_URL })
        local main = T.open(dir .. "/main.py")
        T.lathe.ask("first")
        T.eq("first turn", T.lathe.wait(10000), "done")
        start_slow(dir, main, {})
        T.lathe.ask("second")
        T.eq("second turn", T.lathe.wait(10000), "done")
        -- :checkhealth says so.
        vim.cmd("checkhealth lathe")
        local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
        T.has("checkhealth", text, "LSP tools offered to the model (LspDefinition, LspReferences, LspHover, LspSymbols): 1 language server running")
        -- The server stops: no longer offered.
        vim.lsp.get_clients({ name = "slow" })[1]:stop(true)
        T.wait_for("the server stopped", 5000, function() return #vim.lsp.get_clients() == 0 end)
        T.lathe.ask("third")
        T.eq("third turn", T.lathe.wait(10000), "done")
        "#,
    )?;
    let lsp = ["LspDefinition", "LspReferences", "LspHover", "LspSymbols"];
    if tools.len() != 3 {
        return Err(format!("want three requests, got {tools:?}"));
    }
    if tools[0].iter().any(|t| lsp.contains(&t.as_str())) {
        return Err(format!(
            "no server yet, yet LSP tools were sent: {:?}",
            tools[0]
        ));
    }
    if !tools[0].iter().any(|t| t == "Read") {
        return Err(format!("the other tools are sent: {:?}", tools[0]));
    }
    let tail: Vec<&str> = tools[1]
        .iter()
        .rev()
        .take(4)
        .rev()
        .map(String::as_str)
        .collect();
    if tail != lsp {
        return Err(format!(
            "with a server the LSP tools come last: {:?}",
            tools[1]
        ));
    }
    Ok(())
}

#[nvim_oxi::test]
fn checkhealth_says_the_lsp_tools_are_not_offered_without_a_server() -> Result<(), String> {
    run(r#"
        local dir = project()
        T.setup(dir)
        vim.cmd("checkhealth lathe")
        local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
        T.has("not offered, and why", text, "LSP tools not offered to the model: no language server is running (they are offered while one runs")
    "#)
}
