//! `run_tool_use`: the gates of DESIGN.md §1.
