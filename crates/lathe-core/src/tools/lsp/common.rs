//! What the four language-server tools share (LspDefinition,
//! LspReferences, LspHover, LspSymbols; docs/lsp.md, "Navigation
//! through language servers"): the position input (file, 1-based line,
//! the symbol's text), when they are offered, asking the editor's
//! [`LspNavigator`](crate::editor::LspNavigator), the messages for every
//! failure (each names what to use instead), and `path:line: text` lists
//! capped like Grep's.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::editor::{lsp, Location, LspAnswer, LspFailure, LspQuery, SymbolAt};
use crate::permissions::{spell, Aliases, PermissionPreview, ReadAccess, ReadFilter};
use crate::text::{fill, plural};
use crate::tools::support::file_common::{file_preview, resolve_file_path, shown};
use crate::tools::support::search_walk::{left_out_note, with_note, LeftOut};
use crate::tools::{ToolContext, ToolError, ToolOutput};

/// Most entries (locations, symbols) a result lists; the rest are counted.
pub const LSP_MAX_ENTRIES: usize = 100;
/// Longest source line shown after a location, in chars.
pub const LSP_MAX_LINE_CHARS: usize = 200;
/// Largest result of an LSP tool in chars (gate 9).
pub const LSP_MAX_RESULT_CHARS: usize = 30_000;

/// The file has no language server.
pub const LSP_NO_SERVER: &str = "No language server is attached to {path} (none of the running servers handles this kind of file), so {tool} cannot answer. Use Grep instead{hint}.";
/// The servers of the file do not support the request.
pub const LSP_UNSUPPORTED: &str =
    "The language server of {path} ({servers}) does not support {feature}. Use Grep instead{hint}.";
/// No running server supports workspace symbols.
pub const LSP_WORKSPACE_UNSUPPORTED: &str = "No running language server ({servers}) supports searching the workspace for symbols. Use Grep instead{hint}, or LspSymbols with a file_path for the symbols of one file.";
/// No server runs at all (the tools are offered only while one does).
pub const LSP_NONE_RUNNING: &str =
    "No language server is running in the editor, so {tool} cannot answer. Use Grep instead{hint}.";
/// The editor has no language servers (lathe outside Neovim).
pub const LSP_UNAVAILABLE: &str = "This editor has no language servers (lathe is not running inside Neovim), so {tool} cannot answer. Use Grep instead{hint}.";
/// The line is past the end of the file.
pub const LSP_LINE_PAST_END: &str =
    "{path} has {count} lines, so there is no line {line}. Read or Grep the file to find the line where {symbol} is, then call {tool} again with that line.";
/// The symbol is not on the line.
pub const LSP_SYMBOL_NOT_ON_LINE: &str = "{symbol} is not on line {line} of {path}, which reads:\n{text}\nRead the file or Grep for it to find the line where it is, then call {tool} again with that line and the symbol exactly as written there.";
/// The line has fewer occurrences than asked for.
pub const LSP_NO_SUCH_OCCURRENCE: &str = "Line {line} of {path} has {symbol} {count} time(s), so there is no occurrence {occurrence}. Use an occurrence from 1 to {count}.";
/// The servers did not answer in time.
pub const LSP_TIMEOUT: &str = "The language server ({servers}) did not answer within {ms} ms (setup option lsp_timeout_ms), so the request was cancelled. It may still be starting or indexing: try again in a moment, or use Grep instead{hint}.";
/// The servers answered with an error.
pub const LSP_SERVER_ERROR: &str =
    "The language server {server} answered {tool} with an error: {message}. Use Grep instead{hint}.";
/// The turn was stopped while waiting.
pub const LSP_CANCELLED: &str = "{tool} was stopped before the language server answered.";
/// The editor could not ask.
pub const LSP_EDITOR_FAILED: &str =
    "{tool} could not ask the editor's language servers: {detail}. Use Grep instead{hint}.";
/// The file does not exist.
pub const LSP_FILE_NOT_FOUND: &str = "File does not exist: {path}. Check the path; relative paths resolve against the project root {root}. Glob can find files by name.";
/// `symbol` is empty.
pub const LSP_EMPTY_SYMBOL: &str =
    "symbol is empty: give the identifier's text exactly as it appears on the line.";
