//! `overspill worker` (stub: the worker issue fills it in).

use super::CliResult;

/// Worker options.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {}

pub(crate) async fn run(_args: Args) -> CliResult {
    Err("`worker` is not implemented yet".into())
}
