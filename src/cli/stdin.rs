//! All of stdin as one buffer, read into memory.
//!
//! A regular file is read with one read sized by `fstat` (std sizes the buffer from the file's
//! length and offset); a pipe or a terminal is read as it comes. Stdin is read, never mapped: the
//! engine holds text as `str`, and bytes that another process could still change under a map
//! would break what UTF-8 validation established.

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

/// Everything in `file` from its current offset on (a `File`, unlike `Stdin`, reads a regular
/// file in one `fstat`-sized read). The offset is left at the end.
#[cfg(unix)]
fn read_from(mut file: std::fs::File) -> io::Result<Bytes> {
    let mut data = Vec::new();
    file.read_to_end(&mut data)?;
    Ok(data.into())
}

#[cfg(all(test, unix))]
mod tests {
    use std::io::{Seek as _, SeekFrom, Write as _};

    use super::*;

    #[test]
    fn a_regular_file_is_read_from_its_offset_and_left_at_its_end() {
        let mut file = tempfile::NamedTempFile::new().expect("a temp file");
        let text: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
        file.write_all(text.as_bytes()).expect("written");
        file.seek(SeekFrom::Start(5)).expect("seeks");
        let shared = file.as_file().try_clone().expect("the same open file");
        let data = read_from(shared).expect("read");
        assert_eq!(data, text.as_bytes()[5..]);
        let at = file.as_file_mut().stream_position().expect("a position");
        assert_eq!(at, text.len() as u64, "left at the end");
        // A copy: rewriting the file changes nothing already read.
        file.as_file().set_len(0).expect("truncated");
        assert_eq!(data, text.as_bytes()[5..]);
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
    }
}
