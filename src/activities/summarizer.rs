//! The seam between the activities and a model: an object-safe, `Send` summarizer.
//!
//! The engine's [`Summarizer`] trait has no `Send` bound (workflow code implements it too), so the
//! worker holds its model behind [`ActivitySummarizer`] instead: the OpenAI-compatible client
//! (chunked at the model's context) when `--model-url` is given, else [`NoSummarizer`] (every
//! Summarize falls back to its `then`). Another model client implements it in one line:
//!
//! ```ignore
//! impl ActivitySummarizer for OpenAiSummarizer {
//!     fn summarize<'a>(&'a self, r: SummaryRequest<'a>) -> BoxFuture<'a, Result<Summary, SummarizeError>> {
//!         Box::pin(Summarizer::summarize(self, r))
//!     }
//! }
//! ```

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::limits::{NoSummarizer, SummarizeError, Summarizer, Summary, SummaryRequest};
use crate::summarize::{ChunkBudget, Chunked, OpenAiSummarizer};

/// A summarizer the worker can share across activity tasks.
pub trait ActivitySummarizer: Send + Sync + 'static {
    /// Summarize `request.output` with one model call.
    fn summarize<'a>(
        &'a self,
        request: SummaryRequest<'a>,
    ) -> BoxFuture<'a, Result<Summary, SummarizeError>>;
}

impl ActivitySummarizer for NoSummarizer {
    fn summarize<'a>(
        &'a self,
        request: SummaryRequest<'a>,
    ) -> BoxFuture<'a, Result<Summary, SummarizeError>> {
        Box::pin(Summarizer::summarize(self, request))
    }
}

/// A shared [`ActivitySummarizer`], usable wherever the engine wants a [`Summarizer`].
#[derive(Clone)]
pub struct SharedSummarizer(Arc<dyn ActivitySummarizer>);

impl SharedSummarizer {
    /// Share `summarizer`.
    pub fn new(summarizer: impl ActivitySummarizer) -> Self {
        Self(Arc::new(summarizer))
    }

    /// The OpenAI-compatible `model`, chunking outputs over `budget`: what `overspill worker`
    /// and `overspill reduce` summarize with.
    pub fn chunked(model: OpenAiSummarizer, budget: ChunkBudget) -> Self {
        Self::new(Chunked::new(model, budget))
    }
}

impl Default for SharedSummarizer {
    fn default() -> Self {
        Self::new(NoSummarizer)
    }
}

impl std::fmt::Debug for SharedSummarizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedSummarizer")
    }
}

impl Summarizer for SharedSummarizer {
    async fn summarize(&self, request: SummaryRequest<'_>) -> Result<Summary, SummarizeError> {
        self.0.summarize(request).await
    }
}

impl ActivitySummarizer for Chunked<OpenAiSummarizer> {
    fn summarize<'a>(
        &'a self,
        request: SummaryRequest<'a>,
    ) -> BoxFuture<'a, Result<Summary, SummarizeError>> {
        Box::pin(Summarizer::summarize(self, request))
    }
}
