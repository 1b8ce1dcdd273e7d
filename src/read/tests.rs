//! Paging against the reference's rules, written the slow, obvious way, and against an in-memory
//! reader that counts what a page reads.

use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use proptest::prelude::*;

use super::index::{CHECKPOINT_BYTES, Header, IndexBuilder, LINES_PER_BLOCK};
use super::request::PAGE_BYTES_CAP;
use super::*;

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
    (0i64..12, 1i64..8, any::<bool>(), pattern).prop_map(|(offset, limit, from_end, pattern)| {
        ReadRequest {
            handle: "h".into(),
            offset,
            limit,
            from_end,
            pattern,
        }
    })
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
    /// Extra yields a read of the payload's first bytes takes (a large object on a remote store).
    head_delay: u32,
    /// Reads of the index from this offset on time out (a frozen store).
    index_frozen_from: AtomicU64,
    /// An index that replaces the stored one once its first bytes have been read.
    index_next: Mutex<Option<Object>>,
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
            head_delay: 0,
            index_frozen_from: AtomicU64::new(u64::MAX),
            index_next: Mutex::new(None),
            read: Default::default(),
            calls: AtomicU64::new(0),
            rounds: AtomicU64::new(0),
        }
    }

    /// Store an index of the payload built with this spacing, bound to the payload's tag.
    fn indexed(self, lines_per_block: u32, checkpoint_bytes: u32) -> Self {
        let payload = self.payload.lock().unwrap().clone();
        let mut builder = IndexBuilder::with_spacing(lines_per_block, checkpoint_bytes);
        builder.feed(&payload.bytes);
        let encoded = builder.finish().encode(&payload.tag).unwrap();
        *self.index.lock().unwrap() = Some(Object::new(encoded));
        self
    }

    fn cached(self) -> Self {
        Self {
            cache: Some(IndexCache::new(8 << 20)),
            ..self
        }
    }

    pub(in crate::read) fn chunked(self, chunk_bytes: usize) -> Self {
        Self {
            chunk_bytes,
            ..self
        }
    }

    /// A store whose reads of the payload's first bytes finish `yields` later than others
    /// (after the index's).
    fn slow_head(self, yields: u32) -> Self {
        Self {
            head_delay: yields,
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

    /// Replace the index with `index` once its first bytes have next been read.
    fn replace_index_after_its_first_bytes(&self, index: impl Into<Bytes>) {
        *self.index_next.lock().unwrap() = Some(Object::new(index));
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
        if part == Part::Payload && range.start == 0 {
            for _ in 0..self.head_delay {
                tokio::task::yield_now().await;
            }
        }
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
        if part == Part::Index
            && range.start == 0
            && let Some(next) = self.index_next.lock().unwrap().take()
        {
            *self.index.lock().unwrap() = Some(next);
        }
        Ok(Fetched {
            bytes,
            version: self.version(&object),
        })
    }

    async fn put_index(&self, _handle: &str, index: Bytes) -> Result<Option<String>, StoreError> {
        let object = Object::new(index);
        let tag = object.tag.clone();
        *self.index.lock().unwrap() = Some(object);
        Ok(Some(tag))
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
    let out = read_page(data.as_bytes(), &at(0, 10)).unwrap();
    assert!(out.starts_with("[handle 'h': 1 matching line(s); showing 1, output capped]\n"));
    assert_eq!(
        out.split_once('\n').map(|(_, b)| b.chars().count()),
        Some(MAX_READ_CHARS)
    );
}

proptest! {
    #[test]
    fn lines_follow_python_splitlines(data in payload()) {
        let ours: Vec<String> = split_lines(&data)
            .map(|r| String::from_utf8_lossy(&data[r]).into_owned())
            .collect();
        prop_assert_eq!(ours, py_splitlines(&data));
    }

    #[test]
    fn pages_follow_the_reference_rules(data in payload(), request in request()) {
        prop_assert_eq!(read_page(&data, &request), reference_page(&data, &request));
    }

    #[test]
    fn a_prefix_that_decides_a_page_renders_it_as_all_its_bytes_do(
        piece in payload(),
        repeat in 1usize..4_000,
        window in (0u64..30, 1u64..1_000),
        cut in 0.0f64..=1.0,
    ) {
        // Long texts of every kind of char and break, cut anywhere and at the shortest prefix
        // that decides the page (by bisection), where a margin too small would show.
        let data = piece.repeat(repeat);
        let total = split_lines(&data).count() as u64;
        let window = window.0.min(total)..(window.0 + window.1).min(total);
        if !window.is_empty() {
            let prefixes = PrefixPages::new(&data, total, window);
            let uniform = (data.len() as f64 * cut) as usize;
            let low = prefixes.shortest_deciding();
            let cuts = (low..data.len().min(low + 8)).chain([uniform]);
            for len in cuts.filter(|&len| prefixes.decides(len)) {
                prop_assert_eq!(prefixes.page(len), prefixes.page(data.len()), "a prefix of {} bytes", len);
            }
        }
    }

    #[test]
    fn streamed_and_indexed_pages_equal_pages_in_memory(
        data in payload(),
        request in request(),
        chunk_bytes in 1usize..12,
        lines_per_block in 1u32..5,
        checkpoint_bytes in 1u32..40,
    ) {
        let reader = MemoryReader::new(data.clone())
            .indexed(lines_per_block, checkpoint_bytes)
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
        prop_assert_eq!(streamed.finish(), index::Index::build(&data));
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
    assert!(data.len() as u64 > index::MIN_INDEXED_BYTES);
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
    let stored = MemoryReader::new(data.clone()).indexed(LINES_PER_BLOCK, CHECKPOINT_BYTES);
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
    // The rebuilt index was stored, bound to the payload, in the version 2 format.
    for reader in [&rebuilt, &foreign] {
        let index = reader.index_object().expect("the rebuilt index is stored");
        let header = Header::decode(&index, index.len() as u64).expect("a valid index");
        assert!(header.describes(&runtime().block_on(reader.head("h")).unwrap()));
    }
}

/// Matches dense enough that whole spans are counted, not searched: pages from the start, from
/// the end and from the middle of a payload of many spans are the reference's.
#[test]
fn dense_matches_page_alike() {
    let breaks: [&[u8]; 4] = [b"\n", b"\r\n", "\u{2028}".as_bytes(), b"\x0b"];
    let lines = ["x", "ax", "b", "", "xx x"];
    let data: Vec<u8> = (0..100_000)
        .flat_map(|i| [lines[i % 5].as_bytes(), breaks[i % 4]].concat())
        .collect();
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
fn a_page_by_offset_reads_only_the_blocks_it_needs() {
    // Short lines, with blocks of 16 lines so that the index outgrows its first read; and lines
    // far longer than the checkpoint spacing.
    let short = (b"x\n".repeat(1 << 20), 16);
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
    for (data, lines_per_block) in [short, (long, LINES_PER_BLOCK)] {
        let lines = split_lines(&data).count() as i64;
        let reader = MemoryReader::new(data.clone()).indexed(lines_per_block, CHECKPOINT_BYTES);
        let index_len = reader.index_object().unwrap().len() as u64;
        for request in [
            at(0, 200),
            at(lines / 2 + 7, 1_000),
            at(lines - 3, 10),
            at(lines / 3, 9),
        ] {
            assert_eq!(page(&reader, &request), read_page(&data, &request).unwrap());
            let [payload, index] = reader.take_reads();
            let entries = 3 * 16 + u64::from(lines_per_block) * 16;
            assert!(
                index <= cache::INDEX_PREFIX_BYTES.min(index_len) + entries,
                "{index} index bytes read for {request:?}"
            );
            // The first bytes read with the index, and the page: from the nearest line start
            // within the checkpoint spacing, to the next block start when the three block
            // entries read hold it, and within the page's cap.
            let block = data.len() as u64 * u64::from(lines_per_block) / lines as u64;
            let cap = u64::from(CHECKPOINT_BYTES) + PAGE_BYTES_CAP as u64;
            let page = match request.limit <= i64::from(lines_per_block) {
                true => (3 * block).min(cap),
                false => cap,
            };
            let most = offset::HEAD_BYTES + page;
            assert!(
                payload <= most,
                "{payload} payload bytes read for {request:?}"
            );
        }
    }
}

#[test]
fn a_page_reads_to_the_next_checkpoint_after_it() {
    // Lines of 200 bytes: 2,048 to a block (400 KB), a checkpoint every 128 KiB (656 lines).
    let data: Vec<u8> = (0..20_000)
        .flat_map(|i| format!("{i:>199}\n").into_bytes())
        .collect();
    let reader = MemoryReader::new(data.clone())
        .indexed(LINES_PER_BLOCK, CHECKPOINT_BYTES)
        .cached();
    page(&reader, &at(0, 1));
    // Pages that end in the block they start in (block 1: lines 2,048 to 4,095), whose
    // checkpoints are read.
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
fn prefixes_around_the_body_cap_decide_pages_as_all_their_bytes_do() {
    // Windows of exactly 50,000 chars or just over: one-byte, multi-byte and invalid chars
    // (`e6 bc` is one U+FFFD), lines ended by every kind of break, some with a cut 4-byte char at
    // their end. Every prefix near the shortest one that decides the page renders it as all the
    // bytes do; a prefix ending inside a break or a char is where a margin too small shows.
    let units: [&[u8]; 5] = [b"a", "漢".as_bytes(), "😀".as_bytes(), b"\xe6\xbc", b"\xff"];
    let breaks: [&[u8]; 4] = [b"\n", b"\r\n", "\u{85}".as_bytes(), "\u{2028}".as_bytes()];
    let tails: [&[u8]; 2] = [b"", b"\xf0\x9f"];
    for (unit, brk, tail) in every_combination(&units, &breaks, &tails) {
        for (chars, lines) in [(16_666, 3u64), (25_000, 2), (49_999, 1), (50_000, 1)] {
            let line = [unit.repeat(chars).as_slice(), tail, brk].concat();
            let data = line.repeat(lines as usize + 2);
            let prefixes = PrefixPages::new(&data, lines + 2, 1..1 + lines);
            let low = prefixes.shortest_deciding();
            assert!(low < data.len(), "all the bytes decide the page");
            let full = prefixes.page(data.len());
            for len in low.saturating_sub(4)..(low + 8).min(data.len()) {
                if prefixes.decides(len) {
                    let at = format!("{unit:x?} {brk:x?} {tail:x?} {chars}×{lines}, prefix {len}");
                    assert_eq!(prefixes.page(len), full, "{at}");
                }
            }
        }
    }
}

/// A page's `window` of the `total` lines of `data`, rendered from prefixes of `data`.
struct PrefixPages<'a> {
    data: &'a [u8],
    total: u64,
    window: Range<u64>,
}

impl<'a> PrefixPages<'a> {
    fn new(data: &'a [u8], total: u64, window: Range<u64>) -> Self {
        Self {
            data,
            total,
            window,
        }
    }

    /// Whether the first `len` bytes decide the page.
    fn decides(&self, len: usize) -> bool {
        let (prefix, shown) = (&self.data[..len], self.window.end - self.window.start);
        request::decided_by(
            prefix,
            lines::window_ranges(prefix, self.window.clone()),
            shown,
        )
    }

    /// The page rendered from the first `len` bytes.
    fn page(&self, len: usize) -> String {
        let lines = lines::window_lines(&self.data[..len], self.window.clone());
        let shown = self.window.end - self.window.start;
        request::render("h", self.total, shown, lines)
    }

    /// The shortest prefix that decides the page, by bisection (all of `data` if none does).
    fn shortest_deciding(&self) -> usize {
        let (mut low, mut high) = (0, self.data.len());
        while low < high {
            let mid = (low + high) / 2;
            match self.decides(mid) {
                true => high = mid,
                false => low = mid + 1,
            }
        }
        low
    }
}

/// Every combination of one item of each of three lists.
fn every_combination<'a, A, B, C>(
    a: &'a [A],
    b: &'a [B],
    c: &'a [C],
) -> impl Iterator<Item = (&'a A, &'a B, &'a C)> {
    a.iter()
        .flat_map(move |x| b.iter().flat_map(move |y| c.iter().map(move |z| (x, y, z))))
}

#[test]
fn a_page_of_one_byte_chars_is_one_read_of_what_it_shows() {
    // Lines of 1,000 bytes: a 200-line page shows 50,000 chars of its 200 KB.
    let data: Vec<u8> = (0..6_000)
        .flat_map(|i| format!("{i:>999}\n").into_bytes())
        .collect();
    let reader = MemoryReader::new(data.clone())
        .indexed(LINES_PER_BLOCK, CHECKPOINT_BYTES)
        .cached();
    page(&reader, &at(0, 1));
    for offset in (300..5_800).step_by(311) {
        reader.take_trips();
        reader.take_reads();
        let request = at(offset, 200);
        assert_eq!(page(&reader, &request), read_page(&data, &request).unwrap());
        let [payload, _] = reader.take_reads();
        assert_eq!(reader.take_trips(), [1, 1], "one read at {offset}");
        let most = u64::from(CHECKPOINT_BYTES) + offset::LIKELY_PAGE_BYTES;
        assert!(payload <= most, "{payload} payload bytes read at {offset}");
    }
}

#[test]
fn a_page_that_needs_more_than_its_first_read_reads_the_rest() {
    // Lines of 1,000 three-byte chars, with CRLF: a page's 50,000 chars take 150 KB.
    let line = format!("{}\r\n", "漢".repeat(1_000));
    let data = line.repeat(2_000).into_bytes();
    let reader = MemoryReader::new(data.clone())
        .indexed(LINES_PER_BLOCK, CHECKPOINT_BYTES)
        .cached();
    page(&reader, &at(0, 1));
    reader.take_trips();
    let first = at(500, 200);
    assert_eq!(page(&reader, &first), read_page(&data, &first).unwrap());
    assert_eq!(
        reader.take_trips(),
        [2, 2],
        "the rest is read after the first bytes"
    );
    // From then on the spill's pages read their whole range at once.
    for request in [at(200, 200), at(1_000, 60), at(1_940, 200), at(1_990, 7)] {
        assert_eq!(page(&reader, &request), read_page(&data, &request).unwrap());
        assert_eq!(reader.take_trips(), [1, 1], "one read for {request:?}");
    }
    // A reader that keeps no spills open pays the second read on every such page.
    let uncached = MemoryReader::new(data.clone()).indexed(LINES_PER_BLOCK, CHECKPOINT_BYTES);
    assert_eq!(page(&uncached, &first), read_page(&data, &first).unwrap());
    assert_eq!(
        uncached.take_trips(),
        [4, 3],
        "head and index, first bytes, rest"
    );
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
    let middle = at(600_000, 200);
    // A small spill: its first bytes are all of it, read at once with the (missing) index.
    let small = MemoryReader::new(b"x\n".repeat(1_000));
    assert_eq!(trips(&small, &[at(10, 5)]), [[2, 1]]);
    let small = MemoryReader::new(b"x\n".repeat(1_000)).cached();
    assert_eq!(trips(&small, &[at(10, 5), at(20, 5)]), [[2, 1], [1, 1]]);
    // A spill of at most `HEAD_BYTES`, indexed: read whole with the index's first bytes, every
    // page of it served from that read.
    let mid = b"x\n".repeat(100_000);
    assert!(mid.len() as u64 <= offset::HEAD_BYTES);
    let mid = || MemoryReader::new(mid.clone()).indexed(LINES_PER_BLOCK, CHECKPOINT_BYTES);
    assert_eq!(trips(&mid(), &[at(90_000, 200)]), [[2, 1]]);
    let pages = [at(90_000, 200), at(50_000, 5)];
    assert_eq!(trips(&mid().cached(), &pages), [[2, 1], [1, 1]]);
    // Without its index, such a spill is paged from that read too, and indexed from it (not
    // read again), the index stored for the next reader; its later pages read their blocks.
    let unindexed = MemoryReader::new(b"x\n".repeat(100_000)).cached();
    assert_eq!(trips(&unindexed, &[at(90_000, 200)]), [[2, 1]]);
    assert!(
        unindexed.index_object().is_some(),
        "the built index is stored"
    );
    unindexed.take_reads();
    assert_eq!(trips(&unindexed, &[at(50_000, 5)]), [[1, 1]]);
    assert!(
        unindexed.take_reads()[0] < 64 << 10,
        "a later page reads its block"
    );
    // Uncached: the payload's first bytes (the first page's lines) with the index's, then the
    // page; no HEAD. A page from line 256 Ki on reads the index alone, then the page.
    let cold = MemoryReader::new(short.clone()).indexed(LINES_PER_BLOCK, CHECKPOINT_BYTES);
    assert_eq!(
        trips(&cold, &[at(0, 200), at(200_000, 200), middle.clone()]),
        [[2, 1], [3, 2], [2, 2]]
    );
    // Counted from the end, a page's first line is known only from the index: both are read.
    let from_end = ReadRequest {
        from_end: true,
        ..middle.clone()
    };
    assert_eq!(trips(&cold, &[from_end]), [[3, 2]]);
    // Cached: one read a page.
    let warm = MemoryReader::new(short.clone())
        .indexed(LINES_PER_BLOCK, CHECKPOINT_BYTES)
        .cached();
    let pages = [middle.clone(), at(1_000, 200), at(5, 1)];
    assert_eq!(trips(&warm, &pages), [[2, 2], [1, 1], [1, 1]]);
    // An index of a few hundred KiB comes whole with the first read.
    let dense = MemoryReader::new(short.clone()).indexed(64, CHECKPOINT_BYTES);
    let dense_len = dense.index_object().unwrap().len() as u64;
    assert!((64 << 10..cache::INDEX_PREFIX_BYTES).contains(&dense_len));
    assert_eq!(trips(&dense, std::slice::from_ref(&middle)), [[2, 2]]);
    // An index beyond its first read, with blocks smaller than this version writes: its entries
    // cost a round trip, until the second page of a cached spill reads it whole.
    let big = || MemoryReader::new(short.clone()).indexed(16, CHECKPOINT_BYTES);
    assert!(big().index_object().unwrap().len() as u64 > cache::INDEX_PREFIX_BYTES);
    assert_eq!(trips(&big(), std::slice::from_ref(&middle)), [[3, 3]]);
    let pages = [middle, at(900_000, 200), at(300_000, 1_000), at(7, 3)];
    assert_eq!(
        trips(&big().cached(), &pages),
        [[3, 3], [2, 2], [1, 1], [1, 1]]
    );
}

#[test]
fn a_stale_index_is_never_trusted() {
    let v1 = b"one\n".repeat(80_000);
    let v2 = b"2\n22\n".repeat(64_000);
    assert_eq!(v1.len(), v2.len());
    assert!(v1.len() as u64 > offset::HEAD_BYTES, "rebuilt by streaming");
    let request = at(30_001, 3);
    for reader in [
        MemoryReader::new(v1.clone()).indexed(LINES_PER_BLOCK, CHECKPOINT_BYTES),
        MemoryReader::new(v1.clone())
            .indexed(LINES_PER_BLOCK, CHECKPOINT_BYTES)
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
fn a_first_page_beyond_the_payloads_first_bytes_does_not_wait_for_them() {
    // Four bytes a line: line 100,000 starts past the payload's first 256 KiB (and before line
    // 256 Ki, from which no page waits for them).
    let data = b"one\n".repeat(250_000);
    let request = at(100_000, 200);
    let reader = MemoryReader::new(data.clone())
        .indexed(LINES_PER_BLOCK, CHECKPOINT_BYTES)
        .slow_head(8);
    assert_eq!(page(&reader, &request), read_page(&data, &request).unwrap());
    let [payload, _] = reader.take_reads();
    assert!(payload < offset::HEAD_BYTES, "{payload} payload bytes read");
    assert_eq!(reader.take_trips(), [3, 2]);
    // First bytes that come while the page reads its checkpoints (here beyond the index's first
    // bytes: one every line) are let finish, not used.
    let reader = MemoryReader::new(data.clone())
        .indexed(LINES_PER_BLOCK, 4)
        .slow_head(1);
    assert!(reader.index_object().unwrap().len() as u64 > cache::INDEX_PREFIX_BYTES);
    assert_eq!(page(&reader, &request), read_page(&data, &request).unwrap());
    let [payload, _] = reader.take_reads();
    assert!(payload > offset::HEAD_BYTES, "{payload} payload bytes read");
    // From line 256 Ki on (every line takes a byte at least) they are not even read, however
    // soon they would come.
    let data = b"x\n".repeat(1 << 20);
    let reader = MemoryReader::new(data.clone()).indexed(LINES_PER_BLOCK, CHECKPOINT_BYTES);
    let request = at(600_000, 200);
    assert_eq!(page(&reader, &request), read_page(&data, &request).unwrap());
    let [payload, _] = reader.take_reads();
    // The two blocks (of 2 bytes a line) the page's lines are in.
    assert_eq!(payload, 2 * 2 * u64::from(LINES_PER_BLOCK));
    assert_eq!(reader.take_trips(), [2, 2]);
    let reader = MemoryReader::new(data.clone())
        .indexed(LINES_PER_BLOCK, CHECKPOINT_BYTES)
        .slow_head(8);
    // A page the first bytes hold still waits for them, and reads nothing else.
    let near = at(1_000, 200);
    assert_eq!(page(&reader, &near), read_page(&data, &near).unwrap());
    assert_eq!(reader.take_reads()[0], offset::HEAD_BYTES);
}

#[test]
fn a_far_first_page_reads_its_block_entries_beside_the_index() {
    // Two bytes a line, three lines in turn: from line 64 Mi on, a line's block entries lie beyond
    // the index's first bytes, where this version writes them whatever the tag.
    let data = Bytes::from(b"a\nb\nc\n".repeat(24_466_774));
    let reader = MemoryReader::new(data.clone()).indexed(LINES_PER_BLOCK, CHECKPOINT_BYTES);
    // The page, written out: paging all of it in memory takes minutes in a debug build.
    let expected = |line: usize, shown: usize| {
        let header = format!("[handle 'h': 73,400,322 matching line(s); showing {shown}]");
        let lines = (line..line + shown).map(|i| ["a", "b", "c"][i % 3].to_owned());
        [header]
            .into_iter()
            .chain(lines)
            .collect::<Vec<_>>()
            .join("\n")
    };
    let line = 68 << 20;
    let entries = Header::block_entries_unread(line as u64, LINES_PER_BLOCK);
    assert!(entries.start > cache::INDEX_PREFIX_BYTES);
    assert_eq!(page(&reader, &at(line as i64, 200)), expected(line, 200));
    // The index's first bytes and the entries at once, then the page.
    assert_eq!(reader.take_trips(), [3, 2]);
    let [payload, index] = reader.take_reads();
    assert!(
        payload <= 2 * u64::from(LINES_PER_BLOCK),
        "{payload} payload bytes read"
    );
    assert_eq!(
        index,
        cache::INDEX_PREFIX_BYTES + entries.end - entries.start
    );
    // So are entries that straddle the end of those first bytes.
    let straddling = 32_763 * LINES_PER_BLOCK as usize;
    let entries = Header::block_entries_unread(straddling as u64, LINES_PER_BLOCK);
    assert!(entries.contains(&cache::INDEX_PREFIX_BYTES));
    assert_eq!(
        page(&reader, &at(straddling as i64, 5)),
        expected(straddling, 5)
    );
    assert_eq!(reader.take_trips(), [3, 2]);
    // A page past the end: the index's word cannot serve it, the payload's first bytes decide.
    assert_eq!(page(&reader, &at(80 << 20, 5)), expected(0, 0));
    // A store too slow to give the entries fails the page at once.
    reader.take_trips();
    reader.freeze_index_from(cache::INDEX_PREFIX_BYTES);
    let outcome = runtime().block_on(read_tool_result(&reader, &at(line as i64, 5)));
    assert!(outcome.is_err(), "{outcome:?}");
    assert_eq!(reader.take_trips(), [2, 1]);
    reader.freeze_index_from(u64::MAX);
    // Entries read from another index object than the first bytes are not used: here one of the
    // same payload with half the blocks, written between the two reads.
    let mut builder = IndexBuilder::with_spacing(LINES_PER_BLOCK / 2, CHECKPOINT_BYTES);
    builder.feed(&data);
    let tag = reader.payload.lock().unwrap().tag.clone();
    reader.replace_index_after_its_first_bytes(builder.finish().encode(&tag).unwrap());
    assert_eq!(
        page(&reader, &at(line as i64 + 1, 5)),
        expected(line + 1, 5)
    );
}

#[test]
fn a_far_first_page_fails_at_once_when_the_index_read_times_out() {
    let reader = MemoryReader::new(b"x\n".repeat(1 << 20))
        .indexed(LINES_PER_BLOCK, CHECKPOINT_BYTES)
        .frozen_index();
    let outcome = runtime().block_on(read_tool_result(&reader, &at(600_000, 5)));
    assert!(outcome.is_err(), "{outcome:?}");
    // One call: no read of the payload's first bytes after the timeout.
    assert_eq!(reader.take_trips(), [1, 1]);
}

#[test]
fn an_index_taken_at_its_word_is_checked_by_the_page_it_leads_to() {
    let v1 = b"one\n".repeat(200_000);
    let request = at(150_000, 3);
    // The old index, read first, is not v2's: same size, other lines; shorter, so that it places
    // the page past v2's end; same size, more lines, so that by its count the page is empty.
    let same_size = b"2\n22\n".repeat(160_000);
    let shorter = b"z\n".repeat(100_000);
    let more_lines = b"y\n".repeat(400_000);
    let beyond_old_end = at(250_000, 3);
    // Calls the page makes beyond those of a store whose first bytes come first: the index's
    // word tried (the first bytes, the index, the page's read) before the checked path.
    for (v2, request, tried) in [
        (same_size, &request, 3),
        (shorter, &request, 3),
        (more_lines, &beyond_old_end, 0),
    ] {
        let mut calls = vec![];
        for head_delay in [0, 8] {
            let reader = MemoryReader::new(v1.clone())
                .indexed(LINES_PER_BLOCK, CHECKPOINT_BYTES)
                .slow_head(head_delay)
                .cached();
            assert_eq!(
                page(&reader, &at(150_000, 3)),
                read_page(&v1, &at(150_000, 3)).unwrap()
            );
            reader.cache.as_ref().unwrap().remove("h");
            reader.overwrite(v2.clone());
            reader.take_trips();
            assert_eq!(page(&reader, request), read_page(&v2, request).unwrap());
            calls.push(reader.take_trips()[0]);
            let last = ReadRequest {
                from_end: true,
                ..at(0, 1)
            };
            assert_eq!(page(&reader, &last), read_page(&v2, &last).unwrap());
        }
        assert_eq!(calls[1], calls[0] + tried, "{calls:?}");
    }
}

#[test]
fn an_index_taken_at_its_word_is_cached_only_once_a_read_confirms_it() {
    // The old index says 200,000 lines; the payload now holds 400,000. A page past the old end,
    // asked while another page tries the old index, must not be answered from it.
    let v1 = b"one\n".repeat(200_000);
    let v2 = b"y\n".repeat(400_000);
    let reader = MemoryReader::new(v1)
        .indexed(LINES_PER_BLOCK, CHECKPOINT_BYTES)
        .slow_head(8)
        .cached();
    reader.overwrite(v2.clone());
    let (near, far) = (at(150_000, 3), at(250_000, 3));
    let (first, second) = runtime().block_on(async {
        // The second asks once the first has read the index (one round trip).
        futures::join!(read_tool_result(&reader, &near), async {
            tokio::task::yield_now().await;
            read_tool_result(&reader, &far).await
        })
    });
    assert_eq!(first.unwrap(), read_page(&v2, &near).unwrap());
    assert_eq!(second.unwrap(), read_page(&v2, &far).unwrap());
}

#[test]
fn an_index_that_puts_a_page_in_no_bytes_is_not_trusted() {
    let reader = MemoryReader::new(b"x\n".repeat(1 << 20))
        .indexed(LINES_PER_BLOCK, CHECKPOINT_BYTES)
        .slow_head(8);
    let mut index = reader.index_object().unwrap().to_vec();
    // The block holding line 600,000 starts, it says, past any payload.
    let header = Header::decode(&index, index.len() as u64).unwrap();
    let entry = header.block_entries(600_000).start as usize;
    index[entry..entry + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    reader.set_index(index);
    let v2 = b"y\n".repeat(1 << 20);
    reader.overwrite(v2.clone());
    let request = at(600_000, 3);
    assert_eq!(page(&reader, &request), read_page(&v2, &request).unwrap());
}

#[test]
fn a_store_without_tags_is_paged_but_never_indexed_for_later() {
    let v1 = b"one\n".repeat(80_000);
    assert!(v1.len() as u64 > offset::HEAD_BYTES, "rebuilt by streaming");
    let reader = MemoryReader::new(v1.clone())
        .indexed(LINES_PER_BLOCK, CHECKPOINT_BYTES)
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
        data.len() as u64 > offset::HEAD_BYTES,
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
        index <= cache::INDEX_PREFIX_BYTES,
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
