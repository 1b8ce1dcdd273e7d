//! Summaries from a real model: llama.cpp's server with Gemma 3 270M on loopback, with a
//! 2,048-token context (`deploy/llama.sh` starts it and writes `.deploy/llama.env`; every test
//! fails loudly without it; `deploy/test.sh` runs these tests in a process of their own, beside
//! the rest, since they wait on the server's one slot). The model is the base one, so its
//! summaries are not checked for wording: these tests check the protocol against a real server's
//! validation, its context limit and what chunking does about it, heartbeats through slow
//! summaries, and replay.

use std::time::Duration;

use overspill::api::{SummarizeRequest, SummarizeResponse};
use overspill::limits::{
    self, Limits, MemoryStore, ReductionKind, SummarizeError, ToolCall, ToolOutput, ToolResult,
};
use overspill::summarize::{ChunkBudget, Chunked, OpenAiSummarizer};
use overspill_workflows::Overspill;
use temporalio_client::WorkflowHistory;
use temporalio_client::{WorkflowGetResultOptions, WorkflowStartOptions};
use temporalio_common::RetryPolicy;
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::workflow_replayer::{WorkflowReplayer, WorkflowReplayerOptions};
use temporalio_sdk::{ActivityOptions, WorkflowContext, WorkflowResult};

use crate::summarize::Logs;
use crate::support::temporal::{TestWorker, unique};

/// The model server, or a loud failure naming the script that provides it.
struct Model {
    url: String,
    name: String,
    context_tokens: u64,
}

fn model() -> Model {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let (Some(url), Some(name), Some(context)) = (
        var("OVERSPILL_TEST_MODEL_URL"),
        var("OVERSPILL_TEST_MODEL"),
        var("OVERSPILL_TEST_MODEL_CONTEXT_TOKENS"),
    ) else {
        panic!(
            "model tests need a running llama-server: OVERSPILL_TEST_MODEL_URL, \
             OVERSPILL_TEST_MODEL and OVERSPILL_TEST_MODEL_CONTEXT_TOKENS are not set. Run \
             `deploy/llama.sh start && source .deploy/llama.env` first (deploy/test.sh does)."
        )
    };
    let context_tokens = context
        .parse()
        .unwrap_or_else(|e| panic!("OVERSPILL_TEST_MODEL_CONTEXT_TOKENS={context}: {e}"));
    Model {
        url,
        name,
        context_tokens,
    }
}

impl Model {
    /// A client of the server; a summary of the small model takes seconds, a queue behind the
    /// other tests' summaries (one slot) a few more: 10 minutes bounds only a hang.
    fn client(&self) -> OpenAiSummarizer {
        OpenAiSummarizer::builder(self.url.clone())
            .model(self.name.clone())
            .timeout(Duration::from_secs(600))
            .build()
            .expect("a model client")
    }

    /// The budget `--model-context-tokens` gives for this server's context.
    fn budget(&self) -> ChunkBudget {
        ChunkBudget::from_context_tokens(self.context_tokens)
    }
}

/// A fixed-width build report of about `bytes` bytes, a few of its lines errors. Padded columns
/// of words run ~8 characters a token on this model (numbered log lines run ~2): the tests
/// spend the one-core server's time on many chunks, not on digits.
fn build_log(bytes: usize) -> String {
    const MODULES: [&str; 8] = [
        "storage",
        "network",
        "parser",
        "planner",
        "scheduler",
        "journal",
        "router",
        "codec",
    ];
    let mut log = String::new();
    for i in 0.. {
        if log.len() >= bytes {
            break;
        }
        let module = MODULES[i % MODULES.len()];
        let line = if i % 97 == 13 {
            let message = format!("the linker could not resolve the {module} symbols");
            format!("{:<8}{message:<64}{:>16}\n", "ERROR", "failed")
        } else {
            let message = format!("compiling the {module} module");
            format!("{:<8}{message:<64}{:>16}\n", "INFO", "ok")
        };
        log.push_str(&line);
    }
    log
}

/// Summarize anything over 10,000 characters; truncate to 2,000 when the summary fails.
fn limits() -> Limits {
    Limits::from_json(
        r#"{"bands": [{"over": 10000, "action": {"type": "summarize",
            "then": {"type": "truncate", "max_chars": 2000}}}]}"#,
    )
    .expect("a valid configuration")
}

fn call() -> ToolCall {
    ToolCall {
        tool_name: "build".into(),
        run_id: Some("run-model".into()),
        tool_call_id: Some("call-1".into()),
        ..ToolCall::default()
    }
}

/// `output` reduced under [`limits`] by `summarizer`, and the logs written meanwhile.
async fn summarize_logged(
    output: &str,
    summarizer: &Chunked<OpenAiSummarizer>,
) -> (limits::Reduced, String) {
    let logs = Logs::default();
    let reduced = {
        let _guard = logs.capture();
        limits::reduce(
            &limits(),
            &call(),
            ToolResult::bare(ToolOutput::Text(output.to_owned().into())),
            &MemoryStore::new(),
            summarizer,
        )
        .await
    };
    (reduced, logs.text())
}

