//! Paging against the reference's rules, written the slow, obvious way, and against an in-memory
//! reader that counts what a page reads.

use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use proptest::prelude::*;

use super::line_index::{CHECKPOINT_BYTES, Header, IndexBuilder};
use super::request::PAGE_BYTES_CAP;
use super::*;
use crate::limits::Harness;

/// Python's `str.splitlines()` over the lossy decoding.
fn py_splitlines(data: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(data);
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                lines.push(std::mem::take(&mut line));
            }
            '\n' | '\x0b' | '\x0c' | '\x1c' | '\x1d' | '\x1e' | '\u{85}' | '\u{2028}'
            | '\u{2029}' => lines.push(std::mem::take(&mut line)),
            c => line.push(c),
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// The reference's `_read_slice`, step by step, for the handle `h`.
fn reference_page(data: &[u8], request: &ReadRequest) -> Result<String, ReadError> {
    let limit = request.checked_limit()? as usize;
    let offset = request.offset as usize;
    let mut lines = py_splitlines(data);
    if let Some(pattern) = &request.pattern {
        lines.retain(|l| l.contains(pattern.as_str()));
    }
    let total = lines.len();
    let window = if request.from_end {
        let end = total.saturating_sub(offset);
        &lines[end.saturating_sub(limit)..end]
    } else {
        let start = offset.min(total);
        &lines[start..(start + limit).min(total)]
    };
    let mut body = window.join("\n");
    let capped = body.chars().count() > MAX_READ_CHARS;
    if capped {
        body = body.chars().take(MAX_READ_CHARS).collect();
    }
    let digits = total.to_string();
    let mut grouped = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(d);
    }
    let capped = if capped { ", output capped" } else { "" };
    let header = format!(
        "[handle 'h': {grouped} matching line(s); showing {}{capped}]",
        window.len()
    );
    Ok(match body.is_empty() {
        true => header,
        false => format!("{header}\n{body}"),
    })
}

pub(in crate::read) fn payload() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\r".to_vec()),
        Just("\u{85}\u{2028}\u{2029}\x0b\x1d".as_bytes().to_vec()),
        Just(vec![0xe2, 0x80]),
        Just(vec![0xc2]),
        Just(vec![0xff]),
        "[a-z ]{0,12}".prop_map(String::into_bytes),
        "\\PC{0,6}".prop_map(String::into_bytes),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

fn request() -> impl Strategy<Value = ReadRequest> {
    let pattern = prop_oneof![
        Just(None),
        Just(Some(String::new())),
        "[a-c]{1,2}|\u{fffd}|\n|a\nb|\u{85}|\r|\u{2028}z|b\u{fffd}".prop_map(Some),
    ];
    let harness = prop_oneof![Just(Harness::V0_62), Just(Harness::V0_75)];
    let unit = prop_oneof![4 => Just(ReadUnit::Lines), 1 => Just(ReadUnit::Bytes)];
    (0i64..12, 1i64..8, any::<bool>(), pattern, harness, unit).prop_map(
        |(offset, limit, from_end, pattern, harness, unit)| ReadRequest {
            handle: "h".into(),
            offset,
            limit,
            from_end,
            // A pattern with bytes is a retry, checked by the reference rules' test.
            pattern: pattern.filter(|_| unit == ReadUnit::Lines),
            unit,
            harness: Some(harness),
            read_tool_name: None,
        },
    )
}

static TAGS: AtomicU64 = AtomicU64::new(1);

/// An object held by [`MemoryReader`], with a tag that changes on every write.
#[derive(Clone)]
struct Object {
    bytes: Bytes,
    tag: String,
}

impl Object {
    fn new(bytes: impl Into<Bytes>) -> Self {
        Self {
            bytes: bytes.into(),
            tag: format!("\"{}\"", TAGS.fetch_add(1, Ordering::Relaxed)),
        }
    }

    fn version(&self) -> Version {
        Version {
            size: self.bytes.len() as u64,
            tag: Some(self.tag.clone()),
        }
    }
}

