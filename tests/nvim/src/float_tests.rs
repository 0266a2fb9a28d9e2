//! The permission float (`:help lathe-float`) in real Neovim, driven like a
//! user at the keyboard: keys go through `nvim_input`, which the main loop
//! processes while the test body waits on lathe's runtime. Every key, the
//! guard time (keys typed as the float appears go to the user's window; it
//! takes focus only after the guard time without a key), the wait while the
//! user types in Insert mode, the queue, bringing a closed float back, hunk
//! toggling (the cursor stays on its diff line), the diff tab, a buffer that
//! changes while its float is open, the layout at 80 columns, and the chat's
//! tool line while the ask waits.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lathe::{FloatPrompter, MainThread};
use lathe_core::editor::{Stamp, TextHash, Version};
use lathe_core::permissions::{PermissionPreview, PromptAnswer, Prompter, Revision};
use lathe_core::tools::support::diff::{apply_hunks, unified_diff};
use nvim_oxi::api;
use nvim_oxi::tests::TestTerminator;
use tokio::task::JoinHandle;

use crate::common::{check_eq, load, run_async};

const BEFORE: &str = "def greet():\n    print('Helo')\n";
const AFTER: &str = "def greet():\n    print('Hello')\n";

fn preview_of(before: &str, after: &str) -> PermissionPreview {
    PermissionPreview {
        path: Some(PathBuf::from("/tmp/project/greeting.py")),
        diff: unified_diff(Some(before), after, "greeting.py"),
        title: "Edit greeting.py".into(),
        reason: "Edit changes files, and asks by default".into(),
        change: Some((Some(before.to_string()), after.to_string())),
        session_rules: vec!["Edit(/greeting.py)".into()],
        ..PermissionPreview::default()
    }
}

fn preview() -> PermissionPreview {
    preview_of(BEFORE, AFTER)
}

/// Asks `preview` on lathe's runtime through a prompter with `guard_ms`.
fn ask(main: &MainThread, guard_ms: u64, preview: PermissionPreview) -> JoinHandle<PromptAnswer> {
    let prompter = Arc::new(FloatPrompter::new(
        main.clone(),
        Duration::from_millis(guard_ms),
    ));
    tokio::spawn(async move { prompter.ask("Edit", &preview).await })
}

/// Runs `f` on the main thread.
async fn on_main<R: Send + 'static>(
    main: &MainThread,
    f: impl FnOnce() -> R + Send + 'static,
) -> Result<R, String> {
    main.run(f).await.map_err(|e| e.to_string())
}

/// Types `keys` (`<>` notation) like a user: queued for the main loop.
async fn input(main: &MainThread, keys: &'static str) -> Result<(), String> {
    on_main(main, move || {
        let _ = api::input(keys);
    })
    .await
}

/// Waits (at most 5 s) until `cond` holds on the main thread.
async fn until(
    main: &MainThread,
    what: &str,
    cond: impl Fn() -> bool + Send + Sync + Clone + 'static,
) -> Result<(), String> {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        let c = cond.clone();
        if on_main(main, c).await? {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Err(format!("timed out waiting until {what}"))
}

/// The current window is a floating window.
fn in_float() -> bool {
    api::get_current_win()
        .get_config()
        .is_ok_and(|c| c.relative.is_some())
}

/// Evaluates the Lua expression `expr` on the main thread's Lua state.
fn lua_eval<T: mlua::FromLua>(expr: &str) -> Option<T> {
    lathe::host::lua_handle::lua()
        .load(format!("return {expr}"))
        .eval()
        .ok()
}

/// The current window's title and footer text (chunks joined).
fn title_and_footer() -> (String, String) {
    let join = r#"(function(t)
        if type(t) ~= "table" then return t or "" end
        local s = "" for _, c in ipairs(t) do s = s .. c[1] end return s end)"#;
    let cfg = "vim.api.nvim_win_get_config(0)";
    (
        lua_eval(&format!("{join}({cfg}.title)")).unwrap_or_default(),
        lua_eval(&format!("{join}({cfg}.footer)")).unwrap_or_default(),
    )
}

