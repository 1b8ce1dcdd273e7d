//! `overspill worker`: serve the `tool_output_limits.*` activities (and the Rust workflows) on a
//! Temporal task queue until SIGTERM / Ctrl-C.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use bytesize::ByteSize;
use overspill::activities::{DEFAULT_TASK_QUEUE, InflightBudget, OverspillActivities};
use overspill::external_storage::{ExternalStorage, ExternalStorageSettings};
use overspill::limits::Limits;
use overspill::store::{ReadScope, Store, StoreOptions};
use overspill::worker::{self, Connect, Pollers, WorkerSettings};

use crate::CliResult;
use crate::logging::{LogFormat, init_logging};
use crate::model::ModelArgs;

/// Temporal External Storage: where payloads over Temporal's size limits live.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ExternalStorageArgs {
    /// The bucket of the senders' External Storage driver: `s3://BUCKET[/prefix]` (their
    /// `S3StorageDriver`'s bucket; endpoint and credentials as for `--store`) or
    /// `gs://BUCKET[/prefix]`. References in inputs are fetched from it, and payloads over the
    /// threshold are offloaded to it.
    #[arg(long, env = "OVERSPILL_EXTERNAL_STORAGE", value_name = "URL")]
    external_storage: Option<String>,
    /// Payloads of at least this size are offloaded (`256KiB`, as Python's default).
    #[arg(
        long,
        env = "OVERSPILL_EXTERNAL_STORAGE_THRESHOLD",
        value_name = "BYTES",
        default_value = "256KiB"
    )]
    external_storage_threshold: ByteSize,
    /// The largest payload fetched or stored (`50MiB`, as the Python driver's default).
    #[arg(
        long,
        env = "OVERSPILL_EXTERNAL_STORAGE_MAX_PAYLOAD",
        value_name = "BYTES",
        default_value = "50MiB"
    )]
    external_storage_max_payload: ByteSize,
}

impl ExternalStorageArgs {
    /// The storage, if `--external-storage` is given, its client configured by `options`.
    pub(crate) fn open(
        &self,
        options: StoreOptions,
    ) -> Result<Option<Arc<ExternalStorage>>, Box<dyn std::error::Error>> {
        let Some(url) = &self.external_storage else {
            return Ok(None);
        };
        let settings = ExternalStorageSettings {
            threshold: self.external_storage_threshold.as_u64(),
            max_payload_bytes: self.external_storage_max_payload.as_u64(),
        };
        Ok(Some(Arc::new(ExternalStorage::open_with(
            url, settings, options,
        )?)))
    }
}

