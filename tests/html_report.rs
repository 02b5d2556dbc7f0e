//! End-to-end: `ioi-run report RESULTS_FOLDER` writes `report.html` next to the markdown
//! reports, with numbers that match the results, every untrusted name escaped, and a page a real
//! browser (headless Chromium) loads without an error and draws.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use serde_json::{json, Value};

fn test(name: &str, status: &str, time: f64, memory: u64) -> Value {
    json!({"test_name": name, "score": if status == "AC" { 1.0 } else { 0.0 }, "status": status,
           "feedback": "", "time": time, "wall_time": time, "memory": memory})
}

fn subtask(name: &str, score: f64, points: i64, status: &str, tests: Vec<Value>) -> Value {
    json!({"problem": "nile", "subtask": name, "score": score,
           "weighted_score": score * points as f64, "points": points, "score_precision": 2,
           "status": status, "test_results": tests})
}

fn row(id: &str, label: &str, subtasks: Vec<Value>) -> Value {
    let total: f64 = subtasks
        .iter()
        .map(|s| s["weighted_score"].as_f64().unwrap())
        .sum();
    json!({"uuid": id, "submission_id": id, "label": label, "problem_id": "nile", "year": 2024,
           "problem_day": "1", "problem_year": 2024, "problem_time_limit": 1.0,
           "problem_memory_limit": 64u64 << 20, "code": "int main(){}", "target_subtask": null,
           "code_compiles": true, "all_subtasks_points": total, "all_subtasks_results": subtasks})
}

const MIB: u64 = 1 << 20;
/// A label that tries to end the page's markup and run a script.
const HOSTILE: &str = "</td><script>alert(1)</script>";

/// Three submissions of one problem: full marks, one that fails the big subtask on time, one
/// that fails it on memory. The first lists the sample test in both subtasks, as a test shared
/// by two subtasks is.
fn results() -> Vec<Value> {
    let samples = |t: f64| vec![test("0-01", "AC", t, 2 * MIB)];
    vec![
        row(
            "full",
            "ok",
            vec![
                subtask("00-samples", 1.0, 0, "AC", samples(0.01)),
                subtask(
                    "01-all",
                    1.0,
                    100,
                    "AC",
                    vec![
                        test("0-01", "AC", 0.01, 2 * MIB),
                        test("1-01", "AC", 0.25, 10 * MIB),
                        test("1-02", "AC", 0.5, 20 * MIB),
                    ],
                ),
            ],
        ),
        row(
            "slow",
            HOSTILE,
            vec![
                subtask("00-samples", 1.0, 0, "AC", samples(0.02)),
                subtask(
                    "01-all",
                    0.0,
                    100,
                    "TLE",
                    vec![
                        test("1-01", "AC", 0.75, 12 * MIB),
                        test("1-02", "TLE", 1.1, 30 * MIB),
                    ],
                ),
            ],
        ),
        row(
            "big",
            "mle",
            vec![
                subtask("00-samples", 1.0, 0, "AC", samples(0.03)),
                subtask(
                    "01-all",
                    0.0,
                    100,
                    "MLE",
                    vec![
                        test("1-01", "MLE", 0.5, 64 * MIB),
                        json!({"test_name": "1-02", "score": 0.0, "status": "SKIPPED",
                               "feedback": null}),
                    ],
                ),
            ],
        ),
    ]
}

/// Writes the results into `dir/model.jsonl` and runs `report dir`: the HTML report's path.
fn report(work: &Path) -> PathBuf {
    let dir = work.join("results");
    std::fs::create_dir_all(&dir).unwrap();
    let text: String = results().iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(dir.join("model.jsonl"), text).unwrap();
    let printed = ok(bin(work).arg("report").arg(&dir).output().unwrap());
    let html = dir.join("reports/model/report.html");
    assert!(printed.contains(&*html.to_string_lossy()), "{printed}");
    html
}

