//! `FloatPrompter`: the permission ask as a centered floating window.
//!
//! The float shows the unified diff of the proposed change (`filetype=diff`),
//! names the tool and file in its title, and lists the keys in its footer.
//! Buffer-local maps: `y` allow once, `a` allow the tool for the session,
//! `n` / `<Esc>` deny. Closing it any other way (`:q`, `:bwipeout`) denies.
//! After opening, the `User LathePermissionAsk` autocmd fires (scripts and
//! tests answer it with `nvim_feedkeys("y", "x", false)`). One float at a
//! time: concurrent asks wait their turn. When an ask is abandoned (the turn
//! was stopped while the float was open) its float closes.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use nvim_oxi::api::{
    self,
    opts::{CreateAutocmdOpts, ExecAutocmdsOpts, OptionOpts, SetKeymapOpts},
    types::{Mode, WindowBorder, WindowConfig, WindowRelativeTo, WindowTitle},
    Buffer, Window,
};
use tokio::sync::{oneshot, Mutex};

use super::bridge::MainThread;
use super::guard::guarded;
use crate::permissions::PermissionPreview;
use crate::permissions::{PromptAnswer, Prompter};

/// The `User` autocmd pattern fired after the float opens.
pub const ASK_EVENT: &str = "LathePermissionAsk";

/// Shown in the float when a call has no diff (e.g. a tool without a file).
pub const NO_DIFF_TEXT: &str = "(no preview for this call)";

/// The footer naming the keys, for `tool`.
pub fn footer_text(tool: &str) -> String {
    format!(" [y] allow once  [a] allow {tool} for this session  [n] deny ")
}

/// Asks through a floating window on the main thread.
pub struct FloatPrompter {
    main: MainThread,
    one_at_a_time: Mutex<()>,
}

impl FloatPrompter {
    /// A prompter opening its floats through `main`.
    pub fn new(main: MainThread) -> Self {
        Self {
            main,
            one_at_a_time: Mutex::new(()),
        }
    }
}

/// Closes float `id` when dropped while armed: the ask's future was dropped
/// before an answer (the turn was stopped while the float was open), and a
/// float nobody waits for must not stay on screen.
struct CloseOnDrop {
    main: MainThread,
    id: u64,
    armed: bool,
}

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        if self.armed {
            let id = self.id;
            // Queued after the job that opens the float, so it finds it.
            let _ = self.main.post(move || close_float(id));
        }
    }
}

#[async_trait]
impl Prompter for FloatPrompter {
    async fn ask(&self, tool: &str, preview: &PermissionPreview) -> PromptAnswer {
        let _turn = self.one_at_a_time.lock().await;
        let (tx, rx) = oneshot::channel();
        let (tool, preview) = (tool.to_string(), preview.clone());
        let id = NEXT_FLOAT.fetch_add(1, Ordering::Relaxed);
        let mut guard = CloseOnDrop {
            main: self.main.clone(),
            id,
            armed: true,
        };
        let answer = self.ask_in_float(id, tool, preview, tx, rx).await;
        guard.armed = false;
        answer
    }
}

impl FloatPrompter {
    async fn ask_in_float(
        &self,
        id: u64,
        tool: String,
        preview: PermissionPreview,
        tx: oneshot::Sender<PromptAnswer>,
        rx: oneshot::Receiver<PromptAnswer>,
    ) -> PromptAnswer {
        match self
            .main
            .run(move || open_float(id, &tool, &preview, tx))
            .await
        {
            Ok(Ok(())) => rx.await.unwrap_or(PromptAnswer::Deny),
            Ok(Err(e)) => {
                let _ = self.main.post(move || {
                    super::guard::notify_error(&format!(
                        "lathe: cannot open the permission window: {e}"
                    ))
                });
                PromptAnswer::Deny
            }
            Err(_) => PromptAnswer::Deny,
        }
    }
}

/// The open float's answer channel, shared by its key maps and autocmd.
struct Pending {
    tx: Option<oneshot::Sender<PromptAnswer>>,
    win: Option<Window>,
    prev: Window,
}

type Shared = Rc<RefCell<Pending>>;

/// Ids of floats, one per ask.
static NEXT_FLOAT: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The open floats by id (main thread), so a dropped ask can close its own.
    static OPEN: RefCell<HashMap<u64, Shared>> = RefCell::new(HashMap::new());
}

/// Closes float `id` if it is still open (answering `Deny` to nobody).
/// Main thread.
fn close_float(id: u64) {
    let state = OPEN.with(|o| o.borrow_mut().remove(&id));
    if let Some(state) = state {
        let _ = guarded("closing the permission window", || {
            answer(&state, PromptAnswer::Deny)
        });
    }
}

/// Sends `answer` (once), closes the float and returns to the window that
/// was current before it opened.
fn answer(state: &Shared, answer: PromptAnswer) {
    OPEN.with(|o| o.borrow_mut().retain(|_, s| !Rc::ptr_eq(s, state)));
    let (tx, win, prev) = {
        let mut s = state.borrow_mut();
        (s.tx.take(), s.win.take(), s.prev.clone())
    };
    if let Some(tx) = tx {
        let _ = tx.send(answer);
    }
    if let Some(win) = win {
        if win.is_valid() {
            let _ = win.close(true);
        }
    }
    if prev.is_valid() {
        let _ = api::set_current_win(&prev);
    }
}

