//! [`OpenAiSummarizer`]: one chat-completions call per summary, with a builder in the
//! `object_store` style.

use std::time::{Duration, SystemTime};

use reqwest::header::{CONTENT_TYPE, HeaderValue};
use url::Url;

use super::wire;
use crate::limits::{SummarizeError as Error, Summarizer, Summary, SummaryRequest};
use crate::redact;

/// The most bytes of a reply body read; a longer chat completion is [`Error::Malformed`].
pub const MAX_REPLY_BYTES: usize = 1 << 20;

/// The chat-completions URL for a base URL (see [`OpenAiSummarizer::builder`]).
fn endpoint(raw: &str) -> Result<Url, Error> {
    let invalid = |why: String| Error::NotConfigured(format!("model URL: {why}"));
    let mut url = Url::parse(raw.trim()).map_err(|e| invalid(e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid(format!("unsupported scheme {:?}", url.scheme())));
    }
    let path = match url.path().trim_end_matches('/') {
        "" => "/v1".to_owned(),
        path => path
            .strip_suffix("/chat/completions")
            .unwrap_or(path)
            .to_owned(),
    };
    url.set_path(&format!("{path}/chat/completions"));
    Ok(url)
}

/// A summarizer for any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama,
/// llama.cpp server, LiteLLM and most gateways).
///
/// One `POST {base}/chat/completions` per summary, with the system message
/// [`SYSTEM_PROMPT`](super::SYSTEM_PROMPT) and the rendered prompt as the user message. Cheap
/// to clone (the HTTP client is shared). `Debug` and every error text leave the API key out.
#[derive(Clone, derive_more::Debug)]
pub struct OpenAiSummarizer {
    #[debug(skip)]
    client: reqwest::Client,
    #[debug("{:?}", redact::url(endpoint.as_str()))]
    endpoint: Url,
    #[debug("{:?}", api_key.as_ref().map(|_| redact::PLACEHOLDER))]
    api_key: Option<String>,
    model: Option<String>,
    timeout: Duration,
    max_retries: u32,
    #[debug(skip)]
    max_retry_delay: Duration,
}

