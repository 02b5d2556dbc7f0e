//! The HTTP side: routes, admission control, and start/stop of the server.
//!
//! One server may listen on several ports (`--ports 2000-2015`): RL trainers split
//! `PISTON_ENDPOINTS` between their processes, so one machine must look like many endpoints.
//! Every port shares the same admission state, executor and compile cache.
//!
//! Admission works with three semaphores. `admitted` (jobs + max_queue permits) bounds the
//! requests in the server; `buffered` (in KiB) bounds the request bodies held in memory at once;
//! `running` (jobs permits) bounds the executions. A request whose `Content-Length` exceeds
//! `max_body` gets 413 at once, without its body being read. Every client is hostile until its
//! request is whole (docs/threat-model.md#clients): its headers must arrive within
//! [`HEADER_TIMEOUT`] and its body within `read_timeout` (else 408), and while it sends, it holds
//! body budget only for the bytes it has sent and no slot, so no number of slow or dead clients
//! keeps a whole request from a slot. A request whose body finds no budget, or that then finds
//! no slot, waits for it at most `queue_wait`; then it gets 503 with `Retry-After`. The wait is what makes
//! open-r1's client back off instead of failing a reward: it retries a non-200 answer only five
//! times, one to ten seconds apart, but waits 30 s for an answer. The permits move into the
//! blocking task, so a client that hangs up does not free a slot its execution still occupies.
//! After a large request the allocator is asked to give memory back to the system: the sandbox
//! copies the server's memory map on every run, so a bloated server slows every later test.
//!
//! One layer around every route counts execute requests in [`Metrics`] and writes one log line
//! per request (target `ioi_run::request`); the execute handler tells it the language, outcome
//! and queue wait through a response extension ([`Served`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response as HttpResponse};
use axum::routing::{get, post, MethodRouter};
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;

use super::metrics::{self, Metrics, RequestOutcome, Served};
use super::request::parse_execute_noting_runtime;
use super::sandbox_fusion::{parse_run_code, RunCodeRequest};
use super::{ExecuteRequest, Executor, RequestError, Response, RunCodeJob, RunCodeReply, Runtime};

/// Default largest request body: tests reach ~22 MB of input plus ~10 MB of output, and
/// Piston deployments for IOI raised their limit to 512 MB.
pub const DEFAULT_MAX_BODY: u64 = 512 << 20;
/// Default budget of request bodies held in memory at once.
pub const DEFAULT_MAX_BUFFERED: u64 = 2 << 30;
/// Default longest wait for a slot before 503: below the 30 s open-r1's client waits for an
/// answer (`sock_read=30`), above the time a test usually takes.
pub const DEFAULT_QUEUE_WAIT: Duration = Duration::from_secs(20);
/// Connections waiting for a slot beyond which the server answers 503 at once.
const MAX_WAITING: usize = 4096;
/// Bodies from this size on are followed by returning freed memory to the system.
const TRIM_AFTER_BYTES: usize = 16 << 20;
/// Requests between two returns of freed memory to the system, whatever their size: over a
/// training run, memory freed in one thread's heap and not reused there would otherwise pile
/// up (glibc gives each thread a heap of its own), and the server would grow for days.
const TRIM_EVERY_REQUESTS: u64 = 256;
/// Seconds a 503 asks the client to wait (`Retry-After`).
const RETRY_AFTER_SECONDS: u64 = 5;
/// Longest time a client may take to send the whole head of a request (its line and headers).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// Default longest time a client may take to send a whole request body: a body at the largest
/// size of [`DEFAULT_MAX_BODY`] needs 10 MB/s.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(60);

