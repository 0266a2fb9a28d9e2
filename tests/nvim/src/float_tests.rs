//! The permission float: `y`, `a`, `n` answer as they say; closing it
//! denies. Keys are typed with `nvim_input` from a `User LathePermissionAsk`
//! autocmd, like a user at the keyboard (the main loop processes them).

use std::path::PathBuf;
use std::sync::Arc;

use lathe::nvim::FloatPrompter;
use lathe::permissions::PermissionPreview;
use lathe::permissions::{PromptAnswer, Prompter};
use nvim_oxi::tests::TestTerminator;

use crate::common::{check_eq, load, run_async};

fn preview() -> PermissionPreview {
    PermissionPreview {
        path: Some(PathBuf::from("/tmp/project/greeting.py")),
        diff:
            "--- a/greeting.py\n+++ b/greeting.py\n@@ -1 +1 @@\n-print('Helo')\n+print('Hello')\n"
                .into(),
        title: "Edit greeting.py".into(),
    }
}

/// On `User LathePermissionAsk`: records the float's text, title and footer
/// in `g:lathe_test_float`, then types `keys`.
fn answer_with(keys: &str) {
    let lua = lathe::nvim::state::lua();
    lua.load(format!(
        r#"
        vim.api.nvim_create_autocmd("User", {{
          pattern = "LathePermissionAsk",
          callback = function()
            local win = vim.api.nvim_get_current_win()
            local cfg = vim.api.nvim_win_get_config(win)
            local function text(t)
              if type(t) == "table" then
                local s = ""
                for _, c in ipairs(t) do s = s .. c[1] end
                return s
              end
              return t or ""
            end
            vim.g.lathe_test_float = {{
              relative = cfg.relative,
              title = text(cfg.title),
              footer = text(cfg.footer),
              filetype = vim.bo.filetype,
              lines = vim.api.nvim_buf_get_lines(0, 0, -1, false),
            }}
            vim.api.nvim_input({keys:?})
          end,
        }})
        "#
    ))
    .exec()
    .expect("autocmd");
}

fn float_record() -> Option<serde_json::Value> {
    let lua = lathe::nvim::state::lua();
    let v: mlua::Value = lua.load("return vim.g.lathe_test_float").eval().ok()?;
    mlua::LuaSerdeExt::from_value(&lua, v).ok()
}

fn float_windows() -> usize {
    let lua = lathe::nvim::state::lua();
    lua.load(
        r#"local n = 0
        for _, w in ipairs(vim.api.nvim_list_wins()) do
          if vim.api.nvim_win_get_config(w).relative ~= "" then n = n + 1 end
        end
        return n"#,
    )
    .eval()
    .unwrap_or(99)
}

fn ask_and_expect(t: TestTerminator, want: PromptAnswer) {
    let main = load();
    let prompter = Arc::new(FloatPrompter::new(main.clone()));
    run_async(t, async move {
        let got = prompter.ask("Edit", &preview()).await;
        check_eq("answer", got, want)?;
        let (rec, floats) = main
            .run(|| (float_record(), float_windows()))
            .await
            .map_err(|e| e.to_string())?;
        let rec = rec.ok_or("the LathePermissionAsk autocmd did not run")?;
        check_eq("relative", rec["relative"].as_str(), Some("editor"))?;
        check_eq("filetype", rec["filetype"].as_str(), Some("diff"))?;
        let title = rec["title"].as_str().unwrap_or("");
        if !title.contains("Edit greeting.py") {
            return Err(format!("title should name tool and file, got {title:?}"));
        }
        check_eq(
            "footer",
            rec["footer"].as_str(),
            Some(" [y] allow once  [a] allow Edit for this session  [n] deny "),
        )?;
        let lines: Vec<&str> = rec["lines"]
            .as_array()
            .map(|a| a.iter().filter_map(|l| l.as_str()).collect())
            .unwrap_or_default();
        if !lines.contains(&"+print('Hello')") {
            return Err(format!("float should show the diff, got {lines:?}"));
        }
        check_eq("floats left open", floats, 0)
    });
}

#[nvim_oxi::test]
fn float_y_allows_once(t: TestTerminator) {
    answer_with("y");
    ask_and_expect(t, PromptAnswer::AllowOnce);
}

#[nvim_oxi::test]
fn float_a_allows_for_the_session(t: TestTerminator) {
    answer_with("a");
    ask_and_expect(t, PromptAnswer::AllowAlways);
}

#[nvim_oxi::test]
fn float_n_denies(t: TestTerminator) {
    answer_with("n");
    ask_and_expect(t, PromptAnswer::Deny);
}

#[nvim_oxi::test]
fn float_esc_denies(t: TestTerminator) {
    answer_with("<Esc>");
    ask_and_expect(t, PromptAnswer::Deny);
}

#[nvim_oxi::test]
fn float_closed_with_q_denies(t: TestTerminator) {
    answer_with(":q<CR>");
    ask_and_expect(t, PromptAnswer::Deny);
}

#[nvim_oxi::test]
fn float_answered_with_feedkeys_x(t: TestTerminator) {
    // Scripts that block in lathe.wait() answer with feedkeys "x" (typed
    // input is not processed while vim.wait pumps the loop).
    let main = load();
    let lua = lathe::nvim::state::lua();
    lua.load(
        r#"vim.api.nvim_create_autocmd("User", { pattern = "LathePermissionAsk",
            callback = function() vim.api.nvim_feedkeys("y", "x", false) end })"#,
    )
    .exec()
    .expect("autocmd");
    let prompter = Arc::new(FloatPrompter::new(main.clone()));
    run_async(t, async move {
        let got = prompter.ask("Write", &preview()).await;
        check_eq("answer", got, PromptAnswer::AllowOnce)
    });
}
