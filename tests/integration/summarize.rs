//! The summarizer client against a local OpenAI-compatible server: the exact request, stripping
//! and usage through `limits::reduce`, retries and `Retry-After`, fallbacks, key hygiene, and
//! chunked summaries resumed after a killed run.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use overspill::limits::{
    self, Limits, MemoryStore, ReductionKind, SummarizeError as Error, Summarizer, ToolCall,
    ToolOutput, ToolResult, Usage,
};
use overspill::summarize::{
    ChunkBudget, ChunkProgress, Chunked, OpenAiSummarizer, SYSTEM_PROMPT, chunk_lines,
    summarize_chunked,
};

use crate::openai_server::{FakeOpenAi, Reply};

const KEY: &str = "sk-test-0123456789abcdef";

fn summarizer(server: &FakeOpenAi) -> OpenAiSummarizer {
    OpenAiSummarizer::builder(server.base())
        .api_key(KEY)
        .model("test-model")
        .build()
        .expect("a summarizer")
}

/// Summarize anything over 100 chars, with `then` as the fallback.
fn limits(then: Option<&str>) -> Limits {
    let then = then.map_or(String::new(), |t| format!(r#", "then": {t}"#));
    Limits::from_json(&format!(
        r#"{{"bands": [{{"over": 100, "action": {{"type": "summarize"{then}}}}}]}}"#
    ))
    .expect("a valid configuration")
}

const TRUNCATE: &str = r#"{"type": "truncate", "max_chars": 60}"#;

fn call(tool: &str) -> ToolCall {
    ToolCall {
        tool_name: tool.into(),
        run_id: Some("run-1".into()),
        tool_call_id: Some("call-1".into()),
        ..ToolCall::default()
    }
}

fn text(output: &str) -> ToolResult {
    ToolResult::bare(ToolOutput::Text(output.into()))
}

fn numbered(lines: usize) -> String {
    (0..lines).map(|i| format!("row {i:04}: ok\n")).collect()
}

/// Reduce 20 numbered rows of tool `tool` under [`limits`] with a Truncate fallback.
async fn reduce_rows(tool: &str, summarizer: &impl Summarizer) -> limits::Reduced {
    limits::reduce(
        &limits(Some(TRUNCATE)),
        &call(tool),
        text(&numbered(20)),
        &MemoryStore::new(),
        summarizer,
    )
    .await
}

/// Captures the `tracing` output of the current thread (tests run on a current-thread runtime).
#[derive(Clone, Default)]
pub(crate) struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut all) = self.0.lock() {
            all.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    pub(crate) fn capture(&self) -> tracing::subscriber::DefaultGuard {
        let logs = self.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_max_level(tracing::Level::DEBUG)
            .with_writer(move || logs.clone())
            .finish();
        tracing::subscriber::set_default(subscriber)
    }

    pub(crate) fn text(&self) -> String {
        self.0
            .lock()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }
}

#[tokio::test]
async fn sends_the_reference_prompt_and_strips_the_summary() {
    let server = FakeOpenAi::start(Some(KEY)).await;
    server.script([Reply::summary(
        "\n\n  The build failed at step 3.\t \n",
        321,
        9,
    )]);
    let output = numbered(20);
    let reduced = limits::reduce(
        &limits(None),
        &call("run_build"),
        text(&output),
        &MemoryStore::new(),
        &summarizer(&server),
    )
    .await;

    assert_eq!(reduced.kind, ReductionKind::Summarized);
    // 0.75's summary says what it summarized and how to get it all back (0.62's was bare).
    assert_eq!(
        reduced.return_value,
        ToolOutput::Text(
            "[summary of 260 chars of output; rerun the original tool for the full output]\n\
             The build failed at step 3."
                .into()
        )
    );
    assert_eq!(
        reduced.usage,
        Usage {
            requests: 1,
            input_tokens: 321,
            output_tokens: 9
        }
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(
        sent.authorization.as_deref(),
        Some(&*format!("Bearer {KEY}"))
    );
    assert_eq!(sent.model(), "test-model");
    let expected = format!(
        "The following output from the `run_build` tool is too large to keep in full. Summarize it so the summary carries everything needed to keep working: concrete values, identifiers, errors, and structure. Respond ONLY with the summary, no preamble.\n\n<output>\n{output}\n</output>"
    );
    assert_eq!(
        sent.body,
        serde_json::json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "You summarize oversized tool output."},
                {"role": "user", "content": expected},
            ],
        })
    );
    assert_eq!(sent.message("system"), SYSTEM_PROMPT);
}