/// The mode (`nvim_get_mode().mode`).
fn mode() -> String {
    lua_eval("vim.api.nvim_get_mode().mode").unwrap_or_default()
}

/// Lines of the current buffer.
fn current_lines() -> Vec<String> {
    api::get_current_buf()
        .get_lines(.., false)
        .map(|it| it.map(|l| l.to_string_lossy().into_owned()).collect())
        .unwrap_or_default()
}

/// Waits for the float to take focus, then past its guard time (a float
/// that `:Lathe review` brought up ignores its keys that long).
async fn float_ready(main: &MainThread, guard_ms: u64) -> Result<(), String> {
    until(main, "the float is open and focused", in_float).await?;
    tokio::time::sleep(Duration::from_millis(guard_ms + 50)).await;
    Ok(())
}

/// The line under the cursor.
fn cursor_line() -> String {
    let row = api::get_current_win().get_cursor().map_or(1, |(r, _)| r);
    current_lines().get(row - 1).cloned().unwrap_or_default()
}

async fn answer_of(h: JoinHandle<PromptAnswer>) -> Result<PromptAnswer, String> {
    tokio::time::timeout(Duration::from_secs(5), h)
        .await
        .map_err(|_| "no answer within 5 s".to_string())?
        .map_err(|e| e.to_string())
}

/// One key, pressed after the guard time, gives `want`; the float shows
/// why it asks, the rule `a` adds, the diff, and closes after the answer.
fn key_gives(t: TestTerminator, keys: &'static str, want: PromptAnswer) {
    let main = load();
    run_async(t, async move {
        let h = ask(&main, 50, preview());
        float_ready(&main, 50).await?;
        let (lines, ft, title, footer) = on_main(&main, || {
            let ft: String = api::get_option_value(
                "filetype",
                &api::opts::OptionOpts::builder()
                    .buffer(api::get_current_buf())
                    .build(),
            )
            .unwrap_or_default();
            let (title, footer) = title_and_footer();
            (current_lines(), ft, title, footer)
        })
        .await?;
        check_eq("filetype", ft.as_str(), "diff")?;
        check_eq("title", title.as_str(), " Edit greeting.py ")?;
        // 80 columns: the short footer, q labelled, ? help kept.
        check_eq(
            "footer",
            footer.as_str(),
            " y allow  a sess  A save  n deny  N why  d diff  Spc hunk  q hide  ? help ",
        )?;
        check_eq(
            "header, wrapped at a space",
            &lines[..3],
            &[
                "Asks because: Edit changes files, and asks by default".to_string(),
                "a: allow Edit(/greeting.py) for this session · A: also save it to".into(),
                ".claude/settings.local.json".into(),
            ],
        )?;
        if !lines.iter().any(|l| l == "+    print('Hello')") {
            return Err(format!("float should show the diff, got {lines:?}"));
        }
        input(&main, keys).await?;
        check_eq("answer", answer_of(h).await?, want)?;
        let open = on_main(&main, lathe::ui::float::is_float_open).await?;
        check_eq("float closed", open, false)
    });
}

#[nvim_oxi::test]
fn float_y_allows_once(t: TestTerminator) {
    key_gives(t, "y", PromptAnswer::AllowOnce);
}

#[nvim_oxi::test]
fn float_a_allows_for_the_session(t: TestTerminator) {
    key_gives(t, "a", PromptAnswer::AllowSession);
}

#[nvim_oxi::test]
fn float_shift_a_allows_and_saves(t: TestTerminator) {
    key_gives(t, "A", PromptAnswer::AllowAndSave);
}

#[nvim_oxi::test]
fn float_n_denies(t: TestTerminator) {
    key_gives(t, "n", PromptAnswer::Deny);
}

