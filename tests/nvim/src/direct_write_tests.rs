//! An agent edit of a loaded buffer saved without Neovim's `:write`
//! (`nvim::direct_write`; docs/architecture.md, "Edits through buffers";
//! `:help lathe-save`): the file is byte-exact, Neovim takes it as its own
//! (a later `:w` does not ask, `:checktime` reloads nothing, undo works),
//! a buffer with write autocmds still goes through `:write`, and the user's
//! typing between the edit and the save is kept.

/// CRLF without a final newline, through a symlink, mode 0640: the file
/// holds the edit byte for byte, the link and the mode stay, Neovim's
/// `:write` did not run. Then `:checktime` keeps the buffer (an extmark
/// survives, nothing is reloaded), one `u` undoes the edit and leaves the
/// buffer modified, and the user's `:w` writes without the "changed since
/// reading it" prompt.
#[nvim_oxi::test]
fn an_edit_saves_the_file_exactly_and_neovim_takes_it() -> Result<(), String> {
    crate::common::lua_test(
        r#"
        local dir = T.project()
        local real, link = dir .. "/real.txt", dir .. "/link.txt"
        T.write(real, "one\r\ntwo\r\nthree")
        vim.uv.fs_chmod(real, tonumber("640", 8))
        vim.uv.fs_symlink(real, link)
        T.setup(dir, { permissions = { mode = "acceptEdits" }, diagnostics_wait_ms = 0 })
        local buf = T.open(link)
        T.eq("fileformat", vim.bo[buf].fileformat, "dos")
        local ns = vim.api.nvim_create_namespace("direct_write_test")
        local mark = vim.api.nvim_buf_set_extmark(buf, ns, 2, 1, {})
        local reloads, posts, shellposts = 0, 0, 0
        vim.api.nvim_create_autocmd("BufReadPost", { buffer = buf, callback = function() reloads = reloads + 1 end })
        vim.api.nvim_create_autocmd("BufWritePost", { buffer = buf, callback = function() posts = posts + 1 end })
        vim.api.nvim_create_autocmd("FileChangedShellPost", { callback = function() shellposts = shellposts + 1 end })
        T.ok("Read", { file_path = link })
        local before = require("lathe.core").main_thread_stats()
        local r = T.ok("Edit", { file_path = link, old_string = "two", new_string = "TWO" })
        T.lacks("saved", r.content, "left modified")
        local after = require("lathe.core").main_thread_stats()
        T.eq("saved directly", after.direct_writes - before.direct_writes, 1)
        T.eq("no :write", after.nvim_writes - before.nvim_writes, 0)
        T.eq("file bytes", T.bytes(real), "one\r\nTWO\r\nthree")
        T.eq("still a link", vim.uv.fs_lstat(link).type, "link")
        T.eq("mode kept", vim.uv.fs_stat(real).mode % 512, tonumber("640", 8))
        T.eq("not modified", vim.bo[buf].modified, false)
        T.eq("BufWritePost ran", posts, 1)
        T.eq("no FileChangedShellPost", shellposts, 0)
        T.eq("'eventignore' as it was", vim.o.eventignore, "")

        vim.cmd("checktime")
        T.eq("no reload", reloads, 0)
        T.eq("no warning", vim.v.warningmsg, "")
        T.eq("extmark kept", vim.api.nvim_buf_get_extmark_by_id(buf, ns, mark, {}), { 2, 1 })

        vim.api.nvim_buf_call(buf, function() vim.cmd("silent undo") end)
        T.eq("one u undoes the edit", T.lines(buf), { "one", "two", "three" })
        T.eq("and leaves the buffer modified", vim.bo[buf].modified, true)
        vim.api.nvim_buf_call(buf, function() vim.cmd("silent redo") end)

        vim.api.nvim_buf_set_lines(buf, 0, 1, false, { "ONE" })
        -- A prompt would wait for a key (or end the headless Neovim).
        vim.api.nvim_buf_call(buf, function() vim.cmd("write") end)
        -- ('fixendofline' adds the final CRLF, as on any :w.)
        T.eq("user's :w wrote", T.bytes(real), "ONE\r\nTWO\r\nthree\r\n")
        T.eq("not modified after :w", vim.bo[buf].modified, false)
        vim.cmd("checktime")
        T.eq("still no reload", reloads, 0)
        "#,
    )
}

/// A buffer with a `BufWritePre` autocmd (a formatter on save) is saved by
/// Neovim's `:write`, so the autocmd runs.
#[nvim_oxi::test]
fn a_buffer_with_a_bufwritepre_autocmd_is_saved_by_write() -> Result<(), String> {
    crate::common::lua_test(
        r#"
        local dir = T.project()
        local path = dir .. "/a.txt"
        T.write(path, "one\ntwo\n")
        T.setup(dir, { permissions = { mode = "acceptEdits" }, diagnostics_wait_ms = 0 })
        local buf = T.open(path)
        local ran = 0
        vim.api.nvim_create_autocmd("BufWritePre", { buffer = buf, callback = function() ran = ran + 1 end })
        T.ok("Read", { file_path = path })
        local before = require("lathe.core").main_thread_stats()
        T.ok("Edit", { file_path = path, old_string = "two", new_string = "TWO" })
        local after = require("lathe.core").main_thread_stats()
        T.eq("saved by :write", after.nvim_writes - before.nvim_writes, 1)
        T.eq("not directly", after.direct_writes - before.direct_writes, 0)
        T.eq("BufWritePre ran", ran, 1)
        T.eq("file", T.bytes(path), "one\nTWO\n")
        "#,
    )
}

/// The user types while the file is being written: their text stays in
/// the buffer, which stays modified; the file holds the edit; Neovim does
/// not warn or reload on `:checktime`.
#[nvim_oxi::test]
fn typing_between_the_edit_and_the_save_is_kept() -> Result<(), String> {
    crate::common::lua_test(
        r#"
        local dir = T.project()
        local path = dir .. "/a.txt"
        T.write(path, "one\ntwo\n")
        T.setup(dir, { permissions = { mode = "acceptEdits" }, diagnostics_wait_ms = 0 })
        local buf = T.open(path)
        T.ok("Read", { file_path = path })
        -- Right after lathe's change lands in the buffer (before the file
        -- is written), the user types on line 1.
        local typed = false
        vim.api.nvim_buf_attach(buf, false, {
          on_lines = function()
            if not typed then
              typed = true
              vim.schedule(function()
                vim.api.nvim_buf_set_lines(buf, 0, 1, false, { "typed" })
              end)
            end
          end,
        })
        local before = require("lathe.core").main_thread_stats()
        T.ok("Edit", { file_path = path, old_string = "two", new_string = "TWO" })
        T.eq("saved directly", require("lathe.core").main_thread_stats().direct_writes - before.direct_writes, 1)
        T.eq("user's text kept", T.lines(buf), { "typed", "TWO" })
        T.eq("still modified", vim.bo[buf].modified, true)
        T.eq("file holds the edit", T.bytes(path), "one\nTWO\n")
        vim.cmd("checktime")
        T.eq("no warning", vim.v.warningmsg, "")
        T.eq("no reload", T.lines(buf), { "typed", "TWO" })
        "#,
    )
}
