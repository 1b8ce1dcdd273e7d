//! The sparse line index kept beside a spill as `<object>.idx` (format version 3), and how a page
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
//! | 4 | format version: `3` |
//! | 4 | header length `H`: 46 + the tag's length |
//! | 8 | payload length in bytes |
//! | 8 | lines, as `str.splitlines()` counts them |
//! | 4 | `B`: checkpoint spacing in bytes |
//! | 8 | checkpoints |
//! | 2 | tag length (at most 255) |
//! | tag | the payload's ETag when the index was built |
//! | 16 × checkpoints | a line number and the offset where that line starts, in order |
//!
//! A checkpoint marks the first line that starts at least `B` bytes after the previous checkpoint
//! (line 0, at offset 0, counts as one and has no entry). So every line starts less than `B`
//! bytes after the nearest checkpoint at or before it, however long or short the lines are.
//!
//! **Size.** Checkpoints are at least `B` bytes apart: with `B` = 64 KiB an index takes at most
//! 16 bytes per 64 KiB of payload (0.025 %, 256 KiB for 1 GiB), plus its header. Spills under
//! [`MIN_INDEXED_BYTES`] get no index: a page reads them whole.
//!
//! **Binding.** The tag ties an index to the payload version it describes. A reader trusts an
//! index only when its tag and length are the payload's, and checks every ranged read of the
//! payload against that version again, so a payload overwritten by any writer (another worker, a
//! failed index upload, the Python `OverspillStore`, which writes no index) is never paged through
//! a stale index: it is rebuilt (by streaming the payload once) and stored again. Older formats
//! (version 1: 8 bytes per line, no header; version 2: blocks of lines beside the checkpoints)
//! and foreign objects are never trusted either: they are rebuilt alike.
//!
//! # Paging by offset
//!
//! A reader keeps opened indexes, whole, in a byte-bounded in-process cache. A page:
//!
//! 1. **Opens** the spill unless it is cached: one round trip reads the payload's version and
//!    the whole index at once (an index over 8 MiB, which only a spill over 32 GiB has, takes
//!    one more read for its rest).
//! 2. **Locates** the page in the index, in memory, by two binary searches: the last checkpoint
//!    at or before the page's first line (less than `B` bytes before it), and the first at or
//!    after the line that follows the page, which bounds where it ends ([`Header::locate`]).
//! 3. **Reads** the payload between the two, at most `B` + 200 KB (a page shows 50,000 chars, 4
//!    bytes a char at most), in one ranged read checked against the payload's version.
//!
//! So a page of a cached spill is one ranged read, and a cold page two in a row: the index, then
//! at most 266 KB of payload. A page that shows no payload bytes (past the end) of a cached spill
//! reads the payload's version instead: every page reads the payload, so a store that scopes its
//! reads checks each one. A spill too small for an index is read whole after the opening
//! round trip. A page by pattern streams the payload instead (`read::scan`).
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

/// The most bytes between a line and the nearest checkpoint at or before it.
pub const CHECKPOINT_BYTES: u32 = 64 * 1024;
/// Spills smaller than this get no index: reading them whole is as cheap as a ranged read.
pub const MIN_INDEXED_BYTES: u64 = 64 * 1024;

const MAGIC: [u8; 8] = *b"OVSPLIDX";
const VERSION: u32 = 3;
const FIXED_LEN: u64 = 46;
const MAX_TAG: usize = 255;
/// Bytes of one checkpoint.
const ENTRY: usize = 16;
/// The widest spacing a reader accepts, so that a page's reads stay bounded.
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LineStart {
    /// The line's number, from 0.
    pub line: u64,
    /// The byte offset of its first byte.
    pub offset: u64,
}

impl LineStart {
    /// This checkpoint as an index entry: the line number, then the offset.
    fn encode(self) -> [u8; ENTRY] {
        (u128::from(self.line) | u128::from(self.offset) << 64).to_le_bytes()
    }

    /// The checkpoint in `entry`, as [`Self::encode`] wrote it.
    fn decode(entry: &[u8; ENTRY]) -> Self {
        let both = u128::from_le_bytes(*entry);
        Self {
            line: both as u64,
            offset: (both >> 64) as u64,
        }
    }
}

