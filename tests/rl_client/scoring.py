"""Reward computations as open-r1 does them (ioi_scoring.py, cf_scoring.py), on top of
piston_client. Requests are built exactly as there; only asyncio.gather became a thread pool.
"""

import concurrent.futures
import json
import pathlib

from piston_client import PistonError


def batched(items, size):
    for start in range(0, len(items), size):
        yield items[start : start + size]


# ---------------------------------------------------------------- IOI (ioi_scoring.py)

def load_cms_problem(folder):
    """A CMS task folder as one open-r1/ioi row per subtask (id, grader_files, limits...)."""
    folder = pathlib.Path(folder)
    config = json.loads((folder / "problem.json").read_text())
    grader_files = []
    for sub in ("graders", "checker"):
        for path in sorted((folder / sub).glob("*")) if (folder / sub).is_dir() else []:
            grader_files.append((f"{sub}/{path.name}", path.read_text()))
    grader_files.append(("graders/grader_config.json", json.dumps(config)))
    tests = {
        path.stem: (path.read_bytes().decode(), path.with_suffix(".out").read_bytes().decode())
        for path in sorted((folder / "tests").glob("*.in"))
    }
    subtasks = []
    for path in sorted((folder / "subtasks").glob("*.json")):
        subtask = json.loads(path.read_text())
        subtasks.append(
            {
                "id": config["code"],
                "subtask": path.stem,
                "score": subtask["score"],
                "score_precision": config.get("score_precision", 2),
                "test_names": subtask["testcases"],
                "time_limit": config["time_limit"],
                "memory_limit": config["memory_limit"],
                "grader_files": grader_files,
                "test_cases": tests,
            }
        )
    return subtasks


def execute_ioi(client, data):
    response = client.send_execute(data)
    if "message" in response:
        raise PistonError(response["message"])
    if "compile" in response and response["compile"]["code"] != 0:
        return "0", "Compilation error exit code " + str(response["compile"]["code"]) + "\n" + response["compile"]["stderr"]
    if "run" not in response:
        raise PistonError(response)
    if response["run"]["code"] == 1 and "MemoryError" in response["run"]["stderr"]:
        return "0", "Memory limit exceeded"
    if response["run"]["stdout"]:
        return response["run"]["stdout"], response["run"]["stderr"]
    if response["run"]["signal"] == "SIGKILL":
        return "0", "Time limit exceeded"
    if response["run"]["code"] != 0:
        raise PistonError(f"exit code={response['run']['code']}, stderr={response['run']['stderr']}")
    return "0", "Unknown error"


def run_submission(client, problem, test_input, submission, test_output):
    data = {
        "files": [
            {"name": f"graders/{problem['id'].lower()}.cpp", "content": submission},
            {"name": "input.txt", "content": test_input},
            *([{"name": "correct_output.txt", "content": test_output}] if test_output else []),
            *({"name": name, "content": content} for name, content in problem["grader_files"] if content),
        ],
        "run_timeout": round((problem["time_limit"] + 3) * 1000),
        "run_memory_limit": problem["memory_limit"],
    }
    return execute_ioi(client, data)


def score_subtask(client, pool, subtask, submission, cache, test_batch_size=1):
    """Minimum test score of the subtask, rounded, with the reference's early stop."""
    results = {name: cache[name] for name in subtask["test_names"] if name in cache}
    if any(score == 0.0 for score in results.values()):
        return 0.0
    to_run = [name for name in subtask["test_names"] if name not in cache]
    for batch in batched(to_run, test_batch_size):
        futures = [
            pool.submit(run_submission, client, subtask, *subtask["test_cases"][name][:1], submission,
                        subtask["test_cases"][name][1])
            for name in batch
        ]
        scores = [float(f.result()[0]) for f in futures]
        for name, score in zip(batch, scores):
            cache[name] = score
            results[name] = score
        if any(score == 0.0 for score in scores):
            break
    if len(results) < len(subtask["test_names"]):
        return 0.0  # skipped tests count as 0, as SubtaskResult's min over SKIPPED (0.0) does
    return round(min(results.values()), subtask["score_precision"])


def ioi_total(client, pool, subtasks, submission):
    cache = {}
    return sum(
        round(score_subtask(client, pool, subtask, submission, cache) * subtask["score"], subtask["score_precision"])
        for subtask in subtasks
    )


# ---------------------------------------------------------- Codeforces (cf_scoring.py)

def cf_single_test(client, problem, test_input, test_output, submission, language):
    try:
        return client.send_execute(
            {
                "files": [
                    {"name": f"main.{language}", "content": submission},
                    *([{"name": "checker.py", "content": problem["generated_checker"]}] if problem["generated_checker"] else []),
                    {"name": "input.txt", "content": test_input},
                    {"name": "correct_output.txt", "content": test_output},
                    {
                        "name": "grader_config",
                        "content": "\n".join(
                            f"{key}={value}"
                            for key, value in {
                                "TIME_LIMIT": problem["time_limit"],
                                "MEMORY_LIMIT": problem["memory_limit"],
                                "INPUT_MODE": problem["input_mode"],
                            }.items()
                        ),
                    },
                ],
                "run_timeout": (problem["time_limit"] + 10) * 1000,
            },
            language="cf_python3" if language == "python" else "c++17",
        )
    except Exception as error:  # cf_scoring swallows every error into a failed test
        print(f"Error scoring submission: {error}")
        return False


def cf_score(client, pool, problem, submission, language, test_batch_size=1):
    """(reward, passed tests) in cf_scoring's `weighted_sum` mode."""
    tests = problem["official_tests"]
    passed = 0
    for batch in batched(tests, test_batch_size):
        futures = [
            pool.submit(cf_single_test, client, problem, t["input"], t["output"], submission, language)
            for t in batch
        ]
        results = [f.result() for f in futures]
        if any(result and result["compile"]["code"] != 0 for result in results):
            return -0.1, "CE"
        passed += sum(
            1 for r in results if r and r["run"]["code"] == 0 and r["run"]["stdout"].strip() == "1"
        )
    pass_fail = 1.0 if passed == len(tests) else 0.0
    return pass_fail + 0.1 * (passed / len(tests)), passed


def load_cf_problem(folder):
    folder = pathlib.Path(folder)
    config = json.loads((folder / "problem.json").read_text())
    checker = folder / "checker.py"
    return {
        "time_limit": config["time_limit"],
        "memory_limit": config["memory_limit"],
        "input_mode": config["input_mode"],
        "generated_checker": checker.read_text() if checker.exists() else None,
        "official_tests": [
            {"input": path.read_bytes().decode(), "output": path.with_suffix(".out").read_bytes().decode()}
            for path in sorted((folder / "tests").glob("*.in"))
        ],
    }
