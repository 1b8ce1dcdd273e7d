//! What a spill says about itself without a payload read: the handle its marker shows, who wrote
//! it (its [`Scope`]), the tool that produced it, its size in chars and lines, and its first line,
//! kept as one object metadata entry (`overspill`, an `x-amz-meta-overspill` header on S3) in URL
//! query form:
//! `handle=wf%3Arun%2Fcall-1.0&scope=default%2Fagent-1&tool=run_command&chars=123456&lines=2048&first=Building%20...`.
//! The handle is kept because the object's key cannot give it back: sanitizing turns the `:` of
//! a TemporalDurability run id into `_`.
//!
//! Computed before the upload starts (a header travels with the first request): the char count
//! and the first line always; the line count only for spills under the line index's threshold,
//! since a larger spill's index header holds it (and counting 100 MB of lines would delay the
//! upload). A local file keeps the same query in its `user.overspill` extended attribute (none on a
//! filesystem without them: listings there fall back to the index).

use bytes::Bytes;
use object_store::{Attribute, Attributes};

use super::scope::Scope;
use crate::read::line_index::MIN_INDEXED_BYTES;
use crate::read::lines::{count_lines, next_break};

/// The metadata key.
const KEY: &str = "overspill";
/// The most chars of the first line kept.
const FIRST_LINE_CHARS: usize = 120;
/// The most bytes of tool name kept.
const TOOL_BYTES: usize = 128;

/// What is known about a spill without reading it; `None` where it is not known (spills written
/// before this metadata existed, or by writers that set none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpillFacts {
    /// The handle its marker shows: the key it was written under, unsanitized.
    pub handle: Option<String>,
    /// The workflow that wrote it; `None` where unknown (written outside a workflow, or before
    /// scopes were kept), which only a reader of every spill may read.
    pub scope: Option<Scope>,
    /// The tool whose output it is.
    pub tool: Option<String>,
    /// Chars of its text (UTF-8 code points).
    pub chars: Option<u64>,
    /// Lines, as `str.splitlines()` counts them.
    pub lines: Option<u64>,
    /// Its first line, cut to 120 chars.
    pub first_line: Option<String>,
}

impl SpillFacts {
    /// Measure `data` (on a blocking thread), the output of `tool` (if known) spilled under
    /// `handle` by the workflow of `scope` (if any).
    pub(crate) async fn measure(
        data: &Bytes,
        tool: Option<&str>,
        handle: &str,
        scope: Option<&Scope>,
    ) -> Self {
        let data = data.clone();
        let measured = tokio::task::spawn_blocking(move || Self::of(&data)).await;
        let mut facts = measured.unwrap_or_default();
        facts.tool = tool
            .filter(|t| !t.is_empty())
            .map(|t| cut_chars(t.as_bytes(), TOOL_BYTES));
        facts.handle = Some(handle.to_owned());
        facts.scope = scope.cloned();
        facts
    }

    fn of(data: &[u8]) -> Self {
        let chars = bytecount::num_chars(data) as u64;
        let small = (data.len() as u64) < MIN_INDEXED_BYTES;
        let head = &data[..data.len().min(4 * FIRST_LINE_CHARS)];
        let first_end = next_break(head, 0).map_or(head.len(), |(at, _)| at);
        Self {
            handle: None,
            scope: None,
            tool: None,
            chars: Some(chars),
            lines: small.then(|| count_lines(data)),
            first_line: Some(cut_chars(&head[..first_end], FIRST_LINE_CHARS)),
        }
    }

    /// The object attributes that carry these facts.
    pub(crate) fn to_attributes(&self) -> Attributes {
        Attributes::from_iter([(Attribute::Metadata(KEY.into()), self.to_query())])
    }

    /// These facts in URL query form (a local file keeps them in its `user.overspill` xattr).
    pub(crate) fn to_query(&self) -> String {
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        let mut put = |name: &str, value: Option<String>| {
            if let Some(value) = value {
                query.append_pair(name, &value);
            }
        };
        put("handle", self.handle.clone());
        put("scope", self.scope.as_ref().map(Scope::to_string));
        put("tool", self.tool.clone());
        put("chars", self.chars.map(|n| n.to_string()));
        put("lines", self.lines.map(|n| n.to_string()));
        put("first", self.first_line.clone());
        query.finish()
    }

