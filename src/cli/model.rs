//! Command-line flags for the summarizer, to `#[command(flatten)]` into a subcommand.

use std::time::Duration;

use overspill::limits::SummarizeError;
use overspill::summarize::{ChunkBudget, Chunked, OpenAiSummarizer};

/// The model flags: `--model-url`, `--model-api-key`, `--model`, `--model-timeout`,
/// `--model-max-retries`, `--model-context-tokens`, each with its `OVERSPILL_MODEL*` variable.
#[derive(Clone, Default, clap::Args, derive_more::Debug)]
pub(crate) struct ModelArgs {
    /// Base URL of an OpenAI-compatible chat-completions endpoint (`https://api.openai.com/v1`,
    /// `http://localhost:11434` for Ollama, `http://localhost:8000/v1` for vLLM). Without it,
    /// Summarize falls back to its `then`.
    #[arg(long = "model-url", env = "OVERSPILL_MODEL_URL", value_name = "URL")]
    #[debug("{:?}", url.as_deref().map(overspill::redact::url))]
    pub(crate) url: Option<String>,
    /// API key, sent as a bearer token.
    #[arg(
        long = "model-api-key",
        env = "OVERSPILL_MODEL_API_KEY",
        value_name = "KEY",
        hide_env_values = true
    )]
    #[debug("{:?}", api_key.as_ref().map(|_| overspill::redact::PLACEHOLDER))]
    pub(crate) api_key: Option<String>,
    /// Default model; a Summarize action's `model` overrides it.
    #[arg(long = "model", env = "OVERSPILL_MODEL", value_name = "NAME")]
    pub(crate) model: Option<String>,
    /// Timeout of one model request.
    #[arg(long = "model-timeout", env = "OVERSPILL_MODEL_TIMEOUT", value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "120s")]
    pub(crate) timeout: Duration,
    /// In-process retries of a 429, 5xx or connection failure, waiting `Retry-After` (as the
    /// OpenAI SDKs do by default); a Temporal activity retries beyond these.
    #[arg(
        long = "model-max-retries",
        env = "OVERSPILL_MODEL_MAX_RETRIES",
        value_name = "N",
        default_value_t = 2
    )]
    pub(crate) max_retries: u32,
    /// The model's context in tokens; larger outputs are summarized in chunks.
    #[arg(
        long = "model-context-tokens",
        env = "OVERSPILL_MODEL_CONTEXT_TOKENS",
        value_name = "TOKENS",
        default_value_t = ChunkBudget::DEFAULT_CONTEXT_TOKENS
    )]
    pub(crate) context_tokens: u64,
}

impl ModelArgs {
    /// The summarizer, chunking at the configured context, or `None` when no URL is given.
    pub(crate) fn summarizer(&self) -> Result<Option<Chunked<OpenAiSummarizer>>, SummarizeError> {
        let Some(url) = &self.url else {
            return Ok(None);
        };
        let summarizer = OpenAiSummarizer::builder(url.clone())
            .timeout(self.timeout)
            .max_retries(self.max_retries)
            .maybe_api_key(self.api_key.clone())
            .maybe_model(self.model.clone())
            .build()?;
        let budget = ChunkBudget::from_context_tokens(self.context_tokens);
        Ok(Some(Chunked::new(summarizer, budget)))
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        model: ModelArgs,
    }

    #[test]
    fn flags_build_a_summarizer() {
        let cli = Cli::try_parse_from([
            "x",
            "--model-url",
            "http://user:url-secret@localhost:8000/v1",
            "--model-api-key",
            "sk-flag-secret",
            "--model",
            "qwen",
            "--model-timeout",
            "45s",
            "--model-context-tokens",
            "8192",
        ])
        .expect("flags parse");
        let shown = format!("{cli:?}");
        assert!(
            !shown.contains("sk-flag-secret") && !shown.contains("url-secret"),
            "{shown}"
        );
        assert_eq!(cli.model.max_retries, 2);
        let chunked = cli.model.summarizer().ok().flatten().expect("a summarizer");
        assert_eq!(chunked.budget(), ChunkBudget::from_context_tokens(8192));
        let summarizer = chunked.model();
        assert_eq!(
            summarizer.endpoint().as_str(),
            "http://user:url-secret@localhost:8000/v1/chat/completions"
        );
        assert_eq!(summarizer.model(), Some("qwen"));
        assert!(format!("{summarizer:?}").contains("timeout: 45s"));
    }
}
