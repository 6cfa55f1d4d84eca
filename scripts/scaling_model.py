#!/usr/bin/env python3
"""The data-parallel scaling model of docs/distributed-scaling.md.

Reads the committed inputs (each zoo model's `convkit summary --json` line,
and the step times `benchmarks/step_times.sh` measured), applies the ring
all-reduce cost to each model's gradient buckets, and prints the doc's tables.

  scripts/scaling_model.py                 # the tables, as markdown
  scripts/scaling_model.py --update        # rewrite them inside docs/distributed-scaling.md
  scripts/scaling_model.py --check         # fail if the doc's tables are stale
  scripts/scaling_model.py --csv FILE      # every prediction, one row each

Every assumption is a constant below (and a flag); the doc says which numbers
are measured and which are assumed.
"""
import argparse
import csv
import json
import math
import pathlib
import statistics
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SUMMARIES = ROOT / "docs/results/scaling-model/summaries.jsonl"
STEP_TIMES = ROOT / "docs/results/amd-epyc-zen3-2t/step-times"
DOC = ROOT / "docs/distributed-scaling.md"
BEGIN, END = "<!-- scaling_model.py: begin -->", "<!-- scaling_model.py: end -->"

RANKS = [2, 4, 8, 16, 32, 64]
BUCKET_BYTES = 25 * 2**20  # PyTorch DDP's bucket_cap_mb = 25 (MiB), which issue 21 follows
BACKWARD_SHARE = 2 / 3  # assumed: backward costs twice the forward (both data and weight gradients)
WORTH_IT = 1.5  # a second device is called worth it when two give at least this speedup
WORTH_IT_BATCHES = [64, 256]  # the global batches the verdict looks at
STRONG_BATCH = 256  # the global batch of the fixed-batch (strong scaling) table

# Links: bandwidth per direction per device (bytes/s) and latency per ring step (s).
LINKS = {
    "NVLink 4": (450e9, 5e-6),  # H100 SXM: 900 GB/s both directions together
    "IB NDR": (50e9, 2e-6),  # 400 Gb/s per port, one port per device
}

# The assumed GPU: an H100 SXM running our FP32 kernels.
GPU_PEAK_FLOPS = 66.9e12  # FP32 FMA peak of the H100 SXM
GPU_EFFICIENCY = 0.25  # assumed fraction of that peak our kernels reach on these small layers
GPU_STEP_OVERHEAD = 0.5e-3  # assumed per-step floor: launches of ~100 small kernels, optimizer


def forward_flops(summary):
    """Forward FLOPs of one example (2 per multiply-add) of conv and dense rows.

    A conv's multiply-adds are its weights times its output positions. A
    ResNet BasicBlock is one row: its convolutions all produce the block's
    output size, so its trainable parameters (BatchNorm's few included) times
    the output positions stand for them. Pools, activations and BatchNorm rows
    are left out: a few percent of a conv's work.
    """
    macs = 0
    for row in summary["layers"]:
        out = row["output_shape"]
        if row["type"] == "Conv2d":
            per_position = row["in_channels"] // row["groups"] * row["kernel_size"][0] * row["kernel_size"][1]
            macs += row["out_channels"] * per_position * out[2] * out[3]
        elif row["type"] == "Linear":
            macs += row["in_features"] * row["out_features"]
        elif row["type"] == "BasicBlock":
            macs += row["trainable"] * out[2] * out[3]
    return 2 * macs


def ring_allreduce(nbytes, n, bandwidth, latency):
    if n == 1:
        return 0.0
    return 2 * (n - 1) / n * nbytes / bandwidth + 2 * (n - 1) * latency


def buckets(nbytes):
    full, rest = divmod(nbytes, BUCKET_BYTES)
    return [BUCKET_BYTES] * full + ([rest] if rest else [])


def predict(step, nbytes, n, bandwidth, latency):
    """(step time without overlap, with overlap) for n devices.

    Without overlap the buckets are reduced one after another once backward
    has ended. With overlap, bucket i can start when backward has produced
    its gradients, assumed to come at an even rate in bytes over backward;
    buckets run one at a time. The last bucket is ready only when backward
    ends, so its reduction is never hidden: a model of one bucket gains
    nothing from overlap.
    """
    parts = buckets(nbytes)
    no_overlap = step + sum(ring_allreduce(b, n, bandwidth, latency) for b in parts)
    backward = BACKWARD_SHARE * step
    forward = step - backward
    done, ready_bytes = forward, 0
    for b in parts:
        ready_bytes += b
        ready = forward + backward * ready_bytes / nbytes
        done = max(done, ready) + ring_allreduce(b, n, bandwidth, latency)
    return no_overlap, max(step, done)


