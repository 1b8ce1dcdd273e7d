//! The sparse line index kept beside a spill as `<object>.idx` (format version 2), and how a page
//! by offset uses it: the one place that describes both.
//!
//! A page costs what it shows, not what the spill holds. Every spill of [`MIN_INDEXED_BYTES`] or
//! more gets an index, built while the spill is written (on every backend) and stored once the
//! payload's new ETag is known.
//!
//! # Format
//!
//! Little-endian throughout.
//!
//! | bytes | field |
//! |---|---|
//! | 8 | magic `OVSPLIDX` |
//! | 4 | format version: `2` |
//! | 4 | header length `H`: 58 + the tag's length |
//! | 8 | payload length in bytes |
//! | 8 | lines, as `str.splitlines()` counts them |
//! | 4 | `K`: lines per block |
//! | 4 | `B`: checkpoint spacing in bytes |
//! | 8 | blocks: `ceil(lines / K)` |
//! | 8 | checkpoints |
//! | 2 | tag length (at most 255) |
//! | tag | the payload's ETag when the index was built |
//! | 16 × blocks | block `b`: the offset where line `b·K` starts, and the checkpoints before it |
//! | 16 × checkpoints | a line number and the offset where that line starts |
//!
//! A checkpoint marks the first line that starts at least `B` bytes after the previous block
//! start or checkpoint. So a line starts less than `B` bytes after the nearest block start or
//! checkpoint at or before it, however long the lines are.
//!
//! **Size.** A block entry costs 16 bytes per `K` lines and every line takes at least one byte; a
//! checkpoint costs 16 bytes per `B` bytes. With `K` = 2,048 and `B` = 128 KiB an index is at most
//! 0.79 % of its payload, plus its header. Spills under [`MIN_INDEXED_BYTES`] get no index: a page
//! reads them whole.
//!
//! **Binding.** The tag ties an index to the payload version it describes. A reader trusts an
//! index only when its tag and length are the payload's, and checks every ranged read of the
//! payload against that version again, so a payload overwritten by any writer (another worker, a
//! failed index upload, the Python `OverspillStore`, which writes no index) is never paged through
//! a stale index: it is rebuilt (by streaming the payload once) and stored again. Version 1 (8
//! bytes per line, no header) and foreign objects are never trusted either.
//!
//! # Paging by offset
//!
//! A reader keeps opened indexes, whole, in a byte-bounded in-process cache. A page:
//!
//! 1. **Opens** the spill unless it is cached: one round trip reads the payload's version and
//!    the whole index at once (an index over 8 MiB, which only a spill over 2 GB has, takes one
//!    more read for its rest).
//! 2. **Locates** the page in the index, in memory: its block's start and checkpoints give the
//!    nearest line start at or before the page's first line; the next block start or checkpoint
//!    after its last line bounds where it ends ([`Header::locate`]).
//! 3. **Reads** the payload from that line start (at most `B` before the page) to that bound, at
//!    most `B` + 200 KB (a page shows 50,000 chars, 4 bytes a char at most), in one ranged read
//!    checked against the payload's version.
//!
//! So a page of a cached spill is one ranged read, and a cold page two in a row: the index
//! (about 16 bytes per 2,048 lines and per 128 KiB: 160 KB for 1 GB of 100-byte lines, 4 MB for
//! 1 GB of two-byte lines), then at most 331 KB of payload. A spill too small for an index is
//! read whole after the opening round trip. A page by pattern streams the payload instead
//! (`read::scan`).
//!
//! ```
//! use overspill::read::line_index::{Header, Index};
//!
//! let payload = b"alpha\nbeta\r\ngamma";
//! let index = Index::build(payload);
//! assert_eq!(index.lines(), 3);
//! let bytes = index.encode("\"etag-1\"").expect("a short tag");
//! let header = Header::decode(&bytes, bytes.len() as u64)?;
//! assert_eq!((header.lines(), header.tag()), (3, "\"etag-1\""));
//! # Ok::<(), overspill::read::line_index::IndexError>(())
//! ```

