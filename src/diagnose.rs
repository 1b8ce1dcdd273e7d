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

/// The HTTP status a proxy answered instead of gRPC, as tonic words it (`… while receiving
/// response with status: 401 Unauthorized`, `… mapped from HTTP status code 401`): `401
/// Unauthorized`.
#[cfg(feature = "worker")]
pub(crate) fn http_status(grpc_message: &str) -> Option<reqwest::StatusCode> {
    let (_, rest) = grpc_message
        .rsplit_once("with status: ")
        .or_else(|| grpc_message.rsplit_once("from HTTP status code "))?;
    let digits = rest.get(..3)?;
    reqwest::StatusCode::from_bytes(digits.as_bytes()).ok()
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
        if let Some(shown) = http_status(said) {
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
    use super::*;

    #[test]
    #[cfg(feature = "worker")]
    fn http_statuses_are_read_from_either_of_tonics_wordings() {
        let framed = "protocol error: received message with invalid compression flag: 60 (valid \
                      flags are 0 and 1) while receiving response with status: 401 Unauthorized";
        let status = http_status(framed).expect("a status");
        assert_eq!(status.to_string(), "401 Unauthorized");
        let mapped = "grpc-status header missing, mapped from HTTP status code 503";
        assert_eq!(http_status(mapped).map(|s| s.as_u16()), Some(503));
        assert_eq!(http_status("Namespace foo is not found."), None);
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
