//! The streamed grep: a [`ChunkSink`] that counts matching lines, numbers lines as it goes and
//! keeps only the page's lines (matches of the window and their context).
//!
//! Whole lines are searched a chunk at a time: the regex finds the next candidate, whose line is
//! confirmed (a match that runs past its line's end is tested again on the line alone), counted,
//! and skipped; the lines in between are only counted (`memchr`). Around a match of the window,
//! lines are taken one by one. A pattern that anchors to lines, or that once matched across a
//! line break, is tested line by line instead. A line longer than a chunk is gathered (up to
//! [`MAX_LINE_BYTES`]) and tested whole.

use std::collections::VecDeque;
use std::ops::{ControlFlow, Range};

use super::render::{Kept, Page};
use super::{Checked, GrepRequest, Matcher};
use crate::read::lines::{
    ChunkSink, LineChunk, LineScan, break_ending_at, break_start, count_breaks, count_lines,
    line_start, next_break,
};
use crate::read::request::PAGE_BYTES_CAP;

/// The most bytes of one line gathered to test it: a longer line is tested on its first bytes.
pub(crate) const MAX_LINE_BYTES: usize = 16 << 20;

/// Where a line-aligned chunk started: its offset, the number of its first line and the matches
/// before it (from-end first passes note one per chunk).
#[derive(Debug, Clone, Copy)]
struct ResumePoint {
    offset: u64,
    line: u64,
    matches: u64,
}

/// Counts a pattern's matching lines and keeps one window of them with their context.
pub(crate) struct GrepScan {
    matcher: Matcher,
    /// Test every line alone (see [`Matcher`]); set for good once a match crossed a break.
    per_line: bool,
    context: u64,
    /// The match numbers whose lines (and context) are kept.
    window: Range<u64>,
    /// Matching lines so far.
    matches: u64,
    /// The number (from 0) of the next line to start.
    line: u64,
    /// Context lines still to keep after the last kept match.
    after: u64,
    /// The last `context` lines before the current chunk, for the context of its first match.
    carry: VecDeque<(u64, Vec<u8>)>,
    /// A line longer than a chunk, gathered piece by piece.
    open: Option<Vec<u8>>,
    page: Page,
    resume_points: Option<Vec<ResumePoint>>,
    /// Stop once the window and its context are kept (second passes).
    stop_when_full: bool,
}

impl GrepScan {
    fn new(checked: &Checked, window: Range<u64>) -> Self {
        Self {
            per_line: checked.matcher.per_line,
            matcher: checked.matcher.clone(),
            context: checked.context,
            window,
            matches: 0,
            line: 0,
            after: 0,
            carry: VecDeque::new(),
            open: None,
            page: Page::new(PAGE_BYTES_CAP),
            resume_points: None,
            stop_when_full: false,
        }
    }

    /// The first pass: it keeps the page's lines when the page counts from the first match;
    /// from the last, it only counts and notes where a second pass can resume.
    pub(crate) fn first_pass(request: &GrepRequest, checked: &Checked) -> Self {
        match request.from_end {
            false => Self::new(checked, request.window(u64::MAX, checked.limit)),
            true => Self {
                resume_points: Some(Vec::new()),
                ..Self::new(checked, 0..0)
            },
        }
    }

    /// After a from-end first pass: where the second pass starts and the scan that keeps the
    /// page. It resumes early enough that the page's first match has its context before it.
    pub(crate) fn second_pass(
        &self,
        request: &GrepRequest,
        checked: &Checked,
    ) -> Option<(u64, Self)> {
        let points = self.resume_points.as_ref()?;
        let window = request.window(self.matches, checked.limit);
        if window.is_empty() {
            return None;
        }
        let first = points.partition_point(|p| p.matches <= window.start);
        let first = points.get(first.checked_sub(1)?)?;
        let earliest = first.line.saturating_sub(checked.context);
        let from = points[..points.partition_point(|p| p.line <= earliest)]
            .last()
            .unwrap_or(first);
        let scan = Self {
            matches: from.matches,
            line: from.line,
            stop_when_full: true,
            ..Self::new(checked, window)
        };
        Some((from.offset, scan))
    }

    /// The matching lines counted.
    pub(crate) fn matches(&self) -> u64 {
        self.matches
    }

    /// The page, once every chunk was fed; `total` matching lines in all.
    pub(crate) fn page(self, request: &GrepRequest, checked: &Checked, total: u64) -> String {
        let shown = request.window(total, checked.limit);
        self.page.render(request, checked.context > 0, total, shown)
    }

    /// Whether line numbers still matter: a page's lines are still to come, or a from-end first
    /// pass notes them.
    fn numbering(&self) -> bool {
        self.matches < self.window.end || self.after > 0 || self.resume_points.is_some()
    }