/// Opens float `id` for `tool` with `preview`; `tx` receives the answer.
/// Main thread only. Errors: the API's message when the window cannot open.
pub(crate) fn open_float(
    id: u64,
    tool: &str,
    preview: &PermissionPreview,
    tx: oneshot::Sender<PromptAnswer>,
) -> Result<(), String> {
    let err = |e: api::Error| e.to_string();
    let mut buf = api::create_buf(false, true).map_err(err)?;
    let lines: Vec<&str> = if preview.diff.trim().is_empty() {
        vec![NO_DIFF_TEXT]
    } else {
        preview.diff.trim_end_matches('\n').split('\n').collect()
    };
    buf.set_lines(.., false, lines.iter().copied())
        .map_err(err)?;
    let bopts = OptionOpts::builder().buffer(buf.clone()).build();
    api::set_option_value("filetype", "diff", &bopts).map_err(err)?;
    api::set_option_value("bufhidden", "wipe", &bopts).map_err(err)?;
    api::set_option_value("modifiable", false, &bopts).map_err(err)?;

    let title = if preview.title.is_empty() {
        match &preview.path {
            Some(p) => format!(" {tool} {} ", p.display()),
            None => format!(" {tool} "),
        }
    } else {
        format!(" {} ", preview.title)
    };
    let footer = footer_text(tool);
    let columns: u32 = api::get_option_value("columns", &OptionOpts::default()).unwrap_or(80);
    let total: u32 = api::get_option_value("lines", &OptionOpts::default()).unwrap_or(24);
    let widest = lines
        .iter()
        .map(|l| l.chars().count())
        .chain([title.chars().count(), footer.chars().count()])
        .max()
        .unwrap_or(40) as u32;
    let width = (widest + 2).clamp(20, columns.saturating_sub(4).max(20));
    let height = (lines.len() as u32).clamp(1, total.saturating_sub(6).max(1));
    let config = WindowConfig::builder()
        .relative(WindowRelativeTo::Editor)
        .row(((total.saturating_sub(height)) / 2).saturating_sub(1) as f64)
        .col((columns.saturating_sub(width) / 2) as f64)
        .width(width)
        .height(height)
        .border(WindowBorder::Rounded)
        .title(WindowTitle::SimpleString(title.into()))
        .footer(WindowTitle::SimpleString(footer.into()))
        .build();
    let prev = api::get_current_win();
    // Keys typed into a float in insert mode would be text, not answers.
    let _ = api::command("stopinsert");
    let win = api::open_win(&buf, true, &config).map_err(err)?;

    let state: Shared = Rc::new(RefCell::new(Pending {
        tx: Some(tx),
        win: Some(win),
        prev,
    }));
    OPEN.with(|o| o.borrow_mut().insert(id, state.clone()));
    for (lhs, ans, desc) in [
        ("y", PromptAnswer::AllowOnce, "lathe: allow once"),
        (
            "a",
            PromptAnswer::AllowAlways,
            "lathe: allow for this session",
        ),
        ("n", PromptAnswer::Deny, "lathe: deny"),
        ("<Esc>", PromptAnswer::Deny, "lathe: deny"),
    ] {
        let s = state.clone();
        let opts = SetKeymapOpts::builder()
            .noremap(true)
            .nowait(true)
            .silent(true)
            .desc(desc)
            .callback(move |()| {
                let _ = guarded("permission key", || answer(&s, ans));
            })
            .build();
        buf.set_keymap(Mode::Normal, lhs, "", &opts).map_err(err)?;
    }
    let s = state.clone();
    let au = CreateAutocmdOpts::builder()
        .buffer(buf.clone())
        .once(true)
        .callback(move |_args: api::types::AutocmdCallbackArgs| {
            let _ = guarded("permission window closed", || {
                answer(&s, PromptAnswer::Deny)
            });
            true
        })
        .build();
    api::create_autocmd(["BufWipeout"], &au).map_err(err)?;

    fire_ask_event();
    Ok(())
}

fn fire_ask_event() {
    let opts = ExecAutocmdsOpts::builder()
        .patterns(ASK_EVENT)
        .modeline(false)
        .build();
    if let Err(e) = api::exec_autocmds(["User"], &opts) {
        super::guard::notify_error(&format!("lathe: User {ASK_EVENT} autocmd failed: {e}"));
    }
}

/// `true` when `buf` is the buffer of an open permission float (its
/// `'filetype'` is `diff` and it is shown in a floating window). For tests
/// and health checks.
pub fn is_float_open() -> bool {
    api::list_wins().any(|w| {
        let Ok(cfg) = w.get_config() else {
            return false;
        };
        cfg.relative.is_some()
            && w.get_buf()
                .ok()
                .and_then(|b: Buffer| {
                    api::get_option_value::<String>(
                        "filetype",
                        &OptionOpts::builder().buffer(b).build(),
                    )
                    .ok()
                })
                .is_some_and(|ft| ft == "diff")
    })
}
