#!/usr/bin/env python3
"""Medians (min-max) of benchmarks/compare_isa.sh's runs, per model and
variant, and each variant's ratio to the native build's median: images/s of
wall time, and images per CPU-second of the process (less sensitive to a
loaded machine's waits for a core)."""
import json
import statistics
import sys
from collections import defaultdict


def main(path):
    runs = defaultdict(list)
    for line in open(path):
        r = json.loads(line)
        images = r["batch"] * (r["steps"] + r["warmup"])
        runs[(r["model"], r["variant"])].append((r["images_per_sec"], images / r["process_cpu_seconds"]))
    models = sorted({m for m, _ in runs})
    print("| model | variant | runs | images/s median (min-max) | vs native | images per CPU-s median (min-max) | vs native |")
    print("|---|---|---|---|---|---|---|")
    for model in models:
        native = runs.get((model, "native"))
        for variant in ["native", "baseline", "avx2", "avx512"]:
            xs = runs.get((model, variant))
            if not xs:
                continue
            wall = [x[0] for x in xs]
            cpu = [x[1] for x in xs]
            def ratio(values, index):
                if not native:
                    return "-"
                return f"{statistics.median(values) / statistics.median([n[index] for n in native]):.3f}"
            print(f"| {model} | {variant} | {len(xs)} | {statistics.median(wall):.1f} ({min(wall):.1f}-{max(wall):.1f}) "
                  f"| {ratio(wall, 0)} | {statistics.median(cpu):.1f} ({min(cpu):.1f}-{max(cpu):.1f}) | {ratio(cpu, 1)} |")


if __name__ == "__main__":
    main(sys.argv[1])
