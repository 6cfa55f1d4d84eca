"""im2col's column matrix for a small layer, and the GEMM that follows.

The column matrix is built by the loop structure of src/cpu/conv/im2col.cpp
(rows (c, r, s), valid_range splitting each row into zeros | copied input |
zeros), reimplemented here and checked against hand-computed entries and
against a direct convolution.
"""
import random

from sources import require
from svg import COLOURS, Svg

SOURCE = "src/cpu/conv/im2col.cpp"
# The statements whose index rule this file reimplements.
RULES = ("T* out = col + ((c * R + r) * S + s) * P * Q;",
         "const std::int64_t row_offset = r * dh - pt;",
         "const std::int64_t col_offset = s * dw - pl;",
         "x_row = x_plane + (p * sh + row_offset) * W;",
         "out_row[q] = x_row[q * sw + col_offset];")

# The drawn layer: one image, C=2, 4x4, two 3x3 filters, stride 1, pad 1.
LAYER = dict(C=2, H=4, W=4, K=2, R=3, S=3, stride=1, pad=1, dilation=1)
PATCH = (1, 2)  # the output (p, q) whose patch and column are highlighted


def out_size(n, k, stride, pad, dilation):
    return (n + 2 * pad - dilation * (k - 1) - 1) // stride + 1