use std::ops::{ControlFlow, Range};

use super::lines::{ChunkSink, LineChunk, rare_breaks};

/// Lines per block.
pub const LINES_PER_BLOCK: u32 = 2_048;
/// The most bytes between a line and the nearest block start or checkpoint before it.
pub const CHECKPOINT_BYTES: u32 = 128 * 1024;
/// Spills smaller than this get no index: reading them whole is as cheap as a ranged read.
pub const MIN_INDEXED_BYTES: u64 = 64 * 1024;

const MAGIC: [u8; 8] = *b"OVSPLIDX";
const VERSION: u32 = 2;
const FIXED_LEN: u64 = 58;
const MAX_TAG: usize = 255;
/// Bytes of one block entry or checkpoint.
const ENTRY: u64 = 16;
/// Bounds a reader accepts for `K` and `B`, so that a page's reads stay bounded.
const MAX_LINES_PER_BLOCK: u32 = 1 << 16;
const MAX_CHECKPOINT_BYTES: u32 = 1 << 20;

/// Why an index object cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    /// No magic number: a foreign object, or the version 1 format.
    #[error("not an Overspill line index")]
    NotAnIndex,
    /// A format version this reader does not know.
    #[error("unsupported line index version {0}")]
    UnknownFormat(u32),
    /// A header whose fields contradict each other or the object's size.
    #[error("inconsistent line index: {0}")]
    Inconsistent(&'static str),
    /// A payload tag longer than the format allows.
    #[error("a payload tag of {0} bytes does not fit a line index")]
    TagTooLong(usize),
}

/// An object's version: its length and its ETag (`None` when the store keeps none). An index is
/// bound to the version of the payload it describes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    /// Length in bytes.
    pub size: u64,
    /// The store's ETag, as the store reports it.
    pub tag: Option<String>,
}

/// Where a line starts: its number and byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineStart {
    /// The line's number, from 0.
    pub line: u64,
    /// The byte offset of its first byte.
    pub offset: u64,
}

/// A built index, before it is encoded with its payload's tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Index {
    payload_len: u64,
    lines: u64,
    lines_per_block: u32,
    checkpoint_bytes: u32,
    blocks: Vec<[u64; 2]>,
    checkpoints: Vec<[u64; 2]>,
}

impl Index {
    /// Index `data` in one pass.
    pub fn build(data: &[u8]) -> Self {
        let mut builder = IndexBuilder::new();
        builder.feed(data);
        builder.finish()
    }

    /// The payload's line count.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// The encoded object, bound to the payload version `tag`.
    pub fn encode(&self, tag: &str) -> Result<Vec<u8>, IndexError> {
        if tag.len() > MAX_TAG {
            return Err(IndexError::TagTooLong(tag.len()));
        }
        let header_len = FIXED_LEN + tag.len() as u64;
        let entries = (self.blocks.len() + self.checkpoints.len()) as u64;
        let mut out = Vec::with_capacity((header_len + ENTRY * entries) as usize);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(header_len as u32).to_le_bytes());
        out.extend_from_slice(&self.payload_len.to_le_bytes());
        out.extend_from_slice(&self.lines.to_le_bytes());
        out.extend_from_slice(&self.lines_per_block.to_le_bytes());
        out.extend_from_slice(&self.checkpoint_bytes.to_le_bytes());
        out.extend_from_slice(&(self.blocks.len() as u64).to_le_bytes());
        out.extend_from_slice(&(self.checkpoints.len() as u64).to_le_bytes());
        out.extend_from_slice(&(tag.len() as u16).to_le_bytes());
        out.extend_from_slice(tag.as_bytes());
        for entry in self.blocks.iter().chain(&self.checkpoints) {
            out.extend_from_slice(&entry[0].to_le_bytes());
            out.extend_from_slice(&entry[1].to_le_bytes());
        }
        Ok(out)
    }
}

