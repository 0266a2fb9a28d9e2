//! Read and Edit through the whole tool pipeline (`require("lathe").tool_sync`)
//! on loaded buffers, as a user's script would call them: the
//! buffer's unsaved text, the stale refusal after typing, one undo, extmarks,
//! CRLF, saving or not, and the permission float's `y` / `a` / `n`.

use crate::common::lua_test;

#[nvim_oxi::test]
fn read_of_a_buffer_with_unsaved_changes_returns_the_buffer_text() -> Result<(), String> {
    lua_test(
        r#"
        local dir = T.project()
        local path = dir .. "/notes.txt"
        T.write(path, "one\ntwo\nthree\n")
        T.setup(dir)
        local buf = T.open(path)
        T.type("2Gccsecond (typed, unsaved)<Esc>")
        T.eq("buffer modified", vim.bo[buf].modified, true)
        local r = T.ok("Read", { file_path = path })
        T.eq("Read result", r.content, "     1\tone\n     2\tsecond (typed, unsaved)\n     3\tthree")
        -- A relative path resolves against the project root, same buffer.
        r = T.ok("Read", { file_path = "notes.txt", offset = 2, limit = 1 })
        T.eq("Read with offset", r.content, "     2\tsecond (typed, unsaved)\n\n[Showing lines 2-2 of 3. The file continues: call Read with offset=3 to read more.]")
        T.eq("disk untouched", T.bytes(path), "one\ntwo\nthree\n")
        "#,
    )
}

#[nvim_oxi::test]
fn typing_after_read_makes_edit_stale_then_a_new_read_lets_it_apply_in_one_undo_step(
) -> Result<(), String> {
    lua_test(
        r#"
        local dir = T.project()
        local path = dir .. "/list.txt"
        T.write(path, "alpha\nbeta\ngamma\ndelta\n")
        T.setup(dir, { permissions = { mode = "acceptEdits" } })
        local buf = T.open(path)
        local ns = vim.api.nvim_create_namespace("lathe_test_marks")
        local mark = vim.api.nvim_buf_set_extmark(buf, ns, 3, 2, {}) -- "de|lta"

        T.ok("Read", { file_path = path })
        T.type("1GA typed<Esc>") -- the user types after the model read the file
        local edit = { file_path = path, old_string = "beta", new_string = "BETA\nbeta two" }
        local r = T.tool("Edit", edit)
        T.eq("stale Edit is an error", r.is_error, true)
        T.has("stale message", r.content, "has been modified since you last read it (by the user or another program), so nothing was changed. Read it again, then retry with its current text.")
        T.has("stale message names the file", r.content, "list.txt")
        T.eq("buffer after the refusal", T.lines(buf), { "alpha typed", "beta", "gamma", "delta" })
        T.eq("disk after the refusal", T.bytes(path), "alpha\nbeta\ngamma\ndelta\n")

        T.ok("Read", { file_path = path })
        r = T.ok("Edit", edit)
        T.has("Edit result", r.content, "has been updated")
        T.has("Edit result shows the changed lines", r.content, "     3\tbeta two")
        T.eq("buffer after the Edit", T.lines(buf), { "alpha typed", "BETA", "beta two", "gamma", "delta" })
        T.eq("extmark on the untouched line", vim.api.nvim_buf_get_extmark_by_id(buf, ns, mark, {}), { 4, 2 })
        -- The user's typing was unsaved: the buffer stays modified, disk untouched.
        T.has("result says the buffer was left modified", r.content, "left modified (not written to disk)")
        T.eq("still modified", vim.bo[buf].modified, true)
        T.eq("disk untouched", T.bytes(path), "alpha\nbeta\ngamma\ndelta\n")

        T.type("u")
        T.eq("one u undoes the whole Edit (and only it)", T.lines(buf), { "alpha typed", "beta", "gamma", "delta" })
        T.eq("extmark after undo", vim.api.nvim_buf_get_extmark_by_id(buf, ns, mark, {}), { 3, 2 })
        T.type("u")
        T.eq("a second u undoes the typing", T.lines(buf), { "alpha", "beta", "gamma", "delta" })
        "#,
    )
}

