#!/usr/bin/env python3
"""Where one convolution pass's time goes, kernel by kernel, from Nsight
Compute's CSV of `bench_conv --profile-passes=N` (gpu-check's kernel_times
step runs it):

  ncu --profile-from-start off --clock-control none --cache-control none \\
      --metrics gpu__time_duration.sum --print-units base --csv --log-file RAW.csv \\
      bench_conv --devices=cuda --algos=A --sets=S --layers=L --passes=P --profile-passes=N ...
  kernel_times.py --passes N --title "S L P A" RAW.csv

Prints a Markdown table: each kernel (its name without namespaces and
parameter list), launches per pass, microseconds per pass, share of the
pass; the kernels in order of first launch, then the total. Kernels run one
at a time under ncu, so the total is the sum of the kernels' times, without
the gaps or overlap of a normal run.

The CSV is the details page: a header line whose fields include
"Kernel Name", "Metric Name", "Metric Unit" and "Metric Value", then one
line per kernel launch and metric. Lines before the header (ncu's own
"==PROF==" messages) are skipped. A file without that header, or without a
gpu__time_duration.sum value, is an error naming the file.

usage: kernel_times.py --passes N [--title TEXT] RAW.csv
"""
import argparse
import csv
import re
import sys

METRIC = "gpu__time_duration.sum"
SECONDS_PER_UNIT = {"nsecond": 1e-9, "ns": 1e-9, "usecond": 1e-6, "us": 1e-6, "msecond": 1e-3, "ms": 1e-3,
                    "second": 1.0, "s": 1.0}


def short_name(kernel):
    """`void ns::(anonymous namespace)::name<4, float>(args)` -> `name<4, float>`.
    ncu also writes the anonymous namespace `<unnamed>` or, cut short,
    `unnamed>`."""
    name = kernel.strip()
    if name.startswith("void "):
        name = name[len("void "):]
    name = re.sub(r"\(anonymous namespace\)::|<?unnamed>::", "", name)
    # Cut the parameter list at the first '(' outside template brackets.
    depth = 0
    for i, c in enumerate(name):
        if c == "<":
            depth += 1
        elif c == ">":
            depth = max(depth - 1, 0)
        elif c == "(" and depth == 0:
            name = name[:i]
            break
    # Drop namespace qualifiers outside template brackets.
    depth, last = 0, 0
    for i, c in enumerate(name):
        if c == "<":
            depth += 1
        elif c == ">":
            depth = max(depth - 1, 0)
        elif c == ":" and depth == 0 and i > 0 and name[i - 1] == ":":
            last = i + 1
    return name[last:]


def read_launches(path):
    """[(kernel, seconds)] in launch order."""
    with open(path, newline="") as f:
        lines = f.read().splitlines()
    start = next((i for i, line in enumerate(lines) if '"Kernel Name"' in line and '"Metric Value"' in line), None)
    if start is None:
        raise ValueError(f"{path}: no CSV header with \"Kernel Name\" and \"Metric Value\" (was ncu given --csv?)")
    launches = []
    for row in csv.DictReader(lines[start:]):
        if row.get("Metric Name") != METRIC:
            continue
        unit = (row.get("Metric Unit") or "").strip()
        if unit not in SECONDS_PER_UNIT:
            raise ValueError(f"{path}: unit '{unit}' of {METRIC} is not one of {sorted(SECONDS_PER_UNIT)}")
        value = float(re.sub(r"[,\s]", "", row["Metric Value"]))
        launches.append((short_name(row["Kernel Name"]), value * SECONDS_PER_UNIT[unit]))
    if not launches:
        raise ValueError(f"{path}: no {METRIC} values (no kernel ran inside the profiler range?)")
    return launches


def table(launches, passes, title):
    order, count, total = [], {}, {}
    for name, seconds in launches:
        if name not in count:
            order.append(name)
            count[name], total[name] = 0, 0.0
        count[name] += 1
        total[name] += seconds
    whole = sum(total.values()) or 1.0  # all zero: shares of 0%
    out = []
    if title:
        out.append(f"#### {title}")
        out.append("")
    out.append(f"| kernel | launches per pass | us per pass | share |")
    out.append("| --- | ---: | ---: | ---: |")
    for name in order:
        out.append(f"| `{name}` | {count[name] / passes:g} | {total[name] / passes * 1e6:.2f} | "
                   f"{total[name] / whole:.0%} |")
    out.append(f"| total ({len(launches)} launches over {passes} passes) | {len(launches) / passes:g} | "
               f"{sum(total.values()) / passes * 1e6:.2f} | 100% |")
    return "\n".join(out)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passes", type=int, required=True, help="the N of bench_conv --profile-passes")
    parser.add_argument("--title", default="")
    parser.add_argument("csv")
    args = parser.parse_args(argv)
    if args.passes < 1:
        print("kernel_times.py: --passes must be at least 1", file=sys.stderr)
        return 2
    try:
        launches = read_launches(args.csv)
    except (OSError, ValueError, KeyError) as e:
        print(f"kernel_times.py: {e}", file=sys.stderr)
        return 1
    print(table(launches, args.passes, args.title))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
