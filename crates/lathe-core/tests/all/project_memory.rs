//! Project memory in the requests (docs/context-and-compaction.md,
//! "Project memory"): the files found at the start open the first user
//! message; a sub-folder's `CLAUDE.md` comes with the result of the first
//! call that reads below it, once per session, after a resume too.

use lathe_test_support as common;

use common::{wait_idle, Api};
use lathe_core::agent::Session;
use lathe_core::events::TurnOutcome;
use serde_json::{json, Value};

fn read(id: &str, path: &str) -> Value {
    json!({"content": [{"type": "tool_use", "id": id, "name": "Read", "input": {"file_path": path}}]})
}

fn text(t: &str) -> Value {
    json!({"content": [{"type": "text", "text": t}]})
}

/// How many times `needle` is in request `i`'s body.
fn count(h: &common::Harness, i: usize, needle: &str) -> usize {
    serde_json::to_string(&h.server.requests()[i])
        .unwrap()
        .matches(needle)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_memory_comes_once_with_the_first_read_below_it_and_not_again_after_a_resume() {
    let script = json!({"responses": [
        read("toolu_01", "src/a.rs"), text("read a"),
        read("toolu_02", "src/b.rs"), text("read b"),
        read("toolu_03", "src/b.rs"), text("read b again"),
    ]});
    let h = common::harness_on(
        Api::Anthropic,
        script,
        vec![],
        |c| {
            c.sessions_dir = Some(c.cwd.join(".sessions"));
            // Before the session is made: it reads its memory then.
            for (rel, body) in [
                ("CLAUDE.md", "ROOT-RULES"),
                ("src/CLAUDE.md", "SRC-RULES"),
                ("src/a.rs", "fn a() {}\n"),
                ("src/b.rs", "fn b() {}\n"),
            ] {
                let p = c.cwd.join(rel);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, body).unwrap();
            }
        },
        vec![],
    )
    .await;
    assert_eq!(h.ask("read a").await, TurnOutcome::Done);
    assert_eq!(
        count(&h, 0, "ROOT-RULES"),
        1,
        "the root's memory opens the first message"
    );
    assert_eq!(
        count(&h, 0, "SRC-RULES"),
        0,
        "nested memory waits for a read below it"
    );
    assert_eq!(
        count(&h, 1, "SRC-RULES"),
        1,
        "added with the first Read in src/"
    );
    let second: Value = h.server.requests()[1].clone();
    let results = &second["messages"][2]["content"];
    assert_eq!(results[0]["type"], "tool_result");
    assert!(results[0]["content"]
        .as_str()
        .unwrap()
        .contains("<system-reminder>"));
    assert_eq!(h.ask("read b").await, TurnOutcome::Done);
    assert_eq!(count(&h, 3, "SRC-RULES"), 1, "never again");
    h.session.flush_log();
    let path = h.session.log_path().unwrap().to_path_buf();
    let resumed = Session::resume(common::parts(h.session.config().clone()), &path).unwrap();
    resumed
        .session
        .ask("read b again", &tokio::runtime::Handle::current())
        .unwrap();
    assert_eq!(wait_idle(&resumed.session).await, TurnOutcome::Done);
    assert_eq!(
        count(&h, 5, "SRC-RULES"),
        1,
        "not added again after a resume"
    );
}