/// A spill in memory that counts the bytes each page reads.
pub(in crate::read) struct MemoryReader {
    payload: Mutex<Object>,
    index: Mutex<Option<Object>>,
    chunk_bytes: usize,
    cache: Option<IndexCache>,
    /// Versions carry tags (as every object_store backend gives them).
    tagged: bool,
    /// Reads of the index from this offset on time out (a frozen store).
    index_frozen_from: AtomicU64,
    /// Bytes read of the payload and of the index.
    read: [AtomicU64; 2],
    /// Calls made, and round trips: the longest chain of calls each waiting for the one before.
    calls: AtomicU64,
    rounds: AtomicU64,
}

impl MemoryReader {
    pub(in crate::read) fn new(payload: impl Into<Bytes>) -> Self {
        Self {
            payload: Mutex::new(Object::new(payload)),
            index: Mutex::new(None),
            chunk_bytes: CHUNK_BYTES,
            cache: None,
            tagged: true,
            index_frozen_from: AtomicU64::new(u64::MAX),
            read: Default::default(),
            calls: AtomicU64::new(0),
            rounds: AtomicU64::new(0),
        }
    }

    /// Store an index of the payload built with this spacing, bound to the payload's tag.
    fn indexed(self, checkpoint_bytes: u32) -> Self {
        let payload = self.payload.lock().unwrap().clone();
        let mut builder = IndexBuilder::with_spacing(checkpoint_bytes);
        builder.feed(&payload.bytes);
        let encoded = builder.finish().encode(&payload.tag).unwrap();
        *self.index.lock().unwrap() = Some(Object::new(encoded));
        self
    }

    fn cached(self) -> Self {
        Self {
            cache: Some(IndexCache::new(32 << 20)),
            ..self
        }
    }

    pub(in crate::read) fn chunked(self, chunk_bytes: usize) -> Self {
        Self {
            chunk_bytes,
            ..self
        }
    }

    /// A store whose reads of the index time out.
    fn frozen_index(self) -> Self {
        self.freeze_index_from(0);
        self
    }

    /// Make reads of the index from `at` on time out (`u64::MAX`: none).
    fn freeze_index_from(&self, at: u64) {
        self.index_frozen_from.store(at, Ordering::Relaxed);
    }

    /// A store that keeps no tags: nothing binds an index to a payload.
    fn untagged(self) -> Self {
        Self {
            tagged: false,
            ..self
        }
    }

    fn version(&self, object: &Object) -> Version {
        Version {
            tag: object.version().tag.filter(|_| self.tagged),
            ..object.version()
        }
    }

    /// Replace the payload, leaving the index as it was.
    fn overwrite(&self, payload: impl Into<Bytes>) {
        *self.payload.lock().unwrap() = Object::new(payload);
    }

    fn index_object(&self) -> Option<Bytes> {
        self.index.lock().unwrap().as_ref().map(|o| o.bytes.clone())
    }

    fn set_index(&self, index: impl Into<Bytes>) {
        *self.index.lock().unwrap() = Some(Object::new(index));
    }

    /// Bytes read so far of the payload and of the index; resets the counts.
    fn take_reads(&self) -> [u64; 2] {
        self.read.each_ref().map(|n| n.swap(0, Ordering::Relaxed))
    }

    /// Calls and round trips so far; resets the counts.
    fn take_trips(&self) -> [u64; 2] {
        [&self.calls, &self.rounds].map(|n| n.swap(0, Ordering::Relaxed))
    }

    /// One call to the store: a round trip after those finished before it started. Calls made
    /// at once (each yields before it finishes) share their round.
    async fn round_trip(&self) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let after = self.rounds.load(Ordering::Relaxed);
        tokio::task::yield_now().await;
        self.rounds.fetch_max(after + 1, Ordering::Relaxed);
    }
}

impl SpillReader for MemoryReader {
    async fn head(&self, _handle: &str) -> Result<Version, StoreError> {
        self.round_trip().await;
        Ok(self.version(&self.payload.lock().unwrap()))
    }

