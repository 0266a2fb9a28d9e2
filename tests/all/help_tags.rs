//! `:help lathe` has a tag for every `:Lathe` subcommand (the completion
//! list in plugin/lathe.lua), every `setup()` option (the names the option
//! parser accepts, `lathe_core::config::keys::setup_keys`, and the Lua-only ones
//! of `lathe.SetupOpts` in lua/lathe/init.lua), every `<Plug>` mapping,
//! every function of `require("lathe")`, every highlight group and every
//! `User` event, so a new one cannot ship undocumented. The tags are the
//! ones Neovim's own `:helptags` finds: a tag in what help reads as an
//! example block (after a line ending in ` >`) does not count.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(rel: &str) -> String {
    std::fs::read_to_string(format!("{ROOT}/{rel}")).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The tags `:helptags` makes of doc/lathe.txt (first field of each line of
/// the generated `tags` file), run on a copy so the repo's doc/tags stays
/// as `make` left it. Needs `nvim` on PATH (`.venv/bin`, as for every
/// Neovim test).
fn helptags() -> BTreeSet<String> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        format!("{ROOT}/doc/lathe.txt"),
        dir.path().join("lathe.txt"),
    )
    .unwrap();
    let out = Command::new("nvim")
        .args(["--headless", "-u", "NONE", "-i", "NONE", "-c"])
        .arg(format!("helptags {}", dir.path().display()))
        .args(["-c", "if v:errmsg != '' | cquit 1 | endif", "-c", "qall!"])
        .output()
        .expect("nvim on PATH (.venv/bin)");
    assert!(
        out.status.success(),
        ":helptags failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(dir.path().join("tags"))
        .unwrap()
        .lines()
        .filter_map(|l| l.split('\t').next())
        .map(str::to_string)
        .collect()
}

/// The `---@field` names of `---@class {class}` in a LuaCATS file.
fn lua_fields(lua: &str, class: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in lua.lines() {
        if let Some(c) = line.strip_prefix("---@class ") {
            inside = c.split_whitespace().next() == Some(class);
        } else if inside {
            match line.strip_prefix("---@field ") {
                Some(f) => out.push(
                    f.split_whitespace()
                        .next()
                        .unwrap()
                        .trim_end_matches('?')
                        .to_string(),
                ),
                None => inside = false,
            }
        }
    }
    out
}

/// Every `word` of `text` that starts with `prefix` and ends before `end`
/// (e.g. the `<Plug>(lathe-...)` maps of a file), once each.
fn spans(text: &str, prefix: &str, end: char) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find(prefix) {
        let after = &rest[i..];
        match after.find(end) {
            Some(j) => {
                out.insert(after[..=j].to_string());
                rest = &after[j..];
            }
            None => break,
        }
    }
    out
}

/// The strings of `local subcommands = { ... }` in plugin/lathe.lua.
fn subcommands(plugin: &str) -> Vec<String> {
    let start = plugin
        .find("local subcommands =")
        .expect("plugin/lathe.lua: `local subcommands = { ... }` (the :Lathe completion list) moved; point this test at it");
    let body = &plugin[start..];
    let body = &body[body.find('{').expect("the subcommands list")..];
    let body = &body[..body.find('}').expect("end of the subcommands list")];
    body.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// What is missing from `have`: the tag `tag(name)` for each name.
fn missing(names: &[String], tag: impl Fn(&str) -> String, have: &BTreeSet<String>) -> Vec<String> {
    names
        .iter()
        .map(|n| tag(n))
        .filter(|t| !have.contains(t))
        .collect()
}

#[test]
fn every_subcommand_and_setup_option_has_a_help_tag() {
    let have = helptags();
    let plugin = read("plugin/lathe.lua");
    let init = read("lua/lathe/init.lua");
    let subs = subcommands(&plugin);
    assert!(subs.len() >= 8, "subcommands found: {subs:?}");
    let mut keys = lathe_core::config::keys::setup_keys();
    assert!(keys.len() >= 20, "setup keys found: {keys:?}");
    let lua_keys = lua_fields(&init, "lathe.SetupOpts");
    assert!(lua_keys.contains(&"model".to_string()), "{lua_keys:?}");
    keys.extend(lua_keys);
    let maps: Vec<String> = spans(&plugin, "<Plug>(lathe-", ')').into_iter().collect();
    assert!(maps.len() >= 7, "maps found: {maps:?}");
    let functions: Vec<String> = init
        .lines()
        .filter_map(|l| l.strip_prefix("function M."))
        .map(|l| l.split('(').next().unwrap().to_string())
        .collect();
    let groups: Vec<String> = lathe::ui::chat::lines::HIGHLIGHTS
        .iter()
        .map(|(g, _)| g.to_string())
        .collect();
    let events: Vec<String> = [
        lathe::ui::user_events::TURN_START,
        lathe::ui::user_events::TOOL_START,
        lathe::ui::user_events::TOOL_DONE,
        lathe::ui::user_events::TURN_DONE,
        lathe::ui::float::ASK_EVENT,
    ]
    .map(String::from)
    .to_vec();
    let mut gaps = missing(&subs, |s| format!(":Lathe-{s}"), &have);
    gaps.extend(missing(&keys, |k| format!("lathe-setup.{k}"), &have));
    gaps.extend(missing(&maps, str::to_string, &have));
    gaps.extend(missing(&functions, |f| format!("lathe.{f}()"), &have));
    gaps.extend(missing(&groups, |g| format!("hl-{g}"), &have));
    gaps.extend(missing(&events, str::to_string, &have));
    gaps.sort();
    gaps.dedup();
    assert!(
        gaps.is_empty(),
        "doc/lathe.txt has no tag for: {}\n(add `*tag*` right-aligned above the entry, outside any example block)",
        gaps.iter()
            .map(|t| format!("*{t}*"))
            .collect::<Vec<_>>()
            .join(" ")
    );
}

#[test]
fn the_tag_reader_and_list_reader_work() {
    let lua = "---@class lathe.SetupOpts\n---@field model? string Id.\n---@field cwd? string Root.\n\n---@class other\n---@field x? string";
    assert_eq!(lua_fields(lua, "lathe.SetupOpts"), vec!["model", "cwd"]);
    let maps = spans(
        "map('<Plug>(lathe-a)') map(\"<Plug>(lathe-b-c)\") <Plug>(lathe-a)",
        "<Plug>(lathe-",
        ')',
    );
    assert_eq!(
        maps.into_iter().collect::<Vec<_>>(),
        vec!["<Plug>(lathe-a)", "<Plug>(lathe-b-c)"]
    );
    let s = subcommands("local subcommands = { \"stop\", \"new\" }\nlocal x = { \"no\" }");
    assert_eq!(s, vec!["stop", "new"]);
    let have: BTreeSet<String> = ["lathe-setup.model".to_string()].into();
    assert_eq!(
        missing(
            &["model".into(), "cwd".into()],
            |k| format!("lathe-setup.{k}"),
            &have
        ),
        vec!["lathe-setup.cwd"]
    );
}
