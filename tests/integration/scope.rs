//! Reads scoped to the workflow that wrote the spill, on Temporal with real stores (a local
//! directory and SeaweedFS): a workflow reads its own spills; another workflow's reads of them,
//! and its listing of their run, are exactly what a missing handle or run shows; a re-run under
//! the same workflow id and a continue-as-new run read the earlier runs' spills; the recorded
//! histories replay.

use std::sync::Arc;

use overspill::activities::OverspillActivities;
use overspill::api::{ReadRequest, SpillRequest};
use overspill::read::no_stored_result;
use overspill::store::{ReadScope, Store};
use overspill_workflows::{Overspill, activity_options};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use temporalio_client::WorkflowHistory;
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::workflow_replayer::{WorkflowReplayer, WorkflowReplayerOptions};
use temporalio_sdk::{ContinueAsNewOptions, WorkflowContext, WorkflowResult};

use crate::store::unique_url;
use crate::support::temporal::{Outcome, Probe, ProbeWorkflow, TestWorker, probe, unique};

/// A relay across continue-as-new: the first run spills `text` (keyed by its own run id), the
/// next run, under the same workflow id, reads the spill back.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct RelayInput {
    text: String,
    /// The handle the first run spilled to; `None` in the first run.
    handle: Option<String>,
}

#[workflow]
#[derive(Default)]
pub(crate) struct ScopeRelay;

#[workflow_methods]
impl ScopeRelay {
    #[run(name = "OverspillScopeRelay")]
    pub(crate) async fn run(
        ctx: &mut WorkflowContext<Self>,
        input: RelayInput,
    ) -> WorkflowResult<String> {
        let Some(handle) = input.handle else {
            let request: SpillRequest = serde_json::from_value(json!({
                "tool_name": "cat", "tool_call_id": "relay", "output": {"text": input.text},
            }))
            .unwrap_or_default();
            let spilled =
                (ctx.execute_activity(Overspill::spill, request, activity_options())).await?;
            let next = RelayInput {
                text: String::new(),
                handle: Some(spilled.handle),
            };
            let never = ctx.continue_as_new(next, ContinueAsNewOptions::default())?;
            match never {}
        };
        let request = ReadRequest {
            handle,
            limit: 2,
            ..ReadRequest::default()
        };
        let page = ctx.execute_activity(Overspill::read_tool_result, request, activity_options());
        Ok(page.await?)
    }
}

/// A worker over `url` reading with `scope`, serving the relay too.
async fn worker(name: &str, url: String, scope: ReadScope) -> TestWorker {
    let configure = move |_| {
        let store = Store::open(Some(&url)).expect("open the store");
        OverspillActivities::new(Arc::new(store)).with_read_scope(scope)
    };
    TestWorker::start_configured(name, configure, |o| {
        o.register_workflow::<ScopeRelay>()
            .expect("register the relay");
    })
    .await
}

/// The stores: a local directory (its files keep the writer in an extended attribute) and
/// SeaweedFS (in object metadata).
fn stores(name: &str, dir: &tempfile::TempDir) -> Vec<String> {
    let local = url::Url::from_directory_path(dir.path().join("spills")).expect("a file URL");
    vec![local.to_string(), unique_url(name)]
}

fn lines(n: usize) -> String {
    (0..n).map(|i| format!("line {i:04}\n")).collect()
}

fn json_lines(n: usize) -> String {
    (0..n).map(|i| format!("{{\"n\":{i}}}\n")).collect()
}

/// The read-back calls a model can make on `handle` (text) and `json` (JSON Lines), and a
/// listing of `run`.
fn reads(handle: &str, json: &str, run: &str) -> Vec<Probe> {
    vec![
        probe(
            "tool_output_limits.read_tool_result",
            json!({"handle": handle, "offset": 0, "limit": 2}),
        ),
        // Past the end: answered from an opened index without a payload read.
        probe(
            "tool_output_limits.read_tool_result",
            json!({"handle": handle, "offset": 100000, "limit": 2}),
        ),
        probe(
            "tool_output_limits.read_tool_result",
            json!({"handle": handle, "pattern": "line 0001"}),
        ),
        probe(
            "tool_output_limits.grep_tool_result",
            json!({"handle": handle, "pattern": "line 000[12]", "regex": true}),
        ),
        probe(
            "tool_output_limits.query_tool_result",
            json!({"handle": json, "filter": ".n | select(. < 2)"}),
        ),
        probe(
            "tool_output_limits.list_tool_results",
            json!({"run_id": run, "limit": 10}),
        ),
    ]
}

fn spill(run: &str, call: &str, text: &str) -> Probe {
    probe(
        "tool_output_limits.spill",
        json!({"tool_name": "cat", "run_id": run, "tool_call_id": call, "output": {"text": text}}),
    )
}

fn texts(outcomes: &[Outcome]) -> Vec<String> {
    outcomes
        .iter()
        .map(|o| match &o.ok {
            Some(Value::String(text)) => text.clone(),
            _ => panic!("not a page: {o:?}"),
        })
        .collect()
}