    async fn fetch(
        &self,
        handle: &str,
        part: Part,
        range: Range<u64>,
    ) -> Result<Fetched, StoreError> {
        self.round_trip().await;
        if part == Part::Index && range.start >= self.index_frozen_from.load(Ordering::Relaxed) {
            return Err(StoreError::Timeout(std::time::Duration::from_secs(5)));
        }
        let object = match part {
            Part::Payload => Some(self.payload.lock().unwrap().clone()),
            Part::Index => self.index.lock().unwrap().clone(),
        };
        let object = object.ok_or_else(|| StoreError::NotFound {
            handle: handle.into(),
        })?;
        let size = object.bytes.len() as u64;
        if range.start >= size {
            return Err(StoreError::Backend("range starts past the end".into()));
        }
        let bytes = object
            .bytes
            .slice(range.start as usize..range.end.min(size) as usize);
        self.read[part as usize].fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(Fetched {
            bytes,
            version: self.version(&object),
        })
    }

    async fn put_index(&self, _handle: &str, index: Bytes) -> Result<(), StoreError> {
        *self.index.lock().unwrap() = Some(Object::new(index));
        Ok(())
    }

    fn index_cache(&self) -> Option<&IndexCache> {
        self.cache.as_ref()
    }

    fn chunk_bytes(&self) -> usize {
        self.chunk_bytes
    }
}

pub(in crate::read) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime")
}

fn page(reader: &MemoryReader, request: &ReadRequest) -> String {
    runtime()
        .block_on(read_tool_result(reader, request))
        .expect("a page")
}

fn at(offset: i64, limit: i64) -> ReadRequest {
    ReadRequest {
        handle: "h".into(),
        offset,
        limit,
        ..ReadRequest::default()
    }
}

#[test]
fn bad_arguments_are_model_retries() {
    let bad_offset = at(-1, 1);
    assert_eq!(
        read_page(b"", &bad_offset),
        Err(ReadError::ModelRetry("`offset` must be >= 0."))
    );
    assert_eq!(
        read_page(b"", &at(0, 0)),
        Err(ReadError::ModelRetry("`limit` must be >= 1."))
    );
}

#[test]
fn body_is_capped_at_fifty_thousand_chars() {
    let data = "é".repeat(60_000);
    let old = ReadRequest {
        harness: Some(Harness::V0_62),
        ..at(0, 10)
    };
    let out = read_page(data.as_bytes(), &old).unwrap();
    assert!(out.starts_with("[handle 'h': 1 matching line(s); showing 1, output capped]\n"));
    assert_eq!(
        out.split_once('\n').map(|(_, b)| b.chars().count()),
        Some(MAX_READ_CHARS)
    );
    // 0.75 cuts the line and says where its rest starts: 50,000 chars of two bytes each.
    let out = read_page(data.as_bytes(), &at(0, 10)).unwrap();
    assert!(out.starts_with(
        "[handle 'h': 1 matching line(s); showing 1, output capped at 50,000 chars; the cut line \
         continues at read_tool_result(handle='h', unit='bytes', offset=100000, limit=50000)]\n"
    ));
}

#[test]
fn byte_pages_slice_the_raw_bytes() {
    let bytes = |offset, limit, from_end| ReadRequest {
        unit: ReadUnit::Bytes,
        from_end,
        ..at(offset, limit)
    };
    let data = "aé\nb".as_bytes();
    assert_eq!(
        read_page(data, &bytes(0, 2, false)).unwrap(),
        "[handle 'h': bytes 0-2 of 5 (end exclusive)]\na\u{fffd}"
    );
    assert_eq!(
        read_page(data, &bytes(1, 2, true)).unwrap(),
        "[handle 'h': bytes 2-4 of 5 (end exclusive)]\n\u{fffd}\n"
    );
    assert_eq!(
        read_page(data, &bytes(9, 2, false)).unwrap(),
        "[handle 'h': bytes 5-5 of 5 (end exclusive)]"
    );
    let with_pattern = ReadRequest {
        pattern: Some(String::new()),
        ..bytes(0, 2, false)
    };
    assert_eq!(
        read_page(data, &with_pattern),
        Err(ReadError::ModelRetry(
            "`pattern` filters lines, so it cannot be combined with `unit='bytes'`."
        ))
    );
    // A page of bytes is one ranged read of just those bytes.
    let reader = MemoryReader::new(vec![b'x'; 1_000_000]);
    page(&reader, &bytes(500_000, 100_000, false));
    assert_eq!(reader.take_reads(), [50_000, 0]);
}

