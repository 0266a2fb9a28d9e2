//! Stand-ins until the Anthropic provider and the disk editor are merged
//! (other helpers build them); [`super::state`] picks these in one place.

use std::path::Path;

use async_trait::async_trait;

use crate::editor::{Document, Editor, EditorError, WriteOutcome, WriteRequest};
use crate::protocol::MessagesRequest;
use crate::provider::{EventStream, Provider, ProviderError};

/// A provider that fails every request (no HTTP client built in yet).
pub struct UnbuiltProvider;

#[async_trait]
impl Provider for UnbuiltProvider {
    async fn stream(&self, _req: &MessagesRequest) -> Result<EventStream, ProviderError> {
        Err(ProviderError::Transport(
            "this lathe build has no Anthropic provider yet".into(),
        ))
    }
}

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
