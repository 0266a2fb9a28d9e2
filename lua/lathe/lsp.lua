-- What lathe's core (src/adapters/lsp.rs) reads from vim.lsp and vim.diagnostic:
-- plain tables only. Main thread.

--- The module `require("lathe.lsp")`.
---@class lathe.lsp
local M = {}

--- Neovim's `vim.lsp` once something loaded it completely, else nil.
--- Lathe never loads it itself: no language server runs before it is
--- loaded (starting one loads it), loading it costs milliseconds, and
--- reading `vim.lsp` while Neovim is still loading it (`package.loaded`
--- then holds the loader's sentinel, a truthy userdata) would re-enter the
--- load and fail with "loop or previous error loading module 'vim.lsp'",
--- an error LuaJIT then repeats for every later `require("vim.lsp")`.
--- Every reader here goes through it.
---@return table?
function M.loaded()
  local lsp = package.loaded["vim.lsp"]
  return type(lsp) == "table" and lsp or nil
end

--- `get_clients(filter)`, or none when `vim.lsp` is not loaded.
---@param filter table?
---@return vim.lsp.Client[]
local function get_clients(filter)
  local lsp = M.loaded()
  return lsp and lsp.get_clients(filter) or {}
end

--- `vim.lsp.get_client_by_id(id)`, nil when `vim.lsp` is not loaded.
---@param id integer
---@return vim.lsp.Client?
local function client_by_id(id)
  local lsp = M.loaded()
  return lsp and lsp.get_client_by_id(id) or nil
end

--- Language-server clients attached to buffer `bufnr` (0 when none), or
--- running at all when `bufnr` is nil.
---@param bufnr integer?
---@return integer
function M.clients(bufnr)
  return #get_clients(bufnr and { bufnr = bufnr } or nil)
end

--- The diagnostics of buffer `bufnr` (every buffer when nil), as
--- `{ path, line (1-based), severity (1 = error … 4 = hint), source?, message }`,
--- sorted by path and line. Buffers without a name are left out.
---@param bufnr integer?
---@return table[]
function M.get(bufnr)
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    local name = vim.api.nvim_buf_is_valid(d.bufnr) and vim.api.nvim_buf_get_name(d.bufnr) or ""
    if name ~= "" then
      out[#out + 1] = {
        path = name,
        line = d.lnum + 1,
        severity = d.severity or 1,
        source = type(d.source) == "string" and d.source or nil,
        message = tostring(d.message),
      }
    end
  end
  table.sort(out, function(a, b)
    if a.path ~= b.path then
      return a.path < b.path
    end
    return a.line < b.line
  end)
  return out
end

--- Calls `on_change()` on every `DiagnosticChanged` of buffer `bufnr` (a
--- client published, `:help DiagnosticChanged`) until `M.unwatch(id)`.
---@param bufnr integer
---@param on_change fun()
---@return integer id The autocmd's id.
function M.watch(bufnr, on_change)
  return vim.api.nvim_create_autocmd("DiagnosticChanged", {
    buffer = bufnr,
    desc = "lathe: diagnostics after an edit",
    callback = function()
      on_change()
    end,
  })
end

--- Stops a watch of `M.watch` (a no-op when it is gone already).
---@param id integer
function M.unwatch(id)
  pcall(vim.api.nvim_del_autocmd, id)
end

-- Navigation for the LSP tools (src/adapters/lsp_nav.rs): load a file so
-- servers attach, what a buffer's clients support, send one request with a
-- callback, cancel it, and count the running servers.

--- Loads `path` into a buffer when none holds it: hidden (no window) and
--- unlisted, so language servers attach as when the user opens it (filetype
--- detected). Returns the buffer number.
---@param path string
---@return integer
function M.open(path)
  local b = vim.fn.bufadd(path)
  if not vim.api.nvim_buf_is_loaded(b) then
    vim.fn.bufload(b)
    if vim.bo[b].filetype == "" then
      local ft = vim.filetype.match({ buf = b })
      if ft then
        vim.bo[b].filetype = ft
      end
    end
  end
  return b
end

--- What a request of `method` on buffer `bufnr` can use: `attached`, the
--- names of its clients; `clients`, those supporting `method` as
--- `{ id, name, encoding }` (`offset_encoding`); `starting`, true while
--- some client is not initialized yet (it may still attach);
--- `line_count`; and `text`, line `line` (1-based) when it exists.
---@param bufnr integer
---@param method string
---@param line integer?
---@return table
function M.state(bufnr, method, line)
  local out = { attached = {}, clients = {}, line_count = vim.api.nvim_buf_line_count(bufnr), starting = false }
  for _, c in ipairs(get_clients()) do
    if not c.initialized then
      out.starting = true
    end
  end
  for _, c in ipairs(get_clients({ bufnr = bufnr })) do
    out.attached[#out.attached + 1] = c.name
    if c:supports_method(method, bufnr) then
      out.clients[#out.clients + 1] = { id = c.id, name = c.name, encoding = c.offset_encoding or "utf-16" }
    end
  end
  if line and line >= 1 and line <= out.line_count then
    out.text = vim.api.nvim_buf_get_lines(bufnr, line - 1, line, false)[1]
  end
  return out
end

--- Like `M.state` for a request without a document (`workspace/symbol`):
--- every running client.
---@param method string
---@return table
function M.workspace_state(method)
  local out = { attached = {}, clients = {}, line_count = 0 }
  for _, c in ipairs(get_clients()) do
    out.attached[#out.attached + 1] = c.name
    if c:supports_method(method) then
      out.clients[#out.clients + 1] = { id = c.id, name = c.name, encoding = c.offset_encoding or "utf-16" }
    end
  end
  return out
end

--- Calls `on_attach()` once when a client attaches to buffer `bufnr`.
---@param bufnr integer
---@param on_attach fun()
---@return integer id The autocmd's id (remove it with `M.unwatch`).
function M.on_attach(bufnr, on_attach)
  return vim.api.nvim_create_autocmd("LspAttach", {
    buffer = bufnr,
    once = true,
    desc = "lathe: a server attached to a file an LSP tool asks about",
    callback = function()
      on_attach()
    end,
  })
end

--- Sends `method` to client `client_id` for buffer `bufnr` (nil for
--- `workspace/symbol`, which sends `query`) at 0-based `line` and
--- `character` (the client's encoding; nil for whole-document requests).
--- `handler(err, result)` gets the error's message or the result. Returns
--- the request id, nil when it could not be sent.
---@return integer?
function M.request(client_id, method, bufnr, line, character, query, handler)
  local client = client_by_id(client_id)
  if not client then
    return nil
  end
  local params
  if method == "workspace/symbol" then
    params = { query = query }
  else
    params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) } }
    if line then
      params.position = { line = line, character = character }
    end
    if method == "textDocument/references" then
      params.context = { includeDeclaration = true }
    end
  end
  local ok, id = client:request(method, params, function(err, result)
    handler(err and tostring(err.message or err) or nil, result)
  end, bufnr)
  return ok and id or nil
end

--- Cancels request `request_id` of client `client_id` (`$/cancelRequest`).
---@param client_id integer
---@param request_id integer
function M.cancel(client_id, request_id)
  local client = client_by_id(client_id)
  if client then
    pcall(client.cancel_request, client, request_id)
  end
end

--- Running (not stopped) language-server clients.
---@return integer
function M.running()
  local n = 0
  for _, c in ipairs(get_clients()) do
    if not c:is_stopped() then
      n = n + 1
    end
  end
  return n
end

--- Calls `on_count(n)` with `M.running()` now and after every `LspAttach`
--- and `LspDetach` (again on the next loop, when a stopping client is
--- gone). Idempotent: one augroup. Never loads `vim.lsp` (0 until
--- something loads it: starting a server does).
---@param on_count fun(n: integer)
function M.track(on_count)
  local group = vim.api.nvim_create_augroup("lathe_lsp_tools", { clear = true })
  local function count()
    on_count(M.running())
  end
  vim.api.nvim_create_autocmd({ "LspAttach", "LspDetach" }, {
    group = group,
    desc = "lathe: offer the LSP tools while a language server runs",
    callback = function()
      count()
      vim.schedule(count)
    end,
  })
  count()
end

--- The names of the running language-server clients (`:checkhealth
--- lathe`); none while `vim.lsp` is not loaded.
---@return string[]
function M.names()
  local names = {}
  for _, c in ipairs(get_clients()) do
    names[#names + 1] = c.name
  end
  return names
end

return M
