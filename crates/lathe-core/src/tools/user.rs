//! Tools users add while lathe runs — a few lines of Lua
//! (`require("lathe").register_tool`) — run through the same gates as the
//! built-in ones (docs/tools.md, "Adding a tool", "User tools").
//!
//! A [`UserTool`] is the object-safe [`Tool`] itself (its name and schema
//! are chosen at run time, so it cannot be a [`TypedTool`](super::TypedTool)):
//! its schema is checked when it is made ([`check_schema`]) and is what the
//! model is told and gate 2 validates; what the tool *does* — classify an
//! input, validate it, run it — is a [`UserToolBackend`] (the Lua functions,
//! called on Neovim's main thread by `lathe::api::user_tools`).

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::tool::{ReadOnlyKind, ToolKind, ToolSource};
use super::{PlannedCall, PreparedCall, Tool, ToolContext, ToolError, ToolOutput};
use crate::permissions::{PermissionPreview, RuleFamily};
use crate::text::fill;

/// Gate 9's bound for a user tool that names none
/// (`max_result_size_chars`): text results longer than this many chars are
/// saved to a file and the model gets a preview and the path.
pub const DEFAULT_MAX_RESULT_CHARS: usize = 30_000;

/// How long a user tool's `call` may take before it is abandoned, in ms,
/// when it names no `timeout_ms`.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;

/// User-facing: a name outside the Messages API's rule. `{name}`.
pub const BAD_TOOL_NAME: &str =
    "name {name} is not a valid tool name: use 1 to 64 letters, digits, '_' or '-' (the Messages API's rule for tool names)";

/// User-facing: the schema does not describe an object. `{got}`.
pub const SCHEMA_NOT_OBJECT: &str =
    "input_schema must describe an object (type = \"object\"), as the Messages API requires; got {got}";

/// User-facing: the schema fails the JSON Schema meta-schema (or does not
/// compile). `{problem}`, `{at}` (a JSON pointer into the schema, `/` for
/// its root).
pub const SCHEMA_INVALID: &str = "input_schema is not a valid JSON Schema: {problem} (at {at})";

/// Model-facing: added to the description of a tool whose schema had
/// `anyOf`, `oneOf` or `allOf` at its top level, which the Messages API
/// refuses ("input_schema does not support oneOf, allOf, or anyOf at the
/// top level"): the schema sent holds the branches' properties, and this
/// says what else the input must satisfy. `{keyword}`, `{schema}` (the
/// keyword's value, compact JSON).
pub const SCHEMA_COMBINATOR_NOTE: &str =
    "\n\nThe input must also match {keyword} of these schemas: {schema}";

/// The JSON Schema keywords the Messages API refuses at the top level of
/// an `input_schema`.
pub const TOP_LEVEL_COMBINATORS: [&str; 3] = ["anyOf", "oneOf", "allOf"];

