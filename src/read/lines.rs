//! Python's `str.splitlines()` over raw bytes, and where a payload can be cut into chunks that
//! never split a line break or a UTF-8 sequence.
//!
//! The reference decodes a spill lossily, then splits it. Every break `splitlines()` knows is
//! ASCII (`\n`, `\r`, `\r\n`, `\x0b`, `\x0c`, `\x1c`, `\x1d`, `\x1e`) or one complete UTF-8
//! sequence (U+0085 = `c2 85`, U+2028 / U+2029 = `e2 80 a8` / `e2 80 a9`), and no invalid
//! sequence can swallow one, so breaks are found in the raw bytes and each line is decoded alone.

use std::ops::{ControlFlow, Range};

use wide::u8x64;

/// The length of the line break starting at `data[i]`, or 0 if none does.
#[inline]
pub(crate) fn break_len(data: &[u8], i: usize) -> usize {
    match data[i] {
        b'\n' | 0x0b | 0x0c | 0x1c | 0x1d | 0x1e => 1,
        b'\r' => 1 + usize::from(data.get(i + 1) == Some(&b'\n')),
        0xc2 if data.get(i + 1) == Some(&0x85) => 2,
        0xe2 if data.get(i + 1) == Some(&0x80) && matches!(data.get(i + 2), Some(0xa8 | 0xa9)) => 3,
        _ => 0,
    }
}

/// The next line break at or after `from`: `(position, length)`.
///
/// The bytes are tested 64 at a time ([`break_candidates`]), in one pass.
pub(crate) fn next_break(data: &[u8], from: usize) -> Option<(usize, usize)> {
    (from..data.len()).step_by(BLOCK).find_map(|at| {
        let candidates = break_candidates(&block_at(data, at)) & within(data, at);
        let mut found = bits(candidates).map(|i| (at + i, break_len(data, at + i)));
        found.find(|&(_, len)| len > 0)
    })
}

/// The line breaks other than `\n` that start in `data[from..to]`, in order: `(position,
/// length)` (a break may run past `to`).
///
/// Text rarely has one, so the bytes are tested 64 at a time ([`rare_starts`]).
pub(crate) fn rare_breaks(
    data: &[u8],
    from: usize,
    to: usize,
) -> impl Iterator<Item = (usize, usize)> + '_ {
    let head = &data[..to];
    (from..to).step_by(BLOCK).flat_map(move |at| {
        let starts = rare_starts(&block_at(head, at)) & within(head, at);
        let found = bits(starts).map(move |i| (at + i, break_len(data, at + i)));
        found.filter(|&(_, len)| len > 0)
    })
}

/// Bytes per block of the scans: the width of a mask.
const BLOCK: usize = 64;

/// The bytes of `block` that may start a line break other than `\n`, one bit each: `\x0b`–`\r`,
/// `\x1c`–`\x1e`, or the first byte of U+0085 or U+2028/U+2029.
#[inline(always)]
fn rare_starts(block: &[u8; BLOCK]) -> u64 {
    let bytes = u8x64::from(*block);
    // `low <= b <= low + 2`: `b - low`, wrapping, is at most 2.
    let within_three = |low| {
        let above = bytes - u8x64::splat(low);
        above.min(u8x64::splat(2)).simd_eq(above)
    };
    let leads = bytes.simd_eq(u8x64::splat(0xc2)) | bytes.simd_eq(u8x64::splat(0xe2));
    (within_three(0x0b) | within_three(0x1c) | leads).to_bitmask()
}

/// The bytes of `block` that may start a line break, one bit each: any byte up to `\x1e` (which
/// holds `\n` and every other break of one byte, and some that are none, such as `\t`), or the
/// first byte of U+0085 or U+2028/U+2029. A wide net is one comparison cheaper; [`break_len`]
/// decides. 64 bytes are compared at once ([`wide`]'s SIMD).
#[inline(always)]
fn break_candidates(block: &[u8; BLOCK]) -> u64 {
    let bytes = u8x64::from(*block);
    let controls = bytes.min(u8x64::splat(0x1e)).simd_eq(bytes);
    let leads = bytes.simd_eq(u8x64::splat(0xc2)) | bytes.simd_eq(u8x64::splat(0xe2));
    (controls | leads).to_bitmask()
}

