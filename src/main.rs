//! `overspill`: reduce tool outputs, read spills back, and serve the Temporal activities.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
