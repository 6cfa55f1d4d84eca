#!/usr/bin/env python3
"""convkit against PyTorch 2.x on the CPU, side by side, alternating round by round.

For each model and batch, after checking that the two networks are the same
layer by layer (benchmarks/structure_check.py; a difference stops the run),
it runs rounds of: `convkit bench train MODEL --device cpu --optimizer sgd`,
then PyTorch with NCHW tensors, then PyTorch with channels_last
(benchmarks/pytorch_train.py --device cpu), each a fresh process with its own
warm-up steps and the same thread count. Alternating spreads any drift of the
machine (frequency, a neighbour's load) over all three sides. It reports each
side's median images/s over the rounds and convkit's ratio against the better
PyTorch layout, and writes every round's raw figure, the medians, the ratios
and the host record (CPU, ISA flags, commit, compiler and flags, threads,
PyTorch with its MKL and oneDNN versions, load average at start and end) as
JSON, plus a Markdown table.

Run it through benchmarks/compare_pytorch.sh, which makes the virtual
environment and builds the convkit tool first.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import structure_check  # noqa: E402

LAYOUTS = ("nchw", "channels_last")


def run_json(cmd, env):
    """The last line of a command's output, as JSON; exits naming the command when it fails."""
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"compare_pytorch: {shlex.join(cmd)} failed ({proc.returncode}):\n{proc.stderr.strip()}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def text_of(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as e:
        return f"unavailable: {e}"


def cpu_record():
    info = {}
    try:
        for line in open("/proc/cpuinfo"):
            key, _, value = line.partition(":")
            info.setdefault(key.strip(), value.strip())  # the first processor's
    except OSError:
        pass
    flags = set(info.get("flags", "").split())
    isa = [f for f in ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
                       "avx512_bf16", "amx_tile") if f in flags]
    return {"model": info.get("model name", "unknown"), "family": info.get("cpu family"), "model_number": info.get("model"),
            "mhz": info.get("cpu MHz"), "isa_flags": isa, "logical_cpus": os.cpu_count(), "kernel": platform.release()}


