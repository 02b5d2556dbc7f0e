//! What an operator of a fleet watches: `GET /metrics`, in the OpenMetrics text format when the
//! scraper asks for it (Prometheus does) and in the classic text format (`text/plain;
//! version=0.0.4`) otherwise, and one log line per request.
//!
//! A fleet of 16 ports × N machines is only run well when one can see, per machine, how full
//! its queue is, how long requests wait and take, which verdicts it hands out, how often the
//! compile cache spares a compile, and how many requests it turned away (503). The counters live
//! in a [`prometheus_client`] registry owned by the server (no global recorder: two servers in
//! one process, as in the tests, count apart). Compile-cache, verdict-cache and box figures
//! are read from the executor at scrape time, so the judge and the sandbox keep a single
//! source of truth for them; the histograms of program runs and compiles ([`runs`]) are filled
//! by the executor as they happen.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub mod runs;

pub use runs::RunMetrics;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

use super::{Executor, Response, Runtime};

/// The content type of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The content type of [`Metrics::render_classic`]'s text.
pub const CLASSIC_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Whether a scraper's `Accept` header asks for OpenMetrics; any other scraper (the classic
/// format's, `curl`) gets the classic text format, as Prometheus' own exporters answer.
pub fn wants_openmetrics(accept: Option<&str>) -> bool {
    accept.is_some_and(|accept| {
        accept.split(',').any(|item| {
            let mut parts = item.split(';');
            let kind = parts.next().unwrap_or("").trim();
            let refused = parts.any(|p| matches!(p.trim().strip_prefix("q="), Some(q) if q.trim().parse::<f64>().is_ok_and(|q| q <= 0.0)));
            kind.eq_ignore_ascii_case("application/openmetrics-text") && !refused
        })
    })
}

/// The routes of the server, as the `route` label names them (any other path is `other`, so
/// that a scanner probing paths cannot grow the label set).
pub const ROUTES: [&str; 6] = [
    "/api/v2/runtimes",
    "/api/v2/packages",
    "/api/v2/execute",
    "/run_code",
    "/metrics",
    "other",
];

/// The `route` label of a request's path.
pub fn route_of(path: &str) -> &'static str {
    ROUTES
        .iter()
        .find(|route| **route == path)
        .copied()
        .unwrap_or("other")
}

/// How one `execute` request ended, as counted and logged. The verdict outcomes read the
/// response the way the client does: the score on `run.stdout` for the scoring runtimes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestOutcome {
    /// Scoring runtimes: full score.
    Accepted,
    /// Scoring runtimes: a score strictly between 0 and 1.
    Partial,
    /// Scoring runtimes: score 0 (wrong answer, time or memory limit, runtime error, ...).
    Rejected,
    /// The submission or program did not compile.
    CompileError,
    /// The run outlived the request's `run_timeout` and was killed.
    Timeout,
    /// A plain program that exited with code 0.
    Exited,
    /// A plain program that exited with another code or was killed by a signal.
    Failed,
    /// HTTP 400/404/405/413: the request itself was unusable.
    BadRequest,
    /// HTTP 503: no room in the queue.
    Busy,
    /// HTTP 500: the server failed to execute a valid request.
    InternalError,
}

impl RequestOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            RequestOutcome::Accepted => "accepted",
            RequestOutcome::Partial => "partial",
            RequestOutcome::Rejected => "rejected",
            RequestOutcome::CompileError => "compile_error",
            RequestOutcome::Timeout => "timeout",
            RequestOutcome::Exited => "exited",
            RequestOutcome::Failed => "failed",
            RequestOutcome::BadRequest => "bad_request",
            RequestOutcome::Busy => "busy",
            RequestOutcome::InternalError => "internal_error",
        }
    }

    /// The outcome of a response the executor gave for `runtime`.
    pub fn of(runtime: Runtime, response: &Response) -> RequestOutcome {
        if response.compile.as_ref().is_some_and(|c| c.code != Some(0)) {
            return RequestOutcome::CompileError;
        }
        let Some(run) = &response.run else {
            return RequestOutcome::CompileError;
        };
        if run.stdout.is_empty()
            && run.signal.as_deref() == Some(super::piston::HARD_TIMEOUT_SIGNAL)
        {
            return RequestOutcome::Timeout;
        }
        if matches!(runtime, Runtime::Cpp | Runtime::C) {
            return if run.code == Some(0) {
                RequestOutcome::Exited
            } else {
                RequestOutcome::Failed
            };
        }
        match run.stdout.trim().parse::<f64>() {
            Ok(score) if score >= 1.0 => RequestOutcome::Accepted,
            Ok(score) if score > 0.0 => RequestOutcome::Partial,
            _ => RequestOutcome::Rejected,
        }
    }
}

