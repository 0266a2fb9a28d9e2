-- The native library without a Rust toolchain: find the one to load, and
-- download the prebuilt one of this plugin's version and platform from the
-- release, verify its sha256 and install it atomically. See
-- `:help lathe-install` and docs/install.md ("Install without cargo").

--- The module `require("lathe.install")`.
---@class lathe.install
local M = {}

local uv = vim.uv or vim.loop

--- The plugin's version (`lua/lathe/version.lua`).
M.version = require("lathe.version")

--- Where releases are published: `{url}/v{version}/{asset}` and
--- `{url}/v{version}/checksums.txt` (GitHub's release download URLs).
--- `vim.g.lathe_download_url` or `$LATHE_DOWNLOAD_URL` replaces it.
M.DEFAULT_URL = "https://github.com/lathe-nvim/lathe/releases/download"

--- The checksums file of a release: `sha256sum` output, one
--- `{hex}  {asset}` line per published library.
M.CHECKSUMS = "checksums.txt"

--- What the user reads (tests/all/install.rs checks them word for word). `%s`
--- are filled in order; ROOT is the plugin directory.
M.msg = {
  downloading = "lathe: downloading the prebuilt library %s (once per version; see :help lathe-install)…",
  installed = "lathe: installed %s (sha256 verified)",
  installed_restart = "lathe: installed %s (sha256 verified); restart Neovim to load it",
  no_curl = "lathe: cannot download the library: `curl` is not on $PATH. Install curl and run :Lathe build, or build from source with `make` in %s (needs cargo)",
  no_sha = "lathe: cannot verify a download: neither `sha256sum` nor `shasum` is on $PATH. Install one and run :Lathe build, or build from source with `make` in %s (needs cargo)",
  unsupported = "lathe: no prebuilt library is made for %s; build from source with `make` in %s (needs cargo)",
  http = "lathe: could not download %s: %s. Check the network (or vim.g.lathe_download_url) and run :Lathe build, or build from source with `make` in %s (needs cargo)",
  not_published = "lathe: release v%s has no prebuilt library for %s (it has: %s). Build from source with `make` in %s (needs cargo)",
  checksum = "lathe: checksum mismatch for %s: expected sha256 %s, got %s; it was not installed. Run :Lathe build to try again, or build from source with `make` in %s (needs cargo)",
  write = "lathe: could not install %s: %s",
  not_built = "lathe: the native library is not built. Run :Lathe build (downloads it) or `make` in %s (lazy.nvim: build = \"make\")",
  mismatch_local = "lathe: %s is version %s but the plugin is version %s. Rebuild it: run `make` in %s (lazy.nvim: build = \"make\"), then restart Neovim",
  mismatch_download = "lathe: %s is version %s but the plugin is version %s. Delete it and run :Lathe build, then restart Neovim",
  local_wins = "lathe: %s (built from source) is loaded before any download; run `make` in %s to rebuild it",
  busy = "lathe: a download is already running",
}

--- The plugin's root directory (three levels above this file).
---@return string root
function M.root()
  local src = debug.getinfo(1, "S").source:gsub("^@", "")
  return vim.fn.fnamemodify(src, ":p:h:h:h")
end

--- This machine's platform as release assets name it: "linux-x86_64",
--- "linux-aarch64", "macos-x86_64" or "macos-aarch64".
---@return string|nil platform nil when no library is made for it.
---@return string what The OS and architecture LuaJIT reports, for messages.
function M.platform()
  local os_name = ({ Linux = "linux", OSX = "macos" })[jit.os]
  local arch = ({ x64 = "x86_64", arm64 = "aarch64" })[jit.arch]
  local what = ("%s %s"):format(jit.os, jit.arch)
  if not (os_name and arch) then
    return nil, what
  end
  return os_name .. "-" .. arch, what
end

--- The release asset of `platform` for this version:
--- `lathe-{version}-{platform}.{so|dylib}`.
---@param platform string e.g. "linux-x86_64"
---@return string asset
function M.asset(platform)
  local ext = vim.startswith(platform, "macos-") and "dylib" or "so"
  return ("lathe-%s-%s.%s"):format(M.version, platform, ext)
end

--- Where a downloaded library goes: `{root}/lib/{asset}` (ignored by git).
---@return string|nil path nil on a platform with no prebuilt library.
function M.download_path()
  local platform = M.platform()
  return platform and (M.root() .. "/lib/" .. M.asset(platform)) or nil
end

--- The libraries built from source, in the order they are tried: the copy
--- `make` installs, then the cargo build output. Either wins over a download.
---@return string[] paths
function M.local_candidates()
  local root = M.root()
  local ext = (jit and jit.os == "OSX") and "dylib" or "so"
  return { root .. "/lua/lathe/lathe.so", root .. "/target/release/liblathe." .. ext }
end

--- Every library `require("lathe")` may load, in order: the local builds,
--- then the downloaded one of this version (when the platform has one).
---@return string[] paths
function M.candidates()
  local list = M.local_candidates()
  local dl = M.download_path()
  if dl then
    table.insert(list, dl)
  end
  return list
end

--- The first candidate that exists.
---@return string|nil path
---@return boolean is_local True when it was built from source.
function M.find()
  for i, path in ipairs(M.candidates()) do
    if uv.fs_stat(path) then
      return path, i <= #M.local_candidates()
    end
  end
  return nil, false
end

--- The error for a loaded `core` whose version is not the plugin's, or nil.
---@param core table The `lathe.core` exports.
---@param path string The library it came from.
---@param is_local boolean Built from source (vs downloaded).
---@return string|nil message
function M.version_error(core, path, is_local)
  local got = type(core.version) == "function" and core.version() or "unknown (older than 0.1.0)"
  if got == M.version then
    return nil
  end
  if is_local then
    return M.msg.mismatch_local:format(path, got, M.version, M.root())
  end
  return M.msg.mismatch_download:format(path, got, M.version)
end

--- The download URL prefix of this version's release.
local function release_url()
  local base = vim.g.lathe_download_url or vim.env.LATHE_DOWNLOAD_URL or M.DEFAULT_URL
  return ("%s/v%s"):format((tostring(base):gsub("/+$", "")), M.version)
end

--- curl's complaint, on one line.
local function curl_error(r)
  local e = vim.trim((r.stderr or ""):gsub("%s+", " "))
  return e ~= "" and e or ("curl exited with " .. tostring(r.code))
end

--- The sha256 (hex) of file `path` with `sha256sum` or `shasum -a 256`.
---@return string|nil hex
---@return string|nil err
local function sha256_file(run, path)
  local cmd
  if vim.fn.executable("sha256sum") == 1 then
    cmd = { "sha256sum", path }
  elseif vim.fn.executable("shasum") == 1 then
    cmd = { "shasum", "-a", "256", path }
  else
    return nil, M.msg.no_sha:format(M.root())
  end
  local r = run(cmd)
  local hex = r.code == 0 and (r.stdout or ""):match("^(%x+)")
  if not hex then
    return nil, M.msg.write:format(path, vim.trim(r.stderr or "") .. " (" .. cmd[1] .. " failed)")
  end
  return hex:lower()
end

--- The steps of a download, with `run(cmd)` running a command to its end
--- (synchronously, or in a coroutine) and returning `vim.system`'s result.
---@return string|nil path The installed library.
---@return string|nil err A message from `M.msg`.
local function fetch(run)
  local root = M.root()
  local platform, what = M.platform()
  if not platform then
    return nil, M.msg.unsupported:format(what, root)
  end
  if vim.fn.executable("curl") ~= 1 then
    return nil, M.msg.no_curl:format(root)
  end
  local asset = M.asset(platform)
  local url = release_url()

  local sums_url = url .. "/" .. M.CHECKSUMS
  local r = run({
    "curl",
    "--fail",
    "--silent",
    "--show-error",
    "--location",
    "--connect-timeout",
    "10",
    "--max-time",
    "60",
    sums_url,
  })
  if r.code ~= 0 then
    return nil, M.msg.http:format(sums_url, curl_error(r), root)
  end
  local want, published = nil, {}
  for line in (r.stdout or ""):gmatch("[^\r\n]+") do
    local hex, name = line:match("^(%x+)%s+%*?(%S+)%s*$")
    if name == asset then
      want = hex:lower()
    elseif name then
      table.insert(published, (name:match("^lathe%-[^-]+%-(.+)%.%w+$") or name))
    end
  end
  if not want then
    local list = #published > 0 and table.concat(published, ", ") or "none"
    return nil, M.msg.not_published:format(M.version, platform, list, root)
  end

  local dest = root .. "/lib/" .. asset
  local made = pcall(vim.fn.mkdir, root .. "/lib", "p")
  if not (made and uv.fs_access(root .. "/lib", "W")) then
    return nil, M.msg.write:format(dest, "cannot write to " .. root .. "/lib")
  end
  -- Beside the target, so the rename below is atomic (same file system).
  local tmp = ("%s.tmp.%d"):format(dest, uv.os_getpid())
  local asset_url = url .. "/" .. asset
  r = run({
    "curl",
    "--fail",
    "--silent",
    "--show-error",
    "--location",
    "--connect-timeout",
    "10",
    "--max-time",
    "300",
    "--output",
    tmp,
    asset_url,
  })
  if r.code ~= 0 then
    os.remove(tmp)
    return nil, M.msg.http:format(asset_url, curl_error(r), root)
  end
  local got, err = sha256_file(run, tmp)
  if not got then
    os.remove(tmp)
    return nil, err
  end
  if got ~= want then
    os.remove(tmp)
    return nil, M.msg.checksum:format(asset, want, got, root)
  end
  local ok, rename_err = os.rename(tmp, dest)
  if not ok then
    os.remove(tmp)
    return nil, M.msg.write:format(dest, tostring(rename_err))
  end
  -- Libraries of other versions are never loaded again.
  for name, kind in vim.fs.dir(root .. "/lib") do
    local lib = name:match("^lathe%-.+%.so$") or name:match("^lathe%-.+%.dylib$")
    if kind == "file" and name ~= asset and lib then
      os.remove(root .. "/lib/" .. name)
    end
  end
  return dest
end

--- Runs `cmd` to its end, blocking (curl's own timeouts bound it).
local function run_sync(cmd)
  local ok, job = pcall(vim.system, cmd, { text = true })
  if not ok then
    return { code = -1, stdout = "", stderr = tostring(job) }
  end
  return job:wait()
end

--- Downloads, verifies and installs the library, blocking until done (what
--- the first `require("lathe")` does when no library exists).
---@return string|nil path The installed library.
---@return string|nil err Why not (a message from `M.msg`).
function M.download_sync()
  return fetch(run_sync)
end

local busy = false

--- `:Lathe build`: downloads the library in the background, with messages.
--- When a library built from source exists it says so instead (it wins).
--- `on_done(path, err)`, when given, runs on the main thread at the end.
---@param on_done? fun(path: string|nil, err: string|nil)
function M.build(on_done)
  local function finish(path, err)
    if err then
      vim.notify(err, vim.log.levels.ERROR)
    elseif package.loaded["lathe.core"] then
      vim.notify(M.msg.installed_restart:format(path))
    else
      vim.notify(M.msg.installed:format(path))
    end
    if on_done then
      on_done(path, err)
    end
  end
  local path, is_local = M.find()
  if path and is_local then
    vim.notify(M.msg.local_wins:format(path, M.root()))
    if on_done then
      on_done(path, nil)
    end
    return
  end
  if busy then
    vim.notify(M.msg.busy, vim.log.levels.WARN)
    return
  end
  busy = true
  local platform = M.platform()
  if platform then
    vim.notify(M.msg.downloading:format(M.asset(platform)))
  end
  local co = coroutine.create(function()
    local run = function(cmd)
      local me = coroutine.running()
      local ok, err = pcall(vim.system, cmd, { text = true }, function(r)
        vim.schedule(function()
          coroutine.resume(me, r)
        end)
      end)
      if not ok then
        return { code = -1, stdout = "", stderr = tostring(err) }
      end
      return coroutine.yield()
    end
    local ok, p, err = pcall(fetch, run)
    busy = false
    if not ok then
      finish(nil, "lathe: download failed: " .. tostring(p))
    else
      finish(p, err)
    end
  end)
  coroutine.resume(co)
end

--- The library `require("lathe")` loads: a local build, else this
--- version's download, else (unless `vim.g.lathe_download` is false) one
--- downloaded now, blocking, with a message first. Errors with a message
--- saying what to do when there is none.
---@return string path
---@return boolean is_local
function M.ensure()
  local path, is_local = M.find()
  if path then
    return path, is_local
  end
  if vim.g.lathe_download == false or vim.env.LATHE_DOWNLOAD == "0" then
    error(M.msg.not_built:format(M.root()), 0)
  end
  local platform = M.platform()
  if platform then
    vim.notify(M.msg.downloading:format(M.asset(platform)))
    vim.cmd.redraw()
  end
  local dl, err = M.download_sync()
  if not dl then
    error(err, 0)
  end
  vim.notify(M.msg.installed:format(dl))
  return dl, false
end

return M
