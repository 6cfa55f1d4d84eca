#!/usr/bin/env python3
"""Where PyTorch's CPU training step goes, per operator: the peer's side of
bench_train's layer profile (docs/results/<machine>/profile/).

The step is benchmarks/pytorch_train.py's (same network, batch, SGD and
tuning); torch.profiler records --steps steps after --warmup, and the table
is torch's key_averages, sorted by self CPU time, in ms per step.
    build/pytorch-venv/bin/python benchmarks/pytorch_profile.py --model cifar10-cnn-bn --batch 128
"""
import argparse
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_train  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="cifar10-cnn-bn")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--layout", choices=sorted(pytorch_train.LAYOUTS), default="channels_last")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rows", type=int, default=30)
    args = ap.parse_args()
    if args.steps < 1 or args.warmup < 0 or args.threads < 1:
        sys.exit("pytorch_profile.py: --steps and --threads must be >= 1, --warmup >= 0")
    torch.set_num_threads(args.threads)
    _, step = pytorch_train.make_step(args.model, args.batch, torch.device("cpu"), pytorch_train.LAYOUTS[args.layout])
    for _ in range(args.warmup):
        step()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(args.steps):
            step()
    events = prof.key_averages()
    total_us = sum(e.self_cpu_time_total for e in events)
    print(f"# PyTorch {torch.__version__}, {args.model}, batch {args.batch}, {args.layout}, {args.threads} threads, "
          f"{args.steps} profiled steps after {args.warmup}; capability {torch.backends.cpu.get_cpu_capability()}")
    print(f"# self CPU time of every operator, summed: {total_us / 1e3 / args.steps:.2f} ms per step "
          "(the profiler's own cost included)")
    print(f"{'operator':<48} {'self ms/step':>12} {'calls/step':>10}")
    for e in sorted(events, key=lambda e: -e.self_cpu_time_total)[:args.rows]:
        print(f"{e.key[:48]:<48} {e.self_cpu_time_total / 1e3 / args.steps:>12.3f} {e.count / args.steps:>10.1f}")


if __name__ == "__main__":
    main()