    /// The facts an object's attributes carry (all unknown if none).
    pub(crate) fn from_attributes(attributes: &Attributes) -> Self {
        let value = attributes.get(&Attribute::Metadata(KEY.into()));
        value.map_or_else(Self::default, |v| Self::from_query(v.as_ref().as_bytes()))
    }

    /// The facts `query` (as [`Self::to_query`] writes it) carries.
    pub(crate) fn from_query(query: &[u8]) -> Self {
        let mut facts = Self::default();
        for (name, value) in url::form_urlencoded::parse(query) {
            match name.as_ref() {
                "handle" => facts.handle = Some(value.into_owned()),
                "scope" => facts.scope = Scope::parse(&value),
                "tool" => facts.tool = Some(value.into_owned()),
                "chars" => facts.chars = value.parse().ok(),
                "lines" => facts.lines = value.parse().ok(),
                "first" => facts.first_line = Some(value.into_owned()),
                _ => {}
            }
        }
        facts
    }
}

/// The lossy decoding of `bytes`, cut to `max` chars.
fn cut_chars(bytes: &[u8], max: usize) -> String {
    String::from_utf8_lossy(bytes).chars().take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn facts_round_trip_through_attributes() {
        let data = Bytes::from("ünïcode & more\r\nsecond\nthird");
        let scope = Scope::new("default", "wf");
        let facts =
            SpillFacts::measure(&data, Some("run command"), "wf:run/c.0", Some(&scope)).await;
        assert_eq!(
            facts,
            SpillFacts {
                handle: Some("wf:run/c.0".into()),
                scope: Some(scope),
                tool: Some("run command".into()),
                chars: Some(28),
                lines: Some(3),
                first_line: Some("ünïcode & more".into()),
            }
        );
        let attributes = facts.to_attributes();
        let value = attributes
            .get(&Attribute::Metadata(KEY.into()))
            .expect("set");
        assert!(value.as_ref().is_ascii(), "{}", value.as_ref());
        assert_eq!(SpillFacts::from_attributes(&attributes), facts);
        assert_eq!(
            SpillFacts::from_attributes(&Attributes::new()),
            SpillFacts::default()
        );
    }

    #[tokio::test]
    async fn large_spills_leave_their_line_count_to_the_index() {
        let data = Bytes::from("x\n".repeat(MIN_INDEXED_BYTES as usize));
        let facts = SpillFacts::measure(&data, None, "r/c.0", None).await;
        assert_eq!(facts.lines, None);
        assert_eq!(facts.chars, Some(data.len() as u64));
        assert_eq!(facts.first_line.as_deref(), Some("x"));
    }

    /// A long non-ASCII workflow id is kept as its digest, within the scope's bound, and reads
    /// back equal to the scope computed again from the same names.
    #[tokio::test]
    async fn a_long_scope_round_trips_as_its_digest() {
        let workflow = "ワークフロー".repeat(100);
        let scope = Scope::new("tenant-ü", &workflow);
        let facts = SpillFacts::measure(&Bytes::from("x"), None, "r/c.0", Some(&scope)).await;
        let query = facts.to_query();
        let entry = query
            .split('&')
            .find_map(|p| p.strip_prefix("scope="))
            .expect("a scope entry");
        assert!(
            entry.len() <= super::super::scope::MAX_SCOPE_BYTES,
            "{entry}"
        );
        assert!(entry.contains("sha256%3A"), "{entry}");
        let back = SpillFacts::from_query(query.as_bytes());
        assert_eq!(back.scope, Some(Scope::new("tenant-ü", &workflow)));
        assert_eq!(back, facts);
    }

    /// A spill without a scope entry, or with one that names no writer, has an unknown writer.
    #[test]
    fn a_missing_or_broken_scope_is_unknown() {
        assert_eq!(
            SpillFacts::from_query(b"handle=r%2Fc.0&chars=1").scope,
            None
        );
        assert_eq!(SpillFacts::from_query(b"scope=nobody").scope, None);
        assert_eq!(SpillFacts::from_query(b"scope=n%2Fsha256%3Ab").scope, None);
    }
}
