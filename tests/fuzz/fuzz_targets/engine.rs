//! Truncation, read-back and config parsing must never panic, whatever the input.
//!
//! Run it on stable Rust for a minute (libFuzzer prints its run count, and stops at the first
//! panic with the input that caused it, under `tests/fuzz/artifacts/engine/`):
//! `cargo install cargo-fuzz && cargo fuzz run --fuzz-dir tests/fuzz --sanitizer none engine -- -max_total_time=60`
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use overspill::limits::{Harness, Limits, TruncationStrategy, truncate::truncate_text};
use overspill::read::line_index::{Header, Index};
use overspill::read::{GrepRequest, ReadRequest, ReadUnit, grep_page, read_page};

#[derive(Debug, Arbitrary)]
struct Input<'a> {
    text: &'a str,
    data: &'a [u8],
    config: &'a str,
    max_chars: i64,
    keep_tail_lines: usize,
    strategy: u8,
    offset: i64,
    limit: i64,
    from_end: bool,
    pattern: Option<&'a str>,
    /// Which release, unit and grep context: the low bits pick each.
    variant: u8,
}

fuzz_target!(|input: Input<'_>| {
    let strategy = match input.strategy % 3 {
        0 => TruncationStrategy::Head,
        1 => TruncationStrategy::Tail,
        _ => TruncationStrategy::HeadTail,
    };
    let harness = Harness::KNOWN[usize::from(input.variant) % Harness::KNOWN.len()];
    let out = truncate_text(input.text, input.max_chars, strategy, input.keep_tail_lines, harness);
    assert!(out.chars().count() as i64 <= input.max_chars.max(0));

    let request = ReadRequest {
        handle: "h".into(),
        offset: input.offset,
        limit: input.limit,
        from_end: input.from_end,
        pattern: input.pattern.map(str::to_owned),
        unit: if input.variant & 4 == 0 { ReadUnit::Lines } else { ReadUnit::Bytes },
        harness: Some(harness),
        read_tool_name: None,
    };
    let _ = read_page(input.data, &request);
    let grep = GrepRequest {
        handle: "h".into(),
        pattern: input.pattern.unwrap_or("a").to_owned(),
        context: i64::from(input.variant >> 3),
        max_matches: input.limit,
        offset: input.offset,
        ..GrepRequest::default()
    };
    let _ = grep_page(input.data, &grep);
    let index = Index::build(input.data);
    let encoded = index.encode("tag").expect("a short tag");
    let header = Header::decode(&encoded, encoded.len() as u64).expect("a built index decodes");
    assert_eq!(header.lines(), index.lines());
    // Any bytes as an index object: refused or decoded, and looked up, never a panic.
    if let Ok(header) = Header::decode(input.data, input.data.len() as u64) {
        let line = input.offset.unsigned_abs() % header.lines().max(1);
        let end = line.saturating_add(input.limit.unsigned_abs());
        let _ = header.locate(input.data, line..end);
    }

    let _ = Limits::from_json(input.config);
});
