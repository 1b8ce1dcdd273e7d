//! Building the object_store backend a URL names, with bounded timeouts and retries, and a
//! [`Bucket`] opened the same way for objects whose keys another module owns (Temporal External
//! Storage keeps its payloads in one).

use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    BackoffConfig, Certificate, ClientConfigKey, ClientOptions, ObjectStore, RetryConfig,
};

use super::StoreError;
use super::StoreOptions;
use super::url::{Scheme, StoreUrl};

/// The client settings read from the environment (`AWS_PROXY_URL`, `AWS_PROXY_CA_CERTIFICATE`,
/// `AWS_ALLOW_HTTP`, …) that the store keeps; its own timeouts replace the environment's.
const INHERITED: [ClientConfigKey; 16] = [
    ClientConfigKey::AllowHttp,
    ClientConfigKey::AllowInvalidCertificates,
    ClientConfigKey::NoSystemCertificates,
    ClientConfigKey::DefaultContentType,
    ClientConfigKey::Http1Only,
    ClientConfigKey::Http2Only,
    ClientConfigKey::Http2KeepAliveInterval,
    ClientConfigKey::Http2KeepAliveTimeout,
    ClientConfigKey::Http2KeepAliveWhileIdle,
    ClientConfigKey::Http2MaxFrameSize,
    ClientConfigKey::PoolMaxIdlePerHost,
    ClientConfigKey::ProxyUrl,
    ClientConfigKey::ProxyCaCertificate,
    ClientConfigKey::ProxyExcludes,
    ClientConfigKey::RandomizeAddresses,
    ClientConfigKey::UserAgent,
];

/// HTTP client options: what the environment set (`from_env` reads the builder's), with a
/// connect timeout and a read-inactivity timeout. The whole call is bounded by the store's
/// per-call deadline instead of a per-request total, so that a large transfer on a slow link is
/// not cut off while a frozen server still fails fast.
///
/// A CA bundle (`options`' or `AWS_CA_BUNDLE`) replaces the system's roots, as in the AWS tools.
fn client_options(
    options: &StoreOptions,
    from_env: impl Fn(ClientConfigKey) -> Option<String>,
) -> Result<ClientOptions, StoreError> {
    let inherited = INHERITED
        .into_iter()
        .fold(ClientOptions::new(), |client, key| match from_env(key) {
            Some(value) => client.with_config(key, value),
            None => client,
        });
    let mut client = inherited
        .with_timeout_disabled()
        .with_connect_timeout(options.connect_timeout)
        .with_read_timeout(options.timeout)
        .with_pool_idle_timeout(Duration::from_secs(30));
    if let Some(allow) = options.allow_http {
        client = client.with_allow_http(allow);
    }
    let bundle = options.ca_bundle.clone().or_else(|| {
        std::env::var_os("AWS_CA_BUNDLE")
            .filter(|v| !v.is_empty())
            .map(Into::into)
    });
    let Some(bundle) = bundle else {
        return Ok(client);
    };
    let refused = |problem: String| {
        StoreError::Misconfigured(format!(
            "the CA bundle {} (--store-ca-bundle or AWS_CA_BUNDLE) {problem}",
            bundle.display()
        ))
    };
    let pem = std::fs::read(&bundle).map_err(|e| refused(format!("cannot be read: {e}")))?;
    let certificates =
        Certificate::from_pem_bundle(&pem).map_err(|e| refused(format!("is not PEM: {e}")))?;
    if certificates.is_empty() {
        return Err(refused("holds no PEM certificate".into()));
    }
    Ok(certificates.into_iter().fold(
        client.with_no_system_certificates(true),
        |client, certificate| client.with_root_certificate(certificate),
    ))
}

/// `$env` (a builder read `from_env`) with `$url`, the client options the environment set
/// (`$key` wraps a client key in the builder's own key type), the store's timeouts and retries.
macro_rules! configured {
    ($env:expr, $key:path, $url:expr, $options:expr) => {{
        let env = $env;
        let client = client_options($options, |k| env.get_config_value(&$key(k)))?;
        env.with_url($url)
            .with_client_options(client)
            .with_retry(retry_config($options))
    }};
}

/// A short retry budget: a store that is down fails within about a second.
fn retry_config(options: &StoreOptions) -> RetryConfig {
    RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
            base: 2.0,
        },
        max_retries: options.max_retries,
        retry_timeout: options.timeout,
    }
}

