//! End-to-end: `ioi-run report RESULTS_FOLDER` writes `report.html` next to the markdown
//! reports, with numbers that match the results, every submission with its tests and code,
//! every untrusted name escaped, and a page a real browser (headless Chromium) loads without an
//! error and draws; `ioi-run report A B` compares result sets on one page.

use crate::common;

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
    let mut rows = three_submissions();
    rows[1]["all_subtasks_results"][1]["test_results"][1]["feedback"] = json!("too slow");
    rows
}

fn three_submissions() -> Vec<Value> {
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
    // Four inline charts: scores, solve rates, time and memory as shares of the limit.
    assert_eq!(html.matches("<svg").count(), 4);
    // Every submission is a row of the grid, best first, its subtasks coloured by status, with
    // its tests against the limits, its message and its code.
    assert_eq!(html.matches("<tbody class=\"s\"").count(), 3);
    let full = html.find(">full</a>").unwrap();
    let slow = html.find(">slow</a>").unwrap();
    assert!(full < slow, "sorted by total");
    assert!(
        html.contains(
            "<td class=\"st st-TLE\" data-v=\"0\" title=\"01-all: 0.0/100 (TLE); most time \
         1.100 s (110.0%); most memory 30.0 MiB (46.9%)\">0.0<small>TLE</small></td>"
        ),
        "{html}"
    );
    assert!(html.contains(
        "<td>01-all</td><td>1-02</td><td class=\"st st-TLE\">TLE</td><td class=\"num\">0.0</td>\
         <td class=\"num\">1.100 s (<span class=\"over\">110.0%</span>)</td>\
         <td class=\"num\">30.0 MiB (46.9%)</td><td>too slow</td>"
    ), "{html}");
    assert_eq!(html.matches("<pre>int main(){}</pre>").count(), 3);
    // Nothing is fetched from anywhere, and only the page's own script may run.
    for outside in ["src=", "http://", "https://", "<link", "<iframe", "<img"] {
        let found = html.replace("http://www.w3.org/2000/svg", "");
        assert!(!found.contains(outside), "the page refers to {outside:?}");
    }
    assert_eq!(html.matches("<script").count(), 1);
    assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none';"));
    // The markdown reports link the page.
    let md = work.path().join("results/reports/model");
    let readme = std::fs::read_to_string(md.join("README.md")).unwrap();
    assert!(readme.contains("[report.html](report.html)"), "{readme}");
    let nile = std::fs::read_to_string(md.join("2024_nile.md")).unwrap();
    assert!(nile.contains("(report.html#2024_nile)"), "{nile}");
    assert!(html.contains("<section id=\"2024_nile\">"));
    // Links lead only to the page's own anchors.
    for href in html.split("href=\"").skip(1) {
        assert!(
            href.starts_with('#'),
            "a link leaves the page: {}",
            &href[..40.min(href.len())]
        );
    }
}

