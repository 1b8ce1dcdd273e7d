//! A local OpenAI-compatible chat-completions server (hyper), faithful to the parts of the
//! protocol a summarizer uses: `POST /v1/chat/completions`, bearer auth, the request shape, the
//! `chat.completion` reply with its `usage` block, and OpenAI-style error bodies.
//!
//! Replies come from a script (one per request, in order), then from a default that summarizes
//! by describing the user message. Every chat-completions request is recorded.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// The chat-completions path the server serves.
pub(crate) const PATH: &str = "/v1/chat/completions";

/// One reply: status, extra headers, body, and a delay before answering.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
    delay: Duration,
}

impl Reply {
    /// A `chat.completion` whose message is `text`, with the given usage.
    pub(crate) fn summary(text: &str, prompt_tokens: u64, completion_tokens: u64) -> Self {
        let body = json!({
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 1_764_460_800,
            "model": "fake-model",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": null},
                "logprobs": null,
                "finish_reason": "stop",
            }],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        });
        Self::raw(200, &body.to_string())
    }

    /// An OpenAI-style error: `{"error": {"message", "type", "param", "code"}}`.
    pub(crate) fn error(status: u16, message: &str, kind: &str) -> Self {
        let body =
            json!({"error": {"message": message, "type": kind, "param": null, "code": null}});
        Self::raw(status, &body.to_string())
    }

    /// Any status and body, as JSON.
    pub(crate) fn raw(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_owned(),
            delay: Duration::ZERO,
        }
    }

    /// With one more header.
    pub(crate) fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Answer only after `delay`.
    pub(crate) fn delayed(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

/// A chat-completions request as the server received it.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    /// The `Authorization` header.
    pub(crate) authorization: Option<String>,
    /// The JSON body.
    pub(crate) body: Value,
}

impl Recorded {
    /// `model`.
    pub(crate) fn model(&self) -> &str {
        self.body["model"].as_str().unwrap_or_default()
    }

    /// The content of the message with `role`.
    pub(crate) fn message(&self, role: &str) -> &str {
        self.body["messages"]
            .as_array()
            .and_then(|m| m.iter().find(|m| m["role"] == role))
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
    }

    /// The user message: the rendered prompt.
    pub(crate) fn prompt(&self) -> &str {
        self.message("user")
    }
}

type Default = Box<dyn Fn(&Recorded) -> Reply + Send + Sync>;

