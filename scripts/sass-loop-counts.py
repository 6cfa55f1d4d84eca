#!/usr/bin/env python3
"""Counts the instructions of the loops that issue tensor-core mma (HMMA, or
wgmma's HGMMA) in a kernel's SASS: per loop, instructions, HMMA, HGMMA,
cp.async (LDGSTS), shared loads (LDS) and barriers, and instructions per
HMMA (per HGMMA where there is no HMMA). A static count of one
pass through the loop body: what the GPU issues per K-step, before stalls.
With --ffma, the SIMT loops instead: those that issue FFMA and no global
store (the K loop, not a batch loop around it and the epilogue), with the
share of their instructions that are FFMA.

  scripts/sass-loop-counts.py KERNEL.cu [--nvdisasm PATH] [--match TEXT ...] [--ffma]

compiles KERNEL.cu for sm_90a (nvcc -cubin, the flags of
scripts/compile-kernels.sh), disassembles it and prints each kernel whose
demangled name contains every TEXT. nvdisasm ships with the full CUDA
toolkit, or from PyPI (pip install nvidia-cuda-nvdisasm: nvidia/cu13/bin/).
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def kernels(sass):
    """(mangled name, [instruction text]) per kernel, with label positions."""
    parts = re.split(r"\n\s*\.text\.(\S+):", sass)
    for i in range(1, len(parts), 2):
        instructions, labels = [], {}
        for line in parts[i + 1].split("\n"):
            label = re.match(r"^\.(L_x_\d+):", line.strip())
            if label:
                labels[label.group(1)] = len(instructions)
                continue
            op = re.search(r"/\*[0-9a-f]{4,}\*/\s+(.*?);", line)
            if op:
                instructions.append(op.group(1))
        yield parts[i].rstrip(":"), instructions, labels


def loops(instructions, labels, wanted):
    """The loops (a backward branch to a label) whose body `wanted` accepts."""
    for j, text in enumerate(instructions):
        branch = re.search(r"BRA\s+`?\(?\.?(L_x_\d+)", text)
        if branch and labels.get(branch.group(1), j + 1) <= j:
            body = instructions[labels[branch.group(1)]: j + 1]
            if wanted(body):
                yield body


def issues_mma(body):
    return any("HMMA" in x or "HGMMA" in x for x in body)


def is_simt_k_loop(body):
    ops = collections.Counter(opcode(x) for x in body)
    return ops["FFMA"] > 0 and ops["STG"] == 0


def opcode(text):
    return re.sub(r"^@!?U?P\w+\s+", "", text).split()[0].split(".")[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source")
    parser.add_argument("--nvdisasm", default="nvdisasm")
    parser.add_argument("--match", nargs="*", default=[])
    parser.add_argument("--ffma", action="store_true", help="count the SIMT K loops (FFMA) instead")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "k.cubin")
        subprocess.run(["nvcc", "-std=c++20", "-O3", "-Iinclude", "-Isrc", "-I.", "-Ibuild/release/include",
                        "-gencode", "arch=compute_90a,code=sm_90a", "-cubin", args.source, "-o", cubin],
                       cwd=ROOT, check=True)
        sass = subprocess.run([args.nvdisasm, "-c", cubin], check=True, capture_output=True, text=True).stdout
    for name, instructions, labels in kernels(sass):
        readable = subprocess.run(["c++filt", name], capture_output=True, text=True).stdout.strip()
        if not all(m in readable for m in args.match):
            continue
        for body in loops(instructions, labels, is_simt_k_loop if args.ffma else issues_mma):
            ops = collections.Counter(opcode(x) for x in body)
            if args.ffma:
                print(f"{readable}\n  loop: {len(body)} instructions, FFMA {ops['FFMA']} "
                      f"({ops['FFMA'] / len(body):.1%}), LDGSTS {ops['LDGSTS']}, LDS {ops['LDS']}, "
                      f"LDL {ops['LDL']}, BAR {ops['BAR']}")
                continue
            unit = "HMMA" if ops["HMMA"] else "HGMMA"
            print(f"{readable}\n  loop: {len(body)} instructions, HMMA {ops['HMMA']}, HGMMA {ops['HGMMA']}, "
                  f"LDGSTS {ops['LDGSTS']}, LDS {ops['LDS']}, BAR {ops['BAR']}; {len(body) / ops[unit]:.1f} per {unit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
