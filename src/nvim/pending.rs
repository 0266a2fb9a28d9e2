//! Stand-in until the disk editor is merged (another helper builds it);
//! [`super::state`] picks it in one place.

use std::path::Path;

use async_trait::async_trait;

use crate::editor::{Document, Editor, EditorError, WriteOutcome, WriteRequest};

/// An editor for files not loaded in a buffer that refuses everything.
pub struct UnbuiltDisk;

#[async_trait]
impl Editor for UnbuiltDisk {
    async fn read(&self, path: &Path) -> Result<Document, EditorError> {
        Err(EditorError::Unavailable(format!(
            "{} is not open in Neovim and this build cannot read files from disk yet",
            path.display()
        )))
    }

    async fn write(&self, path: &Path, _req: WriteRequest) -> Result<WriteOutcome, EditorError> {
        Err(EditorError::Unavailable(format!(
            "{} is not open in Neovim and this build cannot write files on disk yet",
            path.display()
        )))
    }
}
