#!/usr/bin/env python3
"""Writes ../EXPECTED.md from ../expected.json (made by validate_demo.py) and the submission
descriptions of make_submissions.py."""
import json, os, uuid

import make_submissions as ms

HERE = os.path.dirname(os.path.abspath(__file__))
DEMO = os.path.normpath(os.path.join(HERE, ".."))
NS = uuid.UUID("6d1c5f1e-2025-4a10-9e00-000000000000")

WHAT = {
    ("orchard", "ac"): "correct, O(N) prefix scan (2 cpp blocks: brute force, then final)",
    ("orchard", "overflow"): "prefix sums in `int`: overflows on 10^9 values",
    ("orchard", "firstcross"): "stops at the first cut with left >= right (misses the cut before)",
    ("orchard", "offbyone"): "right D, cut returned 0-based (k-1): checker gives 0.5; `code` field filled",
    ("orchard", "bsearch_tle"): "binary search with `lo = mid`: infinite loop",
    ("orchard", "mle"): "1.15 GB table, filled",
    ("orchard", "ce"): "missing `;`",
    ("orchard", "nocode"): "reasoning cut off, no code block",
    ("orchard", "re"): "`pre[k] / k` with k = 0: SIGFPE",
    ("skyline", "ac"): "correct, monotonic stack",
    ("skyline", "strict_pop"): "pops only strictly lower buildings: wrong with equal heights (2 cpp blocks)",
    ("skyline", "one_based"): "returns 1-based indices",
    ("skyline", "noadvance_tle"): "forgets `i--`: infinite loop",
    ("skyline", "mle"): "1 GiB bucket table, filled",
    ("skyline", "ce"): "`vector` without `std::` (and no `using namespace std`); `code` field filled",
    ("skyline", "nocode"): "only a ```python block",
    ("skyline", "at_re"): "`H.at(n)` throws std::out_of_range: SIGABRT",
    ("scales", "ac"): "correct, ternary split, ceil(log3 N) weighings",
    ("scales", "binary"): "halving, ceil(log2 N) weighings (2 cpp blocks: buggy draft, then final)",
    ("scales", "linear"): "coin 0 against every other coin (N-1 weighings); `code` field filled",
    ("scales", "sign_wa"): "ternary split with the pan result read backwards",
    ("scales", "count_tle"): "`for (k = N; k >= 1; k = (k+2)/3)` never ends (CPU loop before any weighing)",
    ("scales", "mle"): "1 GiB dp table, filled",
    ("scales", "ce"): "calls `weight` instead of `weigh`",
    ("scales", "nocode"): "code in a ``` block without language tag",
    ("scales", "segv"): "writes into an empty global vector: SIGSEGV",
}