/// Builds an [`Index`] from a payload fed in order, in pieces that never split a line break (a
/// whole payload, or [`LineChunk`]s). Memory: the index itself.
#[derive(Debug)]
pub struct IndexBuilder {
    /// The index so far (its payload length: the bytes fed so far).
    index: Index,
    /// The number of the line that starts the next block.
    next_block: u64,
    /// Where the last block or checkpoint starts.
    last_mark: u64,
    /// The next byte fed starts a line.
    at_line_start: bool,
}

impl Default for IndexBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl IndexBuilder {
    /// A builder with the standard spacing ([`LINES_PER_BLOCK`], [`CHECKPOINT_BYTES`]).
    pub fn new() -> Self {
        Self::with_spacing(LINES_PER_BLOCK, CHECKPOINT_BYTES)
    }

    /// A builder with `lines_per_block` and `checkpoint_bytes` (clamped to what readers accept).
    pub fn with_spacing(lines_per_block: u32, checkpoint_bytes: u32) -> Self {
        Self {
            index: Index {
                payload_len: 0,
                lines: 0,
                lines_per_block: lines_per_block.clamp(1, MAX_LINES_PER_BLOCK),
                checkpoint_bytes: checkpoint_bytes.clamp(1, MAX_CHECKPOINT_BYTES),
                blocks: Vec::new(),
                checkpoints: Vec::new(),
            },
            next_block: 0,
            last_mark: 0,
            at_line_start: true,
        }
    }

    /// Index the next `data` of the payload.
    pub fn feed(&mut self, data: &[u8]) {
        let base = self.index.payload_len;
        let mut at = 0;
        let end = std::iter::once((data.len(), 0));
        for (position, len) in rare_breaks(data, 0, data.len()).chain(end) {
            if position < at {
                continue;
            }
            self.newline_run(base, &data[at..position], at);
            if len == 0 {
                break;
            }
            // A rare break ends a line (an empty one if a line starts right here).
            if self.at_line_start {
                self.start_line(base + position as u64);
            }
            self.at_line_start = true;
            at = position + len;
        }
        self.index.payload_len += data.len() as u64;
    }

    /// Index `run`, found at `at` in the data fed at `base`, whose only breaks are `\n`.
    fn newline_run(&mut self, base: u64, run: &[u8], at: usize) {
        let Some(&last) = run.last() else {
            return;
        };
        let start = base + at as u64;
        if self.at_line_start {
            self.start_line(start);
        }
        // A line starts after every newline but a final one: the bytes fed next start that line.
        self.at_line_start = last == b'\n';
        let body = &run[..run.len() - usize::from(self.at_line_start)];
        for newline in memchr::memchr_iter(b'\n', body) {
            self.start_line(start + newline as u64 + 1);
        }
    }

    #[inline]
    fn start_line(&mut self, offset: u64) {
        let index = &mut self.index;
        if index.lines == self.next_block {
            index.blocks.push([offset, index.checkpoints.len() as u64]);
            self.next_block += u64::from(index.lines_per_block);
            self.last_mark = offset;
        } else if offset >= self.last_mark + u64::from(index.checkpoint_bytes) {
            index.checkpoints.push([index.lines, offset]);
            self.last_mark = offset;
        }
        index.lines += 1;
    }

    /// The index of everything fed.
    pub fn finish(self) -> Index {
        self.index
    }
}

impl ChunkSink for IndexBuilder {
    fn feed(&mut self, chunk: LineChunk<'_>) -> ControlFlow<()> {
        IndexBuilder::feed(self, chunk.bytes);
        ControlFlow::Continue(())
    }
}

/// A decoded, checked index header: what a page needs before reading any entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    len: u64,
    payload_len: u64,
    lines: u64,
    lines_per_block: u32,
    checkpoint_bytes: u32,
    blocks: u64,
    checkpoints: u64,
    tag: String,
}