#[test]
fn a_hostile_label_or_name_stays_text() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("results");
    std::fs::create_dir_all(&dir).unwrap();
    let mut rows = results();
    rows[1]["all_subtasks_results"][1]["subtask"] = json!(HOSTILE);
    rows[1]["all_subtasks_results"][1]["test_results"][0]["test_name"] = json!(HOSTILE);
    rows[1]["all_subtasks_results"][1]["test_results"][1]["feedback"] = json!(HOSTILE);
    rows[1]["code"] = json!(format!("{HOSTILE}<a href=\"javascript:alert(1)\">x</a>"));
    rows[1]["problem_id"] = json!("<img src=x onerror=alert(1)>");
    rows[2]["problem_id"] = json!("javascript:alert(1)");
    rows[2]["problem_year"] = json!(0);
    rows[0]["uuid"] = json!("javascript:alert(1)");
    rows[0]["submission_id"] = json!("javascript:alert(1)");
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(dir.join("model.jsonl"), text).unwrap();
    ok(bin(work.path()).arg("report").arg(&dir).output().unwrap());
    let html = std::fs::read_to_string(dir.join("reports/model/report.html")).unwrap();
    // The one script is the page's own, at its end.
    assert_eq!(html.matches("<script").count(), 1, "{html}");
    assert!(html.rfind("<script nonce=").unwrap() > html.rfind("</section>").unwrap());
    assert!(
        !html.contains("<img") && !html.contains("<a href=\"javascript"),
        "{html}"
    );
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    for href in html.split("href=\"").skip(1) {
        let target: String = href.chars().take_while(|c| *c != '"').collect();
        assert!(
            target.starts_with('#')
                && target[1..]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
            "a link made of input: {target}"
        );
    }
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
/// Two runs of one submission: the first fails test b (shared by both subtasks) and stops
/// early, the second passes b and c and fails d. Only b differs, once, with both subtasks: c
/// and d were never judged by the first run.
#[test]
fn the_comparison_lists_a_shared_test_once_and_no_test_skipped_by_an_early_stop() {
    let work = tempfile::tempdir().unwrap();
    let pass = |n: &str| test(n, "AC", 0.1, MIB);
    let first = row(
        "sub",
        "sub",
        vec![
            subtask(
                "01-small",
                0.0,
                40,
                "WA",
                vec![
                    pass("a"),
                    test("b", "WA", 0.1, MIB),
                    test("c", "SKIPPED", 0.0, 0),
                ],
            ),
            subtask(
                "02-big",
                0.0,
                60,
                "WA",
                vec![
                    pass("a"),
                    test("b", "WA", 0.1, MIB),
                    test("c", "SKIPPED", 0.0, 0),
                    test("d", "SKIPPED", 0.0, 0),
                ],
            ),
        ],
    );
    let second = row(
        "sub",
        "sub",
        vec![
            subtask(
                "01-small",
                1.0,
                40,
                "AC",
                vec![pass("a"), pass("b"), pass("c")],
            ),
            subtask(
                "02-big",
                0.0,
                60,
                "WA",
                vec![pass("a"), pass("b"), pass("c"), test("d", "WA", 0.1, MIB)],
            ),
        ],
    );
    let mut files = Vec::new();
    for (name, rows) in [("one", first), ("two", second)] {
        let dir = work.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        files.push(write_set(&dir.join("model.jsonl"), &[rows]));
    }
    let (_, page) = compared(work.path(), &files);
    assert!(page.contains("1 test result(s) differ"), "{page}");
    assert!(
        page.contains("<td>b</td><td>01-small, 02-big</td>"),
        "{page}"
    );
    for never in ["<td>c</td>", "<td>d</td>"] {
        assert!(
            !page.contains(never),
            "{never} listed as a difference: {page}"
        );
    }
    // The problem's change from the first set to the second: `sub` gained 40 points.
    assert!(
        page.contains(
            "<td class=\"num\">+40.00</td><td><b>1</b> <span class=\"muted\">sub</span></td>\
             <td>0</td><td class=\"num\">0</td>"
        ),
        "{page}"
    );
}

