//! An answer's burst of changes in the float (`:help lathe-float-burst`),
//! in real Neovim: the title counts the answer's changes, `D` shows the
//! queued ones as one diff planned in order, `Y` allows the rest of the
//! answer; after an answer the float holds the keys until the next ask of
//! the answer shows (which ignores them for its guard time), and lets go
//! when nothing more will ask.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lathe::{FloatPrompter, MainThread};
use lathe_core::permissions::{Burst, PermissionPreview, PromptAnswer, Prompter, QueuedChange};
use nvim_oxi::api;
use nvim_oxi::tests::TestTerminator;
use serde_json::json;
use tokio::task::JoinHandle;

use crate::common::{check_eq, load, run_async};

const BEFORE: &str = "def greet():\n    print('Helo')\n";
const AFTER: &str = "def greet():\n    print('Hello')\n";

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("lathe-burst-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&d);
    d
}

/// The first of three changes: Edit greeting.py, then a second Edit of
/// the same file and a Write of a new one are queued.
fn first_of_three() -> PermissionPreview {
    let d = dir();
    let greeting = d.join("greeting.py");
    let _ = std::fs::write(&greeting, BEFORE);
    PermissionPreview {
        path: Some(greeting.clone()),
        title: "Edit greeting.py".into(),
        reason: "Edit changes files, and asks by default".into(),
        change: Some((Some(BEFORE.to_string()), AFTER.to_string())),
        session_rules: vec!["Edit(/greeting.py)".into()],
        burst: Some(Burst {
            index: 1,
            total: 3,
            next: vec![
                QueuedChange {
                    tool: "Edit".into(),
                    title: "Edit greeting.py".into(),
                    path: Some(greeting.clone()),
                    input: json!({
                        "file_path": greeting.display().to_string(),
                        "old_string": "print('Hello')",
                        "new_string": "print('Hello, world')",
                    }),
                },
                QueuedChange {
                    tool: "Write".into(),
                    title: "Write discounts.py".into(),
                    path: Some(d.join("discounts.py")),
                    input: json!({
                        "file_path": d.join("discounts.py").display().to_string(),
                        "content": "RATE = 0.1\n",
                    }),
                },
            ],
        }),
        ..PermissionPreview::default()
    }
}

fn prompter(main: &MainThread, guard_ms: u64) -> Arc<FloatPrompter> {
    Arc::new(FloatPrompter::new(
        main.clone(),
        Duration::from_millis(guard_ms),
    ))
}

fn ask(p: &Arc<FloatPrompter>, preview: PermissionPreview) -> JoinHandle<PromptAnswer> {
    let p = p.clone();
    tokio::spawn(async move { p.ask("Edit", &preview).await })
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
    let state = on_main(main, || (title(), lines(), mode())).await?;
    Err(format!("timed out waiting until {what}; now {state:?}"))
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

/// The current window's title (chunks joined).
fn title() -> String {
    lua_eval(
        r#"(function(t)
        if type(t) ~= "table" then return t or "" end
        local s = "" for _, c in ipairs(t) do s = s .. c[1] end return s end)(vim.api.nvim_win_get_config(0).title)"#,
    )
    .unwrap_or_default()
}

fn mode() -> String {
    lua_eval("vim.api.nvim_get_mode().mode").unwrap_or_default()
}

fn lines() -> Vec<String> {
    api::get_current_buf()
        .get_lines(.., false)
        .map(|it| it.map(|l| l.to_string_lossy().into_owned()).collect())
        .unwrap_or_default()
}

async fn answer_of(h: JoinHandle<PromptAnswer>) -> Result<PromptAnswer, String> {
    tokio::time::timeout(Duration::from_secs(5), h)
        .await
        .map_err(|_| "no answer within 5 s".to_string())?
        .map_err(|e| e.to_string())
}

/// Puts `text` in the user's (current, non-float) window's buffer.
fn users_buffer(text: &'static [&'static str]) {
    let mut b = api::get_current_buf();
    let _ = b.set_lines(.., false, text.iter().copied());
}