/// The block of `data` at `at`: its next 64 bytes, zeros past its end ([`within`] masks them).
#[inline(always)]
fn block_at(data: &[u8], at: usize) -> [u8; BLOCK] {
    let rest = data.get(at..).unwrap_or_default();
    rest.first_chunk().copied().unwrap_or_else(|| {
        let mut block = [0; BLOCK];
        block[..rest.len()].copy_from_slice(rest);
        block
    })
}

/// The bits of the block at `at` (`at < data.len()`) that are bytes of `data`.
#[inline(always)]
fn within(data: &[u8], at: usize) -> u64 {
    u64::MAX >> (BLOCK - BLOCK.min(data.len() - at))
}

/// The positions of the set bits of `mask`, in order.
#[inline(always)]
fn bits(mut mask: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        let i = (mask != 0).then(|| mask.trailing_zeros() as usize)?;
        mask &= mask - 1;
        Some(i)
    })
}

/// The content ranges of `data`'s lines, as `str.splitlines()` would split its lossy decoding.
///
/// ```
/// use overspill::read::split_lines;
///
/// let data = b"a\r\nb\rc\xc2\x85d\n";
/// let lines: Vec<&[u8]> = split_lines(data).map(|r| &data[r]).collect();
/// assert_eq!(lines, [&b"a"[..], b"b", b"c", b"d"]);
/// ```
pub fn split_lines(data: &[u8]) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut pos = 0;
    std::iter::from_fn(move || {
        let start = (pos < data.len()).then_some(pos)?;
        let (end, len) = next_break(data, pos).unwrap_or((data.len(), 0));
        pos = end + len;
        Some(start..end)
    })
}

/// The content ranges of lines `window` of `data` (counted from 0 at its start).
pub(crate) fn window_ranges(
    data: &[u8],
    window: Range<u64>,
) -> impl Iterator<Item = Range<usize>> + '_ {
    let skip = usize::try_from(window.start).unwrap_or(usize::MAX);
    let take = usize::try_from(window.end - window.start).unwrap_or(usize::MAX);
    split_lines(data).skip(skip).take(take)
}

/// The start of the line holding `data[at]` (`at` is not inside a line break): just after the
/// last line break that ends at or before `at`.
///
/// The bytes are tested 64 at a time from `at` back ([`break_candidates`]): a chunk of one long
/// line is walked back whole to find where it can be cut.
pub(crate) fn line_start(data: &[u8], at: usize) -> usize {
    let head = &data[..at];
    let last_in_block = |from: usize| {
        let candidates = break_candidates(&block_at(data, from)) & within(head, from);
        let breaks = bits(candidates).map(|i| (from + i, break_len(data, from + i)));
        breaks
            .filter(|&(start, len)| len > 0 && start + len <= at)
            .last()
    };
    let last = (0..at).step_by(BLOCK).rev().find_map(last_in_block);
    last.map_or(0, |(start, len)| start + len)
}

/// The lines of `data` that end before `end` (a line start, or the end of `data`), from the last
/// back.
pub(crate) fn lines_before(data: &[u8], mut end: usize) -> impl Iterator<Item = &[u8]> {
    std::iter::from_fn(move || {
        let line_end = (end > 0).then(|| end - break_ending_at(data, end))?;
        end = line_start(data, line_end);
        Some(&data[end..line_end])
    })
}

/// The length of the line break that ends exactly at `end` (`end > 0`), or 0 if none does.
pub(crate) fn break_ending_at(data: &[u8], end: usize) -> usize {
    let start = break_start(data, end - 1);
    let len = break_len(data, start);
    if start + len == end { len } else { 0 }
}

