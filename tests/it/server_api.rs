//! The Piston-compatible API over real HTTP, with a fake executor: requests exactly as the
//! seed's Python client builds them, error shapes, admission control and shutdown.

use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ioi_run::judge::CompileError;
use ioi_run::server::piston::{client_view, ioi_response, IoiOutcome};
use ioi_run::server::{Executor, IoiJob, Job, RequestError, Response, Stage, TaskType};
use serde_json::{json, Value};

use crate::common;
use common::{agent, answer, get, post, Gate, TestServer};

/// How a fake executor answers a job.
type Answer = Box<dyn Fn(&Job) -> Result<Response, RequestError> + Send + Sync>;

/// A fake executor: records every job and answers with `answer`.
struct Fake {
    jobs: Mutex<Vec<Job>>,
    answer: Answer,
}

impl Fake {
    fn new(
        answer: impl Fn(&Job) -> Result<Response, RequestError> + Send + Sync + 'static,
    ) -> Arc<Fake> {
        Arc::new(Fake {
            jobs: Mutex::new(Vec::new()),
            answer: Box::new(answer),
        })
    }

    fn jobs(&self) -> Vec<Job> {
        self.jobs.lock().unwrap().clone()
    }
}

impl Executor for Fake {
    fn execute(&self, job: Job) -> Result<Response, RequestError> {
        self.jobs.lock().unwrap().push(job.clone());
        (self.answer)(&job)
    }
}

/// The request body the seed's Python client (`run_submission`) sends for one test.
fn client_request(
    problem_id: &str,
    submission: &str,
    input: &str,
    output: &str,
    grader_files: &[(&str, &str)],
    time_limit: f64,
    memory_limit: u64,
) -> Value {
    let mut files = vec![
        json!({"name": format!("graders/{}.cpp", problem_id.to_lowercase()), "content": submission}),
        json!({"name": "input.txt", "content": input}),
    ];
    if !output.is_empty() {
        files.push(json!({"name": "correct_output.txt", "content": output}));
    }
    for (name, content) in grader_files {
        if !content.is_empty() {
            files.push(json!({"name": name, "content": content}));
        }
    }
    // send_execute adds the language and version to the data.
    json!({
        "files": files,
        "run_timeout": ((time_limit + 3.0) * 1000.0).round() as u64,
        "run_memory_limit": memory_limit,
        "language": "cms_ioi",
        "version": "*",
    })
}

const NILE_CONFIG: &str =
    r#"{"code": "nile", "task_type": "Batch", "time_limit": 2.0, "memory_limit": 2147483648}"#;

fn nile_request(submission: &str, input: &str) -> Value {
    client_request(
        "Nile",
        submission,
        input,
        "6\n",
        &[
            ("graders/grader_config.json", NILE_CONFIG),
            ("graders/nile.h", "long long calculate_costs();"),
            ("graders/grader.cpp", "#include \"nile.h\"\nint main() {}"),
            ("checker/checker.cpp", ""),
        ],
        2.0,
        2 << 30,
    )
}

fn to_response(body: &Value) -> Response {
    serde_json::from_value(body.clone()).expect("a Piston response")
}

fn judged(score: f64, feedback: &str) -> Response {
    ioi_response(&IoiOutcome::Judged {
        score,
        feedback: feedback.to_string(),
    })
}

#[test]
fn runtimes_list_cms_ioi_cpp_and_the_codeforces_languages() {
    let server = TestServer::start(Fake::new(|_| unreachable!()), |_| {});
    let (status, body) = get(&server.url("runtimes"));
    assert_eq!(status, 200);
    let list = body.as_array().expect("a list");
    assert_eq!(
        list[..2],
        [
            json!({"language": "cms_ioi", "version": "1.0.0", "aliases": ["ioi"], "runtime": "cms_ioi"}),
            json!({"language": "c++", "version": "10.2.0", "aliases": ["cpp", "g++"], "runtime": "gcc"}),
        ]
    );
    assert!(
        list.contains(
            &json!({"language": "c", "version": "10.2.0", "aliases": ["gcc"], "runtime": "gcc"})
        ),
        "plain C in {body}"
    );
    for (language, alias) in [
        ("c++17", "cf_c++17"),
        ("python3", "cf_python3"),
        ("c++", "cf_c++"),
    ] {
        assert!(
            list.iter().any(|rt| rt["language"] == language
                && rt["runtime"] == "codeforces"
                && rt["version"] == "1.0.0"
                && rt["aliases"].as_array().unwrap().contains(&json!(alias))),
            "{language} of the codeforces package in {body}"
        );
    }
    server.stop().unwrap();
}

