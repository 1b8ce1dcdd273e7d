//! What a spill says about itself without a payload read: the handle its marker shows, who wrote
//! it (its [`Scope`]) and at which run step, the tool that produced it, its size in chars and
//! lines, and its first line,
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
//!
//! # Size
//!
//! AWS S3 refuses user metadata over 2 KB (the UTF-8 bytes of every `x-amz-meta-*` key and value
//! together; GCS and Azure allow 8 KiB), and percent-encoding triples a non-ASCII byte. The entry,
//! key included, stays within [`FACTS_BUDGET`] bytes whatever the names, which leaves
//! [`SCOPE_RESERVE`] bytes for the writer's scope and a margin below the limit: the tool name is
//! cut to [`TOOL_BYTES`] encoded bytes and the first line to 120 chars and [`FIRST_LINE_BYTES`]
//! encoded bytes (each on a char boundary); the numbers always fit. The handle is kept whole or
//! not at all (a cut handle names no spill): a handle too long for what is left is left out, and
//! readers then show the stored key, which reads the same spill (a listing of a run rebuilds the
//! handle from the run id it was asked for).

use bytes::Bytes;
use object_store::{Attribute, Attributes, GetOptions};

use super::local::WithMetadata;
use super::scope::{MAX_SCOPE_BYTES, Scope};
use crate::read::line_index::MIN_INDEXED_BYTES;
use crate::read::lines::{count_lines, next_break};

/// The metadata key.
const KEY: &str = "overspill";
/// The most chars of the first line kept.
const FIRST_LINE_CHARS: usize = 120;
/// AWS S3's limit on a request's user metadata: the UTF-8 bytes of every key and value.
const S3_METADATA_BYTES: usize = 2048;
/// The bytes kept free for the writer's scope: `&scope=` and up to [`MAX_SCOPE_BYTES`] (220)
/// encoded bytes.
pub(crate) const SCOPE_RESERVE: usize = 232;
const _: () = assert!("&scope=".len() + MAX_SCOPE_BYTES <= SCOPE_RESERVE);
/// The bytes kept free below S3's limit, beyond the scope.
const MARGIN: usize = 224;
/// The most bytes the entry (key and URL-query value) takes, the scope aside.
pub(crate) const FACTS_BUDGET: usize = S3_METADATA_BYTES - SCOPE_RESERVE - MARGIN;
/// The most bytes of the tool name, percent-encoded.
const TOOL_BYTES: usize = 192;
/// The most bytes of the first line, percent-encoded.
const FIRST_LINE_BYTES: usize = 480;

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
    /// Its first line, cut to 120 chars (and fewer where percent-encoding would take over 480
    /// bytes).
    pub first_line: Option<String>,
    /// The run step that wrote it, where its writer said (see
    /// [`SpillStore::step_of`](crate::limits::SpillStore::step_of)).
    pub step: Option<u64>,
}

impl SpillFacts {
    /// Measure `data` (on a blocking thread), the output of `tool` (if known) spilled under
    /// `handle` by the workflow of `scope` (if any) at run step `step` (if known).
    ///
    /// The facts fit [`FACTS_BUDGET`] (see the module's doc), the scope aside. A measurement that
    /// panics (a bug) is logged at ERROR and leaves the counts and first line unknown: the spill
    /// itself stands.
    pub(crate) async fn measure(
        data: &Bytes,
        tool: Option<&str>,
        handle: &str,
        scope: Option<&Scope>,
        step: Option<u64>,
    ) -> Self {
        Self::measure_with(data, tool, handle, scope, step, Self::of).await
    }

    /// [`Self::measure`] with `of` measuring the data.
    async fn measure_with(
        data: &Bytes,
        tool: Option<&str>,
        handle: &str,
        scope: Option<&Scope>,
        step: Option<u64>,
        of: fn(&[u8]) -> Self,
    ) -> Self {
        let data = data.clone();
        let measured = tokio::task::spawn_blocking(move || of(&data)).await;
        let mut facts = measured.unwrap_or_else(|e| {
            tracing::error!(
                target: "overspill::bug",
                "measuring spill {handle:?} failed ({e}); it is stored without its sizes and \
                 first line"
            );
            Self::default()
        });
        facts.tool =
            (tool.filter(|t| !t.is_empty())).map(|t| cut_encoded(t, usize::MAX, TOOL_BYTES));
        facts.handle = Some(handle.to_owned());
        facts.step = step;
        facts.fit();
        // After the fit: the scope has a reserve of its own, and is never cut.
        facts.scope = scope.cloned();
        facts
    }

