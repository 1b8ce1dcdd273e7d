//! `overspill read`, `grep` and `query`: exactly what read_tool_result, grep_tool_result and
//! query_tool_result return for a handle, answered by the service the worker's activities call.
//!
//! They read a spill as the worker does, through the store's ranged reads into buffers they own
//! (a spill is never mapped: another process may rewrite it while it is paged), so a page costs
//! the same few megabytes whatever the spill's size.

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use bytesize::ByteSize;
use overspill::query::{DEFAULT_QUERY_MEMORY, QueryRequest, QueryRunner};
use overspill::read::{GrepRequest, ReadRequest};
use overspill::service::{Answer, Caller, Failure, Service, Surface};
use overspill::store::Store;

use super::CliResult;

/// A page request (`ReadRequest`, `GrepRequest` or `QueryRequest`) and the store it reads.
#[derive(Debug, clap::Args)]
pub(crate) struct Args<R: clap::Args> {
    #[command(flatten)]
    request: R,
    /// The store the spill lives in (see `overspill reduce --help`).
    #[arg(long, env = "OVERSPILL_STORE", value_name = "URL")]
    store: Option<String>,
}

/// The bounds of a query: `--query-memory` and `--query-deadline`.
#[derive(Debug, Clone, Copy, clap::Args)]
pub(crate) struct QueryMemory {
    /// How much memory one query may take (`512MiB`, `2GiB`): each query runs in a child
    /// process bounded so, and a filter that needs more is stopped with a message naming the
    /// bound. The worker charges it against `--max-inflight-bytes` while the query runs.
    /// Default: 2 GiB (what `.` and `length` take over a 64 MiB JSON document), and in the
    /// worker at most a quarter of `--max-inflight-bytes` (at least 256 MiB), so that one
    /// model's queries never hold the whole budget.
    #[arg(long, env = "OVERSPILL_QUERY_MEMORY", value_name = "BYTES")]
    query_memory: Option<ByteSize>,
    /// How long one query may run, in seconds, before it is stopped with a message naming the
    /// deadline. Default: 30.
    #[arg(long, env = "OVERSPILL_QUERY_DEADLINE_SECS", value_name = "SECS", value_parser = seconds)]
    query_deadline: Option<Duration>,
}

/// The longest query deadline accepted: far beyond any use, and far from the overflow of an
/// `Instant` or `Duration` sum that a larger one would panic on.
const MAX_QUERY_DEADLINE_SECS: f64 = 1e6;

/// A positive number of seconds under [`MAX_QUERY_DEADLINE_SECS`], fractions allowed (`0.5`).
fn seconds(text: &str) -> Result<Duration, String> {
    let secs: f64 = text.parse().map_err(|e| format!("{e}"))?;
    (secs > 0.0 && secs < MAX_QUERY_DEADLINE_SECS)
        .then(|| Duration::from_secs_f64(secs))
        .ok_or_else(|| {
            format!("{secs} is not a positive number of seconds under {MAX_QUERY_DEADLINE_SECS}")
        })
}

/// The smallest bound a worker derives from its budget.
const MIN_DERIVED_QUERY_MEMORY: u64 = 256 << 20;

impl QueryMemory {
    /// This executable as the sandbox, bounded by [`Self::bytes`] of `budget` and the deadline.
    pub(crate) fn runner(&self, budget: Option<u64>) -> std::io::Result<QueryRunner> {
        let runner = QueryRunner::sandboxed_self(self.bytes(budget))?;
        let deadline = self.query_deadline.unwrap_or(runner.deadline);
        Ok(QueryRunner { deadline, ..runner })
    }

    /// The bound in bytes: as given, else [`DEFAULT_QUERY_MEMORY`] within a quarter of the
    /// in-flight `budget` (a worker's) but at least 256 MiB.
    pub(crate) fn bytes(&self, budget: Option<u64>) -> u64 {
        let derived = budget.map_or(DEFAULT_QUERY_MEMORY, |b| {
            DEFAULT_QUERY_MEMORY
                .min(b / 4)
                .max(MIN_DERIVED_QUERY_MEMORY)
        });
        self.query_memory.map_or(derived, |b| b.as_u64())
    }
}

/// `overspill query`'s arguments: the request, the store, the memory bound.
#[derive(Debug, clap::Args)]
pub(crate) struct QueryArgs {
    #[command(flatten)]
    args: Args<QueryRequest>,
    #[command(flatten)]
    memory: QueryMemory,
}

impl<R: clap::Args> Args<R> {
    /// The service of the store `--store` names, for an operator at the command line.
    fn service(&self) -> Result<Service, overspill::store::StoreError> {
        let store = Store::open(self.store.as_deref())?;
        Ok(Service::new(Arc::new(store), Surface::Cli))
    }
}

/// `overspill read`.
pub(crate) async fn read(args: Args<ReadRequest>) -> CliResult {
    let service = args.service()?;
    let page = service
        .read_tool_result(&args.request, &Caller::Operator)
        .await;
    print_page(page, &service)
}

/// `overspill grep`.
pub(crate) async fn grep(args: Args<GrepRequest>) -> CliResult {
    let service = args.service()?;
    let page = service
        .grep_tool_result(&args.request, &Caller::Operator)
        .await;
    print_page(page, &service)
}

/// `overspill query`: the query runs in a child process bounded by `--query-memory`, as in the
/// worker.
pub(crate) async fn query(args: QueryArgs) -> CliResult {
    let runner = args
        .memory
        .runner(None)
        .map_err(|e| format!("cannot find this executable to run the query in: {e}"))?;
    let service = args.args.service()?.with_query_runner(Some(runner));
    let page = (service.query_tool_result(&args.args.request, &Caller::Operator)).await;
    print_page(page, &service)
}

/// Print a page (and a newline) on stdout; a bad argument is its message on stderr and exit
/// code 2. A handle the store does not have prints the text the model reads, and
/// [`nothing_found`] in the service's store.
pub(crate) fn print_page(page: Result<Answer, Failure>, service: &Service) -> CliResult {
    let answer = match page {
        Ok(answer) => answer,
        Err(retry) if retry.is_model_retry() => {
            eprintln!("{retry}");
            return Ok(ExitCode::from(2));
        }
        Err(failure) => return Err(failure.into()),
    };
    writeln!(std::io::stdout().lock(), "{}", answer.text)?;
    Ok(if answer.found {
        ExitCode::SUCCESS
    } else {
        nothing_found(service.store().url())
    })
}

/// Exit code 1, after stderr names `store`, the store searched, for a page that found nothing.
fn nothing_found(store: &str) -> ExitCode {
    eprintln!("overspill: nothing found in {store} (--store or OVERSPILL_STORE names another)");
    ExitCode::FAILURE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_deadline_is_positive_and_bounded() {
        assert_eq!(seconds("0.5"), Ok(Duration::from_millis(500)));
        for refused in ["0", "-1", "NaN", "inf", "1e6", "1e19", "soon"] {
            assert!(seconds(refused).is_err(), "{refused}");
        }
    }
}
