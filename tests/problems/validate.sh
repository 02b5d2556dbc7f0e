#!/usr/bin/env bash
# Validates the fixture problems against the script-mode runner (graders/compile, graders/run).
#
#   tests/problems/validate.sh [-j JOBS] [-v] [--sandbox-only] [PROBLEM...]
#
# For each problem and each solution listed in its expected.json:
#   * builds a box exactly as the seed's "Evaluating without piston" contract says:
#     graders/<id>.cpp, every grader file at its relative path, graders/grader_config.json,
#     `compile` and `run`; runs `bash compile` once per solution (docs/judging.md#compile);
#   * per test, copies the compiled box, adds input.txt and correct_output.txt and runs
#     `bash run` under a hard `timeout` of time_limit + 3 s;
#   * derives the test status from score + feedback as docs/judging.md#scores-and-statuses
#     says, runs subtasks in order with early stop (batch size 1; a test shared by subtasks runs once), aggregates
#     (min score rounded to score_precision, worst status) and compares with expected.json.
# grader_config.json is written in a different one of the accepted forms
# (docs/data.md#problems) per problem, to exercise the run script's parser.
# Solutions marked "sandbox_only" (cheating attempts) are run and shown but never fail the
# validation: unsandboxed, their verdict depends on the host. Pass --sandbox-only to make them
# count (e.g. when the scripts run inside a real sandbox).
# Needs bash, python3, g++ and coreutils `timeout`. Exit status 0 iff everything matched.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
exec python3 - "$HERE" "$REPO/graders" "$@" <<'PY'
import concurrent.futures as cf
import json, os, shutil, subprocess, sys, tempfile, time

here, scripts = sys.argv[1], sys.argv[2]
args = sys.argv[3:]
jobs, strict_sandbox, verbose, only = 2, False, False, []
while args:
    a = args.pop(0)
    if a == "-j":
        jobs = int(args.pop(0))
    elif a == "--sandbox-only":
        strict_sandbox = True
    elif a == "-v":
        verbose = True
    else:
        only.append(a)

ORDER = ["CE", "RE", "WA", "MLE", "TLE", "PA", "AC", "SKIPPED"]


def test_status(score, feedback):
    """docs/judging.md#scores-and-statuses, as the Python pipeline does."""
    if score == 0:
        for prefix, st in (("Compilation error", "CE"), ("Time limit exceeded", "TLE"),
                           ("Memory limit exceeded", "MLE"), ("Output isn't correct", "WA")):
            if feedback.startswith(prefix):
                return st
        return "RE"
    return "AC" if score == 1 else "PA"


def grader_config(name, problem, form):
    """The problem.json fields in one of the three accepted shapes."""
    cfg = {k: problem[k] for k in ("code", "name", "time_limit", "memory_limit", "task_type") if k in problem}
    cfg.setdefault("code", name)
    params = json.loads(problem.get("task_type_params") or "{}")
    if form == 0:            # task_type_params as a JSON-encoded string (as in problem.json)
        cfg["task_type_params"] = json.dumps(params)
    elif form == 1:          # flat keys
        cfg["task_type_params"] = "{}"
        for k, v in params.items():
            cfg[k] = v
    else:                    # task_type_params as an object, short keys
        cfg["task_type_params"] = {k.replace("task_type_parameters_Communication_", ""): v
                                   for k, v in params.items()}
    return json.dumps(cfg, indent=2)


def problem_id(pdir):
    hs = sorted(f for f in os.listdir(os.path.join(pdir, "graders")) if f.endswith(".h") and f != "testlib.h")
    return hs[0][:-2]


