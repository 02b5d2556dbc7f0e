//! What an operator watches: `GET /metrics` scraped after real requests (with a fake executor,
//! and with the real judge when root), the 405 of a wrong method, and the request log lines of
//! `ioi-run serve --log-format json`. Every scrape checked here keeps its labels in closed sets.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use ioi_run::judge::observer::{CacheUse, CompileObserver};
use ioi_run::judge::{CompileError, Language, ProcessRun};
use ioi_run::server::metrics::{BoxCounts, CacheCounts, RunMetrics};
use ioi_run::server::piston::{ioi_response, IoiOutcome};
use ioi_run::server::{Executor, Job, RequestError, Response, Stage};
use serde_json::{json, Value};

use crate::common;
use common::{agent, is_root_or_skip, post, project, Gate, Stopping, TestServer};

/// Answers by the submission's text (`AC`, `HALF`, `WA`, `CE`; `WAIT` waits at the gate) and
/// counts a compile-cache hit for a submission it has seen before, a compile and a run (but
/// for `CE`) of every `cms_ioi` request in its histograms, and a box per run.
struct Fake {
    seen: Mutex<HashSet<Vec<u8>>>,
    counts: Mutex<CacheCounts>,
    gate: Gate,
    started: Mutex<Option<mpsc::Sender<()>>>,
    runs: RunMetrics,
    boxes: Mutex<BoxCounts>,
}

impl Fake {
    fn new() -> Arc<Fake> {
        Arc::new(Fake {
            seen: Mutex::new(HashSet::new()),
            counts: Mutex::new(CacheCounts::default()),
            gate: Gate::default(),
            started: Mutex::new(None),
            runs: RunMetrics::default(),
            boxes: Mutex::new(BoxCounts::default()),
        })
    }
}

impl Executor for Fake {
    fn execute(&self, job: Job) -> Result<Response, RequestError> {
        let code = match &job {
            Job::Ioi(job) => job.submission.clone(),
            Job::Plain(job) => job.source.clone().into_bytes(),
            Job::Codeforces(_) => unreachable!("no Codeforces request in these tests"),
        };
        {
            let mut counts = self.counts.lock().unwrap();
            let cache = if self.seen.lock().unwrap().insert(code.clone()) {
                counts.misses += 1;
                CacheUse::Miss
            } else {
                counts.hits += 1;
                CacheUse::Hit
            };
            self.runs
                .compiled(Language::Cpp, cache, Duration::from_millis(5));
        }
        if let Job::Plain(_) = job {
            return Ok(Response {
                compile: Some(Stage::new(String::new(), String::new(), Some(0), None)),
                run: Some(Stage::new("hi".into(), String::new(), Some(0), None)),
            });
        }
        let outcome = match code.as_slice() {
            b"AC" => judged(1.0),
            b"HALF" => judged(0.5),
            b"CE" => IoiOutcome::CompileError(CompileError::exited(1, "error: expected ';'")),
            b"WAIT" => {
                if let Some(started) = self.started.lock().unwrap().as_ref() {
                    started.send(()).unwrap();
                }
                self.gate.wait();
                judged(1.0)
            }
            _ => judged(0.0),
        };
        if let IoiOutcome::Judged { .. } = outcome {
            let run = ProcessRun {
                termination: ioi_sandbox::Termination::Ok,
                cpu_time: 0.01,
                memory: 1 << 20,
            };
            self.runs.record_runs("cms_ioi", &[run]);
            self.boxes.lock().unwrap().built += 1;
        }
        Ok(ioi_response(&outcome))
    }

    fn compile_cache(&self) -> Option<CacheCounts> {
        Some(*self.counts.lock().unwrap())
    }

    fn run_metrics(&self) -> Option<RunMetrics> {
        Some(self.runs.clone())
    }

    fn boxes(&self) -> Option<BoxCounts> {
        Some(*self.boxes.lock().unwrap())
    }
}

fn judged(score: f64) -> IoiOutcome {
    IoiOutcome::Judged {
        score,
        feedback: "feedback".to_string(),
    }
}