proptest! {
    #[test]
    fn lines_follow_python_splitlines(data in payload()) {
        let ours: Vec<String> = split_lines(&data)
            .map(|r| String::from_utf8_lossy(&data[r]).into_owned())
            .collect();
        prop_assert_eq!(ours, py_splitlines(&data));
    }

    /// 0.62's pages (0.75's are checked against the reference's own in `tests/golden/`).
    #[test]
    fn pages_follow_the_reference_rules(data in payload(), request in request()) {
        let request = ReadRequest { harness: Some(Harness::V0_62), unit: ReadUnit::Lines, ..request };
        prop_assert_eq!(read_page(&data, &request), reference_page(&data, &request));
    }

    #[test]
    fn streamed_and_indexed_pages_equal_pages_in_memory(
        data in payload(),
        request in request(),
        chunk_bytes in 1usize..12,
        checkpoint_bytes in 1u32..40,
    ) {
        let reader = MemoryReader::new(data.clone())
            .indexed(checkpoint_bytes)
            .chunked(chunk_bytes);
        prop_assert_eq!(page(&reader, &request), read_page(&data, &request).unwrap());
    }

    #[test]
    fn pattern_pages_find_matches_across_chunk_boundaries(
        data in prop::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(0xff), Just(b'\r'), Just(b'\n')], 0..300),
        pattern in "[ab]{1,4}|b\u{fffd}a?",
        chunk_bytes in 1usize..7,
        offset in 0i64..4,
        from_end in any::<bool>(),
    ) {
        let request = ReadRequest { pattern: Some(pattern), from_end, ..at(offset, 3) };
        let reader = MemoryReader::new(data.clone()).chunked(chunk_bytes);
        prop_assert_eq!(page(&reader, &request), read_page(&data, &request).unwrap());
    }

    #[test]
    fn an_index_built_from_streamed_chunks_is_the_index_of_the_whole(
        data in payload(),
        chunk_bytes in 1usize..9,
    ) {
        let reader = MemoryReader::new(data.clone()).chunked(chunk_bytes);
        let version = runtime().block_on(reader.head("h")).unwrap();
        let streamed = runtime()
            .block_on(source::stream_lines(&reader, "h", &version, 0, IndexBuilder::new()))
            .unwrap();
        prop_assert_eq!(streamed.finish(), line_index::Index::build(&data));
    }
}

/// `n` lines: every 1,000th is long and says `needle`, the others are short or empty, with all
/// kinds of line breaks.
fn mixed_lines(n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..n {
        match i % 7 {
            _ if i % 1_000 == 999 => {
                out.extend(format!("{} needle {i}", "é".repeat(3_000)).bytes())
            }
            0 => out.extend(format!("line {i}").bytes()),
            1 => {}
            2 => out.extend(b"x"),
            3 => out.extend("ünïcode \u{2028} ".bytes()),
            _ => out.extend(format!("{i:08} INFO request ok").bytes()),
        }
        let breaks: [&[u8]; 5] = [b"\n", b"\r\n", b"\r", "\u{85}".as_bytes(), b"\x1e"];
        out.extend(breaks[i % 5]);
    }
    out
}

