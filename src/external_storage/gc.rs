//! Retention: delete stored payloads once, and only once, Temporal has let their history go.
//!
//! No SDK deletes what External Storage stores, and a bucket's age rule cannot know that a
//! workflow still runs after 40 days or that its history was deleted yesterday. The keys say
//! whose a payload is (see [`super::Driver`]), so [`ExternalStorage::gc`] asks Temporal:
//!
//! - An object keyed by a workflow (`v0/ns/{ns}/wt/…/wi/{id}/ri/{run}/…`) is deleted only when
//!   it is older than [`GcOptions::older_than`] and `DescribeWorkflowExecution` answers that the
//!   workflow id has no current run **and** that the object's run does not exist (`NotFound` with
//!   a `NotFoundFailure`: its history was deleted or is past the namespace's retention). The
//!   first question keeps a continue-as-new chain's objects while any of its runs is current:
//!   the SDKs key a continued run's input, and a child's result, under the run that wrote it.
//!   A run id of `null` (a client's start or signal) is settled by the first question alone.
//! - Any other answer (the run is running or retained, unavailable, permission denied, a missing
//!   namespace, no answer in time) keeps the objects; a failed call counts as an error.
//! - Unscoped (`v0/d/…`, `v0/ns/{ns}/d/…`) and standalone-activity objects cannot be attributed
//!   to a run: kept unless [`GcOptions::unscoped_older_than`] is given, which must exceed the
//!   namespace's retention plus the longest workflow run. Keys of any other shape are kept.
//!
//! The listing is settled in chunks (bounded memory), resumes after the key last seen when a
//! page fails, and Temporal calls are bounded in number in flight, in rate and in time.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::StreamExt as _;
use object_store::ObjectMeta;
use object_store::path::Path;
use percent_encoding::percent_decode_str;
use temporalio_client::Client;
use temporalio_client::grpc::WorkflowService;
use temporalio_client::tonic::{Code, IntoRequest as _, Status};
use temporalio_common::protos::google::rpc::Status as RpcStatus;
use temporalio_common::protos::temporal::api::common::v1::WorkflowExecution;
use temporalio_common::protos::temporal::api::workflowservice::v1::DescribeWorkflowExecutionRequest;
use temporalio_common::telemetry::metrics::{
    CoreMeter, Counter, MetricAttributes, MetricParameters, NewAttributes,
};

use super::{ExternalStorage, ExternalStorageError};

/// Objects settled at once: grouped, checked with Temporal, deleted in one batch.
const CHUNK: usize = 1000;
/// Consecutive failed listing pages before a collection gives up.
const LIST_ATTEMPTS: u32 = 3;
/// Temporal's answers remembered across chunks; past this many they are forgotten.
const CACHE_LIMIT: usize = 100_000;
/// The status detail of a `NotFound` about an execution (not about its namespace).
const NOT_FOUND_FAILURE: &str = "temporal.api.errordetails.v1.NotFoundFailure";

/// What a collection deletes, and how hard it may press Temporal.
#[derive(Debug, Clone)]
pub struct GcOptions {
    /// The moment ages are measured from.
    pub now: SystemTime,
    /// Objects of a gone run younger than this are kept (default 1 day: a margin against clock
    /// skew and starts in flight).
    pub older_than: Duration,
    /// Unscoped and activity-scoped objects older than this are deleted; `None` (the default)
    /// keeps them. It must exceed the namespace's retention plus the longest workflow run.
    pub unscoped_older_than: Option<Duration>,
    /// Count what would go, delete nothing.
    pub dry_run: bool,
    /// Temporal calls in flight at once (default 8).
    pub concurrency: usize,
    /// Temporal calls started per second at most (default 50).
    pub rate: u32,
    /// The deadline of one Temporal call (default 10 s).
    pub call_timeout: Duration,
}

impl Default for GcOptions {
    fn default() -> Self {
        Self {
            now: SystemTime::now(),
            older_than: Duration::from_secs(24 * 3600),
            unscoped_older_than: None,
            dry_run: false,
            concurrency: 8,
            rate: 50,
            call_timeout: Duration::from_secs(10),
        }
    }
}

/// Objects and their bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Objects.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
}

impl Tally {
    fn add(&mut self, bytes: u64) {
        self.objects += 1;
        self.bytes += bytes;
    }
}

