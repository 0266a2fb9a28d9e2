//! `BashOutput`: the new output of a background Bash command (Claude
//! Code's BashOutput contract: `{bash_id, filter?}`). Read-only and safe
//! to run with other calls. The shells are the session's
//! ([`crate::tools::bash::shells`]); texts in
//! [`crate::tools::bash::job_messages`].

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::permissions::PermissionPreview;
use crate::text::fill;
use crate::tools::bash::job_messages as m;
use crate::tools::bash::shells::{JobState, Shells};
use crate::tools::bash::spill::Saved;
use crate::tools::bash::{exit_line, render_output, BashLimits, BASH_MAX_RESULT_CHARS};
use crate::tools::{ToolContext, ToolError, ToolOutput, TypedTool};

/// Input of `BashOutput`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashOutputInput {
    /// The ID Bash returned for a command started with
    /// `run_in_background: true` (`bash_N`).
    pub bash_id: String,
    /// Optional regular expression: only new lines that match are
    /// returned; the others are skipped for later reads (they stay in the
    /// output file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
}

/// The BashOutput tool over its session's background shells.
#[derive(Clone)]
pub struct BashOutputTool {
    shells: Arc<Shells>,
    side_chars: usize,
}

impl BashOutputTool {
    /// Reads jobs of `shells`, showing at most Bash's default cap of new
    /// output per call.
    pub fn new(shells: Arc<Shells>) -> Self {
        Self {
            shells,
            side_chars: BashLimits::default().side_chars(),
        }
    }
}

/// The status line of a job for the model.
pub fn status_line(state: JobState, id: &str, secs: u64) -> String {
    match state {
        JobState::Running => fill(
            m::STATUS_RUNNING,
            &[("id", id), ("secs", &secs.to_string())],
        ),
        JobState::Killed => m::STATUS_KILLED.to_string(),
        JobState::Exited(status) => match status.code() {
            Some(0) => fill(m::STATUS_EXITED, &[("code", "0")]),
            Some(code) => fill(m::STATUS_FAILED, &[("code", &code.to_string())]),
            None => {
                use std::os::unix::process::ExitStatusExt as _;
                let signal = status.signal().unwrap_or(0);
                fill(
                    m::STATUS_SIGNALLED,
                    &[
                        ("signal", &signal.to_string()),
                        ("name", &crate::tools::bash::signal_name(signal)),
                    ],
                )
            }
        },
    }
}

/// [`m::UNKNOWN_SHELL`] for `id`, listing the session's shells.
pub fn unknown_shell(shells: &Shells, id: &str) -> ToolError {
    let ids: Vec<String> = shells.list().into_iter().map(|j| j.id).collect();
    let known = if ids.is_empty() {
        m::NO_SHELLS.to_string()
    } else {
        ids.join(", ")
    };
    ToolError::new(fill(m::UNKNOWN_SHELL, &[("id", id), ("known", &known)]))
}

#[async_trait]
impl TypedTool for BashOutputTool {
    type Input = BashOutputInput;
    type Plan = Option<regex::bytes::Regex>;
    const NAME: &'static str = "BashOutput";
    const KIND: crate::tools::ToolKind = crate::tools::ToolKind::Read;
    /// Only rules naming it judge its calls, matched against its input.
    const RULE_FAMILY: crate::permissions::RuleFamily = crate::permissions::RuleFamily::Input;
    const ALIASES: &'static [&'static str] = &["bash_output"];
    const MAX_RESULT_CHARS: Option<usize> = Some(BASH_MAX_RESULT_CHARS);

    fn description(&self) -> String {
        m::BASH_OUTPUT_DESCRIPTION.to_string()
    }

    /// The plan is the compiled filter. Errors: [`m::BAD_FILTER`],
    /// [`m::UNKNOWN_SHELL`].
    async fn validate_input(
        &self,
        input: &BashOutputInput,
        _ctx: &ToolContext,
    ) -> Result<Option<regex::bytes::Regex>, ToolError> {
        let filter =
            match &input.filter {
                Some(f) if !f.is_empty() => Some(regex::bytes::Regex::new(f).map_err(|e| {
                    ToolError::new(fill(m::BAD_FILTER, &[("error", &e.to_string())]))
                })?),
                _ => None,
            };
        if self.shells.get(&input.bash_id).is_none() {
            return Err(unknown_shell(&self.shells, &input.bash_id));
        }
        Ok(filter)
    }

    fn permission_preview(
        &self,
        input: &BashOutputInput,
        _plan: &Option<regex::bytes::Regex>,
        _root: &Path,
    ) -> PermissionPreview {
        PermissionPreview {
            title: format!("BashOutput: {}", input.bash_id),
            ..PermissionPreview::default()
        }
    }

    /// New output and the status ([`m::BASH_OUTPUT_RESULT`]). Errors:
    /// [`m::UNKNOWN_SHELL`], [`m::READ_FAILED`].
    async fn call(
        &self,
        input: BashOutputInput,
        filter: Option<regex::bytes::Regex>,
        _ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let Some(job) = self.shells.get(&input.bash_id) else {
            return Err(unknown_shell(&self.shells, &input.bash_id));
        };
        let path = job.output_path().display().to_string();
        let new = job
            .read_new(self.side_chars, self.side_chars, filter)
            .await
            .map_err(|e| ToolError::new(fill(m::READ_FAILED, &[("path", &path), ("error", &e)])))?;
        let output = if new.text.total_bytes == 0 {
            m::NO_NEW_OUTPUT.to_string()
        } else {
            render_output(new.text, &Saved::File(job.output_path().to_path_buf()))
        };
        let status = status_line(new.state, job.id(), job.elapsed().as_secs());
        let summary = match new.state {
            JobState::Running => "running".to_string(),
            JobState::Killed => "stopped".to_string(),
            JobState::Exited(s) => exit_line(s).1,
        };
        Ok(ToolOutput::text(
            fill(
                m::BASH_OUTPUT_RESULT,
                &[("output", &output), ("status", &status), ("path", &path)],
            ),
            summary,
        ))
    }

    fn describe(&self, input: &BashOutputInput, _root: &Path) -> String {
        match &input.filter {
            Some(f) => format!("{} /{f}/", input.bash_id),
            None => input.bash_id.clone(),
        }
    }
}
