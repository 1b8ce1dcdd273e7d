//! The one streaming scan behind pattern pages and grep: a [`ChunkSink`] that counts the lines
//! matching a pattern and keeps one window of them (with their context), whatever the spill's
//! size. Memory is the chunk being scanned, the kept lines (at most [`PAGE_BYTES_CAP`] bytes)
//! and, from the end, one note per chunk.
//!
//! Whole lines are searched one match at a time: the pattern finds the next candidate, whose line
//! is confirmed (a match that runs past its line's end is tested again on the line alone), counted
//! and skipped; the lines in between are only counted. A pattern that anchors to lines, or that
//! once matched across a line break, is tested line by line. A line longer than a chunk is
//! gathered (up to [`MAX_LINE_BYTES`]) and tested whole; a literal goes on past that, keeping the
//! bytes a match could straddle.
//!
//! A page counted from the start takes one pass. From the end it takes two: the first counts the
//! matches and notes, at each line-aligned chunk, the line and the matches before it; the second
//! starts at the last note early enough for the page's first match and its context, and stops
//! once the page is full.

use std::collections::VecDeque;
use std::ops::{ControlFlow, Range};

use memchr::memmem::Finder;
use regex::bytes::Regex;

use super::line_index::Version;
use super::lines::{
    ChunkSink, LineChunk, break_start, count_lines, line_start, lines_before, next_break,
};
use super::request::{PAGE_BYTES_CAP, window};
use super::source::{PageError, SpillReader, stream_lines};

/// The most bytes of one line gathered to test a regex: a longer line is tested on its first
/// bytes.
pub(crate) const MAX_LINE_BYTES: usize = 16 << 20;

/// How lines are tested: a literal (`memmem`) or a regex.
#[derive(Debug, Clone)]
pub(crate) enum Matcher {
    Literal(Box<Finder<'static>>),
    Regex {
        regex: Regex,
        /// Test one line at a time rather than over a whole span: the regex anchors to line
        /// starts or ends, which a span-wide search only sees at `\n` and `\r`.
        per_line: bool,
    },
}

impl Matcher {
    /// A literal pattern (non-empty).
    pub(crate) fn literal(pattern: &str) -> Self {
        Self::Literal(Box::new(Finder::new(pattern.as_bytes()).into_owned()))
    }

    /// Whether `line` (without its break) matches.
    #[inline]
    pub(crate) fn matches(&self, line: &[u8]) -> bool {
        match self {
            Self::Literal(finder) => finder.find(line).is_some(),
            Self::Regex { regex, .. } => regex.is_match(line),
        }
    }

    /// The first match in `data` from `at` on.
    #[inline]
    fn find_at(&self, data: &[u8], at: usize) -> Option<Range<usize>> {
        match self {
            Self::Literal(finder) => finder
                .find(&data[at..])
                .map(|i| at + i..at + i + finder.needle().len()),
            Self::Regex { regex, .. } => regex.find_at(data, at).map(|m| m.range()),
        }
    }
}

/// What to scan for and which matches to keep: the same for both passes (the matches kept are
/// the [`window`] of `offset`, `from_end` and `limit`).
#[derive(Clone)]
pub(crate) struct Query {
    pub(crate) matcher: Matcher,
    /// Lines to keep before and after each match of the window.
    pub(crate) context: u64,
    /// Matches to skip (from the first, or from the last with `from_end`).
    pub(crate) offset: i64,
    pub(crate) from_end: bool,
    /// Matches to keep.
    pub(crate) limit: u64,
    /// The page shows line numbers (grep): count them. Without, kept lines are only in order.
    pub(crate) numbered: bool,
    /// Match the lossy decoding of the lines, not their bytes (a pattern with U+FFFD, which only
    /// matches after it).
    pub(crate) lossy: bool,
}

impl Query {
    /// The matches of `total` that this query keeps.
    pub(crate) fn window(&self, total: u64) -> Range<u64> {
        window(self.offset, self.from_end, total, self.limit)
    }
}

/// Where a line-aligned chunk started: its offset, the number of its first line and the matches
/// before it.
#[derive(Debug, Clone, Copy)]
struct ResumePoint {
    offset: u64,
    line: u64,
    matches: u64,
}

/// A line longer than a chunk, seen in pieces.
#[derive(Default)]
struct OpenLine {
    /// The pattern was found in it.
    hit: bool,
    /// Bytes gathered to test (a literal's: since the last test, with the overlap before them).
    text: Vec<u8>,
    /// Its first bytes, once `text` no longer starts with them.
    head: Option<Vec<u8>>,
}

/// Where a scan puts the lines it keeps: the window's matches and their context, in order, each
/// line once.
pub(crate) trait Keeper: Clone + Send + 'static {
    /// Keep line `number` (from 0), a `kind` line, unless it is kept already.
    fn keep(&mut self, number: u64, kind: Kept, line: &[u8]);
}

