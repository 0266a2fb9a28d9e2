//! `cargo fuzz run sse_splits`: [`lathe_core::fuzzing::sse_splits`] on the fuzzer's bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lathe_core::fuzzing::sse_splits(data));
