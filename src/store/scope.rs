//! Who wrote a spill, and which spills a reader may see.
//!
//! A spill written by an activity records its writer's [`Scope`]: the calling workflow's
//! namespace and workflow id, taken from the activity's own info (never from a request). The
//! workflow id, not the run id, is the scope, so a continue-as-new run and a re-run under the same
//! workflow id read their earlier spills. The scope is kept beside the spill's other facts (the
//! `scope` entry of its `overspill` metadata, or of a local file's `user.overspill` attribute) as
//! `<namespace>/<workflow id>`, each part raw while short and otherwise its SHA-256 digest
//! (`sha256:<64 hex digits>`), so that the entry never exceeds [`MAX_SCOPE_BYTES`] encoded.
//!
//! A [`Reader`] admits a spill by its [`ReadScope`]: `workflow` (the default) the spills of the
//! reader's own workflow id and namespace, `namespace` those of its namespace, `any` every spill.
//! A spill whose writer is unknown (written outside a workflow, before scopes were recorded, or on
//! a filesystem that keeps no extended attributes) is admitted only by `any`, which is also what
//! an operator's CLI reads with. A spill not admitted reads exactly as a missing one.

use std::borrow::Cow;
use std::fmt;

/// The most bytes the encoded scope entry's value takes (`scope=` excluded): each part raw or
/// digested, whichever is longer encoded, and the `/` between them (`%2F`). A digested namespace
/// beside a raw 144-byte workflow id takes 73 + 3 + 144 = 220.
pub(super) const MAX_SCOPE_BYTES: usize =
    longer(NAMESPACE_BYTES, DIGEST_BYTES) + 3 + longer(WORKFLOW_BYTES, DIGEST_BYTES);
/// The encoded bytes of a digested part: `sha256%3A` and 64 hex digits.
const DIGEST_BYTES: usize = 9 + 64;
/// The most encoded bytes of a namespace kept raw.
const NAMESPACE_BYTES: usize = 48;
/// The most encoded bytes of a workflow id kept raw.
const WORKFLOW_BYTES: usize = 144;
/// The prefix of a digested part.
const DIGEST: &str = "sha256:";

/// The larger of `a` and `b`.
const fn longer(a: usize, b: usize) -> usize {
    if a > b { a } else { b }
}

/// The writer of a spill, or the workflow a reader reads for, in stored form: a Temporal
/// namespace and workflow id, each raw while short, else a `sha256:` digest of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Scope {
    namespace: String,
    workflow: String,
}

impl Scope {
    /// The scope of workflow `workflow_id` in `namespace`; `None` if either is empty, which
    /// names no workflow (every caller without one would otherwise share it).
    pub fn new(namespace: &str, workflow_id: &str) -> Option<Self> {
        if namespace.is_empty() || workflow_id.is_empty() {
            return None;
        }
        Some(Self {
            namespace: part(namespace, NAMESPACE_BYTES, true),
            workflow: part(workflow_id, WORKFLOW_BYTES, false),
        })
    }

    /// The scope a stored entry value (`<namespace>/<workflow id>`) names; `None` if it names
    /// none.
    pub(crate) fn parse(value: &str) -> Option<Self> {
        let (namespace, workflow) = value.split_once('/')?;
        let valid = |p: &str| match p.strip_prefix(DIGEST) {
            Some(hex) => hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()),
            None => !p.is_empty(),
        };
        (valid(namespace) && valid(workflow)).then(|| Self {
            namespace: namespace.to_owned(),
            workflow: workflow.to_owned(),
        })
    }
}

/// The stored form: `<namespace>/<workflow id>`.
impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.workflow)
    }
}

/// `value` raw when its encoded form fits `budget` bytes and cannot be taken for a digest (nor,
/// for a namespace, contains the `/` that ends it); else its digest.
fn part(value: &str, budget: usize, namespace: bool) -> String {
    let encoded: usize = url::form_urlencoded::byte_serialize(value.as_bytes())
        .map(str::len)
        .sum();
    let digested = encoded > budget
        || value.is_empty()
        || value.starts_with(DIGEST)
        || (namespace && value.contains('/'));
    if !digested {
        return value.to_owned();
    }
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, value.as_bytes());
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("{DIGEST}{hex}")
}

/// Which spills a workflow's reads see (`overspill worker --read-scope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadScope {
    /// Those its own workflow id wrote, in its namespace.
    #[default]
    Workflow,
    /// Those any workflow of its namespace wrote.
    Namespace,
    /// Every spill, whoever wrote it.
    Any,
}

impl std::str::FromStr for ReadScope {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "workflow" => Ok(Self::Workflow),
            "namespace" => Ok(Self::Namespace),
            "any" => Ok(Self::Any),
            _ => Err(format!("{s:?}: expected `workflow`, `namespace` or `any`")),
        }
    }
}

impl fmt::Display for ReadScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Workflow => "workflow",
            Self::Namespace => "namespace",
            Self::Any => "any",
        })
    }
}

