//! Pages by pattern, streamed: a literal `memmem` scan over the payload in bounded chunks that
//! counts matching lines as it goes and keeps only the lines the page shows.
//!
//! A page counted from the start takes one pass. A page counted from the end takes two: the
//! first counts the matches and notes, at each line-aligned chunk, how many came before it; the
//! second starts at the last such point before the page's first match and stops once the page is
//! full. Memory is two chunks, the kept lines (at most a page's worth of bytes) and one note per
//! chunk, whatever the number of matches.
//!
//! Where matches are dense (every short line, say), finding them one by one costs a search per
//! line; lines that the page does not show are then counted 64 bytes at a time instead
//! (`read::count`).

use std::ops::{ControlFlow, Range};

use memchr::memmem::Finder;

use super::block::BLOCK;
use super::count::LineCounter;
use super::lines::{ChunkSink, LineChunk, LineScan, break_in_block, line_start, next_break};
use super::request::{PAGE_BYTES_CAP, ReadRequest, render};
use super::source::{PageError, SpillReader, stream_lines};

/// A page of the lines of `reader`'s payload that contain `pattern`.
pub(crate) async fn pattern_page<R: SpillReader>(
    reader: &R,
    request: &ReadRequest,
    pattern: &str,
    limit: u64,
) -> Result<String, PageError> {
    let handle = &request.handle;
    let version = reader.head(handle).await?;
    let first = MatchScan::first_pass(request, pattern, limit);
    let first = stream_lines(reader, handle, &version, 0, first).await?;
    let total = first.matches;
    let scan = match first.second_pass(request, pattern, limit) {
        None => first,
        Some((from, second)) => stream_lines(reader, handle, &version, from, second).await?,
    };
    Ok(scan.page(request, total, limit))
}

/// [`pattern_page`] over a payload in memory.
pub(crate) fn pattern_page_in_memory(
    data: &[u8],
    request: &ReadRequest,
    pattern: &str,
    limit: u64,
) -> String {
    let mut first = MatchScan::first_pass(request, pattern, limit);
    let _ = first.feed(LineChunk::whole(data));
    let total = first.matches;
    let scan = match first.second_pass(request, pattern, limit) {
        None => first,
        Some((from, mut second)) => {
            let from = usize::try_from(from).unwrap_or(data.len()).min(data.len());
            let _ = second.feed(LineChunk {
                offset: from as u64,
                ..LineChunk::whole(&data[from..])
            });
            second
        }
    };
    scan.page(request, total, limit)
}

/// Counts the lines that contain a pattern, and keeps those of one window of matches.
pub(crate) struct MatchScan {
    finder: Finder<'static>,
    pattern: Vec<u8>,
    /// Counts the lines of a span at once where none of them is kept (`None` for a pattern that
    /// it cannot count).
    counter: Option<LineCounter>,
    /// The last span scanned had dense matches.
    dense: bool,
    /// The pattern holds U+FFFD, which only matches after lossy decoding: decode each chunk.
    lossy: bool,
    /// Matching lines so far (including an open line found to match).
    matches: u64,
    /// The match numbers whose lines are kept.
    window: Range<u64>,
    /// Kept lines, in order, at most [`PAGE_BYTES_CAP`] bytes in all.
    kept: Vec<Vec<u8>>,
    budget: usize,
    /// A line that goes on into the next chunk.
    open: Option<OpenLine>,
    /// Where line-aligned chunks started, and the matches before each (from-end first passes).
    resume_points: Option<Vec<(u64, u64)>>,
    /// Stop as soon as the window is kept (second passes: the total is already known).
    stop_when_full: bool,
}

/// A line longer than a chunk, seen in pieces.
#[derive(Default)]
struct OpenLine {
    /// Its match number, once the pattern was found in it.
    number: Option<u64>,
    /// Its first bytes, while it may be kept.
    head: Vec<u8>,
    /// Its last bytes (one fewer than the pattern has), to find a match across two pieces.
    tail: Vec<u8>,
}

impl MatchScan {
    fn new(pattern: &str, window: Range<u64>) -> Self {
        Self {
            finder: Finder::new(pattern.as_bytes()).into_owned(),
            pattern: pattern.as_bytes().to_vec(),
            counter: LineCounter::new(pattern),
            dense: false,
            lossy: pattern.contains('\u{FFFD}'),
            matches: 0,
            window,
            kept: Vec::new(),
            budget: PAGE_BYTES_CAP,
            open: None,
            resume_points: None,
            stop_when_full: false,
        }
    }

