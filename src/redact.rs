//! Keeping secrets out of logs, `Debug` output and error texts: one placeholder for a hidden
//! secret, and one way to show a URL.

use url::{Position, Url};

/// What logs, `Debug` output and error texts show in place of a secret.
pub const PLACEHOLDER: &str = "[redacted]";

/// `raw` as logs and errors show it: without its query (which may carry a secret: an Azure SAS
/// token, a `secret_access_key`) and with any password replaced by [`PLACEHOLDER`]. A text that
/// is no URL with a `//` authority shows without its query, or as [`PLACEHOLDER`] when it holds
/// a `@` (`user:secret@host` parses as scheme `user` with the secret in its path).
pub fn url(raw: &str) -> String {
    match Url::parse(raw.trim()) {
        Ok(mut url) if !url.cannot_be_a_base() => {
            url.set_query(None);
            if url.password().is_none() {
                return url.into();
            }
            let user = &url[..Position::AfterUsername];
            format!("{user}:{PLACEHOLDER}@{}", &url[Position::BeforeHost..])
        }
        _ if raw.contains('@') => PLACEHOLDER.to_owned(),
        _ => raw.split_once('?').map_or(raw, |(base, _)| base).to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn passwords_and_queries_never_show() {
        for (raw, shown) in [
            (
                "https://user:hunter2@gw.example/v1?sig=hunter3",
                "https://user:[redacted]@gw.example/v1",
            ),
            ("s3://:hunter2@bucket/p", "s3://:[redacted]@bucket/p"),
            ("http://host:8000", "http://host:8000/"),
            ("user:hunter2@host:bad", "[redacted]"),
            ("spills/dir?sig=hunter2", "spills/dir"),
            ("memory://", "memory://"),
        ] {
            assert_eq!(super::url(raw), shown);
        }
    }
}