/// The start of the line break that `data[at]` is part of, or `at` when it is part of none but
/// the break starting there: a position inside `\r\n` or a multi-byte break moves to its start.
pub(crate) fn break_start(data: &[u8], at: usize) -> usize {
    (at.saturating_sub(2)..at)
        .find(|&i| i + break_len(data, i) > at)
        .unwrap_or(at)
}

/// The lines `str.splitlines()` finds in `data` (which starts at a line start): its breaks, and
/// one more when the last line has none.
pub(crate) fn count_lines(data: &[u8]) -> u64 {
    let newlines = bytecount::count(data, b'\n');
    // `\r\n` is one break, and `bytecount` counted its `\n` already.
    let rare = rare_breaks(data, 0, data.len())
        .filter(|&(at, len)| !(data[at] == b'\r' && len == 2))
        .count();
    let unterminated = !data.is_empty() && break_ending_at(data, data.len()) == 0;
    (newlines + rare) as u64 + u64::from(unterminated)
}

/// Where a chunk of a longer payload can end so that the next chunk starts at a line start: just
/// after its last line break, unless that break could still grow with the bytes that follow (a
/// final `\r` may be half of a `\r\n`). `None` if the chunk holds no such break.
pub(crate) fn last_line_end(data: &[u8]) -> Option<usize> {
    let end = data.len() - usize::from(data.last() == Some(&b'\r'));
    Some(line_start(data, end)).filter(|&at| at > 0)
}

/// Where a piece of one long line (a chunk with no line break that [`last_line_end`] accepts)
/// can end without splitting a UTF-8 sequence or a line break: before a final `\r` or a final
/// incomplete UTF-8 sequence. May be 0 when the piece is that short.
pub(crate) fn safe_piece_end(data: &[u8]) -> usize {
    let len = data.len();
    if data.last() == Some(&b'\r') {
        return len - 1;
    }
    // A lead byte among the last three whose sequence (of as many bytes as its leading ones)
    // would run past the end.
    let lead = (1..=len.min(3)).find(|&back| data[len - back] & 0xc0 != 0x80);
    match lead.map(|back| (back, data[len - back].leading_ones() as usize)) {
        Some((back, needs @ 2..=4)) if needs > back => len - back,
        _ => len,
    }
}

/// A chunk of a payload, cut so that it never splits a line break or a UTF-8 sequence.
#[derive(Debug, Clone, Copy)]
pub struct LineChunk<'a> {
    /// Where the chunk starts in the payload.
    pub offset: u64,
    /// The chunk's bytes.
    pub bytes: &'a [u8],
    /// It starts a line; otherwise it goes on with the line the previous chunk ended in.
    pub starts_line: bool,
    /// It ends a line (after a line break, or at the payload's end); otherwise it holds no line
    /// break at all and its line goes on in the next chunk.
    pub ends_line: bool,
}