def valid_range(count, stride, offset, limit):
    """conv_common.h's valid_range: the i < count with 0 <= i*stride + offset < limit."""
    begin = 0 if offset >= 0 else (-offset + stride - 1) // stride
    last = limit - 1 - offset
    end = 0 if last < 0 else min(count, last // stride + 1)
    return min(begin, end), end


def im2col(x, C, H, W, R, S, stride, pad, dilation, **_):
    P, Q = out_size(H, R, stride, pad, dilation), out_size(W, S, stride, pad, dilation)
    col = [[0] * (P * Q) for _ in range(C * R * S)]
    for c in range(C):
        for r in range(R):
            row_offset = r * dilation - pad
            rows = valid_range(P, stride, row_offset, H)
            for s in range(S):
                out = col[(c * R + r) * S + s]
                col_offset = s * dilation - pad
                cols = valid_range(Q, stride, col_offset, W)
                for p in range(rows[0], rows[1]):
                    for q in range(cols[0], cols[1]):
                        out[p * Q + q] = x[c][p * stride + row_offset][q * stride + col_offset]
    return col


def example():
    """Input values 1..32 (channel 0 holds 1..16), small integer filters."""
    L = LAYER
    x = [[[c * 16 + h * 4 + w + 1 for w in range(L["W"])] for h in range(L["H"])] for c in range(L["C"])]
    rng = random.Random(7)
    w = [[rng.randint(-2, 2) for _ in range(L["C"] * L["R"] * L["S"])] for _ in range(L["K"])]
    return x, w


def gemm(a, b):
    return [[sum(a[i][k] * b[k][j] for k in range(len(b))) for j in range(len(b[0]))] for i in range(len(a))]


def direct(x, w, C, H, W, K, R, S, stride, pad, dilation):
    P, Q = out_size(H, R, stride, pad, dilation), out_size(W, S, stride, pad, dilation)
    y = [[0] * (P * Q) for _ in range(K)]
    for k in range(K):
        for p in range(P):
            for q in range(Q):
                for c in range(C):
                    for r in range(R):
                        for s in range(S):
                            h, ww = p * stride - pad + r * dilation, q * stride - pad + s * dilation
                            if 0 <= h < H and 0 <= ww < W:
                                y[k][p * Q + q] += x[c][h][ww] * w[k][(c * R + r) * S + s]
    return y


def check(im2col_fn=im2col):
    for rule in RULES:
        require(SOURCE, rule)
    x, w = example()
    col = im2col_fn(x, **LAYER)
    # Entries worked out by hand from col[(c*R + r)*S + s][p*Q + q] = x[c][p - 1 + r][q - 1 + s]:
    hand = {
        (0, 0): 0,    # (c,r,s) = (0,0,0), (p,q) = (0,0): x[0][-1][-1], padding
        (4, 0): 1,    # (0,1,1), (0,0): x[0][0][0]
        (4, 5): 6,    # (0,1,1), (1,1): x[0][1][1] = 0 + 1*4 + 1 + 1
        (0, 6): 2,    # (0,0,0), (1,2): x[0][0][1]
        (13, 15): 32,  # (1,1,1), (3,3): x[1][3][3], the last input value
        (17, 15): 0,  # (1,2,2), (3,3): x[1][4][4], padding
        (11, 9): 23,  # (1,0,2), (2,1): x[1][1][2] = 16 + 1*4 + 2 + 1
    }
    for (row, column), value in hand.items():
        if col[row][column] != value:
            raise AssertionError(f"im2col: col[{row}][{column}] = {col[row][column]}, worked by hand: {value}")
    if gemm(w, col) != direct(x, w, **LAYER):
        raise AssertionError("im2col: W * col differs from the direct convolution")


def draw():
    check()
    L = LAYER
    x, w = example()
    col = im2col(x, **L)
    y = gemm(w, col)
    C, H, W, K, R, S, pad = L["C"], L["H"], L["W"], L["K"], L["R"], L["S"], L["pad"]
    P, Q = out_size(H, R, 1, pad, 1), out_size(W, S, 1, pad, 1)
    pp, pq = PATCH
    target = pp * Q + pq
    hl, hl2, grey = COLOURS["highlight"], COLOURS["highlight2"], COLOURS["pad"]

    s = Svg(1240, 920, "im2col: the unrolled column matrix and its GEMM")
    s.text(24, 36, "im2col + GEMM: every output's receptive field becomes one column", size=22, weight="bold")
    s.text(24, 60, f"C={C}, H=W={H}, K={K} filters of {R}x{S}, stride 1, pad {pad}  \u2192  P=Q={P};"
           f"  col is C\u00b7R\u00b7S x P\u00b7Q = {C * R * S} x {P * Q}", size=14)
    s.text(24, 80, "col[(c\u00b7R + r)\u00b7S + s][p\u00b7Q + q] = x[c][p\u00b7sh \u2212 pt + r\u00b7dh][q\u00b7sw \u2212 pl"
           " + s\u00b7dw]   (0 in the padding), as src/cpu/conv/im2col.cpp writes it", size=14, mono=False)

    # The input planes with their padding ring, the patch of output PATCH highlighted.
    cell = 30
    for c in range(C):
        ox, oy = 24 + c * (cell * (W + 2) + 30), 130
        s.text(ox, oy - 10, f"x[{c}] (padded)", size=14, weight="bold")
        for i in range(-pad, H + pad):
            for j in range(-pad, W + pad):
                inside = 0 <= i < H and 0 <= j < W
                in_patch = pp - pad <= i < pp - pad + R and pq - pad <= j < pq - pad + S
                fill = hl if in_patch else ("#ffffff" if inside else grey)
                xx, yy = ox + (j + pad) * cell, oy + (i + pad) * cell
                s.rect(xx, yy, cell, cell, fill=fill, stroke="#b5b5b5", width=0.6, dash=None if inside else "3,2")
                s.text(xx + cell / 2, yy + cell / 2 + 5, str(x[c][i][j]) if inside else "0", size=13,
                       anchor="middle", mono=True, colour=None if inside else "#999999")
    s.legend(24, 350, [(hl, "#999", f"patch of output (p, q) = ({pp}, {pq}) and its column {target} of col"),
                       (grey, "#999", "zeros: the padding (im2col writes them into col)"),
                       (hl2, "#999", "filter k = 0: its row of W and its outputs")], size=13)
    s.lines(24, 445, ["Row (c, r, s) of col is tap (r, s) of channel c,",
                      "seen from every output position: the input",
                      "plane shifted by (r \u2212 pad, s \u2212 pad).",
                      "",
                      "im2col.cpp fills a row as P runs of Q values:",
                      "zeros | copied input row | zeros, split by",
                      "valid_range (src/cpu/conv/conv_common.h),",
                      "so the copy loop needs no bounds checks."], size=13)

    # The column matrix.
    cx, cy, cw, chh = 560, 150, 38, 22
    s.text(cx, cy - 34, f"col ({C * R * S} x {P * Q}): one row per tap (c, r, s), one column per output (p, q)", size=14,
           weight="bold")
    for j in range(P * Q):
        s.text(cx + j * cw + cw / 2, cy - 8, f"{j // Q},{j % Q}", size=11, anchor="middle", mono=True)
    for i in range(C * R * S):
        c, r, t = i // (R * S), (i // S) % R, i % S
        s.text(cx - 8, cy + i * chh + 15, f"({c},{r},{t})", size=11, anchor="end", mono=True)
    fills = {(i, target): hl for i in range(C * R * S)}
    for i in range(C * R * S):
        for j in range(P * Q):
            if col[i][j] == 0 and (i, j) not in fills:
                fills[(i, j)] = grey
    s.matrix(cx, cy, col, cell=cw, cell_h=chh, size=12, fills=fills)

    # The GEMM: Y (K x PQ) = W (K x CRS) * col, Y's columns under col's.
    gy = cy + C * R * S * chh + 84
    s.text(24, gy - 40, f"GEMM: Y (K x P\u00b7Q) = W (K x C\u00b7R\u00b7S) \u00b7 col;  Y[k][{target}] = W[k] \u00b7 col[:, {target}]"
           f" = {y[0][target]} for k = 0", size=15, weight="bold")
    s.text(24, gy - 14, "W: the filters w[k][c][r][s] as rows (their memory layout already is)", size=13)
    wx = 24
    s.matrix(wx, gy, w, cell=25, cell_h=26, size=11, fills={(0, i): hl2 for i in range(C * R * S)})
    s.text(wx + 25 * C * R * S + 10, gy + 32, "\u00b7 col  =", size=15, weight="bold")
    yfills = {(0, j): hl2 for j in range(P * Q)}
    yfills[(0, target)] = hl
    yfills[(1, target)] = hl
    s.matrix(cx, gy, y, cell=cw, cell_h=26, size=11, fills=yfills)
    s.text(cx, gy + 76, f"Y reshaped: y[k] is K x P x Q = {K} x {P} x {Q} (no copy: row k, position p\u00b7Q + q)",
           size=13)
    for k in range(K):
        grid = [y[k][p * Q:(p + 1) * Q] for p in range(P)]
        gf = {(p, q): (hl if (p, q) == PATCH else (hl2 if k == 0 else "#ffffff")) for p in range(P) for q in range(Q)}
        s.text(cx + k * 240, gy + 106, f"y[{k}]", size=13, weight="bold")
        s.matrix(cx + k * 240 + 40, gy + 94, grid, cell=40, cell_h=24, size=11, fills=gf)
    s.lines(24, gy + 120, ["The GPU builds the same matrix (kernels/im2col.cu) for",
                           "conv2d_implicit_gemm v1; v2 and v3 never store it and",
                           "gather each column entry inside the GEMM instead, as the",
                           "cpu's tap kernels do (src/cpu/conv/tap_gemm.h)."], size=13)
    return s.render()
