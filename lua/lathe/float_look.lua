-- How the permission float looks when the cursor is not in it
-- (src/ui/float/look.rs calls these; `:help lathe-float`): a dimmed border,
-- title and footer, a footer saying how to answer, and out of the way of
-- the cursor of the window the user is in.
local M = {}

local api = vim.api

local INACTIVE = { "FloatBorder", "FloatTitle", "FloatFooter" }

--- Sets 'winhighlight' of `win` without the dimming, then with it when
--- `dim` (the float's own entries, such as style=minimal's EndOfBuffer,
--- stay, once each).
---@param win integer
---@param dim boolean
local function set_dim(win, dim)
  local kept, seen = {}, {}
  for item in vim.gsplit(vim.wo[win].winhighlight, ",", { plain = true }) do
    if item ~= "" and not seen[item] and not item:find(":LatheFloatInactive$") then
      seen[item] = true
      table.insert(kept, item)
    end
  end
  if dim then
    for _, group in ipairs(INACTIVE) do
      table.insert(kept, group .. ":LatheFloatInactive")
    end
  end
  vim.wo[win].winhighlight = table.concat(kept, ",")
end

--- Dims `win` and puts `footer` in its footer; moves it up or down when it
--- covers the cursor of the current window (same tab only), shorter when
--- it does not fit above or below it.
---@param win integer the float
---@param footer string
function M.inactive(win, footer)
  if not api.nvim_win_is_valid(win) then
    return
  end
  api.nvim_set_hl(0, "LatheFloatInactive", { link = "Comment", default = true })
  set_dim(win, true)
  local cfg = api.nvim_win_get_config(win)
  local update = { footer = footer }
  local cur = api.nvim_get_current_win()
  if api.nvim_win_get_tabpage(cur) == api.nvim_win_get_tabpage(win) and cur ~= win then
    local pos = vim.fn.screenpos(cur, vim.fn.line(".", cur), vim.fn.col(".", cur))
    local row = pos.row - 1 -- 0-based screen row of the cursor
    local top = type(cfg.row) == "number" and cfg.row or 0
    local tall = cfg.height + 2 -- the border
    if pos.row > 0 and row >= top and row < top + tall then
      -- Into the larger space above or below the cursor, shorter if need be
      -- (a redraw when it is focused again gives it back its height).
      local above = row
      local below = vim.o.lines - vim.o.cmdheight - row - 1
      local room = math.max(above, below) - 2
      if room >= 1 then
        local height = math.min(cfg.height, room)
        update.height = height
        update.row = above >= below and row - height - 2 or row + 1
        update.relative = cfg.relative
        update.col = cfg.col
      end
    end
  end
  api.nvim_win_set_config(win, update)
end

--- Undoes the dimming of `win` (its footer and place come from a redraw).
---@param win integer the float
function M.active(win)
  if api.nvim_win_is_valid(win) then
    set_dim(win, false)
  end
end

return M