/// How the server listens and how much work it takes on.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Addresses to bind (one listener each, all sharing the workers); port 0 picks a free
    /// port (see [`Server::local_addrs`]).
    pub addrs: Vec<SocketAddr>,
    /// Executions at once.
    pub jobs: usize,
    /// Requests waiting for an execution slot; more wait for room, then get HTTP 503.
    pub max_queue: usize,
    /// Longest wait for room in the queue (or for body budget) before HTTP 503.
    pub queue_wait: Duration,
    /// Largest request body in bytes; a larger one gets HTTP 413 without being read.
    pub max_body: u64,
    /// Bytes of request bodies held in memory at once, over all requests.
    pub max_buffered: u64,
    /// Longest time a client may take to send a whole request body; then HTTP 408.
    pub read_timeout: Duration,
    /// After a shutdown request, how long in-flight requests may take before their sandboxes
    /// are killed (`ioi_sandbox::abort_all`), and again before the server gives up on them.
    pub grace: Duration,
}

impl ServeOptions {
    /// `jobs` executions on one address, a queue of 4 × `jobs`, the default body limits and
    /// waits, a 10 s grace period.
    pub fn new(addr: SocketAddr, jobs: usize) -> ServeOptions {
        let jobs = jobs.max(1);
        ServeOptions {
            addrs: vec![addr],
            jobs,
            max_queue: 4 * jobs,
            queue_wait: DEFAULT_QUEUE_WAIT,
            max_body: DEFAULT_MAX_BODY,
            max_buffered: DEFAULT_MAX_BUFFERED,
            read_timeout: DEFAULT_READ_TIMEOUT,
            grace: Duration::from_secs(10),
        }
    }
}

/// A running server. Dropping it does not stop it: call [`ShutdownHandle::shutdown`], then
/// [`Server::wait`].
pub struct Server {
    local_addrs: Vec<SocketAddr>,
    shutdown: ShutdownHandle,
    tasks: Vec<JoinHandle<Result<()>>>,
}

/// Asks a server to stop: it stops accepting connections and finishes in-flight requests.
#[derive(Debug, Clone)]
pub struct ShutdownHandle(Arc<watch::Sender<bool>>);

impl ShutdownHandle {
    pub fn shutdown(&self) {
        self.0.send_replace(true);
    }
}

impl Server {
    /// Binds every address of `options.addrs` and starts serving on the current tokio
    /// runtime. Nothing is served unless every address could be bound.
    pub async fn start(options: ServeOptions, executor: Arc<dyn Executor>) -> Result<Server> {
        if options.addrs.is_empty() {
            bail!("no address to listen on");
        }
        if options.max_body > options.max_buffered {
            bail!(
                "the largest request body ({} bytes) is above the memory budget for bodies ({} \
                 bytes): raise --max-buffered or lower --max-body",
                options.max_body,
                options.max_buffered
            );
        }
        let mut listeners = Vec::with_capacity(options.addrs.len());
        for addr in &options.addrs {
            let listener = TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen on {addr}"))?;
            listeners.push(listener);
        }
        let local_addrs = listeners
            .iter()
            .map(|l| l.local_addr().context("cannot read the bound address"))
            .collect::<Result<Vec<_>>>()?;
        let jobs = options.jobs.max(1);
        let state = AppState {
            metrics: Arc::new(Metrics::new(Arc::clone(&executor))),
            executor,
            admitted: Arc::new(Semaphore::new(jobs + options.max_queue)),
            buffered_kib: Arc::new(Semaphore::new(kib(options.max_buffered))),
            waiting: Arc::new(Semaphore::new(MAX_WAITING)),
            running: Arc::new(Semaphore::new(jobs)),
            jobs,
            max_queue: options.max_queue,
            queue_wait: options.queue_wait,
            read_timeout: options.read_timeout,
            max_body: options.max_body,
        };
        let app = router(state);
        let (sender, receiver) = watch::channel(false);
        let tasks = listeners
            .into_iter()
            .map(|listener| {
                tokio::spawn(serve(
                    listener,
                    app.clone(),
                    receiver.clone(),
                    options.grace,
                ))
            })
            .collect();
        Ok(Server {
            local_addrs,
            shutdown: ShutdownHandle(Arc::new(sender)),
            tasks,
        })
    }

