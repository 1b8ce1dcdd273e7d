//! The `overspill` command line: one binary, one subcommand per job. Its flags, environment
//! variables and logging live here; the engine and the worker are the `overspill` library, the
//! Rust workflows the `overspill-workflows` crate.
//!
//! [`example`] is the demo agent `overspill dev` runs (and `overspill worker --example-tools`
//! serves), public for the integration tests.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod dev;
pub mod example;
mod external_storage;
mod logging;
mod model;
mod read;
mod reduce;
mod spills;
mod worker;

/// Keep AI agents' oversized tool outputs out of their context windows, durably.
#[derive(Debug, Parser)]
#[command(name = "overspill", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Reduce one tool output and print what the model sees.
    Reduce(reduce::Args),
    /// Page back into a spill, exactly as read_tool_result returns it.
    Read(read::Args<overspill::read::ReadRequest>),
    /// Search a spill, exactly as grep_tool_result returns it.
    Grep(read::Args<overspill::read::GrepRequest>),
    /// Run a jq filter over a spill, exactly as query_tool_result returns it.
    Query(read::QueryArgs),
    /// List or garbage-collect spills.
    #[command(subcommand)]
    Spills(spills::Command),
    /// Temporal External Storage housekeeping.
    #[command(subcommand)]
    ExternalStorage(external_storage::Command),
    /// Serve the tool_output_limits.* activities on a Temporal task queue.
    Worker(Box<worker::Args>),
    /// Start a Temporal dev server, a local store and the worker, and run a demo.
    Dev(dev::Args),
    /// Run one query sent on stdin in this process, bounded in memory (the worker and `query`
    /// start it; not for people).
    #[command(name = "query-sandbox", hide = true)]
    QuerySandbox,
}

/// Parse the arguments and run the subcommand on a tokio runtime.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::QuerySandbox = cli.command {
        // No async runtime: the child reads, runs and answers on plain threads.
        return match overspill::query::serve_sandbox() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("overspill: {e}");
                ExitCode::from(3)
            }
        };
    }
    let runtime = match runtime(&cli.command) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("overspill: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Reduce(args) => reduce::run(args).await,
            Command::Read(args) => read::read(args).await,
            Command::Grep(args) => read::grep(args).await,
            Command::Query(args) => read::query(args).await,
            Command::Spills(cmd) => spills::run(cmd).await,
            Command::ExternalStorage(cmd) => external_storage::run(cmd).await,
            Command::Worker(args) => worker::run(*args).await,
            Command::Dev(args) => dev::run(args).await,
            Command::QuerySandbox => Ok(ExitCode::SUCCESS),
        }
    });
    match result {
        Ok(code) => code,
        // The reader of stdout is gone (`overspill read … | head`): nothing is left to say, and
        // no one to say it to, as for any Unix tool.
        Err(e) if closed_pipe(e.as_ref()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("overspill: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Whether `error`, or an error it wraps, is a write to a pipe whose reader closed it.
fn closed_pipe(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(error) = cause {
        let io = error.downcast_ref::<std::io::Error>();
        if io.is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) {
            return true;
        }
        cause = error.source();
    }
    false
}

/// The async runtime: the main thread alone for the one-shot commands (they do one thing at a
/// time; a pool hands each 4 MiB chunk between threads, which costs pattern pages time and peak
/// RSS) and for
/// `worker --worker-threads 1` (the SDK's worker loop runs there, in `block_on`); tokio's
/// multi-threaded scheduler for the worker and `dev`, which serve many activities at once.
fn runtime(command: &Command) -> std::io::Result<tokio::runtime::Runtime> {
    use tokio::runtime::Builder;
    let threads = match command {
        Command::Worker(args) => args.worker_threads.map(usize::from),
        Command::Dev(_) => None,
        _ => Some(1),
    };
    let mut builder = match threads {
        Some(1) => Builder::new_current_thread(),
        _ => Builder::new_multi_thread(),
    };
    if let Some(threads) = threads.filter(|&n| n > 1) {
        builder.worker_threads(threads);
    }
    builder.enable_all().build()
}

/// A subcommand's failure, printed as `overspill: <message>`.
pub(crate) type CliResult = Result<ExitCode, Box<dyn std::error::Error>>;

#[cfg(test)]
mod tests {
    /// Clashing argument ids only panic at run time; clap's own check finds them in CI.
    #[test]
    fn arguments_are_consistent() {
        use clap::CommandFactory as _;
        super::Cli::command().debug_assert();
    }
}
