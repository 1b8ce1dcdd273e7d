//! Integration tests against real services: one test binary, one module per area.
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
mod pydantic_ai;
mod query;
mod replay;
mod scope;
mod store;
mod summarize;
/// Harnesses that several test modules build on.
mod support {
    pub(crate) mod temporal;
}
mod temporal;
mod tls;