    /// The (first) address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addrs[0]
    }

    /// Every address the server listens on, in the order of [`ServeOptions::addrs`].
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local_addrs
    }

    pub fn shutdown_handle(&self) -> ShutdownHandle {
        self.shutdown.clone()
    }

    /// Waits until the server has stopped after a shutdown request. Errors when in-flight
    /// requests outlived twice the grace period (they are abandoned) or a listener failed.
    pub async fn wait(self) -> Result<()> {
        let mut result = Ok(());
        for task in self.tasks {
            let done = task
                .await
                .context("the server task panicked")
                .and_then(|r| r);
            if result.is_ok() {
                result = done;
            }
        }
        result
    }
}

/// Permits are counted in KiB so that budgets above 4 GiB fit tokio's `u32` counts.
fn kib(bytes: u64) -> usize {
    (bytes.div_ceil(1024)).min(Semaphore::MAX_PERMITS as u64) as usize
}

/// Serves one listener until shutdown: a connection per task, each request's head read within
/// [`HEADER_TIMEOUT`]. On shutdown no connection is accepted, idle ones close, and in-flight
/// requests get `grace`; then their sandboxes are killed.
async fn serve(
    listener: TcpListener,
    app: Router,
    stop: watch::Receiver<bool>,
    grace: Duration,
) -> Result<()> {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            () = stopped(stop.clone()) => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors, or a connection reset before it was accepted: the
                // listener itself is fine.
                tracing::warn!("cannot accept a connection: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let stop = stop.clone();
        connections.spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT);
            let connection =
                builder.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => return,
                () = stopped(stop) => connection.as_mut().graceful_shutdown(),
            }
            // A connection's error is its client's business (a reset, a slow head).
            let _ = connection.await;
        });
        while connections.try_join_next().is_some() {}
    }
    drop(listener);
    let finished = {
        let drained = async { while connections.join_next().await.is_some() {} };
        let mut drained = std::pin::pin!(drained);
        if tokio::time::timeout(grace, &mut drained).await.is_ok() {
            return Ok(());
        }
        tracing::warn!("requests still running {grace:?} after shutdown: killing their sandboxes");
        // Runs killed here are answered as judge-side errors, never as verdicts.
        crate::judge::stop::request();
        ioi_sandbox::abort_all();
        tokio::time::timeout(grace, drained).await.is_ok()
    };
    if finished {
        return Ok(());
    }
    // Abandoned requests still answer their clients if they ever finish.
    connections.detach_all();
    bail!(
        "requests were still running {:?} after shutdown, even after killing every sandbox; \
         abandoned them",
        grace * 2
    )
}

/// Resolves once shutdown is requested (never, if every handle is gone without asking).
async fn stopped(mut stop: watch::Receiver<bool>) {
    if stop.wait_for(|stopped| *stopped).await.is_err() {
        std::future::pending::<()>().await;
    }
}

#[derive(Clone)]
struct AppState {
    executor: Arc<dyn Executor>,
    metrics: Arc<Metrics>,
    admitted: Arc<Semaphore>,
    buffered_kib: Arc<Semaphore>,
    waiting: Arc<Semaphore>,
    running: Arc<Semaphore>,
    jobs: usize,
    max_queue: usize,
    queue_wait: Duration,
    read_timeout: Duration,
    max_body: u64,
}

fn router(state: AppState) -> Router {
    Router::new()
        .route("/api/v2/runtimes", allow(get(runtimes), "GET, HEAD"))
        .route(
            "/api/v2/packages",
            allow(
                get(packages)
                    .post(install_package)
                    .delete(uninstall_package),
                "GET, HEAD, POST, DELETE",
            ),
        )
        .route("/api/v2/execute", allow(post(execute), "POST"))
        .route("/run_code", allow(post(run_code), "POST"))
        .route("/metrics", allow(get(render_metrics), "GET, HEAD"))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(state.clone(), observe))
        .with_state(state)
}

