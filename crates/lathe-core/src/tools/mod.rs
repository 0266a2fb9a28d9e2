//! The `Tool` trait and the built-in tools, one file each (Claude Code's tool
//! contract: PascalCase names, snake_case parameters).
//!
//! Each tool has a typed input struct deriving `Deserialize` and `JsonSchema`;
//! the struct's doc comments become the schema descriptions the model reads,
//! and the same schema validates input (gate 2), so the two cannot drift.
//! [`TypedTool`] is what a tool implements; the blanket impl turns it into
//! the object-safe [`Tool`] the pipeline runs (see `tool.rs` for how a call
//! is prepared, planned and run once each).

pub mod support;
mod tool;

pub mod bash;
pub mod diagnostics;
pub mod edit;
pub mod glob;
pub mod grep;
pub mod lsp;
pub mod read;
pub mod user;
pub mod write;

pub use support::file_state::FileState;
pub use support::sandboxing::Sandboxing;
pub use tool::{
    PlannedCall, PreparedCall, ReadOnlyKind, Tool, ToolKind, ToolSource, TypedTool,
    INTERNAL_INPUT_MISMATCH, REVISION_UNSUPPORTED,
};

use std::path::PathBuf;
use std::sync::Arc;

use schemars::JsonSchema;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::editor::Editor;
use crate::protocol::ToolResultContent;

/// Everything a tool call may use besides its input.
#[derive(Clone)]
pub struct ToolContext {
    /// Absolute project root; relative paths resolve against it (never
    /// against a window-local `:lcd`).
    pub root: PathBuf,
    /// Buffers and files.
    pub editor: Arc<dyn Editor>,
    /// What the model has read in this session.
    pub file_state: Arc<FileState>,
    /// Cancelled when the user interrupts the turn.
    pub cancel: CancellationToken,
    /// Receives partial output of a long call (Bash) as it arrives, for the
    /// chat; set per call by the pipeline, `None` when nobody listens.
    pub progress: Option<ProgressFn>,
    /// The call comes from the user (a keymap, `lathe.tool()`), not from
    /// the model: a background job it starts is the user's
    /// ([`bash::shells::Job::started_by_user`]).
    pub by_user: bool,
}

/// A per-call progress callback: raw output bytes as they arrive (chunks may
/// split UTF-8 characters; the receiver decodes).
pub type ProgressFn = Arc<dyn Fn(&[u8]) + Send + Sync>;

/// A tool's successful result before it becomes a `tool_result`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The `tool_result` content for the model.
    pub content: ToolResultContent,
    /// One short line for the chat window, e.g. `12 lines` or `3 files`.
    pub summary: String,
    /// The tool ran and what it ran failed (a Bash command's non-zero
    /// exit): the chat shows the call as `failed`, not `done`. The
    /// `tool_result` is not an error (the model reads the exit line).
    pub failed: bool,
    /// What the chat folds under the call's line instead of `content`
    /// (for people, never sent to the model): Edit's and Write's diff of
    /// what they wrote. `None`: the chat folds `content`.
    pub display: Option<String>,
}

impl ToolOutput {
    /// A result with a chat summary (not failed, no display of its own).
    pub fn new(content: ToolResultContent, summary: impl Into<String>) -> Self {
        Self {
            content,
            summary: summary.into(),
            failed: false,
            display: None,
        }
    }

    /// A text result with a chat summary.
    pub fn text(content: impl Into<String>, summary: impl Into<String>) -> Self {
        Self::new(ToolResultContent::Text(content.into()), summary)
    }
}

/// A tool's failure. `message` is model-facing: it says what happened and
/// what to do next, and comes from a named constant (golden-tested) filled in
/// with the specifics.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    /// Model-facing text.
    pub message: String,
}

impl ToolError {
    /// A tool error with this model-facing message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// The JSON Schema of `I` as sent to the model: draft 2020-12 from schemars,
/// with `additionalProperties: false` (strict; unknown fields are rejected),
/// the `$schema`/`title`/top-level `description` keys removed, and each
/// field description's doc-comment line wrapping undone
/// ([`unwrap_doc_lines`]), so the model reads sentences, not source layout.
pub fn schema_for<I: JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(I)).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
        map.remove("title");
        map.remove("description");
        map.insert("additionalProperties".into(), Value::Bool(false));
    }
    unwrap_descriptions(&mut schema);
    schema
}