/// `q` hides the float as `:q` does and `<Esc>` does nothing: neither
/// answers; `:Lathe review` brings the ask back.
#[nvim_oxi::test]
fn float_q_hides_like_colon_q_and_esc_does_not_answer(t: TestTerminator) {
    let main = load();
    run_async(t, async move {
        let h = ask(&main, 50, preview());
        float_ready(&main, 50).await?;
        input(&main, "<Esc>").await?;
        tokio::time::sleep(Duration::from_millis(200)).await;
        check_eq(
            "the float stays after <Esc>",
            on_main(&main, in_float).await?,
            true,
        )?;
        input(&main, "q").await?;
        until(&main, "q hid the float", || {
            !lathe::ui::float::is_float_open()
        })
        .await?;
        tokio::time::sleep(Duration::from_millis(200)).await;
        if h.is_finished() {
            return Err("q or <Esc> answered the ask".into());
        }
        check_eq(
            "still waiting",
            on_main(&main, lathe::ui::float::waiting).await?,
            Some("waiting for you: Edit greeting.py (:Lathe review)".into()),
        )?;
        on_main(&main, lathe::ui::float::review).await??;
        float_ready(&main, 50).await?;
        input(&main, "n").await?;
        check_eq("answer", answer_of(h).await?, PromptAnswer::Deny)
    });
}

#[nvim_oxi::test]
fn float_shift_n_denies_with_a_message_for_the_model(t: TestTerminator) {
    key_gives(
        t,
        "Ntoo risky right now<CR>",
        PromptAnswer::DenyWithMessage("too risky right now".into()),
    );
}

#[nvim_oxi::test]
fn keys_right_after_the_float_appears_go_to_the_users_window(t: TestTerminator) {
    let main = load();
    // The user keeps typing "banana" in Normal mode as the float appears:
    // no letter reaches the float ("a" would allow for the session); they
    // do in the user's buffer what they always do ("b", then "a" appends
    // "nana"), and the float waits while the user is in Insert mode.
    run_async(t, async move {
        on_main(&main, || {
            let _ = api::command("enew");
            let _ = api::get_current_buf().set_lines(.., false, ["one two"]);
            let _ = api::command("normal! $");
        })
        .await?;
        let h = ask(&main, 400, preview());
        until(&main, "the float appeared", lathe::ui::float::is_float_open).await?;
        check_eq("not focused yet", on_main(&main, in_float).await?, false)?;
        input(&main, "banana").await?;
        tokio::time::sleep(Duration::from_millis(600)).await;
        check_eq(
            "the keys went to the user's buffer",
            on_main(&main, current_lines).await?,
            vec!["one tnanawo".to_string()],
        )?;
        check_eq(
            "the user is typing",
            on_main(&main, mode).await?,
            "i".into(),
        )?;
        check_eq(
            "the float waits while the user is in Insert mode",
            on_main(&main, in_float).await?,
            false,
        )?;
        if h.is_finished() {
            return Err("a key typed as the float appeared answered it".into());
        }
        input(&main, "<Esc>").await?;
        float_ready(&main, 400).await?;
        input(&main, "n").await?;
        check_eq("answer", answer_of(h).await?, PromptAnswer::Deny)
    });
}

#[nvim_oxi::test]
fn a_write_typed_as_the_float_appears_saves_the_users_file(t: TestTerminator) {
    let main = load();
    let path = crate::common::temp_file("notes.txt", b"old\n");
    let want = path.clone();
    run_async(t, async move {
        let file_win = on_main(&main, move || {
            let mut b = crate::common::edit(&path);
            let _ = b.set_lines(.., false, ["new"]);
            api::get_current_win()
        })
        .await?;
        let h = ask(&main, 400, preview());
        until(&main, "the float appeared", lathe::ui::float::is_float_open).await?;
        input(&main, ":w<CR>").await?;
        until(&main, "the file is saved", move || {
            std::fs::read_to_string(&want).is_ok_and(|t| t == "new\n")
        })
        .await?;
        let errmsg: String =
            on_main(&main, || lua_eval("vim.v.errmsg").unwrap_or_default()).await?;
        check_eq("no error (E382)", errmsg.as_str(), "")?;
        let (current, focused) = on_main(&main, move || {
            (api::get_current_win() == file_win, in_float())
        })
        .await?;
        check_eq(
            "still in the file's window",
            (current, focused),
            (true, false),
        )?;
        if h.is_finished() {
            return Err("the :w answered the float".into());
        }
        // Once the user stops typing for the guard time, the float takes
        // focus; its keys answer it.
        float_ready(&main, 400).await?;
        input(&main, "y").await?;
        check_eq("answer", answer_of(h).await?, PromptAnswer::AllowOnce)
    });
}