#[test]
fn large_spills_page_alike_through_every_path() {
    let data = mixed_lines(30_000);
    assert!(data.len() as u64 > line_index::MIN_INDEXED_BYTES);
    let requests = [
        at(0, 200),
        at(12_345, 1_000),
        at(29_990, 50),
        ReadRequest {
            from_end: true,
            ..at(17, 300)
        },
        ReadRequest {
            pattern: Some("needle".into()),
            ..at(3, 5)
        },
        ReadRequest {
            pattern: Some("needle".into()),
            from_end: true,
            ..at(1, 4)
        },
        ReadRequest {
            pattern: Some("INFO".into()),
            from_end: true,
            ..at(100, 1_000)
        },
        ReadRequest {
            pattern: Some("INFO".into()),
            ..at(9_000, 20)
        },
        ReadRequest {
            pattern: Some("x".into()),
            ..at(2_000, 30)
        },
        ReadRequest {
            pattern: Some("\u{2028}".into()),
            ..at(0, 5)
        },
        ReadRequest {
            pattern: Some("é n".into()),
            ..at(0, 2)
        },
    ];
    // Indexed at write time; no index at all (rebuilt from small chunks); a foreign index.
    let stored = MemoryReader::new(data.clone()).indexed(CHECKPOINT_BYTES);
    let rebuilt = MemoryReader::new(data.clone()).chunked(4_099);
    let foreign = MemoryReader::new(data.clone()).chunked(70_001);
    foreign.set_index(vec![7u8; 1 << 20]);
    for request in &requests {
        let expected = reference_page(&data, request).unwrap();
        assert_eq!(read_page(&data, request).unwrap(), expected, "{request:?}");
        for reader in [&stored, &rebuilt, &foreign] {
            assert_eq!(page(reader, request), expected, "{request:?}");
        }
    }
    // The rebuilt index was stored, bound to the payload, in the current format.
    for reader in [&rebuilt, &foreign] {
        let index = reader.index_object().expect("the rebuilt index is stored");
        let header = Header::decode(&index, index.len() as u64).expect("a valid index");
        assert!(header.describes(&runtime().block_on(reader.head("h")).unwrap()));
    }
}

/// 100,000 short lines, 60 % of them holding `x`, ended by every kind of break: a match every
/// few bytes.
pub(in crate::read) fn dense_payload() -> Vec<u8> {
    let breaks: [&[u8]; 4] = [b"\n", b"\r\n", "\u{2028}".as_bytes(), b"\x0b"];
    let lines = ["x", "ax", "b", "", "xx x"];
    (0..100_000)
        .flat_map(|i| [lines[i % 5].as_bytes(), breaks[i % 4]].concat())
        .collect()
}

/// Dense matches across chunks: pages from the start, from the end and from the middle are the
/// reference's.
#[test]
fn dense_matches_page_alike() {
    let data = dense_payload();
    let chunked = MemoryReader::new(data.clone()).chunked(100_003);
    // Windows of 1,000 matches every 900: one of them holds each span's end.
    let requests = (0..24_000).step_by(900).flat_map(|offset| {
        [false, true].map(|from_end| ReadRequest {
            pattern: Some("x".into()),
            from_end,
            ..at(offset, MAX_READ_LINES)
        })
    });
    for request in requests {
        let expected = reference_page(&data, &request).unwrap();
        assert_eq!(read_page(&data, &request).unwrap(), expected, "{request:?}");
        assert_eq!(page(&chunked, &request), expected, "{request:?}");
    }
}

#[test]
fn a_page_by_offset_reads_only_around_its_lines() {
    // Short lines, with a checkpoint every 32 bytes (an index of 1 MiB); and lines far longer
    // than the checkpoint spacing.
    let short = (b"x\n".repeat(1 << 20), 32);
    let long: Vec<u8> = (0..12)
        .flat_map(|i| {
            [
                format!("{i} ").into_bytes(),
                vec![b'y'; 300_000],
                b"\n".to_vec(),
            ]
            .concat()
        })
        .collect();
    for (data, spacing) in [short, (long, CHECKPOINT_BYTES)] {
        let lines = split_lines(&data).count() as i64;
        let reader = MemoryReader::new(data.clone()).indexed(spacing);
        let index_len = reader.index_object().unwrap().len() as u64;
        for request in [
            at(0, 200),
            at(lines / 2 + 7, 1_000),
            at(lines - 3, 10),
            at(lines / 3, 9),
        ] {
            assert_eq!(page(&reader, &request), read_page(&data, &request).unwrap());
            let [payload, index] = reader.take_reads();
            assert_eq!(index, index_len, "an uncached index is read whole");
            // The page: from the checkpoint before it (less than the spacing), to the first one
            // after it, and within the page's cap.
            let (spacing, line) = (u64::from(spacing), data.len() as u64 / lines as u64);
            let around = 2 * spacing + line * (request.limit as u64 + 1);
            let most = around.min(spacing + PAGE_BYTES_CAP as u64);
            assert!(
                payload <= most,
                "{payload} payload bytes read for {request:?}"
            );
        }
    }
}

