//! `overspill query`: exactly what query_tool_result returns for a handle and a jq filter.

use overspill::query::{self, QueryRequest};
use overspill::store::Store;

use super::CliResult;
use super::read::{Args, MappedSpills, print_page};

pub(crate) async fn run(args: Args<QueryRequest>) -> CliResult {
    let spills = MappedSpills::new(Store::open(args.store.as_deref())?);
    let page = query::query_tool_result(&spills, &args.request).await;
    print_page(page, spills.store.url())
}