/// More entries than the result lists.
pub const LSP_MORE: &str = "[… {count} more not shown]";
/// How a Grep for a symbol is suggested in messages.
pub const LSP_GREP_HINT: &str = " (e.g. Grep for \"\\b{symbol}\\b\")";

/// The input of LspDefinition, LspReferences and LspHover: a symbol on a
/// line of a file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LspPositionInput {
    /// The file (absolute, or relative to the project root)
    pub file_path: String,
    /// The 1-based line the symbol is on (as Read and Grep number lines)
    #[schemars(range(min = 1))]
    pub line: usize,
    /// The symbol's text exactly as written on that line (an identifier, e.g. "parse_args"); the tool finds its column
    pub symbol: String,
    /// Which whole-word occurrence of symbol on the line, when it appears more than once (1-based, default 1)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub occurrence: Option<usize>,
}

impl LspPositionInput {
    /// Gate 3: `file_path` made absolute against `root` (as Read's).
    pub fn normalized(self, root: &Path) -> Self {
        Self {
            file_path: resolve_file_path(root, &self.file_path),
            symbol: self.symbol.trim().to_string(),
            ..self
        }
    }

    /// The position as the navigator takes it.
    pub fn at(&self) -> SymbolAt {
        SymbolAt {
            path: PathBuf::from(&self.file_path),
            line: self.line.max(1),
            symbol: self.symbol.clone(),
            occurrence: self.occurrence.unwrap_or(1).max(1),
        }
    }

    /// Gate 4: a symbol to look for. Errors: [`LSP_EMPTY_SYMBOL`].
    pub fn check(&self) -> Result<(), ToolError> {
        if self.symbol.is_empty() {
            return Err(ToolError::new(LSP_EMPTY_SYMBOL));
        }
        Ok(())
    }

    /// The permission float's view: `{verb} {path}`.
    pub fn preview(&self, verb: &str, root: &Path) -> PermissionPreview {
        file_preview(verb, root, Path::new(&self.file_path))
    }

    /// The chat line: `symbol at path:line`.
    pub fn describe(&self, root: &Path) -> String {
        format!(
            "{} at {}:{}",
            self.symbol,
            shown(root, Path::new(&self.file_path)),
            self.line
        )
    }

    /// `template` filled in with this position: `{symbol}`, `{path}` (as
    /// shown from `root`) and `{line}` (a "found nothing" message).
    pub fn fill_at(&self, template: &str, root: &Path) -> String {
        fill(
            template,
            &[
                ("symbol", &self.symbol),
                ("path", &shown(root, Path::new(&self.file_path))),
                ("line", &self.line.to_string()),
            ],
        )
    }

    /// How `tool` asks about this position for `feature`: its messages
    /// suggest a Grep for the symbol.
    pub fn asker<'a>(
        &self,
        tool: &'static str,
        feature: &'static str,
        root: &'a Path,
    ) -> Asker<'a> {
        Asker {
            tool,
            feature,
            hint: Asker::grep_hint(&self.symbol),
            root,
        }
    }
}

/// What tells apart the tools that answer with a list of locations
/// (LspDefinition, LspReferences): the rest of their answer is
/// [`LocationList::answer`].
pub struct LocationList {
    /// The tool's name.
    pub tool: &'static str,
    /// What it asks for, in words (`go to definition`).
    pub feature: &'static str,
    /// The model-facing text when no location is left (`{symbol}`,
    /// `{path}`, `{line}`).
    pub none: &'static str,
    /// The chat summary's noun, one and many (`definition`, `definitions`).
    pub noun: (&'static str, &'static str),
}

