//! The activities, worker and workflows against a real Temporal dev server, each test on its own
//! [`TestWorker`].

use std::time::Duration;

use overspill_cli::example::{AgentLoop, AgentLoopInput};
use overspill_workflows::ReduceToolOutput;
use serde_json::{Value, json};
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{WorkflowContext, WorkflowResult};

use crate::support::temporal::{Raw, TestWorker, cancel_after, probe, unique};

fn big(n: usize) -> String {
    (0..n)
        .map(|i| format!("line {i:06} of the tool output\n"))
        .collect()
}

/// Every activity by name from a Rust workflow, `json/plain` in and out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activities_called_by_name_from_a_rust_workflow() {
    let w = TestWorker::start("acts").await;
    let text = big(1_000); // 31,000 chars: over the default 10,000 band
    let out = w
        .probe(vec![
            probe(
                "tool_output_limits.reduce",
                json!({"tool_name": "cat", "run_id": "run-1", "tool_call_id": "call-1",
                       "output": {"text": text}}),
            ),
            probe(
                "tool_output_limits.read_tool_result",
                json!({"handle": "run-1/call-1.0", "offset": 0, "limit": 2}),
            ),
            probe(
                "tool_output_limits.spill",
                json!({"tool_name": "cat", "tool_call_id": "call-2", "output": {"json": {"rows": [1, 2], "ok": true}}}),
            ),
            probe(
                "tool_output_limits.summarize",
                json!({"tool_name": "cat", "output": "hello"}),
            ),
            probe(
                "tool_output_limits.reduce",
                json!({"tool_name": "cat", "output": {"text": "small"}}),
            ),
        ])
        .await;

    let reduced = out[0].ok.as_ref().expect("reduce ok");
    assert_eq!(reduced["kind"], "spilled");
    assert_eq!(reduced["metadata"]["overflow_handle"], "run-1/call-1.0");
    assert_eq!(reduced["metadata"]["overflow_bytes"], 31_000);
    let visible = reduced["return_value"]["text"].as_str().expect("text");
    assert!(
        visible.starts_with("[Tool output too large (31,000 chars); stored to handle 'run-1/call-1.0'. Read it with read_tool_result(handle='run-1/call-1.0', offset=0, limit=200, from_end=False, pattern=None).]\n"),
        "{visible}"
    );
    assert_eq!(
        out[1].ok,
        Some(json!(
            "[handle 'run-1/call-1.0': 1,000 matching line(s); showing 2]\nline 000000 of the tool output\nline 000001 of the tool output"
        ))
    );
    let spilled = out[2].ok.as_ref().expect("spill ok");
    // No run_id in the request: the calling workflow's run id keys the spill.
    let handle = spilled["handle"].as_str().expect("handle");
    assert!(handle.ends_with("/call-2.0"), "{handle}");
    assert_ne!(handle, "run/call-2.0");
    assert_eq!(spilled["shape"], "{'rows': list, 'ok': bool}");
    // No model configured: summarize fails without retries.
    assert_eq!(
        out[3].error_type.as_deref(),
        Some("ModelRejected"),
        "{:?}",
        out[3]
    );
    assert!(out[3].non_retryable);
    assert_eq!(
        out[4].ok.as_ref().map(|r| &r["kind"]),
        Some(&json!("passthrough"))
    );
    assert_eq!(
        out[4].ok.as_ref().map(|r| &r["return_value"]),
        Some(&json!({"text": "small"}))
    );
    let listed = w.store.list(None).await.expect("list");
    assert_eq!(listed.len(), 2, "{listed:?}");
}

