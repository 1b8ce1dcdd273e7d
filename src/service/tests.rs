use std::sync::Arc;

use super::*;
use crate::limits::{Deferred, Envelope, NoSummarizer, ReductionKind, ToolOutput};

fn service() -> Service {
    let store = Store::open(Some("memory://")).expect("a memory store");
    Service::new(Arc::new(store), Surface::Python)
}

fn call(tool_name: &str) -> ToolCall {
    ToolCall {
        tool_name: tool_name.into(),
        run_id: Some("r".into()),
        tool_call_id: Some("c".into()),
        ..ToolCall::default()
    }
}

/// An empty workflow id names no workflow: its caller reads like a standalone activity's, never
/// sharing one scope with every other caller whose id is empty.
#[test]
fn an_empty_workflow_id_is_no_scope() {
    let service = service();
    let empty = Caller::activity("default", Some(""), Some(""));
    assert_eq!(empty, Caller::activity("default", None, None));
    assert_eq!(service.reader(&empty).scope(), None);
    let named = Caller::activity("default", Some("wf"), Some("run"));
    assert!(service.reader(&named).scope().is_some());
    assert_eq!(named.workflow_run_id(), Some("run"));
}

/// A spill's result names the store; the pages read it back; an unknown handle is an answer the
/// model reads (not found), a bad argument the model's to retry.
#[tokio::test]
async fn a_reduction_is_stamped_and_read_back() {
    let service = service();
    let text = "line\n".repeat(4_000);
    let result = ToolResult::bare(ToolOutput::Text(text.into()));
    let reduction = service
        .reduce(
            &Limits::default(),
            &call("cat"),
            result,
            &NoSummarizer,
            &Caller::Operator,
        )
        .await
        .expect("reduced");
    assert_eq!(reduction.reduced.kind, ReductionKind::Spilled);
    assert_eq!(reduction.reduced.store.as_deref(), Some("memory://"));
    assert!(reduction.failure.is_none());

    let read = ReadRequest {
        handle: "r/c.0".into(),
        limit: 1,
        ..ReadRequest::default()
    };
    let page = service.read_tool_result(&read, &Caller::Operator).await;
    let page = page.expect("a page");
    assert!(
        page.found && page.text.ends_with("showing 1]\nline"),
        "{page:?}"
    );
    let missing = ReadRequest {
        handle: "r/gone.0".into(),
        ..read.clone()
    };
    let missing = service.read_tool_result(&missing, &Caller::Operator).await;
    let missing = missing.expect("an answer");
    assert!(
        !missing.found && missing.text.contains("No stored tool result"),
        "{missing:?}"
    );
    let bad = ReadRequest { limit: 0, ..read };
    let bad = service.read_tool_result(&bad, &Caller::Operator).await;
    let bad = bad.expect_err("a bad limit");
    assert!(bad.is_model_retry() && !bad.retryable, "{bad:?}");
    let bytes = service
        .read("r/c.0", &Caller::Operator)
        .await
        .expect("read");
    assert_eq!(bytes.map(|b| b.len()), Some(20_000));
    assert_eq!(service.read("r/gone.0", &Caller::Operator).await, Ok(None));
}

/// A reduction refuses an empty tool name in the caller's terms.
#[tokio::test]
async fn an_empty_tool_name_is_refused() {
    let result = ToolResult::bare(ToolOutput::Text("x".into()));
    let refused = service()
        .reduce(
            &Limits::default(),
            &call(""),
            result,
            &NoSummarizer,
            &Caller::Operator,
        )
        .await
        .expect_err("refused");
    assert_eq!(refused.type_name, INVALID_INPUT);
    assert_eq!(
        refused.message,
        "invalid argument `tool_name=`: must not be empty"
    );
}

/// A deferring summarizer leaves the whole result as it is when any part's band summarizes,
/// whatever the other part's band would do; bands that do not summarize reduce as usual.
#[tokio::test]
async fn a_deferred_summary_leaves_the_result_whole() {
    let service = service();
    let limits = Limits::from_json(
        r#"{"bands":[{"over":100,"action":{"type":"spill"}},
                     {"over":1000,"action":{"type":"summarize"}}]}"#,
    )
    .expect("limits");
    let result = |value: usize, content: usize| ToolResult {
        return_value: ToolOutput::Text("v".repeat(value).into()),
        envelope: Envelope {
            content: Some(serde_json::Value::String("c".repeat(content))),
            metadata: None,
            wrapped: true,
        },
    };
    let reduce = async |result| {
        let caller = Caller::Operator;
        let reduction = service
            .reduce(&limits, &call("cat"), result, &Deferred, &caller)
            .await
            .expect("reduced");
        reduction.reduced
    };
    let left = reduce(result(500, 5_000)).await;
    assert!(!left.changed(), "{left:?}");
    assert!(
        service
            .store()
            .list_spills()
            .await
            .expect("list")
            .is_empty()
    );
    let spilled = reduce(result(500, 50)).await;
    assert_eq!(
        (spilled.kind, spilled.content_kind),
        (ReductionKind::Spilled, ReductionKind::Passthrough)
    );
}

/// Without a query runner a query is refused for good, naming the fix; with one it runs.
#[tokio::test]
async fn a_query_needs_a_runner() {
    let service = service();
    let handle = service
        .write(
            "r/q.0",
            Bytes::from_static(b"{\"n\":1}\n{\"n\":2}\n"),
            "q",
            &Caller::Operator,
        )
        .await
        .expect("written");
    let request = QueryRequest {
        handle,
        filter: ".n".into(),
        ..QueryRequest::default()
    };
    let refused = service.query_tool_result(&request, &Caller::Operator).await;
    let refused = refused.expect_err("no runner");
    assert_eq!(
        (refused.type_name, refused.retryable),
        (QUERY_SANDBOX_UNBOUNDED, false)
    );
    assert!(
        refused.message.contains("`query_sandbox=`"),
        "{}",
        refused.message
    );
    let service = service.with_query_runner(Some(QueryRunner::default()));
    let page = service.query_tool_result(&request, &Caller::Operator).await;
    assert!(page.expect("a page").text.ends_with("\n1\n2"));
}
