//! `overspill dev` (stub: the dev issue fills it in).

use super::CliResult;

/// Dev options.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {}

pub(crate) async fn run(_args: Args) -> CliResult {
    Err("`dev` is not implemented yet".into())
}
