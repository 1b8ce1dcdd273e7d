//! `overspill read`, `grep` and `query`: exactly what read_tool_result, grep_tool_result and
//! query_tool_result return for a handle.
//!
//! They read a spill as the worker does, through the store's ranged reads into buffers they own
//! (a spill is never mapped: another process may rewrite it while it is paged), so a page costs
//! the same few megabytes whatever the spill's size.

use std::io::Write as _;
use std::process::ExitCode;

use overspill::query::{self, QueryRequest};
use overspill::read::{self, GrepRequest, ReadOutcomeError, ReadRequest};
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

/// `overspill read`.
pub(crate) async fn read(args: Args<ReadRequest>) -> CliResult {
    let store = Store::open(args.store.as_deref())?;
    let page = read::read_tool_result(&store, &args.request).await;
    print_page(page, store.url())
}

/// `overspill grep`.
pub(crate) async fn grep(args: Args<GrepRequest>) -> CliResult {
    let store = Store::open(args.store.as_deref())?;
    let page = read::grep_tool_result(&store, &args.request).await;
    print_page(page, store.url())
}

/// `overspill query`.
pub(crate) async fn query(args: Args<QueryRequest>) -> CliResult {
    let store = Store::open(args.store.as_deref())?;
    let page = query::query_tool_result(&store, &args.request).await;
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
