//! How gate 6 tells a command tool (Bash) what the permission decision
//! assumed: run inside the sandbox with this policy, or outside it and why
//! (docs/sandbox.md, "The sandbox").

use crate::sandbox::{Policy, Tier};

/// Where a command runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sandboxing {
    /// Inside the operating-system sandbox, held to `Policy`.
    On(Policy),
    /// Outside it: the user allowed that (`dangerouslyDisableSandbox`), or
    /// the sandbox is off here and a rule, the mode or the user allowed
    /// the call anyway. Why, in words.
    Off(String),
}

/// The float's line for a command that runs inside the sandbox, read-only.
pub const SANDBOX_READ_ONLY: &str = "sandbox: on · read-only · network {network}";

/// The float's line for a command that runs inside the sandbox, writing.
pub const SANDBOX_WORKSPACE: &str =
    "sandbox: on · writes only in the project, the temp dir and lathe's folders · network {network}";

/// The float's line for a command that runs outside the sandbox. `{why}`.
pub const SANDBOX_OFF: &str = "sandbox: off · {why}";

impl Sandboxing {
    /// One line for the float and the chat: what the command is held to.
    pub fn describe(&self) -> String {
        let network = |p: &Policy| if p.network { "on" } else { "off" };
        match self {
            Sandboxing::On(p) if p.tier == Tier::ReadOnly => {
                crate::text::fill(SANDBOX_READ_ONLY, &[("network", network(p))])
            }
            Sandboxing::On(p) => crate::text::fill(SANDBOX_WORKSPACE, &[("network", network(p))]),
            Sandboxing::Off(why) => crate::text::fill(SANDBOX_OFF, &[("why", why)]),
        }
    }
}
