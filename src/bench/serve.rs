//! `ioi-run bench serve`: throughput of the Piston-compatible server with the real judge.
//!
//! The server runs in-process on several ephemeral ports (8 by default, as one server stands
//! for many endpoints in RL training) with a fresh compile cache; client `i` talks to endpoint
//! `i mod 8`. Requests are built exactly as open-r1's clients build them, for a test of about
//! 10 ms: IOI (`cms_ioi`, a Batch problem with a grader) and Codeforces (`c++17`, the same sum
//! read on stdin). Figures: requests per second at 1, 8 and 64 concurrent clients for each kind
//! (the submission compiled once, as in real use); compiles per distinct submission when many
//! submissions are judged at once, test by test (must be 1); and what compiling once saves over
//! compiling per request (each request made unique by a comment, so the cache never hits).
//! `--api run-code` measures SandboxFusion's `/run_code` instead, on a verl-like batch
//! ([`super::serve_run_code`]); `--api all` measures both on one server.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::judge::JudgeOptions;
use crate::output::outln;
use crate::server::piston::client_view;
use crate::server::{JudgeExecutor, Response, ServeOptions, Server};

use super::clients::send_all;
use super::serve_run_code::RunCodeBatch;

/// What to measure.
#[derive(Debug, Clone)]
pub struct BenchServeOptions {
    /// Executions at once in the server.
    pub jobs: usize,
    /// Requests per concurrency level.
    pub requests: usize,
    /// Concurrent clients, one level each.
    pub clients: Vec<usize>,
    /// Ports of the server; clients spread over them.
    pub endpoints: usize,
    /// Requests of the compile-once vs compile-per-request comparison (each compiles ~1 s).
    pub compile_requests: usize,
    /// Which API to measure.
    pub api: ServeApi,
    /// The verl-like batch of the `/run_code` figures.
    pub run_code: RunCodeBatch,
}

/// The APIs `bench serve` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ServeApi {
    /// Piston's `/api/v2/execute` (IOI and Codeforces requests).
    Piston,
    /// SandboxFusion's `/run_code` (verl's code reward).
    RunCode,
    /// Both, one after the other, on one server.
    All,
}

/// Numbers in the test: enough that reading them takes about 10 ms.
const COUNT: usize = 60_000;
const HEADER: &str = "#include <vector>\nlong long add_up(const std::vector<int>& a);\n";
const GRADER: &str = r#"#include "addup.h"
#include <cstdio>
int main() {
    int n;
    if (scanf("%d", &n) != 1) return 1;
    std::vector<int> a(n);
    for (int& x : a) if (scanf("%d", &x) != 1) return 1;
    printf("%lld\n", add_up(a));
}
"#;
const SOLUTION: &str = r#"#include "addup.h"
long long add_up(const std::vector<int>& a) {
    long long s = 0;
    for (int x : a) s += x;
    return s;
}
"#;
/// The same sum as a Codeforces program (stdin to stdout).
const CF_SOLUTION: &str = r#"#include <cstdio>
int main() {
    int n;
    long long s = 0, x;
    if (scanf("%d", &n) != 1) return 1;
    for (int i = 0; i < n; i++) { scanf("%lld", &x); s += x; }
    printf("%lld\n", s);
}
"#;
const TIME_LIMIT: f64 = 1.0;
const MEMORY_LIMIT: u64 = 256 << 20;
/// Distinct submissions, and tests per submission, of the compiles-per-submission figure.
const DISTINCT_SUBMISSIONS: usize = 6;
const TESTS_PER_SUBMISSION: usize = 8;

/// The test: `COUNT` pseudo-random numbers and their sum.
fn test_case() -> (String, String) {
    test_case_seeded(0)
}

/// A test of its own for each `seed`.
fn test_case_seeded(seed: u64) -> (String, String) {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15 ^ seed.wrapping_mul(0x2545_f491_4f6c_dd1d);
    let mut sum: i64 = 0;
    let mut input = format!("{COUNT}\n");
    for _ in 0..COUNT {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let x = (state % 1_000_000_000) as i64;
        sum += x;
        input.push_str(&x.to_string());
        input.push(' ');
    }
    input.push('\n');
    (input, format!("{sum}\n"))
}

