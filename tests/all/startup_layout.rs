//! The library's load path is laid out together (build.rs,
//! `linker/startup.ld`; `require` + `setup()` ≤ +4 MB RSS): the
//! functions Neovim runs while it loads lathe sit in the `.text.lathe_startup`
//! section at the start of the code, so the pages Linux maps for them (64
//! KiB around each first touch) are few; code no load runs stays out. Reads
//! the library `cargo build -p lathe --lib` made (`make unit` builds it
//! first) with binutils' `readelf` and `nm`. Linux only.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![cfg(target_os = "linux")]

use lathe_test_support::tui;

use std::process::Command;

fn run(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd} (binutils) could not run: {e}"));
    assert!(out.status.success(), "{cmd} {args:?} failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Start and end address of section `name` in `lib`.
fn section(lib: &str, name: &str) -> Option<(u64, u64)> {
    run("readelf", &["-SW", lib]).lines().find_map(|l| {
        let l = l.replace("[ ", "[");
        let mut f = l.split_whitespace();
        f.next()?;
        if f.next()? != name {
            return None;
        }
        let _kind = f.next()?;
        let addr = u64::from_str_radix(f.next()?, 16).ok()?;
        let _off = f.next()?;
        let size = u64::from_str_radix(f.next()?, 16).ok()?;
        Some((addr, addr + size))
    })
}

/// Addresses of the defined functions whose demangled name starts with
/// `prefix` (every instance).
fn addresses(lib: &str, prefix: &str) -> Vec<u64> {
    run("nm", &["--defined-only", "-C", lib])
        .lines()
        .filter_map(|l| {
            let mut f = l.splitn(3, ' ');
            let addr = f.next()?;
            let kind = f.next()?;
            let name = f.next()?;
            (matches!(kind, "t" | "T") && name.starts_with(prefix))
                .then(|| u64::from_str_radix(addr, 16).ok())
                .flatten()
        })
        .collect()
}

#[test]
fn the_load_path_is_laid_out_together_and_the_rest_is_not() {
    let lib = tui::library();
    let lib = lib.to_str().expect("utf-8 path");
    let (start, end) = section(lib, ".text.lathe_startup")
        .expect("no .text.lathe_startup section: build.rs did not pass linker/startup.ld");
    let inside = |name: &str| {
        let a = addresses(lib, name);
        assert!(!a.is_empty(), "{name} is not in the library");
        a.iter().any(|&x| (start..end).contains(&x))
    };
    // What `require("lathe")` and `setup()` run.
    for f in [
        "luaopen_lathe",
        "lathe::api::try_install",
        "lathe::api::state::start_session",
        "lathe_core::config::Config::from_setup",
    ] {
        assert!(inside(f), "{f} is outside the load-path section");
    }
    // What only a request runs stays where the linker puts it.
    for f in [
        "lathe_core::agent::session::Session::build",
        "lathe_core::tools::builtin_tools",
    ] {
        assert!(!inside(f), "{f} (not on the load path) is in the section");
    }
}
