//! The read-back tools as a model sees them: for each of `read_tool_result`, `grep_tool_result`,
//! `query_tool_result` and `list_tool_results`, its name, the Overspill activity that serves it,
//! its description and its parameters as a JSON Schema object. One table for every framework
//! integration, so that no integration keeps a copy of a tool's words.
//!
//! `read_tool_result` and `grep_tool_result` are pydantic-ai-harness 0.75's tools, their
//! descriptions byte for byte the harness's as pydantic-ai renders them; `grep_tool_result` adds
//! Overspill's `regex` (off unless asked). `query_tool_result` and `list_tool_results` are
//! Overspill's own, in the words their models already see. Each parameter's bounds (`minimum`, `maximum`, `enum`)
//! are the engine's own checks and clamps, from the constants the pages use.
//!
//! `list_tool_results` also needs the run id (and, optionally, tool names by call id) from the
//! framework: those are not the model's arguments and are not in the schema.
//!
//! ```
//! let tools = overspill::tools::read_back_tools();
//! assert_eq!(tools[1].name, "grep_tool_result");
//! assert_eq!(tools[1].activity, "tool_output_limits.grep_tool_result");
//! assert_eq!(tools[1].parameters["properties"]["max_matches"]["maximum"], 200);
//! ```

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::names;
use crate::query::DEFAULT_QUERY_LIMIT;
use crate::read::{
    DEFAULT_GREP_CONTEXT, DEFAULT_GREP_MATCHES, DEFAULT_LIMIT, MAX_GREP_CONTEXT, MAX_GREP_MATCHES,
    MAX_READ_BYTES, MAX_READ_LINES,
};
use crate::store::{DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT};

/// One read-back tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    /// The tool's name as the model calls it.
    pub name: &'static str,
    /// The Overspill activity that serves it (`tool_output_limits.<name>`).
    pub activity: &'static str,
    /// What the model reads about the tool.
    pub description: &'static str,
    /// Its arguments: a JSON Schema object (`type`, `properties`, `required`,
    /// `additionalProperties: false`), each property with its `type`, `description`, `default`
    /// where it has one, and its bounds.
    pub parameters: Value,
}

/// The handle parameter of the harness's tools, in its words.
const HANDLE: &str = "The handle from the overflowed tool return.";
/// The handle parameter of Overspill's own `query_tool_result`, in the words its model sees.
const SPILL_MARKER_HANDLE: &str =
    "The handle from a \"[Tool output too large ... stored to handle ...]\" marker.";

/// The four read-back tools: `read_tool_result`, `grep_tool_result`, `query_tool_result`,
/// `list_tool_results`, in that order.
pub fn read_back_tools() -> Vec<ToolSpec> {
    vec![read(), grep(), query(), list()]
}

fn read() -> ToolSpec {
    ToolSpec {
        name: "read_tool_result",
        activity: names::READ_TOOL_RESULT,
        description: "Read a slice of a spilled tool result.",
        parameters: object(
            &["handle"],
            [
                ("handle", string(HANDLE)),
                (
                    "offset",
                    integer(
                        "Number of matching lines (or bytes) to skip from the start (or end). Must be >= 0.",
                        0,
                        0,
                        None,
                    ),
                ),
                (
                    "limit",
                    integer(
                        "Maximum number of lines (or bytes) to return (>= 1; clamped to a built-in cap).",
                        DEFAULT_LIMIT,
                        1,
                        // The larger of the two clamps: 1,000 lines, or 50,000 bytes.
                        Some(MAX_READ_BYTES.max(MAX_READ_LINES)),
                    ),
                ),
                (
                    "from_end",
                    boolean("Count `offset`/`limit` from the end of the result.", false),
                ),
                (
                    "pattern",
                    json!({
                        "type": ["string", "null"],
                        "description": "Optional literal substring; only lines containing it are returned.",
                        "default": null,
                    }),
                ),
                (
                    "unit",
                    json!({
                        "type": "string",
                        "description": format!(
                            "`'bytes'` slices raw bytes, for output without useful line breaks such as minified JSON;\n`offset` and `limit` then count bytes, so pass a larger `limit` (up to {}).",
                            crate::limits::pyfmt::thousands(MAX_READ_BYTES as u64)
                        ),
                        "default": "lines",
                        "enum": ["lines", "bytes"],
                    }),
                ),
            ],
        ),
    }
}

fn grep() -> ToolSpec {
    ToolSpec {
        name: "grep_tool_result",
        activity: names::GREP_TOOL_RESULT,
        description: "Find the lines of a spilled tool result that contain a literal substring, with their line numbers.\n\nMatching lines are prefixed `N:` and context lines `N-`; separate groups are divided by `--`.",
        parameters: object(
            &["handle", "pattern"],
            [
                ("handle", string(HANDLE)),
                (
                    "pattern",
                    string("Literal substring to find (not a regex)."),
                ),
                (
                    "context",
                    integer(
                        "Lines to show before and after each match (>= 0; clamped to a built-in cap).",
                        DEFAULT_GREP_CONTEXT,
                        0,
                        Some(MAX_GREP_CONTEXT),
                    ),
                ),
                (
                    "max_matches",
                    integer(
                        "Maximum number of matches to return (>= 1; clamped to a built-in cap).",
                        DEFAULT_GREP_MATCHES,
                        1,
                        Some(MAX_GREP_MATCHES),
                    ),
                ),
                (
                    "offset",
                    integer(
                        "Number of matches to skip, to continue a previous search. Must be >= 0.",
                        0,
                        0,
                        None,
                    ),
                ),
                (
                    "regex",
                    boolean(
                        "Treat `pattern` as a regular expression (Rust `regex` syntax: no look-around or backreferences) instead of a literal substring.",
                        false,
                    ),
                ),
            ],
        ),
    }
}

