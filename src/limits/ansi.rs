//! ANSI escape stripping (SPEC §7), with the reference's gaps closed.

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
///
/// ```
/// use overspill::limits::ansi::strip_ansi;
/// assert_eq!(strip_ansi("\x1b[31mred\x1b[0m \x1b[?25hok\x1b(B"), "red ok");
/// ```
pub fn strip_ansi(text: &str) -> Cow<'_, str> {
    if !text.contains('\x1b') {
        return Cow::Borrowed(text);
    }
    ANSI.replace_all(text, "")
}
