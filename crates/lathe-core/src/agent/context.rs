//! Context from the editor (docs/context-and-compaction.md, "Context from the
//! editor"): what a prompt's `@path`, `#buffer`, `#diagnostics` and
//! `#quickfix` and a `:'<,'>Lathe` selection add to the user's message, and
//! the short per-turn block that tells the model what the editor shows.
//!
//! The agent stays Neovim-free: it asks an [`EditorContext`] (the seam the
//! `nvim` layer implements) for plain data and renders it here, so every
//! model-facing text is a constant with a golden test. Everything lands in
//! the user message of the turn, never in the system prompt, so the prompt
//! cache keeps its prefix from one turn to the next.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::events::AttachedItem;
use crate::permissions::{read_access_spelled, resolve_for_rules, spell, ReadAccess, Rules, READ};
use crate::text::fill;
use crate::tools::support::paths;

/// Why an `@path` cannot be attached: the user-facing text (one of the
/// `ATTACH_*` constants filled in). `Session::ask_with` returns it as
/// `AskError::Attachment`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachError(pub String);

/// The `#` words a prompt may use, as typed.
pub const CONTEXT_WORDS: &[&str] = &["#buffer", "#diagnostics", "#quickfix"];

/// Open buffers named in the per-turn block, at most; the rest are counted.
pub const MAX_OPEN_BUFFERS: usize = 20;

/// Quickfix entries sent for `#quickfix`, at most; the rest are counted.
pub const MAX_QUICKFIX_ITEMS: usize = 200;

/// Diagnostics sent for `#diagnostics`, at most; the rest are counted.
pub const MAX_DIAGNOSTICS: usize = 200;

/// Model-facing: the per-turn block first in every user message sent from
/// Neovim. `{lines}`: [`CURRENT_FILE`] (or [`NO_CURRENT_FILE`]) and
/// [`OPEN_BUFFERS`], one per line.
pub const EDITOR_CONTEXT: &str = "<editor-context>\n\
What the user's Neovim showed when they sent this message (for reference; it is not part of the request and may be out of date later):\n\
{lines}\n\
</editor-context>";

/// A line of [`EDITOR_CONTEXT`]. `{path}` (relative to the project root
/// when inside it), `{line}` (1-based cursor line), `{count}` (lines).
pub const CURRENT_FILE: &str = "Current file: {path} (cursor on line {line} of {count})";

/// A line of [`EDITOR_CONTEXT`] when the user's window shows no file.
pub const NO_CURRENT_FILE: &str = "Current file: none (the user's window shows no file)";

/// A line of [`EDITOR_CONTEXT`]. `{list}`: paths joined with ", ".
pub const OPEN_BUFFERS: &str = "Open buffers: {list}";

/// Model-facing: a `:'<,'>Lathe` selection. `{path}`, `{first}`, `{last}`
/// (1-based, inclusive), `{fence}`, `{lang}` (the buffer's filetype),
/// `{text}`.
pub const SELECTION: &str =
    "The user selected lines {first}-{last} of {path}:\n{fence}{lang}\n{text}\n{fence}";

/// Model-facing: a file attached with `@path` (or `#buffer` of a file),
/// read through the Read tool. `{path}` (as shown by Read's rules:
/// relative to the root), `{content}` (Read's result).
pub const ATTACHED_FILE: &str = "<attached-file path=\"{path}\">\n\
The user attached {path} to this message. Below is what the Read tool returns for it; it counts as your Read of the file, so you can Edit it without reading it again.\n\
{content}\n\
</attached-file>";

/// Model-facing: `#buffer` when the user's buffer is no file on disk.
/// `{name}`, `{fence}`, `{lang}`, `{text}`.
pub const BUFFER_TEXT: &str =
    "The user's current buffer ({name}; not a file on disk):\n{fence}{lang}\n{text}\n{fence}";

/// Model-facing: `#diagnostics`. `{path}`, `{list}` (one per line:
/// `line {line}: {severity} [{source}] {message}`).
pub const DIAGNOSTICS: &str =
    "Diagnostics of {path} (from Neovim's vim.diagnostic; 1-based lines):\n{list}";

/// Model-facing: `#diagnostics` when there are none. `{path}`.
pub const NO_DIAGNOSTICS: &str = "{path} has no diagnostics in Neovim (vim.diagnostic).";

/// Model-facing: `#quickfix`. `{title}`, `{list}` (one per line:
/// `{path}:{line}:{col}: {text}`).
pub const QUICKFIX: &str = "The user's quickfix list ({title}):\n{list}";