    /// The first pass for `request`: it keeps the page's lines when the page counts from the
    /// start; from the end, it only counts and notes where a second pass can resume.
    fn first_pass(request: &ReadRequest, pattern: &str, limit: u64) -> Self {
        match request.from_end {
            false => Self::new(pattern, request.window(u64::MAX, limit)),
            true => Self {
                resume_points: Some(Vec::new()),
                ..Self::new(pattern, 0..0)
            },
        }
    }

    /// After a from-end first pass: where the second pass starts, and the scan that keeps the
    /// page's lines. `None` when this pass kept them already (or the page is empty).
    fn second_pass(&self, request: &ReadRequest, pattern: &str, limit: u64) -> Option<(u64, Self)> {
        let points = self.resume_points.as_ref()?;
        let window = request.window(self.matches, limit);
        if window.is_empty() {
            return None;
        }
        let at = points.partition_point(|&(_, before)| before <= window.start);
        let (from, before) = points.get(at.checked_sub(1)?).copied()?;
        let scan = Self {
            matches: before,
            stop_when_full: true,
            ..Self::new(pattern, window)
        };
        Some((from, scan))
    }

    /// The page, once every chunk was fed: `total` matching lines, this scan's kept lines.
    fn page(&self, request: &ReadRequest, total: u64, limit: u64) -> String {
        let shown = request.window(total, limit);
        let lines = self.kept.iter().map(Vec::as_slice);
        render(&request.handle, total, shown.end - shown.start, lines)
    }

    /// Whether a second pass has kept its whole window.
    fn full(&self) -> bool {
        let collecting = self.open.as_ref().and_then(|o| o.number);
        self.matches >= self.window.end && !collecting.is_some_and(|n| self.window.contains(&n))
    }

    fn keep(&mut self, number: u64, line: &[u8]) {
        if self.window.contains(&number) && self.budget > 0 {
            let take = line.len().min(self.budget);
            self.kept.push(line[..take].to_vec());
            self.budget -= take;
        }
    }

    /// Whether the pattern occurs across the end of `tail` and the start of `piece`.
    fn spans_pieces(&self, tail: &[u8], piece: &[u8]) -> bool {
        if tail.is_empty() {
            return false;
        }
        let joined = [tail, &piece[..piece.len().min(self.pattern.len() - 1)]].concat();
        self.finder.find(&joined).is_some()
    }

    /// Look at the short lines from `pos` (a line start) one by one, until one is longer than a
    /// block or a few in a row do not match; returns where that left off (a line start).
    fn scan_short_lines(&mut self, data: &[u8], mut pos: usize) -> usize {
        const MISSES: u32 = 4;
        let mut misses = 0;
        while pos < data.len() && misses < MISSES && !self.stopped() {
            let (end, len) = match break_in_block(data, pos) {
                Some(found) => found,
                None if data.len() - pos > BLOCK => break, // A long line: the search takes it.
                None => (data.len(), 0),
            };
            let line = &data[pos..end];
            if contains_short(line, &self.pattern) {
                self.matched(line);
                misses = 0;
            } else {
                misses += 1;
            }
            pos = end + len;
        }
        pos
    }

    /// Count a matching `line`, and keep it if the window holds it.
    #[inline]
    fn matched(&mut self, line: &[u8]) {
        let number = self.matches;
        self.matches += 1;
        if self.window.contains(&number) {
            self.keep(number, line);
        }
    }
}

/// Whether a short `line` holds `pattern` (non-empty), without a library call per line.
#[inline]
fn contains_short(line: &[u8], pattern: &[u8]) -> bool {
    let Some((&first, rest)) = pattern.split_first() else {
        return true;
    };
    let last_start = match line.len().checked_sub(pattern.len()) {
        Some(last) => last,
        None => return false,
    };
    (0..=last_start)
        .any(|i| line[i] == first && (rest.is_empty() || &line[i + 1..i + pattern.len()] == rest))
}

/// Keep the last `n` bytes of `tail` followed by `piece` in `tail`.
fn keep_tail(tail: &mut Vec<u8>, piece: &[u8], n: usize) {
    if piece.len() >= n {
        tail.clear();
        tail.extend_from_slice(&piece[piece.len() - n..]);
    } else {
        tail.extend_from_slice(piece);
        let excess = tail.len().saturating_sub(n);
        tail.drain(..excess);
    }
}

