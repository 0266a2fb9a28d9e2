//! An agent edit of a loaded buffer saved without Neovim's `:write`
//! (`lathe::adapters::direct_write`; docs/edits.md, "Edits through buffers";
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

/// The result of an Edit saved directly (`:help lathe-save`) waits for two
/// main-thread round trips, the plan's read and the change: the file is
/// already replaced (a new inode: temp file renamed over it, no temp file
/// left) and holds the buffer's text when the result arrives, and the step
/// that makes Neovim take the file, queued before the result, has run
/// before any later main-thread work (not modified, counted as a direct
/// save). A second Edit right after reads only the line it replaces: the
/// save left the buffer at the tick the first Edit recorded.
#[nvim_oxi::test]
fn an_edit_result_waits_for_two_round_trips_and_the_file_is_already_written(
    t: nvim_oxi::tests::TestTerminator,
) {
    use std::os::unix::fs::MetadataExt;
    use std::sync::Arc;

    use lathe::NvimEditor;

    use lathe_core::events::NullSink;
    use lathe_core::execution::{run_tool_use, PendingToolUse};
    use lathe_core::permissions::{Mode, Rules};
    use lathe_core::protocol::ToolUse;

    use crate::common::{check_eq, edit, editor, load, run_async, temp_file};

    let main = load();
    let text: String = (1..=2000).map(|n| format!("line {n}\n")).collect();
    let path = temp_file("round_trips.txt", text.as_bytes());
    let root = path.parent().expect("temp dir").to_path_buf();
    let buf = edit(&path);
    let env = lathe_test_support::env_at(&root)
        .editor(editor(&main))
        .rules(Rules {
            mode: Mode::AcceptEdits,
            ..Rules::default()
        })
        .sink(Arc::new(NullSink))
        .build();
    let use_of = |input: serde_json::Value| {
        let name = if input.get("old_string").is_some() {
            "Edit"
        } else {
            "Read"
        };
        PendingToolUse::from(ToolUse {
            id: format!("toolu_{name}"),
            name: name.into(),
            input,
            extra: Default::default(),
        })
    };
    let bufnr = buf.handle();
    run_async(t, async move {
        let read = run_tool_use(&use_of(serde_json::json!({"file_path": path})), &env).await;
        check_eq("Read is an error", read.result.is_error, false)?;
        let inode = std::fs::metadata(&path).map_err(|e| e.to_string())?.ino();
        let (trips, round_trips) = (main.trips(), main.round_trips());
        let (_, direct_before) = NvimEditor::write_counts();
        let edit_1000 = serde_json::json!({
            "file_path": path, "old_string": "line 1000\n", "new_string": "line 1000 edited\n"
        });
        let done = run_tool_use(&use_of(edit_1000), &env).await;
        check_eq("Edit is an error", done.result.is_error, false)?;
        // Nothing has run on the main thread since the result: what the
        // disk holds now is what the model's next Bash call would see.
        let want = text.replace("line 1000\n", "line 1000 edited\n");
        let on_disk = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
        check_eq("file when the result arrives", on_disk == want, true)?;
        let now = std::fs::metadata(&path).map_err(|e| e.to_string())?.ino();
        check_eq("replaced by a rename (new inode)", now != inode, true)?;
        let leftovers = std::fs::read_dir(&root)
            .map_err(|e| e.to_string())?
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".lathe-tmp"))
            .count();
        check_eq("temp files left", leftovers, 0)?;
        check_eq(
            "round trips waited for",
            main.round_trips() - round_trips,
            2,
        )?;
        check_eq("trips queued", main.trips() - trips, 3)?;
        let (modified, lines) = main
            .run(move || {
                let b = nvim_oxi::api::Buffer::from(bufnr);
                let opts = nvim_oxi::api::opts::OptionOpts::builder()
                    .buffer(b.clone())
                    .build();
                let modified = nvim_oxi::api::get_option_value::<bool>("modified", &opts);
                (modified.ok(), crate::common::lines(&b))
            })
            .await
            .map_err(|e| e.to_string())?;
        check_eq("modified after the save step", modified, Some(false))?;
        check_eq(
            "saved directly",
            NvimEditor::write_counts().1 - direct_before,
            1,
        )?;
        let buffer_text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        check_eq("buffer is the file", buffer_text == want, true)?;

        let lines_before = NvimEditor::lines_read();
        let edit_1500 = serde_json::json!({
            "file_path": path, "old_string": "line 1500\n", "new_string": "line 1500 edited\n"
        });
        let again = run_tool_use(&use_of(edit_1500), &env).await;
        check_eq("second Edit is an error", again.result.is_error, false)?;
        check_eq(
            "lines the second Edit read",
            NvimEditor::lines_read() - lines_before,
            1,
        )
    });
}

