//! The configuration: size bands, actions with `then` fallbacks, per-tool overrides, units.
//!
//! One JSON form serves the CLI, activity inputs and worker defaults. Missing fields take the
//! reference's defaults; unknown fields and out-of-range numbers are errors naming the field.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::harness::Harness;
use super::prompt::{DEFAULT_SUMMARY_PROMPT, Template};
use super::serialize::SerializerKind;
use super::tokens::Tokenizer;

/// The reference's default band threshold, in characters.
pub const DEFAULT_THRESHOLD: i64 = 10_000;

/// The read-back tool's default name, as the spill marker names it.
pub const DEFAULT_READ_TOOL_NAME: &str = "read_tool_result";

/// A configuration that cannot be used: the JSON does not parse, a field is unknown or has the
/// wrong type, or a value is out of range.
#[derive(Debug, thiserror::Error)]
#[error("invalid limits configuration at `{path}`: {message}")]
pub struct ConfigError {
    path: String,
    message: String,
}

impl ConfigError {
    fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
        }
    }

    /// The configuration path of the offending field (`bands[0].action.max_chars`).
    pub fn path(&self) -> &str {
        &self.path
    }
}

/// Everything that decides how tool returns are reduced.
#[derive(Clone, PartialEq, Serialize, Deserialize, derive_more::Debug)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// The pydantic-ai-harness release whose text and rules to produce (`"0.62"`, `"0.75"`);
    /// absent: the newest known.
    pub harness: Harness,
    /// Size bands; the band with the largest threshold met wins (first listed among equals).
    pub bands: Vec<Band>,
    /// Band lists that replace `bands` for the named tools.
    pub per_tool: BTreeMap<String, Vec<Band>>,
    /// Which tools are reduced at all.
    pub tool_filter: ToolFilter,
    /// Measure text thresholds in tokens of `tokenizer` instead of chars.
    pub over_tokens: bool,
    /// How tokens are counted, for `over_tokens` and `max_tokens`; absent: the harness release's
    /// own estimate ([`Harness::estimate`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<Tokenizer>,
    /// Strip ANSI escape sequences from text before measuring and reducing.
    pub strip_ansi: bool,
    /// How structured (JSON) returns are rendered to text; `None` is compact JSON.
    pub serializer: Option<SerializerKind>,
    /// Summarize prompt template with `{tool_name}` and `{output}` (Python `str.format` style).
    #[debug(skip)]
    pub summary_prompt: String,
    /// The read-back tool's name as the model sees it, named in the spill marker.
    #[debug(skip)]
    pub read_tool_name: String,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            harness: Harness::NEWEST,
            bands: vec![Band {
                over: DEFAULT_THRESHOLD,
                action: Action::Spill(Spill {
                    then: Some(Box::new(Action::Truncate(Truncate::default()))),
                    ..Spill::default()
                }),
            }],
            per_tool: BTreeMap::new(),
            tool_filter: ToolFilter::All,
            over_tokens: false,
            tokenizer: None,
            strip_ansi: false,
            serializer: None,
            summary_prompt: DEFAULT_SUMMARY_PROMPT.to_owned(),
            read_tool_name: DEFAULT_READ_TOOL_NAME.to_owned(),
        }
    }
}

impl Limits {
    /// Parse and validate the JSON form.
    pub fn from_json(json: &str) -> Result<Self, ConfigError> {
        Self::from_deserializer(&mut serde_json::Deserializer::from_str(json))
    }

    /// Parse and validate an already-parsed JSON value (an activity input's `config`).
    pub fn from_value(value: serde_json::Value) -> Result<Self, ConfigError> {
        Self::from_deserializer(value)
    }

    fn from_deserializer<'de, D: serde::Deserializer<'de>>(de: D) -> Result<Self, ConfigError> {
        let limits: Self = serde_path_to_error::deserialize(de)
            .map_err(|e| ConfigError::new(e.path().to_string(), e.inner().to_string()))?;
        limits.validate()?;
        Ok(limits)
    }