#[tokio::test]
async fn a_custom_prompt_and_the_actions_model_are_sent() {
    let server = FakeOpenAi::start(None).await;
    let limits = Limits::from_json(
        r#"{"summary_prompt": "Tool {tool_name} said:\n{output}\n{{keep braces}}",
            "bands": [{"over": 10, "action": {"type": "summarize", "model": "openai:big-model"}}]}"#,
    )
    .expect("a valid configuration");
    let no_key = OpenAiSummarizer::builder(format!("{}/v1/", server.base()))
        .build()
        .expect("a summarizer");
    let reduced = limits::reduce(
        &limits,
        &call("ls"),
        text("a.txt\nb.txt\nc.txt\n"),
        &MemoryStore::new(),
        &no_key,
    )
    .await;
    assert_eq!(reduced.kind, ReductionKind::Summarized);
    let sent = &server.requests()[0];
    assert_eq!(sent.model(), "big-model");
    assert_eq!(sent.authorization, None);
    assert_eq!(
        sent.prompt(),
        "Tool ls said:\na.txt\nb.txt\nc.txt\n\n{keep braces}"
    );
    let summary = reduced.return_value.as_text().unwrap_or_default();
    assert_eq!(
        summary,
        format!(
            "[summary of 18 chars of output; rerun the original tool for the full output]\n\
             Summary of {} characters.",
            sent.prompt().chars().count()
        )
    );
}

#[tokio::test]
async fn a_prompt_without_output_is_invalid_config() {
    let error = Limits::from_json(
        r#"{"summary_prompt": "Summarize {tool_name}",
            "bands": [{"over": 10, "action": {"type": "summarize"}}]}"#,
    )
    .expect_err("rejected");
    assert_eq!(error.path(), "summary_prompt");
    assert!(error.to_string().contains("{output}"), "{error}");
}

#[tokio::test]
async fn usage_adds_up_over_value_and_content() {
    let server = FakeOpenAi::start(Some(KEY)).await;
    server.script([Reply::summary("one", 100, 5), Reply::summary("two", 40, 2)]);
    let mut result = text(&numbered(20));
    result.envelope.content = Some(serde_json::Value::String(numbered(15)));
    result.envelope.wrapped = true;
    let reduced = limits::reduce(
        &limits(None),
        &call("t"),
        result,
        &MemoryStore::new(),
        &summarizer(&server),
    )
    .await;
    assert_eq!(reduced.content_kind, ReductionKind::Summarized);
    assert_eq!(
        reduced.usage,
        Usage {
            requests: 2,
            input_tokens: 140,
            output_tokens: 7
        }
    );
}

#[tokio::test]
async fn too_many_requests_honours_retry_after() {
    let server = FakeOpenAi::start(Some(KEY)).await;
    let busy = || {
        Reply::error(429, "Rate limit reached for requests", "requests").header("retry-after", "1")
    };
    server.script([busy()]);
    let request = limits::SummaryRequest {
        tool_name: "t",
        output: "x",
        prompt: "summarize x",
        model: None,
    };

    // No in-process retry (the activity's way): the error carries the delay.
    let error = summarizer(&server)
        .summarize(request)
        .await
        .expect_err("a 429");
    assert!(error.is_retryable());
    assert_eq!(error.status(), Some(429));
    assert_eq!(error.retry_after(), Some(Duration::from_secs(1)));
    assert_eq!(error.type_name(), "Unavailable");

    // In-process retries wait the delay, then succeed.
    server.script([busy()]);
    let retrying = OpenAiSummarizer::builder(server.base())
        .api_key(KEY)
        .model("test-model")
        .max_retries(2)
        .build()
        .expect("a summarizer");
    let started = Instant::now();
    let summary = retrying.summarize(request).await.expect("a summary");
    // A lower bound: only skipping the one-second `retry-after` fails it, never a slow machine.
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(summary.usage.requests, 1, "only answered requests count");
    assert_eq!(server.requests().len(), 3);

    // A delay above the cap is not waited out in-process.
    server.script([Reply::error(429, "slow down", "requests").header("retry-after", "120")]);
    let error = retrying.summarize(request).await.expect_err("a 429");
    assert_eq!(error.retry_after(), Some(Duration::from_secs(120)));
}

