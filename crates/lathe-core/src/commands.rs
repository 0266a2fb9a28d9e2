//! Custom slash commands in Claude Code's format (docs/commands.md): a
//! Markdown file per command under the project's `.claude/commands/` and
//! the user's `~/.claude/commands/`, its name the file's path without `.md`
//! (a subfolder is a namespace: `frontend/component.md` is
//! `/frontend:component`, also reachable as `/component` when no other
//! command ends so), an optional front matter (`description`,
//! `argument-hint`, `allowed-tools`, `model`) and a body where `$ARGUMENTS`
//! and `$1`…`$9` take the arguments.
//!
//! The files are read on each use (they may change while Neovim runs);
//! a project command wins over a user command of the same name. The front
//! matter is a strict subset of YAML (one `key: value` per line, quoted or
//! plain scalars, a list as `[a, b]` or `- a` lines): the five keys need no
//! more, and anything outside it is an error that names the file and line
//! rather than a value read some other way.

use std::path::{Path, PathBuf};

use crate::permissions::{Rule, RuleBase};
use crate::text::fill;

/// The folder of command files inside a project or the home directory.
pub const COMMANDS_DIR: &str = ".claude/commands";

/// Model-facing: added after a command's text when it has no `$ARGUMENTS`
/// and no `$1`…`$9` but was given arguments (as Claude Code does), so the
/// arguments are never dropped. `{arguments}`.
pub const ARGUMENTS_APPENDED: &str = "\n\nARGUMENTS: {arguments}";

/// User-facing: a command file that cannot be used. `{path}`, `{why}`.
pub const MALFORMED: &str = "lathe: command file {path}: {why}";

/// User-facing: a bare name that several namespaced commands end with.
/// `{name}`, `{candidates}`.
pub const AMBIGUOUS: &str = "lathe: /{name} is ambiguous: {candidates}; type the whole name";

/// User-facing: the chat's line under a command's prompt (`/review
/// src/x.py`), folded to the text the model got. `{name}`, `{path}` (the
/// file, relative to the project, or under `~`).
pub const SHOWN_COMMAND: &str = "Command /{name} ({path})";

/// The largest command file read, in bytes.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;

/// Command files listed at most per folder (a folder of thousands is not
/// walked further).
pub const MAX_FILES: usize = 1000;

/// Folder depth below `.claude/commands` walked at most.
const MAX_DEPTH: usize = 6;

/// Where a command comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The project's `.claude/commands/`: a file the project controls.
    Project,
    /// The user's `~/.claude/commands/`.
    User,
}

impl Scope {
    /// `"project"` or `"user"`, as `/help` shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Project => "project",
            Scope::User => "user",
        }
    }
}

/// One command file found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandFile {
    /// The name typed after `/`: the path below the folder without `.md`,
    /// folders joined with `:` (`frontend:component`).
    pub name: String,
    /// Project or user.
    pub scope: Scope,
    /// The file.
    pub path: PathBuf,
}

impl CommandFile {
    /// The last part of the name (`component` of `frontend:component`).
    pub fn base(&self) -> &str {
        self.name.rsplit(':').next().unwrap_or(&self.name)
    }

    /// Where `/help` says it comes from: `project`, `user`,
    /// `project:frontend` (Claude Code's spelling).
    pub fn origin(&self) -> String {
        match self.name.rsplit_once(':') {
            Some((ns, _)) => format!("{}:{ns}", self.scope.as_str()),
            None => self.scope.as_str().to_string(),
        }
    }
}

/// A command file's front matter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrontMatter {
    /// `description`: what `/help` and the completion menu show.
    pub description: Option<String>,
    /// `argument-hint`: the arguments it takes, as shown (`[file]`).
    pub argument_hint: Option<String>,
    /// `allowed-tools`: permission rules allowed without asking for the
    /// turn this command starts (`Bash(git diff:*)`, `Read`).
    pub allowed_tools: Vec<String>,
    /// `model`: the model of that turn.
    pub model: Option<String>,
}

