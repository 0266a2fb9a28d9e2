//! Texts of the hooks: warnings for the user (chat notices) and the blocking
//! texts lathe writes when a hook gave none (for the model). Placeholders in
//! `{braces}` are filled with [`crate::text::fill`]: `{event}` is
//! `PreToolUse` or `PostToolUse`, `{hook}` the hook's name (a command hook's
//! command, shortened to its first line of at most
//! [`HOOK_NAME_MAX_CHARS`](super::HOOK_NAME_MAX_CHARS) characters; a
//! [`HookFn`](super::HookFn)'s `name()`). Every text is pinned by a golden
//! test below.

/// Warning (user): the hook ran past its timeout and its process group was
/// killed. `{secs}`: the timeout in seconds (`1`, `0.5`).
pub const TIMED_OUT: &str =
    "{event} hook `{hook}` timed out after {secs} s and was stopped; the call went on without it.";

/// Warning (user): the hook exited with a code other than 0 and 2
/// (Claude Code's non-blocking error). `{code}`; `{stderr}`: its stderr,
/// trimmed and shortened, or [`STDERR_EMPTY`].
pub const EXIT_CODE: &str =
    "{event} hook `{hook}` failed with exit code {code}; the call went on without it. Its stderr: {stderr}";

/// `{stderr}` of [`EXIT_CODE`] when the hook printed nothing there.
pub const STDERR_EMPTY: &str = "(empty)";

/// Warning (user): the hook's shell was killed by a signal it did not get
/// from lathe. `{signal}`: the signal number.
pub const KILLED_BY_SIGNAL: &str =
    "{event} hook `{hook}` was killed by signal {signal}; the call went on without it.";

/// Warning (user): `bash` could not be started (not installed, the working
/// directory is missing). `{error}`: the OS error.
pub const NOT_STARTED: &str =
    "{event} hook `{hook}` could not be started ({error}); the call went on without it.";

/// Warning (user): exit code 0 and stdout starts with `{` but is not JSON.
/// `{error}`: serde_json's message.
pub const INVALID_JSON: &str =
    "{event} hook `{hook}` exited with code 0 but printed invalid JSON ({error}); its output was ignored and the call went on.";

/// Warning (user): the JSON does not fit Claude Code's hook output (a field
/// of the wrong type, an unknown `permissionDecision`, another event's
/// `hookSpecificOutput`). `{error}`: the field's path and what is wrong.
pub const BAD_OUTPUT: &str =
    "{event} hook `{hook}` printed JSON that does not fit Claude Code's hook output ({error}); its output was ignored and the call went on.";

/// Warning (user): what a [`HookFn`](super::HookFn) (a Lua function)
/// returned does not fit Claude Code's hook output. A function prints
/// nothing: it returns a table, so this is [`BAD_OUTPUT`] in its terms.
/// `{error}`: the field's path and what is wrong.
pub const FUNCTION_BAD_OUTPUT: &str =
    "{event} hook `{hook}` returned a table that does not fit Claude Code's hook output ({error}); it was ignored and the call went on.";

/// Warning (user): a [`HookFn`](super::HookFn) (a Lua function) returned
/// something other than a table or nil. `{kind}`: `a string`, `a number`,
/// `a boolean`.
pub const FUNCTION_NOT_A_TABLE: &str =
    "{event} hook `{hook}` returned {kind}, not a table or nil; it was ignored and the call went on.";

/// `{error}` of [`BAD_OUTPUT`] when `hookSpecificOutput.hookEventName` names
/// another event. `{got}`: the name the hook gave.
pub const WRONG_EVENT_NAME: &str = "hookSpecificOutput.hookEventName is `{got}`, not `{event}`";

/// Warning (user): a [`HookFn`](super::HookFn) returned an error (a Lua
/// function raised one). `{error}`: the first line of its text (the message
/// without a stack trace), tabs turned to spaces.
pub const FUNCTION_FAILED: &str =
    "{event} hook `{hook}` failed ({error}); the call went on without it.";

/// Warning (user): a [`HookFn`](super::HookFn) panicked.
pub const FUNCTION_PANICKED: &str = "{event} hook `{hook}` panicked; the call went on without it.";

/// Warning (user): two PreToolUse hooks returned `updatedInput`; the later
/// one in hook order is used. `{first}`, `{second}`: the two hooks.
pub const INPUT_REPLACED: &str =
    "{event} hooks `{first}` and `{second}` both returned `updatedInput`; `{second}`'s, the later one, was used.";

