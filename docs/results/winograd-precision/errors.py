#!/usr/bin/env python3
"""Winograd F(2x2,3x3) and F(4x4,3x3) with their products' operands rounded
to float32, tf32 or bf16, against a float64 direct correlation; direct
correlations with tf32 and bf16 operands beside them.

Each run: 64 tiles of one output block each, C input and 64 output channels,
inputs N(0,1), filters N(0, 2/(9C)) (He), seed 0. Per output: |err| / |ref|
(median over outputs) and max |err| / max |ref|. The transforms are float32
(as on the GPU), the products' sums float64 then rounded (the tensor cores
accumulate in float32; that adds ~1e-7, far below the operands' rounding).

    python3 docs/results/winograd-precision/errors.py > docs/results/winograd-precision/errors.txt
"""
import numpy as np

rng = np.random.default_rng(0)
# F(4,3): points 0, 1, -1, 2, -2, infinity; F(2,3): 0, 1, -1, infinity
# (src/cpu/conv/winograd_transforms.h).
BT4 = np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0],
                [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], float)
G4 = np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6], [1 / 24, 1 / 12, 1 / 6],
               [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]], float)
AT4 = np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]], float)
BT2 = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], float)
G2 = np.array([[1, 0, 0], [.5, .5, .5], [.5, -.5, .5], [0, 0, 1]], float)
AT2 = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], float)


def tf32(x):  # cvt.rna.tf32.f32
    b = x.astype(np.float32).view(np.uint32)
    return ((b + np.uint32(0x1000)) & np.uint32(0xffffe000)).view(np.float32)


def bf16(x):  # cvt.rn.bf16.f32
    b = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    b = ((b + 0x7fff + ((b >> 16) & 1)) >> 16) << 16
    return b.astype(np.uint32).view(np.float32)


ROUNDINGS = {'float32': lambda x: x, 'tf32': tf32, 'bf16': bf16}


def operands(C, K, m, tiles=64):
    d = rng.standard_normal((tiles, C, m + 2, m + 2)).astype(np.float32)
    w = (rng.standard_normal((K, C, 3, 3)) * np.sqrt(2 / (9 * C))).astype(np.float32)
    return d, w


def correlate(d, w, m):
    y = np.zeros((d.shape[0], w.shape[0], m, m))
    for r in range(3):
        for s in range(3):
            y += np.einsum('tcij,kc->tkij', d[:, :, r:r + m, s:s + m].astype(np.float64), w[:, :, r, s].astype(np.float64))
    return y


def errors(y, ref):
    err = np.abs(y.astype(np.float64) - ref)
    return np.median(err / np.maximum(np.abs(ref), 1e-30)), err.max() / np.abs(ref).max()


def winograd(C, m, rounding):
    BT, G, AT = (BT4, G4, AT4) if m == 4 else (BT2, G2, AT2)
    d, w = operands(C, 64, m)
    U = rounding(np.einsum('xr,kcrs,ys->kcxy', G, w, G).astype(np.float32))
    V = rounding(np.einsum('xi,tcij,yj->tcxy', BT, d, BT).astype(np.float32))
    M = np.einsum('kcxy,tcxy->tkxy', U.astype(np.float64), V.astype(np.float64)).astype(np.float32)
    y = np.einsum('ix,tkxy,jy->tkij', AT, M, AT).astype(np.float32)
    return errors(y, correlate(d, w, m))


def direct(C, rounding):
    d, w = operands(C, 64, 4)
    y = correlate(rounding(d), rounding(w), 4).astype(np.float32)
    return errors(y, correlate(d, w, 4))


print('channels  algorithm       products  median |err|/|ref|  max|err|/max|ref|')
for C in (64, 256):
    for name, rounding in ROUNDINGS.items():
        for m in (2, 4):
            med, mx = winograd(C, m, rounding)
            print(f'{C:8d}  winograd F({m}x{m})  {name:8s}  {med:18.2e}  {mx:17.2e}')
    for name in ('tf32', 'bf16'):
        med, mx = direct(C, ROUNDINGS[name])
        print(f'{C:8d}  direct          {name:8s}  {med:18.2e}  {mx:17.2e}')
