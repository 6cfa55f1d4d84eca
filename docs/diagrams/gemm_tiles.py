"""The tile hierarchy of the GPU GEMM (kernels/gemm.cu v3): grid, block, warp, thread.

The constants are read from the kernel's `namespace v3 { ... }`, and the
thread-to-element map from fragment_offset, so the picture follows the code.
v3 has no warp tile of its own: a warp is 32 consecutive threads, two rows
of the 16 x 16 thread grid. A version that names its warp tile (kWarpM,
kWarpN in its namespace) can be drawn by adding it to VERSIONS.
"""
import re

from sources import SourceError, int_constants, namespace_body, read, require
from svg import COLOURS, Svg

SOURCE = "kernels/gemm.cu"
# version -> the constants its drawing needs, read from `namespace vN`.
VERSIONS = {"v3": ("kTileM", "kTileN", "kTileK", "kThreadM", "kThreadN", "kPad")}
FRAGMENT = "return (i / V) * (16 * V) + lane * V + i % V;"
WARP = 32  # threads per warp: fixed by the hardware, not by gemm.cu


def constants(version="v3", text=None):
    text = read(SOURCE) if text is None else text
    body = namespace_body(text, version, SOURCE)
    found = int_constants(body, VERSIONS[version], SOURCE, f"namespace {version}")
    m = re.search(r"struct Vec16<float> \{\s*static constexpr int width = (\d+);", text)
    if not m:
        raise SourceError(f"{SOURCE}: Vec16<float>::width not found")
    found["V"] = int(m.group(1))
    found["threads_m"] = found["kTileM"] // found["kThreadM"]
    found["threads_n"] = found["kTileN"] // found["kThreadN"]
    return found


