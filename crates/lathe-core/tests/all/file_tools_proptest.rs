//! Property tests of Edit on disk: for random files in every
//! format lathe decodes (UTF-8 with or without BOM, UTF-16 LE/BE, Latin-1,
//! LF or CRLF, with or without a final newline) and a random `old_string`
//! that occurs exactly once, Read + Edit through `DiskEditor` changes exactly
//! the matched span and leaves every other byte as it was encoded; when the
//! new text cannot be encoded (Latin-1), the edit fails and the file is
//! byte-identical.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;

use std::sync::Arc;

use lathe_core::editor::codec::{decode, encode};
use lathe_core::editor::{DiskEditor, Encoding, LineEnding, TextFormat};
use lathe_core::tools::support::text_match::occurrences;
use lathe_core::tools::ToolContext;
use proptest::prelude::*;
use serde_json::json;

async fn run(ctx: &ToolContext, name: &str, input: serde_json::Value) -> Result<String, String> {
    common::run_tool(common::builtin(name), ctx, &input).await
}

fn chars(pool: &'static [char], len: std::ops::Range<usize>) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(pool), len).prop_map(|v| v.into_iter().collect())
}

const POOL: &[char] = &[
    'a', 'b', 'c', ' ', '\t', '\n', '\n', 'é', 'ÿ', '€', '"', '\'', '‘', '’', '“', '”', '😀', '{',
    '}',
];

fn format() -> impl Strategy<Value = TextFormat> {
    (0..2u8, any::<bool>(), 0..4u8).prop_map(|(le, bom, enc)| {
        let encoding = [
            Encoding::Utf8,
            Encoding::Latin1,
            Encoding::Utf16Le,
            Encoding::Utf16Be,
        ][enc as usize];
        TextFormat {
            line_ending: if le == 0 {
                LineEnding::Lf
            } else {
                LineEnding::CrLf
            },
            bom: bom && encoding == Encoding::Utf8
                || matches!(encoding, Encoding::Utf16Le | Encoding::Utf16Be),
            encoding,
        }
    })
}

/// Moves `i` down to a char boundary of `s`.
fn floor_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn edit_changes_exactly_the_matched_span(
        text in chars(POOL, 1..120),
        fmt in format(),
        start in any::<prop::sample::Index>(),
        len in 1..16usize,
        new in chars(POOL, 0..12),
    ) {
        // Latin-1 can only hold U+0000..U+00FF: keep the original encodable.
        let original: String = if fmt.encoding == Encoding::Latin1 {
            text.chars().filter(|c| u32::from(*c) <= 0xFF).collect()
        } else {
            text
        };
        let bytes = encode(&original, &fmt).expect("encodable by construction");
        // What lathe sees may differ from `original` (e.g. Latin-1 bytes that
        // happen to be valid UTF-8): work on the decoded text, as the model does.
        let Ok((logical, detected)) = decode(&bytes) else { return Err(TestCaseError::reject("not text")) };
        prop_assume!(!logical.is_empty());
        let a = floor_boundary(&logical, start.index(logical.len()));
        let b = floor_boundary(&logical, (a + len).min(logical.len()));
        prop_assume!(b > a);
        let old = &logical[a..b];
        prop_assume!(occurrences(&logical, old).len() == 1);
        prop_assume!(new != old);

        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("f.txt");
        std::fs::write(&file, &bytes).expect("write");
        let ctx = common::tool_ctx(dir.path(), Arc::new(DiskEditor::new()));
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let result = rt.block_on(async {
            run(&ctx, "Read", json!({"file_path": "f.txt"})).await.expect("read");
            run(&ctx, "Edit", json!({"file_path": "f.txt", "old_string": old, "new_string": new})).await
        });
        let expected_text = format!("{}{}{}", &logical[..a], new, &logical[b..]);
        let after = std::fs::read(&file).expect("read back");
        match encode(&expected_text, &detected) {
            Ok(expected_bytes) => {
                prop_assert!(result.is_ok(), "edit failed: {:?}", result);
                prop_assert_eq!(&after, &expected_bytes);
                // Exactly the span changed: the bytes before and after it are
                // the original's (UTF-16 always writes a BOM, so strip it from
                // the separately encoded suffix).
                let prefix = encode(&logical[..a], &detected).expect("prefix");
                prop_assert!(after.starts_with(&prefix));
                let mut suffix = encode(&logical[b..], &TextFormat { bom: false, ..detected }).expect("suffix");
                if matches!(detected.encoding, Encoding::Utf16Le | Encoding::Utf16Be) {
                    suffix.drain(..2);
                }
                prop_assert!(after.ends_with(&suffix));
            }
            Err(_) => {
                prop_assert!(result.is_err(), "unencodable edit succeeded");
                prop_assert_eq!(&after, &bytes, "a refused edit changed the file");
            }
        }
    }
}
