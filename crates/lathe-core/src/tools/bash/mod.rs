//! `Bash`: runs a shell command in the project root (Claude Code's Bash tool
//! contract).
//!
//! Input `{command, timeout?, description?}`, `timeout` in ms (default and
//! maximum in [`BashLimits`]). How the process is run and stopped is in
//! [`process`]; the head-and-tail output cap in [`output_cap`]; the
//! read-only classifier in [`read_only`]; the model-facing texts in
//! [`messages`].
//!
//! Decisions:
//! - stdout and stderr are one pipe, as a terminal is one pty: the model
//!   reads the output in the order the command wrote it.
//! - Output longer than the cap is shown as head and tail, and kept in full
//!   in a file under `<state>/bash-output/` that the result names
//!   ([`spill`]); the model Reads or Greps it, never runs the command twice.
//! - A non-zero exit is not a tool error (as in Claude Code): the result is
//!   the output followed by `Exit code N (failure)` and `is_error` stays
//!   false.
//!   The chat shows such a call (and one killed by a signal) as `failed`
//!   ([`ToolOutput::failed`]), not `done`.
//!   Timeout and user interruption are errors (`is_error`), with the output
//!   so far: the chat shows them as `error` and `interrupted`.
//! - A normal exit leaves background jobs running (`cmd > log 2>&1 &`); a
//!   timeout or interruption stops the whole process group.

pub mod bash_output;
pub mod git_env;
pub mod job_messages;
pub mod kill_shell;
pub mod messages;
pub mod output_cap;
pub mod process;
pub mod read_only;
pub mod shells;
pub mod spill;
pub mod terminal;

use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::permissions::{CommandPreview, PermissionPreview};
use crate::text::fill;
use crate::tools::{ToolContext, ToolError, ToolOutput, TypedTool};

use crate::process::JobMarker;
use crate::sandbox::{Policy, Tier};
use crate::tools::Sandboxing;
use output_cap::CappedText;
use process::Jail;
use process::{Ending, RunSpec};
use shells::Shells;
use spill::Saved;
use std::sync::Arc;

/// The Bash result size (`max_result_size_chars`), in
/// characters: the default of [`BashLimits::max_output_chars`] and the
/// pipeline's spill-to-file threshold for this tool.
pub const BASH_MAX_RESULT_CHARS: usize = 30_000;

/// Characters of the output budget kept for the omission marker, the exit
/// line and the timeout text, so the whole result stays under
/// [`BashLimits::max_output_chars`].
pub const OUTPUT_RESERVE_CHARS: usize = 1_000;

/// A cut moves to a line boundary when one is within this many bytes.
pub const LINE_ALIGN_BYTES: usize = 500;

/// Longest chat line of [`TypedTool::describe`], in characters.
pub const DESCRIBE_MAX_CHARS: usize = 80;

/// The limits of the Bash tool; [`Default`] gives Claude Code's values and
/// [`BashLimits::from_config`] the configured ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BashLimits {
    /// Timeout when the call gives none, in ms (120 000).
    pub default_timeout_ms: u64,
    /// Largest `timeout` accepted, in ms (600 000); above it validate_input fails.
    pub max_timeout_ms: u64,
    /// Time between SIGTERM and SIGKILL to the process group, in ms (2 000).
    pub kill_grace_ms: u64,
    /// How long output is still read after bash exited or was stopped, in ms
    /// (1 000); bounds the wait on a background process holding the pipe.
    pub drain_ms: u64,
    /// Result size in characters (30 000, Claude Code's Bash
    /// `maxResultSizeChars`): head and tail each get half of it minus
    /// [`OUTPUT_RESERVE_CHARS`].
    pub max_output_chars: usize,
}

impl Default for BashLimits {
    fn default() -> Self {
        Self {
            default_timeout_ms: 120_000,
            max_timeout_ms: 600_000,
            kill_grace_ms: 2_000,
            drain_ms: 1_000,
            max_output_chars: BASH_MAX_RESULT_CHARS,
        }
    }
}