/// A command file read and parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// Its file.
    pub file: CommandFile,
    /// Its front matter.
    pub front: FrontMatter,
    /// The text after the front matter.
    pub body: String,
}

impl Command {
    /// What `/help` and the completion menu say of it: the front matter's
    /// `description`, else the body's first line that is not blank.
    pub fn description(&self) -> String {
        self.front
            .description
            .clone()
            .unwrap_or_else(|| first_line(&self.body))
    }

    /// The `allowed-tools` rules, parsed against `base`. Errors: a rule
    /// that does not parse ([`MALFORMED`], naming the file).
    pub fn rules(&self, base: &RuleBase) -> Result<Vec<Rule>, CommandError> {
        self.front
            .allowed_tools
            .iter()
            .map(|r| {
                Rule::parse(r, base)
                    .map_err(|e| malformed(&self.file.path, &format!("allowed-tools: {e}")))
            })
            .collect()
    }
}

/// What the chat shows for a run of `file` typed as `/typed_name args`:
/// the command line as typed, and the line under it ([`SHOWN_COMMAND`])
/// folded to `sent`, the expanded text the model gets.
pub fn shown(
    file: &CommandFile,
    typed_name: &str,
    args: &str,
    sent: &str,
    root: &Path,
    home: Option<&Path>,
) -> (String, crate::events::AttachedItem) {
    let typed = if args.trim().is_empty() {
        format!("/{typed_name}")
    } else {
        format!("/{typed_name} {}", args.trim())
    };
    let path = match (file.path.strip_prefix(root), home) {
        (Ok(rel), _) => rel.display().to_string(),
        (Err(_), Some(home)) => match file.path.strip_prefix(home) {
            Ok(rel) => format!("~/{}", rel.display()),
            Err(_) => file.path.display().to_string(),
        },
        (Err(_), None) => file.path.display().to_string(),
    };
    let label = fill(SHOWN_COMMAND, &[("name", &file.name), ("path", &path)]);
    (
        typed,
        crate::events::AttachedItem {
            label,
            text: sent.to_string(),
        },
    )
}

/// Why a command cannot be used; the text is shown to the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CommandError(pub String);

fn malformed(path: &Path, why: &str) -> CommandError {
    CommandError(fill(
        MALFORMED,
        &[("path", &path.display().to_string()), ("why", why)],
    ))
}

/// The first line of `text` that is not blank, trimmed, at most 80
/// characters ("" when there is none).
fn first_line(text: &str) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty());
    let line = line.unwrap_or("").trim_start_matches('#').trim();
    let mut out: String = line.chars().take(80).collect();
    if line.chars().count() > 80 {
        out.push('…');
    }
    out
}

/// Whether `name` may name a command: parts of letters, digits, `_`, `-`
/// and `.`, joined by `:`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.split(':').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
        })
}

/// The command files of `root` (the project) and `home` (the user), the
/// project's first, each sorted by name; a user command with the name of a
/// project command is left out (the project's wins, as in Claude Code).
pub fn discover(root: &Path, home: Option<&Path>) -> Vec<CommandFile> {
    let project_dir = root.join(COMMANDS_DIR);
    // The project's folder is read only where it is inside the project: a
    // linked `.claude` or `.claude/commands` would make any folder's `.md`
    // files project commands.
    let inside = match (
        std::fs::canonicalize(&project_dir),
        std::fs::canonicalize(root),
    ) {
        (Ok(dir), Ok(root)) => dir.starts_with(root),
        _ => false,
    };
    let mut out = if inside {
        walk(&project_dir, Scope::Project)
    } else {
        Vec::new()
    };
    if let Some(home) = home {
        let user_dir = home.join(COMMANDS_DIR);
        let same = match (
            std::fs::canonicalize(&user_dir),
            std::fs::canonicalize(root.join(COMMANDS_DIR)),
        ) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if !same {
            for f in walk(&user_dir, Scope::User) {
                if !out
                    .iter()
                    .any(|p| p.scope == Scope::Project && p.name == f.name)
                {
                    out.push(f);
                }
            }
        }
    }
    out
}

