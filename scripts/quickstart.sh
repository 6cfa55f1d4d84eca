#!/usr/bin/env bash
# The main job: installs what is missing, builds convkit, then trains the
# zoo's fmnist-cnn on the real Fashion-MNIST (Debian's dataset-fashion-mnist)
# for 2 epochs on the CPU and prints the test accuracy, the training speed and
# a throughput benchmark — a few minutes on a 2-core machine once built.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
./third_party/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" >/dev/null

convkit=build/release/bin/convkit
out=build/quickstart
"$convkit" --version
"$convkit" devices
"$convkit" summary fmnist-cnn
# Trains (one progress line per epoch), then prints the test loss and
# accuracy and the training images/s; keeps log.csv and checkpoints in $out.
"$convkit" train fmnist-cnn --data fashion-mnist --device cpu --epochs 2 --out "$out"
# The checkpoint alone reproduces the test figures (its preprocessing is stored in it).
"$convkit" eval "$out/last.ckpt"
# Training throughput on synthetic data: forward + backward + Adam step.
"$convkit" bench train fmnist-cnn --device cpu --batch 64 --steps 20
