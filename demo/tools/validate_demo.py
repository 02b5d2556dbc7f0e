#!/usr/bin/env python3
"""Judges demo/submissions.jsonl on demo/problems with the script-mode runner
(graders/compile, graders/run of this repository), unsandboxed, and writes
demo/expected.json (machine-readable) and the tables of demo/EXPECTED.md.

    python3 demo/tools/validate_demo.py [-j JOBS] [--check]

Code: `code` when non-empty, else the text after the last "```cpp\\n" of `generation` up to
the next "```" (no block: no code, every test SKIPPED). Subtasks run in order with early stop
(test batch size 1, docs/judging.md#scores-and-statuses); a test shared by subtasks runs once
per submission.
--check compares with the existing expected.json instead of rewriting it (exit 1 on mismatch).
"""
import concurrent.futures as cf
import json, os, shutil, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
DEMO = os.path.normpath(os.path.join(HERE, ".."))
SCRIPTS = os.path.normpath(os.path.join(DEMO, "..", "graders"))
ORDER = ["CE", "RE", "WA", "MLE", "TLE", "PA", "AC", "SKIPPED"]


def extract(row):
    if row.get("code"):
        return row["code"]
    g = row.get("generation") or ""
    i = g.rfind("```cpp\n")
    if i < 0:
        return None
    body = g[i + len("```cpp\n"):]
    j = body.find("```")
    code = body if j < 0 else body[:j]
    return code or None


def test_status(score, feedback):
    if score == 0:
        for prefix, st in (("Compilation error", "CE"), ("Time limit exceeded", "TLE"),
                           ("Memory limit exceeded", "MLE"), ("Output isn't correct", "WA")):
            if feedback.startswith(prefix):
                return st
        return "RE"
    return "AC" if score == 1 else "PA"


def load_problem(name):
    pdir = os.path.join(DEMO, "problems", name)
    problem = json.load(open(os.path.join(pdir, "problem.json")))
    hs = sorted(f for f in os.listdir(os.path.join(pdir, "graders")) if f.endswith(".h") and f != "testlib.h")
    subtasks = []
    for f in sorted(os.listdir(os.path.join(pdir, "subtasks"))):
        d = json.load(open(os.path.join(pdir, "subtasks", f)))
        subtasks.append((f[:-5], d["score"], d["testcases"]))
    return pdir, problem, hs[0][:-2], subtasks


