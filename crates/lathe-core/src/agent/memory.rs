//! Project memory as Claude Code reads it (docs/context-and-compaction.md,
//! "Project memory"): the user's `~/.claude/CLAUDE.md`, `CLAUDE.md` and
//! `AGENTS.md` in every folder from the repository root (the folder
//! holding `.git`; the project root when there is none) down to the project
//! root, `CLAUDE.local.md` in the project root, and the files they import
//! with `@path` ([`discover`]); and nested memory, a sub-folder's
//! `CLAUDE.md` added to the conversation with the result of the first tool
//! call that reads a file below it ([`Nested`]).
//!
//! Imports: `@path` at the start of a line or after white space, outside
//! code spans and fenced code blocks; relative to the importing file's
//! folder, `~/` the home folder; at most [`MAX_IMPORT_DEPTH`] hops; each
//! file once (a cycle is cut where it closes); a missing one is skipped
//! with a note (shown by `:checkhealth lathe`, not to the model).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::protocol::{ToolResult, ToolResultContent, ToolUse};
use crate::text::fill;

use super::session_log::{Record, SessionLog};

/// Most hops of `@path` imports followed from a memory file.
pub const MAX_IMPORT_DEPTH: usize = 5;

/// Largest memory file included, in bytes; a longer one is cut with
/// [`CUT_NOTE`].
pub const MAX_MEMORY_BYTES: usize = 40_000;

/// The project's memory files, in each folder from the repository root
/// down to the project root.
pub const PROJECT_FILES: &[&str] = &["CLAUDE.md", "AGENTS.md"];

/// The user's private memory of one project, in its root.
pub const LOCAL_FILE: &str = "CLAUDE.local.md";

/// A sub-folder's memory, added when the model first reads a file below it.
pub const NESTED_FILE: &str = "CLAUDE.md";

/// Model-facing: one memory file's block. `{path}`, `{label}` (one of
/// the `LABEL_*`), `{text}`, `{cut}` ([`CUT_NOTE`] or empty).
pub const BLOCK: &str = "\nInstructions from {path} ({label}; follow them):\n<project-instructions>\n{text}{cut}\n</project-instructions>\n";

/// Model-facing: [`BLOCK`]'s `{cut}` of a file longer than [`MAX_MEMORY_BYTES`].
pub const CUT_NOTE: &str = "\n[cut: the file is longer]";

/// Model-facing: the label of `~/.claude/CLAUDE.md`.
pub const LABEL_USER: &str = "the user's own, for every project";
/// Model-facing: the label of a project's `CLAUDE.md` or `AGENTS.md`.
pub const LABEL_PROJECT: &str = "the project's own";
/// Model-facing: the label of `CLAUDE.local.md`.
pub const LABEL_LOCAL: &str = "the user's private ones for this project";
/// Model-facing: the label of a sub-folder's `CLAUDE.md`. `{dir}`.
pub const LABEL_NESTED: &str = "the project's own, for the files in {dir}";
/// Model-facing: the label of an imported file. `{path}` (the importer).
pub const LABEL_IMPORT: &str = "imported by {path}";

/// Model-facing: wraps nested memory added after a tool result's text.
/// `{blocks}`.
pub const NESTED_REMINDER: &str = "\n\n<system-reminder>\nThe folder of this file has instructions of its own:\n{blocks}</system-reminder>";

/// User-facing (`:checkhealth lathe`): an import that names no readable
/// file. `{import}`, `{path}` (the importer).
pub const MISSING_IMPORT: &str = "{import} (imported by {path}) was not found: skipped";

/// User-facing (`:checkhealth lathe`): an import past the depth limit.
/// `{import}`, `{path}`.
pub const TOO_DEEP: &str = "{import} (imported by {path}) is more than 5 imports deep: skipped";

/// Where a memory file comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// `~/.claude/CLAUDE.md`.
    User,
    /// `CLAUDE.md` or `AGENTS.md` of the project root or a folder above it
    /// in the repository.
    Project,
    /// `CLAUDE.local.md` of the project root.
    Local,
    /// A sub-folder's `CLAUDE.md`.
    Nested,
    /// Imported with `@path` by this file.
    Import(PathBuf),
}

