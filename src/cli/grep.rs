//! `overspill grep`: exactly what grep_tool_result returns for a handle and a pattern.

use overspill::read::{self, GrepRequest};
use overspill::store::Store;

use super::CliResult;
use super::read::print_page;

/// Search a spill: matching lines with their numbers and context.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    request: GrepRequest,
    /// The store the spill lives in (see `overspill reduce --help`).
    #[arg(long, env = "OVERSPILL_STORE", value_name = "URL")]
    store: Option<String>,
}

pub(crate) async fn run(args: Args) -> CliResult {
    let store = Store::open(args.store.as_deref())?;
    print_page(read::grep_tool_result(&store, &args.request).await)
}