/// Counts a pattern's matching lines and keeps one window of them with their context.
pub(crate) struct Scan<K> {
    query: Query,
    /// Test every line alone (see [`Matcher`]); set for good once a match crossed a break.
    per_line: bool,
    /// The match numbers whose lines (and context) are kept.
    window: Range<u64>,
    /// Matching lines so far.
    matches: u64,
    /// The number (from 0) of the next line to start, while it is counted.
    line: u64,
    /// Context lines still to keep after the last kept match.
    after: u64,
    /// The last `context` lines before the current chunk, for the context of its first match.
    carry: VecDeque<(u64, Vec<u8>)>,
    open: Option<OpenLine>,
    page: K,
    resume_points: Option<Vec<ResumePoint>>,
    /// Stop once the window and its context are kept (second passes).
    stop_when_full: bool,
}

impl<K: Keeper> Scan<K> {
    fn new(query: &Query, window: Range<u64>, page: K) -> Self {
        Self {
            per_line: matches!(query.matcher, Matcher::Regex { per_line: true, .. }),
            query: query.clone(),
            window,
            matches: 0,
            line: 0,
            after: 0,
            carry: VecDeque::new(),
            open: None,
            page,
            resume_points: None,
            stop_when_full: false,
        }
    }

    /// The first pass: it keeps the page's lines when the page counts from the first match;
    /// from the last, it only counts and notes where a second pass can resume.
    fn first_pass(query: &Query, page: K) -> Self {
        match query.from_end {
            false => Self::new(query, query.window(u64::MAX), page),
            true => Self {
                resume_points: Some(Vec::new()),
                ..Self::new(query, 0..0, page)
            },
        }
    }

    /// After a from-end first pass: where the second pass starts and the scan that keeps the
    /// page (the first pass's keeper, which kept nothing). It resumes early enough that the
    /// page's first match has its context before it.
    fn second_pass(&self) -> Option<(u64, Self)> {
        let points = self.resume_points.as_ref()?;
        let window = self.query.window(self.matches);
        if window.is_empty() {
            return None;
        }
        // The last point before the page's first match, then the last one up to it before the
        // match's context (the first point, at offset 0, is before both).
        let first = points
            .partition_point(|p| p.matches <= window.start)
            .checked_sub(1)?;
        let earliest = points[first].line.saturating_sub(self.query.context);
        let before = points[..=first].partition_point(|p| p.line <= earliest);
        let from = points[before.saturating_sub(1)];
        let scan = Self {
            matches: from.matches,
            line: from.line,
            stop_when_full: true,
            ..Self::new(&self.query, window, self.page.clone())
        };
        Some((from.offset, scan))
    }

    /// Whether line numbers still matter: a page's lines are still to come, or a from-end first
    /// pass notes them.
    fn numbering(&self) -> bool {
        self.query.numbered
            && (self.matches < self.window.end || self.after > 0 || self.resume_points.is_some())
    }

    /// Take line `range` of `data` (numbered `self.line`), a match when `hit`: count it, keep
    /// it (with its context before) when the window holds it, or as context after a kept match.
    fn take_line(&mut self, data: &[u8], range: Range<usize>, hit: bool) {
        let (line, nth) = (&data[range.clone()], self.matches);
        self.matches += u64::from(hit);
        if hit && self.window.contains(&nth) {
            self.keep_context_before(data, range.start, self.line);
            self.page.keep(self.line, Kept::Match(nth), line);
            self.after = self.query.context;
        } else if self.after > 0 {
            let kind = if hit { Kept::OtherMatch } else { Kept::Context };
            self.page.keep(self.line, kind, line);
            self.after -= 1;
        }
        self.line += 1;
    }