impl Kind {
    /// What `:checkhealth lathe` calls it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Kind::User => "user",
            Kind::Project => "project",
            Kind::Local => "local",
            Kind::Nested => "nested",
            Kind::Import(_) => "import",
        }
    }

    fn label(&self, path: &Path) -> String {
        match self {
            Kind::User => LABEL_USER.to_string(),
            Kind::Project => LABEL_PROJECT.to_string(),
            Kind::Local => LABEL_LOCAL.to_string(),
            Kind::Nested => fill(
                LABEL_NESTED,
                &[("dir", &path.parent().unwrap_or(path).display().to_string())],
            ),
            Kind::Import(by) => fill(LABEL_IMPORT, &[("path", &by.display().to_string())]),
        }
    }
}

/// One memory file read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryFile {
    /// Its path (as found, not resolved through links).
    pub path: PathBuf,
    /// Where it comes from.
    pub kind: Kind,
    /// Its text, at most [`MAX_MEMORY_BYTES`].
    pub text: String,
    /// Whether the text was cut.
    pub cut: bool,
}

impl MemoryFile {
    /// The file's [`BLOCK`] for the model.
    pub fn block(&self) -> String {
        fill(
            BLOCK,
            &[
                ("path", &self.path.display().to_string()),
                ("label", &self.kind.label(&self.path)),
                ("text", &self.text),
                ("cut", if self.cut { CUT_NOTE } else { "" }),
            ],
        )
    }
}

/// What [`discover`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    /// The files, in the order the model gets them.
    pub files: Vec<MemoryFile>,
    /// Imports skipped ([`MISSING_IMPORT`], [`TOO_DEEP`]).
    pub notes: Vec<String>,
}

impl Found {
    /// Every file's [`BLOCK`], in order.
    pub fn blocks(&self) -> String {
        self.files.iter().map(MemoryFile::block).collect()
    }
}

/// The home folder: `$HOME`, else the system's.
pub fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .or_else(dirs::home_dir)
}

/// The repository root of `cwd`: the nearest folder at or above it that
/// holds `.git` (a folder, or a worktree's file); `None` outside a
/// repository.
pub fn repository_root(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The memory of a session rooted at `cwd`, `home` the user's home
/// folder: the user's file, then each folder's [`PROJECT_FILES`] from the
/// repository root down to `cwd`, then [`LOCAL_FILE`]; each followed by
/// the files it imports. Missing files are skipped.
pub fn discover(cwd: &Path, home: Option<&Path>) -> Found {
    let mut reader = Reader {
        home: home.map(Path::to_path_buf),
        seen: BTreeSet::new(),
        found: Found::default(),
    };
    if let Some(home) = home {
        reader.add(&home.join(".claude").join("CLAUDE.md"), Kind::User, 0);
    }
    let top = repository_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
    let mut dirs: Vec<&Path> = cwd
        .ancestors()
        .take_while(|d| d.starts_with(&top))
        .collect();
    dirs.reverse();
    for dir in dirs {
        for name in PROJECT_FILES {
            reader.add(&dir.join(name), Kind::Project, 0);
        }
    }
    reader.add(&cwd.join(LOCAL_FILE), Kind::Local, 0);
    reader.found
}

/// Reads memory files and their imports, each file once.
struct Reader {
    home: Option<PathBuf>,
    /// Files read (resolved paths).
    seen: BTreeSet<PathBuf>,
    found: Found,
}

impl Reader {
    /// Adds `path` (when it is a readable file not read yet) and, after
    /// it, what it imports. Returns whether it was a file.
    fn add(&mut self, path: &Path, kind: Kind, depth: usize) -> bool {
        if !path.is_file() {
            return false;
        }
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        if !self.seen.insert(key) {
            return true;
        }
        let Ok(bytes) = std::fs::read(path) else {
            return false;
        };
        let all = String::from_utf8_lossy(&bytes);
        let mut end = MAX_MEMORY_BYTES.min(all.len());
        while !all.is_char_boundary(end) {
            end -= 1;
        }
        let text = all[..end].to_string();
        let imports = imports(&text);
        self.found.files.push(MemoryFile {
            path: path.to_path_buf(),
            kind,
            cut: end < all.len(),
            text,
        });
        let dir = path.parent().unwrap_or(path).to_path_buf();
        for import in imports {
            let note = |template: &str| {
                fill(
                    template,
                    &[("import", &import), ("path", &path.display().to_string())],
                )
            };
            if depth + 1 > MAX_IMPORT_DEPTH {
                self.found.notes.push(note(TOO_DEEP));
                continue;
            }
            let target = self.resolve(&dir, &import);
            if !self.add(&target, Kind::Import(path.to_path_buf()), depth + 1) {
                self.found.notes.push(note(MISSING_IMPORT));
            }
        }
        true
    }

    /// `import` as a path: `~/…` under the home folder, absolute as it
    /// is, else relative to `dir`.
    fn resolve(&self, dir: &Path, import: &str) -> PathBuf {
        if let (Some(rest), Some(home)) = (import.strip_prefix("~/"), &self.home) {
            return home.join(rest);
        }
        let p = Path::new(import);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            dir.join(p)
        }
    }
}