impl LocationList {
    /// Asks `query` about `input`'s position and lists the locations the
    /// gate's `filter` leaves readable (`path:line: text`, sorted, one per
    /// line), saying what was left out; [`none`](Self::none) when none is
    /// left. Errors: the failure's model-facing message ([`Asker::ask`]).
    pub async fn answer(
        &self,
        input: &LspPositionInput,
        query: LspQuery,
        filter: Option<&ReadFilter>,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let asker = input.asker(self.tool, self.feature, &ctx.root);
        let locations = match asker.ask(ctx, query).await? {
            LspAnswer::Locations(l) => l,
            _ => Vec::new(),
        };
        let (locations, left) = readable_only(
            locations,
            |l| l.path.as_path(),
            filter,
            Some(Path::new(&input.file_path)),
        );
        if locations.is_empty() {
            let text = input.fill_at(self.none, &ctx.root);
            return Ok(ToolOutput::text(with_left_out(text, false, &left), "none"));
        }
        let (text, n) = location_lines(&ctx.root, locations);
        let text = with_left_out(text, true, &left);
        Ok(ToolOutput::text(text, plural(n, self.noun.0, self.noun.1)))
    }
}

/// `true` while a language server runs in the editor: the LSP tools are
/// offered to the model only then ([`lsp::servers_running`], an atomic).
pub fn offered() -> bool {
    lsp::servers_running() > 0
}

/// How one LSP tool names itself in its messages.
pub struct Asker<'a> {
    /// The tool's name (`LspDefinition`).
    pub tool: &'static str,
    /// What it asks for, in words (`go to definition`).
    pub feature: &'static str,
    /// The Grep suggestion appended to "Use Grep instead" (may be empty).
    pub hint: String,
    /// The project root, for the shown paths.
    pub root: &'a Path,
}

impl Asker<'_> {
    /// [`LSP_GREP_HINT`] for `symbol`, with regex metacharacters escaped.
    pub fn grep_hint(symbol: &str) -> String {
        fill(LSP_GREP_HINT, &[("symbol", &regex::escape(symbol))])
    }

    /// Asks `query` through the editor's navigator. Errors: the failure's
    /// model-facing message.
    pub async fn ask(&self, ctx: &ToolContext, query: LspQuery) -> Result<LspAnswer, ToolError> {
        let Some(nav) = ctx.editor.navigator() else {
            return Err(ToolError::new(fill(
                LSP_UNAVAILABLE,
                &[("tool", self.tool), ("hint", &self.hint)],
            )));
        };
        if lsp::servers_running() == 0 {
            return Err(ToolError::new(fill(
                LSP_NONE_RUNNING,
                &[("tool", self.tool), ("hint", &self.hint)],
            )));
        }
        let at = query.at().cloned();
        let path = query.path().map(Path::to_path_buf);
        nav.ask(query, &ctx.cancel)
            .await
            .map_err(|f| ToolError::new(self.message(&f, path.as_deref(), at.as_ref())))
    }

    /// The model-facing message for `failure` of a question about `path`
    /// (at `at`).
    pub fn message(
        &self,
        failure: &LspFailure,
        path: Option<&Path>,
        at: Option<&SymbolAt>,
    ) -> String {
        let p = path.map(|p| shown(self.root, p)).unwrap_or_default();
        let symbol = at.map(|a| a.symbol.as_str()).unwrap_or_default();
        let line = at.map(|a| a.line.to_string()).unwrap_or_default();
        let base = [
            ("tool", self.tool),
            ("hint", self.hint.as_str()),
            ("path", p.as_str()),
            ("symbol", symbol),
            ("line", line.as_str()),
            ("feature", self.feature),
        ];
        let with = |template: &str, extra: &[(&str, &str)]| {
            let mut all: Vec<(&str, &str)> = base.to_vec();
            all.extend_from_slice(extra);
            fill(template, &all)
        };
        match failure {
            LspFailure::NotFound(_) => with(
                LSP_FILE_NOT_FOUND,
                &[("root", &self.root.display().to_string())],
            ),
            LspFailure::NoServer(_) => with(LSP_NO_SERVER, &[]),
            LspFailure::Unsupported { servers } if path.is_none() => with(
                LSP_WORKSPACE_UNSUPPORTED,
                &[("servers", &servers.join(", "))],
            ),
            LspFailure::Unsupported { servers } => {
                with(LSP_UNSUPPORTED, &[("servers", &servers.join(", "))])
            }
            LspFailure::LinePastEnd { count, .. } => {
                with(LSP_LINE_PAST_END, &[("count", &count.to_string())])
            }
            LspFailure::SymbolNotOnLine { text, .. } => {
                with(LSP_SYMBOL_NOT_ON_LINE, &[("text", text.trim_end())])
            }
            LspFailure::NoSuchOccurrence { count, .. } => {
                let occurrence = at.map(|a| a.occurrence).unwrap_or(1).to_string();
                with(
                    LSP_NO_SUCH_OCCURRENCE,
                    &[("count", &count.to_string()), ("occurrence", &occurrence)],
                )
            }
            LspFailure::Timeout { ms, servers } => with(
                LSP_TIMEOUT,
                &[("ms", &ms.to_string()), ("servers", &servers.join(", "))],
            ),
            LspFailure::ServerError { server, message } => with(
                LSP_SERVER_ERROR,
                &[
                    ("server", server),
                    ("message", message.trim_end_matches('.')),
                ],
            ),
            LspFailure::Cancelled => with(LSP_CANCELLED, &[]),
            LspFailure::Unavailable(detail) => with(LSP_EDITOR_FAILED, &[("detail", detail)]),
        }
    }
}

