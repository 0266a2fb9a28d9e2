//! `cargo fuzz run permission_rule`: [`lathe::fuzzing::permission_rule`] on the fuzzer's bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lathe::fuzzing::permission_rule(data));