/// What a collection did (on a dry run: would have deleted).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PayloadGcReport {
    /// `DescribeWorkflowExecution` calls answered or failed.
    pub runs_checked: u64,
    /// Objects deleted.
    pub deleted: Tally,
    /// Objects kept.
    pub kept: Tally,
    /// Temporal calls and deletes that failed (their objects are kept).
    pub errors: u64,
    /// Whether nothing was deleted on purpose.
    pub dry_run: bool,
}

/// `checked 3 run(s); deleted 2 object(s), 10 bytes; kept …; 0 error(s)`.
impl std::fmt::Display for PayloadGcReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (verb, dry) = match self.dry_run {
            true => ("would delete", " (dry run)"),
            false => ("deleted", ""),
        };
        write!(
            f,
            "checked {} run(s); {verb} {} object(s), {} bytes; kept {} object(s), {} bytes; {} error(s){dry}",
            self.runs_checked,
            self.deleted.objects,
            self.deleted.bytes,
            self.kept.objects,
            self.kept.bytes,
            self.errors,
        )
    }
}

/// An execution to ask about: namespace, workflow id, run id (`""`: the current run).
type Execution = (String, String, String);

/// Whose an object is, from its key.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Owner {
    /// A workflow's: its id's current run, and its own run (`None` for a run id of `null`).
    Workflow {
        current: Execution,
        run: Option<Execution>,
    },
    /// Unscoped, namespace-scoped or a standalone activity's.
    Unscoped,
    /// A key of no known shape.
    Unknown,
}

impl Owner {
    /// The owner of `key`, the part after `{prefix}/v0/`.
    fn of(key: &str) -> Self {
        let decode = |s: &str| Some(percent_decode_str(s).decode_utf8().ok()?.into_owned());
        let segments: Vec<&str> = key.split('/').collect();
        match segments.as_slice() {
            ["d", "sha256", _]
            | ["ns", _, "d", "sha256", _]
            | ["ns", _, "at", _, "ai", _, "ri", _, "d", "sha256", _] => Self::Unscoped,
            ["ns", "null", "wt", ..] | ["ns", _, "wt", _, "wi", "null", ..] => Self::Unscoped,
            ["ns", ns, "wt", _, "wi", id, "ri", run, "d", "sha256", _] => {
                let run = match *run {
                    "null" => Some(None),
                    run => decode(run).map(Some),
                };
                match (decode(ns), decode(id), run) {
                    (Some(ns), Some(id), Some(run)) => Self::Workflow {
                        run: run.map(|run| (ns.clone(), id.clone(), run)),
                        current: (ns, id, String::new()),
                    },
                    _ => Self::Unknown,
                }
            }
            _ => Self::Unknown,
        }
    }
}

/// Temporal's answer about a workflow id (its current run) or one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// It exists (running, or closed and retained).
    Exists,
    /// `NotFound`: its history is gone.
    Gone,
    /// No usable answer.
    Failed,
}

impl ExternalStorage {
    /// Delete this storage's objects whose history Temporal no longer has (see the module
    /// documentation for the rules), asking through `client`.
    pub async fn gc(
        &self,
        client: &Client,
        options: GcOptions,
    ) -> Result<PayloadGcReport, ExternalStorageError> {
        let mut pace = tokio::time::interval(Duration::from_secs(1) / options.rate.max(1));
        pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut gc = Collection {
            storage: self,
            client,
            pace: tokio::sync::Mutex::new(pace),
            report: PayloadGcReport {
                dry_run: options.dry_run,
                ..PayloadGcReport::default()
            },
            options,
            verdicts: HashMap::new(),
        };
        gc.run().await?;
        Ok(gc.report)
    }
}

struct Collection<'a> {
    storage: &'a ExternalStorage,
    client: &'a Client,
    options: GcOptions,
    /// Ticks at the rate Temporal calls may start at.
    pace: tokio::sync::Mutex<tokio::time::Interval>,
    report: PayloadGcReport,
    verdicts: HashMap<Execution, Verdict>,
}

