//! `list_tool_results(run_id)`: a run's spills, newest first, with what each says about itself
//! ([`SpillFacts`]), from a listing and one small request per spill shown: its metadata (a
//! `HEAD` on S3, an extended attribute on a local file), or, where there is none or it has no
//! line count (spills of 64 KiB or more), its line index's header. Never a payload read.
//!
//! A reader that does not see every spill ([`Reader`]) sees only the spills it admits, counted
//! and shown as if no others existed: their writer is in their metadata, so its listing reads
//! the metadata of every spill of the run (one `HEAD` each, shown or not), not only of those
//! shown.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use futures::{FutureExt as _, StreamExt as _, TryStreamExt as _};
use object_store::GetOptions;
use object_store::path::Path;
use serde::{Deserialize, Serialize};

use super::StoreError;
use super::meta::SpillFacts;
use super::{Reader, SpillInfo, Store, sanitize_key, sanitize_segment};
use crate::limits::CONTENT_SUFFIX;
use crate::limits::pyfmt::{repr, thousands};
use crate::read::line_index::Header;
use crate::read::{Part, ReadError, ReadOutcomeError, SpillReader};

/// Spills listed per call when the caller does not say.
pub const DEFAULT_LIST_LIMIT: i64 = 50;
/// The most spills listed per call.
pub(crate) const MAX_LIST_LIMIT: i64 = 1_000;
/// Spills whose facts are fetched at once.
const CONCURRENCY: usize = 8;

/// One `list_tool_results` call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ListRequest {
    /// The agent run whose spills to list (handles start with `{run_id}/`).
    pub run_id: String,
    /// Spills to show, newest first (clamped to 1,000).
    pub limit: i64,
    /// Tool names by tool call id, for spills whose metadata names none (the handle's last
    /// segment is `{tool_call_id}.{retry}`): a caller that knows its run's calls, as the
    /// pydantic-ai toolset does, names the tools of spills written without metadata.
    pub tool_names: BTreeMap<String, String>,
}

impl Default for ListRequest {
    fn default() -> Self {
        Self {
            run_id: String::new(),
            limit: DEFAULT_LIST_LIMIT,
            tool_names: BTreeMap::new(),
        }
    }
}

/// A listed spill: where it is and what it says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedSpill {
    /// Handle, size in bytes and last write.
    pub info: SpillInfo,
    /// Tool, chars, lines and first line, where known.
    pub facts: SpillFacts,
}

/// The newest spills of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunListing {
    /// The run.
    pub run_id: String,
    /// The spills shown, newest first.
    pub spills: Vec<ListedSpill>,
    /// All the run's spills, shown or not.
    pub total: usize,
}

impl Store {
    /// Every spill, in path order, each under the handle its marker shows where its metadata
    /// keeps it (the stored key reads the same spill, but shows a run id's `:` as `_`).
    pub async fn list_spills(&self) -> Result<Vec<SpillInfo>, StoreError> {
        let mut spills = self.list(None).await?;
        let kept: Vec<_> = (spills.iter())
            .map(|s| {
                async {
                    self.stored_facts(&s.handle, false)
                        .await
                        .unwrap_or_default()
                }
                .boxed()
            })
            .collect();
        let kept = futures::stream::iter(kept).buffered(CONCURRENCY).collect();
        let kept: Vec<SpillFacts> = self.scan(kept.map(Ok)).await?;
        for (spill, facts) in spills.iter_mut().zip(kept) {
            if let Some(handle) = marker_handle(spill, facts.handle) {
                spill.handle = handle;
            }
        }
        Ok(spills)
    }

