#!/usr/bin/env python3
"""Smoke run of one benchmark suite: it must exit 0, write valid JSON, run at
least one benchmark, give every benchmark that ran the named counters, and
skip only for a stated lack of support, never for a wrong result or an error.
Times are not looked at.

usage: smoke_suite.py [--counter NAME]... [--expect-ran N] BINARY [suite args...]
(--expect-ran: exactly N benchmarks must run, none skipped)
"""
import json
import os
import subprocess
import sys
import tempfile


def main(argv):
    counters = []
    expect_ran = None
    while len(argv) >= 2 and argv[0] in ("--counter", "--expect-ran"):
        if argv[0] == "--counter":
            counters.append(argv[1])
        else:
            expect_ran = int(argv[1])
        argv = argv[2:]
    if not argv:
        print(__doc__)
        return 2
    binary, args = argv[0], argv[1:]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        cmd = [binary, *args, "--benchmark_out=" + out, "--benchmark_out_format=json"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            print("FAILED: exit code", proc.returncode, "\n", " ".join(cmd), "\n", proc.stdout, proc.stderr)
            return 1
        with open(out) as f:
            doc = json.load(f)
    problems = []
    ran = 0
    for b in doc.get("benchmarks", []):
        name = b.get("name", "?")
        if b.get("error_occurred"):
            message = b.get("error_message", "")
            if not message.startswith("unsupported:"):
                problems.append(f"{name}: {message}")
            continue
        ran += 1
        for c in counters:
            if c not in b:
                problems.append(f"{name}: no counter '{c}'")
    if ran == 0:
        problems.append("no benchmark ran")
    if expect_ran is not None and ran != expect_ran:
        problems.append(f"{ran} benchmarks ran, {expect_ran} expected")
    if "context" not in doc or "cpu_model" not in doc["context"]:
        problems.append("the context does not describe the machine (cpu_model)")
    for p in problems:
        print("FAILED:", p)
    print(f"{ran} benchmarks ran, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
