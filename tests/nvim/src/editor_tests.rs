//! `NvimEditor` on loaded buffers: unsaved text, stale refusal, smallest
//! edit (one undo, extmarks stay), CRLF, final newline, unsaved user changes.

use lathe_core::editor::{Editor, EditorError, TextFormat, Version, WriteRequest};
use nvim_oxi::api::{self, opts::OptionOpts, Buffer};
use nvim_oxi::tests::TestTerminator;

use crate::common::{check_eq, edit, editor, lines, load, run_async, temp_file};

fn write_req(base: &lathe_core::editor::Document, text: &str) -> WriteRequest {
    WriteRequest {
        base: Some(base.stamp()),
        text: std::sync::Arc::from(text),
        format: TextFormat::default(),
        base_text: None,
    }
}

fn modified(bufnr: i32) -> bool {
    api::get_option_value(
        "modified",
        &OptionOpts::builder().buffer(Buffer::from(bufnr)).build(),
    )
    .unwrap_or(false)
}

#[nvim_oxi::test]
fn read_of_a_loaded_buffer_returns_its_unsaved_text(t: TestTerminator) {
    let main = load();
    let path = temp_file("a.txt", b"one\ntwo\n");
    let mut buf = edit(&path);
    buf.set_lines(0..1, true, ["ONE (unsaved)"]).unwrap();
    let ed = editor(&main);
    run_async(t, async move {
        let doc = ed.read(&path).await.map_err(|e| e.to_string())?;
        check_eq("text", doc.text.as_str(), "ONE (unsaved)\ntwo\n")?;
        check_eq("modified", doc.modified, true)?;
        match doc.version {
            Version::Buffer { .. } => Ok(()),
            v => Err(format!("version should be a buffer version, got {v:?}")),
        }
    });
}

#[nvim_oxi::test]
fn edit_after_a_newer_user_change_is_refused_as_stale(t: TestTerminator) {
    let main = load();
    let path = temp_file("b.txt", b"alpha\nbeta\n");
    let bufnr = edit(&path).handle();
    let ed = editor(&main);
    run_async(t, async move {
        let doc = ed.read(&path).await.map_err(|e| e.to_string())?;
        // The user types after the model read the file.
        main.run(move || {
            let mut b = Buffer::from(bufnr);
            let _ = b.set_lines(1..2, true, ["beta typed by the user"]);
        })
        .await
        .map_err(|e| e.to_string())?;
        let r = ed.write(&path, write_req(&doc, "alpha\nBETA\n")).await;
        check_eq("write result", r, Err(EditorError::Stale(path.clone())))?;
        let now = main
            .run(move || lines(&Buffer::from(bufnr)))
            .await
            .map_err(|e| e.to_string())?;
        check_eq(
            "buffer after refusal",
            now,
            vec!["alpha".to_string(), "beta typed by the user".into()],
        )?;
        let disk = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
        check_eq("disk after refusal", disk.as_str(), "alpha\nbeta\n")
    });
}

#[nvim_oxi::test]
fn edit_applies_in_one_undo_step_and_keeps_extmarks(t: TestTerminator) {
    let main = load();
    let path = temp_file("c.txt", b"one\ntwo\nthree\nfour\nfive\n");
    let mut buf = edit(&path);
    let bufnr = buf.handle();
    let ns = api::create_namespace("lathe-test");
    let mark = buf
        .set_extmark(ns, 4, 2, &Default::default())
        .expect("extmark on 'five'");
    let ed = editor(&main);
    run_async(t, async move {
        let doc = ed.read(&path).await.map_err(|e| e.to_string())?;
        // A stale-looking tick with the same text is fine: :write moves the tick.
        main.run(|| api::command("silent write"))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        let out = ed
            .write(
                &path,
                write_req(&doc, "one\nTWO\nnew line\nthree\nfour\nfive\n"),
            )
            .await
            .map_err(|e| e.to_string())?;
        check_eq("in buffer", out.in_buffer, true)?;
        check_eq("saved", out.saved, true)?;
        check_eq("changed lines", out.changed_lines, Some((2, 3)))?;
        let disk = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
        check_eq(
            "disk",
            disk.as_str(),
            "one\nTWO\nnew line\nthree\nfour\nfive\n",
        )?;
        let (row, col) = main
            .run(move || {
                let b = Buffer::from(bufnr);
                let (r, c, _) = b.get_extmark_by_id(ns, mark, &Default::default()).unwrap();
                (r, c)
            })
            .await
            .map_err(|e| e.to_string())?;
        check_eq("extmark on 'five' after the edit", (row, col), (5, 2))?;
        let after_undo = main
            .run(move || {
                let b = Buffer::from(bufnr);
                b.call(|()| {
                    let _ = api::command("silent undo");
                })
                .unwrap();
                lines(&b)
            })
            .await
            .map_err(|e| e.to_string())?;
        check_eq(
            "text after one undo",
            after_undo,
            ["one", "two", "three", "four", "five"]
                .map(String::from)
                .to_vec(),
        )
    });
}