    /// Check every range rule, naming the offending field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        validate_bands(&self.bands, "bands")?;
        for (tool, bands) in &self.per_tool {
            validate_bands(bands, &format!("per_tool.{tool}"))?;
        }
        let mut bands = self.bands.iter().chain(self.per_tool.values().flatten());
        if bands.any(|b| b.action.can_summarize()) {
            // The template's own checks (see `Template::parse`).
            Template::parse(&self.summary_prompt)
                .map_err(|e| ConfigError::new("summary_prompt", e.to_string()))?;
        }
        Ok(())
    }

    /// How tokens are counted: the `tokenizer`, else the harness release's own estimate.
    pub fn counter(&self) -> Tokenizer {
        self.tokenizer.unwrap_or(self.harness.estimate())
    }

    /// The band list that applies to `tool_name` (`per_tool` replaces, never merges).
    pub fn bands_for(&self, tool_name: &str) -> &[Band] {
        self.per_tool.get(tool_name).unwrap_or(&self.bands)
    }
}

fn validate_bands(bands: &[Band], path: &str) -> Result<(), ConfigError> {
    for (i, band) in bands.iter().enumerate() {
        if band.over < 0 {
            let message = "Band.over must be non-negative.";
            return Err(ConfigError::new(format!("{path}[{i}].over"), message));
        }
        band.action.validate(&format!("{path}[{i}].action"))?;
    }
    Ok(())
}

/// One size band: when a return's measured size reaches `over`, `action` runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Band {
    /// Inclusive threshold, in chars (or tokens with `over_tokens`; bytes for binary returns).
    pub over: i64,
    /// What to do with a return in this band.
    pub action: Action,
}

/// What a band does to a return. Every action but Passthrough has a `then` fallback.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Action {
    /// Leave the return untouched.
    Passthrough,
    /// Clamp the text to a character budget (lossy, free).
    Truncate(Truncate),
    /// Store the full payload and hand the model a handle and a preview (lossless).
    Spill(Spill),
    /// Replace the text with a model-written summary (lossy, one model call).
    Summarize(Summarize),
}

impl Action {
    /// The action's fallback, if any.
    pub fn then(&self) -> Option<&Action> {
        match self {
            Self::Passthrough => None,
            Self::Truncate(t) => t.then.as_deref(),
            Self::Spill(s) => s.then.as_deref(),
            Self::Summarize(s) => s.then.as_deref(),
        }
    }

    /// The action's name as the reference logs it (`Truncate`, `Spill`, …).
    pub fn name(&self) -> &'static str {
        match self {
            Self::Passthrough => "Passthrough",
            Self::Truncate(_) => "Truncate",
            Self::Spill(_) => "Spill",
            Self::Summarize(_) => "Summarize",
        }
    }

    /// Whether this action or any fallback in its chain summarizes.
    pub fn can_summarize(&self) -> bool {
        matches!(self, Self::Summarize(_)) || self.then().is_some_and(Action::can_summarize)
    }

    fn validate(&self, path: &str) -> Result<(), ConfigError> {
        let problem = match self {
            Self::Truncate(t) if t.keep_tail_lines < 0 => {
                Some(("keep_tail_lines", "keep_tail_lines must be non-negative."))
            }
            Self::Truncate(t) if t.max_tokens.is_some_and(|max| max < 0) => {
                Some(("max_tokens", "max_tokens must be non-negative."))
            }
            Self::Truncate(t) if t.max_tokens.is_some() && t.max_chars != DEFAULT_MAX_CHARS => {
                Some((
                    "max_tokens",
                    "max_tokens replaces max_chars: set one budget, not both.",
                ))
            }
            Self::Spill(s) if s.preview_chars < 0 => {
                Some(("preview_chars", "preview_chars must be non-negative."))
            }
            _ => None,
        };
        if let Some((field, message)) = problem {
            return Err(ConfigError::new(format!("{path}.{field}"), message));
        }
        (self.then()).map_or(Ok(()), |then| then.validate(&format!("{path}.then")))
    }
}

/// The reference's Truncate budget, in chars.
pub const DEFAULT_MAX_CHARS: i64 = 4_000;