/// The fields of a header, read in order; running out of bytes is [`IndexError::NotAnIndex`].
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], IndexError> {
        let (field, rest) = self.0.split_first_chunk().ok_or(IndexError::NotAnIndex)?;
        self.0 = rest;
        Ok(*field)
    }

    fn u32(&mut self) -> Result<u32, IndexError> {
        self.take().map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> Result<u64, IndexError> {
        self.take().map(u64::from_le_bytes)
    }
}

impl Header {
    /// The longest header there is: read this much to decode any header.
    pub const MAX_LEN: u64 = FIXED_LEN + MAX_TAG as u64;

    /// Decode the header at the start of `bytes`, an index object of `object_size` bytes, and
    /// check that its fields agree with each other and with that size.
    pub fn decode(bytes: &[u8], object_size: u64) -> Result<Self, IndexError> {
        let mut fields = Fields(bytes);
        if fields.take::<8>()? != MAGIC {
            return Err(IndexError::NotAnIndex);
        }
        let version = fields.u32()?;
        if version != VERSION {
            return Err(IndexError::UnknownFormat(version));
        }
        let len = u64::from(fields.u32()?);
        let (payload_len, lines) = (fields.u64()?, fields.u64()?);
        let (lines_per_block, checkpoint_bytes) = (fields.u32()?, fields.u32()?);
        let (blocks, checkpoints) = (fields.u64()?, fields.u64()?);
        let tag_len = usize::from(u16::from_le_bytes(fields.take()?));
        if tag_len > MAX_TAG || len != FIXED_LEN + tag_len as u64 {
            return Err(IndexError::Inconsistent("header length"));
        }
        let tag = fields
            .0
            .get(..tag_len)
            .and_then(|t| std::str::from_utf8(t).ok())
            .ok_or(IndexError::Inconsistent("tag"))?;
        let header = Self {
            len,
            payload_len,
            lines,
            lines_per_block,
            checkpoint_bytes,
            blocks,
            checkpoints,
            tag: tag.to_owned(),
        };
        header.check(object_size)?;
        Ok(header)
    }

    fn check(&self, object_size: u64) -> Result<(), IndexError> {
        let inconsistent = |what| Err(IndexError::Inconsistent(what));
        if !(1..=MAX_LINES_PER_BLOCK).contains(&self.lines_per_block)
            || !(1..=MAX_CHECKPOINT_BYTES).contains(&self.checkpoint_bytes)
        {
            return inconsistent("spacing");
        }
        // Every line takes at least one byte; checkpoints are at least B bytes apart.
        if self.lines > self.payload_len
            || self.blocks != self.lines.div_ceil(u64::from(self.lines_per_block))
            || self.checkpoints > self.payload_len / u64::from(self.checkpoint_bytes)
        {
            return inconsistent("counts");
        }
        // Checked: a crafted header's counts may be near `u64::MAX`.
        let size = (self.blocks.checked_add(self.checkpoints))
            .and_then(|entries| entries.checked_mul(ENTRY))
            .and_then(|entries| entries.checked_add(self.len));
        if size != Some(object_size) {
            return inconsistent("object size");
        }
        Ok(())
    }

    /// Whether this index describes `payload`: same length, same tag.
    pub fn describes(&self, payload: &Version) -> bool {
        self.payload_len == payload.size && payload.tag.as_deref() == Some(self.tag.as_str())
    }

    /// The payload's line count.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// The payload length the index was built for.
    pub fn payload_len(&self) -> u64 {
        self.payload_len
    }

    /// The payload tag the index was built for.
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// The most bytes a page reads before its first line.
    pub fn checkpoint_bytes(&self) -> u64 {
        u64::from(self.checkpoint_bytes)
    }

