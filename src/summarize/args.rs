//! Command-line flags for the summarizer, to `#[command(flatten)]` into a subcommand.

use std::time::Duration;

use super::{ChunkBudget, Error, OpenAiSummarizer};

/// The model flags: `--model-url`, `--model-api-key`, `--model`, `--model-timeout`,
/// `--model-context-tokens`, each with its `OVERSPILL_MODEL*` variable.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ModelArgs {
    /// Base URL of an OpenAI-compatible chat-completions endpoint (`https://api.openai.com/v1`,
    /// `http://localhost:11434` for Ollama, `http://localhost:8000/v1` for vLLM). Without it,
    /// Summarize falls back to its `then`.
    #[arg(long = "model-url", env = "OVERSPILL_MODEL_URL", value_name = "URL")]
    pub url: Option<String>,
    /// API key, sent as a bearer token.
    #[arg(
        long = "model-api-key",
        env = "OVERSPILL_MODEL_API_KEY",
        value_name = "KEY",
        hide_env_values = true
    )]
    pub api_key: Option<String>,
    /// Default model; a Summarize action's `model` overrides it.
    #[arg(long = "model", env = "OVERSPILL_MODEL", value_name = "NAME")]
    pub model: Option<String>,
    /// Timeout of one model request.
    #[arg(long = "model-timeout", env = "OVERSPILL_MODEL_TIMEOUT", value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "120s")]
    pub timeout: Duration,
    /// The model's context in tokens; larger outputs are summarized in chunks.
    #[arg(
        long = "model-context-tokens",
        env = "OVERSPILL_MODEL_CONTEXT_TOKENS",
        value_name = "TOKENS",
        default_value_t = ChunkBudget::DEFAULT_CONTEXT_TOKENS
    )]
    pub context_tokens: u64,
}

impl ModelArgs {
    /// The summarizer, or `None` when no URL is given.
    pub fn summarizer(&self) -> Result<Option<OpenAiSummarizer>, Error> {
        let Some(url) = &self.url else {
            return Ok(None);
        };
        let mut builder = OpenAiSummarizer::new(url.clone()).with_timeout(self.timeout);
        if let Some(key) = &self.api_key {
            builder = builder.with_api_key(key.clone());
        }
        if let Some(model) = &self.model {
            builder = builder.with_model(model.clone());
        }
        builder.build().map(Some)
    }

    /// The chunk budget for the configured context.
    pub fn budget(&self) -> ChunkBudget {
        ChunkBudget::from_context_tokens(self.context_tokens)
    }
}