#[nvim_oxi::test]
fn a_buffer_without_unsaved_changes_is_written_after_the_edit() -> Result<(), String> {
    lua_test(
        r#"
        local dir = T.project()
        local path = dir .. "/clean.txt"
        T.write(path, "keep\nfix me\n")
        T.setup(dir, { permissions = { mode = "acceptEdits" } })
        local buf = T.open(path)
        T.ok("Read", { file_path = path })
        local r = T.ok("Edit", { file_path = path, old_string = "fix me", new_string = "fixed" })
        T.lacks("result", r.content, "left modified")
        T.eq("buffer", T.lines(buf), { "keep", "fixed" })
        T.eq("not modified", vim.bo[buf].modified, false)
        T.eq("disk", T.bytes(path), "keep\nfixed\n")
        -- A moved changedtick with the same text (e.g. :write) is not stale.
        vim.cmd("silent write")
        T.ok("Edit", { file_path = path, old_string = "keep", new_string = "kept" })
        T.eq("disk after a second Edit", T.bytes(path), "kept\nfixed\n")
        "#,
    )
}

#[nvim_oxi::test]
fn a_crlf_file_keeps_crlf_on_every_line() -> Result<(), String> {
    lua_test(
        r#"
        local dir = T.project()
        local path = dir .. "/dos.txt"
        T.write(path, "first\r\nsecond\r\n")
        T.setup(dir, { permissions = { mode = "acceptEdits" } })
        local buf = T.open(path)
        T.eq("fileformat", vim.bo[buf].fileformat, "dos")
        local r = T.ok("Read", { file_path = path })
        T.eq("Read shows no CR", r.content, "     1\tfirst\n     2\tsecond")
        T.ok("Edit", { file_path = path, old_string = "second", new_string = "2nd\nthird" })
        T.eq("buffer", T.lines(buf), { "first", "2nd", "third" })
        T.eq("fileformat after", vim.bo[buf].fileformat, "dos")
        T.eq("disk", T.bytes(path), "first\r\n2nd\r\nthird\r\n")
        "#,
    )
}

