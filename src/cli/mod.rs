//! The `overspill` command line: one binary, one subcommand per job.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{Parser, Subcommand};

mod dev;
mod external_storage;
mod grep;
mod map;
mod read;
mod reduce;
mod spills;
mod stdin;
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
}

/// Parse the arguments and run the subcommand on a tokio runtime.
pub(crate) fn main() -> ExitCode {
    let cli = Cli::parse();
    if !matches!(&cli.command, Command::Read(args) if args.request.filter().is_none()) {
        restore_huge_pages();
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
            Command::Read(args) => read::run(args).await,
            Command::Grep(args) => grep::run(args).await,
            Command::Spills(cmd) => spills::run(cmd).await,
            Command::ExternalStorage(cmd) => external_storage::run(cmd).await,
            Command::Worker(args) => worker::run(*args).await,
            Command::Dev(args) => dev::run(args).await,
        }
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("overspill: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The async runtime: one thread for the one-shot commands (they do one thing at a time, and
/// start faster without a thread pool); tokio's multi-threaded scheduler for the worker, which
/// serves many activities at once.
fn runtime(command: &Command) -> std::io::Result<tokio::runtime::Runtime> {
    use tokio::runtime::Builder;
    let mut builder = match command {
        // One thread is the main thread alone: the SDK's worker loop runs there (in `block_on`),
        // so a pool of one would add a thread to wake for every task.
        Command::Worker(args) => match args.worker_threads() {
            Some(1) => Builder::new_current_thread(),
            Some(threads) => {
                let mut builder = Builder::new_multi_thread();
                builder.worker_threads(threads);
                builder
            }
            None => Builder::new_multi_thread(),
        },
        Command::Dev(_) => Builder::new_multi_thread(),
        Command::Reduce(_)
        | Command::Read(_)
        | Command::Grep(_)
        | Command::Spills(_)
        | Command::ExternalStorage(_) => Builder::new_current_thread(),
    };
    builder.enable_all().build()
}

/// Whether transparent huge pages were off when the process started: a parent's choice
/// (`prctl` settings outlive fork and exec), or mimalloc's `MIMALLOC_ALLOW_THP=0`.
static HUGE_PAGES_WERE_OFF: AtomicBool = AtomicBool::new(false);

/// Turn transparent huge pages off for this process, remembering whether they already were.
/// A page by offset runs without them: it is a short command that touches little memory, and
/// the kernel zeroing 2 MiB pages for the allocator's first heaps was a sixth of its CPU.
/// Called before anything allocates (see `main.rs`).
#[cfg(target_os = "linux")]
pub(crate) fn huge_pages_off_at_start() {
    HUGE_PAGES_WERE_OFF.store(huge_pages_off(), Ordering::Relaxed);
    set_huge_pages_off(true);
}

/// Put transparent huge pages back as the process found them, for every command but a page by
/// offset: a pattern page without them left the spill's mapped pages it hands back resident
/// (64 MiB where 24 did), and large outputs copy faster through them. Children (the dev
/// server) inherit the setting, so this comes before any is started.
fn restore_huge_pages() {
    set_huge_pages_off(HUGE_PAGES_WERE_OFF.load(Ordering::Relaxed));
}

/// `PR_SET_THP_DISABLE`: whether this process's new pages may be transparent huge pages.
fn set_huge_pages_off(off: bool) {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes plain integers and changes only how pages are faulted in.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, libc::c_ulong::from(off), 0, 0, 0);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = off;
}

/// `PR_GET_THP_DISABLE`: whether transparent huge pages are off for this process.
#[cfg(target_os = "linux")]
fn huge_pages_off() -> bool {
    // SAFETY: PR_GET_THP_DISABLE takes no pointer; it returns 1 when off, 0 when on.
    unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) == 1 }
}

/// A subcommand's failure, printed as `overspill: <message>`.
pub(crate) type CliResult = Result<ExitCode, Box<dyn std::error::Error>>;

#[cfg(test)]
mod tests {
    /// This test binary is built from `main.rs` too, so its start turned them off.
    #[cfg(target_os = "linux")]
    #[test]
    fn huge_pages_are_off_from_the_start_and_restored_as_found() {
        use super::*;
        assert!(huge_pages_off(), "off before main");
        restore_huge_pages();
        assert_eq!(
            huge_pages_off(),
            HUGE_PAGES_WERE_OFF.load(Ordering::Relaxed)
        );
        set_huge_pages_off(false);
        assert!(!huge_pages_off());
        set_huge_pages_off(true);
        assert!(huge_pages_off());
    }

    /// Clashing argument ids only panic at run time; clap's own check finds them in CI.
    #[test]
    fn arguments_are_consistent() {
        use clap::CommandFactory as _;
        super::Cli::command().debug_assert();
    }
}
