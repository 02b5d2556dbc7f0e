//! `ioi-run bench soak`: a soak the size of a training run, against one `ioi-run serve` started as
//! a child process, so that what it holds can be read from outside by its pid.
//!
//! It measures whether a reward server lasts: throughput and latency (overall and per kind of
//! request) over `--requests` requests from `--clients` concurrent clients, the mix of
//! [`super::soak_mix`] (Piston's `c++`, `cf_python3` and `cms_ioi` with a testlib checker,
//! SandboxFusion's `/run_code` in C++ and Python, each program sent as a prompt's eight
//! completions, one group in twenty hostile); every honest answer checked exactly; the server's
//! resident memory sampled through the run (flat once warm: its growth over the second half);
//! and what it holds ([`super::soak_probe`]: descriptors, threads, run cgroups, scratch folders
//! and their bytes, mounts) when idle before the soak and after it, which must come back. The
//! baseline is taken once one request of every kind has been answered and the server is idle
//! again, so that what is made once for the server's life (a thread, a pool) is not a leak. It
//! fails when an honest answer is wrong, a request goes unanswered, something held stays above
//! the baseline, or the server does not exit 0 on SIGTERM.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use super::clients::send_all;
use super::soak_mix::{self, Kind, Request, Route};
use super::soak_probe::{self, Holdings};
use super::soak_report::{self, Measured};
use crate::output::outln;

/// What to run.
#[derive(Debug, Clone)]
pub struct SoakOptions {
    /// Requests in all.
    pub requests: usize,
    /// Concurrent clients.
    pub clients: usize,
    /// The server's `--jobs`.
    pub jobs: usize,
    /// Seconds between two samples of the server.
    pub sample_every: Duration,
    /// The server's cache folder (`--cache-dir`); a fresh temporary one when `None`.
    pub cache_dir: Option<PathBuf>,
    /// Where to write every sample of the server, as CSV.
    pub samples: Option<PathBuf>,
}

/// The longest the server may take to give back what the soak made it hold.
const SETTLE_LIMIT: Duration = Duration::from_secs(60);
/// How long what the server holds must stay unchanged for the baseline: longer than the 10 s
/// an idle thread of its runtime's blocking pool lives.
const STEADY: Duration = Duration::from_secs(11);
/// How long what the server holds must stay unchanged for the memory of an idle server just
/// started (its precompiled headers built).
const QUIET: Duration = Duration::from_secs(3);

/// Runs the soak, prints the figures; an error when the server failed it.
pub fn run(options: &SoakOptions) -> Result<i32> {
    let temporary = match &options.cache_dir {
        Some(_) => None,
        None => Some(
            tempfile::Builder::new()
                .prefix("ioi-run-soak-cache-")
                .tempdir()
                .context("cannot create a cache folder for the soak")?,
        ),
    };
    let cache_dir = match &temporary {
        Some(dir) => dir.path().to_path_buf(),
        None => options.cache_dir.clone().unwrap_or_default(),
    };
    let server = ServeChild::start(options, &cache_dir)?;
    let compile_cache = soak_probe::compile_cache(&cache_dir);
    let pid = server.pid();
    outln!(
        "soak: {} requests from {} clients against `serve -j {}` (pid {pid}), cache {}",
        options.requests,
        options.clients,
        options.jobs,
        cache_dir.display()
    );
    let mix: Vec<String> = Kind::ALL
        .iter()
        .map(|&k| format!("{} {:.0} %", k.name(), soak_mix::share(k)))
        .collect();
    outln!(
        "mix: {}; each program sent {} times",
        mix.join(", "),
        soak_mix::COPIES
    );
    let idle = settle(pid, &compile_cache, None, QUIET);
    outln!("rss idle after start: {}", soak_report::mib(idle.rss_kib));

    warm_up(&server)?;
    let start = settle(pid, &compile_cache, None, STEADY);
    outln!(
        "rss idle after one request of each kind: {}",
        soak_report::mib(start.rss_kib)
    );

    let soak = soak(options, &server)?;
    let end = settle(pid, &compile_cache, Some(&start), STEADY);
    let metrics = server.metrics().unwrap_or_default();
    soak_report::print(options, &soak, &start, &end, &metrics)?;
    if let Some(path) = &options.samples {
        soak_report::write_samples(path, &soak.samples)?;
    }

    let (status, warnings) = server.stop();
    outln!("serve's warnings and errors: {}", warnings.len());
    for line in warnings.iter().take(soak_report::SHOWN) {
        outln!("  {line}");
    }
    outln!(
        "serve's exit status after SIGTERM: {}",
        status.map_or("none".to_string(), |code| code.to_string())
    );
    let mut failures = Vec::new();
    if soak.wrong > 0 {
        failures.push(format!("{} honest answers were wrong", soak.wrong));
    }
    if soak.unanswered > 0 {
        failures.push(format!(
            "{} hostile requests got no answer",
            soak.unanswered
        ));
    }
    let above = end.above(&start);
    if !above.is_empty() {
        failures.push(format!(
            "not back to their start values: {}",
            above.join(", ")
        ));
    }
    if status != Some(0) {
        failures.push("serve did not exit 0 on SIGTERM".to_string());
    }
    if !failures.is_empty() {
        bail!("the soak failed: {}", failures.join("; "));
    }
    Ok(0)
}

