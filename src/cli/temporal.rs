//! How the commands that talk to Temporal reach it: one set of flags, shared by `worker`, `dev`
//! and `external-storage gc`.

use std::path::PathBuf;

use overspill::worker::{Compression, Connect};

/// How to reach Temporal (shared with `overspill dev`). `Debug` shows the [`Connect`] it makes,
/// secrets redacted.
#[derive(Clone, clap::Args)]
pub(crate) struct TemporalArgs {
    /// Temporal frontend, `host:port` or URL.
    #[arg(long, env = "TEMPORAL_ADDRESS", default_value = "127.0.0.1:7233")]
    pub(crate) address: String,
    /// Temporal namespace.
    #[arg(long, env = "TEMPORAL_NAMESPACE", default_value = "default")]
    pub(crate) namespace: String,
    /// API key (Temporal Cloud); implies TLS.
    #[arg(
        id = "temporal_api_key",
        long = "api-key",
        env = "TEMPORAL_API_KEY",
        hide_env_values = true
    )]
    pub(crate) api_key: Option<String>,
    /// mTLS client certificate (PEM).
    #[arg(long, env = "TEMPORAL_TLS_CLIENT_CERT_PATH", value_name = "FILE")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// mTLS client key (PEM).
    #[arg(long, env = "TEMPORAL_TLS_CLIENT_KEY_PATH", value_name = "FILE")]
    pub(crate) tls_key: Option<PathBuf>,
    /// Server CA certificate (PEM); default: the system roots.
    #[arg(long, env = "TEMPORAL_TLS_SERVER_CA_CERT_PATH", value_name = "FILE")]
    pub(crate) tls_ca: Option<PathBuf>,
    /// gRPC compression to Temporal: `auto` is gzip except to a loopback address.
    #[arg(long, env = "OVERSPILL_GRPC_COMPRESSION", value_enum, default_value_t = Compression::Auto)]
    pub(crate) grpc_compression: Compression,
}

impl std::fmt::Debug for TemporalArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.connect().fmt(f)
    }
}

impl TemporalArgs {
    pub(crate) fn connect(&self) -> Connect {
        Connect {
            address: self.address.clone(),
            namespace: Some(self.namespace.clone()),
            api_key: self.api_key.clone(),
            tls_cert: self.tls_cert.clone(),
            tls_key: self.tls_key.clone(),
            tls_ca: self.tls_ca.clone(),
            identity: None,
            compression: self.grpc_compression,
        }
    }
}
