//! SandboxFusion's `POST /run_code` over real HTTP: with a fake executor, the shapes, the
//! refusals and the admission it shares with the Piston routes; with the real judge, the
//! guarantees of the Piston routes (compile cache shared with them, bounded memory and
//! output, fetched files never followed out of the box).

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ioi_run::server::sandbox_fusion::{CommandRunResult, CommandRunStatus, RunCodeLanguage};
use ioi_run::server::{
    Executor, Job, JudgeExecutor, RequestError, Response, RunCodeJob, RunCodeReply, Stage,
};
use serde_json::{json, Value};

use crate::common;
use common::{agent, get, is_root_or_skip, post, Gate, TestServer};

/// A fake executor: records `/run_code` jobs, answers them with exit code 0 after `gate`
/// opens; Piston jobs wait at the same gate.
struct Fake {
    jobs: Mutex<Vec<RunCodeJob>>,
    gate: Arc<Gate>,
    started: Mutex<mpsc::Sender<()>>,
}

impl Executor for Fake {
    fn execute(&self, _job: Job) -> Result<Response, RequestError> {
        self.started.lock().unwrap().send(()).unwrap();
        self.gate.wait();
        Ok(Response {
            compile: None,
            run: Some(Stage::new("1".into(), String::new(), Some(0), None)),
        })
    }

    fn run_code(&self, job: RunCodeJob) -> Result<RunCodeReply, RequestError> {
        self.jobs.lock().unwrap().push(job);
        self.started.lock().unwrap().send(()).unwrap();
        self.gate.wait();
        let run = CommandRunResult {
            status: CommandRunStatus::Finished,
            execution_time: Some(0.0),
            return_code: Some(0),
            stdout: Some("ok\n".into()),
            stderr: Some(String::new()),
        };
        Ok(RunCodeReply::of(
            None,
            Some(run),
            String::new(),
            Default::default(),
        ))
    }
}

fn fake() -> (Arc<Fake>, Arc<Gate>, mpsc::Receiver<()>) {
    let gate = Arc::new(Gate::default());
    let (sender, started) = mpsc::channel();
    let fake = Arc::new(Fake {
        jobs: Mutex::new(Vec::new()),
        gate: gate.clone(),
        started: Mutex::new(sender),
    });
    (fake, gate, started)
}

fn run_code_url(server: &TestServer) -> String {
    server.base.replace("/api/v2", "/run_code")
}

/// What verl's `call_sandbox_api` sends.
fn verl_body(language: &str, code: &str, stdin: &str) -> Value {
    json!({"compile_timeout": 10, "run_timeout": 10, "code": code, "stdin": stdin,
           "memory_limit_MB": 1024, "language": language, "files": {}, "fetch_files": []})
}

#[test]
fn a_verl_request_reaches_the_executor_and_gets_sandbox_fusions_answer() {
    let (fake, gate, _started) = fake();
    gate.open();
    let server = TestServer::start(fake.clone(), |_| {});
    let (status, body) = post(
        &run_code_url(&server),
        &verl_body("python", "print(input())", "hi\n").to_string(),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "Success", "{body}");
    assert_eq!(body["run_result"]["stdout"], "ok\n");
    assert_eq!(body["compile_result"], Value::Null);
    assert_eq!(body["executor_pod_name"], Value::Null);
    assert_eq!(body["files"], json!({}));
    let jobs = fake.jobs.lock().unwrap().clone();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].language, RunCodeLanguage::Python);
    assert_eq!(jobs[0].stdin, b"hi\n");
    assert_eq!(jobs[0].memory_limit, 1024 << 20);
    server.stop().unwrap();
}

