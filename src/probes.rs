//! The worker's HTTP endpoint: `/metrics` (Prometheus), `/healthz` and `/readyz`.
//!
//! - `GET /healthz`: `200 ok` while the process serves HTTP at all (a liveness probe).
//! - `GET /readyz`: `200 ready` when the worker is connected to Temporal (its namespace answers)
//!   and its spill store answers (a read of a missing object comes back as missing); else `503
//!   not ready: …` naming what failed. Each check is bounded by [`CHECK_TIMEOUT`] and its result
//!   kept for [`CHECK_CACHE`], so probes cost the servers at most one call each a second.
//! - `GET /metrics`: the SDK's Prometheus exporter, which listens on a loopback port of its own;
//!   this endpoint forwards to it.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::CONTENT_TYPE;
use hyper::{Request, Response, StatusCode};

/// How long one readiness check of Temporal or the store may take.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// How long a readiness result is served before the next probe checks again.
pub const CHECK_CACHE: Duration = Duration::from_secs(1);

/// One readiness check: `Err` says what is not ready.
pub type Check = Box<dyn Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync>;

/// What `/readyz` answers: not ready until a [`Check`] is installed (the worker installs one once
/// it has connected), then the check's cached result. Cheap to clone; clones share the state.
#[derive(Clone, Default, derive_more::Debug)]
pub struct Readiness {
    #[debug(skip)]
    state: Arc<tokio::sync::Mutex<State>>,
}

#[derive(Default)]
struct State {
    check: Option<Check>,
    last: Option<(Instant, Result<(), String>)>,
}

impl Readiness {
    /// Answer `/readyz` with `check` from now on.
    pub async fn set_check(&self, check: Check) {
        let mut state = self.state.lock().await;
        state.check = Some(check);
        state.last = None;
    }

    /// Whether the worker is ready, from the cache or a new check (one at a time).
    pub async fn status(&self) -> Result<(), String> {
        let mut state = self.state.lock().await;
        if let Some((at, result)) = &state.last
            && at.elapsed() < CHECK_CACHE
        {
            return result.clone();
        }
        let Some(check) = &state.check else {
            return Err("not connected to Temporal yet".into());
        };
        let result = check().await;
        state.last = Some((Instant::now(), result.clone()));
        result
    }
}

/// `what` within [`CHECK_TIMEOUT`], its failure prefixed with `name`.
pub async fn bounded<E: std::fmt::Display>(
    name: &str,
    what: impl std::future::Future<Output = Result<(), E>>,
) -> Result<(), String> {
    match tokio::time::timeout(CHECK_TIMEOUT, what).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("{name}: {e}")),
        Err(_) => Err(format!("{name}: no answer within {CHECK_TIMEOUT:?}")),
    }
}

/// Serve the endpoint on `listener`: probes from `readiness`, metrics from the exporter at
/// `metrics`. Runs until the runtime stops; fails when no HTTP client or listener can be made.
pub(crate) fn serve(
    listener: std::net::TcpListener,
    metrics: SocketAddr,
    readiness: Readiness,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let forward = reqwest::Client::builder()
        .timeout(CHECK_TIMEOUT)
        .no_proxy()
        .build()?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let (readiness, forward) = (readiness.clone(), forward.clone());
            let service = hyper::service::service_fn(move |request| {
                answer(request, metrics, readiness.clone(), forward.clone())
            });
            tokio::spawn(async move {
                let io = hyper_util::rt::TokioIo::new(stream);
                let connection = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(CHECK_TIMEOUT)
                    .serve_connection(io, service);
                if let Err(error) = connection.await {
                    tracing::debug!(%error, "probe connection failed");
                }
            });
        }
    });
    Ok(())
}

async fn answer(
    request: Request<Incoming>,
    metrics: SocketAddr,
    readiness: Readiness,
    forward: reqwest::Client,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let text = |status: StatusCode, body: String| {
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        response
    };
    Ok(match request.uri().path() {
        "/healthz" => text(StatusCode::OK, "ok\n".into()),
        "/readyz" => match readiness.status().await {
            Ok(()) => text(StatusCode::OK, "ready\n".into()),
            Err(why) => text(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("not ready: {why}\n"),
            ),
        },
        "/metrics" => {
            let scraped = async {
                let response = forward
                    .get(format!("http://{metrics}/metrics"))
                    .send()
                    .await?;
                let kind = response.headers().get(CONTENT_TYPE).cloned();
                Ok::<_, reqwest::Error>((kind, response.bytes().await?))
            };
            match scraped.await {
                Ok((kind, body)) => {
                    let mut response = Response::new(Full::new(body));
                    response
                        .headers_mut()
                        .extend(kind.map(|k| (CONTENT_TYPE, k)));
                    response
                }
                Err(e) => text(StatusCode::BAD_GATEWAY, format!("metrics exporter: {e}\n")),
            }
        }
        _ => text(StatusCode::NOT_FOUND, "not found\n".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn readiness_is_cached_briefly_and_bounded() {
        let readiness = Readiness::default();
        assert_eq!(
            readiness.status().await,
            Err("not connected to Temporal yet".to_owned())
        );
        let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = calls.clone();
        readiness
            .set_check(Box::new(move || {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Box::pin(async { Err("store: down".to_owned()) })
            }))
            .await;
        assert_eq!(readiness.status().await, Err("store: down".to_owned()));
        assert_eq!(readiness.status().await, Err("store: down".to_owned()));
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1, "cached");
        let refused = bounded("store", async { Err::<(), _>("403 Forbidden") });
        assert_eq!(refused.await, Err("store: 403 Forbidden".to_owned()));
    }
}