/// Model-facing: `#quickfix` when the list is empty.
pub const NO_QUICKFIX: &str = "The user's quickfix list is empty.";

/// Model-facing: a `#` word used where no editor can answer it (a session
/// driven without Neovim).
pub const NO_EDITOR: &str = "(The user wrote {word}, but no editor was there to fill it in.)";

/// Model-facing: after a list cut at its limit. `{n}` items left out.
pub const MORE_ITEMS: &str = "… and {n} more";

/// User-facing ([`AttachError`]): `@path` names no file.
/// `{path}` as typed, `{root}`.
pub const ATTACH_NO_SUCH_FILE: &str = "lathe: @{path}: no such file in {root}. The prompt was not sent; fix the path (completion: <C-x><C-o> in the chat's prompt, <Tab> after :Lathe) and send it again.";

/// User-facing: `@path` names a directory. `{path}`.
pub const ATTACH_DIRECTORY: &str = "lathe: @{path} is a directory; attach files one at a time (the model can Glob or Grep a folder itself). The prompt was not sent.";

/// User-facing: `@path` lies outside the project. `{path}`, `{root}`.
pub const ATTACH_OUTSIDE: &str = "lathe: @{path} is outside the project ({root}); only files inside it (or in permissions.additional_directories) can be attached. The prompt was not sent.";

/// User-facing: a deny rule covers `@path`. `{path}`, `{reason}` (names
/// the rule and its source).
pub const ATTACH_DENIED: &str =
    "lathe: @{path} was not attached: {reason} reading it. The prompt was not sent.";

/// User-facing (the turn's error): the Read of an attachment failed or was
/// refused (a declined ask, a hook). `{path}`, `{error}` (the Read's
/// result, which may not end a sentence: a hook's reason): what lathe
/// says after it is on a line of its own.
pub const ATTACH_READ_FAILED: &str =
    "lathe: @{path} was not attached: {error}\nThe prompt was not sent.";

/// User-facing (the chat's line under the prompt): a `:'<,'>Lathe`
/// selection. `{lines}` (`lines 11–13`, `line 4`), `{path}`.
pub const SHOWN_SELECTION: &str = "Selected {lines} of {path}";

/// User-facing: a file attached with `@path` or `#buffer`. `{path}`,
/// `{lines}` (`40 lines`: the numbered lines Read sent).
pub const SHOWN_FILE: &str = "Attached {path} ({lines})";

/// User-facing: an image attached with `@path`. `{path}`.
pub const SHOWN_IMAGE: &str = "Attached {path} (image)";

/// User-facing: `#buffer` of a buffer that is no file. `{name}`, `{lines}`.
pub const SHOWN_BUFFER: &str = "Attached buffer {name} ({lines})";

/// User-facing: `#diagnostics`. `{count}` (`3`, `none`), `{path}`.
pub const SHOWN_DIAGNOSTICS: &str = "Diagnostics: {count} in {path}";

/// User-facing: `#quickfix`. `{count}` (`4 entries`).
pub const SHOWN_QUICKFIX: &str = "Quickfix list: {count}";

/// User-facing: a `#` word no editor filled in. `{word}`.
pub const SHOWN_NO_EDITOR: &str = "{word}: no editor to fill it in";

/// A `#` word of a prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextWord {
    /// `#buffer`: the user's current buffer.
    Buffer,
    /// `#diagnostics`: its `vim.diagnostic` entries.
    Diagnostics,
    /// `#quickfix`: the quickfix list.
    Quickfix,
}

impl ContextWord {
    /// The word as typed (`#buffer`).
    pub fn as_str(self) -> &'static str {
        match self {
            ContextWord::Buffer => "#buffer",
            ContextWord::Diagnostics => "#diagnostics",
            ContextWord::Quickfix => "#quickfix",
        }
    }

    fn parse(word: &str) -> Option<Self> {
        match word {
            "#buffer" => Some(ContextWord::Buffer),
            "#diagnostics" => Some(ContextWord::Diagnostics),
            "#quickfix" => Some(ContextWord::Quickfix),
            _ => None,
        }
    }
}

/// One mention in a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mention {
    /// `@path`: the path as typed, without the `@`.
    File(String),
    /// A `#` word.
    Word(ContextWord),
}

