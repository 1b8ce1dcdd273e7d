//! `overspill grep`: exactly what grep_tool_result returns for a handle and a pattern.

use overspill::read::{self, GrepRequest};
use overspill::store::Store;

use super::CliResult;
use super::read::{Args, MappedSpills, print_page};

pub(crate) async fn run(args: Args<GrepRequest>) -> CliResult {
    let spills = MappedSpills::new(Store::open(args.store.as_deref())?);
    let page = read::grep_tool_result(&spills, &args.request).await;
    print_page(page, spills.store.url())
}
