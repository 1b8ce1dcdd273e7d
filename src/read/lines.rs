//! Python's `str.splitlines()` over raw bytes, and where a payload can be cut into chunks that
//! never split a line break or a UTF-8 sequence.
//!
//! The reference decodes a spill lossily, then splits it. Every break `splitlines()` knows is
//! ASCII (`\n`, `\r`, `\r\n`, `\x0b`, `\x0c`, `\x1c`, `\x1d`, `\x1e`) or one complete UTF-8
//! sequence (U+0085 = `c2 85`, U+2028 / U+2029 = `e2 80 a8` / `e2 80 a9`), and no invalid
//! sequence can swallow one, so breaks are found in the raw bytes and each line is decoded alone.
//!
//! Breaks other than `\n` are rare, so bytes to split are first rewritten with `\n` as their only
//! break ([`newlines_only`]: one vectorized pass, and a copy only when some other break is there);
//! the lines are then found with `memchr`, counted with `bytecount`.

use std::borrow::Cow;
use std::ops::{ControlFlow, Range};

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

/// The line breaks other than `\n` that start in `data[from..to]`, in order: `(position,
/// length)` (a break may run past `to`).
pub(crate) fn rare_breaks(
    data: &[u8],
    from: usize,
    to: usize,
) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut at = from;
    std::iter::from_fn(move || {
        while at < to {
            let Some(found) = next_rare_start(&data[at..to]).map(|i| at + i) else {
                at = to;
                break;
            };
            at = found + 1;
            let len = break_len(data, found);
            if len > 0 {
                return Some((found, len));
            }
        }
        None
    })
}

/// Where in `hay` the first byte that may start a break other than `\n` is.
///
/// Text rarely has one, so the scan tests 64 bytes at a time with no early exit inside a block,
/// which the compiler turns into SIMD comparisons: one pass over the bytes, where a `memchr` per
/// byte value would take three.
fn next_rare_start(hay: &[u8]) -> Option<usize> {
    let first = |bytes: &[u8]| bytes.iter().position(|&b| rare_break_byte(b));
    let (blocks, rest) = hay.as_chunks::<BLOCK>();
    // OR-ing bytes (not bools) is what vectorizes.
    let rare = |block: &&[u8; BLOCK]| {
        block
            .iter()
            .fold(0, |any, &b| any | u8::from(rare_break_byte(b)))
    };
    match blocks.iter().position(|block| rare(&block) != 0) {
        Some(n) => first(&blocks[n]).map(|i| n * BLOCK + i),
        None => first(rest).map(|i| blocks.len() * BLOCK + i),
    }
}

/// Bytes [`next_rare_start`] tests at once.
const BLOCK: usize = 64;

/// Whether `b` can start a line break other than `\n`: `\x0b`–`\r`, `\x1c`–`\x1e`, or the
/// first byte of U+0085 or U+2028/U+2029 (written without branches, so that it vectorizes).
#[inline(always)]
fn rare_break_byte(b: u8) -> bool {
    (b.wrapping_sub(0x0b) < 3) | (b.wrapping_sub(0x1c) < 3) | (b == 0xc2) | (b == 0xe2)
}

/// `data` with every line break written as one `\n`: the same lines, in bytes that a line
/// search can split with `memchr` alone (borrowed unless `data` has a break other than `\n`).
///
/// ```
/// use overspill::read::{newlines_only, split_lines};
///
/// let data = newlines_only(b"a\r\nb\rc\xc2\x85d\n");
/// assert_eq!(split_lines(&data).collect::<Vec<_>>(), [&b"a"[..], b"b", b"c", b"d"]);
/// ```
pub fn newlines_only(data: &[u8]) -> Cow<'_, [u8]> {
    let mut rare = rare_breaks(data, 0, data.len()).peekable();
    if rare.peek().is_none() {
        return Cow::Borrowed(data);
    }
    let mut out = Vec::with_capacity(data.len());
    let mut at = 0;
    for (position, len) in rare {
        out.extend_from_slice(&data[at..position]);
        out.push(b'\n');
        at = position + len;
    }
    out.extend_from_slice(&data[at..]);
    Cow::Owned(out)
}

/// The lines of `data` whose only line break is `\n` (see [`newlines_only`]), as
/// `str.splitlines()` splits them: a final `\n` ends the last line rather than starting one.
pub fn split_lines(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    let body = data.strip_suffix(b"\n").unwrap_or(data);
    (!data.is_empty())
        .then(|| body.split(|&b| b == b'\n'))
        .into_iter()
        .flatten()
}

