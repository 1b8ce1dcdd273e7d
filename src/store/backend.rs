//! Building the object_store backend a URL names, with bounded timeouts and retries.

use std::sync::Arc;

use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::memory::InMemory;
use object_store::{BackoffConfig, ClientOptions, ObjectStore, RetryConfig};

use super::StoreOptions;
use super::url::{Scheme, parse_bool};

/// HTTP client options: a connect timeout and a read-inactivity timeout. The whole call is
/// bounded by the store's per-call deadline instead of a per-request total, so that a large
/// transfer on a slow link is not cut off while a frozen server still fails fast.
fn client_options(options: &StoreOptions) -> ClientOptions {
    ClientOptions::new()
        .with_timeout_disabled()
        .with_connect_timeout(options.connect_timeout)
        .with_read_timeout(options.timeout)
        .with_pool_idle_timeout(std::time::Duration::from_secs(30))
}

/// A short retry budget: a store that is down fails within about a second.
fn retry_config(options: &StoreOptions) -> RetryConfig {
    RetryConfig {
        backoff: BackoffConfig {
            init_backoff: std::time::Duration::from_millis(100),
            max_backoff: std::time::Duration::from_secs(1),
            base: 2.0,
        },
        max_retries: options.max_retries,
        retry_timeout: options.timeout,
    }
}

/// The backend for a blob-store URL.
pub(crate) fn build(
    scheme: Scheme,
    url: &str,
    endpoint: Option<&str>,
    region: Option<&str>,
    allow_http: Option<bool>,
    options: &StoreOptions,
) -> Result<Arc<dyn ObjectStore>, object_store::Error> {
    let endpoint = options.endpoint.as_deref().or(endpoint);
    let region = options.region.as_deref().or(region);
    // Flag, then URL query, then the backend's `*_ALLOW_HTTP` variable (re-applied:
    // with_client_options resets it).
    let allow_http_variable = match scheme {
        Scheme::Gcs => "GOOGLE_ALLOW_HTTP",
        _ => "AWS_ALLOW_HTTP",
    };
    let allow_http = options.allow_http.or(allow_http).unwrap_or_else(|| {
        std::env::var(allow_http_variable)
            .ok()
            .and_then(|v| parse_bool(&v))
            .unwrap_or(false)
    });
    Ok(match scheme {
        Scheme::S3 => {
            let mut builder = AmazonS3Builder::from_env()
                .with_url(url)
                .with_client_options(client_options(options))
                .with_retry(retry_config(options));
            if allow_http {
                builder = builder.with_allow_http(true);
            }
            if let Some(endpoint) = endpoint {
                builder = builder.with_endpoint(endpoint);
            }
            if let Some(region) = region {
                builder = builder.with_region(region);
            }
            if let Some(super::Credentials {
                access_key_id: id,
                secret_access_key: secret,
            }) = &options.credentials
            {
                builder = builder
                    .with_access_key_id(id)
                    .with_secret_access_key(secret);
            }
            Arc::new(builder.build()?)
        }
        Scheme::Gcs => Arc::new(
            GoogleCloudStorageBuilder::from_env()
                .with_url(url)
                .with_client_options(client_options(options).with_allow_http(allow_http))
                .with_retry(retry_config(options))
                .build()?,
        ),
        Scheme::Azure => {
            let mut builder = MicrosoftAzureBuilder::from_env()
                .with_url(url)
                .with_client_options(client_options(options))
                .with_retry(retry_config(options));
            if allow_http {
                builder = builder.with_allow_http(true);
            }
            if let Some(endpoint) = endpoint {
                builder = builder.with_endpoint(endpoint.to_owned());
            }
            Arc::new(builder.build()?)
        }
        Scheme::Memory => Arc::new(InMemory::new()),
    })
}