def judge(row):
    pdir, problem, pid, subtasks = load_problem(row["problem_id"])
    assert pid == row["problem_id"]
    tl = float(problem["time_limit"])
    prec = int(problem["score_precision"])
    code = extract(row)
    results, notes = {}, []
    with tempfile.TemporaryDirectory(prefix=f"demo-{pid}-") as tmp:
        cbox = os.path.join(tmp, "compiled")
        shutil.copytree(os.path.join(pdir, "graders"), os.path.join(cbox, "graders"))
        if os.path.isdir(os.path.join(pdir, "checker")):
            shutil.copytree(os.path.join(pdir, "checker"), os.path.join(cbox, "checker"))
        cfg = {k: problem[k] for k in ("code", "name", "time_limit", "memory_limit", "task_type", "task_type_params")}
        with open(os.path.join(cbox, "graders", "grader_config.json"), "w") as f:
            json.dump(cfg, f)
        for s in ("compile", "run"):
            shutil.copy(os.path.join(SCRIPTS, s), os.path.join(cbox, s))
        if code is None:
            for _, _, tests in subtasks:
                for t in tests:
                    results[t] = (0.0, "SKIPPED", "", 0.0)
        else:
            with open(os.path.join(cbox, "graders", pid + ".cpp"), "w") as f:
                f.write(code)
            c = subprocess.run(["timeout", "120", "bash", "compile"], cwd=cbox, capture_output=True, text=True)
            if c.returncode != 0:
                fb = f"Compilation error exit code {c.returncode}\n{c.stderr}"
                for _, _, tests in subtasks:
                    for t in tests:
                        results[t] = (0.0, "CE", fb, 0.0)

        def run_test(t):
            box = os.path.join(tmp, "box-" + t)
            shutil.copytree(cbox, box, symlinks=True)
            shutil.copy(os.path.join(pdir, "tests", t + ".in"), os.path.join(box, "input.txt"))
            shutil.copy(os.path.join(pdir, "tests", t + ".out"), os.path.join(box, "correct_output.txt"))
            t0 = time.monotonic()
            r = subprocess.run(["timeout", "-k", "2", str(tl + 3), "bash", "run"], cwd=box,
                               capture_output=True, text=True, errors="replace")
            wall = time.monotonic() - t0
            if r.returncode in (124, 137):
                notes.append(f"test {t}: hard timeout hit ({wall:.2f}s)")
                score, fb = 0.0, "Time limit exceeded (hard timeout)"
            else:
                try:
                    score = float(r.stdout.strip().split()[0]) if r.stdout.strip() else 0.0
                except ValueError:
                    score = 0.0
                fb = r.stderr.strip()
            shutil.rmtree(box, ignore_errors=True)
            return (score, test_status(score, fb), fb, wall)

        out, total = [], 0.0
        for st_name, points, tests in subtasks:
            tres, stop = [], False
            for t in tests:
                if stop:
                    tres.append({"test_name": t, "score": 0.0, "status": "SKIPPED", "feedback": ""})
                    continue
                if t not in results:
                    results[t] = run_test(t)
                sc, st, fb, wall = results[t]
                tres.append({"test_name": t, "score": sc, "status": st,
                             "feedback": (fb.splitlines() or [""])[0], "wall": round(wall, 2)})
                if sc == 0:
                    stop = True
            m = round(min(x["score"] for x in tres), prec)
            w = round(m * points, prec)
            total += w
            out.append({"subtask": st_name, "points": points, "score": m, "weighted_score": w,
                        "status": min((x["status"] for x in tres), key=ORDER.index), "test_results": tres})
        target = next((s for s in out if s["subtask"] == row.get("subtask")), None)
        return {
            "uuid": row["uuid"], "problem_id": pid, "target_subtask": row.get("subtask"),
            "has_code": code is not None,
            "code_compiles": code is not None and all(s["status"] != "CE" for s in out),
            "target_subtask_score": target["score"] if target else None,
            "target_subtask_status": target["status"] if target else None,
            "all_subtasks_points": round(total, prec), "subtasks": out, "notes": notes,
        }


def main():
    args = sys.argv[1:]
    jobs = int(args[args.index("-j") + 1]) if "-j" in args else 2
    rows = [json.loads(l) for l in open(os.path.join(DEMO, "submissions.jsonl"))]
    t0 = time.monotonic()
    with cf.ThreadPoolExecutor(max_workers=jobs) as ex:
        res = list(ex.map(judge, rows))
    for r in res:
        print(f"{r['problem_id']:8} {r['uuid'][:8]} total {r['all_subtasks_points']:6g}  "
              + " ".join(f"{s['subtask']}={s['status']}" for s in r["subtasks"])
              + ("  NOTES: " + "; ".join(r["notes"]) if r["notes"] else ""))
        for s in r["subtasks"]:
            for t in s["test_results"]:
                if t["status"] not in ("AC", "SKIPPED"):
                    print(f"         {s['subtask']} {t['test_name']}: {t['status']} {t['score']:g} {t['feedback'][:90]!r} {t.get('wall', 0)}s")
    print(f"{len(rows)} submissions judged in {time.monotonic() - t0:.1f}s")
    path = os.path.join(DEMO, "expected.json")
    if "--check" in args:
        old = {r["uuid"]: r for r in json.load(open(path))["submissions"]}
        bad = 0
        for r in res:
            o = old.get(r["uuid"])
            got = (r["all_subtasks_points"], [s["status"] for s in r["subtasks"]])
            want = (o["all_subtasks_points"], [s["status"] for s in o["subtasks"]]) if o else None
            if got != want:
                bad += 1
                print(f"MISMATCH {r['uuid']}: got {got}, expected {want}")
        print("check:", "OK" if not bad else f"{bad} mismatches")
        sys.exit(1 if bad else 0)
    for r in res:
        for s in r["subtasks"]:
            for t in s["test_results"]:
                t.pop("wall", None)
        r.pop("notes")
    with open(path, "w") as f:  # one compact line per submission
        f.write('{"submissions": [\n' + ",\n".join(json.dumps(r, separators=(",", ":")) for r in res) + "\n]}\n")


if __name__ == "__main__":
    main()