    /// Where a page of `lines` (not empty) reads the payload, from `index`, the whole index
    /// object: from the nearest line start at or before `lines.start` (its block's start or a
    /// checkpoint, so less than `B` bytes before that line), to the first block start or
    /// checkpoint at or after line `lines.end` (the payload's end when there is none).
    pub fn locate(&self, index: &[u8], lines: Range<u64>) -> (LineStart, u64) {
        let k = u64::from(self.lines_per_block);
        let entry = |i: u64| entry(index, self.len + ENTRY * i);
        let block = (lines.start / k).min(self.blocks.saturating_sub(1));
        let [offset, first] = entry(block);
        let mut start = LineStart {
            line: block * k,
            offset: offset.min(self.payload_len),
        };
        let next = lines.end.div_ceil(k);
        let mut end = match next < self.blocks {
            true => entry(next)[0].min(self.payload_len),
            false => self.payload_len,
        };
        // Checkpoints lie at distinct lines, in order: the block's, up to line `lines.end`.
        let first = first.min(self.checkpoints);
        let span = lines.end.saturating_sub(start.line).saturating_add(1);
        let last = self.checkpoints.min(first.saturating_add(span));
        for [at, offset] in (first..last).map(|i| entry(self.blocks + i)) {
            if offset > self.payload_len {
                continue;
            }
            if (start.line..=lines.start).contains(&at) && offset >= start.offset {
                start = LineStart { line: at, offset };
            } else if at >= lines.end && offset > start.offset {
                end = end.min(offset);
                break;
            }
        }
        (start, end)
    }
}

