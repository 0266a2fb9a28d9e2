//! Model-facing texts of the pipeline's own gates. Each is a named constant
//! (placeholders in `{braces}`) pinned by a golden test below; tools keep their
//! own texts next to their code.

/// Gate 1: the model called a tool that does not exist. `{name}`, `{available}`.
pub const NO_SUCH_TOOL: &str =
    "No such tool available: {name}. Available tools: {available}. Call one of these by its exact name.";

/// Gate 2 header; one line per problem follows. `{tool}`.
pub const INPUT_VALIDATION_ERROR: &str =
    "InputValidationError: {tool} failed due to the following issue(s):";

/// Gate 2 trailer.
pub const INPUT_VALIDATION_HINT: &str =
    "Fix the input to match the tool's schema and call it again.";

/// Gate 2 line: a field has the wrong JSON type. `{field}`, `{expected}`, `{got}`.
pub const FIELD_WRONG_TYPE: &str = "- `{field}`: expected {expected}, got {got}";

/// Gate 2 line: a required field is missing. `{field}`.
pub const FIELD_MISSING: &str = "- `{field}`: required parameter is missing";

/// Gate 2 line: a field the schema does not know. `{field}`.
pub const FIELD_UNEXPECTED: &str = "- `{field}`: unexpected parameter (not in the schema)";

/// Gate 2 line: any other schema problem. `{field}`, `{problem}`.
pub const FIELD_INVALID: &str = "- `{field}`: {problem}";

/// The input arrived cut off or as invalid JSON. `{tool}`, `{error}`.
pub const INPUT_NOT_JSON: &str =
    "The input for {tool} was not valid JSON ({error}), so the call was not run. Send the whole input object again.";

/// The tool panicked inside `call`. `{tool}`, `{detail}`.
pub const TOOL_PANICKED: &str =
    "{tool} failed with an internal error ({detail}). Nothing is known to have changed; try again or take another approach.";

/// The user interrupted while the call was running or queued. `{tool}`.
pub const INTERRUPTED: &str =
    "Interrupted by the user: {tool} did not finish and its result is unknown. Wait for the user's next instruction.";

/// The user interrupted before the call ran (while it waited for an
/// answer, was queued or was being planned): nothing of it happened.
/// `{tool}`.
pub const INTERRUPTED_BEFORE_RUN: &str =
    "Not applied: the user interrupted before {tool} ran, so nothing was written or run. Wait for the user's next instruction.";

/// User-facing, after a tool line's summary: the user left hunks out of a
/// change with `<Space>`. `{kept}`, `{total}`.
pub const HUNKS_APPLIED: &str = " · {kept} of {total} hunks applied";

/// User-facing, after a tool line's summary: the user edited the change
/// in the diff tab.
pub const YOUR_VERSION_APPLIED: &str = " · your edited version applied";

/// A concurrent sibling (a Bash call) failed, so this call was cancelled. `{tool}`.
pub const SIBLING_FAILED: &str =
    "{tool} was cancelled because a Bash call running alongside it in the same batch failed. Its result is unknown; run it again if you still need it.";

/// A call that needs the user's permission, made where nobody can answer
/// (`lathe.tool_sync`). For the script's author. `{tool}`.
pub const NEEDS_PERMISSION: &str =
    "{tool} needs the user's permission for this call, and lathe.tool_sync cannot ask while it waits. Use lathe.tool(name, input, callback) instead, or allow it with a permissions rule in setup().";

/// [`NEEDS_PERMISSION`] for a protected path (`.env`, `.git/`, settings
/// files), which asks in every mode even when an allow rule matches, so no
/// rule can let `lathe.tool_sync` run it. `{tool}`, `{reason}`.
pub const NEEDS_PERMISSION_PROTECTED: &str =
    "{tool} needs the user's permission for this call ({reason}), and lathe.tool_sync cannot ask while it waits. Protected paths ask in every mode, even when an allow rule matches, so no permissions rule can change that: use lathe.tool(name, input, callback), which lets the user answer.";

/// [`NEEDS_PERMISSION`] for an ask rule, which no allow rule overrides.
/// `{tool}`, `{reason}`.
pub const NEEDS_PERMISSION_ASK_RULE: &str =
    "{tool} needs the user's permission for this call ({reason}), and lathe.tool_sync cannot ask while it waits. An allow rule does not override an ask rule: use lathe.tool(name, input, callback), which lets the user answer, or remove or narrow that ask rule.";