def load_step_times(folder):
    """Seconds per step for each (model, batch): the median over the folder's
    run*.jsonl files, each written by benchmarks/step_times.sh."""
    runs = {}
    files = sorted(folder.glob("run*.jsonl"))
    if not files:
        sys.exit(f"scaling_model.py: no run*.jsonl in {folder}")
    for path in files:
        for line in path.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                runs.setdefault((r["model"], r["batch"]), []).append(r["ms_per_step"])
    return {key: statistics.median(ms) / 1e3 for key, ms in runs.items()}, runs


def load_summaries(path):
    out = {}
    for line in path.read_text().splitlines():
        if line.strip():
            s = json.loads(line)
            out[s["title"].split(":")[0]] = s
    return out


def gpu_step(flops_per_example, batch):
    return 3 * flops_per_example * batch / (GPU_EFFICIENCY * GPU_PEAK_FLOPS) + GPU_STEP_OVERHEAD


def fmt_ms(seconds):
    ms = seconds * 1e3
    return f"{ms:.3g}" if ms < 100 else f"{ms:,.0f}"


def build(args):
    summaries = load_summaries(args.summaries)
    cpu_times, runs = load_step_times(args.step_times)
    models = [m for m in summaries if any(k[0] == m for k in cpu_times)]
    missing = [m for m in summaries if m not in models]
    batches = sorted({b for (_, b) in cpu_times})
    rows, out = [], []

    out.append("### Inputs per model\n")
    out.append("Parameters and gradient bytes from `convkit summary --json`; forward FLOPs estimated from the "
               "same rows; CPU step times **measured** (median ms per step, 2 threads, see the raw file); "
               "GPU step times **assumed** (no GPU measured). Where several runs were made, the "
               "CPU cell is their median, with their range.\n")
    head = "| model | parameters | gradient MB | buckets | forward MFLOP/example |"
    sep = "| --- | ---: | ---: | ---: | ---: |"
    for b in batches:
        head += f" CPU ms/step, batch {b} (measured) |"
        sep += " ---: |"
    for b in batches:
        head += f" H100 ms/step, batch {b} (assumed) |"
        sep += " ---: |"
    out += [head, sep]
    for m in models:
        s = summaries[m]
        nbytes = 4 * s["trainable"]
        line = (f"| {m} | {s['trainable']:,} | {nbytes / 1e6:.1f} | {len(buckets(nbytes))} | "
                f"{forward_flops(s) / 1e6:,.1f} |")
        for b in batches:
            t = cpu_times.get((m, b))
            ms = runs.get((m, b), [])
            spread = f" ({fmt_ms(min(ms) / 1e3)}-{fmt_ms(max(ms) / 1e3)})" if len(ms) > 1 else ""
            line += f" {fmt_ms(t)}{spread} |" if t else " not measured |"
        for b in batches:
            line += f" {fmt_ms(gpu_step(forward_flops(s), b))} |"
        out.append(line)
    if missing:
        out.append(f"\nNot measured on the CPU: {', '.join(missing)}.")

    for device, link in [("gpu", "NVLink 4"), ("gpu", "IB NDR"), ("cpu", "IB NDR")]:
        bandwidth, latency = LINKS[link]
        what = ("H100 (assumed step time)" if device == "gpu" else "this CPU (measured step time)")
        for b in batches:
            out.append(f"\n### {what} over {link}, batch {b} per device\n")
            out.append("Scaling efficiency (step time of 1 device / step time of N), with overlap / without; "
                       "predicted step time with overlap in ms.\n")
            out.append("| model | " + " | ".join(f"N={n}" for n in RANKS) + " |")
            out.append("| --- |" + " ---: |" * len(RANKS))
            for m in models:
                s = summaries[m]
                step = cpu_times.get((m, b)) if device == "cpu" else gpu_step(forward_flops(s), b)
                if step is None:
                    continue
                nbytes = 4 * s["trainable"]
                cells = []
                for n in RANKS:
                    plain, overlapped = predict(step, nbytes, n, bandwidth, latency)
                    cells.append(f"{step / overlapped:.0%} / {step / plain:.0%} ({fmt_ms(overlapped)})")
                    rows.append({"device": device, "link": link, "model": m, "batch_per_device": b, "ranks": n,
                                 "compute_ms": step * 1e3, "gradient_bytes": nbytes,
                                 "step_ms_no_overlap": plain * 1e3, "step_ms_overlap": overlapped * 1e3,
                                 "efficiency_no_overlap": step / plain, "efficiency_overlap": step / overlapped})
                out.append(f"| {m} | " + " | ".join(cells) + " |")

    out.append(f"\n### H100 (assumed step time), the same global batch of {STRONG_BATCH} split over N\n")
    out.append(f"Speedup over one H100 at batch {STRONG_BATCH} (each device takes {STRONG_BATCH}/N), "
               "overlap on, NVLink / InfiniBand: the training is the same, only faster.\n")
    out.append("| model | " + " | ".join(f"N={n}" for n in RANKS) + " |")
    out.append("| --- |" + " ---: |" * len(RANKS))
    for m in models:
        s = summaries[m]
        nbytes, flops = 4 * s["trainable"], forward_flops(s)
        one = gpu_step(flops, STRONG_BATCH)
        cells = []
        for n in RANKS:
            per_device = gpu_step(flops, STRONG_BATCH / n)
            speedups = [one / predict(per_device, nbytes, n, *LINKS[link])[1] for link in LINKS]
            cells.append(" / ".join(f"{x:.2f}x" for x in speedups))
        out.append(f"| {m} | " + " | ".join(cells) + " |")

    out.append("\n### When is a second GPU worth it?\n")
    out.append(f"Two H100s against one (assumed step times, overlap on). *Same global batch*: 2 x B/2 "
               f"against 1 x B, the same training. *Twice the batch*: 2 x B against 1 x B, twice the images "
               f"per step. Called worth it when the same training runs at least {WORTH_IT}x faster.\n")
    head, sep = "| model |", "| --- |"
    for g in WORTH_IT_BATCHES:
        head += f" same global batch {g}, NVLink / IB |"
        sep += " ---: |"
    for g in WORTH_IT_BATCHES:
        head += f" twice the batch, 2 x {g // 2}, NVLink / IB |"
        sep += " ---: |"
    out += [head + " second GPU worth it? |", sep + " --- |"]
    for m in models:
        s = summaries[m]
        nbytes, flops = 4 * s["trainable"], forward_flops(s)
        same, cells = {}, []
        for g in WORTH_IT_BATCHES:
            one, half = gpu_step(flops, g), gpu_step(flops, g / 2)
            same[g] = [one / predict(half, nbytes, 2, *LINKS[link])[1] for link in LINKS]
            cells.append(" / ".join(f"{x:.2f}x" for x in same[g]))
        for g in WORTH_IT_BATCHES:
            half = gpu_step(flops, g // 2)
            twice = [2 * half / predict(half, nbytes, 2, *LINKS[link])[1] for link in LINKS]
            cells.append(" / ".join(f"{x:.2f}x" for x in twice))
        links = list(LINKS)
        fine = [(g, links[i]) for g in WORTH_IT_BATCHES for i in range(len(links)) if same[g][i] >= WORTH_IT]
        if len(fine) == len(WORTH_IT_BATCHES) * len(links):
            verdict = "yes"
        elif fine:
            verdict = "only at " + ", ".join(f"batch {g} on {link}" for g, link in fine)
        else:
            verdict = "no: one GPU is not busy enough; raise its batch first"
        out.append(f"| {m} | " + " | ".join(cells) + f" | {verdict} |")
    return "\n".join(out) + "\n", rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--summaries", type=pathlib.Path, default=SUMMARIES)
    p.add_argument("--step-times", type=pathlib.Path, default=STEP_TIMES,
                   help="folder of run*.jsonl from benchmarks/step_times.sh")
    p.add_argument("--update", action="store_true", help=f"rewrite the tables in {DOC.relative_to(ROOT)}")
    p.add_argument("--check", action="store_true", help="exit 1 if the doc's tables differ from the inputs'")
    p.add_argument("--csv", type=pathlib.Path, help="write every prediction to this file")
    args = p.parse_args()
    tables, rows = build(args)
    if args.csv:
        with args.csv.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            for r in rows:
                w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    if not (args.update or args.check):
        if not args.csv:
            sys.stdout.write(tables)
        return
    doc = DOC.read_text()
    if BEGIN not in doc or END not in doc:
        sys.exit(f"scaling_model.py: {DOC} lacks the markers {BEGIN} and {END}")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{BEGIN}\n{tables}{END}{tail}"
    if args.check:
        if new != doc:
            sys.exit(f"scaling_model.py: the tables in {DOC} are stale; run scripts/scaling_model.py --update")
        return
    DOC.write_text(new)


if __name__ == "__main__":
    main()
