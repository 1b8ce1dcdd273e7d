//! Counting the lines that contain a pattern, 64 bytes at a time, without looking at the lines
//! one by one.
//!
//! Each block of 64 bytes gives two bit masks: `breaks`, the bytes that start a line break, and
//! `starts`, the bytes where the pattern starts. A line holds the pattern when a start lies
//! between its break and the one before. One addition finds those lines for the whole block:
//! over `!breaks`, the bits of a line form a run of ones that ends just below its break, so
//! adding `starts` carries out of every run that holds a start, into that run's break bit.
//! `(!breaks + starts) & breaks` is then the breaks that end a matching line, and the carry out
//! of the block goes on into the next one (a line that matched before its break comes).
//!
//! This holds when no occurrence of the pattern can touch a line break, which is the case for
//! a non-empty pattern without one: a UTF-8 pattern can neither start inside a multi-byte
//! break nor end halfway through one, so marking the break's first byte is enough (`\r\n`
//! counts as two breaks with an empty line between them, which holds no start).

use super::block::{self, BLOCK};
use super::lines::break_len;

/// Counts the lines of whole-line spans of a payload that contain one pattern.
#[derive(Debug, Clone)]
pub(crate) struct LineCounter {
    pattern: Box<[u8]>,
}

impl LineCounter {
    /// A counter for `pattern`, or `None` when the pattern is empty or holds a line break (the
    /// line-by-line scan handles those). It must be UTF-8: a byte string such as `85 61` could
    /// start inside the break `c2 85`.
    pub(crate) fn new(pattern: &str) -> Option<Self> {
        let pattern = pattern.as_bytes();
        let has_break = (0..pattern.len()).any(|i| break_len(pattern, i) > 0);
        (!pattern.is_empty() && !has_break).then(|| Self {
            pattern: pattern.into(),
        })
    }

    /// The lines of `data` that contain the pattern, as `str.splitlines()` cuts them. `data`
    /// starts at a line start and ends at a line end or at the payload's end (a last line
    /// without a break counts too).
    pub(crate) fn count(&self, data: &[u8]) -> u64 {
        let (mut count, mut carry) = (0u64, false);
        let mut add = |breaks: u64, starts: u64| {
            let (sum, over) = (!breaks).overflowing_add(starts & !breaks);
            let (sum, over_too) = sum.overflowing_add(u64::from(carry));
            count += u64::from((sum & breaks).count_ones());
            carry = over | over_too;
        };
        // Whole blocks, while a pattern starting in one would end within `data`.
        let reach = self.pattern.len() - 1;
        let mut at = 0;
        while let Some(block) = data.get(at..).and_then(<[u8]>::first_chunk)
            && let Some(ends) = data.get(at + reach..).and_then(<[u8]>::first_chunk)
        {
            add(breaks(data, at, block), self.starts(data, at, block, ends));
            at += BLOCK;
        }
        // The rest, one byte at a time; the bits past the end are neither breaks nor starts.
        for at in (at..data.len()).step_by(BLOCK) {
            let (mut breaks, mut starts) = (0, 0);
            for i in 0..BLOCK.min(data.len() - at) {
                breaks |= u64::from(break_len(data, at + i) > 0) << i;
                starts |= u64::from(data[at + i..].starts_with(&self.pattern)) << i;
            }
            add(breaks, starts);
        }
        count + u64::from(carry)
    }

    /// Where the pattern starts in `block` (at `data[at..]`); `ends` are the bytes where it would
    /// end (the pattern's length less one byte further on).
    #[inline(always)]
    fn starts(&self, data: &[u8], at: usize, block: &[u8; BLOCK], ends: &[u8; BLOCK]) -> u64 {
        let (first, last) = (self.pattern[0], self.pattern[self.pattern.len() - 1]);
        let mut candidates = block::eq(block, first) & block::eq(ends, last);
        if self.pattern.len() <= 2 {
            return candidates;
        }
        let mut starts = 0;
        while candidates != 0 {
            let i = candidates.trailing_zeros() as usize;
            candidates &= candidates - 1;
            starts |= u64::from(data[at + i..].starts_with(&self.pattern)) << i;
        }
        starts
    }
}

/// The bytes of `block` (at `data[at..]`) that start a line break.
#[inline(always)]
fn breaks(data: &[u8], at: usize, block: &[u8; BLOCK]) -> u64 {
    let newlines = block::eq(block, b'\n');
    // The other candidates are rare in text: each is looked at alone.
    let mut others = block::break_candidates(block) & !newlines;
    let mut breaks = newlines;
    while others != 0 {
        let i = others.trailing_zeros() as usize;
        others &= others - 1;
        breaks |= u64::from(break_len(data, at + i) > 0) << i;
    }
    breaks
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::read::lines::split_lines;
    use crate::read::lines::tests::{BREAKS, text_of};

    /// Line by line, as the page scan counts.
    fn expected(data: &[u8], pattern: &[u8]) -> u64 {
        let finder = memchr::memmem::Finder::new(pattern);
        split_lines(data)
            .filter(|line| finder.find(&data[line.clone()]).is_some())
            .count() as u64
    }

    #[test]
    fn patterns_with_a_break_or_none_are_left_to_the_line_scan() {
        assert!(LineCounter::new("").is_none());
        assert!(LineCounter::new("a\nb").is_none());
        assert!(LineCounter::new("a\u{2028}").is_none());
        assert!(LineCounter::new("a\r").is_none());
        assert!(LineCounter::new("é—x").is_some());
    }

    #[test]
    fn counts_across_blocks_and_at_the_end() {
        let counter = LineCounter::new("x").expect("a plain pattern");
        let lines = b"x\n".repeat(100);
        assert_eq!(counter.count(&lines), 100);
        assert_eq!(
            counter.count(&lines[..199]),
            100,
            "a last line without a break"
        );
        let long = [&[b'a'; 200][..], b"x", &[b'a'; 100], b"\nx"].concat();
        assert_eq!(counter.count(&long), 2);
        let counter = LineCounter::new("level=info").expect("a plain pattern");
        let log = b"0001 level=info msg=\"the quick brown fox\"\n".repeat(50);
        assert_eq!(counter.count(&log), 50);
    }

    /// Text made of breaks, parts of breaks and pieces of patterns, so that lines, matches and
    /// near-matches fall on and across block edges.
    fn text() -> impl Strategy<Value = Vec<u8>> {
        let words: [&[u8]; 8] = [
            b"ab",
            b"abc",
            b"b",
            b"x",
            b"\xe2\x80\x94",
            b"\xff",
            b"fox",
            b" jumps",
        ];
        text_of([&BREAKS[..], &words].concat(), 200)
    }

    proptest! {
        #[test]
        fn counts_what_a_line_by_line_scan_counts(
            data in text(),
            pattern in proptest::sample::select(vec!["a", "ab", "abc", "x", "b", "—", "fox jumps", "ba"]),
        ) {
            let counter = LineCounter::new(pattern).expect("a plain pattern");
            prop_assert_eq!(counter.count(&data), expected(&data, pattern.as_bytes()));
        }
    }
}
