//! All of stdin as one buffer: a regular file is mapped, anything else is read.
//!
//! `overspill reduce < big.log` maps the file rather than reading it: no fresh pages for the
//! kernel to zero and no copy, and a spill hands the store the mapped pages themselves. A pipe,
//! a terminal, an empty or size-less file (`/proc`), or a file the kernel will not map is read.
//!
//! A mapped file must not shrink while it is read: the process then stops with `overspill: stdin
//! was truncated while it was being read; stopped without a result` ([`super::map`]); anything
//! already printed or spilled is incomplete. A file that grows (a log still being appended to)
//! is read as it was when mapped. Bytes rewritten in place show through.

use std::io::{self, Read as _};

use bytes::Bytes;

/// Everything on stdin, from its current offset to its end.
pub(crate) fn read_all() -> io::Result<Bytes> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd as _;
        read_from(std::io::stdin().as_fd().try_clone_to_owned()?.into())
    }
    #[cfg(not(unix))]
    {
        let mut data = Vec::new();
        std::io::stdin().read_to_end(&mut data)?;
        Ok(data.into())
    }
}

/// Everything in `file` from its current offset on: mapped when it is a regular file with a
/// size, read otherwise. The offset is left at the end, as a read leaves it.
#[cfg(unix)]
fn read_from(mut file: std::fs::File) -> io::Result<Bytes> {
    use std::io::{Seek as _, SeekFrom};
    let metadata = file.metadata()?;
    if metadata.is_file() && metadata.len() > 0 {
        let offset = file.stream_position()?;
        if let Some(map) = super::map::map(&file, offset, metadata.len(), "stdin") {
            file.seek(SeekFrom::End(0))?;
            tracing::debug!(bytes = map.len(), offset, "stdin is mapped");
            return Ok(Bytes::from_owner(map));
        }
    }
    // Sized from `fstat` for a regular file: one allocation, no regrowth.
    let mut data = Vec::new();
    file.read_to_end(&mut data)?;
    Ok(data.into())
}

#[cfg(all(test, unix))]
mod tests {
    use std::io::{Seek as _, SeekFrom, Write as _};

    use super::*;

    /// Whether this process maps `path` (`/proc/self/maps` names every file mapping).
    fn maps(path: &std::path::Path) -> bool {
        let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
        maps.contains(path.to_str().expect("a UTF-8 temp path"))
    }

    #[test]
    fn a_regular_file_is_mapped_from_its_offset_and_left_at_its_end() {
        let mut file = tempfile::NamedTempFile::new().expect("a temp file");
        let text: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
        file.write_all(text.as_bytes()).expect("written");
        file.seek(SeekFrom::Start(5)).expect("seeks");
        let shared = file.as_file().try_clone().expect("the same open file");
        let data = read_from(shared).expect("read");
        assert_eq!(data, text.as_bytes()[5..]);
        assert!(maps(file.path()), "the file is mapped, not copied");
        let at = file.as_file_mut().stream_position().expect("a position");
        assert_eq!(
            at,
            text.len() as u64,
            "left at the end, as a read leaves it"
        );
        drop(data);
        assert!(!maps(file.path()), "unmapped with its last Bytes");
    }

    #[test]
    fn pipes_and_empty_files_are_read() {
        let (reader, mut writer) = std::io::pipe().expect("a pipe");
        writer.write_all(b"piped output").expect("written");
        drop(writer);
        let piped = read_from(std::os::fd::OwnedFd::from(reader).into()).expect("read");
        assert_eq!(piped, &b"piped output"[..]);

        let empty = tempfile::NamedTempFile::new().expect("a temp file");
        let data = read_from(empty.reopen().expect("reopens")).expect("read");
        assert!(data.is_empty());
        assert!(!maps(empty.path()));
    }
}
