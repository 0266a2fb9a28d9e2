//! `jobs()`: the background Bash commands of this Neovim (`:Lathe jobs`,
//! `lathe.jobs()`), from [`lathe_core::tools::bash::shells::all_jobs`].

use mlua::{Lua, LuaSerdeExt as _, Value};
use serde_json::json;

use lathe_core::tools::bash::shells::{all_jobs, JobState};

/// `jobs()` → every background command of the live sessions, oldest
/// first: `{ id, command, state, exit_code, seconds, output }`. `state` is
/// "running", "exited" or "stopped"; `exit_code` is set when it exited
/// with one (a signal leaves it nil); `seconds` since it started;
/// `output` is the file with all its output.
pub fn jobs(lua: &Lua, (): ()) -> mlua::Result<Value> {
    let list: Vec<serde_json::Value> = all_jobs()
        .into_iter()
        .map(|j| {
            let (state, code) = match j.state {
                JobState::Running => ("running", None),
                JobState::Exited(s) => ("exited", s.code()),
                JobState::Killed => ("stopped", None),
            };
            json!({
                "id": j.id,
                "command": j.command,
                "state": state,
                "exit_code": code,
                "seconds": j.elapsed_secs,
                "output": j.output_path.display().to_string(),
            })
        })
        .collect();
    lua.to_value(&list)
}
