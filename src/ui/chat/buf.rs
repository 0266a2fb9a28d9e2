//! Reads of the chat's buffers that every part of the chat needs: one line
//! of text, the windows showing a buffer. The lowest submodule of `chat`.

use nvim_oxi::api::{self, opts::SetKeymapOpts, types::Mode, Buffer, Window};

use crate::host::guard::guarded;
use crate::host::lua_handle::module_fn;

/// The text of line `row` (0-based) of `buf`, or "".
pub(super) fn line_at(buf: &Buffer, row: usize) -> String {
    super::read_back();
    buf.get_lines(row..row + 1, false)
        .ok()
        .and_then(|mut l| l.next())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The windows (any tab) showing `buf`.
pub(super) fn windows_of(buf: &Buffer) -> Vec<Window> {
    api::list_wins()
        .filter(|w: &Window| w.get_buf().is_ok_and(|b| &b == buf))
        .collect()
}

/// Maps `lhs` in `buf` (buffer-local, `modes`) to `f`, run under `guarded`.
pub(super) fn map(
    buf: &mut Buffer,
    modes: &[Mode],
    lhs: &str,
    desc: &'static str,
    f: fn(),
) -> Result<(), String> {
    for mode in modes {
        let opts = SetKeymapOpts::builder()
            .noremap(true)
            .silent(true)
            .nowait(true)
            .desc(desc)
            .callback(move |()| {
                let _ = guarded(desc, f);
            })
            .build();
        buf.set_keymap(*mode, lhs, "", &opts)
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Starts tree-sitter highlighting of `buf` as markdown (`:help
/// treesitter-highlight`; Neovim ships the markdown parsers): the prompt
/// area, which stays small. Without a parser it stays plain text.
pub(super) fn start_treesitter(buf: &Buffer) {
    let _ = module_fn("lathe.chat", "start_treesitter").and_then(|f| f.call::<()>(buf.handle()));
}