#[nvim_oxi::test]
fn an_ask_waits_while_the_user_types_in_insert_mode(t: TestTerminator) {
    let main = load();
    run_async(t, async move {
        on_main(&main, || {
            let _ = api::command("enew");
        })
        .await?;
        input(&main, "ihello ").await?;
        until(&main, "Insert mode", || mode() == "i").await?;
        let h = ask(&main, 100, preview());
        // Keys typed while the ask waits go to the buffer, not to a float.
        input(&main, "banana yes").await?;
        tokio::time::sleep(Duration::from_millis(400)).await;
        check_eq(
            "no float while in Insert mode",
            on_main(&main, lathe::ui::float::is_float_open).await?,
            false,
        )?;
        let waiting = on_main(&main, lathe::ui::float::waiting).await?;
        check_eq(
            "the statusline says what waits",
            waiting.as_deref(),
            Some("waiting for you: Edit greeting.py (:Lathe review)"),
        )?;
        check_eq(
            "the typing landed in the buffer",
            on_main(&main, current_lines).await?,
            vec!["hello banana yes".to_string()],
        )?;
        input(&main, "<Esc>").await?;
        float_ready(&main, 100).await?;
        input(&main, "y").await?;
        check_eq("answer", answer_of(h).await?, PromptAnswer::AllowOnce)?;
        check_eq(
            "nothing waits",
            on_main(&main, lathe::ui::float::waiting).await?,
            None,
        )
    });
}

#[nvim_oxi::test]
fn asks_queue_one_float_at_a_time(t: TestTerminator) {
    let main = load();
    run_async(t, async move {
        let first = ask(&main, 50, preview());
        float_ready(&main, 50).await?;
        let mut second_preview = preview_of("a\n", "b\n");
        second_preview.title = "Edit other.py".into();
        let second = ask(&main, 50, second_preview);
        until(&main, "the first float counts the queue", || {
            lathe::ui::float::waiting().is_some_and(|w| w.contains("(+1 more)"))
        })
        .await?;
        let (title, _) = on_main(&main, title_and_footer).await?;
        check_eq("title", title.as_str(), " Edit greeting.py (1 of 2) ")?;
        input(&main, "y").await?;
        check_eq("first", answer_of(first).await?, PromptAnswer::AllowOnce)?;
        float_ready(&main, 50).await?;
        let lines = on_main(&main, current_lines).await?;
        if !lines.iter().any(|l| l == "+b") {
            return Err(format!(
                "the second float should show its own diff, got {lines:?}"
            ));
        }
        input(&main, "n").await?;
        check_eq("second", answer_of(second).await?, PromptAnswer::Deny)
    });
}