/// Applies [`unwrap_doc_lines`] to every `description` string in `schema`.
fn unwrap_descriptions(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match value {
                    Value::String(s) if key == "description" => *s = unwrap_doc_lines(s),
                    other => unwrap_descriptions(other),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(unwrap_descriptions),
        _ => {}
    }
}

/// `doc` with the line breaks of a wrapped doc comment joined by spaces. A
/// blank line (paragraph break) stays, and so does a break before a list
/// item (`- `, `* ` or `1. `).
pub fn unwrap_doc_lines(doc: &str) -> String {
    let mut out = String::with_capacity(doc.len());
    let mut lines = doc.split('\n').peekable();
    while let Some(line) = lines.next() {
        out.push_str(line);
        let Some(next) = lines.peek() else { break };
        let keeps_break = line.trim().is_empty() || next.trim().is_empty() || is_list_item(next);
        out.push(if keeps_break { '\n' } else { ' ' });
    }
    out
}

fn is_list_item(line: &str) -> bool {
    let t = line.trim_start();
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    t.starts_with("- ") || t.starts_with("* ") || (digits > 0 && t[digits..].starts_with(". "))
}

/// The built-in tools for `config`, in the order the model sees them: Read,
/// Grep, Glob, Edit, Write, Bash, Diagnostics, BashOutput, KillShell, then the language-server
/// tools (LspDefinition, LspReferences, LspHover, LspSymbols: offered
/// only while a server runs). The one place a tool's settings are read
/// from the configuration (Bash's timeouts today), so a new setting touches
/// only its tool and this function.
pub fn builtin_tools(config: &Config) -> Vec<Arc<dyn Tool>> {
    // One set of background shells per set of tools (per session), shared
    // by Bash, BashOutput and KillShell.
    let shells =
        bash::shells::Shells::new(config.state_dir.join(support::retention::BASH_OUTPUT_DIR));
    vec![
        Arc::new(read::ReadTool),
        Arc::new(grep::GrepTool),
        Arc::new(glob::GlobTool),
        Arc::new(edit::EditTool),
        Arc::new(write::WriteTool),
        Arc::new(
            bash::BashTool::new(bash::BashLimits::from_config(config)).with_shells(shells.clone()),
        ),
        Arc::new(diagnostics::DiagnosticsTool),
        Arc::new(bash::bash_output::BashOutputTool::new(shells.clone())),
        Arc::new(bash::kill_shell::KillShellTool::new(shells)),
        Arc::new(lsp::definition::LspDefinitionTool),
        Arc::new(lsp::references::LspReferencesTool),
        Arc::new(lsp::hover::LspHoverTool),
        Arc::new(lsp::symbols::LspSymbolsTool),
    ]
}

#[cfg(test)]
mod tests {
    use super::unwrap_doc_lines;

    /// A rule written in settings names a tool and nothing more, so its
    /// meaning comes from `permissions::rule_family`; a call is judged by
    /// the family its tool declares. They must agree for every built-in
    /// tool, or a rule would mean one thing and judge another.
    #[test]
    fn every_built_in_tool_declares_the_family_its_rules_are_read_with() {
        use crate::permissions::{rule_family, RuleFamily, RULE_FAMILIES};
        let config = crate::config::Config::new(std::path::Path::new("/p"));
        let tools = super::builtin_tools(&config);
        for tool in &tools {
            assert_eq!(
                tool.rule_family(),
                rule_family(tool.name()),
                "{}: declared family and rule table differ",
                tool.name()
            );
        }
        // And the table names no tool that is not built in.
        for (name, _) in RULE_FAMILIES {
            assert!(tools.iter().any(|t| t.name() == *name), "{name}");
        }
        assert_eq!(rule_family("SearchIssues"), RuleFamily::Input);
    }

    #[test]
    fn wrapped_doc_lines_become_sentences() {
        assert_eq!(
            unwrap_doc_lines(
                "What the command does, shown to the user (e.g. \"Run\nthe unit tests\")."
            ),
            "What the command does, shown to the user (e.g. \"Run the unit tests\")."
        );
        assert_eq!(unwrap_doc_lines("one\n\ntwo\nthree"), "one\n\ntwo three");
        assert_eq!(
            unwrap_doc_lines("Modes:\n- a\n- b\n1. c"),
            "Modes:\n- a\n- b\n1. c"
        );
        assert_eq!(unwrap_doc_lines("single"), "single");
    }
}