#[test]
fn packages_are_built_in_and_installing_them_is_a_no_op() {
    let server = TestServer::start(Fake::new(|_| unreachable!()), |_| {});
    let (status, body) = get(&server.url("packages"));
    assert_eq!(status, 200);
    assert_eq!(
        body[0],
        json!({"language": "cms_ioi", "language_version": "1.0.0", "installed": true})
    );
    let package = r#"{"language": "cms_ioi", "version": "1.0.0"}"#;
    let install = post(&server.url("packages"), package);
    assert_eq!(
        install,
        (200, json!({"language": "cms_ioi", "version": "1.0.0"}))
    );
    let uninstall = answer(agent().delete(&server.url("packages")).send_string(package));
    assert_eq!(
        uninstall,
        (200, json!({"language": "cms_ioi", "version": "1.0.0"}))
    );
    let unknown = post(
        &server.url("packages"),
        r#"{"language": "python", "version": "3.12"}"#,
    );
    assert_eq!(
        unknown,
        (
            400,
            json!({"message": "python-3.12 package does not exist"})
        )
    );
    server.stop().unwrap();
}

#[test]
fn an_execute_request_as_the_python_client_builds_it_reaches_the_executor() {
    let fake = Fake::new(|_| Ok(judged(1.0, "Output is correct")));
    let server = TestServer::start(fake.clone(), |_| {});
    let request = nile_request(
        "#include \"nile.h\"\nlong long calculate_costs() { return 6; }",
        "3\n",
    );
    let (status, body) = post(&server.url("execute"), &request.to_string());
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (body["language"].as_str(), body["version"].as_str()),
        (Some("cms_ioi"), Some("1.0.0"))
    );
    assert_eq!(
        client_view(&to_response(&body)),
        Ok(("1".into(), "Output is correct".into()))
    );

    let jobs = fake.jobs();
    let [Job::Ioi(job)] = jobs.as_slice() else {
        panic!("expected one IOI job, got {jobs:?}")
    };
    let IoiJob {
        problem_id,
        submission,
        input,
        expected_output,
        grader_files,
        ..
    } = job;
    assert_eq!(problem_id, "nile");
    assert!(submission.ends_with(b"return 6; }"));
    assert_eq!(
        (input.as_slice(), expected_output.as_deref()),
        (&b"3\n"[..], Some(&b"6\n"[..]))
    );
    let paths: Vec<&str> = grader_files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "graders/grader_config.json",
            "graders/nile.h",
            "graders/grader.cpp"
        ],
        "the empty checker is not sent, as in the client"
    );
    assert_eq!((job.time_limit, job.memory_limit), (2.0, 2 << 30));
    assert_eq!(job.task, TaskType::Batch);
    assert_eq!(
        job.run_timeout,
        Duration::from_secs(5),
        "(time_limit + 3) * 1000 ms"
    );
    server.stop().unwrap();
}