#[nvim_oxi::test]
fn a_closed_float_stays_pending_and_review_brings_it_back(t: TestTerminator) {
    let main = load();
    run_async(t, async move {
        let h = ask(&main, 50, preview());
        float_ready(&main, 50).await?;
        input(&main, ":q<CR>").await?;
        until(&main, "the float is closed", || {
            !lathe::ui::float::is_float_open()
        })
        .await?;
        tokio::time::sleep(Duration::from_millis(200)).await;
        if h.is_finished() {
            return Err("closing the float answered the ask".into());
        }
        check_eq(
            "still waiting",
            on_main(&main, lathe::ui::float::waiting).await?.is_some(),
            true,
        )?;
        // A new ask does not bring the closed float back on its own.
        let second = ask(&main, 50, preview_of("a\n", "b\n"));
        tokio::time::sleep(Duration::from_millis(400)).await;
        check_eq(
            "no float after a new ask",
            on_main(&main, lathe::ui::float::is_float_open).await?,
            false,
        )?;
        // Another tab: :Lathe review shows it there.
        on_main(&main, || {
            let _ = api::command("tabnew");
        })
        .await?;
        on_main(&main, lathe::ui::float::review).await??;
        float_ready(&main, 50).await?;
        let (title, _) = on_main(&main, title_and_footer).await?;
        check_eq(
            "the closed ask comes back first",
            title.as_str(),
            " Edit greeting.py (1 of 2) ",
        )?;
        input(&main, "y").await?;
        check_eq("answer", answer_of(h).await?, PromptAnswer::AllowOnce)?;
        float_ready(&main, 50).await?;
        input(&main, "n").await?;
        check_eq("second", answer_of(second).await?, PromptAnswer::Deny)
    });
}

#[nvim_oxi::test]
fn a_key_typed_as_focus_comes_back_does_not_answer(t: TestTerminator) {
    let main = load();
    // The float shows but the user went back to their window; `:Lathe
    // review` (or `<C-w>w`, a click) puts the cursor in it again. A key
    // typed with the command, as focus arrives, is not an answer: the
    // guard time starts again whenever the cursor enters the float.
    run_async(t, async move {
        let h = ask(&main, 400, preview());
        float_ready(&main, 400).await?;
        on_main(&main, || {
            let _ = api::command("wincmd p");
        })
        .await?;
        check_eq(
            "back in the user's window",
            on_main(&main, in_float).await?,
            false,
        )?;
        tokio::time::sleep(Duration::from_millis(500)).await;
        on_main(&main, lathe::ui::float::review).await??;
        input(&main, "y").await?;
        tokio::time::sleep(Duration::from_millis(150)).await;
        if h.is_finished() {
            return Err("a y typed with :Lathe review answered the float".into());
        }
        // The same by <C-w>w.
        input(&main, "<C-w>p").await?;
        until(&main, "back in the user's window", || !in_float()).await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
        input(&main, "<C-w>py").await?;
        tokio::time::sleep(Duration::from_millis(150)).await;
        if h.is_finished() {
            return Err("a y typed as <C-w>p entered the float answered it".into());
        }
        check_eq(
            "the cursor is in the float",
            on_main(&main, in_float).await?,
            true,
        )?;
        tokio::time::sleep(Duration::from_millis(450)).await;
        input(&main, "y").await?;
        check_eq("answer", answer_of(h).await?, PromptAnswer::AllowOnce)
    });
}

#[nvim_oxi::test]
fn stop_denies_every_waiting_ask(t: TestTerminator) {
    let main = load();
    run_async(t, async move {
        let first = ask(&main, 50, preview());
        let second = ask(&main, 50, preview_of("a\n", "b\n"));
        float_ready(&main, 50).await?;
        on_main(&main, lathe::ui::float::deny_all).await?;
        check_eq("first", answer_of(first).await?, PromptAnswer::Deny)?;
        check_eq("second", answer_of(second).await?, PromptAnswer::Deny)?;
        check_eq(
            "no float left",
            on_main(&main, lathe::ui::float::is_float_open).await?,
            false,
        )
    });
}

