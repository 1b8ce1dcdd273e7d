//! Store URLs: `s3://bucket/prefix`, `gs://bucket/prefix`, `az://container/prefix`,
//! `file:///path`, `memory://[prefix]`.
//!
//! Query parameters carry the S3 settings a flag would (`?endpoint=…&region=…&allow_http=true`);
//! otherwise they come from the usual `AWS_*` environment variables.

use std::path::PathBuf;

use object_store::path::Path;

use crate::redact;

/// Why a store URL cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(super) enum UrlError {
    /// Not a URL at all.
    #[error("invalid store URL {url:?}: {source}")]
    Parse {
        /// The URL as given.
        url: String,
        /// What the parser said.
        source: url::ParseError,
    },
    /// A scheme this build does not serve.
    #[error("unsupported store URL scheme {0:?} (use s3://, gs://, az://, file:// or memory://)")]
    Scheme(String),
    /// `s3://` and friends need a bucket.
    #[error("store URL {0:?} names no bucket")]
    NoBucket(String),
    /// `file://` needs an absolute local path.
    #[error("store URL {0:?} is not an absolute local path (use file:///path)")]
    NotAbsolute(String),
    /// A prefix with `.`/`..` or undecodable segments.
    #[error("store URL {url:?} has an invalid prefix: {source}")]
    Prefix {
        /// The URL as given.
        url: String,
        /// What object_store said about the path.
        source: object_store::path::Error,
    },
    /// An unknown or malformed query parameter.
    #[error("store URL {url:?}: {message}")]
    Query {
        /// The URL as given.
        url: String,
        /// What is wrong.
        message: String,
    },
}

/// Which backend a URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scheme {
    S3,
    Gcs,
    Azure,
    Memory,
}

/// A parsed store URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StoreUrl {
    /// A blob store: the URL for object_store's builder and the key prefix inside the bucket.
    Object {
        scheme: Scheme,
        /// The URL without its query.
        url: String,
        prefix: Path,
        endpoint: Option<String>,
        region: Option<String>,
        allow_http: Option<bool>,
    },
    /// A local directory with the reference's root checks.
    Local { root: PathBuf },
}

impl StoreUrl {
    /// Parse `url`.
    pub(crate) fn parse(raw: &str) -> Result<Self, UrlError> {
        let url = url::Url::parse(raw).map_err(|source| UrlError::Parse {
            url: redact::url(raw),
            source,
        })?;
        let scheme = match url.scheme() {
            "s3" | "s3a" => Scheme::S3,
            "gs" => Scheme::Gcs,
            "az" | "azure" | "abfs" | "abfss" => Scheme::Azure,
            "memory" => Scheme::Memory,
            "file" => {
                if url.query().is_some() {
                    return Err(query_error(raw, "file:// takes no query parameters"));
                }
                let root = url
                    .to_file_path()
                    .map_err(|()| UrlError::NotAbsolute(redact::url(raw)))?;
                // Drop a trailing `/`: with it, lstat would follow a symlinked root.
                let root = root.components().collect();
                return Ok(Self::Local { root });
            }
            other => return Err(UrlError::Scheme(other.to_owned())),
        };
        let mut endpoint = None;
        let mut region = None;
        let mut allow_http = None;
        for (key, value) in url.query_pairs() {
            match &*key {
                "endpoint" => endpoint = Some(value.into_owned()),
                "region" => region = Some(value.into_owned()),
                // `true`/`false` as the `AWS_ALLOW_HTTP` convention spells them.
                "allow_http" => match value.trim().to_ascii_lowercase().as_str() {
                    "1" | "true" | "yes" | "on" => allow_http = Some(true),
                    "0" | "false" | "no" | "off" | "" => allow_http = Some(false),
                    _ => {
                        let message = format!("allow_http must be true or false, not {value:?}");
                        return Err(query_error(raw, &message));
                    }
                },
                other => return Err(query_error(raw, &format!("unknown parameter {other:?}"))),
            }
        }
        let host = url.host_str().unwrap_or("");
        let path = match scheme {
            // memory://prefix puts the first segment in the host: fold it back into the prefix.
            Scheme::Memory => format!("{host}{}", url.path()),
            _ if host.is_empty() => return Err(UrlError::NoBucket(redact::url(raw))),
            _ => url.path().to_owned(),
        };
        let prefix = Path::from_url_path(path.trim_start_matches('/')).map_err(|source| {
            UrlError::Prefix {
                url: redact::url(raw),
                source,
            }
        })?;
        let mut base = url.clone();
        base.set_query(None);
        Ok(Self::Object {
            scheme,
            url: base.to_string(),
            prefix,
            endpoint,
            region,
            allow_http,
        })
    }
}

fn query_error(url: &str, message: &str) -> UrlError {
    UrlError::Query {
        url: redact::url(url),
        message: message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_never_show_query_secrets() {
        let err = StoreUrl::parse("s3://bucket?secret_access_key=hunter2&bogus=1").unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
        let err = StoreUrl::parse("file:///tmp/x?sig=hunter2").unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }

    fn object(raw: &str) -> (Scheme, String, Option<String>, Option<bool>) {
        match StoreUrl::parse(raw).unwrap() {
            StoreUrl::Object {
                scheme,
                prefix,
                endpoint,
                allow_http,
                ..
            } => (scheme, prefix.to_string(), endpoint, allow_http),
            StoreUrl::Local { .. } => panic!("{raw} parsed as local"),
        }
    }

    #[test]
    fn parses_store_urls() {
        assert_eq!(
            object("s3://spills"),
            (Scheme::S3, String::new(), None, None)
        );
        assert_eq!(object("s3://spills/a/b/").1, "a/b");
        let (_, _, endpoint, allow) =
            object("s3://spills/p?endpoint=http://127.0.0.1:8333&allow_http=true");
        assert_eq!(endpoint.as_deref(), Some("http://127.0.0.1:8333"));
        assert_eq!(allow, Some(true));
        assert_eq!(object("gs://b/x").0, Scheme::Gcs);
        assert_eq!(object("az://c/x").0, Scheme::Azure);
        assert_eq!(object("memory://").1, "");
        assert_eq!(object("memory://t/u").1, "t/u");
        assert_eq!(
            StoreUrl::parse("file:///var/spills").unwrap(),
            StoreUrl::Local {
                root: "/var/spills".into()
            }
        );
    }

    #[test]
    fn refuses_bad_urls() {
        assert!(matches!(
            StoreUrl::parse("/tmp/x"),
            Err(UrlError::Parse { .. })
        ));
        assert!(matches!(
            StoreUrl::parse("ftp://x/y"),
            Err(UrlError::Scheme(_))
        ));
        assert!(matches!(
            StoreUrl::parse("s3:///x"),
            Err(UrlError::NoBucket(_))
        ));
        // The URL parser resolves dot segments, even encoded ones, before object_store sees them.
        assert!(matches!(
            StoreUrl::parse("s3://b/a/%2e%2e/%2e%2e/c"),
            Ok(StoreUrl::Object { prefix, .. }) if prefix.as_ref() == "c"
        ));
        assert_eq!(
            StoreUrl::parse("file:///tmp/link/").unwrap(),
            StoreUrl::Local {
                root: "/tmp/link".into()
            }
        );
        assert!(matches!(
            StoreUrl::parse("s3://b?nope=1"),
            Err(UrlError::Query { .. })
        ));
    }
}