/// `schema` as the Messages API takes it, and the note for the
/// description: top-level `anyOf` / `oneOf` / `allOf` are moved out (the
/// API refuses them there) and the properties of their object branches
/// merged into the top-level `properties` (a property two branches define
/// differently becomes an `anyOf` of both, which the API takes below the
/// top level); `required` keeps the top level's, plus every `allOf`
/// branch's, plus what every `anyOf` / `oneOf` branch requires. `None`:
/// nothing to change.
pub fn api_schema(schema: &Value) -> Option<(Value, String)> {
    let obj = schema.as_object()?;
    if !TOP_LEVEL_COMBINATORS.iter().any(|k| obj.contains_key(*k)) {
        return None;
    }
    let mut out = obj.clone();
    let mut props = out
        .remove("properties")
        .and_then(|p| match p {
            Value::Object(m) => Some(m),
            _ => None,
        })
        .unwrap_or_default();
    let mut required: Vec<Value> = out
        .remove("required")
        .and_then(|r| r.as_array().cloned())
        .unwrap_or_default();
    let mut notes = Vec::new();
    for keyword in TOP_LEVEL_COMBINATORS {
        let Some(branches) = out.remove(keyword) else {
            continue;
        };
        notes.push(fill(
            SCHEMA_COMBINATOR_NOTE,
            &[
                ("keyword", keyword),
                (
                    "schema",
                    &serde_json::to_string(&branches).unwrap_or_default(),
                ),
            ],
        ));
        let branches = branches.as_array().cloned().unwrap_or_default();
        let mut common: Option<Vec<Value>> = None;
        for branch in &branches {
            if let Some(bp) = branch.get("properties").and_then(Value::as_object) {
                for (name, sub) in bp {
                    match props.get_mut(name) {
                        None => {
                            props.insert(name.clone(), sub.clone());
                        }
                        Some(have) if have == sub => {}
                        Some(have) => {
                            let alts = match have.get("anyOf").and_then(Value::as_array) {
                                Some(a) if have.as_object().is_some_and(|o| o.len() == 1) => {
                                    a.clone()
                                }
                                _ => vec![have.clone()],
                            };
                            if !alts.contains(sub) {
                                let mut alts = alts;
                                alts.push(sub.clone());
                                *have = serde_json::json!({ "anyOf": alts });
                            }
                        }
                    }
                }
            }
            let req: Vec<Value> = branch
                .get("required")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if keyword == "allOf" {
                for r in req {
                    if !required.contains(&r) {
                        required.push(r);
                    }
                }
            } else {
                common = Some(match common {
                    None => req,
                    Some(c) => c.into_iter().filter(|r| req.contains(r)).collect(),
                });
            }
        }
        for r in common.unwrap_or_default() {
            if !required.contains(&r) {
                required.push(r);
            }
        }
    }
    out.insert("properties".into(), Value::Object(props));
    if !required.is_empty() {
        out.insert("required".into(), Value::Array(required));
    }
    Some((Value::Object(out), notes.concat()))
}

/// Model-facing: a callback of the tool (`is_read_only`, `validate_input`,
/// `call`, …) raised an error. `{tool}`, `{callback}`, `{error}`.
pub const CALLBACK_FAILED: &str =
    "{tool} failed: its {callback} raised an error: {error}. This is a fault in the tool, not in your input; tell the user, and do not repeat the same call unchanged.";

/// Model-facing: `validate_input` refused the input. `{tool}`, `{message}`.
pub const INPUT_REFUSED: &str =
    "{tool} refused the input: {message}. Fix the input and call it again.";

/// Model-facing: `call` did not answer within its timeout. `{tool}`, `{ms}`.
pub const CALL_TIMED_OUT: &str =
    "{tool} did not answer within {ms} ms, so the call was abandoned and nothing it returns later is used. Try again with a smaller request, or tell the user the tool hangs.";

/// Model-facing: the turn was stopped while the call ran. `{tool}`.
pub const CALL_INTERRUPTED: &str =
    "The user interrupted {tool} while it ran; the tool was told to stop (ctx.cancelled() is true) and anything it returns later is dropped. Wait for the user's next instruction.";

/// Model-facing: the tool was unregistered (or Neovim is exiting) between
/// the request and the call. `{tool}`.
pub const TOOL_GONE: &str =
    "{tool} is no longer available (it was unregistered); nothing ran. Do not call it again unless it shows up in your tools.";

/// Checks `name` against the Messages API's rule `^[a-zA-Z0-9_-]{1,64}$`.
/// Errors: [`BAD_TOOL_NAME`] filled in.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(fill(BAD_TOOL_NAME, &[("name", &format!("{name:?}"))]))
    }
}

/// Checks `schema` before it is sent or used: it must describe an object
/// (`type: "object"`, the Messages API's rule for `input_schema`), pass the
/// JSON Schema meta-schema (jsonschema's check, draft detected from
/// `$schema`, 2020-12 without one) and compile (patterns, `$ref`s).
/// Errors: [`SCHEMA_NOT_OBJECT`] or [`SCHEMA_INVALID`] naming the problem
/// and where it is.
pub fn check_schema(schema: &Value) -> Result<(), String> {
    let ty = schema.get("type");
    if !schema.is_object() || ty != Some(&Value::String("object".into())) {
        let got = match ty {
            Some(t) => format!("type = {t}"),
            None if schema.is_object() => "no type".to_string(),
            None => format!("a {}", json_kind(schema)),
        };
        return Err(fill(SCHEMA_NOT_OBJECT, &[("got", &got)]));
    }
    let invalid = |problem: String, at: String| {
        let at = if at.is_empty() { "/".to_string() } else { at };
        fill(SCHEMA_INVALID, &[("problem", &problem), ("at", &at)])
    };
    match jsonschema::meta::try_validate(schema) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(invalid(e.to_string(), e.instance_path.to_string())),
        Err(e) => return Err(invalid(e.to_string(), String::new())),
    }
    jsonschema::validator_for(schema)
        .map(drop)
        .map_err(|e| invalid(e.to_string(), e.schema_path.to_string()))
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "table",
    }
}