/// A summary the model wrote: non-empty, shorter than the output, not the truncation fallback.
fn assert_summary(summary: &str, output: &str) {
    assert!(!summary.trim().is_empty(), "an empty summary");
    assert!(summary.len() < output.len() / 4, "{summary}");
    assert!(!summary.contains("[... output truncated"), "{summary}");
}

/// The real server's refusal of a prompt over its context is read as its window, not as any
/// refusal; a request within it is answered, with usage counted by the server.
#[tokio::test]
async fn the_server_answers_and_reports_its_context_window() {
    let model = model();
    let client = model.client();
    let ok = client
        .complete_once(limits::SummaryRequest {
            tool_name: "echo",
            output: "hello",
            prompt: "Say hello.",
            model: None,
        })
        .await
        .expect("an answer");
    assert!(!ok.text.trim().is_empty());
    assert_eq!(ok.usage.requests, 1);
    assert!(
        ok.usage.input_tokens > 0 && ok.usage.output_tokens > 0,
        "{ok:?}"
    );

    let huge = build_log(40_000);
    let error = client
        .complete_once(limits::SummaryRequest {
            tool_name: "build",
            output: &huge,
            prompt: &huge,
            model: None,
        })
        .await
        .expect_err("over the context");
    match error {
        SummarizeError::ContextExceeded {
            status,
            context_tokens,
            prompt_tokens,
            ..
        } => {
            assert_eq!(status, 400);
            assert_eq!(context_tokens, model.context_tokens);
            assert!(prompt_tokens.is_some_and(|n| n > model.context_tokens));
        }
        other => panic!("expected ContextExceeded, got {other:?}"),
    }
}

/// Configured for a 128k-token model, the summarizer sends 40 KB whole; the server refuses it
/// for its 2,048-token context, and the summarizer learns the window from the refusal and
/// re-chunks, with a WARN that says so. Without that, the band's Truncate would run.
#[tokio::test]
async fn a_context_refusal_is_learned_and_rechunked() {
    let model = model();
    let output = build_log(40_000);
    let chunked = Chunked::new(model.client(), ChunkBudget::default());
    let (reduced, logs) = summarize_logged(&output, &chunked).await;
    assert_eq!(reduced.kind, ReductionKind::Summarized, "{logs}");
    assert_summary(reduced.return_value.as_text().unwrap_or_default(), &output);
    assert!(
        logs.contains("WARN")
            && logs.contains("the model's context is smaller than the chunk budget")
            && logs.contains(&format!("context_tokens={}", model.context_tokens)),
        "{logs}"
    );
    let learned = chunked.effective_budget().max_chars;
    assert!(learned < output.len(), "{learned}");
    assert!(reduced.usage.requests >= 3, "{:?}", reduced.usage);
}

/// 200 KB, twelve times the 2,048-token context, summarized through chunking: chunks of
/// 12,000 characters (~1,500 tokens of this report, with room for the prompt and the summary),
/// then their summaries, each call within the window, so the server refuses none of them.
#[tokio::test]
async fn a_200_kb_output_is_summarized_through_chunks_that_fit_the_context() {
    let model = model();
    let output = build_log(200_000);
    let budget = ChunkBudget::chars(12_000);
    let chunks = overspill::summarize::chunk_lines(&output, budget.max_chars).len();
    let started = std::time::Instant::now();
    let (reduced, logs) = summarize_logged(&output, &Chunked::new(model.client(), budget)).await;
    assert_eq!(reduced.kind, ReductionKind::Summarized, "{logs}");
    assert_summary(reduced.return_value.as_text().unwrap_or_default(), &output);
    assert!(!logs.contains("re-chunking"), "a chunk did not fit: {logs}");
    let usage = reduced.usage;
    assert!(chunks >= 16, "{chunks} chunks");
    assert!(usage.requests > chunks as u64, "{chunks} chunks: {usage:?}");
    assert!(
        usage.input_tokens > 10 * model.context_tokens,
        "the whole output was read: {usage:?}"
    );
    eprintln!(
        "200 KB: {chunks} chunks, {usage:?} in {:?}",
        started.elapsed()
    );
}