/// Clamp text to `max_chars` chars or `max_tokens` tokens (marker included).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Truncate {
    /// Which ends to keep.
    pub strategy: TruncationStrategy,
    /// The budget in chars, marker included; `<= 0` gives empty text.
    pub max_chars: i64,
    /// A budget in tokens of the limits' `tokenizer` instead of `max_chars` (marker included;
    /// `0` gives empty text).
    pub max_tokens: Option<i64>,
    /// Reserve this many complete final lines before spending the rest of the budget.
    pub keep_tail_lines: i64,
    /// Fallback for a binary return.
    pub then: Option<Box<Action>>,
}

impl Default for Truncate {
    fn default() -> Self {
        Self {
            strategy: TruncationStrategy::HeadTail,
            max_chars: DEFAULT_MAX_CHARS,
            max_tokens: None,
            keep_tail_lines: 0,
            then: None,
        }
    }
}

/// Which part of an oversized text Truncate keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TruncationStrategy {
    /// The beginning (headers, schemas).
    Head,
    /// The end (build and test output, where errors land last).
    Tail,
    /// Both ends, 2:3, eliding the middle.
    #[default]
    HeadTail,
}

/// A Spill's preview budget in chars when none is given, as the reference's.
pub const DEFAULT_PREVIEW_CHARS: i64 = 1_000;

/// Persist the payload and show a preview.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Spill {
    /// The preview's content budget in chars (header and omission marker add to it).
    pub preview_chars: i64,
    /// Fallback when the store cannot take the write.
    pub then: Option<Box<Action>>,
}

impl Default for Spill {
    fn default() -> Self {
        Self {
            preview_chars: DEFAULT_PREVIEW_CHARS,
            then: None,
        }
    }
}

/// Summarize the text with one model call.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Summarize {
    /// Model override; `None` uses the summarizer's default model.
    pub model: Option<String>,
    /// Fallback for a binary return or a failed model call.
    pub then: Option<Box<Action>>,
}

/// Which tools the limits apply to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolFilter {
    /// Every tool.
    #[default]
    All,
    /// Only the named tools.
    Names(Vec<String>),
}

impl ToolFilter {
    /// Whether `tool_name` is reduced.
    pub fn matches(&self, tool_name: &str) -> bool {
        match self {
            Self::All => true,
            Self::Names(names) => names.iter().any(|n| n == tool_name),
        }
    }
}

