//! Build script: lays out the `cdylib` with lathe's load path first
//! (`linker/startup.ld`, made by `linker/update-startup.sh`; the goal:
//! `require` + `setup()` ≤ +4 MB RSS — Linux maps a library's code 64 KiB
//! around each page first touched, so a load path spread over 14 MB of code
//! costs far more than its own size). Linux only (GNU ld and lld both read
//! the script's `INSERT BEFORE .text`). A build other than `--release` gets
//! only the patterns without a symbol hash (the hashes differ between
//! profiles, and every pattern costs link time); `LATHE_NO_STARTUP_LAYOUT=1`
//! turns the layout off, `LATHE_LINK_MAP=<file>` writes the linker's map.
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=linker/startup.ld");
    println!("cargo:rerun-if-env-changed=LATHE_NO_STARTUP_LAYOUT");
    println!("cargo:rerun-if-env-changed=LATHE_LINK_MAP");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if !linux || std::env::var_os("LATHE_NO_STARTUP_LAYOUT").is_some() {
        return;
    }
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("linker/startup.ld");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let script = if release {
        script
    } else {
        match hashless(&script) {
            Some(s) => s,
            None => return,
        }
    };
    println!("cargo:rustc-cdylib-link-arg=-Wl,-T,{}", script.display());
    if let Ok(map) = std::env::var("LATHE_LINK_MAP") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-Map={map}");
    }
}

/// `script` without the lines naming a function by its exact hash (a
/// legacy-mangled `17h<16 hex>E`), written to `OUT_DIR`; `None` when it
/// cannot be read or written (the build goes on without the layout).
fn hashless(script: &std::path::Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(script).ok()?;
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !(l.trim_start().starts_with("*(") && has_hash(l)))
        .collect();
    let out = PathBuf::from(std::env::var_os("OUT_DIR")?).join("startup.ld");
    std::fs::write(&out, kept.join("\n") + "\n").ok()?;
    Some(out)
}

/// `true` when `line` holds `17h` followed by 16 hex digits and `E`.
fn has_hash(line: &str) -> bool {
    line.match_indices("17h").any(|(i, _)| {
        let rest = &line.as_bytes()[i + 3..];
        rest.len() > 16 && rest[..16].iter().all(u8::is_ascii_hexdigit) && rest[16] == b'E'
    })
}
