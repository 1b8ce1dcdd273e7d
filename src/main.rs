//! `overspill`: reduce tool outputs, read spills back, and serve the Temporal activities.

mod cli;

/// mimalloc reuses freed memory for the next multi-megabyte output instead of returning it to
/// the OS and faulting it back in: a 100 MB output costs ~5 ms less to copy and ~8 ms less to free.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Transparent huge pages off before the first allocation, which comes before `main`: the
/// allocator's first heap would otherwise be faulted in as 2 MiB pages for the kernel to zero.
/// `cli::main` restores them for every command but a page by offset. (std's own start-up
/// entry is `.init_array.00099`; a constructor without a priority runs after this one.)
#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array.00100")]
static HUGE_PAGES_OFF_AT_START: extern "C" fn() = {
    extern "C" fn off() {
        cli::huge_pages_off_at_start();
    }
    off
};

fn main() -> std::process::ExitCode {
    cli::main()
}
