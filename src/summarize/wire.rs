//! The chat-completions wire format: the request body, the reply, error bodies and `Retry-After`.

use std::time::{Duration, SystemTime};

use serde::Deserialize;
use serde_json::Value;

use crate::limits::SummarizeError as Error;
use crate::limits::{Summary, Usage};

/// The system message of every summary call, as the reference's nested agent is instructed.
pub const SYSTEM_PROMPT: &str = "You summarize oversized tool output.";

/// The longest summary accepted, in bytes of UTF-8. Even fully JSON-escaped, two of them (a
/// return value and a ToolReturn's content) stay under Temporal's 2 MB payload limit.
pub const MAX_SUMMARY_BYTES: usize = 128 << 10;

/// The `POST /chat/completions` body: the system instruction and the rendered prompt as the user
/// message.
pub(super) fn request_body(model: &str, prompt: &str) -> Value {
    serde_json::json!({"model": model, "messages": [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": prompt},
    ]})
}

#[derive(Deserialize)]
struct ChatReply {
    choices: Vec<Choice>,
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct Choice {
    message: ReplyMessage,
}

#[derive(Deserialize)]
struct ReplyMessage {
    content: Option<Value>,
    refusal: Option<String>,
}

#[derive(Default, Deserialize)]
struct WireUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
}

/// Parse a 2xx body: `choices[0].message.content` (a string, or a list of text parts) and
/// `usage.prompt_tokens` / `usage.completion_tokens` (0 when the server sends no usage).
pub(super) fn parse_reply(body: &[u8]) -> Result<Summary, Error> {
    let reply: ChatReply = serde_json::from_slice(body)
        .map_err(|e| Error::Malformed(format!("not a chat completion: {e}")))?;
    let message = reply
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| Error::Malformed("the reply has no choices".into()))?
        .message;
    let text = match message.content {
        Some(Value::String(text)) => text,
        Some(Value::Array(parts)) => text_parts(&parts)?,
        Some(other) => {
            return Err(Error::Malformed(format!(
                "message content is {}, not text",
                json_kind(&other)
            )));
        }
        None => {
            return Err(Error::Malformed(match message.refusal {
                Some(refusal) => format!("the model refused: {refusal}"),
                None => "the reply message has no content".into(),
            }));
        }
    };
    if text.len() > MAX_SUMMARY_BYTES {
        return Err(Error::Malformed(format!(
            "the summary is {} bytes, more than the {MAX_SUMMARY_BYTES} a result may carry",
            text.len()
        )));
    }
    let usage = reply.usage.unwrap_or_default();
    Ok(Summary {
        text,
        usage: Usage {
            requests: 1,
            input_tokens: usage.prompt_tokens.unwrap_or(0),
            output_tokens: usage.completion_tokens.unwrap_or(0),
        },
    })
}