    /// Keep the `context` lines before line `number`, which starts at `data[start]`: from
    /// `data`, then from the lines carried over from the previous chunk.
    fn keep_context_before(&mut self, data: &[u8], start: usize, number: u64) {
        let in_data = (0..number).rev().zip(lines_before(data, start));
        let carried = self.carry.iter().rev().map(|(n, l)| (*n, &l[..]));
        let before = in_data.chain(carried).take(self.query.context as usize);
        for (n, line) in before.collect::<Vec<_>>().into_iter().rev() {
            let kind = match self.query.matcher.matches(line) {
                true => Kept::OtherMatch,
                false => Kept::Context,
            };
            self.page.keep(n, kind, line);
        }
    }

    /// Carry the last `context` lines before the next chunk (`newest`, from the last back: lines
    /// `self.line - 1`, `self.line - 2`, …) into it, while a match of the window may still need
    /// them.
    fn carry_lines<'a>(&mut self, newest: impl Iterator<Item = &'a [u8]>) {
        let context = self.query.context as usize;
        if context == 0 || self.matches >= self.window.end {
            self.carry.clear();
            return;
        }
        let newest = (0..self.line).rev().zip(newest).take(context);
        let capped = |(n, line): (u64, &[u8])| (n, line[..line.len().min(PAGE_BYTES_CAP)].to_vec());
        let newest: Vec<_> = newest.map(capped).collect();
        self.carry.extend(newest.into_iter().rev());
        self.carry.drain(..self.carry.len().saturating_sub(context));
    }

    /// The next piece of a line longer than a chunk; `ends` when the line ends with it.
    fn continue_open(&mut self, piece: &[u8], ends: bool) {
        let mut open = self.open.take().unwrap_or_default();
        if !open.hit {
            // A regex's text stops growing once full, and was tested then.
            let full = open.text.len() == MAX_LINE_BYTES;
            let room = MAX_LINE_BYTES.saturating_sub(open.text.len());
            open.text.extend_from_slice(&piece[..piece.len().min(room)]);
            if !full && (ends || open.text.len() == MAX_LINE_BYTES) {
                open.hit = self.query.matcher.matches(&open.text);
                // A literal goes on past the bytes gathered: keep the line's head, and the bytes
                // a match could straddle.
                if let Matcher::Literal(finder) = &self.query.matcher
                    && !open.hit
                    && !ends
                {
                    let head = &open.text[..PAGE_BYTES_CAP.min(open.text.len())];
                    open.head.get_or_insert_with(|| head.to_vec());
                    let overlap = finder.needle().len().saturating_sub(1);
                    open.text.drain(..open.text.len().saturating_sub(overlap));
                }
            }
        }
        if !ends {
            self.open = Some(open);
            return;
        }
        let mut line = open.head.unwrap_or(open.text);
        line.truncate(PAGE_BYTES_CAP);
        self.take_line(&line, 0..line.len(), open.hit);
        self.carry_lines(std::iter::once(&line[..]));
    }

    /// Scan whole lines (`data` starts at a line start and ends at a line end) one match at a
    /// time.
    fn scan_lines(&mut self, data: &[u8]) {
        // Lines before `counted` are numbered in `self.line`.
        let (mut pos, mut counted) = (0, 0);
        while pos < data.len() && !self.stopped() {
            if self.per_line || self.after > 0 {
                self.line += count_lines(&data[counted..pos]);
                let (end, len) = next_break(data, pos).unwrap_or((data.len(), 0));
                let hit = self.query.matcher.matches(&data[pos..end]);
                self.take_line(data, pos..end, hit);
                pos = end + len;
                counted = pos;
                continue;
            }
            let Some(found) = self.query.matcher.find_at(data, pos) else {
                break;
            };
            let at = break_start(data, found.start);
            let (end, len) = next_break(data, at).unwrap_or((data.len(), 0));
            if at != found.start || found.end > end {
                // The pattern can match across lines: from here on, test each line alone.
                self.per_line = true;
                pos = line_start(data, at);
                continue;
            }
            if self.numbering() || self.window.contains(&self.matches) {
                let start = line_start(data, at);
                self.line += count_lines(&data[counted..start]);
                self.take_line(data, start..end, true);
            } else {
                self.matches += 1;
            }
            pos = end + len;
            counted = pos;
        }
        if self.numbering() {
            self.line += count_lines(&data[counted..]);
        }
        self.carry_lines(lines_before(data, data.len()));
    }

    /// Whether a second pass may stop: its window and the context after it are kept.
    fn stopped(&self) -> bool {
        self.stop_when_full && self.matches >= self.window.end && self.after == 0
    }
}