/// A `cms_ioi` request for a tiny Batch problem, as the Python client sends it.
fn ioi_request(submission: &str) -> String {
    json!({
        "language": "cms_ioi",
        "version": "*",
        "run_timeout": 4000,
        "run_memory_limit": 256 << 20,
        "files": [
            {"name": "graders/add.cpp", "content": submission},
            {"name": "input.txt", "content": "1 2\n"},
            {"name": "correct_output.txt", "content": "3\n"},
            {"name": "graders/add.h", "content": "int add(int, int);"},
            {"name": "graders/grader_config.json", "content":
                r#"{"code": "add", "task_type": "Batch", "time_limit": 1.0, "memory_limit": 268435456}"#},
        ],
    })
    .to_string()
}

/// The `/metrics` text of a server whose API base is `base` (`http://ADDR/api/v2`), in the
/// OpenMetrics format, as Prometheus asks for it.
fn scrape(base: &str) -> String {
    let url = base.trim_end_matches("/api/v2").to_string() + "/metrics";
    let response = agent()
        .get(&url)
        .set(
            "Accept",
            "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
        )
        .call()
        .expect("GET /metrics answers 200");
    assert!(
        response
            .header("Content-Type")
            .is_some_and(|t| t.starts_with("application/openmetrics-text")),
        "{:?}",
        response.header("Content-Type")
    );
    response.into_string().unwrap()
}

/// The value of one sample (`name` with its labels exactly as exported, e.g.
/// `ioi_run_requests_total{language="cms_ioi",outcome="accepted"}`); 0 when absent, as
/// Prometheus reads a series that never appeared.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map_or(0.0, |value| value.trim().parse().expect("a number"))
}

fn requests(text: &str, language: &str, outcome: &str) -> f64 {
    sample(
        text,
        &format!("ioi_run_requests_total{{language=\"{language}\",outcome=\"{outcome}\"}}"),
    )
}

#[test]
fn metrics_count_requests_by_language_and_outcome_and_the_cache_hits() {
    let fake = Fake::new();
    let server = TestServer::start(fake, |_| {});
    for submission in ["AC", "AC", "HALF", "WA", "CE", "AC"] {
        let (status, body) = post(&server.url("execute"), &ioi_request(submission));
        assert_eq!(status, 200, "{body}");
    }
    let plain = json!({"language": "c++", "version": "*", "files": [{"name": "a.cpp", "content": "int main(){}"}]});
    assert_eq!(post(&server.url("execute"), &plain.to_string()).0, 200);
    let (status, _) = post(&server.url("execute"), "{\"language\": \"cms_ioi\"}");
    assert_eq!(status, 400);

    let text = scrape(&server.base);
    assert_eq!(requests(&text, "cms_ioi", "accepted"), 3.0, "{text}");
    assert_eq!(requests(&text, "cms_ioi", "partial"), 1.0, "{text}");
    assert_eq!(requests(&text, "cms_ioi", "rejected"), 1.0, "{text}");
    assert_eq!(requests(&text, "cms_ioi", "compile_error"), 1.0, "{text}");
    assert_eq!(requests(&text, "c++", "exited"), 1.0, "{text}");
    // The malformed request never told its language.
    assert_eq!(requests(&text, "unknown", "bad_request"), 1.0, "{text}");
    let count = |series: &str| sample(&text, series);
    assert_eq!(
        count("ioi_run_request_duration_seconds_count{language=\"cms_ioi\"}"),
        6.0,
        "{text}"
    );
    // Every request that reached admission waited (if only for no time at all).
    assert_eq!(count("ioi_run_queue_wait_seconds_count"), 8.0, "{text}");
    // AC three times, the plain program once: two repeats of AC are hits.
    assert_eq!(count("ioi_run_compile_cache_hits_total"), 2.0, "{text}");
    assert_eq!(count("ioi_run_compile_cache_misses_total"), 5.0, "{text}");
    assert_eq!(count("ioi_run_executions_running"), 0.0, "{text}");
    assert_eq!(count("ioi_run_queue_depth"), 0.0, "{text}");
    assert_eq!(count("ioi_run_busy_rejections_total"), 0.0, "{text}");
    assert!(text.ends_with("# EOF\n"), "{text}");
}

