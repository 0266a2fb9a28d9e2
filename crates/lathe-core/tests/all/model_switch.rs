//! Switching the model at runtime (docs/provider.md, "Switching the
//! model"): the next request goes to the new model with the same
//! conversation, a resume goes on with it, and the provider's models are
//! listed for completion (mock-llm serves the script's `models` and
//! refuses others with the real API's 404). Every test runs against both
//! APIs.

use lathe_test_support as common;
use lathe_test_support::on_both_apis;

use common::{wait_idle, Api};
use lathe_core::agent::Session;
use lathe_core::events::TurnOutcome;
use serde_json::{json, Value};

fn text(t: &str) -> Value {
    json!({"content": [{"type": "text", "text": t}]})
}

/// The `model` of every request mock-llm got.
fn models_sent(h: &common::Harness) -> Vec<String> {
    h.server
        .requests()
        .iter()
        .map(|r| r["model"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// After a switch the next request names the new model and carries the
/// whole conversation; the chat is told; the same name again says
/// nothing.
async fn the_next_request_goes_to_the_new_model(api: Api) {
    let script =
        json!({"models": ["m-one", "m-two"], "responses": [text("first"), text("second")]});
    let h = common::harness_on(api, script, vec![], |c| c.model = "m-one".into(), vec![]).await;
    assert_eq!(h.ask("hello").await, TurnOutcome::Done);
    assert_eq!(h.session.set_model("m-two"), "m-two");
    assert_eq!(h.session.set_model("m-two"), "m-two");
    assert_eq!(h.session.model(), "m-two");
    assert_eq!(h.ask("again").await, TurnOutcome::Done);
    assert_eq!(models_sent(&h), ["m-one", "m-two"]);
    let second = serde_json::to_string(&h.server.requests()[1]["messages"]).unwrap();
    assert!(
        second.contains("hello") && second.contains("first") && second.contains("again"),
        "the earlier messages are still sent: {second}"
    );
    assert_eq!(
        h.notices()
            .iter()
            .filter(|n| n.starts_with("model:"))
            .collect::<Vec<_>>(),
        ["model: m-two"]
    );
}

/// A model the server does not serve fails the turn with the API's own
/// error; switching back goes on with the same conversation.
async fn an_unknown_model_is_the_apis_error_and_a_switch_back_recovers(api: Api) {
    let script = json!({"models": ["m-one"], "responses": [text("ok")]});
    let h = common::harness_on(api, script, vec![], |c| c.model = "m-one".into(), vec![]).await;
    h.session.set_model("no-such-model");
    let outcome = h.ask("hello").await;
    let TurnOutcome::Error(e) = outcome else {
        panic!("{outcome:?}")
    };
    let said = match api {
        Api::Anthropic => "model: no-such-model",
        Api::OpenAi => "The model `no-such-model` does not exist or you do not have access to it.",
    };
    assert!(e.contains(said), "{e}");
    h.session.set_model("m-one");
    assert_eq!(h.ask("hello").await, TurnOutcome::Done);
}

/// The provider's list, the current and configured models first when it
/// lacks them; a server that lists none leaves just those.
async fn the_providers_models_are_listed(api: Api) {
    let script = json!({"models": ["m-one", "m-two", "m-three"], "responses": []});
    let h = common::harness_on(api, script, vec![], |c| c.model = "m-one".into(), vec![]).await;
    assert_eq!(h.session.models_known(), ["m-one"], "before the list");
    assert_eq!(h.session.models().await, ["m-one", "m-two", "m-three"]);
    h.session.set_model("custom");
    assert_eq!(
        h.session.models_known(),
        ["custom", "m-one", "m-two", "m-three"]
    );
    let none = common::harness_on(
        api,
        json!({"responses": []}),
        vec![],
        |c| c.model = "m-x".into(),
        vec![],
    )
    .await;
    assert_eq!(none.session.models().await, ["m-x"], "the list failed: 404");
}

/// A resumed session goes on with the model it last switched to.
async fn a_resume_goes_on_with_the_last_model(api: Api) {
    let script = json!({"responses": [text("first"), text("second")]});
    let h = common::harness_on(
        api,
        script,
        vec![],
        |c| {
            c.model = "m-one".into();
            c.sessions_dir = Some(c.cwd.join(".sessions"));
        },
        vec![],
    )
    .await;
    assert_eq!(h.ask("hello").await, TurnOutcome::Done);
    h.session.set_model("m-two");
    h.session.flush_log();
    let path = h.session.log_path().unwrap().to_path_buf();
    let resumed = Session::resume(common::parts(h.session.config().clone()), &path).unwrap();
    assert_eq!(resumed.session.model(), "m-two");
    resumed
        .session
        .ask("again", &tokio::runtime::Handle::current())
        .unwrap();
    assert_eq!(wait_idle(&resumed.session).await, TurnOutcome::Done);
    assert_eq!(models_sent(&h), ["m-one", "m-two"]);
}

/// A slash command's `model` answers that command's turn only: the next
/// prompt goes to the session's model again.
async fn a_commands_model_answers_its_turn_only(api: Api) {
    let script = json!({"models": ["m-one", "m-two"],
        "responses": [text("by two"), text("by one")]});
    let h = common::harness_on(api, script, vec![], |c| c.model = "m-one".into(), vec![]).await;
    let rt = tokio::runtime::Handle::current();
    let extras = lathe_core::agent::TurnExtras {
        command: Some("review".into()),
        model: Some("m-two".into()),
        ..Default::default()
    };
    h.session
        .ask_with_extras("review it", None, None, extras, &rt)
        .expect("ask");
    assert_eq!(wait_idle(&h.session).await, TurnOutcome::Done);
    assert_eq!(h.session.model(), "m-one", "the session's model is kept");
    assert_eq!(h.ask("again").await, TurnOutcome::Done);
    assert_eq!(models_sent(&h), ["m-two", "m-one"]);
}

on_both_apis!(
    the_next_request_goes_to_the_new_model,
    an_unknown_model_is_the_apis_error_and_a_switch_back_recovers,
    the_providers_models_are_listed,
    a_resume_goes_on_with_the_last_model,
    a_commands_model_answers_its_turn_only,
);