#[test]
fn every_judge_outcome_maps_back_to_the_clients_score_and_feedback() {
    // The submission text tells the fake which outcome to answer.
    let fake = Fake::new(|job| {
        let Job::Ioi(job) = job else { unreachable!() };
        let outcome = match String::from_utf8_lossy(&job.submission).as_ref() {
            "ac" => IoiOutcome::Judged {
                score: 1.0,
                feedback: "Output is correct".into(),
            },
            "pa" => IoiOutcome::Judged {
                score: 0.25,
                feedback: "Partially correct".into(),
            },
            "wa" => IoiOutcome::Judged {
                score: 0.0,
                feedback: "Output isn't correct".into(),
            },
            "tle" => IoiOutcome::Judged {
                score: 0.0,
                feedback: "Time limit exceeded".into(),
            },
            "mle" => IoiOutcome::Judged {
                score: 0.0,
                feedback: "Memory limit exceeded".into(),
            },
            "ce" => IoiOutcome::CompileError(CompileError::exited(1, "nile.cpp:1:1: error")),
            "hard" => IoiOutcome::HardTimeout,
            other => panic!("unexpected submission {other}"),
        };
        Ok(ioi_response(&outcome))
    });
    let server = TestServer::start(fake, |_| {});
    let expected = [
        ("ac", "1", "Output is correct"),
        ("pa", "0.25", "Partially correct"),
        ("wa", "0", "Output isn't correct"),
        ("tle", "0", "Time limit exceeded"),
        ("mle", "0", "Memory limit exceeded"),
        (
            "ce",
            "0",
            "Compilation error exit code 1\nnile.cpp:1:1: error",
        ),
        ("hard", "0", "Time limit exceeded"),
    ];
    for (submission, score, feedback) in expected {
        let (status, body) = post(
            &server.url("execute"),
            &nile_request(submission, "1").to_string(),
        );
        assert_eq!(status, 200, "{submission}: {body}");
        assert_eq!(
            client_view(&to_response(&body)),
            Ok((score.to_string(), feedback.to_string())),
            "{submission}: {body}"
        );
    }
    server.stop().unwrap();
}

#[test]
fn a_plain_cpp_request_runs_as_a_program() {
    let fake = Fake::new(|job| {
        let Job::Plain(job) = job else { unreachable!() };
        let stdout = String::from_utf8(job.stdin.clone()).unwrap().to_uppercase();
        Ok(Response {
            compile: Some(Stage::new(String::new(), String::new(), Some(0), None)),
            run: Some(Stage::new(stdout, String::new(), Some(0), None)),
        })
    });
    let server = TestServer::start(fake, |_| {});
    // Pinned to public Piston's version, as clients written for it are.
    let request = json!({"language": "cpp", "version": "10.2.0", "stdin": "hello",
                         "files": [{"name": "main.cpp", "content": "int main() {}"}]});
    let (status, body) = post(&server.url("execute"), &request.to_string());
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (body["language"].as_str(), body["version"].as_str()),
        (Some("c++"), Some("10.2.0"))
    );
    assert_eq!(
        (
            body["run"]["stdout"].as_str(),
            body["run"]["output"].as_str()
        ),
        (Some("HELLO"), Some("HELLO"))
    );
    server.stop().unwrap();
}

#[test]
fn malformed_requests_are_400_with_a_message_naming_the_problem() {
    let fake = Fake::new(|_| unreachable!("invalid requests never reach the executor"));
    let server = TestServer::start(fake.clone(), |_| {});
    let (status, body) = post(&server.url("execute"), "{\"language\": \"cms_ioi\", ");
    assert_eq!(status, 400);
    let message = body["message"].as_str().unwrap();
    assert!(
        message.starts_with("request body is not valid JSON: EOF"),
        "{message}"
    );

    let (status, body) = post(
        &server.url("execute"),
        r#"{"language": "cms_ioi", "version": "*"}"#,
    );
    assert_eq!(
        (status, body),
        (400, json!({"message": "files is required as an array"}))
    );

    let mut no_input = nile_request("x", "1");
    no_input["files"].as_array_mut().unwrap().remove(1);
    let (status, body) = post(&server.url("execute"), &no_input.to_string());
    assert_eq!(
        (status, body),
        (
            400,
            json!({"message": "no input.txt among the files: it must hold the test input"})
        )
    );
    assert!(fake.jobs().is_empty());
    server.stop().unwrap();
}

#[test]
fn an_unknown_language_is_400_like_piston() {
    let server = TestServer::start(Fake::new(|_| unreachable!()), |_| {});
    let request = json!({"language": "brainfuck", "version": "2.7.3",
                         "files": [{"name": "a.bf", "content": "+"}]});
    let (status, body) = post(&server.url("execute"), &request.to_string());
    assert_eq!(
        (status, body),
        (
            400,
            json!({"message": "brainfuck-2.7.3 runtime is unknown"})
        )
    );
    server.stop().unwrap();
}

