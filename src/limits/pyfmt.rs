//! Python renderings the model sees: `{n:,}`, `repr(str)`, type names, `str.strip()`.

use serde_json::Value;
use unicode_general_category::{GeneralCategory as Gc, get_general_category};

/// `f"{n:,}"`: an integer with comma thousands separators.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// Python's `str.isprintable()` for one char.
fn is_printable(c: char) -> bool {
    c == ' '
        || !matches!(
            get_general_category(c),
            Gc::Control
                | Gc::Format
                | Gc::Surrogate
                | Gc::PrivateUse
                | Gc::Unassigned
                | Gc::LineSeparator
                | Gc::ParagraphSeparator
                | Gc::SpaceSeparator
        )
}

/// Python's `repr()` of a string.
pub(crate) fn repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            c if c == '\\' || c == quote => out.extend(['\\', c]),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_printable(c) => out.push(c),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push(quote);
    out
}

/// Python's `type(v).__name__` for a JSON value (`{"$bytes_b64": …}` is `bytes`).
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) if super::serialize::bytes_leaf(value).is_some() => "bytes",
        Value::Object(_) => "dict",
    }
}

/// Python's `str.strip()`: Python's whitespace is Rust's plus the separators U+001C–U+001F.
pub(crate) fn py_strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repr_matches_python() {
        assert_eq!(repr(""), "''");
        assert_eq!(repr("run-1/call-1.0"), "'run-1/call-1.0'");
        assert_eq!(repr("it's"), "\"it's\"");
        assert_eq!(repr("a\nb\u{2028}\x1b"), "'a\\nb\\u2028\\x1b'");
        assert_eq!(repr("a'b\"c"), "'a\\'b\"c'");
        assert_eq!(repr("tab\there\\"), "'tab\\there\\\\'");
        assert_eq!(
            repr("é🙂\u{a0}\u{200b}\u{10ffff}"),
            "'é🙂\\xa0\\u200b\\U0010ffff'"
        );
    }

    #[test]
    fn thousands_and_strip() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(20_719), "20,719");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(py_strip("\x1c\n summary \u{85}"), "summary");
    }
}