#[nvim_oxi::test]
fn crlf_file_keeps_crlf_after_edit_and_save(t: TestTerminator) {
    let main = load();
    let path = temp_file("d.txt", b"first\r\nsecond\r\n");
    edit(&path);
    let ed = editor(&main);
    run_async(t, async move {
        let doc = ed.read(&path).await.map_err(|e| e.to_string())?;
        check_eq("logical text", doc.text.as_str(), "first\nsecond\n")?;
        check_eq(
            "line ending",
            doc.format.line_ending,
            lathe_core::editor::LineEnding::CrLf,
        )?;
        let out = ed
            .write(&path, write_req(&doc, "first\nSECOND\n"))
            .await
            .map_err(|e| e.to_string())?;
        check_eq("saved", out.saved, true)?;
        let disk = std::fs::read(&path).map_err(|e| e.to_string())?;
        check_eq(
            "disk bytes",
            disk.as_slice(),
            b"first\r\nSECOND\r\n".as_slice(),
        )
    });
}

#[nvim_oxi::test]
fn missing_final_newline_is_preserved(t: TestTerminator) {
    let main = load();
    let path = temp_file("e.txt", b"x\ny");
    edit(&path);
    let ed = editor(&main);
    run_async(t, async move {
        let doc = ed.read(&path).await.map_err(|e| e.to_string())?;
        check_eq("logical text", doc.text.as_str(), "x\ny")?;
        ed.write(&path, write_req(&doc, "x\nY"))
            .await
            .map_err(|e| e.to_string())?;
        let disk = std::fs::read(&path).map_err(|e| e.to_string())?;
        check_eq("disk bytes", disk.as_slice(), b"x\nY".as_slice())
    });
}

#[nvim_oxi::test]
fn buffer_with_unsaved_user_changes_is_left_modified(t: TestTerminator) {
    let main = load();
    let path = temp_file("f.txt", b"keep\nchange me\n");
    let mut buf = edit(&path);
    let bufnr = buf.handle();
    buf.set_lines(0..1, true, ["keep (typed, unsaved)"])
        .unwrap();
    let ed = editor(&main);
    run_async(t, async move {
        let doc = ed.read(&path).await.map_err(|e| e.to_string())?;
        let out = ed
            .write(&path, write_req(&doc, "keep (typed, unsaved)\nchanged\n"))
            .await
            .map_err(|e| e.to_string())?;
        check_eq("saved", out.saved, false)?;
        check_eq("in buffer", out.in_buffer, true)?;
        check_eq(
            "still modified",
            main.run(move || modified(bufnr))
                .await
                .map_err(|e| e.to_string())?,
            true,
        )?;
        let disk = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
        check_eq("disk untouched", disk.as_str(), "keep\nchange me\n")
    });
}

#[nvim_oxi::test]
fn nomodifiable_buffer_is_refused(t: TestTerminator) {
    let main = load();
    let path = temp_file("g.txt", b"locked\n");
    let buf = edit(&path);
    api::set_option_value(
        "modifiable",
        false,
        &OptionOpts::builder().buffer(buf).build(),
    )
    .unwrap();
    let ed = editor(&main);
    run_async(t, async move {
        let doc = ed.read(&path).await.map_err(|e| e.to_string())?;
        match ed.write(&path, write_req(&doc, "unlocked\n")).await {
            Err(EditorError::NotModifiable(_)) => Ok(()),
            other => Err(format!("want NotModifiable, got {other:?}")),
        }
    });
}

#[nvim_oxi::test]
fn symlinked_path_finds_the_loaded_buffer(t: TestTerminator) {
    let main = load();
    let path = temp_file("real.txt", b"via link\n");
    let link = path.with_file_name("link.txt");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    let mut buf = edit(&path);
    buf.set_lines(0..1, true, ["unsaved via link"]).unwrap();
    let ed = editor(&main);
    run_async(t, async move {
        let doc = ed.read(&link).await.map_err(|e| e.to_string())?;
        check_eq(
            "text through the symlink",
            doc.text.as_str(),
            "unsaved via link\n",
        )
    });
}