/// The S3 builder: `env` (the environment's settings) with the URL, the store's settings, and
/// the check that a custom endpoint comes with credentials.
fn s3(
    env: AmazonS3Builder,
    url: &str,
    options: &StoreOptions,
) -> Result<AmazonS3Builder, StoreError> {
    let mut builder = configured!(env, AmazonS3ConfigKey::Client, url, options);
    if let Some(endpoint) = &options.endpoint {
        builder = builder.with_endpoint(endpoint);
    }
    if let Some(region) = &options.region {
        builder = builder.with_region(region);
    }
    if let Some(super::options::Credentials {
        access_key_id: id,
        secret_access_key: secret,
    }) = &options.credentials
    {
        builder = builder
            .with_access_key_id(id)
            .with_secret_access_key(secret);
    }
    if plain_http_only(&builder, |var| std::env::var_os(var).is_some()) {
        // Loading the system's root certificates costs milliseconds per client (a `read` of
        // the CLI pays it every time); a client that never opens TLS does not need them.
        let key = AmazonS3ConfigKey::Client(ClientConfigKey::NoSystemCertificates);
        builder = builder.with_config(key, "true");
    }
    let endpoint = builder.get_config_value(&AmazonS3ConfigKey::Endpoint);
    if endpoint.is_some() && !has_credentials(&builder) {
        return Err(StoreError::Misconfigured(
            "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (a store with a \
             custom endpoint never asks the EC2 instance metadata service), or \
             AWS_SKIP_SIGNATURE=true for a public bucket"
                .into(),
        ));
    }
    Ok(builder)
}

/// The environment variables reqwest reads a proxy for a plain-HTTP request from.
const PROXY_VARS: [&str; 4] = ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"];

/// Whether every request `builder`'s store makes is plain HTTP, so that its client needs no
/// root certificates: its endpoint is `http://` (the S3-specific one first, as object_store
/// picks it), it signs locally (a static key, or unsigned: a web identity asks STS over HTTPS),
/// it opens no S3 Express session (HTTPS), and no proxy is set (`is_set` tells of an
/// environment variable), since a proxy may be reached over TLS. An endpoint that redirects to
/// HTTPS is not followed there: name it by its `https://` URL.
fn plain_http_only(builder: &AmazonS3Builder, is_set: impl Fn(&str) -> bool) -> bool {
    let value = |key: AmazonS3ConfigKey| builder.get_config_value(&key);
    let set = |key: AmazonS3ConfigKey| value(key).is_some();
    let endpoint = value(AmazonS3ConfigKey::S3Endpoint).or(value(AmazonS3ConfigKey::Endpoint));
    let plain = endpoint.is_some_and(|e| url::Url::parse(&e).is_ok_and(|u| u.scheme() == "http"));
    let signs_locally = (set(AmazonS3ConfigKey::AccessKeyId)
        && set(AmazonS3ConfigKey::SecretAccessKey))
        || is_on(builder, AmazonS3ConfigKey::SkipSignature);
    let proxied = set(AmazonS3ConfigKey::Client(ClientConfigKey::ProxyUrl))
        || PROXY_VARS.into_iter().any(is_set);
    plain && signs_locally && !is_on(builder, AmazonS3ConfigKey::S3Express) && !proxied
}

/// Whether `builder`'s boolean setting `key` is on.
fn is_on(builder: &AmazonS3Builder, key: AmazonS3ConfigKey) -> bool {
    builder.get_config_value(&key).is_some_and(|v| v == "true")
}

/// Whether `builder` has credentials other than the EC2 instance metadata service's: a key, a
/// web identity, a container's credentials, or unsigned requests.
fn has_credentials(builder: &AmazonS3Builder) -> bool {
    let set = |key: AmazonS3ConfigKey| builder.get_config_value(&key).is_some();
    set(AmazonS3ConfigKey::AccessKeyId)
        || set(AmazonS3ConfigKey::SecretAccessKey)
        || (set(AmazonS3ConfigKey::WebIdentityTokenFile) && set(AmazonS3ConfigKey::RoleArn))
        || set(AmazonS3ConfigKey::ContainerCredentialsRelativeUri)
        || (set(AmazonS3ConfigKey::ContainerCredentialsFullUri)
            && set(AmazonS3ConfigKey::ContainerAuthorizationTokenFile))
        || is_on(builder, AmazonS3ConfigKey::SkipSignature)
}