/// A submission that differs is shown with its path to the cause: each copy's checker message on
/// the test that differs, the code side by side where it changed (or "the same code"), and a
/// link to its row on each set's own page, which holds that row.
#[test]
fn a_difference_shows_both_messages_the_code_that_changed_and_links_to_both_rows() {
    let work = tempfile::tempdir().unwrap();
    let one_test = |status: &str, feedback: &str| {
        let mut t = test("t1", status, 0.1, MIB);
        t["feedback"] = json!(feedback);
        t
    };
    let solved = |status: &str, feedback: &str, code: &str, id: &str| {
        let score = if status == "AC" { 1.0 } else { 0.0 };
        let mut r = row(
            id,
            id,
            vec![subtask(
                "01-all",
                score,
                100,
                status,
                vec![one_test(status, feedback)],
            )],
        );
        r["code"] = json!(code);
        r
    };
    let old_code = "int main() {\n  int a, b;\n  return a + b;\n}\n";
    let new_code = "int main() {\n  long long a, b;\n  return a + b;\n}\n";
    let sets = [
        (
            "before",
            vec![
                solved(
                    "WA",
                    "Wrong answer: expected 5, found <3>",
                    old_code,
                    "changed",
                ),
                solved("WA", "1st numbers differ", "same();", "judged"),
                solved("AC", "ok", "top();", "best"),
            ],
        ),
        (
            "after",
            vec![
                solved("AC", "Output is correct", new_code, "changed"),
                solved("AC", "Output is correct", "same();", "judged"),
                solved("AC", "ok", "top();", "best"),
            ],
        ),
    ];
    let files: Vec<PathBuf> = sets
        .iter()
        .map(|(name, rows)| write_set(&work.path().join(format!("{name}.jsonl")), rows))
        .collect();
    let (out_dir, page) = compared(work.path(), &files);
    // Both messages, escaped.
    assert!(
        page.contains("<div class=\"msg\">Wrong answer: expected 5, found &lt;3&gt;</div>"),
        "{page}"
    );
    assert!(page.contains("<div class=\"msg\">Output is correct</div>"));
    // The code that changed, line against line; the same code said so.
    assert!(
        page.contains("The code differs between before and after: 1 line(s)"),
        "{page}"
    );
    assert!(page.contains("<td class=\"num\">2</td><td class=\"del\">  int a, b;</td>"));
    assert!(page.contains("<td class=\"num\">2</td><td class=\"ins\">  long long a, b;</td>"));
    assert!(page.contains("The same code in before and after."));
    // The links lead to the rows on each set's page, which carry those anchors.
    for set in ["before", "after"] {
        let own =
            std::fs::read_to_string(out_dir.join(format!("reports/{set}/report.html"))).unwrap();
        for id in ["changed", "judged"] {
            let start = page.find(&format!("<b>{id}</b>")).unwrap();
            let link = format!("href=\"{set}/report.html#");
            let at = start + page[start..].find(&link).expect("a link to the row") + link.len();
            let anchor = &page[at..at + page[at..].find('"').unwrap()];
            let row = own
                .find(&format!("id=\"{anchor}\""))
                .unwrap_or_else(|| panic!("{set}'s page has no row {anchor}"));
            assert!(
                own[row..].find(&format!(">{id}</a>")).unwrap() < 400,
                "{anchor} is the row of {id} in {set}"
            );
        }
    }
    assert!(
        !page.contains("<b>best</b>"),
        "the same verdicts are no difference"
    );
}

/// A set named after a hostile file name and hostile code in a diff stay text: the comparison's
/// links lead only to its own anchors or to a row of a set's page, the name percent-encoded.
#[test]
fn the_comparison_links_only_to_its_anchors_and_the_sets_pages() {
    let work = tempfile::tempdir().unwrap();
    let mut before = row(
        "x",
        "x",
        vec![subtask(
            "01",
            0.0,
            100,
            "WA",
            vec![test("t", "WA", 0.1, MIB)],
        )],
    );
    // A line of a megabyte is shown cut.
    before["code"] = json!(format!("{HOSTILE}\n{}\n", "y".repeat(1 << 20)));
    let mut after = row(
        "x",
        "x",
        vec![subtask(
            "01",
            1.0,
            100,
            "AC",
            vec![test("t", "AC", 0.1, MIB)],
        )],
    );
    after["code"] = json!("<a href=\"javascript:alert(1)\">x</a>\n");
    let names = ["javascript:alert(1)\" onclick=\"x", "..%2f<b>"];
    let files: Vec<PathBuf> = names
        .iter()
        .zip([before, after])
        .map(|(name, r)| write_set(&work.path().join(format!("{name}.jsonl")), &[r]))
        .collect();
    let (_, page) = compared(work.path(), &files);
    assert!(page.contains("The code differs between"), "{page}");
    assert!(
        page.len() < 100_000,
        "a long line is cut: {} bytes",
        page.len()
    );
    assert!(page.contains(&format!("{}…", "y".repeat(200))));
    assert_eq!(
        page.matches("<script").count(),
        1,
        "only the page's own: {page}"
    );
    assert!(!page.contains("<a href=\"javascript") && !page.contains("<b>\""));
    let mut to_rows = 0;
    for href in page.split("href=\"").skip(1) {
        let target: String = href.chars().take_while(|c| *c != '"').collect();
        let plain = |t: &str| {
            t.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '%')
        };
        let fine = match target.split_once("/report.html#") {
            Some((folder, anchor)) => {
                to_rows += 1;
                plain(folder) && plain(anchor) && !anchor.contains('%')
            }
            None => target.starts_with('#') && plain(&target[1..]),
        };
        assert!(fine, "a link made of input: {target}");
    }
    assert_eq!(to_rows, 2, "one link to each set's row");
}

