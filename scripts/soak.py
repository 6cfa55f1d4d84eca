#!/usr/bin/env python3
"""Soak: trains one zoo model for a fixed wall time and records the process's
resident memory (VmRSS) as it goes, to show that a long run does not grow.

  scripts/soak.py --convkit build/release/bin/convkit --minutes 20 \\
      --name fmnist-cnn --out docs/results/soak -- fmnist-cnn --limit 6000

Everything after `--` goes to `convkit train` (the script adds --epochs,
--progress lines and --out). Each epoch is followed by validation and a
checkpoint save, so one epoch exercises the whole loop: loader workers,
forward, backward, optimizer, evaluation, checkpoint writing. Short epochs
(--limit) give many epochs in the window, which is what a leak needs to show.

`--synthetic-cifar DIR:N` first writes a CIFAR-10 binary data set of N random
training images (and N/5 test images) into DIR, for machines without the
real one; memory use depends on the pipeline, not on what the pixels show.

Writes OUT/NAME.csv (seconds, rss_kib, epochs_done, epochs_saved: one row
per sample; epochs_done counts the epoch summary lines, epochs_saved the
writes of last.ckpt, which end an epoch) and OUT/NAME.json (the run, RSS
after the first epoch, at the end, the maximum after the first epoch, and
the growth in percent), then plots every CSV in OUT into OUT/soak.png
(gnuplot). The run ends with SIGTERM, which stops training at the end of a
step and saves last.ckpt. The exit status is 1 when growth after the first
epoch is 1% or more.

"After the first epoch" means after all of it, its checkpoint saves
included: the first sample taken once last.ckpt has been written. The
summary line comes before the saves, and their serialisation buffers raise
the allocator's high-water mark once; a baseline taken between the two sits
below the plateau every later epoch shares (docs/results/soak/README.md,
run 2). The growth from the summary line is still reported, as
growth_percent_from_first_epoch_line.

  scripts/soak.py --summarize OUT/*.csv

prints the growth figures again from CSVs (one JSON line each).
"""
import argparse
import json
import os
import random
import glob
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time