#[nvim_oxi::test]
fn the_float_answers_n_y_and_a_do_what_they_say() -> Result<(), String> {
    lua_test(
        r#"
        local dir = T.project()
        local path = dir .. "/ask.txt"
        T.write(path, "one\ntwo\nthree\nfour\n")
        T.setup(dir) -- default mode: Edit asks
        local buf = T.open(path)
        local win = vim.api.nvim_get_current_win()
        local rec = T.answer_floats({ "n", "y", "a" })
        T.ok("Read", { file_path = path })
        T.eq("Read inside the project does not ask", #rec.asks, 0)

        -- n: declined, nothing written.
        local r = T.tool("Edit", { file_path = path, old_string = "one", new_string = "ONE" })
        T.eq("asks after n", #rec.asks, 1)
        T.eq("declined is an error", r.is_error, true)
        T.eq("declined message", r.content, "The user declined this tool call; nothing was written or run. Ask the user how to proceed, or try a different approach.")
        T.eq("buffer after n", T.lines(buf), { "one", "two", "three", "four" })
        T.eq("disk after n", T.bytes(path), "one\ntwo\nthree\nfour\n")
        T.eq("float closed", T.floats(), 0)
        T.eq("back in the file's window", vim.api.nvim_get_current_win(), win)
        local ask = rec.asks[1]
        T.has("float title names the tool", ask.title, "Edit")
        T.has("float title names the file", ask.title, "ask.txt")
        T.has("float footer lists the keys", ask.footer, "y allow  a sess  A save  n deny")
        T.has("float says why it asks", ask.lines[1], "Asks because: Edit changes files, and asks by default")
        T.has("float names the rule a adds", ask.lines[2], "a: allow Edit(/ask.txt) for this session")
        T.eq("float shows the diff", vim.tbl_contains(ask.lines, "-one") and vim.tbl_contains(ask.lines, "+ONE"), true)

        -- y: applied once.
        T.ok("Edit", { file_path = path, old_string = "one", new_string = "ONE" })
        T.eq("asks after y", #rec.asks, 2)
        T.eq("disk after y", T.bytes(path), "ONE\ntwo\nthree\nfour\n")

        -- y was for one call only: the next Edit asks again; a allows Edit.
        T.ok("Edit", { file_path = path, old_string = "two", new_string = "TWO" })
        T.eq("asks after a", #rec.asks, 3)
        T.ok("Edit", { file_path = path, old_string = "three", new_string = "THREE" })
        T.eq("no ask after a", #rec.asks, 3)
        T.eq("disk after a", T.bytes(path), "ONE\nTWO\nTHREE\nfour\n")
        T.eq("buffer", T.lines(buf), { "ONE", "TWO", "THREE", "four" })
        T.eq("float closed", T.floats(), 0)
        "#,
    )
}

#[nvim_oxi::test]
fn write_of_x_to_a_loaded_buffer_writes_exactly_one_byte() -> Result<(), String> {
    lua_test(
        r#"
        local dir = T.project()
        local path = dir .. "/x.txt"
        T.write(path, "old\ntext\n")
        T.setup(dir, { permissions = { mode = "acceptEdits" } })
        local buf = T.open(path)
        T.ok("Read", { file_path = path })
        T.ok("Write", { file_path = path, content = "x" })
        T.eq("buffer", T.lines(buf), { "x" })
        T.eq("'eol' follows the missing final newline", vim.bo[buf].eol, false)
        T.eq("disk", T.bytes(path), "x")
        T.eq("not modified", vim.bo[buf].modified, false)
        "#,
    )
}

/// Relative paths resolve against the project root even
/// after a window-local `:lcd elsewhere`; `~/x` resolves under `$HOME`.
#[nvim_oxi::test]
fn relative_paths_ignore_a_window_local_lcd() -> Result<(), String> {
    lua_test(
        r#"
        local dir = T.project()
        local elsewhere = T.project()
        T.write(dir .. "/here.txt", "in the project\n")
        T.write(elsewhere .. "/here.txt", "elsewhere\n")
        T.setup(dir)
        vim.cmd("lcd " .. vim.fn.fnameescape(elsewhere))
        T.eq("window cwd moved", vim.fn.getcwd(), elsewhere)
        local r = T.ok("Read", { file_path = "here.txt" })
        T.eq("read from the project root", r.content, "     1\tin the project")
        local home = T.project()
        vim.env.HOME = home
        T.write(home .. "/notes.txt", "home notes\n")
        -- Outside the project root a Read asks first.
        local floats = T.answer_floats({ "y" })
        r = T.ok("Read", { file_path = "~/notes.txt" })
        T.eq("~/ expands to $HOME", r.content, "     1\thome notes")
        T.eq("asked once", #floats.asks, 1)
        T.has("the float names the file", floats.asks[1].title, "notes.txt")
        "#,
    )
}

/// An Edit of a loaded buffer through the whole pipeline costs three trips
/// to Neovim's main thread: one to read the buffer when the Edit is
/// planned, one to apply the plan (stale check + `nvim_buf_set_text`), one
/// to make Neovim take the file lathe wrote off the main thread
/// (`:help lathe-save`). The preview and the call reuse the plan instead of
/// reading again.
#[nvim_oxi::test]
fn an_edit_of_a_loaded_buffer_makes_three_main_thread_trips(t: nvim_oxi::tests::TestTerminator) {
    use std::sync::Arc;

    use lathe_core::events::NullSink;
    use lathe_core::execution::{run_tool_use, PendingToolUse};
    use lathe_core::permissions::{Mode, Rules};
    use lathe_core::protocol::ToolUse;

    use crate::common::{check_eq, edit, editor, load, run_async, temp_file};

    let main = load();
    let path = temp_file("trips.py", b"def greet():\n    print('Helo')\n");
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
    let use_of = |name: &str, input: serde_json::Value| {
        PendingToolUse::from(ToolUse {
            id: format!("toolu_{name}"),
            name: name.into(),
            input,
            extra: Default::default(),
        })
    };
    let bufnr = buf.handle();
    run_async(t, async move {
        let read = run_tool_use(
            &use_of("Read", serde_json::json!({"file_path": path})),
            &env,
        )
        .await;
        check_eq("Read is an error", read.result.is_error, false)?;
        let before = main.trips();
        let edit = run_tool_use(
            &use_of(
                "Edit",
                serde_json::json!({"file_path": path, "old_string": "Helo", "new_string": "Hello"}),
            ),
            &env,
        )
        .await;
        let trips = main.trips() - before;
        check_eq("Edit is an error", edit.result.is_error, false)?;
        check_eq("main-thread trips of one Edit", trips, 3)?;
        let lines = main
            .run(move || crate::common::lines(&nvim_oxi::api::Buffer::from(bufnr)))
            .await
            .map_err(|e| e.to_string())?;
        check_eq(
            "buffer after the Edit",
            lines,
            vec!["def greet():".to_string(), "    print('Hello')".into()],
        )
    });
}

/// `r` after the user changed the file while the float was open: the call
/// is planned again against the buffer as it is now, a new float shows
/// that plan (the user's change is in it), and `y` applies it; the model is
/// told the file changed. When the change took away the text the Edit
/// replaces, the float says so and the answer ends the call with the
/// tool's error.
#[nvim_oxi::test]
fn r_after_a_real_change_shows_the_new_plan_and_y_applies_it() -> Result<(), String> {
    lua_test(
        r#"
        local dir = T.project()
        local path = dir .. "/greeting.py"
        T.write(path, "def greet():\n    print('Helo')\n")
        T.setup(dir)
        local buf = T.open(path)
        T.ok("Read", { file_path = path })
        local asks = {}
        local function on_ask(first_change)
          return vim.api.nvim_create_autocmd("User", {
            pattern = "LathePermissionAsk",
            callback = function()
              table.insert(asks, vim.api.nvim_buf_get_lines(0, 0, -1, false))
              if #asks == 1 then
                -- The user edits the file while the float is open, then
                -- asks for a new plan.
                first_change()
                T.wait_for("the stale banner", 2000, function()
                  return vim.api.nvim_buf_get_lines(0, 0, 1, false)[1]:find("^STALE") ~= nil
                end)
                vim.api.nvim_feedkeys("r", "x", false)
              else
                vim.api.nvim_feedkeys("y", "x", false)
              end
            end,
          })
        end
        local au = on_ask(function()
          vim.api.nvim_buf_set_lines(buf, 0, 1, false, { "def greet(name):" })
        end)
        local r = T.ok("Edit", { file_path = path, old_string = "Helo", new_string = "Hello" })
        T.eq("asked twice", #asks, 2)
        T.eq("the new float shows the user's change", vim.tbl_contains(asks[2], " def greet(name):"), true)
        T.eq("and the edit", vim.tbl_contains(asks[2], "+    print('Hello')"), true)
        T.eq("buffer", T.lines(buf), { "def greet(name):", "    print('Hello')" })
        T.has("the model is told", r.content, "changed while the user reviewed this call")
        vim.api.nvim_del_autocmd(au)

        -- The user's change removes what the Edit replaces.
        T.ok("Read", { file_path = path })
        asks = {}
        on_ask(function()
          vim.api.nvim_buf_set_lines(buf, 1, 2, false, { "    print('Hi')" })
        end)
        r = T.tool("Edit", { file_path = path, old_string = "Hello", new_string = "Hello, world" })
        T.eq("asked twice", #asks, 2)
        T.has("the float says the call no longer applies", table.concat(asks[2], "\n"), "the call no longer applies")
        T.eq("an error", r.is_error, true)
        T.has("the tool's error", r.content, "not found")
        T.eq("buffer untouched", T.lines(buf), { "def greet(name):", "    print('Hi')" })
        "#,
    )
}

/// An ask rule (or a protected path) asks whatever the allow rules say, so
/// the float does not offer `a`/`A` (the rule they add would never take
/// effect) and says why; pressing `a` does nothing.
#[nvim_oxi::test]
fn a_is_not_offered_when_an_ask_rule_is_the_reason() -> Result<(), String> {
    lua_test(
        r#"
        local dir = T.project()
        local path = dir .. "/greeting.py"
        T.write(path, "one\ntwo\n")
        T.setup(dir, { permissions = { ask = { "Edit" } } })
        T.open(path)
        T.ok("Read", { file_path = path })
        local rec = T.answer_floats({ "ay", "y" })
        T.ok("Edit", { file_path = path, old_string = "one", new_string = "ONE" })
        local ask = rec.asks[1]
        T.eq("why", ask.lines[1], "Asks because: rule Edit from setup() asks")
        T.has("why not a", table.concat(ask.lines, " "), "a/A not offered: no narrow rule for this session")
        T.lacks("footer", ask.footer, "a sess")
        T.lacks("footer", ask.footer, "A save")
        T.ok("Edit", { file_path = path, old_string = "two", new_string = "TWO" })
        T.eq("asks every time", #rec.asks, 2)
        T.eq("disk", T.bytes(path), "ONE\nTWO\n")
        "#,
    )
}

/// An Edit of a large loaded buffer still at the tick of the model's last
/// Read (or Edit) plans against the text kept from then: Neovim's main
/// thread fetches only the lines the change replaces (to check them), not
/// the buffer (docs/edits.md, "Edits through buffers"). When the
/// user typed since, the buffer is read once and the stale rule still
/// refuses; after an undo back to the same text the Edit applies.
#[nvim_oxi::test]
fn an_edit_after_a_read_of_a_large_buffer_fetches_only_the_changed_lines(
    t: nvim_oxi::tests::TestTerminator,
) {
    use std::sync::Arc;

    use lathe::NvimEditor;

    use lathe_core::events::NullSink;
    use lathe_core::execution::{run_tool_use, PendingToolUse};
    use lathe_core::permissions::{Mode, Rules};
    use lathe_core::protocol::ToolUse;

    use nvim_oxi::api::{self, Buffer};

    use crate::common::{check_eq, edit, editor, load, run_async, temp_file};

    const LINES: usize = 100_000;
    let main = load();
    let text: String = (1..=LINES).map(|i| format!("line {i}\n")).collect();
    let path = temp_file("large.txt", text.as_bytes());
    let root = path.parent().expect("temp dir").to_path_buf();
    let bufnr = edit(&path).handle();
    let env = lathe_test_support::env_at(&root)
        .editor(editor(&main))
        .rules(Rules {
            mode: Mode::AcceptEdits,
            ..Rules::default()
        })
        .sink(Arc::new(NullSink))
        .build();
    run_async(t, async move {
        let call = |name: &str, input: serde_json::Value| {
            PendingToolUse::from(ToolUse {
                id: format!("toolu_{name}"),
                name: name.into(),
                input,
                extra: Default::default(),
            })
        };
        let edit_input = |old: &str, new: &str| serde_json::json!({"file_path": &path, "old_string": old, "new_string": new});
        let read = run_tool_use(&call("Read", serde_json::json!({"file_path": &path})), &env).await;
        check_eq("Read is an error", read.result.is_error, false)?;

        let (lines0, trips0) = (NvimEditor::lines_read(), main.trips());
        let writes0 = NvimEditor::write_counts();
        let first = run_tool_use(
            &call("Edit", edit_input("line 10000\n", "line ten thousand\n")),
            &env,
        )
        .await;
        check_eq("first Edit is an error", first.result.is_error, false)?;
        check_eq(
            "lines fetched by an Edit after a Read",
            NvimEditor::lines_read() - lines0,
            1,
        )?;
        // Read's tick check, the span edit, taking the file lathe wrote off
        // the main thread: no `:write` of the whole buffer.
        check_eq("main-thread trips of that Edit", main.trips() - trips0, 3)?;
        // The direct save's last step is posted, not waited for (the file
        // already holds the edit): one more trip through the first-in,
        // first-out bridge lets it run before the count is read — on a
        // busy machine it had not yet (CI saw (0, 0)).
        main.run(|| ()).await.map_err(|e| e.to_string())?;
        let writes1 = NvimEditor::write_counts();
        check_eq(
            "(:write, direct) saves of that Edit",
            (writes1.0 - writes0.0, writes1.1 - writes0.1),
            (0, 1),
        )?;

        let lines1 = NvimEditor::lines_read();
        let second = run_tool_use(
            &call(
                "Edit",
                edit_input(&format!("line {LINES}\n"), "the end\nreally\n"),
            ),
            &env,
        )
        .await;
        check_eq("second Edit is an error", second.result.is_error, false)?;
        check_eq(
            "lines fetched by an Edit after an Edit",
            NvimEditor::lines_read() - lines1,
            1,
        )?;

        // The user types: the tick moves and the text differs, so stale.
        main.run(move || {
            let _ = Buffer::from(bufnr).set_lines(0..1, true, ["typed by the user"]);
        })
        .await
        .map_err(|e| e.to_string())?;
        let lines2 = NvimEditor::lines_read();
        let stale = run_tool_use(&call("Edit", edit_input("line 2\n", "LINE 2\n")), &env).await;
        check_eq("Edit after typing is an error", stale.result.is_error, true)?;
        let fetched = NvimEditor::lines_read() - lines2;
        check_eq(
            "a moved tick reads the buffer once",
            fetched,
            LINES as u64 + 1,
        )?;

        // Undo back to the text the model knows: tick moved, text the same.
        main.run(|| {
            let _ = api::command("silent undo");
        })
        .await
        .map_err(|e| e.to_string())?;
        let third = run_tool_use(&call("Edit", edit_input("line 2\n", "LINE 2\n")), &env).await;
        check_eq(
            "Edit after an undo is an error",
            third.result.is_error,
            false,
        )?;

        let now = main
            .run(move || crate::common::lines(&Buffer::from(bufnr)))
            .await
            .map_err(|e| e.to_string())?;
        let mut want: Vec<String> = (1..=LINES).map(|i| format!("line {i}")).collect();
        want[1] = "LINE 2".into();
        want[9_999] = "line ten thousand".into();
        want[LINES - 1] = "the end".into();
        want.push("really".into());
        check_eq("buffer after the Edits", now == want, true)?;
        // The writes ran with 'fsync' off (lathe flushes off the main
        // thread); the user's option is back as it was.
        let fsync = main
            .run(|| api::get_option_value::<bool>("fsync", &Default::default()))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        check_eq("'fsync' after the Edits", fsync, true)?;
        let disk = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
        check_eq(
            "disk after the Edits",
            disk == format!("{}\n", want.join("\n")),
            true,
        )
    });
}