/// Characters a mention may end with that belong to the sentence, not the
/// mention (`see @a.rs, then …`).
const TRAILING: &[char] = &['.', ',', ';', ':', '!', '?', ')', ']', '}', '"', '\''];

/// The mentions of `prompt`, in order, each once: a word that starts with
/// `@` (at the start or after whitespace, so `me@host` is none) and has
/// more after it, or one of [`CONTEXT_WORDS`]; trailing punctuation is not
/// part of it.
pub fn mentions(prompt: &str) -> Vec<Mention> {
    let mut out = Vec::new();
    for word in prompt.split_whitespace() {
        let word = word.trim_end_matches(TRAILING);
        let m = if let Some(path) = word.strip_prefix('@') {
            if path.is_empty() {
                continue;
            }
            Mention::File(path.to_string())
        } else if let Some(w) = ContextWord::parse(word) {
            Mention::Word(w)
        } else {
            continue;
        };
        if !out.contains(&m) {
            out.push(m);
        }
    }
    out
}

/// What the user's editor shows, for [`EDITOR_CONTEXT`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct EditorState {
    /// The file in the user's window (absolute), if it shows one.
    #[serde(default)]
    pub file: Option<PathBuf>,
    /// 1-based cursor line in that window.
    #[serde(default)]
    pub line: usize,
    /// Lines in that buffer.
    #[serde(default)]
    pub line_count: usize,
    /// Files of the listed buffers (absolute), in buffer order.
    #[serde(default)]
    pub buffers: Vec<PathBuf>,
}

/// A selection sent with `:'<,'>Lathe`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Selection {
    /// The buffer's file (absolute), or its name when it is no file.
    pub path: PathBuf,
    /// 1-based first line.
    pub first: usize,
    /// 1-based last line (inclusive).
    pub last: usize,
    /// The buffer's filetype ("" for none).
    #[serde(default)]
    pub filetype: String,
    /// The selected lines joined with "\n".
    pub text: String,
}

/// What `#buffer` finds in the user's window.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CurrentBuffer {
    /// A file on disk (absolute): attached like `@path`, through Read.
    File {
        /// The file.
        path: PathBuf,
    },
    /// A buffer with no file (scratch, a new unnamed buffer).
    Text {
        /// Its name ("[No Name]" when it has none).
        name: String,
        /// Its filetype ("" for none).
        #[serde(default)]
        filetype: String,
        /// Its lines joined with "\n".
        text: String,
    },
}

/// One `vim.diagnostic` entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Diagnostic {
    /// 1-based line.
    pub line: usize,
    /// "ERROR", "WARN", "INFO" or "HINT".
    pub severity: String,
    /// Who reported it (an LSP server, a linter), if known.
    #[serde(default)]
    pub source: Option<String>,
    /// The message.
    pub message: String,
}

/// `#diagnostics`: the user's buffer and its diagnostics.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Diagnostics {
    /// The buffer's file (absolute), or its name.
    pub path: PathBuf,
    /// Its diagnostics, by line.
    #[serde(default)]
    pub items: Vec<Diagnostic>,
}

/// One quickfix entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct QuickfixItem {
    /// Its file (absolute), if it has one.
    #[serde(default)]
    pub path: Option<PathBuf>,
    /// 1-based line (0: none).
    #[serde(default)]
    pub line: usize,
    /// 1-based column (0: none).
    #[serde(default)]
    pub col: usize,
    /// The text.
    #[serde(default)]
    pub text: String,
}

/// `#quickfix`: the list and its title.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Quickfix {
    /// `w:quickfix_title` / the list's title.
    #[serde(default)]
    pub title: String,
    /// Its entries.
    #[serde(default)]
    pub items: Vec<QuickfixItem>,
}

/// The seam to the editor (implemented by `lathe::adapters::context`): plain data about
/// what the user sees. Called on the thread that calls `Session::ask_with`
/// (Neovim's main thread), once per ask; "the user's window" is the window
/// the user works in, not lathe's chat.
pub trait EditorContext {
    /// The current file, cursor line and open buffers; `None` when the
    /// editor cannot say.
    fn state(&self) -> Option<EditorState>;
    /// The buffer in the user's window (`#buffer`).
    fn current_buffer(&self) -> Option<CurrentBuffer>;
    /// The diagnostics of that buffer (`#diagnostics`).
    fn diagnostics(&self) -> Option<Diagnostics>;
    /// The quickfix list (`#quickfix`).
    fn quickfix(&self) -> Quickfix;
}