impl Collection<'_> {
    /// List everything under `{prefix}/v0/`, settling it chunk by chunk; a failed page resumes
    /// the listing after the last key seen.
    async fn run(&mut self) -> Result<(), ExternalStorageError> {
        let bucket = &self.storage.bucket;
        let root = super::driver::key_root(&bucket.prefix);
        let failed = |reason: String| ExternalStorageError::Unavailable {
            object: format!("{}/{root}/", bucket.name),
            reason: format!("listing: {reason}"),
        };
        let root_path = Path::parse(&root).map_err(|e| failed(e.to_string()))?;
        let page_timeout = bucket.deadline(0);
        let mut last: Option<Path> = None;
        let mut failures = 0;
        let mut chunk = Vec::with_capacity(CHUNK);
        loop {
            let mut listing = match &last {
                None => bucket.store.list(Some(&root_path)),
                Some(after) => bucket.store.list_with_offset(Some(&root_path), after),
            };
            let error = loop {
                match tokio::time::timeout(page_timeout, listing.next()).await {
                    Ok(Some(Ok(meta))) => {
                        failures = 0;
                        last = Some(meta.location.clone());
                        chunk.push(meta);
                        if chunk.len() == CHUNK {
                            self.settle(&root, std::mem::take(&mut chunk)).await;
                        }
                    }
                    Ok(None) => {
                        self.settle(&root, chunk).await;
                        return Ok(());
                    }
                    Ok(Some(Err(e))) => break e.to_string(),
                    Err(_) => break format!("no page within {page_timeout:?}"),
                }
            };
            failures += 1;
            tracing::warn!(%error, attempt = failures, "External Storage gc: a listing page failed");
            if failures >= LIST_ATTEMPTS {
                return Err(failed(error));
            }
        }
    }

    /// Ask Temporal about the chunk's owners, then delete what has to go.
    async fn settle(&mut self, root: &str, chunk: Vec<ObjectMeta>) {
        if self.verdicts.len() > CACHE_LIMIT {
            self.verdicts.clear();
        }
        let now = self.options.now;
        let older = |meta: &ObjectMeta, age: Option<Duration>| {
            let cutoff = age.and_then(|age| now.checked_sub(age));
            cutoff.is_some_and(|c| SystemTime::from(meta.last_modified) < c)
        };
        let older_than = Some(self.options.older_than);
        let owned: Vec<(ObjectMeta, Owner)> = (chunk.into_iter())
            .map(|meta| {
                let key = meta.location.as_ref();
                let key = (key.strip_prefix(root).unwrap_or(key)).trim_start_matches('/');
                let owner = Owner::of(key);
                (meta, owner)
            })
            .collect();
        // Only owners of objects old enough to go are worth a question: first whether the
        // workflow id has a current run, then, for those that have none, about each run.
        let workflows: Vec<(Execution, Option<Execution>)> = (owned.iter())
            .filter_map(|(meta, owner)| match owner {
                Owner::Workflow { current, run } if older(meta, older_than) => {
                    Some((current.clone(), run.clone()))
                }
                _ => None,
            })
            .collect();
        let current = workflows.iter().map(|(current, _)| current.clone());
        self.describe_all(current.collect()).await;
        let gone = |verdicts: &HashMap<Execution, Verdict>, e: &Execution| {
            verdicts.get(e) == Some(&Verdict::Gone)
        };
        let runs = (workflows.into_iter())
            .filter(|(current, _)| gone(&self.verdicts, current))
            .filter_map(|(_, run)| run);
        self.describe_all(runs.collect()).await;

        let mut doomed = Vec::new();
        for (meta, owner) in owned {
            let goes = match &owner {
                Owner::Workflow { current, run } => {
                    older(&meta, older_than)
                        && gone(&self.verdicts, current)
                        && run.as_ref().is_none_or(|run| gone(&self.verdicts, run))
                }
                Owner::Unscoped => older(&meta, self.options.unscoped_older_than),
                Owner::Unknown => false,
            };
            match goes {
                true => doomed.push(meta),
                false => self.report.kept.add(meta.size),
            }
        }
        self.delete(doomed).await;
    }

    /// Describe each execution not asked about yet, a bounded number at once and at a bounded
    /// rate; remember the answers.
    async fn describe_all(&mut self, executions: Vec<Execution>) {
        let asked: BTreeSet<Execution> = (executions.into_iter())
            .filter(|e| !self.verdicts.contains_key(e))
            .collect();
        let (client, pace, timeout) = (self.client, &self.pace, self.options.call_timeout);
        let answers: Vec<(Execution, Verdict)> = futures::stream::iter(asked)
            .map(|execution| async move {
                pace.lock().await.tick().await;
                let verdict = describe(client.clone(), &execution, timeout).await;
                (execution, verdict)
            })
            .buffer_unordered(self.options.concurrency.max(1))
            .collect()
            .await;
        for (execution, verdict) in answers {
            self.report.runs_checked += 1;
            if verdict == Verdict::Failed {
                self.report.errors += 1;
            }
            self.verdicts.insert(execution, verdict);
        }
    }

    /// Delete `doomed` in one batch (on a dry run, count them only).
    async fn delete(&mut self, doomed: Vec<ObjectMeta>) {
        for meta in &doomed {
            tracing::info!(
                key = %meta.location,
                bytes = meta.size,
                dry_run = self.options.dry_run,
                "External Storage gc: deleting"
            );
        }
        if self.options.dry_run || doomed.is_empty() {
            doomed.iter().for_each(|m| self.report.deleted.add(m.size));
            return;
        }
        let bucket = &self.storage.bucket;
        let sizes: HashMap<Path, u64> = doomed.into_iter().map(|m| (m.location, m.size)).collect();
        let deadline = bucket
            .deadline(0)
            .saturating_mul(1 + u32::try_from(sizes.len() / 100).unwrap_or(u32::MAX));
        let paths = futures::stream::iter(sizes.keys().cloned().map(Ok).collect::<Vec<_>>());
        let deleting = bucket
            .store
            .delete_stream(paths.boxed())
            .collect::<Vec<_>>();
        let results = tokio::time::timeout(deadline, deleting).await;
        if results.is_err() {
            tracing::warn!("External Storage gc: the deletes took over {deadline:?}");
            self.report.errors += 1;
        }
        let mut left = sizes;
        for result in results.unwrap_or_default() {
            match result {
                Ok(path) => {
                    if let Some(size) = left.remove(&path) {
                        self.report.deleted.add(size);
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "External Storage gc: a delete failed");
                    self.report.errors += 1;
                }
            }
        }
        left.values().for_each(|size| self.report.kept.add(*size));
    }
}