#[nvim_oxi::test]
fn the_title_counts_the_answer_and_shift_d_shows_its_changes_as_one_diff(t: TestTerminator) {
    let main = load();
    run_async(t, async move {
        let p = prompter(&main, 50);
        let h = ask(&p, first_of_three());
        until(&main, "the float takes focus", in_float).await?;
        tokio::time::sleep(Duration::from_millis(100)).await;
        let t = on_main(&main, title).await?;
        check_eq("title", t.as_str(), " Edit greeting.py (1 of 3) ")?;
        input(&main, "D").await?;
        until(&main, "the preview tab shows", || {
            api::get_current_buf()
                .get_name()
                .is_ok_and(|n| n.to_string_lossy().contains("lathe://answer-preview"))
        })
        .await?;
        let (text, ft) = on_main(&main, || {
            let ft: String = api::get_option_value(
                "filetype",
                &api::opts::OptionOpts::builder()
                    .buffer(api::get_current_buf())
                    .build(),
            )
            .unwrap_or_default();
            (lines(), ft)
        })
        .await?;
        check_eq("filetype", ft.as_str(), "diff")?;
        if !text[0].contains("Preview of this answer's queued changes") {
            return Err(format!("the preview says it is one: {text:?}"));
        }
        // The second Edit of greeting.py is planned against the first.
        for want in [
            "-    print('Helo')",
            "+    print('Hello, world')",
            "+RATE = 0.1",
        ] {
            if !text.iter().any(|l| l == want) {
                return Err(format!("missing {want:?} in {text:?}"));
            }
        }
        input(&main, "q").await?;
        until(&main, "back in the float", in_float).await?;
        tokio::time::sleep(Duration::from_millis(100)).await;
        input(&main, "Y").await?;
        check_eq("answer", answer_of(h).await?, PromptAnswer::AllowAnswer)
    });
}

#[nvim_oxi::test]
fn after_an_answer_the_float_holds_the_keys_until_the_next_ask(t: TestTerminator) {
    let main = load();
    run_async(t, async move {
        on_main(&main, || users_buffer(&["user text", "second line"])).await?;
        let p = prompter(&main, 150);
        let h = ask(&p, first_of_three());
        until(&main, "the float takes focus", in_float).await?;
        tokio::time::sleep(Duration::from_millis(200)).await;
        // "yes, yes": the second y and the rest land in the hold.
        input(&main, "y").await?;
        check_eq("answer", answer_of(h).await?, PromptAnswer::AllowOnce)?;
        let held = on_main(&main, || (in_float(), title())).await?;
        check_eq(
            "the hold",
            held,
            (true, " next: Edit greeting.py… ".to_string()),
        )?;
        input(&main, "yyesaadd").await?;
        tokio::time::sleep(Duration::from_millis(50)).await;
        // The next ask takes the hold's place; keys within its guard time
        // do not answer it.
        let mut second = first_of_three();
        second.burst = Some(Burst {
            index: 2,
            total: 3,
            next: second
                .burst
                .map(|b| b.next[1..].to_vec())
                .unwrap_or_default(),
        });
        let h2 = ask(&p, second);
        until(&main, "the second float shows", || {
            in_float() && title().contains("(2 of 3)")
        })
        .await?;
        input(&main, "y").await?;
        tokio::time::sleep(Duration::from_millis(60)).await;
        if h2.is_finished() {
            return Err("a key within the guard time answered the next ask".into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        input(&main, "n").await?;
        check_eq("second answer", answer_of(h2).await?, PromptAnswer::Deny)?;
        // Nothing more will ask: the hold lets go, the cursor is back in
        // the user's window, whose text no key changed.
        until(&main, "the hold shows", in_float).await?;
        p.settled();
        until(&main, "the hold closes", || !in_float()).await?;
        let (text, m) = on_main(&main, || (lines(), mode())).await?;
        check_eq("mode", m.as_str(), "n")?;
        check_eq(
            "the user's text",
            text,
            vec!["user text".to_string(), "second line".to_string()],
        )
    });
}

#[nvim_oxi::test]
fn a_pending_operator_is_named_in_the_waiting_notice(t: TestTerminator) {
    let main = load();
    run_async(t, async move {
        let p = prompter(&main, 50);
        // The user started `y` before the float could open.
        input(&main, "y").await?;
        tokio::time::sleep(Duration::from_millis(50)).await;
        let h = ask(&p, first_of_three());
        until(&main, "the notice names the operator", || {
            lathe::ui::float::waiting().is_some_and(|w| w.contains("waiting for you to finish `y`"))
        })
        .await?;
        input(&main, "<Esc>").await?;
        until(&main, "the float opens once the operator ended", in_float).await?;
        tokio::time::sleep(Duration::from_millis(100)).await;
        input(&main, "n").await?;
        check_eq("answer", answer_of(h).await?, PromptAnswer::Deny)
    });
}
