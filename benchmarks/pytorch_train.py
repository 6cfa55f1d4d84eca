#!/usr/bin/env python3
"""Training throughput of PyTorch eager on a GPU, for scripts/gpu-check.sh.

The same networks as convkit's zoo (cifar10-cnn, resnet18-cifar), the same
synthetic batch (uniform images in [0, 1), uniform labels), the same step
(forward, softmax cross-entropy, zero_grad(set_to_none=True), backward, SGD
lr 0.01 momentum 0.9) as `convkit bench train MODEL --optimizer sgd`.
Prints one JSON line per (model, batch, precision):
    {"model":..., "batch":..., "tf32":..., "images_per_sec":..., ...}
TF32 off is strict FP32 (what convkit's kernels compute); TF32 on is PyTorch's
cuDNN/cuBLAS tensor-core path. Parameter counts are printed so a reader can
check them against `convkit summary MODEL`.
"""
import argparse
import json
import sys
import time

import torch
from torch import nn


def cifar10_cnn(classes=10):
    # 32 -> same 32 -> valid 30 -> pool 15 -> same 15 -> valid 13 -> pool 6; 64*6*6 = 2304.
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(32, 32, 3), nn.ReLU(inplace=True), nn.MaxPool2d(2), nn.Dropout(0.25),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(64, 64, 3), nn.ReLU(inplace=True), nn.MaxPool2d(2), nn.Dropout(0.25),
        nn.Flatten(), nn.Linear(2304, 512), nn.ReLU(inplace=True), nn.Dropout(0.5),
        nn.Linear(512, classes))


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


def resnet18_cifar(classes=10):
    # torchvision's ResNet-18 with a 3x3 stride-1 stem and no max pool.
    layers = [nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True)]
    cin = 64
    for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
        layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, classes)]
    return nn.Sequential(*layers)


MODELS = {"cifar10-cnn": (cifar10_cnn, (3, 32, 32), 1_250_858),
          "resnet18-cifar": (resnet18_cifar, (3, 32, 32), 11_173_962)}


def measure(name, batch, tf32, steps, warmup, device):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True
    make, shape, expected_params = MODELS[name]
    torch.manual_seed(1)
    model = make().to(device).train()
    params = sum(p.numel() for p in model.parameters())
    if params != expected_params:
        sys.exit(f"{name}: {params} parameters, convkit's zoo has {expected_params}")
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = torch.rand((batch,) + shape, device=device)
    labels = torch.randint(0, 10, (batch,), device=device)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        loss = loss_fn(model(images), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(warmup):
        step()
    torch.cuda.synchronize(device)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize(device)
    seconds = time.perf_counter() - start
    return {"library": "pytorch", "version": torch.__version__, "cudnn": torch.backends.cudnn.version(),
            "model": name, "batch": batch, "tf32": tf32, "params": params, "steps": steps,
            "warmup": warmup, "seconds": seconds, "ms_per_step": 1e3 * seconds / steps,
            "images_per_sec": batch * steps / seconds, "gpu": torch.cuda.get_device_name(device)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", default="cifar10-cnn:128,cifar10-cnn:512,resnet18-cifar:128",
                    help="comma-separated MODEL:BATCH")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("pytorch_train.py: no CUDA device visible to PyTorch")
    device = torch.device("cuda:0")
    for run in args.runs.split(","):
        name, batch = run.split(":")
        for tf32 in (False, True):
            print(json.dumps(measure(name, int(batch), tf32, args.steps, args.warmup, device)), flush=True)


if __name__ == "__main__":
    main()
