//! Context from the editor without Neovim (docs/context-and-compaction.md, "Context
//! from the editor"): a fake `EditorContext` behind `Session::ask_with`,
//! against mock-llm. The `@path` attachment is a Read through the pipeline
//! (its record lets an Edit through, a declined ask sends nothing), and the
//! per-turn block leaves the prompt cache's prefix alone.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;
use lathe_test_support::on_both_apis;

use std::path::PathBuf;

use common::{wait_idle, Api};
use lathe_core::agent::context::{
    CurrentBuffer, Diagnostics, EditorContext, EditorState, Quickfix, QuickfixItem,
    ATTACH_READ_FAILED,
};
use lathe_core::events::{AgentEvent, TurnOutcome};
use lathe_core::permissions::PromptAnswer;
use serde_json::{json, Value};

/// An editor showing `a.py` at line 2 with a one-entry quickfix list.
struct FakeEditor {
    root: PathBuf,
}

impl EditorContext for FakeEditor {
    fn state(&self) -> Option<EditorState> {
        Some(EditorState {
            file: Some(self.root.join("a.py")),
            line: 2,
            line_count: 2,
            buffers: vec![self.root.join("a.py")],
        })
    }
    fn current_buffer(&self) -> Option<CurrentBuffer> {
        None
    }
    fn diagnostics(&self) -> Option<Diagnostics> {
        None
    }
    fn quickfix(&self) -> Quickfix {
        Quickfix {
            title: "pytest".into(),
            items: vec![QuickfixItem {
                path: Some(self.root.join("a.py")),
                line: 2,
                col: 5,
                text: "assert 1 == 2".into(),
            }],
        }
    }
}

/// The messages of a request body as JSON text, without the
/// `cache_control` breakpoints (the API's cache prefix ignores where the
/// breakpoint sits; it moves to the newest block on every request).
fn messages(body: &Value) -> Vec<String> {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.remove("cache_control");
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let mut m = m.clone();
            strip(&mut m);
            m.to_string()
        })
        .collect()
}

async fn at_file_is_a_read_and_the_context_keeps_the_cache_prefix(api: Api) {
    let script = json!({ "responses": [
        { "content": [ { "type": "tool_use", "id": "toolu_e", "name": "Edit",
            "input": { "file_path": "a.py", "old_string": "return 1", "new_string": "return 2" } } ],
          "expect": { "last_user_text_contains": "Current file: a.py (cursor on line 2 of 2)" } },
        { "content": [ { "type": "text", "text": "Fixed." } ],
          "expect": { "tool_result_is_error": { "toolu_e": false },
                      "tool_result_contains": { "toolu_e": "has been updated" } } },
        { "content": [ { "type": "text", "text": "Nothing else." } ],
          "expect": { "last_user_text_contains": "anything else?" } }
    ] });
    let h = common::harness_on(api, script, vec![PromptAnswer::AllowOnce], |_| {}, vec![]).await;
    h.write("a.py", "def f():\n    return 1\n");
    let editor = FakeEditor {
        root: h.root.clone(),
    };
    let rt = tokio::runtime::Handle::current();
    h.session
        .ask_with("fix @a.py, see #quickfix", Some(&editor), None, &rt)
        .unwrap();
    assert_eq!(wait_idle(&h.session).await, TurnOutcome::Done);
    assert_eq!(
        h.read("a.py"),
        "def f():\n    return 2\n",
        "the Edit needed no Read"
    );

    let first = &h.session.transcript()[0];
    let texts: Vec<String> = first
        .content
        .iter()
        .map(|b| {
            serde_json::to_value(b).unwrap()["text"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(texts.len(), 4, "{texts:#?}");
    assert!(texts[0].starts_with("<editor-context>\n"), "{}", texts[0]);
    assert_eq!(
        texts[1],
        "The user's quickfix list (pytest, 1 entry):\na.py:2:5: assert 1 == 2"
    );
    assert!(
        texts[2].starts_with("<attached-file path=\"a.py\">\n"),
        "{}",
        texts[2]
    );
    assert!(texts[2].contains("     2\t    return 1"), "{}", texts[2]);
    assert_eq!(texts[3], "fix @a.py, see #quickfix");
    // The chat is told what the prompt carried: a line each, with the
    // text sent (the editor's state is not shown).
    let attached: Vec<_> = h
        .sink
        .events()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::Attached { items } => Some(items),
            _ => None,
        })
        .collect();
    assert_eq!(attached.len(), 1, "{attached:#?}");
    let labels: Vec<&str> = attached[0].iter().map(|i| i.label.as_str()).collect();
    assert_eq!(
        labels,
        ["Quickfix list: 1 entry", "Attached a.py (2 lines)"]
    );
    assert_eq!(attached[0][0].text, texts[1]);
    assert!(attached[0][1].text.contains("     2\t    return 1"));

    h.session
        .ask_with("anything else?", Some(&editor), None, &rt)
        .unwrap();
    assert_eq!(wait_idle(&h.session).await, TurnOutcome::Done);
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 3);
    // The system prompt is the same in every request, and each request's
    // messages start with the previous request's: the editor context of a
    // turn never rewrites what the cache holds.
    assert_eq!(reqs[0]["system"], reqs[2]["system"]);
    let (one, three) = (messages(&reqs[0]), messages(&reqs[2]));
    assert_eq!(&three[..one.len()], &one[..]);
    assert!(
        three.last().unwrap().contains("<editor-context>"),
        "the new turn has its own block"
    );
}

async fn a_declined_attachment_sends_nothing(api: Api) {
    let h = common::harness_on(
        api,
        json!({ "responses": [] }),
        vec![PromptAnswer::Deny],
        |_| {},
        vec![],
    )
    .await;
    h.write(".env", "KEY=secret\n");
    let rt = tokio::runtime::Handle::current();
    h.session
        .ask_with("what is in @.env", None, None, &rt)
        .unwrap();
    let outcome = wait_idle(&h.session).await;
    let TurnOutcome::Error(msg) = outcome else {
        panic!("{outcome:?}")
    };
    let head = ATTACH_READ_FAILED.split("{error}").next().unwrap();
    assert_eq!(head, "lathe: @{path} was not attached: ");
    assert!(msg.starts_with("lathe: @.env was not attached: "), "{msg}");
    // The Read's error and what lathe says after it are two lines (the
    // chat quotes each as a line of its own), never run together.
    assert!(msg.ends_with("\nThe prompt was not sent."), "{msg}");
    assert_eq!(h.prompter.asked().len(), 1, "the protected file asked");
    assert!(h.server.requests().is_empty(), "nothing was sent");
    assert!(h.session.transcript().is_empty());
}

on_both_apis!(
    at_file_is_a_read_and_the_context_keeps_the_cache_prefix,
    a_declined_attachment_sends_nothing,
);