/// Invalid config and input fail fast: non-retryable, typed, naming the field; bad read
/// arguments are a non-retryable ModelRetry with the reference's message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_config_and_input_fail_without_retries() {
    let w = TestWorker::start("invalid").await;
    let out = w
        .probe(vec![
            probe(
                "tool_output_limits.reduce",
                json!({"tool_name": "cat", "output": {"text": "x"},
                       "config": {"bands": [{"over": -1, "action": {"type": "truncate"}}]}}),
            ),
            probe(
                "tool_output_limits.reduce",
                json!({"tool_name": "cat", "output": {"text": "x"},
                       "config": {"bands": [{"over": 1, "action": {"type": "truncate", "max_chars": "ten"}}]}}),
            ),
            probe("tool_output_limits.reduce", json!({"tool_name": "cat"})),
            probe(
                "tool_output_limits.reduce",
                json!({"tool_name": "cat", "output": {"text": "x"}, "bogus": 1}),
            ),
            probe(
                "tool_output_limits.read_tool_result",
                json!({"handle": "run/call.0", "offset": -1}),
            ),
            probe(
                "tool_output_limits.read_tool_result",
                json!({"handle": "run/call.0", "limit": 0}),
            ),
            probe(
                "tool_output_limits.read_tool_result",
                json!({"handle": "../etc/passwd"}),
            ),
        ])
        .await;
    for o in &out[..6] {
        assert!(o.non_retryable, "{o:?}");
        // RETRY_STATE_NON_RETRYABLE_FAILURE: failed on its first attempt, never retried.
        assert_eq!(o.retry_state, 2, "{o:?}");
    }
    assert_eq!(out[0].error_type.as_deref(), Some("InvalidConfig"));
    assert!(
        out[0].message.contains("config.bands[0].over"),
        "{}",
        out[0].message
    );
    assert!(out[0].message.contains("Band.over must be non-negative."));
    assert_eq!(out[1].error_type.as_deref(), Some("InvalidConfig"));
    // serde cannot see inside the internally tagged `action`: the path stops there.
    assert!(
        out[1].message.contains("config.bands[0].action"),
        "{}",
        out[1].message
    );
    assert_eq!(out[2].error_type.as_deref(), Some("InvalidInput"));
    assert!(out[2].message.contains("output"), "{}", out[2].message);
    assert_eq!(out[3].error_type.as_deref(), Some("InvalidInput"));
    assert!(out[3].message.contains("bogus"), "{}", out[3].message);
    assert_eq!(out[4].error_type.as_deref(), Some("ModelRetry"));
    assert_eq!(out[4].message, "`offset` must be >= 0.");
    assert_eq!(out[5].error_type.as_deref(), Some("ModelRetry"));
    assert_eq!(out[5].message, "`limit` must be >= 1.");
    let refused = out[6]
        .ok
        .as_ref()
        .and_then(Value::as_str)
        .unwrap_or_default();
    assert!(
        refused.starts_with("[No stored tool result for handle '../etc/passwd'."),
        "{refused}"
    );
}

/// A spill whose first attempt fails after the write is retried: same handle, one object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_write_gives_the_same_handle_and_one_object() {
    let w = TestWorker::start("flaky").await;
    let id = unique("flaky-wf");
    let request = json!({"tool_name": "cat", "tool_call_id": "call-9",
        "output": {"text": big(500)}, "config": {"bands": [{"over": 100, "action": {"type": "spill"}}]}});
    let request: overspill::api::ReduceRequest = serde_json::from_value(request).expect("request");
    let response = w
        .run(ReduceToolOutput::run, request, &id)
        .await
        .expect("ReduceToolOutput completes");
    let handle = response.envelope.metadata.as_ref().expect("metadata")["overflow_handle"]
        .as_str()
        .expect("handle")
        .to_owned();
    assert!(handle.ends_with("/call-9.0"), "{handle}");
    let listed = w.store.list(None).await.expect("list");
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].size, 15_500);
    // The history shows the injected failure and the retry.
    let events = w
        .client
        .get_workflow_handle::<ReduceToolOutput>(id.clone())
        .fetch_history(Default::default())
        .into_events()
        .await
        .expect("history");
    let attempts: Vec<i32> = events
        .iter()
        .filter_map(|e| match &e.attributes {
            Some(temporalio_common::protos::temporal::api::history::v1::history_event::Attributes::ActivityTaskStartedEventAttributes(a)) => Some(a.attempt),
            _ => None,
        })
        .collect();
    assert_eq!(
        attempts,
        vec![2],
        "the started event records the last attempt"
    );
}