    fn of(data: &[u8]) -> Self {
        let chars = bytecount::num_chars(data) as u64;
        let small = (data.len() as u64) < MIN_INDEXED_BYTES;
        let head = &data[..data.len().min(4 * FIRST_LINE_CHARS)];
        let first_end = next_break(head, 0).map_or(head.len(), |(at, _)| at);
        let first = String::from_utf8_lossy(&head[..first_end]);
        Self {
            handle: None,
            scope: None,
            tool: None,
            chars: Some(chars),
            lines: small.then(|| count_lines(data)),
            first_line: Some(cut_encoded(&first, FIRST_LINE_CHARS, FIRST_LINE_BYTES)),
            step: None,
        }
    }

    /// Leave the handle out when the entry would take more than [`FACTS_BUDGET`] bytes with it
    /// (the other fields are cut when measured).
    fn fit(&mut self) {
        if KEY.len() + self.to_query().len() > FACTS_BUDGET {
            tracing::debug!(
                target: "overspill::store",
                "the handle of spill {:?} is too long for its metadata: listings show its key",
                self.handle
            );
            self.handle = None;
        }
    }

    /// `options`, asking for the facts with the reply if `wanted` (an object store sends them
    /// anyway; a local root reads them only when asked).
    pub(crate) fn asked_if(wanted: bool, mut options: GetOptions) -> GetOptions {
        if wanted {
            options.extensions.insert(WithMetadata(KEY));
        }
        options
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
        put("step", self.step.map(|n| n.to_string()));
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
                "step" => facts.step = value.parse().ok(),
                _ => {}
            }
        }
        facts
    }
}