/// Added to the result of a change the user revised in the float. `{what}`.
pub const USER_REVISED: &str =
    "Note: the user changed this edit before it was applied: {what}. The file holds the text shown above, not exactly what you proposed; Read it before you edit that region again.";

/// `{what}` of [`USER_REVISED`] for rejected hunks. `{hunks}` (`2 hunks`), `{list}` (`2, 3`).
pub const REJECTED_HUNKS: &str = "they left out {hunks} of the proposed diff (numbered {list})";

/// `{what}` of [`USER_REVISED`] for a hand edit in the diff tab.
pub const EDITED_BY_USER: &str = "they edited the new text by hand";

/// Added to the result of a call planned again against a document that
/// changed while the user reviewed it (`r` in the float), when the model
/// had not read that text. `{path}`.
pub const REPLANNED: &str =
    "Note: {path} changed while the user reviewed this call (the user or another program edited it), so the call was planned again against its current text, and the user approved that plan. Read the file before you edit it again.";

/// `{reason}` of a PreToolUse hook's deny that gave none.
pub const NO_HOOK_REASON: &str = "(no reason given)";

/// Chat notice when `A` could not save its rule. `{error}`.
pub const RULE_NOT_SAVED: &str =
    "lathe allowed the call for this session, but could not save the rule: {error}";

/// The schema of a tool could not be compiled (an internal bug). `{tool}`.
pub const SCHEMA_BROKEN: &str =
    "Internal error: the input schema of {tool} could not be compiled, so the call was not run. Use another tool.";

/// [`NEEDS_PERMISSION`] for a Bash call that would run outside the
/// sandbox (`dangerouslyDisableSandbox`, or the sandbox is off here),
/// which only the user can allow. `{tool}`, `{reason}`.
pub const NEEDS_PERMISSION_UNSANDBOXED: &str =
    "{tool} needs the user's permission for this call ({reason}), and lathe.tool_sync cannot ask while it waits. Use lathe.tool(name, input, callback), which lets the user answer, or run the command inside the sandbox.";

/// The ask of a command that would run without asking but whose sandbox
/// cannot be made (the paths to hide could not all be found). `{why}`.
pub const ASKS_SANDBOX_UNREADY: &str =
    "the sandbox could not be made for it ({why}), so it asks instead of running without asking";

/// Why a command runs outside the sandbox: the user allowed the model's
/// `dangerouslyDisableSandbox`.
pub const SANDBOX_OFF_ALLOWED: &str =
    "the model asked to run it outside the sandbox (dangerouslyDisableSandbox)";

#[cfg(test)]
mod golden {
    use super::*;
    use crate::text::fill;

    #[test]
    fn no_such_tool() {
        assert_eq!(
            fill(NO_SUCH_TOOL, &[("name", "Fetch"), ("available", "Read, Edit")]),
            "No such tool available: Fetch. Available tools: Read, Edit. Call one of these by its exact name."
        );
    }

    #[test]
    fn validation_lines() {
        assert_eq!(
            fill(
                FIELD_WRONG_TYPE,
                &[
                    ("field", "replace_all"),
                    ("expected", "boolean"),
                    ("got", "string \"true\"")
                ]
            ),
            "- `replace_all`: expected boolean, got string \"true\""
        );
        assert_eq!(
            fill(FIELD_MISSING, &[("field", "file_path")]),
            "- `file_path`: required parameter is missing"
        );
        assert_eq!(
            fill(FIELD_UNEXPECTED, &[("field", "path")]),
            "- `path`: unexpected parameter (not in the schema)"
        );
        assert_eq!(
            fill(INPUT_VALIDATION_ERROR, &[("tool", "Edit")]),
            "InputValidationError: Edit failed due to the following issue(s):"
        );
        assert_eq!(
            INPUT_VALIDATION_HINT,
            "Fix the input to match the tool's schema and call it again."
        );
        assert_eq!(
            fill(FIELD_INVALID, &[("field", "limit"), ("problem", "x")]),
            "- `limit`: x"
        );
    }

