//! The Piston-compatible server with the real judge against hostile requests: programs that
//! replace the files the server could read back (links to host files, FIFOs), that fill memory
//! or storage without a limit asked for, that flood their output, and sources that include
//! host files to have them quoted in the compile error. Each test replays the attack and
//! checks the answer the caller gets.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use ioi_run::server::JudgeExecutor;
use serde_json::{json, Value};

use crate::common;
use common::{is_root_or_skip, post, TestServer};

/// One executor for every test of this file; its cache lives in Cargo's scratch folder.
fn executor() -> Arc<JudgeExecutor> {
    static EXECUTOR: OnceLock<Arc<JudgeExecutor>> = OnceLock::new();
    EXECUTOR
        .get_or_init(|| {
            common::judge_executor(
                Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve-hostile-cache"),
            )
        })
        .clone()
}

/// A server with `jobs` executions at once.
fn start(jobs: usize) -> TestServer {
    TestServer::start(executor(), |o| {
        o.jobs = jobs;
        o.max_queue = 8;
    })
}

fn execute(server: &TestServer, body: &Value) -> Value {
    let (status, answer) = post(&server.url("execute"), &body.to_string());
    assert_eq!(status, 200, "{answer}");
    answer
}

/// A plain `c++` request: `main.cpp`, then `files` beside it.
fn plain(source: &str, files: &[(&str, &str)], memory: Option<u64>) -> Value {
    let mut list = vec![json!({"name": "main.cpp", "content": source})];
    list.extend(
        files
            .iter()
            .map(|(name, content)| json!({"name": name, "content": content})),
    );
    let mut body = json!({"language": "c++", "version": "*", "files": list, "run_timeout": 30000});
    if let Some(bytes) = memory {
        body["run_memory_limit"] = json!(bytes);
    }
    body
}

/// (stdout, stderr, code, signal) of a run.
fn run_of(answer: &Value) -> (String, String, Option<i64>, Option<String>) {
    let run = &answer["run"];
    (
        run["stdout"].as_str().unwrap_or_default().to_string(),
        run["stderr"].as_str().unwrap_or_default().to_string(),
        run["code"].as_i64(),
        run["signal"].as_str().map(str::to_string),
    )
}

/// Names a program may take for the files the server reads back after its run.
const OUTPUT_NAMES: &str =
    r#"{".stdout", ".stderr", "stdout", "stderr", "output.txt", "data.txt"}"#;