fn query() -> ToolSpec {
    ToolSpec {
        name: "query_tool_result",
        activity: names::QUERY_TOOL_RESULT,
        description: "Run a jq filter over a spilled tool result that is JSON (one document, or JSON Lines).\n\nThe filter runs on each JSON value of the result (each line of JSON Lines); its results\nare shown one compact JSON value per line, under a header counting them, with a note\ngiving the `offset` of the next page when more exist. Use it to pull fields out of a\nlarge JSON result, e.g. `.items[] | select(.status == \"failed\") | .id`, or to see its\nshape with `keys` or `.[0]`. A result longer than 10,000 chars is cut with a marker.",
        parameters: object(
            &["handle", "filter"],
            [
                ("handle", string(SPILL_MARKER_HANDLE)),
                (
                    "filter",
                    string("A jq filter (jq syntax, as implemented by jaq)."),
                ),
                ("offset", integer("Results to skip.", 0, 0, None)),
                (
                    "limit",
                    integer(
                        "Results to show (1-1000).",
                        DEFAULT_QUERY_LIMIT,
                        1,
                        Some(MAX_READ_LINES),
                    ),
                ),
            ],
        ),
    }
}

fn list() -> ToolSpec {
    ToolSpec {
        name: "list_tool_results",
        activity: names::LIST_TOOL_RESULTS,
        description: "List the tool results spilled in this run, newest first.\n\nFor each: its handle, the tool that produced it, its size in chars and lines, how long ago\nit was written and its first line. Use it to find the handle of an earlier result whose\nmarker is no longer in view; then search it with `grep_tool_result` or page through it\nwith `read_tool_result`.",
        parameters: object(
            &[],
            [(
                "limit",
                integer(
                    "Spills to show, newest first (1-1000).",
                    DEFAULT_LIST_LIMIT,
                    1,
                    Some(MAX_LIST_LIMIT),
                ),
            )],
        ),
    }
}

/// A JSON Schema object of `properties` (in order), `required` ones named, no others allowed.
fn object<const N: usize>(required: &[&str], properties: [(&str, Value); N]) -> Value {
    let properties: Map<String, Value> = (properties.into_iter())
        .map(|(name, schema)| (name.to_owned(), schema))
        .collect();
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

fn string(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

fn boolean(description: &str, default: bool) -> Value {
    json!({"type": "boolean", "description": description, "default": default})
}

/// An integer of at least `minimum` (the engine's check) and at most `maximum` (its clamp).
fn integer(description: &str, default: i64, minimum: i64, maximum: Option<i64>) -> Value {
    let mut schema = json!({
        "type": "integer",
        "description": description,
        "default": default,
        "minimum": minimum,
    });
    if let Some(maximum) = maximum {
        schema["maximum"] = maximum.into();
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every tool's schema is an object whose required names are properties, every property
    /// typed and described, and a default within the property's bounds.
    #[test]
    fn every_schema_is_well_formed() {
        let tools = read_back_tools();
        let names: Vec<_> = tools.iter().map(|t| t.name).collect();
        assert_eq!(
            names,
            [
                "read_tool_result",
                "grep_tool_result",
                "query_tool_result",
                "list_tool_results"
            ]
        );
        for tool in &tools {
            assert_eq!(tool.activity, format!("tool_output_limits.{}", tool.name));
            let schema = &tool.parameters;
            assert_eq!(schema["type"], "object");
            assert_eq!(schema["additionalProperties"], false);
            let properties = schema["properties"].as_object().expect("properties");
            for required in schema["required"].as_array().expect("required") {
                let name = required.as_str().expect("a name");
                assert!(properties.contains_key(name), "{}: {name}", tool.name);
                assert!(properties[name].get("default").is_none());
            }
            for (name, property) in properties {
                assert!(property.get("type").is_some(), "{}.{name}", tool.name);
                assert!(property["description"].is_string(), "{}.{name}", tool.name);
                if let Some(default) = property.get("default").and_then(Value::as_i64) {
                    let minimum = property["minimum"].as_i64().unwrap_or(i64::MIN);
                    let maximum = property["maximum"].as_i64().unwrap_or(i64::MAX);
                    assert!(
                        (minimum..=maximum).contains(&default),
                        "{}.{name}",
                        tool.name
                    );
                }
            }
        }
    }

    #[test]
    fn bounds_are_the_pages_clamps() {
        let tools = read_back_tools();
        let property = |tool: usize, name: &str| tools[tool].parameters["properties"][name].clone();
        assert_eq!(property(0, "limit")["maximum"], 50_000);
        assert_eq!(property(0, "unit")["enum"], json!(["lines", "bytes"]));
        assert_eq!(property(1, "context")["maximum"], 10);
        assert_eq!(property(1, "context")["default"], 2);
        assert_eq!(property(1, "max_matches")["default"], 20);
        assert_eq!(property(1, "regex")["default"], false);
        assert_eq!(property(2, "limit")["maximum"], 1_000);
        assert_eq!(property(3, "limit")["maximum"], 1_000);
    }
}
