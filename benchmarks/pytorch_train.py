#!/usr/bin/env python3
"""Training throughput of PyTorch eager, on a GPU (scripts/gpu-check.sh) or on the CPU (benchmarks/compare_pytorch.py).

The same networks as convkit's zoo (benchmarks/pytorch_models.py), the same
synthetic batch (uniform images in [0, 1), uniform labels), the same step
(forward, softmax cross-entropy, zero_grad(set_to_none=True), backward, SGD
lr 0.01 momentum 0.9) as `convkit bench train MODEL --optimizer sgd`.
Prints one JSON line per (model, batch, precision or layout):
    {"model":..., "batch":..., "images_per_sec":..., ...}
On a GPU: TF32 off is strict FP32 (what convkit's kernels compute); TF32 on
is PyTorch's cuDNN/cuBLAS tensor-core path.
On the CPU (--device cpu) PyTorch is set up as a user tuning for CPU speed
would: torch.set_num_threads(--threads), in-place ReLUs, and the memory
layout given by --layout: nchw (contiguous), channels_last (NHWC, oneDNN's
preferred layout for convolutions) or both, one line each.
"""
import argparse
import json
import os
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_models  # noqa: E402


def make_step(name, batch, device, memory_format):
    torch.manual_seed(1)
    model, shape = pytorch_models.create(name)
    model = model.to(device).train()
    images = torch.rand((batch,) + shape, device=device)
    if memory_format is not None:
        model = model.to(memory_format=memory_format)
        images = images.contiguous(memory_format=memory_format)
    labels = torch.randint(0, 10, (batch,), device=device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        loss = loss_fn(model(images), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return model, step


def timed(step, steps, warmup, sync):
    for _ in range(warmup):
        step()
    sync()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    return time.perf_counter() - start


def record(name, batch, model, steps, warmup, seconds):
    return {"library": "pytorch", "version": torch.__version__, "model": name, "batch": batch,
            "params": sum(p.numel() for p in model.parameters()), "steps": steps, "warmup": warmup,
            "seconds": seconds, "ms_per_step": 1e3 * seconds / steps, "images_per_sec": batch * steps / seconds}


def measure_gpu(name, batch, tf32, steps, warmup, device):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True
    model, step = make_step(name, batch, device, None)
    seconds = timed(step, steps, warmup, lambda: torch.cuda.synchronize(device))
    return dict(record(name, batch, model, steps, warmup, seconds), tf32=tf32,
                cudnn=torch.backends.cudnn.version(), gpu=torch.cuda.get_device_name(device))


LAYOUTS = {"nchw": torch.contiguous_format, "channels_last": torch.channels_last}


def measure_cpu(name, batch, layout, steps, warmup):
    model, step = make_step(name, batch, torch.device("cpu"), LAYOUTS[layout])
    seconds = timed(step, steps, warmup, lambda: None)
    return dict(record(name, batch, model, steps, warmup, seconds), device="cpu", layout=layout,
                threads=torch.get_num_threads())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", default="cifar10-cnn:128,cifar10-cnn:512,resnet18-cifar:128",
                    help="comma-separated MODEL:BATCH")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--threads", type=int, default=2, help="CPU only: torch.set_num_threads (default 2)")
    ap.add_argument("--layout", choices=["nchw", "channels_last", "both"], default="both",
                    help="CPU only: the memory layout of the images and the model (default both)")
    args = ap.parse_args()
    if args.steps < 1 or args.warmup < 0 or args.threads < 1:
        sys.exit("pytorch_train.py: --steps and --threads must be >= 1, --warmup >= 0")
    runs = []
    for run in args.runs.split(","):
        name, _, batch = run.partition(":")
        if not batch.isdigit() or int(batch) < 1:
            sys.exit(f"pytorch_train.py: --runs expects MODEL:BATCH with a positive batch, got '{run}'")
        runs.append((name, int(batch)))
    if args.device == "cpu":
        torch.set_num_threads(args.threads)
        layouts = list(LAYOUTS) if args.layout == "both" else [args.layout]
        for name, batch in runs:
            for layout in layouts:
                print(json.dumps(measure_cpu(name, batch, layout, args.steps, args.warmup)), flush=True)
        return
    if not torch.cuda.is_available():
        sys.exit("pytorch_train.py: no CUDA device visible to PyTorch")
    device = torch.device("cuda:0")
    for name, batch in runs:
        for tf32 in (False, True):
            print(json.dumps(measure_gpu(name, batch, tf32, args.steps, args.warmup, device)), flush=True)


if __name__ == "__main__":
    main()
