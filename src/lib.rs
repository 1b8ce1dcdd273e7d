//! Overspill keeps AI agents' oversized tool outputs out of their context windows, durably.
//!
//! The engine, free of Temporal (`default-features = false` builds it alone):
//! - [`limits`]: the pure reduction engine (truncate, spill, summarize by size bands).
//! - [`read`]: the bounded `read_tool_result` read-back.
//! - [`query`]: `query_tool_result`, jq filters over spilled JSON.
//! - [`store`]: where spills live (local files, S3, GCS, Azure, memory).
//! - [`summarize`]: summaries from an OpenAI-compatible model.
//! - [`api`]: the request and response forms shared by the CLI and the activities.
//! - [`service`]: the one layer every caller (the activities, the CLI, the Python and Node
//!   bindings) calls: scoped reads, the read-back tools' answers, typed failures.
//! - [`names`]: the activities' names and the default task queue.
//! - [`tools`]: the read-back tools as a model sees them (names, descriptions, parameters).
//! - [`redact`]: secrets kept out of logs, `Debug` output and error texts.
//!
//! The `worker` feature (default) adds the Temporal side:
//! - `activities`: the `tool_output_limits.*` activities over the engine.
//! - `worker`: connection, task queue, metrics and shutdown; `probes`: `/healthz` and `/readyz`.
//! - `external_storage`: Temporal External Storage (payloads of any size through a bucket).
//!
//! The `clap` feature derives `clap::Args` for the request and connection types. The Rust
//! workflows are the `overspill-workflows` crate; the `overspill` command is `overspill-cli`.

#[cfg(feature = "worker")]
pub mod activities;
pub mod api;
mod diagnose;
#[cfg(feature = "worker")]
pub mod external_storage;
pub mod limits;
pub mod names;
#[cfg(feature = "worker")]
pub mod probes;
pub mod query;
pub mod read;
pub mod redact;
pub mod service;
pub mod store;
pub mod summarize;
#[cfg(test)]
mod test_logs;
pub mod tools;
#[cfg(feature = "worker")]
pub mod worker;