/// The agent loop: the self-reducing tool keeps megabytes out of history; read-back works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_loop_keeps_large_outputs_out_of_history() {
    let w = TestWorker::start("agent").await;
    let id = unique("agent");
    let out = w
        .run(
            AgentLoop::run,
            AgentLoopInput {
                log_lines: 50_000,
                file_lines: 500,
                config: None,
            },
            &id,
        )
        .await
        .expect("agent loop");
    assert_eq!(out.turns.len(), 3);
    let handle = format!("{id}/call-1.0");
    assert_eq!(out.turns[0].handle.as_deref(), Some(handle.as_str()));
    assert!(
        out.turns[0]
            .model_visible
            .starts_with("[Tool output too large (")
    );
    assert!(
        out.turns[1].model_visible.starts_with(&format!(
            "[handle '{handle}': 50 matching line(s); showing 5]\nERROR step"
        )),
        "{}",
        out.turns[1].model_visible
    );
    assert_eq!(
        out.turns[2].handle.as_deref(),
        Some(format!("{id}/call-3.0").as_str())
    );
    let history = w
        .client
        .get_workflow_handle::<AgentLoop>(id)
        .fetch_history(Default::default())
        .into_events()
        .await
        .expect("history");
    let size: usize = history.iter().map(prost::Message::encoded_len).sum();
    assert!(size < 200_000, "history is {size} bytes");
}