/// Takes a payload's chunks in order, on a blocking thread (CPU-heavy work stays off the async
/// threads, so heartbeats and other tasks keep running).
pub(super) trait ChunkSink: Send + 'static {
    /// Take the next chunk; `Break` ends the stream early.
    fn feed(&mut self, chunk: LineChunk<'_>) -> ControlFlow<()>;
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Bytes around every break, its parts alone, and text, so that breaks fall on and across
    /// the 64-byte blocks the scans test.
    fn text_with_breaks() -> impl Strategy<Value = Vec<u8>> {
        text_of(BREAKS.to_vec(), 120)
    }

    /// Every line break, its parts alone, bytes next to them, and text.
    const BREAKS: [&[u8]; 20] = [
        b"\n",
        b"\r",
        b"\r\n",
        b"\x0b",
        b"\x0c",
        b"\x1c",
        b"\x1d",
        b"\x1e",
        b"\x1f",
        b"\t",
        b"\xc2\x85",
        b"\xc2",
        b"\x85",
        b"\xe2\x80\xa8",
        b"\xe2\x80\xa9",
        b"\xe2\x80",
        b"\xe2",
        b"\xc3\xa9",
        b"a",
        b"bcdefghijklmnopqrstuvwxyz0123456789",
    ];

    /// Up to `most` of `pieces` in a row.
    fn text_of(pieces: Vec<&'static [u8]>, most: usize) -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(proptest::sample::select(pieces), 0..most)
            .prop_map(|p| p.concat())
    }

    proptest! {
        #[test]
        fn rare_breaks_are_every_break_but_newline_in_order(
            data in text_with_breaks(),
            from in 0usize..400,
            len in 0usize..400,
        ) {
            let from = from.min(data.len());
            let to = (from + len).min(data.len());
            let expected: Vec<(usize, usize)> = (from..to)
                .filter(|&i| data[i] != b'\n')
                .map(|i| (i, break_len(&data, i)))
                .filter(|&(_, len)| len > 0)
                .collect();
            let found: Vec<(usize, usize)> = rare_breaks(&data, from, to).collect();
            prop_assert_eq!(found, expected);
        }
    }

    proptest! {
        #[test]
        fn a_line_starts_after_the_last_break_that_ends_before_it(
            data in text_with_breaks(),
            at in any::<prop::sample::Index>(),
        ) {
            let at = break_start(&data, at.index(data.len() + 1));
            let after_break = (1..=at).rev().find(|&i| break_ending_at(&data, i) > 0);
            prop_assert_eq!(line_start(&data, at), after_break.unwrap_or(0));
        }
    }

    proptest! {
        #[test]
        fn the_next_break_is_the_first_byte_that_starts_one(
            data in text_with_breaks(),
            from in 0usize..400,
        ) {
            let from = from.min(data.len());
            let expected = (from..data.len())
                .map(|i| (i, break_len(&data, i)))
                .find(|&(_, len)| len > 0);
            prop_assert_eq!(next_break(&data, from), expected);
        }
    }

    proptest! {
        #[test]
        fn the_masks_have_a_bit_for_each_byte_they_mark(
            block in proptest::collection::vec(any::<u8>(), BLOCK),
        ) {
            let block: [u8; BLOCK] = block.try_into().unwrap();
            let mask = |test: &dyn Fn(u8) -> bool| (0..BLOCK).fold(0, |m, i| m | (u64::from(test(block[i])) << i));
            let candidate = |b: u8| b <= 0x1e || b == 0xc2 || b == 0xe2;
            prop_assert_eq!(break_candidates(&block), mask(&candidate));
            let rare = |b: u8| matches!(b, 0x0b..=0x0d | 0x1c..=0x1e | 0xc2 | 0xe2);
            prop_assert_eq!(rare_starts(&block), mask(&rare));
        }
    }

    #[test]
    fn line_ends_never_split_a_break_or_a_char() {
        assert_eq!(last_line_end(b"a\nb"), Some(2));
        assert_eq!(
            last_line_end(b"a\nb\r"),
            Some(2),
            "a final \\r may be half of \\r\\n"
        );
        assert_eq!(last_line_end(b"a\r\nb\r"), Some(3));
        assert_eq!(last_line_end(b"a\rb"), Some(2));
        assert_eq!(last_line_end(b"ab\xc2\x85"), Some(4));
        assert_eq!(last_line_end(b"ab\xe2\x80\xa9c"), Some(5));
        assert_eq!(last_line_end("é".repeat(40).as_bytes()), None);
        assert_eq!(last_line_end(b"\xa8\xa9"), None);
        let long = [b"x\n".as_slice(), &[b'y'; 100]].concat();
        assert_eq!(last_line_end(&long), Some(2));

        assert_eq!(safe_piece_end(b"abc\r"), 3);
        assert_eq!(safe_piece_end(b"abc\xe2\x80"), 3);
        assert_eq!(safe_piece_end(b"abc\xc2"), 3);
        assert_eq!(safe_piece_end("abé".as_bytes()), 4);
        assert_eq!(safe_piece_end(b"ab\xf0\x9f\x98"), 2);
        assert_eq!(safe_piece_end(b"ab\x80\x80"), 4);
        assert_eq!(safe_piece_end(b"\xe2"), 0);
    }
}
