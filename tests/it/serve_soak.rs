//! A soak of `serve` with the real judge: honest a+b requests among hostile ones (fork and
//! memory bombs, busy loops, floods of output, sleepers, crashes), many in flight on two
//! executions. Every honest answer must be exact; any that is not is printed whole (request,
//! answer, every field), since the fault it hunts (an empty stdout with `run.status` null and
//! compile code 0) was seen once under heavy load. `IOI_SOAK_REQUESTS` (default 96) and
//! `IOI_SOAK_CLIENTS` (default 24) scale it up for a longer hunt.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use serde_json::{json, Value};

use crate::common;
use common::{is_root_or_skip, TestServer};

const HONEST: &str = r#"#include <cstdio>
int main() {
    long long a, b;
    if (scanf("%lld %lld", &a, &b) != 2) return 1;
    printf("%lld\n", a + b);
}
"#;

/// The hostile programs, by what they do.
const HOSTILE: &[(&str, &str)] = &[
    (
        "fork bomb",
        "#include <unistd.h>\nint main() { while (1) fork(); }\n",
    ),
    (
        "memory bomb",
        "#include <cstdlib>\n#include <cstring>\nint main() { while (1) { char *p = \
         (char *)malloc(1 << 20); if (p) memset(p, 1, 1 << 20); } }\n",
    ),
    (
        "busy loop",
        "int main() { volatile unsigned long x = 0; while (1) x++; }\n",
    ),
    (
        "200 MiB of output",
        "#include <cstdio>\nint main() { static char b[1 << 16]; for (int i = 0; i < 3200; i++) \
         fwrite(b, 1, sizeof b, stdout); }\n",
    ),
    (
        "sleeper",
        "#include <unistd.h>\nint main() { sleep(100); }\n",
    ),
    ("crash", "int main() { volatile int *p = 0; return *p; }\n"),
];

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Request `i`: every fourth is hostile, the others a+b with numbers of their own.
fn request(i: usize) -> (Option<String>, Value) {
    let body = |source: &str, stdin: &str| {
        json!({"language": "c++", "version": "*", "stdin": stdin, "run_timeout": 2000,
               "run_memory_limit": 256 << 20,
               "files": [{"name": "main.cpp", "content": source}]})
    };
    if i % 4 == 3 {
        let (_, source) = HOSTILE[(i / 4) % HOSTILE.len()];
        return (None, body(source, ""));
    }
    let (a, b) = (i as i64 * 7919 - 500_000, 1_000_003 - i as i64 * 31);
    (
        Some(format!("{}\n", a + b)),
        body(HONEST, &format!("{a} {b}\n")),
    )
}

#[test]
fn honest_answers_stay_exact_among_hostile_requests() {
    if !is_root_or_skip("judging") {
        return;
    }
    let requests = env_or("IOI_SOAK_REQUESTS", 96);
    let clients = env_or("IOI_SOAK_CLIENTS", 24);
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve-soak-cache");
    let server = TestServer::start(common::judge_executor(cache), |o| {
        o.jobs = 2;
        o.max_queue = 64;
        o.queue_wait = std::time::Duration::from_secs(600);
    });
    let url = server.url("execute");
    let next = AtomicUsize::new(0);
    let wrong = Mutex::new(Vec::new());
    let honest = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..clients {
            scope.spawn(|| {
                let agent = ureq::AgentBuilder::new()
                    .timeout(std::time::Duration::from_secs(900))
                    .build();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= requests {
                        return;
                    }
                    let (expected, body) = request(i);
                    let (status, answer) = common::answer(
                        agent
                            .post(&url)
                            .set("Content-Type", "application/json")
                            .send_string(&body.to_string()),
                    );
                    let Some(expected) = expected else {
                        // A hostile request must be answered, whatever its verdict.
                        if status != 200 {
                            wrong
                                .lock()
                                .unwrap()
                                .push(format!("hostile request {i}: HTTP {status}: {answer:#}"));
                        }
                        continue;
                    };
                    honest.fetch_add(1, Ordering::Relaxed);
                    let run = &answer["run"];
                    let exact = status == 200
                        && run["stdout"] == expected.as_str()
                        && run["code"] == 0
                        && run["signal"].is_null()
                        && answer["compile"]["code"] == 0;
                    if !exact {
                        wrong.lock().unwrap().push(format!(
                            "honest request {i}: expected stdout {expected:?}, HTTP {status}\n\
                             request stdin: {}\nanswer: {answer:#}",
                            body["stdin"]
                        ));
                    }
                }
            });
        }
    });
    let wrong = wrong.into_inner().unwrap();
    eprintln!(
        "soak: {requests} requests, {} honest, {} wrong",
        honest.load(Ordering::Relaxed),
        wrong.len()
    );
    assert!(
        wrong.is_empty(),
        "{} answers were not exact:\n{}",
        wrong.len(),
        wrong.join("\n\n")
    );
}