impl fmt::Display for RequestOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the `execute` handler learnt about a request, handed to the layer that counts and logs
/// it (as a response extension).
#[derive(Debug, Clone, Copy)]
pub struct Served {
    /// The `language` label: a Piston runtime's name or a `/run_code` language; `None` when
    /// the request was refused before its language was read.
    pub language: Option<&'static str>,
    pub outcome: RequestOutcome,
    /// Time spent waiting for room in the server and for an execution slot.
    pub queue_wait: Option<Duration>,
}

impl Served {
    /// The `language` label, `unknown` before it was read.
    pub fn language(&self) -> &'static str {
        self.language.unwrap_or("unknown")
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    language: &'static str,
    outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LanguageLabel {
    language: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HttpLabels {
    route: &'static str,
    /// The status code: HTTP's three digits, a bounded set.
    code: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: &'static str,
}

/// The server's metrics. Gauges are moved by [`Metrics::queued`] and [`Metrics::running`]
/// guards, so that no path out of a handler (an early return, a client hanging up) leaves
/// them off by one.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    durations: Family<LanguageLabel, Histogram, fn() -> Histogram>,
    queue_wait: Histogram,
    queue_depth: Gauge,
    running: Gauge,
    busy: Counter,
    http: Family<HttpLabels, Counter>,
}

/// Buckets from 5 ms to ~3 min, doubling: tests take milliseconds to the client's 30 s.
fn seconds_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.0, 16))
}

impl Metrics {
    /// Counters at zero, with the executor's histograms, and its cache and box figures read at
    /// every scrape.
    pub fn new(executor: Arc<dyn Executor>) -> Metrics {
        let mut registry = Registry::with_prefix("ioi_run");
        if let Some(runs) = executor.run_metrics() {
            runs.register(&mut registry);
        }
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "requests",
            "Execute requests answered, by language and outcome",
            requests.clone(),
        );
        let durations = Family::<LanguageLabel, Histogram, fn() -> Histogram>::new_with_constructor(
            seconds_histogram,
        );
        registry.register(
            "request_duration_seconds",
            "Time from an execute request's arrival to its answer",
            durations.clone(),
        );
        let queue_wait = seconds_histogram();
        registry.register(
            "queue_wait_seconds",
            "Time an execute request waited for room and for an execution slot",
            queue_wait.clone(),
        );
        let queue_depth = Gauge::default();
        registry.register(
            "queue_depth",
            "Execute requests waiting for room or for an execution slot",
            queue_depth.clone(),
        );
        let running = Gauge::default();
        registry.register(
            "executions_running",
            "Executions in progress",
            running.clone(),
        );
        let busy = Counter::default();
        registry.register(
            "busy_rejections",
            "Execute requests answered 503 because the queue stayed full",
            busy.clone(),
        );
        let http = Family::<HttpLabels, Counter>::default();
        registry.register(
            "http_responses",
            "HTTP responses of every route, by route and status code",
            http.clone(),
        );
        registry.register(
            "build",
            "The ioi-run build serving these metrics",
            Info::new(BuildLabels {
                version: env!("CARGO_PKG_VERSION"),
            }),
        );
        registry.register_collector(Box::new(ExecutorCollector(executor)));
        Metrics {
            registry,
            requests,
            durations,
            queue_wait,
            queue_depth,
            running,
            busy,
            http,
        }
    }

    /// Counts one HTTP response of any route.
    pub fn record_http(&self, path: &str, status: u16) {
        self.http
            .get_or_create(&HttpLabels {
                route: route_of(path),
                code: status,
            })
            .inc();
    }

    /// Counts one answered execute request that took `duration` in all.
    pub fn record(&self, served: &Served, duration: Duration) {
        let language = served.language();
        self.requests
            .get_or_create(&RequestLabels {
                language,
                outcome: served.outcome.as_str(),
            })
            .inc();
        self.durations
            .get_or_create(&LanguageLabel { language })
            .observe(duration.as_secs_f64());
        if let Some(wait) = served.queue_wait {
            self.queue_wait.observe(wait.as_secs_f64());
        }
        if served.outcome == RequestOutcome::Busy {
            self.busy.inc();
        }
    }

    /// Counts a request in the queue until the guard is dropped.
    pub fn queued(&self) -> GaugeGuard {
        GaugeGuard::new(&self.queue_depth)
    }

    /// Counts an execution as running until the guard is dropped.
    pub fn running(&self) -> GaugeGuard {
        GaugeGuard::new(&self.running)
    }

    /// The OpenMetrics text of every metric.
    pub fn render(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail; an encoder error would be a bug in a metric.
        if let Err(e) = prometheus_client::encoding::text::encode(&mut text, &self.registry) {
            tracing::error!("cannot encode the metrics: {e}");
        }
        text
    }

    /// The same metrics in the classic Prometheus text format (version 0.0.4).
    pub fn render_classic(&self) -> String {
        to_classic(&self.render())
    }
}