/// What a language server answered with, narrowed to what the model may
/// see: `items` (locations, symbols: each in the file `path_of` gives)
/// without those in files a Read of which `filter` does not find free
/// (deny and ask rules, protected paths, by every name of the file) or
/// that lie outside the project (unless the file is `asked_about`, the
/// one the call was about, which gate 6 decided on). Returns what is
/// kept and the files left out, counted once each, for the note
/// ([`with_left_out`]). Without a filter (a call that did not pass gate
/// 6) everything is kept.
pub fn readable_only<T>(
    items: Vec<T>,
    path_of: impl Fn(&T) -> &Path,
    filter: Option<&ReadFilter>,
    asked_about: Option<&Path>,
) -> (Vec<T>, LeftOut) {
    let mut left = LeftOut::default();
    let Some(filter) = filter else {
        return (items, left);
    };
    let asked_about = asked_about.map(crate::permissions::resolve_for_rules);
    let aliases = Aliases::in_dirs(&[filter.root()]);
    let mut seen: std::collections::HashMap<PathBuf, bool> = std::collections::HashMap::new();
    let mut kept = Vec::with_capacity(items.len());
    for item in items {
        let spelled = aliases.apply(spell(path_of(&item)));
        let free = match seen.get(&spelled.real) {
            Some(free) => *free,
            None => {
                let access = filter.access_location(&spelled, asked_about.as_deref());
                let free = access == ReadAccess::Free;
                left.record(access, &spelled.real, filter.root());
                seen.insert(spelled.real, free);
                free
            }
        };
        if free {
            kept.push(item);
        }
    }
    (kept, left)
}

/// `text` with the note on what was left out ([`left_out_note`]), or the
/// note alone when nothing was kept (`text` is then the tool's "none
/// found" message, which would mislead).
pub fn with_left_out(text: String, kept_any: bool, left: &LeftOut) -> String {
    match left_out_note(left) {
        Some(note) if !kept_any => note,
        note => with_note(text, note.as_deref()),
    }
}

/// `s` on one line, trimmed, cut at [`LSP_MAX_LINE_CHARS`] with `…`.
pub fn one_line(s: &str) -> String {
    let t = s.trim();
    if t.chars().count() <= LSP_MAX_LINE_CHARS {
        return t.to_string();
    }
    let mut cut: String = t.chars().take(LSP_MAX_LINE_CHARS).collect();
    cut.push('…');
    cut
}

/// `locations` as `path:line: text` lines (paths as Grep shows them:
/// relative to `root` when inside it), deduplicated by path and line,
/// sorted by path then line, at most [`LSP_MAX_ENTRIES`] then
/// [`LSP_MORE`]. Returns the text and how many distinct locations there
/// were.
pub fn location_lines(root: &Path, mut locations: Vec<Location>) -> (String, usize) {
    locations.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
    locations.dedup_by(|a, b| a.path == b.path && a.line == b.line);
    let total = locations.len();
    let lines = locations.iter().map(|l| match &l.text {
        Some(t) => format!("{}:{}: {}", shown(root, &l.path), l.line, one_line(t)),
        None => format!("{}:{}", shown(root, &l.path), l.line),
    });
    (capped(lines, total), total)
}

