//! `grep_tool_result` and `list_tool_results` against a real S3-compatible server (SeaweedFS):
//! pages streamed over ranged reads of a multi-chunk spill, byte for byte, and a run's spills
//! listed from their metadata and line indexes.

use std::time::Duration;

use bytes::Bytes;
use object_store::ObjectStoreExt as _;
use object_store::path::Path;
use overspill::activities::{Caller, GrepResponse, ListResponse, OverspillActivities};
use overspill::api::ReduceRequest;
use overspill::limits::SpillStore;
use overspill::read::{CHUNK_BYTES, GrepRequest, grep_page, grep_tool_result};
use overspill::store::{ListRequest, Store};

use crate::store::{overspill, raw_bucket, unique_url};

/// Lines of the test spill: more than two chunks of it.
const LINES: usize = 300_000;

/// Line `n` (from 1) of the test spill.
fn line(n: usize) -> String {
    match n {
        100 => "2026-11-30 ERROR disk full on /var".to_owned(),
        150_000 => "2026-11-30 error: retry 1 of 3".to_owned(),
        150_001 => "2026-11-30 Error: retry 2 of 3".to_owned(),
        299_990 => "2026-11-30 ERROR timeout after 30s".to_owned(),
        n => format!("2026-11-30 INFO request {n:06} served in 12ms"),
    }
}

fn spill_text() -> Bytes {
    Bytes::from((1..=LINES).map(|n| line(n) + "\n").collect::<String>())
}

fn grep(handle: &str, pattern: &str) -> GrepRequest {
    GrepRequest {
        handle: handle.into(),
        pattern: pattern.into(),
        ..GrepRequest::default()
    }
}