/// `overspill reduce` with the worker's model flags summarizes a 30 KB log from the real model.
#[test]
fn overspill_reduce_summarizes_a_30_kb_log() {
    let model = model();
    let output = build_log(30_000);
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = dir.path().join("limits.json");
    let json = r#"{"bands": [{"over": 10000, "action": {"type": "summarize"}}]}"#;
    std::fs::write(&config, json).expect("config written");
    let config = config.to_str().expect("a UTF-8 temp path");
    let context = model.context_tokens.to_string();
    let started = std::time::Instant::now();
    let out = crate::cli::overspill(
        &[
            "reduce",
            "--tool",
            "build",
            "--store",
            "memory://",
            "--config",
            config,
            "--model-url",
            &model.url,
            "--model",
            &model.name,
            "--model-context-tokens",
            &context,
            "--model-timeout",
            "10m",
        ],
        output.as_bytes(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("falling back"), "{stderr}");
    assert_summary(&stdout, &output);
    eprintln!("overspill reduce, 30 KB: {:?}", started.elapsed());
}

/// Calls the summarize activity once, with a heartbeat timeout far shorter than the summary
/// takes and no retry: only heartbeats keep the attempt alive.
#[workflow]
#[derive(Default)]
pub(crate) struct SummarizeOnce;

/// The heartbeat timeout of [`SummarizeOnce`]'s activity.
const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(5);

#[workflow_methods]
impl SummarizeOnce {
    #[run(name = "OverspillModelSummarizeOnce")]
    pub(crate) async fn run(
        ctx: &mut WorkflowContext<Self>,
        request: SummarizeRequest,
    ) -> WorkflowResult<SummarizeResponse> {
        let options = ActivityOptions::with_start_to_close_timeout(Duration::from_secs(1800))
            .heartbeat_timeout(HEARTBEAT_TIMEOUT)
            .retry_policy(RetryPolicy::builder().maximum_attempts(1).build())
            .build();
        Ok(ctx
            .execute_activity(Overspill::summarize, request, options)
            .await?)
    }
}

fn summarize_request(output: String) -> SummarizeRequest {
    serde_json::from_value(serde_json::json!({"tool_name": "build", "output": output}))
        .expect("a summarize request")
}

async fn model_worker(name: &str) -> TestWorker {
    let model = model();
    let (client, budget) = (model.client(), model.budget());
    TestWorker::start_configured(
        name,
        move |a| a.with_summarizer(Chunked::new(client, budget)),
        |o| {
            o.register_workflow::<SummarizeOnce>()
                .expect("register SummarizeOnce");
        },
    )
    .await
}

/// Run [`SummarizeOnce`] under `id`; the result, and the workflow's history.
async fn summarize_once(
    worker: &TestWorker,
    output: String,
    id: &str,
) -> (SummarizeResponse, Vec<u8>) {
    let handle = worker
        .client
        .start_workflow(
            SummarizeOnce::run,
            summarize_request(output),
            WorkflowStartOptions::new(worker.task_queue.clone(), id.to_owned())
                .execution_timeout(Duration::from_secs(1800))
                .build(),
        )
        .await
        .expect("the workflow starts");
    let response = handle
        .get_result(WorkflowGetResultOptions::default())
        .await
        .unwrap_or_else(|e| panic!("the summary failed: {e:?}"));
    let history = worker
        .client
        .get_workflow_handle::<SummarizeOnce>(id.to_owned())
        .fetch_history(Default::default())
        .to_json()
        .await
        .expect("the history");
    (response, history)
}

/// A 30 KB log, over the 2,048-token context's chunk budget, summarized in chunks by the worker's summarize
/// activity, whose one attempt outlives its 5 s heartbeat timeout many times over on heartbeats
/// alone; then the recorded history replays with no activity worker and no model: the summary
/// comes from history, not from a second request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_summarizes_30_kb_in_chunks_on_heartbeats_and_replays_it() {
    let worker = model_worker("model-worker").await;
    let output = build_log(30_000);
    let started = std::time::Instant::now();
    let (response, history) =
        summarize_once(&worker, output.clone(), &unique("model-worker")).await;
    let took = started.elapsed();
    assert_summary(&response.summary, &output);
    let chunks = overspill::summarize::chunk_lines(&output, model().budget().max_chars).len();
    assert!(chunks > 1, "30 KB must not fit one call");
    assert!(
        response.usage.requests > chunks as u64,
        "{chunks} chunks, then their summaries: {:?}",
        response.usage
    );
    assert!(
        took > 2 * HEARTBEAT_TIMEOUT,
        "{took:?}: not a test of heartbeats"
    );
    eprintln!("30 KB: {chunks} chunks, {:?} in {took:?}", response.usage);

    let recorded = String::from_utf8_lossy(&history).to_lowercase();
    assert!(
        recorded.contains("activitytaskcompleted") || recorded.contains("activity_task_completed"),
        "no recorded summary"
    );
    let replayer = WorkflowReplayer::new(
        WorkflowReplayerOptions::new()
            .register_workflow::<SummarizeOnce>()
            .unwrap_or_else(|e| panic!("register: {e}"))
            .build(),
    )
    .unwrap_or_else(|e| panic!("replayer: {e}"));
    let history = WorkflowHistory::from_json(&history).expect("a history");
    replayer
        .replay_workflow(history)
        .await
        .unwrap_or_else(|e| panic!("the recorded summary does not replay: {e}"));
}
