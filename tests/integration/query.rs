//! `query_tool_result` against a real S3-compatible server (SeaweedFS): a JSON Lines spill of
//! several chunks filtered as it streams, a document parsed whole, the activity and the CLI
//! serving the same page, and a runaway filter stopped with a message.

use bytes::Bytes;
use overspill::activities::{Caller, OverspillActivities, QueryResponse};
use overspill::limits::SpillStore;
use overspill::query::{QueryRequest, query_tool_result};
use overspill::read::CHUNK_BYTES;
use overspill::store::Store;

use crate::store::{overspill, unique_url};

/// Records of the test spill: more than two chunks of them.
const RECORDS: usize = 120_000;

fn spill_lines() -> Bytes {
    let line = |i: usize| {
        let status = if i % 40_000 == 7 { "failed" } else { "ok" };
        format!(
            "{{\"id\":{i},\"status\":\"{status}\",\"pad\":\"{}\"}}\n",
            "p".repeat(60)
        )
    };
    Bytes::from((0..RECORDS).map(line).collect::<String>())
}

fn query(handle: &str, filter: &str) -> QueryRequest {
    QueryRequest {
        handle: handle.into(),
        filter: filter.into(),
        ..QueryRequest::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn query_pages_stream_json_lines_from_seaweedfs() {
    let store = Store::open(Some(&unique_url("query"))).expect("store");
    let data = spill_lines();
    assert!(data.len() > 2 * CHUNK_BYTES, "the spill spans chunks");
    let handle = store.write("run-q/call-1.0", data).await.expect("spill");

    let failed = query(&handle, r#"select(.status == "failed") | .id"#);
    assert_eq!(
        query_tool_result(&store, &failed).await.expect("a page"),
        "[handle 'run-q/call-1.0': 3 result(s) of filter 'select(.status == \"failed\") | .id' \
         over 120,000 JSON value(s); showing results 1-3]\n7\n40007\n80007"
    );
    let paged = QueryRequest {
        offset: 119_998,
        limit: 5,
        ..query(&handle, ".id")
    };
    assert_eq!(
        query_tool_result(&store, &paged).await.expect("a page"),
        "[handle 'run-q/call-1.0': 120,000 result(s) of filter '.id' over 120,000 JSON \
         value(s); showing results 119999-120000]\n119998\n119999"
    );

    let doc = store
        .write(
            "run-q/call-2.0",
            Bytes::from_static(
                b"{\n  \"items\": [\n    {\"id\": \"a\"},\n    {\"id\": \"b\"}\n  ]\n}\n",
            ),
        )
        .await
        .expect("spill");
    assert_eq!(
        query_tool_result(&store, &query(&doc, "[.items[].id]"))
            .await
            .expect("a page"),
        "[handle 'run-q/call-2.0': 1 result(s) of filter '[.items[].id]' over 1 JSON value(s); \
         showing results 1-1]\n[\"a\",\"b\"]"
    );
    let missing = query_tool_result(&store, &query("run-q/nope.0", "."))
        .await
        .expect_err("no stored result")
        .to_string();
    assert!(missing.starts_with("[No stored tool result for handle 'run-q/nope.0'."));
}

#[tokio::test(flavor = "multi_thread")]
async fn query_activity_and_cli_serve_the_same_page_and_stop_runaways() {
    let url = unique_url("query-cli");
    let store = Store::open(Some(&url)).expect("store");
    let handle = store
        .write(
            "run-c/call-1.0",
            Bytes::from_static(b"{\"n\":1,\"tags\":[\"x\"]}\n{\"n\":2,\"tags\":[]}\n"),
        )
        .await
        .expect("spill");
    let activities = OverspillActivities::new(store.into());
    let QueryResponse(text) = activities
        .query_request(
            query(&handle, "select(.tags | length > 0) | .n"),
            &Caller::Operator,
        )
        .await
        .expect("a page");
    assert_eq!(
        text,
        "[handle 'run-c/call-1.0': 1 result(s) of filter 'select(.tags | length > 0) | .n' over \
         2 JSON value(s); showing results 1-1]\n1"
    );
    let cli = overspill()
        .args([
            "query",
            &handle,
            "select(.tags | length > 0) | .n",
            "--store",
            &url,
        ])
        .output()
        .expect("runs");
    assert!(
        cli.status.success(),
        "{}",
        String::from_utf8_lossy(&cli.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&cli.stdout), text + "\n");

    let bad = overspill()
        .args(["query", &handle, ".n | map(", "--store", &url])
        .output()
        .expect("runs");
    assert_eq!(bad.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.starts_with("`filter` is not a valid jq filter: expected "),
        "{stderr}"
    );
    assert!(stderr.contains(" at char 10:"), "{stderr}");
    let failure = activities
        .query_request(query(&handle, ".n | map("), &Caller::Operator)
        .await
        .expect_err("a retry");
    assert_eq!(
        (failure.type_name, failure.retryable),
        ("ModelRetry", false)
    );

    let runaway = overspill()
        .args(["query", &handle, "repeat(.)", "--store", &url])
        .env("OVERSPILL_QUERY_DEADLINE_SECS", "0.5")
        .output()
        .expect("runs");
    assert_eq!(runaway.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&runaway.stderr);
    assert!(
        stderr.starts_with("The filter ran longer than 0.5 s and was stopped."),
        "{stderr}"
    );
}

/// A sandbox that cannot bound its memory (here it runs where `/proc` is an empty directory, as
/// on a system without `/proc`, so it cannot learn what it maps) runs nothing: the query is
/// refused for good, saying why, never retried.
#[tokio::test(flavor = "multi_thread")]
async fn a_sandbox_that_cannot_bound_itself_refuses_the_query_for_good() {
    use overspill::query::{QueryPlace, QueryRunner};

    let dir = tempfile::tempdir().expect("a temp dir");
    let exe = without_proc(dir.path(), env!("CARGO_BIN_EXE_overspill"));
    let store = Store::open(Some("memory://")).expect("store");
    let handle = (store
        .write("run-u/call-1.0", Bytes::from_static(b"{\"n\":1}\n"))
        .await)
        .expect("spill");
    let runner = QueryRunner {
        place: QueryPlace::Sandboxed {
            exe,
            memory: 256 << 20,
        },
        ..QueryRunner::default()
    };
    let activities = OverspillActivities::new(store.into()).with_query_runner(runner);
    let failure = activities
        .query_request(query(&handle, ".n"), &Caller::Operator)
        .await
        .expect_err("refused");
    assert_eq!(
        (failure.type_name, failure.retryable),
        ("QuerySandboxUnbounded", false),
        "{}",
        failure.message
    );
    assert!(
        failure.message.ends_with(
            "cannot read /proc/self/status to learn what it maps (No such file or directory \
             (os error 2))"
        ),
        "{}",
        failure.message
    );
}

/// An executable in `dir` that runs `exe` in a mount namespace of its own whose `/proc` is an
/// empty tmpfs (the tests run as root, as `deploy/test.sh` does).
fn without_proc(dir: &std::path::Path, exe: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let wrapper = dir.join("overspill-without-proc");
    let script = format!(
        "#!/bin/sh\nexec /usr/bin/unshare --mount /bin/sh -c \
         '/bin/mount -t tmpfs none /proc && exec \"$0\" \"$@\"' '{exe}' \"$@\"\n"
    );
    std::fs::write(&wrapper, script).expect("the wrapper");
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).expect("mode");
    wrapper
}