/// Who reads or writes spills: the workflow an activity runs for (if any) under the worker's
/// [`ReadScope`]. A writer records its scope; a reader sees the spills its scope admits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reader {
    policy: ReadScope,
    scope: Option<Scope>,
}

impl Reader {
    /// The operator (the CLI): reads every spill, and writes spills of no workflow.
    pub const fn operator() -> Self {
        Self {
            policy: ReadScope::Any,
            scope: None,
        }
    }

    /// A reader for the workflow of `scope` (`None`: outside any workflow) under `policy`.
    pub const fn new(policy: ReadScope, scope: Option<Scope>) -> Self {
        Self { policy, scope }
    }

    /// The scope this reader's writes record.
    pub fn scope(&self) -> Option<&Scope> {
        self.scope.as_ref()
    }

    /// Whether this writer's own reads depend on its spills recording its scope: it writes for a
    /// workflow, and reads with a policy other than `any`. A spill whose scope cannot be kept then
    /// fails to be written, rather than be one its workflow never reads.
    pub(crate) fn reads_need_its_scope(&self) -> bool {
        self.scope.is_some() && !self.sees_all()
    }

    /// Whether this reader sees every spill.
    pub(crate) fn sees_all(&self) -> bool {
        self.policy == ReadScope::Any
    }

    /// Whether this reader may see a spill written by `writer` (`None`: unknown).
    pub fn admits(&self, writer: Option<&Scope>) -> bool {
        match (self.policy, &self.scope, writer) {
            (ReadScope::Any, ..) => true,
            (ReadScope::Namespace, Some(me), Some(them)) => me.namespace == them.namespace,
            (ReadScope::Workflow, Some(me), Some(them)) => me == them,
            _ => false,
        }
    }