def build_record(convkit):
    """Commit, compiler and the flags the cpu kernels were built with, read from the build directory."""
    build = os.path.dirname(os.path.dirname(os.path.abspath(convkit)))
    rec = {"convkit_version": text_of([convkit, "--version"]), "devices": text_of([convkit, "devices"]),
           "commit": text_of(["git", "-C", ROOT, "rev-parse", "HEAD"]),
           "worktree_clean": text_of(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"]) == "",
           "build_dir": build}
    cache = os.path.join(build, "CMakeCache.txt")
    if os.path.exists(cache):
        for line in open(cache):
            m = re.match(r"(CMAKE_CXX_COMPILER|CMAKE_BUILD_TYPE|CONVKIT_NATIVE|CONVKIT_CPU_ISA)(?::[A-Z]+)?=(.*)", line)
            if m:
                rec[m.group(1)] = m.group(2).strip()
    if "CMAKE_CXX_COMPILER" in rec:
        rec["compiler"] = text_of([rec["CMAKE_CXX_COMPILER"], "--version"]).splitlines()[0]
    commands = os.path.join(build, "compile_commands.json")
    if os.path.exists(commands):
        for entry in json.load(open(commands)):
            if entry["file"].endswith("cpu/conv/tap_gemm.cpp"):
                words = shlex.split(entry.get("command", "")) or entry.get("arguments", [])
                rec["cpu_kernel_flags"] = " ".join(w for w in words if re.match(r"-(O|m|f|std=)", w))
                break
    return rec


def torch_record():
    import torch
    config = torch.__config__.show()

    def find(pattern):
        m = re.search(pattern, config)
        return m.group(1).strip() if m else None

    return {"version": torch.__version__,
            "mkl": find(r"Intel\(R\) (?:oneAPI )?Math Kernel Library Version ([^\n]*)"),
            "onednn": find(r"Intel\(R\) MKL-DNN v([0-9.]+[^\n(]*)") or find(r"oneDNN v([0-9.]+[^\n(]*)"),
            "cpu_capability": find(r"CPU capability usage: ([^\n]*)"),
            "config": config, "parallel_info": torch.__config__.parallel_info()}


def median(v):
    return statistics.median(v)


def compare(args, name, batch, env):
    convkit_cmd = [args.convkit, "bench", "train", name, "--device", "cpu", "--batch", str(batch),
                   "--optimizer", "sgd", "--steps", str(args.steps), "--warmup", str(args.warmup), "--json"]
    torch_cmd = [args.python, os.path.join(HERE, "pytorch_train.py"), "--device", "cpu", "--runs", f"{name}:{batch}",
                 "--steps", str(args.steps), "--warmup", str(args.warmup), "--threads", str(args.threads)]
    rounds = {"convkit": [], **{f"pytorch_{layout}": [] for layout in LAYOUTS}}
    torch_threads = set()
    for _ in range(args.rounds):
        line = run_json(convkit_cmd, env)
        rounds["convkit"].append(line["images_per_sec"])
        # The commit the binary was built from (the source tree's may differ).
        args.binary_commits.add(line.get("commit", "unknown"))
        for layout in LAYOUTS:
            line = run_json(torch_cmd + ["--layout", layout], env)
            rounds[f"pytorch_{layout}"].append(line["images_per_sec"])
            torch_threads.add(line["threads"])
    if torch_threads != {args.threads}:
        sys.exit(f"compare_pytorch: PyTorch ran on {sorted(torch_threads)} threads, not {args.threads}")
    medians = {side: median(v) for side, v in rounds.items()}
    best = max(LAYOUTS, key=lambda layout: medians[f"pytorch_{layout}"])
    return {"model": name, "batch": batch, "commands": [shlex.join(convkit_cmd), shlex.join(torch_cmd + ["--layout", "L"])],
            "rounds": rounds, "medians": medians,
            "spread": {side: [min(v), max(v)] for side, v in rounds.items()},
            "better_pytorch_layout": best,
            "ratio": medians["convkit"] / medians[f"pytorch_{best}"],
            "ratio_nchw": medians["convkit"] / medians["pytorch_nchw"],
            "ratio_channels_last": medians["convkit"] / medians["pytorch_channels_last"]}


def markdown(result):
    h, t = result["host"], result["pytorch"]
    lines = [f"# convkit against PyTorch {t['version']} on the CPU", "",
             f"{h['cpu']['model']}, {result['threads']} threads, ISA flags {' '.join(h['cpu']['isa_flags'])}; "
             f"convkit {h['build'].get('binary_commit', h['build'].get('commit', '?'))[:12]}, "
             f"{h['build'].get('compiler', '?')}, "
             f"cpu kernels built with `{h['build'].get('cpu_kernel_flags', '?')}`; PyTorch {t['version']} "
             f"(MKL {t['mkl']}, oneDNN {t['onednn']}, {t['cpu_capability']}).", "",
             f"Images/s, median of {result['rounds']} alternating rounds of {result['steps']} steps after "
             f"{result['warmup']} warm-up steps (each round a fresh process); [min, max] over the rounds. "
             f"Load average (1 min) {h['load_average_start'][0]:.1f} at the start, "
             f"{h['load_average_end'][0]:.1f} at the end.", "",
             *([] if result.get("complete") else
               [f"**Incomplete**: {len(result['results'])} of {result['planned']} rows were measured before the run stopped.",
                ""]),
             "| model | batch | convkit | PyTorch NCHW | PyTorch channels_last | convkit / better PyTorch |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]

    def cell(row, side):
        lo, hi = row["spread"][side]
        return f"{row['medians'][side]:.0f} [{lo:.0f}, {hi:.0f}]"

    for r in result["results"]:
        lines.append(f"| {r['model']} | {r['batch']} | {cell(r, 'convkit')} | {cell(r, 'pytorch_nchw')} | "
                     f"{cell(r, 'pytorch_channels_last')} | {r['ratio']:.2f}x ({r['better_pytorch_layout']}) |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--convkit", default=os.path.join(ROOT, "build", "release", "bin", "convkit"))
    ap.add_argument("--python", default=sys.executable, help="the Python with PyTorch (default: this one)")
    ap.add_argument("--models", default="cifar10-cnn,cifar10-cnn-bn,fmnist-cnn")
    ap.add_argument("--batches", default="32,128")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=5, help="timed steps per round and side (default 5)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps before them (default 2)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", required=True, help="folder for pytorch2.json and pytorch2.md")
    args = ap.parse_args()
    if min(args.rounds, args.steps, args.threads) < 1 or args.warmup < 0:
        sys.exit("compare_pytorch: --rounds, --steps and --threads must be >= 1, --warmup >= 0")
    if not os.access(args.convkit, os.X_OK):
        sys.exit(f"compare_pytorch: no convkit tool at {args.convkit} (build the convkit_cli target, or pass --convkit)")
    models = [m for m in args.models.split(",") if m]
    try:
        batches = sorted(int(b) for b in args.batches.split(",") if b)
    except ValueError:
        sys.exit(f"compare_pytorch: --batches expects comma-separated integers, got '{args.batches}'")

    # Refuse to time two different networks.
    structure = {}
    for name in models:
        problems, n = structure_check.check(args.convkit, name)
        if problems:
            sys.exit(f"compare_pytorch: {name} differs between convkit and PyTorch:\n  " + "\n  ".join(problems))
        structure[name] = f"{n} layers, the same in convkit and PyTorch (benchmarks/structure_check.py)"
        print(f"{name}: {structure[name]}", flush=True)

    # One thread count for both: convkit's OpenMP reads OMP_NUM_THREADS, PyTorch gets --threads too.
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    args.binary_commits = set()
    host = {"cpu": cpu_record(), "build": build_record(args.convkit), "load_average_start": os.getloadavg(),
            "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    result = {"threads": args.threads, "rounds": args.rounds, "steps": args.steps, "warmup": args.warmup,
              "order": ["convkit", "pytorch_nchw", "pytorch_channels_last"], "host": host,
              "pytorch": torch_record(), "argv": sys.argv, "structure": structure,
              "environment": {k: v for k, v in env.items() if k.startswith(("OMP_", "KMP_", "MKL_", "GOMP_"))},
              "complete": False, "results": []}
    print(f"{'model':16} {'batch':>5} {'convkit':>9} {'pt nchw':>9} {'pt cl':>9} {'ratio':>7}", flush=True)
    os.makedirs(args.out, exist_ok=True)
    # Batch by batch, the smaller first, and the files rewritten after every
    # row: a run cut short (a busy machine, a time limit) keeps what it measured.
    pending = [(name, batch) for batch in batches for name in models]
    result["planned"] = len(pending)
    for name, batch in pending:
        r = compare(args, name, batch, env)
        result["results"].append(r)
        m = r["medians"]
        print(f"{name:16} {batch:5} {m['convkit']:9.0f} {m['pytorch_nchw']:9.0f} "
              f"{m['pytorch_channels_last']:9.0f} {r['ratio']:6.2f}x", flush=True)
        result["complete"] = len(result["results"]) == len(pending)
        host["build"]["binary_commit"] = ",".join(sorted(args.binary_commits))
        host["load_average_end"] = os.getloadavg()
        host["finished"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        write(args.out, result)
    print(f"compare_pytorch: wrote {args.out}/pytorch2.json and pytorch2.md")


def write(out, result):
    for name, text in (("pytorch2.json", json.dumps(result, indent=1) + "\n"), ("pytorch2.md", markdown(result))):
        path = os.path.join(out, name)
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)


if __name__ == "__main__":
    main()
