//! MCP servers (`lathe::mcp`) against a real stdio server
//! (tests/mcp/mock_mcp.py, run with the project's `.venv/bin/python`) and
//! a real turn against mock-llm: the server's tools are offered as
//! `mcp__test__<tool>` with their schema, calls reach the server, a crash
//! gives a clear error and the next call restarts it, and stopping the
//! turn cancels a slow call at once.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lathe::agent::{Session, SessionParts};
use lathe::config::mcp::McpServerConfig;
use lathe::config::Config;
use lathe::editor::DiskEditor;
use lathe::events::RecordingSink;
use lathe::execution::UserTools;
use lathe::mcp::server::McpServer;
use lathe::permissions::{Mode, ScriptedPrompter};
use serde_json::{json, Value};

fn python() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    root.join(".venv/bin/python")
}

struct Fixture {
    dir: tempfile::TempDir,
    server: Arc<McpServer>,
    table: Arc<UserTools>,
}

impl Fixture {
    async fn start() -> Self {
        Self::start_with(None).await
    }

    async fn start_with(timeout_ms: Option<u64>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/mock_mcp.py");
        let config = McpServerConfig {
            name: "test".into(),
            command: python().display().to_string(),
            args: vec![script.display().to_string()],
            env: [(
                "MOCK_MCP_EVENTS".to_string(),
                dir.path().join("events").display().to_string(),
            )]
            .into(),
            timeout_ms,
        };
        let server = Arc::new(McpServer::new(config, &dir.path().join("mcp"), dir.path()));
        let table = Arc::new(UserTools::new(["Read".to_string()]));
        let names = lathe::mcp::register(&server, &table).await;
        assert_eq!(
            names,
            [
                "mcp__test__echo",
                "mcp__test__slow",
                "mcp__test__crash",
                "mcp__test__fail",
                "mcp__test__image"
            ]
        );
        Fixture { dir, server, table }
    }

    fn events(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("events")).unwrap_or_default()
    }

    async fn session(&self, script: &Value) -> (Arc<Session>, mock_llm::MockServer) {
        self.session_with(self.table.clone(), script).await
    }

    async fn session_with(
        &self,
        table: Arc<UserTools>,
        script: &Value,
    ) -> (Arc<Session>, mock_llm::MockServer) {
        let mock = common::spawn_mock(script).await;
        let mut config = Config::new(self.dir.path());
        config.base_url = mock.url();
        config.claude_settings = false;
        config.permissions.mode = Mode::BypassPermissions;
        let session = Session::with_user_tools(
            SessionParts {
                provider: lathe::provider::from_config(&config).unwrap(),
                config,
                editor: Arc::new(DiskEditor),
                prompter: Arc::new(ScriptedPrompter::new(Vec::new())),
                sink: Arc::new(RecordingSink::default()),
                hooks: Vec::new(),
            },
            table,
        )
        .unwrap();
        (session, mock)
    }
}

