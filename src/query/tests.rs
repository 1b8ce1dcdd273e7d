use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;

use super::*;
use crate::read::{Fetched, Version};

/// A payload in memory read in small chunks, recording the longest read and the bytes read.
struct Counted {
    data: Bytes,
    chunk: usize,
    longest: AtomicU64,
    read: AtomicU64,
}

impl Counted {
    fn new(data: impl Into<Bytes>, chunk: usize) -> Self {
        Self {
            data: data.into(),
            chunk,
            longest: AtomicU64::new(0),
            read: AtomicU64::new(0),
        }
    }
}

impl SpillReader for Counted {
    async fn head(&self, handle: &str) -> Result<Version, StoreError> {
        match handle {
            "r/c.0" => Ok(Version {
                size: self.data.len() as u64,
                tag: None,
            }),
            _ => Err(StoreError::NotFound {
                handle: handle.to_owned(),
            }),
        }
    }

    async fn fetch(&self, _: &str, _: Part, range: Range<u64>) -> Result<Fetched, StoreError> {
        let bytes = self.data.slice(range.start as usize..range.end as usize);
        self.longest
            .fetch_max(bytes.len() as u64, Ordering::Relaxed);
        self.read.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(Fetched {
            bytes,
            version: self.head("r/c.0").await?,
        })
    }

    async fn put_index(&self, _: &str, _: Bytes) -> Result<(), StoreError> {
        Ok(())
    }

    fn chunk_bytes(&self) -> usize {
        self.chunk
    }
}

fn request(filter: &str) -> QueryRequest {
    QueryRequest {
        handle: "r/c.0".into(),
        filter: filter.into(),
        ..QueryRequest::default()
    }
}

/// A 1 KiB document cap (the deadline as in production: a loaded machine must not fail these).
const SMALL: Caps = Caps {
    document_bytes: 1 << 10,
    ..CAPS
};

/// A short deadline, for the runaway filters.
const SHORT: Caps = Caps {
    deadline: Duration::from_millis(300),
    ..CAPS
};

async fn query(data: &str, request: &QueryRequest) -> Result<String, String> {
    query_with(
        &Counted::new(data.to_owned(), 7),
        request,
        CAPS,
        &QueryRunner::default(),
    )
    .await
    .map_err(|e| e.to_string())
}

fn records(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "{{\"id\":{i},\"ok\":{},\"tag\":\"t{}\"}}\n",
                i % 3 != 0,
                i % 5
            )
        })
        .collect()
}

#[tokio::test]
async fn a_json_lines_spill_is_filtered_value_by_value() {
    let page = query(&records(10), &request("select(.ok | not) | .id")).await;
    assert_eq!(
        page.expect("a page"),
        "[handle 'r/c.0': 4 result(s) of filter 'select(.ok | not) | .id' over 10 JSON \
         value(s); showing results 1-4]\n0\n3\n6\n9"
    );
    let page = query(&records(3), &request("{id, t: .tag}")).await;
    assert_eq!(
        page.expect("a page"),
        "[handle 'r/c.0': 3 result(s) of filter '{id, t: .tag}' over 3 JSON value(s); showing \
         results 1-3]\n{\"id\":0,\"t\":\"t0\"}\n{\"id\":1,\"t\":\"t1\"}\n{\"id\":2,\"t\":\"t2\"}"
    );
}

#[tokio::test]
async fn results_are_paged_by_offset_and_limit() {
    let page = QueryRequest {
        offset: 3,
        limit: 2,
        ..request(".id")
    };
    assert_eq!(
        query(&records(10), &page).await.expect("a page"),
        "[handle 'r/c.0': 10 result(s) of filter '.id' over 10 JSON value(s); showing results \
         4-5]\n3\n4\n[5 more result(s): call query_tool_result again with offset=5]"
    );
    let past = QueryRequest {
        offset: 20,
        ..request(".id")
    };
    assert_eq!(
        query(&records(10), &past).await.expect("a page"),
        "[handle 'r/c.0': 10 result(s) of filter '.id' over 10 JSON value(s); showing none]"
    );
}

