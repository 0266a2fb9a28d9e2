//! Builds this crate as the library `#[nvim_oxi::test]` functions load into
//! Neovim (`target/nvim_oxi_tests/lathe-nvim-tests/<profile>/`).
//!
//! `nvim_oxi::tests::build()` ignores the exit status of its inner
//! `cargo build` (docs/architecture.md, "Threads and the FFI boundary"):
//! after a compile error the tests would run an old library. So after
//! building we check that the library exists and is newer than every source
//! file it is built from, and fail the build otherwise. (nvim-oxi's `rerun-if-changed` names a quoted path that never
//! exists, so this script runs on every build.)

use std::path::{Path, PathBuf};
use std::time::SystemTime;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The inner build runs this script again with the guard variable set;
    // there `build()` returns at once and there is nothing to check.
    let inner = std::env::var_os("NVIM_OXI_BUILDING_TESTS").is_some();
    nvim_oxi::tests::build()?;
    if inner {
        return Ok(());
    }
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let root = here.join("../..");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let lib = target
        .join("nvim_oxi_tests/lathe-nvim-tests")
        .join(std::env::var("PROFILE")?)
        .join(format!(
            "{}lathe_nvim_tests{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        ));
    let built = std::fs::metadata(&lib)
        .and_then(|m| m.modified())
        .map_err(|e| {
            format!(
                "the Neovim test library {} was not built ({e}): the inner `cargo build` failed; \
             run `NVIM_OXI_BUILDING_TESTS=1 cargo build -p lathe-nvim-tests` to see why",
                lib.display()
            )
        })?;
    let mut newest = SystemTime::UNIX_EPOCH;
    for src in [root.join("src"), here.join("src")] {
        newest_in(&src, &mut newest);
    }
    for f in [
        root.join("Cargo.toml"),
        here.join("Cargo.toml"),
        root.join("Cargo.lock"),
    ] {
        newest_in(&f, &mut newest);
    }
    if newest > built {
        return Err(format!(
            "the Neovim test library {} is older than its sources: the inner `cargo build` failed; \
             run `NVIM_OXI_BUILDING_TESTS=1 cargo build -p lathe-nvim-tests` to see why",
            lib.display()
        )
        .into());
    }
    Ok(())
}

/// Raises `newest` to the latest modification time under `path`.
fn newest_in(path: &Path, newest: &mut SystemTime) {
    let Ok(meta) = std::fs::metadata(path) else {
        return;
    };
    if meta.is_dir() {
        if let Ok(entries) = std::fs::read_dir(path) {
            for e in entries.flatten() {
                newest_in(&e.path(), newest);
            }
        }
    } else if let Ok(m) = meta.modified() {
        if m > *newest {
            *newest = m;
        }
    }
}