def write_synthetic_cifar(spec):
    directory, count = spec.rsplit(":", 1)
    count = int(count)
    os.makedirs(directory, exist_ok=True)
    rng = random.Random(1)
    per_batch = max(1, count // 5)

    def write(name, n):
        with open(os.path.join(directory, name), "wb") as f:
            for _ in range(n):
                f.write(bytes([rng.randrange(10)]))
                f.write(rng.randbytes(3072))

    for b in range(1, 6):
        write(f"data_batch_{b}.bin", per_batch)
    write("test_batch.bin", max(1, count // 5))


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


def growth(samples):
    """RSS growth from a baseline sample to the peak after it, in percent,
    for three baselines: the first sample after the first epoch's saves
    (the pass/fail figure; samples of CSVs written before epochs_saved was
    recorded have no such column, and get none), after its summary line,
    and after the second epoch's summary line."""
    out = {}
    baselines = (
        ("first_epoch", "growth_percent", lambda s: len(s) > 3 and s[3] >= 1),
        ("first_epoch_line", "growth_percent_from_first_epoch_line", lambda s: s[2] >= 1),
        ("second_epoch_line", "growth_percent_from_second_epoch", lambda s: s[2] >= 2),
    )
    for name, key, after_baseline in baselines:
        after = [s for s in samples if after_baseline(s)]
        if len(after) < 2:
            continue
        base, peak = after[0][1], max(s[1] for s in after)
        out[f"rss_kib_after_{name}"] = base
        out[f"rss_kib_max_after_{name}"] = peak
        out[key] = round(100.0 * (peak - base) / base, 3)
    if samples:
        out["rss_kib_end"] = samples[-1][1]
    return out


def summarize(csv_path):
    with open(csv_path) as f:
        next(f)
        samples = [(float(row[0]), *(int(v) for v in row[1:]))
                   for row in (line.strip().split(",") for line in f if line.strip())]
    print(json.dumps({"csv": csv_path, **growth(samples)}))


def plot(out_dir):
    """OUT/soak.png: every run's RSS (MiB) against minutes, one line per CSV."""
    if not shutil.which("gnuplot"):
        print("soak: gnuplot not found; no plot", file=sys.stderr)
        return
    csvs = sorted(glob.glob(os.path.join(out_dir, "*.csv")))
    lines = ", ".join(
        f"'{c}' using ($1/60):($2/1024) with linespoints title '{os.path.basename(c)[:-4]}'" for c in csvs)
    script = (f"set terminal png size 900,500\nset output '{os.path.join(out_dir, 'soak.png')}'\n"
              "set datafile separator ','\nset key bottom right\nset grid\n"
              "set xlabel 'minutes'\nset ylabel 'resident memory (MiB)'\nset yrange [0:*]\n"
              "set title 'convkit train: resident memory during a soak run'\n"
              f"plot {lines}\n")
    subprocess.run(["gnuplot"], input=script, text=True, check=True)


def main():
    if sys.argv[1:2] == ["--summarize"]:
        for path in sys.argv[2:]:
            summarize(path)
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--convkit", required=True)
    ap.add_argument("--minutes", type=float, default=20)
    ap.add_argument("--interval", type=float, default=60, help="seconds between samples (60)")
    ap.add_argument("--name", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--synthetic-cifar", metavar="DIR:N")
    ap.add_argument("train", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    train_args = a.train[1:] if a.train[:1] == ["--"] else a.train
    if not train_args:
        ap.error("give the model and options for `convkit train` after --")
    if a.synthetic_cifar:
        write_synthetic_cifar(a.synthetic_cifar)
    os.makedirs(a.out, exist_ok=True)

    run_dir = tempfile.mkdtemp(prefix=f"soak-{a.name}-")
    cmd = [a.convkit, "train", *train_args, "--epochs", "100000", "--progress", "lines", "--out", run_dir]
    print("soak:", " ".join(cmd), flush=True)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    epochs_done = 0
    lock = threading.Lock()
    tail = []

    def read_output():
        nonlocal epochs_done
        for line in proc.stdout:
            tail.append(line)
            del tail[:-20]
            # An epoch's summary line ends with its validation metrics.
            if re.search(r"\] - .* - loss: ", line):
                with lock:
                    epochs_done += 1

    reader = threading.Thread(target=read_output, daemon=True)
    reader.start()

    # Each epoch ends by replacing last.ckpt (atomically, by rename), so a
    # new modification time is an epoch fully done. Polled every second; an
    # epoch is far longer.
    last_ckpt = os.path.join(run_dir, "last.ckpt")
    last_mtime = None
    epochs_saved = 0

    def poll_saves():
        nonlocal last_mtime, epochs_saved
        try:
            mtime = os.stat(last_ckpt).st_mtime_ns
        except FileNotFoundError:
            return
        if mtime != last_mtime:
            last_mtime = mtime
            epochs_saved += 1

    start = time.monotonic()
    samples = []  # (seconds, rss_kib, epochs_done, epochs_saved)
    deadline = start + 60 * a.minutes
    next_sample = start
    while proc.poll() is None and time.monotonic() < deadline:
        now = time.monotonic()
        poll_saves()
        if now >= next_sample:
            with lock:
                samples.append((round(now - start, 1), rss_kib(proc.pid), epochs_done, epochs_saved))
            next_sample += a.interval
        time.sleep(min(1.0, max(0.0, next_sample - time.monotonic())))
    if proc.poll() is None:
        poll_saves()
        with lock:
            samples.append((round(time.monotonic() - start, 1), rss_kib(proc.pid), epochs_done, epochs_saved))
        proc.send_signal(signal.SIGTERM)
    status = proc.wait()
    reader.join(timeout=10)
    if status not in (0, 128 + signal.SIGTERM):
        sys.stderr.write("".join(tail))
        sys.exit(f"soak: convkit train exited with status {status}")

    with open(os.path.join(a.out, f"{a.name}.csv"), "w") as f:
        f.write("seconds,rss_kib,epochs_done,epochs_saved\n")
        for s in samples:
            f.write(",".join(str(v) for v in s) + "\n")
    summary = {"name": a.name, "command": " ".join(cmd[:1] + ["train"] + train_args),
               "minutes": a.minutes, "interval_s": a.interval, "epochs_done": epochs_done,
               "epochs_saved": epochs_saved, "samples": len(samples)}
    summary.update(growth(samples))
    with open(os.path.join(a.out, f"{a.name}.json"), "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    print(json.dumps(summary, indent=1))
    shutil.rmtree(run_dir, ignore_errors=True)
    plot(a.out)
    if "growth_percent" not in summary:
        sys.exit("soak: fewer than two samples after the first epoch's saves; run longer or with smaller epochs")
    sys.exit(1 if summary["growth_percent"] >= 1.0 else 0)


if __name__ == "__main__":
    main()