#[test]
fn other_languages_are_a_sandbox_error_naming_the_served_ones_without_executing() {
    let (fake, gate, _started) = fake();
    gate.open();
    let server = TestServer::start(fake.clone(), |_| {});
    let (status, body) = post(
        &run_code_url(&server),
        &verl_body("java", "class A {}", "").to_string(),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "SandboxError", "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(message.contains("cpp and python"), "{message}");
    assert!(fake.jobs.lock().unwrap().is_empty());
    server.stop().unwrap();
}

#[test]
fn client_mistakes_are_4xx_naming_the_field() {
    let (fake, gate, _started) = fake();
    gate.open();
    let server = TestServer::start(fake.clone(), |_| {});
    let url = run_code_url(&server);
    let mut misspelt = verl_body("cpp", "int main(){}", "");
    misspelt["memory_limit_mb"] = json!(256);
    let (status, body) = post(&url, &misspelt.to_string());
    assert_eq!(status, 400, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("\"memory_limit_mb\""),
        "{body}"
    );
    let mut too_long = verl_body("cpp", "int main(){}", "");
    too_long["run_timeout"] = json!(1000);
    let (status, body) = post(&url, &too_long.to_string());
    assert_eq!(status, 400, "{body}");
    assert!(
        body["message"].as_str().unwrap().starts_with("run_timeout"),
        "{body}"
    );
    let (status, _) = get(&url);
    assert_eq!(status, 405);
    assert!(fake.jobs.lock().unwrap().is_empty());
    server.stop().unwrap();
}

#[test]
fn both_apis_share_the_slots_and_a_full_server_answers_503_with_retry_after() {
    let (fake, gate, started) = fake();
    let server = TestServer::start(fake.clone(), |o| {
        o.jobs = 1;
        o.max_queue = 0;
        o.queue_wait = Duration::ZERO;
    });
    // A Piston request takes the only slot...
    let piston = {
        let url = server.url("execute");
        let body = json!({"language": "c++", "version": "*",
                          "files": [{"name": "main.cpp", "content": "int main(){}"}]});
        std::thread::spawn(move || post(&url, &body.to_string()))
    };
    started
        .recv_timeout(Duration::from_secs(30))
        .expect("the executor received the Piston request");
    // ...so a /run_code request finds no room.
    let reply = agent()
        .post(&run_code_url(&server))
        .send_string(&verl_body("cpp", "int main(){}", "").to_string());
    let Err(ureq::Error::Status(503, reply)) = reply else {
        panic!("expected 503, got {reply:?}")
    };
    assert_eq!(reply.header("Retry-After"), Some("5"));
    gate.open();
    assert_eq!(piston.join().unwrap().0, 200);
    let (status, body) = post(
        &run_code_url(&server),
        &verl_body("cpp", "int main(){}", "").to_string(),
    );
    assert_eq!((status, body["status"].as_str()), (200, Some("Success")));
    server.stop().unwrap();
}

/// The real judge with a fresh compile cache.
fn real_server() -> Option<(TestServer, Arc<JudgeExecutor>, tempfile::TempDir)> {
    if !is_root_or_skip("running programs through the server") {
        return None;
    }
    let cache = tempfile::tempdir().unwrap();
    let executor = common::judge_executor(cache.path().to_path_buf());
    let server = TestServer::start(executor.clone(), |o| o.max_queue = 32);
    Some((server, executor, cache))
}

fn run(server: &TestServer, body: Value) -> Value {
    let (status, answer) = post(&run_code_url(server), &body.to_string());
    assert_eq!(status, 200, "{answer}");
    answer
}

#[test]
fn a_program_compiles_once_for_both_apis() {
    let Some((server, executor, _cache)) = real_server() else {
        return;
    };
    let code = "#include <cstdio>\nint main(){int a;scanf(\"%d\",&a);printf(\"%d\\n\",2*a);}";
    for stdin in ["1\n", "2\n", "3\n"] {
        let answer = run(&server, verl_body("cpp", code, stdin));
        assert_eq!(answer["status"], "Success", "{answer}");
        let expected = format!("{}\n", 2 * stdin.trim().parse::<i32>().unwrap());
        assert_eq!(answer["run_result"]["stdout"], expected.as_str());
    }
    let piston = json!({"language": "c++", "version": "*", "stdin": "21\n",
                        "files": [{"name": "main.cpp", "content": code}]});
    let (status, answer) = post(&server.url("execute"), &piston.to_string());
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["run"]["stdout"], "42\n");
    assert_eq!(
        executor.judge().cache().builds(),
        1,
        "three /run_code test cases and a Piston request of the same program: one compile"
    );
    server.stop().unwrap();
}

#[test]
fn memory_is_bounded_by_default_and_output_is_cut() {
    let Some((server, _executor, _cache)) = real_server() else {
        return;
    };
    // SandboxFusion's -1 (no limit) is the server's default bound here.
    let mut hog = verl_body("python", "x = bytearray(1 << 30)\nprint(len(x))", "");
    hog["memory_limit_MB"] = json!(-1);
    let answer = run(&server, hog);
    assert_eq!(answer["status"], "Failed", "{answer}");
    assert_eq!(answer["run_result"]["return_code"], -9, "{answer}");
    assert!(
        answer["message"].as_str().unwrap().contains("512 MB"),
        "{answer}"
    );
    // 100 MB of output: the program is stopped at the output limit, the answer keeps 1 MiB.
    let flood = "import sys\nline = 'x' * 1023 + '\\n'\nfor _ in range(100 * 1024):\n    sys.stdout.write(line)";
    let answer = run(&server, verl_body("python", flood, ""));
    assert_eq!(answer["status"], "Failed", "{answer:.200}");
    let stdout = answer["run_result"]["stdout"].as_str().unwrap();
    assert!(stdout.len() <= 1 << 20, "{} bytes", stdout.len());
    assert_ne!(answer["run_result"]["return_code"], 0);
    server.stop().unwrap();
}

