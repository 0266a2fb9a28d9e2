//! The setup() option list of `:help lathe-setup` (doc/lathe.txt) and the
//! LuaCATS classes of the options (lua/lathe/init.lua) are made from the
//! options' declaration, `lathe_core::config::settings::SETTINGS`: this
//! test renders both and compares them with the checked-in files, so they
//! cannot drift from what setup() takes. After a change to the
//! declaration, `BLESS=1 cargo nextest run -p lathe-core generated_settings`
//! rewrites them; review the diff (docs/testing.md, "Generated files").
//!
//! In lua/lathe/init.lua the block sits between `-- <generated: settings>`
//! and `-- </generated>`. A help file has no comments, so in doc/lathe.txt
//! it is found by its edges: from the first `*lathe-setup.…*` tag after the
//! `*lathe-setup*` heading to the blank line before `Example: >lua`.

use std::ops::Range;

use lathe_core::config::settings::{help_block, lua_block, LUA_BEGIN, LUA_END};

fn path(rel: &str) -> std::path::PathBuf {
    lathe_test_support::workspace_root().join(rel)
}

/// Where the generated block of `lua/lathe/init.lua` is: the lines between
/// the markers.
fn lua_range(text: &str) -> Range<usize> {
    let begin = text
        .find(&format!("{LUA_BEGIN}\n"))
        .unwrap_or_else(|| panic!("lua/lathe/init.lua: no `{LUA_BEGIN}` line"));
    let start = begin + LUA_BEGIN.len() + 1;
    let end = start
        + text[start..]
            .find(&format!("{LUA_END}\n"))
            .unwrap_or_else(|| panic!("lua/lathe/init.lua: no `{LUA_END}` line after the start"));
    start..end
}

/// Where the generated option list of `doc/lathe.txt` is.
fn help_range(text: &str) -> Range<usize> {
    let heading = text
        .find("*lathe-setup*\n")
        .expect("doc/lathe.txt: the `*lathe-setup*` heading");
    let tag = heading
        + text[heading..]
            .find("*lathe-setup.")
            .expect("doc/lathe.txt: a `*lathe-setup.…*` tag after the heading");
    let start = text[..tag].rfind('\n').map_or(0, |i| i + 1);
    let end = start
        + text[start..]
            .find("\n\nExample: >lua")
            .expect("doc/lathe.txt: `Example: >lua` after the option list")
        + 1;
    start..end
}

/// Compares the block at `range(file)` with `now`; `BLESS=1` writes `now`
/// there instead.
fn check(rel: &str, range: fn(&str) -> Range<usize>, now: &str) {
    let file = path(rel);
    let text = std::fs::read_to_string(&file).expect(rel);
    let r = range(&text);
    if std::env::var_os("BLESS").is_some() {
        let mut out = text.clone();
        out.replace_range(r, now);
        std::fs::write(&file, out).expect("bless");
        return;
    }
    pretty_assertions::assert_eq!(
        &text[r],
        now,
        "{rel}: the generated setup() options differ from config/settings.rs; edit the declaration (not the file), then run BLESS=1 cargo nextest run -p lathe-core generated_settings"
    );
}

#[test]
fn lua_classes_of_the_options_are_generated() {
    check("lua/lathe/init.lua", lua_range, &lua_block());
}

#[test]
fn help_option_list_is_generated() {
    check("doc/lathe.txt", help_range, &help_block());
}

#[test]
fn the_help_block_keeps_its_shape() {
    let help = help_block();
    for line in help.lines() {
        assert!(line.chars().count() <= 78, "longer than 78: {line:?}");
        // A line ending in ` >` would start an example block in help.
        assert!(!line.ends_with(" >"), "{line:?}");
    }
    for key in lathe_core::config::settings::keys() {
        let tag = format!("*lathe-setup.{key}*");
        assert!(help.contains(&tag), "{tag} missing");
    }
    let lua = lua_block();
    assert!(lua.contains("---@class lathe.SetupOpts\n"), "{lua}");
    assert!(
        lua.contains("---@field save? \"direct\"|\"write\" "),
        "{lua}"
    );
}
