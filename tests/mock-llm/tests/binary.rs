//! The `mock-llm` binary as the demo and outside checks run it: it prints
//! `listening on http://127.0.0.1:PORT` first, serves the script and logs.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

/// Kills the child when the test ends, pass or fail.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn binary_announces_its_port_and_serves_the_script() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    let log = dir.path().join("log.jsonl");
    std::fs::write(
        &script,
        r#"{"responses":[{"content":[{"type":"text","text":"from the binary"}]}]}"#,
    )
    .unwrap();
    let mut child = Child(
        Command::new(env!("CARGO_BIN_EXE_mock-llm"))
            .arg("--script")
            .arg(&script)
            .args(["--port", "0", "--log"])
            .arg(&log)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .strip_suffix('\n')
        .unwrap()
        .strip_prefix("listening on ")
        .unwrap()
        .to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{line:?}");
    let port: u16 = url.rsplit(':').next().unwrap().parse().unwrap();
    assert_ne!(port, 0);

    let body = json!({"model":"m","stream":false,"messages":[{"role":"user","content":"hi"}]});
    let message: Value = common::client()
        .post(format!("{url}/v1/messages"))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(message["content"][0]["text"], "from the binary");
    let logged: Value =
        serde_json::from_str(std::fs::read_to_string(&log).unwrap().trim_end()).unwrap();
    assert_eq!(logged, body);
}

#[test]
fn binary_rejects_a_bad_script_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("bad.json");
    std::fs::write(&script, r#"{"responses":[{"contnt":[]}]}"#).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_mock-llm"))
        .arg("--script")
        .arg(&script)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unknown field `contnt`"), "{stderr}");
    assert!(output.stdout.is_empty());
}