/// One `DescribeWorkflowExecution`, within `timeout`.
async fn describe(mut client: Client, (ns, id, run): &Execution, timeout: Duration) -> Verdict {
    let request = DescribeWorkflowExecutionRequest {
        namespace: ns.clone(),
        execution: Some(WorkflowExecution {
            workflow_id: id.clone(),
            run_id: run.clone(),
        }),
    };
    let call = WorkflowService::describe_workflow_execution(&mut client, request.into_request());
    let error = match tokio::time::timeout(timeout, call).await {
        Ok(Ok(_)) => return Verdict::Exists,
        Ok(Err(status)) if execution_not_found(&status) => return Verdict::Gone,
        Ok(Err(status)) => format!("{:?}: {}", status.code(), status.message()),
        Err(_) => format!("no answer within {timeout:?}"),
    };
    tracing::warn!(namespace = %ns, workflow_id = %id, run_id = %run, %error,
        "External Storage gc: DescribeWorkflowExecution failed; the objects are kept");
    Verdict::Failed
}

/// `NotFound` about the execution itself: a missing namespace, or a `NotFound` without
/// Temporal's detail (a proxy's), is not an answer about the run.
fn execution_not_found(status: &Status) -> bool {
    use prost::Message as _;
    status.code() == Code::NotFound
        && RpcStatus::decode(status.details()).is_ok_and(|s| {
            s.details
                .first()
                .is_some_and(|d| d.type_url.rsplit('/').next() == Some(NOT_FOUND_FAILURE))
        })
}

/// Counters of [`PayloadGcReport`]s, one per field: `overspill_external_storage_gc_runs_checked`,
/// `…_objects_deleted`, `…_bytes_deleted`, `…_objects_kept`, `…_bytes_kept`, `…_errors`.
#[derive(Clone, derive_more::Debug)]
#[debug("GcMetrics")]
pub struct GcMetrics {
    runs_checked: Counter,
    objects_deleted: Counter,
    bytes_deleted: Counter,
    objects_kept: Counter,
    bytes_kept: Counter,
    errors: Counter,
    attributes: MetricAttributes,
}

impl GcMetrics {
    /// Counters registered with `meter` (the SDK's Prometheus meter).
    pub fn new(meter: &Arc<dyn CoreMeter>) -> Self {
        let counter = |name: &str, what: &str| {
            meter.counter(
                MetricParameters::builder()
                    .name(format!("overspill_external_storage_gc_{name}"))
                    .description(format!("External Storage gc: {what}"))
                    .build(),
            )
        };
        Self {
            runs_checked: counter("runs_checked", "Workflow executions described"),
            objects_deleted: counter("objects_deleted", "Objects deleted"),
            bytes_deleted: counter("bytes_deleted", "Bytes deleted"),
            objects_kept: counter("objects_kept", "Objects kept"),
            bytes_kept: counter("bytes_kept", "Bytes kept"),
            errors: counter("errors", "Temporal calls, deletes and listings that failed"),
            attributes: meter.new_attributes(NewAttributes::default()),
        }
    }