fn tool<'a>(request: &'a Value, name: &str) -> &'a Value {
    request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| {
            let offered: Vec<&Value> = request["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| &t["name"])
                .collect();
            panic!("{name} not offered, only {offered:?}")
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_are_offered_with_their_schema_and_calls_reach_the_server() {
    let f = Fixture::start().await;
    let script = json!({ "responses": [
        { "content": [
            { "type": "tool_use", "id": "t1", "name": "mcp__test__echo", "input": { "text": "hi" } },
            { "type": "tool_use", "id": "t2", "name": "mcp__test__fail", "input": {} },
            { "type": "tool_use", "id": "t3", "name": "mcp__test__image", "input": {} } ] },
        { "content": [ { "type": "text", "text": "ok" } ],
          "expect": { "tool_result_contains": { "t1": "echo: hi", "t2": "the page does not exist" },
                      "tool_result_is_error": { "t1": false, "t2": true, "t3": false } } }
    ] });
    let (session, mock) = f.session(&script).await;
    session
        .ask("go", &tokio::runtime::Handle::current())
        .unwrap();
    common::wait_idle(&session).await;
    let requests = mock.requests();
    assert_eq!(mock.served(), 2, "{requests:#?}");
    let echo = tool(&requests[0], "mcp__test__echo");
    assert_eq!(echo["description"], "Returns its text.");
    assert_eq!(echo["input_schema"]["required"], json!(["text"]));
    let image = requests[1]["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["tool_use_id"] == "t3")
        .unwrap()
        .clone();
    assert_eq!(image["content"][0]["type"], "image", "{image}");
    assert_eq!(image["content"][0]["source"]["media_type"], "image/png");
    let listed: Vec<(String, String)> = session
        .tools()
        .into_iter()
        .filter(|t| t.name.starts_with("mcp__"))
        .map(|t| (t.name, t.source.label()))
        .collect();
    assert_eq!(
        listed[0],
        ("mcp__test__echo".to_string(), "mcp:test".to_string())
    );
    f.server.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_is_a_clear_error_and_the_next_call_restarts_the_server() {
    let f = Fixture::start().await;
    let log = f.server.log_path.display().to_string();
    let script = json!({ "responses": [
        { "content": [ { "type": "tool_use", "id": "t1", "name": "mcp__test__crash", "input": {} } ] },
        { "content": [ { "type": "tool_use", "id": "t2", "name": "mcp__test__echo", "input": { "text": "again" } } ],
          "expect": { "tool_result_contains": { "t1": format!(
              "The MCP server test is not running (it exited: exit status: 3; last log line: mock-mcp: crashing on purpose). It is restarted on the next call; try again once, then tell the user (its log is {log})."
          ) },
                      "tool_result_is_error": { "t1": true } } },
        { "content": [ { "type": "text", "text": "ok" } ],
          "expect": { "tool_result_contains": { "t2": "echo: again" },
                      "tool_result_is_error": { "t2": false } } }
    ] });
    let (session, mock) = f.session(&script).await;
    session
        .ask("go", &tokio::runtime::Handle::current())
        .unwrap();
    common::wait_idle(&session).await;
    assert_eq!(mock.served(), 3, "{:#?}", mock.requests());
    assert_eq!(f.events().matches("start").count(), 2, "{}", f.events());
    f.server.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_the_turn_cancels_a_slow_call_at_once() {
    let f = Fixture::start().await;
    let script = json!({ "responses": [
        { "content": [ { "type": "tool_use", "id": "t1", "name": "mcp__test__slow", "input": {} } ] },
        { "content": [ { "type": "text", "text": "ok" } ] }
    ] });
    let (session, _mock) = f.session(&script).await;
    session
        .ask("go", &tokio::runtime::Handle::current())
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !f.events().contains("call slow") {
        assert!(
            Instant::now() < deadline,
            "slow never called: {}",
            f.events()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let stopped = Instant::now();
    session.stop();
    common::wait_idle(&session).await;
    assert!(
        stopped.elapsed() < Duration::from_secs(3),
        "{:?}",
        stopped.elapsed()
    );
    while !f.events().contains("cancelled") {
        assert!(
            Instant::now() < deadline,
            "no notifications/cancelled: {}",
            f.events()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    f.server.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_the_servers_timeout_is_cancelled_with_a_clear_error() {
    let f = Fixture::start_with(Some(300)).await;
    let script = json!({ "responses": [
        { "content": [ { "type": "tool_use", "id": "t1", "name": "mcp__test__slow", "input": {} } ] },
        { "content": [ { "type": "text", "text": "ok" } ],
          "expect": { "tool_result_contains": { "t1": "mcp__test__slow did not answer within 300 ms, so the call was cancelled" },
                      "tool_result_is_error": { "t1": true } } }
    ] });
    let (session, mock) = f.session(&script).await;
    let started = Instant::now();
    session
        .ask("go", &tokio::runtime::Handle::current())
        .unwrap();
    common::wait_idle(&session).await;
    assert_eq!(mock.served(), 2, "{:#?}", mock.requests());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while !f.events().contains("cancelled") {
        assert!(
            Instant::now() < deadline,
            "no notifications/cancelled: {}",
            f.events()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    f.server.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_started_by_setup_are_in_the_first_request() {
    let f = Fixture::start().await;
    f.server.kill();
    let script = json!({ "responses": [ { "content": [ { "type": "text", "text": "ok" } ] } ] });
    let table = Arc::new(UserTools::new(["Read".to_string()]));
    let (session, mock) = f.session_with(table.clone(), &script).await;
    // As setup() does: start in the background, then ask at once.
    lathe::mcp::replace(
        vec![f.server.config.clone()],
        table,
        &f.dir.path().join("mcp2"),
        f.dir.path(),
        &tokio::runtime::Handle::current(),
    );
    session
        .ask("go", &tokio::runtime::Handle::current())
        .unwrap();
    common::wait_idle(&session).await;
    let requests = mock.requests();
    assert_eq!(mock.served(), 1, "{requests:#?}");
    tool(&requests[0], "mcp__test__echo");
    assert_eq!(lathe::mcp::statuses()[0].state, "running");
    lathe::mcp::stop_all();
}
