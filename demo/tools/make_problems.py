#!/usr/bin/env python3
"""Regenerates tests/*.in|*.out and subtasks/*.json of the demo problems (deterministic)."""
import json, math, os, random, shutil

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "problems")


def write(problem, tests, subtasks):
    tdir = os.path.join(ROOT, problem, "tests")
    sdir = os.path.join(ROOT, problem, "subtasks")
    for d in (tdir, sdir):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    for name, (inp, out) in tests.items():
        with open(os.path.join(tdir, name + ".in"), "w") as f:
            f.write(inp)
        with open(os.path.join(tdir, name + ".out"), "w") as f:
            f.write(out)
    assert sum(s for s, _ in subtasks.values()) == 100
    assert list(subtasks)[0] == "00-samples" and subtasks["00-samples"][0] == 0
    used = set()
    for name, (score, cases) in subtasks.items():
        assert 2 <= len(cases) <= 8, (problem, name)
        assert all(c in tests for c in cases)
        used |= set(cases)
        with open(os.path.join(sdir, name + ".json"), "w") as f:
            json.dump({"score": score, "testcases": cases}, f)
            f.write("\n")
    assert used == set(tests), (problem, set(tests) - used)


def orchard():
    rng = random.Random(2025)

    def case(a):
        total, pre, best, bk = sum(a), 0, None, None
        for k in range(1, len(a)):
            pre += a[k - 1]
            d = abs(2 * pre - total)
            if best is None or d < best:
                best, bk = d, k
        return f"{len(a)}\n{' '.join(map(str, a))}\n", f"{best} {bk}\n"

    tests = {
        "01": case([3, 1, 1, 4, 2]),
        "02": case([7, 7]),
        "03": case([rng.randint(1, 1000) for _ in range(10)]),
        "04": case([rng.randint(1, 1000) for _ in range(60)]),
        "05": case([1000, 1, 1000]),
        "06": case([rng.randint(1, 10**5) for _ in range(300)]),
        "07": case([rng.randint(99000, 10**5) for _ in range(40)]),
        "08": case([10**9, 10**9 - 1, 10**9 - 2, 10**9 - 3, 10**9 - 4, 10**9 - 5]),
        "09": case([rng.randint(1, 10**9) for _ in range(50)]),
        "10": case([10**9, 1]),
        "11": case([10**9] * 25),
    }
    subtasks = {
        "00-samples": (0, ["01", "02"]),
        "01-small": (20, ["01", "02", "03", "04", "05"]),
        "02-medium": (30, ["01", "02", "03", "05", "06", "07"]),
        "03-full": (50, ["01", "03", "06", "08", "09", "10", "11"]),
    }
    write("orchard", tests, subtasks)


def skyline():
    rng = random.Random(7)

    def case(h):
        ans, st = [-1] * len(h), []
        for i in range(len(h) - 1, -1, -1):
            while st and h[st[-1]] <= h[i]:
                st.pop()
            ans[i] = st[-1] if st else -1
            st.append(i)
        return f"{len(h)}\n{' '.join(map(str, h))}\n", " ".join(map(str, ans)) + "\n"

    tests = {
        "01": case([3, 1, 4, 2, 5]),
        "02": case([5, 5, 7, 2, 2, 7]),
        "03": case([7]),
        "04": case([2, 3, 5, 8, 13, 21, 34, 55]),
        "05": case(rng.sample(range(1, 100), 20)),
        "06": case(list(range(150, 0, -10))),
        "07": case(rng.sample(range(1, 10**9), 1000)),
        "08": case([4] * 10),
        "09": case([rng.randint(1, 6) for _ in range(50)]),
        "10": case([1, 1, 2, 2, 2, 3, 5, 5, 8, 8, 8, 9]),
    }
    subtasks = {
        "00-samples": (0, ["01", "02"]),
        "01-increasing": (15, ["03", "04"]),
        "02-distinct": (35, ["01", "03", "04", "05", "06", "07"]),
        "03-full": (50, ["02", "04", "05", "07", "08", "09", "10"]),
    }
    write("skyline", tests, subtasks)


def scales():
    def log(b, n):  # smallest q with b^q >= n
        q = 0
        while b ** q < n:
            q += 1
        return q

    def case(n, h, kind):
        q = {"small": n - 1, "medium": log(2, n), "full": log(3, n)}[kind]
        p = {"small": n - 1, "medium": log(2, n), "full": log(2, n)}[kind]
        assert q <= p
        return f"{n} {h} {q} {p}\n", f"{h}\n"

    tests = {
        "01": case(3, 2, "small"),
        "02": case(7, 4, "small"),
        "03": case(2, 1, "small"),      # 1 weighing under every rule: shared by all subtasks
        "04": case(10, 0, "small"),
        "05": case(10, 9, "small"),
        "06": case(4, 3, "medium"),     # ceil(log2 4) == ceil(log3 4): shared by 02 and 03
        "07": case(100, 37, "medium"),
        "08": case(1000, 999, "medium"),
        "09": case(513, 0, "medium"),
        "10": case(100000, 12345, "full"),
        "11": case(100000, 99999, "full"),
        "12": case(81, 40, "full"),
        "13": case(730, 729, "full"),
    }
    assert tests["03"] == case(2, 1, "full") and tests["06"] == case(4, 3, "full")
    subtasks = {
        "00-samples": (0, ["01", "02"]),
        "01-small": (20, ["01", "02", "03", "04", "05"]),
        "02-medium": (30, ["03", "06", "07", "08", "09"]),
        "03-full": (50, ["03", "06", "10", "11", "12", "13"]),
    }
    write("scales", tests, subtasks)


if __name__ == "__main__":
    orchard()
    skyline()
    scales()