impl<K: Keeper> ChunkSink for Scan<K> {
    fn feed(&mut self, chunk: LineChunk<'_>) -> ControlFlow<()> {
        if chunk.starts_line
            && let Some(points) = &mut self.resume_points
        {
            points.push(ResumePoint {
                offset: chunk.offset,
                line: self.line,
                matches: self.matches,
            });
        }
        let decoded = (self.query.lossy).then(|| String::from_utf8_lossy(chunk.bytes));
        let data = decoded.as_ref().map_or(chunk.bytes, |d| d.as_bytes());
        // The piece that goes on with a line begun in an earlier chunk (or begins one longer
        // than the chunk), then the whole lines after it.
        let lines = if chunk.starts_line && chunk.ends_line {
            data
        } else {
            let (end, len) = next_break(data, 0).unwrap_or((data.len(), 0));
            self.continue_open(&data[..end], len > 0 || chunk.ends_line);
            &data[end + len..]
        };
        self.scan_lines(lines);
        match self.stopped() {
            true => ControlFlow::Break(()),
            false => ControlFlow::Continue(()),
        }
    }
}

/// What a scan found: the matches in all, the lines `page` kept, and the payload's version.
pub(crate) struct Scanned<K> {
    pub(crate) total: u64,
    pub(crate) page: K,
    pub(crate) version: Version,
}

/// Scan `reader`'s payload for `query`, keeping the page's lines in `page`.
pub(crate) async fn scan_spill<R: SpillReader, K: Keeper>(
    reader: &R,
    handle: &str,
    query: &Query,
    page: K,
) -> Result<Scanned<K>, PageError> {
    let version = reader.head(handle).await?;
    let first = Scan::first_pass(query, page);
    let mut scan = stream_lines(reader, handle, &version, 0, first).await?;
    let total = scan.matches;
    if let Some((from, second)) = scan.second_pass() {
        scan = stream_lines(reader, handle, &version, from, second).await?;
    }
    let page = scan.page;
    Ok(Scanned {
        total,
        page,
        version,
    })
}

/// [`scan_spill`] over a payload in memory: one chunk, so a second pass starts at its start.
pub(crate) fn scan_memory<K: Keeper>(data: &[u8], query: &Query, page: K) -> (u64, K) {
    let chunk = LineChunk {
        offset: 0,
        bytes: data,
        starts_line: true,
        ends_line: true,
    };
    let mut scan = Scan::first_pass(query, page);
    let _ = scan.feed(chunk);
    let total = scan.matches;
    if let Some((_, mut second)) = scan.second_pass() {
        let _ = second.feed(chunk);
        scan = second;
    }
    (total, scan.page)
}

/// Why a line is on the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kept {
    /// Match number `n` (from 0) of the window.
    Match(u64),
    /// A matching line shown as context of a match of the window.
    OtherMatch,
    /// A line around a match.
    Context,
}

/// The kept lines, in order, at most `budget` bytes of them in all (0.62's pages, whose body is
/// cut at 50,000 chars: a char takes at most 4 bytes, and lines past the budget are never shown).
#[derive(Clone)]
pub(crate) struct Page {
    /// Each kept line's number (from 0), why it is kept, and its bytes.
    pub(crate) lines: Vec<(u64, Kept, Vec<u8>)>,
    budget: usize,
}

impl Page {
    pub(crate) fn new(budget: usize) -> Self {
        Self {
            lines: Vec::new(),
            budget,
        }
    }
}

impl Keeper for Page {
    fn keep(&mut self, number: u64, kind: Kept, line: &[u8]) {
        if self.lines.last().is_some_and(|(last, ..)| *last >= number) {
            return;
        }
        let take = line.len().min(self.budget);
        self.budget -= take;
        self.lines.push((number, kind, line[..take].to_vec()));
    }
}
