//! `cargo fuzz run permission_rule`: [`lathe_core::fuzzing::permission_rule`] on the fuzzer's bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lathe_core::fuzzing::permission_rule(data));
