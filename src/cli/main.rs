//! `overspill`: reduce tool outputs, read spills back, and serve the Temporal activities.

/// mimalloc reuses freed memory for the next multi-megabyte output instead of returning it to
/// the OS and faulting it back in, so a large output costs less to copy and to free.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    overspill_cli::main()
}
