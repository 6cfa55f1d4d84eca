#!/usr/bin/env python3
"""Per-seed test accuracy, mean and min-max of the logs benchmarks/accuracy_seeds.sh
wrote (MODEL-seedS.txt), as the Markdown table docs/results/accuracy/README.md quotes."""
import pathlib
import re
import sys

LOG = re.compile(r"^(?P<model>.+)-seed(?P<seed>\d+)\.txt$")
TEST = re.compile(r"^test: loss (?P<loss>[0-9.]+) - accuracy (?P<acc>[0-9.]+)", re.M)


def collect(folder):
    runs = {}
    for path in sorted(folder.iterdir()):
        name = LOG.match(path.name)
        if not name:
            continue
        found = TEST.search(path.read_text())
        if not found:
            sys.exit(f"accuracy_summary.py: {path} has no 'test: ... accuracy' line (the run failed or is unfinished)")
        runs.setdefault(name["model"], []).append((int(name["seed"]), float(found["acc"]) * 100))
    if not runs:
        sys.exit(f"accuracy_summary.py: no MODEL-seedS.txt logs in {folder}")
    return runs


def main():
    folder = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "docs/results/accuracy")
    print("| model | seeds | test accuracy per seed | mean | min-max |")
    print("|---|---|---|---:|---|")
    for model, runs in collect(folder).items():
        runs.sort()
        accs = [a for _, a in runs]
        seeds = ", ".join(str(s) for s, _ in runs)
        per_seed = ", ".join(f"{a:.2f}%" for a in accs)
        print(f"| `{model}` | {seeds} | {per_seed} | {sum(accs) / len(accs):.2f}% "
              f"| {min(accs):.2f}-{max(accs):.2f}% |")


if __name__ == "__main__":
    main()
