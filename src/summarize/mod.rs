//! Summarize through an OpenAI-compatible chat-completions endpoint.
//!
//! - [`OpenAiSummarizer`]: one `POST {base}/chat/completions` per summary (OpenAI, vLLM,
//!   Ollama, llama.cpp server, LiteLLM, most gateways); implements the engine's
//!   [`Summarizer`](crate::limits::Summarizer) and returns each call's [`Usage`](crate::limits::Usage).
//! - [`Error`]: what failed, [`Error::is_retryable`] and the server's [`Error::retry_after`],
//!   and [`Error::into_activity_error`] for a Temporal activity.
//! - [`summarize_chunked`]: outputs over the model's context, summarized in line-bounded chunks
//!   and then once more, with resumable [`ChunkProgress`] for activity heartbeats.
//! - [`summarize_in_activity`]: the above inside a Temporal activity: heartbeat, resume, and
//!   failures typed for the retry policy.
//! - [`ModelArgs`]: the `--model-*` flags and `OVERSPILL_MODEL*` variables.
//!
//! The prompt is rendered and the summary stripped by the engine
//! ([`limits::reduce`](crate::limits::reduce)); this module only talks to the model.

mod activity;
mod args;
mod chunk;
mod client;
mod error;
mod wire;

pub use activity::summarize_in_activity;
pub use args::ModelArgs;
pub use chunk::{
    ChunkBudget, ChunkProgress, Chunked, ENV_CONTEXT_TOKENS, SummaryModel, split_lines,
    summarize_chunked,
};
pub use client::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_RETRY_DELAY, DEFAULT_TIMEOUT, ENV_API_KEY, ENV_MODEL,
    ENV_TIMEOUT, ENV_URL, MAX_REPLY_BYTES, OpenAiSummarizer, OpenAiSummarizerBuilder,
};
pub use error::Error;
pub use wire::{MAX_SUMMARY_BYTES, SYSTEM_PROMPT};
