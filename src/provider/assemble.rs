//! assemble