/// The `/metrics` text in the classic format, as a scraper asking for `text/plain` gets it.
fn scrape_classic(base: &str) -> String {
    let url = base.trim_end_matches("/api/v2").to_string() + "/metrics";
    let response = agent()
        .get(&url)
        .set("Accept", "text/plain; version=0.0.4")
        .call()
        .expect("GET /metrics answers 200");
    assert_eq!(
        response.header("Content-Type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    response.into_string().unwrap()
}

#[test]
fn the_classic_format_passes_promtool_and_counts_every_route_and_the_build() {
    let server = TestServer::start(Fake::new(), |_| {});
    assert_eq!(post(&server.url("execute"), &ioi_request("AC")).0, 200);
    // A python3 request refused for a missing file: its language was read.
    let python = json!({"language": "python3", "version": "*", "files": [
        {"name": "main.python", "content": "print(1)"},
        {"name": "input.txt", "content": ""},
        {"name": "grader_config", "content": "TIME_LIMIT=1\nMEMORY_LIMIT=64\nINPUT_MODE=stdio\n"},
    ]});
    let (status, body) = post(&server.url("execute"), &python.to_string());
    assert_eq!(status, 400, "{body}");
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|m| m.contains("correct_output.txt")),
        "{body}"
    );
    agent()
        .get(&server.url("runtimes"))
        .call()
        .expect("runtimes");
    assert!(agent().get(&server.url("execute")).call().is_err(), "405");
    let probe = server.base.trim_end_matches("/api/v2").to_string() + "/wp-admin";
    assert!(agent().get(&probe).call().is_err(), "404");

    let text = scrape_classic(&server.base);
    assert!(!text.contains("# EOF"), "{text}");
    assert_eq!(requests(&text, "python3", "bad_request"), 1.0, "{text}");
    assert_eq!(requests(&text, "unknown", "bad_request"), 0.0, "{text}");
    let count = |series: &str| sample(&text, series);
    for (route, code, n) in [
        ("/api/v2/execute", 200, 1.0),
        ("/api/v2/execute", 400, 1.0),
        ("/api/v2/execute", 405, 1.0),
        ("/api/v2/runtimes", 200, 1.0),
        ("other", 404, 1.0),
    ] {
        let series = format!("ioi_run_http_responses_total{{route=\"{route}\",code=\"{code}\"}}");
        assert_eq!(count(&series), n, "{series}\n{text}");
    }
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        count(&format!("ioi_run_build_info{{version=\"{version}\"}}")),
        1.0,
        "{text}"
    );
    // Every family has its HELP under the name of its samples.
    for family in [
        "ioi_run_requests_total",
        "ioi_run_busy_rejections_total",
        "ioi_run_compile_cache_hits_total",
        "ioi_run_program_cpu_seconds",
        "ioi_run_program_memory_bytes",
        "ioi_run_compile_seconds",
        "ioi_run_boxes_built_total",
        "ioi_run_boxes_in_use",
        "ioi_run_boxes_ready",
        "ioi_run_compile_cache_bytes",
        "ioi_run_compile_cache_entries",
        "ioi_run_verdict_cache_entries",
        "ioi_run_verdict_cache_bytes",
    ] {
        assert!(
            text.contains(&format!("# HELP {family} ")),
            "{family}\n{text}"
        );
    }
    // The histograms have samples for promtool to read: the judged request's run and compile.
    let ok = "{language=\"cms_ioi\",outcome=\"ok\"}";
    assert_eq!(
        count(&format!("ioi_run_program_cpu_seconds_count{ok}")),
        1.0,
        "{text}"
    );
    assert_eq!(
        count(&format!("ioi_run_program_memory_bytes_count{ok}")),
        1.0,
        "{text}"
    );
    assert_eq!(
        count("ioi_run_compile_seconds_count{language=\"cpp\",cache=\"miss\"}"),
        1.0,
        "{text}"
    );
    assert_eq!(count("ioi_run_boxes_built_total"), 1.0, "{text}");
    assert_labels_bounded(&text);
    promtool_check(&text);
}

/// `promtool check metrics` on `text`: no error and no lint warning.
fn promtool_check(text: &str) {
    let Ok(promtool) = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
        common::skip(
            "promtool is not installed (Debian: apt-get install prometheus; .ci/run installs it)",
        );
        return;
    };
    let mut promtool = promtool;
    use std::io::Write;
    promtool
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = promtool.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool: {said}\n{text}"
    );
}

/// A sample: the series name, its labels in order and its value.
type Sample = (String, Vec<(String, String)>, f64);