#[test]
fn a_page_reads_to_the_next_checkpoint_after_it() {
    // Lines of 200 bytes: a checkpoint every 64 KiB (328 lines).
    let data: Vec<u8> = (0..20_000)
        .flat_map(|i| format!("{i:>199}\n").into_bytes())
        .collect();
    let reader = MemoryReader::new(data.clone())
        .indexed(CHECKPOINT_BYTES)
        .cached();
    page(&reader, &at(0, 1));
    // Pages in the middle, through the cached index.
    for offset in (2_100..3_896).step_by(97) {
        reader.take_reads();
        let request = at(offset, 200);
        assert_eq!(page(&reader, &request), read_page(&data, &request).unwrap());
        // At most `B` before the page, the page's 40 KB, and at most `B` after it.
        let [payload, index] = reader.take_reads();
        assert_eq!(index, 0, "a cached index is read whole");
        let most = 2 * u64::from(CHECKPOINT_BYTES) + 200 * 200;
        assert!(payload <= most, "{payload} payload bytes read at {offset}");
    }
}

#[test]
fn a_page_of_one_byte_chars_is_one_read_of_what_it_shows() {
    // Lines of 1,000 bytes: a 200-line page shows 50,000 chars of its 200 KB.
    let data: Vec<u8> = (0..6_000)
        .flat_map(|i| format!("{i:>999}\n").into_bytes())
        .collect();
    let reader = MemoryReader::new(data.clone())
        .indexed(CHECKPOINT_BYTES)
        .cached();
    page(&reader, &at(0, 1));
    for offset in (300..5_800).step_by(311) {
        reader.take_trips();
        reader.take_reads();
        let request = at(offset, 200);
        assert_eq!(page(&reader, &request), read_page(&data, &request).unwrap());
        let [payload, _] = reader.take_reads();
        assert_eq!(reader.take_trips(), [1, 1], "one read at {offset}");
        let most = u64::from(CHECKPOINT_BYTES) + PAGE_BYTES_CAP as u64;
        assert!(payload <= most, "{payload} payload bytes read at {offset}");
    }
}

#[test]
fn a_stale_index_is_never_trusted() {
    let v1 = b"one\n".repeat(80_000);
    let v2 = b"2\n22\n".repeat(64_000);
    assert_eq!(v1.len(), v2.len());
    assert!(
        v1.len() as u64 > line_index::MIN_INDEXED_BYTES,
        "rebuilt by streaming"
    );
    let request = at(30_001, 3);
    for reader in [
        MemoryReader::new(v1.clone()).indexed(CHECKPOINT_BYTES),
        MemoryReader::new(v1.clone())
            .indexed(CHECKPOINT_BYTES)
            .cached(),
    ] {
        assert_eq!(page(&reader, &request), read_page(&v1, &request).unwrap());
        // Same size, other lines; the old index (and any cached view of it) stays behind.
        reader.overwrite(v2.clone());
        assert_eq!(page(&reader, &request), read_page(&v2, &request).unwrap());
        assert_eq!(page(&reader, &at(0, 2)), read_page(&v2, &at(0, 2)).unwrap());
    }
}