/// `route` answering other methods with 405, an `Allow` header and Piston's `{message}` body
/// (axum's own 405 has an empty body, which Piston clients cannot report).
fn allow(route: MethodRouter<AppState>, methods: &'static str) -> MethodRouter<AppState> {
    route.fallback(move |request: Request| async move {
        let mut error = ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            format!(
                "method {} is not allowed on {}: use {methods}",
                request.method(),
                request.uri().path()
            ),
        );
        error.allow = Some(methods);
        error
    })
}

/// Counts an execute request in the metrics and writes the log line of every request.
async fn observe(State(state): State<AppState>, request: Request, next: Next) -> HttpResponse {
    let started = Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let response = next.run(request).await;
    let duration = started.elapsed();
    let status = response.status().as_u16();
    state.metrics.record_http(&path, status);
    let served = response.extensions().get::<Served>().copied();
    let millis = |d: Duration| (d.as_secs_f64() * 1e4).round() / 10.0;
    match served {
        Some(served) => {
            state.metrics.record(&served, duration);
            tracing::info!(
                target: "ioi_run::request",
                %method,
                %path,
                status,
                language = %served.language(),
                outcome = %served.outcome,
                queue_wait_ms = served.queue_wait.map_or(0.0, millis),
                duration_ms = millis(duration),
                "request"
            );
        }
        None => tracing::info!(
            target: "ioi_run::request",
            %method,
            %path,
            status,
            duration_ms = millis(duration),
            "request"
        ),
    }
    response
}

async fn render_metrics(State(state): State<AppState>, headers: HeaderMap) -> HttpResponse {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok());
    match metrics::wants_openmetrics(accept) {
        true => (
            [(header::CONTENT_TYPE, metrics::CONTENT_TYPE)],
            state.metrics.render(),
        )
            .into_response(),
        false => (
            [(header::CONTENT_TYPE, metrics::CLASSIC_CONTENT_TYPE)],
            state.metrics.render_classic(),
        )
            .into_response(),
    }
}

async fn runtimes() -> Json<Value> {
    Json(Value::Array(
        Runtime::ALL.iter().map(|rt| rt.to_json()).collect(),
    ))
}

async fn packages() -> Json<Value> {
    Json(Value::Array(
        Runtime::ALL.iter().map(|rt| rt.package_json()).collect(),
    ))
}

/// Built-in runtimes are always installed: installing one succeeds without doing anything.
async fn install_package(body: Bytes) -> Result<Json<Value>, ApiError> {
    package_request(&body)
}

/// Built-in runtimes cannot be removed; like installing, it succeeds without doing anything.
async fn uninstall_package(body: Bytes) -> Result<Json<Value>, ApiError> {
    package_request(&body)
}

fn package_request(body: &[u8]) -> Result<Json<Value>, ApiError> {
    #[derive(serde::Deserialize)]
    struct Package {
        language: String,
        version: String,
    }
    let package: Package = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad(format!(
            "expected {{language, version}} as JSON strings: {e}"
        ))
    })?;
    let runtime = Runtime::find(&package.language, &package.version, false).ok_or_else(|| {
        ApiError::bad(format!(
            "{}-{} package does not exist",
            package.language, package.version
        ))
    })?;
    Ok(Json(
        json!({"language": runtime.language(), "version": runtime.version()}),
    ))
}

async fn execute(State(state): State<AppState>, request: Request) -> HttpResponse {
    let mut served = Served {
        language: None,
        outcome: RequestOutcome::InternalError,
        queue_wait: None,
    };
    let parse = |body: &[u8], language: &mut Option<&'static str>| {
        let mut runtime = None;
        let request = parse_execute_noting_runtime(body, &mut runtime);
        *language = runtime.map(Runtime::language);
        Ok(Parsed::Execute(request?))
    };
    let run = |executor: &dyn Executor, request: ExecuteRequest| {
        executor
            .execute(request.job)
            .map(|response| (request.runtime, response))
    };
    let mut answer = match admit_and_run(&state, request, &mut served, parse, run).await {
        Ok((runtime, response)) => {
            served.outcome = RequestOutcome::of(runtime, &response);
            Json(reply(runtime, response)).into_response()
        }
        Err(error) => {
            served.outcome = error.outcome();
            error.into_response()
        }
    };
    answer.extensions_mut().insert(served);
    answer
}

