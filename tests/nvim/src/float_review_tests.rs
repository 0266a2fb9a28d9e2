//! The permission float's diff tab and focus, in real Neovim, driven with
//! keys like a user (`nvim_input`): the diff tab's winbars and window
//! options whatever the user's settings, the first tab keeping its file's
//! label, `:q` going back to the float, `<Space>` leaving out hunks of a
//! version written with `:w`, the model's proposal written back being the
//! proposal again, and a float the user left looking unfocused and out of
//! the cursor's way until they come back.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lathe::{FloatPrompter, MainThread};
use lathe_core::permissions::{PermissionPreview, PromptAnswer, Prompter, Revision};
use lathe_core::tools::support::diff::unified_diff;
use nvim_oxi::api;
use nvim_oxi::tests::TestTerminator;
use tokio::task::JoinHandle;

use crate::common::{check_eq, load, run_async};

/// Twenty lines; the model changes lines 2 and 18 (two hunks).
fn texts() -> (String, String) {
    let before: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    let after = before
        .replace("line 2\n", "line two\n")
        .replace("line 18\n", "line eighteen\n");
    (before, after)
}

fn preview() -> PermissionPreview {
    let (before, after) = texts();
    PermissionPreview {
        path: Some(PathBuf::from("/tmp/project/lines.txt")),
        diff: unified_diff(Some(&before), &after, "lines.txt"),
        title: "Edit lines.txt".into(),
        reason: "Edit changes files, and asks by default".into(),
        change: Some((Some(before), after)),
        session_rules: vec!["Edit(/lines.txt)".into()],
        ..PermissionPreview::default()
    }
}

fn ask(main: &MainThread, preview: PermissionPreview) -> JoinHandle<PromptAnswer> {
    let prompter = Arc::new(FloatPrompter::new(main.clone(), Duration::from_millis(50)));
    tokio::spawn(async move { prompter.ask("Edit", &preview).await })
}

async fn on_main<R: Send + 'static>(
    main: &MainThread,
    f: impl FnOnce() -> R + Send + 'static,
) -> Result<R, String> {
    main.run(f).await.map_err(|e| e.to_string())
}

async fn input(main: &MainThread, keys: &'static str) -> Result<(), String> {
    on_main(main, move || {
        let _ = api::input(keys);
    })
    .await
}

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

fn in_float() -> bool {
    api::get_current_win()
        .get_config()
        .is_ok_and(|c| c.relative.is_some())
}

fn lua_eval<T: mlua::FromLua>(expr: &str) -> Option<T> {
    lathe::host::lua_handle::lua()
        .load(format!("return {expr}"))
        .eval()
        .ok()
}

/// The float's window (in any tab), 0 when none.
const FLOAT_WIN: &str = r#"(function()
    for _, w in ipairs(vim.api.nvim_list_wins()) do
      if vim.api.nvim_win_get_config(w).relative ~= "" then return w end
    end
    return 0 end)()"#;

/// The float's footer text (chunks joined).
fn float_footer() -> String {
    lua_eval(&format!(
        r#"(function(w)
            local f = vim.api.nvim_win_get_config(w).footer
            if type(f) ~= "table" then return f or "" end
            local s = "" for _, c in ipairs(f) do s = s .. c[1] end return s end)({FLOAT_WIN})"#
    ))
    .unwrap_or_default()
}

/// The float's 'winhighlight'.
fn float_winhighlight() -> String {
    lua_eval(&format!("vim.wo[{FLOAT_WIN}].winhighlight")).unwrap_or_default()
}

fn current_lines() -> Vec<String> {
    api::get_current_buf()
        .get_lines(.., false)
        .map(|it| it.map(|l| l.to_string_lossy().into_owned()).collect())
        .unwrap_or_default()
}

async fn float_ready(main: &MainThread) -> Result<(), String> {
    until(main, "the float is open and focused", in_float).await?;
    tokio::time::sleep(Duration::from_millis(100)).await;
    Ok(())
}

async fn answer_of(h: JoinHandle<PromptAnswer>) -> Result<PromptAnswer, String> {
    tokio::time::timeout(Duration::from_secs(5), h)
        .await
        .map_err(|_| "no answer within 5 s".to_string())?
        .map_err(|e| e.to_string())
}

