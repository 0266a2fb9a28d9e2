//! The check Grep and Glob over a folder apply to each file they would read
//! or list ([`ReadFilter`], handed to them by gate 6): what a read of that
//! one file would meet at the permission gate ([`read_access`], which
//! `decide` also uses for the paths a Bash command reads). Pure: paths are
//! canonical, as [`super::resolve_for_rules`] makes them.
//!
//! A file is left out when a Read of it would be denied (a deny rule) or
//! asked about because of a rule or a protected path. Asks that come only
//! from the defaults or the mode (a file outside the project) do not count:
//! the call itself was already asked about or allowed for where it
//! searches.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use super::decide::{is_inside, protected_reason, read_access, ReadAccess, ReasonKind};
use super::paths::Spelled;
use super::{Reason, RuleFamily, Rules};

/// What `tool` (name and family) reading the file or folder `spelled`
/// meets under `rules` by any of its names ([`read_access`] of the real
/// path and of each other name): the strictest of them, a deny before an
/// ask.
pub fn read_access_spelled(
    rules: &Rules,
    tool: (&str, RuleFamily),
    spelled: &Spelled,
    is_dir: bool,
    root: &Path,
) -> ReadAccess {
    strictest(
        spelled
            .all()
            .map(|p| read_access(rules, tool, p, is_dir, root)),
    )
}

/// The strictest of `accesses`: the first deny, else the first ask, else
/// [`ReadAccess::Free`].
fn strictest(accesses: impl Iterator<Item = ReadAccess>) -> ReadAccess {
    let mut out = ReadAccess::Free;
    for a in accesses {
        match a {
            ReadAccess::Denied(_) => return a,
            ReadAccess::Asks(_) if out == ReadAccess::Free => out = a,
            _ => {}
        }
    }
    out
}

/// Hidden files by device and inode, with their hidden names
/// (`permissions::linked_hidden` finds them).
pub type LinkedHidden = HashMap<(u64, u64), Vec<PathBuf>>;

/// How a [`ReadFilter`] finds the [`LinkedHidden`] files under the rules
/// and the canonical root.
pub type FindLinked = fn(&Rules, &Path) -> LinkedHidden;

/// The hidden name `path` shares its content with, when it is a file
/// with more than one name; `links` is asked only then.
pub fn hidden_twin(path: &Path, links: impl FnOnce() -> Arc<LinkedHidden>) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.nlink() < 2 {
        return None;
    }
    links()
        .get(&(meta.dev(), meta.ino()))?
        .iter()
        .find(|twin| twin.as_path() != path)
        .cloned()
}

/// Why a location outside the project is left out of a language server's
/// answer: reading there asks.
pub const OUTSIDE_THE_PROJECT: &str = "it is outside the project";

/// The check a search applies to each file it would read (Grep) or list
/// (Glob): files that are not [`ReadAccess::Free`] are left out. Cheap to
/// clone; shared by the walker threads.
#[derive(Debug, Clone)]
pub struct ReadFilter {
    rules: Arc<Rules>,
    tool: String,
    family: RuleFamily,
    root: PathBuf,
    approved: Option<Reason>,
    /// When set ([`ReadFilter::seeing_hard_links`]): how to find the
    /// hidden files with more than one name, and what was found (once per
    /// call, when a file with links is met).
    links: Option<(FindLinked, Arc<OnceLock<Arc<LinkedHidden>>>)>,
}

impl ReadFilter {
    /// The filter for a call of `tool` (name and family; `Grep`, `Glob`:
    /// rules for it and Read rules apply) under the rules in force; `root`
    /// is the canonical project root.
    pub fn new(rules: Rules, (tool, family): (&str, RuleFamily), root: &Path) -> Self {
        Self {
            rules: Arc::new(rules),
            tool: tool.to_string(),
            family,
            root: root.to_path_buf(),
            approved: None,
            links: None,
        }
    }

    /// The same filter also judging a file with more than one name (a
    /// hard link) by the protected or denied name it shares its content
    /// with: a `stat` per file it is asked about (Grep, the language
    /// server tools; not the sandbox's own walk, which finds the links).
    pub fn seeing_hard_links(mut self, find: FindLinked) -> Self {
        self.links = Some((find, Arc::new(OnceLock::new())));
        self
    }

    /// The same filter for a call the user allowed when it asked for
    /// `reason`: files that ask for that same reason are covered by the
    /// answer (a Grep over `.git/` the user allowed reads what is in it).
    pub fn approving(mut self, reason: Reason) -> Self {
        self.approved = Some(reason);
        self
    }

    /// What reading the canonical file `path` meets (see [`read_access`]);
    /// an ask for the reason the user already approved is [`ReadAccess::Free`].
    /// A protected file still asks unless the approved ask was for it.
    pub fn access(&self, path: &Path) -> ReadAccess {
        let by_name = self.access_by_name(path);
        let Some((find, links)) = self.links.as_ref().filter(|_| by_name == ReadAccess::Free)
        else {
            return by_name;
        };
        let twin = hidden_twin(path, || {
            links
                .get_or_init(|| Arc::new(find(&self.rules, &self.root)))
                .clone()
        });
        match twin {
            Some(twin) => self.access_by_name(&twin),
            None => by_name,
        }
    }