/// SandboxFusion's `/run_code` (docs/run-code-api.md): admitted, queued and counted like an
/// execute request. Its answers are SandboxFusion's: a language not served and a failure of
/// the server are `SandboxError` (HTTP 200), as SandboxFusion reports them; a malformed
/// request is a 4xx naming the field, and a full server 503, as on the Piston routes.
async fn run_code(State(state): State<AppState>, request: Request) -> HttpResponse {
    let mut served = Served {
        language: None,
        outcome: RequestOutcome::InternalError,
        queue_wait: None,
    };
    let mut unserved = false;
    let parse = |body: &[u8], label: &mut Option<&'static str>| {
        Ok(match parse_run_code(body)? {
            RunCodeRequest::Run(job) => {
                *label = Some(job.language.as_str());
                Parsed::Execute(job)
            }
            RunCodeRequest::Unserved { language } => {
                unserved = true;
                *label = Some("unknown");
                Parsed::Answer(RunCodeReply::unserved(&language))
            }
        })
    };
    let run = |executor: &dyn Executor, job: RunCodeJob| executor.run_code(job);
    let answered = admit_and_run(&state, request, &mut served, parse, run).await;
    let reply = match answered {
        Ok(reply) => reply,
        Err(error) if error.status.is_server_error() && error.retry_after.is_none() => {
            RunCodeReply::sandbox_error(error.message)
        }
        Err(error) => {
            served.outcome = error.outcome();
            let mut answer = error.into_response();
            answer.extensions_mut().insert(served);
            return answer;
        }
    };
    served.outcome = match unserved {
        true => RequestOutcome::BadRequest,
        false => reply.outcome(),
    };
    let mut answer = Json(reply).into_response();
    answer.extensions_mut().insert(served);
    answer
}

/// What a route makes of a request body: a job for the executor, or an answer that needs no
/// execution (and no execution slot).
enum Parsed<J, R> {
    Execute(J),
    Answer(R),
}

/// Admits, reads, parses and executes one request, noting in `served` what it learns on the
/// way (the language once parsed, the time spent waiting). `parse` gives the `language` label
/// with what the body asks; `run` executes a job on a blocking thread, holding the request's
/// slot.
async fn admit_and_run<J, R>(
    state: &AppState,
    request: Request,
    served: &mut Served,
    parse: impl FnOnce(&[u8], &mut Option<&'static str>) -> Result<Parsed<J, R>, RequestError>,
    run: impl FnOnce(&dyn Executor, J) -> Result<R, RequestError> + Send + 'static,
) -> Result<R, ApiError>
where
    J: Send + 'static,
    R: Send + 'static,
{
    let declared = declared_length(&request)?;
    if declared.is_some_and(|length| length > state.max_body) {
        return Err(too_large(state.max_body));
    }
    // Dropped last, once the body, the parsed request and the job are all gone; a body of
    // unknown length may be large, even when it is refused.
    static REQUESTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nth = REQUESTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
    let periodic = nth.is_multiple_of(TRIM_EVERY_REQUESTS);
    let mut trim =
        GiveMemoryBack(periodic || declared.is_none_or(|length| length >= TRIM_AFTER_BYTES as u64));
    let (body, buffered) = read_body(state, request.into_body()).await?;
    trim.0 = periodic || body.len() >= TRIM_AFTER_BYTES;
    let queued = state.metrics.queued();
    let waiting = Instant::now();
    let admission = admit(state).await;
    served.queue_wait = Some(waiting.elapsed());
    let admitted = admission?;
    // The language is noted as soon as it is read, also for a request refused after it.
    let mut language = None;
    let parsed = parse(&body, &mut language);
    served.language = language;
    drop(body);
    // The body is parsed: only what the job holds stays (the test files, which the executor
    // writes out and drops).
    drop(buffered);
    let job = match parsed? {
        Parsed::Execute(job) => job,
        Parsed::Answer(answer) => return Ok(answer),
    };
    let waiting = Instant::now();
    let running = state
        .running
        .clone()
        .acquire_owned()
        .await
        .map_err(|_| ApiError::internal("the server is shutting down".to_string()))?;
    served.queue_wait = served.queue_wait.map(|wait| wait + waiting.elapsed());
    drop(queued);
    let executor = Arc::clone(&state.executor);
    let execution = state.metrics.running();
    let executed = tokio::task::spawn_blocking(move || {
        let _permits = (admitted, running, execution);
        run(executor.as_ref(), job)
    })
    .await;
    match executed {
        Ok(result) => Ok(result?),
        Err(e) if e.is_panic() => {
            let message = panic_message(e.into_panic());
            tracing::error!("the executor panicked: {message}");
            Err(ApiError::internal(format!(
                "the executor panicked: {message}"
            )))
        }
        Err(e) => Err(ApiError::internal(format!(
            "the execution was cancelled: {e}"
        ))),
    }
}

/// The request's `Content-Length`, if it sent one.
fn declared_length(request: &Request) -> Result<Option<u64>, ApiError> {
    let Some(value) = request.headers().get(header::CONTENT_LENGTH) else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Some)
        .ok_or_else(|| ApiError::bad("Content-Length is not a number of bytes".to_string()))
}