#[tokio::test]
async fn a_server_error_then_success() {
    let server = FakeOpenAi::start(Some(KEY)).await;
    server.script([Reply::error(500, "The server had an error", "server_error")]);
    let retrying = OpenAiSummarizer::builder(server.base())
        .api_key(KEY)
        .model("test-model")
        .max_retries(1)
        .build()
        .expect("a summarizer");
    let reduced = reduce_rows("t", &retrying).await;
    assert_eq!(reduced.kind, ReductionKind::Summarized);
    assert_eq!(server.requests().len(), 2);

    // Without retries, a 503 is retryable for the activity, and `reduce` falls back.
    server.script([Reply::error(503, "overloaded", "server_error").header("retry-after", "2")]);
    let error = summarizer(&server)
        .summarize(limits::SummaryRequest {
            tool_name: "t",
            output: "x",
            prompt: "p",
            model: None,
        })
        .await
        .expect_err("a 503");
    assert!(error.is_retryable());
    assert_eq!(error.retry_after(), Some(Duration::from_secs(2)));
}

#[tokio::test]
async fn a_bad_request_falls_back_to_then_with_a_warning() {
    let server = FakeOpenAi::start(Some(KEY)).await;
    server.script([Reply::error(
        400,
        "This model's maximum context length is 8192 tokens.",
        "invalid_request_error",
    )]);
    let logs = Logs::default();
    let _guard = logs.capture();
    let reduced = reduce_rows("cat", &summarizer(&server)).await;
    assert_eq!(reduced.kind, ReductionKind::Truncated);
    assert!(
        reduced
            .return_value
            .as_text()
            .unwrap_or_default()
            .chars()
            .count()
            <= 60
    );
    assert_eq!(reduced.usage, Usage::default());
    let logs = logs.text();
    assert!(
        logs.contains("WARN")
            && logs.contains(
                "Summarizing output of tool 'cat' failed (Rejected); falling back to Truncate"
            ),
        "{logs}"
    );
    assert!(!logs.contains(KEY));
}

#[tokio::test]
async fn without_then_the_output_passes_through() {
    let server = FakeOpenAi::start(Some(KEY)).await;
    server.script([Reply::error(
        404,
        "The model `nope` does not exist",
        "invalid_request_error",
    )]);
    let output = numbered(20);
    let reduced = limits::reduce(
        &limits(None),
        &call("cat"),
        text(&output),
        &MemoryStore::new(),
        &summarizer(&server),
    )
    .await;
    assert!(!reduced.changed());
    assert_eq!(reduced.return_value, ToolOutput::Text(output.into()));
}

#[tokio::test]
async fn a_timeout_falls_back() {
    // The model would answer after ten minutes: only the summarizer's 300 ms timeout ends a call.
    let server = FakeOpenAi::with_default(None, |r| {
        FakeOpenAi::describe(r).delayed(Duration::from_secs(600))
    })
    .await;
    let slow = OpenAiSummarizer::builder(server.base())
        .model("m")
        .timeout(Duration::from_millis(300))
        .max_retries(3)
        .build()
        .expect("a summarizer");
    // A bound so loose (200 times the timeout) that only a missing timeout fails it.
    let reduced = tokio::time::timeout(Duration::from_secs(60), reduce_rows("cat", &slow))
        .await
        .expect("the timeout ended the call");
    assert_eq!(reduced.kind, ReductionKind::Truncated);
    assert_eq!(server.requests().len(), 1, "a timeout is not retried");
    let error = slow
        .summarize(limits::SummaryRequest {
            tool_name: "t",
            output: "x",
            prompt: "p",
            model: None,
        })
        .await
        .expect_err("a timeout");
    assert!(matches!(error, Error::Timeout(d) if d == Duration::from_millis(300)));
    assert!(!error.is_retryable());
}