/// A built index, before it is encoded with its payload's tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Index {
    payload_len: u64,
    lines: u64,
    checkpoint_bytes: u32,
    checkpoints: Vec<LineStart>,
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
        let header_len = FIXED_LEN as usize + tag.len();
        let mut out = Vec::with_capacity(header_len + ENTRY * self.checkpoints.len());
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(header_len as u32).to_le_bytes());
        out.extend_from_slice(&self.payload_len.to_le_bytes());
        out.extend_from_slice(&self.lines.to_le_bytes());
        out.extend_from_slice(&self.checkpoint_bytes.to_le_bytes());
        out.extend_from_slice(&(self.checkpoints.len() as u64).to_le_bytes());
        out.extend_from_slice(&(tag.len() as u16).to_le_bytes());
        out.extend_from_slice(tag.as_bytes());
        for checkpoint in &self.checkpoints {
            out.extend_from_slice(&checkpoint.encode());
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
    /// Where the last checkpoint starts.
    last_checkpoint: u64,
    /// The next byte fed starts a line.
    at_line_start: bool,
}

impl Default for IndexBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl IndexBuilder {
    /// A builder with the standard spacing ([`CHECKPOINT_BYTES`]).
    pub fn new() -> Self {
        Self::with_spacing(CHECKPOINT_BYTES)
    }

    /// A builder with a checkpoint every `checkpoint_bytes` (clamped to what readers accept).
    pub fn with_spacing(checkpoint_bytes: u32) -> Self {
        Self {
            index: Index {
                payload_len: 0,
                lines: 0,
                checkpoint_bytes: checkpoint_bytes.clamp(1, MAX_CHECKPOINT_BYTES),
                checkpoints: Vec::new(),
            },
            last_checkpoint: 0,
            at_line_start: true,
        }
    }

    /// Index the next `data` of the payload.
    pub fn feed(&mut self, data: &[u8]) {
        let base = self.index.payload_len;
        let mut at = 0;
        for (position, len) in rare_breaks(data, 0, data.len()) {
            self.newline_run(base + at as u64, &data[at..position]);
            // A rare break ends a line (an empty one if a line starts right here).
            if self.at_line_start {
                self.start_line(base + position as u64);
            }
            self.at_line_start = true;
            at = position + len;
        }
        self.newline_run(base + at as u64, &data[at..]);
        self.index.payload_len += data.len() as u64;
    }