/// The 16-byte entry at byte `at` of `index`: two little-endian numbers (zeros past the end).
fn entry(index: &[u8], at: u64) -> [u64; 2] {
    let bytes = usize::try_from(at).ok().and_then(|at| index.get(at..));
    let both = bytes
        .and_then(<[u8]>::first_chunk::<16>)
        .map_or(0, |e| u128::from_le_bytes(*e));
    [both as u64, (both >> 64) as u64]
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::read::lines::{break_start, split_lines};

    /// Where each line starts, the slow, obvious way.
    fn line_starts(data: &[u8]) -> Vec<u64> {
        split_lines(data)
            .map(|r| r.start as u64)
            .collect::<Vec<_>>()
    }

    fn payload() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            Just(b"\n".to_vec()),
            Just(b"\r\n".to_vec()),
            Just(b"\r".to_vec()),
            Just("\u{85}\u{2028}\x0b".as_bytes().to_vec()),
            Just(vec![0xe2, 0x80]),
            "[a-z]{0,30}".prop_map(String::into_bytes),
            Just(vec![b'x'; 70]),
            Just(b"x\n".repeat(40)),
        ];
        prop::collection::vec(piece, 0..60).prop_map(|v| v.concat())
    }

    fn build_with(data: &[u8], k: u32, b: u32) -> Index {
        let mut builder = IndexBuilder::with_spacing(k, b);
        builder.feed(data);
        builder.finish()
    }

    proptest! {
        #[test]
        fn every_line_is_found_within_the_checkpoint_spacing(
            data in payload(),
            (k, b) in (1u32..9, 1u32..200),
            cuts in prop::collection::vec(0usize..3_000, 0..4),
        ) {
            // Fed in pieces that never split a break, as streams feed it: the same index.
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| break_start(&data, c.min(data.len()))).collect();
            cuts.sort();
            let mut builder = IndexBuilder::with_spacing(k, b);
            let mut at = 0;
            for cut in cuts {
                builder.feed(&data[at..cut]);
                at = cut;
            }
            builder.feed(&data[at..]);
            let index = builder.finish();
            prop_assert_eq!(&index, &build_with(&data, k, b));
            let starts = line_starts(&data);
            prop_assert_eq!(index.lines(), starts.len() as u64);
            let bytes = index.encode("tag").unwrap();
            let header = Header::decode(&bytes, bytes.len() as u64).unwrap();
            let lines = starts.len() as u64;
            for (line, &offset) in starts.iter().enumerate() {
                let line = line as u64;
                for end in line + 1..=lines.min(line + 3 * u64::from(k)) {
                    let (found, bound) = header.locate(&bytes, line..end);
                    prop_assert!(found.line <= line && line - found.line < u64::from(k));
                    prop_assert_eq!(starts[found.line as usize], found.offset);
                    prop_assert!(found.line == line || offset - found.offset < u64::from(b));
                    // The page's lines end at or before the bound, a line start after the
                    // page's, and no later than the next block's start.
                    let needed = starts.get(end as usize).copied().unwrap_or(data.len() as u64);
                    let next = end.div_ceil(u64::from(k)) * u64::from(k);
                    let most = starts.get(next as usize).copied().unwrap_or(data.len() as u64);
                    prop_assert!(needed <= bound && bound <= most, "line {} end {}", line, end);
                    prop_assert!(bound > found.offset);
                    prop_assert!(bound == data.len() as u64 || starts.contains(&bound));
                }
            }
        }
    }

    #[test]
    fn header_round_trips_and_binds_the_payload() {
        let data = b"one\ntwo\n".repeat(1_000);
        let bytes = Index::build(&data).encode("\"abc\"").unwrap();
        let header = Header::decode(&bytes, bytes.len() as u64).unwrap();
        assert_eq!(header.lines(), 2_000);
        let v = |size: usize, tag: &str| Version {
            size: size as u64,
            tag: Some(tag.into()),
        };
        assert!(header.describes(&v(data.len(), "\"abc\"")));
        assert!(
            !header.describes(&v(data.len(), "\"abd\"")),
            "another version"
        );
        assert!(!header.describes(&v(data.len() + 1, "\"abc\"")));
        assert!(!header.describes(&Version {
            size: data.len() as u64,
            tag: None
        }));
    }

    #[test]
    fn refuses_foreign_and_inconsistent_objects() {
        let bytes = Index::build(&b"a\n".repeat(5_000)).encode("t").unwrap();
        let size = bytes.len() as u64;
        assert_eq!(
            Header::decode(&bytes, size + 1),
            Err(IndexError::Inconsistent("object size"))
        );
        // The version 1 format: 8 bytes a line, no header.
        let v1: Vec<u8> = (1u64..100).flat_map(|e| (e * 2).to_le_bytes()).collect();
        assert_eq!(
            Header::decode(&v1, v1.len() as u64),
            Err(IndexError::NotAnIndex)
        );
        assert_eq!(Header::decode(b"", 1 << 30), Err(IndexError::NotAnIndex));
        let mut future = bytes.clone();
        future[8] = 3;
        assert_eq!(
            Header::decode(&future, size),
            Err(IndexError::UnknownFormat(3))
        );
        // More lines than payload bytes.
        let mut lying = bytes.clone();
        lying[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(
            Header::decode(&lying, size),
            Err(IndexError::Inconsistent("counts"))
        );
        // Counts whose entries would overflow the object size's arithmetic.
        let mut huge = bytes.clone();
        huge[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        huge[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
        huge[32..36].copy_from_slice(&1u32.to_le_bytes());
        huge[40..48].copy_from_slice(&u64::MAX.to_le_bytes());
        huge[48..56].copy_from_slice(&0u64.to_le_bytes());
        assert_eq!(
            Header::decode(&huge, size),
            Err(IndexError::Inconsistent("object size"))
        );
        let mut spaced = bytes;
        spaced[36..40].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            Header::decode(&spaced, size),
            Err(IndexError::Inconsistent("spacing"))
        );
        assert_eq!(
            Index::build(b"x").encode(&"t".repeat(256)),
            Err(IndexError::TagTooLong(256))
        );
    }

    #[test]
    fn index_of_short_lines_stays_under_one_percent() {
        // The worst case: every line is a bare line break.
        let data = vec![b'\n'; 1 << 20];
        let bytes = Index::build(&data).encode(&"e".repeat(64)).unwrap();
        assert!(bytes.len() * 100 <= data.len(), "{} bytes", bytes.len());
    }
}
