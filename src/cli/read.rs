//! `overspill read`, `grep` and `query`: exactly what read_tool_result, grep_tool_result and
//! query_tool_result return for a handle.
//!
//! They read a spill as the worker does, through the store's ranged reads into buffers they own
//! (a spill is never mapped: another process may rewrite it while it is paged), so a page costs
//! the same few megabytes whatever the spill's size.

use std::io::Write as _;
use std::process::ExitCode;

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
/// code 2. When the page found nothing, stderr names `store`, the store searched, and the exit
/// code is 1.
pub(crate) fn print_page(page: Result<String, ReadOutcomeError>, store: &str) -> CliResult {
    match page {
        Ok(page) => {
            writeln!(std::io::stdout().lock(), "{page}")?;
            if page.starts_with("[No stored tool result") || page.contains(": 0 spilled tool") {
                eprintln!(
                    "overspill: nothing found in {store} (--store or OVERSPILL_STORE names another)"
                );
                return Ok(ExitCode::FAILURE);
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(ReadOutcomeError::Retry(retry)) => {
            eprintln!("{retry}");
            Ok(ExitCode::from(2))
        }
        Err(ReadOutcomeError::Store(e)) => Err(e.into()),
    }
}
