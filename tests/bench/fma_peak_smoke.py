#!/usr/bin/env python3
"""Smoke run of benchmarks/fma_peak: it must exit 0 and end with a JSON line
whose rows cover the baseline path and the best path it names, on one thread
and on all, each with positive, finite GFLOP/s; a bad --isa must be refused
with its name. The figures' size is not looked at (the machine may be loaded).

usage: fma_peak_smoke.py FMA_PEAK_BINARY
"""
import json
import math
import subprocess
import sys


def main(binary):
    proc = subprocess.run([binary, "--seconds=0.01", "--repeats=1"], capture_output=True, text=True)
    problems = []
    if proc.returncode != 0:
        print("FAILED: exit code", proc.returncode, proc.stdout, proc.stderr)
        return 1
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    rows = doc.get("results", [])
    paths = {r["isa"] for r in rows}
    for wanted in ("baseline", doc.get("best_isa")):
        if wanted not in paths:
            problems.append(f"no row for the {wanted} path")
    threads = {r["threads"] for r in rows}
    if threads != {1, doc.get("omp_max_threads")}:
        problems.append(f"thread counts {sorted(threads)}, expected 1 and {doc.get('omp_max_threads')}")
    for r in rows:
        for key in ("gflops_wall", "gflops_cpu"):
            v = r.get(key)
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                problems.append(f"{r['isa']} on {r['threads']} threads: {key} = {v}")
    bad = subprocess.run([binary, "--isa=avx9"], capture_output=True, text=True)
    if bad.returncode == 0 or "avx9" not in bad.stderr:
        problems.append(f"--isa=avx9 was not refused by name (exit {bad.returncode}: {bad.stderr.strip()})")
    for p in problems:
        print("FAILED:", p)
    print(f"{len(rows)} rows, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