/// `text` cut to at most `chars` chars taking at most `bytes` bytes in URL query form.
fn cut_encoded(text: &str, chars: usize, bytes: usize) -> String {
    let mut left = bytes;
    let mut buf = [0; 4];
    (text.chars().take(chars))
        .take_while(|c| {
            let encoded = url::form_urlencoded::byte_serialize(c.encode_utf8(&mut buf).as_bytes());
            let len = encoded.map(str::len).sum::<usize>();
            let fits = len <= left;
            left = left.saturating_sub(len);
            fits
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn facts_round_trip_through_attributes() {
        let data = Bytes::from("ünïcode & more\r\nsecond\nthird");
        let scope = Scope::new("default", "wf").unwrap();
        let facts = SpillFacts::measure(
            &data,
            Some("run command"),
            "wf:run/c.0",
            Some(&scope),
            Some(7),
        )
        .await;
        assert_eq!(
            facts,
            SpillFacts {
                handle: Some("wf:run/c.0".into()),
                scope: Some(scope),
                tool: Some("run command".into()),
                chars: Some(28),
                lines: Some(3),
                first_line: Some("ünïcode & more".into()),
                step: Some(7),
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

    /// The bytes S3 counts for these facts' metadata: its key and value.
    fn header_bytes(facts: &SpillFacts) -> usize {
        let attributes = facts.to_attributes();
        (attributes.iter())
            .map(|(key, value)| match key {
                Attribute::Metadata(name) => name.len() + value.as_ref().len(),
                other => panic!("only user metadata: {other:?}"),
            })
            .sum()
    }

    /// Long non-ASCII names, run ids and first lines: the entry stays within the budget, with
    /// room for the scope and a margin below S3's 2 KB; the handle is kept whole or left out.
    #[tokio::test]
    async fn metadata_stays_within_s3s_limit_whatever_the_names() {
        let emoji = "🦀".repeat(400);
        let chinese = "工具输出".repeat(200);
        let data = Bytes::from(format!("{}\nsecond line\n", "é€🦀".repeat(500)));
        for (tool, handle) in [
            (emoji.as_str(), format!("{chinese}/{emoji}.0")),
            (chinese.as_str(), format!("wf:{}/call-1.0", "ü".repeat(120))),
            ("run_command", "wf:run-1/call-1.0".to_owned()),
        ] {
            // The longest scope there is: a digested namespace beside a raw 144-byte workflow
            // id (220 bytes encoded).
            let scope = Scope::new(&"ñ".repeat(300), &"w".repeat(144)).unwrap();
            let entry = format!(
                "&scope={}",
                url::form_urlencoded::byte_serialize(scope.to_string().as_bytes())
                    .collect::<String>()
            );
            assert_eq!(entry.len(), 227);
            assert!(entry.len() <= SCOPE_RESERVE);
            let facts =
                SpillFacts::measure(&data, Some(tool), &handle, Some(&scope), Some(u64::MAX)).await;
            let bytes = header_bytes(&facts);
            assert!(bytes <= FACTS_BUDGET + SCOPE_RESERVE, "{bytes} bytes");
            assert!(bytes <= S3_METADATA_BYTES - MARGIN, "{bytes} bytes");
            assert_eq!(facts.scope.as_ref(), Some(&scope), "the scope is never cut");
            // What is kept reads back as it was measured.
            assert_eq!(SpillFacts::from_attributes(&facts.to_attributes()), facts);
            assert!(facts.handle.as_ref().is_none_or(|h| *h == handle));
            let tool_kept = facts.tool.as_deref().expect("a tool");
            assert!(tool.starts_with(tool_kept) && !tool_kept.is_empty());
            let first = facts.first_line.as_deref().expect("a first line");
            assert!("é€🦀".repeat(500).starts_with(first) && !first.is_empty());
        }
        // Short names keep everything, the handle included.
        let facts =
            SpillFacts::measure(&data, Some("run_command"), "wf:run-1/call-1.0", None, None).await;
        assert_eq!(facts.handle.as_deref(), Some("wf:run-1/call-1.0"));
        assert_eq!(facts.tool.as_deref(), Some("run_command"));
        // Cut where its encoding reaches 480 bytes, before its 120th char.
        let first = facts.first_line.expect("a first line");
        let encoded = url::form_urlencoded::byte_serialize(first.as_bytes()).collect::<String>();
        assert_eq!((first.chars().count(), encoded.len()), (53, 474));
        // A handle of 300 ASCII chars fits; one of 300 non-ASCII chars does not.
        let ascii = format!("run/{}.0", "c".repeat(300));
        let facts = SpillFacts::measure(&data, Some("t"), &ascii, None, None).await;
        assert_eq!(facts.handle.as_deref(), Some(ascii.as_str()));
        let wide = format!("run/{}.0", "工".repeat(300));
        let facts = SpillFacts::measure(&data, Some("t"), &wide, None, None).await;
        assert_eq!(facts.handle, None);
        assert!(header_bytes(&facts) <= FACTS_BUDGET);
    }

    /// A measurement that panics is reported at ERROR, with the panic's message; the facts it
    /// could not measure stay unknown.
    #[tokio::test]
    async fn a_panicking_measurement_is_reported() {
        let logs = crate::test_logs::Logs::default();
        let _guard = logs.capture();
        let facts =
            SpillFacts::measure_with(&Bytes::from("x"), Some("t"), "r/c.0", None, None, |_| {
                panic!("measuring went wrong")
            })
            .await;
        assert_eq!((facts.chars, facts.first_line), (None, None));
        assert_eq!(facts.handle.as_deref(), Some("r/c.0"));
        let text = logs.text();
        assert!(text.contains("ERROR"), "{text}");
        assert!(text.contains("measuring went wrong"), "{text}");
    }

    #[tokio::test]
    async fn large_spills_leave_their_line_count_to_the_index() {
        let data = Bytes::from("x\n".repeat(MIN_INDEXED_BYTES as usize));
        let facts = SpillFacts::measure(&data, None, "r/c.0", None, None).await;
        assert_eq!(facts.lines, None);
        assert_eq!(facts.chars, Some(data.len() as u64));
        assert_eq!(facts.first_line.as_deref(), Some("x"));
    }

    /// A long non-ASCII workflow id is kept as its digest, within the scope's bound, and reads
    /// back equal to the scope computed again from the same names.
    #[tokio::test]
    async fn a_long_scope_round_trips_as_its_digest() {
        let workflow = "ワークフロー".repeat(100);
        let scope = Scope::new("tenant-ü", &workflow).unwrap();
        let facts = SpillFacts::measure(&Bytes::from("x"), None, "r/c.0", Some(&scope), None).await;
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
        assert_eq!(back.scope, Some(Scope::new("tenant-ü", &workflow).unwrap()));
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
