//! A small model made the same failing call with the same input
//! 7–11 times and got the same answer each time. From the second time in a
//! conversation, the result says the call was made before and failed the
//! same way (`execution::REPEATED_FAILURE`), against mock-llm over real
//! HTTP.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;

use common::{harness, tool_results};
use lathe_core::events::TurnOutcome;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_failing_call_is_told_it_failed_the_same_way_before() {
    let call = |id: &str| {
        json!({ "content": [ { "type": "tool_use", "id": id, "name": "Edit",
            "input": { "file_path": "a.txt", "old_string": "alpha", "new_string": "beta" } } ] })
    };
    let script = json!({ "responses": [
        call("toolu_01"),
        call("toolu_02"),
        // The same input, its keys in another order: the same call.
        { "content": [ { "type": "tool_use", "id": "toolu_03", "name": "Edit",
            "input": { "new_string": "beta", "old_string": "alpha", "file_path": "a.txt" } } ] },
        { "content": [ { "type": "text", "text": "I will Read it first." } ] }
    ] });
    let h = harness(script, Vec::new(), |_| {}, Vec::new()).await;
    std::fs::write(h.root.join("a.txt"), "alpha\n").unwrap();
    assert_eq!(h.ask("edit a.txt").await, TurnOutcome::Done);
    let results: Vec<(String, bool, String)> = h
        .session
        .transcript()
        .iter()
        .flat_map(tool_results)
        .collect();
    let not_read = "a.txt has not been read in this conversation. Read it first, then edit it: Edit needs to know the file's current text.";
    assert_eq!(results[0].2, not_read);
    assert_eq!(
        results[1].2,
        format!("{not_read}\n\nYou made this exact call before and it failed the same way (2 times now, this one included): the same call will get the same answer. Change the input as the message above says, try another way, or tell the user what stops you.")
    );
    assert!(results[2].2.contains("(3 times now"), "{}", results[2].2);
    assert!(results.iter().all(|r| r.1));
}