impl BashLimits {
    /// The defaults with `setup{ bash = { timeout_ms, max_timeout_ms } }`
    /// applied (`Config::bash_default_timeout_ms`, `bash_max_timeout_ms`).
    pub fn from_config(config: &Config) -> Self {
        Self {
            default_timeout_ms: config.bash_default_timeout_ms,
            max_timeout_ms: config.bash_max_timeout_ms,
            ..Self::default()
        }
    }

    /// Characters kept from each end of the output.
    pub fn side_chars(&self) -> usize {
        self.max_output_chars.saturating_sub(OUTPUT_RESERVE_CHARS) / 2
    }
}

/// Input of `Bash`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashInput {
    /// The command to run with `bash -c` in the project root.
    pub command: String,
    /// Optional timeout in milliseconds; the tool description gives the
    /// default and the maximum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// What the command does in 5-10 words, shown to the user (e.g. "Run
    /// the unit tests").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Set to true to run the command in the background: the result is its
    /// ID at once; read its output with BashOutput and stop it with
    /// KillShell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_in_background: Option<bool>,
    /// Set to true only to run again a command that failed because the
    /// sandbox stopped it (a write outside the project, the network) and
    /// must do that: it then runs outside the sandbox, and the user is
    /// always asked first. Leave it out otherwise.
    #[serde(
        default,
        rename = "dangerouslyDisableSandbox",
        skip_serializing_if = "Option::is_none"
    )]
    pub dangerously_disable_sandbox: Option<bool>,
}

/// The plan of a Bash call: where gate 6 said it runs
/// ([`TypedTool::confine`]); `None` when no gate ran (a direct call in a
/// test), and the command then runs as lathe does.
#[derive(Debug, Clone, Default)]
pub struct BashPlan {
    /// Inside the sandbox or outside it.
    pub sandboxing: Option<Sandboxing>,
}

/// Where [`BashTool::default`] and [`BashTool::new`] keep cut output:
/// `<tmp>/lathe-bash-output` ([`builtin_tools`](crate::tools::builtin_tools)
/// uses `<state>/bash-output` instead, see [`BashTool::with_output_dir`]).
pub fn default_output_dir() -> PathBuf {
    std::env::temp_dir().join("lathe-bash-output")
}

/// The Bash tool. Holds its limits and its session's background
/// [`Shells`] (whose directory also keeps cut output); partial output goes
/// to the call's `ToolContext::progress` while the command runs.
#[derive(Clone)]
pub struct BashTool {
    limits: BashLimits,
    shells: Arc<Shells>,
}

impl Default for BashTool {
    fn default() -> Self {
        Self::new(BashLimits::default())
    }
}

impl BashTool {
    /// A Bash tool with these limits, keeping cut output in
    /// [`default_output_dir`].
    pub fn new(limits: BashLimits) -> Self {
        Self {
            limits,
            shells: Shells::new(default_output_dir()),
        }
    }

    /// The same tool keeping the full output of cut commands (and of
    /// background commands) in `dir` (created on first use), one
    /// `<marker>.log` file per command, with background shells of its own.
    pub fn with_output_dir(self, dir: PathBuf) -> Self {
        self.with_shells(Shells::new(dir))
    }

    /// The same tool starting background commands in `shells` (shared
    /// with BashOutput and KillShell; its directory keeps cut output).
    pub fn with_shells(mut self, shells: Arc<Shells>) -> Self {
        self.shells = shells;
        self
    }

    /// Where the full output of cut commands goes.
    pub fn output_dir(&self) -> &Path {
        self.shells.dir()
    }

    /// The background shells this tool starts.
    pub fn shells(&self) -> &Arc<Shells> {
        &self.shells
    }

    /// The limits in force.
    pub fn limits(&self) -> &BashLimits {
        &self.limits
    }
}

