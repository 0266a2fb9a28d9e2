//! Saving a buffer after an agent edit without Neovim's `:write`: lathe
//! writes the buffer's new text to its file off the main thread, then makes
//! Neovim take that file as its own (docs/edits.md, "Edits through
//! buffers"; `:help lathe-save`). `:write` of a 100 000-line buffer holds the
//! main loop for tens of ms; this path holds it for the span edit and a few
//! `stat`s.
//!
//! The steps, each on the main thread except the write:
//!
//! 1. [`prepare`] (inside the edit's main-thread step, before the change):
//!    the buffer must be one Neovim's `:write` would write exactly as lathe
//!    does ([`eligible`]: no `BufWritePre`/`BufWriteCmd`/`FileWritePre`/
//!    `FileWriteCmd`/`BufWrite` autocmd for it, UTF-8 without BOM, not
//!    `'binary'`, `'fileformat'` unix or dos, no `'backup'`/`'patchmode'`/
//!    `'undofile'`, a regular file owned by the user with one link). A
//!    `:checktime` of the buffer, with a one-shot `FileChangedShell` that
//!    only notes a change, proves the file is what Neovim last read or
//!    wrote; then its `mtime` is what Neovim compares before a later
//!    `:write` (`b_mtime_read`, `check_mtime()` in Neovim's bufwrite.c).
//! 2. The edit sets `'modified'` before its `nvim_buf_set_text`, so the undo
//!    step records "changed" and `u` leaves the buffer modified (the file
//!    holds the new text).
//! 3. [`write_file`] (blocking thread): the text encoded with the buffer's
//!    `'fileformat'`/`'endofline'` ([`codec::encode`]), written atomically
//!    with the old permission bits through symlinks
//!    ([`replace_existing`]), `fsync`ed when `'fsync'` is on.
//! 4. [`finish`]: `:checktime` of the buffer with a one-shot
//!    `FileChangedShell` that sets `v:fcs_choice` to `""` (keep the buffer,
//!    no reload, no warning) only when the file's size, mtime and inode are
//!    exactly what lathe wrote, else `"ask"` (Neovim's own warning).
//!    Neovim stores the new timestamp before it fires the event
//!    (`buf_check_timestamp()`), so a later `:checktime`/`FocusGained`
//!    reloads nothing; `FileChangedShellPost` is kept out ('eventignore':
//!    nothing changed outside Neovim). Then `'nomodified'` when the buffer
//!    is still at the edit's `changedtick` (the user typing in between keeps
//!    their text and `'modified'`), then `BufWritePost` for the buffer.
//! 5. Neovim still remembers the mtime of its own last read/write for its
//!    "changed since reading it" check before `:write`; that value cannot be
//!    set through the API. A buffer-local `BufWritePre` (which runs before
//!    the check) puts that mtime back on the file when the file is still
//!    exactly what lathe wrote, a moment before Neovim overwrites it; any
//!    other file state gets Neovim's normal prompt. `BufReadPost` (a
//!    reload) or `BufFilePost` forget it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use nvim_oxi::api::{
    self,
    opts::{ClearAutocmdsOpts, CreateAugroupOpts, CreateAutocmdOpts, ExecAutocmdsOpts, OptionOpts},
    types::AutocmdCallbackArgs,
    Buffer,
};

use crate::host::guard::guarded;
use lathe_core::editor::codec::encode;
use lathe_core::editor::{replace_existing, Encoding, LineEnding, TextFormat};

/// The augroup of the hooks this module installs.
const GROUP: &str = "lathe_direct_write";

/// Events whose autocmds make the direct path inexact: they run only on a
/// real `:write` (formatters on save, `acwrite` handlers, LSP `willSave`).
const WRITE_EVENTS: [&str; 5] = [
    "BufWritePre",
    "BufWrite",
    "BufWriteCmd",
    "FileWritePre",
    "FileWriteCmd",
];

/// A file's identity as `stat` gives it: what lathe wrote, compared before
/// Neovim is told to take the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileStamp {
    mtime: Option<SystemTime>,
    len: u64,
    ino: u64,
}

impl FileStamp {
    fn of(meta: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        let ino = std::os::unix::fs::MetadataExt::ino(meta);
        #[cfg(not(unix))]
        let ino = 0;
        Self {
            mtime: meta.modified().ok(),
            len: meta.len(),
            ino,
        }
    }

    fn now(path: &Path) -> Option<Self> {
        std::fs::metadata(path).ok().map(|m| Self::of(&m))
    }
}