/// The samples of a scrape (comments skipped).
fn samples(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').expect("a sample has a value");
            let value: f64 = value.parse().unwrap_or_else(|_| panic!("{line}"));
            let Some((name, labels)) = series.split_once('{') else {
                return (series.to_string(), Vec::new(), value);
            };
            let labels = labels.strip_suffix('}').expect("labels end with }");
            let mut pairs = Vec::new();
            let mut rest = labels;
            while !rest.is_empty() {
                let (key, after) = rest.split_once("=\"").expect("label=\"value\"");
                // Values here never hold a quote: the label sets are closed (checked below).
                let (value, after) = after.split_once('"').expect("a closing quote");
                pairs.push((key.to_string(), value.to_string()));
                rest = after.strip_prefix(',').unwrap_or(after);
            }
            (name.to_string(), pairs, value)
        })
        .collect()
}

/// Every label of every family takes its value from a closed set, whatever the requests were:
/// the runtimes' and `/run_code`'s language names, the request outcomes, the sandbox's
/// terminations, hit/miss, the routes, three-digit status codes, the version, and the fixed
/// buckets of each histogram.
fn assert_labels_bounded(text: &str) {
    use ioi_run::server::sandbox_fusion::RunCodeLanguage;
    use ioi_run::server::Runtime;
    let mut languages: HashSet<&str> = Runtime::ALL.iter().map(|r| r.language()).collect();
    languages.extend(RunCodeLanguage::ALL.map(RunCodeLanguage::as_str));
    languages.extend(["unknown", "cpp", "c"]);
    let mut outcomes: HashSet<&str> = ioi_sandbox::Termination::ALL
        .iter()
        .map(|t| t.as_str())
        .collect();
    outcomes.extend([
        "accepted",
        "partial",
        "rejected",
        "compile_error",
        "timeout",
        "exited",
        "failed",
        "bad_request",
        "busy",
        "internal_error",
    ]);
    let routes = ioi_run::server::metrics::ROUTES;
    let mut buckets: std::collections::HashMap<String, HashSet<String>> = Default::default();
    for (name, labels, _) in samples(text) {
        for (key, value) in labels {
            let bounded = match key.as_str() {
                "language" => languages.contains(value.as_str()),
                "outcome" => outcomes.contains(value.as_str()),
                "cache" => CacheUse::ALL.iter().any(|c| c.as_str() == value),
                "route" => routes.contains(&value.as_str()),
                "code" => value.len() == 3 && value.bytes().all(|b| b.is_ascii_digit()),
                "version" => value == env!("CARGO_PKG_VERSION"),
                "le" => {
                    let bound = value == "+Inf" || value.parse::<f64>().is_ok();
                    buckets.entry(name.clone()).or_default().insert(value);
                    bound
                }
                _ => false,
            };
            assert!(
                bounded,
                "{name}: label {key} is not from a closed set\n{text}"
            );
        }
    }
    for (name, les) in buckets {
        assert!(les.len() <= 20, "{name} has {} buckets\n{text}", les.len());
    }
}

/// A histogram's series with `labels` (e.g. `{language="cms_ioi",outcome="ok"}`): its buckets
/// never decrease, the `+Inf` bucket is its count, and the count is returned with the sum.
fn histogram(text: &str, family: &str, labels: &str) -> (f64, f64) {
    let wanted: Vec<(String, String)> = samples(&format!("x{labels} 0"))[0].1.clone();
    let mut buckets = Vec::new();
    for (name, mut pairs, value) in samples(text) {
        if name == format!("{family}_bucket") {
            let at = pairs
                .iter()
                .position(|(k, _)| k == "le")
                .expect("a bucket has le");
            let (_, le) = pairs.remove(at);
            if pairs == wanted {
                let le: f64 = if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().unwrap()
                };
                buckets.push((le, value));
            }
        }
    }
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert!(!buckets.is_empty(), "no bucket of {family}{labels}\n{text}");
    for pair in buckets.windows(2) {
        assert!(
            pair[0].1 <= pair[1].1,
            "{family}{labels}: buckets not cumulative\n{text}"
        );
    }
    let count = sample(text, &format!("{family}_count{labels}"));
    assert_eq!(buckets.last().unwrap(), &(f64::INFINITY, count), "{text}");
    (count, sample(text, &format!("{family}_sum{labels}")))
}

