//! Keys, handles and object paths: segment sanitizing (as the reference's LocalFileStore does)
//! and the read-safety refusals.
//!
//! A handle is the engine's key (`{run_id}/{tool_call_id}.{retry}[.content]`), unsanitized, as
//! the reference's LocalFileStore returns it. Its object lives at
//! `{prefix}/tool_output_limits/{sanitized segments}`; the line index beside it at `… .idx`.
//!
//! # Length
//!
//! S3, GCS and Azure hold keys of at most 1,024 bytes of UTF-8, a local filesystem file names of
//! at most 255 bytes. A key whose object path (its line index's suffix included) is longer is
//! refused before any request as `StoreError::KeyTooLong`, which is final: the band's `then`
//! runs at once. It is not shortened: a shortened key (a digest in place of the tail) would have
//! to be derived the same way by every reader of the store, the Python package's direct reads and
//! its listings by run prefix included, and two handles could share an object; a run id and tool
//! call id of a kilobyte are a caller's bug worth seeing. Sanitizing only shortens a key (a run
//! of unsafe chars becomes one `_`), so a handle within the limit stays within it.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

/// The namespace every spill lives under, inside the store URL's own prefix.
pub(super) const NAMESPACE: &str = "tool_output_limits";

/// The suffix of the line-index object written beside each spill.
pub(super) const INDEX_SUFFIX: &str = ".idx";

/// One key segment made safe: runs of characters outside `[A-Za-z0-9._-]` become `_`, and a
/// segment that ends up empty, `.` or `..` becomes `_` (the reference's `_safe_segment`).
///
/// ```
/// use overspill::store::sanitize_segment;
/// assert_eq!(sanitize_segment("a b!@#"), "a_b_");
/// assert_eq!(sanitize_segment(".."), "_");
/// ```
pub fn sanitize_segment(segment: &str) -> Cow<'_, str> {
    static UNSAFE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new("[^A-Za-z0-9._-]+").unwrap_or_else(|e| unreachable!("static pattern: {e}"))
    });
    match UNSAFE.replace_all(segment, "_") {
        cleaned if matches!(&*cleaned, "" | "." | "..") => Cow::Borrowed("_"),
        cleaned => cleaned,
    }
}

/// The sanitized segments of `key`: split on `/`, empty parts dropped, each part sanitized;
/// a key with no parts becomes `["_"]`.
pub(super) fn segments(key: &str) -> Vec<Cow<'_, str>> {
    let parts: Vec<_> = key
        .split('/')
        .filter(|p| !p.is_empty())
        .map(sanitize_segment)
        .collect();
    if parts.is_empty() {
        vec![Cow::Borrowed("_")]
    } else {
        parts
    }
}

/// The sanitized form of a whole key: each segment sanitized ([`sanitize_segment`]), empty
/// segments dropped, joined by `/`.
///
/// ```
/// use overspill::store::sanitize_key;
/// assert_eq!(sanitize_key("run-1/../call 1.0"), "run-1/_/call_1.0");
/// assert_eq!(sanitize_key(""), "_");
/// ```
pub fn sanitize_key(key: &str) -> String {
    segments(key).join("/")
}

/// Why a handle is refused before any store access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(super) enum Refusal {
    /// An absolute path (`/…`, `\…`, `C:…`).
    #[error("absolute path")]
    Absolute,
    /// A `.` or `..` segment, or a backslash separator.
    #[error("path traversal")]
    Traversal,
    /// A percent-encoded escape (`%2e%2e`, `%2F`, …).
    #[error("percent-encoded escape")]
    PercentEncoded,
    /// A URL or another store's path (`s3://…`).
    #[error("foreign prefix")]
    ForeignPrefix,
    /// A control character.
    #[error("control character")]
    Control,
    /// The store's own line-index object, not a spill.
    #[error("index object")]
    IndexObject,
}

