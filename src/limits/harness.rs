//! The pydantic-ai-harness release whose model-visible text and rules the engine produces (the
//! limits' `harness` field): every place two releases differ asks [`Harness`] here, so following
//! a new release means adding a variant and answering these questions for it.
//!
//! What differs between 0.62 and 0.75:
//!
//! | | 0.62 | 0.75 |
//! |---|---|---|
//! | truncation markers | `[... output truncated, showing last N chars]`, `[truncated: …]` | the same, ending `; rerun the original tool for the full output` ([`Harness::rerun_note`]) |
//! | a summary | the summary | `[summary of N chars of output; rerun the original tool for the full output]` above it ([`Harness::summary`]) |
//! | the token estimate (`over_tokens` without a `tokenizer`, the spill marker's size) | `chars // 4` | the text estimate, priced up for dense content ([`Harness::estimate`]) |
//! | metadata that is a list | kept under `original_metadata` | stays a list, the handles appended ([`Harness::keeps_metadata_lists`]) |
//! | a tool call id reused in a later step of the run | the plain key (overwrites) | `run_id/<step>/tool_call_id.retry` ([`Harness::keys_by_step`]) |
//! | returns never reduced | the read tool's | the read and grep tools' ([`Harness::exempt_kinds`]) |
//! | `read_tool_result` pages | the body cut at 50,000 chars | stop before the line that would cross 50,000 chars and say where to continue; a longer line cut with the byte offset of its rest; a pattern matched against the raw text ([`Harness::pages`]) |
//!
//! Both releases: `read_tool_result(unit='bytes')` and `grep_tool_result` (0.75's tools, which
//! 0.62 does not have) page the same way, in 0.75's words.
//!
//! **Adding a release**: a variant and its version in [`Harness::KNOWN`] (the newest last: it is
//! the default); its answer to each method where it differs; its goldens recorded from the
//! package (`tests/golden/generate.py`, see `tests/README.md`) and checked by
//! `tests/integration/golden.rs`; the pydantic-ai adapter's tested range (`pyproject.toml`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::pyfmt::thousands;
use super::tokens::Tokenizer;

/// A pydantic-ai-harness release whose text and rules the engine speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Harness {
    /// pydantic-ai-harness 0.62 (with pydantic-ai-slim 2.62).
    V0_62,
    /// pydantic-ai-harness 0.75 (with pydantic-ai-slim 2.75): the newest known, the default.
    #[default]
    V0_75,
}

/// A release the engine does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown harness release {0:?}: Overspill knows {known}", known = Harness::known())]
pub struct UnknownHarness(pub String);

/// How a lossy reduction (truncate, summarize), which keeps no copy, tells the model to recover the rest.
const RERUN_NOTE: &str = "; rerun the original tool for the full output";

/// The tool kinds whose returns are never reduced: the read-back tools' own pages, and core's
/// capability-load / tool-search returns (core reads them back from history).
const EXEMPT_0_62: &[&str] = &[
    crate::names::READ_TOOL_RESULT,
    "capability-load",
    "tool-search",
];
const EXEMPT_0_75: &[&str] = &[
    crate::names::READ_TOOL_RESULT,
    crate::names::GREP_TOOL_RESULT,
    "capability-load",
    "tool-search",
];

/// How a release pages a spill back by lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pages {
    /// The window's lines joined and cut at 50,000 chars, `, output capped` in the header; a
    /// pattern matches the lossy decoding (0.62).
    CutBody,
    /// Lines up to the one that would cross 50,000 chars, the header saying where the next
    /// lines are; a line longer than that cut, with the byte offset of its rest; a pattern
    /// matches the text with undecodable bytes kept apart (0.75).
    WholeLines,
}

impl Harness {
    /// Every release the engine knows, oldest first.
    pub const KNOWN: [Harness; 2] = [Harness::V0_62, Harness::V0_75];

    /// The newest release known: what a configuration without `harness` speaks.
    pub const NEWEST: Harness = Harness::V0_75;