/// A listing's text without its ages, which move.
fn without_ages(text: &str) -> String {
    text.lines()
        .map(|l| l.split(", written ").next().unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

async fn history(w: &TestWorker, workflow_id: &str) -> WorkflowHistory {
    let json = (w.client)
        .get_workflow_handle::<ProbeWorkflow>(workflow_id)
        .fetch_history(Default::default())
        .to_json()
        .await
        .expect("the history");
    WorkflowHistory::from_json(&json).expect("a history")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_reads_its_own_spills_and_another_workflows_look_missing() {
    let dir = tempfile::tempdir().expect("a temp dir");
    for url in stores("scope", &dir) {
        let w = worker("scope", url.clone(), ReadScope::Workflow).await;
        let run = unique("run-scope");
        let (text, json) = (format!("{run}/text.0"), format!("{run}/json.0"));
        let writer = unique("scope-writer");
        let mut calls = vec![
            spill(&run, "text", &lines(40_000)),
            spill(&run, "json", &json_lines(10)),
        ];
        calls.extend(reads(&text, &json, &run));
        let own = w.run(ProbeWorkflow::run, calls, &writer).await;
        let own = texts(&own.expect("the writer's run")[2..]);
        assert_eq!(
            own[0],
            format!("[handle '{text}': 40,000 matching line(s); showing 2]\nline 0000\nline 0001"),
            "{url}"
        );
        assert_eq!(
            own[1],
            format!("[handle '{text}': 40,000 matching line(s); showing 0]")
        );
        assert!(own[3].contains("2:line 0001\n3:line 0002"), "{}", own[3]);
        assert!(own[4].contains("\n0\n1"), "{}", own[4]);
        assert!(own[5].contains(&format!("[run '{run}': 2 spilled tool result(s)")));

        // Another workflow: the same calls on the writer's spills, then on a handle and a run
        // that were never written, then a spill of its own in the writer's run.
        let (missing, missing_json) = (format!("{run}-none/text.0"), format!("{run}-none/json.0"));
        let reader = unique("scope-reader");
        let mut calls = reads(&text, &json, &run);
        calls.extend(reads(&missing, &missing_json, &format!("{run}-none")));
        calls.push(spill(&run, "theirs", &lines(3)));
        calls.push(probe(
            "tool_output_limits.list_tool_results",
            json!({"run_id": run, "limit": 10}),
        ));
        let out = w.run(ProbeWorkflow::run, calls, &reader).await;
        let out = out.expect("the reader's run");
        let foreign = texts(&out[..6]);
        let as_missing: Vec<String> = texts(&out[6..12])
            .iter()
            .map(|t| {
                t.replace(&missing, &text)
                    .replace(&missing_json, &json)
                    .replace(&format!("{run}-none"), &run)
            })
            .collect();
        assert_eq!(
            foreign, as_missing,
            "{url}: a foreign handle reads as a missing one"
        );
        assert_eq!(foreign[0], no_stored_result(&text));
        assert_eq!(
            foreign[5],
            format!("[run '{run}': 0 spilled tool result(s); showing 0, newest first]")
        );
        let theirs = texts(&out[13..]);
        assert!(
            theirs[0].starts_with(&format!(
                "[run '{run}': 1 spilled tool result(s); showing 1, newest first]\n- '{run}/theirs.0'"
            )),
            "{}",
            theirs[0]
        );

        // A re-run under the writer's workflow id reads its earlier run's spills, and lists
        // them without the other workflow's.
        let again = w
            .run(ProbeWorkflow::run, reads(&text, &json, &run), &writer)
            .await;
        let again = texts(&again.expect("the re-run"));
        assert_eq!(again[..5], own[..5], "{url}");
        assert_eq!(without_ages(&again[5]), without_ages(&own[5]));

        // Continue-as-new: the next run reads the spill the first run keyed by its own run id.
        let relay = unique("scope-relay");
        let input = RelayInput {
            text: lines(5),
            handle: None,
        };
        let page = w.run(ScopeRelay::run, input, &relay).await;
        let page = page.expect("the relay");
        assert!(
            page.ends_with("/relay.0': 5 matching line(s); showing 2]\nline 0000\nline 0001"),
            "{url}: {page}"
        );

        // The recorded histories replay on the current code.
        let replayer = WorkflowReplayer::new(
            WorkflowReplayerOptions::new()
                .register_workflow::<ProbeWorkflow>()
                .and_then(|o| o.register_workflow::<ScopeRelay>())
                .expect("register")
                .build(),
        )
        .expect("a replayer");
        for id in [&writer, &reader, &relay] {
            let history = history(&w, id).await;
            replayer
                .replay_workflow(history)
                .await
                .unwrap_or_else(|e| panic!("{id} does not replay: {e}"));
        }
    }
}

/// `--read-scope any` lets every workflow read every spill; `namespace`, those of its namespace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wider_read_scopes_let_other_workflows_read() {
    let url = unique_url("scope-any");
    for scope in [ReadScope::Namespace, ReadScope::Any] {
        let w = worker("scope-any", url.clone(), scope).await;
        let run = unique("run-any");
        let writer = vec![spill(&run, "text", &lines(3))];
        (w.run(ProbeWorkflow::run, writer, &unique("writer")).await).expect("the writer");
        let handle = format!("{run}/text.0");
        let read = vec![probe(
            "tool_output_limits.read_tool_result",
            json!({"handle": handle, "limit": 1}),
        )];
        let out = w.run(ProbeWorkflow::run, read, &unique("reader")).await;
        let out = texts(&out.expect("the reader"));
        assert_eq!(
            out[0],
            format!("[handle '{handle}': 3 matching line(s); showing 1]\nline 0000"),
            "{scope}"
        );
    }
}