/// A request body as the Python client builds it (`run_submission` + `send_execute`).
fn request_body(submission: &str, input: &str, output: &str) -> String {
    let config = json!({"code": "addup", "task_type": "Batch", "time_limit": TIME_LIMIT,
                        "memory_limit": MEMORY_LIMIT});
    json!({
        "files": [
            {"name": "graders/addup.cpp", "content": submission},
            {"name": "input.txt", "content": input},
            {"name": "correct_output.txt", "content": output},
            {"name": "graders/addup.h", "content": HEADER},
            {"name": "graders/grader.cpp", "content": GRADER},
            {"name": "graders/grader_config.json", "content": config.to_string()},
        ],
        "run_timeout": ((TIME_LIMIT + 3.0) * 1000.0) as u64,
        "run_memory_limit": MEMORY_LIMIT,
        "language": "cms_ioi",
        "version": "*",
    })
    .to_string()
}

/// A Codeforces request body as open-r1's `cf_scoring` builds it.
fn cf_request_body(submission: &str, input: &str, output: &str) -> String {
    let config = format!(
        "TIME_LIMIT={TIME_LIMIT}\nMEMORY_LIMIT={}\nINPUT_MODE=stdio",
        MEMORY_LIMIT >> 20
    );
    json!({
        "files": [
            {"name": "main.cpp", "content": submission},
            {"name": "input.txt", "content": input},
            {"name": "correct_output.txt", "content": output},
            {"name": "grader_config", "content": config},
        ],
        "run_timeout": ((TIME_LIMIT + 10.0) * 1000.0) as u64,
        "language": "c++17",
        "version": "*",
    })
    .to_string()
}

/// Sends one request and checks the client reads it as accepted (IOI: score 1; Codeforces:
/// `run.code == 0` and `run.stdout` is `1`).
fn send(agent: &ureq::Agent, url: &str, body: &str) -> Result<()> {
    let reply = agent
        .post(url)
        .set("Content-Type", "application/json")
        .send_string(body);
    let reply = match reply {
        Ok(reply) => reply,
        Err(ureq::Error::Status(code, reply)) => {
            bail!("HTTP {code}: {}", reply.into_string().unwrap_or_default())
        }
        Err(e) => return Err(e).context("HTTP request failed"),
    };
    let value: Value = reply.into_json().context("the answer is not JSON")?;
    if value["language"] != "cms_ioi" {
        let run = &value["run"];
        if run["code"] != 0 || run["stdout"].as_str().map(str::trim) != Some("1") {
            bail!("the benchmark program was not accepted: {value}");
        }
        return Ok(());
    }
    let response: Response = serde_json::from_value(value).context("not a Piston response")?;
    let (score, feedback) = client_view(&response).map_err(anyhow::Error::msg)?;
    if score != "1" {
        bail!("the benchmark solution was not accepted: {score} {feedback}");
    }
    Ok(())
}

/// What one round of requests measured.
struct Round {
    per_second: f64,
    median_ms: f64,
    p90_ms: f64,
}

/// How many compiles RL training's way of sending (every request of many submissions at once)
/// costs per distinct submission.
fn compiles_per_submission(
    urls: &[String],
    builds: &dyn Fn() -> usize,
    input: &str,
    output: &str,
) -> Result<()> {
    outln!(
        "\ncompiles per distinct submission ({DISTINCT_SUBMISSIONS} submissions x \
         {TESTS_PER_SUBMISSION} tests, all requests at once, as RL training sends them)"
    );
    for (kind, make) in [
        ("IOI", request_body as fn(&str, &str, &str) -> String),
        ("Codeforces", cf_request_body),
    ] {
        let source = if kind == "IOI" { SOLUTION } else { CF_SOLUTION };
        let mut bodies = Vec::new();
        for _ in 0..TESTS_PER_SUBMISSION {
            for submission in 0..DISTINCT_SUBMISSIONS {
                bodies.push(make(
                    &format!("{source}// {kind} submission {submission}\n"),
                    input,
                    output,
                ));
            }
        }
        let before = builds();
        round(urls, &bodies, bodies.len())?;
        let compiles = builds() - before;
        outln!(
            "{kind:<10} {compiles} compiles for {DISTINCT_SUBMISSIONS} submissions: {:.2} per \
             submission",
            compiles as f64 / DISTINCT_SUBMISSIONS as f64
        );
    }
    Ok(())
}

