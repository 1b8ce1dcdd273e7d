//! ANSI escape stripping before measuring (`strip_ansi`), with the reference's gaps closed.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

/// The reference strips `\x1b\[[0-9;]*[a-zA-Z]|\x1b\].*?\x07|\x1b[^[\]()]`. Overspill also strips
/// what that misses (documented fixes): any CSI (private ones like `\x1b[?25h`, `\x1b[2~`),
/// OSC ended by ST (`\x1b\\`) as well as BEL, and charset designations (`\x1b(B`).
static ANSI: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\].*?(?:\x07|\x1b\\)|\x1b[()*+][ -~]|\x1b[^\[\]()]")
        .unwrap_or_else(|e| unreachable!("static ANSI pattern: {e}"))
});

/// Remove ANSI escape sequences; borrows when there are none.
pub fn strip_ansi(text: &str) -> Cow<'_, str> {
    if !text.contains('\x1b') {
        return Cow::Borrowed(text);
    }
    ANSI.replace_all(text, "")
}

#[cfg(test)]
mod tests {
    use super::strip_ansi;

    #[test]
    fn strips_what_the_reference_strips() {
        assert_eq!(strip_ansi("\x1b[1;32mok\x1b[0m"), "ok");
        assert_eq!(strip_ansi("\x1b]0;title\x07text"), "text");
        assert_eq!(strip_ansi("a\x1bMb"), "ab");
        assert_eq!(strip_ansi("no escapes"), "no escapes");
    }

    #[test]
    fn closes_the_reference_gaps() {
        assert_eq!(strip_ansi("\x1b[?25lhidden\x1b[?25h"), "hidden");
        assert_eq!(strip_ansi("\x1b(Bplain\x1b)0"), "plain");
        assert_eq!(
            strip_ansi("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"),
            "link"
        );
        assert_eq!(strip_ansi("\x1b[2~key"), "key");
        assert_eq!(strip_ansi("\x1b[31mred\x1b[0m \x1b[?25hok\x1b(B"), "red ok");
    }
}
