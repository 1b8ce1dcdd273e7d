//! Integration tests against real services: one test binary, one module per area.
mod cli;
mod golden;
mod store;
mod openai_server;
mod summarize;