/// `d`, then waits until the cursor is in the diff tab's right side.
async fn open_diff_tab(main: &MainThread) -> Result<(), String> {
    input(main, "d").await?;
    until(main, "the diff tab is open with the proposal", || {
        api::get_current_buf()
            .get_name()
            .is_ok_and(|n| n.to_string_lossy().contains("lathe://proposed/lines.txt"))
    })
    .await
}

/// After `:w`: back in the float once it shows `line` (or, `false`, no
/// longer shows it).
async fn back_in_float(main: &MainThread, line: &'static str, shown: bool) -> Result<(), String> {
    until(main, "back in the float", move || {
        in_float() && current_lines().iter().any(|l| l.starts_with(line)) == shown
    })
    .await?;
    tokio::time::sleep(Duration::from_millis(100)).await;
    Ok(())
}

/// The window options of a window, as one line.
const OPTIONS_OF: &str = r#"(function(w)
    local o = vim.wo[w]
    return string.format("number=%s relativenumber=%s foldcolumn=%s signcolumn=%s list=%s spell=%s cursorline=%s wrap=%s conceallevel=%s",
      o.number, o.relativenumber, o.foldcolumn, o.signcolumn, o.list, o.spell, o.cursorline, o.wrap, o.conceallevel)
    end)"#;

const REVIEW: &str = "number=true relativenumber=false foldcolumn=0 signcolumn=no list=false spell=false cursorline=false wrap=false conceallevel=0";

#[nvim_oxi::test]
fn the_diff_tab_says_its_keys_and_has_the_options_of_a_review(t: TestTerminator) {
    let main = load();
    run_async(t, async move {
        on_main(&main, || {
            let _ = api::command("edit lines-of-the-user.txt");
            let _ = api::command(
                "set nonumber relativenumber foldcolumn=3 signcolumn=yes list spell cursorline wrap conceallevel=2",
            );
        })
        .await?;
        let h = ask(&main, preview());
        float_ready(&main).await?;
        open_diff_tab(&main).await?;
        let (sides, first_tab) = on_main(&main, || {
            let sides: Vec<String> = lua_eval(&format!(
                "vim.tbl_map(function(w) return vim.wo[w].winbar .. '|' .. {OPTIONS_OF}(w) end, vim.api.nvim_tabpage_list_wins(0))"
            ))
            .unwrap_or_default();
            let first_tab: String = lua_eval(
                "vim.fn.fnamemodify(vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(vim.api.nvim_tabpage_get_win(vim.api.nvim_list_tabpages()[1]))), ':t')",
            )
            .unwrap_or_default();
            (sides, first_tab)
        })
        .await?;
        check_eq(
            "winbar and options of both sides",
            sides,
            vec![
                format!(" before: the file as planned against (read-only) |{REVIEW}"),
                format!(" :w use this text · :q cancel · do/dp per hunk |{REVIEW}"),
            ],
        )?;
        check_eq(
            "the first tab's current window shows the user's file",
            first_tab.as_str(),
            "lines-of-the-user.txt",
        )?;
        // :q cancels: back in the float, the ask still waiting.
        input(&main, ":q<CR>").await?;
        float_ready(&main).await?;
        check_eq(
            "one tab left",
            on_main(&main, || lua_eval::<usize>("#vim.api.nvim_list_tabpages()")).await?,
            Some(1),
        )?;
        if h.is_finished() {
            return Err(":q in the diff tab answered the ask".into());
        }
        input(&main, "n").await?;
        check_eq("answer", answer_of(h).await?, PromptAnswer::Deny)
    });
}

#[nvim_oxi::test]
fn after_w_in_the_diff_tab_space_still_leaves_out_a_hunk(t: TestTerminator) {
    let main = load();
    run_async(t, async move {
        let h = ask(&main, preview());
        float_ready(&main).await?;
        open_diff_tab(&main).await?;
        on_main(&main, || {
            let mut b = api::get_current_buf();
            let _ = b.set_lines(9..10, false, ["line ten"]);
        })
        .await?;
        input(&main, ":w<CR>").await?;
        back_in_float(&main, "You edited", true).await?;
        let footer = on_main(&main, float_footer).await?;
        if !footer.contains("Spc hunk") {
            return Err(format!("the footer should offer <Space>: {footer:?}"));
        }
        // <Space> on the first hunk of the edited version (line two).
        on_main(&main, || {
            let row = current_lines().iter().position(|l| l == "+line two");
            if let Some(r) = row {
                let _ = api::get_current_win().set_cursor(r + 1, 0);
            }
        })
        .await?;
        input(&main, " ").await?;
        until(&main, "the hunk is left out", || {
            current_lines()
                .iter()
                .any(|l| l.starts_with("2 of 3 hunks kept"))
        })
        .await?;
        input(&main, "y").await?;
        let (before, _) = texts();
        let want = before
            .replace("line 10\n", "line ten\n")
            .replace("line 18\n", "line eighteen\n");
        check_eq(
            "answer",
            answer_of(h).await?,
            PromptAnswer::AllowRevised(Revision {
                after: want,
                rejected_hunks: vec![],
                edited: true,
            }),
        )
    });
}