/// Refuse handles that try to leave the store's prefix, before sanitizing could hide it.
///
/// Sanitizing alone already confines every handle (as in the reference); refusing them
/// outright keeps a traversal attempt from resolving to some other spill by accident.
pub(super) fn check_handle(handle: &str) -> Result<(), Refusal> {
    let bytes = handle.as_bytes();
    let escaped = |w: &[u8]| w[0] == b'%' && w[1].is_ascii_hexdigit() && w[2].is_ascii_hexdigit();
    // Judge the index suffix on the last segment as stored: `r/p.0.idx/` names `r/p.0.idx`.
    let last = handle.split('/').rfind(|s| !s.is_empty());
    let refusal = if handle.starts_with(['/', '\\'])
        || (bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':')
    {
        Refusal::Absolute
    } else if handle.contains("://") {
        Refusal::ForeignPrefix
    } else if handle.chars().any(char::is_control) {
        Refusal::Control
    } else if handle.contains('\\') || handle.split('/').any(|s| s == "." || s == "..") {
        Refusal::Traversal
    } else if bytes.windows(3).any(escaped) {
        Refusal::PercentEncoded
    } else if last.is_some_and(|last| sanitize_segment(last).ends_with(INDEX_SUFFIX)) {
        Refusal::IndexObject
    } else {
        return Ok(());
    };
    Err(refusal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitizes_like_the_reference() {
        assert_eq!(sanitize_key("run-1/../call 1.0"), "run-1/_/call_1.0");
        assert_eq!(sanitize_key(""), "_");
        assert_eq!(sanitize_key("///"), "_");
        assert_eq!(sanitize_key("a b!@#"), "a_b_");
        assert_eq!(
            sanitize_key("run-1/call-1.0.content"),
            "run-1/call-1.0.content"
        );
        assert_eq!(sanitize_key("./x/./y"), "_/x/_/y");
        assert_eq!(sanitize_key("é€/ok"), "_/ok");
        assert_eq!(sanitize_key("a  b"), "a_b");
        assert_eq!(sanitize_key("a%2Fb"), "a_2Fb");
        assert_eq!(sanitize_segment("..."), "...");
    }

    #[test]
    fn sanitizing_is_idempotent() {
        for key in ["run-1/../call 1.0", "a b!@#", "", "x/y.0", "%2e%2e/z"] {
            let once = sanitize_key(key);
            assert_eq!(sanitize_key(&once), once);
        }
    }

    #[test]
    fn refuses_escapes() {
        assert_eq!(check_handle("/etc/passwd"), Err(Refusal::Absolute));
        assert_eq!(check_handle("\\x"), Err(Refusal::Absolute));
        assert_eq!(check_handle("C:/x"), Err(Refusal::Absolute));
        assert_eq!(check_handle("../x"), Err(Refusal::Traversal));
        assert_eq!(check_handle("run/../../x"), Err(Refusal::Traversal));
        assert_eq!(check_handle("run/./x"), Err(Refusal::Traversal));
        assert_eq!(check_handle("run\\..\\x"), Err(Refusal::Traversal));
        assert_eq!(check_handle("%2e%2e/x"), Err(Refusal::PercentEncoded));
        assert_eq!(check_handle("run%2Fx"), Err(Refusal::PercentEncoded));
        assert_eq!(check_handle("s3://other/x"), Err(Refusal::ForeignPrefix));
        assert_eq!(check_handle("run/x\0"), Err(Refusal::Control));
        assert_eq!(check_handle("run/call.0.idx"), Err(Refusal::IndexObject));
        assert_eq!(check_handle("run/call.0.idx/"), Err(Refusal::IndexObject));
        assert_eq!(check_handle("run/call.0.idx//"), Err(Refusal::IndexObject));
        assert_eq!(check_handle("run-1/call-1.0"), Ok(()));
        assert_eq!(check_handle("run-1/call 1.0.content"), Ok(()));
        assert_eq!(check_handle("100%/x.0"), Ok(()));
        assert_eq!(check_handle(""), Ok(()));
    }
}
