//! Model-facing texts of the Bash tool. Placeholders in `{braces}` are filled
//! with [`crate::text::fill`]; every text is pinned by a
//! golden test below.

/// The tool description (Claude Code's Bash contract, adapted). `{default}`,
/// `{max}`: timeout limits in ms; `{cap}`: output cap in characters.
pub const DESCRIPTION: &str = "\
Runs a bash command in the project root and returns its output (stdout and stderr together, in the order the command wrote them, as a terminal shows them) and its exit code.

- Each call starts a fresh non-interactive `bash -c` in the project root: `cd`, variables and other shell state do not carry over to the next call. Chain dependent steps in one command with `&&`.
- There is no terminal and stdin is empty, so a command that prompts gets end-of-file at once. Pass flags that avoid prompts (`-y`, `--yes`, `git commit -m \"...\"`). `GIT_EDITOR`, `EDITOR` and `VISUAL` are `true` and `PAGER` is `cat`, so nothing opens an editor or a pager.
- `timeout` is in milliseconds: default {default}, at most {max}. On timeout the command and every process it started are stopped and you get the output so far.
- For long-running jobs (servers, watchers) set `run_in_background: true`: the result is the job's ID at once, no timeout applies, BashOutput reads its new output and KillShell stops it. Do not add `&` to such a command. Background jobs are stopped when the session ends.
- Output longer than about {cap} characters is cut in the middle: the start and the end are shown, and all of it is saved to a file the result names. Read (with offset and limit) or Grep that file to see the rest; never run a command again just to see its output.
- The result ends with `Exit code N`, marked `(failure)` when N is not 0 (or the signal that killed the command). A non-zero exit code is reported, not treated as a failure of the tool: read the output to see what went wrong.
- For files, prefer the Read, Grep, Glob, Edit and Write tools over `cat`, `grep`, `find`, `sed` and `echo >`: they are faster and show the user what changed. Quote paths that contain spaces.
- Set `description` to a few words saying what the command does; the user sees it.
- Commands run in a sandbox: read-only commands can write nothing, others write only in the project and the temp dir, there is no network unless the user allowed it, and files the user's rules protect cannot be opened. When the sandbox stops a command, the result says what it stopped. Only if the command really must do that, run it again with `dangerouslyDisableSandbox: true`: the user is always asked first.";

/// Line after the output: bash exited with 0. `{code}`.
pub const EXIT_CODE: &str = "Exit code {code}";

/// Line after the output: bash exited with a non-zero code. `{code}`.
pub const EXIT_CODE_FAILED: &str = "Exit code {code} (failure)";

/// Line after the output when bash was killed by a signal. `{signal}` (number),
/// `{name}` (e.g. `SIGSEGV`).
pub const KILLED_BY_SIGNAL: &str = "Killed by signal {signal} ({name})";

/// Shown instead of the output when the command printed nothing.
pub const NO_OUTPUT: &str = "(no output)";

/// Between the head and the tail of cut output whose every byte is in a
/// file. `{omitted}`, `{total}`: bytes; `{path}`: the file.
pub const OUTPUT_SAVED: &str = "[... {omitted} bytes of output omitted here ({total} bytes in all). The full output is saved in {path}: Read it with offset and limit, or Grep it, to see the rest. Do not run the command again to see it.]";

/// Between the head and the tail of cut output longer than the file keeps
/// (`spill::MAX_SAVED_OUTPUT_BYTES`). `{omitted}`, `{total}`, `{saved}`:
/// bytes; `{path}`: the file.
pub const OUTPUT_PARTLY_SAVED: &str = "[... {omitted} bytes of output omitted here ({total} bytes in all). The first {saved} bytes of the output are saved in {path} (lathe keeps no more of one command's output): Read it with offset and limit, or Grep it. Do not run the command again to see it; if you need the end of such output, run it with its output filtered or cut to its end.]";

/// Between the head and the tail of cut output when the file could not be
/// written. `{omitted}`, `{total}`: bytes; `{path}`: the file tried;
/// `{error}`: the OS error.
pub const OUTPUT_NOT_SAVED: &str = "[... {omitted} bytes of output omitted here ({total} bytes in all). The full output could not be saved to {path} ({error}); only the start and the end are shown.]";

