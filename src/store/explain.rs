//! A remote store's failure in the server's own words, with the setting that fixes it: the
//! spill store and External Storage report their failures with it.

use object_store::client::{HttpError, HttpErrorKind};
use reqwest::StatusCode;

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
    let (host, answer) = exchange(error);
    let (credentials, endpoint) = settings(url);
    let host = host.unwrap_or_else(|| "its endpoint".to_owned());
    // S3's (and GCS's) code for a missing bucket, and Azure's for a missing container.
    let code = answer.as_ref().and_then(|a| a.code.as_deref());
    let no_bucket = matches!(code, Some("NoSuchBucket" | "ContainerNotFound"))
        || (missing_is_bucket && matches!(error, E::NotFound { .. }));
    let words = (answer.as_ref()).map_or_else(|| diagnose::innermost(error), Answer::said);
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
    } else if diagnose::chain(error).any(|e| {
        e.downcast_ref::<HttpError>()
            .is_some_and(|h| h.kind() == HttpErrorKind::Connect)
    }) {
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
pub(crate) fn rejection(error: &object_store::Error) -> Option<Rejection> {
    let answer = exchange(error).1?;
    let status = answer.status;
    let deterministic =
        status.is_client_error() && !matches!(status.as_u16(), 401 | 403 | 404 | 408 | 409 | 429);
    let transient = (answer.code.as_deref()).is_some_and(|c| TRANSIENT_CODES.contains(&c));
    (deterministic && !transient).then(|| Rejection {
        status: status.to_string(),
        message: answer.message.unwrap_or(answer.start),
        code: answer.code,
    })
}

/// The request behind `error`: the `host:port` it went to and the server's non-2xx answer, read
/// from the text of object_store's `RetryError` and of the
/// `RequestError` it wraps. object_store 0.14 keeps the request's URL and the answer's status
/// and body in those two alone, in a private module (only 304, 401, 403, 404, 409 and 412 reach
/// a caller typed, as [`object_store::Error`]'s variants), so this is the one place that reads
/// their text, in the forms they display: `Error performing PUT https://host:port/b/k in 2ms - …`
/// and `Server returned non-2xx status code: 400 Bad Request: BODY`.
fn exchange(error: &object_store::Error) -> (Option<String>, Option<Answer>) {
    let (mut host, mut answer) = (None, None);
    for e in diagnose::chain(error) {
        let text = e.to_string();
        if let Some(request) = text.strip_prefix("Error performing ")
            && let Some(Ok(url)) = request.split(' ').nth(1).map(reqwest::Url::parse)
            && let (Some(name), Some(port)) = (url.host_str(), url.port_or_known_default())
        {
            host.get_or_insert_with(|| format!("{name}:{port}"));
        }
        if let Some(answered) = text.strip_prefix("Server returned non-2xx status code: ")
            && let Some(digits) = answered.get(..3)
            && let Ok(status) = StatusCode::from_bytes(digits.as_bytes())
        {
            let body = answered.strip_prefix(&status.to_string()).unwrap_or("");
            answer = Some(Answer::new(status, body.strip_prefix(": ").unwrap_or(body)));
        }
    }
    (host, answer)
}

/// What a server answered a failed request: its status, and the error code and message of its
/// body: S3's and Azure's XML (`<Code>`, `<Message>`), GCS's JSON (`error.errors[0].reason` or
/// `error.status`, `error.message`).
struct Answer {
    status: StatusCode,
    code: Option<String>,
    message: Option<String>,
    /// The body's first 200 characters.
    start: String,
}

impl Answer {
    fn new(status: StatusCode, body: &str) -> Self {
        let body = body.trim();
        let tag = |name: &str| {
            let (_, after) = body.split_once(&format!("<{name}>"))?;
            let (value, _) = after.split_once(&format!("</{name}>"))?;
            Some(value.trim().to_owned())
        };
        let json = serde_json::from_str::<serde_json::Value>(body).ok();
        let error = json.as_ref().and_then(|j| j.get("error"));
        let field = |pointer: &str| Some(error?.pointer(pointer)?.as_str()?.to_owned());
        let code = tag("Code").or_else(|| field("/errors/0/reason").or_else(|| field("/status")));
        Self {
            status,
            code,
            message: tag("Message").or_else(|| field("/message")),
            start: body.chars().take(200).collect(),
        }
    }

    /// The answer in the server's words: `403 Forbidden, SignatureDoesNotMatch: The request
    /// signature …`, else the status and the body's start.
    fn said(&self) -> String {
        let status = self.status;
        match (&self.code, &self.message) {
            (Some(code), Some(message)) => format!("{status}, {code}: {message}"),
            (Some(code), None) => format!("{status}, {code}"),
            _ if self.start.is_empty() => status.to_string(),
            _ => format!("{status}: {}", self.start),
        }
    }
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

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use object_store::ObjectStoreExt as _;

    use super::*;

    /// An S3 client of `endpoint`, with no retries.
    fn s3(endpoint: &str) -> object_store::aws::AmazonS3 {
        object_store::aws::AmazonS3Builder::new()
            .with_endpoint(endpoint)
            .with_allow_http(true)
            .with_bucket_name("b")
            .with_region("us-east-1")
            .with_access_key_id("key")
            .with_secret_access_key("secret")
            .with_retry(object_store::RetryConfig {
                max_retries: 0,
                ..Default::default()
            })
            .build()
            .expect("an S3 client")
    }

    /// A server on a local port that answers every request with `status` and `body`.
    async fn answering(status: u16, body: &'static str) -> std::net::SocketAddr {
        use http_body_util::Full;
        use hyper::service::service_fn;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let service = service_fn(move |_request| async move {
                    hyper::Response::builder()
                        .status(status)
                        .body(Full::new(Bytes::from_static(body.as_bytes())))
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                let served =
                    hyper::server::conn::http1::Builder::new().serve_connection(io, service);
                tokio::spawn(served);
            }
        });
        addr
    }

    /// The error object_store's S3 client gives for a write the server answers with `status`
    /// and `body`.
    async fn answered(status: u16, body: &'static str) -> object_store::Error {
        let addr = answering(status, body).await;
        let path = object_store::path::Path::from("k");
        let put = s3(&format!("http://{addr}")).put(&path, "x".into()).await;
        put.expect_err("the server refuses every write")
    }

    fn xml(code: &str) -> &'static str {
        format!(
            "<?xml version=\"1.0\"?><Error><Code>{code}</Code><Message>Your {code}.</Message>\
             </Error>"
        )
        .leak()
    }

    #[tokio::test]
    async fn the_request_is_read_from_a_real_client_error() {
        let error = answered(400, "<Error><Code>InvalidArgument</Code></Error>").await;
        let (host, answer) = exchange(&error);
        assert!(host.is_some_and(|h| h.starts_with("127.0.0.1:")), "{error}");
        let answer = answer.expect("the answer");
        assert_eq!(answer.status, StatusCode::BAD_REQUEST);
        assert_eq!(answer.start, "<Error><Code>InvalidArgument</Code></Error>");
        let empty = exchange(&answered(500, "").await).1.expect("the answer");
        assert_eq!((empty.status.as_u16(), empty.start.as_str()), (500, ""));
    }

    #[tokio::test]
    async fn the_servers_words_are_its_code_and_message() {
        let denied = answered(
            403,
            "<?xml version=\"1.0\"?><Error><Code>SignatureDoesNotMatch</Code><Message>The \
             request signature we calculated does not match.</Message></Error>",
        )
        .await;
        assert!(matches!(
            denied,
            object_store::Error::PermissionDenied { .. }
        ));
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
        let bucket = answered(
            404,
            "<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist\
             </Message></Error>",
        )
        .await;
        let (cause, text) = explain(&bucket, "s3://nope", false);
        assert_eq!(cause, Cause::NoBucket);
        assert!(
            text.starts_with(
                "the bucket of store s3://nope does not exist (404 Not Found, NoSuchBucket: The \
                 specified bucket does not exist): create it"
            ),
            "{text}"
        );
        let container = answered(404, xml("ContainerNotFound")).await;
        assert_eq!(explain(&container, "az://c", false).0, Cause::NoBucket);
        let plain = answered(500, "oops").await;
        assert_eq!(explain(&plain, "s3://b", false).0, Cause::Other);
        let said = exchange(&plain).1.map(|a| a.said());
        assert_eq!(said.as_deref(), Some("500 Internal Server Error: oops"));
    }

    #[tokio::test]
    async fn deterministic_client_errors_are_rejections_with_their_code() {
        for code in [
            "InvalidArgument",
            "MetadataTooLarge",
            "KeyTooLongError",
            "EntityTooLarge",
        ] {
            let found = rejection(&answered(400, xml(code)).await);
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
        let found = rejection(&answered(400, gcs).await).expect("a rejection");
        assert_eq!(
            (found.code.as_deref(), found.message.as_str()),
            (Some("invalid"), "Invalid object name.")
        );
        let bare = rejection(&answered(413, "too big").await).expect("a rejection");
        assert_eq!((bare.code, bare.message.as_str()), (None, "too big"));
        // The server asks to come back, or the failure is transient or read elsewhere.
        for retryable in [408, 429, 409, 500, 503, 404, 403, 401] {
            let found = rejection(&answered(retryable, xml("X")).await);
            assert_eq!(found, None, "{retryable}");
        }
        // S3's 400s for conditions that clear by themselves stay retryable.
        for code in TRANSIENT_CODES {
            assert_eq!(rejection(&answered(400, xml(code)).await), None, "{code}");
        }
    }

    #[tokio::test]
    async fn refused_connections_and_tls_to_a_plain_server_name_their_fix() {
        let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = closed.local_addr().unwrap();
        drop(closed);
        let path = object_store::path::Path::from("k");
        let refused = s3(&format!("http://{addr}")).put(&path, "x".into()).await;
        let (cause, text) = explain(&refused.expect_err("refused"), "s3://b", false);
        assert_eq!(cause, Cause::Unreachable);
        assert!(
            text.starts_with(&format!("cannot reach store s3://b at {addr} (")),
            "{text}"
        );
        assert!(
            text.ends_with(
                "check AWS_ENDPOINT_URL or the URL's ?endpoint=, and that the server runs"
            ),
            "{text}"
        );
        let unresolved = s3("http://no-such-host.invalid")
            .put(&path, "x".into())
            .await;
        let (cause, text) = explain(&unresolved.expect_err("no such host"), "s3://b", false);
        assert_eq!(cause, Cause::Unreachable, "{text}");
        assert!(
            text.starts_with("cannot reach store s3://b at no-such-host.invalid:80 ("),
            "{text}"
        );
        let plain = answering(200, "").await;
        let tls = s3(&format!("https://{plain}")).put(&path, "x".into()).await;
        let (cause, text) = explain(&tls.expect_err("not TLS"), "s3://b", false);
        assert_eq!(cause, Cause::Tls(Tls::Other));
        assert!(
            text.starts_with(&format!("TLS to {plain} failed for store s3://b (")),
            "{text}"
        );
        assert!(
            text.contains("an http:// server does not speak TLS"),
            "{text}"
        );
    }
}
