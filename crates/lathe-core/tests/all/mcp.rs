//! MCP servers (`lathe_core::mcp`) against a real stdio server
//! (tests/mcp/mock_mcp.py, run with the project's `.venv/bin/python`) and
//! a real turn against mock-llm: the server's tools are offered as
//! `mcp__test__<tool>` with their schema, calls reach the server, a crash
//! gives a clear error and the next call restarts it, and stopping the
//! turn cancels a slow call at once.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lathe_core::agent::Session;
use lathe_core::config::mcp::{McpServerConfig, McpTransport};
use lathe_core::config::Config;
use lathe_core::events::RecordingSink;
use lathe_core::execution::UserTools;
use lathe_core::mcp::server::McpServer;
use lathe_core::permissions::Mode;
use serde_json::{json, Value};

fn python() -> PathBuf {
    let root = lathe_test_support::workspace_root();
    root.join(".venv/bin/python")
}

struct Fixture {
    dir: tempfile::TempDir,
    server: Arc<McpServer>,
    table: Arc<UserTools>,
    /// The HTTP mock's process, killed with the fixture.
    http: Option<std::process::Child>,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(c) = &mut self.http {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Fixture {
    async fn start() -> Self {
        Self::start_with(None).await
    }

    async fn start_with(timeout_ms: Option<u64>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let script = lathe_test_support::workspace_root().join("tests/mcp/mock_mcp.py");
        let config = McpServerConfig {
            name: "test".into(),
            transport: McpTransport::Stdio {
                command: python().display().to_string(),
                args: vec![script.display().to_string()],
                env: [(
                    "MOCK_MCP_EVENTS".to_string(),
                    dir.path().join("events").display().to_string(),
                )]
                .into(),
            },
            timeout_ms,
        };
        let server = Arc::new(McpServer::new(config, &dir.path().join("mcp"), dir.path()));
        let table = Arc::new(UserTools::new(["Read".to_string()]));
        let names = lathe_core::mcp::register(&server, &table).await;
        assert_eq!(names, ALL_TOOLS);
        Fixture {
            dir,
            server,
            table,
            http: None,
        }
    }

    /// The mock serving streamable HTTP on a free local port, as server
    /// `web` (with a header it checks).
    async fn start_http() -> Self {
        Self::start_http_with(None).await
    }

    async fn start_http_with(timeout_ms: Option<u64>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let script = lathe_test_support::workspace_root().join("tests/mcp/mock_mcp.py");
        let port_file = dir.path().join("port");
        let mut child = std::process::Command::new(python())
            .arg(&script)
            .arg("--http")
            .arg(&port_file)
            .env("MOCK_MCP_EVENTS", dir.path().join("events"))
            .env("MOCK_MCP_TOKEN", "s3cret")
            .stderr(std::fs::File::create(dir.path().join("http.log")).unwrap())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let port = loop {
            if let Ok(p) = std::fs::read_to_string(&port_file) {
                break p;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("the HTTP mock did not start");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let mut config = McpServerConfig::http("web", &format!("http://127.0.0.1:{port}/mcp"));
        config.timeout_ms = timeout_ms;
        if let McpTransport::Http { headers, .. } = &mut config.transport {
            headers.insert("X-Mock-Token".into(), "s3cret".into());
        }
        let server = Arc::new(McpServer::new(config, &dir.path().join("mcp"), dir.path()));
        let table = Arc::new(UserTools::new(["Read".to_string()]));
        let names = lathe_core::mcp::register(&server, &table).await;
        assert_eq!(
            names,
            ALL_TOOLS.map(|n| n.replace("mcp__test__", "mcp__web__")),
            "{:?}",
            server.status()
        );
        Fixture {
            dir,
            server,
            table,
            http: Some(child),
        }
    }

    fn events(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("events")).unwrap_or_default()
    }

    /// Waits (polling every 20 ms) until the test server's event log
    /// contains `what`; fails with `why` and the log once `deadline` passes.
    async fn wait_event(&self, what: &str, deadline: Instant, why: &str) {
        while !self.events().contains(what) {
            assert!(Instant::now() < deadline, "{why}: {}", self.events());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Stops `session` while its turn waits on a slow tool: the turn ends
    /// within 3 s and the server gets `notifications/cancelled` before
    /// `deadline`.
    async fn stop_and_see_cancelled(&self, session: &Session, deadline: Instant) {
        let stopped = Instant::now();
        session.stop();
        common::wait_idle(session).await;
        assert!(
            stopped.elapsed() < Duration::from_secs(3),
            "{:?}",
            stopped.elapsed()
        );
        self.wait_event("cancelled", deadline, "no notifications/cancelled")
            .await;
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
        let session = Session::with_user_tools(common::parts(config), table).unwrap();
        (session, mock)
    }
}

/// The mock's tools (listed two a page, so this also checks `nextCursor`).
const ALL_TOOLS: [&str; 15] = [
    "mcp__test__echo",
    "mcp__test__slow",
    "mcp__test__crash",
    "mcp__test__fail",
    "mcp__test__image",
    "mcp__test__big",
    "mcp__test__mixed",
    "mcp__test__boom",
    "mcp__test__svg",
    "mcp__test__jpg",
    "mcp__test__structured",
    "mcp__test__bigimage",
    "mcp__test__pick",
    "mcp__test__files_read",
    "mcp__test__files_read_2",
];

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
    f.wait_event("call slow", deadline, "slow never called")
        .await;
    f.stop_and_see_cancelled(&session, deadline).await;
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
    f.wait_event("cancelled", deadline, "no notifications/cancelled")
        .await;
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
    lathe_core::mcp::replace(
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
    assert_eq!(lathe_core::mcp::statuses()[0].state, "running");
    lathe_core::mcp::stop_all();
}

/// `tool_sync("mcp__srv__tool", …)` right after `setup()` failed
/// with "still starting": a direct call waits for its starting server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_direct_call_right_after_setup_waits_for_its_starting_server() {
    let f = Fixture::start().await;
    f.server.kill();
    let table = Arc::new(UserTools::new(["Read".to_string()]));
    let (session, _mock) = f
        .session_with(table.clone(), &json!({ "responses": [] }))
        .await;
    lathe_core::mcp::replace(
        vec![f.server.config.clone()],
        table,
        &f.dir.path().join("mcp2"),
        f.dir.path(),
        &tokio::runtime::Handle::current(),
    );
    let result = session
        .run_tool(
            "mcp__test__echo",
            json!({ "text": "early" }),
            false,
            Arc::new(RecordingSink::default()),
        )
        .await;
    assert!(!result.is_error, "{}", result.content.as_text());
    assert_eq!(result.content.as_text(), "echo: early");
    lathe_core::mcp::stop_all();
}

/// The `tool_result` of `id` in the last message of `request`.
fn result_of(request: &Value, id: &str) -> Value {
    request["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["tool_use_id"] == id)
        .unwrap_or_else(|| panic!("no result for {id}: {request}"))
        .clone()
}

fn text_of(result: &Value) -> String {
    match &result["content"] {
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_results_go_to_a_file_and_links_and_audio_are_named() {
    let f = Fixture::start().await;
    let script = json!({ "responses": [
        { "content": [
            { "type": "tool_use", "id": "t1", "name": "mcp__test__big", "input": {} },
            { "type": "tool_use", "id": "t2", "name": "mcp__test__mixed", "input": {} } ] },
        { "content": [ { "type": "text", "text": "ok" } ] }
    ] });
    let (session, mock) = f.session(&script).await;
    session
        .ask("go", &tokio::runtime::Handle::current())
        .unwrap();
    common::wait_idle(&session).await;
    let requests = mock.requests();
    assert_eq!(mock.served(), 2, "{requests:#?}");
    let big = text_of(&result_of(&requests[1], "t1"));
    assert!(
        big.starts_with("The output was too large to show in full (150000 chars, 150000 bytes). It was saved to "),
        "{}",
        &big[..300.min(big.len())]
    );
    let path = big
        .split("It was saved to ")
        .nth(1)
        .unwrap()
        .split(" — Read")
        .next()
        .unwrap();
    assert_eq!(std::fs::read_to_string(path).unwrap().len(), 150_000);
    assert_eq!(
        text_of(&result_of(&requests[1], "t2")),
        "here:\n[resource link: guide.md <file:///docs/guide.md> (text/markdown); lathe cannot read MCP resources, so only the link is shown]\n[audio (audio/wav, about 6 bytes) omitted: lathe cannot pass audio to the model]"
    );
    f.server.kill();
}

/// Whatever an MCP server returns or declares, the next request
/// is one the API accepts (mock-llm refuses what the API would), and the
/// user is told what lathe changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_results_and_schemas_still_make_requests_the_api_accepts() {
    let f = Fixture::start().await;
    let script = json!({ "responses": [
        { "content": [
            { "type": "tool_use", "id": "t1", "name": "mcp__test__svg", "input": {} },
            { "type": "tool_use", "id": "t2", "name": "mcp__test__jpg", "input": {} },
            { "type": "tool_use", "id": "t3", "name": "mcp__test__structured", "input": {} },
            { "type": "tool_use", "id": "t4", "name": "mcp__test__bigimage", "input": {} },
            { "type": "tool_use", "id": "t5", "name": "mcp__test__files_read", "input": {} },
            { "type": "tool_use", "id": "t6", "name": "mcp__test__files_read_2", "input": {} },
            { "type": "tool_use", "id": "t7", "name": "mcp__test__pick", "input": { "id": "a" } } ] },
        { "content": [ { "type": "tool_use", "id": "t8", "name": "mcp__test__echo", "input": { "text": "still alive" } } ] },
        { "content": [ { "type": "text", "text": "ok" } ],
          "expect": { "tool_result_contains": { "t8": "echo: still alive" } } }
    ] });
    let (session, mock) = f.session(&script).await;
    session
        .ask("go", &tokio::runtime::Handle::current())
        .unwrap();
    common::wait_idle(&session).await;
    let requests = mock.requests();
    assert_eq!(mock.served(), 3, "{:#?}", mock.requests().last());
    // A top-level oneOf: its branches' properties, the rest told in words.
    let pick = tool(&requests[0], "mcp__test__pick");
    assert!(pick["input_schema"].get("oneOf").is_none(), "{pick}");
    assert_eq!(
        pick["input_schema"]["properties"],
        json!({ "id": { "type": "string" }, "path": { "type": "string" } })
    );
    assert_eq!(
        pick["description"],
        "Picks by id or by path.\n\nThe input must also match oneOf of these schemas: [{\"properties\":{\"id\":{\"type\":\"string\"}},\"required\":[\"id\"]},{\"properties\":{\"path\":{\"type\":\"string\"}},\"required\":[\"path\"]}]"
    );
    assert_eq!(
        text_of(&result_of(&requests[1], "t7")),
        "picked {\"id\": \"a\"}"
    );
    // Two names that are one once cleaned: both reachable.
    assert_eq!(
        text_of(&result_of(&requests[1], "t5")),
        "read by files.read"
    );
    assert_eq!(
        text_of(&result_of(&requests[1], "t6")),
        "read by files_read"
    );
    assert_eq!(
        tool(&requests[0], "mcp__test__files_read_2")["description"],
        "Reads (underscored name).\n\n(This is the tool files_read of the MCP server test; another of its tools has the same name once cleaned, so this one has a number at the end.)"
    );
    // An SVG: a note in its place, the text kept.
    assert_eq!(
        result_of(&requests[1], "t1")["content"],
        "chart:\n[image (image/svg+xml, about 41 bytes) not sent: the model takes only PNG, JPEG, GIF and WebP images]"
    );
    // Declared image/jpg: sent as what its bytes are.
    let jpg = result_of(&requests[1], "t2");
    assert_eq!(
        jpg["content"][0]["source"]["media_type"], "image/png",
        "{jpg}"
    );
    // Only structuredContent: its JSON.
    assert_eq!(
        text_of(&result_of(&requests[1], "t3")),
        "{\n  \"temperature\": 22.5,\n  \"unit\": \"C\"\n}"
    );
    // An image and 200000 chars of text: the text saved, the image kept.
    let big = result_of(&requests[1], "t4");
    let blocks = big["content"].as_array().unwrap();
    assert_eq!(blocks.len(), 2, "{big}");
    let preview = blocks[0]["text"].as_str().unwrap();
    assert!(
        preview.starts_with("The output was too large to show in full (200000 chars"),
        "{}",
        &preview[..200]
    );
    assert!(preview.chars().count() < 2_500);
    assert_eq!(blocks[1]["type"], "image");
    // The user sees the renamed tool and the repaired schema.
    assert_eq!(
        f.server.tool_notes(),
        [
            "tool pick: its input schema has anyOf, oneOf or allOf at the top level, which the Anthropic API refuses; lathe sends the properties of its branches and tells the model the rest in the tool's description",
            "tool files_read is offered as mcp__test__files_read_2: files.read has the same name once cleaned",
        ]
    );
    f.server.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_lists_the_tools_again_and_the_log_marks_each_start() {
    let f = Fixture::start().await;
    // Two tools a page: one listing is 8 requests.
    assert_eq!(f.events().matches("list").count(), 8, "{}", f.events());
    let script = json!({ "responses": [
        { "content": [ { "type": "tool_use", "id": "t1", "name": "mcp__test__crash", "input": {} } ] },
        { "content": [ { "type": "tool_use", "id": "t2", "name": "mcp__test__echo", "input": { "text": "again" } } ] },
        { "content": [ { "type": "text", "text": "ok" } ],
          "expect": { "tool_result_contains": { "t2": "echo: again" } } }
    ] });
    let (session, mock) = f.session(&script).await;
    session
        .ask("go", &tokio::runtime::Handle::current())
        .unwrap();
    common::wait_idle(&session).await;
    assert_eq!(mock.served(), 3, "{:#?}", mock.requests());
    assert_eq!(f.events().matches("list").count(), 16, "{}", f.events());
    assert_eq!(f.table.snapshot().len(), 15);
    let log = std::fs::read_to_string(&f.server.log_path).unwrap();
    let starts: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with("[lathe] ---- start "))
        .collect();
    assert_eq!(starts.len(), 2, "{log}");
    assert!(starts[1].ends_with(" GMT ----"), "{log}");
    // The crash belongs to the first start: it is no longer the last line.
    assert!(log.contains("mock-mcp: crashing on purpose"), "{log}");
    assert_eq!(
        f.server.last_log_line().as_deref(),
        Some("mock-mcp: started")
    );
    f.server.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_cancels_a_running_tool_call_outside_a_turn() {
    let f = Fixture::start().await;
    let (session, _mock) = f.session(&json!({ "responses": [] })).await;
    let s = session.clone();
    let call = tokio::spawn(async move {
        s.run_tool(
            "mcp__test__slow",
            json!({}),
            false,
            Arc::new(RecordingSink::default()),
        )
        .await
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    f.wait_event("call slow", deadline, "no call slow").await;
    let stopped = Instant::now();
    session.stop();
    let result = tokio::time::timeout(Duration::from_secs(3), call)
        .await
        .expect("stop() did not end the call")
        .unwrap();
    assert!(stopped.elapsed() < Duration::from_secs(3));
    assert!(result.is_error);
    assert_eq!(
        result.content.as_text(),
        "The user interrupted mcp__test__slow while it ran; its MCP server was told to cancel the request. Wait for the user's next instruction."
    );
    // A later call is not cancelled.
    let again = session
        .run_tool(
            "mcp__test__echo",
            json!({ "text": "x" }),
            false,
            Arc::new(RecordingSink::default()),
        )
        .await;
    assert_eq!(again.content.as_text(), "echo: x");
    f.server.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_mcp_tools_are_explained_by_their_server() {
    let f = Fixture::start().await;
    f.server.kill();
    let table = Arc::new(UserTools::new(["Read".to_string()]));
    let mut bad = McpServerConfig::stdio("bad", "/nonexistent/mcp-server", vec![]);
    bad.timeout_ms = None;
    lathe_core::mcp::replace(
        vec![f.server.config.clone(), bad],
        table.clone(),
        &f.dir.path().join("mcp2"),
        f.dir.path(),
        &tokio::runtime::Handle::current(),
    );
    let script = json!({ "responses": [
        { "content": [
            { "type": "tool_use", "id": "t1", "name": "mcp__bad__search", "input": {} },
            { "type": "tool_use", "id": "t2", "name": "mcp__nope__search", "input": {} },
            { "type": "tool_use", "id": "t3", "name": "mcp__test__zzz", "input": {} } ] },
        { "content": [ { "type": "text", "text": "ok" } ] }
    ] });
    let (session, mock) = f.session_with(table, &script).await;
    session
        .ask("go", &tokio::runtime::Handle::current())
        .unwrap();
    common::wait_idle(&session).await;
    let requests = mock.requests();
    assert_eq!(mock.served(), 2, "{requests:#?}");
    let log = f.dir.path().join("mcp2/bad.log").display().to_string();
    assert_eq!(
        text_of(&result_of(&requests[1], "t1")),
        format!("mcp__bad__search is not available: its MCP server bad (/nonexistent/mcp-server) failed: /nonexistent/mcp-server could not be run: No such file or directory (os error 2). lathe tries to start it again before a later request (not more often than every few seconds); tell the user, who can see :checkhealth lathe and its log {log}.")
    );
    assert_eq!(
        text_of(&result_of(&requests[1], "t2")),
        "No such tool available: mcp__nope__search. There is no MCP server nope (configured MCP servers: test, bad). Use the tools you were given; if the user expects this server, tell them to add it to .mcp.json or setup{ mcp_servers } (:help lathe-mcp)."
    );
    assert_eq!(
        text_of(&result_of(&requests[1], "t3")),
        format!("No such tool available: mcp__test__zzz. The MCP server test has no tool zzz; its tools are: {}. Call one of these by its exact name.", ALL_TOOLS.join(", "))
    );
    lathe_core::mcp::stop_all();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_whose_tool_list_failed_is_tried_again_after_a_backoff() {
    let f = Fixture::start().await;
    f.server.kill();
    let marker = f.dir.path().join("fail-list");
    std::fs::write(&marker, "").unwrap();
    let mut cfg = f.server.config.clone();
    if let McpTransport::Stdio { env, .. } = &mut cfg.transport {
        env.insert("MOCK_MCP_FAIL_LIST".into(), marker.display().to_string());
    }
    let table = Arc::new(UserTools::new(["Read".to_string()]));
    let script = json!({ "responses": [
        { "content": [ { "type": "text", "text": "one" } ] },
        { "content": [ { "type": "text", "text": "two" } ] },
        { "content": [ { "type": "text", "text": "three" } ] }
    ] });
    let (session, mock) = f.session_with(table.clone(), &script).await;
    lathe_core::mcp::replace(
        vec![cfg],
        table.clone(),
        &f.dir.path().join("mcp2"),
        f.dir.path(),
        &tokio::runtime::Handle::current(),
    );
    let rt = tokio::runtime::Handle::current();
    session.ask("one", &rt).unwrap();
    common::wait_idle(&session).await;
    let lists = |f: &Fixture| f.events().matches("list").count();
    let after_first = lists(&f);
    let status = &lathe_core::mcp::statuses()[0];
    assert_eq!(status.state, "failed");
    assert_eq!(
        status.error.as_deref(),
        Some("tools/list failed: Mcp error: -32603: tools are not ready")
    );
    // Within the backoff: not asked again.
    session.ask("two", &rt).unwrap();
    common::wait_idle(&session).await;
    assert_eq!(lists(&f), after_first, "{}", f.events());
    // The server is fixed; after the backoff the next request has its tools.
    std::fs::remove_file(&marker).unwrap();
    tokio::time::sleep(Duration::from_millis(
        lathe_core::mcp::server::RETRY_FIRST_MS + 100,
    ))
    .await;
    session.ask("three", &rt).unwrap();
    common::wait_idle(&session).await;
    let requests = mock.requests();
    assert_eq!(mock.served(), 3, "{requests:#?}");
    tool(&requests[2], "mcp__test__echo");
    assert!(requests[1]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["name"] != "mcp__test__echo"));
    assert_eq!(lathe_core::mcp::statuses()[0].state, "running");
    lathe_core::mcp::stop_all();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_servers_are_listed_and_called_and_errors_name_the_url() {
    let f = Fixture::start_http().await;
    let url = f.server.config.url().unwrap().to_string();
    let log = f.server.log_path.display().to_string();
    let script = json!({ "responses": [
        { "content": [
            { "type": "tool_use", "id": "t1", "name": "mcp__web__echo", "input": { "text": "hi" } },
            { "type": "tool_use", "id": "t2", "name": "mcp__web__fail", "input": {} },
            { "type": "tool_use", "id": "t3", "name": "mcp__web__boom", "input": {} } ] },
        { "content": [ { "type": "tool_use", "id": "t4", "name": "mcp__web__crash", "input": {} } ] },
        { "content": [ { "type": "tool_use", "id": "t5", "name": "mcp__web__echo", "input": { "text": "again" } } ] },
        { "content": [ { "type": "text", "text": "ok" } ] }
    ] });
    let (session, mock) = f.session(&script).await;
    session
        .ask("go", &tokio::runtime::Handle::current())
        .unwrap();
    common::wait_idle(&session).await;
    let requests = mock.requests();
    assert_eq!(mock.served(), 4, "{requests:#?}");
    assert_eq!(
        tool(&requests[0], "mcp__web__echo")["input_schema"]["required"],
        json!(["text"])
    );
    assert_eq!(text_of(&result_of(&requests[1], "t1")), "echo: hi");
    let fail = result_of(&requests[1], "t2");
    assert_eq!(fail["is_error"], true);
    assert_eq!(text_of(&fail), "the page does not exist");
    let boom = result_of(&requests[1], "t3");
    assert_eq!(boom["is_error"], true);
    let boom = text_of(&boom);
    assert_eq!(boom, format!("mcp__web__boom failed: the MCP server web at {url} answered it with an error (HTTP 500). The server is still connected; try the call again once if the error looks temporary, otherwise tell the user (its log is {log})."));
    // The 500 was this call's alone: the log says so, and the next call
    // went over the same connection (the tools were not listed again).
    let server_log = std::fs::read_to_string(&f.server.log_path).unwrap();
    assert!(
        server_log.contains("mcp__web__boom failed: HTTP 500"),
        "{server_log}"
    );
    assert!(f.events().contains("call crash"), "{}", f.events());
    let events = f.events();
    let after_boom = events.split("call boom").nth(1).unwrap_or_default();
    assert!(!after_boom.contains("list"), "{events}");
    // The server is gone after the crash: the next call cannot reach it.
    let gone = text_of(&result_of(&requests[3], "t5"));
    assert!(
        gone.starts_with(&format!("The MCP server web at {url} could not be used (connecting failed: no answer (the connection was refused or broke: is the server running at that URL?)). ")),
        "{gone}"
    );
    assert!(
        gone.ends_with(&format!("lathe connects again on the next call; try again once, then tell the user to check that the server runs at that URL and that its headers (e.g. a token) are right (its log is {log}).")),
        "{gone}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_the_turn_cancels_a_slow_http_call() {
    let f = Fixture::start_http().await;
    let script = json!({ "responses": [
        { "content": [ { "type": "tool_use", "id": "t1", "name": "mcp__web__slow", "input": {} } ] },
        { "content": [ { "type": "text", "text": "ok" } ] }
    ] });
    let (session, _mock) = f.session(&script).await;
    session
        .ask("go", &tokio::runtime::Handle::current())
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    f.wait_event("call slow", deadline, "no call slow").await;
    f.stop_and_see_cancelled(&session, deadline).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_http_server_fails_with_its_url_and_a_wrong_token_is_named() {
    let dir = tempfile::tempdir().unwrap();
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let server = Arc::new(McpServer::new(
        McpServerConfig::http("web", &url),
        &dir.path().join("mcp"),
        dir.path(),
    ));
    let table = Arc::new(UserTools::new(["Read".to_string()]));
    let started = Instant::now();
    assert!(lathe_core::mcp::register(&server, &table).await.is_empty());
    assert!(started.elapsed() < Duration::from_secs(10));
    let lathe_core::mcp::server::Status::Failed(why) = server.status() else {
        panic!("{:?}", server.status())
    };
    assert_eq!(
        why,
        "connecting failed: no answer (the connection was refused or broke: is the server running at that URL?)"
    );
    // The right server with a wrong token.
    let f = Fixture::start_http().await;
    let mut cfg = f.server.config.clone();
    if let McpTransport::Http { headers, .. } = &mut cfg.transport {
        headers.insert("X-Mock-Token".into(), "wrong".into());
    }
    let server = Arc::new(McpServer::new(cfg, &dir.path().join("mcp"), dir.path()));
    assert!(lathe_core::mcp::register(&server, &table).await.is_empty());
    let lathe_core::mcp::server::Status::Failed(why) = server.status() else {
        panic!("{:?}", server.status())
    };
    assert_eq!(
        why,
        "connecting failed: unexpected server response: HTTP 401 Unauthorized: bad token"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_call_past_the_servers_timeout_is_cancelled_with_a_clear_error() {
    let f = Fixture::start_http_with(Some(300)).await;
    let script = json!({ "responses": [
        { "content": [ { "type": "tool_use", "id": "t1", "name": "mcp__web__slow", "input": {} } ] },
        { "content": [ { "type": "text", "text": "ok" } ],
          "expect": { "tool_result_contains": { "t1": "mcp__web__slow did not answer within 300 ms, so the call was cancelled" },
                      "tool_result_is_error": { "t1": true } } }
    ] });
    let (session, mock) = f.session(&script).await;
    session
        .ask("go", &tokio::runtime::Handle::current())
        .unwrap();
    common::wait_idle(&session).await;
    assert_eq!(mock.served(), 2, "{:#?}", mock.requests());
    let deadline = Instant::now() + Duration::from_secs(5);
    f.wait_event("cancelled", deadline, "no notifications/cancelled")
        .await;
}