/// A per-tool flag (read-only, concurrency-safe): fixed, or asked of the
/// backend for each input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flag {
    /// The same for every call.
    Fixed(bool),
    /// [`UserToolBackend::classify`] says, per input.
    PerInput,
}

/// What a user tool is, besides what it does.
#[derive(Debug, Clone)]
pub struct UserToolSpec {
    /// The name the model calls (checked with [`check_name`]).
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// The input's JSON Schema (checked with [`check_schema`]); sent to the
    /// model and validated at gate 2.
    pub input_schema: Value,
    /// Whether a call is read-only (read-only calls inside the project run
    /// without asking; others ask by default).
    pub read_only: Flag,
    /// Whether a call may run alongside others; `None`: as read-only.
    pub concurrency_safe: Option<Flag>,
    /// Gate 9's bound (chars) for text results.
    pub max_result_chars: Option<usize>,
    /// Where it comes from (Lua).
    pub source: ToolSource,
}

/// What a call's input is, per the backend's functions: `None` for a flag
/// the backend has no function for (the spec's fixed value holds).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Classified {
    /// The read-only function's answer.
    pub read_only: Option<bool>,
    /// The concurrency-safe function's answer.
    pub concurrency_safe: Option<bool>,
}

/// What a user tool does. Implemented on the Neovim side for Lua tools
/// (their functions run on the main thread).
#[async_trait]
pub trait UserToolBackend: Send + Sync {
    /// Asks the per-input flags for `input` (called during gate 3, which is
    /// synchronous, only when a flag is [`Flag::PerInput`]). Errors: the
    /// callback's name and its error text (the call then fails at gate 4
    /// with [`CALLBACK_FAILED`]).
    fn classify(&self, input: &Value) -> Result<Classified, (String, String)>;

    /// Gate 4: the tool's own check of the input (`validate_input`).
    /// Errors are model-facing ([`INPUT_REFUSED`], [`CALLBACK_FAILED`]).
    async fn validate(&self, tool: &str, input: &Value) -> Result<(), ToolError>;

    /// Gate 7: runs the call. Must end on `ctx.cancel` and within its own
    /// timeout. Errors are model-facing.
    async fn call(
        &self,
        tool: &str,
        input: Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError>;
}

/// A tool added at run time: a [`UserToolSpec`] and its backend.
pub struct UserTool {
    spec: UserToolSpec,
    backend: Arc<dyn UserToolBackend>,
}

impl UserTool {
    /// The tool for `spec`. Errors: the name or the schema is invalid (see
    /// [`check_name`], [`check_schema`]).
    pub fn new(mut spec: UserToolSpec, backend: Arc<dyn UserToolBackend>) -> Result<Self, String> {
        check_name(&spec.name)?;
        check_schema(&spec.input_schema)?;
        if let Some((schema, note)) = api_schema(&spec.input_schema) {
            spec.input_schema = schema;
            spec.description.push_str(&note);
        }
        Ok(Self { spec, backend })
    }