/// A file to attach: read through the Read tool when the turn starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// As the user wrote it (`@src/a.rs` → `src/a.rs`), for messages.
    pub shown: String,
    /// Absolute, folded.
    pub path: PathBuf,
}

/// A user message as an ask builds it: the context blocks, the files to
/// attach, and the prompt (last).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserTurn {
    /// The prompt as typed (the chat shows it).
    pub prompt: String,
    /// Text blocks before the attachments: the editor context, the
    /// selection, `#` words.
    pub context: Vec<String>,
    /// Files read through the Read tool and added after `context`.
    pub attachments: Vec<Attachment>,
    /// What the chat shows of `context` (the selection, `#` words; not the
    /// editor's state), in order; files are added when they are read.
    pub shown: Vec<AttachedItem>,
}

impl UserTurn {
    /// A plain prompt with no context.
    pub fn plain(prompt: &str) -> Self {
        Self {
            prompt: prompt.to_string(),
            ..Self::default()
        }
    }

    /// Adds context block `text`, which the chat shows as `label`.
    fn push_shown(&mut self, text: String, label: String) {
        self.shown.push(AttachedItem {
            label,
            text: text.clone(),
        });
        self.context.push(text);
    }
}

/// Builds the user message for `prompt`: the editor's state, `selection`,
/// each `#` word, and each `@path` checked (exists, is a file, inside the
/// project, no Read deny rule covers it). Errors:
/// [`AttachError`] with the user-facing reason; nothing is sent.
pub fn gather(
    prompt: &str,
    editor: Option<&dyn EditorContext>,
    selection: Option<&Selection>,
    root: &Path,
    rules: &Rules,
) -> Result<UserTurn, AttachError> {
    let mut turn = UserTurn::plain(prompt);
    if let Some(state) = editor.and_then(|e| e.state()) {
        turn.context.push(render_state(&state, root));
    }
    if let Some(sel) = selection {
        let text = render_selection(sel, root);
        turn.shown.push(shown_selection(sel, root, &text));
        turn.context.push(text);
    }
    for m in mentions(prompt) {
        match m {
            Mention::File(p) => {
                let a = check_attachment(&p, root, rules)?;
                if !turn.attachments.contains(&a) {
                    turn.attachments.push(a);
                }
            }
            Mention::Word(w) => gather_word(&mut turn, w, editor, root, rules)?,
        }
    }
    Ok(turn)
}

/// Adds what `#` word `w` asks for to `turn`: a context block with the
/// chat's line for it, or a file to attach (`#buffer` of a file; its line
/// comes when it is read).
fn gather_word(
    turn: &mut UserTurn,
    w: ContextWord,
    editor: Option<&dyn EditorContext>,
    root: &Path,
    rules: &Rules,
) -> Result<(), AttachError> {
    let no_editor = |turn: &mut UserTurn| {
        turn.push_shown(
            fill(NO_EDITOR, &[("word", w.as_str())]),
            fill(SHOWN_NO_EDITOR, &[("word", w.as_str())]),
        )
    };
    let Some(ed) = editor else {
        no_editor(turn);
        return Ok(());
    };
    match w {
        ContextWord::Buffer => match ed.current_buffer() {
            Some(CurrentBuffer::File { path }) => {
                let shown = paths::display(root, &path);
                let a = check_attachment(&shown, root, rules)?;
                if !turn.attachments.contains(&a) {
                    turn.attachments.push(a);
                }
            }
            Some(CurrentBuffer::Text {
                name,
                filetype,
                text,
            }) => {
                let lines = crate::text::plural(text.lines().count(), "line", "lines");
                let label = fill(SHOWN_BUFFER, &[("name", &name), ("lines", &lines)]);
                turn.push_shown(
                    fenced(BUFFER_TEXT, &[("name", &name), ("lang", &filetype)], &text),
                    label,
                );
            }
            None => no_editor(turn),
        },
        ContextWord::Diagnostics => match ed.diagnostics() {
            Some(d) => {
                let count = if d.items.is_empty() {
                    "none".to_string()
                } else {
                    d.items.len().to_string()
                };
                let label = fill(
                    SHOWN_DIAGNOSTICS,
                    &[("count", &count), ("path", &paths::display(root, &d.path))],
                );
                turn.push_shown(render_diagnostics(&d, root), label);
            }
            None => no_editor(turn),
        },
        ContextWord::Quickfix => {
            let q = ed.quickfix();
            let label = fill(
                SHOWN_QUICKFIX,
                &[(
                    "count",
                    &crate::text::plural(q.items.len(), "entry", "entries"),
                )],
            );
            turn.push_shown(render_quickfix(&q, root), label);
        }
    }
    Ok(())
}

