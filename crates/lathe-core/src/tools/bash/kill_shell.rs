//! `KillShell`: stops a background Bash command and everything it started
//! (Claude Code's KillShell contract: `{shell_id}`). Only shells of the
//! session's own [`Shells`] can be named. Texts in
//! [`crate::tools::bash::job_messages`].

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::permissions::PermissionPreview;
use crate::text::fill;
use crate::tools::bash::bash_output::{status_line, unknown_shell};
use crate::tools::bash::job_messages as m;
use crate::tools::bash::shells::Shells;
use crate::tools::bash::BashLimits;
use crate::tools::{ToolContext, ToolError, ToolOutput, TypedTool};

/// Input of `KillShell`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KillShellInput {
    /// The ID Bash returned for the background command (`bash_N`).
    pub shell_id: String,
}

/// The KillShell tool over its session's background shells.
#[derive(Clone)]
pub struct KillShellTool {
    shells: Arc<Shells>,
    grace: Duration,
}

impl KillShellTool {
    /// Stops jobs of `shells`: SIGTERM, then SIGKILL after Bash's grace
    /// time ([`BashLimits::kill_grace_ms`]).
    pub fn new(shells: Arc<Shells>) -> Self {
        Self {
            shells,
            grace: Duration::from_millis(BashLimits::default().kill_grace_ms),
        }
    }
}

#[async_trait]
impl TypedTool for KillShellTool {
    type Input = KillShellInput;
    type Plan = ();
    const NAME: &'static str = "KillShell";
    const KIND: crate::tools::ToolKind = crate::tools::ToolKind::Execute;
    /// Only rules naming it judge its calls, matched against its input.
    const RULE_FAMILY: crate::permissions::RuleFamily = crate::permissions::RuleFamily::Input;
    /// Stopping a job of this session changes nothing the session did not
    /// start: read-only (deny and ask rules still apply; plan mode allows
    /// it). But a job the user started (`lathe.tool()`) is not the model's
    /// to stop without asking: the permission gate asks
    /// `is_read_only_to`. An id of no job of this session is not
    /// read-only (validation refuses it anyway).
    const READ_ONLY: crate::tools::ReadOnlyKind = crate::tools::ReadOnlyKind::PerInput;
    const ALIASES: &'static [&'static str] = &["kill_shell"];

    fn is_read_only(&self, input: &KillShellInput) -> bool {
        self.shells.get(&input.shell_id).is_some()
    }

    /// To the permission gate: the user stops any job of this session
    /// without an ask (`x` in `:Lathe jobs`); the model, only the jobs it
    /// started.
    fn is_read_only_to(&self, input: &KillShellInput, by_user: bool) -> bool {
        self.shells
            .get(&input.shell_id)
            .is_some_and(|j| by_user || !j.started_by_user())
    }

    fn description(&self) -> String {
        m::KILL_SHELL_DESCRIPTION.to_string()
    }

    /// Errors: [`m::UNKNOWN_SHELL`] for an id this session did not start.
    async fn validate_input(
        &self,
        input: &KillShellInput,
        _ctx: &ToolContext,
    ) -> Result<(), ToolError> {
        match self.shells.get(&input.shell_id) {
            Some(_) => Ok(()),
            None => Err(unknown_shell(&self.shells, &input.shell_id)),
        }
    }

    /// Title `KillShell: bash_N (command)`.
    fn permission_preview(
        &self,
        input: &KillShellInput,
        _plan: &(),
        _root: &Path,
    ) -> PermissionPreview {
        let command = self
            .shells
            .get(&input.shell_id)
            .map(|j| j.command().replace('\n', " ⏎ "))
            .unwrap_or_default();
        PermissionPreview {
            title: format!("KillShell: {} ({command})", input.shell_id),
            ..PermissionPreview::default()
        }
    }

    /// Errors: [`m::UNKNOWN_SHELL`], [`m::NOT_RUNNING`].
    async fn call(
        &self,
        input: KillShellInput,
        _plan: (),
        _ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let Some(job) = self.shells.get(&input.shell_id) else {
            return Err(unknown_shell(&self.shells, &input.shell_id));
        };
        if !job.kill(self.grace).await {
            let status = status_line(job.state(), job.id(), job.elapsed().as_secs());
            return Err(ToolError::new(fill(
                m::NOT_RUNNING,
                &[("id", job.id()), ("status", &status)],
            )));
        }
        Ok(ToolOutput::text(
            fill(
                m::KILLED,
                &[
                    ("id", job.id()),
                    ("command", job.command()),
                    ("path", &job.output_path().display().to_string()),
                ],
            ),
            "stopped",
        ))
    }

    fn describe(&self, input: &KillShellInput, _root: &Path) -> String {
        input.shell_id.clone()
    }
}
