//! Integration tests against real services: one test binary, one module per area.
mod backends;
mod bench;
mod cli;
mod external_storage;
mod external_storage_gc;
mod golden;
mod grep;
mod openai_server;
mod probes;
mod processes;
mod pydantic_ai;
mod query;
mod replay;
mod store;
mod summarize;
mod temporal;
mod tls;