/// The protobuf encodings: `json/protobuf` (camelCase proto3 JSON, as Python's and TypeScript's
/// default converters send a protobuf message) and `binary/protobuf`, both with `messageType`;
/// each reply comes back in the request's encoding.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protobuf_payloads_are_answered_in_kind() {
    use overspill::activities::proto::pb;
    use prost::Message as _;

    let w = TestWorker::start("proto").await;
    let text = big(1_000);
    let request = pb::ReduceRequest {
        tool_name: "cat".into(),
        run_id: Some("run-pb".into()),
        tool_call_id: Some("call-1".into()),
        output: Some(pb::ToolOutput {
            value: Some(pb::tool_output::Value::Text(text.clone())),
        }),
        config: Some(pb::Limits {
            bands: vec![pb::Band {
                over: 1_000,
                action: Some(pb::Action {
                    action: Some(pb::action::Action::Spill(Box::new(pb::Spill {
                        preview_chars: Some(100),
                        then: None,
                    }))),
                }),
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    // The same request in proto3 JSON, as a Python or TypeScript protobuf converter sends it.
    let as_json = json!({
        "toolName": "cat", "runId": "run-pb", "toolCallId": "call-1", "output": {"text": text},
        "config": {"bands": [{"over": "1000", "action": {"spill": {"previewChars": "100"}}}]},
    });
    let read = pb::ReadToolResultRequest {
        handle: "run-pb/call-1.0".into(),
        offset: 10,
        limit: Some(1),
        ..Default::default()
    };
    let raw = |encoding: &str, message_type: &str, data: Vec<u8>| {
        let mut p = probe("", Value::Null);
        p.raw = Some(Raw {
            encoding: encoding.into(),
            message_type: Some(message_type.into()),
            data,
        });
        p
    };
    let mut probes = vec![
        raw(
            "json/protobuf",
            "overspill.v1.ReduceRequest",
            as_json.to_string().into(),
        ),
        raw(
            "binary/protobuf",
            "overspill.v1.ReduceRequest",
            request.encode_to_vec(),
        ),
        raw(
            "binary/protobuf",
            "overspill.v1.ReadToolResultRequest",
            read.encode_to_vec(),
        ),
        raw(
            "json/protobuf",
            "overspill.v1.ReadToolResultRequest",
            br#"{"handle":"run-pb/call-1.0","offset":"10","limit":"1"}"#.to_vec(),
        ),
        raw(
            "binary/protobuf",
            "overspill.v1.ReadToolResultRequest",
            read.encode_to_vec(),
        ),
    ];
    for (p, name) in probes.iter_mut().zip([
        "tool_output_limits.reduce",
        "tool_output_limits.reduce",
        "tool_output_limits.read_tool_result",
        "tool_output_limits.read_tool_result",
        "tool_output_limits.spill",
    ]) {
        p.activity = name.into();
    }
    let out = w.probe(probes).await;

    let json_reply = out[0].ok_raw.as_ref().expect("reply");
    assert_eq!(json_reply.encoding, "json/protobuf");
    assert_eq!(
        json_reply.message_type.as_deref(),
        Some("overspill.v1.ReduceResponse")
    );
    let reply: Value = serde_json::from_slice(&json_reply.data).expect("json");
    assert_eq!(reply["kind"], "REDUCTION_KIND_SPILLED");
    assert_eq!(reply["overflowHandle"], "run-pb/call-1.0");
    assert_eq!(reply["overflowBytes"], "31000");

    let binary_reply = out[1].ok_raw.as_ref().expect("reply");
    assert_eq!(binary_reply.encoding, "binary/protobuf");
    assert_eq!(
        binary_reply.message_type.as_deref(),
        Some("overspill.v1.ReduceResponse")
    );
    let decoded = pb::ReduceResponse::decode(binary_reply.data.as_slice()).expect("decodes");
    assert_eq!(decoded.overflow_handle.as_deref(), Some("run-pb/call-1.0"));
    assert_eq!(decoded.kind, pb::ReductionKind::Spilled as i32);

    let page =
        pb::ReadToolResultResponse::decode(out[2].ok_raw.as_ref().expect("reply").data.as_slice())
            .expect("decodes");
    assert_eq!(
        page.text,
        "[handle 'run-pb/call-1.0': 1,000 matching line(s); showing 1]\nline 000010 of the tool output"
    );
    let page_json = out[3].ok_raw.as_ref().expect("reply");
    assert_eq!(page_json.encoding, "json/protobuf");
    assert_eq!(
        serde_json::from_slice::<Value>(&page_json.data).expect("json")["text"],
        json!(page.text)
    );
    // A payload naming the wrong message is refused without retries.
    assert_eq!(
        out[4].error_type.as_deref(),
        Some("InvalidInput"),
        "{:?}",
        out[4]
    );
    assert!(
        out[4].message.contains("overspill.v1.SpillRequest"),
        "{}",
        out[4].message
    );
}

/// Starts a long self-reducing tool activity, cancels it after a second, and reports how it ended.
#[workflow]
#[derive(Default)]
pub(crate) struct CancelProbe;

#[workflow_methods]
impl CancelProbe {
    #[run(name = "OverspillCancelProbe")]
    pub(crate) async fn run(ctx: &mut WorkflowContext<Self>, lines: u64) -> WorkflowResult<String> {
        use temporalio_sdk::ActivityCancellationType;

        let options =
            temporalio_sdk::ActivityOptions::with_start_to_close_timeout(Duration::from_secs(120))
                // 4 s: with 2 s, a beat came late once while the whole suite loaded both cores.
                .heartbeat_timeout(Duration::from_secs(4))
                // One attempt: a missed heartbeat fails the probe instead of being retried.
                .retry_policy(
                    temporalio_common::RetryPolicy::builder()
                        .maximum_attempts(1)
                        .build(),
                )
                .cancellation_type(ActivityCancellationType::WaitCancellationCompleted)
                .build();
        let activity = ctx.execute_activity(
            overspill_cli::example::ExampleTools::generate_logs,
            overspill_cli::example::ToolRequest {
                tool_call_id: Some("call-cancel".into()),
                lines,
                ..Default::default()
            },
            options,
        );
        // Cancel after 2.5 heartbeat timeouts: an activity that did not heartbeat would have
        // timed out by then, and the result would be a timeout, not a cancellation.
        Ok(cancel_after(ctx, activity, Duration::from_secs(10)).await)
    }
}

/// A long tool activity heartbeats (it outlives its heartbeat timeout) and stops when its
/// workflow cancels it; nothing is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_activity_heartbeats_and_honours_cancellation() {
    let w = TestWorker::start_with("cancel", |o| {
        let _ = o.register_workflow::<CancelProbe>();
    })
    .await;
    let started = std::time::Instant::now();
    // 100 million lines would take minutes to generate: only a cancellation ends it early.
    let out = w
        .run(CancelProbe::run, 100_000_000, &unique("cancel"))
        .await
        .expect("cancel probe");
    assert_eq!(out, "cancelled");
    // Loose enough that only a hang fails it: generating the lines would take minutes.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert!(w.store.list(None).await.expect("list").is_empty());
}

/// A client for `model` with no in-process retries (Temporal retries the activity).
fn model_client(
    model: &crate::openai_server::FakeOpenAi,
) -> overspill::summarize::OpenAiSummarizer {
    overspill::summarize::OpenAiSummarizer::builder(format!("{}/v1", model.base()))
        .model("test-model")
        .max_retries(0)
        .build()
        .expect("model client")
}

/// `ReduceToolOutput` sends its own configuration to the activities it calls: the worker's
/// `--limits` (here `strip_ansi`) do not change the bytes a spill stores, and the request's
/// `summary_prompt` is the prompt the model receives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reduce_tool_output_sends_its_own_configuration_to_the_activities() {
    use crate::openai_server::FakeOpenAi;
    use overspill::limits::Limits;
    use overspill::summarize::{ChunkBudget, Chunked};

    let model = FakeOpenAi::start(None).await;
    let client = model_client(&model);
    let worker_limits = Limits::from_json(r#"{"strip_ansi": true}"#).expect("limits");
    let w = TestWorker::start_configured(
        "adapters",
        move |a| {
            a.with_summarizer(Chunked::new(client, ChunkBudget::default()))
                .with_limits(worker_limits)
        },
        |_| {},
    )
    .await;

    let colored = "\x1b[31merror\x1b[0m: step failed\n".repeat(50);
    let spill: overspill::api::ReduceRequest = serde_json::from_value(json!({
        "tool_name": "make", "run_id": "run-ansi", "tool_call_id": "call-1",
        "output": {"text": colored},
        "config": {"bands": [{"over": 100, "action": {"type": "spill"}}]},
    }))
    .expect("request");
    let spilled = w
        .run(ReduceToolOutput::run, spill, &unique("adapters-spill"))
        .await
        .expect("ReduceToolOutput spills");
    assert_eq!(
        spilled
            .envelope
            .metadata
            .as_ref()
            .map(|m| &m["overflow_handle"]),
        Some(&json!("run-ansi/call-1.0"))
    );
    let stored = w
        .store
        .read("run-ansi/call-1.0")
        .await
        .expect("the spill is stored");
    assert_eq!(
        String::from_utf8_lossy(&stored),
        colored,
        "the stored bytes were changed"
    );

    let output = "row ok\n".repeat(40);
    let summarize: overspill::api::ReduceRequest = serde_json::from_value(json!({
        "tool_name": "query", "run_id": "run-sum", "tool_call_id": "call-2",
        "output": {"text": output},
        "config": {
            "summary_prompt": "Summarize what {tool_name} printed:\n{output}\n(keep counts)",
            "bands": [{"over": 100, "action": {"type": "summarize"}}],
        },
    }))
    .expect("request");
    let summarized = w
        .run(
            ReduceToolOutput::run,
            summarize,
            &unique("adapters-summary"),
        )
        .await
        .expect("ReduceToolOutput summarizes");
    assert_eq!(
        summarized.kind,
        overspill::limits::ReductionKind::Summarized
    );
    let prompts: Vec<String> = model
        .requests()
        .iter()
        .map(|r| r.prompt().to_owned())
        .collect();
    assert_eq!(
        prompts,
        [format!(
            "Summarize what query printed:\n{output}\n(keep counts)"
        )]
    );
}

/// With a model, the summarize activity summarizes in chunks and heartbeats its progress; a
/// retry after a model failure resumes from the last finished chunk instead of starting over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn summarize_activity_resumes_a_chunked_summary_after_a_failure() {
    use crate::openai_server::{FakeOpenAi, Reply};
    use overspill::summarize::{ChunkBudget, Chunked};

    let model = FakeOpenAi::start(None).await;
    let client = model_client(&model);
    let w = TestWorker::start_configured(
        "summarize",
        move |a| a.with_summarizer(Chunked::new(client, ChunkBudget::chars(3_000))),
        |_| {},
    )
    .await;
    // Two chunks succeed, the third call fails: the activity fails and Temporal retries it.
    model.script([
        Reply::summary("Summary of a chunk.", 10, 4),
        Reply::summary("Summary of a chunk.", 10, 4),
        Reply::error(500, "boom", "server_error"),
    ]);
    let text = big(400); // 12,400 chars: five chunks of at most 3,000
    let out = w
        .probe(vec![probe(
            "tool_output_limits.summarize",
            json!({"tool_name": "cat", "output": text}),
        )])
        .await;
    let summary = out[0]
        .ok
        .as_ref()
        .unwrap_or_else(|| panic!("{}", out[0].message));
    assert!(
        summary["summary"]
            .as_str()
            .is_some_and(|s| s.starts_with("Summary of")),
        "{summary}"
    );
    let prompts: Vec<String> = model
        .requests()
        .iter()
        .map(|r| r.prompt().to_owned())
        .collect();
    let first_chunk = &prompts[0];
    assert_eq!(
        prompts.iter().filter(|p| *p == first_chunk).count(),
        1,
        "the retry summarized the first chunk again"
    );
    assert_eq!(
        prompts[2], prompts[3],
        "the retry starts at the chunk that failed"
    );
}