#[tokio::test]
async fn a_pretty_printed_document_is_parsed_whole() {
    let doc = "{\n  \"items\": [\n    {\"id\": \"a\", \"ok\": true},\n    {\"id\": \"b\", \"ok\": false}\n  ]\n}\n";
    let page = query(doc, &request("[.items[] | select(.ok | not) | .id]")).await;
    assert_eq!(
        page.expect("a page"),
        "[handle 'r/c.0': 1 result(s) of filter '[.items[] | select(.ok | not) | .id]' over 1 \
         JSON value(s); showing results 1-1]\n[\"b\"]"
    );
}

#[tokio::test]
async fn json_lines_larger_than_the_document_cap_stream_in_chunks() {
    let data = records(2_000);
    assert!(data.len() as u64 > 40 * SMALL.document_bytes);
    let spill = Counted::new(data.clone(), 512);
    let page = query_with(
        &spill,
        &request("select(.id == 1999) | .tag"),
        SMALL,
        &QueryRunner::default(),
    )
    .await;
    assert_eq!(
        page.expect("a page"),
        "[handle 'r/c.0': 1 result(s) of filter 'select(.id == 1999) | .tag' over 2,000 JSON \
         value(s); showing results 1-1]\n\"t4\""
    );
    assert_eq!(
        spill.longest.load(Ordering::Relaxed),
        512,
        "read in chunks, never whole"
    );
    assert_eq!(
        spill.read.load(Ordering::Relaxed),
        data.len() as u64,
        "read once"
    );
}

#[tokio::test]
async fn a_document_over_the_cap_suggests_json_lines() {
    let doc = format!("[\n{}]", "1,\n".repeat(1_000) + "1\n");
    let page = query_with(
        &Counted::new(doc, 64),
        &request(".[0]"),
        SMALL,
        &QueryRunner::default(),
    )
    .await;
    let message = page.expect_err("too large").to_string();
    assert!(
        message
            .starts_with("The spill (3,005 bytes) is not JSON Lines: line 1 is not one JSON value"),
        "{message}"
    );
    assert!(message.contains("the `json_lines` serializer"), "{message}");
}

#[tokio::test]
async fn a_spill_that_is_not_json_names_its_first_bad_line() {
    let message = query("{\"a\": 1}\n{\"a\": 2}\nnot json here\n", &request(".a"))
        .await
        .expect_err("not JSON");
    assert!(
        message.starts_with("The spill is not JSON: line 3 is not valid JSON ("),
        "{message}"
    );
    assert!(message.contains("): not json here\n"), "{message}");
}

#[tokio::test]
async fn an_invalid_filter_says_what_and_where() {
    let message = query("{}", &request(".a | map("))
        .await
        .expect_err("bad filter");
    assert!(
        message.starts_with("`filter` is not a valid jq filter: expected "),
        "{message}"
    );
    assert!(
        message.contains(" at char 10:\n  .a | map(\n           ^\n"),
        "{message}"
    );
    let message = query("{}", &request(".a | nosuch(1)"))
        .await
        .expect_err("bad");
    assert!(
        message.contains("undefined filter `nosuch` at char 6"),
        "{message}"
    );
    let unknown = QueryRequest {
        handle: "r/other.0".into(),
        ..request(".")
    };
    assert_eq!(
        query("{}", &unknown).await,
        Err(crate::read::no_stored_result("r/other.0"))
    );
}

