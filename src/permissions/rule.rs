//! Permission rule strings: `Tool` or `Tool(pattern)`.
//!
//! `Edit` matches every Edit call; `Edit(src/**)` matches Edit calls on paths
//! matching the glob (relative globs are taken from the project root,
//! absolute ones as written). The full rule syntax grows in later issues.

use std::fmt;

use globset::{Glob, GlobMatcher};

use super::Request;

/// One parsed rule.
#[derive(Debug, Clone)]
pub struct Rule {
    tool: String,
    pattern: Option<(String, GlobMatcher)>,
}

impl PartialEq for Rule {
    fn eq(&self, other: &Self) -> bool {
        self.tool == other.tool
            && self.pattern.as_ref().map(|p| &p.0) == other.pattern.as_ref().map(|p| &p.0)
    }
}
impl Eq for Rule {}

/// Why a rule string did not parse; shown to the user by `setup`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad permission rule {rule:?}: {why}")]
pub struct RuleParseError {
    /// The rule as written.
    pub rule: String,
    /// What is wrong.
    pub why: String,
}

impl Rule {
    /// Parses `Tool` or `Tool(glob)`.
    pub fn parse(s: &str) -> Result<Self, RuleParseError> {
        let err = |why: &str| RuleParseError {
            rule: s.to_string(),
            why: why.to_string(),
        };
        let s = s.trim();
        let (tool, pattern) = match s.find('(') {
            None => (s, None),
            Some(i) => {
                let inner = s[i + 1..]
                    .strip_suffix(')')
                    .ok_or_else(|| err("missing closing ')'"))?;
                (&s[..i], Some(inner))
            }
        };
        if tool.is_empty() || !tool.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(err("expected a tool name like Edit or Read"));
        }
        let pattern = match pattern {
            None | Some("") => None,
            Some(p) => {
                let g = Glob::new(p).map_err(|e| err(&e.to_string()))?;
                Some((p.to_string(), g.compile_matcher()))
            }
        };
        Ok(Rule {
            tool: tool.to_string(),
            pattern,
        })
    }

    /// A rule matching every call of `tool` (session "always allow").
    pub fn tool(tool: &str) -> Self {
        Rule {
            tool: tool.to_string(),
            pattern: None,
        }
    }

    /// `true` when this rule applies to `req`.
    pub fn matches(&self, req: &Request<'_>) -> bool {
        if self.tool != req.tool {
            return false;
        }
        match (&self.pattern, req.path) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some((raw, m)), Some(path)) => {
                if raw.starts_with('/') {
                    m.is_match(path)
                } else {
                    path.strip_prefix(req.root).is_ok_and(|rel| m.is_match(rel))
                }
            }
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.pattern {
            None => f.write_str(&self.tool),
            Some((p, _)) => write!(f, "{}({})", self.tool, p),
        }
    }
}
