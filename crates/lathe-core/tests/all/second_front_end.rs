//! A second front end, written against `lathe_core`'s public API alone (no
//! Neovim, no test support): a terminal-less driver that runs one turn
//! against mock-llm with the disk as its editor, a prompter that answers
//! from a table by tool name, and an event sink that keeps what a user of
//! this front end would see. It shows the seam the Neovim front end uses is
//! the whole of what a front end needs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use lathe_core::agent::{Session, SessionParts, Status};
use lathe_core::config::Config;
use lathe_core::editor::DiskEditor;
use lathe_core::events::{AgentEvent, EventSink, TurnOutcome};
use lathe_core::permissions::{PermissionPreview, PromptAnswer, Prompter};
use serde_json::json;

/// Answers each ask from a table of tool name → answer; a tool it does not
/// list is refused. Keeps the names it was asked about.
struct TablePrompter {
    table: HashMap<&'static str, PromptAnswer>,
    asked: Mutex<Vec<String>>,
}

#[async_trait]
impl Prompter for TablePrompter {
    async fn ask(&self, tool: &str, _preview: &PermissionPreview) -> PromptAnswer {
        self.asked.lock().unwrap().push(tool.to_string());
        self.table.get(tool).cloned().unwrap_or(PromptAnswer::Deny)
    }
}

/// What this front end shows: the answer's text and one line per tool call.
#[derive(Default)]
struct Screen {
    lines: Mutex<Vec<String>>,
    text: Mutex<String>,
}

impl EventSink for Screen {
    fn emit(&self, event: AgentEvent) {
        match event {
            AgentEvent::TextDelta { text, .. } => self.text.lock().unwrap().push_str(&text),
            AgentEvent::ToolFinished { name, status, .. } => self
                .lines
                .lock()
                .unwrap()
                .push(format!("{name}: {status:?}")),
            _ => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_front_end_on_the_core_alone_runs_a_turn_that_edits_a_file() {
    let script = json!({ "responses": [
        { "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read",
                        "input": {"file_path": "hello.txt"}}],
          "stop_reason": "tool_use" },
        { "content": [{"type": "tool_use", "id": "toolu_2", "name": "Edit",
                        "input": {"file_path": "hello.txt", "old_string": "wrold", "new_string": "world"}}],
          "stop_reason": "tool_use",
          "expect": {"tool_result_contains": {"toolu_1": "hello wrold"}} },
        { "content": [{"type": "text", "text": "Fixed the typo."}],
          "stop_reason": "end_turn",
          "expect": {"tool_result_is_error": {"toolu_2": false}} }
    ]});
    let server = mock_llm::spawn(
        mock_llm::Script::from_json(&script.to_string()).unwrap(),
        None,
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("hello.txt"), "hello wrold\n").unwrap();

    let mut config = Config::new(&root);
    config.base_url = server.url();
    let prompter = Arc::new(TablePrompter {
        table: HashMap::from([("Edit", PromptAnswer::AllowOnce)]),
        asked: Mutex::new(Vec::new()),
    });
    let screen = Arc::new(Screen::default());
    let session = Session::new(SessionParts {
        provider: lathe_core::provider::from_config(&config).unwrap(),
        config,
        editor: Arc::new(DiskEditor),
        prompter: prompter.clone(),
        sink: screen.clone(),
        hooks: Vec::new(),
    })
    .unwrap();

    session
        .ask(
            "fix the typo in hello.txt",
            &tokio::runtime::Handle::current(),
        )
        .unwrap();
    let mut outcome = None;
    for _ in 0..6000 {
        if let Status::Idle(Some(o)) = session.status() {
            outcome = Some(o);
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    assert_eq!(outcome, Some(TurnOutcome::Done));
    assert_eq!(
        std::fs::read_to_string(root.join("hello.txt")).unwrap(),
        "hello world\n"
    );
    // Read ran without asking; the Edit asked the table once.
    assert_eq!(*prompter.asked.lock().unwrap(), vec!["Edit".to_string()]);
    let lines = screen.lines.lock().unwrap().clone();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].starts_with("Read: "), "{lines:?}");
    assert!(lines[1].starts_with("Edit: "), "{lines:?}");
    assert_eq!(*screen.text.lock().unwrap(), "Fixed the typo.");
}