def main():
    exp = {r["uuid"]: r for r in json.load(open(os.path.join(DEMO, "expected.json")))["submissions"]}
    rows = [json.loads(l) for l in open(os.path.join(DEMO, "submissions.jsonl"))]
    label = {str(uuid.uuid5(NS, f"{p}/{k}")): (p, k) for p, k, *_ in ms.S}
    problems = []
    for r in rows:
        if r["problem_id"] not in problems:
            problems.append(r["problem_id"])
    L = []
    L.append("# Demo: expected results\n")
    L.append("Derived by running every submission of `submissions.jsonl` on every test of `problems/` "
             "with the script-mode runner (`graders/compile`, `graders/run`), unsandboxed, with g++ 12 "
             "(`demo/tools/validate_demo.py`; `--check` re-runs and compares with `expected.json`). "
             "The same verdicts are what the native sandbox must give: the MLE, TLE and RE programs "
             "were also checked on test 01 with `ioi-run sandbox --time 1 --memory 256M`.\n")
    L.append("Assumed options: the defaults: code = `code` when non-empty, else the text after the "
             "last \"```cpp\\n\" of `generation` up to the next \"```\" (no such block: no code, every "
             "test SKIPPED, score 0, `code_compiles` false); no `--add-includes`; test batch size 1, "
             "so a subtask stops at its first test scoring 0 and its remaining tests are SKIPPED "
             "(a test shared by several subtasks runs once).\n")
    L.append("`expected.json` holds the same data per test (status, score, first line of the feedback).\n")

    L.append("## Problems\n")
    L.append("| id | name | day | task type | grader / checker | subtasks (points) | tests |")
    L.append("|---|---|---|---|---|---|---|")
    for p in problems:
        pj = json.load(open(os.path.join(DEMO, "problems", p, "problem.json")))
        subs = sorted(os.listdir(os.path.join(DEMO, "problems", p, "subtasks")))
        pts = ", ".join(f"{s[:-5]} ({json.load(open(os.path.join(DEMO, 'problems', p, 'subtasks', s)))['score']})" for s in subs)
        ntests = len([f for f in os.listdir(os.path.join(DEMO, "problems", p, "tests")) if f.endswith(".in")])
        g = sorted(os.listdir(os.path.join(DEMO, "problems", p, "graders")))
        if os.path.isdir(os.path.join(DEMO, "problems", p, "checker")):
            g.append("checker/checker.cpp (0 / 0.5 / 1)")
        elif pj["task_type"] == "Batch":
            g.append("white-diff")
        tt = pj["task_type"] + (" (1 process, std_io)" if pj["task_type"] == "Communication" else "")
        L.append(f"| `{p}` | {pj['name']} | {pj['day']} | {tt} | {', '.join(g)} | {pts} | {ntests} |")
    L.append("")

    for p in problems:
        subs = [r for r in rows if r["problem_id"] == p]
        names = [s["subtask"] for s in exp[subs[0]["uuid"]]["subtasks"]]
        L.append(f"## `{p}`\n")
        L.append("| uuid | submission | target | total | " + " | ".join(names) + " | first failure |")
        L.append("|---|---|---|---|" + "---|" * len(names) + "---|")
        best = {n: 0.0 for n in names}
        compiles, top = 0, 0.0
        for r in sorted(subs, key=lambda r: -exp[r["uuid"]]["all_subtasks_points"]):
            e = exp[r["uuid"]]
            _, key = label[r["uuid"]]
            cells = []
            fail = ""
            for s in e["subtasks"]:
                cells.append(f"{s['weighted_score']:g}/{s['points']} ({s['status']})")
                best[s["subtask"]] = max(best[s["subtask"]], s["weighted_score"])
                for t in s["test_results"]:
                    if not fail and t["status"] not in ("AC", "SKIPPED"):
                        fail = f"{s['subtask']} test {t['test_name']}: {t['status']} `{t['feedback']}`"
            if not e["has_code"]:
                fail = "no code"
            compiles += e["code_compiles"]
            top = max(top, e["all_subtasks_points"])
            L.append(f"| `{r['uuid']}` | {key}: {WHAT[(p, key)]} | {r['subtask']} ({e['target_subtask_status']}) "
                     f"| **{e['all_subtasks_points']:g}** | " + " | ".join(cells) + f" | {fail} |")
        L.append("")
        L.append(f"Report figures: {len(subs)} submissions, {compiles} compile (`code_compiles`), best "
                 f"single submission {top:g}/100, score with no submission limit "
                 f"{sum(best.values()):g}/100 (per subtask max: "
                 + ", ".join(f"{n} {v:g}" for n, v in best.items())
                 + f"); with the 50-submission limit the same (fewer than 50 submissions).\n")
    L.append("## Totals\n")
    L.append("Year 2025, non-practice problems (`orchard`, `scales`; `skyline` is `practice`): "
             "200/600 with no submission limit (100 + 100), best single submissions 100 + 100.\n")
    L.append("## Notes\n")
    L.append("* `target_subtask_score` / `target_subtask_status` are the unweighted score and status of the "
             "subtask named in the `target` column (shown in parentheses).")
    L.append("* Script mode sees MLE as `std::bad_alloc` under `ulimit -v`; the native runner sees a cgroup "
             "OOM kill. Both give `Memory limit exceeded` (the tables are filled, so the memory is really used).")
    L.append("* TLE programs burn CPU in a loop: `Time limit exceeded` in both runners (the script runner "
             "needs about 2-3 s wall per such test, the native one about 1 s).")
    L.append("* `orchard` overflow: wrapping `int` arithmetic happens to give the right D on tests 08-10; only "
             "test 11 (25 x 10^9) fails, which is enough for WA on 03-full.")
    L.append("* `scales` linear: 20 points only; test 06 (N = 4, limit 2 weighings) is in 02-medium and 03-full.")
    L.append("* `scales` binary: PA (0.5) on 03-full tests 10 and 12; a PA does not stop the subtask, so all 03-full tests run.")
    with open(os.path.join(DEMO, "EXPECTED.md"), "w") as f:
        f.write("\n".join(L) + "\n")


if __name__ == "__main__":
    main()
