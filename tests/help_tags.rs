//! `:help lathe` has a tag for every `:Lathe` subcommand (the completion
//! list in plugin/lathe.lua) and every `setup()` option (the names the
//! option parser accepts, `lathe::config::keys::setup_keys`), so a new one
//! cannot ship undocumented.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(rel: &str) -> String {
    std::fs::read_to_string(format!("{ROOT}/{rel}")).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Every `*tag*` of a help file (`:help help-writing`: a tag is a word
/// between stars with no white space in it).
fn tags(help: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in help.lines() {
        let mut rest = line;
        while let Some(start) = rest.find('*') {
            let after = &rest[start + 1..];
            let Some(end) = after.find('*') else { break };
            let tag = &after[..end];
            if !tag.is_empty() && !tag.contains(char::is_whitespace) {
                out.insert(tag.to_string());
                rest = &after[end + 1..];
            } else {
                rest = after;
            }
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
    let have = tags(&read("doc/lathe.txt"));
    let subs = subcommands(&read("plugin/lathe.lua"));
    assert!(subs.len() >= 8, "subcommands found: {subs:?}");
    let keys = lathe::config::keys::setup_keys();
    assert!(keys.len() >= 20, "setup keys found: {keys:?}");
    let mut gaps = missing(&subs, |s| format!(":Lathe-{s}"), &have);
    gaps.extend(missing(&keys, |k| format!("lathe-setup.{k}"), &have));
    assert!(
        gaps.is_empty(),
        "doc/lathe.txt has no tag for: {}\n(add `*tag*` right-aligned above the entry)",
        gaps.iter()
            .map(|t| format!("*{t}*"))
            .collect::<Vec<_>>()
            .join(" ")
    );
}

#[test]
fn the_tag_reader_and_list_reader_work() {
    let t = tags("  *a*  text *b-c.d*  not * a tag * and `*x*`\n*:Lathe-new*");
    assert!(t.contains("a") && t.contains("b-c.d") && t.contains(":Lathe-new") && t.contains("x"));
    assert!(!t.iter().any(|x| x.contains(' ')));
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