/// The chat's line for a selection sent as `text`.
fn shown_selection(sel: &Selection, root: &Path, text: &str) -> AttachedItem {
    let lines = if sel.first == sel.last {
        format!("line {}", sel.first)
    } else {
        format!("lines {}–{}", sel.first, sel.last)
    };
    AttachedItem {
        label: fill(
            SHOWN_SELECTION,
            &[
                ("lines", &lines),
                ("path", &paths::display(root, &sel.path)),
            ],
        ),
        text: text.to_string(),
    }
}

/// The chat's line for file `a`, attached with Read's result `content`
/// (`None`: an image).
pub fn shown_file(a: &Attachment, root: &Path, content: Option<&str>) -> AttachedItem {
    let path = paths::display(root, &a.path);
    match content {
        Some(text) => {
            // Read's numbered lines (`     12\tcode`).
            let n = text
                .lines()
                .filter(|l| {
                    l.trim_start().split_once('\t').is_some_and(|(num, _)| {
                        !num.is_empty() && num.bytes().all(|b| b.is_ascii_digit())
                    })
                })
                .count();
            AttachedItem {
                label: fill(
                    SHOWN_FILE,
                    &[
                        ("path", &path),
                        ("lines", &crate::text::plural(n, "line", "lines")),
                    ],
                ),
                text: text.to_string(),
            }
        }
        None => AttachedItem {
            label: fill(SHOWN_IMAGE, &[("path", &path)]),
            text: String::new(),
        },
    }
}

/// Checks `@shown` (relative to `root`, absolute, or `~/…`): a file that
/// exists, inside the project (or an additional directory), that no deny
/// rule for Read covers. The Read that attaches it goes through the whole
/// pipeline too (hooks, asks); this check makes the common refusals
/// immediate and clear.
fn check_attachment(shown: &str, root: &Path, rules: &Rules) -> Result<Attachment, AttachError> {
    let path = paths::resolve(root, shown);
    let root_shown = root.display().to_string();
    let err = |template: &str, reason: &str| {
        AttachError(fill(
            template,
            &[("path", shown), ("root", &root_shown), ("reason", reason)],
        ))
    };
    let canon_root = resolve_for_rules(root);
    let spelled = spell(&path);
    let canon = spelled.real.clone();
    let inside = crate::permissions::is_inside(&canon, &canon_root, &rules.additional_dirs);
    if !inside {
        return Err(err(ATTACH_OUTSIDE, ""));
    }
    match std::fs::metadata(&path) {
        Err(_) => return Err(err(ATTACH_NO_SUCH_FILE, "")),
        Ok(m) if m.is_dir() => return Err(err(ATTACH_DIRECTORY, "")),
        Ok(_) => {}
    }
    if let ReadAccess::Denied(reason) =
        read_access_spelled(rules, READ, &spelled, false, &canon_root)
    {
        return Err(err(ATTACH_DENIED, &reason.to_string()));
    }
    Ok(Attachment {
        shown: shown.to_string(),
        path,
    })
}

/// [`EDITOR_CONTEXT`] for `state`.
pub fn render_state(state: &EditorState, root: &Path) -> String {
    let current = match &state.file {
        Some(f) => fill(
            CURRENT_FILE,
            &[
                ("path", &paths::display(root, f)),
                ("line", &state.line.to_string()),
                ("count", &state.line_count.to_string()),
            ],
        ),
        None => NO_CURRENT_FILE.to_string(),
    };
    let names: Vec<String> = state
        .buffers
        .iter()
        .map(|b| paths::display(root, b))
        .collect();
    let list = capped(names, MAX_OPEN_BUFFERS, ", ");
    let mut lines = vec![current];
    if !state.buffers.is_empty() {
        lines.push(fill(OPEN_BUFFERS, &[("list", &list)]));
    }
    fill(EDITOR_CONTEXT, &[("lines", &lines.join("\n"))])
}

/// [`SELECTION`] for `sel`.
pub fn render_selection(sel: &Selection, root: &Path) -> String {
    fenced(
        SELECTION,
        &[
            ("path", &paths::display(root, &sel.path)),
            ("first", &sel.first.to_string()),
            ("last", &sel.last.to_string()),
            ("lang", &sel.filetype),
        ],
        &sel.text,
    )
}

