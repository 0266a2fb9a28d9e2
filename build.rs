//! Build script: lays out the `cdylib` with lathe's load path first
//! (`linker/startup.ld`, made by `linker/update-startup.sh`; issue 12:
//! `require` + `setup()` ≤ +4 MB RSS — Linux maps a library's code 64 KiB
//! around each page first touched, so a load path spread over 14 MB of code
//! costs far more than its own size). Linux only (GNU ld and lld read the
//! script's `INSERT BEFORE .text`); `LATHE_NO_STARTUP_LAYOUT=1` turns it
//! off, `LATHE_LINK_MAP=<file>` also writes the linker's map.
fn main() {
    println!("cargo:rerun-if-changed=linker/startup.ld");
    println!("cargo:rerun-if-env-changed=LATHE_NO_STARTUP_LAYOUT");
    println!("cargo:rerun-if-env-changed=LATHE_LINK_MAP");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if !linux || std::env::var_os("LATHE_NO_STARTUP_LAYOUT").is_some() {
        return;
    }
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("linker/startup.ld");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-T,{}", script.display());
    if let Ok(map) = std::env::var("LATHE_LINK_MAP") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-Map={map}");
    }
}
