//! A remote store's failure in the server's own words, with the setting that fixes it: the
//! spill store and External Storage report their failures with it.

use crate::diagnose::{self, Tls};

/// What went wrong, as the person configuring the store fixes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cause {
    /// The server refused the credentials (401, 403).
    Credentials,
    /// The bucket does not exist.
    NoBucket,
    /// The TLS handshake failed.
    Tls(Tls),
    /// The endpoint refused the connection or did not resolve.
    Unreachable,
    /// Anything else: a 5xx, a reset, a timeout.
    Other,
}

/// `error` of the store at `url` explained: its cause and the sentence a user reads;
/// `missing_is_bucket` tells that a 404 can only mean a missing bucket (a write or a listing).
pub(crate) fn explain(
    error: &object_store::Error,
    url: &str,
    missing_is_bucket: bool,
) -> (Cause, String) {
    use object_store::Error as E;
    let said = said(error);
    let (credentials, endpoint) = settings(url);
    let host = host(&error.to_string()).unwrap_or_else(|| "its endpoint".to_owned());
    let no_bucket = said.as_deref().is_some_and(|s| s.contains("NoSuchBucket"))
        || (missing_is_bucket && matches!(error, E::NotFound { .. }));
    let words = said.unwrap_or_else(|| diagnose::innermost(error));
    if no_bucket {
        let text = format!(
            "the bucket of store {url} does not exist ({words}): create it, or fix the bucket in \
             the store URL"
        );
        (Cause::NoBucket, text)
    } else if matches!(
        error,
        E::PermissionDenied { .. } | E::Unauthenticated { .. }
    ) {
        let text = format!(
            "store {url} refused the credentials ({words}): check {credentials}, and the \
             bucket's policy"
        );
        (Cause::Credentials, text)
    } else if let Some((kind, tls_words)) = diagnose::tls(error) {
        let fix = match kind {
            Tls::UntrustedServer => {
                "set --store-ca-bundle or AWS_CA_BUNDLE to a PEM file of the CA that signed the \
                 server's certificate"
            }
            Tls::WrongName => {
                "the server's certificate is for other names: check the endpoint's host"
            }
            Tls::ClientCertificate => {
                "the server asks for a client certificate, which Overspill does not send"
            }
            Tls::Other => "check the endpoint (an http:// server does not speak TLS)",
        };
        let text = format!("TLS to {host} failed for store {url} ({tls_words}): {fix}; {endpoint}");
        (Cause::Tls(kind), text)
    } else if matches!(
        diagnose::io_kind(error),
        Some(std::io::ErrorKind::ConnectionRefused)
    ) || words.contains("dns error")
    {
        let text = format!(
            "cannot reach store {url} at {host} ({words}): {endpoint}, and that the server runs"
        );
        (Cause::Unreachable, text)
    } else {
        (Cause::Other, error.to_string())
    }
}

/// A deterministic client error a server answered: the same request gets the same answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rejection {
    /// The status, as the server sent it (`400 Bad Request`).
    pub(crate) status: String,
    /// The error code its answer names (`KeyTooLongError`; GCS's `reason`).
    pub(crate) code: Option<String>,
    /// Its message (or the start of its answer).
    pub(crate) message: String,
}

/// The error codes S3 answers with a 400 for a condition a retry of the same request clears:
/// the upload was too slow (`RequestTimeout`) or cut short (`IncompleteBody`), its body arrived
/// damaged (`BadDigest`), or the session credentials expired and are refreshed before the next
/// try (`ExpiredToken`).
const TRANSIENT_CODES: [&str; 4] = [
    "RequestTimeout",
    "IncompleteBody",
    "BadDigest",
    "ExpiredToken",
];

/// The deterministic client error `error` carries: a 4xx other than 401, 403 and 404 (which
/// [`explain`] and the `NotFound` mapping read as credentials, a missing bucket or a missing
/// object), 408 Request Timeout and 429 Too Many Requests (the server asks to come back), and
/// 409 Conflict (S3's `OperationAborted`: a conflicting operation is still in progress), and
/// the 400s S3 answers for conditions that clear by themselves ([`TRANSIENT_CODES`]).
///
/// object_store 0.14 keeps a response's status in its `RetryError`, whose module is private:
/// only 304, 401, 403, 404, 409 and 412 reach a caller typed (as [`object_store::Error`]'s
/// variants); every other status is in the error's text alone (`… Server returned non-2xx
/// status code: 400 Bad Request: <body>`), so that is where it is read.
pub(crate) fn rejection(error: &object_store::Error) -> Option<Rejection> {
    use object_store::Error as E;
    if matches!(
        error,
        E::NotFound { .. } | E::PermissionDenied { .. } | E::Unauthenticated { .. }
    ) {
        return None;
    }
    let text = error.to_string();
    let (_, rest) = text.split_once("status code: ")?;
    let (status, body) = rest.split_once(": ").unwrap_or((rest, ""));
    let code: u16 = status.get(..3)?.parse().ok()?;
    if !(400..500).contains(&code) || matches!(code, 401 | 403 | 404 | 408 | 409 | 429) {
        return None;
    }
    let (code, message) = error_body(body.trim());
    if code
        .as_deref()
        .is_some_and(|c| TRANSIENT_CODES.contains(&c))
    {
        return None;
    }
    Some(Rejection {
        status: status.trim().to_owned(),
        code,
        message,
    })
}

