-- The plugin's version: the one `lathe.core.version()` must report (the
-- library's Cargo.toml `version`; tests/all/install.rs keeps the two equal) and
-- the release whose prebuilt library `:Lathe build` downloads. See
-- `:help lathe-install`.
return "0.1.0"