    /// Index `run`, which starts at `start` and whose only breaks are `\n`.
    fn newline_run(&mut self, start: u64, run: &[u8]) {
        let Some(&last) = run.last() else {
            return;
        };
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
        if offset >= self.last_checkpoint + u64::from(index.checkpoint_bytes) {
            let line = index.lines;
            index.checkpoints.push(LineStart { line, offset });
            self.last_checkpoint = offset;
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
    checkpoint_bytes: u32,
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
    pub(crate) const MAX_LEN: u64 = FIXED_LEN + MAX_TAG as u64;

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
        let (checkpoint_bytes, checkpoints) = (fields.u32()?, fields.u64()?);
        let tag_len = usize::from(u16::from_le_bytes(fields.take()?));
        let inconsistent = |what| Err(IndexError::Inconsistent(what));
        if tag_len > MAX_TAG || len != FIXED_LEN + tag_len as u64 {
            return inconsistent("header length");
        }
        let tag = fields
            .0
            .get(..tag_len)
            .and_then(|t| std::str::from_utf8(t).ok())
            .ok_or(IndexError::Inconsistent("tag"))?;
        if !(1..=MAX_CHECKPOINT_BYTES).contains(&checkpoint_bytes) {
            return inconsistent("spacing");
        }
        // Every line takes at least one byte; checkpoints are at least B bytes apart.
        if lines > payload_len || checkpoints > payload_len / u64::from(checkpoint_bytes) {
            return inconsistent("counts");
        }
        // Checked: a crafted header's counts may be near `u64::MAX`.
        let size = (checkpoints.checked_mul(ENTRY as u64)).and_then(|n| n.checked_add(len));
        if size != Some(object_size) {
            return inconsistent("object size");
        }
        Ok(Self {
            len,
            payload_len,
            lines,
            checkpoint_bytes,
            checkpoints,
            tag: tag.to_owned(),
        })
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
    /// object: from the last checkpoint at or before `lines.start` (less than `B` bytes before
    /// that line), to the first checkpoint at or after line `lines.end` (the payload's end when
    /// there is none). Offsets past the payload are clamped to its end.
    pub fn locate(&self, index: &[u8], lines: Range<u64>) -> (LineStart, u64) {
        let entries = index.get(self.len as usize..).unwrap_or_default();
        let (entries, _) = entries.as_chunks::<ENTRY>();
        let count = usize::try_from(self.checkpoints).unwrap_or(usize::MAX);
        let entries = &entries[..entries.len().min(count)];
        let line_of = |entry: &[u8; ENTRY]| LineStart::decode(entry).line;
        let before = entries.partition_point(|e| line_of(e) <= lines.start);
        let start = (entries[..before].last()).map_or_else(LineStart::default, LineStart::decode);
        let after = entries.partition_point(|e| line_of(e) < lines.end);
        let end = (entries.get(after)).map_or(self.payload_len, |e| LineStart::decode(e).offset);
        let offset = start.offset.min(self.payload_len);
        (LineStart { offset, ..start }, end.min(self.payload_len))
    }
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

    fn build_with(data: &[u8], b: u32) -> Index {
        let mut builder = IndexBuilder::with_spacing(b);
        builder.feed(data);
        builder.finish()
    }

    /// The checkpoints of `starts` for spacing `b`, the slow, obvious way.
    fn checkpoints(starts: &[u64], b: u32) -> Vec<LineStart> {
        let mut last = 0;
        let mut out = Vec::new();
        for (line, &offset) in starts.iter().enumerate() {
            if offset >= last + u64::from(b) {
                out.push(LineStart {
                    line: line as u64,
                    offset,
                });
                last = offset;
            }
        }
        out
    }

    proptest! {
        #[test]
        fn every_line_is_found_within_the_checkpoint_spacing(
            data in payload(),
            b in 1u32..200,
            cuts in prop::collection::vec(0usize..3_000, 0..4),
        ) {
            // Fed in pieces that never split a break, as streams feed it: the same index.
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| break_start(&data, c.min(data.len()))).collect();
            cuts.sort();
            let mut builder = IndexBuilder::with_spacing(b);
            let mut at = 0;
            for cut in cuts {
                builder.feed(&data[at..cut]);
                at = cut;
            }
            builder.feed(&data[at..]);
            let index = builder.finish();
            prop_assert_eq!(&index, &build_with(&data, b));
            let starts = line_starts(&data);
            prop_assert_eq!(index.lines(), starts.len() as u64);
            let expected = checkpoints(&starts, b);
            prop_assert_eq!(&index.checkpoints, &expected);
            let bytes = index.encode("tag").unwrap();
            let header = Header::decode(&bytes, bytes.len() as u64).unwrap();
            let lines = starts.len() as u64;
            for (line, &offset) in starts.iter().enumerate() {
                let line = line as u64;
                for end in line + 1..=lines.min(line + 5) {
                    let (found, bound) = header.locate(&bytes, line..end);
                    // The last checkpoint at or before the line (line 0 when none is).
                    let before = expected.iter().rev().find(|c| c.line <= line);
                    prop_assert_eq!(found, before.copied().unwrap_or_default());
                    prop_assert!(offset - found.offset < u64::from(b));
                    // The first checkpoint at or after the line after the page.
                    let after = expected.iter().find(|c| c.line >= end);
                    prop_assert_eq!(bound, after.map_or(data.len() as u64, |c| c.offset));
                    let needed = starts.get(end as usize).copied().unwrap_or(data.len() as u64);
                    prop_assert!(needed <= bound && bound > found.offset);
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
        // The format before (blocks beside checkpoints), and one after.
        for version in [2, 4] {
            let mut other = bytes.clone();
            other[8] = version;
            assert_eq!(
                Header::decode(&other, size),
                Err(IndexError::UnknownFormat(version.into()))
            );
        }
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
        huge[36..44].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(
            Header::decode(&huge, size),
            Err(IndexError::Inconsistent("object size"))
        );
        let mut spaced = bytes;
        spaced[32..36].copy_from_slice(&u32::MAX.to_le_bytes());
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