/// Writes `rows` as a results file at `path`.
fn write_set(path: &Path, rows: &[Value]) -> PathBuf {
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(path, text).unwrap();
    path.to_path_buf()
}

/// `report --out <work>/compared FILES...`: the folder and the comparison page.
fn compared(work: &Path, files: &[PathBuf]) -> (PathBuf, String) {
    let out_dir = work.join("compared");
    common::ok(
        bin(work)
            .args(["report", "--out"])
            .arg(&out_dir)
            .args(files)
            .output()
            .unwrap(),
    );
    let page = std::fs::read_to_string(out_dir.join("reports/comparison.html")).unwrap();
    (out_dir, page)
}

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

/// Takes a screenshot of `url` in a window of `width` × `height` and returns its pixels.
fn screenshot(browser: &str, home: &Path, url: &str, name: &str, size: (u32, u32)) -> Image {
    // The screenshot is kept for a person to look at when IOI_RUN_SCREENSHOT names a folder.
    let folder = std::env::var_os("IOI_RUN_SCREENSHOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| home.to_path_buf());
    let shot = folder.join(name);
    let out = headless(browser, home)
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("--window-size={},{}", size.0, size.1))
        .arg(url)
        .output()
        .unwrap();
    ok_browser(&out);
    let image = decode_png(&std::fs::read(&shot).expect("Chromium wrote the screenshot"));
    assert_eq!((image.width, image.height), size);
    image
}

/// How many pixels of the screenshot have this colour. The legend's swatch of a status is
/// 12 × 12 pixels; a cell of the grid in its colour is over a thousand.
fn pixels_of(image: &Image, rgb: [u8; 3]) -> usize {
    image.pixels.iter().filter(|p| **p == rgb).count()
}