/// [`DIAGNOSTICS`] (or [`NO_DIAGNOSTICS`]) for `d`.
pub fn render_diagnostics(d: &Diagnostics, root: &Path) -> String {
    let path = paths::display(root, &d.path);
    if d.items.is_empty() {
        return fill(NO_DIAGNOSTICS, &[("path", &path)]);
    }
    let lines: Vec<String> = d
        .items
        .iter()
        .map(|i| {
            let source = i
                .source
                .as_deref()
                .filter(|s| !s.is_empty())
                .map(|s| format!(" [{s}]"))
                .unwrap_or_default();
            format!("line {}: {}{source} {}", i.line, i.severity, i.message)
        })
        .collect();
    fill(
        DIAGNOSTICS,
        &[
            ("path", &path),
            ("list", &capped(lines, MAX_DIAGNOSTICS, "\n")),
        ],
    )
}

/// [`QUICKFIX`] (or [`NO_QUICKFIX`]) for `q`.
pub fn render_quickfix(q: &Quickfix, root: &Path) -> String {
    if q.items.is_empty() {
        return NO_QUICKFIX.to_string();
    }
    let lines: Vec<String> = q
        .items
        .iter()
        .map(|i| {
            let mut s = i
                .path
                .as_ref()
                .map(|p| paths::display(root, p))
                .unwrap_or_default();
            if i.line > 0 {
                s.push_str(&format!(":{}", i.line));
                if i.col > 0 {
                    s.push_str(&format!(":{}", i.col));
                }
            }
            if s.is_empty() {
                i.text.trim().to_string()
            } else {
                format!("{s}: {}", i.text.trim())
            }
        })
        .collect();
    let title = if q.title.trim().is_empty() {
        crate::text::plural(q.items.len(), "entry", "entries")
    } else {
        format!(
            "{}, {}",
            q.title.trim(),
            crate::text::plural(q.items.len(), "entry", "entries")
        )
    };
    fill(
        QUICKFIX,
        &[
            ("title", &title),
            ("list", &capped(lines, MAX_QUICKFIX_ITEMS, "\n")),
        ],
    )
}

/// [`ATTACHED_FILE`] around Read's result for `a`.
pub fn render_attachment(a: &Attachment, root: &Path, content: &str) -> String {
    fill(
        ATTACHED_FILE,
        &[
            ("path", &paths::display(root, &a.path)),
            ("content", content),
        ],
    )
}

/// `items` joined with `sep`, at most `max` of them, then [`MORE_ITEMS`].
fn capped(mut items: Vec<String>, max: usize, sep: &str) -> String {
    let more = items.len().saturating_sub(max);
    items.truncate(max);
    if more > 0 {
        items.push(fill(MORE_ITEMS, &[("n", &more.to_string())]));
    }
    items.join(sep)
}