/// Serve the activities.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    temporal: Connect,
    /// Task queue to poll.
    #[arg(long, env = "OVERSPILL_TASK_QUEUE", default_value = DEFAULT_TASK_QUEUE)]
    task_queue: String,
    /// Where spills go: `file:///path`, `s3://bucket/prefix`, `memory://`. Default, for every
    /// command, `overspill dev` and Python's `OverspillStore()`: `file://$TMPDIR/overspill-<euid>`
    /// (`/tmp` without `TMPDIR`).
    #[arg(long, env = "OVERSPILL_STORE", value_name = "URL")]
    store: Option<String>,
    /// A PEM file of the CAs that sign the HTTPS endpoints of `--store` and
    /// `--external-storage`, instead of the system's (default: `AWS_CA_BUNDLE`).
    #[arg(long, value_name = "FILE")]
    store_ca_bundle: Option<PathBuf>,
    /// Default limits (JSON) for requests that carry no `config`.
    #[arg(long, env = "OVERSPILL_LIMITS", value_name = "FILE")]
    limits: Option<PathBuf>,
    /// Activities run at once.
    #[arg(
        long,
        env = "OVERSPILL_MAX_CONCURRENT_ACTIVITIES",
        default_value_t = 100
    )]
    max_concurrent_activities: usize,
    /// Memory running activities may hold for their payloads (`256MiB`, `2GiB`); each activity is
    /// charged four times its input's size, its peak, and a query also its `--query-memory`, a
    /// grep or read its buffers (about 34 and 16 MiB); it waits while the budget is spent.
    /// Default: half the available memory.
    #[arg(long, env = "OVERSPILL_MAX_INFLIGHT_BYTES", value_name = "BYTES")]
    max_inflight_bytes: Option<ByteSize>,
    #[command(flatten)]
    query_memory: super::read::QueryMemory,
    #[command(flatten)]
    external_storage: ExternalStorageArgs,
    #[command(flatten)]
    external_storage_gc: super::external_storage::ScheduleArgs,
    /// Which spills the read-back activities (`read_tool_result`, `grep_tool_result`,
    /// `query_tool_result`, `list_tool_results`) let a workflow see: `workflow`, those its own
    /// workflow id wrote; `namespace`, those of its namespace; `any`, every spill. A spill not
    /// seen reads exactly as a missing one; a spill written outside a workflow (or before its
    /// writer was recorded) is seen only with `any`.
    #[arg(
        long,
        env = "OVERSPILL_READ_SCOPE",
        value_name = "workflow|namespace|any",
        default_value_t = ReadScope::Workflow
    )]
    read_scope: ReadScope,
    /// Start even when the store (or the External Storage bucket) does not answer at start.
    #[arg(long, env = "OVERSPILL_SKIP_STORE_CHECK")]
    skip_store_check: bool,
    /// Serve Prometheus metrics on this address (`/metrics`), e.g. `127.0.0.1:9464`.
    #[arg(long, env = "OVERSPILL_METRICS_ADDR", value_name = "ADDR")]
    metrics: Option<SocketAddr>,
    /// Log format.
    #[arg(long, env = "OVERSPILL_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(flatten)]
    model: ModelArgs,
    /// Also serve the example agent-loop workflow (`OverspillAgentLoop`) and its tool activities
    /// (`overspill.example.*`).
    #[arg(long, hide = true)]
    example_tools: bool,
    /// On SIGTERM or Ctrl-C polling stops at once; running activities get this many seconds to
    /// finish, then are cancelled and fail retryably, so that another worker retries them.
    #[arg(long, env = "OVERSPILL_GRACEFUL_SHUTDOWN_SECS", default_value_t = 30)]
    graceful_shutdown_secs: u64,
    /// Serve the activities only, not the Rust workflows (`ReduceToolOutput`): no workflow task
    /// polls, for deployments whose workflows run in another worker.
    #[arg(long, env = "OVERSPILL_ACTIVITIES_ONLY")]
    activities_only: bool,
    /// Activity task polls kept open at once: a number, or `auto` (scaled by the server's
    /// feedback, 1 to 100). Default: the SDK's (5, or `auto` where the namespace offers it).
    #[arg(long, env = "OVERSPILL_ACTIVITY_POLLERS", value_name = "N|auto")]
    activity_pollers: Option<Pollers>,
    /// Workflow task polls kept open at once (at least 2): a number, or `auto`. Default: the
    /// SDK's.
    #[arg(long, env = "OVERSPILL_WORKFLOW_POLLERS", value_name = "N|auto")]
    workflow_pollers: Option<Pollers>,
    /// Threads running the worker's tasks (1: the main thread alone, no pool). Default: the main
    /// thread and one more per CPU core.
    #[arg(long, env = "OVERSPILL_WORKER_THREADS", value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub(crate) worker_threads: Option<u16>,
}