#[async_trait]
impl TypedTool for BashTool {
    type Input = BashInput;
    type Plan = BashPlan;
    const NAME: &'static str = "Bash";
    const KIND: crate::tools::ToolKind = crate::tools::ToolKind::Execute;
    const ALIASES: &'static [&'static str] = &["bash", "shell", "run_command", "execute_command"];
    /// A safety net: the tool keeps its own result under
    /// [`BashLimits::max_output_chars`], which defaults to the same number.
    const MAX_RESULT_CHARS: Option<usize> = Some(BASH_MAX_RESULT_CHARS);

    fn description(&self) -> String {
        let l = &self.limits;
        fill(
            messages::DESCRIPTION,
            &[
                ("default", &l.default_timeout_ms.to_string()),
                ("max", &l.max_timeout_ms.to_string()),
                ("cap", &l.max_output_chars.to_string()),
            ],
        )
    }

    /// Conservative: see [`read_only::is_read_only_command`].
    fn is_read_only(&self, input: &BashInput) -> bool {
        read_only::is_read_only_command(&input.command)
    }

    /// Fills the default timeout so hooks and the chat see the real one.
    fn normalize(&self, mut input: BashInput, _root: &Path) -> BashInput {
        input.timeout.get_or_insert(self.limits.default_timeout_ms);
        input
    }

    /// Errors: [`messages::EMPTY_COMMAND`], [`messages::TIMEOUT_ZERO`],
    /// [`messages::TIMEOUT_TOO_LARGE`].
    async fn validate_input(
        &self,
        input: &BashInput,
        _ctx: &ToolContext,
    ) -> Result<BashPlan, ToolError> {
        let l = &self.limits;
        if input.command.trim().is_empty() {
            return Err(ToolError::new(messages::EMPTY_COMMAND));
        }
        match input.timeout {
            Some(0) => Err(ToolError::new(fill(
                messages::TIMEOUT_ZERO,
                &[
                    ("default", &l.default_timeout_ms.to_string()),
                    ("max", &l.max_timeout_ms.to_string()),
                ],
            ))),
            Some(t) if t > l.max_timeout_ms => Err(ToolError::new(fill(
                messages::TIMEOUT_TOO_LARGE,
                &[
                    ("timeout", &t.to_string()),
                    ("max", &l.max_timeout_ms.to_string()),
                ],
            ))),
            _ => Ok(BashPlan::default()),
        }
    }

    fn confine(&self, plan: &mut BashPlan, sandboxing: Sandboxing) {
        plan.sandboxing = Some(sandboxing);
    }

    /// Title `Bash: <whole command>` (newlines shown as `⏎`), so the user
    /// approves exactly what runs; `Bash (in the background): …` for
    /// `run_in_background`.
    fn permission_preview(
        &self,
        input: &BashInput,
        _plan: &BashPlan,
        root: &Path,
    ) -> PermissionPreview {
        PermissionPreview {
            title: match input.run_in_background {
                Some(true) => format!(
                    "Bash (in the background): {}",
                    input.command.replace('\n', " ⏎ ")
                ),
                _ => format!("Bash: {}", input.command.replace('\n', " ⏎ ")),
            },
            command: Some(CommandPreview {
                command: input.command.clone(),
                cwd: root.to_path_buf(),
                timeout_ms: input.timeout.unwrap_or(self.limits.default_timeout_ms),
                background: input.run_in_background == Some(true),
                sandbox: String::new(),
            }),
            ..PermissionPreview::default()
        }
    }

    fn command_line(&self, input: &BashInput) -> Option<String> {
        Some(input.command.clone())
    }

    /// Runs the command (see [`process::run`]). `Ok` for any exit code;
    /// errors: [`messages::TIMED_OUT`], [`messages::INTERRUPTED`] (both
    /// with the output so far), [`messages::SPAWN_FAILED`].
    async fn call(
        &self,
        input: BashInput,
        plan: BashPlan,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let l = &self.limits;
        let policy = match &plan.sandboxing {
            Some(Sandboxing::On(p)) => Some(p),
            _ => None,
        };
        let jail = jail_for(policy)?;
        if input.run_in_background == Some(true) {
            return self.start_in_background(&input, jail, ctx);
        }
        let timeout_ms = input.timeout.unwrap_or(l.default_timeout_ms);
        let spec = RunSpec {
            command: &input.command,
            cwd: &ctx.root,
            timeout: Duration::from_millis(timeout_ms),
            kill_grace: Duration::from_millis(l.kill_grace_ms),
            drain: Duration::from_millis(l.drain_ms),
            head_chars: l.side_chars(),
            tail_chars: l.side_chars(),
            output_path: self
                .shells
                .dir()
                .join(format!("{}.log", JobMarker::new().value())),
        };
        let outcome = process::run(&spec, jail, &ctx.cancel, ctx.progress.as_ref())
            .await
            .map_err(|e| {
                ToolError::new(fill(
                    messages::SPAWN_FAILED,
                    &[
                        ("cwd", &ctx.root.display().to_string()),
                        ("error", &e.to_string()),
                    ],
                ))
            })?;
        let output = render_output(outcome.output, &outcome.saved);
        match outcome.ending {
            Ending::Exited(status) => {
                let (footer, short) = exit_line(status);
                let blocked = match policy {
                    Some(p) if !status.success() => sandbox_note(&output, p, &ctx.root),
                    _ => None,
                };
                let (text, short) = match blocked {
                    Some(note) => (
                        format!("{output}\n\n{footer}\n\n{note}"),
                        format!("{short} · {}", messages::SANDBOX_STOPPED_SHORT),
                    ),
                    None => (format!("{output}\n\n{footer}"), short),
                };
                let mut out = ToolOutput::text(text, short);
                out.failed = !status.success();
                Ok(out)
            }
            Ending::TimedOut => Err(ToolError::new(fill(
                messages::TIMED_OUT,
                &[
                    ("timeout", &timeout_ms.to_string()),
                    ("max", &l.max_timeout_ms.to_string()),
                    ("output", &output),
                ],
            ))),
            Ending::Cancelled => Err(ToolError::new(fill(
                messages::INTERRUPTED,
                &[("output", &output)],
            ))),
        }
    }

    /// The command's first line, cut to [`DESCRIBE_MAX_CHARS`] characters
    /// with `…` (Claude Code shows the command, not the model's words
    /// about it), then the description as a shell comment when one is
    /// given and the whole fits: `cargo test  # Run the tests`.
    fn describe(&self, input: &BashInput, _root: &Path) -> String {
        let command = input.command.trim();
        let first = command.lines().next().unwrap_or_default().trim_end();
        let cut = first.chars().count() > DESCRIBE_MAX_CHARS || command.lines().nth(1).is_some();
        let mut shown: String = if cut {
            let mut s: String = first.chars().take(DESCRIBE_MAX_CHARS - 1).collect();
            s.push('…');
            s
        } else {
            first.to_string()
        };
        if let Some(d) = input.description.as_deref().map(str::trim) {
            let d = d.lines().next().unwrap_or_default();
            let with = format!("{shown}  # {d}");
            if !d.is_empty() && with.chars().count() <= DESCRIBE_MAX_CHARS {
                shown = with;
            }
        }
        shown
    }
}