/// `ioi-run serve` as a child process: its pid, its URLs, what it logs at warning level.
struct ServeChild {
    child: Option<Child>,
    execute_url: String,
    run_code_url: String,
    metrics_url: String,
    log: Option<std::thread::JoinHandle<Vec<String>>>,
}

impl ServeChild {
    /// Starts this binary's `serve` on a free port and waits for its `PISTON_ENDPOINTS` line.
    fn start(options: &SoakOptions, cache_dir: &Path) -> Result<ServeChild> {
        let exe = std::env::current_exe().context("cannot find this program's own binary")?;
        let mut child = Command::new(exe)
            .args(["--log-format", "json", "serve", "--ports", "0"])
            .args(["-j", &options.jobs.to_string()])
            // Every client's request finds room: the soak measures answers, not 503s.
            .args(["--max-queue", &options.clients.max(1).to_string()])
            .args(["--queue-wait", "600"])
            .arg("--cache-dir")
            .arg(cache_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("cannot start `ioi-run serve`")?;
        let stderr = child.stderr.take().context("serve's stderr is not piped")?;
        let mut server = ServeChild {
            child: Some(child),
            execute_url: String::new(),
            run_code_url: String::new(),
            metrics_url: String::new(),
            log: None,
        };
        let mut lines = BufReader::new(stderr).lines();
        let mut said = Vec::new();
        let endpoints = loop {
            let Some(Ok(line)) = lines.next() else {
                bail!(
                    "`ioi-run serve` stopped before it listened: {}",
                    said.join("\n")
                );
            };
            if let Some(url) = line.strip_prefix("SANDBOX_FUSION_URL=") {
                server.run_code_url = url.to_string();
            }
            if let Some(endpoints) = line.strip_prefix("PISTON_ENDPOINTS=") {
                break endpoints.to_string();
            }
            said.push(line);
        };
        let base = endpoints.split(',').next().unwrap_or_default();
        server.execute_url = format!("{base}/execute");
        server.metrics_url = base.replace("/api/v2", "/metrics");
        server.log = Some(std::thread::spawn(move || {
            lines
                .map_while(Result::ok)
                .filter(|line| match serde_json::from_str::<Value>(line) {
                    Ok(event) => matches!(event["level"].as_str(), Some("WARN" | "ERROR")),
                    // A panic's message; not the line SIGTERM makes it say.
                    Err(_) => !line.starts_with("ioi-run: shutting down"),
                })
                .collect()
        }));
        Ok(server)
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    fn url(&self, route: Route) -> &str {
        match route {
            Route::Execute => &self.execute_url,
            Route::RunCode => &self.run_code_url,
        }
    }

    fn metrics(&self) -> Result<String> {
        Ok(ureq::get(&self.metrics_url).call()?.into_string()?)
    }

    /// SIGTERM, then its exit code (`None`: killed after 30 s, or a signal) and what it logged
    /// above the info level.
    fn stop(mut self) -> (Option<i32>, Vec<String>) {
        let code = self.child.take().and_then(terminate);
        let log = self
            .log
            .take()
            .and_then(|log| log.join().ok())
            .unwrap_or_default();
        (code, log)
    }
}

impl Drop for ServeChild {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            terminate(child);
        }
    }
}

/// Stops a child by SIGTERM (SIGKILL after 30 s) and returns its exit code.
fn terminate(mut child: Child) -> Option<i32> {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return status.code();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    child.wait().ok().and_then(|status| status.code())
}

/// Sends one request of every kind, in turn, and checks each answer.
fn warm_up(server: &ServeChild) -> Result<()> {
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(600))
        .build();
    let mut seen = Vec::new();
    for i in 0.. {
        let request = soak_mix::request(i);
        if seen.contains(&request.kind) {
            continue;
        }
        seen.push(request.kind);
        let (status, answer) = send(&agent, server.url(request.route), &request.body);
        if let Err(why) = soak_mix::check(&request.expect, status, &answer) {
            bail!(
                "the warm-up's {} request got a wrong answer ({why}): {}",
                request.kind.name(),
                shorten(&answer.to_string())
            );
        }
        if seen.len() == Kind::ALL.len() {
            break;
        }
    }
    Ok(())
}

