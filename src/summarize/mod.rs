//! Summarize through an OpenAI-compatible chat-completions endpoint.
//!
//! - [`OpenAiSummarizer`]: one `POST {base}/chat/completions` per summary (OpenAI, vLLM,
//!   Ollama, llama.cpp server, LiteLLM, most gateways), a [`Summarizer`](crate::limits::Summarizer)
//!   that fails with the engine's [`SummarizeError`](crate::limits::SummarizeError).
//! - [`Chunked`] / [`summarize_chunked`]: outputs over the model's context, summarized in
//!   line-bounded chunks and then once more, with resumable [`ChunkProgress`] that the summarize
//!   activity heartbeats.
//! - [`ModelArgs`]: the `--model-*` flags and their `OVERSPILL_MODEL*` variables.
//!
//! The prompt is rendered and the summary stripped by the engine
//! ([`limits::reduce`](crate::limits::reduce)) or the summarize activity; this module only talks
//! to the model.

mod args;
mod chunk;
mod client;
mod wire;

pub use args::ModelArgs;
pub use chunk::{ChunkBudget, ChunkProgress, Chunked, chunk_lines, summarize_chunked};
pub use client::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_RETRY_DELAY, DEFAULT_TIMEOUT, MAX_REPLY_BYTES,
    OpenAiSummarizer,
};
pub use wire::{MAX_SUMMARY_BYTES, SYSTEM_PROMPT};