/// Lines `window` of `data` (`\n` its only break; lines counted from 0 at its start).
pub(crate) fn window_lines(data: &[u8], window: Range<u64>) -> impl Iterator<Item = &[u8]> {
    let skip = usize::try_from(window.start).unwrap_or(usize::MAX);
    let take = usize::try_from(window.end - window.start).unwrap_or(usize::MAX);
    split_lines(data).skip(skip).take(take)
}

/// The lines in `data` (`\n` its only break): its newlines, and one more when the last line
/// has none.
pub(crate) fn count_lines(data: &[u8]) -> u64 {
    let unterminated = data.last().is_some_and(|&b| b != b'\n');
    (bytecount::count(data, b'\n') + usize::from(unterminated)) as u64
}

/// The start of the line holding `data[at]` (`\n` its only break).
pub(crate) fn line_start(data: &[u8], at: usize) -> usize {
    memchr::memrchr(b'\n', &data[..at]).map_or(0, |i| i + 1)
}

/// The end of the line holding `data[at]` (`\n` its only break): its `\n`, or the data's end.
pub(crate) fn line_end(data: &[u8], at: usize) -> usize {
    memchr::memchr(b'\n', &data[at..]).map_or(data.len(), |i| at + i)
}

/// Where a chunk of a longer payload can end so that the next chunk starts at a line start: just
/// after its last line break, unless that break could still grow with the bytes that follow (a
/// final `\r` may be half of a `\r\n`). `None` if the chunk holds no such break.
pub(crate) fn last_line_end(data: &[u8]) -> Option<usize> {
    let end = data.len() - usize::from(data.last() == Some(&b'\r'));
    let after_newline = memchr::memrchr(b'\n', &data[..end]).map_or(0, |i| i + 1);
    let after_rare = rare_breaks(data, after_newline, end).last();
    Some(after_rare.map_or(after_newline, |(at, len)| at + len)).filter(|&at| at > 0)
}

/// Where a piece of one long line (a chunk with no line break that [`last_line_end`] accepts)
/// can end without splitting a UTF-8 sequence or a line break: before a final `\r` or a final
/// incomplete UTF-8 sequence. May be 0 when the piece is that short.
pub(crate) fn safe_piece_end(data: &[u8]) -> usize {
    let len = data.len();
    if data.last() == Some(&b'\r') {
        return len - 1;
    }
    // A lead byte among the last three whose sequence would run past the end.
    for back in 1..=len.min(3) {
        let b = data[len - back];
        let needs = match b {
            0xc0..=0xdf => 2,
            0xe0..=0xef => 3,
            0xf0..=0xf7 => 4,
            0x80..=0xbf => continue,
            _ => return len,
        };
        return if needs > back { len - back } else { len };
    }
    len
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
pub trait ChunkSink: Send + 'static {
    /// Take the next chunk; `Break` ends the stream early.
    fn feed(&mut self, chunk: LineChunk<'_>) -> ControlFlow<()>;
}

#[cfg(test)]
pub(super) mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Bytes around every break, its parts alone, and text, so that breaks fall on and across
    /// the 64-byte blocks `next_rare_start` tests.
    fn text_with_breaks() -> impl Strategy<Value = Vec<u8>> {
        text_of(BREAKS.to_vec(), 120)
    }

    /// Every line break, its parts alone, bytes next to them, and text.
    pub(in crate::read) const BREAKS: [&[u8]; 20] = [
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
    pub(in crate::read) fn text_of(
        pieces: Vec<&'static [u8]>,
        most: usize,
    ) -> impl Strategy<Value = Vec<u8>> {
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

    /// Where `data`'s lines are, by the definition: each break is the [`break_len`] at the first
    /// byte that starts one.
    pub(in crate::read) fn line_ranges(data: &[u8]) -> Vec<Range<usize>> {
        let (mut lines, mut start, mut i) = (Vec::new(), 0, 0);
        while i < data.len() {
            match break_len(data, i) {
                0 => i += 1,
                len => {
                    lines.push(start..i);
                    (start, i) = (i + len, i + len);
                }
            }
        }
        if start < data.len() {
            lines.push(start..data.len());
        }
        lines
    }

    proptest! {
        #[test]
        fn newlines_only_keeps_every_line(data in text_with_breaks()) {
            let expected: Vec<&[u8]> = line_ranges(&data).into_iter().map(|r| &data[r]).collect();
            let rewritten = newlines_only(&data);
            prop_assert_eq!(split_lines(&rewritten).collect::<Vec<_>>(), expected.clone());
            prop_assert_eq!(count_lines(&rewritten), expected.len() as u64);
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