    /// The key `handle`'s opened index is cached under for this reader, or `None` when it keeps
    /// none: for a handle the store refuses, and for a reader outside any workflow that does not
    /// see every spill (it sees none, so an entry could only be of a spill it may not see).
    ///
    /// Readers that may see different spills never share an entry. A reader of every spill keys
    /// by the handle itself; any other key starts with a NUL, which no handle holds, then names
    /// the policy and the length-prefixed scope, so no two (scope, handle) pairs share a key
    /// whatever bytes a workflow id holds.
    pub(crate) fn cache_key<'h>(&self, handle: &'h str) -> Option<Cow<'h, str>> {
        super::check_handle(handle).ok()?;
        let (tag, scope) = match (self.policy, &self.scope) {
            (ReadScope::Any, _) => return Some(Cow::Borrowed(handle)),
            (_, None) => return None,
            (ReadScope::Namespace, Some(me)) => ('n', me.namespace.clone()),
            (ReadScope::Workflow, Some(me)) => ('w', me.to_string()),
        };
        Some(Cow::Owned(format!(
            "\0{tag}{}:{scope}{handle}",
            scope.len()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded_len(value: &str) -> usize {
        url::form_urlencoded::byte_serialize(value.as_bytes())
            .map(str::len)
            .sum()
    }

    #[test]
    fn short_scopes_are_raw_and_long_ones_digested() {
        let scope = Scope::new("default", "agent-run-1").unwrap();
        assert_eq!(scope.to_string(), "default/agent-run-1");
        assert_eq!(Scope::parse("default/agent-run-1"), Some(scope));

        let long = "ü".repeat(1_000);
        let scope = Scope::new(&format!("ns/{long}"), &long).unwrap();
        let shown = scope.to_string();
        let (namespace, workflow) = shown.split_once('/').expect("two parts");
        for part in [namespace, workflow] {
            let hex = part.strip_prefix("sha256:").expect("digested");
            assert_eq!(hex.len(), 64);
        }
        assert_eq!(Scope::parse(&shown), Some(scope.clone()));
        assert_eq!(
            scope,
            Scope::new(&format!("ns/{long}"), &long).unwrap(),
            "comparisons use the same form"
        );
        assert_ne!(
            scope,
            Scope::new(&format!("ns/{long}"), &format!("{long}x")).unwrap()
        );
        // The bound holds whatever the names.
        assert!(encoded_len(&shown) <= MAX_SCOPE_BYTES);
        let widest = Scope::new(&"n".repeat(48), &"w".repeat(144))
            .unwrap()
            .to_string();
        assert!(!widest.contains("sha256:"), "{widest}");
        assert!(encoded_len(&widest) <= MAX_SCOPE_BYTES);
        // The widest of all: a digested namespace beside a raw 144-byte workflow id.
        let widest = Scope::new(&"ñ".repeat(300), &"w".repeat(144))
            .unwrap()
            .to_string();
        assert_eq!(encoded_len(&widest), 220, "{widest}");
        assert_eq!(MAX_SCOPE_BYTES, 220);
        // A namespace with `/` in it is digested, so the first `/` always ends the namespace.
        assert!(
            Scope::new("a/b", "w")
                .unwrap()
                .to_string()
                .starts_with("sha256:")
        );
    }

    /// The forms the Python package computes too (`tests/python/test_read_scope.py` holds the
    /// same strings): a spill one writes, the other reads.
    #[test]
    fn forms_match_the_python_package() {
        assert_eq!(
            Scope::new("tenant-ü", &"ワ".repeat(100))
                .unwrap()
                .to_string(),
            "tenant-ü/sha256:71902d2bedc44fcacf438a1d3506538c543789394f792ccb7bd7d08f9f0cf8a6"
        );
        assert_eq!(
            Scope::new("a/b", "w").unwrap().to_string(),
            "sha256:c14cddc033f64b9dea80ea675cf280a015e672516090a5626781153dc68fea11/w"
        );
    }

    #[test]
    fn an_empty_id_names_no_workflow() {
        assert_eq!(Scope::new("default", ""), None);
        assert_eq!(Scope::new("", "wf"), None);
    }

    #[test]
    fn a_raw_id_cannot_pass_for_a_digest() {
        let long = "x".repeat(500);
        let digested = Scope::new("default", &long).unwrap().to_string();
        let (_, workflow) = digested.split_once('/').expect("two parts");
        // A workflow named after another's digest is digested in turn.
        let impostor = Scope::new("default", workflow).unwrap();
        assert_ne!(impostor, Scope::new("default", &long).unwrap());
        assert_ne!(impostor.to_string(), digested);
    }

    #[test]
    fn unparsable_entries_name_no_writer() {
        for value in [
            "",
            "default",
            "/w",
            "default/",
            "n/sha256:abc",
            "sha256:zz/w",
        ] {
            assert_eq!(Scope::parse(value), None, "{value:?}");
        }
    }

    #[test]
    fn readers_admit_by_policy_and_unknown_writers_only_with_any() {
        let mine = Scope::new("default", "wf-a").unwrap();
        let sibling = Scope::new("default", "wf-b").unwrap();
        let foreign = Scope::new("other", "wf-a").unwrap();
        let workflow = Reader::new(ReadScope::Workflow, Some(mine.clone()));
        let namespace = Reader::new(ReadScope::Namespace, Some(mine.clone()));
        let any = Reader::new(ReadScope::Any, Some(mine.clone()));
        let standalone = Reader::new(ReadScope::Workflow, None);
        let cases = [
            (&workflow, [true, false, false, false]),
            (&namespace, [true, true, false, false]),
            (&any, [true, true, true, true]),
            (&standalone, [false, false, false, false]),
            (&Reader::operator(), [true, true, true, true]),
        ];
        for (reader, expected) in cases {
            let seen =
                [Some(&mine), Some(&sibling), Some(&foreign), None].map(|w| reader.admits(w));
            assert_eq!(seen, expected, "{reader:?}");
        }
        assert!(!Reader::new(ReadScope::Namespace, None).admits(Some(&mine)));
        // Only a writer whose own reads are scoped needs its spills to keep its scope.
        assert!(workflow.reads_need_its_scope() && namespace.reads_need_its_scope());
        assert!(!any.reads_need_its_scope() && !standalone.reads_need_its_scope());
        assert!(!Reader::operator().reads_need_its_scope());
    }

    #[test]
    fn readers_that_see_different_spills_cache_apart() {
        let a = Reader::new(
            ReadScope::Workflow,
            Some(Scope::new("default", "a").unwrap()),
        );
        let b = Reader::new(
            ReadScope::Workflow,
            Some(Scope::new("default", "b").unwrap()),
        );
        assert_ne!(a.cache_key("r/c.0"), b.cache_key("r/c.0"));
        assert_eq!(
            Reader::operator().cache_key("r/c.0").as_deref(),
            Some("r/c.0")
        );
        // Outside any workflow a reader that does not see every spill caches nothing.
        for policy in [ReadScope::Workflow, ReadScope::Namespace] {
            assert_eq!(Reader::new(policy, None).cache_key("r/c.0"), None);
        }
        // Nor for a handle the store refuses.
        assert_eq!(a.cache_key("../etc/passwd"), None);
        assert_eq!(Reader::operator().cache_key("r/\n.0"), None);
        // A workflow id holding the separators cannot make one pair's key another's.
        let tricky = Reader::new(
            ReadScope::Workflow,
            Some(Scope::new("default", "a\nr").unwrap()),
        );
        let plain = Reader::new(
            ReadScope::Workflow,
            Some(Scope::new("default", "a").unwrap()),
        );
        assert_ne!(tricky.cache_key("x/c.0"), plain.cache_key("r\nx/c.0"));
        assert_ne!(tricky.cache_key("c.0"), plain.cache_key("rc.0"));
        let namespace = Reader::new(
            ReadScope::Namespace,
            Some(Scope::new("default", "a").unwrap()),
        );
        assert_ne!(namespace.cache_key("r/c.0"), plain.cache_key("r/c.0"));
    }

    #[test]
    fn read_scope_parses_its_names() {
        for scope in [ReadScope::Workflow, ReadScope::Namespace, ReadScope::Any] {
            assert_eq!(scope.to_string().parse::<ReadScope>(), Ok(scope));
        }
        assert!("run".parse::<ReadScope>().is_err());
    }
}