/// The timeout elapsed (an error result). `{timeout}`, `{max}`: ms;
/// `{output}`: the rendered output so far.
pub const TIMED_OUT: &str = "Command timed out after {timeout} ms and was stopped, with every process it started. If it needs more time, run it again with a larger `timeout` (at most {max} ms), or with `run_in_background: true` and read its output with BashOutput. Output before the timeout:\n{output}";

/// The user interrupted the turn while the command ran (an error result).
/// `{output}`: the rendered output so far.
pub const INTERRUPTED: &str = "Interrupted by the user: the command was stopped, with every process it started. Wait for the user's next instruction. Output before the interrupt:\n{output}";

/// validate_input: `timeout` above the maximum. `{timeout}`, `{max}`: ms.
pub const TIMEOUT_TOO_LARGE: &str = "`timeout` is {timeout} ms, above the maximum of {max} ms. Call Bash again with a `timeout` of at most {max} ms, or with `run_in_background: true` and read its output with BashOutput.";

/// validate_input: `timeout` of 0. `{default}`, `{max}`: ms.
pub const TIMEOUT_ZERO: &str = "`timeout` is 0 ms, so the command could never run. Leave `timeout` out for the default of {default} ms, or give a positive number of milliseconds (at most {max}).";

/// validate_input: the command is empty or only whitespace.
pub const EMPTY_COMMAND: &str =
    "`command` is empty, so there is nothing to run. Call Bash again with the shell command in `command`.";

/// bash could not be started. `{cwd}`: the project root; `{error}`: the OS error.
pub const SPAWN_FAILED: &str = "Could not start bash in {cwd}: {error}. Nothing ran. Check that bash is installed and on PATH and that the project directory exists.";

/// Added after the exit line of a failed sandboxed command whose output
/// shows the sandbox stopping it. `{what}`: [`SANDBOX_NO_WRITE`],
/// [`SANDBOX_HID`], [`SANDBOX_NO_NETWORK`], joined by `; `.
pub const SANDBOX_BLOCKED: &str = "[lathe's sandbox stopped this command: {what}. If the command must do that, call Bash again with `dangerouslyDisableSandbox: true` (the user is asked first), or do it another way; the user can allow more for good with `sandbox.filesystem.allowWrite` or `sandbox.network` in setup() or .claude/settings.json.]";

/// Added to the chat's summary of a command the sandbox stopped
/// (`exit 1 · stopped by the sandbox`), so the folded line says so.
pub const SANDBOX_STOPPED_SHORT: &str = "stopped by the sandbox";

/// A write the sandbox refused. `{path}`.
pub const SANDBOX_NO_WRITE: &str = "it may not write {path}";

/// A path the sandbox hid (a Read rule or a protected name covers it).
/// `{path}`.
pub const SANDBOX_HID: &str = "{path} cannot be opened (a Read rule or a protected name covers it)";

/// A write to what stays read-only inside the sandbox even where the
/// command may write. `{path}`.
pub const SANDBOX_FROZEN: &str = "{path} stays read-only in the sandbox (git hooks and config, .claude, .mcp.json, editor settings: what would run or grant something later)";

/// The network was off.
pub const SANDBOX_NO_NETWORK: &str = "the network is off";

/// The command did not run: its sandbox could not be set up. `{error}`.
pub const SANDBOX_NOT_PREPARED: &str = "The command did not run: lathe's sandbox could not be set up for it ({error}). If it must run, call Bash again with `dangerouslyDisableSandbox: true`: the user is asked first.";

#[cfg(test)]
mod golden {
    use super::*;
    use crate::text::fill;

    #[test]
    fn sandbox_texts() {
        assert_eq!(
            fill(SANDBOX_BLOCKED, &[("what", "it may not write /etc/x; the network is off")]),
            "[lathe's sandbox stopped this command: it may not write /etc/x; the network is off. If the command must do that, call Bash again with `dangerouslyDisableSandbox: true` (the user is asked first), or do it another way; the user can allow more for good with `sandbox.filesystem.allowWrite` or `sandbox.network` in setup() or .claude/settings.json.]"
        );
        assert_eq!(
            fill(SANDBOX_NO_WRITE, &[("path", "/etc/x")]),
            "it may not write /etc/x"
        );
        assert_eq!(
            fill(SANDBOX_HID, &[("path", "/p/.env")]),
            "/p/.env cannot be opened (a Read rule or a protected name covers it)"
        );
        assert_eq!(
            fill(SANDBOX_FROZEN, &[("path", "/p/.git/config")]),
            "/p/.git/config stays read-only in the sandbox (git hooks and config, .claude, .mcp.json, editor settings: what would run or grant something later)"
        );
        assert_eq!(SANDBOX_NO_NETWORK, "the network is off");
        assert_eq!(SANDBOX_STOPPED_SHORT, "stopped by the sandbox");
        assert_eq!(
            fill(SANDBOX_NOT_PREPARED, &[("error", "no Landlock")]),
            "The command did not run: lathe's sandbox could not be set up for it (no Landlock). If it must run, call Bash again with `dangerouslyDisableSandbox: true`: the user is asked first."
        );
    }

