#!/usr/bin/env python3
"""Draws the diagrams of docs/ from the sources, as SVG (standard library only).

  python3 docs/diagrams/generate.py              rewrite the SVGs in docs/diagrams/
  python3 docs/diagrams/generate.py --out DIR    write them to DIR instead
  python3 docs/diagrams/generate.py --check      draw into a temporary folder and
                                                 fail if a committed SVG differs

Every diagram first runs its own checks (names and constants still in the
sources, the Winograd and im2col arithmetic, the FFT tile choice) and stops
with a message naming what moved.
"""
import argparse
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # keep docs/diagrams free of __pycache__
sys.path.insert(0, HERE)

import fft_tiling  # noqa: E402
import flow  # noqa: E402
import gemm_tiles  # noqa: E402
import im2col  # noqa: E402
import winograd  # noqa: E402

DIAGRAMS = {
    "op_backend_kernel_flow.svg": flow.draw,
    "im2col_unrolled.svg": im2col.draw,
    "fft_tiling.svg": fft_tiling.draw,
    "winograd_transforms.svg": winograd.draw,
    "gemm_tile_hierarchy.svg": gemm_tiles.draw,
}


def write_all(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    for name, draw in DIAGRAMS.items():
        with open(os.path.join(out_dir, name), "w", encoding="utf-8", newline="\n") as f:
            f.write(draw())


def stale(committed_dir, fresh_dir):
    """Names whose committed SVG is missing or differs from a fresh drawing."""
    out = []
    for name in DIAGRAMS:
        path = os.path.join(committed_dir, name)
        with open(os.path.join(fresh_dir, name), encoding="utf-8") as f:
            fresh = f.read()
        if not os.path.isfile(path):
            out.append(f"{name} (not committed)")
            continue
        with open(path, encoding="utf-8") as f:
            if f.read() != fresh:
                out.append(name)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=HERE, help="folder for the SVGs (default: docs/diagrams)")
    parser.add_argument("--check", action="store_true", help="fail if a committed SVG differs from a fresh one")
    parser.add_argument("--committed", default=HERE, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            write_all(tmp)
            bad = stale(args.committed, tmp)
        if bad:
            print("docs/diagrams: out of date with the sources: " + ", ".join(bad) +
                  "\nrun: python3 docs/diagrams/generate.py, look at the pictures, commit them", file=sys.stderr)
            return 1
        print(f"docs/diagrams: {len(DIAGRAMS)} diagrams match the sources")
        return 0
    write_all(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
