//! Token counting throughput, and what counting costs a reduce. `benches/tokens.py` runs this and
//! OpenAI's `tiktoken` (Python) on the same corpus and vocabulary, and prints both side by side.
//!
//! ```sh
//! cargo bench --bench tokens -- prepare DIR   # DIR/corpus.txt and DIR/{o200k,cl100k}_base.tiktoken
//! cargo bench --bench tokens -- count DIR     # one JSON line per encoding: tokens, MB/s
//! cargo bench --bench tokens -- reduce        # one JSON line per reduce row: median ms
//! ```
//!
//! The `.tiktoken` files are written from the vocabularies compiled into Overspill, so tiktoken
//! counts with exactly those (and checks them against OpenAI's published hashes).

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use base64::Engine as _;
use overspill::limits::{
    self, Action, Band, Limits, NoStore, NoSummarizer, Tokenizer, ToolCall, ToolOutput, ToolResult,
    Truncate,
};
use serde_json::json;

/// The allocator of the `overspill` binary (src/cli/main.rs), so the bench measures what runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const MB: usize = 1 << 20;
const ENCODINGS: [(&str, Tokenizer); 2] = [
    ("o200k_base", Tokenizer::O200kBase),
    ("cl100k_base", Tokenizer::Cl100kBase),
];

/// A deterministic pseudo-random sequence (64-bit LCG), so every run counts the same corpus.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) as usize) % n
    }
}

/// About `MB` bytes of each kind of tool output: log lines, JSON records, source code (this
/// repository's, lines shuffled), English prose (the README's words, reshuffled) and CJK prose.
fn corpus(mb: usize) -> String {
    let mut rng = Lcg(7);
    let size = mb * MB;
    let mut out = String::with_capacity(size * 5 + 1024);
    let start = out.len();
    for i in 0.. {
        if out.len() - start >= size {
            break;
        }
        let _ = writeln!(
            out,
            "2024-05-{:02}T{:02}:{:02}:{:02}Z {} worker={} path=/api/v1/items/{} status={} took={}ms",
            1 + i % 28,
            i % 24,
            i % 60,
            (i * 7) % 60,
            ["INFO", "WARN", "ERROR", "DEBUG"][rng.below(4)],
            rng.below(64),
            rng.below(100_000),
            [200, 201, 404, 500][rng.below(4)],
            rng.below(5_000)
        );
    }
    let start = out.len();
    for i in 0.. {
        if out.len() - start >= size {
            break;
        }
        let record = json!({"id": i, "name": format!("item {}", rng.below(1_000_000)),
            "price": rng.below(100_000) as f64 / 100.0, "tags": ["alpha", "beta"],
            "ok": rng.below(2) == 0, "owner": {"id": rng.below(5_000), "team": "platform"}});
        out.push_str(&record.to_string());
        out.push('\n');
    }
    let sources = [
        include_str!("../src/limits/reduce.rs"),
        include_str!("../src/limits/truncate.rs"),
        include_str!("../src/activities/proto.rs"),
        include_str!("../src/read/offset.rs"),
    ];
    let code: Vec<&str> = sources.iter().flat_map(|s| s.lines()).collect();
    shuffled_into(&mut out, &code, "\n", size, &mut rng);
    let readme = include_str!("../README.md");
    let words: Vec<&str> = readme.split_whitespace().collect();
    shuffled_into(&mut out, &words, " ", size, &mut rng);
    let cjk: Vec<char> = "東京は日本の首都です人工智能的研究正在迅速发展서울은대한민국의수도입니다\
        机器学习模型数据库查询结果错误日志文件系统网络请求用户界面設定変更確認処理完了"
        .chars()
        .collect();
    let start = out.len();
    while out.len() - start < size {
        for _ in 0..40 {
            out.push(cjk[rng.below(cjk.len())]);
        }
        out.push_str(["。", "，", "、", "\n"][rng.below(4)]);
    }
    out
}

/// Append items picked at random, joined by `separator`, until `size` bytes were added.
fn shuffled_into(out: &mut String, items: &[&str], separator: &str, size: usize, rng: &mut Lcg) {
    let start = out.len();
    while out.len() - start < size {
        out.push_str(items[rng.below(items.len())]);
        out.push_str(separator);
    }
}

/// `size` bytes of the log text `benches/engine.rs` reduces.
fn log_text(size: usize) -> String {
    let mut out = String::with_capacity(size + 128);
    let mut i = 0u64;
    while out.len() < size {
        let _ = writeln!(
            out,
            "{i:08} INFO request id={i} path=/api/v1/items/{} status=200 latency={}ms",
            i % 1000,
            i % 97
        );
        i += 1;
    }
    out.truncate(size);
    out
}

