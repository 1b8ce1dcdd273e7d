//! Spill store throughput and page latency, through `file://` and an S3-compatible server.
//!
//! ```text
//! deploy/seaweedfs.sh start && source .deploy/seaweedfs.env
//! cargo bench --bench store            # prints a markdown table
//! ```
//! Without `OVERSPILL_TEST_S3_URL` only the `file://` rows are measured. Under `cargo test`
//! (no `--bench` argument) it runs one small round as a smoke test.

use std::time::{Duration, Instant};

use bytes::Bytes;
use overspill::limits::SpillStore;
use overspill::read::{ReadRequest, read_tool_result};
use overspill::store::Store;

const MB: usize = 1_000_000;

/// Text of about `size` bytes in lines of ~80 bytes, like a log or a JSON-lines dump.
fn payload(size: usize) -> Bytes {
    let mut out = String::with_capacity(size + 100);
    let mut i = 0u64;
    while out.len() < size {
        out.push_str(&format!(
            "{i:09} level=info component=indexer msg=\"processed batch\" items={} ok=true\n",
            i % 977
        ));
        i += 1;
    }
    out.truncate(size);
    Bytes::from(out)
}

fn mbps(bytes: usize, took: Duration) -> f64 {
    bytes as f64 / MB as f64 / took.as_secs_f64()
}

fn best<T>(runs: usize, mut f: impl FnMut() -> (Duration, T)) -> Duration {
    (0..runs).map(|_| f().0).min().unwrap_or_default()
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    let i = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples.get(i).copied().unwrap_or_default()
}

struct Row {
    store: &'static str,
    size: usize,
    spill: f64,
    read: f64,
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let dir = tempfile::tempdir().expect("a temp dir");
    let file_url = format!("file://{}/spills", dir.path().display());
    let mut stores: Vec<(&'static str, String)> = vec![("file://", file_url)];
    match std::env::var("OVERSPILL_TEST_S3_URL") {
        Ok(base) => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos();
            stores.push((
                "S3 (SeaweedFS)",
                format!("{}/bench-{nanos}", base.trim_end_matches('/')),
            ));
        }
        Err(_) => eprintln!(
            "OVERSPILL_TEST_S3_URL is not set: measuring file:// only \
             (deploy/seaweedfs.sh start && source .deploy/seaweedfs.env)"
        ),
    }
    let sizes: &[usize] = if full { &[MB, 100 * MB] } else { &[MB] };
    let mut rows = Vec::new();
    let mut pages = Vec::new();
    for (name, url) in &stores {
        let store = Store::open(Some(url)).expect("the store opens");
        for &size in sizes {
            let data = payload(size);
            let runs = if size >= 100 * MB { 3 } else { 10 };
            let handle = "bench-run/call-1.0";
            let spill = best(runs, || {
                let start = Instant::now();
                runtime
                    .block_on(store.write(handle, data.clone()))
                    .expect("spill");
                (start.elapsed(), ())
            });
            let read = best(runs, || {
                let start = Instant::now();
                let got = runtime.block_on(store.read(handle)).expect("read back");
                assert_eq!(got.len(), data.len());
                (start.elapsed(), ())
            });
            rows.push(Row {
                store: name,
                size,
                spill: mbps(size, spill),
                read: mbps(size, read),
            });
            {
                pages.push((
                    *name,
                    size,
                    page_latency(&runtime, &store, url, handle, &data),
                ));
            }
        }
    }
    // Leave nothing behind: a cutoff past every write (S3 keeps whole seconds, rounded down).
    let cutoff = std::time::SystemTime::now() + Duration::from_secs(1);
    for (_, url) in &stores {
        let store = Store::open(Some(url)).expect("the store opens");
        runtime.block_on(store.gc(cutoff, false)).expect("clean-up");
    }
    println!("\n| store | payload | spill (write + index) MB/s | read-back MB/s |");
    println!("|---|---:|---:|---:|");
    for r in &rows {
        println!(
            "| {} | {} MB | {:.0} | {:.0} |",
            r.store,
            r.size / MB,
            r.spill,
            r.read
        );
    }
    println!(
        "\n| store | spill | page by offset, same store after the spill (p50 / p95) | first page, fresh process-like store | later pages, fresh store (p50) | pattern page (full scan) |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (name, size, p) in pages {
        println!(
            "| {name} | {} MB | {:.2} / {:.2} ms | {:.1} ms | {:.2} ms | {:.0} ms |",
            size / MB,
            ms(p.warm_p50),
            ms(p.warm_p95),
            ms(p.cold_first),
            ms(p.cold_p50),
            ms(p.pattern),
        );
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

struct Pages {
    warm_p50: Duration,
    warm_p95: Duration,
    cold_first: Duration,
    cold_p50: Duration,
    pattern: Duration,
}

/// Pages of 200 lines at spread offsets, through read_tool_result.
fn page_latency(
    runtime: &tokio::runtime::Runtime,
    store: &Store,
    url: &str,
    handle: &str,
    data: &Bytes,
) -> Pages {
    let lines = data.iter().filter(|&&b| b == b'\n').count() as i64;
    let request = |i: i64| ReadRequest {
        handle: handle.into(),
        offset: (i * 7_919 * 131) % lines.max(1),
        limit: 200,
        ..Default::default()
    };
    let sample = |store: &Store, n: i64| -> Vec<Duration> {
        (0..n)
            .map(|i| {
                let start = Instant::now();
                let page = runtime
                    .block_on(read_tool_result(store, &request(i)))
                    .expect("a page");
                assert!(page.starts_with("[handle "));
                start.elapsed()
            })
            .collect()
    };
    let mut warm = sample(store, 50);
    let cold_store = Store::open(Some(url)).expect("the store opens");
    let cold_first = sample(&cold_store, 1)[0];
    let mut cold = sample(&cold_store, 30);
    let pattern = {
        let start = Instant::now();
        runtime
            .block_on(read_tool_result(
                store,
                &ReadRequest {
                    handle: handle.into(),
                    pattern: Some("items=976 ".into()),
                    ..Default::default()
                },
            ))
            .expect("a pattern page");
        start.elapsed()
    };
    Pages {
        warm_p50: percentile(&mut warm, 0.5),
        warm_p95: percentile(&mut warm, 0.95),
        cold_first,
        cold_p50: percentile(&mut cold, 0.5),
        pattern,
    }
}