/// What [`prepare`] found: the buffer may be saved directly.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    file: PathBuf,
    format: TextFormat,
    fsync: bool,
    /// The mtime Neovim compares before its next `:write`.
    read_mtime: SystemTime,
}

/// A direct save owed by an edit's main-thread step: the caller writes the
/// text ([`write_file`]) and then calls [`finish`] on the main thread.
#[derive(Debug, Clone)]
pub(crate) struct DirectWrite {
    bufnr: i64,
    /// `b:changedtick` right after the edit.
    tick: u64,
    prepared: Prepared,
}

impl DirectWrite {
    /// The save of `bufnr` at `tick` (the edit's), as [`prepare`] allowed.
    pub(crate) fn new(bufnr: i64, tick: u64, prepared: Prepared) -> Self {
        Self {
            bufnr,
            tick,
            prepared,
        }
    }
}

/// The hook state of a buffer saved directly, until Neovim reads or writes
/// its file again.
#[derive(Debug, Clone, Copy)]
struct Pending {
    read_mtime: SystemTime,
    ours: FileStamp,
}

thread_local! {
    static PENDING: RefCell<HashMap<i64, Pending>> = RefCell::new(HashMap::new());
}

fn buf_opts(buf: &Buffer) -> OptionOpts {
    OptionOpts::builder().buffer(buf.clone()).build()
}

fn opt_bool(buf: &Buffer, name: &str) -> Option<bool> {
    api::get_option_value::<bool>(name, &buf_opts(buf)).ok()
}

fn opt_string(buf: &Buffer, name: &str) -> Option<String> {
    api::get_option_value::<String>(name, &buf_opts(buf)).ok()
}

fn global_bool(name: &str) -> Option<bool> {
    api::get_option_value::<bool>(name, &OptionOpts::default()).ok()
}

/// `true` when Neovim's `:write` of `buf` would write what lathe writes and
/// nothing else would run before it: see the module docs (step 1). The
/// buffer's [`TextFormat`] is `format`. Main thread; a few option reads and
/// one `nvim_get_autocmds`.
pub(crate) fn eligible(buf: &Buffer, format: &TextFormat) -> bool {
    let utf8 = opt_string(buf, "fileencoding").is_some_and(|f| {
        let f = f.to_ascii_lowercase();
        f.is_empty() || f == "utf-8" || f == "utf8"
    });
    let ff_ok = opt_string(buf, "fileformat").is_some_and(|f| f == "unix" || f == "dos");
    if !(utf8
        && ff_ok
        && format.encoding == Encoding::Utf8
        && !format.bom
        && opt_string(buf, "buftype").is_some_and(|b| b.is_empty())
        && opt_bool(buf, "binary") == Some(false)
        && opt_bool(buf, "undofile") == Some(false)
        && global_bool("backup") == Some(false)
        && api::get_option_value::<String>("patchmode", &OptionOpts::default())
            .is_ok_and(|p| p.is_empty()))
    {
        return false;
    }
    !has_write_autocmds(buf)
}

/// `true` when an autocmd of [`WRITE_EVENTS`] applies to `buf`: one local
/// to it, or any pattern autocmd (patterns are not matched here: any of
/// them keeps Neovim's `:write`, so a formatter on save always runs).
/// lathe's own hooks do not count.
fn has_write_autocmds(buf: &Buffer) -> bool {
    // Through Lua (`lua/lathe/save.lua`): nvim-oxi's `get_autocmds` options
    // drop the event filter.
    let events: Vec<&str> = WRITE_EVENTS.to_vec();
    crate::host::lua_handle::module_fn("lathe.save", "has_write_autocmds")
        .and_then(|f| f.call::<bool>((buf.handle(), GROUP, events)))
        .unwrap_or(true)
}

