//! Integration tests against real services: one test binary, one module per area. The target
//! belongs to the `overspill-cli` package (`src/cli/`), whose `overspill` binary they start.
mod backends;
mod bench;
mod chaos;
mod cli;
mod container;
mod drain;
mod external_storage;
mod external_storage_gc;
mod golden;
mod grep;
mod hostile;
mod model;
mod openai_server;
mod probes;
mod processes;
mod python;
mod query;
mod replay;
mod scope;
mod store;
mod summarize;
/// Harnesses that several test modules build on.
mod support {
    pub(crate) mod suite;
    pub(crate) mod temporal;
}
mod temporal;
mod tls;
mod typescript;

/// The checkout's root (this target's package is `src/cli/`).
fn root() -> &'static std::path::Path {
    let cli = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    cli.ancestors()
        .nth(2)
        .expect("the checkout holding src/cli")
}