    /// Its spec.
    pub fn spec(&self) -> &UserToolSpec {
        &self.spec
    }
}

/// A user tool's parsed input: the JSON and what its flags said.
struct UserInput {
    json: Value,
    read_only: bool,
    concurrency_safe: bool,
    /// A flag function that raised: (callback, error).
    failed: Option<(String, String)>,
}

fn input_of(call: &PreparedCall) -> Option<&UserInput> {
    call.input::<UserInput>()
}

/// `input` as one short line for the chat: compact JSON cut at 80 chars.
fn one_line(input: &Value) -> String {
    let s = serde_json::to_string(input).unwrap_or_default();
    if s.chars().count() <= 80 {
        s
    } else {
        let cut: String = s.chars().take(79).collect();
        format!("{cut}…")
    }
}

#[async_trait]
impl Tool for UserTool {
    fn name(&self) -> &str {
        &self.spec.name
    }
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    fn description(&self) -> String {
        self.spec.description.clone()
    }
    fn max_result_chars(&self) -> Option<usize> {
        self.spec.max_result_chars
    }
    fn is_offered(&self) -> bool {
        true
    }
    fn input_schema(&self) -> Value {
        self.spec.input_schema.clone()
    }
    fn prepare(self: Arc<Self>, input: &Value, _root: &Path) -> Result<PreparedCall, ToolError> {
        let per_input = self.spec.read_only == Flag::PerInput
            || self.spec.concurrency_safe == Some(Flag::PerInput);
        let (classified, failed) = if per_input {
            match self.backend.classify(input) {
                Ok(c) => (c, None),
                Err(e) => (Classified::default(), Some(e)),
            }
        } else {
            (Classified::default(), None)
        };
        let flag = |f: Flag, asked: Option<bool>| match f {
            Flag::Fixed(b) => b,
            Flag::PerInput => asked.unwrap_or(false),
        };
        let read_only = flag(self.spec.read_only, classified.read_only);
        let concurrency_safe = match self.spec.concurrency_safe {
            None => read_only,
            Some(f) => flag(f, classified.concurrency_safe),
        };
        let parsed = UserInput {
            json: input.clone(),
            read_only: read_only && failed.is_none(),
            concurrency_safe: concurrency_safe && failed.is_none(),
            failed,
        };
        let json = input.clone();
        Ok(PreparedCall::new(self, Box::new(parsed), json))
    }
    fn is_read_only(&self, call: &PreparedCall) -> bool {
        input_of(call).is_some_and(|i| i.read_only)
    }
    fn is_concurrency_safe(&self, call: &PreparedCall) -> bool {
        input_of(call).is_some_and(|i| i.concurrency_safe)
    }
    fn describe(&self, call: &PreparedCall, _root: &Path) -> String {
        input_of(call)
            .map(|i| one_line(&i.json))
            .unwrap_or_default()
    }
    async fn validate_input(
        &self,
        call: PreparedCall,
        _ctx: &ToolContext,
    ) -> Result<PlannedCall, ToolError> {
        let input =
            input_of(&call).ok_or_else(|| ToolError::new(super::INTERNAL_INPUT_MISMATCH))?;
        if let Some((callback, error)) = &input.failed {
            return Err(ToolError::new(fill(
                CALLBACK_FAILED,
                &[
                    ("tool", &self.spec.name),
                    ("callback", callback),
                    ("error", error),
                ],
            )));
        }
        self.backend.validate(&self.spec.name, &input.json).await?;
        Ok(PlannedCall::new(call, Box::new(())))
    }
    fn permission_preview(&self, call: &PlannedCall, _root: &Path) -> PermissionPreview {
        PermissionPreview {
            title: format!(
                "{} {}",
                self.spec.name,
                self.describe(call.prepared(), Path::new(""))
            ),
            ..PermissionPreview::default()
        }
    }
    async fn call(&self, call: PlannedCall, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let json = call.prepared().input_json.clone();
        self.backend.call(&self.spec.name, json, ctx).await
    }
    fn source(&self) -> ToolSource {
        self.spec.source.clone()
    }
    fn read_only_kind(&self) -> ReadOnlyKind {
        match self.spec.read_only {
            Flag::Fixed(true) => ReadOnlyKind::Always,
            Flag::Fixed(false) => ReadOnlyKind::Never,
            Flag::PerInput => ReadOnlyKind::PerInput,
        }
    }
    /// A Lua tool that says every call is read-only reads; any other tool
    /// users add (an MCP server's among them) is of no kind lathe knows.
    /// Rules naming the tool alone judge its calls, matched against its
    /// input, whatever its kind.
    fn rule_family(&self) -> RuleFamily {
        RuleFamily::Input
    }
    fn kind(&self) -> ToolKind {
        match (&self.spec.source, &self.spec.read_only) {
            (ToolSource::Mcp(_), _) => ToolKind::Other,
            (_, Flag::Fixed(true)) => ToolKind::Read,
            _ => ToolKind::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_follow_the_api_rule() {
        assert!(check_name("SearchIssues").is_ok());
        assert!(check_name("search-issues_2").is_ok());
        assert!(check_name(&"a".repeat(64)).is_ok());
        assert_eq!(
            check_name("search issues").unwrap_err(),
            "name \"search issues\" is not a valid tool name: use 1 to 64 letters, digits, '_' or '-' (the Messages API's rule for tool names)"
        );
        assert!(check_name("").is_err());
        assert!(check_name(&"a".repeat(65)).is_err());
        assert!(check_name("é").is_err());
    }

    #[test]
    fn schemas_must_be_valid_objects() {
        let good = json!({ "type": "object", "properties": { "q": { "type": "string", "minLength": 1 } }, "required": ["q"] });
        assert!(check_schema(&good).is_ok());
        assert_eq!(
            check_schema(&json!({ "type": "string" })).unwrap_err(),
            "input_schema must describe an object (type = \"object\"), as the Messages API requires; got type = \"string\""
        );
        assert_eq!(
            check_schema(&json!([1])).unwrap_err(),
            "input_schema must describe an object (type = \"object\"), as the Messages API requires; got a list"
        );
        let bad =
            check_schema(&json!({ "type": "object", "properties": { "q": { "type": "strnig" } } }))
                .unwrap_err();
        assert!(
            bad.starts_with("input_schema is not a valid JSON Schema: "),
            "{bad}"
        );
        assert!(bad.contains("/properties/q/type"), "{bad}");
        let bad_min = check_schema(
            &json!({ "type": "object", "properties": { "n": { "type": "integer", "minimum": "one" } } }),
        )
        .unwrap_err();
        assert!(bad_min.contains("/properties/n/minimum"), "{bad_min}");
    }

    /// The API refuses every request with a tool whose schema
    /// has anyOf, oneOf or allOf at its top level.
    #[test]
    fn top_level_combinators_are_flattened_into_properties() {
        let schema = json!({
            "type": "object",
            "properties": { "limit": { "type": "integer" } },
            "required": ["limit"],
            "anyOf": [
                { "properties": { "id": { "type": "string" }, "q": { "type": "string" } }, "required": ["id", "q"] },
                { "properties": { "path": { "type": "string" }, "q": { "type": "integer" } }, "required": ["path", "q"] }
            ],
            "allOf": [ { "required": ["mode"], "properties": { "mode": { "enum": ["a", "b"] } } } ]
        });
        let (sent, note) = api_schema(&schema).unwrap();
        assert_eq!(
            sent,
            json!({
                "type": "object",
                "properties": {
                    "limit": { "type": "integer" },
                    "id": { "type": "string" },
                    "q": { "anyOf": [ { "type": "string" }, { "type": "integer" } ] },
                    "path": { "type": "string" },
                    "mode": { "enum": ["a", "b"] }
                },
                "required": ["limit", "q", "mode"]
            })
        );
        assert!(check_schema(&sent).is_ok());
        assert_eq!(
            note,
            "\n\nThe input must also match anyOf of these schemas: [{\"properties\":{\"id\":{\"type\":\"string\"},\"q\":{\"type\":\"string\"}},\"required\":[\"id\",\"q\"]},{\"properties\":{\"path\":{\"type\":\"string\"},\"q\":{\"type\":\"integer\"}},\"required\":[\"path\",\"q\"]}]\n\nThe input must also match allOf of these schemas: [{\"properties\":{\"mode\":{\"enum\":[\"a\",\"b\"]}},\"required\":[\"mode\"]}]"
        );
        assert_eq!(
            api_schema(&json!({ "type": "object", "properties": {} })),
            None
        );
    }

    #[test]
    fn model_facing_texts() {
        assert_eq!(
            fill(
                INPUT_REFUSED,
                &[("tool", "SearchIssues"), ("message", "query too short")]
            ),
            "SearchIssues refused the input: query too short. Fix the input and call it again."
        );
        assert_eq!(
            fill(CALL_TIMED_OUT, &[("tool", "T"), ("ms", "50")]),
            "T did not answer within 50 ms, so the call was abandoned and nothing it returns later is used. Try again with a smaller request, or tell the user the tool hangs."
        );
        assert_eq!(
            fill(
                CALLBACK_FAILED,
                &[("tool", "T"), ("callback", "call"), ("error", "boom")]
            ),
            "T failed: its call raised an error: boom. This is a fault in the tool, not in your input; tell the user, and do not repeat the same call unchanged."
        );
        assert!(fill(CALL_INTERRUPTED, &[("tool", "T")]).starts_with("The user interrupted T"));
        assert!(fill(TOOL_GONE, &[("tool", "T")]).starts_with("T is no longer available"));
    }
}