/// Warning (user): the hook input could not be written as JSON (a path that
/// is not UTF-8), so no hook ran. `{error}`: serde_json's message.
pub const INPUT_NOT_JSON: &str =
    "{event} hooks were not run: their input could not be written as JSON ({error}); the call went on without them.";

/// Blocking text (model): exit code 2 with nothing on stderr.
pub const EXIT_2_WITHOUT_REASON: &str =
    "{event} hook `{hook}` blocked this call (exit code 2) without giving a reason.";

/// Blocking text (model): PostToolUse `"decision": "block"` without a
/// `reason`.
pub const BLOCK_WITHOUT_REASON: &str =
    "{event} hook `{hook}` reported a problem with this call (`decision: block`) without giving a reason.";

/// Stop text (user): `"continue": false` without a `stopReason`.
pub const STOP_WITHOUT_REASON: &str =
    "{event} hook `{hook}` ended the turn (`continue: false`) without giving a reason.";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::fill;

    const V: &[(&str, &str)] = &[
        ("event", "PreToolUse"),
        ("hook", "./lint.sh"),
        ("secs", "1.5"),
        ("code", "1"),
        ("stderr", "boom"),
        ("signal", "9"),
        ("error", "why"),
        ("got", "PostToolUse"),
        ("first", "a.sh"),
        ("second", "b.sh"),
        ("kind", "a string"),
    ];

    #[test]
    fn golden() {
        let cases = [
            (
                TIMED_OUT,
                "PreToolUse hook `./lint.sh` timed out after 1.5 s and was stopped; the call went on without it.",
            ),
            (
                EXIT_CODE,
                "PreToolUse hook `./lint.sh` failed with exit code 1; the call went on without it. Its stderr: boom",
            ),
            (STDERR_EMPTY, "(empty)"),
            (
                KILLED_BY_SIGNAL,
                "PreToolUse hook `./lint.sh` was killed by signal 9; the call went on without it.",
            ),
            (
                NOT_STARTED,
                "PreToolUse hook `./lint.sh` could not be started (why); the call went on without it.",
            ),
            (
                INVALID_JSON,
                "PreToolUse hook `./lint.sh` exited with code 0 but printed invalid JSON (why); its output was ignored and the call went on.",
            ),
            (
                BAD_OUTPUT,
                "PreToolUse hook `./lint.sh` printed JSON that does not fit Claude Code's hook output (why); its output was ignored and the call went on.",
            ),
            (
                FUNCTION_BAD_OUTPUT,
                "PreToolUse hook `./lint.sh` returned a table that does not fit Claude Code's hook output (why); it was ignored and the call went on.",
            ),
            (
                FUNCTION_NOT_A_TABLE,
                "PreToolUse hook `./lint.sh` returned a string, not a table or nil; it was ignored and the call went on.",
            ),
            (
                WRONG_EVENT_NAME,
                "hookSpecificOutput.hookEventName is `PostToolUse`, not `PreToolUse`",
            ),
            (
                FUNCTION_FAILED,
                "PreToolUse hook `./lint.sh` failed (why); the call went on without it.",
            ),
            (
                FUNCTION_PANICKED,
                "PreToolUse hook `./lint.sh` panicked; the call went on without it.",
            ),
            (
                INPUT_REPLACED,
                "PreToolUse hooks `a.sh` and `b.sh` both returned `updatedInput`; `b.sh`'s, the later one, was used.",
            ),
            (
                INPUT_NOT_JSON,
                "PreToolUse hooks were not run: their input could not be written as JSON (why); the call went on without them.",
            ),
            (
                EXIT_2_WITHOUT_REASON,
                "PreToolUse hook `./lint.sh` blocked this call (exit code 2) without giving a reason.",
            ),
            (
                BLOCK_WITHOUT_REASON,
                "PreToolUse hook `./lint.sh` reported a problem with this call (`decision: block`) without giving a reason.",
            ),
            (
                STOP_WITHOUT_REASON,
                "PreToolUse hook `./lint.sh` ended the turn (`continue: false`) without giving a reason.",
            ),
        ];
        for (template, want) in cases {
            assert_eq!(fill(template, V), want, "template {template:?}");
        }
    }
}
