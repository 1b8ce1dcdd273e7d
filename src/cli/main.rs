//! `overspill`: reduce tool outputs, read spills back, and serve the Temporal activities.

/// mimalloc reuses freed memory for the next multi-megabyte output instead of returning it to
/// the OS and faulting it back in: a 100 MB output costs ~5 ms less to copy and ~8 ms less to free.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    overspill_cli::main()
}