    /// Add one collection's numbers.
    pub fn record(&self, report: &PayloadGcReport) {
        let attributes = &self.attributes;
        self.runs_checked.add(report.runs_checked, attributes);
        self.objects_deleted.add(report.deleted.objects, attributes);
        self.bytes_deleted.add(report.deleted.bytes, attributes);
        self.objects_kept.add(report.kept.objects, attributes);
        self.bytes_kept.add(report.kept.bytes, attributes);
        self.errors.add(report.errors, attributes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workflow(ns: &str, id: &str, run: Option<&str>) -> Owner {
        Owner::Workflow {
            current: (ns.into(), id.into(), String::new()),
            run: run.map(|run| (ns.into(), id.into(), run.into())),
        }
    }

    #[test]
    fn keys_name_their_owner() {
        let hex = "ab".repeat(32);
        let cases = [
            (
                format!("ns/default/wt/W/wi/wf-1/ri/r-1/d/sha256/{hex}"),
                workflow("default", "wf-1", Some("r-1")),
            ),
            (
                format!("ns/my%20ns/wt/W/wi/a%2Fb%20%C3%BC/ri/null/d/sha256/{hex}"),
                workflow("my ns", "a/b ü", None),
            ),
            (
                format!("ns/default/wt/null/wi/wf-1/ri/null/d/sha256/{hex}"),
                workflow("default", "wf-1", None),
            ),
            (
                format!("ns/default/wt/W/wi/null/ri/r/d/sha256/{hex}"),
                Owner::Unscoped,
            ),
            (
                format!("ns/null/wt/W/wi/x/ri/r/d/sha256/{hex}"),
                Owner::Unscoped,
            ),
            (format!("d/sha256/{hex}"), Owner::Unscoped),
            (format!("ns/default/d/sha256/{hex}"), Owner::Unscoped),
            (
                format!("ns/default/at/A/ai/a-1/ri/r-1/d/sha256/{hex}"),
                Owner::Unscoped,
            ),
            (
                format!("ns/default/wt/W/wi/%FF/ri/r/d/sha256/{hex}"),
                Owner::Unknown,
            ),
            (
                format!("ns/default/wt/W/wi/x/ri/r/d/md5/{hex}/extra"),
                Owner::Unknown,
            ),
            ("something/else".to_owned(), Owner::Unknown),
        ];
        for (key, owner) in cases {
            assert_eq!(Owner::of(&key), owner, "{key}");
        }
    }

    #[test]
    fn only_temporals_not_found_about_an_execution_is_gone() {
        use temporalio_common::protos::temporal::api::errordetails::v1::{
            NamespaceNotFoundFailure, NotFoundFailure,
        };
        use temporalio_common::protos::utilities::pack_any;
        let status = |code: Code, detail: Option<_>| {
            let details = RpcStatus {
                code: code as i32,
                message: "m".into(),
                details: detail.into_iter().collect(),
            };
            Status::with_details(code, "m", prost::Message::encode_to_vec(&details).into())
        };
        let url = |name: &str| format!("type.googleapis.com/temporal.api.errordetails.v1.{name}");
        let run = pack_any(url("NotFoundFailure"), &NotFoundFailure::default()).ok();
        let ns = pack_any(
            url("NamespaceNotFoundFailure"),
            &NamespaceNotFoundFailure::default(),
        )
        .ok();
        assert!(execution_not_found(&status(Code::NotFound, run.clone())));
        assert!(!execution_not_found(&status(Code::NotFound, ns)));
        assert!(!execution_not_found(&status(Code::NotFound, None)));
        assert!(!execution_not_found(&Status::not_found("no details")));
        assert!(!execution_not_found(&status(Code::Unavailable, run)));
    }

    #[test]
    fn the_summary_names_every_count() {
        let report = PayloadGcReport {
            runs_checked: 3,
            deleted: Tally {
                objects: 2,
                bytes: 10,
            },
            kept: Tally {
                objects: 4,
                bytes: 20,
            },
            errors: 1,
            dry_run: true,
        };
        assert_eq!(
            report.to_string(),
            "checked 3 run(s); would delete 2 object(s), 10 bytes; kept 4 object(s), 20 bytes; 1 error(s) (dry run)"
        );
    }
}
