//! Gate 2: validate a tool input against the tool's JSON Schema and describe
//! every problem by field, expected type and given value.

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::Validator;
use serde_json::Value;

use crate::text::fill;

use super::messages::{
    FIELD_INVALID, FIELD_MISSING, FIELD_UNEXPECTED, FIELD_WRONG_TYPE, INPUT_VALIDATION_ERROR,
    INPUT_VALIDATION_HINT,
};

/// `Ok(())` when `input` satisfies `validator`; else the model-facing message
/// naming every bad field (one line each, sorted for stable output).
pub fn check(tool: &str, validator: &Validator, input: &Value) -> Result<(), String> {
    let mut lines: Vec<String> = validator
        .iter_errors(input)
        .flat_map(|e| describe(&e))
        .collect();
    if lines.is_empty() {
        return Ok(());
    }
    lines.sort();
    lines.dedup();
    Err(format!(
        "{}\n{}\n{}",
        fill(INPUT_VALIDATION_ERROR, &[("tool", tool)]),
        lines.join("\n"),
        INPUT_VALIDATION_HINT
    ))
}

fn describe(e: &jsonschema::ValidationError<'_>) -> Vec<String> {
    let path = e
        .instance_path
        .as_str()
        .trim_start_matches('/')
        .replace('/', ".");
    let field = if path.is_empty() {
        "input".to_string()
    } else {
        path
    };
    match &e.kind {
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(set) => set
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(" or "),
            };
            vec![fill(
                FIELD_WRONG_TYPE,
                &[
                    ("field", &field),
                    ("expected", &expected),
                    ("got", &given(&e.instance)),
                ],
            )]
        }
        ValidationErrorKind::Required { property } => {
            let name = property
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| property.to_string());
            let full = if field == "input" {
                name
            } else {
                format!("{field}.{name}")
            };
            vec![fill(FIELD_MISSING, &[("field", &full)])]
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => unexpected
            .iter()
            .map(|u| {
                let full = if field == "input" {
                    u.clone()
                } else {
                    format!("{field}.{u}")
                };
                fill(FIELD_UNEXPECTED, &[("field", &full)])
            })
            .collect(),
        _ => vec![fill(
            FIELD_INVALID,
            &[("field", &field), ("problem", &e.to_string())],
        )],
    }
}

/// `string "true"`, `number 3`, `null`, `object`, … — the JSON type of `v`,
/// with the value when it is short.
fn given(v: &Value) -> String {
    let shown = v.to_string();
    let short = shown.chars().count() <= 40;
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) if short => format!("boolean {shown}"),
        Value::Number(_) if short => format!("number {shown}"),
        Value::String(_) if short => format!("string {shown}"),
        Value::Bool(_) => "boolean".into(),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn validator() -> Validator {
        jsonschema::validator_for(&json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string"},
                "replace_all": {"type": "boolean"},
                "limit": {"type": ["integer", "null"], "minimum": 1}
            },
            "required": ["file_path"],
            "additionalProperties": false
        }))
        .unwrap()
    }

    #[test]
    fn names_every_bad_field() {
        let msg = check(
            "Edit",
            &validator(),
            &json!({"replace_all": "true", "bogus": 1}),
        )
        .unwrap_err();
        assert_eq!(
            msg,
            "InputValidationError: Edit failed due to the following issue(s):\n\
             - `bogus`: unexpected parameter (not in the schema)\n\
             - `file_path`: required parameter is missing\n\
             - `replace_all`: expected boolean, got string \"true\"\n\
             Fix the input to match the tool's schema and call it again."
        );
    }

    #[test]
    fn valid_input_passes() {
        assert!(check(
            "Edit",
            &validator(),
            &json!({"file_path": "/a", "limit": 3})
        )
        .is_ok());
    }

    #[test]
    fn non_object_input_is_reported() {
        let msg = check("Edit", &validator(), &json!("x")).unwrap_err();
        assert!(
            msg.contains("- `input`: expected object, got string \"x\""),
            "{msg}"
        );
    }
}