/// The `.md` files below `dir` as commands of `scope`, sorted by name.
/// Hidden entries, names that are not [`valid_name`]s and folders linked
/// in (which could loop) are skipped; so is a project's file linked to
/// one outside `dir` (it would send a file the project does not hold,
/// `~/.ssh/…`, to the model as a command's text).
fn walk(dir: &Path, scope: Scope) -> Vec<CommandFile> {
    let mut out = Vec::new();
    let top = std::fs::canonicalize(dir).ok();
    let held = |path: &Path| match (&top, std::fs::canonicalize(path)) {
        (Some(top), Ok(real)) => real.starts_with(top),
        _ => false,
    };
    let mut stack = vec![(dir.to_path_buf(), Vec::<String>::new())];
    while let Some((folder, prefix)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            if out.len() >= MAX_FILES {
                break;
            }
            let file_name = entry.file_name();
            let Some(file_name) = file_name.to_str() else {
                continue;
            };
            if file_name.starts_with('.') {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                if prefix.len() + 1 < MAX_DEPTH && valid_name(file_name) {
                    let mut p = prefix.clone();
                    p.push(file_name.to_string());
                    stack.push((path, p));
                }
                continue;
            }
            let Some(stem) = file_name.strip_suffix(".md") else {
                continue;
            };
            if !(kind.is_file() || path.is_file()) {
                continue;
            }
            if !kind.is_file() && scope == Scope::Project && !held(&path) {
                continue;
            }
            let mut parts = prefix.clone();
            parts.push(stem.to_string());
            let name = parts.join(":");
            if valid_name(&name) {
                out.push(CommandFile { name, scope, path });
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The command file `/name` runs: a command of that whole name (the
/// project's first), else, for a name without `:`, the one namespaced
/// command whose last part it is (the project's first). `Ok(None)`: no
/// such command. Errors: several namespaced commands end with it
/// ([`AMBIGUOUS`]).
pub fn resolve(files: &[CommandFile], name: &str) -> Result<Option<CommandFile>, CommandError> {
    if let Some(f) = files.iter().find(|f| f.name == name) {
        return Ok(Some(f.clone()));
    }
    if name.contains(':') {
        return Ok(None);
    }
    for scope in [Scope::Project, Scope::User] {
        let found: Vec<&CommandFile> = files
            .iter()
            .filter(|f| f.scope == scope && f.base() == name)
            .collect();
        match found.as_slice() {
            [] => continue,
            [one] => return Ok(Some((*one).clone())),
            many => {
                let names: Vec<String> = many.iter().map(|f| format!("/{}", f.name)).collect();
                return Err(CommandError(fill(
                    AMBIGUOUS,
                    &[("name", name), ("candidates", &names.join(", "))],
                )));
            }
        }
    }
    Ok(None)
}

/// Reads and parses `file`. Errors ([`MALFORMED`]): it cannot be read, is
/// larger than [`MAX_FILE_BYTES`], is not UTF-8, or its front matter is not
/// the subset [`parse`] takes.
pub fn load(file: &CommandFile) -> Result<Command, CommandError> {
    let path = &file.path;
    let meta = std::fs::metadata(path).map_err(|e| malformed(path, &e.to_string()))?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(malformed(
            path,
            &format!("larger than {} KiB", MAX_FILE_BYTES / 1024),
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| malformed(path, &e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|_| malformed(path, "not UTF-8 text"))?;
    let (front, body) = parse(&text).map_err(|why| malformed(path, &why))?;
    Ok(Command {
        file: file.clone(),
        front,
        body,
    })
}

/// Splits a command file's text into its front matter and body. Without a
/// first line `---` the whole text is the body. Errors: why the front
/// matter is not taken, with its line number in the file.
pub fn parse(text: &str) -> Result<(FrontMatter, String), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let Some(first) = lines.next() else {
        return Ok((FrontMatter::default(), String::new()));
    };
    if first.trim_end() != "---" {
        return Ok((FrontMatter::default(), text.to_string()));
    }
    let mut front = FrontMatter::default();
    let mut offset = first.len();
    // The key of a `key:` line with no value, whose `- item` lines follow.
    let mut list_key: Option<String> = None;
    for (i, raw) in lines.enumerate() {
        let n = i + 2;
        offset += raw.len();
        let line = raw.trim_end_matches(['\n', '\r']);
        if line.trim_end() == "---" {
            let body = text.get(offset..).unwrap_or("");
            return Ok((front, body.to_string()));
        }
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some(item) =
            trimmed
                .strip_prefix("- ")
                .or(if trimmed == "-" { Some("") } else { None })
        {
            let Some(key) = &list_key else {
                return Err(format!("line {n}: a list item outside a list"));
            };
            let item = scalar(item.trim(), n)?;
            push_item(&mut front, key, item, n)?;
            continue;
        }
        if line.starts_with([' ', '\t']) {
            return Err(format!(
                "line {n}: an indented line that is not a `- item` (only `key: value` lines and lists are read)"
            ));
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(format!("line {n}: expected `key: value`, got {trimmed:?}"));
        };
        let key = key.trim().to_string();
        let value = value.trim();
        list_key = None;
        if value.is_empty() {
            // Its `- item` lines follow; with none it stays unset.
            list_key = Some(key);
            continue;
        }
        if value.starts_with('|') || value.starts_with('>') {
            return Err(format!(
                "line {n}: {key}: block scalars (| or >) are not read; write the value on one line"
            ));
        }
        let v = if key == "allowed-tools" && value.starts_with('[') {
            Value::List(flow_list(value, n)?)
        } else if key == "argument-hint" && value.starts_with('[') {
            // `argument-hint: [file]` is shown as written (Claude Code's
            // files write it so, though YAML would read a list).
            Value::Text(value.to_string())
        } else {
            Value::Text(scalar(value, n)?)
        };
        set(&mut front, &key, v, n)?;
    }
    Err("the front matter that starts with --- on line 1 has no closing ---".to_string())
}

/// A front matter value.
enum Value {
    Text(String),
    List(Vec<String>),
}

fn set(front: &mut FrontMatter, key: &str, value: Value, n: usize) -> Result<(), String> {
    let text = |value: Value| match value {
        Value::Text(t) => Ok(Some(t)),
        Value::List(l) if l.is_empty() => Ok(None),
        Value::List(_) => Err(format!("line {n}: {key} takes one value, not a list")),
    };
    match key {
        "description" => front.description = text(value)?,
        "argument-hint" => front.argument_hint = text(value)?,
        "model" => front.model = text(value)?,
        "allowed-tools" => {
            front.allowed_tools = match value {
                Value::Text(t) => split_rules(&t),
                Value::List(l) => l,
            }
        }
        // Other keys (Claude Code has more) are not lathe's to read.
        _ => {}
    }
    Ok(())
}

fn push_item(front: &mut FrontMatter, key: &str, item: String, n: usize) -> Result<(), String> {
    match key {
        "allowed-tools" => {
            front.allowed_tools.push(item);
            Ok(())
        }
        "description" | "argument-hint" | "model" => {
            Err(format!("line {n}: {key} takes one value, not a list"))
        }
        _ => Ok(()),
    }
}

/// A plain or quoted scalar. Errors: an unclosed quote, text after the
/// closing one.
fn scalar(value: &str, n: usize) -> Result<String, String> {
    let Some(q) = value.chars().next().filter(|c| *c == '"' || *c == '\'') else {
        // A plain scalar ends before ` #` (a comment).
        let v = value.split(" #").next().unwrap_or(value).trim_end();
        return Ok(v.to_string());
    };
    let inner = &value[1..];
    let mut out = String::new();
    let mut chars = inner.char_indices();
    while let Some((i, c)) = chars.next() {
        if c == q {
            if q == '\'' && inner[i + 1..].starts_with('\'') {
                out.push('\'');
                chars.next();
                continue;
            }
            let rest = inner[i + 1..].trim();
            if !rest.is_empty() && !rest.starts_with('#') {
                return Err(format!("line {n}: text after the closing quote: {rest:?}"));
            }
            return Ok(out);
        }
        if q == '"' && c == '\\' {
            match chars.next() {
                Some((_, 'n')) => out.push('\n'),
                Some((_, 't')) => out.push('\t'),
                Some((_, other)) => out.push(other),
                None => break,
            }
            continue;
        }
        out.push(c);
    }
    Err(format!("line {n}: a quote {q} that is not closed"))
}

/// `[a, "b", c]` as its items. Errors: no closing `]`, a bad item.
fn flow_list(value: &str, n: usize) -> Result<Vec<String>, String> {
    let Some(inner) = value
        .strip_prefix('[')
        .and_then(|v| v.trim_end().strip_suffix(']'))
    else {
        return Err(format!("line {n}: a list [ without its closing ]"));
    };
    split_rules(inner)
        .into_iter()
        .map(|item| scalar(&item, n))
        .collect()
}

/// `Bash(git add:*), Read` as its rules: split at commas outside
/// parentheses and quotes, items trimmed, empty ones dropped.
fn split_rules(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut cur = String::new();
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (None, '"' | '\'') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') => depth = depth.saturating_sub(1),
            (None, ',') if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    out.into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The arguments as `$1`…`$9` see them: split at whitespace, a `"…"` or
/// `'…'` group kept whole without its quotes.
pub fn positional(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in args.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                any = true;
            }
            None if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            None => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// `body` with `$ARGUMENTS` replaced by `args` (trimmed) and `$1`…`$9` by
/// the positional arguments ([`positional`]; a missing one is empty). A
/// body with neither gets [`ARGUMENTS_APPENDED`] when `args` is not blank.
pub fn expand(body: &str, args: &str) -> String {
    let args = args.trim();
    let pos = positional(args);
    let mut out = String::with_capacity(body.len() + args.len());
    let mut used = false;
    let mut rest = body;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(args);
            used = true;
            rest = tail;
        } else if let Some(d) = after.chars().next().filter(|c| ('1'..='9').contains(c)) {
            let k = (d as usize) - ('1' as usize);
            out.push_str(pos.get(k).map(String::as_str).unwrap_or(""));
            used = true;
            rest = &after[1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    let mut out = out.trim().to_string();
    if !used && !args.is_empty() {
        out.push_str(&fill(ARGUMENTS_APPENDED, &[("arguments", args)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn write(dir: &Path, rel: &str, text: &str) -> PathBuf {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn front_matter_keys_and_body() {
        let text = "---\ndescription: Review a file\nargument-hint: [file]\nallowed-tools: Bash(git diff:*), Read\nmodel: \"claude-haiku-4-5\"\n---\nReview $ARGUMENTS.\n";
        let (front, body) = parse(text).unwrap();
        assert_eq!(
            front,
            FrontMatter {
                description: Some("Review a file".into()),
                argument_hint: Some("[file]".into()),
                allowed_tools: vec!["Bash(git diff:*)".into(), "Read".into()],
                model: Some("claude-haiku-4-5".into()),
            }
        );
        assert_eq!(body, "Review $ARGUMENTS.\n");
    }

    #[test]
    fn allowed_tools_as_lists() {
        let (f, _) = parse("---\nallowed-tools: [Read, \"Bash(git add:*, x)\"]\n---\nx").unwrap();
        assert_eq!(f.allowed_tools, vec!["Read", "Bash(git add:*, x)"]);
        let (f, _) = parse(
            "---\nallowed-tools:\n  - Read\n  - 'Edit(src/**)'\n# note\ndescription: d\n---\nx",
        )
        .unwrap();
        assert_eq!(f.allowed_tools, vec!["Read", "Edit(src/**)"]);
        assert_eq!(f.description.as_deref(), Some("d"));
    }

    #[test]
    fn no_front_matter_is_all_body() {
        let (f, body) = parse("Just do it\n---\n").unwrap();
        assert_eq!(f, FrontMatter::default());
        assert_eq!(body, "Just do it\n---\n");
    }

    #[test]
    fn unknown_keys_are_ignored() {
        let (f, body) = parse("---\ndisable-model-invocation: true\n---\nbody").unwrap();
        assert_eq!(f, FrontMatter::default());
        assert_eq!(body, "body");
    }

    /// Golden: what a malformed file says.
    #[test]
    fn malformed_front_matter_says_where() {
        let cases = [
            (
                "---\ndescription: x\n",
                "the front matter that starts with --- on line 1 has no closing ---",
            ),
            (
                "---\njust words\n---\n",
                "line 2: expected `key: value`, got \"just words\"",
            ),
            (
                "---\ndescription: \"open\n---\n",
                "line 2: a quote \" that is not closed",
            ),
            (
                "---\ndescription: |\n  long\n---\n",
                "line 2: description: block scalars (| or >) are not read; write the value on one line",
            ),
            (
                "---\n- Read\n---\n",
                "line 2: a list item outside a list",
            ),
            (
                "---\nmodel:\n  - a\n---\n",
                "line 3: model takes one value, not a list",
            ),
            (
                "---\nallowed-tools: [Read\n---\n",
                "line 2: a list [ without its closing ]",
            ),
        ];
        for (text, why) in cases {
            assert_eq!(parse(text).unwrap_err(), why, "{text:?}");
        }
    }

    #[test]
    fn malformed_file_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), ".claude/commands/bad.md", "---\nnope\n---\n");
        let files = discover(dir.path(), None);
        let err = load(&files[0]).unwrap_err();
        assert_eq!(
            err.0,
            format!(
                "lathe: command file {}: line 2: expected `key: value`, got \"nope\"",
                path.display()
            )
        );
    }

    #[test]
    fn arguments_and_positionals() {
        assert_eq!(
            expand("Review $ARGUMENTS now", " cart.py  "),
            "Review cart.py now"
        );
        assert_eq!(
            expand("Fix issue #$1 with priority $2 ($3)", "123 high"),
            "Fix issue #123 with priority high ()"
        );
        assert_eq!(
            expand("$1 and $2", "\"two words\" 'x y'"),
            "two words and x y"
        );
        assert_eq!(expand("Costs $5 and $HOME", ""), "Costs  and $HOME");
        assert_eq!(expand("Plain text", ""), "Plain text");
    }

    /// Golden: arguments given to a command that names none.
    #[test]
    fn arguments_appended_when_unused() {
        assert_eq!(
            expand("Review the code.\n", "cart.py"),
            "Review the code.\n\nARGUMENTS: cart.py"
        );
    }

    #[test]
    fn namespaces_and_precedence() {
        let project = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        write(
            project.path(),
            ".claude/commands/review.md",
            "project review",
        );
        write(
            project.path(),
            ".claude/commands/frontend/component.md",
            "c",
        );
        write(project.path(), ".claude/commands/.hidden.md", "h");
        write(project.path(), ".claude/commands/notes.txt", "n");
        write(home.path(), ".claude/commands/review.md", "user review");
        write(home.path(), ".claude/commands/mine.md", "mine");
        let files = discover(project.path(), Some(home.path()));
        let names: Vec<(&str, Scope)> = files.iter().map(|f| (f.name.as_str(), f.scope)).collect();
        assert_eq!(
            names,
            vec![
                ("frontend:component", Scope::Project),
                ("review", Scope::Project),
                ("mine", Scope::User),
            ]
        );
        let review = resolve(&files, "review").unwrap().unwrap();
        assert_eq!(load(&review).unwrap().body, "project review");
        assert_eq!(files[0].origin(), "project:frontend");
        let short = resolve(&files, "component").unwrap().unwrap();
        assert_eq!(short.name, "frontend:component");
        assert_eq!(resolve(&files, "nothing").unwrap(), None);
        assert_eq!(resolve(&files, "x:component").unwrap(), None);
    }

    /// Golden: a bare name two namespaced commands end with.
    #[test]
    fn ambiguous_bare_name() {
        let project = tempfile::tempdir().unwrap();
        write(project.path(), ".claude/commands/a/build.md", "a");
        write(project.path(), ".claude/commands/b/build.md", "b");
        let files = discover(project.path(), None);
        assert_eq!(
            resolve(&files, "build").unwrap_err().0,
            "lathe: /build is ambiguous: /a:build, /b:build; type the whole name"
        );
    }

    #[test]
    fn description_falls_back_to_the_first_line() {
        let c = Command {
            file: CommandFile {
                name: "x".into(),
                scope: Scope::User,
                path: PathBuf::from("x.md"),
            },
            front: FrontMatter::default(),
            body: "\n# Check the build\nmore".into(),
        };
        assert_eq!(c.description(), "Check the build");
    }

    #[test]
    fn allowed_tools_become_rules() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            ".claude/commands/ok.md",
            "---\nallowed-tools: Bash(git diff:*), Write\n---\nx",
        );
        write(
            dir.path(),
            ".claude/commands/bad.md",
            "---\nallowed-tools: Edit(\n---\nx",
        );
        let base = RuleBase::at_root(dir.path(), None);
        let files = discover(dir.path(), None);
        let ok = load(&resolve(&files, "ok").unwrap().unwrap()).unwrap();
        let rules = ok.rules(&base).unwrap();
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[1].tool_name(), "Write");
        let bad = load(&resolve(&files, "bad").unwrap().unwrap()).unwrap();
        let err = bad.rules(&base).unwrap_err().0;
        assert!(
            err.contains("bad.md: allowed-tools: bad permission rule"),
            "{err}"
        );
    }

    /// A project's command file or folder linked to something outside
    /// its commands folder is not a command (its text would go to the
    /// model); the user's own links are followed, and a link inside the
    /// folder is kept.
    #[test]
    fn project_links_out_of_the_commands_folder_are_not_commands() {
        let dir = tempfile::tempdir().unwrap();
        let (root, home, elsewhere) = (
            dir.path().join("p"),
            dir.path().join("h"),
            dir.path().join("secret"),
        );
        write(&elsewhere, "key.md", "PRIVATE KEY");
        write(&root, ".claude/commands/ok.md", "fine");
        let link = |target: &Path, at: &Path| std::os::unix::fs::symlink(target, at).unwrap();
        link(
            &elsewhere.join("key.md"),
            &root.join(".claude/commands/steal.md"),
        );
        link(
            &root.join(".claude/commands/ok.md"),
            &root.join(".claude/commands/alias.md"),
        );
        std::fs::create_dir_all(home.join(".claude/commands")).unwrap();
        link(
            &elsewhere.join("key.md"),
            &home.join(".claude/commands/mine.md"),
        );
        let names: Vec<String> = discover(&root, Some(&home))
            .into_iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(names, ["alias", "ok", "mine"]);
        // The whole folder linked out of the project.
        let other = dir.path().join("q");
        std::fs::create_dir_all(other.join(".claude")).unwrap();
        link(&elsewhere, &other.join(".claude/commands"));
        assert!(discover(&other, None).is_empty());
    }

    #[test]
    fn names() {
        assert!(valid_name("frontend:component"));
        assert!(valid_name("fix-issue_2.v"));
        assert!(!valid_name(""));
        assert!(!valid_name("a::b"));
        assert!(!valid_name("tmp/x"));
    }
}
