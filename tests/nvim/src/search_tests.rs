//! Grep and Glob see what the user sees (docs/edits.md, "Search
//! sees unsaved text"): unsaved buffer text instead of the file, buffers
//! never written as files, one main-thread trip per search, permission
//! rules still applied; and Read/Write of a buffer whose file does not exist
//! yet.

use crate::common::lua_test;

#[nvim_oxi::test]
fn grep_finds_a_line_that_exists_only_in_unsaved_text() -> Result<(), String> {
    lua_test(
        r#"
        local dir = T.project()
        T.write(dir .. "/app.py", "def old():\n    pass\n")
        T.write(dir .. "/other.py", "x = 1\n")
        T.setup(dir)
        local buf = T.open(dir .. "/app.py")
        T.type("Godef only_unsaved():<Esc>")
        T.eq("modified", vim.bo[buf].modified, true)
        local note = "Unsaved text: the matches in app.py come from text open in Neovim that is not saved to disk (the file on disk differs or does not exist yet). Read shows the same text; Edit and Write change it in the buffer."
        local r = T.ok("Grep", { pattern = "only_unsaved", output_mode = "content" })
        T.eq("content", r.content, "app.py:3:    def only_unsaved():\n\n" .. note) -- autoindent
        r = T.ok("Grep", { pattern = "only_unsaved" })
        T.eq("files", r.content, "Found 1 file\napp.py\n\n" .. note)
        r = T.ok("Grep", { pattern = "def|x", output_mode = "count" })
        T.eq("count", r.content, "app.py:2\nother.py:1\n\nFound 3 matching lines across 2 files.\n\n" .. note)
        -- A file searched on disk gets no note.
        r = T.ok("Grep", { pattern = "x = 1" })
        T.eq("disk only", r.content, "Found 1 file\nother.py")
        T.eq("disk untouched", T.bytes(dir .. "/app.py"), "def old():\n    pass\n")
        "#,
    )
}

#[nvim_oxi::test]
fn a_line_deleted_in_the_buffer_but_still_on_disk_is_not_found() -> Result<(), String> {
    lua_test(
        r#"
        local dir = T.project()
        T.write(dir .. "/notes.txt", "keep\ndrop me\n")
        T.setup(dir)
        T.open(dir .. "/notes.txt")
        T.type("2Gdd")
        local r = T.ok("Grep", { pattern = "drop me", output_mode = "content" })
        T.eq("not found", r.content, 'No matches for "drop me" in the project root.')
        r = T.ok("Grep", { pattern = "drop", path = "notes.txt", output_mode = "count" })
        T.has("not found through an explicit path either", r.content, 'No matches for "drop" in notes.txt.')
        T.eq("still on disk", T.bytes(dir .. "/notes.txt"), "keep\ndrop me\n")
        "#,
    )
}

#[nvim_oxi::test]
fn glob_and_grep_find_a_buffer_never_written() -> Result<(), String> {
    lua_test(
        r#"
        local dir = T.project()
        T.write(dir .. "/.gitignore", "build/\n")
        vim.fn.mkdir(dir .. "/src", "p")
        T.write(dir .. "/src/old.py", "old = 1\n")
        T.setup(dir)
        T.open(dir .. "/src/new.py")
        T.type("inew_name = 2<Esc>")
        T.open(dir .. "/pkg/fresh.py") -- a folder that does not exist yet either
        T.open(dir .. "/build/gen.py") -- ignored by .gitignore: not listed
        T.type("igen = 3<Esc>")
        T.eq("never written", vim.fn.filereadable(dir .. "/src/new.py"), 0)
        local r = T.ok("Glob", { pattern = "**/*.py" })
        T.eq("Glob", r.content, "pkg/fresh.py\nsrc/new.py\nsrc/old.py\n\nNot on disk yet: pkg/fresh.py, src/new.py are open in Neovim but never written. Read shows the buffer's text; Edit and Write change it in the buffer.")
        r = T.ok("Glob", { pattern = "*.py", path = "src" })
        T.eq("Glob in a folder", r.content, "src/new.py\nsrc/old.py\n\nNot on disk yet: src/new.py is open in Neovim but never written. Read shows the buffer's text; Edit and Write change it in the buffer.")
        r = T.ok("Glob", { pattern = "pkg/*.py" })
        T.has("Glob of a folder only in buffers", r.content, "pkg/fresh.py\n\nNot on disk yet: pkg/fresh.py is")
        r = T.ok("Grep", { pattern = "new_name", output_mode = "content" })
        T.eq("Grep", r.content, "src/new.py:1:new_name = 2\n\nUnsaved text: the matches in src/new.py come from text open in Neovim that is not saved to disk (the file on disk differs or does not exist yet). Read shows the same text; Edit and Write change it in the buffer.")
        r = T.ok("Grep", { pattern = "new_name", path = "src/new.py", output_mode = "count" })
        T.has("Grep of the new file itself", r.content, "src/new.py:1\n")
        r = T.ok("Grep", { pattern = "gen = 3" })
        T.has("ignored folder", r.content, 'No matches for "gen = 3"')
        r = T.ok("Grep", { pattern = "new_name", type = "rust" })
        T.has("type filter", r.content, 'No matches for "new_name"')
        r = T.ok("Grep", { pattern = "new_name", glob = "*.py" })
        T.has("glob filter", r.content, "src/new.py")
        "#,
    )
}