def judge(pdir, form, sol):
    name = os.path.basename(pdir)
    problem = json.load(open(os.path.join(pdir, "problem.json")))
    pid = problem_id(pdir)
    tl = float(problem["time_limit"])
    prec = int(problem.get("score_precision", 2))
    subtasks = []
    for f in sorted(os.listdir(os.path.join(pdir, "subtasks"))):
        if f.endswith(".json"):
            d = json.load(open(os.path.join(pdir, "subtasks", f)))
            subtasks.append((f[:-5], d["score"], d["testcases"]))
    notes = []
    with tempfile.TemporaryDirectory(prefix=f"val-{name}-") as tmp:
        cbox = os.path.join(tmp, "compiled")
        shutil.copytree(os.path.join(pdir, "graders"), os.path.join(cbox, "graders"))
        if os.path.isdir(os.path.join(pdir, "checker")):
            shutil.copytree(os.path.join(pdir, "checker"), os.path.join(cbox, "checker"))
        with open(os.path.join(cbox, "graders", "grader_config.json"), "w") as f:
            f.write(grader_config(name, problem, form))
        shutil.copy(os.path.join(pdir, "solutions", sol), os.path.join(cbox, "graders", pid + ".cpp"))
        for s in ("compile", "run"):
            shutil.copy(os.path.join(scripts, s), os.path.join(cbox, s))
        c = subprocess.run(["timeout", "120", "bash", "compile"], cwd=cbox, capture_output=True, text=True)
        results = {}
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
            if r.returncode == 137 or r.returncode == 124:
                notes.append(f"test {t}: hard timeout hit ({wall:.2f}s)")
                score, fb = 0.0, "Time limit exceeded (hard timeout)"
            else:
                try:
                    score = float(r.stdout.strip().split()[0]) if r.stdout.strip() else 0.0
                except ValueError:
                    score = 0.0
                fb = r.stderr.strip()
            left = sorted(f for f in os.listdir(box) if f.startswith((".judge", ".io", ".run")))
            if left or not os.path.exists(os.path.join(box, "correct_output.txt")):
                notes.append(f"test {t}: box not restored: leftovers={left}")
            shutil.rmtree(box, ignore_errors=True)
            return (score, test_status(score, fb), fb, wall)

        out, total = {}, 0.0
        for st_name, points, tests in subtasks:
            scores, statuses = [], []
            stop = False
            for t in tests:
                if stop:
                    statuses.append("SKIPPED")
                    continue
                if t not in results:
                    results[t] = run_test(t)
                sc, st, _, _ = results[t]
                scores.append(sc)
                statuses.append(st)
                if sc == 0:
                    stop = True
            m = round(min(scores), prec) if scores else 0.0
            total += round(m * points, prec)
            out[st_name] = min(statuses, key=ORDER.index)
        return round(total, prec), out, results, notes


problems = sorted(d for d in os.listdir(here)
                  if os.path.isfile(os.path.join(here, d, "problem.json")) and (not only or d in only))
work = []
for i, name in enumerate(problems):
    pdir = os.path.join(here, name)
    exp = json.load(open(os.path.join(pdir, "expected.json")))["solutions"]
    for sol, e in exp.items():
        work.append((pdir, (i + 1) % 3, sol, e))

t0 = time.monotonic()
failures = 0
with cf.ThreadPoolExecutor(max_workers=jobs) as ex:
    futs = [(w, ex.submit(judge, w[0], w[1], w[2])) for w in work]
    for (pdir, form, sol, e), fut in futs:
        name = os.path.basename(pdir)
        total, subs, results, notes = fut.result()
        ok = abs(total - e["total"]) < 1e-6 and subs == e["subtasks"] and not notes
        sandbox_only = e.get("sandbox_only", False)
        tag = "ok  " if ok else ("info" if sandbox_only and not strict_sandbox else "FAIL")
        if tag == "FAIL":
            failures += 1
        print(f"[{tag}] {name}/{sol}: total {total:g} (expected {e['total']:g}) "
              + " ".join(f"{k}={v}" for k, v in subs.items()), flush=True)
        if not ok or verbose:
            if subs != e["subtasks"]:
                print(f"       expected " + " ".join(f"{k}={v}" for k, v in e["subtasks"].items()))
            for t in sorted(results):
                sc, st, fb, wall = results[t]
                print(f"       test {t}: {st} score={sc:g} wall={wall:.2f}s feedback={fb if verbose else (fb.splitlines() or [''])[0]!r}")
            for n in notes:
                print(f"       note: {n}")
print(f"{len(work)} solutions, {failures} failures, {time.monotonic() - t0:.1f}s")
sys.exit(1 if failures else 0)
PY