#[test]
fn hostile_languages_and_paths_add_no_series() {
    let server = TestServer::start(Fake::new(), |_| {});
    assert_eq!(post(&server.url("execute"), &ioi_request("AC")).0, 200);
    let hostile = |i: usize| {
        let language = format!("evil{i}\"}} x{{");
        let body =
            json!({"language": language, "version": "*", "files": [{"name": "a", "content": ""}]});
        assert_eq!(post(&server.url("execute"), &body.to_string()).0, 400);
        let probe = server.base.trim_end_matches("/api/v2").to_string() + &format!("/probe{i}");
        assert!(agent().get(&probe).call().is_err(), "404");
    };
    // The series, but those of the `/metrics` route (the first scrape is counted after it).
    let series = |text: &str| {
        samples(text)
            .into_iter()
            .filter(|(_, labels, _)| !labels.iter().any(|(_, v)| v == "/metrics"))
            .count()
    };
    hostile(0);
    let first = series(&scrape_classic(&server.base));
    for i in 1..20 {
        hostile(i);
    }
    let text = scrape_classic(&server.base);
    assert_labels_bounded(&text);
    // 19 more languages and paths, each new, add no series.
    assert_eq!(series(&text), first, "{text}");
    assert_eq!(requests(&text, "unknown", "bad_request"), 20.0, "{text}");
    assert_eq!(
        sample(
            &text,
            "ioi_run_http_responses_total{route=\"other\",code=\"404\"}"
        ),
        20.0,
        "{text}"
    );
}

#[test]
fn a_full_queue_is_counted_as_a_503_and_the_running_execution_shows() {
    let fake = Fake::new();
    let (sender, started) = mpsc::channel();
    *fake.started.lock().unwrap() = Some(sender);
    let server = TestServer::start(fake.clone(), |o| {
        o.jobs = 1;
        o.max_queue = 0;
        o.queue_wait = Duration::ZERO;
    });
    let url = server.url("execute");
    let blocked = std::thread::spawn(move || post(&url, &ioi_request("WAIT")));
    started
        .recv_timeout(Duration::from_secs(60))
        .expect("the executor received the request");
    let (status, body) = post(&server.url("execute"), &ioi_request("AC"));
    assert_eq!(status, 503, "{body}");

    let text = scrape(&server.base);
    assert_eq!(
        sample(&text, "ioi_run_busy_rejections_total"),
        1.0,
        "{text}"
    );
    assert_eq!(requests(&text, "unknown", "busy"), 1.0, "{text}");
    assert_eq!(sample(&text, "ioi_run_executions_running"), 1.0, "{text}");
    assert_eq!(sample(&text, "ioi_run_queue_depth"), 0.0, "{text}");

    fake.gate.open();
    assert_eq!(blocked.join().unwrap().0, 200);
    let text = scrape(&server.base);
    assert_eq!(sample(&text, "ioi_run_executions_running"), 0.0, "{text}");
    assert_eq!(requests(&text, "cms_ioi", "accepted"), 1.0, "{text}");
}

#[test]
fn a_wrong_method_is_405_with_a_message_and_the_allowed_methods() {
    let server = TestServer::start(Fake::new(), |_| {});
    let result = agent().get(&server.url("execute")).call();
    let Err(ureq::Error::Status(405, response)) = result else {
        panic!("expected 405, got {result:?}");
    };
    assert_eq!(response.header("Allow"), Some("POST"));
    let body: Value = response.into_json().expect("a JSON body");
    let message = body["message"].as_str().expect("Piston's {message}");
    assert!(
        message.contains("GET") && message.contains("POST"),
        "{body}"
    );
    let result = agent().delete(&server.url("runtimes")).call();
    let Err(ureq::Error::Status(405, response)) = result else {
        panic!("expected 405, got {result:?}");
    };
    assert_eq!(response.header("Allow"), Some("GET, HEAD"));
}