#[test]
fn requests_beyond_jobs_plus_queue_get_503_at_once() {
    let gate = Arc::new(Gate::default());
    let running = Arc::new(AtomicUsize::new(0));
    let most_running = Arc::new(AtomicUsize::new(0));
    let fake = {
        let (gate, running, most_running) = (gate.clone(), running.clone(), most_running.clone());
        Fake::new(move |_| {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most_running.fetch_max(now, Ordering::SeqCst);
            gate.wait();
            running.fetch_sub(1, Ordering::SeqCst);
            Ok(judged(1.0, "Output is correct"))
        })
    };
    let server = TestServer::start(fake.clone(), |o| {
        o.jobs = 1;
        o.max_queue = 1;
        o.queue_wait = Duration::ZERO;
    });
    let (sender, answers) = mpsc::channel();
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let (url, sender) = (server.url("execute"), sender.clone());
            let body = nile_request("x", "1").to_string();
            std::thread::spawn(move || sender.send(post(&url, &body)).unwrap())
        })
        .collect();
    // One request runs (blocked at the gate) and one waits: the other two are turned away
    // while the gate is still closed.
    for _ in 0..2 {
        let (status, body) = answers.recv_timeout(Duration::from_secs(30)).unwrap();
        assert_eq!(status, 503, "{body}");
        assert!(
            body["message"].as_str().unwrap().contains("--queue-wait"),
            "{body}"
        );
        assert!(
            body["message"].as_str().unwrap().starts_with("server busy"),
            "{body}"
        );
    }
    gate.open();
    for _ in 0..2 {
        let (status, body) = answers.recv_timeout(Duration::from_secs(30)).unwrap();
        assert_eq!(status, 200, "{body}");
    }
    clients.into_iter().for_each(|c| c.join().unwrap());
    assert_eq!(fake.jobs().len(), 2);
    assert_eq!(
        most_running.load(Ordering::SeqCst),
        1,
        "--jobs 1 runs one execution at a time"
    );
    server.stop().unwrap();
}

#[test]
fn a_30_mb_input_is_accepted() {
    let fake = Fake::new(|_| Ok(judged(1.0, "Output is correct")));
    let server = TestServer::start(fake.clone(), |_| {});
    let line = "1000000000 999999999 123456789\n";
    let input = line.repeat(30_000_000 / line.len());
    let (status, body) = post(
        &server.url("execute"),
        &nile_request("x", &input).to_string(),
    );
    assert_eq!(status, 200, "{body}");
    let jobs = fake.jobs();
    let [Job::Ioi(job)] = jobs.as_slice() else {
        panic!("expected one IOI job")
    };
    assert_eq!(job.input.len(), input.len());
    assert!(job.input.len() > 29_000_000);
    server.stop().unwrap();
}

#[test]
fn a_panicking_executor_is_a_500_and_the_server_keeps_serving() {
    let fake = Fake::new(|job| match job {
        Job::Ioi(job) if job.submission == b"panic" => panic!("sandbox exploded"),
        _ => Ok(judged(1.0, "Output is correct")),
    });
    let server = TestServer::start(fake, |_| {});
    let (status, body) = post(
        &server.url("execute"),
        &nile_request("panic", "1").to_string(),
    );
    assert_eq!(
        (status, body),
        (
            500,
            json!({"message": "the executor panicked: sandbox exploded"})
        )
    );
    let (status, _) = post(
        &server.url("execute"),
        &nile_request("fine", "1").to_string(),
    );
    assert_eq!(status, 200);
    server.stop().unwrap();
}

#[test]
fn an_internal_executor_error_is_a_500_with_its_message() {
    let fake = Fake::new(|_| Err(RequestError::Internal("cgroup vanished".into())));
    let server = TestServer::start(fake, |_| {});
    let (status, body) = post(&server.url("execute"), &nile_request("x", "1").to_string());
    assert_eq!((status, body), (500, json!({"message": "cgroup vanished"})));
    server.stop().unwrap();
}

/// Starts one request that blocks at `gate`, and returns once the executor has it.
fn start_blocked_request(
    server: &TestServer,
    started: &mpsc::Receiver<()>,
) -> std::thread::JoinHandle<(u16, Value)> {
    let url = server.url("execute");
    let body = nile_request("x", "1").to_string();
    let client = std::thread::spawn(move || post(&url, &body));
    started
        .recv_timeout(Duration::from_secs(30))
        .expect("the executor received the request");
    client
}