/// Sends `bodies` with `clients` concurrent clients, client `i` to `urls[i % urls.len()]`.
fn round(urls: &[String], bodies: &[String], clients: usize) -> Result<Round> {
    let (elapsed, latencies) = send_all(
        bodies,
        clients,
        Duration::from_secs(120),
        |agent, client, body| send(agent, &urls[client % urls.len()], body),
    )?;
    let ms = |i: usize| latencies[i.min(latencies.len() - 1)].as_secs_f64() * 1e3;
    Ok(Round {
        per_second: bodies.len() as f64 / elapsed,
        median_ms: ms(latencies.len() / 2),
        p90_ms: ms(latencies.len() * 9 / 10),
    })
}

/// Starts the server with the real judge, measures, prints the figures, stops the server.
pub fn bench_serve(options: &BenchServeOptions) -> Result<()> {
    let cache = tempfile::Builder::new()
        .prefix("ioi-run-bench-cache-")
        .tempdir()
        .context("cannot create a compile cache for the benchmark")?;
    // Every request judged: these figures are the judge's (the verdict cache is measured
    // on its own, by `rl_batch`).
    let executor = Arc::new(
        JudgeExecutor::new(JudgeOptions {
            cache_dir: cache.path().to_path_buf(),
            ..JudgeOptions::default()
        })?
        .without_verdict_cache(),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the tokio runtime")?;
    let mut serve = ServeOptions::new(([127, 0, 0, 1], 0).into(), options.jobs);
    serve.addrs = vec![([127, 0, 0, 1], 0).into(); options.endpoints.max(1)];
    let most_clients = options.clients.iter().copied().max().unwrap_or(1);
    serve.max_queue = serve
        .max_queue
        .max(2 * most_clients)
        .max(DISTINCT_SUBMISSIONS * TESTS_PER_SUBMISSION)
        .max(options.run_code.max_concurrent);
    let server = runtime.block_on(Server::start(serve, executor.clone()))?;
    let urls: Vec<String> = server
        .local_addrs()
        .iter()
        .map(|addr| format!("http://{addr}/api/v2/execute"))
        .collect();
    let run_code_url = format!("http://{}/run_code", server.local_addr());
    let mut result = Ok(());
    if options.api != ServeApi::RunCode {
        result = measure(options, &urls, &executor);
    }
    if result.is_ok() && options.api != ServeApi::Piston {
        result = super::serve_run_code::measure(&options.run_code, &run_code_url, &executor);
    }
    server.shutdown_handle().shutdown();
    runtime
        .block_on(server.wait())
        .context("the server did not stop cleanly")?;
    result?;
    rl_batch(options, &runtime, cache.path())
}

/// Prompts of the RL-like batch, completions per prompt, distinct programs among a prompt's
/// completions, and tests per completion.
const RL_PROMPTS: usize = 4;
const RL_COMPLETIONS: usize = 8;
const RL_DISTINCT: usize = 4;
const RL_TESTS: usize = 8;
/// Rounds of each kind, alternated.
const RL_ROUNDS: usize = 3;

/// An RL-like batch (`RL_COMPLETIONS` completions per prompt, half of them copies of another
/// completion of the same prompt, each sent once per test, all at once) through a server
/// without and with the verdict cache, alternately, each round with a fresh server on the same
/// warm compile cache: what the verdict cache saves beyond compiling once.
fn rl_batch(
    options: &BenchServeOptions,
    runtime: &tokio::runtime::Runtime,
    cache: &std::path::Path,
) -> Result<()> {
    let tests: Vec<(String, String)> = (0..RL_TESTS as u64).map(test_case_seeded).collect();
    let mut bodies = Vec::new();
    for prompt in 0..RL_PROMPTS {
        for completion in 0..RL_COMPLETIONS {
            let program = completion % RL_DISTINCT;
            let source = format!("{SOLUTION}// prompt {prompt} program {program}\n");
            for (input, output) in &tests {
                bodies.push(request_body(&source, input, output));
            }
        }
    }
    let distinct = RL_PROMPTS * RL_DISTINCT;
    outln!(
        "\nRL-like batch: {RL_PROMPTS} prompts x {RL_COMPLETIONS} completions ({distinct} \
         distinct programs, {:.0} % copies) x {RL_TESTS} tests = {} requests at once; {RL_ROUNDS} \
         paired rounds, alternated, compile cache warm",
        100.0 * (1.0 - distinct as f64 / (RL_PROMPTS * RL_COMPLETIONS) as f64),
        bodies.len()
    );
    let mut seconds = [Vec::new(), Vec::new()];
    // A first round without the cache compiles every program.
    for round_number in 0..=2 * RL_ROUNDS {
        let cached = round_number % 2 == 0 && round_number > 0;
        let mut executor = JudgeExecutor::new(JudgeOptions {
            cache_dir: cache.to_path_buf(),
            ..JudgeOptions::default()
        })?;
        if !cached {
            executor = executor.without_verdict_cache();
        }
        let executor = Arc::new(executor);
        let mut serve = ServeOptions::new(([127, 0, 0, 1], 0).into(), options.jobs);
        serve.max_queue = serve.max_queue.max(bodies.len());
        let server = runtime.block_on(Server::start(serve, executor.clone()))?;
        let urls: Vec<String> = server
            .local_addrs()
            .iter()
            .map(|addr| format!("http://{addr}/api/v2/execute"))
            .collect();
        let t = Instant::now();
        let result = round(&urls, &bodies, bodies.len());
        let elapsed = t.elapsed().as_secs_f64();
        server.shutdown_handle().shutdown();
        runtime
            .block_on(server.wait())
            .context("the server did not stop cleanly")?;
        result?;
        if round_number > 0 {
            seconds[cached as usize].push(elapsed);
            if cached {
                outln!(
                    "  round {}: without {:.2} s, with {:.2} s ({} answered from the cache)",
                    round_number / 2,
                    seconds[0].last().copied().unwrap_or(f64::NAN),
                    elapsed,
                    executor.verdict_hits()
                );
            }
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (without, with) = (median(&mut seconds[0]), median(&mut seconds[1]));
    outln!(
        "RL batch: without the verdict cache {without:.2} s, with {with:.2} s (medians): {:.2}x",
        without / with
    );
    Ok(())
}

fn measure(options: &BenchServeOptions, urls: &[String], executor: &JudgeExecutor) -> Result<()> {
    let (input, output) = test_case();
    let same = request_body(SOLUTION, &input, &output);
    let same_cf = cf_request_body(CF_SOLUTION, &input, &output);
    let builds = || executor.judge().cache().builds();
    outln!(
        "server: {} jobs, {} endpoints; test: {COUNT} numbers ({:.1} MB input), IOI grader + \
         white-diff / Codeforces stdin + normalising diff",
        options.jobs,
        urls.len(),
        input.len() as f64 / 1e6
    );

    let agent = ureq::AgentBuilder::new().build();
    for (kind, body) in [("IOI", &same), ("Codeforces", &same_cf)] {
        let t = Instant::now();
        send(&agent, &urls[0], body)?;
        let first = t.elapsed();
        let t = Instant::now();
        send(&agent, &urls[0], body)?;
        outln!(
            "{kind:<10} first request (compile + run) {:.0} ms, second (cached) {:.1} ms",
            first.as_secs_f64() * 1e3,
            t.elapsed().as_secs_f64() * 1e3
        );
    }

    outln!(
        "\nsame submission, compiled once ({} requests per row, clients spread over {} endpoints)",
        options.requests,
        urls.len()
    );
    outln!("kind        clients   req/s   median ms   p90 ms");
    let before = builds();
    for (kind, body) in [("IOI", &same), ("Codeforces", &same_cf)] {
        for &clients in &options.clients {
            let bodies = vec![body.clone(); options.requests.max(1)];
            let r = round(urls, &bodies, clients.max(1))?;
            outln!(
                "{kind:<10} {clients:>8} {:>7.1} {:>11.1} {:>8.1}",
                r.per_second,
                r.median_ms,
                r.p90_ms
            );
        }
    }
    outln!(
        "compiles during these {} requests: {}",
        2 * options.requests * options.clients.len(),
        builds() - before
    );

    compiles_per_submission(urls, &builds, &input, &output)?;

    let n = options.compile_requests.max(1);
    let clients = options.jobs.max(1);
    let once = round(urls, &vec![same.clone(); n], clients)?;
    let before = builds();
    let unique: Vec<String> = (0..n)
        .map(|i| request_body(&format!("{SOLUTION}// request {i}\n"), &input, &output))
        .collect();
    let each = round(urls, &unique, clients)?;
    outln!("\ncompile once vs compile per request (IOI, {n} requests, {clients} clients)");
    outln!(
        "compile once          {:>7.1} req/s   median {:>7.1} ms",
        once.per_second,
        once.median_ms
    );
    outln!(
        "compile per request   {:>7.1} req/s   median {:>7.1} ms   ({} compiles)",
        each.per_second,
        each.median_ms,
        builds() - before
    );
    outln!(
        "speedup of compiling once: {:.1}x",
        once.per_second / each.per_second
    );
    Ok(())
}
