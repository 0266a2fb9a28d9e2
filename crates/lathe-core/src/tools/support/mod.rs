//! What the tools share and no tool owns: path resolution, the read record
//! of each file, numbered lines, diffs, text matching, the search walk over
//! files and unsaved buffers, diagnostics after an edit, how long spilled
//! outputs are kept, and what a command tool is told about the sandbox.

pub mod diff;
pub mod file_common;
pub mod file_state;
pub mod new_diagnostics;
pub mod numbered;
pub mod paths;
pub mod retention;
pub mod sandboxing;
pub mod search_unsaved;
pub mod search_walk;
pub mod text_match;