/// The first [`LSP_MAX_ENTRIES`] of `lines` (of `total`), then
/// [`LSP_MORE`] when some were left out.
pub fn capped(lines: impl Iterator<Item = String>, total: usize) -> String {
    let mut out: Vec<String> = lines.take(LSP_MAX_ENTRIES).collect();
    if total > LSP_MAX_ENTRIES {
        out.push(fill(
            LSP_MORE,
            &[("count", &(total - LSP_MAX_ENTRIES).to_string())],
        ));
    }
    out.join("\n")
}

#[cfg(test)]
pub(crate) mod testing {
    //! A navigator and editor with fixed answers, for the tools' tests.

    use std::path::Path;
    use std::sync::{Arc, Mutex};

    use async_trait::async_trait;
    use tokio_util::sync::CancellationToken;

    use crate::editor::{
        Document, Editor, EditorError, LspAnswer, LspFailure, LspNavigator, LspQuery, WriteOutcome,
        WriteRequest,
    };

    /// Answers every question with `answer` and records the questions.
    pub struct Fixed {
        pub answer: Result<LspAnswer, LspFailure>,
        pub asked: Mutex<Vec<LspQuery>>,
    }

    #[async_trait]
    impl LspNavigator for Fixed {
        async fn ask(
            &self,
            query: LspQuery,
            _cancel: &CancellationToken,
        ) -> Result<LspAnswer, LspFailure> {
            self.asked.lock().unwrap().push(query);
            self.answer.clone()
        }
    }

    /// An editor whose navigator is `nav` (`None`: it has none).
    pub struct WithNav(pub Option<Arc<Fixed>>);

    #[async_trait]
    impl Editor for WithNav {
        async fn read(&self, path: &Path) -> Result<Document, EditorError> {
            Err(EditorError::NotFound(path.to_path_buf()))
        }
        async fn write(&self, path: &Path, _r: WriteRequest) -> Result<WriteOutcome, EditorError> {
            Err(EditorError::NotFound(path.to_path_buf()))
        }
        fn navigator(&self) -> Option<Arc<dyn LspNavigator>> {
            self.0.clone().map(|n| n as Arc<dyn LspNavigator>)
        }
    }

    /// Serialises the tests that set the process-wide server count.
    pub static SERVERS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

