//! `overspill spills ls|gc`: list spills, and delete the ones older than a cutoff.
//!
//! Both work on every store URL (S3-compatible, local, memory) from a full recursive listing;
//! for production S3, a bucket lifecycle rule on the `tool_output_limits/` prefix does the same
//! job without a cron (see the README).

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use overspill::service::{Caller, Service, Surface};
use overspill::store::{ListRequest, SpillInfo, Store, StoreOptions};

use super::CliResult;
use super::read::print_page;

/// Spill housekeeping.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Command {
    /// List spills: handle (as its marker shows it), size in bytes, age. With `--run`, the run's newest spills as
    /// list_tool_results shows them: tool, chars, lines, age and first line.
    Ls {
        /// Only the spills of this agent run.
        #[arg(long, value_name = "RUN_ID")]
        run: Option<String>,
        /// With `--run`: spills to show, newest first.
        #[arg(long, default_value_t = overspill::store::DEFAULT_LIST_LIMIT, requires = "run")]
        limit: i64,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Delete spills (and their line indexes) last written longer ago than `--older-than`.
    Gc {
        /// The age cutoff, e.g. `6h`, `2days`, `30m`.
        #[arg(long, value_name = "AGE", value_parser = humantime::parse_duration)]
        older_than: Duration,
        /// Only print what would be deleted.
        #[arg(long)]
        dry_run: bool,
        #[command(flatten)]
        store: StoreArgs,
    },
}

/// Which store, and how to reach it.
#[derive(Debug, clap::Args)]
pub(crate) struct StoreArgs {
    /// The store (see `overspill reduce --help`).
    #[arg(long, env = "OVERSPILL_STORE", value_name = "URL")]
    store: Option<String>,
    /// S3 endpoint (default: `AWS_ENDPOINT_URL`).
    #[arg(long, value_name = "URL")]
    endpoint: Option<String>,
    /// S3 region (default: `AWS_REGION`, else us-east-1).
    #[arg(long)]
    region: Option<String>,
    /// Allow a plain-HTTP endpoint (default: `AWS_ALLOW_HTTP`).
    #[arg(long)]
    allow_http: bool,
    /// Per-call timeout, e.g. `5s`.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    timeout: Option<Duration>,
    /// Deadline of the whole listing or collection, every page and delete included (default 5m).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    deadline: Option<Duration>,
}

impl StoreArgs {
    fn open(&self) -> Result<Store, overspill::store::StoreError> {
        let options = StoreOptions::builder()
            .maybe_endpoint(self.endpoint.clone())
            .maybe_region(self.region.clone())
            .maybe_allow_http(self.allow_http.then_some(true))
            .maybe_timeout(self.timeout)
            .maybe_scan_timeout(self.deadline)
            .build();
        Store::open_with(self.store.as_deref(), options)
    }
}

pub(crate) async fn run(cmd: Command) -> CliResult {
    let now = SystemTime::now();
    let mut out = std::io::stdout().lock();
    match cmd {
        Command::Ls {
            run: Some(run_id),
            limit,
            store,
        } => {
            let request = ListRequest {
                run_id,
                limit,
                ..ListRequest::default()
            };
            let service = Service::new(Arc::new(store.open()?), Surface::Cli);
            let listing = service.list_tool_results(request, &Caller::Operator).await;
            drop(out);
            return print_page(listing, &service);
        }
        Command::Ls {
            run: None, store, ..
        } => {
            let store = store.open()?;
            let spills = store.list_spills().await?;
            print_table(&mut out, &spills, now, None)?;
            if spills.is_empty() {
                eprintln!("overspill: no spills in {}", store.url());
            }
        }
        Command::Gc {
            older_than,
            dry_run,
            store,
        } => {
            let cutoff = now
                .checked_sub(older_than)
                .unwrap_or(SystemTime::UNIX_EPOCH);
            let report = store.open()?.gc(cutoff, dry_run).await?;
            let verb = if dry_run { "would remove" } else { "removed" };
            print_table(&mut out, &report.removed, now, Some(verb))?;
            let bytes: u64 = report.removed.iter().map(|s| s.size).sum();
            let (removed, kept) = (report.removed.len(), report.kept);
            let age = humantime::format_duration(older_than);
            write!(
                out,
                "{verb} {removed} spill(s), {bytes} bytes, older than {age}; kept {kept}"
            )?;
            if !dry_run {
                let deleted = report.deleted_objects;
                write!(out, " ({deleted} object(s) deleted, indexes included)")?;
            }
            writeln!(out)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `HANDLE  BYTES  AGE` columns (with a leading action column for gc, and no table when gc
/// removed nothing).
fn print_table(
    out: &mut impl Write,
    spills: &[SpillInfo],
    now: SystemTime,
    action: Option<&str>,
) -> std::io::Result<()> {
    if spills.is_empty() && action.is_some() {
        return Ok(());
    }
    let width = |len: fn(&SpillInfo) -> usize, title: &str| {
        spills
            .iter()
            .map(len)
            .chain([title.len()])
            .max()
            .unwrap_or(0)
    };
    let h = width(|s| s.handle.len(), "HANDLE");
    let b = width(|s| s.size.to_string().len(), "BYTES");
    let lead = action.map(|v| format!("{v:<12} ")).unwrap_or_default();
    writeln!(
        out,
        "{:l$}{:<h$}  {:>b$}  AGE",
        "",
        "HANDLE",
        "BYTES",
        l = lead.len()
    )?;
    for s in spills {
        let age = now.duration_since(s.last_modified).unwrap_or_default();
        let age = humantime::format_duration(Duration::from_secs(age.as_secs()));
        writeln!(out, "{lead}{:<h$}  {:>b$}  {age}", s.handle, s.size)?;
    }
    Ok(())
}
