#!/usr/bin/env python3
"""One process with T threads against T ranks of one thread each, side by side.

The same training, two ways, on the same global batch: `convkit train MODEL
--batch B` with OMP_NUM_THREADS=T, and `mpirun -np T convkit train MODEL
--batch B/T` with OMP_NUM_THREADS=1 per rank (docs/distributed.md). Rounds
alternate the two (their order rotating), each a fresh job, so that the
machine's drift falls on both. Each run trains one epoch of --limit images
without validation; the figure is the tool's own `train_images_per_sec`
(images of every rank per second of training). Writes every run as a JSON
line (with the load average before and after) and prints the medians and
their ratio.

  benchmarks/compare_ranks.py --convkit build/release/bin/convkit --out FILE.jsonl
cifar10-cnn trains on a synthetic CIFAR-10 (random pixels; speed does not
depend on them) written by scripts/soak.py's writer, since no CIFAR-10 is
installed here.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts"))
from soak import write_synthetic_cifar  # noqa: E402


def load_average():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def run(cmd, env):
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"compare_ranks: {' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr.strip()}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--convkit", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="fmnist-cnn,cifar10-cnn")
    ap.add_argument("--threads", type=int, default=2, help="threads of the one process = ranks of the other")
    ap.add_argument("--batch", type=int, default=64, help="global batch per step")
    ap.add_argument("--limit", type=int, default=6400, help="training images per run")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    assert a.batch % a.threads == 0, "--batch must divide among the ranks"

    cifar = tempfile.mkdtemp(prefix="compare_ranks_cifar_")
    write_synthetic_cifar(f"{cifar}:{a.limit}")
    data = {"fmnist-cnn": "fashion-mnist", "cifar10-cnn": f"cifar10:{cifar}", "cifar10-cnn-bn": f"cifar10:{cifar}"}
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "passive"))
    sides = ["process", "ranks"]
    results = {}
    with open(a.out, "w") as out:
        for r in range(a.rounds):
            for model in a.models.split(","):
                for i in range(len(sides)):
                    side = sides[(i + r) % len(sides)]
                    common = ["train", model, "--data", data[model], "--epochs", "1", "--limit", str(a.limit),
                              "--no-validation", "--test-limit", "1", "--optimizer", "sgd", "--progress", "none",
                              "--json"]
                    if side == "process":
                        cmd = [a.convkit] + common + ["--batch", str(a.batch)]
                        e = dict(env, OMP_NUM_THREADS=str(a.threads))
                    else:
                        cmd = ["mpirun", "--oversubscribe", "-np", str(a.threads), a.convkit] + common + [
                            "--batch", str(a.batch // a.threads)]
                        e = dict(env, OMP_NUM_THREADS="1")
                    before = load_average()
                    j = run(cmd, e)
                    record = {"model": model, "side": side, "round": r + 1, "threads": a.threads,
                              "global_batch": a.batch, "train_images_per_sec": j["train_images_per_sec"],
                              "ranks": j.get("ranks", 1), "load_before": before, "load_after": load_average()}
                    out.write(json.dumps(record) + "\n")
                    out.flush()
                    print(json.dumps(record), flush=True)
                    results.setdefault((model, side), []).append(j["train_images_per_sec"])
    print(f"\n{'model':<16}{'1 process x %d threads' % a.threads:>24}{'%d ranks x 1 thread' % a.threads:>22}{'ratio':>8}")
    for model in a.models.split(","):
        p = statistics.median(results[(model, "process")])
        q = statistics.median(results[(model, "ranks")])
        print(f"{model:<16}{p:>24.0f}{q:>22.0f}{q / p:>7.2f}x")


if __name__ == "__main__":
    main()