/// `template` filled with `vars`, `{text}` and a `{fence}` of backticks
/// longer than any run in `text` (at least three), so the text cannot
/// close it.
fn fenced(template: &str, vars: &[(&str, &str)], text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat((longest + 1).max(3));
    let mut all: Vec<(&str, &str)> = vars.to_vec();
    all.push(("fence", &fence));
    all.push(("text", text));
    fill(template, &all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_are_words_starting_with_at_or_the_hash_words() {
        assert_eq!(
            mentions("fix @src/a.rs, see #buffer and #diagnostics. mail me@host.com @src/a.rs #quickfix #other @"),
            vec![
                Mention::File("src/a.rs".into()),
                Mention::Word(ContextWord::Buffer),
                Mention::Word(ContextWord::Diagnostics),
                Mention::Word(ContextWord::Quickfix),
            ]
        );
        assert_eq!(mentions("(@a.rs)"), vec![], "only at a word's start");
    }

    #[test]
    fn the_chat_is_shown_a_line_for_the_selection_and_each_word() {
        let root = Path::new("/p");
        let sel = Selection {
            path: PathBuf::from("/p/shop/pricing.py"),
            first: 11,
            last: 13,
            filetype: "python".into(),
            text: "a\nb\nc".into(),
        };
        let t = gather(
            "explain #quickfix",
            None,
            Some(&sel),
            root,
            &Rules::default(),
        )
        .unwrap();
        let labels: Vec<&str> = t.shown.iter().map(|i| i.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "Selected lines 11–13 of shop/pricing.py",
                "#quickfix: no editor to fill it in"
            ]
        );
        // Each folds to exactly what was sent.
        assert_eq!(t.shown[0].text, t.context[0]);
        assert_eq!(t.shown[1].text, t.context[1]);
        let one = Selection { last: 11, ..sel };
        let t = gather("x", None, Some(&one), root, &Rules::default()).unwrap();
        assert_eq!(t.shown[0].label, "Selected line 11 of shop/pricing.py");
    }

    #[test]
    fn golden_texts() {
        assert_eq!(
            CURRENT_FILE,
            "Current file: {path} (cursor on line {line} of {count})"
        );
        assert_eq!(
            NO_CURRENT_FILE,
            "Current file: none (the user's window shows no file)"
        );
        assert_eq!(OPEN_BUFFERS, "Open buffers: {list}");
        assert_eq!(
            SELECTION,
            "The user selected lines {first}-{last} of {path}:\n{fence}{lang}\n{text}\n{fence}"
        );
        assert_eq!(BUFFER_TEXT, "The user's current buffer ({name}; not a file on disk):\n{fence}{lang}\n{text}\n{fence}");
        assert_eq!(
            DIAGNOSTICS,
            "Diagnostics of {path} (from Neovim's vim.diagnostic; 1-based lines):\n{list}"
        );
        assert_eq!(
            NO_DIAGNOSTICS,
            "{path} has no diagnostics in Neovim (vim.diagnostic)."
        );
        assert_eq!(QUICKFIX, "The user's quickfix list ({title}):\n{list}");
        assert_eq!(NO_QUICKFIX, "The user's quickfix list is empty.");
        assert_eq!(
            NO_EDITOR,
            "(The user wrote {word}, but no editor was there to fill it in.)"
        );
        assert_eq!(MORE_ITEMS, "… and {n} more");
        assert_eq!(ATTACH_DIRECTORY, "lathe: @{path} is a directory; attach files one at a time (the model can Glob or Grep a folder itself). The prompt was not sent.");
        assert_eq!(
            ATTACH_READ_FAILED,
            "lathe: @{path} was not attached: {error}\nThe prompt was not sent."
        );
        assert_eq!(EDITOR_CONTEXT, "<editor-context>\nWhat the user's Neovim showed when they sent this message (for reference; it is not part of the request and may be out of date later):\n{lines}\n</editor-context>");
        assert_eq!(
            ATTACHED_FILE,
            "<attached-file path=\"{path}\">\nThe user attached {path} to this message. Below is what the Read tool returns for it; it counts as your Read of the file, so you can Edit it without reading it again.\n{content}\n</attached-file>"
        );
        assert_eq!(
            ATTACH_NO_SUCH_FILE,
            "lathe: @{path}: no such file in {root}. The prompt was not sent; fix the path (completion: <C-x><C-o> in the chat's prompt, <Tab> after :Lathe) and send it again."
        );
        assert_eq!(
            ATTACH_DENIED,
            "lathe: @{path} was not attached: {reason} reading it. The prompt was not sent."
        );
        assert_eq!(
            ATTACH_OUTSIDE,
            "lathe: @{path} is outside the project ({root}); only files inside it (or in permissions.additional_directories) can be attached. The prompt was not sent."
        );
    }

    #[test]
    fn state_names_the_file_relative_to_the_root_and_caps_the_buffers() {
        let root = Path::new("/p");
        let mut buffers: Vec<PathBuf> =
            vec![PathBuf::from("/p/src/a.rs"), PathBuf::from("/etc/hosts")];
        let s = EditorState {
            file: Some(PathBuf::from("/p/src/a.rs")),
            line: 12,
            line_count: 80,
            buffers: buffers.clone(),
        };
        assert_eq!(
            render_state(&s, root),
            "<editor-context>\nWhat the user's Neovim showed when they sent this message (for reference; it is not part of the request and may be out of date later):\nCurrent file: src/a.rs (cursor on line 12 of 80)\nOpen buffers: src/a.rs, /etc/hosts\n</editor-context>"
        );
        buffers = (0..25).map(|i| PathBuf::from(format!("/p/{i}"))).collect();
        let s = EditorState {
            file: None,
            buffers,
            ..EditorState::default()
        };
        let r = render_state(&s, root);
        assert!(r.contains("Current file: none"), "{r}");
        assert!(r.contains(", 19, … and 5 more\n"), "{r}");
    }

    #[test]
    fn selection_is_fenced_with_language_and_1_based_range() {
        let sel = Selection {
            path: PathBuf::from("/p/a.md"),
            first: 3,
            last: 4,
            filetype: "markdown".into(),
            text: "```lua\nx```".into(),
        };
        assert_eq!(
            render_selection(&sel, Path::new("/p")),
            "The user selected lines 3-4 of a.md:\n````markdown\n```lua\nx```\n````"
        );
    }

    #[test]
    fn diagnostics_and_quickfix_render_one_line_each() {
        let root = Path::new("/p");
        let d = Diagnostics {
            path: PathBuf::from("/p/a.rs"),
            items: vec![Diagnostic {
                line: 3,
                severity: "ERROR".into(),
                source: Some("rustc".into()),
                message: "mismatched types".into(),
            }],
        };
        assert_eq!(
            render_diagnostics(&d, root),
            "Diagnostics of a.rs (from Neovim's vim.diagnostic; 1-based lines):\nline 3: ERROR [rustc] mismatched types"
        );
        assert_eq!(
            render_diagnostics(
                &Diagnostics {
                    path: PathBuf::from("/p/a.rs"),
                    items: vec![]
                },
                root
            ),
            "a.rs has no diagnostics in Neovim (vim.diagnostic)."
        );
        let q = Quickfix {
            title: "Grep".into(),
            items: vec![QuickfixItem {
                path: Some(PathBuf::from("/p/b.rs")),
                line: 2,
                col: 5,
                text: " hit ".into(),
            }],
        };
        assert_eq!(
            render_quickfix(&q, root),
            "The user's quickfix list (Grep, 1 entry):\nb.rs:2:5: hit"
        );
        assert_eq!(render_quickfix(&Quickfix::default(), root), NO_QUICKFIX);
    }

    struct Scratch;

    impl EditorContext for Scratch {
        fn state(&self) -> Option<EditorState> {
            None
        }
        fn current_buffer(&self) -> Option<CurrentBuffer> {
            Some(CurrentBuffer::Text {
                name: "[No Name]".into(),
                filetype: "lua".into(),
                text: "print(1)".into(),
            })
        }
        fn diagnostics(&self) -> Option<Diagnostics> {
            None
        }
        fn quickfix(&self) -> Quickfix {
            Quickfix::default()
        }
    }

    #[test]
    fn a_buffer_with_no_file_goes_as_text_and_words_without_an_editor_say_so() {
        let root = Path::new("/p");
        let rules = Rules::default();
        let t = gather("run #buffer #quickfix", Some(&Scratch), None, root, &rules).unwrap();
        assert_eq!(
            t.context,
            vec![
                "The user's current buffer ([No Name]; not a file on disk):\n```lua\nprint(1)\n```"
                    .to_string(),
                NO_QUICKFIX.to_string(),
            ]
        );
        assert!(t.attachments.is_empty());
        let t = gather("run #diagnostics", None, None, root, &rules).unwrap();
        assert_eq!(
            t.context,
            vec![
                "(The user wrote #diagnostics, but no editor was there to fill it in.)".to_string()
            ]
        );
    }

    #[test]
    fn attachments_are_checked_before_anything_is_sent() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("a.rs"), "x").unwrap();
        std::fs::write(root.join("secret.txt"), "x").unwrap();
        std::fs::create_dir(root.join("src")).unwrap();
        let mut rules = Rules::default();
        let base = crate::permissions::RuleBase::at_root(root, None);
        rules.push(
            crate::permissions::RuleKind::Deny,
            crate::permissions::Rule::parse("Read(secret.txt)", &base).unwrap(),
            crate::permissions::RuleSource::Setup,
        );
        let t = gather("look at @a.rs", None, None, root, &rules).unwrap();
        assert_eq!(
            t.attachments,
            vec![Attachment {
                shown: "a.rs".into(),
                path: root.join("a.rs")
            }]
        );
        let e = |p: &str| match gather(p, None, None, root, &rules) {
            Err(AttachError(m)) => m,
            other => panic!("{other:?}"),
        };
        assert!(e("@nope.rs").starts_with("lathe: @nope.rs: no such file in "));
        assert!(e("@src").contains("is a directory"));
        assert!(e("@../x").contains("is outside the project"));
        let denied = e("@secret.txt");
        assert!(
            denied.contains("denies reading it. The prompt was not sent."),
            "{denied}"
        );
        assert!(denied.contains("Read(secret.txt)"), "{denied}");
    }
}