#[nvim_oxi::test]
fn the_proposal_written_back_with_do_is_the_proposal_again(t: TestTerminator) {
    let main = load();
    run_async(t, async move {
        let h = ask(&main, preview());
        float_ready(&main).await?;
        // The user edits the wrong line and takes it with :w.
        open_diff_tab(&main).await?;
        on_main(&main, || {
            let mut b = api::get_current_buf();
            let _ = b.set_lines(7..8, false, ["line 8, edited by mistake"]);
        })
        .await?;
        input(&main, ":w<CR>").await?;
        back_in_float(&main, "You edited", true).await?;
        // Back in the diff tab: `do` on that line takes the original back.
        open_diff_tab(&main).await?;
        on_main(&main, || {
            let _ = api::get_current_win().set_cursor(8, 0);
        })
        .await?;
        input(&main, "do:w<CR>").await?;
        back_in_float(&main, "You edited", false).await?;
        let (lines, footer) = on_main(&main, || (current_lines(), float_footer())).await?;
        if !lines
            .iter()
            .any(|l| l.starts_with("a: allow Edit(/lines.txt)"))
            || !footer.contains("a sess")
        {
            return Err(format!("a should be offered again: {lines:?} {footer:?}"));
        }
        input(&main, "a").await?;
        check_eq("answer", answer_of(h).await?, PromptAnswer::AllowSession)
    });
}

#[nvim_oxi::test]
fn a_float_the_user_left_looks_unfocused_and_clears_the_cursor(t: TestTerminator) {
    let main = load();
    run_async(t, async move {
        on_main(&main, || {
            let _ = api::command("enew");
            let mut b = api::get_current_buf();
            let lines: Vec<String> = (1..=60).map(|i| format!("user line {i}")).collect();
            let _ = b.set_lines(.., false, lines);
            // The cursor in the middle of the screen, where the float sits.
            let _ = api::command("normal! 12G");
        })
        .await?;
        let h = ask(&main, preview());
        float_ready(&main).await?;
        let (hl, footer) = on_main(&main, || (float_winhighlight(), float_footer())).await?;
        if hl.contains("LatheFloatInactive") {
            return Err(format!("a focused float is not dimmed: {hl:?}"));
        }
        if !footer.contains("y allow") {
            return Err(format!("focused footer: {footer:?}"));
        }
        input(&main, "<C-w>p").await?;
        until(&main, "the float looks unfocused", || {
            float_winhighlight().contains("FloatBorder:LatheFloatInactive")
                && float_footer() == " not focused · :Lathe review to answer "
        })
        .await?;
        let (covers, link) = on_main(&main, || {
            let covers: Option<bool> = lua_eval(&format!(
                r#"(function(w)
                    local c = vim.api.nvim_win_get_config(w)
                    local row = vim.fn.screenpos(0, vim.fn.line("."), vim.fn.col(".")).row - 1
                    return row >= c.row and row < c.row + c.height + 2 end)({FLOAT_WIN})"#
            ));
            let link: Option<String> =
                lua_eval(r#"vim.api.nvim_get_hl(0, { name = "LatheFloatInactive" }).link"#);
            (covers, link)
        })
        .await?;
        check_eq("the float clears the cursor's row", covers, Some(false))?;
        check_eq(
            "LatheFloatInactive links to",
            link.as_deref(),
            Some("Comment"),
        )?;
        // A key typed now goes to the user's window, not the float.
        if h.is_finished() {
            return Err("leaving the float answered it".into());
        }
        on_main(&main, lathe::ui::float::review).await??;
        until(&main, "the float looks focused again", || {
            in_float()
                && !float_winhighlight().contains("LatheFloatInactive")
                && float_footer().contains("y allow")
        })
        .await?;
        tokio::time::sleep(Duration::from_millis(100)).await;
        input(&main, "n").await?;
        check_eq("answer", answer_of(h).await?, PromptAnswer::Deny)
    });
}