/// The median of `runs` timings of `run`, in seconds; `setup` builds each run's input untimed.
fn median_secs<T>(runs: usize, mut setup: impl FnMut() -> T, mut run: impl FnMut(T)) -> f64 {
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let input = setup();
            let start = Instant::now();
            run(input);
            start.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[runs / 2]
}

/// The vocabulary compiled into Overspill, in tiktoken's file format: `base64(token) rank`.
fn tiktoken_file(name: &str) -> String {
    let Some(bpe) = tiktoken::get_encoding(name) else {
        panic!("{name} is compiled in");
    };
    let mut out = String::new();
    for rank in 0..bpe.vocab_size() as u32 {
        let encoded = base64::engine::general_purpose::STANDARD.encode(bpe.decode(&[rank]));
        let _ = writeln!(out, "{encoded} {rank}");
    }
    out
}

fn prepare(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("corpus.txt"), corpus(4))?;
    for (name, _) in ENCODINGS {
        std::fs::write(dir.join(format!("{name}.tiktoken")), tiktoken_file(name))?;
    }
    Ok(())
}

fn count(dir: &Path) -> std::io::Result<()> {
    let text = std::fs::read_to_string(dir.join("corpus.txt"))?;
    for (name, tokenizer) in ENCODINGS {
        let start = Instant::now();
        let tokens = tokenizer.count("load the vocabulary");
        let load_ms = start.elapsed().as_secs_f64() * 1e3;
        let tokens_total = tokenizer.count(&text);
        let secs = median_secs(
            5,
            || (),
            |()| {
                black_box(tokenizer.count(black_box(&text)));
            },
        );
        let mb_per_s = text.len() as f64 / 1e6 / secs;
        println!(
            "{}",
            json!({"encoding": name, "bytes": text.len(), "tokens": tokens_total,
                "mb_per_s": mb_per_s, "load_ms": load_ms, "probe": tokens})
        );
    }
    Ok(())
}

fn limits(over_tokens: bool, tokenizer: Tokenizer, over: i64, truncate: Truncate) -> Limits {
    Limits {
        bands: vec![Band {
            over,
            action: Action::Truncate(truncate),
        }],
        over_tokens,
        tokenizer: Some(tokenizer),
        ..Limits::default()
    }
}

fn reduce_rows() {
    let call = ToolCall {
        tool_name: "run_command".into(),
        ..ToolCall::default()
    };
    let text = log_text(100 * MB);
    let bisect = Truncate {
        max_tokens: Some(4_000),
        ..Truncate::default()
    };
    let rows = [
        (
            "chars, over 10,000",
            limits(false, Tokenizer::CharsDiv4, 10_000, Truncate::default()),
        ),
        (
            "chars_div_4 tokens, over 10,000",
            limits(true, Tokenizer::CharsDiv4, 10_000, Truncate::default()),
        ),
        (
            "o200k_base tokens, over 10,000 (decided by length)",
            limits(true, Tokenizer::O200kBase, 10_000, Truncate::default()),
        ),
        (
            "o200k_base tokens, over 5,000,000 (counts up to it)",
            limits(true, Tokenizer::O200kBase, 5_000_000, Truncate::default()),
        ),
        (
            "o200k_base tokens, over 10,000, max_tokens 4,000",
            limits(true, Tokenizer::O200kBase, 10_000, bisect),
        ),
    ];
    for (name, limits) in rows {
        let input = || ToolResult::bare(ToolOutput::Text(text.clone().into()));
        let ms = 1e3
            * median_secs(5, input, |result| {
                let reduced = futures::executor::block_on(limits::reduce(
                    &limits,
                    &call,
                    result,
                    &NoStore,
                    &NoSummarizer,
                ));
                assert_eq!(reduced.kind, limits::ReductionKind::Truncated, "{name}");
            });
        println!("{}", json!({"reduce_100mb": name, "ms": ms}));
    }
    let ms = 1e3
        * median_secs(
            3,
            || (),
            |()| {
                black_box(Tokenizer::O200kBase.count(&text));
            },
        );
    println!(
        "{}",
        json!({"reduce_100mb": "(a full o200k_base count of the same 100 MB)", "ms": ms})
    );
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["prepare", dir] => prepare(Path::new(dir)),
        ["count", dir] => count(Path::new(dir)),
        ["reduce"] => {
            reduce_rows();
            Ok(())
        }
        _ => {
            eprintln!("usage: tokens (prepare DIR | count DIR | reduce)");
            std::process::exit(2)
        }
    }
}
