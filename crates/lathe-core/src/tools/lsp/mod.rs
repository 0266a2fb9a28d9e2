//! The language-server tools (LspDefinition, LspReferences, LspHover,
//! LspSymbols), offered only while a server runs, and what they share
//! (`common`: input, position resolution, result formatting).

pub mod common;
pub mod definition;
pub mod hover;
pub mod references;
pub mod symbols;