/// The classic text format of an OpenMetrics text: a counter's HELP and TYPE name its
/// `_total` samples, an info metric is a gauge named with `_info`, and the `# UNIT` and
/// `# EOF` lines go. `prometheus-client` writes only OpenMetrics, and the two formats differ in
/// nothing else for the metrics here; samples are copied as they are.
pub fn to_classic(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    let mut help: Option<(&str, &str)> = None;
    for line in openmetrics.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            help = Some(rest.split_once(' ').unwrap_or((rest, "")));
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "untyped"));
            let (name, kind) = match kind {
                "counter" => (format!("{name}_total"), "counter"),
                "info" => (format!("{name}_info"), "gauge"),
                "unknown" => (name.to_string(), "untyped"),
                other => (name.to_string(), other),
            };
            if let Some((_, text)) = help.take() {
                out.push_str(&format!("# HELP {name} {text}\n"));
            }
            out.push_str(&format!("# TYPE {name} {kind}\n"));
        } else if line.starts_with("# UNIT ") || line == "# EOF" {
            continue;
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Holds one unit of a gauge.
pub struct GaugeGuard(Gauge);

impl GaugeGuard {
    fn new(gauge: &Gauge) -> GaugeGuard {
        gauge.inc();
        GaugeGuard(gauge.clone())
    }
}

impl Drop for GaugeGuard {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The caches' and the boxes' figures, asked of the executor at scrape time.
struct ExecutorCollector(Arc<dyn Executor>);

impl fmt::Debug for ExecutorCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ExecutorCollector")
    }
}

impl Collector for ExecutorCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        if let Some(boxes) = self.0.boxes() {
            let built = ConstCounter::new(boxes.built);
            let metric = encoder.encode_descriptor(
                "boxes_built",
                "Sandbox boxes built, ahead of need or on demand (one per program run)",
                None,
                built.metric_type(),
            )?;
            built.encode(metric)?;
            gauge(
                &mut encoder,
                "boxes_in_use",
                "Sandbox boxes holding a run",
                boxes.in_use,
            )?;
            gauge(
                &mut encoder,
                "boxes_ready",
                "Sandbox boxes built ahead, waiting for a run",
                boxes.ready,
            )?;
        }
        let Some(counts) = self.0.compile_cache() else {
            return Ok(());
        };
        for (name, help, value) in [
            (
                "compile_cache_bytes",
                "Bytes in the compile cache's folder",
                counts.bytes,
            ),
            (
                "compile_cache_entries",
                "Entries in the compile cache's folder (programs, compilation errors, headers)",
                counts.entries,
            ),
            (
                "verdict_cache_entries",
                "Verdicts kept in memory for identical requests",
                counts.verdict_entries,
            ),
            (
                "verdict_cache_bytes",
                "Bytes the verdicts kept for identical requests take",
                counts.verdict_bytes,
            ),
        ] {
            gauge(&mut encoder, name, help, value)?;
        }
        for (name, help, value) in [
            (
                "compile_cache_hits",
                "Compiles answered from the compile cache",
                counts.hits,
            ),
            (
                "compile_cache_misses",
                "Compiles the compile cache had to run the compiler for",
                counts.misses,
            ),
            (
                "verdict_cache_hits",
                "Requests answered with the verdict of an identical request judged before",
                counts.verdict_hits,
            ),
        ] {
            let counter = ConstCounter::new(value);
            let metric = encoder.encode_descriptor(name, help, None, counter.metric_type())?;
            counter.encode(metric)?;
        }
        Ok(())
    }
}

fn gauge(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: u64,
) -> Result<(), fmt::Error> {
    let gauge = ConstGauge::new(i64::try_from(value).unwrap_or(i64::MAX));
    let metric = encoder.encode_descriptor(name, help, None, gauge.metric_type())?;
    gauge.encode(metric)
}