/// The `@path` imports of a memory file's `text`, in order: a word that
/// starts with `@` at the start of a line or after white space, outside
/// fenced code blocks (```` ``` ```` or `~~~`) and code spans; trailing
/// punctuation (`.,;:!?)`) is not part of the path.
pub fn imports(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(f) = fence {
            if trimmed.starts_with(f) {
                fence = None;
            }
            continue;
        }
        if let Some(f) = ["```", "~~~"].into_iter().find(|f| trimmed.starts_with(f)) {
            fence = Some(f);
            continue;
        }
        let mut in_span = false;
        let mut prev = ' ';
        for (i, c) in line.char_indices() {
            if c == '`' {
                in_span = !in_span;
            } else if c == '@' && !in_span && prev.is_whitespace() {
                let rest = &line[i + 1..];
                let word_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
                let word = &rest[..word_end];
                let word = word.trim_end_matches(['.', ',', ';', ':', '!', '?', ')']);
                if !word.is_empty() && !word.contains('`') {
                    out.push(word.to_string());
                }
            }
            prev = c;
        }
    }
    out
}

/// Nested memory of one session: which memory files the conversation has
/// (the ones [`discover`] found, and every nested one added since), and
/// what adds a sub-folder's `CLAUDE.md` to a tool result.
#[derive(Debug)]
pub struct Nested {
    root: PathBuf,
    home: Option<PathBuf>,
    /// Memory files the conversation has (resolved paths).
    loaded: Mutex<BTreeSet<PathBuf>>,
}

impl Nested {
    /// The nested memory of a session rooted at `root` whose memory at the
    /// start is `found`.
    pub fn new(root: &Path, home: Option<PathBuf>, found: &Found) -> Self {
        let loaded = found.files.iter().map(|f| resolved(&f.path)).collect();
        Self {
            root: root.to_path_buf(),
            home,
            loaded: Mutex::new(loaded),
        }
    }

    /// Marks `paths` as in the conversation (a resumed session's nested
    /// memory, `Record::Memory`).
    pub fn mark_loaded(&self, paths: &[PathBuf]) {
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        loaded.extend(paths.iter().map(|p| resolved(p)));
    }

    /// After a batch of calls ran: for each successful call that names a
    /// file or folder (`file_path`, `path`) below a sub-folder of the
    /// project with a `CLAUDE.md` the conversation does not have yet, that
    /// file (and what it imports) is added to the call's result as
    /// [`NESTED_REMINDER`], once per session; saved in `log`.
    pub fn attach(&self, calls: &[ToolUse], results: &mut [ToolResult], log: Option<&SessionLog>) {
        let mut added = Vec::new();
        for result in results.iter_mut().filter(|r| !r.is_error) {
            let Some(call) = calls.iter().find(|c| c.id == result.tool_use_id) else {
                continue;
            };
            let Some(target) = ["file_path", "path"]
                .iter()
                .find_map(|k| call.input.get(*k).and_then(|v| v.as_str()))
            else {
                continue;
            };
            let files = self.new_files(target);
            if files.is_empty() {
                continue;
            }
            let blocks: String = files.iter().map(MemoryFile::block).collect();
            added.extend(files.into_iter().map(|f| f.path));
            let text = fill(NESTED_REMINDER, &[("blocks", &blocks)]);
            result.content = match std::mem::replace(
                &mut result.content,
                ToolResultContent::Text(String::new()),
            ) {
                ToolResultContent::Text(s) => ToolResultContent::Text(format!("{s}{text}")),
                ToolResultContent::Blocks(mut blocks) => {
                    blocks.push(crate::protocol::ContentBlock::Text {
                        text: text.trim_start().to_string(),
                    });
                    ToolResultContent::Blocks(blocks)
                }
            };
        }
        if let (false, Some(log)) = (added.is_empty(), log) {
            log.record(&Record::Memory { paths: added });
        }
    }

