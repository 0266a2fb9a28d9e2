//! Tools users add at run time (`tools::user`, the shared `UserTools`
//! table) through a real turn against mock-llm: a tool registered while the
//! session runs is offered from the very next request, is found at gate 1,
//! and its result reaches the model; an unregistered one is gone from the
//! next request.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;

use std::sync::Arc;

use async_trait::async_trait;
use lathe_core::agent::Session;
use lathe_core::config::Config;
use lathe_core::execution::UserTools;
use lathe_core::tools::user::{Classified, Flag, UserTool, UserToolBackend, UserToolSpec};
use lathe_core::tools::{Tool, ToolContext, ToolError, ToolOutput, ToolSource};
use serde_json::{json, Value};

/// A backend whose `call` registers (or unregisters) tools in `table`.
struct Registrar {
    table: Arc<UserTools>,
}

#[async_trait]
impl UserToolBackend for Registrar {
    fn classify(&self, _: &Value) -> Result<Classified, (String, String)> {
        Ok(Classified::default())
    }
    async fn validate(&self, _: &str, _: &Value) -> Result<(), ToolError> {
        Ok(())
    }
    async fn call(
        &self,
        tool: &str,
        input: Value,
        _: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        if tool == "Late" {
            return Ok(ToolOutput::text(format!("late answer to {input}"), ""));
        }
        let name = input["name"].as_str().unwrap_or_default().to_string();
        if input["remove"].as_bool() == Some(true) {
            self.table.unregister(&name);
        } else {
            self.table
                .register(tool_named(&name, self.table.clone()))
                .map_err(|e| ToolError::new(e.to_string()))?;
        }
        Ok(ToolOutput::text(format!("done: {name}"), ""))
    }
}

fn tool_named(name: &str, table: Arc<UserTools>) -> Arc<dyn Tool> {
    Arc::new(
        UserTool::new(
            UserToolSpec {
                name: name.into(),
                description: format!("The {name} tool."),
                input_schema: json!({ "type": "object", "properties": { "name": { "type": "string" }, "remove": { "type": "boolean" } } }),
                read_only: Flag::Fixed(true),
                concurrency_safe: None,
                max_result_chars: None,
                source: ToolSource::Lua,
            },
            Arc::new(Registrar { table }),
        )
        .unwrap(),
    )
}

fn names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_registered_during_a_turn_is_offered_from_the_next_request() {
    let script = json!({ "responses": [
        { "content": [ { "type": "tool_use", "id": "t1", "name": "Register", "input": { "name": "Late" } } ] },
        { "content": [ { "type": "tool_use", "id": "t2", "name": "Late", "input": { "name": "x" } } ],
          "expect": { "tool_result_contains": { "t1": "done: Late" } } },
        { "content": [ { "type": "tool_use", "id": "t3", "name": "Register", "input": { "name": "Late", "remove": true } } ],
          "expect": { "tool_result_contains": { "t2": "late answer to {\"name\":\"x\"}" },
                      "tool_result_is_error": { "t2": false } } },
        { "content": [ { "type": "text", "text": "ok" } ] }
    ] });
    let server = common::spawn_mock(&script).await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::new(dir.path());
    config.base_url = server.url();
    let table = Arc::new(UserTools::new(["Read".to_string()]));
    table
        .register(tool_named("Register", table.clone()))
        .unwrap();
    let session = Session::with_user_tools(common::parts(config), table.clone()).unwrap();
    session
        .ask("go", &tokio::runtime::Handle::current())
        .unwrap();
    common::wait_idle(&session).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "{requests:#?}");
    assert!(!names(&requests[0]).contains(&"Late".to_string()));
    assert_eq!(names(&requests[0]).last().unwrap(), "Register");
    assert_eq!(names(&requests[1]).last().unwrap(), "Late");
    assert!(!names(&requests[3]).contains(&"Late".to_string()));
    assert_eq!(server.served(), 4);
    let listed: Vec<(String, String)> = session
        .tools()
        .into_iter()
        .map(|t| (t.name, t.source.label()))
        .collect();
    assert_eq!(
        listed.last().unwrap(),
        &("Register".to_string(), "lua".to_string())
    );
    assert_eq!(
        listed.first().unwrap(),
        &("Read".to_string(), "built-in".to_string())
    );
}