/// An `s3://` / `gs://` / `az://` bucket: the same environment variables, URL query parameters,
/// timeouts and retries as a spill store on that URL.
#[derive(Debug, Clone)]
pub struct Bucket {
    /// The object store, rooted at the bucket (keys are bucket keys).
    pub store: Arc<dyn ObjectStore>,
    /// The bucket's name.
    pub name: String,
    /// The URL's path inside the bucket: `""` or `a/b`.
    pub prefix: String,
    options: StoreOptions,
}

impl Bucket {
    /// The bucket `url` names (`file://` is not a bucket).
    pub fn open(url: &str, options: StoreOptions) -> Result<Self, StoreError> {
        let parsed = StoreUrl::parse(url).map_err(|e| StoreError::Backend(Box::new(e)))?;
        let (store, prefix, shown) = connect(parsed, &options)?;
        let name = ::url::Url::parse(&shown)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default();
        Ok(Self::new(store, name, prefix.as_ref(), options))
    }

    /// A bucket over an existing object store (tests use object_store's in-memory store).
    pub fn new(
        store: Arc<dyn ObjectStore>,
        name: impl Into<String>,
        prefix: &str,
        options: StoreOptions,
    ) -> Self {
        Self {
            store,
            name: name.into(),
            prefix: prefix.trim_matches('/').to_owned(),
            options,
        }
    }

    /// The deadline of one call moving `bytes` (the store's per-call timeout plus the transfer
    /// at its slowest allowed rate).
    pub fn deadline(&self, bytes: u64) -> Duration {
        self.options.deadline(bytes)
    }
}