#[nvim_oxi::test]
fn read_and_write_of_a_buffer_never_written_go_through_the_buffer() -> Result<(), String> {
    lua_test(
        r#"
        local dir = T.project()
        T.setup(dir, { permissions = { mode = "acceptEdits" } })
        local typed = T.open(dir .. "/typed.py")
        T.type("iprint('typed')<Esc>")
        local r = T.ok("Read", { file_path = "typed.py" })
        T.eq("Read shows the buffer", r.content, "     1\tprint('typed')")
        r = T.ok("Write", { file_path = "typed.py", content = "print('model')\n" })
        T.has("Write result", r.content, "typed.py")
        T.eq("Write went into the buffer", T.lines(typed), { "print('model')" })
        T.eq("the user's unsaved buffer stays unsaved", vim.fn.filereadable(dir .. "/typed.py"), 0)

        local empty = T.open(dir .. "/empty.py")
        r = T.ok("Write", { file_path = dir .. "/empty.py", content = "x = 1\n" })
        T.has("an empty buffer never written is a new file", r.content, "File created successfully at: empty.py (1 line).")
        T.eq("buffer", T.lines(empty), { "x = 1" })
        T.eq("saved", vim.bo[empty].modified, false)
        T.eq("disk", T.bytes(dir .. "/empty.py"), "x = 1\n")

        -- The root named through a symlink finds the buffer of the real path.
        local link = T.project() .. "/link"
        vim.uv.fs_symlink(dir, link)
        T.setup(link, { permissions = { mode = "acceptEdits" } })
        local via = T.open(dir .. "/via.py")
        T.type("ivia = 1<Esc>")
        r = T.ok("Read", { file_path = "via.py" })
        T.eq("Read through the symlinked root", r.content, "     1\tvia = 1")
        r = T.ok("Grep", { pattern = "via", output_mode = "content" })
        T.has("Grep through the symlinked root", r.content, "via.py:1:via = 1")
        T.eq("buffer", T.lines(via), { "via = 1" })
        "#,
    )
}

#[nvim_oxi::test]
fn searches_leave_out_unsaved_buffers_a_read_rule_denies() -> Result<(), String> {
    lua_test(
        r#"
        local dir = T.project()
        vim.fn.mkdir(dir .. "/secret", "p")
        T.write(dir .. "/secret/key.txt", "nothing\n")
        T.setup(dir, { permissions = { deny = { "Read(secret/**)" } } })
        T.open(dir .. "/secret/key.txt")
        T.type("ccTOKEN=abc<Esc>")
        T.open(dir .. "/secret/new.txt")
        T.type("iTOKEN=def<Esc>")
        T.open(dir .. "/open.txt")
        T.type("iTOKEN=public<Esc>")
        local r = T.ok("Grep", { pattern = "TOKEN", output_mode = "content" })
        T.has("the free buffer is found", r.content, "open.txt:1:TOKEN=public")
        T.lacks("no secret", r.content, "abc")
        T.lacks("no new secret", r.content, "def")
        T.has("denied note", r.content, "2 files were left out because a permission rule denies reading them (Read(secret/**) from setup()).")
        r = T.ok("Glob", { pattern = "**/*.txt" })
        T.lacks("Glob leaves out the new secret", r.content, "new.txt")
        T.has("Glob lists the free one", r.content, "open.txt")
        T.has("Glob's denied note", r.content, "2 files were left out because a permission rule denies reading them")
        "#,
    )
}

/// The snapshot of modified buffers is one main-thread trip, however many
/// buffers are modified, and a search with none costs the same one trip.
#[nvim_oxi::test]
fn one_search_takes_one_main_thread_snapshot(t: nvim_oxi::tests::TestTerminator) {
    use std::sync::Arc;

    use lathe_core::events::NullSink;
    use lathe_core::execution::{run_tool_use, PendingToolUse};

    use lathe_core::protocol::{ToolResultContent, ToolUse};

    use crate::common::{check_eq, edit, editor, load, run_async, temp_file};

    let main = load();
    let a = temp_file("a.txt", b"alpha\n");
    let root = a.parent().expect("temp dir").to_path_buf();
    for name in ["b.txt", "c.txt"] {
        std::fs::write(root.join(name), "beta\n").expect("write");
    }
    for name in ["a.txt", "b.txt", "c.txt"] {
        let buf = edit(&root.join(name));
        nvim_oxi::api::command("normal! Goneedle").expect("type");
        let _ = buf;
    }
    let env = lathe_test_support::env_at(&root)
        .editor(editor(&main))
        .sink(Arc::new(NullSink))
        .build();
    run_async(t, async move {
        let before = main.trips();
        let grep = run_tool_use(
            &PendingToolUse::from(ToolUse {
                id: "toolu_grep".into(),
                name: "Grep".into(),
                input: serde_json::json!({"pattern": "needle", "output_mode": "count"}),
                extra: Default::default(),
            }),
            &env,
        )
        .await;
        let trips = main.trips() - before;
        check_eq("Grep is an error", grep.result.is_error, false)?;
        let text = match &grep.result.content {
            ToolResultContent::Text(t) => t.clone(),
            other => format!("{other:?}"),
        };
        if !text.starts_with("a.txt:1\nb.txt:1\nc.txt:1\n") {
            return Err(format!("Grep result: {text}"));
        }
        check_eq("main-thread trips of one Grep", trips, 1)
    });
}
