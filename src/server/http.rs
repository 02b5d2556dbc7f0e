//! The HTTP side: routes, admission control, and start/stop of the server.
//!
//! Admission works with two semaphores. `admitted` (jobs + max_queue permits) bounds the
//! requests in the server, and a request that finds none left gets HTTP 503 at once, before its
//! body is read, so a flooded server neither buffers unbounded bodies nor makes clients wait
//! forever (the Python client retries non-200 answers). `running` (jobs permits) bounds the
//! executions. Both permits move into the blocking task, so a client that hangs up does not free
//! a slot its execution still occupies.

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response as HttpResponse};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinHandle;

use super::{parse_execute, Executor, RequestError, Response, Runtime};

/// Largest request body accepted: tests reach ~22 MB of input plus ~10 MB of output, and
/// Piston deployments for IOI raised their limit to 512 MB.
const MAX_BODY_BYTES: usize = 1 << 30;

/// How the server listens and how much work it takes on.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Address to bind; port 0 picks a free port (see [`Server::local_addr`]).
    pub addr: SocketAddr,
    /// Executions at once.
    pub jobs: usize,
    /// Requests waiting for an execution slot; more get HTTP 503.
    pub max_queue: usize,
    /// After a shutdown request, how long in-flight requests may take before their sandboxes
    /// are killed (`ioi_sandbox::abort_all`), and again before the server gives up on them.
    pub grace: Duration,
}

impl ServeOptions {
    /// `jobs` executions, a queue of 4 × `jobs`, a 10 s grace period.
    pub fn new(addr: SocketAddr, jobs: usize) -> ServeOptions {
        let jobs = jobs.max(1);
        ServeOptions {
            addr,
            jobs,
            max_queue: 4 * jobs,
            grace: Duration::from_secs(10),
        }
    }
}

/// A running server. Dropping it does not stop it: call [`ShutdownHandle::shutdown`], then
/// [`Server::wait`].
pub struct Server {
    local_addr: SocketAddr,
    shutdown: ShutdownHandle,
    task: JoinHandle<Result<()>>,
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
    /// Binds `options.addr` and starts serving on the current tokio runtime.
    pub async fn start(options: ServeOptions, executor: Arc<dyn Executor>) -> Result<Server> {
        let listener = TcpListener::bind(options.addr)
            .await
            .with_context(|| format!("cannot listen on {}", options.addr))?;
        let local_addr = listener
            .local_addr()
            .context("cannot read the bound address")?;
        let jobs = options.jobs.max(1);
        let state = AppState {
            executor,
            admitted: Arc::new(Semaphore::new(jobs + options.max_queue)),
            running: Arc::new(Semaphore::new(jobs)),
            jobs,
            max_queue: options.max_queue,
        };
        let (sender, receiver) = watch::channel(false);
        let task = tokio::spawn(serve(listener, router(state), receiver, options.grace));
        Ok(Server {
            local_addr,
            shutdown: ShutdownHandle(Arc::new(sender)),
            task,
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    pub fn shutdown_handle(&self) -> ShutdownHandle {
        self.shutdown.clone()
    }

    /// Waits until the server has stopped after a shutdown request. Errors when in-flight
    /// requests outlived twice the grace period (they are abandoned) or the listener failed.
    pub async fn wait(self) -> Result<()> {
        self.task.await.context("the server task panicked")?
    }
}

async fn serve(
    listener: TcpListener,
    app: Router,
    stop: watch::Receiver<bool>,
    grace: Duration,
) -> Result<()> {
    let server = axum::serve(listener, app).with_graceful_shutdown(stopped(stop.clone()));
    let mut server = std::pin::pin!(server.into_future());
    tokio::select! {
        result = &mut server => return result.context("the HTTP server failed"),
        () = async { stopped(stop).await; tokio::time::sleep(grace).await } => {}
    }
    tracing::warn!("requests still running {grace:?} after shutdown: killing their sandboxes");
    // Runs killed here are answered as judge-side errors, never as verdicts.
    crate::judge::stop::request();
    ioi_sandbox::abort_all();
    match tokio::time::timeout(grace, server).await {
        Ok(result) => result.context("the HTTP server failed"),
        Err(_) => bail!(
            "requests were still running {:?} after shutdown, even after killing every sandbox; \
             abandoned them",
            grace * 2
        ),
    }
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
    admitted: Arc<Semaphore>,
    running: Arc<Semaphore>,
    jobs: usize,
    max_queue: usize,
}

fn router(state: AppState) -> Router {
    Router::new()
        .route("/api/v2/runtimes", get(runtimes))
        .route(
            "/api/v2/packages",
            get(packages)
                .post(install_package)
                .delete(uninstall_package),
        )
        .route("/api/v2/execute", post(execute))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
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
    let runtime = Runtime::find(&package.language, &package.version).ok_or_else(|| {
        ApiError::bad(format!(
            "{}-{} package does not exist",
            package.language, package.version
        ))
    })?;
    Ok(Json(
        json!({"language": runtime.language(), "version": runtime.version()}),
    ))
}

async fn execute(State(state): State<AppState>, request: Request) -> Result<Json<Value>, ApiError> {
    let admitted = state
        .admitted
        .clone()
        .try_acquire_owned()
        .map_err(|_| ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: format!(
                "server busy: {} requests running and {} waiting (--jobs {}, --max-queue {}); \
                 retry later",
                state.jobs, state.max_queue, state.jobs, state.max_queue
            ),
        })?;
    let body = Bytes::from_request(request, &state)
        .await
        .map_err(|rejection| ApiError {
            status: rejection.status(),
            message: format!("cannot read the request body: {}", rejection.body_text()),
        })?;
    let request = parse_execute(&body)?;
    drop(body);
    let running = state
        .running
        .clone()
        .acquire_owned()
        .await
        .map_err(|_| ApiError::internal("the server is shutting down".to_string()))?;
    let executor = Arc::clone(&state.executor);
    let job = request.job;
    let executed = tokio::task::spawn_blocking(move || {
        let _permits = (admitted, running);
        executor.execute(job)
    })
    .await;
    let response = match executed {
        Ok(result) => result?,
        Err(e) if e.is_panic() => {
            let message = panic_message(e.into_panic());
            tracing::error!("the executor panicked: {message}");
            return Err(ApiError::internal(format!(
                "the executor panicked: {message}"
            )));
        }
        Err(e) => {
            return Err(ApiError::internal(format!(
                "the execution was cancelled: {e}"
            )))
        }
    };
    Ok(Json(reply(request.runtime, response)))
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
    ApiError {
        status: StatusCode::NOT_FOUND,
        message: format!(
            "no route {} {}: the API is GET /api/v2/runtimes, GET|POST|DELETE /api/v2/packages, \
             POST /api/v2/execute",
            request.method(),
            request.uri().path()
        ),
    }
}

/// An error answered in Piston's shape: `{"message": ...}` with an HTTP status.
#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    fn bad(message: String) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message,
        }
    }

    fn internal(message: String) -> ApiError {
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message,
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
        (self.status, Json(json!({"message": self.message}))).into_response()
    }
}
