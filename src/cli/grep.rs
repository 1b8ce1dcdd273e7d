//! `overspill grep`: exactly what grep_tool_result returns for a handle and a pattern.

use overspill::read::{self, GrepRequest};
use overspill::store::Store;

use super::CliResult;
use super::read::print_page;

/// Search a spill: matching lines with their numbers and context.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The handle from a spill marker.
    handle: String,
    /// The text a line must contain (a regex with `--regex`).
    pattern: String,
    /// Treat the pattern as a regex (Rust `regex` syntax, linear time).
    #[arg(long)]
    regex: bool,
    /// Match regardless of case.
    #[arg(short = 'i', long)]
    ignore_case: bool,
    /// Lines of context around each match (at most 20).
    #[arg(short = 'C', long, default_value_t = 0, allow_negative_numbers = true)]
    context: i64,
    /// Matches to skip.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    offset: i64,
    /// Matches to show (at most 1,000).
    #[arg(long, default_value_t = read::DEFAULT_GREP_LIMIT, allow_negative_numbers = true)]
    limit: i64,
    /// Count the offset from the last match.
    #[arg(long)]
    from_end: bool,
    /// The store the spill lives in (see `overspill reduce --help`).
    #[arg(long, env = "OVERSPILL_STORE", value_name = "URL")]
    store: Option<String>,
}

pub(crate) async fn run(args: Args) -> CliResult {
    let store = Store::open(args.store.as_deref())?;
    let request = GrepRequest {
        handle: args.handle,
        pattern: args.pattern,
        regex: args.regex,
        ignore_case: args.ignore_case,
        context: args.context,
        offset: args.offset,
        limit: args.limit,
        from_end: args.from_end,
    };
    print_page(read::grep_tool_result(&store, &request).await)
}
