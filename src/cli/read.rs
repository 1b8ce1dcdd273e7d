//! `overspill read`: exactly what read_tool_result returns for a handle.

use std::io::Write as _;
use std::process::ExitCode;

use overspill::read::{self, ReadOutcomeError, ReadRequest};
use overspill::store::Store;

use super::CliResult;

/// A page request (`ReadRequest` or `GrepRequest`) and the store it reads.
#[derive(Debug, clap::Args)]
pub(crate) struct Args<R: clap::Args> {
    #[command(flatten)]
    pub(crate) request: R,
    /// The store the spill lives in (see `overspill reduce --help`).
    #[arg(long, env = "OVERSPILL_STORE", value_name = "URL")]
    pub(crate) store: Option<String>,
}

pub(crate) async fn run(args: Args<ReadRequest>) -> CliResult {
    let store = Store::open(args.store.as_deref())?;
    print_page(read::read_tool_result(&store, &args.request).await)
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
