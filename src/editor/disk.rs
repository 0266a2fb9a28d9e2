//! `DiskEditor`: the [`Editor`](super::Editor) for files on disk.

/// Placeholder until the disk implementation lands.
#[derive(Debug, Default, Clone)]
pub struct DiskEditor;