/// Step 1 of the module docs for `buf`, whose file is `file`: `None` when
/// the direct path does not apply (then Neovim's `:write` saves the buffer
/// as before). May run `:checktime` for the buffer (a `stat`; a file
/// changed behind Neovim's back is then handled by Neovim: with
/// `'autoread'` an unmodified buffer is reloaded, which moves its
/// `changedtick` — the caller re-checks it). Main thread.
pub(crate) fn prepare(buf: &Buffer, file: &Path, format: &TextFormat) -> Option<Prepared> {
    if !file.is_absolute() || !eligible(buf, format) {
        return None;
    }
    let meta = std::fs::metadata(file).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let euid = unsafe { libc::geteuid() };
        if !meta.is_file() || meta.nlink() != 1 || meta.uid() != euid {
            return None;
        }
    }
    // Is the file what Neovim last read or wrote? `:checktime` compares it
    // with what Neovim stored; a one-shot FileChangedShell notes a change
    // (no dialog: Neovim's `:write`, which then saves the buffer, asks
    // before overwriting a file changed since it was read, as before).
    let changed = Arc::new(AtomicBool::new(false));
    let noted = changed.clone();
    if !checktime_with(buf, false, move |_| {
        noted.store(true, Ordering::Relaxed);
        ""
    }) || changed.load(Ordering::Relaxed)
    {
        return None;
    }
    let now = std::fs::metadata(file).ok()?;
    let stamp = FileStamp::of(&now);
    let pending = PENDING.with(|p| p.borrow().get(&(buf.handle() as i64)).copied());
    let read_mtime = match pending {
        // An earlier direct save: Neovim's remembered mtime is still the
        // one from before it, and the file must be exactly lathe's.
        Some(p) if p.ours == stamp => p.read_mtime,
        Some(_) => return None,
        None => stamp.mtime?,
    };
    Some(Prepared {
        file: file.to_path_buf(),
        format: *format,
        fsync: global_bool("fsync").unwrap_or(true),
        read_mtime,
    })
}

/// Runs `:checktime {buf}` with a one-shot buffer-local `FileChangedShell`
/// whose callback returns the `v:fcs_choice` to set (`""`, `"ask"`, …);
/// `quiet` adds `FileChangedShellPost` to 'eventignore' for it.
/// `false` when the command failed. Main thread.
fn checktime_with(
    buf: &Buffer,
    quiet: bool,
    choose: impl Fn(&str) -> &'static str + 'static,
) -> bool {
    let Ok(group) = api::create_augroup(GROUP, &CreateAugroupOpts::builder().clear(false).build())
    else {
        return false;
    };
    let opts = CreateAutocmdOpts::builder()
        .group(group)
        .buffer(buf.clone())
        .once(true)
        .callback(move |_: AutocmdCallbackArgs| {
            let _ = guarded("FileChangedShell", || {
                let reason: String = api::get_vvar("fcs_reason").unwrap_or_default();
                let _ = api::set_vvar("fcs_choice", choose(&reason));
            });
            false
        })
        .build();
    let Ok(id) = api::create_autocmd(["FileChangedShell"], &opts) else {
        return false;
    };
    // `quiet`: no FileChangedShellPost, which would tell plugins the file
    // changed outside Neovim (configs often say "Buffer reloaded" on it);
    // the caller runs BufWritePost instead.
    let global = OptionOpts::default();
    let ignored: Option<String> = quiet
        .then(|| api::get_option_value::<String>("eventignore", &global).ok())
        .flatten();
    if let Some(ei) = &ignored {
        let more = if ei.is_empty() {
            "FileChangedShellPost".to_string()
        } else {
            format!("{ei},FileChangedShellPost")
        };
        let _ = api::set_option_value("eventignore", more, &global);
    }
    let ran = api::command(&format!("checktime {}", buf.handle())).is_ok();
    if let Some(ei) = ignored {
        let _ = api::set_option_value("eventignore", ei, &global);
    }
    // Not fired (nothing changed): take it away.
    let _ = api::del_autocmd(id);
    ran
}

/// Step 3 of the module docs, off the main thread: `text` (logical) encoded
/// in the buffer's format and written over its file. Returns what `stat`
/// then says of the file. Errors: the encoding or I/O failure, as text.
pub(crate) fn write_file(write: &DirectWrite, text: &str) -> Result<FileStamp, String> {
    let p = &write.prepared;
    // UTF-8 with `\n` endings is the logical text itself: no copy.
    let encoded;
    let bytes = if p.format.line_ending == LineEnding::Lf && !p.format.bom {
        text.as_bytes()
    } else {
        encoded = encode(text, &p.format).map_err(|e| e.detail)?;
        &encoded
    };
    let meta = replace_existing(&p.file, bytes, p.fsync).map_err(|e| e.to_string())?;
    Ok(FileStamp::of(&meta))
}

