//! What a failed connection means, read from an error's source chain: a TLS refusal (rustls's own
//! error), an HTTP status a proxy answered instead of gRPC, a host that refused or did not resolve.
//! The Temporal connection ([`crate::worker::Connect`]) and the object stores
//! ([`crate::store::Store`]) name with it the cause and the setting that fixes it.

use std::error::Error;

/// The innermost error's words (`Connection refused (os error 111)`).
pub(crate) fn innermost(error: &(dyn Error + 'static)) -> String {
    // The chain starts with `error` itself, so it is never empty.
    chain(error).last().unwrap_or(error).to_string()
}

/// Every error in `error`'s source chain, the ones an [`std::io::Error`] wraps included (its
/// `source` skips them).
pub(crate) fn chain<'a>(
    error: &'a (dyn Error + 'static),
) -> impl Iterator<Item = &'a (dyn Error + 'static)> {
    let mut next = Some(error);
    std::iter::from_fn(move || {
        let current = next?;
        let wrapped = current
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .map(|inner| inner as &(dyn Error + 'static));
        next = wrapped.or_else(|| current.source());
        Some(current)
    })
}

/// Why a TLS handshake failed, as the person configuring the client fixes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tls {
    /// The server's certificate is not signed by a CA the client trusts.
    UntrustedServer,
    /// The server's certificate is for other names.
    WrongName,
    /// The server wants a client certificate, or refused the one sent.
    ClientCertificate,
    /// Anything else (an expired certificate, a server that does not speak TLS, …).
    Other,
}

/// The TLS failure in `error`'s chain, with rustls's words for it.
pub(crate) fn tls(error: &(dyn Error + 'static)) -> Option<(Tls, String)> {
    use rustls::{AlertDescription as A, CertificateError as C, Error as E};
    let found = chain(error).find_map(|e| e.downcast_ref::<rustls::Error>())?;
    let kind = match found {
        E::InvalidCertificate(C::UnknownIssuer | C::BadSignature) => Tls::UntrustedServer,
        E::InvalidCertificate(C::NotValidForName | C::NotValidForNameContext { .. }) => {
            Tls::WrongName
        }
        E::AlertReceived(A::CertificateRequired | A::BadCertificate | A::UnknownCA)
        | E::NoCertificatesPresented => Tls::ClientCertificate,
        _ => Tls::Other,
    };
    Some((kind, found.to_string()))
}

/// The first I/O error kind in `error`'s chain (`ConnectionRefused`, `TimedOut`, …).
pub(crate) fn io_kind(error: &(dyn Error + 'static)) -> Option<std::io::ErrorKind> {
    chain(error).find_map(|e| e.downcast_ref::<std::io::Error>().map(std::io::Error::kind))
}

/// The HTTP status a proxy answered instead of gRPC (`401 Unauthorized`). tonic keeps it in the
/// status's message alone (its code maps several HTTP statuses to one, and any status with a
/// body that is not gRPC to `Internal`), so this is the one place that reads that text, in
/// tonic's two wordings: `… while receiving response with status: 401 Unauthorized` and `…
/// mapped from HTTP status code 503`.
#[cfg(feature = "worker")]
fn http_status(status: &temporalio_client::tonic::Status) -> Option<reqwest::StatusCode> {
    let said = status.message();
    let (_, rest) = (said.rsplit_once("with status: "))
        .or_else(|| said.rsplit_once("from HTTP status code "))?;
    reqwest::StatusCode::from_bytes(rest.get(..3)?.as_bytes()).ok()
}

/// What a failed connection to Temporal means and the flag that fixes it, after `Temporal at
/// ADDRESS`: `answered HTTP 401 Unauthorized: check --api-key (TEMPORAL_API_KEY)`. `client_cert`
/// tells whether a client certificate was offered.
#[cfg(feature = "worker")]
pub(crate) fn temporal(error: &(dyn Error + 'static), client_cert: bool) -> String {
    use temporalio_client::tonic::Code;
    const KEY: &str = "check --api-key (TEMPORAL_API_KEY)";
    const CERT: &str = "check --tls-cert and --tls-key";
    const ADDRESS: &str = "check --address (TEMPORAL_ADDRESS)";
    if let Some((kind, words)) = tls(error) {
        return match kind {
            Tls::UntrustedServer => format!(
                "presented a certificate no trusted CA signed ({words}): check --tls-ca \
                 (TEMPORAL_TLS_SERVER_CA_CERT_PATH)"
            ),
            Tls::WrongName => format!(
                "presented a certificate for other names ({words}): check the host in --address, \
                 or the server's certificate"
            ),
            Tls::ClientCertificate => {
                format!("refused the TLS client certificate ({words}): {CERT}")
            }
            Tls::Other => format!(
                "failed the TLS handshake ({words}): check --address (a plain-HTTP server is \
                 http://), --tls-ca, --tls-cert and --tls-key"
            ),
        };
    }
    let status = chain(error).find_map(|e| match e.downcast_ref() {
        Some(temporalio_client::errors::ClientConnectError::SystemInfoCallError(s)) => Some(s),
        _ => e.downcast_ref::<temporalio_client::tonic::Status>(),
    });
    if let Some(status) = status {
        let said = status.message();
        if let Some(shown) = http_status(status) {
            return match shown.as_u16() {
                401 => format!("answered HTTP {shown}: {KEY}"),
                403 => format!("answered HTTP {shown}: {KEY}, and the key's access to --namespace"),
                400 if !client_cert => format!(
                    "answered HTTP {shown} (as a proxy that requires a client certificate does): \
                     {CERT}"
                ),
                502..=504 => format!(
                    "answered HTTP {shown}: the proxy at this address cannot reach Temporal"
                ),
                _ => format!("answered HTTP {shown}, not gRPC: {ADDRESS}"),
            };
        }
        return match status.code() {
            Code::Unauthenticated => format!("refused the credentials ({said}): {KEY}, or {CERT}"),
            Code::PermissionDenied => format!(
                "refused access ({said}): {KEY} and the key's access to --namespace \
                 (TEMPORAL_NAMESPACE)"
            ),
            _ => format!("failed ({:?}: {said}): {ADDRESS}", status.code()),
        };
    }
    let innermost = innermost(error);
    match io_kind(error) {
        Some(std::io::ErrorKind::ConnectionRefused) => {
            format!("refused the connection ({innermost}): {ADDRESS}, and that the server runs")
        }
        _ => format!("cannot be reached ({innermost}): {ADDRESS}"),
    }
}

#[cfg(test)]
mod tests {
    #[cfg(feature = "worker")]
    use temporalio_client::tonic::Status;

    use super::*;

    /// The status tonic's client gives for a call its server answers with an HTTP `status`,
    /// `headers` and `body`, as a proxy in front of Temporal may.
    #[cfg(feature = "worker")]
    async fn answered(status: u16, headers: &[(&str, &str)], body: &'static str) -> Status {
        use temporalio_client::tonic::codegen::{Bytes, Context, Poll, Service, http};
        use temporalio_common::protos::temporal::api::workflowservice::v1::{
            GetSystemInfoRequest, workflow_service_client::WorkflowServiceClient,
        };
        type Answer = http::Response<http_body_util::Full<Bytes>>;
        struct Server(Option<Answer>);
        impl Service<http::Request<temporalio_client::tonic::body::Body>> for Server {
            type Response = Answer;
            type Error = std::convert::Infallible;
            type Future = std::future::Ready<Result<Answer, Self::Error>>;
            fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
                Poll::Ready(Ok(()))
            }
            fn call(
                &mut self,
                _: http::Request<temporalio_client::tonic::body::Body>,
            ) -> Self::Future {
                std::future::ready(Ok(self.0.take().expect("one call")))
            }
        }
        let mut answer = http::Response::builder().status(status);
        for (name, value) in headers {
            answer = answer.header(*name, *value);
        }
        let answer = answer.body(body.into()).expect("a response");
        let mut client = WorkflowServiceClient::new(Server(Some(answer)));
        let called = client
            .get_system_info(GetSystemInfoRequest::default())
            .await;
        called.expect_err("not a gRPC answer")
    }

    #[tokio::test]
    #[cfg(feature = "worker")]
    async fn a_proxys_http_status_is_read_from_tonics_status() {
        let html = answered(401, &[], "<html>401 Authorization Required</html>").await;
        assert_eq!(http_status(&html), Some(reqwest::StatusCode::UNAUTHORIZED));
        assert_eq!(
            temporal(&html, false),
            "answered HTTP 401 Unauthorized: check --api-key (TEMPORAL_API_KEY)"
        );
        let bare = answered(
            400,
            &[],
            "<html>No required SSL certificate was sent</html>",
        )
        .await;
        assert!(
            temporal(&bare, false).starts_with("answered HTTP 400 Bad Request (as a proxy that requires a client certificate does): check --tls-cert"),
            "{bare}"
        );
        let empty = answered(503, &[], "").await;
        assert_eq!(
            http_status(&empty),
            Some(reqwest::StatusCode::SERVICE_UNAVAILABLE)
        );
        assert_eq!(
            temporal(&empty, false),
            "answered HTTP 503 Service Unavailable: the proxy at this address cannot reach Temporal"
        );
        let grpc = [
            ("content-type", "application/grpc"),
            ("grpc-status", "16"),
            ("grpc-message", "bad key"),
        ];
        let refused = answered(200, &grpc, "").await;
        assert_eq!(http_status(&refused), None);
        assert_eq!(
            temporal(&refused, false),
            "refused the credentials (bad key): check --api-key (TEMPORAL_API_KEY), or check \
             --tls-cert and --tls-key"
        );
    }

    #[test]
    fn the_chain_reaches_inside_io_errors() {
        let inner = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let io = std::io::Error::new(std::io::ErrorKind::InvalidData, inner);
        let outer: Box<dyn Error + Send + Sync> = format!("connect: {io}").into();
        assert_eq!(tls(outer.as_ref()), None);
        let (kind, words) = tls(&io).expect("a TLS failure");
        assert_eq!(kind, Tls::UntrustedServer);
        assert!(words.contains("UnknownIssuer"), "{words}");
        assert_eq!(io_kind(&io), Some(std::io::ErrorKind::InvalidData));
        let wrong_name =
            rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName);
        assert_eq!(tls(&wrong_name).map(|t| t.0), Some(Tls::WrongName));
        let required = rustls::Error::AlertReceived(rustls::AlertDescription::CertificateRequired);
        assert_eq!(tls(&required).map(|t| t.0), Some(Tls::ClientCertificate));
    }
}