#[test]
fn a_page_fails_at_once_when_the_index_read_times_out() {
    let reader = MemoryReader::new(b"x\n".repeat(1 << 20))
        .indexed(CHECKPOINT_BYTES)
        .frozen_index();
    let outcome = runtime().block_on(read_tool_result(&reader, &at(600_000, 5)));
    assert!(outcome.is_err(), "{outcome:?}");
    // The opening round, and no rebuild after the timeout.
    assert_eq!(reader.take_trips(), [2, 1]);
}

#[test]
fn a_page_makes_the_fewest_round_trips() {
    let short = b"x\n".repeat(1 << 20);
    // [calls, round trips] of each page in turn.
    let trips = |reader: &MemoryReader, requests: &[ReadRequest]| -> Vec<[u64; 2]> {
        requests
            .iter()
            .map(|request| {
                let data = reader.payload.lock().unwrap().bytes.clone();
                assert_eq!(page(reader, request), read_page(&data, request).unwrap());
                reader.take_trips()
            })
            .collect()
    };
    // A small spill: its version with the (missing) index, then all of it.
    let small = MemoryReader::new(b"x\n".repeat(1_000)).cached();
    assert_eq!(trips(&small, &[at(10, 5), at(20, 5)]), [[3, 2], [1, 1]]);
    // Uncached: the payload's version with the whole index, then the page; a page from the end
    // alike.
    let cold = MemoryReader::new(short.clone()).indexed(CHECKPOINT_BYTES);
    let from_end = ReadRequest {
        from_end: true,
        ..at(600_000, 200)
    };
    let pages = [at(0, 200), at(600_000, 200), from_end];
    assert_eq!(trips(&cold, &pages), [[3, 2], [3, 2], [3, 2]]);
    // Cached: one read a page.
    let warm = MemoryReader::new(short.clone())
        .indexed(CHECKPOINT_BYTES)
        .cached();
    let pages = [at(600_000, 200), at(1_000, 200), at(5, 1)];
    assert_eq!(trips(&warm, &pages), [[3, 2], [1, 1], [1, 1]]);
    // An index larger than its first read (a checkpoint at every line): its rest
    // is one more read, and then a cached spill reads no index bytes.
    let big = || MemoryReader::new(short.clone()).indexed(1);
    assert!(big().index_object().unwrap().len() as u64 > offset::INDEX_READ_BYTES);
    let middle = at(600_000, 200);
    assert_eq!(trips(&big(), std::slice::from_ref(&middle)), [[4, 3]]);
    let pages = [middle, at(900_000, 200), at(300_000, 1_000), at(7, 3)];
    assert_eq!(
        trips(&big().cached(), &pages),
        [[4, 3], [1, 1], [1, 1], [1, 1]]
    );
    // Without its index, a spill is indexed by streaming it once, and the index stored.
    let unindexed = MemoryReader::new(b"x\n".repeat(100_000)).cached();
    let _ = trips(&unindexed, &[at(90_000, 200)]);
    assert!(
        unindexed.index_object().is_some(),
        "the built index is stored"
    );
    assert_eq!(trips(&unindexed, &[at(50_000, 5)]), [[1, 1]]);
}

#[test]
fn an_index_that_puts_a_page_in_no_bytes_is_not_trusted() {
    let reader = MemoryReader::new(b"x\n".repeat(1 << 20)).indexed(CHECKPOINT_BYTES);
    let mut index = reader.index_object().unwrap().to_vec();
    // Every checkpoint starts, it says, past any payload.
    let header = Header::decode(&index, index.len() as u64).unwrap();
    let entries = 46 + header.tag().len();
    for entry in index[entries..].chunks_exact_mut(16) {
        entry[8..].copy_from_slice(&u64::MAX.to_le_bytes());
    }
    reader.set_index(index);
    let v2 = b"y\n".repeat(1 << 20);
    reader.overwrite(v2.clone());
    let request = at(600_000, 3);
    assert_eq!(page(&reader, &request), read_page(&v2, &request).unwrap());
}