#[test]
fn a_program_replacing_its_output_files_gets_back_only_what_it_wrote_and_blocks_nobody() {
    if !is_root_or_skip("the server with the real judge") {
        return;
    }
    // A root-only host file (as /etc/shadow or the server's /proc/PID/environ would be).
    let secret_dir = tempfile::tempdir().unwrap();
    let secret = secret_dir.path().join("secret.txt");
    std::fs::write(&secret, "host secret: never in a response\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    // One worker: a request left blocked would leave every later request unanswered.
    let server = start(1);

    let links = format!(
        r#"#include <cstdio>
#include <dirent.h>
#include <unistd.h>
#include <string>
int main() {{
    std::string data;
    if (FILE *f = fopen("data.txt", "r")) {{ int c; while ((c = fgetc(f)) != EOF) data += char(c); fclose(f); }}
    for (const char *name : {OUTPUT_NAMES}) {{ unlink(name); symlink("{secret}", name); }}
    if (DIR *dir = opendir(".")) {{
        while (dirent *e = readdir(dir)) {{
            std::string name = e->d_name;
            if (name == "." || name == "..") continue;
            unlink(name.c_str());
            symlink("{secret}", name.c_str());
        }}
        closedir(dir);
    }}
    printf("mine: %s", data.c_str());
    fprintf(stderr, "mine too");
    return 0;
}}
"#,
        secret = secret.display()
    );
    let answer = execute(
        &server,
        &plain(&links, &[("data.txt", "request data\n")], None),
    );
    let (stdout, stderr, code, signal) = run_of(&answer);
    assert_eq!(
        (stdout.as_str(), stderr.as_str(), code, signal),
        ("mine: request data\n", "mine too", Some(0), None),
        "{answer}"
    );

    let fifos = format!(
        r#"#include <cstdio>
#include <initializer_list>
#include <sys/stat.h>
#include <unistd.h>
int main() {{
    for (const char *name : {OUTPUT_NAMES}) {{ unlink(name); mkfifo(name, 0666); }}
    puts("fifos left behind");
    return 0;
}}
"#
    );
    let answer = execute(&server, &plain(&fifos, &[("data.txt", "x")], None));
    assert_eq!(
        run_of(&answer),
        ("fifos left behind\n".into(), String::new(), Some(0), None),
        "{answer}"
    );

    let hello = "#include <cstdio>\nint main() { puts(\"next request\"); }\n";
    let answer = execute(&server, &plain(hello, &[], None));
    assert_eq!(
        run_of(&answer).0,
        "next request\n",
        "the worker serves the next request: {answer}"
    );
}

/// Memory touched a page at a time, with the MiB reached printed every 32 MiB; "survived" at
/// the end.
const HOG: &str = r#"#include <cstdio>
#include <cstdlib>
int main() {
    const long mib = 1 << 20;
    for (long total = 32; total <= 768; total += 32) {
        char *block = (char *)malloc(32 * mib);
        if (!block) { puts("malloc failed"); return 1; }
        for (long i = 0; i < 32 * mib; i += 4096) block[i] = 1;
        printf("%ld\n", total);
        fflush(stdout);
    }
    puts("survived");
}
"#;

/// The last number a program printed on its own line.
fn last_progress(stdout: &str) -> u64 {
    stdout
        .lines()
        .rev()
        .find_map(|l| l.trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_plain_run_without_a_memory_limit_is_bounded_by_the_default() {
    if !is_root_or_skip("the server with the real judge") {
        return;
    }
    let server = start(1);
    let answer = execute(&server, &plain(HOG, &[], None));
    let (stdout, _, code, signal) = run_of(&answer);
    let default_mib = ioi_run::server::DEFAULT_PLAIN_MEMORY >> 20;
    assert!(
        !stdout.contains("survived") && last_progress(&stdout) < default_mib,
        "768 MiB held without run_memory_limit: {answer}"
    );
    assert_eq!(
        (code, signal.as_deref()),
        (None, Some("SIGKILL")),
        "{answer}"
    );
}

#[test]
fn a_plain_run_cannot_store_more_than_its_memory_limit() {
    if !is_root_or_skip("the server with the real judge") {
        return;
    }
    let server = start(1);
    // Files of 16 MiB each (under any per-file limit), up to 256 MiB in all, in the box and in
    // /tmp; the MiB stored so far printed after each.
    let filler = r#"#include <cstdio>
#include <string>
int main() {
    static char chunk[1 << 20];
    long total = 0;
    for (int i = 0; total < 256; i++) {
        std::string name = (i % 2 ? "/tmp/fill" : "fill") + std::to_string(i);
        FILE *f = fopen(name.c_str(), "w");
        if (!f) break;
        for (int m = 0; m < 16; m++)
            if (fwrite(chunk, 1, sizeof chunk, f) != sizeof chunk || fflush(f) != 0) { printf("%ld\n", total); return 0; }
            else total++;
        fclose(f);
        printf("%ld\n", total);
        fflush(stdout);
    }
    puts("stored everything");
}
"#;
    let limit_mib = 64;
    let answer = execute(&server, &plain(filler, &[], Some(limit_mib << 20)));
    let stdout = run_of(&answer).0;
    assert!(
        !stdout.contains("stored everything") && last_progress(&stdout) < limit_mib,
        "stored beyond the memory limit of {limit_mib} MiB: {answer}"
    );
}

/// Non-empty lines of the host's account files, which no answer may quote.
fn host_account_lines() -> Vec<String> {
    ["/etc/passwd", "/etc/group"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .flat_map(|text| {
            text.lines()
                .map(str::trim)
                .filter(|l| l.len() > 4)
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

fn assert_quotes_no_host_file(what: &str, text: &str) {
    for line in host_account_lines() {
        assert!(
            !text.contains(&line),
            "{what} quotes the host's {line:?}:\n{text}"
        );
    }
}

#[test]
fn compile_errors_and_programs_show_no_host_file() {
    if !is_root_or_skip("the server with the real judge") {
        return;
    }
    assert!(
        !host_account_lines().is_empty(),
        "the host has an /etc/passwd to protect"
    );
    let server = start(2);
    let include = "#include \"/etc/passwd\"\n#include \"/etc/group\"\nint main() {}\n";

    let answer = execute(&server, &plain(include, &[], None));
    let stderr = answer["compile"]["stderr"].as_str().unwrap().to_string();
    assert_ne!(answer["compile"]["code"], 0, "{answer}");
    assert_quotes_no_host_file("c++ compile error", &stderr);

    let ioi = json!({
        "language": "cms_ioi", "version": "*",
        "files": [
            {"name": "graders/probe.cpp", "content": include},
            {"name": "input.txt", "content": "1\n"},
            {"name": "correct_output.txt", "content": "1\n"},
        ],
        "run_timeout": 4000, "run_memory_limit": 256 << 20,
    });
    let answer = execute(&server, &ioi);
    let stderr = answer["compile"]["stderr"].as_str().unwrap().to_string();
    assert_ne!(answer["compile"]["code"], 0, "{answer}");
    assert_quotes_no_host_file("cms_ioi compile error", &stderr);

    let codeforces = json!({
        "language": "c++17", "version": "*",
        "files": [
            {"name": "main.cpp", "content": include},
            {"name": "input.txt", "content": "1\n"},
            {"name": "correct_output.txt", "content": "1\n"},
            {"name": "grader_config", "content": "TIME_LIMIT=1\nMEMORY_LIMIT=64\n"},
        ],
        "run_timeout": 11000,
    });
    let answer = execute(&server, &codeforces);
    let stderr = answer["compile"]["stderr"].as_str().unwrap().to_string();
    assert_ne!(answer["compile"]["code"], 0, "{answer}");
    assert_quotes_no_host_file("Codeforces compile error", &stderr);

    // Nor does the program find them at run time to print them.
    let reader = "#include <cstdio>\n#include <initializer_list>\nint main() { for (const char *p : {\"/etc/passwd\", \"/etc/group\"}) \
                  if (FILE *f = fopen(p, \"r\")) { int c; while ((c = fgetc(f)) != EOF) putchar(c); } \
                  puts(\"done\"); }\n";
    let answer = execute(&server, &plain(reader, &[], None));
    assert_eq!(run_of(&answer).0, "done\n", "{answer}");
}

#[test]
fn codeforces_output_is_bounded_by_the_expected_outputs_size() {
    if !is_root_or_skip("the server with the real judge") {
        return;
    }
    let server = start(1);
    // The right answer, then 200 MiB of spaces: accepted whatever its size, such a flood
    // costs the server its own CPU to compare.
    let flood = r#"#include <cstdio>
int main() {
    static char spaces[1 << 20];
    for (char &c : spaces) c = ' ';
    puts("5");
    for (int i = 0; i < 200; i++) fwrite(spaces, 1, sizeof spaces, stdout);
}
"#;
    let body = json!({
        "language": "c++17", "version": "*",
        "files": [
            {"name": "main.cpp", "content": flood},
            {"name": "input.txt", "content": "2 3\n"},
            {"name": "correct_output.txt", "content": "5\n"},
            {"name": "grader_config", "content": "TIME_LIMIT=5\nMEMORY_LIMIT=64\n"},
        ],
        "run_timeout": 15000,
    });
    let answer = execute(&server, &body);
    let (stdout, stderr, code, _) = run_of(&answer);
    assert_eq!(
        (stdout.as_str(), stderr.trim(), code),
        (
            "0\n",
            "Runtime error: output limit exceeded",
            Some(128 + libc::SIGXFSZ as i64)
        ),
        "{answer}"
    );
}

#[test]
fn file_names_are_never_compiler_options() {
    if !is_root_or_skip("the server with the real judge") {
        return;
    }
    let secret_dir = tempfile::tempdir().unwrap();
    let secret = secret_dir.path().join("secret.txt");
    std::fs::write(&secret, "host secret: never in a response\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let server = start(1);
    // `@opts.cpp` names a file of options for g++: a wrapper that runs a shell in the compile box,
    // which links the names the server reads back to the host file.
    let script = format!(
        "for f in .compile-stderr .compile-stdout program; do rm -f $f; ln -s {} $f; done; exit 1",
        secret.display()
    );
    let opts = format!("-wrapper /bin/sh,-c,'{script}'\nx.cpp\n");
    let body = json!({
        "language": "c++", "version": "*", "run_timeout": 3000,
        "files": [
            {"name": "@opts.cpp", "content": "int main() {}\n"},
            {"name": "opts.cpp", "content": opts},
            {"name": "x.cpp", "content": "int main() {}\n"},
        ],
    });
    let (status, answer) = post(&server.url("execute"), &body.to_string());
    assert!(!answer.to_string().contains("host secret"), "{answer}");
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .contains("\"@opts.cpp\""),
        "{answer}"
    );
}