impl LineScan for MatchScan {
    /// The next piece of the open line (a new one if none is open), and whether it ends there.
    fn continue_open(&mut self, piece: &[u8], line_ends: bool) {
        let mut open = self.open.take().unwrap_or_default();
        if open.number.is_none() {
            if self.spans_pieces(&open.tail, piece) || self.finder.find(piece).is_some() {
                open.number = Some(self.matches);
                self.matches += 1;
                open.tail = Vec::new();
            } else {
                keep_tail(&mut open.tail, piece, self.pattern.len() - 1);
            }
        }
        if self.window.contains(&open.number.unwrap_or(self.matches)) {
            let room = self.budget.saturating_sub(open.head.len());
            open.head.extend_from_slice(&piece[..piece.len().min(room)]);
        }
        match (line_ends, open.number) {
            (false, _) => self.open = Some(open),
            (true, Some(number)) => self.keep(number, &open.head),
            (true, None) => {}
        }
    }
    /// Scan whole lines (`data` starts at a line start and ends at a line end).
    ///
    /// Spans of dense matches that hold no line of the window are only counted
    /// ([`MatchScan::scan_spans`]); the others are searched match by match
    /// ([`MatchScan::scan_each_line`]).
    fn scan_lines(&mut self, data: &[u8]) {
        match self.counter.take() {
            None => self.scan_each_line(data),
            Some(counter) => {
                self.scan_spans(&counter, data);
                self.counter = Some(counter);
            }
        }
    }
    /// Whether a second pass may stop here.
    fn stopped(&self) -> bool {
        self.stop_when_full && self.full()
    }
}

impl MatchScan {
    /// Scan whole lines a span at a time. Where the last span's matches were dense, a span that
    /// holds no line of the window is only counted, 64 bytes at a time ([`LineCounter`]);
    /// otherwise (and in every span that holds some of the window) the search goes from match
    /// to match.
    fn scan_spans(&mut self, counter: &LineCounter, data: &[u8]) {
        /// Bytes a span holds, at least.
        const SPAN: usize = 64 << 10;
        /// Matches are dense with at least one in so many bytes: counting every block then costs
        /// less than going from match to match.
        const DENSE: u64 = 64;
        let mut pos = 0;
        while pos < data.len() && !self.stopped() {
            let end = match pos.saturating_add(SPAN) {
                at if at >= data.len() => data.len(),
                at => next_break(data, at).map_or(data.len(), |(at, len)| at + len),
            };
            let (span, before) = (&data[pos..end], self.matches);
            let counted = self.dense.then(|| counter.count(span));
            match counted {
                Some(n) if before >= self.window.end || before + n <= self.window.start => {
                    self.matches += n;
                }
                _ => self.scan_each_line(span),
            }
            self.dense = (self.matches - before) * DENSE >= span.len() as u64;
            pos = end;
        }
    }

    /// Scan whole lines one match at a time.
    ///
    /// Only the lines around matches are looked at: each match is checked to end before its
    /// line's break, its line is taken once, and the scan resumes after that line. Where matches
    /// are dense and lines short, the lines after a match are looked at one by one instead, which
    /// costs less than a search per line.
    fn scan_each_line(&mut self, data: &[u8]) {
        let mut pos = 0;
        let mut at_line_start = true;
        while pos < data.len() {
            if at_line_start {
                pos = self.scan_short_lines(data, pos);
                if pos >= data.len() || self.stopped() {
                    break;
                }
            }
            let Some(found) = self.finder.find(&data[pos..]).map(|i| pos + i) else {
                break;
            };
            let (end, len) = next_break(data, found).unwrap_or((data.len(), 0));
            if found + self.pattern.len() > end {
                // The match spans a line break: not a match within one line.
                pos = found + 1;
                at_line_start = false;
                continue;
            }
            match self.window.contains(&self.matches) {
                true => self.matched(&data[line_start(data, found)..end]),
                false => self.matches += 1,
            }
            pos = end + len;
            at_line_start = true;
            if self.stopped() {
                break;
            }
        }
    }
}

impl ChunkSink for MatchScan {
    fn feed(&mut self, chunk: LineChunk<'_>) -> ControlFlow<()> {
        if chunk.starts_line
            && let Some(points) = &mut self.resume_points
        {
            points.push((chunk.offset, self.matches));
        }
        let decoded;
        let data = match self.lossy {
            true => {
                decoded = String::from_utf8_lossy(chunk.bytes);
                decoded.as_bytes()
            }
            false => chunk.bytes,
        };
        self.scan_chunk(data, chunk.starts_line, chunk.ends_line)
    }
}