impl BashTool {
    /// `run_in_background: true`: starts the job and returns its ID and
    /// output file ([`job_messages::BACKGROUND_STARTED`]) at once; no
    /// timeout applies. Errors: [`job_messages::BACKGROUND_FAILED`].
    fn start_in_background(
        &self,
        input: &BashInput,
        jail: Jail,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::new(fill(
                messages::INTERRUPTED,
                &[("output", messages::NO_OUTPUT)],
            )));
        }
        let job = self
            .shells
            .start_by(&input.command, &ctx.root, jail, ctx.by_user)
            .map_err(|e| {
                ToolError::new(fill(
                    job_messages::BACKGROUND_FAILED,
                    &[("error", &e.to_string())],
                ))
            })?;
        Ok(ToolOutput::text(
            fill(
                job_messages::BACKGROUND_STARTED,
                &[
                    ("id", job.id()),
                    ("path", &job.output_path().display().to_string()),
                ],
            ),
            format!("started {}", job.id()),
        ))
    }
}

/// The sandbox prepared for `policy` (none without one), with read-only
/// git's environment for a read-only command. Errors:
/// [`messages::SANDBOX_NOT_PREPARED`] (the command does not run).
fn jail_for(policy: Option<&Policy>) -> Result<Jail, ToolError> {
    let Some(policy) = policy else {
        return Ok(Jail::default());
    };
    let sandbox = crate::sandbox::prepare(policy).map_err(|e| {
        ToolError::new(fill(
            messages::SANDBOX_NOT_PREPARED,
            &[("error", &e.to_string())],
        ))
    })?;
    let env = match policy.tier {
        Tier::ReadOnly => read_only_env(),
        Tier::Workspace => Vec::new(),
    };
    Ok(Jail {
        sandbox: Some(sandbox),
        env,
    })
}

