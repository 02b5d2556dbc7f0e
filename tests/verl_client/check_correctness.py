"""verl's own `check_correctness` (sandbox_fusion/utils.py, unchanged) against `ioi-run serve`.

    python3 check_correctness.py --url http://HOST:PORT/run_code

Every program below is checked on the same test cases, in C++ and in Python, as verl's code
reward does (one request per test case, all test cases of a program at once). Prints one line
per program with what verl got and what it expects, then `all results as expected`, or exits 1.
Also checks, through `/metrics`, that each distinct C++ program was compiled once for all its
test cases.
"""

import argparse
import pathlib
import re
import sys
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ left in the clone
sys.path.insert(0, str(pathlib.Path(__file__).parent))

from sandbox_fusion.utils import check_correctness  # noqa: E402

# a + b, three test cases.
IN_OUTS = {"inputs": ["1 2\n", "40 2\n", "-5 5\n"], "outputs": ["3\n", "42", "0\n"]}
CPP = {
    "correct": "#include <cstdio>\nint main(){long a,b;scanf(\"%ld %ld\",&a,&b);printf(\"%ld\\n\",a+b);}",
    "wrong": "#include <cstdio>\nint main(){long a,b;scanf(\"%ld %ld\",&a,&b);printf(\"%ld\\n\",a-b);}",
    "runtime_error": "#include <cstdlib>\nint main(){abort();}",
    "nonzero_exit": "int main(){return 3;}",
    "timeout": "int main(){volatile unsigned long x=0;for(;;)x++;}",
    "memory": "#include <cstdio>\n#include <cstdlib>\nint main(){size_t n=512u<<20;volatile char*p=(volatile char*)malloc(n);for(size_t i=0;i<n;i+=4096)p[i]=1;printf(\"%d\\n\",p[n-1]);}",
    "compile_error": "int main(){ return x; }",
}
PYTHON = {
    "correct": "a, b = map(int, input().split())\nprint(a + b)",
    "wrong": "a, b = map(int, input().split())\nprint(a * b)",
    "runtime_error": "raise ValueError('no')",
    "nonzero_exit": "import sys\nsys.exit(3)",
    "timeout": "while True:\n    pass",
    "memory": "x = bytearray(512 << 20)\nprint(len(x))",
    # Python is not compiled: SandboxFusion (and so verl) sees a syntax error at run time.
    "compile_error": "def f(:\n    pass",
}
EXPECTED = {
    ("cpp", "correct"): [True, True, True],
    ("cpp", "wrong"): [False, False, False],
    ("cpp", "runtime_error"): [-2, -2, -2],
    ("cpp", "nonzero_exit"): [-2, -2, -2],
    ("cpp", "timeout"): [-3, -3, -3],
    ("cpp", "memory"): [-2, -2, -2],
    ("cpp", "compile_error"): [-4, -4, -4],
    ("python", "correct"): [True, True, True],
    ("python", "wrong"): [False, False, False],
    ("python", "runtime_error"): [-2, -2, -2],
    ("python", "nonzero_exit"): [-2, -2, -2],
    ("python", "timeout"): [-3, -3, -3],
    ("python", "memory"): [-2, -2, -2],
    ("python", "compile_error"): [-2, -2, -2],
}
# A LeetCode-style function, called by verl's own wrapper (`fn_name`): one JSON value per line.
FUNCTION = {
    "code": "class Solution:\n    def add(self, a, b):\n        return a + b\n",
    "in_outs": {"inputs": ["1\n2", "[1]\n[2]"], "outputs": ["3", "[1, 2]"], "fn_name": "add"},
    "expected": [True, True],
}
TIMEOUT = 2  # seconds, compile and run, as verl's `timeout`
MEMORY_MB = 128


def compiles(url):
    """The server's compile-cache misses so far (compiler runs), from /metrics."""
    metrics_url = url.rsplit("/", 1)[0] + "/metrics"
    text = urllib.request.urlopen(metrics_url, timeout=30).read().decode()
    found = re.search(r"^ioi_run_compile_cache_misses_total (\d+)", text, re.M)
    return int(found.group(1)) if found else None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    args = parser.parse_args()
    failures = []

    def check(label, language, code, in_outs, expected):
        results, metadata = check_correctness(
            args.url, in_outs, code, timeout=TIMEOUT, memory_limit_mb=MEMORY_MB, language=language
        )
        ok = results == expected
        statuses = [m.get("status") for m in metadata]
        print(f"{language} {label}: {results} (expected {expected}) statuses {statuses}")
        if not ok:
            failures.append(f"{language} {label}: got {results}, expected {expected}: {metadata}")

    before = compiles(args.url)
    for label, code in CPP.items():
        check(label, "cpp", code, IN_OUTS, EXPECTED[("cpp", label)])
    after = compiles(args.url)
    if before is None or after is None or after - before != len(CPP):
        failures.append(
            f"compiles for {len(CPP)} C++ programs x {len(IN_OUTS['inputs'])} test cases: "
            f"{None if None in (before, after) else after - before} (expected {len(CPP)})"
        )
    else:
        print(f"compiles: {after - before} for {len(CPP)} C++ programs")
    for label, code in PYTHON.items():
        check(label, "python", code, IN_OUTS, EXPECTED[("python", label)])
    check("function", "python", FUNCTION["code"], FUNCTION["in_outs"], FUNCTION["expected"])
    # A language this server does not run: SandboxFusion's SandboxError, which verl counts -1.
    check("unserved", "java", "class Main {}", IN_OUTS, [-1, -1, -1])

    if failures:
        print("\n".join(["MISMATCHES:"] + failures))
        sys.exit(1)
    print("all results as expected")


if __name__ == "__main__":
    main()