fn gated_fake(gate: Arc<Gate>) -> (Arc<Fake>, mpsc::Receiver<()>) {
    let (sender, started) = mpsc::channel();
    let sender = Mutex::new(sender);
    let fake = Fake::new(move |_| {
        sender.lock().unwrap().send(()).unwrap();
        gate.wait();
        Ok(judged(1.0, "Output is correct"))
    });
    (fake, started)
}

#[test]
fn shutdown_stops_accepting_and_finishes_in_flight_requests() {
    let gate = Arc::new(Gate::default());
    let (fake, started) = gated_fake(gate.clone());
    let mut server = TestServer::start(fake, |_| {});
    let addr = server.server.as_ref().unwrap().local_addr();
    let client = start_blocked_request(&server, &started);

    let live = server.server.take().unwrap();
    live.shutdown_handle().shutdown();
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(addr).is_ok() {
        assert!(
            Instant::now() < deadline,
            "the server still accepts connections after shutdown"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    gate.open();
    assert_eq!(
        client.join().unwrap().0,
        200,
        "the in-flight request completes"
    );
    server.runtime.block_on(live.wait()).expect("a clean stop");
}

#[test]
fn shutdown_abandons_requests_that_outlive_the_grace_periods() {
    let gate = Arc::new(Gate::default());
    let (fake, started) = gated_fake(gate.clone());
    let mut server = TestServer::start(fake, |o| o.grace = Duration::from_millis(200));
    let client = start_blocked_request(&server, &started);

    let live = server.server.take().unwrap();
    live.shutdown_handle().shutdown();
    let begun = Instant::now();
    let error = server.runtime.block_on(live.wait()).unwrap_err();
    assert!(error.to_string().contains("abandoned them"), "{error}");
    assert!(
        begun.elapsed() >= Duration::from_millis(400),
        "two grace periods: {:?}",
        begun.elapsed()
    );
    gate.open();
    assert_eq!(
        client.join().unwrap().0,
        200,
        "the abandoned request still gets its answer"
    );
}

#[test]
fn a_request_beyond_the_queue_waits_for_room_instead_of_failing() {
    let gate = Arc::new(Gate::default());
    let (fake, started) = gated_fake(gate.clone());
    let server = TestServer::start(fake.clone(), |o| {
        o.jobs = 1;
        o.max_queue = 0;
        o.queue_wait = Duration::from_secs(120);
    });
    let first = start_blocked_request(&server, &started);
    let url = server.url("execute");
    let body = nile_request("x", "1").to_string();
    let (sender, second) = mpsc::channel();
    let client = std::thread::spawn(move || sender.send(post(&url, &body)).unwrap());
    // The second request finds no room: the server counts it as waiting, and it is neither
    // answered nor executed while the first one holds the only slot.
    let metrics = server.url("execute").replace("/api/v2/execute", "/metrics");
    common::wait_until("the second request queued", Duration::from_secs(60), || {
        queue_depth(&metrics) == 1.0
    });
    assert!(matches!(second.try_recv(), Err(mpsc::TryRecvError::Empty)));
    assert_eq!(fake.jobs().len(), 1);
    gate.open();
    assert_eq!(first.join().unwrap().0, 200);
    let (status, body) = second.recv_timeout(Duration::from_secs(60)).unwrap();
    assert_eq!(
        status, 200,
        "the waiting request ran once room was made: {body}"
    );
    client.join().unwrap();
    assert_eq!(fake.jobs().len(), 2);
    server.stop().unwrap();
}

#[test]
fn a_503_asks_the_client_to_retry_later() {
    let gate = Arc::new(Gate::default());
    let (fake, started) = gated_fake(gate.clone());
    let server = TestServer::start(fake, |o| {
        o.jobs = 1;
        o.max_queue = 0;
        o.queue_wait = Duration::ZERO;
    });
    let first = start_blocked_request(&server, &started);
    let reply = agent()
        .post(&server.url("execute"))
        .send_string(&nile_request("x", "1").to_string());
    let Err(ureq::Error::Status(503, reply)) = reply else {
        panic!("expected 503, got {reply:?}")
    };
    assert_eq!(reply.header("Retry-After"), Some("5"));
    gate.open();
    assert_eq!(first.join().unwrap().0, 200);
    server.stop().unwrap();
}

/// Sends raw HTTP (headers, then `body` unless None) and returns the answer as text (what
/// arrived before the server closed the connection).
fn raw_request(addr: std::net::SocketAddr, headers: &str, body: Option<Vec<u8>>) -> String {
    use std::io::{Read, Write};
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    stream.write_all(headers.as_bytes()).unwrap();
    if let Some(body) = body {
        // The server may answer and close before reading everything: that is the point.
        let _ = stream.write_all(&body);
    }
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    // Read until the answer's JSON is complete; a reset after it is fine.
    while !answer.ends_with(b"}") {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => answer.extend_from_slice(&chunk[..n]),
        }
    }
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn a_body_declared_too_large_is_413_at_once_without_being_read() {
    let fake = Fake::new(|_| unreachable!("too large requests never reach the executor"));
    let server = TestServer::start(fake, |o| o.max_body = 1 << 20);
    let addr = server.server.as_ref().unwrap().local_addr();
    // 2 GB declared, nothing sent: only an answer given before reading can arrive.
    let status = raw_request(
        addr,
        "POST /api/v2/execute HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: 2000000000\r\n\r\n",
        None,
    );
    assert!(status.starts_with("HTTP/1.1 413"), "{status}");
    assert!(
        status.contains("the limit is 1048576 bytes (--max-body)"),
        "{status}"
    );
    server.stop().unwrap();
}

#[test]
fn a_chunked_body_is_read_only_up_to_the_limit() {
    let fake = Fake::new(|_| unreachable!("too large requests never reach the executor"));
    let server = TestServer::start(fake, |o| o.max_body = 1 << 20);
    let addr = server.server.as_ref().unwrap().local_addr();
    let mut body = Vec::new();
    for _ in 0..48 {
        body.extend_from_slice(format!("{:x}\r\n", 64 << 10).as_bytes());
        body.extend(std::iter::repeat_n(b' ', 64 << 10));
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(b"0\r\n\r\n");
    let status = raw_request(
        addr,
        "POST /api/v2/execute HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\n\r\n",
        Some(body),
    );
    assert!(status.starts_with("HTTP/1.1 413"), "{status}");
    server.stop().unwrap();
}

#[test]
fn several_ports_share_one_pool_of_workers() {
    let gate = Arc::new(Gate::default());
    let (fake, started) = gated_fake(gate.clone());
    let server = TestServer::start(fake.clone(), |o| {
        o.addrs = vec!["127.0.0.1:0".parse().unwrap(); 3];
        o.jobs = 1;
        o.max_queue = 0;
        o.queue_wait = Duration::ZERO;
    });
    let addrs = server.server.as_ref().unwrap().local_addrs().to_vec();
    assert_eq!(addrs.len(), 3);
    assert!(addrs[0] != addrs[1] && addrs[1] != addrs[2] && addrs[0] != addrs[2]);
    for addr in &addrs {
        let (status, _) = get(&format!("http://{addr}/api/v2/runtimes"));
        assert_eq!(status, 200, "{addr} answers");
    }
    // The first port's request holds the only slot: the other ports have none either.
    let first = start_blocked_request(&server, &started);
    for addr in &addrs[1..] {
        let (status, body) = post(
            &format!("http://{addr}/api/v2/execute"),
            &nile_request("x", "1").to_string(),
        );
        assert_eq!(status, 503, "{addr}: {body}");
    }
    gate.open();
    assert_eq!(first.join().unwrap().0, 200);
    let (status, _) = post(
        &format!("http://{}/api/v2/execute", addrs[2]),
        &nile_request("x", "1").to_string(),
    );
    assert_eq!(status, 200);
    assert_eq!(fake.jobs().len(), 2);
    server.stop().unwrap();
}

/// Resident memory of this process, in bytes.
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib << 10
}

/// An executor that keeps nothing of the jobs it answers.
struct Forgetful;

impl Executor for Forgetful {
    fn execute(&self, _job: Job) -> Result<Response, RequestError> {
        Ok(judged(1.0, "Output is correct"))
    }
}

#[test]
fn the_server_gives_the_memory_of_large_requests_back() {
    let server = TestServer::start(Arc::new(Forgetful), |o| o.max_body = 80 << 20);
    let url = server.url("execute");
    let before = resident_bytes();
    // Bodies of 64 MB, several at once: the server holds them in many small buffers meanwhile.
    let body = Arc::new(nile_request("x", &"1234567 ".repeat(8 << 20)).to_string());
    let clients: Vec<_> = (0..3)
        .map(|_| {
            let (url, body) = (url.clone(), body.clone());
            std::thread::spawn(move || post(&url, &body).0)
        })
        .collect();
    for client in clients {
        assert_eq!(client.join().unwrap(), 200);
    }
    drop(body);
    // And bodies over the limit sent without a length: read up to the limit, then refused.
    let addr = server.server.as_ref().unwrap().local_addr();
    let mut chunked = Vec::new();
    for _ in 0..(96 << 20) / (1 << 16) {
        chunked.extend_from_slice(format!("{:x}\r\n", 1 << 16).as_bytes());
        chunked.extend(std::iter::repeat_n(b' ', 1 << 16));
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let chunked = Arc::new(chunked);
    let clients: Vec<_> = (0..3)
        .map(|_| {
            let chunked = chunked.clone();
            std::thread::spawn(move || {
                raw_request(
                    addr,
                    "POST /api/v2/execute HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
                    Some(chunked.to_vec()),
                )
            })
        })
        .collect();
    for client in clients {
        let answer = client.join().unwrap();
        assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    }
    drop(chunked);
    let after = resident_bytes();
    eprintln!(
        "resident: {} MiB before, {} MiB after",
        before >> 20,
        after >> 20
    );
    assert!(
        after < before + (48 << 20),
        "{} MiB resident after three 64 MB requests and three refused 96 MB ones (from {} MiB): the memory was kept",
        after >> 20,
        before >> 20
    );
    server.stop().unwrap();
}

/// The `ioi_run_queue_depth` gauge of a server's `/metrics`.
fn queue_depth(metrics_url: &str) -> f64 {
    let text = common::agent()
        .get(metrics_url)
        .call()
        .expect("GET /metrics")
        .into_string()
        .expect("the metrics are text");
    text.lines()
        .find_map(|line| line.strip_prefix("ioi_run_queue_depth "))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or_else(|| panic!("no ioi_run_queue_depth in:\n{text}"))
}

/// Connections that send a request's head and then a body that never completes (chunked and
/// silent, or a `Content-Length` of 100 with one byte sent), more than jobs + queue and more
/// than the body budget would take whole, hold no slot: a whole request is answered 200 while
/// they hang, and each of them gets 408 once its body is late.
#[test]
fn slow_and_dead_clients_never_keep_a_whole_request_from_a_slot() {
    use std::io::{Read, Write};
    let fake = Fake::new(|_| Ok(judged(1.0, "Output is correct")));
    let server = TestServer::start(fake.clone(), |o| {
        o.jobs = 1;
        o.max_queue = 0;
        o.max_body = 1 << 20;
        o.max_buffered = 1 << 20;
        o.queue_wait = Duration::from_secs(120);
        o.read_timeout = Duration::from_secs(3);
    });
    let addr = server.server.as_ref().unwrap().local_addr();
    let heads = [
        "POST /api/v2/execute HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST /api/v2/execute HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{",
    ];
    let slow: Vec<TcpStream> = (0..8)
        .map(|i| {
            let mut conn = TcpStream::connect(addr).unwrap();
            conn.write_all(heads[i % 2].as_bytes()).unwrap();
            conn
        })
        .collect();
    let (status, body) = post(&server.url("execute"), &nile_request("x", "1").to_string());
    assert_eq!(status, 200, "{body}");
    assert_eq!(fake.jobs().len(), 1);
    for mut conn in slow {
        conn.set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut answer = Vec::new();
        let _ = conn.read_to_end(&mut answer);
        let answer = String::from_utf8_lossy(&answer);
        assert!(
            answer.starts_with("HTTP/1.1 408") && answer.contains("--read-timeout"),
            "{answer}"
        );
    }
}
