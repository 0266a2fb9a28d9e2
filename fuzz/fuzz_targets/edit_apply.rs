//! `cargo fuzz run edit_apply`: [`lathe_core::fuzzing::edit_apply`] on the fuzzer's bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lathe_core::fuzzing::edit_apply(data));