#[test]
fn chromium_shows_every_submission_and_the_differences_between_two_runs() {
    let Some(browser) = chromium() else {
        skip("Chromium is not installed (Debian: apt-get install chromium; .ci/run installs it)");
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let html = report(work.path());
    let url = format!("file://{}", html.display());
    let home = work.path().join("browser");
    std::fs::create_dir_all(&home).unwrap();

    // The DOM once the page's script ran: every submission a row of the grid, with its details.
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
    assert_eq!(dom.matches("<tbody class=\"s\"").count(), 3, "{dom}");
    assert!(
        dom.contains("<span class=\"shown\">3</span> of 3 shown"),
        "{dom}"
    );

    // Drawn: the grid's cells in the colours of AC, TLE and MLE.
    let image = screenshot(browser, &home, &url, "report.png", (1100, 2600));
    for (status, rgb) in [
        ("AC", [0x2e, 0x7d, 0x32]),
        ("TLE", [0xef, 0x6c, 0x00]),
        ("MLE", [0x6a, 0x1b, 0x9a]),
    ] {
        let n = pixels_of(&image, rgb);
        assert!(
            n > 1200,
            "no {status} cell on the screenshot ({n} pixels of its colour)"
        );
    }

    // A second run of the same submissions where `slow` passes: the comparison page shows it.
    let second = work.path().join("second");
    std::fs::create_dir_all(&second).unwrap();
    let mut rows = results();
    rows[1]["all_subtasks_results"][1] = subtask(
        "01-all",
        1.0,
        100,
        "AC",
        vec![
            test("1-01", "AC", 0.75, 12 * MIB),
            test("1-02", "AC", 0.9, 30 * MIB),
        ],
    );
    rows[1]["all_subtasks_points"] = json!(100.0);
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(second.join("model.jsonl"), text).unwrap();
    let out_dir = work.path().join("compared");
    let printed = ok(bin(work.path())
        .args(["report", "--out"])
        .arg(&out_dir)
        .arg(work.path().join("results/model.jsonl"))
        .arg(second.join("model.jsonl"))
        .output()
        .unwrap());
    let page = out_dir.join("reports/comparison.html");
    assert!(printed.contains(&*page.to_string_lossy()), "{printed}");
    let url = format!("file://{}", page.display());
    let out = headless(browser, &home)
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .unwrap();
    let dom = ok_browser(&out);
    assert!(
        dom.contains("Verdicts that differ: 1 of 3 submissions in several sets"),
        "{dom}"
    );
    assert!(dom.contains("<b>slow</b>"), "{dom}");
    assert!(dom.contains("1 test result(s) differ"), "{dom}");
    // Side by side: the first run scores 100 with 50 submissions, and so does the second.
    assert!(
        dom.contains("<td><b>results-model</b></td><td class=\"num\">3</td>"),
        "{dom}"
    );
    assert!(
        dom.contains("<td><b>second-model</b></td><td class=\"num\">3</td>"),
        "{dom}"
    );
    // The second run's subtask solve rate: 2 of 3 solve 01-all, against 1 of 3.
    assert!(
        dom.contains(
            "<td>01-all</td><td class=\"num\">33.3% (1/3)</td><td class=\"num\">66.7% (2/3)</td>"
        ),
        "{dom}"
    );
    let image = screenshot(browser, &home, &url, "comparison.png", (1100, 1600));
    // The TLE that differs, as its subtask's status and its test's (the legend's swatch is 144).
    let n = pixels_of(&image, [0xef, 0x6c, 0x00]);
    assert!(
        n > 500,
        "the TLE that differs is not drawn ({n} pixels of its colour)"
    );
}

/// A decoded screenshot: its size and its pixels' colours.
struct Image {
    width: u32,
    height: u32,
    pixels: Vec<[u8; 3]>,
}

/// Decodes the 8-bit RGB or RGBA, non-interlaced PNG Chromium writes (the IDAT chunks inflated,
/// each line's filter undone).
fn decode_png(png: &[u8]) -> Image {
    use std::io::Read;
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let (mut at, mut data) = (8, Vec::new());
    let (mut width, mut height, mut channels) = (0, 0, 0);
    while at + 8 <= png.len() {
        let len = u32::from_be_bytes(png[at..at + 4].try_into().unwrap()) as usize;
        let kind = &png[at + 4..at + 8];
        let body = &png[at + 8..at + 8 + len];
        match kind {
            b"IHDR" => {
                width = u32::from_be_bytes(body[0..4].try_into().unwrap());
                height = u32::from_be_bytes(body[4..8].try_into().unwrap());
                assert_eq!((body[8], body[12]), (8, 0), "8-bit, not interlaced");
                channels = match body[9] {
                    2 => 3,
                    6 => 4,
                    other => panic!("PNG colour type {other}"),
                };
            }
            b"IDAT" => data.extend_from_slice(body),
            _ => {}
        }
        at += 12 + len;
    }
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&data[..])
        .read_to_end(&mut raw)
        .unwrap();
    let stride = width as usize * channels;
    let mut previous = vec![0u8; stride];
    let mut pixels = Vec::with_capacity((width * height) as usize);
    for line in raw.chunks(stride + 1).take(height as usize) {
        let (filter, bytes) = (line[0], &line[1..]);
        let mut current = vec![0u8; stride];
        for i in 0..stride {
            let left = if i >= channels {
                current[i - channels]
            } else {
                0
            };
            let up = previous[i];
            let up_left = if i >= channels {
                previous[i - channels]
            } else {
                0
            };
            let predicted = match filter {
                0 => 0,
                1 => left,
                2 => up,
                3 => ((left as u16 + up as u16) / 2) as u8,
                4 => {
                    let p = left as i16 + up as i16 - up_left as i16;
                    let (pa, pb, pc) = (
                        (p - left as i16).abs(),
                        (p - up as i16).abs(),
                        (p - up_left as i16).abs(),
                    );
                    if pa <= pb && pa <= pc {
                        left
                    } else if pb <= pc {
                        up
                    } else {
                        up_left
                    }
                }
                other => panic!("PNG filter {other}"),
            };
            current[i] = bytes[i].wrapping_add(predicted);
        }
        pixels.extend(current.chunks(channels).map(|p| [p[0], p[1], p[2]]));
        previous = current;
    }
    Image {
        width,
        height,
        pixels,
    }
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
