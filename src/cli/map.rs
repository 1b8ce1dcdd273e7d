//! The one file a one-shot command maps (a spill's payload for `read` and `grep`), and the
//! SIGBUS handler that reports it shrinking.
//!
//! A map is only ever read as bytes (`[u8]`), never handed out as `str`: another process may
//! rewrite the file in place, and bytes once validated as UTF-8 could then change under a `str`.
//!
//! A mapped file must not shrink while it is read: touching a page past its new end raises
//! SIGBUS. The process then stops with [`EXIT_TRUNCATED`] and `overspill: <what> was truncated
//! while it was being read; stopped without a result` on stderr, instead of dying of the signal.
//! Only a one-shot process maps: a worker that stopped would lose every activity it serves.

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use memmap2::{Mmap, MmapOptions};

/// The exit status of a run whose mapped file shrank under its map (`EX_IOERR`).
pub(crate) const EXIT_TRUNCATED: i32 = 74;

/// The mapped range, `[START, END)`; empty until a map exists.
static START: AtomicUsize = AtomicUsize::new(0);
static END: AtomicUsize = AtomicUsize::new(0);
/// What the map holds, for the message (`stdin`, `the spill's file`).
static WHAT: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static WHAT_LEN: AtomicUsize = AtomicUsize::new(0);

/// `file` from `offset` to `len`, mapped read-only, with the handler in place; `None` when the
/// offset is at or past the end or the kernel refuses (then the caller reads). A command maps
/// one file: a later map takes the handler's attention from an earlier one.
pub(crate) fn map(file: &std::fs::File, offset: u64, len: u64, what: &'static str) -> Option<Mmap> {
    let rest = usize::try_from(len.checked_sub(offset).filter(|rest| *rest > 0)?).ok()?;
    if !install_handler() {
        return None;
    }
    // SAFETY: the map is only read, as bytes, and lives as long as whatever owns it. Another
    // process truncating the file makes a read raise SIGBUS, which `on_sigbus` turns into an
    // orderly exit. Bytes rewritten in place show through as other bytes: the map is handed
    // out only as `[u8]` (`Bytes`), never as `str`, and searched as bytes (as ripgrep does).
    let map = unsafe { MmapOptions::new().offset(offset).len(rest).map(file) }.ok()?;
    WHAT.store(what.as_ptr().cast_mut(), Ordering::SeqCst);
    WHAT_LEN.store(what.len(), Ordering::SeqCst);
    let start = map.as_ptr() as usize;
    START.store(start, Ordering::SeqCst);
    END.store(start + map.len(), Ordering::SeqCst);
    Some(map)
}

/// Install [`on_sigbus`] for the process; false if the kernel refuses.
#[cfg(unix)]
fn install_handler() -> bool {
    // SAFETY: a zeroed `sigaction` is a valid empty one; the handler is async-signal-safe.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigbus as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut()) == 0
    }
}

/// Without SIGBUS to report a file shrinking, nothing is mapped.
#[cfg(not(unix))]
fn install_handler() -> bool {
    false
}

/// A SIGBUS inside the map: say so and exit. Any other: restore the default action, so the
/// faulting access, run again on return, kills the process as it would have.
#[cfg(unix)]
extern "C" fn on_sigbus(_signal: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    const PREFIX: &[u8] = b"overspill: ";
    const SUFFIX: &[u8] = b" was truncated while it was being read; stopped without a result\n";
    // SAFETY: the kernel passes a valid siginfo; `WHAT` points at a `&'static str` of
    // `WHAT_LEN` bytes once a map exists; write, _exit and signal are async-signal-safe.
    unsafe {
        let address = (*info).si_addr() as usize;
        if (START.load(Ordering::SeqCst)..END.load(Ordering::SeqCst)).contains(&address) {
            let what = (
                WHAT.load(Ordering::SeqCst).cast_const(),
                WHAT_LEN.load(Ordering::SeqCst),
            );
            for (text, len) in [
                (PREFIX.as_ptr(), PREFIX.len()),
                what,
                (SUFFIX.as_ptr(), SUFFIX.len()),
            ] {
                libc::write(libc::STDERR_FILENO, text.cast(), len);
            }
            libc::_exit(EXIT_TRUNCATED);
        }
        libc::signal(libc::SIGBUS, libc::SIG_DFL);
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::io::Write as _;

    /// Set in the process that [`a_file_shrinking_under_its_map_exits_74`] starts.
    const CHILD: &str = "OVERSPILL_MAP_TEST_CHILD";

    /// In that child: map a file, truncate it and read the map past the file's new end. Anywhere
    /// else it passes at once.
    #[test]
    fn read_past_a_shrunk_files_end() {
        if std::env::var_os(CHILD).is_none() {
            return;
        }
        let mut file = tempfile::tempfile().expect("a temp file");
        file.write_all(&[b'x'; 3 * 4096]).expect("written");
        let map = super::map(&file, 0, 3 * 4096, "the test file").expect("mapped");
        file.set_len(0).expect("truncated");
        let byte = std::hint::black_box(&map)[2 * 4096];
        panic!("read {byte} past the end without a SIGBUS");
    }

    /// The handler turns the SIGBUS into exit status 74 and a message naming what was mapped.
    #[test]
    fn a_file_shrinking_under_its_map_exits_74() {
        let exe = std::env::current_exe().expect("the test binary");
        let out = std::process::Command::new(exe)
            .args(["--exact", "cli::map::tests::read_past_a_shrunk_files_end"])
            .args(["--nocapture", "--test-threads", "1"])
            .env(CHILD, "1")
            .output()
            .expect("the test binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(super::EXIT_TRUNCATED), "{stderr}");
        assert!(
            stderr.contains(
                "overspill: the test file was truncated while it was being read; stopped without a result\n"
            ),
            "{stderr}"
        );
    }
}