fn soak(options: &SoakOptions, server: &ServeChild) -> Result<Measured> {
    let pid = server.pid();
    let indices: Vec<usize> = (0..options.requests).collect();
    let done = AtomicUsize::new(0);
    let honest = AtomicUsize::new(0);
    let unanswered = AtomicUsize::new(0);
    let wrong = AtomicUsize::new(0);
    let wrong_shown = Mutex::new(Vec::new());
    let latencies = Mutex::new(Vec::with_capacity(options.requests));
    let samples = Mutex::new(Vec::new());
    let finished = AtomicBool::new(false);
    let begun = Instant::now();
    let sent = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !finished.load(Ordering::Relaxed) {
                let seconds = begun.elapsed().as_secs_f64();
                let sample = soak_probe::sample(pid, seconds, done.load(Ordering::Relaxed));
                if let Ok(mut samples) = samples.lock() {
                    samples.push(sample);
                }
                sleep_unless(&finished, options.sample_every);
            }
        });
        let sent = send_all(
            &indices,
            options.clients,
            Duration::from_secs(600),
            |agent, _, &i| {
                let request = soak_mix::request(i);
                let t = Instant::now();
                let (status, answer) = send(agent, server.url(request.route), &request.body);
                let latency = t.elapsed();
                let verdict = soak_mix::check(&request.expect, status, &answer);
                match (request.honest(), verdict) {
                    (true, Ok(())) => {
                        honest.fetch_add(1, Ordering::Relaxed);
                    }
                    (true, Err(why)) => {
                        honest.fetch_add(1, Ordering::Relaxed);
                        wrong.fetch_add(1, Ordering::Relaxed);
                        if let Ok(mut shown) = wrong_shown.lock() {
                            if shown.len() < soak_report::SHOWN {
                                shown.push(describe_wrong(i, &request, &why, &answer));
                            }
                        }
                    }
                    (false, Ok(())) => {}
                    (false, Err(_)) => {
                        unanswered.fetch_add(1, Ordering::Relaxed);
                    }
                }
                if let Ok(mut latencies) = latencies.lock() {
                    latencies.push((request.kind, latency));
                }
                done.fetch_add(1, Ordering::Relaxed);
                Ok(())
            },
        );
        let seconds = begun.elapsed().as_secs_f64();
        // The sample at the end of the requests, before anything settles.
        if let Ok(mut samples) = samples.lock() {
            samples.push(soak_probe::sample(
                pid,
                seconds,
                done.load(Ordering::Relaxed),
            ));
        }
        finished.store(true, Ordering::Relaxed);
        sent.map(|_| seconds)
    });
    let seconds = sent?;
    let honest = honest.into_inner();
    Ok(Measured {
        seconds,
        latencies: latencies
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
        honest,
        hostile: options.requests - honest,
        wrong: wrong.into_inner(),
        wrong_shown: wrong_shown
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
        unanswered: unanswered.into_inner(),
        samples: samples
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    })
}

/// Sleeps `time`, waking early when `finished` is raised.
fn sleep_unless(finished: &AtomicBool, time: Duration) {
    let until = Instant::now() + time;
    while !finished.load(Ordering::Relaxed) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50).min(time));
    }
}

/// One request: HTTP status and JSON answer (status 0 and the error's text when there is no
/// answer).
fn send(agent: &ureq::Agent, url: &str, body: &str) -> (u16, Value) {
    let reply = agent
        .post(url)
        .set("Content-Type", "application/json")
        .send_string(body);
    let response = match reply {
        Ok(response) => response,
        Err(ureq::Error::Status(_, response)) => response,
        Err(e) => return (0, Value::String(format!("no answer: {e}"))),
    };
    let status = response.status();
    let text = response.into_string().unwrap_or_default();
    let answer = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, answer)
}

fn describe_wrong(i: usize, request: &Request, why: &str, answer: &Value) -> String {
    format!(
        "request {i} ({}): {why}\n  expected: {}\n  request: {}\n  answer: {}",
        request.kind.name(),
        shorten(&format!("{:?}", request.expect)),
        shorten(&request.body),
        shorten(&answer.to_string())
    )
}

/// A long text cut to its first 4000 characters.
fn shorten(text: &str) -> String {
    match text.char_indices().nth(4000) {
        Some((at, _)) => format!("{}… ({} bytes)", &text[..at], text.len()),
        None => text.to_string(),
    }
}

/// Waits until the server holds nothing of a run: with a `baseline`, until nothing checked is
/// above it; without, until everything checked has stayed unchanged for `steady`. Gives up
/// after [`SETTLE_LIMIT`] and returns what it holds then.
fn settle(pid: u32, cache: &Path, baseline: Option<&Holdings>, steady: Duration) -> Holdings {
    let begun = Instant::now();
    let mut steady_since = Instant::now();
    let mut last = soak_probe::holdings(pid, cache);
    loop {
        std::thread::sleep(Duration::from_millis(250));
        let now = soak_probe::holdings(pid, cache);
        let settled = match baseline {
            Some(start) => now.above(start).is_empty(),
            None => {
                if now.checked() != last.checked() {
                    steady_since = Instant::now();
                }
                steady_since.elapsed() >= steady
            }
        };
        last = now;
        if settled || begun.elapsed() >= SETTLE_LIMIT {
            return last;
        }
    }
}
