//! The hard file cases (CRLF, tabs, final newlines, UTF-8 BOM, a Latin-1
//! byte, ambiguous matches and replace_all) through loaded buffers: the
//! scenario folders of `tests/fixtures/` run by `lua/lathe_scenarios.lua`
//! with the file open in Neovim, so the expected result text and bytes on
//! disk are the same ones the disk path must produce, and the buffer must
//! look like the expected file freshly loaded.

use crate::common::lua_test;

fn run_cases(tool: &str, names: &[&str]) -> Result<(), String> {
    let list: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    lua_test(&format!(
        "require('lathe_scenarios').run_all({tool:?}, {{ {} }})",
        list.join(", ")
    ))
}

#[nvim_oxi::test]
fn edit_cases_through_buffers() -> Result<(), String> {
    run_cases(
        "edit",
        &[
            "001_crlf_lf_old_string_keeps_crlf",
            "002_tabs_stay_tabs",
            "003_no_final_newline_stays_without",
            "004_two_final_newlines_kept",
            "005_utf8_bom_first_word",
            "006_latin1_byte_preserved",
            "007_latin1_unencodable_refused",
            "008_ambiguous_names_count_and_lines",
            "009_replace_all_changes_both",
            "010_overlapping_is_ambiguous",
            "011_empty_old_string_on_nonempty_file",
            "012_empty_old_string_replace_all_too",
            "017_old_equals_new",
            "018_old_string_not_found",
            "019_typographic_quotes_folded",
            "024_empty_old_string_fills_empty_file",
            "025_line_number_prefix_hint",
        ],
    )
}

#[nvim_oxi::test]
fn write_cases_through_buffers() -> Result<(), String> {
    run_cases(
        "write",
        &[
            "003_overwrite_after_read_keeps_crlf",
            "007_utf8_bom_kept",
            "009_latin1_kept",
        ],
    )
}

#[nvim_oxi::test]
fn read_cases_through_buffers() -> Result<(), String> {
    run_cases(
        "read",
        &[
            "001_empty_file",
            "002_offset_past_the_end",
            "003_offset_and_limit_last_line",
            "005_utf8_bom_not_shown",
            "013_second_read_unchanged_note",
            "014_latin1_shown_as_text",
            "015_crlf_shown_without_cr",
            "017_limit_trailer_says_how_to_continue",
        ],
    )
}

/// Seeded generated files (UTF-8, BOM, Latin-1; LF or CRLF; 0–2 final
/// newlines; tabs, `é`, `→`) and edits (unique spans or `replace_all`, new
/// text with newlines or empty): the buffer path and the disk path give the
/// same result text and the same bytes on disk.
#[nvim_oxi::test]
fn generated_edits_give_the_same_bytes_through_a_buffer_as_on_disk() -> Result<(), String> {
    lua_test("require('lathe_same_bytes').run(20240611, 80)")
}