/// Compile-cache figures since the executor started, and what the caches hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheCounts {
    pub hits: u64,
    pub misses: u64,
    /// Requests answered from the verdict cache (src/judge/verdicts.rs).
    pub verdict_hits: u64,
    /// Bytes in the compile cache's folder (a running figure, see
    /// [`CompileCache::footprint`](crate::judge::compile::CompileCache::footprint)).
    pub bytes: u64,
    /// Entries in the compile cache's folder.
    pub entries: u64,
    /// Verdicts the verdict cache keeps.
    pub verdict_entries: u64,
    /// The bytes they take.
    pub verdict_bytes: u64,
}

/// The sandbox's boxes (one per program run: see `ioi_sandbox::Sandbox::boxes_built`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BoxCounts {
    /// Boxes built since the executor started, ahead of need or on demand.
    pub built: u64,
    /// Boxes holding a run.
    pub in_use: u64,
    /// Boxes built ahead, waiting for a run.
    pub ready: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::{CfLanguage, Stage};

    fn run(stdout: &str, code: Option<i32>, signal: Option<&str>) -> Response {
        Response {
            compile: Some(Stage::new(String::new(), String::new(), Some(0), None)),
            run: Some(Stage::new(
                stdout.to_string(),
                String::new(),
                code,
                signal.map(str::to_string),
            )),
        }
    }

    #[test]
    fn the_classic_format_names_counters_by_their_samples_and_drops_eof() {
        let open = "# HELP ioi_run_requests Execute requests.\n# TYPE ioi_run_requests counter\n\
                    ioi_run_requests_total{language=\"c++\"} 1\n\
                    # HELP ioi_run_build The build.\n# TYPE ioi_run_build info\n\
                    ioi_run_build_info{version=\"0.1.0\"} 1\n# EOF\n";
        assert_eq!(
            to_classic(open),
            "# HELP ioi_run_requests_total Execute requests.\n\
             # TYPE ioi_run_requests_total counter\n\
             ioi_run_requests_total{language=\"c++\"} 1\n\
             # HELP ioi_run_build_info The build.\n# TYPE ioi_run_build_info gauge\n\
             ioi_run_build_info{version=\"0.1.0\"} 1\n"
        );
    }

    #[test]
    fn openmetrics_only_when_the_scraper_asks() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
                          version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert!(wants_openmetrics(Some(prometheus)));
        assert!(!wants_openmetrics(Some("text/plain; version=0.0.4")));
        assert!(!wants_openmetrics(Some("*/*")));
        assert!(!wants_openmetrics(None));
        assert!(!wants_openmetrics(Some("application/openmetrics-text;q=0")));
    }

    #[test]
    fn a_probed_path_is_counted_as_other() {
        assert_eq!(route_of("/api/v2/execute"), "/api/v2/execute");
        assert_eq!(route_of("/wp-admin/x"), "other");
    }

    #[test]
    fn outcomes_read_the_response_as_the_client_does() {
        use RequestOutcome::*;
        let ioi = Runtime::CmsIoi;
        assert_eq!(RequestOutcome::of(ioi, &run("1", Some(0), None)), Accepted);
        assert_eq!(RequestOutcome::of(ioi, &run("0.5", Some(0), None)), Partial);
        assert_eq!(RequestOutcome::of(ioi, &run("0", Some(0), None)), Rejected);
        assert_eq!(
            RequestOutcome::of(ioi, &run("", None, Some("SIGKILL"))),
            Timeout
        );
        let cf = Runtime::Codeforces(CfLanguage::Python3);
        assert_eq!(RequestOutcome::of(cf, &run("1\n", Some(0), None)), Accepted);
        assert_eq!(
            RequestOutcome::of(cf, &run("0\n", Some(124), None)),
            Rejected
        );
        let plain = Runtime::Cpp;
        assert_eq!(RequestOutcome::of(plain, &run("1", Some(0), None)), Exited);
        assert_eq!(RequestOutcome::of(plain, &run("", Some(3), None)), Failed);
        assert_eq!(
            RequestOutcome::of(plain, &run("", None, Some("SIGSEGV"))),
            Failed
        );
        let compile_error = Response {
            compile: Some(Stage::new(String::new(), "e".into(), Some(1), None)),
            run: None,
        };
        assert_eq!(RequestOutcome::of(ioi, &compile_error), CompileError);
    }
}
