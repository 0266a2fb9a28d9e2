//! Builds this crate as the library `#[nvim_oxi::test]` functions load into
//! Neovim (`<target>/nvim_oxi_tests/lathe-nvim-tests/<profile>/`), as
//! `nvim_oxi::tests::build()` (nvim-oxi 0.6) does, with three differences:
//!
//! - It says which files it depends on (`rerun-if-changed`), so it runs only
//!   when one changed. nvim-oxi's names a quoted path that never exists, so
//!   cargo ran it — and rebuilt this crate — on every build.
//! - The inner `cargo build` runs without clippy's wrapper. Under `cargo
//!   clippy` nvim-oxi's inherited `RUSTC_WORKSPACE_WRAPPER=clippy-driver`,
//!   so `make lint` and `make unit` rebuilt lathe and this crate in the
//!   inner target directory one after the other, every time. The inner
//!   library is the same whichever outer command asks for it; clippy checks
//!   this crate in the outer build.
//! - It fails when the inner build failed or left no library: nvim-oxi
//!   ignores its exit status, and the tests would run an old library
//!   (docs/threads.md, "Threads and the FFI boundary").
//!
//! The library itself is not among the files it watches: the inner build
//! writes it while this script runs, and cargo would take that for a change
//! and run the script once more on the next build. After deleting the inner
//! target directory, `touch tests/nvim/build.rs`.

use std::path::PathBuf;
use std::process::Command;

/// The guard nvim-oxi's test build and its runtime agree on: set in the
/// inner build, whose run of this script then does nothing.
const GUARD: &str = "NVIM_OXI_BUILDING_TESTS";

/// The package name, as nvim-oxi's runtime finds the library and the
/// profile variable (`NVIM_OXI_TEST_BUILD_PROFILE_<NAME>`).
const PACKAGE: &str = "lathe-nvim-tests";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::var_os(GUARD).is_some() {
        return Ok(());
    }
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let root = here.join("../..");
    let profile = std::env::var("PROFILE")?;
    // Where nvim-oxi's runtime looks: the workspace's target directory.
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("nvim_oxi_tests")
        .join(PACKAGE);
    let lib = target.join(&profile).join(format!(
        "{}{}{}",
        std::env::consts::DLL_PREFIX,
        PACKAGE.replace('-', "_"),
        std::env::consts::DLL_SUFFIX
    ));

    // What the library is built from: lathe, the scripted model server and
    // this crate, their manifests and the lock file.
    let sources = [
        root.join("src"),
        root.join("Cargo.toml"),
        root.join("Cargo.lock"),
        root.join("tests/mock-llm/src"),
        root.join("tests/mock-llm/Cargo.toml"),
        here.join("src"),
        here.join("Cargo.toml"),
        here.join("build.rs"),
    ];
    for s in &sources {
        println!("cargo:rerun-if-changed={}", s.display());
    }
    println!(
        "cargo:rustc-env=NVIM_OXI_TEST_BUILD_PROFILE_{}={profile}",
        PACKAGE.to_ascii_uppercase().replace('-', "_")
    );

    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .current_dir(&here)
        .arg("build")
        .args(match profile.as_str() {
            "debug" => vec![],
            "release" => vec!["--release".to_string()],
            other => vec!["--profile".to_string(), other.to_string()],
        })
        .arg("--target-dir")
        .arg(&target)
        .env(GUARD, "1")
        .env_remove("RUSTC_WORKSPACE_WRAPPER");
    let status = build.status().map_err(|e| {
        format!("cannot run the inner `cargo build` of the Neovim test library: {e}")
    })?;
    let rerun = "run `NVIM_OXI_BUILDING_TESTS=1 cargo build -p lathe-nvim-tests` to see why";
    if !status.success() {
        return Err(format!(
            "the inner `cargo build` of the Neovim test library {} failed ({status}); {rerun}",
            lib.display()
        )
        .into());
    }
    if let Err(e) = std::fs::metadata(&lib) {
        return Err(format!(
            "the Neovim test library {} was not built ({e}); {rerun}",
            lib.display()
        )
        .into());
    }
    Ok(())
}