/// A slot in the server for a request whose body is read, waiting for one at most
/// `queue_wait`; 503 when none came.
async fn admit(state: &AppState) -> Result<OwnedSemaphorePermit, ApiError> {
    let busy = || ApiError::busy(state);
    let _waiting = state
        .waiting
        .clone()
        .try_acquire_owned()
        .map_err(|_| busy())?;
    match tokio::time::timeout(state.queue_wait, state.admitted.clone().acquire_owned()).await {
        Ok(Ok(permit)) => Ok(permit),
        Ok(Err(_)) => Err(ApiError::internal(
            "the server is shutting down".to_string(),
        )),
        Err(_) => Err(busy()),
    }
}

/// Reads the whole body within `read_timeout` (else 408) and at most `max_body` bytes (else
/// 413), holding body budget for the bytes received so far: a client that stalls holds only
/// what it sent. Budget that does not come within `queue_wait` is a 503.
async fn read_body(
    state: &AppState,
    mut body: Body,
) -> Result<(Vec<u8>, Option<OwnedSemaphorePermit>), ApiError> {
    use http_body_util::BodyExt as _;
    let deadline = tokio::time::Instant::now() + state.read_timeout;
    let late = || {
        ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the request body did not arrive whole within {:?} (--read-timeout)",
                state.read_timeout
            ),
        )
    };
    let mut bytes = Vec::new();
    let mut budget: Option<OwnedSemaphorePermit> = None;
    loop {
        let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
            Err(_) => return Err(late()),
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                return Err(ApiError::bad(format!("cannot read the request body: {e}")))
            }
            Ok(Some(Ok(frame))) => frame,
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let length = bytes.len() as u64 + data.len() as u64;
        if length > state.max_body {
            return Err(too_large(state.max_body));
        }
        let held = budget.as_ref().map_or(0, |p| p.num_permits());
        let needed = kib(length).saturating_sub(held);
        if needed > 0 {
            let more = state
                .buffered_kib
                .clone()
                .acquire_many_owned(u32::try_from(needed).unwrap_or(u32::MAX));
            let wait = tokio::time::Instant::now() + state.queue_wait;
            let more = match tokio::time::timeout_at(wait.min(deadline), more).await {
                Ok(Ok(permit)) => permit,
                Ok(Err(_)) => {
                    return Err(ApiError::internal(
                        "the server is shutting down".to_string(),
                    ))
                }
                Err(_) if wait <= deadline => return Err(ApiError::busy(state)),
                Err(_) => return Err(late()),
            };
            match &mut budget {
                Some(permit) => permit.merge(more),
                None => budget = Some(more),
            }
        }
        bytes.extend_from_slice(&data);
    }
    Ok((bytes, budget))
}