#[tokio::test]
async fn malformed_replies_fall_back() {
    let server = FakeOpenAi::start(None).await;
    server.script([
        Reply::raw(200, "<html>gateway</html>"),
        Reply::raw(200, r#"{"choices": []}"#),
    ]);
    let client = OpenAiSummarizer::builder(server.base())
        .model("m")
        .build()
        .expect("a summarizer");
    for _ in 0..2 {
        let logs = Logs::default();
        let _guard = logs.capture();
        let reduced = reduce_rows("cat", &client).await;
        assert_eq!(reduced.kind, ReductionKind::Truncated);
        assert!(
            logs.text().contains("failed (Malformed)"),
            "{}",
            logs.text()
        );
    }
}

/// A reply body over the cap is not read to its end, and a summary too long to travel as a
/// Temporal result is refused: both are `Malformed`, and the band's `then` runs.
#[tokio::test]
async fn oversized_replies_are_refused() {
    use overspill::summarize::{MAX_REPLY_BYTES, MAX_SUMMARY_BYTES};
    let server = FakeOpenAi::start(None).await;
    server.script([
        Reply::summary(&"a".repeat(8 * MAX_REPLY_BYTES), 1, 1),
        Reply::summary(&"b".repeat(MAX_SUMMARY_BYTES + 1), 1, 1),
        Reply::error(500, &"c".repeat(2 * MAX_REPLY_BYTES), "server_error"),
    ]);
    let client = OpenAiSummarizer::builder(server.base())
        .model("m")
        .build()
        .expect("a summarizer");
    let request = limits::SummaryRequest {
        tool_name: "cat",
        output: "o",
        prompt: "p",
        model: None,
    };
    let body = client.complete_once(request).await.expect_err("too long");
    assert!(
        matches!(&body, Error::Malformed(m) if m.contains("larger than")),
        "{body}"
    );
    let summary = client.complete_once(request).await.expect_err("too long");
    assert!(
        matches!(&summary, Error::Malformed(m) if m.contains("a result may carry")),
        "{summary}"
    );
    // An error body over the cap keeps its status: still retryable.
    let busy = client.complete_once(request).await.expect_err("a 500");
    assert!(busy.is_retryable(), "{busy}");
    assert_eq!(busy.status(), Some(500));

    server.script([Reply::summary(&"d".repeat(MAX_SUMMARY_BYTES + 1), 1, 1)]);
    let reduced = reduce_rows("cat", &client).await;
    assert_eq!(reduced.kind, ReductionKind::Truncated);
}

#[tokio::test]
async fn binary_output_goes_to_then_without_a_call() {
    let server = FakeOpenAi::start(None).await;
    let store = MemoryStore::new();
    let reduced = limits::reduce(
        &limits(Some(r#"{"type": "spill"}"#)),
        &call("screenshot"),
        ToolResult::bare(ToolOutput::Bytes(vec![0u8; 500].into())),
        &store,
        &summarizer(&server),
    )
    .await;
    assert_eq!(reduced.kind, ReductionKind::Spilled);
    assert_eq!(store.handles(), ["run-1/call-1.0"]);
    assert_eq!(server.hits(), 0);
}

#[tokio::test]
async fn the_api_key_never_shows() {
    let server = FakeOpenAi::start(Some("sk-the-right-key")).await;
    let wrong = summarizer(&server);
    assert!(!format!("{wrong:?}").contains(KEY));
    let request = limits::SummaryRequest {
        tool_name: "t",
        output: "x",
        prompt: "p",
        model: None,
    };
    let error = wrong.summarize(request).await.expect_err("a 401");
    assert!(
        matches!(error, Error::Rejected { status: 401, .. }),
        "{error:?}"
    );
    assert!(!error.to_string().contains(KEY), "{error}");
    assert!(!format!("{error:?}").contains(KEY));
    assert!(error.to_string().contains("[redacted]"), "{error}");

    // A refused connection, with the key in the URL's userinfo too.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        listener.local_addr().expect("an address").port()
    };
    let unreachable = OpenAiSummarizer::builder(format!("http://user:{KEY}@127.0.0.1:{port}"))
        .api_key(KEY)
        .model("m")
        .build()
        .expect("a summarizer");
    let error = unreachable.summarize(request).await.expect_err("no server");
    assert!(error.is_retryable(), "{error:?}");
    assert!(!error.to_string().contains(KEY), "{error}");
    assert!(!format!("{error:?}").contains(KEY), "{error:?}");
}

#[tokio::test]
async fn chunked_through_reduce_adds_up_usage() {
    let server = FakeOpenAi::start(Some(KEY)).await;
    let client = summarizer(&server);
    let chunked = Chunked::new(client.clone(), ChunkBudget::chars(300));
    let output = numbered(60); // 780 chars: chunks of 23, 23 and 14 lines
    let reduced = limits::reduce(
        &limits(None),
        &call("cat"),
        text(&output),
        &MemoryStore::new(),
        &chunked,
    )
    .await;
    assert_eq!(reduced.kind, ReductionKind::Summarized);
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "3 chunks and the summary of summaries");
    assert_eq!(reduced.usage.requests, 4);
    for (sent, chunk) in requests.iter().zip(chunk_lines(&output, 300)) {
        assert_eq!(
            sent.prompt(),
            limits::prompt::Template::reference().render("cat", chunk)
        );
    }
    let last = requests[3].prompt();
    assert!(last.contains(" characters.\n\nSummary of "), "{last}");
}

#[tokio::test]
async fn a_killed_run_resumes_from_the_last_finished_chunk() {
    // The third request hangs, and the run is killed once two chunks are done.
    let server = FakeOpenAi::start(Some(KEY)).await;
    server.script([
        Reply::summary("first part", 10, 2),
        Reply::summary("second part", 10, 2),
        Reply::summary("never seen", 10, 2).delayed(Duration::from_secs(30)),
    ]);
    let client = summarizer(&server);
    let output = numbered(100); // 1300 chars: 4 chunks of 23 lines and one of 8
    let prompt = limits::prompt::Template::reference().render("cat", &output);
    let budget = ChunkBudget::chars(300);
    let chunks = chunk_lines(&output, 300);
    assert_eq!(chunks.len(), 5);

    let (beats, mut heard) = tokio::sync::mpsc::unbounded_channel::<ChunkProgress>();
    let run = {
        let (client, output, prompt) = (client.clone(), output.clone(), prompt.clone());
        tokio::spawn(async move {
            let request = limits::SummaryRequest {
                tool_name: "cat",
                output: &output,
                prompt: &prompt,
                model: None,
            };
            summarize_chunked(&client, request, budget, None, |p: &ChunkProgress| {
                let _ = beats.send(p.clone());
                async {}
            })
            .await
        })
    };
    let mut last = None;
    while let Some(progress) = heard.recv().await {
        let done = progress.done.len();
        last = Some(progress);
        if done == 2 {
            run.abort();
            break;
        }
    }
    let _ = run.await;
    let last = last.expect("two heartbeats");
    assert_eq!(last.done, ["first part", "second part"]);
    // The heartbeat crosses Temporal as JSON.
    let resumed: ChunkProgress =
        serde_json::from_value(serde_json::to_value(&last).unwrap_or_default())
            .expect("progress round-trips");

    let request = limits::SummaryRequest {
        tool_name: "cat",
        output: &output,
        prompt: &prompt,
        model: None,
    };
    let summary = summarize_chunked(&client, request, budget, Some(resumed), |_| async {})
        .await
        .expect("a summary");

    let prompts: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.prompt().to_owned())
        .collect();
    assert_eq!(
        prompts.len(),
        3 + 3 + 1,
        "3 before the kill, chunks 3..5, the final"
    );
    let chunk_prompt = |i: usize| limits::prompt::Template::reference().render("cat", chunks[i]);
    for (i, sent) in [1, 1, 2, 1, 1].into_iter().enumerate() {
        let count = prompts.iter().filter(|p| **p == chunk_prompt(i)).count();
        assert_eq!(count, sent, "chunk {i}");
    }
    // Chunk 3 was sent twice but summarized once: its first request never answered.
    let last_prompt = &prompts[6];
    assert!(
        last_prompt.contains("first part\n\nsecond part\n\nSummary of"),
        "{last_prompt}"
    );
    assert_eq!(summary.usage.requests, 2 + 3 + 1);
    assert!(
        summary.text.trim().starts_with("Summary of"),
        "{}",
        summary.text
    );
}

