#!/usr/bin/env python3
"""Regenerates tests/*.in|*.out and subtasks/*.json of the fixture problems (deterministic)."""
import json, os, random

ROOT = os.path.dirname(os.path.abspath(__file__))


def write(problem, tests, subtasks):
    tdir = os.path.join(ROOT, problem, "tests")
    sdir = os.path.join(ROOT, problem, "subtasks")
    os.makedirs(tdir, exist_ok=True)
    os.makedirs(sdir, exist_ok=True)
    for name, (inp, out) in tests.items():
        with open(os.path.join(tdir, name + ".in"), "w") as f:
            f.write(inp)
        with open(os.path.join(tdir, name + ".out"), "w") as f:
            f.write(out)
    assert sum(s for s, _ in subtasks.values()) == 100
    for name, (score, cases) in subtasks.items():
        with open(os.path.join(sdir, name + ".json"), "w") as f:
            json.dump({"score": score, "testcases": cases}, f)
            f.write("\n")


def sumpairs():
    rng = random.Random(1)

    def case(T, a):
        cnt, seen = 0, {}
        for x in a:
            cnt += seen.get(T - x, 0)
            seen[x] = seen.get(x, 0) + 1
        assert cnt > 0
        return f"{len(a)} {T}\n{' '.join(map(str, a))}\n", f"{cnt}\n"

    tests = {
        "01": case(6, [1, 5, 3, 3, 2]),
        "02": case(10, [5, 5, 5, 1, 9, 2, 8, 10]),
        "03": case(50, [rng.randint(1, 49) for _ in range(100)]),
        "04": case(2000, [rng.randint(1, 1999) for _ in range(1000)]),
        "05": case(1000, [500] * 100000),           # answer > 2^31
        "06": case(10**6, [rng.randint(1, 10**6 - 1) for _ in range(100000)]),
    }
    subtasks = {
        "00-samples": (10, ["01"]),
        "01-small": (30, ["01", "02", "03", "04"]),
        "02-large": (60, ["05", "06", "01"]),
    }
    write("sumpairs", tests, subtasks)


def wdiff():
    def case(n):
        rows, row = [], [1]
        for _ in range(n):
            rows.append(" ".join(str(x % 1000) for x in row))
            row = [1] + [row[i] + row[i + 1] for i in range(len(row) - 1)] + [1]
        return f"{n}\n", "\n".join(rows) + "\n"

    tests = {"01": case(4), "02": case(1), "03": case(30), "04": case(200)}
    subtasks = {"00-samples": (20, ["01"]), "01-all": (80, ["01", "02", "03", "04"])}
    write("wdiff", tests, subtasks)


def guess():
    def case(n, s):
        return f"{n} {s}\n", f"{s}\n"

    tests = {
        "01": case(10, 7),
        "02": case(100, 90),
        "03": case(100, 1),
        "04": case(10**6, 765432),
        "05": case(10**6, 1),
        "06": case(10**6, 10**6),
    }
    subtasks = {
        "00-samples": (10, ["01"]),
        "01-small": (30, ["01", "02", "03"]),
        "02-large": (60, ["04", "05", "06"]),
    }
    write("guess", tests, subtasks)


def relay():
    def case(x):
        return f"{x}\n", f"{x}\n"

    tests = {"01": case(123456789), "02": case(0), "03": case(4294967295),
             "04": case(1000), "05": case(3141592653)}
    subtasks = {"00-samples": (20, ["01"]), "01-all": (80, ["01", "02", "03", "04", "05"])}
    write("relay", tests, subtasks)


def pingpong():
    # "q seed": q one-number round trips (the manager draws the numbers from the seed).
    tests = {"01": ("5 1\n", ""), "02": ("20000 2\n", ""), "03": ("100000 3\n", "")}
    subtasks = {"00-samples": (10, ["01"]), "01-many": (90, ["01", "02", "03"])}
    write("pingpong", tests, subtasks)


def hops():
    # "n q seed": q queries on a line of n stations.
    tests = {"01": ("10 5 1\n", ""), "02": ("1000 50000 2\n", ""),
             "03": ("100000 100000 3\n", "")}
    subtasks = {"00-samples": (10, ["01"]), "01-many": (90, ["01", "02", "03"])}
    write("hops", tests, subtasks)


def together():
    tests = {"01": ("0\n", "")}
    subtasks = {"01-all": (100, ["01"])}
    write("together", tests, subtasks)


if __name__ == "__main__":
    sumpairs()
    wdiff()
    guess()
    relay()
    pingpong()
    hops()
    together()
