-- `:checkhealth lathe`
local M = {}

function M.check()
  local h = vim.health
  h.start("lathe")

  if vim.fn.has("nvim-0.11") == 1 then
    h.ok("Neovim " .. tostring(vim.version()))
  else
    h.error("Neovim 0.11 or newer is required, found " .. tostring(vim.version()))
  end

  local ok, lathe = pcall(require, "lathe")
  if ok then
    local found
    for _, p in ipairs(lathe.library_candidates()) do
      if (vim.uv or vim.loop).fs_stat(p) then
        found = p
        break
      end
    end
    h.ok("native library loaded" .. (found and (": " .. found) or " (lathe.core)"))
  else
    h.error(tostring(lathe), { "Run `make` in the plugin directory (lazy.nvim: build = \"make\")" })
  end

  local base_url = os.getenv("ANTHROPIC_BASE_URL") or ""
  local local_url = base_url:match("^https?://127%.") or base_url:match("^https?://localhost")
  if (os.getenv("ANTHROPIC_API_KEY") or "") ~= "" then
    h.ok("ANTHROPIC_API_KEY is set")
  elseif local_url then
    h.ok("no API key, but ANTHROPIC_BASE_URL points at a local server: " .. base_url)
  else
    h.warn("ANTHROPIC_API_KEY is not set", {
      "export ANTHROPIC_API_KEY=...",
      "or setup{ api_key_env = \"...\" } / setup{ base_url = \"http://127.0.0.1:PORT\" } for a local server",
    })
  end

  h.info("project root (cwd): " .. vim.fn.getcwd())
end

return M