/// `N:line` or `N-line` for the lines `range` around matches `hits` (numbers from 1).
fn shown(range: std::ops::RangeInclusive<usize>, hits: &[usize]) -> String {
    range
        .map(|n| {
            let mark = if hits.contains(&n) { ':' } else { '-' };
            format!("{n}{mark}{}", line(n))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread")]
async fn grep_pages_stream_byte_exact_from_seaweedfs() {
    let store = Store::open(Some(&unique_url("grep"))).expect("store");
    let data = spill_text();
    assert!(data.len() > 2 * CHUNK_BYTES, "the spill spans chunks");
    let handle = store
        .write("run-g/call-1.0", data.clone())
        .await
        .expect("spill");
    let page = |request: GrepRequest| {
        let store = store.clone();
        async move {
            let page = grep_tool_result(&store, &request).await.expect("a page");
            let data = store.read(&request.handle).await.expect("payload");
            assert_eq!(
                page,
                grep_page(&data, &request).expect("valid"),
                "streamed = in memory"
            );
            page
        }
    };

    let literal = page(GrepRequest {
        context: 0,
        ..grep(&handle, "ERROR")
    })
    .await;
    assert_eq!(
        literal,
        format!(
            "[handle 'run-g/call-1.0': 2 matching line(s); showing 2]\n{}\n--\n{}",
            shown(100..=100, &[100]),
            shown(299_990..=299_990, &[299_990])
        )
    );

    // Two lines of context by default; windows that touch merge into one group.
    let ignore_case = GrepRequest {
        ignore_case: true,
        ..grep(&handle, "error")
    };
    assert_eq!(
        page(ignore_case).await,
        format!(
            "[handle 'run-g/call-1.0': 4 matching line(s); showing 4]\n{}\n--\n{}\n--\n{}",
            shown(98..=102, &[100]),
            shown(149_998..=150_003, &[150_000, 150_001]),
            shown(299_988..=299_992, &[299_990])
        )
    );

    let regex = GrepRequest {
        regex: true,
        context: 1,
        max_matches: 1,
        offset: 1,
        ..grep(&handle, r"(?i)^\S+ error:? (retry \d|timeout)")
    };
    // Match 3 of the file is context of match 2 of it, the page's: `-`.
    assert_eq!(
        page(regex).await,
        format!(
            "[handle 'run-g/call-1.0': 3 matching line(s); showing 1, 1 more; continue with offset=2]\n{}",
            shown(150_000..=150_002, &[150_001])
        )
    );

    // The earlier grep's `from_end`, still served: the offset to continue from counts forward.
    let from_end = GrepRequest {
        from_end: true,
        max_matches: 2,
        context: 1,
        ..grep(&handle, "served in 12ms")
    };
    let total = LINES - 4;
    assert_eq!(
        page(from_end).await,
        format!(
            "[handle 'run-g/call-1.0': {} matching line(s); showing 2]\n{}",
            thousands(total),
            shown(299_998..=300_000, &[299_999, 300_000])
        )
    );

    let missing = grep_tool_result(&store, &grep("run-g/nope.0", "x"))
        .await
        .expect_err("no stored result")
        .to_string();
    assert!(
        missing.starts_with("[No stored tool result for handle 'run-g/nope.0'."),
        "{missing}"
    );
}

/// What `overspill ARGS` prints, once it succeeded.
fn cli(args: &[&str]) -> String {
    let out = overspill().args(args).output().expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let page = stdout.strip_suffix('\n');
    page.unwrap_or_else(|| panic!("no newline at the end: {stdout:?}"))
        .to_owned()
}

fn thousands(n: usize) -> String {
    overspill::limits::pyfmt::thousands(n as u64)
}

#[tokio::test(flavor = "multi_thread")]
async fn catastrophic_regexes_return_promptly_on_seaweedfs() {
    let store = Store::open(Some(&unique_url("redos"))).expect("store");
    let data = format!("{}!\n{}\n", "a".repeat(30), "x".repeat(30)).repeat(2_000);
    let handle = store
        .write("run-r/call-1.0", data.into())
        .await
        .expect("spill");
    for (pattern, hits) in [(r"(a+)+$", 0), (r"(x+x+)+y", 0), (r"(a|a)*!", 2_000)] {
        let request = GrepRequest {
            regex: true,
            ..grep(&handle, pattern)
        };
        // A hang guard only: the bench times it.
        let page =
            tokio::time::timeout(Duration::from_secs(30), grep_tool_result(&store, &request))
                .await
                .expect("no hang")
                .expect("a page");
        let expected = format!(
            "[handle 'run-r/call-1.0': {} matching line(s)",
            thousands(hits)
        );
        assert!(page.starts_with(&expected), "{pattern}: {page}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn grep_activity_and_cli_serve_the_same_page() {
    let url = unique_url("grep-cli");
    let store = Store::open(Some(&url)).expect("store");
    let handle = store
        .write(
            "run-c/call-1.0",
            Bytes::from_static(b"alpha\nbeta\ngamma\nbeta 2\n"),
        )
        .await
        .expect("spill");
    let activities = OverspillActivities::new(store.into());
    let request = GrepRequest {
        context: 1,
        ..grep(&handle, "beta")
    };
    let GrepResponse(text) = activities
        .grep_request(request, &Caller::Operator)
        .await
        .expect("a page");
    assert_eq!(
        text,
        "[handle 'run-c/call-1.0': 2 matching line(s); showing 2]\n\
         1-alpha\n2:beta\n3-gamma\n4:beta 2"
    );
    assert_eq!(
        cli(&["grep", &handle, "beta", "-C", "1", "--store", &url]),
        text
    );

    let bad = overspill()
        .args(["grep", &handle, "(unclosed", "--regex", "--store", &url])
        .output()
        .expect("runs");
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not a valid regex"));
    let failure = activities
        .grep_request(
            GrepRequest {
                regex: true,
                ..grep(&handle, "(unclosed")
            },
            &Caller::Operator,
        )
        .await
        .expect_err("a retry");
    assert_eq!(
        (failure.type_name, failure.retryable),
        ("ModelRetry", false)
    );
}

fn reduce_request(tool: &str, call: &str, text: String) -> ReduceRequest {
    serde_json::from_value(serde_json::json!({
        "tool_name": tool, "run_id": "run-l", "tool_call_id": call, "output": {"text": text},
    }))
    .expect("a request")
}

/// The listing without its ages, which depend on the clock.
fn without_ages(text: &str) -> String {
    let ages = regex::Regex::new(r"written [^;\n]* ago").expect("regex");
    ages.replace_all(text, "written … ago").into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn list_shows_a_runs_spills_newest_first_from_metadata_and_indexes() {
    let url = unique_url("list");
    let store = Store::open(Some(&url)).expect("store");
    let activities = OverspillActivities::new(store.clone().into());
    let spills = [
        (
            "cat",
            "call-1",
            "first line of cat\n".to_owned() + &"c".repeat(20_000),
        ),
        (
            "run_command",
            "call-2",
            "$ make\n".to_owned() + &"built ok\n".repeat(10_000),
        ),
        ("grep", "call-3", "ünï match\n".repeat(2_000)),
    ];
    // Written in the order shown (newest last), with handles that sort the same way: spills
    // written within one second (S3 keeps whole seconds) tie, and a tie lists the later handle
    // first. That newer timestamps come first is tested on dated files (`store::tests`).
    for (tool, call, text) in spills {
        let reduced = activities
            .reduce_request(reduce_request(tool, call, text), &Caller::Operator)
            .await
            .expect("reduced");
        assert_eq!(reduced.kind, overspill::limits::ReductionKind::Spilled);
    }
    // A spill from a writer that sets no metadata (an older Overspill, the Python store).
    let prefix = url
        .trim_start_matches("s3://")
        .split_once('/')
        .expect("a prefix")
        .1;
    raw_bucket()
        .put(
            &Path::from(format!("{prefix}/tool_output_limits/run-l/legacy.0")),
            Bytes::from_static(b"old\n").into(),
        )
        .await
        .expect("planted");
    store
        .write("run-other/call-9.0", Bytes::from_static(b"not this run\n"))
        .await
        .expect("spill");

    let request = ListRequest {
        run_id: "run-l".into(),
        limit: 3,
        tool_names: [("legacy".to_owned(), "old_tool".to_owned())].into(),
    };
    let ListResponse(text) = activities
        .list_request(request, &Caller::Operator)
        .await
        .expect("a listing");
    assert_eq!(
        without_ages(&text),
        "[run 'run-l': 4 spilled tool result(s); showing 3, newest first]\n\
         - 'run-l/legacy.0': old_tool, ? chars, ? lines, written … ago\n\
         - 'run-l/call-3.0': grep, 20,000 chars, 2,000 lines, written … ago; first line: 'ünï match'\n\
         - 'run-l/call-2.0': run_command, 90,007 chars, 10,001 lines, written … ago; first line: '$ make'\n\
         [1 older spill(s) not shown: call list_tool_results again with a larger limit]"
    );
    let listed = cli(&["spills", "ls", "--run", "run-l", "--store", &url]);
    assert!(
        listed.contains("- 'run-l/legacy.0': unknown tool, ? chars, ? lines"),
        "{listed}"
    );
    assert!(
        without_ages(&listed).ends_with(
            "- 'run-l/call-1.0': cat, 20,018 chars, 2 lines, written … ago; first line: 'first line of cat'"
        ),
        "{listed}"
    );
}