    /// The nested memory files `target` (a path a call named) brings that
    /// the conversation does not have yet, marked as had: the `CLAUDE.md`
    /// of each folder below the project root down to the target's folder,
    /// outermost first, each with its imports.
    fn new_files(&self, target: &str) -> Vec<MemoryFile> {
        let path = crate::tools::support::paths::resolve(&self.root, target);
        let dir = if path.is_dir() {
            path.clone()
        } else {
            match path.parent() {
                Some(p) => p.to_path_buf(),
                None => return Vec::new(),
            }
        };
        let Ok(rel) = dir.strip_prefix(&self.root) else {
            return Vec::new();
        };
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        let mut folder = self.root.clone();
        for part in rel.components() {
            folder.push(part);
            let file = folder.join(NESTED_FILE);
            if !file.is_file() || loaded.contains(&resolved(&file)) {
                continue;
            }
            let mut reader = Reader {
                home: self.home.clone(),
                seen: loaded.clone(),
                found: Found::default(),
            };
            reader.add(&file, Kind::Nested, 0);
            loaded.extend(reader.found.files.iter().map(|f| resolved(&f.path)));
            out.extend(reader.found.files);
        }
        out
    }
}

/// `path` with its links resolved (itself when that fails).
fn resolved(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn names(found: &Found, base: &Path) -> Vec<(String, &'static str)> {
        found
            .files
            .iter()
            .map(|f| {
                (
                    f.path.strip_prefix(base).unwrap().display().to_string(),
                    f.kind.as_str(),
                )
            })
            .collect()
    }

    #[test]
    fn memory_from_the_user_the_repository_root_down_and_local_last() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().canonicalize().unwrap();
        let home = base.join("home");
        let repo = base.join("outside/repo");
        let project = repo.join("pkg/app");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        write(&base.join("outside/CLAUDE.md"), "above the repository");
        write(&home.join(".claude/CLAUDE.md"), "user rules");
        write(&repo.join("CLAUDE.md"), "repo rules");
        write(&repo.join("pkg/AGENTS.md"), "pkg agents");
        write(&project.join("CLAUDE.md"), "app rules");
        write(&project.join("AGENTS.md"), "app agents");
        write(&project.join("CLAUDE.local.md"), "my sandbox");
        write(&project.join("sub/CLAUDE.md"), "nested: not at the start");
        let found = discover(&project, Some(&home));
        assert_eq!(
            names(&found, &base),
            [
                ("home/.claude/CLAUDE.md".to_string(), "user"),
                ("outside/repo/CLAUDE.md".to_string(), "project"),
                ("outside/repo/pkg/AGENTS.md".to_string(), "project"),
                ("outside/repo/pkg/app/CLAUDE.md".to_string(), "project"),
                ("outside/repo/pkg/app/AGENTS.md".to_string(), "project"),
                ("outside/repo/pkg/app/CLAUDE.local.md".to_string(), "local"),
            ]
        );
        let blocks = found.blocks();
        assert!(blocks.find("user rules") < blocks.find("repo rules"));
        assert!(blocks.contains(&format!(
            "Instructions from {} (the user's own, for every project; follow them):",
            home.join(".claude/CLAUDE.md").display()
        )));
        assert!(blocks.contains("(the user's private ones for this project; follow them)"));
    }

    #[test]
    fn without_a_repository_only_the_project_root() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().canonicalize().unwrap();
        write(&base.join("CLAUDE.md"), "parent");
        write(&base.join("p/CLAUDE.md"), "root");
        let found = discover(&base.join("p"), None);
        assert_eq!(
            names(&found, &base),
            [("p/CLAUDE.md".to_string(), "project")]
        );
    }

    #[test]
    fn imports_relative_home_cycles_depth_and_missing() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().canonicalize().unwrap();
        let home = base.join("home");
        let p = base.join("p");
        write(
            &p.join("CLAUDE.md"),
            "See @docs/a.md and @~/mine.md, not `@docs/span.md`.\n\
             ```\n@docs/fenced.md\n```\n\
             mail me at x@docs/a.md; missing @nope.md\n",
        );
        write(&p.join("docs/a.md"), "a imports @b.md");
        write(&p.join("docs/b.md"), "b imports @a.md (a cycle)");
        write(&home.join("mine.md"), "deep @d1.md");
        for i in 1..=6 {
            write(
                &home.join(format!("d{i}.md")),
                &format!("level {i} @d{}.md", i + 1),
            );
        }
        write(&p.join("docs/span.md"), "never");
        write(&p.join("docs/fenced.md"), "never");
        let found = discover(&p, Some(&home));
        let got = names(&found, &base);
        assert_eq!(
            got,
            [
                ("p/CLAUDE.md".to_string(), "project"),
                ("p/docs/a.md".to_string(), "import"),
                ("p/docs/b.md".to_string(), "import"),
                ("home/mine.md".to_string(), "import"),
                ("home/d1.md".to_string(), "import"),
                ("home/d2.md".to_string(), "import"),
                ("home/d3.md".to_string(), "import"),
                ("home/d4.md".to_string(), "import"),
            ],
            "five hops from CLAUDE.md: mine, d1, d2, d3, d4"
        );
        assert_eq!(
            found.notes,
            [
                format!(
                    "d5.md (imported by {}) is more than 5 imports deep: skipped",
                    home.join("d4.md").display()
                ),
                format!(
                    "nope.md (imported by {}) was not found: skipped",
                    p.join("CLAUDE.md").display()
                ),
            ]
        );
        assert!(found.blocks().contains(&format!(
            "(imported by {}; follow them)",
            p.join("CLAUDE.md").display()
        )));
    }

    #[test]
    fn import_words() {
        assert_eq!(
            imports("@a.md first\n- list @b/c.md, and (@d.md)\n`@e.md` `x` @f.md."),
            ["a.md", "b/c.md", "f.md"]
        );
        assert_eq!(imports("~~~\n@g.md\n~~~\n@h.md"), ["h.md"]);
    }

    #[test]
    fn a_huge_file_is_cut_with_a_note() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().canonicalize().unwrap();
        write(&p.join("CLAUDE.md"), &"é".repeat(MAX_MEMORY_BYTES));
        let found = discover(&p, None);
        assert!(found.files[0].cut);
        assert!(found.files[0].text.len() <= MAX_MEMORY_BYTES);
        assert!(found.blocks().contains(CUT_NOTE));
    }

    #[test]
    fn nested_memory_is_added_once_after_the_first_read_below_it() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().canonicalize().unwrap();
        write(&p.join("CLAUDE.md"), "root rules");
        write(&p.join("src/CLAUDE.md"), "src rules @extra.md");
        write(&p.join("src/extra.md"), "extra");
        write(&p.join("src/deep/x.rs"), "fn x() {}");
        write(&p.join("src/y.rs"), "fn y() {}");
        let nested = Nested::new(&p, None, &discover(&p, None));
        let call = |id: &str, path: &str| ToolUse {
            id: id.into(),
            name: "Read".into(),
            input: json!({ "file_path": path }),
            extra: Default::default(),
        };
        let result = |id: &str| ToolResult {
            tool_use_id: id.into(),
            content: ToolResultContent::Text("text".into()),
            is_error: false,
        };
        let mut results = vec![result("t1"), result("t2")];
        nested.attach(
            &[call("t1", "src/deep/x.rs"), call("t2", "src/y.rs")],
            &mut results,
            None,
        );
        let first = results[0].content.as_text();
        assert!(first.starts_with("text\n\n<system-reminder>\n"), "{first}");
        assert!(first.contains("src rules") && first.contains("extra"));
        assert!(first.contains(&format!(
            "(the project's own, for the files in {}; follow them)",
            p.join("src").display()
        )));
        assert!(!first.contains("root rules"), "had from the start");
        assert_eq!(results[1].content.as_text(), "text", "once");
        let mut again = vec![result("t3")];
        nested.attach(&[call("t3", "src/y.rs")], &mut again, None);
        assert_eq!(again[0].content.as_text(), "text");
        // A resumed session that had it does not add it again.
        let resumed = Nested::new(&p, None, &discover(&p, None));
        resumed.mark_loaded(&[p.join("src/CLAUDE.md"), p.join("src/extra.md")]);
        let mut later = vec![result("t4")];
        resumed.attach(&[call("t4", "src/y.rs")], &mut later, None);
        assert_eq!(later[0].content.as_text(), "text");
    }

    #[test]
    fn model_facing_texts_golden() {
        assert_eq!(
            BLOCK,
            "\nInstructions from {path} ({label}; follow them):\n<project-instructions>\n{text}{cut}\n</project-instructions>\n"
        );
        assert_eq!(CUT_NOTE, "\n[cut: the file is longer]");
        assert_eq!(LABEL_USER, "the user's own, for every project");
        assert_eq!(LABEL_PROJECT, "the project's own");
        assert_eq!(LABEL_LOCAL, "the user's private ones for this project");
        assert_eq!(LABEL_NESTED, "the project's own, for the files in {dir}");
        assert_eq!(LABEL_IMPORT, "imported by {path}");
        assert_eq!(
            NESTED_REMINDER,
            "\n\n<system-reminder>\nThe folder of this file has instructions of its own:\n{blocks}</system-reminder>"
        );
    }
}
