//! `overspill read`: exactly what read_tool_result returns for a handle.

use std::io::Write as _;
use std::process::ExitCode;

use overspill::read::{self, ReadOutcomeError, ReadRequest};
use overspill::store::Store;

use super::CliResult;

/// Page back into a spill.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The handle from a spill marker.
    handle: String,
    /// Lines to skip.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    offset: i64,
    /// Lines to show (at most 1,000).
    #[arg(long, default_value_t = read::DEFAULT_LIMIT, allow_negative_numbers = true)]
    limit: i64,
    /// Count the offset from the end.
    #[arg(long)]
    from_end: bool,
    /// Keep only lines containing this literal text.
    #[arg(long)]
    pattern: Option<String>,
    /// The store the spill lives in (see `overspill reduce --help`).
    #[arg(long, env = "OVERSPILL_STORE", value_name = "URL")]
    store: Option<String>,
}

pub(crate) async fn run(args: Args) -> CliResult {
    let store = Store::open(args.store.as_deref())?;
    let request = ReadRequest {
        handle: args.handle,
        offset: args.offset,
        limit: args.limit,
        from_end: args.from_end,
        pattern: args.pattern,
    };
    print_page(read::read_tool_result(&store, &request).await)
}

/// Print a page on stdout; a bad argument is its message on stderr and exit code 2.
pub(crate) fn print_page(page: Result<String, ReadOutcomeError>) -> CliResult {
    match page {
        Ok(page) => {
            std::io::stdout().lock().write_all(page.as_bytes())?;
            Ok(ExitCode::SUCCESS)
        }
        Err(ReadOutcomeError::Retry(retry)) => {
            eprintln!("{retry}");
            Ok(ExitCode::from(2))
        }
        Err(ReadOutcomeError::Store(e)) => Err(e.into()),
    }
}
