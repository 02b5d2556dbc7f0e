#!/usr/bin/env python3
"""Writes a large results file for timing `ioi-run report`: the rows of a results JSONL (by
default the demo's, from `ioi-run evaluate --demo`) repeated until there are N of them, each
copy under a new id, so that every row is a distinct submission of the same problems.

    tools/report-rows.py RESULTS.jsonl OUT.jsonl [--rows 100000]
    /usr/bin/time -v ioi-run report --out /tmp/reports OUT.jsonl

The benchmark table of docs/benchmarks.md holds the figures (time and peak resident memory).
"""

import argparse
import json


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", help="a results JSONL to repeat")
    parser.add_argument("out", help="the JSONL to write")
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()
    with open(args.results, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    if not rows:
        raise SystemExit(f"{args.results}: no rows")
    with open(args.out, "w", encoding="utf-8") as out:
        for i in range(args.rows):
            row = dict(rows[i % len(rows)])
            copy = f"{row.get('submission_id', row.get('uuid', 'row'))}-{i // len(rows)}"
            row["uuid"] = row["submission_id"] = copy
            out.write(json.dumps(row, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