/// Environment variables of a read-only command: read-only git's
/// ([`git_env::read_only_git_env`]: no program a repository's config
/// names, no `index.lock`).
fn read_only_env() -> Vec<(String, String)> {
    git_env::read_only_git_env()
}

/// The note after a failed sandboxed command's output when the output
/// shows the sandbox stopping it ([`messages::SANDBOX_BLOCKED`]): the paths
/// it could not write or open, or the network.
pub fn sandbox_note(output: &str, policy: &Policy, cwd: &Path) -> Option<String> {
    let mut what = Vec::new();
    // Each path an error names, and whether it was "missing".
    let mut paths: Vec<(String, bool)> = Vec::new();
    for line in output.lines() {
        // A hidden folder shows empty: what was in it is "missing".
        let refused = [
            "Permission denied",
            "Read-only file system",
            "Operation not permitted",
            "No such file or directory",
        ]
        .iter()
        .any(|e| line.contains(e));
        if !refused {
            continue;
        }
        // bash's `/dev/tcp/HOST/PORT` is a connection, not a file.
        if let Some(p) =
            path_in(line).filter(|p| !p.starts_with("/dev/tcp/") && !p.starts_with("/dev/udp/"))
        {
            let missing = line.contains("No such file or directory");
            if !paths.iter().any(|(q, _)| *q == p) {
                paths.push((p, missing));
            }
        }
    }
    let mut named = 0;
    for (p, missing) in &paths {
        if named == 3 {
            break;
        }
        let path = folded(&cwd.join(p));
        let path = path.as_path();
        let p = &path.display().to_string();
        let hidden = policy.hidden.iter().any(|h| path.starts_with(h));
        let frozen =
            policy.tier == Tier::Workspace && policy.frozen.iter().any(|f| path.starts_with(f));
        let writable =
            policy.tier == Tier::Workspace && policy.writable.iter().any(|w| path.starts_with(w));
        if hidden {
            what.push(fill(messages::SANDBOX_HID, &[("path", p)]));
        } else if *missing {
            continue;
        } else if frozen {
            what.push(fill(messages::SANDBOX_FROZEN, &[("path", p)]));
        } else if !writable {
            what.push(fill(messages::SANDBOX_NO_WRITE, &[("path", p)]));
        } else {
            continue;
        }
        named += 1;
    }
    let network_words = [
        "/dev/tcp/",
        "/dev/udp/",
        "Could not resolve host",
        "Temporary failure in name resolution",
        "Network is unreachable",
        "socket: Operation not permitted",
        "Failed to connect",
        "Couldn't connect",
        "Connection refused",
        "Name or service not known",
    ];
    // Python: `PermissionError: [Errno 1] Operation not permitted` from a
    // `socket.socket()` the filter refused.
    let python_socket =
        output.contains("[Errno 1] Operation not permitted") && output.contains("socket");
    if !policy.network && (python_socket || network_words.iter().any(|w| output.contains(w))) {
        what.push(messages::SANDBOX_NO_NETWORK.to_string());
    }
    if what.is_empty() {
        return None;
    }
    Some(fill(
        messages::SANDBOX_BLOCKED,
        &[("what", &what.join("; "))],
    ))
}