#[test]
fn the_html_report_shows_the_numbers_of_the_results() {
    let work = tempfile::tempdir().unwrap();
    let html = std::fs::read_to_string(report(work.path())).unwrap();
    // Overview: 3 submissions, mean (100 + 0 + 0) / 3, best 100.
    assert!(
        html.contains(
            "<td class=\"num\">3</td><td class=\"num\">3</td><td class=\"num\">33.33</td>\
         <td class=\"num\">100.00</td>"
        ),
        "{html}"
    );
    // Subtask solve rates: samples solved by all three, the big subtask by one.
    assert!(html.contains("<td>00-samples</td><td class=\"num\">0</td><td class=\"num\">3/3</td>"));
    assert!(html.contains(
        "<td>01-all</td><td class=\"num\">100</td><td class=\"num\">1/3</td>\
         <td class=\"num\">0</td><td class=\"num\">33.3%</td>"
    ));
    // Tests: a test two subtasks list counts once per submission; 1-02 ran twice (the skipped
    // run has no time), one TLE, its largest time 1.1 s.
    assert!(
        html.contains(
            "<td>0-01</td><td class=\"num\">3</td><td class=\"num\">0.010 s</td>\
         <td class=\"num\">0.030 s</td>"
        ),
        "{html}"
    );
    assert!(
        html.contains(
            "<td>1-02</td><td class=\"num\">2</td><td class=\"num\">0.500 s</td>\
         <td class=\"num\">1.100 s</td><td class=\"num\">30.0 MiB</td>\
         <td class=\"num\">1</td><td class=\"num\">0</td>"
        ),
        "{html}"
    );
    assert!(html.contains(
        "<td>1-01</td><td class=\"num\">3</td><td class=\"num\">0.250 s</td>\
         <td class=\"num\">0.750 s</td><td class=\"num\">64.0 MiB</td>\
         <td class=\"num\">0</td><td class=\"num\">1</td>"
    ));
    assert!(html.contains("CPU time per test (limit: 1.000 s)"));
    assert!(html.contains("Peak memory per test (limit: 64.0 MiB)"));
    // Score distribution: two submissions at 0, one at 100 (the last bin).
    assert!(html.contains("<td>0.0 – 10.0</td><td class=\"num\">2</td>"));
    assert!(html.contains("<td>90.0 – 100.0</td><td class=\"num\">1</td>"));
    // Four inline charts, nothing fetched from anywhere.
    assert_eq!(html.matches("<svg").count(), 4);
    for outside in ["src=", "http://", "https://", "<script", "<link"] {
        let found = html.replace("http://www.w3.org/2000/svg", "");
        assert!(!found.contains(outside), "the page refers to {outside:?}");
    }
    // The markdown reports link the page.
    let md = work.path().join("results/reports/model");
    let readme = std::fs::read_to_string(md.join("README.md")).unwrap();
    assert!(readme.contains("[report.html](report.html)"), "{readme}");
    let nile = std::fs::read_to_string(md.join("2024_nile.md")).unwrap();
    assert!(nile.contains("(report.html#2024_nile)"), "{nile}");
    assert!(html.contains("<section id=\"2024_nile\">"));
}

#[test]
fn a_hostile_label_or_name_stays_text() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("results");
    std::fs::create_dir_all(&dir).unwrap();
    let mut rows = results();
    rows[1]["all_subtasks_results"][1]["subtask"] = json!(HOSTILE);
    rows[1]["all_subtasks_results"][1]["test_results"][0]["test_name"] = json!(HOSTILE);
    rows[1]["problem_id"] = json!("<img src=x onerror=alert(1)>");
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(dir.join("model.jsonl"), text).unwrap();
    ok(bin(work.path()).arg("report").arg(&dir).output().unwrap());
    let html = std::fs::read_to_string(dir.join("reports/model/report.html")).unwrap();
    assert!(
        !html.contains("<script") && !html.contains("<img"),
        "{html}"
    );
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
}

#[test]
fn a_bad_test_result_is_named_by_file_row_and_field() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("results");
    std::fs::create_dir_all(&dir).unwrap();
    let mut rows = results();
    rows[2]["all_subtasks_results"][1]["test_results"][0]["time"] = json!("fast");
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(dir.join("model.jsonl"), text).unwrap();
    let err = failed(bin(work.path()).arg("report").arg(&dir).output().unwrap());
    assert!(
        err.contains("model.jsonl row 3")
            && err.contains("all_subtasks_results[1]")
            && err.contains("test_results[0]")
            && err.contains("`time`"),
        "{err}"
    );
}

/// Chromium's program name on this machine, if any.
fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|name| {
            Command::new("sh")
                .args(["-c", &format!("command -v {name}")])
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

/// Headless Chromium with its profile, caches and crash reports inside `home`.
fn headless(browser: &str, home: &Path) -> Command {
    let mut cmd = Command::new(browser);
    cmd.env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .args([
            "--headless",
            // Root cannot use Chromium's own sandbox; the page has no script anyway.
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-crash-reporter",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!(
            "--user-data-dir={}",
            home.join("profile").display()
        ));
    cmd
}

#[test]
fn chromium_loads_the_report_without_errors_and_takes_a_screenshot() {
    let Some(browser) = chromium() else {
        skip("Chromium is not installed (Debian: apt-get install chromium; .ci/run installs it)");
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let html = report(work.path());
    let url = format!("file://{}", html.display());
    let home = work.path().join("browser");
    std::fs::create_dir_all(&home).unwrap();

    let out = headless(browser, &home)
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .unwrap();
    let dom = ok_browser(&out);
    assert!(
        dom.contains("<h1>model</h1>") && dom.matches("<svg").count() == 4,
        "{dom}"
    );

    // The screenshot is kept for a person to look at when IOI_RUN_SCREENSHOT names a file.
    let shot = std::env::var_os("IOI_RUN_SCREENSHOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| work.path().join("report.png"));
    let out = headless(browser, &home)
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1000,1400")
        .arg(&url)
        .output()
        .unwrap();
    ok_browser(&out);
    let png = std::fs::read(&shot).expect("Chromium wrote the screenshot");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    // Width and height from the IHDR chunk: the window's size.
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!((width, height), (1000, 1400));
}

/// The stdout of a Chromium run that succeeded and logged no console message, failed load or
/// page error (its log is on stderr).
fn ok_browser(out: &std::process::Output) -> String {
    let log = text(&out.stderr);
    assert!(out.status.success(), "chromium failed: {log}");
    for line in log.lines() {
        let bad = line.contains("CONSOLE")
            || line.contains("Uncaught")
            || line.contains("net::ERR_")
            || line.contains("Failed to load");
        assert!(!bad, "the page logged an error: {line}\n{log}");
    }
    text(&out.stdout)
}
