//! The one file a one-shot command maps (stdin for `reduce`, a spill for `read` and `grep`),
//! and the SIGBUS handler that reports it shrinking.
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
    // SAFETY: the map is only read, and lives as long as whatever owns it. Another
    // process truncating the file makes a read raise SIGBUS, which `on_sigbus` turns into an
    // orderly exit. Bytes rewritten in place show through; should that leave text already
    // validated as UTF-8 invalid, what the engine makes of it is unspecified. That is the risk
    // every reader of a mapped file takes (ripgrep's too), accepted here.
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