fn too_large(max_body: u64) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("request body too large: the limit is {max_body} bytes (--max-body)"),
    )
}

/// When dropped (and armed), returns freed heap memory to the system: glibc keeps the many
/// small buffers a large body arrived in, and what its threads' heaps freed over many requests,
/// and the server would stay bloated. At most one trim a [`TRIM_INTERVAL`]: a trim walks every
/// heap under its lock, and a client sending bodies of unknown length that it never finishes
/// arms one per request.
struct GiveMemoryBack(bool);

/// The shortest time between two trims.
const TRIM_INTERVAL: Duration = Duration::from_secs(1);

impl Drop for GiveMemoryBack {
    fn drop(&mut self) {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        if self.0 {
            use std::sync::atomic::{AtomicU64, Ordering};
            // Milliseconds since the server's first trim, of the last trim (0: none yet).
            static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
            static LAST: AtomicU64 = AtomicU64::new(0);
            let now = START.get_or_init(Instant::now).elapsed().as_millis() as u64 + 1;
            let last = LAST.load(Ordering::Relaxed);
            let due = last == 0 || now.saturating_sub(last) >= TRIM_INTERVAL.as_millis() as u64;
            if due
                && LAST
                    .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
            {
                // SAFETY: malloc_trim only walks the allocator's own free lists.
                unsafe {
                    libc::malloc_trim(0);
                }
            }
        }
    }
}

fn reply(runtime: Runtime, response: Response) -> Value {
    let mut reply = json!({"language": runtime.language(), "version": runtime.version()});
    if let Some(compile) = response.compile {
        reply["compile"] = json!(compile);
    }
    if let Some(run) = response.run {
        reply["run"] = json!(run);
    }
    reply
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_string())
}

async fn not_found(request: Request) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!(
            "no route {} {}: the API is GET /api/v2/runtimes, GET|POST|DELETE /api/v2/packages, \
             POST /api/v2/execute, POST /run_code, GET /metrics",
            request.method(),
            request.uri().path()
        ),
    )
}

/// An error answered in Piston's shape: `{"message": ...}` with an HTTP status.
#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    message: String,
    /// Seconds for a `Retry-After` header.
    retry_after: Option<u64>,
    /// The methods of a 405's `Allow` header.
    allow: Option<&'static str>,
}

impl ApiError {
    fn new(status: StatusCode, message: String) -> ApiError {
        ApiError {
            status,
            message,
            retry_after: None,
            allow: None,
        }
    }

    fn bad(message: String) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    fn internal(message: String) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }

    fn busy(state: &AppState) -> ApiError {
        let mut error = ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "server busy: {} requests running and {} waiting (--jobs {}, --max-queue {}) for \
                 {:?} (--queue-wait); retry later",
                state.jobs, state.max_queue, state.jobs, state.max_queue, state.queue_wait
            ),
        );
        error.retry_after = Some(RETRY_AFTER_SECONDS);
        error
    }

    /// How a request that ended in this error is counted.
    fn outcome(&self) -> RequestOutcome {
        match self.status {
            StatusCode::SERVICE_UNAVAILABLE => RequestOutcome::Busy,
            status if status.is_server_error() => RequestOutcome::InternalError,
            _ => RequestOutcome::BadRequest,
        }
    }
}

impl From<RequestError> for ApiError {
    fn from(error: RequestError) -> ApiError {
        match error {
            RequestError::BadRequest(message) => ApiError::bad(message),
            RequestError::Internal(message) => {
                tracing::error!("execution failed: {message}");
                ApiError::internal(message)
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> HttpResponse {
        let mut response = (self.status, Json(json!({"message": self.message}))).into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, seconds.into());
        }
        if let Some(methods) = self.allow {
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static(methods));
        }
        response
    }
}
