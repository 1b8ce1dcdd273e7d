//! Engine benchmarks on the inputs `benches/compare.py` also feeds the Python reference:
//! reduce→truncate and reduce→spill (local `file://` store) on 1 / 10 / 100 MB of log text,
//! json_lines of 100k records, and read_tool_result pages on a 100 MB spill.
//!
//! `cargo bench --bench engine` (criterion); `python3 benches/compare.py` runs this and the
//! reference in one go and prints the ratio table.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use overspill::limits::{
    self, Action, Band, Limits, NoSummarizer, SerializerKind, SpillStore, ToolCall, ToolOutput,
    ToolResult, Truncate,
};
use overspill::read::{self, ReadRequest};
use overspill::store::Store;
use serde_json::{Value, json};

/// The allocator of the `overspill` binary (src/cli/main.rs), so the bench measures what runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const MB: usize = 1 << 20;

/// `size` bytes of log lines, identical to `benches/compare.py`'s `log_text`.
fn log_text(size: usize) -> String {
    let mut out = String::with_capacity(size + 128);
    let mut i = 0u64;
    while out.len() < size {
        out.push_str(&format!(
            "{i:08} INFO request id={i} path=/api/v1/items/{} status=200 latency={}ms\n",
            i % 1000,
            i % 97
        ));
        i += 1;
    }
    out.truncate(size);
    out
}

/// 100k records, identical to `benches/compare.py`'s `records`.
fn records(n: u64) -> Value {
    Value::Array(
        (0..n)
            .map(|i| json!({"id": i, "name": format!("item {i}"), "tags": ["a", "b"], "ok": i % 2 == 0}))
            .collect(),
    )
}

fn call() -> ToolCall {
    ToolCall {
        tool_name: "run_command".into(),
        run_id: Some("bench".into()),
        tool_call_id: Some("call".into()),
        ..ToolCall::default()
    }
}

fn truncate_limits() -> Limits {
    Limits {
        bands: vec![Band {
            over: 10_000,
            action: Action::Truncate(Truncate::default()),
        }],
        ..Limits::default()
    }
}

fn store() -> Store {
    let dir = std::env::temp_dir().join("overspill-bench");
    Store::open(Some(&format!("file://{}", dir.display()))).expect("a local bench store")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn reduce_text(c: &mut Criterion) {
    let rt = runtime();
    let store = store();
    let mut group = c.benchmark_group("reduce");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    for mb in [1, 10, 100] {
        let text = log_text(mb * MB);
        let truncate = truncate_limits();
        // The input is built outside the timed part, as the reference receives its string.
        let input = || ToolResult::bare(ToolOutput::Text(text.clone().into()));
        group.bench_function(BenchmarkId::new("truncate", mb), |b| {
            b.iter_batched(
                input,
                |result| {
                    rt.block_on(limits::reduce(
                        &truncate,
                        &call(),
                        result,
                        &store,
                        &NoSummarizer,
                    ))
                },
                BatchSize::PerIteration,
            )
        });
        let spill = Limits::default();
        group.bench_function(BenchmarkId::new("spill", mb), |b| {
            b.iter_batched(
                input,
                |result| {
                    let reduced = rt.block_on(limits::reduce(
                        &spill,
                        &call(),
                        result,
                        &store,
                        &NoSummarizer,
                    ));
                    assert!(
                        reduced.overflow_handle().is_some(),
                        "the bench spill failed"
                    );
                    reduced
                },
                BatchSize::PerIteration,
            )
        });
    }
    let recs = records(100_000);
    let json_lines = Limits {
        serializer: Some(SerializerKind::JsonLines),
        ..truncate_limits()
    };
    group.bench_function("json_lines_100k", |b| {
        b.iter_batched(
            || ToolResult::bare(ToolOutput::Json(recs.clone())),
            |result| {
                rt.block_on(limits::reduce(
                    &json_lines,
                    &call(),
                    result,
                    &store,
                    &NoSummarizer,
                ))
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

fn read_pages(c: &mut Criterion) {
    let rt = runtime();
    let store = store();
    let handle = rt
        .block_on(store.write("bench/read.0", log_text(100 * MB).into()))
        .expect("the 100 MB spill is written");
    let mut group = c.benchmark_group("read_100mb");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    let by_offset = ReadRequest {
        handle: handle.clone(),
        offset: 500_000,
        limit: 200,
        ..ReadRequest::default()
    };
    group.bench_function("offset_page", |b| {
        b.iter(|| rt.block_on(read::read_tool_result(&store, black_box(&by_offset))))
    });
    let by_pattern = ReadRequest {
        handle,
        pattern: Some("path=/api/v1/items/999 ".into()),
        limit: 200,
        ..ReadRequest::default()
    };
    group.bench_function("pattern_page", |b| {
        b.iter(|| rt.block_on(read::read_tool_result(&store, black_box(&by_pattern))))
    });
    group.finish();
}

criterion_group!(benches, reduce_text, read_pages);
criterion_main!(benches);
