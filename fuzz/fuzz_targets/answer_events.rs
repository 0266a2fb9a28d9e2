//! `cargo fuzz run answer_events`: [`lathe_core::fuzzing::answer_events`] on the fuzzer's bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lathe_core::fuzzing::answer_events(data));