    /// The release's version, as the configuration names it (`0.75`).
    pub fn version(self) -> &'static str {
        match self {
            Self::V0_62 => "0.62",
            Self::V0_75 => "0.75",
        }
    }

    /// The release a pydantic-ai-harness package version speaks: its `major.minor` (`0.75.0` is
    /// 0.75); a version of no known release is refused, naming the known ones.
    pub fn of_package(version: &str) -> Result<Self, UnknownHarness> {
        let release: Vec<&str> = version.splitn(3, '.').take(2).collect();
        (release.join(".").parse()).map_err(|_| UnknownHarness(version.to_owned()))
    }

    /// The known releases as a message names them (`0.62 and 0.75`).
    pub fn known() -> String {
        let versions: Vec<_> = Self::KNOWN.iter().map(|h| h.version()).collect();
        match versions.split_last() {
            Some((last, [])) => (*last).to_owned(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
            None => String::new(),
        }
    }

    /// What ends a truncation marker, inside its brackets.
    pub fn rerun_note(self) -> &'static str {
        match self {
            Self::V0_62 => "",
            Self::V0_75 => RERUN_NOTE,
        }
    }

    /// The model-visible text of a summary of `chars` chars of output.
    pub fn summary(self, chars: u64, summary: &str) -> String {
        match self {
            Self::V0_62 => summary.to_owned(),
            Self::V0_75 => format!(
                "[summary of {} chars of output{RERUN_NOTE}]\n{summary}",
                thousands(chars)
            ),
        }
    }

    /// The release's own token estimate: what `over_tokens` counts without a `tokenizer`, and
    /// what the spill marker's size in tokens always counts.
    pub fn estimate(self) -> Tokenizer {
        match self {
            Self::V0_62 => Tokenizer::CharsDiv4,
            Self::V0_75 => Tokenizer::TextEstimate,
        }
    }

    /// Whether metadata that is a list stays a list, the spill handles appended as one item
    /// (else it is kept under `original_metadata`, like any value that is not a mapping).
    pub fn keeps_metadata_lists(self) -> bool {
        self == Self::V0_75
    }

    /// Whether a spill of a tool call id that an earlier step of the run already spilled goes
    /// under the run step (`run_id/<step>/tool_call_id.retry`) instead of overwriting it.
    pub fn keys_by_step(self) -> bool {
        self == Self::V0_75
    }

    /// The tool kinds whose returns are never reduced.
    pub fn exempt_kinds(self) -> &'static [&'static str] {
        match self {
            Self::V0_62 => EXEMPT_0_62,
            Self::V0_75 => EXEMPT_0_75,
        }
    }

    /// How `read_tool_result` pages by lines.
    pub fn pages(self) -> Pages {
        match self {
            Self::V0_62 => Pages::CutBody,
            Self::V0_75 => Pages::WholeLines,
        }
    }
}

impl fmt::Display for Harness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.version())
    }
}

impl FromStr for Harness {
    type Err = UnknownHarness;

    fn from_str(version: &str) -> Result<Self, Self::Err> {
        (Self::KNOWN.into_iter())
            .find(|h| h.version() == version)
            .ok_or_else(|| UnknownHarness(version.to_owned()))
    }
}

impl Serialize for Harness {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.version())
    }
}

impl<'de> Deserialize<'de> for Harness {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let version = String::deserialize(d)?;
        version.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_parse_and_unknown_ones_name_the_known() {
        assert_eq!("0.62".parse(), Ok(Harness::V0_62));
        assert_eq!(Harness::default(), Harness::NEWEST);
        assert_eq!(Harness::KNOWN.last(), Some(&Harness::NEWEST));
        let error = "0.80".parse::<Harness>().expect_err("unknown");
        assert_eq!(
            error.to_string(),
            "unknown harness release \"0.80\": Overspill knows 0.62 and 0.75"
        );
        assert_eq!(Harness::of_package("0.75.0"), Ok(Harness::V0_75));
        assert_eq!(
            Harness::of_package("0.76.0").map_err(|e| e.to_string()),
            Err("unknown harness release \"0.76.0\": Overspill knows 0.62 and 0.75".into())
        );
        let json: Harness = serde_json::from_str("\"0.75\"").expect("known");
        assert_eq!(
            serde_json::to_string(&json).expect("serializes"),
            "\"0.75\""
        );
    }

    #[test]
    fn summaries_say_how_much_was_summarized() {
        assert_eq!(Harness::V0_62.summary(20_000, "ok"), "ok");
        assert_eq!(
            Harness::V0_75.summary(20_000, "ok"),
            "[summary of 20,000 chars of output; rerun the original tool for the full output]\nok"
        );
    }
}