def fragment_offset(lane, i, V):
    """gemm.cu's fragment_offset: where value i of the thread at `lane` sits along a side."""
    return (i // V) * (16 * V) + lane * V + i % V


def check(c=None):
    require(SOURCE, FRAGMENT)
    require(SOURCE, "const int tx = threadIdx.x % kThreadsAlongN;")
    require(SOURCE, "const int ty = threadIdx.x / kThreadsAlongN;")
    c = constants() if c is None else c
    if c["threads_m"] != 16 or c["threads_n"] != 16:
        raise AssertionError("gemm v3: fragment_offset assumes 16 threads per side")
    # Hand-worked (float, V = 4): thread lane 1 owns rows 4..7 and 68..71.
    if [fragment_offset(1, i, 4) for i in range(8)] != [4, 5, 6, 7, 68, 69, 70, 71]:
        raise AssertionError("gemm v3: fragment_offset(1, i) is not rows 4..7, 68..71")
    # Warp w (ty = 2w, 2w + 1) owns rows 8w..8w+7 and 64+8w..64+8w+7, as the picture says.
    for w in range(c["threads_m"] * c["threads_n"] // WARP):
        rows = sorted(fragment_offset(ty, i, c["V"]) for ty in (2 * w, 2 * w + 1) for i in range(c["kThreadM"]))
        if rows != list(range(8 * w, 8 * w + 8)) + list(range(64 + 8 * w, 72 + 8 * w)):
            raise AssertionError(f"gemm v3: warp {w} does not own rows 8w..8w+7 and 64+8w..64+8w+7")
    # Every element of the block tile has exactly one owner.
    owners = {}
    for lane in range(c["threads_m"]):
        for i in range(c["kThreadM"]):
            owners.setdefault(fragment_offset(lane, i, c["V"]), []).append(lane)
    if sorted(owners) != list(range(c["kTileM"])) or any(len(v) != 1 for v in owners.values()):
        raise AssertionError("gemm v3: the thread fragments do not partition the block tile")


def draw():
    check()
    c = constants()
    TM, TN, TK, RM, RN, V = c["kTileM"], c["kTileN"], c["kTileK"], c["kThreadM"], c["kThreadN"], c["V"]
    nt_m, nt_n = c["threads_m"], c["threads_n"]
    threads = nt_m * nt_n
    warps = threads // WARP
    warp_colours = ["#f7a8a8", "#f9cf8f", "#f4ec8a", "#bfe3b4", "#9fd8cf", "#a9c8f0", "#c9b3ea", "#efb6dc"]
    hl = COLOURS["highlight"]

    s = Svg(1240, 940, "GEMM tile hierarchy, kernels/gemm.cu v3")
    s.text(24, 36, f"GPU GEMM v3 (register blocked): C cut into {TM}x{TN} block tiles, {RM}x{RN} values per thread",
           size=22, weight="bold")
    s.text(24, 60, f"Constants read from {SOURCE} (namespace v3: kTileM={TM}, kTileN={TN}, kTileK={TK}, "
           f"kThreadM={RM}, kThreadN={RN}, kPad={c['kPad']}); float, so 16-byte runs of V={V}", size=14)

    # Level 1: the grid. C (M x N) in block tiles; A's row panel, B's column panel, K slabs.
    gx, gy, u = 150, 150, 1.0  # one pixel per element, for a 256 x 384 example C
    M, N, K = 256, 384, 96
    sc = 0.75
    s.text(24, gy - 40, "1. Grid: one block per C tile", size=16, weight="bold")
    s.text(24, gy - 20, f"example M={M}, N={N}, K={K}; blockIdx.x numbers tiles row-major", size=13)
    ax = 24
    cx = ax + K * sc + 20
    by = gy
    cy = by + K * sc + 20
    # B (K x N) above C, A (M x K) left of C.
    s.rect(cx, by, N * sc, K * sc, fill="#ffffff", stroke="#555")
    s.text(cx + N * sc + 6, by + 14, "op(B)  K x N", size=13)
    s.rect(ax, cy, K * sc, M * sc, fill="#ffffff", stroke="#555")
    s.text(ax, cy + M * sc + 18, "op(A)  M x K", size=13)
    for i in range(M // TM):
        for j in range(N // TN):
            fill = hl if (i, j) == (1, 1) else "#ffffff"
            s.rect(cx + j * TN * sc, cy + i * TM * sc, TN * sc, TM * sc, fill=fill, stroke="#333", width=1.2)
            s.text(cx + (j + 0.5) * TN * sc, cy + (i + 0.5) * TM * sc + 5, f"block {i * (N // TN) + j}", size=13,
                   anchor="middle")
    s.text(cx + N * sc + 6, cy + 14, "C  M x N", size=13)
    # The highlighted block's panels, and one K slab of each.
    s.rect(ax, cy + TM * sc, K * sc, TM * sc, fill=COLOURS["highlight2"], opacity=0.6, stroke="#2e6da4", width=1.4)
    s.rect(cx + TN * sc, by, TN * sc, K * sc, fill=COLOURS["highlight2"], opacity=0.6, stroke="#2e6da4", width=1.4)
    slab = 3
    s.rect(ax + slab * TK * sc, cy + TM * sc, TK * sc, TM * sc, fill="#e4572e", stroke="#a02b10", width=1.2)
    s.rect(cx + TN * sc, by + slab * TK * sc, TN * sc, TK * sc, fill="#e4572e", stroke="#a02b10", width=1.2)
    s.legend(24, cy + M * sc + 36, [(hl, "#999", "block tile (1, 1) of C"),
                                   (COLOURS["highlight2"], "#2e6da4", "the panels of A and B it reads"),
                                   ("#e4572e", "#a02b10", f"one K-step: a {TK}-wide slab of each")], size=13)

    # Level 2: the block. Its slabs in shared memory, its tile split among threads.
    bx, byy = 560, 150
    s.text(bx, byy - 40, f"2. Block: {threads} threads, {warps} warps; per K-step, stage then multiply", size=16,
           weight="bold")
    s.text(bx, byy - 20, f"As[{TK}][{TM}+{c['kPad']}] and Bs[{TK}][{TN}+{c['kPad']}] in shared memory (k-major)",
           size=13)
    tile_x, tile_y = bx + TK * 4 + 24, byy + TK * 4 + 24
    g = TM // V  # V x V groups per side
    gcell = 10  # drawn size of a V x V group
    # Bs above, As at the left (drawn k-major, each a slab of TK lines).
    s.rect(tile_x, byy, g * gcell, TK * 4, fill="#e4572e", opacity=0.5, stroke="#a02b10")
    s.text(tile_x + g * gcell + 6, byy + 22, "Bs", size=13, weight="bold")
    s.rect(bx, tile_y, TK * 4, g * gcell, fill="#e4572e", opacity=0.5, stroke="#a02b10")
    s.text(bx - 2, tile_y + g * gcell + 18, "As", size=13, weight="bold")
    # Each V x V group of C belongs to thread (ty, tx) = (group row % 16, group column % 16).
    # A row of groups has one ty, and a warp holds whole rows of the thread grid (it
    # spans all nt_n values of tx, checked below), so a row has one warp's colour.
    if WARP % nt_n:
        raise AssertionError("gemm v3: a warp no longer covers whole rows of the thread grid")
    for gi in range(g):
        warp = (gi % nt_m) * nt_n // WARP
        s.rect(tile_x, tile_y + gi * gcell, g * gcell, gcell, fill=warp_colours[warp % 8], stroke="none", width=0)
    s.grid(tile_x, tile_y, g, g, gcell, stroke="#ffffff", width=0.5)
    target = (1, 2)  # (ty, tx) of the thread drawn in level 3
    for gi in range(g):
        for gj in range(g):
            if (gi % nt_m, gj % nt_n) == target:
                s.rect(tile_x + gj * gcell, tile_y + gi * gcell, gcell, gcell, fill="#333333", stroke="#000",
                       width=1)
    s.rect(tile_x, tile_y, g * gcell, g * gcell, stroke="#000", width=1.4)
    s.text(tile_x, tile_y + g * gcell + 20, f"{TM}x{TN} block tile; a square = {V}x{V} values", size=13)
    s.legend(tile_x + g * gcell + 16, tile_y, [(warp_colours[w], "#999", f"warp {w}: ty {2 * w}, {2 * w + 1}")
                                               for w in range(warps)]
             + [("#333333", "#000", f"thread (ty, tx) = {target}")], size=13)
    s.lines(tile_x + g * gcell + 16, tile_y + (warps + 1) * 24 + 16,
            [f"tx = threadIdx.x % {nt_n},", f"ty = threadIdx.x / {nt_n}:", "warp w is two rows of the",
             f"{nt_m}x{nt_n} thread grid and owns", "C rows 8w..8w+7 and", f"64+8w..64+8w+7, all {TN}",
             "columns. v3 names no", "warp tile of its own."], size=12)

    # Level 3: one thread. Its 8x8 values, as fragment_offset places them, and the k loop.
    tx3, ty3 = 24, 610
    ty_, tx_ = target
    rows = [fragment_offset(ty_, i, V) for i in range(RM)]
    cols = [fragment_offset(tx_, j, V) for j in range(RN)]
    s.text(tx3, ty3 - 30, f"3. Thread (ty, tx) = ({ty_}, {tx_}): acc[{RM}][{RN}] in registers", size=16,
           weight="bold")
    s.text(tx3, ty3 - 10, f"rows {rows[0]}..{rows[V - 1]} and {rows[V]}..{rows[-1]}, columns {cols[0]}..{cols[V - 1]}"
           f" and {cols[V]}..{cols[-1]} of the block tile (fragment_offset)", size=13)
    cc = 26
    ox = tx3 + 130
    oy = ty3 + 40
    s.text(ox, oy - 8, f"bf = Bs[k][cols]  ({RN} values: {RN // V} vector loads)", size=12)
    s.matrix(ox, oy, [[c_ for c_ in cols]], cell=cc, size=11, fills={(0, j): "#f6c3b6" for j in range(RN)})
    s.matrix(tx3 + 40, oy + cc + 12, [[r] for r in rows], cell=cc, size=11,
             fills={(i, 0): "#f6c3b6" for i in range(RM)})
    s.text(tx3, oy + cc + 12 + RM * cc + 20, "af = As[k][rows]", size=12)
    acc = [["" for _ in range(RN)] for _ in range(RM)]
    s.matrix(ox, oy + cc + 12, acc, cell=cc, size=11, fills={(i, j): "#d9d9d9" for i in range(RM) for j in range(RN)},
             brackets=True)
    s.lines(ox + RN * cc + 40, oy + 40,
            [f"for k in 0..{TK - 1} (one K-step):",
             f"  af: {RM} values of As[k][...], bf: {RN} of Bs[k][...]",
             f"  acc[i][j] += af[i] \u00b7 bf[j]   ({RM * RN} FMAs: an outer product)",
             "",
             f"Per value read from shared memory: {RM * RN // (RM + RN)} FMAs (v2: 0.5).",
             f"Per element loaded from global: {2 * TM * TN * TK // ((TM + TN) * TK)} flops"
             f" ({TM}+{TN} rows of {TK} per K-step).",
             "Each quarter-warp's 16-byte reads of As/Bs cover 128",
             "consecutive bytes: no shared-memory bank conflicts.",
             "After the last K-step: C = alpha\u00b7acc + beta\u00b7C."], size=13)
    return s.render()