/// Step 4 and 5 of the module docs, on the main thread, after
/// [`write_file`] returned `written`. Returns `true` when the file holds the
/// edit (also when the user typed in between: their text stays in the
/// buffer, which stays modified). When the write failed and the buffer is
/// still at the edit's tick, Neovim's `:write` (`fallback`) saves it instead.
pub(crate) fn finish(
    write: &DirectWrite,
    written: Result<FileStamp, String>,
    fallback: impl FnOnce(&Buffer) -> bool,
) -> bool {
    let buf = Buffer::from(write.bufnr as i32);
    if !buf.is_valid() || !buf.is_loaded() {
        return written.is_ok();
    }
    let tick = crate::host::changedtick(&buf).ok().map(|t| t as u64);
    let ours = match written {
        Ok(s) => s,
        Err(_) if tick == Some(write.tick) => return fallback(&buf),
        Err(e) => {
            crate::host::guard::notify_warn(&format!(
                "lathe: changed {} but could not write it: {e}",
                write.prepared.file.display()
            ));
            return false;
        }
    };
    let file = write.prepared.file.clone();
    checktime_with(&buf, true, move |_| {
        if FileStamp::now(&file) == Some(ours) {
            ""
        } else {
            "ask"
        }
    });
    if tick == Some(write.tick) {
        let _ = api::set_option_value("modified", false, &buf_opts(&buf));
    }
    remember(&buf, write.prepared.read_mtime, ours);
    crate::host::stats::STATS.bump(crate::host::stats::Counter::DirectWrites);
    let post = ExecAutocmdsOpts::builder()
        .buffer(buf.clone())
        .modeline(false)
        .build();
    let _ = api::exec_autocmds(["BufWritePost"], &post);
    true
}

/// Step 5: keeps `read_mtime` and `ours` for `buf` and (re)installs its
/// hooks.
fn remember(buf: &Buffer, read_mtime: SystemTime, ours: FileStamp) {
    let bufnr = buf.handle() as i64;
    PENDING.with(|p| p.borrow_mut().insert(bufnr, Pending { read_mtime, ours }));
    let Ok(group) = api::create_augroup(GROUP, &CreateAugroupOpts::builder().clear(false).build())
    else {
        return;
    };
    let clear = ClearAutocmdsOpts::builder()
        .group(group)
        .buffer(buf.clone())
        .events(["BufWritePre", "BufReadPost", "BufFilePost", "BufUnload"])
        .build();
    let _ = api::clear_autocmds(&clear);
    let pre = CreateAutocmdOpts::builder()
        .group(group)
        .buffer(buf.clone())
        .callback(move |args: AutocmdCallbackArgs| {
            let _ = guarded("lathe BufWritePre", || before_write(bufnr, &args));
            false
        })
        .build();
    let _ = api::create_autocmd(["BufWritePre"], &pre);
    let gone = CreateAutocmdOpts::builder()
        .group(group)
        .buffer(buf.clone())
        .callback(move |_: AutocmdCallbackArgs| {
            let _ = guarded("lathe BufReadPost", || forget(bufnr));
            false
        })
        .build();
    let _ = api::create_autocmd(["BufReadPost", "BufFilePost", "BufUnload"], &gone);
}

/// Forgets the pending state of `bufnr` and its hooks: Neovim read or wrote
/// the file itself, so its remembered mtime is right again.
fn forget(bufnr: i64) {
    PENDING.with(|p| p.borrow_mut().remove(&bufnr));
    if let Ok(group) =
        api::create_augroup(GROUP, &CreateAugroupOpts::builder().clear(false).build())
    {
        let clear = ClearAutocmdsOpts::builder()
            .group(group)
            .buffer(Buffer::from(bufnr as i32))
            .build();
        let _ = api::clear_autocmds(&clear);
    }
}

/// The `BufWritePre` hook: a `:write` of the buffer to its own file while
/// the file is exactly what lathe wrote gets Neovim's remembered mtime put
/// back on it, so `check_mtime()` does not ask "changed since reading it";
/// Neovim then overwrites the file (a new mtime). A write to another file
/// changes nothing.
fn before_write(bufnr: i64, args: &AutocmdCallbackArgs) {
    let Some(pending) = PENDING.with(|p| p.borrow().get(&bufnr).copied()) else {
        return;
    };
    let buf = Buffer::from(bufnr as i32);
    let Ok(name) = buf.get_name() else { return };
    let target = PathBuf::from(&args.r#match);
    if target != name {
        return;
    }
    if FileStamp::now(&name) == Some(pending.ours) {
        if let Ok(f) = std::fs::File::open(&name) {
            let _ = f.set_modified(pending.read_mtime);
        }
    }
    forget(bufnr);
}