#[test]
fn a_store_without_tags_is_paged_but_never_indexed_for_later() {
    let v1 = b"one\n".repeat(80_000);
    assert!(
        v1.len() as u64 > line_index::MIN_INDEXED_BYTES,
        "rebuilt by streaming"
    );
    let reader = MemoryReader::new(v1.clone())
        .indexed(CHECKPOINT_BYTES)
        .untagged()
        .cached();
    let stale = reader.index_object();
    let request = at(40_000, 2);
    assert_eq!(page(&reader, &request), read_page(&v1, &request).unwrap());
    // Nothing can bind an index to the payload: the old one is not trusted, none is stored and
    // nothing is cached, so an overwrite is paged from its own lines.
    assert_eq!(reader.index_object(), stale);
    let v2 = b"2\n22\n".repeat(64_000);
    reader.overwrite(v2.clone());
    assert_eq!(page(&reader, &request), read_page(&v2, &request).unwrap());
}

#[test]
fn an_old_format_index_is_rebuilt() {
    let data = b"alpha beta\n".repeat(30_000);
    assert!(
        data.len() as u64 > line_index::MIN_INDEXED_BYTES,
        "a spill not read whole at once"
    );
    let reader = MemoryReader::new(data.clone());
    // Version 1: one little-endian u64 per line.
    let v1: Vec<u8> = split_lines(&data)
        .flat_map(|r| (r.end as u64 | 1 << 62).to_le_bytes())
        .collect();
    reader.set_index(v1);
    let request = at(9_000, 2);
    assert_eq!(page(&reader, &request), read_page(&data, &request).unwrap());
    let index = reader.index_object().unwrap();
    assert!(Header::decode(&index, index.len() as u64).is_ok());
}

#[test]
fn a_foreign_index_beside_a_small_spill_is_read_only_in_part() {
    let reader = MemoryReader::new(&b"ten bytes\n"[..]);
    reader.set_index(vec![0u8; 64 << 20]);
    assert_eq!(
        page(&reader, &at(0, 5)),
        "[handle 'h': 1 matching line(s); showing 1]\nten bytes"
    );
    let [payload, index] = reader.take_reads();
    assert_eq!(payload, 10);
    assert!(
        index <= offset::INDEX_READ_BYTES,
        "{index} index bytes read"
    );
}

#[test]
fn long_scans_leave_the_async_threads_free() {
    // One thread for every task: if chunks were scanned on it, the ticker could not run.
    let data = b"x\n".repeat(2 << 20);
    let reader = MemoryReader::new(data).chunked(256 << 10);
    let request = ReadRequest {
        pattern: Some("y".into()),
        ..at(0, 1)
    };
    let runtime = runtime();
    let ticks = std::sync::Arc::new(AtomicU64::new(0));
    let counter = ticks.clone();
    let ticker = runtime.spawn(async move {
        loop {
            counter.fetch_add(1, Ordering::Relaxed);
            tokio::task::yield_now().await;
        }
    });
    let out = runtime
        .block_on(read_tool_result(&reader, &request))
        .unwrap();
    ticker.abort();
    assert_eq!(out, "[handle 'h': 0 matching line(s); showing 0]");
    assert!(
        ticks.load(Ordering::Relaxed) >= 16,
        "the ticker ran {} times while 16 chunks were scanned",
        ticks.load(Ordering::Relaxed)
    );
}

#[test]
fn an_index_of_a_gigabyte_stays_under_one_percent() {
    // Built streaming, chunk by chunk, as a rebuild does: 1 GiB of the index's worst realistic
    // case, two-byte lines, never held at once.
    let chunk = b"x\n".repeat(2 << 20);
    let mut builder = IndexBuilder::new();
    for _ in 0..(1 << 30) / chunk.len() {
        builder.feed(&chunk);
    }
    let index = builder.finish();
    assert_eq!(index.lines(), 1 << 29);
    let encoded = index.encode(&"e".repeat(64)).unwrap();
    assert!(
        encoded.len() as u64 * 100 <= 1 << 30,
        "{} bytes of index",
        encoded.len()
    );
}