impl Serialize for ToolFilter {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::All => s.serialize_str("all"),
            Self::Names(names) => names.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ToolFilter {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            One(String),
            Many(Vec<String>),
        }
        match Form::deserialize(d).map_err(|_| {
            serde::de::Error::custom("expected \"all\", a tool name or a list of tool names")
        })? {
            Form::One(s) if s == "all" => Ok(Self::All),
            Form::One(name) => Ok(Self::Names(vec![name])),
            Form::Many(names) => Ok(Self::Names(names)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_json_form_is_the_reference_default() {
        let json = r#"{"bands":[{"over":10000,"action":{"type":"spill","preview_chars":1000,"then":{"type":"truncate","strategy":"head_tail","max_chars":4000,"keep_tail_lines":0}}}],"per_tool":{},"tool_filter":"all","over_tokens":false,"strip_ansi":false,"serializer":null}"#;
        let parsed = Limits::from_json(json).expect("the documented form parses");
        assert_eq!(parsed.bands, Limits::default().bands);
        assert_eq!(
            Limits::from_json("{}").expect("empty").bands,
            Limits::default().bands
        );
    }

    #[test]
    fn errors_name_the_field() {
        let unknown = Limits::from_json(
            r#"{"bands":[{"over":1,"action":{"type":"truncate","max_char":5}}]}"#,
        );
        assert_eq!(
            unknown.expect_err("unknown field").path(),
            "bands[0].action"
        );
        let negative =
            Limits::from_json(r#"{"bands":[{"over":-1,"action":{"type":"passthrough"}}]}"#);
        let err = negative.expect_err("negative over");
        assert_eq!(err.path(), "bands[0].over");
        assert!(err.to_string().contains("Band.over must be non-negative."));
        let keep = Limits::from_json(
            r#"{"per_tool":{"sh":[{"over":1,"action":{"type":"spill","then":{"type":"truncate","keep_tail_lines":-2}}}]}}"#,
        );
        assert_eq!(
            keep.expect_err("negative keep").path(),
            "per_tool.sh[0].action.then.keep_tail_lines"
        );
        assert!(Limits::from_json(r#"{"tool_filter":7}"#).is_err());
        assert!(Limits::from_json(r#"{"serializer":"yaml"}"#).is_err());
    }

    #[test]
    fn tokenizer_and_token_budget_are_checked() {
        let good = Limits::from_json(
            r#"{"tokenizer":"o200k_base","bands":[{"over":1,"action":{"type":"truncate","max_tokens":0}}]}"#,
        )
        .expect("valid");
        assert_eq!(good.counter(), Tokenizer::O200kBase);
        assert_eq!(Limits::default().counter(), Tokenizer::TextEstimate);
        let old = Limits::from_json(r#"{"harness":"0.62"}"#).expect("a known release");
        assert_eq!(old.counter(), Tokenizer::CharsDiv4);
        let unknown = Limits::from_json(r#"{"tokenizer":"gpt2"}"#).expect_err("unknown");
        assert_eq!(unknown.path(), "tokenizer");
        for (truncate, message) in [
            (r#"{"max_tokens":-1}"#, "max_tokens must be non-negative."),
            (
                r#"{"max_tokens":10,"max_chars":50}"#,
                "max_tokens replaces max_chars",
            ),
        ] {
            let json = format!(
                r#"{{"bands":[{{"over":1,"action":{{"type":"spill","then":{{"type":"truncate",{}}}}}}}]}}"#,
                &truncate[1..truncate.len() - 1]
            );
            let err = Limits::from_json(&json).expect_err(truncate);
            assert_eq!(err.path(), "bands[0].action.then.max_tokens");
            assert!(err.to_string().contains(message), "{err}");
        }
    }

    #[test]
    fn an_unknown_harness_release_is_refused_naming_the_known() {
        let error = Limits::from_json(r#"{"harness":"0.80"}"#).expect_err("unknown release");
        assert_eq!(error.path(), "harness");
        assert!(
            error
                .to_string()
                .contains("unknown harness release \"0.80\": Overspill knows 0.62 and 0.75"),
            "{error}"
        );
        assert_eq!(
            Limits::from_json("{}").expect("empty").harness,
            Harness::V0_75
        );
    }

    #[test]
    fn summary_prompt_needs_both_fields() {
        let bad = r#"{"bands":[{"over":1,"action":{"type":"summarize"}}],"summary_prompt":"only {output}"}"#;
        assert_eq!(
            Limits::from_json(bad)
                .expect_err("missing tool_name")
                .path(),
            "summary_prompt"
        );
        let good = r#"{"bands":[{"over":1,"action":{"type":"summarize"}}],"summary_prompt":"{tool_name}: {output} {{x}}"}"#;
        assert!(Limits::from_json(good).is_ok());
    }

    #[test]
    fn a_summary_prompt_repeating_output_is_refused() {
        let prompt = format!("{{tool_name}}{}", "{output}".repeat(60_000));
        let json = serde_json::json!({
            "bands": [{"over": 1, "action": {"type": "summarize"}}],
            "summary_prompt": prompt,
        });
        let error = Limits::from_json(&json.to_string()).expect_err("amplifying prompt");
        assert_eq!(error.path(), "summary_prompt");
        assert!(error.to_string().contains("{output} only once"), "{error}");
    }

    #[test]
    fn tool_filter_forms() {
        let names: ToolFilter = serde_json::from_str(r#"["a","b"]"#).expect("list");
        assert!(names.matches("a") && !names.matches("c"));
        let one: ToolFilter = serde_json::from_str(r#""a""#).expect("name");
        assert_eq!(one, ToolFilter::Names(vec!["a".into()]));
        assert_eq!(
            serde_json::to_string(&ToolFilter::All).expect("ser"),
            r#""all""#
        );
    }
}
