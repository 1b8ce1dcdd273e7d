//! `overspill spills ls|gc` (stub: the store issue fills it in).

use super::CliResult;

/// Spill housekeeping.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Command {
    /// List spills.
    Ls,
}

pub(crate) async fn run(_cmd: Command) -> CliResult {
    Err("`spills` is not implemented yet".into())
}