/// The fake refuses what OpenAI refuses, so the client's requests above are proven well-formed.
#[tokio::test]
async fn the_fake_server_speaks_the_protocol() {
    let server = FakeOpenAi::start(Some(KEY)).await;
    let http = reqwest::Client::new();
    let url = format!("{}{}", server.base(), crate::openai_server::PATH);
    let post = |body: &'static str| {
        http.post(&url)
            .bearer_auth(KEY)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let status = |r: Result<reqwest::Response, reqwest::Error>| r.map(|r| r.status().as_u16()).ok();
    assert_eq!(status(post(r#"{"messages": []}"#).await), Some(400));
    assert_eq!(status(post(r#"{"model": "m"}"#).await), Some(400));
    assert_eq!(
        status(post(r#"{"model": "m", "messages": [{"role": "robot", "content": "x"}]}"#).await),
        Some(400)
    );
    assert_eq!(status(post("not json").await), Some(400));
    let unauthorized = http.post(&url).body("{}").send().await;
    assert_eq!(status(unauthorized), Some(401));
    let wrong_path = http.post(server.base()).bearer_auth(KEY).send().await;
    assert_eq!(status(wrong_path), Some(404));
    let ok = post(r#"{"model": "m", "messages": [{"role": "user", "content": "hi"}]}"#)
        .await
        .expect("an answer");
    assert_eq!(ok.status().as_u16(), 200);
    let body: serde_json::Value =
        serde_json::from_slice(&ok.bytes().await.unwrap_or_default()).unwrap_or_default();
    assert_eq!(body["object"], "chat.completion");
    assert!(
        body["usage"]["prompt_tokens"]
            .as_u64()
            .is_some_and(|n| n > 0)
    );
    assert_eq!(
        server.requests().len(),
        1,
        "only well-formed requests are recorded"
    );
    assert_eq!(server.hits(), 7);
}