#[nvim_oxi::test]
fn space_leaves_a_hunk_out_and_y_applies_the_rest(t: TestTerminator) {
    let main = load();
    let before: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    let after = before
        .replace("line 2\n", "line two\n")
        .replace("line 18\n", "line eighteen\n");
    let want = apply_hunks(&before, &after, &[true, false]);
    run_async(t, async move {
        let h = ask(&main, 50, preview_of(&before, &after));
        float_ready(&main, 50).await?;
        // Put the cursor on the second hunk's changed line and toggle it.
        on_main(&main, || {
            let lines = current_lines();
            if let Some(row) = lines.iter().position(|l| l == "+line eighteen") {
                let _ = api::get_current_win().set_cursor(row + 1, 0);
            }
        })
        .await?;
        input(&main, " ").await?;
        until(&main, "the float says what is kept", || {
            current_lines()
                .iter()
                .any(|l| l.starts_with("1 of 2 hunks kept"))
        })
        .await?;
        input(&main, "y").await?;
        check_eq(
            "answer",
            answer_of(h).await?,
            PromptAnswer::AllowRevised(Revision {
                after: want,
                rejected_hunks: vec![2],
                edited: false,
            }),
        )
    });
}

#[nvim_oxi::test]
fn space_twice_restores_the_hunk_under_the_cursor_and_help_keeps_the_cursor(t: TestTerminator) {
    let main = load();
    let before: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    let after = before
        .replace("line 2\n", "line two\n")
        .replace("line 18\n", "line eighteen\n");
    run_async(t, async move {
        let h = ask(&main, 50, preview_of(&before, &after));
        float_ready(&main, 50).await?;
        let hunk = "@@ -15,6 +15,6 @@".to_string();
        let target = hunk.clone();
        on_main(&main, move || {
            let lines = current_lines();
            if let Some(row) = lines.iter().position(|l| *l == target) {
                let _ = api::get_current_win().set_cursor(row + 1, 0);
            }
        })
        .await?;
        check_eq(
            "cursor on the hunk",
            on_main(&main, cursor_line).await?,
            hunk.clone(),
        )?;
        input(&main, " ").await?;
        until(&main, "one hunk is left out", || {
            current_lines()
                .iter()
                .any(|l| l.starts_with("1 of 2 hunks kept"))
        })
        .await?;
        check_eq(
            "the cursor stays on its hunk after the header grew",
            on_main(&main, cursor_line).await?,
            hunk.clone(),
        )?;
        input(&main, " ").await?;
        until(&main, "the hunk is kept again", || {
            !current_lines().iter().any(|l| l.contains("hunks kept"))
        })
        .await?;
        check_eq(
            "after the second <Space>",
            on_main(&main, cursor_line).await?,
            hunk.clone(),
        )?;
        input(&main, "?").await?;
        until(&main, "help is shown", || {
            current_lines()
                .iter()
                .any(|l| l.starts_with("?        show or hide"))
        })
        .await?;
        check_eq("after ?", on_main(&main, cursor_line).await?, hunk.clone())?;
        input(&main, "?").await?;
        until(&main, "help is hidden", || {
            !current_lines()
                .iter()
                .any(|l| l.starts_with("?        show or hide"))
        })
        .await?;
        check_eq("after ? again", on_main(&main, cursor_line).await?, hunk)?;
        input(&main, "y").await?;
        check_eq(
            "both hunks kept: allowed as proposed",
            answer_of(h).await?,
            PromptAnswer::AllowOnce,
        )
    });
}

#[nvim_oxi::test]
fn after_space_the_float_no_longer_offers_a(t: TestTerminator) {
    let main = load();
    let before: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    let after = before
        .replace("line 2\n", "line two\n")
        .replace("line 18\n", "line eighteen\n");
    run_async(t, async move {
        let h = ask(&main, 50, preview_of(&before, &after));
        float_ready(&main, 50).await?;
        on_main(&main, || {
            if let Some(row) = current_lines().iter().position(|l| l == "+line two") {
                let _ = api::get_current_win().set_cursor(row + 1, 0);
            }
        })
        .await?;
        input(&main, " ").await?;
        until(&main, "one hunk is left out", || {
            current_lines()
                .iter()
                .any(|l| l.starts_with("1 of 2 hunks kept"))
        })
        .await?;
        let (lines, (_, footer)) = on_main(&main, || (current_lines(), title_and_footer())).await?;
        if lines.iter().any(|l| l.starts_with("a: allow")) || footer.contains("a sess") {
            return Err(format!("a is still offered: {lines:?} / {footer:?}"));
        }
        input(&main, "n").await?;
        check_eq("answer", answer_of(h).await?, PromptAnswer::Deny)
    });
}