/// `path` with `.` and `..` folded by name (the error named the path as
/// the command wrote it, relative to where it ran).
fn folded(path: &Path) -> std::path::PathBuf {
    let mut out = std::path::PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The path an error line names: quoted (`'…'`, `‘…’`, `"…"`) or a field
/// between `: ` separators that looks like a path (`bash: /etc/x:
/// Permission denied`, `cat: secret/s.txt: Permission denied`).
fn path_in(line: &str) -> Option<String> {
    for (open, close) in [('\'', '\''), ('‘', '’'), ('"', '"')] {
        if let Some(start) = line.find(open) {
            let rest = &line[start + open.len_utf8()..];
            if let Some(end) = rest.find(close) {
                let p = &rest[..end];
                if !p.is_empty() && !p.contains(char::is_whitespace) {
                    return Some(p.to_string());
                }
            }
        }
    }
    let fields: Vec<&str> = line.split(": ").collect();
    fields
        .iter()
        .skip(1)
        .take(fields.len().saturating_sub(2))
        .find(|f| {
            !f.is_empty()
                && !f.contains(char::is_whitespace)
                && (f.contains('/') || f.contains('.'))
        })
        .map(|f| f.to_string())
}

/// The output as the model reads it: the whole text, or head, the
/// [`messages::OUTPUT_SAVED`] marker naming the file with all of it (or
/// [`messages::OUTPUT_NOT_SAVED`] when it could not be written) and tail;
/// trailing newlines trimmed; [`messages::NO_OUTPUT`] when empty.
pub fn render_output(text: CappedText, saved: &Saved) -> String {
    if text.total_bytes == 0 {
        return messages::NO_OUTPUT.to_string();
    }
    let text = text.align_to_lines(LINE_ALIGN_BYTES);
    if text.is_complete() {
        return text.head.trim_end_matches('\n').to_string();
    }
    let omitted = text.omitted_bytes.to_string();
    let total = text.total_bytes.to_string();
    let marker = match saved {
        Saved::Failed { path, error } => fill(
            messages::OUTPUT_NOT_SAVED,
            &[
                ("omitted", &omitted),
                ("total", &total),
                ("path", &path.display().to_string()),
                ("error", error),
            ],
        ),
        Saved::Partial { path, saved_bytes } => fill(
            messages::OUTPUT_PARTLY_SAVED,
            &[
                ("omitted", &omitted),
                ("total", &total),
                ("saved", &saved_bytes.to_string()),
                ("path", &path.display().to_string()),
            ],
        ),
        Saved::File(path) => fill(
            messages::OUTPUT_SAVED,
            &[
                ("omitted", &omitted),
                ("total", &total),
                ("path", &path.display().to_string()),
            ],
        ),
        // Cannot happen for cut output (the sink saves it at finish); say
        // what is true anyway.
        Saved::NotNeeded => fill(
            messages::OUTPUT_NOT_SAVED,
            &[
                ("omitted", &omitted),
                ("total", &total),
                ("path", "-"),
                ("error", "no file"),
            ],
        ),
    };
    format!(
        "{}\n{marker}\n{}",
        text.head.trim_end_matches('\n'),
        text.tail.trim_end_matches('\n')
    )
}

/// The model-facing exit line and the short chat summary for `status`.
pub fn exit_line(status: ExitStatus) -> (String, String) {
    if let Some(code) = status.code() {
        let text = if code == 0 {
            messages::EXIT_CODE
        } else {
            messages::EXIT_CODE_FAILED
        };
        let code = code.to_string();
        return (fill(text, &[("code", &code)]), format!("exit {code}"));
    }
    let signal = status.signal().unwrap_or(0);
    let name = signal_name(signal);
    (
        fill(
            messages::KILLED_BY_SIGNAL,
            &[("signal", &signal.to_string()), ("name", &name)],
        ),
        format!("killed by {name}"),
    )
}

/// `SIGSEGV` for 11 and so on; `signal N` for numbers without a name here.
pub fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        _ => return format!("signal {signal}"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::schema_for;

    #[test]
    fn description_golden() {
        assert_eq!(
            TypedTool::description(&BashTool::default()),
            "\
Runs a bash command in the project root and returns its output (stdout and stderr together, in the order the command wrote them, as a terminal shows them) and its exit code.

- Each call starts a fresh non-interactive `bash -c` in the project root: `cd`, variables and other shell state do not carry over to the next call. Chain dependent steps in one command with `&&`.
- There is no terminal and stdin is empty, so a command that prompts gets end-of-file at once. Pass flags that avoid prompts (`-y`, `--yes`, `git commit -m \"...\"`). `GIT_EDITOR`, `EDITOR` and `VISUAL` are `true` and `PAGER` is `cat`, so nothing opens an editor or a pager.
- `timeout` is in milliseconds: default 120000, at most 600000. On timeout the command and every process it started are stopped and you get the output so far.
- For long-running jobs (servers, watchers) set `run_in_background: true`: the result is the job's ID at once, no timeout applies, BashOutput reads its new output and KillShell stops it. Do not add `&` to such a command. Background jobs are stopped when the session ends.
- Output longer than about 30000 characters is cut in the middle: the start and the end are shown, and all of it is saved to a file the result names. Read (with offset and limit) or Grep that file to see the rest; never run a command again just to see its output.
- The result ends with `Exit code N`, marked `(failure)` when N is not 0 (or the signal that killed the command). A non-zero exit code is reported, not treated as a failure of the tool: read the output to see what went wrong.
- For files, prefer the Read, Grep, Glob, Edit and Write tools over `cat`, `grep`, `find`, `sed` and `echo >`: they are faster and show the user what changed. Quote paths that contain spaces.
- Set `description` to a few words saying what the command does; the user sees it.
- Commands run in a sandbox: read-only commands can write nothing, others write only in the project and the temp dir, there is no network unless the user allowed it, and files the user's rules protect cannot be opened. When the sandbox stops a command, the result says what it stopped. Only if the command really must do that, run it again with `dangerouslyDisableSandbox: true`: the user is always asked first."
        );
    }

    #[test]
    fn schema_golden() {
        assert_eq!(
            schema_for::<BashInput>(),
            serde_json::json!({
                "type": "object",
                "properties": {
                    "command": {
                        "type": "string",
                        "description": "The command to run with `bash -c` in the project root."
                    },
                    "timeout": {
                        "type": ["integer", "null"],
                        "format": "uint64",
                        "minimum": 0,
                        "description": "Optional timeout in milliseconds; the tool description gives the default and the maximum."
                    },
                    "description": {
                        "type": ["string", "null"],
                        "description": "What the command does in 5-10 words, shown to the user (e.g. \"Run the unit tests\")."
                    },
                    "run_in_background": {
                        "type": ["boolean", "null"],
                        "description": "Set to true to run the command in the background: the result is its ID at once; read its output with BashOutput and stop it with KillShell."
                    },
                    "dangerouslyDisableSandbox": {
                        "type": ["boolean", "null"],
                        "description": "Set to true only to run again a command that failed because the sandbox stopped it (a write outside the project, the network) and must do that: it then runs outside the sandbox, and the user is always asked first. Leave it out otherwise."
                    }
                },
                "required": ["command"],
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn the_sandbox_note_names_what_was_stopped() {
        let policy = |tier: Tier, network: bool| Policy {
            tier,
            writable: vec![PathBuf::from("/p"), PathBuf::from("/tmp")],
            hidden: vec![PathBuf::from("/p/secret"), PathBuf::from("/p/.env")],
            frozen: vec![PathBuf::from("/p/.git/config")],
            network,
        };
        let ws = policy(Tier::Workspace, false);
        let ro = policy(Tier::ReadOnly, false);
        let cwd = Path::new("/p");
        let what = |out: &str, p: &Policy| {
            sandbox_note(out, p, cwd).map(|n| {
                n.trim_start_matches("[lathe's sandbox stopped this command: ")
                    .split(". If the command")
                    .next()
                    .unwrap_or_default()
                    .to_string()
            })
        };
        let cases: &[(&str, &Policy, Option<&str>)] = &[
            ("touch: cannot touch '/etc/x': Permission denied", &ws, Some("it may not write /etc/x")),
            ("bash: /home/u/.bashrc: Permission denied", &ws, Some("it may not write /home/u/.bashrc")),
            ("mkdir: cannot create directory ‘/opt/y’: Permission denied", &ws, Some("it may not write /opt/y")),
            ("touch: cannot touch 'new.txt': Permission denied", &ro, Some("it may not write /p/new.txt")),
            ("cat: secret/s.txt: Permission denied", &ws, Some("/p/secret/s.txt cannot be opened (a Read rule or a protected name covers it)")),
            ("bash: line 1: .env: Read-only file system", &ws, Some("/p/.env cannot be opened (a Read rule or a protected name covers it)")),
            ("curl: (6) Could not resolve host: example.com", &ws, Some("the network is off")),
            ("bash: connect: Operation not permitted\nbash: line 1: /dev/tcp/127.0.0.1/80: Operation not permitted", &ws, Some("the network is off")),
            ("bash: line 1: ../out.txt: Permission denied", &ws, Some("it may not write /out.txt")),
            ("bash: line 1: .git/config: Read-only file system", &ws, Some("/p/.git/config stays read-only in the sandbox (git hooks and config, .claude, .mcp.json, editor settings: what would run or grant something later)")),
            ("FileNotFoundError: [Errno 2] No such file or directory: 'secret/key.txt'", &ws, Some("/p/secret/key.txt cannot be opened (a Read rule or a protected name covers it)")),
            ("cat: nothere.txt: No such file or directory", &ws, None),
            ("  File \"<string>\", line 1, in <module>\n    s = socket.socket()\nPermissionError: [Errno 1] Operation not permitted", &ws, Some("the network is off")),
            // Inside the folders it may write: not the sandbox.
            ("touch: cannot touch '/p/x': Permission denied", &ws, None),
            ("curl: (6) Could not resolve host: example.com", &policy(Tier::Workspace, true), None),
            ("error: test failed", &ws, None),
        ];
        let wrong: Vec<String> = cases
            .iter()
            .filter_map(|(out, p, want)| {
                let got = what(out, p);
                (got.as_deref() != *want).then(|| format!("{out:?}: want {want:?}, got {got:?}"))
            })
            .collect();
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn defaults_are_claude_codes() {
        let l = BashLimits::default();
        assert_eq!(
            (l.default_timeout_ms, l.max_timeout_ms, l.max_output_chars),
            (120_000, 600_000, 30_000)
        );
        assert_eq!(l.side_chars(), 14_500);
    }

    #[test]
    fn describe_shows_the_command_and_the_description_when_it_fits() {
        let tool = BashTool::default();
        let input = |command: &str, description: Option<&str>| BashInput {
            command: command.into(),
            timeout: None,
            description: description.map(Into::into),
            run_in_background: None,
            dangerously_disable_sandbox: None,
        };
        let describe = |i: &BashInput| TypedTool::describe(&tool, i, Path::new("/p"));
        assert_eq!(
            describe(&input("cargo test", Some("Run tests"))),
            "cargo test  # Run tests"
        );
        assert_eq!(describe(&input("cargo test", Some("  "))), "cargo test");
        assert_eq!(describe(&input("ls\npwd", None)), "ls…");
        let long = "x".repeat(200);
        let shown = describe(&input(&long, Some("Make x")));
        assert_eq!(shown.chars().count(), DESCRIBE_MAX_CHARS);
        assert!(shown.starts_with("xxx") && shown.ends_with('…'), "{shown}");
        // A description that does not fit leaves the command whole.
        let cmd = "y".repeat(70);
        assert_eq!(describe(&input(&cmd, Some("Print many y letters"))), cmd);
    }

    #[test]
    fn render_cut_output() {
        let text = CappedText {
            head: "1\n2\n".into(),
            tail: "9\n10\n".into(),
            omitted_bytes: 7,
            total_bytes: 16,
            tail_starts_line: true,
        };
        assert_eq!(
            render_output(text, &Saved::File("/s/bash-output/7.log".into())),
            "1\n2\n[... 7 bytes of output omitted here (16 bytes in all). The full output is saved in /s/bash-output/7.log: Read it with offset and limit, or Grep it, to see the rest. Do not run the command again to see it.]\n9\n10"
        );
    }

    #[test]
    fn exit_lines() {
        assert_eq!(
            exit_line(ExitStatus::from_raw(3 << 8)),
            ("Exit code 3 (failure)".to_string(), "exit 3".to_string())
        );
        assert_eq!(
            exit_line(ExitStatus::from_raw(0)),
            ("Exit code 0".to_string(), "exit 0".to_string())
        );
        assert_eq!(
            exit_line(ExitStatus::from_raw(libc::SIGSEGV)),
            (
                "Killed by signal 11 (SIGSEGV)".to_string(),
                "killed by SIGSEGV".to_string()
            )
        );
    }
}