/// The object store a blob-store URL names, its key prefix and the URL without its query.
/// An endpoint, region or `allow_http` in `options` wins over the URL's query, which wins over
/// the environment (AWS_ALLOW_HTTP is kept by `client_options`, AWS_ENDPOINT_URL and AWS_REGION by
/// the builders' `from_env`).
pub(super) fn connect(
    parsed: StoreUrl,
    options: &StoreOptions,
) -> Result<(Arc<dyn ObjectStore>, Path, String), StoreError> {
    match parsed {
        StoreUrl::Local { root } => Err(StoreError::Backend(
            format!("{} is a local directory, not a bucket", root.display()).into(),
        )),
        StoreUrl::Object {
            scheme,
            url,
            prefix,
            endpoint,
            region,
            allow_http,
        } => {
            let options = &StoreOptions {
                endpoint: options.endpoint.clone().or(endpoint),
                region: options.region.clone().or(region),
                allow_http: options.allow_http.or(allow_http),
                ..options.clone()
            };
            let backend = |e: object_store::Error| StoreError::Backend(Box::new(e));
            let store: Arc<dyn ObjectStore> = match scheme {
                Scheme::S3 => {
                    let builder = s3(AmazonS3Builder::from_env(), &url, options)?;
                    Arc::new(builder.build().map_err(backend)?)
                }
                Scheme::Gcs => {
                    let env = GoogleCloudStorageBuilder::from_env();
                    let builder = configured!(env, GoogleConfigKey::Client, &url, options);
                    Arc::new(builder.build().map_err(backend)?)
                }
                Scheme::Azure => {
                    let env = MicrosoftAzureBuilder::from_env();
                    let mut builder = configured!(env, AzureConfigKey::Client, &url, options);
                    if let Some(endpoint) = &options.endpoint {
                        builder = builder.with_endpoint(endpoint.clone());
                    }
                    Arc::new(builder.build().map_err(backend)?)
                }
                Scheme::Memory => Arc::new(InMemory::new()),
            };
            Ok((store, prefix, crate::redact::url(&url)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Options naming a plain-HTTP endpoint, with `credentials` if given.
    fn at_endpoint(credentials: Option<(&str, &str)>) -> StoreOptions {
        let options = StoreOptions::builder()
            .endpoint("http://127.0.0.1:9")
            .allow_http(true)
            .connect_timeout(Duration::from_secs(3));
        match credentials {
            Some((id, secret)) => options.credentials(id, secret).build(),
            None => options.build(),
        }
    }

    fn client(builder: &AmazonS3Builder, key: ClientConfigKey) -> Option<String> {
        builder.get_config_value(&AmazonS3ConfigKey::Client(key))
    }

    #[test]
    fn keeps_the_environments_client_options() {
        let env = AmazonS3Builder::new()
            .with_access_key_id("id")
            .with_secret_access_key("secret")
            .with_config(
                AmazonS3ConfigKey::Client(ClientConfigKey::ProxyUrl),
                "http://proxy.internal:3128",
            )
            .with_config(
                AmazonS3ConfigKey::Client(ClientConfigKey::ProxyCaCertificate),
                "/etc/proxy-ca.pem",
            );
        let builder = s3(env, "s3://spills", &at_endpoint(None)).expect("a builder");
        assert_eq!(
            client(&builder, ClientConfigKey::ProxyUrl).as_deref(),
            Some("http://proxy.internal:3128")
        );
        assert_eq!(
            client(&builder, ClientConfigKey::ProxyCaCertificate).as_deref(),
            Some("/etc/proxy-ca.pem")
        );
        assert_eq!(client(&builder, ClientConfigKey::Timeout), None);
        assert_eq!(
            client(&builder, ClientConfigKey::ConnectTimeout).as_deref(),
            Some("3s")
        );
        assert_eq!(
            client(&builder, ClientConfigKey::AllowHttp).as_deref(),
            Some("true")
        );
    }

    #[test]
    fn only_a_store_that_never_opens_tls_skips_the_system_certificates() {
        let keyed = || {
            AmazonS3Builder::new()
                .with_access_key_id("id")
                .with_secret_access_key("secret")
        };
        let at = |endpoint: &str, builder: AmazonS3Builder| builder.with_endpoint(endpoint);
        let no_env = |_: &str| false;
        assert!(plain_http_only(
            &at("http://127.0.0.1:8333", keyed()),
            no_env
        ));
        assert!(plain_http_only(&at("HTTP://minio:9000", keyed()), no_env));
        let unsigned = AmazonS3Builder::new().with_skip_signature(true);
        assert!(plain_http_only(&at("http://minio:9000", unsigned), no_env));
        assert!(!plain_http_only(&at("https://minio:9000", keyed()), no_env));
        assert!(!plain_http_only(&keyed(), no_env), "AWS itself is HTTPS");
        // object_store prefers the S3-specific endpoint.
        let s3_https = at("http://minio:9000", keyed())
            .with_config(AmazonS3ConfigKey::S3Endpoint, "https://s3.example.com");
        assert!(!plain_http_only(&s3_https, no_env));
        // A web identity asks STS over HTTPS, whatever the endpoint.
        let identity = AmazonS3Builder::new()
            .with_config(AmazonS3ConfigKey::WebIdentityTokenFile, "/var/run/token")
            .with_config(AmazonS3ConfigKey::RoleArn, "arn:aws:iam::1:role/r");
        assert!(!plain_http_only(&at("http://minio:9000", identity), no_env));
        let express = keyed().with_config(AmazonS3ConfigKey::S3Express, "true");
        assert!(!plain_http_only(&at("http://minio:9000", express), no_env));
        // A proxy may be reached over TLS, set in the store's options or reqwest's variables.
        let proxied = keyed().with_config(
            AmazonS3ConfigKey::Client(ClientConfigKey::ProxyUrl),
            "https://proxy:3128",
        );
        assert!(!plain_http_only(&at("http://minio:9000", proxied), no_env));
        let env_proxy = |var: &str| var == "all_proxy";
        assert!(!plain_http_only(
            &at("http://minio:9000", keyed()),
            env_proxy
        ));
        // Through `s3`, the switch is set on the client.
        let options = at_endpoint(Some(("id", "secret")));
        let builder = s3(AmazonS3Builder::new(), "s3://spills", &options);
        let builder = builder.expect("a builder");
        let expected = PROXY_VARS.iter().all(|v| std::env::var_os(v).is_none());
        assert_eq!(
            client(&builder, ClientConfigKey::NoSystemCertificates).as_deref(),
            Some(if expected { "true" } else { "false" })
        );
    }

    #[test]
    fn a_custom_endpoint_without_credentials_is_misconfigured() {
        let error = s3(AmazonS3Builder::new(), "s3://spills", &at_endpoint(None))
            .expect_err("no credentials");
        assert!(matches!(error, StoreError::Misconfigured(_)));
        assert!(
            error
                .to_string()
                .starts_with("no S3 credentials: set AWS_ACCESS_KEY_ID")
        );
        let keyed = at_endpoint(Some(("id", "secret")));
        assert!(s3(AmazonS3Builder::new(), "s3://spills", &keyed).is_ok());
        let unsigned = AmazonS3Builder::new().with_skip_signature(true);
        assert!(s3(unsigned, "s3://spills", &at_endpoint(None)).is_ok());
        // On AWS itself (no endpoint), the instance's role is a legitimate source.
        let aws = StoreOptions::default();
        assert!(s3(AmazonS3Builder::new(), "s3://spills", &aws).is_ok());
    }
}