/// The sumpairs fixture's request for one test.
fn sumpairs_request(submission: &str, test: &str) -> String {
    let dir = common::problem_dir("sumpairs");
    let read = |path: std::path::PathBuf| {
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let (mut problem, _) = ioi_run::problem::cms::load_cms(&dir).expect("the fixture loads");
    ioi_run::problem::config::ensure_grader_config(&mut problem);
    let mut files = vec![
        json!({"name": format!("graders/{}.cpp", problem.id), "content": submission}),
        json!({"name": "input.txt", "content": read(dir.join(format!("tests/{test}.in")))}),
        json!({"name": "correct_output.txt", "content": read(dir.join(format!("tests/{test}.out")))}),
    ];
    for file in problem
        .grader_files
        .iter()
        .filter(|f| !f.content.is_empty())
    {
        let content = String::from_utf8(file.content.clone()).unwrap();
        files.push(json!({"name": file.path, "content": content}));
    }
    json!({
        "files": files,
        "run_timeout": ((problem.time_limit + 3.0) * 1000.0).round() as u64,
        "run_memory_limit": problem.memory_limit,
        "language": "cms_ioi",
        "version": "*",
    })
    .to_string()
}

#[test]
fn with_the_real_judge_a_repeated_submission_is_a_cache_hit() {
    if !is_root_or_skip("judging through the server") {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let executor = common::judge_executor(cache.path().to_path_buf());
    let server = TestServer::start(executor, |_| {});
    let dir = common::problem_dir("sumpairs");
    let ac = std::fs::read_to_string(dir.join("solutions/ac.cpp")).unwrap();
    for test in ["01", "02", "03"] {
        let (status, body) = post(&server.url("execute"), &sumpairs_request(&ac, test));
        assert_eq!(status, 200, "{body}");
    }
    let (status, body) = post(&server.url("execute"), &sumpairs_request("int x = ;", "01"));
    assert_eq!(status, 200, "{body}");

    let text = scrape(&server.base);
    assert_eq!(requests(&text, "cms_ioi", "accepted"), 3.0, "{text}");
    assert_eq!(requests(&text, "cms_ioi", "compile_error"), 1.0, "{text}");
    // Compiles: the checker, the solution, the broken one; the solution twice more from cache.
    assert_eq!(
        sample(&text, "ioi_run_compile_cache_misses_total"),
        3.0,
        "{text}"
    );
    assert!(
        sample(&text, "ioi_run_compile_cache_hits_total") >= 2.0,
        "{text}"
    );
}

/// A plain `c++` request (public Piston's shape) for `source`.
fn plain_request(source: &str) -> String {
    json!({"language": "c++", "version": "*", "files": [{"name": "main.cpp", "content": source}]})
        .to_string()
}

#[test]
fn with_the_real_judge_every_run_and_compile_is_counted_by_outcome() {
    if !is_root_or_skip("judging through the server") {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let executor = common::judge_executor(cache.path().to_path_buf());
    let server = TestServer::start(executor, |_| {});
    let built_before = sample(&scrape_classic(&server.base), "ioi_run_boxes_built_total");
    let dir = common::problem_dir("sumpairs");
    let solution = |name: &str| std::fs::read_to_string(dir.join("solutions").join(name)).unwrap();
    let ac = solution("ac.cpp");
    for test in ["01", "02", "03"] {
        let (status, body) = post(&server.url("execute"), &sumpairs_request(&ac, test));
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["run"]["stdout"].as_str(), Some("1"), "{body}");
    }
    // A time limit (answered as score 0, or as the hard time-out on a starved host).
    let tle = sumpairs_request(&solution("burn_tle.cpp"), "05");
    let (status, body) = post(&server.url("execute"), &tle);
    assert!(status == 200 && body["run"]["stdout"] != "1", "{body}");
    let (status, body) = post(
        &server.url("execute"),
        &sumpairs_request(&solution("ce.cpp"), "01"),
    );
    assert!(status == 200 && body["compile"]["code"] != 0, "{body}");
    let (status, body) = post(
        &server.url("execute"),
        &plain_request("int main() { return 3; }"),
    );
    assert_eq!(
        (status, body["run"]["code"].as_i64()),
        (200, Some(3)),
        "{body}"
    );
    // The same request again is answered from the verdict cache: no program runs.
    assert_eq!(
        post(&server.url("execute"), &sumpairs_request(&ac, "01")).0,
        200
    );

    // Boxes in use go back to 0 once nothing runs.
    common::wait_until("no box in use", Duration::from_secs(60), || {
        sample(&scrape_classic(&server.base), "ioi_run_boxes_in_use") == 0.0
    });
    let text = scrape_classic(&server.base);
    assert_labels_bounded(&text);
    let runs = [
        ("cms_ioi", "ok", 3.0),
        ("cms_ioi", "time_limit", 1.0),
        ("c++", "runtime_error", 1.0),
    ];
    for (language, outcome, sent) in runs {
        let labels = format!("{{language=\"{language}\",outcome=\"{outcome}\"}}");
        let (count, cpu) = histogram(&text, "ioi_run_program_cpu_seconds", &labels);
        assert_eq!(count, sent, "{labels}\n{text}");
        assert!(cpu > 0.0, "{labels}: CPU time sum {cpu}\n{text}");
        let (count, memory) = histogram(&text, "ioi_run_program_memory_bytes", &labels);
        assert_eq!(count, sent, "{labels}\n{text}");
        assert!(memory > 0.0, "{labels}: memory sum {memory}\n{text}");
    }
    // Nothing else ran: the compile error has no run, the repeated request none either.
    let program_runs: f64 = samples(&text)
        .iter()
        .filter(|(name, _, _)| name == "ioi_run_program_cpu_seconds_count")
        .map(|(_, _, value)| value)
        .sum();
    assert_eq!(program_runs, 5.0, "{text}");
    // Every compile is in the histogram, split as the cache's own counters split them.
    for (cache, counter) in [
        ("hit", "ioi_run_compile_cache_hits_total"),
        ("miss", "ioi_run_compile_cache_misses_total"),
    ] {
        let (count, _) = histogram(
            &text,
            "ioi_run_compile_seconds",
            &format!("{{language=\"cpp\",cache=\"{cache}\"}}"),
        );
        assert_eq!(count, sample(&text, counter), "{cache}\n{text}");
    }
    // The checker, the three submissions and the plain program ran the compiler.
    assert_eq!(
        sample(&text, "ioi_run_compile_cache_misses_total"),
        5.0,
        "{text}"
    );
    let built = sample(&text, "ioi_run_boxes_built_total") - built_before;
    assert!(
        built >= program_runs,
        "{built} boxes built for {program_runs} runs\n{text}"
    );
    assert!(sample(&text, "ioi_run_boxes_ready") <= 2.0, "{text}");
    assert!(sample(&text, "ioi_run_compile_cache_bytes") > 0.0, "{text}");
    assert!(
        sample(&text, "ioi_run_compile_cache_entries") >= 5.0,
        "{text}"
    );
    // Five distinct cms_ioi requests judged; the repeat found its verdict.
    assert_eq!(
        sample(&text, "ioi_run_verdict_cache_entries"),
        5.0,
        "{text}"
    );
    assert_eq!(
        sample(&text, "ioi_run_verdict_cache_hits_total"),
        1.0,
        "{text}"
    );
    // Five short verdicts: their entries and feedback, a few hundred bytes each.
    let verdict_bytes = sample(&text, "ioi_run_verdict_cache_bytes");
    assert!(
        verdict_bytes > 5.0 * 160.0 && verdict_bytes < 5.0 * 4096.0,
        "{text}"
    );
    promtool_check(&text);
}

#[test]
fn serve_writes_one_json_log_line_per_request() {
    if !is_root_or_skip("starting `ioi-run serve` (the judge)") {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_ioi-run"))
        .current_dir(project())
        .args([
            "serve",
            "--port",
            "0",
            "--log-format",
            "json",
            "--cache-dir",
        ])
        .arg(cache.path())
        .env_remove("IOI_RUN_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut server = Stopping(child);
    let mut lines = BufReader::new(server.0.stderr.take().unwrap()).lines();
    let endpoint = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("PISTON_ENDPOINTS=").map(str::to_string))
        .expect("the server prints its endpoint");
    let result = agent().get(&format!("{endpoint}/execute")).call();
    assert!(matches!(result, Err(ureq::Error::Status(405, _))));
    let (status, _) = post(&format!("{endpoint}/execute"), "not json");
    assert_eq!(status, 400);

    let mut logged = Vec::new();
    for line in lines.by_ref().map_while(Result::ok) {
        let record: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("a log line that is not JSON ({e}): {line}"));
        if record["target"] == "ioi_run::request" {
            logged.push(record);
        }
        if logged.len() == 2 {
            break;
        }
    }
    assert_eq!(logged[0]["method"], "GET", "{logged:?}");
    assert_eq!(logged[0]["path"], "/api/v2/execute");
    assert_eq!(logged[0]["status"], 405);
    assert_eq!(logged[1]["method"], "POST");
    assert_eq!(logged[1]["status"], 400);
    assert_eq!(logged[1]["language"], "unknown");
    assert_eq!(logged[1]["outcome"], "bad_request");
    assert!(logged[1]["queue_wait_ms"].as_f64().is_some(), "{logged:?}");
    assert!(logged[1]["duration_ms"].as_f64().is_some(), "{logged:?}");
    // Stopped while its stderr is still read.
    drop(server);
    drop(lines);
}