pub(crate) async fn run(args: Args) -> CliResult {
    init_logging(args.log_format, "info");
    // Listen for SIGTERM before connecting: an early stop is still a graceful one.
    let shutdown = worker::shutdown_signal();
    let limits = load_limits(args.limits.as_deref())?;
    let options = StoreOptions::builder()
        .maybe_ca_bundle(args.store_ca_bundle.clone())
        .build();
    let store = Arc::new(Store::open_with(args.store.as_deref(), options.clone())?);
    let external_storage = args.external_storage.open(options)?;
    let budget = (args.max_inflight_bytes)
        .map_or_else(InflightBudget::from_available_memory, |b| {
            InflightBudget::new(b.as_u64())
        });
    if !args.skip_store_check {
        check_stores(&store, external_storage.as_deref()).await?;
        check_scope(&store, args.read_scope).await?;
    }
    let runtime = worker::runtime(args.metrics)?;
    if let Some(addr) = runtime.metrics_addr {
        tracing::info!(%addr, "serving Prometheus metrics on /metrics, probes on /healthz and /readyz");
    }
    let connect = args.temporal.clone();
    let client = connect.client().await?;
    (args.external_storage_gc).spawn(external_storage.clone(), &client, runtime.meter.as_ref());
    let check = worker::readiness_check(connect.clone(), client.clone(), store.clone());
    runtime.readiness.set_check(check).await;
    let query_runner = (args.query_memory.runner(Some(budget.bytes())))
        .map_err(|e| format!("cannot find this executable to run queries in: {e}"))?;
    let mut activities = OverspillActivities::new(store.clone())
        .with_query_runner(query_runner)
        .with_limits(limits)
        .with_inflight_budget(budget.clone())
        .with_read_scope(args.read_scope)
        .with_metrics(runtime.metrics.clone());
    if let Some(storage) = external_storage.clone() {
        activities = activities.with_external_storage(storage);
    }
    if let Some(summarizer) = args.model.summarizer()? {
        activities = activities.with_summarizer(summarizer);
    }
    let settings = WorkerSettings {
        task_queue: args.task_queue.clone(),
        max_concurrent_activities: args.max_concurrent_activities,
        graceful_shutdown: std::time::Duration::from_secs(args.graceful_shutdown_secs),
        activity_pollers: args.activity_pollers,
        workflow_pollers: args.workflow_pollers,
        ..WorkerSettings::default()
    };
    let examples = args.example_tools.then(|| activities.clone());
    let mut worker = settings.build(&runtime, client, activities, |options| {
        if !args.activities_only {
            overspill_workflows::register(options)?;
        }
        if let Some(overspill) = examples {
            crate::example::register_examples(options, overspill)?;
        }
        Ok(())
    })?;
    tracing::info!(
        task_queue = %args.task_queue,
        address = %connect,
        store = %store.url(),
        external_storage = external_storage.as_ref().map_or("off", |s| s.bucket_name()),
        max_inflight_bytes = %ByteSize(budget.bytes()),
        read_scope = %args.read_scope,
        query_memory = %ByteSize(args.query_memory.bytes(Some(budget.bytes()))),
        "overspill worker started"
    );
    worker::run_until(&mut worker, shutdown).await?;
    tracing::info!("overspill worker stopped");
    Ok(ExitCode::SUCCESS)
}

/// Refuse to start on a store (or External Storage bucket) that cannot be used, naming it and
/// what to fix, rather than failing at the first spill.
async fn check_stores(
    store: &Store,
    external_storage: Option<&ExternalStorage>,
) -> Result<(), String> {
    let skip = "or pass --skip-store-check to start anyway";
    store.check().await.map_err(|e| {
        format!(
            "the store {} cannot be used: {e}. Fix --store (OVERSPILL_STORE) or its credentials \
             (AWS_*), {skip}",
            store.url()
        )
    })?;
    if let Some(storage) = external_storage {
        storage.check().await.map_err(|e| {
            format!("{e}. Fix --external-storage (OVERSPILL_EXTERNAL_STORAGE), {skip}")
        })?;
    }
    Ok(())
}

/// Refuse a local store that cannot record who wrote a spill when reads are scoped: no workflow
/// would read even its own spills.
async fn check_scope(store: &Store, scope: ReadScope) -> Result<(), String> {
    if scope == ReadScope::Any {
        return Ok(());
    }
    let recorded = store
        .records_writers()
        .await
        .map_err(|e| format!("the store {} cannot be used: {e}", store.url()))?;
    if recorded {
        return Ok(());
    }
    Err(format!(
        "the store {} is on a filesystem without user extended attributes, where a spill records \
         the workflow that wrote it: with --read-scope {scope} no workflow could read its own \
         spills. Put the store on a filesystem that keeps them (ext4, xfs, btrfs, tmpfs on Linux \
         6.6+), or pass --read-scope any (OVERSPILL_READ_SCOPE)",
        store.url()
    ))
}

/// Parse `--limits`, failing fast (before connecting) on an invalid file.
fn load_limits(path: Option<&std::path::Path>) -> Result<Limits, Box<dyn std::error::Error>> {
    let Some(path) = path else {
        return Ok(Limits::default());
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read --limits {}: {e}", path.display()))?;
    Ok(Limits::from_json(&text)?)
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::Args;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        worker: Args,
    }

    #[test]
    fn debug_never_shows_secrets() {
        let cli = Cli::try_parse_from([
            "overspill",
            "--address",
            "https://ops:addr-secret@temporal.example:7233",
            "--api-key",
            "tk-secret",
            "--model-api-key",
            "sk-secret",
            "--model-url",
            "https://u:model-secret@llm.example/v1",
        ])
        .expect("flags parse");
        let shown = format!("{:?}", cli.worker);
        for secret in ["addr-secret", "tk-secret", "sk-secret", "model-secret"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
    }
}
