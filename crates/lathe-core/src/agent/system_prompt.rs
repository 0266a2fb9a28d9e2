//! What the model is told besides the conversation: who lathe is (the
//! system prompt, [`SYSTEM`], the same for every project and day), and
//! where it runs with the project's memory (`CLAUDE.md`, `AGENTS.md`,
//! `agent::memory`) — [`project_context`], a text block at the start of the
//! first user message of every request; and, while the session is in plan
//! mode, a paragraph that says so ([`for_mode`], applied to every request,
//! so a `:Lathe mode` switch reaches the next one).
//!
//! Unchanging text first, per-project and per-turn text last: a server's
//! prompt cache keeps the longest unchanged prefix, and OpenAI-compatible
//! servers render the tool definitions after the system message, so a
//! working directory in the system prompt made every new project miss
//! the cache for all of the tools.

use std::path::Path;

use crate::permissions::Mode;

/// Model-facing: added to the end of the system prompt while the session
/// is in plan mode, so the model plans instead of learning it from a refused
/// edit (the gate's refusal is `permissions::DENIED_IN_PLAN_MODE`).
pub const PLAN_MODE: &str = "\n\
<plan-mode>\n\
The session is in plan mode: the user wants a plan before anything changes. \
You may read and search (Read, Grep, Glob, and Bash commands that only read). \
Do not edit or write files, and do not run commands that change anything: \
such calls are refused in this mode. Investigate, then present your plan — \
what you would change, where, and why — and stop; the user switches modes \
to let you carry it out.\n\
</plan-mode>\n";

/// The system prompt of one request: `base` (from [`build`]) with the
/// paragraph of the permission mode in force (`mode`) — [`PLAN_MODE`] in
/// plan mode, nothing in the others.
pub fn for_mode(base: &str, mode: Mode) -> String {
    match mode {
        Mode::Plan => format!("{base}{PLAN_MODE}"),
        Mode::Default | Mode::AcceptEdits | Mode::BypassPermissions => base.to_string(),
    }
}

/// Model-facing: the system prompt, the same in every session.
pub const SYSTEM: &str = "You are lathe, a coding agent running inside the user's Neovim. You help with \
software engineering tasks in the user's project (its working directory and instructions come with \
the first message) by using the tools you are given.\n\
\n\
- Look before you change: use Grep and Glob to find code, Read a file before you Edit or Write it.\n\
- Edits go into the user's open buffers and may need the user's approval; if a call is declined, \
do not repeat it — ask or take another approach.\n\
- Keep changes small and focused on the request. When you are done, say briefly what you changed.\n\
- Paths in tool calls are absolute or relative to the working directory.\n";

/// The system prompt of a session.
pub fn build() -> String {
    SYSTEM.to_string()
}

/// Where the session runs — rooted at `cwd` on `date` (`YYYY-MM-DD`) — and
/// the project's memory (`memory`, from `agent::memory::discover`: each
/// file's block labelled with its path): the text block that opens the
/// first user message of every request.
pub fn project_context(cwd: &Path, date: &str, memory: &super::memory::Found) -> String {
    let mut out = format!(
        "<env>\n\
Working directory: {cwd}\n\
Platform: {os}\n\
Today's date: {date}\n\
</env>\n",
        cwd = cwd.display(),
        os = std::env::consts::OS,
    );
    out.push_str(&memory.blocks());
    out
}

/// Today's date in UTC as `YYYY-MM-DD`.
pub fn today() -> String {
    time::OffsetDateTime::now_utc().date().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_env_and_instruction_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "Use tabs.").unwrap();
        let found = crate::agent::memory::discover(dir.path(), None);
        let p = project_context(dir.path(), "2026-11-29", &found);
        assert!(p.contains(&format!("Working directory: {}", dir.path().display())));
        assert!(p.contains("Today's date: 2026-11-29"));
        assert!(p.contains(&format!("Platform: {}", std::env::consts::OS)));
        assert!(p.contains("Use tabs."));
        assert!(!p.contains("CLAUDE.md"), "missing files are skipped");
    }

    #[test]
    fn plan_mode_golden() {
        assert_eq!(
            PLAN_MODE,
            "\n<plan-mode>\nThe session is in plan mode: the user wants a plan before anything changes. You may read and search (Read, Grep, Glob, and Bash commands that only read). Do not edit or write files, and do not run commands that change anything: such calls are refused in this mode. Investigate, then present your plan — what you would change, where, and why — and stop; the user switches modes to let you carry it out.\n</plan-mode>\n"
        );
    }

    #[test]
    fn only_plan_mode_adds_a_paragraph() {
        let base = build();
        assert_eq!(for_mode(&base, Mode::Plan), format!("{base}{PLAN_MODE}"));
        for mode in [Mode::Default, Mode::AcceptEdits, Mode::BypassPermissions] {
            assert_eq!(for_mode(&base, mode), base, "{mode:?}");
        }
    }

    #[test]
    fn the_system_prompt_names_no_project_or_day() {
        assert!(!SYSTEM.contains("Working directory:"));
        assert!(!SYSTEM.contains("Today's date"));
    }

    #[test]
    fn today_is_iso() {
        let t = today();
        assert_eq!(t.len(), 10);
        assert_eq!(&t[4..5], "-");
    }
}