    /// The `limit` newest spills of `run_id` that `reader` admits, with their facts, within the
    /// scan deadline.
    pub async fn list_run(
        &self,
        request: &ListRequest,
        reader: &Reader,
    ) -> Result<RunListing, ReadOutcomeError> {
        if request.run_id.is_empty() {
            return Err(ReadError::BadArgument("`run_id` must not be empty.".into()).into());
        }
        if request.limit < 1 {
            return Err(ReadError::ModelRetry("`limit` must be >= 1.").into());
        }
        let limit = request.limit.min(MAX_LIST_LIMIT) as usize;
        let mut spills = self
            .list(Some(&request.run_id))
            .await
            .map_err(ReadOutcomeError::Store)?;
        spills.sort_by(|a, b| (b.last_modified, &b.handle).cmp(&(a.last_modified, &a.handle)));
        // The metadata of every spill the reader might not see, the rest of those shown.
        let checked = if reader.sees_all() { 0 } else { spills.len() };
        let stored: Vec<_> = (spills.iter().take(checked))
            .map(|s| self.stored_facts(&s.handle, true).boxed())
            .collect();
        let stored = futures::stream::iter(stored)
            .buffered(CONCURRENCY)
            .try_collect();
        let stored: Vec<_> = (self.scan(stored).await).map_err(ReadOutcomeError::Store)?;
        let (mut spills, mut stored): (Vec<_>, Vec<_>) = match checked {
            0 => spills.into_iter().map(|s| (s, None)).unzip(),
            _ => (spills.into_iter().zip(stored))
                .filter(|(_, facts)| reader.admits(facts.scope.as_ref()))
                .map(|(s, facts)| (s, Some(facts)))
                .unzip(),
        };
        let total = spills.len();
        spills.truncate(limit);
        stored.truncate(limit);
        let facts: Vec<_> = (spills.iter().zip(stored))
            .map(|(s, stored)| self.facts(&s.handle, s.size, stored).boxed())
            .collect();
        let facts = futures::stream::iter(facts).buffered(CONCURRENCY).collect();
        let facts: Vec<_> = (self.scan(facts.map(Ok)).await).map_err(ReadOutcomeError::Store)?;
        let named: BTreeMap<String, (&String, &String)> = request
            .tool_names
            .iter()
            .map(|(call, tool)| (sanitize_segment(call).into_owned(), (call, tool)))
            .collect();
        let run_key = format!("{}/", sanitize_key(&request.run_id));
        let spills = spills.into_iter().zip(facts).map(|(mut info, mut facts)| {
            let call = tool_call_id(&info.handle).and_then(|c| Some((c.len(), *named.get(c)?)));
            if facts.tool.is_none() {
                facts.tool = call.map(|(_, (_, tool))| (*tool).clone());
            }
            // The handle as the marker shows it: kept in the metadata, or else the run id and tool
            // call id unsanitized.
            if let Some(handle) = marker_handle(&info, facts.handle.take()) {
                info.handle = handle;
            } else if let Some(rest) = info.handle.strip_prefix(&run_key) {
                let rest = match call {
                    Some((stored, (original, _))) if !rest.contains('/') => {
                        format!("{original}{}", &rest[stored..])
                    }
                    _ => rest.to_owned(),
                };
                info.handle = format!("{}/{rest}", request.run_id);
            }
            ListedSpill { info, facts }
        });
        Ok(RunListing {
            run_id: request.run_id.clone(),
            spills: spills.collect(),
            total,
        })
    }

    /// What `handle` (of `size` bytes) says about itself: its metadata (`stored`, if already
    /// read), with the line count from its index where the metadata lacks it. Unknown where
    /// neither answers.
    async fn facts(&self, handle: &str, size: u64, stored: Option<SpillFacts>) -> SpillFacts {
        let mut facts = match stored {
            Some(stored) => stored,
            // Shown whatever its facts: a failure only leaves them unknown (and is logged).
            None => (self.stored_facts(handle, false).await).unwrap_or_default(),
        };
        if size == 0 {
            facts.chars = Some(0);
            facts.lines = Some(0);
        } else if facts.lines.is_none() {
            facts.lines = self.indexed_lines(handle, size).await;
        }
        facts
    }

    /// The facts `handle`'s metadata keeps (all unknown where it keeps none, or the spill was
    /// deleted since the listing). When it cannot be read, a listing that shows every spill
    /// logs the failure at WARN with its cause and shows the spill without its facts; a
    /// `scoped` one, which could not tell whether its reader sees the spill, fails with the
    /// store's error (a reader's own spill must not drop out of its listing unsaid).
    async fn stored_facts(&self, handle: &str, scoped: bool) -> Result<SpillFacts, StoreError> {
        let Ok(path) = self.locate(handle) else {
            return Ok(SpillFacts::default());
        };
        let failure = match self.head_facts(&path, handle).await {
            Ok(facts) => return Ok(facts.unwrap_or_default()),
            Err(e) => e,
        };
        if scoped {
            return Err(failure);
        }
        tracing::warn!(
            target: "overspill::store",
            error_type = failure.type_name(),
            "could not read the metadata of spill {handle:?} ({failure}): it is listed without \
             its tool, sizes and first line"
        );
        Ok(SpillFacts::default())
    }

