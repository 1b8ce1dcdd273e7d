//! Keeping secrets out of logs, `Debug` output and error texts: URLs with their password hidden.

use url::Url;

/// `url` with any password in its user-info replaced by `redacted`.
pub(crate) fn url(url: &Url) -> Url {
    let mut shown = url.clone();
    if shown.password().is_some() {
        let _ = shown.set_password(Some("redacted"));
    }
    shown
}

/// `raw` parsed as a URL, with any password redacted; `[unparsable]` when it is no URL with a
/// `//` authority (`user:secret@host` parses as scheme `user` with the secret in its path).
pub(crate) fn raw_url(raw: &str) -> String {
    match Url::parse(raw.trim()) {
        Ok(parsed) if !parsed.cannot_be_a_base() => url(&parsed).to_string(),
        _ => "[unparsable]".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn passwords_never_show() {
        assert_eq!(
            super::raw_url("https://user:hunter2@gw.example/v1"),
            "https://user:redacted@gw.example/v1"
        );
        assert_eq!(super::raw_url("http://host:8000"), "http://host:8000/");
        assert_eq!(super::raw_url("user:hunter2@host:bad"), "[unparsable]");
        assert_eq!(super::raw_url("memory://"), "memory://");
    }
}
