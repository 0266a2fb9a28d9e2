//! edit
