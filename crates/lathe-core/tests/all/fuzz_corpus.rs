//! The fuzz corpus as ordinary tests: every file under
//! `fuzz/corpus/<target>/` — seeds and minimized findings of `cargo fuzz` —
//! runs through the same `lathe_core::fuzzing` check the fuzz target calls, so
//! `make test` replays them on stable Rust without libFuzzer. A second test
//! runs each check on deterministic mutations of the seeds (a small,
//! fixed property loop), so the checks keep meaning something on machines
//! without a nightly toolchain.

use std::fs;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use lathe_core::fuzzing::TARGETS;

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = lathe_test_support::workspace_root()
        .join("fuzz/corpus")
        .join(target);
    let mut files: Vec<(PathBuf, Vec<u8>)> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .map(|p| {
            let bytes = fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, bytes)
        })
        .collect();
    files.sort();
    files
}

/// Runs `check` on `data`; the panic message when it fails.
fn failure(check: fn(&[u8]), data: &[u8]) -> Option<String> {
    catch_unwind(AssertUnwindSafe(|| check(data)))
        .err()
        .map(|p| {
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panic".into())
        })
}

#[test]
fn every_corpus_file_passes_its_check() {
    let mut failed = Vec::new();
    for (target, check) in TARGETS {
        let files = corpus(target);
        assert!(!files.is_empty(), "fuzz/corpus/{target}/ has no seeds");
        for (path, data) in files {
            if let Some(why) = failure(*check, &data) {
                failed.push(format!("{}: {why}", path.display()));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// xorshift64*: the same mutations on every run and machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// One mutation of `data`, as libFuzzer's simplest ones: flip a bit,
/// insert or delete a byte, duplicate a slice, or splice in `other`.
fn mutate(rng: &mut Rng, data: &mut Vec<u8>, other: &[u8]) {
    const INTERESTING: &[u8] = b"\x00\xff\n\r\"\\{}[]()*:/~.";
    match rng.below(5) {
        0 if !data.is_empty() => {
            let i = rng.below(data.len());
            data[i] ^= 1 << rng.below(8);
        }
        1 => {
            let i = rng.below(data.len() + 1);
            let b = INTERESTING[rng.below(INTERESTING.len())];
            data.insert(i, b);
        }
        2 if !data.is_empty() => {
            let i = rng.below(data.len());
            data.remove(i);
        }
        3 if !data.is_empty() => {
            let a = rng.below(data.len());
            let b = (a + 1 + rng.below(16)).min(data.len());
            let piece = data[a..b].to_vec();
            let at = rng.below(data.len() + 1);
            data.splice(at..at, piece);
        }
        _ if !other.is_empty() => {
            let a = rng.below(other.len());
            let b = (a + 1 + rng.below(32)).min(other.len());
            let at = rng.below(data.len() + 1);
            data.splice(at..at, other[a..b].iter().copied());
        }
        _ => data.push(b'x'),
    }
}

/// Mutations per seed; a few thousand checks per target in all, well under
/// a second each in a debug build.
const ROUNDS: usize = 150;

#[test]
fn deterministic_mutations_of_the_seeds_hold_the_same_properties() {
    let mut failed = Vec::new();
    for (target, check) in TARGETS {
        let seeds = corpus(target);
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ target.len() as u64);
        for (i, (path, seed)) in seeds.iter().enumerate() {
            let other = &seeds[(i + 1) % seeds.len()].1;
            let mut data = seed.clone();
            for round in 0..ROUNDS {
                mutate(&mut rng, &mut data, other);
                if data.len() > 4096 {
                    data.truncate(4096);
                }
                if let Some(why) = failure(*check, &data) {
                    failed.push(format!(
                        "{target}: mutation {round} of {}: {why}\ninput: {:?}",
                        path.display(),
                        String::from_utf8_lossy(&data)
                    ));
                    break;
                }
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}