/// Content as a list of parts (`[{"type": "text", "text": "…"}]`), as some gateways send it.
fn text_parts(parts: &[Value]) -> Result<String, Error> {
    (parts.iter())
        .map(|part| part.get("text").and_then(Value::as_str))
        .collect::<Option<String>>()
        .ok_or_else(|| Error::Malformed("a content part has no text".into()))
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The message of an error body: OpenAI's `{"error": {"message": …}}`, a bare
/// `{"error": "…"}` / `{"message": "…"}` (vLLM, Ollama, gateways), else the body's first 300
/// characters.
pub(super) fn error_message(body: &[u8]) -> String {
    if let Ok(value) = serde_json::from_slice::<Value>(body) {
        let found = value
            .pointer("/error/message")
            .or_else(|| value.get("error"))
            .or_else(|| value.get("message"))
            .or_else(|| value.get("detail"))
            .and_then(Value::as_str);
        if let Some(message) = found {
            return message.to_owned();
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    match text.char_indices().nth(300) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None if text.is_empty() => "(empty body)".to_owned(),
        None => text.to_owned(),
    }
}

/// The window an error body says the prompt is over, as `(context tokens, prompt tokens)`:
/// llama.cpp's `{"error": {"type": "exceed_context_size_error", "n_ctx": …, "n_prompt_tokens": …}}`.
pub(super) fn context_exceeded(body: &[u8]) -> Option<(u64, Option<u64>)> {
    let value = serde_json::from_slice::<Value>(body).ok()?;
    let error = value.get("error")?;
    if error.get("type").and_then(Value::as_str) != Some("exceed_context_size_error") {
        return None;
    }
    let context = error
        .get("n_ctx")
        .and_then(Value::as_u64)
        .filter(|&n| n > 0)?;
    let prompt = error
        .get("n_prompt_tokens")
        .and_then(Value::as_u64)
        .filter(|&n| n > 0);
    Some((context, prompt))
}

/// The delay a reply asks for: `retry-after-ms` (OpenAI), else `Retry-After` as seconds or an
/// HTTP date. Dates in the past give zero.
pub(super) fn retry_after(
    headers: &reqwest::header::HeaderMap,
    now: SystemTime,
) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        // `try_from`: a gateway's absurd delay (`1e25`) must not panic the activity.
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    let value = header("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).ok();
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue};

    #[test]
    fn request_shape() {
        let body = serde_json::to_string(&request_body("m", "p")).unwrap_or_default();
        assert_eq!(
            body,
            r#"{"model":"m","messages":[{"role":"system","content":"You summarize oversized tool output."},{"role":"user","content":"p"}]}"#
        );
    }

    #[test]
    fn parses_content_and_usage() {
        let body = br#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"  sum \n"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}"#;
        let summary = parse_reply(body).expect("a summary");
        assert_eq!(summary.text, "  sum \n");
        assert_eq!(
            summary.usage,
            Usage {
                requests: 1,
                input_tokens: 12,
                output_tokens: 3
            }
        );
        let parts = br#"{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}]}"#;
        let summary = parse_reply(parts).expect("a summary");
        assert_eq!(summary.text, "ab");
        assert_eq!(summary.usage.requests, 1);
        assert_eq!(summary.usage.input_tokens, 0);
    }

    #[test]
    fn malformed_replies() {
        for body in [
            &b"not json"[..],
            br#"{"choices":[]}"#,
            br#"{"choices":[{"message":{"content":null}}]}"#,
            br#"{"choices":[{"message":{"content":7}}]}"#,
            br#"{"choices":[{"message":{"content":null,"refusal":"no"}}]}"#,
            br#"{"data":1}"#,
        ] {
            assert!(
                matches!(parse_reply(body), Err(Error::Malformed(_))),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn error_messages() {
        assert_eq!(
            error_message(br#"{"error":{"message":"bad model","type":"invalid_request_error"}}"#),
            "bad model"
        );
        assert_eq!(
            error_message(br#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(error_message(br#"{"detail":"nope"}"#), "nope");
        assert_eq!(error_message(b"  upstream down \n"), "upstream down");
        assert_eq!(error_message(b""), "(empty body)");
        assert_eq!(
            error_message("é".repeat(400).as_bytes()).chars().count(),
            301
        );
    }

    #[test]
    fn context_errors() {
        let llama = br#"{"error":{"code":400,"message":"request (3024 tokens) exceeds the available context size (2048 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":3024,"n_ctx":2048}}"#;
        assert_eq!(context_exceeded(llama), Some((2048, Some(3024))));
        let no_count = br#"{"error":{"type":"exceed_context_size_error","n_ctx":512}}"#;
        assert_eq!(context_exceeded(no_count), Some((512, None)));
        for other in [
            &br#"{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error"}}"#[..],
            br#"{"error":{"type":"exceed_context_size_error","n_ctx":0}}"#,
            br#"{"error":"exceed_context_size_error"}"#,
            b"not json",
        ] {
            assert_eq!(context_exceeded(other), None, "{}", String::from_utf8_lossy(other));
        }
    }

    #[test]
    fn retry_after_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers, now), None);
        headers.insert("retry-after", HeaderValue::from_static("3"));
        assert_eq!(retry_after(&headers, now), Some(Duration::from_secs(3)));
        headers.insert("retry-after", HeaderValue::from_static("0.5"));
        assert_eq!(retry_after(&headers, now), Some(Duration::from_millis(500)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(20));
        headers.insert(
            "retry-after",
            HeaderValue::from_str(&later).unwrap_or(HeaderValue::from_static("")),
        );
        assert_eq!(retry_after(&headers, now), Some(Duration::from_secs(20)));
        headers.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&headers, now), None);
        // Absurd delays are ignored, never a panic.
        headers.insert("retry-after", HeaderValue::from_static("1e20"));
        assert_eq!(retry_after(&headers, now), None);
        headers.insert("retry-after-ms", HeaderValue::from_static("1e25"));
        assert_eq!(retry_after(&headers, now), None);
        headers.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&headers, now), Some(Duration::from_millis(250)));
    }
}