/// The code and message of an error answer: S3's and Azure's XML (`<Code>`, `<Message>`), GCS's
/// JSON (`error.errors[0].reason`, `error.message`), else no code and the body's start.
fn error_body(body: &str) -> (Option<String>, String) {
    let tag = |name: &str| {
        let (_, after) = body.split_once(&format!("<{name}>"))?;
        (after.split_once(&format!("</{name}>"))).map(|(value, _)| value.trim().to_owned())
    };
    let start = || body.chars().take(200).collect::<String>();
    if let Some(code) = tag("Code") {
        return (Some(code), tag("Message").unwrap_or_else(start));
    }
    let json = serde_json::from_str::<serde_json::Value>(body).ok();
    let error = json.as_ref().and_then(|j| j.get("error"));
    let field = |value: Option<&serde_json::Value>| value?.as_str().map(str::to_owned);
    let reason = error.and_then(|e| field(e.pointer("/errors/0/reason")));
    let reason = reason.or_else(|| error.and_then(|e| field(e.get("status"))));
    let message = error.and_then(|e| field(e.get("message")));
    (reason, message.unwrap_or_else(start))
}

/// The `host:port` a request went to, from object_store's `Error performing PUT https://… in`.
fn host(text: &str) -> Option<String> {
    let (_, rest) = text.split_once("Error performing ")?;
    let url = reqwest::Url::parse(rest.split(' ').nth(1)?).ok()?;
    let host = url.host_str()?;
    Some(match url.port_or_known_default() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    })
}

/// The settings that hold the credentials and the endpoint of a store at `url`.
fn settings(url: &str) -> (&'static str, &'static str) {
    match url.split_once("://").map(|(scheme, _)| scheme) {
        Some("gs") => (
            "GOOGLE_SERVICE_ACCOUNT (or GOOGLE_APPLICATION_CREDENTIALS)",
            "check the store URL",
        ),
        Some("az" | "azure" | "abfs" | "abfss") => (
            "AZURE_STORAGE_ACCOUNT_NAME and AZURE_STORAGE_ACCOUNT_KEY",
            "check AZURE_STORAGE_ENDPOINT or the URL's ?endpoint=",
        ),
        _ => (
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
            "check AWS_ENDPOINT_URL or the URL's ?endpoint=",
        ),
    }
}