#[nvim_oxi::test]
fn at_80_columns_every_line_shows_and_the_footer_keeps_help(t: TestTerminator) {
    let main = load();
    let mut p = preview();
    p.reason = "rule Edit(greeting.py) from /home/someone/projects/greetings/.claude/settings.local.json asks".into();
    run_async(t, async move {
        on_main(&main, || {
            let _ = api::command("set columns=80 lines=24");
        })
        .await?;
        let h = ask(&main, 50, p);
        float_ready(&main, 50).await?;
        let (lines, width, height, text_height, last_shown, footer) = on_main(&main, || {
            let win = api::get_current_win();
            let width = win.get_width().unwrap_or(0) as usize;
            let height = win.get_height().unwrap_or(0) as usize;
            let text_height: usize =
                lua_eval("vim.api.nvim_win_text_height(0, {}).all").unwrap_or(0);
            let last_shown: usize = lua_eval("vim.fn.line('w$')").unwrap_or(0);
            (
                current_lines(),
                width,
                height,
                text_height,
                last_shown,
                title_and_footer().1,
            )
        })
        .await?;
        if let Some(l) = lines.iter().find(|l| l.chars().count() > width) {
            return Err(format!("a line wider than the float ({width}): {l:?}"));
        }
        check_eq(
            "the reason wraps at a space",
            lines[1].as_str(),
            "/home/someone/projects/greetings/.claude/settings.local.json asks",
        )?;
        check_eq("height counts the wrapped rows", height, text_height)?;
        check_eq("the last diff line shows", last_shown, lines.len())?;
        if footer.chars().count() > width || !footer.ends_with(" ? help ") {
            return Err(format!(
                "footer {footer:?} does not fit {width} columns with ? help"
            ));
        }
        input(&main, "n").await?;
        check_eq("answer", answer_of(h).await?, PromptAnswer::Deny)
    });
}

#[nvim_oxi::test]
fn the_chat_says_the_tool_waits_for_the_user(t: TestTerminator) {
    use lathe_core::events::AgentEvent;
    let main = load();
    run_async(t, async move {
        on_main(&main, || {
            lathe::ui::chat::render(vec![
                AgentEvent::TurnStarted {
                    prompt: "fix it".into(),
                },
                AgentEvent::ToolStarted {
                    id: "t1".into(),
                    name: "Edit".into(),
                    detail: "greeting.py".into(),
                    input: serde_json::Value::Null,
                },
            ]);
        })
        .await?;
        let chat = || {
            lathe::ui::chat::chat_buffer()
                .map(|b| crate::common::lines(&b))
                .unwrap_or_default()
        };
        let h = ask(&main, 50, preview());
        until(&main, "the tool line says it waits", move || {
            chat()
                .iter()
                .any(|l| l == "- Edit(greeting.py): waiting for you")
        })
        .await?;
        float_ready(&main, 50).await?;
        input(&main, "y").await?;
        check_eq("answer", answer_of(h).await?, PromptAnswer::AllowOnce)?;
        until(&main, "running again once answered", move || {
            chat().iter().any(|l| l == "- Edit(greeting.py): running")
        })
        .await
    });
}