#[tokio::test]
async fn a_runaway_filter_is_stopped_with_a_message() {
    for filter in [
        "repeat(.)",
        "[range(1e12)]",
        "last(range(1e12))",
        "def f: f; f",
        "[limit(1e12; repeat(1))] | length",
    ] {
        let page = query_with(
            &Counted::new("1\n", 64),
            &request(filter),
            SHORT,
            &QueryRunner::default(),
        )
        .await;
        let message = page.expect_err(filter).to_string();
        assert!(
            message.starts_with("The filter ran longer than 0.3 s and was stopped."),
            "{filter}: {message}"
        );
    }
    let page = query_with(
        &Counted::new("1\n", 64),
        &request("def f: 1 + f; f"),
        CAPS,
        &QueryRunner::default(),
    )
    .await;
    let message = page.expect_err("deep").to_string();
    assert!(
        message.starts_with("The filter recursed too deep and was stopped."),
        "{message}"
    );
    // The worker's next query runs as usual.
    assert!(query("1\n", &request(".")).await.is_ok());
}

#[tokio::test]
async fn long_values_are_cut_with_a_marker_and_the_body_is_capped() {
    let long = format!("\"{}\"\n", "x".repeat(30_000));
    let page = query(&long, &request(".")).await.expect("a page");
    let line = page.lines().nth(1).expect("a result");
    assert_eq!(
        line.chars().count(),
        MAX_VALUE_CHARS + line.split('…').nth(1).map_or(0, |m| m.chars().count() + 1)
    );
    assert!(
        line.ends_with("…[value cut at 10,000 of 30,002 chars: narrow the filter to see the rest]"),
        "{line}"
    );
    let many = long.repeat(7);
    let page = query(&many, &request(".")).await.expect("a page");
    assert!(page.starts_with("[handle 'r/c.0': 7 result(s) of filter '.' over 7 JSON value(s); showing results 1-4, output capped]\n"), "{}", &page[..200]);
    assert!(page.ends_with("\n[output capped at 50,000 chars before result 5: call query_tool_result again with offset=4 for the next results]"));
}

#[tokio::test]
async fn errors_on_values_are_noted_and_the_environment_is_not_readable() {
    let page = query("{\"a\":1}\n2\n{\"a\":3}\n", &request(".a")).await;
    assert_eq!(
        page.expect("a page"),
        "[handle 'r/c.0': 2 result(s) of filter '.a' over 3 JSON value(s); showing results \
         1-2]\n1\n3\n[the filter raised an error on 1 JSON value(s); the first, on value 2: \
         cannot index 2 with \"a\"]"
    );
    let page = query("1", &request("env")).await.expect("a page");
    assert!(
        page.contains("this filter is not available in query_tool_result"),
        "{page}"
    );
}

#[tokio::test]
async fn json_nested_deeper_than_jq_allows_is_refused_not_parsed() {
    let deep = format!(
        "{}{}\n",
        "[".repeat(MAX_DEPTH_FOR_TEST + 1),
        "]".repeat(MAX_DEPTH_FOR_TEST + 1)
    );
    let message = query(&deep, &request(".")).await.expect_err("too deep");
    assert!(
        message.contains("nested deeper than 10000 levels"),
        "{}",
        &message[..200]
    );
    let fine = format!(
        "{}{}\n",
        "[".repeat(MAX_DEPTH_FOR_TEST),
        "]".repeat(MAX_DEPTH_FOR_TEST)
    );
    let page = query(&fine, &request("[..] | length"))
        .await
        .expect("a page");
    assert!(page.ends_with("]\n10000"), "{page}");
}

const MAX_DEPTH_FOR_TEST: usize = engine::MAX_DEPTH;

#[tokio::test]
async fn bad_arguments_are_refused() {
    for (r, want) in [
        (
            QueryRequest {
                offset: -1,
                ..request(".")
            },
            "`offset` must be >= 0.",
        ),
        (
            QueryRequest {
                limit: 0,
                ..request(".")
            },
            "`limit` must be >= 1.",
        ),
        (
            request(" "),
            "`filter` must not be empty: use `.` for every value as it is.",
        ),
    ] {
        assert_eq!(query("1", &r).await, Err(want.to_owned()));
    }
}