    /// Take line `range` of `data` (numbered `self.line`), a match when `hit`: count it, keep
    /// it (with its context before) when the window holds it, or as context after a kept match.
    fn take_line(&mut self, data: &[u8], range: Range<usize>, hit: bool) {
        let number = self.line;
        let line = &data[range.clone()];
        if hit {
            let nth = self.matches;
            self.matches += 1;
            if self.window.contains(&nth) {
                self.keep_context_before(data, range.start, number);
                self.page.keep(number, Kept::Match(nth), line);
                self.after = self.context;
            } else if self.after > 0 {
                self.page.keep(number, Kept::OtherMatch, line);
                self.after -= 1;
            }
        } else if self.after > 0 {
            self.page.keep(number, Kept::Context, line);
            self.after -= 1;
        }
        self.line += 1;
    }

    /// Keep the `context` lines before line `number`, which starts at `data[start]`: from
    /// `data`, then from the lines carried over from the previous chunk.
    fn keep_context_before(&mut self, data: &[u8], start: usize, number: u64) {
        let wanted = self.context.min(number);
        let mut before: Vec<(u64, &[u8])> = Vec::new();
        let mut end = start;
        while (before.len() as u64) < wanted && end > 0 {
            let line_end = end - break_ending_at(data, end);
            end = line_start(data, line_end);
            before.push((number - 1 - before.len() as u64, &data[end..line_end]));
        }
        let from_carry = wanted - before.len() as u64;
        let carried = self
            .carry
            .iter()
            .rev()
            .take(from_carry as usize)
            .map(|(n, l)| (*n, l.as_slice()));
        let mut lines: Vec<(u64, &[u8])> = before.into_iter().chain(carried).collect();
        lines.reverse();
        for (n, line) in lines {
            let kind = match self.matcher.matches(line) {
                true => Kept::OtherMatch,
                false => Kept::Context,
            };
            self.page.keep(n, kind, line);
        }
    }

    /// Carry the last `context` lines of `data` (ending at line `self.line`) into the next
    /// chunk, while a match of the window may still need them.
    fn remember_last_lines(&mut self, data: &[u8]) {
        if self.context == 0 || self.matches >= self.window.end {
            self.carry.clear();
            return;
        }
        let mut end = data.len();
        let mut number = self.line;
        let mut newest = Vec::new();
        while (newest.len() as u64) < self.context && end > 0 {
            let line_end = end - break_ending_at(data, end);
            end = line_start(data, line_end);
            number -= 1;
            let line = &data[end..line_end];
            newest.push((number, line[..line.len().min(PAGE_BYTES_CAP)].to_vec()));
        }
        self.carry.extend(newest.into_iter().rev());
        let excess = self.carry.len().saturating_sub(self.context as usize);
        self.carry.drain(..excess);
    }
}

impl LineScan for GrepScan {
    /// The next piece of a line longer than a chunk; `ends` when the line ends with it.
    fn continue_open(&mut self, piece: &[u8], ends: bool) {
        let mut open = self.open.take().unwrap_or_default();
        let room = MAX_LINE_BYTES.saturating_sub(open.len());
        open.extend_from_slice(&piece[..piece.len().min(room)]);
        if !ends {
            self.open = Some(open);
            return;
        }
        let hit = self.matcher.matches(&open);
        self.take_line(&open, 0..open.len(), hit);
        let line = open[..open.len().min(PAGE_BYTES_CAP)].to_vec();
        if self.context > 0 {
            self.carry.push_back((self.line - 1, line));
            let excess = self.carry.len().saturating_sub(self.context as usize);
            self.carry.drain(..excess);
        }
    }
    /// Scan whole lines: `data` starts at a line start and ends at a line end.
    fn scan_lines(&mut self, data: &[u8]) {
        let mut pos = 0;
        // Lines before `counted` are numbered in `self.line`.
        let mut counted = 0;
        while pos < data.len() && !self.stopped() {
            if self.per_line || self.after > 0 {
                self.line += count_breaks(&data[counted..pos]);
                let (end, len) = next_break(data, pos).unwrap_or((data.len(), 0));
                let hit = self.matcher.matches(&data[pos..end]);
                self.take_line(data, pos..end, hit);
                pos = end + len;
                counted = pos;
                continue;
            }
            let Some(found) = self.matcher.regex.find_at(data, pos) else {
                break;
            };
            let at = break_start(data, found.start());
            let start = line_start(data, at);
            let (end, len) = next_break(data, at).unwrap_or((data.len(), 0));
            let within = at == found.start() && found.end() <= end;
            if !within {
                // The regex can match across lines: from here on, test each line alone.
                self.per_line = true;
                pos = start;
                continue;
            }
            if self.numbering() {
                self.line += count_breaks(&data[counted..start]);
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
        self.remember_last_lines(data);
    }
    /// Whether a second pass may stop: its window and the context after it are kept.
    fn stopped(&self) -> bool {
        self.stop_when_full && self.matches >= self.window.end && self.after == 0
    }
}

impl ChunkSink for GrepScan {
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
        self.scan_chunk(chunk.bytes, chunk.starts_line, chunk.ends_line)
    }
}
