#!/usr/bin/env python3
"""Fidelity check: judge every official solution of TPS task packages with `ioi-run judge` and
compare each subtask's status with the verdict `solutions.json` expects.

Usage (IOI 2022, https://github.com/ioi-2022/tasks with its `tps` submodule):

    git clone --recursive https://github.com/ioi-2022/tasks ioi2022
    tools/tps-fidelity.py ioi2022                       # every task folder in it
    tools/tps-fidelity.py ioi2022 --task prison --task cards --jobs 2
    tools/tps-fidelity.py ioi2022 --tps path/to/ioi-2022/tps   # when the submodule is missing

Without network access at test time nothing is downloaded: the checkout is given. Needs root
(the sandbox) and python3 3.7+ (standard library only). Prints one line per solution and
subtask mismatch, and a table of matches per task; `--json FILE` writes every result.
Exit status: 0 when every solution matches, 1 otherwise.

Verdicts of solutions.json and the subtask statuses they accept:
  correct / model_solution -> AC     incorrect -> WA      time_limit -> TLE
  memory_limit -> MLE                runtime_error -> RE  time_limit_and_runtime_error -> TLE or RE
  partially_correct -> PA            failed -> anything but AC
  protocol_violation (IOI 2022's TPS) -> WA
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

ACCEPTED = {
    "model_solution": {"AC"},
    "correct": {"AC"},
    "incorrect": {"WA"},
    "time_limit": {"TLE"},
    "memory_limit": {"MLE"},
    "runtime_error": {"RE"},
    "time_limit_and_runtime_error": {"TLE", "RE"},
    "partially_correct": {"PA"},
    # IOI 2022's TPS: a manager that detects a protocol violation scores 0 (a wrong answer).
    "protocol_violation": {"WA"},
    "failed": {"WA", "TLE", "MLE", "RE", "PA", "CE"},
}


def find_binary(explicit):
    if explicit:
        return explicit
    here = os.path.dirname(os.path.abspath(__file__))
    for profile in ("release", "debug"):
        candidate = os.path.join(here, "..", "target", profile, "ioi-run")
        if os.path.isfile(candidate):
            return os.path.abspath(candidate)
    return shutil.which("ioi-run") or sys.exit("ioi-run not found: build it or pass --ioi-run")


def task_folders(root, only):
    names = sorted(
        n for n in os.listdir(root)
        if os.path.isfile(os.path.join(root, n, "problem.json"))
        and os.path.isfile(os.path.join(root, n, "subtasks.json"))
    )
    if only:
        missing = [t for t in only if t not in names]
        if missing:
            sys.exit("no TPS task %s in %s (found: %s)" % (", ".join(missing), root, ", ".join(names)))
        names = [n for n in only if n in names]  # in the order given
    return names


def with_tps(root, tps, names):
    """A copy of the task folders beside `tps`, for checkouts without the submodule (the
    packages link testlib.h and Makefiles into ../tps)."""
    tmp = tempfile.mkdtemp(prefix="tps-fidelity-")
    for name in names:
        shutil.copytree(os.path.join(root, name), os.path.join(tmp, name), symlinks=True)
    os.symlink(os.path.abspath(tps), os.path.join(tmp, "tps"))
    return tmp


def dangling_links(root, names):
    """The first symbolic link of the task folders whose target is missing, if any."""
    for name in names:
        for folder, _, files in os.walk(os.path.join(root, name)):
            for f in files:
                path = os.path.join(folder, f)
                if os.path.islink(path) and not os.path.exists(path):
                    return path
    return None


def subtask_name(cms_name):
    """`02-full` -> `full` (ioi-run names subtasks as TPS's CMS export does)."""
    head, _, tail = cms_name.partition("-")
    return tail if head.isdigit() and tail else cms_name


def judge(binary, task_dir, solution, jobs):
    cmd = [binary, "judge", "--json", "--jobs", str(jobs), task_dir, solution]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if out.returncode != 0:
        return None, out.stderr.decode(errors="replace").strip()
    return json.loads(out.stdout), None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tasks", help="a checkout holding TPS task folders (e.g. ioi-2022/tasks)")
    parser.add_argument("--task", action="append", default=[], help="only this task (repeatable)")
    parser.add_argument("--tps", help="a checkout of the TPS repository, when the `tps` submodule is missing")
    parser.add_argument("--ioi-run", help="the ioi-run binary (default: target/release, target/debug, PATH)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--json", help="write every result to this file")
    args = parser.parse_args()

    binary = find_binary(args.ioi_run)
    names = task_folders(args.tasks, args.task)
    root = args.tasks
    dangling = dangling_links(root, names)
    if dangling:
        if not args.tps:
            sys.exit("%s points nowhere (is the `tps` submodule missing? run `git submodule update --init` in %s, or pass --tps)" % (dangling, root))
        root = with_tps(args.tasks, args.tps, names)

    results, table, all_match = [], [], True
    for name in names:
        task_dir = os.path.join(root, name)
        with open(os.path.join(task_dir, "solutions.json")) as f:
            solutions = json.load(f)
        matched = 0
        for solution, spec in solutions.items():
            path = os.path.join(task_dir, "solution", solution)
            if not solution.endswith((".cpp", ".cc")):
                print("%s/%s: skipped (only C++ is judged)" % (name, solution))
                continue
            report, error = judge(binary, task_dir, path, args.jobs)
            row = {"task": name, "solution": solution, "expected": spec, "mismatches": []}
            if report is None:
                row["error"] = error
                print("%s/%s: ERROR %s" % (name, solution, error.splitlines()[-1] if error else ""))
                all_match = False
                results.append(row)
                continue
            row["total"] = report["total"]
            row["subtasks"] = {s["subtask"]: s["status"] for s in report["subtasks"]}
            for s in report["subtasks"]:
                tps_name = subtask_name(s["subtask"])
                want = spec.get("except", {}).get(tps_name, spec.get("verdict"))
                accepted = ACCEPTED.get(want)
                if accepted is None or s["status"] not in accepted:
                    feedback = [
                        "%s %s: %s" % (t["test_name"], t["status"], (t.get("feedback") or "").splitlines()[0] if t.get("feedback") else "")
                        for t in s["tests"] if t["status"] not in ("AC", "SKIPPED")
                    ][:3]
                    row["mismatches"].append({"subtask": tps_name, "expected": want, "got": s["status"], "tests": feedback})
            status = "ok" if not row["mismatches"] else "MISMATCH"
            print("%s/%s: %s (total %s)" % (name, solution, status, report["total"]))
            for m in row["mismatches"]:
                print("    subtask %s: expected %s, got %s; %s" % (m["subtask"], m["expected"], m["got"], "; ".join(m["tests"])))
            if row["mismatches"]:
                all_match = False
            else:
                matched += 1
            results.append(row)
            sys.stdout.flush()
        table.append((name, matched, sum(1 for s in solutions if s.endswith((".cpp", ".cc")))))

    print()
    print("| task | solutions matching solutions.json |")
    print("|---|---|")
    for name, matched, total in table:
        print("| %s | %d / %d |" % (name, matched, total))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if root != args.tasks:
        shutil.rmtree(root, ignore_errors=True)
    sys.exit(0 if all_match else 1)


if __name__ == "__main__":
    main()