#[bon::bon]
impl OpenAiSummarizer {
    /// A summarizer for the endpoint at `url`; `build()` fails on an unusable URL or key.
    ///
    /// The URL rule: a URL without a path (`http://localhost:8000`) gets `/v1`; a URL with a
    /// path is the API root as given, like the OpenAI SDKs' `base_url`
    /// (`https://api.openai.com/v1`, `https://host/openai/v1beta`); `/chat/completions` is
    /// appended unless the path already ends with it.
    #[builder(finish_fn = build)]
    pub fn new(
        /// The endpoint's base URL.
        #[builder(start_fn, into)]
        url: String,
        /// The API key, sent as `Authorization: Bearer <key>` (none when empty). Never printed.
        #[builder(into)]
        api_key: Option<String>,
        /// The default model, used when the Summarize action names none.
        #[builder(into)]
        model: Option<String>,
        /// The timeout of one request, connection to last byte (default 120 s).
        #[builder(default = Duration::from_secs(120))]
        timeout: Duration,
        /// The connect timeout (default 10 s).
        #[builder(default = Duration::from_secs(10))]
        connect_timeout: Duration,
        /// In-process retries of an [`Error::Unavailable`] reply (default 0: under Temporal the
        /// activity's retry policy retries, journaled). Each retry waits the server's
        /// `Retry-After`, or 1 s, 2 s, 4 s … without one; a `Retry-After` above
        /// `max_retry_delay` ends the retries and returns the error with its delay.
        #[builder(default)]
        max_retries: u32,
        /// The longest in-process wait between two retries (default 30 s).
        #[builder(default = Duration::from_secs(30))]
        max_retry_delay: Duration,
    ) -> Result<Self, Error> {
        let endpoint = endpoint(&url)?;
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(connect_timeout)
            .user_agent(concat!("overspill/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Error::NotConfigured(format!("HTTP client: {}", e.without_url())))?;
        let api_key = api_key.filter(|k| !k.is_empty());
        if api_key
            .as_deref()
            .is_some_and(|k| HeaderValue::from_str(k).is_err())
        {
            let why = "the API key has characters a header cannot carry";
            return Err(Error::NotConfigured(why.into()));
        }
        Ok(Self {
            client,
            endpoint,
            api_key,
            model: model.filter(|m| !m.is_empty()),
            timeout,
            max_retries,
            max_retry_delay,
        })
    }
}

impl OpenAiSummarizer {
    /// The chat-completions URL requests go to.
    pub fn endpoint(&self) -> &Url {
        &self.endpoint
    }

    /// The default model, if one is configured.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// One HTTP request, no retry (the [`Summarizer`] retries an [`Error::Unavailable`] as
    /// configured).
    ///
    /// Uses `request.prompt` as the user message and `request.model`, else the default model; a
    /// pydantic-ai `openai:` prefix on the model name is dropped.
    pub async fn complete_once(&self, request: SummaryRequest<'_>) -> Result<Summary, Error> {
        let no_model =
            "no model named (set --model, OVERSPILL_MODEL, or the Summarize action's model)";
        let model = (request.model.filter(|m| !m.is_empty()))
            .or(self.model.as_deref())
            .ok_or_else(|| Error::NotConfigured(no_model.into()))?;
        // A pydantic-ai model name (`openai:gpt-4o-mini`) names the provider first.
        let model = model.strip_prefix("openai:").unwrap_or(model);
        let body = serde_json::to_vec(&wire::request_body(model, request.prompt))
            .map_err(|e| Error::Malformed(format!("request body: {e}")))?;
        let mut http = (self.client.post(self.endpoint.clone()))
            .header(CONTENT_TYPE, "application/json")
            .body(body);
        if let Some(key) = &self.api_key {
            http = http.bearer_auth(key);
        }
        let reply = http.send().await.map_err(|e| self.transport(e))?;
        let status = reply.status();
        let retry_after = wire::retry_after(reply.headers(), SystemTime::now());
        let (body, complete) = self.read_body(reply).await?;
        if status.is_success() {
            if !complete {
                return Err(Error::Malformed(format!(
                    "the reply is larger than {MAX_REPLY_BYTES} bytes"
                )));
            }
            return wire::parse_reply(&body).map_err(|e| match e {
                Error::Malformed(m) => Error::Malformed(self.redact(m)),
                other => other,
            });
        }
        let (status, message) = (status.as_u16(), self.redact(wire::error_message(&body)));
        // What the OpenAI SDKs retry: 408, 409, 429 and 5xx.
        if matches!(status, 408 | 409 | 429 | 500..=599) {
            Err(Error::Unavailable {
                status: Some(status),
                message,
                retry_after,
            })
        } else if let Some((context_tokens, prompt_tokens)) = wire::context_exceeded(&body) {
            Err(Error::ContextExceeded {
                status,
                context_tokens,
                prompt_tokens,
                message,
            })
        } else {
            Err(Error::Rejected { status, message })
        }
    }

    /// `text` with every occurrence of the API key replaced, for server messages that echo it.
    fn redact(&self, text: String) -> String {
        match self.api_key.as_deref() {
            Some(key) if text.contains(key) => text.replace(key, redact::PLACEHOLDER),
            _ => text,
        }
    }

    /// The reply's body, read up to [`MAX_REPLY_BYTES`]; `false` when there was more.
    async fn read_body(&self, mut reply: reqwest::Response) -> Result<(Vec<u8>, bool), Error> {
        let mut body = Vec::new();
        while let Some(chunk) = reply.chunk().await.map_err(|e| self.transport(e))? {
            let room = MAX_REPLY_BYTES - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                return Ok((body, false));
            }
            body.extend_from_slice(&chunk);
        }
        Ok((body, true))
    }

    /// A transport failure, without the URL (it may carry credentials) or the key.
    fn transport(&self, error: reqwest::Error) -> Error {
        if error.is_timeout() {
            return Error::Timeout(self.timeout);
        }
        let error = error.without_url();
        let chain = std::iter::successors(Some(&error as &dyn std::error::Error), |e| e.source());
        let text = chain
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(": ");
        Error::Unavailable {
            status: None,
            message: self.redact(text),
            retry_after: None,
        }
    }
}

/// One summary, retrying an [`Error::Unavailable`] in process as configured
/// (`max_retries` of [`OpenAiSummarizer::builder`]).
impl Summarizer for OpenAiSummarizer {
    async fn summarize(&self, request: SummaryRequest<'_>) -> Result<Summary, Error> {
        let mut attempt = 0u32;
        loop {
            match self.complete_once(request).await {
                Err(error) if error.is_retryable() && attempt < self.max_retries => {
                    let delay = error
                        .retry_after()
                        .unwrap_or_else(|| Duration::from_secs(1u64 << attempt.min(5)));
                    if delay > self.max_retry_delay {
                        return Err(error);
                    }
                    attempt += 1;
                    tracing::info!(
                        target: "overspill::summarize",
                        error_type = error.type_name(),
                        status = error.status(),
                        ?delay,
                        attempt,
                        "model unavailable; retrying"
                    );
                    tokio::time::sleep(delay).await;
                }
                result => return result,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url_of(base: &str) -> String {
        endpoint(base)
            .map(String::from)
            .unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn base_url_rule() {
        assert_eq!(
            url_of("http://localhost:8000"),
            "http://localhost:8000/v1/chat/completions"
        );
        assert_eq!(
            url_of("http://localhost:8000/"),
            "http://localhost:8000/v1/chat/completions"
        );
        assert_eq!(
            url_of("https://api.openai.com/v1"),
            "https://api.openai.com/v1/chat/completions"
        );
        assert_eq!(
            url_of("https://api.openai.com/v1/"),
            "https://api.openai.com/v1/chat/completions"
        );
        assert_eq!(
            url_of("https://example.com/v1beta/openai/"),
            "https://example.com/v1beta/openai/chat/completions"
        );
        assert_eq!(
            url_of("http://gw:4000/v1/chat/completions"),
            "http://gw:4000/v1/chat/completions"
        );
        assert!(url_of("ftp://x").contains("unsupported scheme"));
        assert!(url_of("not a url").contains("model URL"));
    }

    #[test]
    fn debug_hides_the_key() {
        let summarizer = OpenAiSummarizer::builder("http://u:sk-secret-123@localhost:1")
            .api_key("sk-secret-123")
            .model("m")
            .build()
            .expect("a summarizer");
        let debug = format!("{summarizer:?}");
        assert!(!debug.contains("sk-secret-123"), "{debug}");
        assert!(debug.contains("[redacted]"), "{debug}");
        assert!(debug.contains("http://u:[redacted]@localhost:1/v1/chat/completions"));
    }

    #[test]
    fn redacts_echoed_keys() {
        let with_key = |key: Option<&str>| {
            OpenAiSummarizer::builder("http://localhost:1")
                .maybe_api_key(key)
                .build()
                .expect("a summarizer")
        };
        let text = "bad key sk-abc!".to_owned();
        assert_eq!(
            with_key(Some("sk-abc")).redact(text.clone()),
            "bad key [redacted]!"
        );
        assert_eq!(with_key(None).redact(text.clone()), text);
        assert_eq!(with_key(Some("")).redact(text.clone()), text);
    }

    /// Activities run on a multi-threaded runtime: every future handed to them must be `Send`.
    #[test]
    fn futures_are_send() {
        fn send<T: Send>(_: &T) {}
        let summarizer = OpenAiSummarizer::builder("http://localhost:1")
            .build()
            .expect("a summarizer");
        let request = SummaryRequest {
            tool_name: "t",
            output: "o",
            prompt: "p",
            model: None,
        };
        send(&Summarizer::summarize(&summarizer, request));
        let chunked =
            super::super::Chunked::new(summarizer.clone(), super::super::ChunkBudget::default());
        send(&Summarizer::summarize(&chunked, request));
        let shared = std::sync::Arc::new(summarizer.clone());
        send(&super::super::summarize_chunked(
            &*shared,
            request,
            super::super::ChunkBudget::default(),
            None,
            |_| async {},
        ));
    }
}
