//! Model-facing texts of background shells: Bash with `run_in_background`,
//! `BashOutput` and `KillShell` (Claude Code's contracts). Placeholders in
//! `{braces}` are filled with [`crate::text::fill`]; each text is pinned by
//! a golden test below.

/// Bash's result for `run_in_background: true`. `{id}`: `bash_N`;
/// `{path}`: the output file.
pub const BACKGROUND_STARTED: &str = "Command running in the background with ID: {id}. Its output (stdout and stderr, in order) goes to {path}. Read new output with BashOutput (bash_id \"{id}\") and stop it with KillShell (shell_id \"{id}\"). It is stopped, with every process it started, when the session ends or Neovim exits.";

/// Bash could not start the background command. `{error}`: the OS error.
pub const BACKGROUND_FAILED: &str = "Could not start the command in the background: {error}. Nothing ran. Check that bash is installed and that the state directory is writable.";

/// The description of `BashOutput`.
pub const BASH_OUTPUT_DESCRIPTION: &str = "\
Reads the output of a command started with Bash and `run_in_background: true`.

- Returns only the output written since the last BashOutput call for that `bash_id` (all of it the first time), stdout and stderr together in the order written, then the shell's status: running, or exited with its exit code, or stopped.
- `filter` is a regular expression: only the new lines that match are returned. The other new lines are skipped for later BashOutput calls, but stay in the output file the result names.
- Long new output is cut in the middle like Bash's; the whole output is in the file the result names (Read or Grep it).
- It does not wait: call it again later to see more.";

/// `BashOutput`'s result. `{output}`: the new output (or
/// [`NO_NEW_OUTPUT`]); `{status}`: one of the `STATUS_*` lines; `{path}`:
/// the output file.
pub const BASH_OUTPUT_RESULT: &str = "{output}\n\n{status}\nAll output so far: {path}";

/// Instead of the output when nothing new was written (or nothing new
/// matched the filter).
pub const NO_NEW_OUTPUT: &str = "(no new output)";

/// Status: still running. `{id}`; `{secs}`: seconds since it started.
pub const STATUS_RUNNING: &str = "Status: running ({id}, started {secs} s ago). Call BashOutput again later for more, or KillShell to stop it.";

/// Status: bash exited with 0. `{code}`.
pub const STATUS_EXITED: &str = "Status: exited with code {code}.";

/// Status: bash exited with a non-zero code. `{code}`.
pub const STATUS_FAILED: &str = "Status: exited with code {code} (failure).";

/// Status: bash was killed by a signal lathe did not send. `{signal}`,
/// `{name}`.
pub const STATUS_SIGNALLED: &str = "Status: killed by signal {signal} ({name}).";

/// Status: stopped by KillShell (or the session ending).
pub const STATUS_KILLED: &str = "Status: stopped by KillShell.";

/// BashOutput or KillShell with an id this session did not start. `{id}`;
/// `{known}`: the session's ids, or [`NO_SHELLS`].
pub const UNKNOWN_SHELL: &str = "There is no background shell \"{id}\" in this session (its shells: {known}). Use the ID Bash returned for a command started with `run_in_background: true`.";

/// `{known}` of [`UNKNOWN_SHELL`] when the session started none.
pub const NO_SHELLS: &str = "none yet";

/// BashOutput's `filter` is not a regex. `{error}`: the parser's text.
pub const BAD_FILTER: &str = "`filter` is not a valid regular expression: {error}. Fix it, or leave `filter` out to get every new line.";

/// BashOutput could not read the output file. `{path}`, `{error}`.
pub const READ_FAILED: &str = "Could not read the output file {path}: {error}. The command itself is not affected; try BashOutput again, or Read the file.";

/// The description of `KillShell`.
pub const KILL_SHELL_DESCRIPTION: &str = "\
Stops a command started with Bash and `run_in_background: true`, with every process it started.

- `shell_id` is the ID Bash returned (`bash_N`). Only shells of this session can be stopped.
- The output written so far stays in the shell's output file; BashOutput still reads it.";

/// KillShell stopped the job. `{id}`, `{command}`, `{path}`.
pub const KILLED: &str = "Stopped background shell {id} ({command}) and every process it started. Its output is in {path}.";

/// KillShell on a job that is not running. `{id}`; `{status}`: its status
/// line.
pub const NOT_RUNNING: &str =
    "Background shell {id} is not running, so there is nothing to stop. {status}";

#[cfg(test)]
mod golden {
    use super::*;
    use crate::text::fill;

    #[test]
    fn started_and_failed() {
        assert_eq!(
            fill(BACKGROUND_STARTED, &[("id", "bash_1"), ("path", "/s/b.log")]),
            "Command running in the background with ID: bash_1. Its output (stdout and stderr, in order) goes to /s/b.log. Read new output with BashOutput (bash_id \"bash_1\") and stop it with KillShell (shell_id \"bash_1\"). It is stopped, with every process it started, when the session ends or Neovim exits."
        );
        assert_eq!(
            fill(BACKGROUND_FAILED, &[("error", "No such file or directory (os error 2)")]),
            "Could not start the command in the background: No such file or directory (os error 2). Nothing ran. Check that bash is installed and that the state directory is writable."
        );
    }

    #[test]
    fn output_and_statuses() {
        assert_eq!(
            fill(
                BASH_OUTPUT_RESULT,
                &[
                    ("output", NO_NEW_OUTPUT),
                    ("status", &fill(STATUS_RUNNING, &[("id", "bash_2"), ("secs", "5")])),
                    ("path", "/s/b.log")
                ]
            ),
            "(no new output)\n\nStatus: running (bash_2, started 5 s ago). Call BashOutput again later for more, or KillShell to stop it.\nAll output so far: /s/b.log"
        );
        assert_eq!(
            fill(STATUS_EXITED, &[("code", "0")]),
            "Status: exited with code 0."
        );
        assert_eq!(
            fill(STATUS_FAILED, &[("code", "2")]),
            "Status: exited with code 2 (failure)."
        );
        assert_eq!(
            fill(STATUS_SIGNALLED, &[("signal", "9"), ("name", "SIGKILL")]),
            "Status: killed by signal 9 (SIGKILL)."
        );
        assert_eq!(STATUS_KILLED, "Status: stopped by KillShell.");
    }

    #[test]
    fn errors() {
        assert_eq!(
            fill(UNKNOWN_SHELL, &[("id", "bash_9"), ("known", NO_SHELLS)]),
            "There is no background shell \"bash_9\" in this session (its shells: none yet). Use the ID Bash returned for a command started with `run_in_background: true`."
        );
        assert_eq!(
            fill(BAD_FILTER, &[("error", "unclosed group")]),
            "`filter` is not a valid regular expression: unclosed group. Fix it, or leave `filter` out to get every new line."
        );
        assert_eq!(
            fill(READ_FAILED, &[("path", "/s/b.log"), ("error", "gone")]),
            "Could not read the output file /s/b.log: gone. The command itself is not affected; try BashOutput again, or Read the file."
        );
        assert_eq!(
            fill(KILLED, &[("id", "bash_1"), ("command", "npm run dev"), ("path", "/s/b.log")]),
            "Stopped background shell bash_1 (npm run dev) and every process it started. Its output is in /s/b.log."
        );
        assert_eq!(
            fill(NOT_RUNNING, &[("id", "bash_1"), ("status", "Status: exited with code 0.")]),
            "Background shell bash_1 is not running, so there is nothing to stop. Status: exited with code 0."
        );
    }
}