    /// [`ReadFilter::access`] by the name `path` alone.
    fn access_by_name(&self, path: &Path) -> ReadAccess {
        match read_access(
            &self.rules,
            (&self.tool, self.family),
            path,
            false,
            &self.root,
        ) {
            ReadAccess::Asks(r) if self.answered(&r, path) => match protected_reason(path) {
                Some(p) if p != r => ReadAccess::Asks(p),
                _ => ReadAccess::Free,
            },
            other => other,
        }
    }

    /// Whether the ask the user answered was `r`, for the call as a whole
    /// (Grep over a folder) or as the reason a Bash command reading `path`
    /// asked (`the command reads .env, and …`).
    fn answered(&self, r: &Reason, path: &Path) -> bool {
        let Some(a) = &self.approved else {
            return false;
        };
        a == r
            || [false, true]
                .into_iter()
                .any(|is_dir| a.text == r.clone().about(path, is_dir, &self.root, false).text)
    }

    /// [`ReadFilter::access`] by every name of `spelled` (its real path
    /// and the names it was reached through): the strictest.
    pub fn access_spelled(&self, spelled: &Spelled) -> ReadAccess {
        strictest(spelled.all().map(|p| self.access(p)))
    }

    /// What showing a line of the file `spelled` that a language server
    /// pointed to meets: [`ReadFilter::access_spelled`], and outside the
    /// project (the root and the additional directories, by the real
    /// path) an ask (`OUTSIDE_THE_PROJECT`) unless it is `asked_about`,
    /// the file the call itself was about (the gate decided on it).
    pub fn access_location(&self, spelled: &Spelled, asked_about: Option<&Path>) -> ReadAccess {
        match self.access_spelled(spelled) {
            ReadAccess::Free
                if !is_inside(&spelled.real, &self.root, &self.rules.additional_dirs)
                    && asked_about != Some(spelled.real.as_path()) =>
            {
                ReadAccess::Asks(Reason {
                    text: OUTSIDE_THE_PROJECT.to_string(),
                    rule: None,
                    source: None,
                    kind: ReasonKind::Default,
                })
            }
            other => other,
        }
    }

    /// The canonical project root the filter compares with.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permissions::{Mode, Rule, RuleBase, RuleKind, RuleSource};

    const ROOT: &str = "/w/proj";

    fn rules(list: &[(RuleKind, &str)]) -> Rules {
        let base = RuleBase::at_root(Path::new(ROOT), None);
        let mut r = Rules {
            mode: Mode::Default,
            ..Rules::default()
        };
        for (kind, s) in list {
            r.push(
                *kind,
                Rule::parse(s, &base).expect("rule"),
                RuleSource::Setup,
            );
        }
        r
    }

    const GREP: (&str, RuleFamily) = ("Grep", RuleFamily::ReadPath);

    fn verdict(a: &ReadAccess) -> &'static str {
        match a {
            ReadAccess::Free => "free",
            ReadAccess::Asks(_) => "asks",
            ReadAccess::Denied(_) => "denied",
        }
    }

    #[test]
    fn files_under_a_searched_folder_meet_read_rules_and_protected_paths() {
        let r = rules(&[
            (RuleKind::Deny, "Read(secret/**)"),
            (RuleKind::Ask, "Read(notes/**)"),
            (RuleKind::Deny, "Grep(*.key)"),
            (RuleKind::Allow, "Read"),
        ]);
        let filter = ReadFilter::new(r, GREP, Path::new(ROOT));
        let cases = [
            ("/w/proj/src/a.rs", "free"),
            ("/w/proj/secret/s.txt", "denied"),
            ("/w/proj/notes/n.md", "asks"),
            ("/w/proj/.env", "asks"),
            ("/w/proj/sub/.env.local", "asks"),
            ("/w/proj/.git/config", "asks"),
            ("/w/proj/.claude/settings.json", "asks"),
            ("/w/proj/deep/id.key", "denied"),
            // Outside the project only the default asks: not left out.
            ("/etc/hosts", "free"),
        ];
        for (path, want) in cases {
            assert_eq!(verdict(&filter.access(Path::new(path))), want, "{path}");
        }
        let denied = filter.access(Path::new("/w/proj/secret/s.txt"));
        let ReadAccess::Denied(reason) = denied else {
            panic!("denied");
        };
        assert_eq!(reason.text, "rule Read(secret/**) from setup() denies");
    }

    #[test]
    fn golden_outside_reason() {
        assert_eq!(OUTSIDE_THE_PROJECT, "it is outside the project");
    }

    #[test]
    fn a_glob_rule_only_covers_glob() {
        let r = rules(&[(RuleKind::Deny, "Grep(*.key)")]);
        let glob = ReadFilter::new(r, ("Glob", RuleFamily::ReadPath), Path::new(ROOT));
        assert_eq!(verdict(&glob.access(Path::new("/w/proj/a.key"))), "free");
    }

    #[test]
    fn an_approved_ask_covers_the_files_that_ask_for_the_same_reason() {
        let r = rules(&[(RuleKind::Ask, "Read(notes/**)")]);
        let asked = read_access(&r, GREP, Path::new("/w/proj/notes"), true, Path::new(ROOT));
        let ReadAccess::Asks(reason) = asked else {
            panic!("the folder asks");
        };
        let filter = ReadFilter::new(r, GREP, Path::new(ROOT)).approving(reason);
        assert_eq!(
            verdict(&filter.access(Path::new("/w/proj/notes/a.md"))),
            "free"
        );
        assert_eq!(
            verdict(&filter.access(Path::new("/w/proj/notes/.env"))),
            "asks"
        );
    }
}