/// `setup{ save = "write" }` fences the direct save off (`:help
/// lathe-setup.save`): an Edit of a file open in an unmodified buffer that
/// the direct save would take (no write autocmd) is saved by Neovim's
/// `:write`, and none of the direct save's hooks is left on the buffer.
#[nvim_oxi::test]
fn save_write_saves_through_write_even_when_the_direct_save_applies() -> Result<(), String> {
    crate::common::lua_test(
        r#"
        local dir = T.project()
        local path = dir .. "/a.txt"
        T.write(path, "one\ntwo\n")
        T.setup(dir, { permissions = { mode = "acceptEdits" }, diagnostics_wait_ms = 0, save = "write" })
        local buf = T.open(path)
        local posts = 0
        vim.api.nvim_create_autocmd("BufWritePost", { buffer = buf, callback = function() posts = posts + 1 end })
        T.ok("Read", { file_path = path })
        local before = require("lathe.core").main_thread_stats()
        T.ok("Edit", { file_path = path, old_string = "two", new_string = "TWO" })
        local after = require("lathe.core").main_thread_stats()
        T.eq("saved by :write", after.nvim_writes - before.nvim_writes, 1)
        T.eq("not directly", after.direct_writes - before.direct_writes, 0)
        T.eq("BufWritePost ran", posts, 1)
        T.eq("file", T.bytes(path), "one\nTWO\n")
        T.eq("not modified", vim.bo[buf].modified, false)
        local ok, hooks = pcall(vim.api.nvim_get_autocmds, { group = "lathe_direct_write", buffer = buf })
        T.eq("no direct-save hook", ok and #hooks or 0, 0)
        -- A second Edit (the span path, the buffer at the tick of the last
        -- one) takes :write too.
        T.ok("Edit", { file_path = path, old_string = "one", new_string = "ONE" })
        local last = require("lathe.core").main_thread_stats()
        T.eq("again by :write", last.nvim_writes - after.nvim_writes, 1)
        T.eq("still not directly", last.direct_writes - after.direct_writes, 0)
        T.eq("file again", T.bytes(path), "ONE\nTWO\n")
        "#,
    )
}

/// `setup{ save = "direct" }`, the default spelled out, is today's save:
/// the same Edit is saved without `:write`.
#[nvim_oxi::test]
fn save_direct_is_the_default_direct_save() -> Result<(), String> {
    crate::common::lua_test(
        r#"
        local dir = T.project()
        local path = dir .. "/a.txt"
        T.write(path, "one\ntwo\n")
        T.setup(dir, { permissions = { mode = "acceptEdits" }, diagnostics_wait_ms = 0, save = "direct" })
        local buf = T.open(path)
        T.ok("Read", { file_path = path })
        local before = require("lathe.core").main_thread_stats()
        T.ok("Edit", { file_path = path, old_string = "two", new_string = "TWO" })
        local after = require("lathe.core").main_thread_stats()
        T.eq("saved directly", after.direct_writes - before.direct_writes, 1)
        T.eq("no :write", after.nvim_writes - before.nvim_writes, 0)
        T.eq("file", T.bytes(path), "one\nTWO\n")
        T.eq("not modified", vim.bo[buf].modified, false)
        "#,
    )
}