    /// The facts of the spill at `path` (`handle`'s), from one `HEAD`; `None` if there is none.
    async fn head_facts(
        &self,
        path: &Path,
        handle: &str,
    ) -> Result<Option<SpillFacts>, StoreError> {
        let head = SpillFacts::asked_if(true, GetOptions::new().with_head(true));
        let head = self.inner.store.get_opts(path, head);
        let failed = |e| self.map_error(e, handle, super::Call::Read);
        match self.bounded(0, head.map(|r| r.map_err(failed))).await {
            Ok(head) => Ok(Some(SpillFacts::from_attributes(&head.attributes))),
            Err(StoreError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether a spill is stored under `key` and the run step that wrote it (see
    /// [`SpillStore::step_of`](crate::limits::SpillStore::step_of)): one `HEAD` (an extended
    /// attribute's read on a local root). A spill whose metadata names no step (written without
    /// one, or on a filesystem without extended attributes) has an unknown step.
    pub(crate) async fn written_step(&self, key: &str) -> Result<Option<Option<u64>>, StoreError> {
        let path = self.locate(key)?;
        let facts = self.head_facts(&path, key).await?;
        Ok(facts.map(|facts| facts.step))
    }

    /// The line count in the header of `handle`'s index, if it has one that describes a payload
    /// of `size` bytes.
    ///
    /// A missing index (a spill written without one) or one for another payload leaves the count
    /// unknown; a store that fails to answer is logged at WARN with its cause.
    async fn indexed_lines(&self, handle: &str, size: u64) -> Option<u64> {
        let fetched = match self.fetch(handle, Part::Index, 0..Header::MAX_LEN).await {
            Ok(fetched) => fetched,
            Err(StoreError::NotFound { .. }) => return None,
            Err(e) => {
                tracing::warn!(
                    target: "overspill::store",
                    error_type = e.type_name(),
                    "could not read the line index of spill {handle:?} ({e}): it is listed \
                     without its line count"
                );
                return None;
            }
        };
        // An index for an older payload, or damaged: the count is unknown, as without one.
        let header = Header::decode(&fetched.bytes, fetched.version.size).ok()?;
        (header.payload_len() == size).then(|| header.lines())
    }
}

/// `handle`, the one a spill's metadata keeps, if it names that spill (the object `info` lists).
fn marker_handle(info: &SpillInfo, handle: Option<String>) -> Option<String> {
    handle.filter(|h| sanitize_key(h) == info.handle)
}

/// The (sanitized) tool call id of a handle `{run_id}/{tool_call_id}.{retry}[.content]`.
fn tool_call_id(handle: &str) -> Option<&str> {
    let last = handle.rsplit('/').next()?;
    let call = last.strip_suffix(CONTENT_SUFFIX).unwrap_or(last);
    call.rsplit_once('.').map(|(call, _retry)| call)
}

impl RunListing {
    /// The text the model sees, ages counted up to `now`.
    ///
    /// ```text
    /// [run 'run-1': 3 spilled tool result(s); showing 3, newest first]
    /// - 'run-1/call-3.0': run_command, 120,000 chars, 2,000 lines, written 12s ago; first line: 'Building …'
    /// ```
    pub fn render(&self, now: SystemTime) -> String {
        let mut out = format!(
            "[run {}: {} spilled tool result(s); showing {}, newest first]",
            repr(&self.run_id),
            thousands(self.total as u64),
            self.spills.len()
        );
        for ListedSpill { info, facts } in &self.spills {
            let count = |n: Option<u64>, what: &str| match n {
                Some(n) => format!("{} {what}", thousands(n)),
                None => format!("? {what}"),
            };
            let age = now.duration_since(info.last_modified).unwrap_or_default();
            out.push_str(&format!(
                "\n- {}: {}, {}, {}, written {} ago",
                repr(&info.handle),
                facts.tool.as_deref().unwrap_or("unknown tool"),
                count(facts.chars, "chars"),
                count(facts.lines, "lines"),
                humantime::format_duration(Duration::from_secs(age.as_secs())),
            ));
            if let Some(first) = &facts.first_line {
                out.push_str(&format!("; first line: {}", repr(first)));
            }
        }
        if self.total > self.spills.len() {
            out.push_str(&format!(
                "\n[{} older spill(s) not shown: call list_tool_results again with a larger limit]",
                thousands((self.total - self.spills.len()) as u64)
            ));
        }
        out
    }
}
