//! `cargo fuzz run tool_input_json`: [`lathe_core::fuzzing::tool_input_json`] on the fuzzer's bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lathe_core::fuzzing::tool_input_json(data));