/// What the server answered, in its words: `403 Forbidden, SignatureDoesNotMatch: The request
/// signature …` (the `Code` and `Message` of S3's and Azure's XML errors, else the body's
/// start), from object_store's `… status code: 403 Forbidden: BODY`.
fn said(error: &object_store::Error) -> Option<String> {
    let text = error.to_string();
    let (_, rest) = text.split_once("status code: ")?;
    let (status, body) = rest.split_once(": ").unwrap_or((rest, ""));
    let tag = |name: &str| {
        let (_, after) = body.split_once(&format!("<{name}>"))?;
        after
            .split_once(&format!("</{name}>"))
            .map(|(value, _)| value.trim())
    };
    let body = body.trim();
    Some(match (tag("Code"), tag("Message")) {
        (Some(code), Some(message)) => format!("{status}, {code}: {message}"),
        (Some(code), None) => format!("{status}, {code}"),
        _ if body.is_empty() => status.to_owned(),
        _ => format!("{status}: {}", body.chars().take(200).collect::<String>()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generic(message: &str) -> object_store::Error {
        object_store::Error::Generic {
            store: "S3",
            source: message.into(),
        }
    }

    #[test]
    fn the_servers_words_are_its_code_and_message() {
        let denied = object_store::Error::PermissionDenied {
            path: "p".into(),
            source: "Error performing PUT http://127.0.0.1:8333/b/p in 2ms - Server returned \
                     non-2xx status code: 403 Forbidden: <?xml version=\"1.0\"?><Error><Code>\
                     SignatureDoesNotMatch</Code><Message>The request signature we calculated \
                     does not match.</Message></Error>"
                .into(),
        };
        let (cause, text) = explain(&denied, "s3://spills", true);
        assert_eq!(cause, Cause::Credentials);
        assert_eq!(
            text,
            "store s3://spills refused the credentials (403 Forbidden, SignatureDoesNotMatch: The \
             request signature we calculated does not match.): check AWS_ACCESS_KEY_ID and \
             AWS_SECRET_ACCESS_KEY, and the bucket's policy"
        );
        let azure = explain(&denied, "az://c", true).1;
        assert!(
            azure.contains("check AZURE_STORAGE_ACCOUNT_NAME"),
            "{azure}"
        );
        let bucket = generic(
            "Server returned non-2xx status code: 404 Not Found: <Error><Code>NoSuchBucket</Code>\
             <Message>The specified bucket does not exist</Message></Error>",
        );
        let (cause, text) = explain(&bucket, "s3://nope", false);
        assert_eq!(cause, Cause::NoBucket);
        assert!(
            text.starts_with(
                "the bucket of store s3://nope does not exist (404 Not Found, NoSuchBucket: The \
                 specified bucket does not exist): create it"
            ),
            "{}",
            text
        );
        let plain = generic("Server returned non-2xx status code: 500 Internal Server Error: oops");
        assert_eq!(explain(&plain, "s3://b", false).0, Cause::Other);
        assert_eq!(
            said(&plain).as_deref(),
            Some("500 Internal Server Error: oops")
        );
    }

    #[test]
    fn deterministic_client_errors_are_rejections_with_their_code() {
        let status = |status: &str, body: &str| {
            generic(&format!(
                "Error performing PUT http://127.0.0.1:8333/b/k in 2ms - Server returned non-2xx \
                 status code: {status}: {body}"
            ))
        };
        let xml = |code: &str| {
            format!(
                "<?xml version=\"1.0\"?><Error><Code>{code}</Code><Message>Your {code}.</Message></Error>"
            )
        };
        for code in [
            "InvalidArgument",
            "MetadataTooLarge",
            "KeyTooLongError",
            "EntityTooLarge",
        ] {
            let found = rejection(&status("400 Bad Request", &xml(code)));
            assert_eq!(
                found,
                Some(Rejection {
                    status: "400 Bad Request".into(),
                    code: Some(code.into()),
                    message: format!("Your {code}."),
                }),
            );
        }
        let gcs = r#"{"error":{"code":400,"message":"Invalid object name.","errors":[{"reason":"invalid"}]}}"#;
        let found = rejection(&status("400 Bad Request", gcs)).expect("a rejection");
        assert_eq!(
            (found.code.as_deref(), found.message.as_str()),
            (Some("invalid"), "Invalid object name.")
        );
        let bare = rejection(&status("413 Payload Too Large", "too big")).expect("a rejection");
        assert_eq!((bare.code, bare.message.as_str()), (None, "too big"));
        // The server asks to come back, or the failure is transient or read elsewhere.
        for retryable in [
            "408 Request Timeout",
            "429 Too Many Requests",
            "409 Conflict",
            "500 Internal Server Error",
            "503 Service Unavailable",
            "404 Not Found",
            "403 Forbidden",
            "401 Unauthorized",
        ] {
            assert_eq!(
                rejection(&status(retryable, &xml("X"))),
                None,
                "{retryable}"
            );
        }
        // S3's 400s for conditions that clear by themselves stay retryable.
        for code in [
            "RequestTimeout",
            "IncompleteBody",
            "BadDigest",
            "ExpiredToken",
        ] {
            let found = rejection(&status("400 Bad Request", &xml(code)));
            assert_eq!(found, None, "{code}");
        }
        assert_eq!(rejection(&generic("connection reset")), None);
        let denied = object_store::Error::PermissionDenied {
            path: "p".into(),
            source: "Server returned non-2xx status code: 400 Bad Request: x".into(),
        };
        assert_eq!(rejection(&denied), None);
    }

    #[test]
    fn tls_and_refused_connections_name_their_fix() {
        let untrusted = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let io = std::io::Error::new(std::io::ErrorKind::InvalidData, untrusted);
        let error = object_store::Error::Generic {
            store: "S3",
            source: Box::new(io),
        };
        let (cause, text) = explain(&error, "s3://b", false);
        assert_eq!(cause, Cause::Tls(Tls::UntrustedServer));
        assert!(text.starts_with("TLS to its endpoint failed"), "{}", text);
        assert!(text.contains("--store-ca-bundle or AWS_CA_BUNDLE"));
        assert_eq!(
            host("Error performing PUT https://s3.example:8443/b/k in 3ms - …").as_deref(),
            Some("s3.example:8443")
        );
        assert_eq!(host("Error performing GET REDACTED in 3ms"), None);
        let refused = object_store::Error::Generic {
            store: "S3",
            source: Box::new(std::io::Error::from(std::io::ErrorKind::ConnectionRefused)),
        };
        let (cause, text) = explain(&refused, "s3://b", false);
        assert_eq!(cause, Cause::Unreachable);
        assert!(text.contains("check AWS_ENDPOINT_URL"), "{}", text);
    }
}