struct State {
    api_key: Option<String>,
    hits: std::sync::atomic::AtomicUsize,
    /// Closed: chat requests wait at it (counted in `held`) until it opens.
    gate: tokio::sync::watch::Sender<bool>,
    held: std::sync::atomic::AtomicUsize,
    script: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Recorded>>,
    default: Default,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The running server; it stops when dropped.
pub(crate) struct FakeOpenAi {
    addr: SocketAddr,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeOpenAi {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeOpenAi {
    /// A server requiring `Authorization: Bearer <api_key>` when `api_key` is given, answering
    /// with [`FakeOpenAi::describe`] once the script is used up.
    pub(crate) async fn start(api_key: Option<&str>) -> Self {
        Self::with_default(api_key, Self::describe).await
    }

    /// A server whose default reply is `default(request)`.
    pub(crate) async fn with_default(
        api_key: Option<&str>,
        default: impl Fn(&Recorded) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a local port");
        let addr = listener.local_addr().expect("a local address");
        let state = Arc::new(State {
            api_key: api_key.map(str::to_owned),
            hits: std::sync::atomic::AtomicUsize::new(0),
            gate: tokio::sync::watch::Sender::new(true),
            held: std::sync::atomic::AtomicUsize::new(0),
            script: Mutex::new(VecDeque::new()),
            requests: Mutex::new(Vec::new()),
            default: Box::new(default),
        });
        let shared = state.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let state = shared.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| handle(state.clone(), req));
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self { addr, state, task }
    }

    /// The default reply: `Summary of <n> characters from <tool>.` wrapped in whitespace, with
    /// usage of one token per 4 prompt characters and one per summary word.
    pub(crate) fn describe(request: &Recorded) -> Reply {
        let prompt = request.prompt();
        let text = format!("\n  Summary of {} characters.  \n", prompt.chars().count());
        let input = (request.message("system").len() + prompt.len()).div_ceil(4) as u64;
        let output = text.split_whitespace().count() as u64;
        Reply::summary(&text, input, output)
    }

    /// The server's base URL, without `/v1`.
    pub(crate) fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Queue replies for the next requests, in order.
    pub(crate) fn script(&self, replies: impl IntoIterator<Item = Reply>) {
        lock(&self.state.script).extend(replies);
    }

    /// Every HTTP request so far, valid or not (a replay must make none).
    pub(crate) fn hits(&self) -> usize {
        self.state.hits.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Hold every chat-completions request from now on until [`Self::open`].
    pub(crate) fn close(&self) {
        self.state.gate.send_replace(false);
    }

    /// Answer the held requests, and hold no more.
    pub(crate) fn open(&self) {
        self.state.gate.send_replace(true);
    }

    /// Requests waiting at the closed gate.
    pub(crate) fn held(&self) -> usize {
        self.state.held.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Every chat-completions request so far.
    pub(crate) fn requests(&self) -> Vec<Recorded> {
        lock(&self.state.requests).clone()
    }
}

async fn handle(
    state: Arc<State>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let reply = answer(&state, request).await;
    tokio::time::sleep(reply.delay).await;
    let mut response = Response::builder().status(reply.status);
    for (name, value) in &reply.headers {
        response = response.header(name, value);
    }
    Ok(response
        .body(Full::new(Bytes::from(reply.body)))
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new()))))
}

async fn answer(state: &State, request: Request<Incoming>) -> Reply {
    state.hits.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    if request.uri().path() != PATH {
        return Reply::error(404, "Not found", "invalid_request_error");
    }
    if request.method() != Method::POST {
        return Reply::error(405, "Method not allowed", "invalid_request_error");
    }
    let authorization = request
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Some(key) = &state.api_key {
        let given = authorization
            .as_deref()
            .and_then(|a| a.strip_prefix("Bearer "));
        if given != Some(key.as_str()) {
            // OpenAI echoes (part of) the key; echo all of it to prove the client redacts it.
            let message = format!("Incorrect API key provided: {}.", given.unwrap_or("(none)"));
            return Reply::error(
                StatusCode::UNAUTHORIZED.as_u16(),
                &message,
                "invalid_request_error",
            );
        }
    }
    let is_json = request
        .headers()
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let bytes = match request.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => return Reply::error(400, "unreadable body", "invalid_request_error"),
    };
    let body: Value = match serde_json::from_slice(&bytes) {
        Ok(body) if is_json => body,
        _ => {
            return Reply::error(
                400,
                "We could not parse the JSON body of your request.",
                "invalid_request_error",
            );
        }
    };
    if let Some(problem) = shape_problem(&body) {
        return Reply::error(400, &problem, "invalid_request_error");
    }
    let recorded = Recorded {
        authorization,
        body,
    };
    lock(&state.requests).push(recorded.clone());
    let mut gate = state.gate.subscribe();
    if !*gate.borrow() {
        state.held.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let _ = gate.wait_for(|open| *open).await;
        state.held.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
    let scripted = lock(&state.script).pop_front();
    scripted.unwrap_or_else(|| (state.default)(&recorded))
}

/// What OpenAI would refuse in the body, if anything.
fn shape_problem(body: &Value) -> Option<String> {
    if !body["model"].is_string() {
        return Some("you must provide a model parameter".into());
    }
    let Some(messages) = body["messages"].as_array() else {
        return Some("Missing required parameter: 'messages'.".into());
    };
    if messages.is_empty() {
        return Some("'messages' must contain at least one message".into());
    }
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or_default();
        if !matches!(role, "system" | "developer" | "user" | "assistant" | "tool") {
            return Some(format!("Invalid value for 'messages[{i}].role'"));
        }
        if !m["content"].is_string() {
            return Some(format!("Invalid type for 'messages[{i}].content'"));
        }
    }
    None
}