#[test]
fn sent_files_are_in_the_working_directory_and_fetched_files_stay_in_the_box() {
    let Some((server, _executor, _cache)) = real_server() else {
        return;
    };
    let code = "import os\n\
                data = open('data/in.txt').read()\n\
                open('out.txt', 'w').write(data.upper())\n\
                os.symlink('/etc/hostname', 'leak.txt')\n\
                os.mkfifo('pipe')\n";
    let body = json!({"code": code, "language": "python", "run_timeout": 5,
                      "files": {"data/in.txt": "aGVsbG8="},
                      "fetch_files": ["out.txt", "leak.txt", "pipe", "missing.txt"]});
    let answer = run(&server, body);
    assert_eq!(answer["status"], "Success", "{answer}");
    assert_eq!(answer["files"], json!({"out.txt": "SEVMTE8="}), "{answer}");
    // Without fetch_files the sent files are read-only in a private box.
    let write = json!({"code": "open('in.txt', 'w').write('x')", "language": "python",
                       "files": {"in.txt": "aGVsbG8="}});
    let answer = run(&server, write);
    assert_eq!(answer["status"], "Failed", "{answer}");
    assert!(
        answer["run_result"]["stderr"]
            .as_str()
            .unwrap()
            .contains("Read-only file system"),
        "{answer}"
    );
    server.stop().unwrap();
}

#[test]
fn what_a_program_leaves_for_fetch_files_is_bounded_by_its_memory_and_removed_however_deep() {
    let Some((server, _executor, _cache)) = real_server() else {
        return;
    };
    let fetching = |code: &str, memory_mb: u64| {
        json!({"code": code, "language": "cpp", "run_timeout": 20, "stdin": "",
               "memory_limit_MB": memory_mb, "fetch_files": ["out.txt"]})
    };
    // 20 000 folders, one in the other: a removal that descends one call a level overflows
    // the 2 MiB stack of the server's thread at 16 000, which takes the whole server down.
    let deep = "#include <cstdio>\n#include <sys/stat.h>\n#include <unistd.h>\n\
                int main(){int i=0;for(;i<20000;i++){if(mkdir(\"d\",0755)||chdir(\"d\"))break;}\
                printf(\"%d\\n\",i);}";
    let answer = run(&server, fetching(deep, 256));
    assert_eq!(answer["status"], "Success", "{answer:.300}");
    assert_eq!(answer["run_result"]["stdout"], "20000\n", "{answer:.300}");
    let answer = run(&server, verl_body("cpp", "int main(){}", ""));
    assert_eq!(
        answer["status"], "Success",
        "the server answers after: {answer:.300}"
    );
    let own = format!("ioi-box-{}-", std::process::id());
    for home in [std::env::temp_dir(), "/dev/shm".into()] {
        let left: Vec<_> = std::fs::read_dir(&home)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&own))
            .map(|e| e.path())
            .collect();
        assert!(left.is_empty(), "box folders left: {left:?}");
    }
    // 8 files of 16 MB in the box, with a memory limit of 64 MB: they count as its memory, so
    // the program is stopped at its limit instead of filling the host's disk.
    let fill = "#include <cstdio>\n#include <vector>\n\
                int main(){std::vector<char> b(1<<20,'x');for(int f=0;f<8;f++){char n[16];\
                snprintf(n,16,\"f%d\",f);FILE*o=fopen(n,\"w\");if(!o)return 1;\
                for(int i=0;i<16;i++)fwrite(b.data(),1,b.size(),o);fclose(o);}puts(\"wrote\");}";
    let answer = run(&server, fetching(fill, 64));
    assert_eq!(answer["status"], "Failed", "{answer:.300}");
    assert!(
        answer["message"].as_str().unwrap_or("").contains("64 MB"),
        "{answer:.300}"
    );
    assert_ne!(answer["run_result"]["stdout"], "wrote\n", "{answer:.300}");
    server.stop().unwrap();
}
