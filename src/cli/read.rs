//! `overspill read`, `grep` and `query`: exactly what read_tool_result, grep_tool_result and
//! query_tool_result return for a handle.
//!
//! They read a spill as the worker does, through the store's ranged reads into buffers they own
//! (a spill is never mapped: another process may rewrite it while it is paged), so a page costs
//! the same few megabytes whatever the spill's size.

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use bytesize::ByteSize;
use overspill::query::{DEFAULT_QUERY_MEMORY, QueryRequest, QueryRunner, query_tool_result_with};
use overspill::read::ReadOutcomeError;
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

/// `overspill query`: the query runs in a child process bounded by `--query-memory`, as in the
/// worker.
pub(crate) async fn query(args: QueryArgs) -> CliResult {
    let runner = args
        .memory
        .runner(None)
        .map_err(|e| format!("cannot find this executable to run the query in: {e}"))?;
    run(args.args, async |store, request| {
        query_tool_result_with(store, request, &runner).await
    })
    .await
}

/// `overspill read`, `grep` or `query`: open the store, answer the request with `answer`
/// (`read_tool_result`, `grep_tool_result` or `query_tool_result`) and print the page.
pub(crate) async fn run<R: clap::Args>(
    args: Args<R>,
    answer: impl AsyncFnOnce(&Store, &R) -> Result<String, ReadOutcomeError>,
) -> CliResult {
    let store = Store::open(args.store.as_deref())?;
    let page = answer(&store, &args.request).await;
    print_page(page, store.url())
}

/// Print a page (and a newline) on stdout; a bad argument is its message on stderr and exit
/// code 2. A handle the store does not have prints the text the model reads, and
/// [`nothing_found`] in `store`.
pub(crate) fn print_page(page: Result<String, ReadOutcomeError>, store: &str) -> CliResult {
    let (page, found) = match page {
        Ok(page) => (page, true),
        Err(missing @ ReadOutcomeError::NoStoredResult(_)) => (missing.to_string(), false),
        Err(ReadOutcomeError::Retry(retry)) => {
            eprintln!("{retry}");
            return Ok(ExitCode::from(2));
        }
        Err(ReadOutcomeError::Store(e)) => return Err(e.into()),
        Err(ReadOutcomeError::Sandbox(e)) => return Err(e),
    };
    writeln!(std::io::stdout().lock(), "{page}")?;
    Ok(if found {
        ExitCode::SUCCESS
    } else {
        nothing_found(store)
    })
}

/// Exit code 1, after stderr names `store`, the store searched, for a page that found nothing.
pub(crate) fn nothing_found(store: &str) -> ExitCode {
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
