"""End-to-end check of `ioi-run serve` as RL training uses it: several training processes
(LOCAL_RANK / WORLD_SIZE) sharing the endpoints of one server, several requests in flight per
endpoint, IOI rewards per test and Codeforces rewards per test.

    python3 run_tests.py --endpoints URL,URL,... --ioi-run BINARY --cache-dir DIR

Checks: every IOI total equals `ioi-run judge --json` on the same problem and solution; every
Codeforces solution passes the number of tests its expected.json names (so the reward follows);
no reward was lost to an error. Exits 1 with a list of mismatches otherwise. Standard library
only.
"""

import argparse
import concurrent.futures
import json
import os
import pathlib
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the clone
sys.path.insert(0, str(pathlib.Path(__file__).parent))

from piston_client import PistonClient, endpoints_for_rank  # noqa: E402
import scoring  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
IOI_CASES = {
    "sumpairs": ["ac", "ordered_pa", "int_overflow", "burn_tle", "mle", "segv", "ce"],
    "guess": None,  # every solution
    "wdiff": None,
}


def ioi_expected(binary, cache_dir, problem, solution):
    result = subprocess.run(
        [binary, "judge", "--json", "--cache-dir", cache_dir, "-j", "1", str(problem), str(solution)],
        capture_output=True, text=True, check=False,
    )
    if result.returncode not in (0, 1):
        raise RuntimeError(f"ioi-run judge failed on {solution}: {result.stderr}")
    return json.loads(result.stdout)["total"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoints", default=os.environ.get("PISTON_ENDPOINTS"))
    parser.add_argument("--ioi-run", required=True)
    parser.add_argument("--cache-dir", required=True)
    parser.add_argument("--world-size", type=int, default=2)
    args = parser.parse_args()
    per_endpoint = int(os.environ.get("PISTON_MAX_REQUESTS_PER_ENDPOINT", "1"))
    all_endpoints = args.endpoints.split(",")

    # One client per training process, each with its share of the endpoints.
    clients = [
        PistonClient(endpoints_for_rank(all_endpoints, rank, args.world_size), per_endpoint)
        for rank in range(args.world_size)
    ]
    for client in clients:
        runtimes = client.get_supported_runtimes()
        assert all(any(rt["language"] == "cms_ioi" for rt in r) for r in runtimes), runtimes
    # Rewards are computed concurrently (outer), each sending its tests concurrently (inner),
    # as open-r1 gathers both; `ioi-run judge` gives the expected IOI totals meanwhile.
    outer = concurrent.futures.ThreadPoolExecutor(max_workers=64)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=64)
    judges = concurrent.futures.ThreadPoolExecutor(max_workers=2)
    jobs = []  # (description, future, expected)
    rank = 0

    def next_client():
        nonlocal rank
        rank += 1
        return clients[rank % len(clients)]

    for name, selected in IOI_CASES.items():
        folder = ROOT / "problems" / name
        subtasks = scoring.load_cms_problem(folder)
        for solution in sorted((folder / "solutions").glob("*.cpp")):
            if selected is not None and solution.stem not in selected:
                continue
            expected = json.loads((folder / "expected.json").read_text())["solutions"][solution.name]
            if expected.get("sandbox_only"):
                continue
            code = solution.read_text()
            future = outer.submit(scoring.ioi_total, next_client(), pool, subtasks, code)
            judged = judges.submit(ioi_expected, args.ioi_run, args.cache_dir, folder, solution)
            jobs.append((f"ioi {name}/{solution.name}", future, judged))

    for folder in sorted((ROOT / "codeforces").iterdir()):
        if not folder.is_dir():
            continue
        problem = scoring.load_cf_problem(folder)
        expected = json.loads((folder / "expected.json").read_text())
        for solution in sorted((folder / "solutions").iterdir()):
            language = "python" if solution.suffix == ".py" else "cpp"
            future = outer.submit(scoring.cf_score, next_client(), pool, problem, solution.read_text(), language)
            jobs.append((f"codeforces {folder.name}/{solution.name}", future, expected[solution.name]))

    mismatches = []
    for description, future, expected in jobs:
        if isinstance(expected, concurrent.futures.Future):
            expected = expected.result()
            got = future.result()
            ok = abs(got - expected) < 1e-6
            print(f"{description:45} server {got:7.2f}   ioi-run judge {expected:7.2f}   {'ok' if ok else 'MISMATCH'}")
        else:
            reward, passed = future.result()
            ok = passed == expected
            print(f"{description:45} reward {reward:5.2f}   passed {passed} (expected {expected})   {'ok' if ok else 'MISMATCH'}")
        if not ok:
            mismatches.append(description)
    stats = {key: sum(c.stats[key] for c in clients) for key in clients[0].stats}
    print(f"requests {stats['requests']}, retries {stats['retries']} (503: {stats['busy']}), lost {stats['failures']}")
    if stats["failures"]:
        mismatches.append(f"{stats['failures']} requests failed after every retry")
    if mismatches:
        print("FAILED:", ", ".join(mismatches))
        return 1
    print("all rewards as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