    #[test]
    fn result_lines() {
        assert_eq!(fill(EXIT_CODE, &[("code", "0")]), "Exit code 0");
        assert_eq!(
            fill(EXIT_CODE_FAILED, &[("code", "2")]),
            "Exit code 2 (failure)"
        );
        assert_eq!(
            fill(KILLED_BY_SIGNAL, &[("signal", "11"), ("name", "SIGSEGV")]),
            "Killed by signal 11 (SIGSEGV)"
        );
        assert_eq!(NO_OUTPUT, "(no output)");
        assert_eq!(
            fill(
                OUTPUT_SAVED,
                &[("omitted", "100"), ("total", "300"), ("path", "/s/bash-output/1.log")]
            ),
            "[... 100 bytes of output omitted here (300 bytes in all). The full output is saved in /s/bash-output/1.log: Read it with offset and limit, or Grep it, to see the rest. Do not run the command again to see it.]"
        );
        assert_eq!(
            fill(
                OUTPUT_NOT_SAVED,
                &[
                    ("omitted", "100"),
                    ("total", "300"),
                    ("path", "/s/1.log"),
                    ("error", "Read-only file system (os error 30)")
                ]
            ),
            "[... 100 bytes of output omitted here (300 bytes in all). The full output could not be saved to /s/1.log (Read-only file system (os error 30)); only the start and the end are shown.]"
        );
        assert_eq!(
            fill(
                OUTPUT_PARTLY_SAVED,
                &[("omitted", "100"), ("total", "300"), ("saved", "200"), ("path", "/s/1.log")]
            ),
            "[... 100 bytes of output omitted here (300 bytes in all). The first 200 bytes of the output are saved in /s/1.log (lathe keeps no more of one command's output): Read it with offset and limit, or Grep it. Do not run the command again to see it; if you need the end of such output, run it with its output filtered or cut to its end.]"
        );
    }

    #[test]
    fn stop_errors() {
        assert_eq!(
            fill(TIMED_OUT, &[("timeout", "2000"), ("max", "600000"), ("output", "tick")]),
            "Command timed out after 2000 ms and was stopped, with every process it started. If it needs more time, run it again with a larger `timeout` (at most 600000 ms), or with `run_in_background: true` and read its output with BashOutput. Output before the timeout:\ntick"
        );
        assert_eq!(
            fill(INTERRUPTED, &[("output", "tick")]),
            "Interrupted by the user: the command was stopped, with every process it started. Wait for the user's next instruction. Output before the interrupt:\ntick"
        );
    }

    #[test]
    fn input_errors() {
        assert_eq!(
            fill(TIMEOUT_TOO_LARGE, &[("timeout", "900000"), ("max", "600000")]),
            "`timeout` is 900000 ms, above the maximum of 600000 ms. Call Bash again with a `timeout` of at most 600000 ms, or with `run_in_background: true` and read its output with BashOutput."
        );
        assert_eq!(
            fill(TIMEOUT_ZERO, &[("default", "120000"), ("max", "600000")]),
            "`timeout` is 0 ms, so the command could never run. Leave `timeout` out for the default of 120000 ms, or give a positive number of milliseconds (at most 600000)."
        );
        assert_eq!(
            EMPTY_COMMAND,
            "`command` is empty, so there is nothing to run. Call Bash again with the shell command in `command`."
        );
        assert_eq!(
            fill(SPAWN_FAILED, &[("cwd", "/p"), ("error", "No such file or directory (os error 2)")]),
            "Could not start bash in /p: No such file or directory (os error 2). Nothing ran. Check that bash is installed and on PATH and that the project directory exists."
        );
    }
}