    #[test]
    fn other_texts() {
        assert_eq!(
            fill(INPUT_NOT_JSON, &[("tool", "Read"), ("error", "EOF while parsing")]),
            "The input for Read was not valid JSON (EOF while parsing), so the call was not run. Send the whole input object again."
        );
        assert_eq!(
            fill(TOOL_PANICKED, &[("tool", "Grep"), ("detail", "boom")]),
            "Grep failed with an internal error (boom). Nothing is known to have changed; try again or take another approach."
        );
        assert_eq!(
            fill(INTERRUPTED, &[("tool", "Edit")]),
            "Interrupted by the user: Edit did not finish and its result is unknown. Wait for the user's next instruction."
        );
        assert_eq!(
            fill(INTERRUPTED_BEFORE_RUN, &[("tool", "Edit")]),
            "Not applied: the user interrupted before Edit ran, so nothing was written or run. Wait for the user's next instruction."
        );
        assert_eq!(
            fill(NEEDS_PERMISSION, &[("tool", "Edit")]),
            "Edit needs the user's permission for this call, and lathe.tool_sync cannot ask while it waits. Use lathe.tool(name, input, callback) instead, or allow it with a permissions rule in setup()."
        );
        assert_eq!(
            fill(
                NEEDS_PERMISSION_PROTECTED,
                &[("tool", "Read"), ("reason", ".env (.env files) always asks")]
            ),
            "Read needs the user's permission for this call (.env (.env files) always asks), and lathe.tool_sync cannot ask while it waits. Protected paths ask in every mode, even when an allow rule matches, so no permissions rule can change that: use lathe.tool(name, input, callback), which lets the user answer."
        );
        assert_eq!(
            fill(
                NEEDS_PERMISSION_ASK_RULE,
                &[("tool", "Read"), ("reason", "rule Read(notes/**) from setup() asks")]
            ),
            "Read needs the user's permission for this call (rule Read(notes/**) from setup() asks), and lathe.tool_sync cannot ask while it waits. An allow rule does not override an ask rule: use lathe.tool(name, input, callback), which lets the user answer, or remove or narrow that ask rule."
        );
        assert_eq!(
            fill(
                USER_REVISED,
                &[("what", &fill(REJECTED_HUNKS, &[("hunks", "1 hunk"), ("list", "2")]))]
            ),
            "Note: the user changed this edit before it was applied: they left out 1 hunk of the proposed diff (numbered 2). The file holds the text shown above, not exactly what you proposed; Read it before you edit that region again."
        );
        assert_eq!(EDITED_BY_USER, "they edited the new text by hand");
        assert_eq!(
            fill(RULE_NOT_SAVED, &[("error", "x")]),
            "lathe allowed the call for this session, but could not save the rule: x"
        );
        assert_eq!(
            fill(SIBLING_FAILED, &[("tool", "Grep")]),
            "Grep was cancelled because a Bash call running alongside it in the same batch failed. Its result is unknown; run it again if you still need it."
        );
        assert_eq!(
            fill(REPLANNED, &[("path", "greeting.py")]),
            "Note: greeting.py changed while the user reviewed this call (the user or another program edited it), so the call was planned again against its current text, and the user approved that plan. Read the file before you edit it again."
        );
        assert_eq!(NO_HOOK_REASON, "(no reason given)");
        assert_eq!(
            fill(super::super::REPLAN_FAILED, &[("error", "x.")]),
            "the file changed, and the call no longer applies to it: x. (any answer ends the call with this error)"
        );
        assert_eq!(
            fill(SCHEMA_BROKEN, &[("tool", "Edit")]),
            "Internal error: the input schema of Edit could not be compiled, so the call was not run. Use another tool."
        );
        assert_eq!(
            fill(
                NEEDS_PERMISSION_UNSANDBOXED,
                &[("tool", "Bash"), ("reason", "the sandbox is off")]
            ),
            "Bash needs the user's permission for this call (the sandbox is off), and lathe.tool_sync cannot ask while it waits. Use lathe.tool(name, input, callback), which lets the user answer, or run the command inside the sandbox."
        );
        assert_eq!(
            fill(ASKS_SANDBOX_UNREADY, &[("why", "too many files")]),
            "the sandbox could not be made for it (too many files), so it asks instead of running without asking"
        );
        assert_eq!(
            SANDBOX_OFF_ALLOWED,
            "the model asked to run it outside the sandbox (dangerouslyDisableSandbox)"
        );
    }
}