#[nvim_oxi::test]
fn the_diff_tab_takes_an_edit_of_the_new_side(t: TestTerminator) {
    let main = load();
    run_async(t, async move {
        let h = ask(&main, 50, preview());
        float_ready(&main, 50).await?;
        input(&main, "d").await?;
        until(&main, "the diff tab is open with the proposal", || {
            api::get_current_buf()
                .get_name()
                .is_ok_and(|n| n.to_string_lossy().contains("lathe://proposed/greeting.py"))
        })
        .await?;
        on_main(&main, || {
            let mut b = api::get_current_buf();
            let _ = b.set_lines(1..2, false, ["    print('Hello, world')"]);
        })
        .await?;
        input(&main, ":w<CR>").await?;
        until(&main, "back in the float with the edit", || {
            in_float() && current_lines().iter().any(|l| l.starts_with("You edited"))
        })
        .await?;
        tokio::time::sleep(Duration::from_millis(100)).await;
        input(&main, "y").await?;
        check_eq(
            "answer",
            answer_of(h).await?,
            PromptAnswer::AllowRevised(Revision {
                after: "def greet():\n    print('Hello, world')\n".into(),
                rejected_hunks: vec![],
                edited: true,
            }),
        )
    });
}

#[nvim_oxi::test]
fn a_buffer_changed_while_the_float_is_open_makes_it_stale(t: TestTerminator) {
    let main = load();
    run_async(t, async move {
        let (bufnr, tick) = on_main(&main, || {
            let _ = api::command("enew");
            let mut b = api::get_current_buf();
            let _ = b.set_lines(.., false, ["def greet():", "    print('Helo')"]);
            (b.handle() as i64, b.get_changedtick().unwrap_or(0) as u64)
        })
        .await?;
        let mut p = preview();
        p.watch = Some(Stamp {
            version: Version::Buffer {
                bufnr,
                changedtick: tick,
            },
            hash: TextHash::of(BEFORE),
        });
        let h = ask(&main, 50, p);
        float_ready(&main, 50).await?;
        // The buffer changes (a formatter, another plugin, the user in
        // another window) while the float is open.
        on_main(&main, move || {
            let mut b = api::Buffer::from(bufnr as i32);
            let _ = b.set_lines(1..2, false, ["    print('Helo!')"]);
        })
        .await?;
        until(&main, "the float says it is stale", || {
            current_lines()
                .iter()
                .any(|l| l.starts_with("STALE: greeting.py changed"))
        })
        .await?;
        input(&main, "y").await?;
        tokio::time::sleep(Duration::from_millis(200)).await;
        if h.is_finished() {
            return Err("y was accepted on a stale plan".into());
        }
        input(&main, "r").await?;
        check_eq("answer", answer_of(h).await?, PromptAnswer::Replan)
    });
}

#[nvim_oxi::test]
fn the_float_has_its_own_window_options(t: TestTerminator) {
    let main = load();
    run_async(t, async move {
        on_main(&main, || {
            let _ = api::command("setlocal number list colorcolumn=80 relativenumber");
        })
        .await?;
        let h = ask(&main, 50, preview());
        float_ready(&main, 50).await?;
        let opts = on_main(&main, || {
            let o = api::opts::OptionOpts::builder()
                .win(api::get_current_win())
                .build();
            (
                api::get_option_value::<bool>("number", &o).unwrap_or(true),
                api::get_option_value::<bool>("list", &o).unwrap_or(true),
                api::get_option_value::<String>("colorcolumn", &o).unwrap_or_default(),
            )
        })
        .await?;
        check_eq(
            "number, list, colorcolumn",
            opts,
            (false, false, String::new()),
        )?;
        input(&main, "?").await?;
        until(&main, "help is shown", || {
            current_lines()
                .iter()
                .any(|l| l.starts_with("N        deny and tell the model why"))
        })
        .await?;
        // The help follows the rule line it refers to ("the rule above").
        let lines = on_main(&main, current_lines).await?;
        let rule = lines.iter().position(|l| l.starts_with("a: allow"));
        let help = lines
            .iter()
            .position(|l| l.starts_with("a        allow it"));
        if !matches!((rule, help), (Some(r), Some(h)) if r < h) {
            return Err(format!("the help should follow the rule line: {lines:?}"));
        }
        input(&main, "n").await?;
        check_eq("answer", answer_of(h).await?, PromptAnswer::Deny)
    });
}