    /// Runs `tool` on `input` (root `/p`) through its gates with a
    /// navigator answering `answer`, while one server "runs"; returns the
    /// result text (`error: …` for an error) and the questions asked.
    pub async fn call_with(
        tool: Arc<dyn crate::tools::Tool>,
        answer: Result<LspAnswer, LspFailure>,
        input: serde_json::Value,
    ) -> (String, Vec<LspQuery>) {
        let _g = SERVERS.lock().await;
        crate::editor::lsp::set_servers_running(1);
        let root = std::path::PathBuf::from("/p");
        let nav = Arc::new(Fixed {
            answer,
            asked: Mutex::new(Vec::new()),
        });
        let mut ctx = crate::tools::support::file_common::testing::disk_ctx(&root);
        ctx.editor = Arc::new(WithNav(Some(nav.clone())));
        let text = match crate::tools::support::file_common::testing::run(tool, &ctx, input).await {
            Ok(out) => out.content.as_text(),
            Err(e) => format!("error: {}", e.message),
        };
        crate::editor::lsp::set_servers_running(0);
        let asked = nav.asked.lock().unwrap().clone();
        (text, asked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::editor::lsp::set_servers_running;

    #[test]
    fn golden_messages() {
        let root = Path::new("/p");
        let asker = Asker {
            tool: "LspDefinition",
            feature: "go to definition",
            hint: Asker::grep_hint("a.b"),
            root,
        };
        let at = SymbolAt {
            path: root.join("m.py"),
            line: 3,
            symbol: "helper".into(),
            occurrence: 2,
        };
        let msg = |f: LspFailure| asker.message(&f, Some(&root.join("m.py")), Some(&at));
        assert_eq!(
            msg(LspFailure::NoServer(root.join("m.py"))),
            "No language server is attached to m.py (none of the running servers handles this kind of file), so LspDefinition cannot answer. Use Grep instead (e.g. Grep for \"\\ba\\.b\\b\")."
        );
        assert_eq!(
            msg(LspFailure::Unsupported { servers: vec!["pylsp".into()] }),
            "The language server of m.py (pylsp) does not support go to definition. Use Grep instead (e.g. Grep for \"\\ba\\.b\\b\")."
        );
        assert_eq!(
            asker.message(&LspFailure::Unsupported { servers: vec!["pylsp".into()] }, None, None),
            "No running language server (pylsp) supports searching the workspace for symbols. Use Grep instead (e.g. Grep for \"\\ba\\.b\\b\"), or LspSymbols with a file_path for the symbols of one file."
        );
        assert_eq!(
            msg(LspFailure::SymbolNotOnLine { line: 3, text: "    x = 1\n".into() }),
            "helper is not on line 3 of m.py, which reads:\n    x = 1\nRead the file or Grep for it to find the line where it is, then call LspDefinition again with that line and the symbol exactly as written there."
        );
        assert_eq!(
            msg(LspFailure::LinePastEnd { line: 3, count: 2 }),
            "m.py has 2 lines, so there is no line 3. Read or Grep the file to find the line where helper is, then call LspDefinition again with that line."
        );
        assert_eq!(
            msg(LspFailure::NoSuchOccurrence { line: 3, count: 1 }),
            "Line 3 of m.py has helper 1 time(s), so there is no occurrence 2. Use an occurrence from 1 to 1."
        );
        assert_eq!(
            msg(LspFailure::Timeout { ms: 900, servers: vec!["slow".into()] }),
            "The language server (slow) did not answer within 900 ms (setup option lsp_timeout_ms), so the request was cancelled. It may still be starting or indexing: try again in a moment, or use Grep instead (e.g. Grep for \"\\ba\\.b\\b\")."
        );
        assert_eq!(
            msg(LspFailure::ServerError { server: "pylsp".into(), message: "boom.".into() }),
            "The language server pylsp answered LspDefinition with an error: boom. Use Grep instead (e.g. Grep for \"\\ba\\.b\\b\")."
        );
        assert_eq!(
            msg(LspFailure::Cancelled),
            "LspDefinition was stopped before the language server answered."
        );
        assert_eq!(
            msg(LspFailure::NotFound(root.join("m.py"))),
            "File does not exist: m.py. Check the path; relative paths resolve against the project root /p. Glob can find files by name."
        );
        assert_eq!(
            msg(LspFailure::Unavailable("gone".into())),
            "LspDefinition could not ask the editor's language servers: gone. Use Grep instead (e.g. Grep for \"\\ba\\.b\\b\")."
        );
        assert_eq!(LSP_NONE_RUNNING, "No language server is running in the editor, so {tool} cannot answer. Use Grep instead{hint}.");
        assert_eq!(LSP_UNAVAILABLE, "This editor has no language servers (lathe is not running inside Neovim), so {tool} cannot answer. Use Grep instead{hint}.");
        assert_eq!(
            LSP_EMPTY_SYMBOL,
            "symbol is empty: give the identifier's text exactly as it appears on the line."
        );
        assert_eq!(LSP_MORE, "[… {count} more not shown]");
    }

    #[test]
    fn locations_are_sorted_deduplicated_trimmed_and_capped() {
        let root = Path::new("/p");
        let at = |p: &str, line, text: Option<&str>| Location {
            path: PathBuf::from(p),
            line,
            text: text.map(str::to_string),
        };
        let (text, n) = location_lines(
            root,
            vec![
                at("/p/b.py", 4, Some("    helper(1)  ")),
                at("/p/a.py", 9, Some("x = helper")),
                at("/p/b.py", 4, Some("    helper(1)")),
                at("/p/a.py", 2, None),
                at("/elsewhere/c.py", 1, Some("import helper")),
            ],
        );
        assert_eq!(n, 4);
        assert_eq!(
            text,
            "/elsewhere/c.py:1: import helper\na.py:2\na.py:9: x = helper\nb.py:4: helper(1)"
        );
        let many: Vec<Location> = (1..=LSP_MAX_ENTRIES + 3)
            .map(|i| at("/p/a.py", i, Some("y")))
            .collect();
        let (text, n) = location_lines(root, many);
        assert_eq!(n, LSP_MAX_ENTRIES + 3);
        assert_eq!(text.lines().count(), LSP_MAX_ENTRIES + 1);
        assert!(text.ends_with("a.py:100: y\n[… 3 more not shown]"));
        let long = "z".repeat(LSP_MAX_LINE_CHARS + 10);
        assert_eq!(one_line(&long).chars().count(), LSP_MAX_LINE_CHARS + 1);
    }

    #[test]
    fn locations_a_read_could_not_see_are_left_out_and_counted() {
        use crate::permissions::{Mode, Rule, RuleBase, RuleKind, RuleSource, Rules};
        let dir = tempfile::tempdir().expect("tempdir");
        let t = dir.path().canonicalize().expect("canonical");
        let root = t.join("p");
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        std::fs::create_dir_all(t.join("lib")).expect("mkdir");
        std::os::unix::fs::symlink(t.join("lib"), root.join("vendor")).expect("symlink");
        let base = RuleBase::at_root(&root, None);
        let mut rules = Rules {
            mode: Mode::Default,
            ..Rules::default()
        };
        for (kind, r) in [
            (RuleKind::Deny, "Read(secret/**)"),
            (RuleKind::Ask, "Read(notes/**)"),
            (RuleKind::Deny, "Read(./vendor/keys/**)"),
        ] {
            rules.push(
                kind,
                Rule::parse(r, &base).expect("rule"),
                RuleSource::Setup,
            );
        }
        let filter = ReadFilter::new(
            rules,
            ("LspReferences", crate::permissions::RuleFamily::Lookup),
            &root,
        );
        let at = |p: PathBuf, line| Location {
            path: p,
            line,
            text: Some("x".into()),
        };
        let cases = [
            (root.join("src/a.rs"), true),
            (root.join("src/a.rs"), true),
            (root.join("secret/s.txt"), false),
            (root.join("notes/n.md"), false),
            (root.join(".env"), false),
            (root.join(".git/config"), false),
            (t.join("lib/x.rs"), false),
            (root.join("vendor/x.rs"), false),
            (root.join("vendor/keys/k.rs"), false),
            (t.join("lib/keys/k.rs"), false),
            (t.join("lib/keys/other.rs"), false),
            (t.join("asked.rs"), true),
        ];
        let locations: Vec<Location> = cases.iter().map(|(p, _)| at(p.clone(), 1)).collect();
        let (kept, left) = readable_only(
            locations,
            |l| l.path.as_path(),
            Some(&filter),
            Some(&t.join("asked.rs")),
        );
        let want: Vec<&PathBuf> = cases.iter().filter(|c| c.1).map(|c| &c.0).collect();
        let got: Vec<&PathBuf> = kept.iter().map(|l| &l.path).collect();
        assert_eq!(got, want);
        // Counted once per real file: lib/x.rs is vendor/x.rs.
        assert_eq!((left.asks, left.denied), (4, 3), "{left:?}");
        let (all, none) = readable_only(
            vec![at(root.join("secret/s.txt"), 1)],
            |l| l.path.as_path(),
            None,
            None,
        );
        assert_eq!(
            (all.len(), none.asks + none.denied),
            (1, 0),
            "no filter, no gate 6"
        );
        let note = with_left_out("none found".into(), false, &left);
        assert!(
            note.starts_with(
                "4 files were left out because reading them needs the user's permission"
            ),
            "{note}"
        );
        assert!(with_left_out("a.rs:1: x".into(), true, &left).starts_with("a.rs:1: x\n\n4 files"));
    }

    #[test]
    fn offered_only_while_a_server_runs() {
        let _g = testing::SERVERS.blocking_lock();
        set_servers_running(0);
        assert!(!offered());
        set_servers_running(2);
        assert!(offered());
        set_servers_running(0);
        assert!(!offered());
    }
}
