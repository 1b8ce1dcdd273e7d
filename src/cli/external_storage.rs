//! `overspill external-storage gc`: delete External Storage objects whose history Temporal has
//! let go, once, or on a schedule inside the worker (`--external-storage-gc-every`).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use overspill::external_storage::{
    ExternalStorage, ExternalStorageSettings, GcMetrics, GcOptions, PayloadGcReport,
};
use overspill::worker::Connect;
use temporalio_client::Client;
use temporalio_common::telemetry::metrics::CoreMeter;

use super::CliResult;

/// External Storage housekeeping.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Command {
    /// Delete the objects of runs Temporal no longer has (history deleted or past retention),
    /// once older than `--older-than`; print a summary. Exits 1 when a call failed (its objects
    /// are kept).
    Gc(GcArgs),
}

/// The bucket, the connection and the rules.
#[derive(Debug, clap::Args)]
pub(crate) struct GcArgs {
    #[command(flatten)]
    temporal: Connect,
    /// The bucket the senders' External Storage driver writes to: `s3://BUCKET[/prefix]` or
    /// `gs://BUCKET[/prefix]`; the objects under `{prefix}/v0/` are collected.
    #[arg(long, env = "OVERSPILL_EXTERNAL_STORAGE", value_name = "URL")]
    external_storage: String,
    /// Objects of a gone run younger than this are kept: a margin against clock skew and
    /// starts in flight.
    #[arg(long, value_name = "DURATION", default_value = "1day", value_parser = humantime::parse_duration)]
    older_than: Duration,
    /// Delete unscoped and standalone-activity objects older than this (default: keep them).
    /// It must exceed the namespace's retention plus the longest workflow run.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    unscoped_older_than: Option<Duration>,
    /// Count what would be deleted; delete nothing.
    #[arg(long)]
    dry_run: bool,
    /// Temporal calls in flight at once.
    #[arg(long, value_name = "N", default_value_t = GcOptions::default().concurrency)]
    concurrency: usize,
    /// Temporal calls started per second at most.
    #[arg(long, value_name = "N", default_value_t = GcOptions::default().rate)]
    rate: u32,
}

/// The worker's schedule of collections on its own `--external-storage` and connection.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ScheduleArgs {
    /// Run `overspill external-storage gc` on `--external-storage` this often (the first at
    /// start), counting in the Prometheus metrics. Default: never.
    #[arg(
        long,
        env = "OVERSPILL_EXTERNAL_STORAGE_GC_EVERY",
        value_name = "DURATION",
        value_parser = humantime::parse_duration,
        requires = "external_storage"
    )]
    external_storage_gc_every: Option<Duration>,
    /// The scheduled collections' `--older-than`.
    #[arg(long, value_name = "DURATION", default_value = "1day", value_parser = humantime::parse_duration)]
    external_storage_gc_older_than: Duration,
    /// The scheduled collections' `--unscoped-older-than` (default: keep unscoped objects).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    external_storage_gc_unscoped_older_than: Option<Duration>,
}

pub(crate) async fn run(Command::Gc(args): Command) -> CliResult {
    crate::logging::init_logging(crate::logging::LogFormat::Text, "info");
    let storage =
        ExternalStorage::open(&args.external_storage, ExternalStorageSettings::default())?;
    let client = args.temporal.client().await?;
    let options = GcOptions {
        older_than: args.older_than,
        unscoped_older_than: args.unscoped_older_than,
        dry_run: args.dry_run,
        concurrency: args.concurrency,
        rate: args.rate,
        ..GcOptions::default()
    };
    let report = storage.gc(&client, options).await?;
    println!("external-storage gc {}: {report}", args.external_storage);
    Ok(if report.errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

impl ScheduleArgs {
    /// Start the schedule, when one is asked for and `storage` is on: a task that collects
    /// every period, logs each summary and adds it to the counters (with a `meter`).
    pub(crate) fn spawn(
        &self,
        storage: Option<Arc<ExternalStorage>>,
        client: &Client,
        meter: Option<&Arc<dyn CoreMeter>>,
    ) {
        let (Some(every), Some(storage)) = (self.external_storage_gc_every, storage) else {
            return;
        };
        let (client, metrics) = (client.clone(), meter.map(GcMetrics::new));
        let older_than = self.external_storage_gc_older_than;
        let unscoped_older_than = self.external_storage_gc_unscoped_older_than;
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            loop {
                ticks.tick().await;
                let options = GcOptions {
                    older_than,
                    unscoped_older_than,
                    ..GcOptions::default()
                };
                let report = match storage.gc(&client, options).await {
                    Ok(report) => {
                        let bucket = storage.bucket_name();
                        tracing::info!(bucket, "external-storage gc: {report}");
                        report
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "external-storage gc failed");
                        PayloadGcReport {
                            errors: 1,
                            ..PayloadGcReport::default()
                        }
                    }
                };
                metrics.iter().for_each(|m| m.record(&report));
            }
        });
    }
}
