"""The overlap-save tiles of the FFT convolution for a real layer.

The layer is read from benchmarks/layer_sets.txt; the tile size is chosen by
choose_fft_tiling's cost model (src/conv/fft_tiling.cpp), reimplemented
here term for term (its statements are required to be unchanged), for the
forward pass (forward_correlation: the input, its padding, P x Q outputs).
"""
import math

from sources import SourceError, read, require
from svg import COLOURS, Svg

TILING = "src/conv/fft_tiling.cpp"
# choose_fft_tiling's rule, as the source states it; a change there must be
# mirrored in choose() below.
RULE = ("const std::int64_t max_h = std::min(kMaxFftTile, power_of_two_at_least(s.P + s.extent_h() - 1));",
        "for (std::int64_t th = power_of_two_at_least(s.extent_h()); th <= max_h; th *= 2) {",
        "for (std::int64_t tw = std::max<std::int64_t>(2, power_of_two_at_least(s.extent_w())); tw <= max_w; tw *= 2) {",
        "const double fft = 2.5 * static_cast<double>(th * tw) * std::log2(static_cast<double>(th * tw));",
        "const double per_tile = 8.0 * static_cast<double>(t.spectrum_size()) * static_cast<double>(s.out_channels * s.in_per_group()) +",
        "fft * static_cast<double>(s.in_channels + s.out_channels);",
        "const double cost = static_cast<double>(s.N * t.tiles_per_image()) * per_tile +",
        "fft * static_cast<double>(s.out_channels * s.in_per_group());",
        "if (cost < best_cost) {")
LAYERS = "benchmarks/layer_sets.txt"
LAYER = ("resnet18-cifar", "layer1")


def read_layer(set_name, layer_name, text=None):
    """N, C, H, W, K, R, S, pad of one layer of layer_sets.txt (stride 1, square sizes)."""
    text = read(LAYERS) if text is None else text
    current = None
    for line in text.splitlines():
        words = line.split("#")[0].split()
        if not words:
            continue
        if words[0] == "set":
            current = words[1]
        elif current == set_name and words[0] == layer_name:
            n, c, hw, k, rs = (int(v) if "x" not in v else v for v in words[1:6])
            pad = 0
            for opt in words[6:]:
                if opt.startswith("p") and opt[1:].isdigit():
                    pad = int(opt[1:])
                elif opt.startswith("s") and opt != "s1":
                    raise SourceError(f"{LAYERS}: {set_name} {layer_name} is strided; fft runs stride 1 only")
            return dict(N=n, C=c, H=hw, W=hw, K=k, R=rs, S=rs, pad=pad)
    raise SourceError(f"{LAYERS}: no layer {layer_name} in set {set_name}")


def power_of_two_at_least(n):
    p = 1
    while p < n:
        p *= 2
    return p


def tiling(P, Q, eh, ew, th, tw):
    out_h, out_w = th - eh + 1, tw - ew + 1
    return dict(tile_h=th, tile_w=tw, out_h=out_h, out_w=out_w, tiles_h=-(-P // out_h), tiles_w=-(-Q // out_w))


def choose(N, C, K, H, W, R, S, pad, groups=1, dilation=1, max_tile=128):
    """(best, candidates): choose_fft_tiling's search with its cost of each candidate."""
    eh, ew = (R - 1) * dilation + 1, (S - 1) * dilation + 1
    P, Q = H + 2 * pad - eh + 1, W + 2 * pad - ew + 1
    max_h = min(max_tile, power_of_two_at_least(P + eh - 1))
    max_w = min(max_tile, max(2, power_of_two_at_least(Q + ew - 1)))
    best, best_cost, candidates = None, math.inf, []
    th = power_of_two_at_least(eh)
    while th <= max_h:
        tw = max(2, power_of_two_at_least(ew))
        while tw <= max_w:
            t = tiling(P, Q, eh, ew, th, tw)
            fft = 2.5 * th * tw * math.log2(th * tw)
            per_tile = 8.0 * th * (tw // 2 + 1) * (K * (C // groups)) + fft * (C + K)
            cost = N * t["tiles_h"] * t["tiles_w"] * per_tile + fft * (K * (C // groups))
            candidates.append((t, cost))
            if cost < best_cost:
                best, best_cost = t, cost
            tw *= 2
        th *= 2
    return best, candidates


def check():
    for statement in RULE:
        require(TILING, statement)
    # Hand-worked: a 3x3 filter on an 8x8 output region with one image and
    # one channel each way. 4x4 tiles give 2x2 outputs, 16 tiles; 16x16 would
    # be larger than the padded region (10x10 -> at most 16, kept); the model
    # must prefer a tile that is not the smallest, and every tile must cover P.
    best, cands = choose(1, 1, 1, 8, 8, 3, 3, 1)
    if (cands[0][0]["tile_h"], cands[0][0]["tile_w"]) != (4, 4) or cands[0][0]["tiles_h"] != 4:
        raise AssertionError(f"fft tiling: smallest candidate {cands[0][0]}, worked by hand: 4x4 tiles, 4 per side")
    for t, _ in cands:
        if t["tiles_h"] * t["out_h"] < 8 or (t["tiles_h"] - 1) * t["out_h"] >= 8:
            raise AssertionError(f"fft tiling: {t} does not cover 8 output rows exactly once")
    # The layer drawn: its choice is the cheapest candidate, first of equals.
    layer = read_layer(*LAYER)
    best, cands = choose(**layer)
    cheapest = min(c for _, c in cands)
    if next(t for t, c in cands if c == cheapest) != best:
        raise AssertionError("fft tiling: choice is not the first cheapest candidate")


def draw():
    check()
    L = read_layer(*LAYER)
    t, cands = choose(**L)
    R, pad, H, W = L["R"], L["pad"], L["H"], L["W"]
    e = R  # extent (no dilation)
    P, Q = H + 2 * pad - e + 1, W + 2 * pad - e + 1
    th, tw, oh, ow, nth, ntw = t["tile_h"], t["tile_w"], t["out_h"], t["out_w"], t["tiles_h"], t["tiles_w"]
    colours = ["#e4572e", "#2e86ab", "#3bb273", "#7768ae"]

    s = Svg(1240, 820, "FFT convolution: overlap-save tiles")
    s.text(24, 36, "FFT convolution: overlap-save tiles for one real layer", size=22, weight="bold")
    s.text(24, 60, f"{LAYERS}: set {LAYER[0]}, {LAYER[1]}: N={L['N']}, C={L['C']}, K={L['K']}, {H}x{W} input, "
           f"{R}x{R} filter, pad {pad}, stride 1  \u2192  P x Q = {P} x {Q}", size=14)
    s.text(24, 80, f"choose_fft_tiling ({TILING}, reimplemented and checked by the generator) picks "
           f"{th}x{tw} transforms: {oh}x{ow} valid outputs per tile, {nth}x{ntw} = {nth * ntw} tiles per image",
           size=14)

    # Left: the padded input with tile windows. Window (i, j) starts at
    # (i*oh - pad, j*ow - pad) and spans th x tw; rows past the plane read zero.
    cell = 9
    rows = (nth - 1) * oh + th
    cols = (ntw - 1) * ow + tw
    ox, oy = 40, 140
    s.text(ox - 16, oy - 22, f"Input: {H}x{W} (white), pad {pad} (grey), zeros past it (dark)", size=14,
           weight="bold")
    s.rect(ox, oy, cols * cell, rows * cell, fill="#dddddd", stroke="none", width=0)
    s.rect(ox, oy, (W + 2 * pad) * cell, (H + 2 * pad) * cell, fill=COLOURS["pad"], stroke="none", width=0)
    s.rect(ox + pad * cell, oy + pad * cell, W * cell, H * cell, fill="#ffffff", stroke="none", width=0)
    s.grid(ox, oy, rows, cols, cell)
    s.rect(ox + pad * cell, oy + pad * cell, W * cell, H * cell, stroke="#000", width=1.4)
    s.rect(ox, oy, (W + 2 * pad) * cell, (H + 2 * pad) * cell, stroke="#777", width=1.0, dash="4,3")
    for ti in range(nth):
        for tj in range(ntw):
            s.rect(ox + tj * ow * cell, oy + ti * oh * cell, tw * cell, th * cell, stroke="#9a9a9a", width=0.8)
    shown = [(0, 0), (0, 1), (1, 0), (1, 1)]
    for k, (ti, tj) in enumerate(shown):
        s.rect(ox + tj * ow * cell, oy + ti * oh * cell, tw * cell, th * cell, fill=colours[k], opacity=0.18,
               stroke=colours[k], width=2.4)
    s.text(ox, oy + rows * cell + 22, f"Each window is {th}x{tw}; neighbours start {oh} rows / {ow} columns apart,",
           size=13)
    s.text(ox, oy + rows * cell + 40, f"so they overlap by extent \u2212 1 = {e - 1} rows and columns (4 windows"
           " coloured, the rest grey).", size=13)

    # Right: the output plane cut into the tiles' valid blocks.
    rx = ox + cols * cell + 70
    s.text(rx, oy - 22, f"Output ({P}x{Q}): tile (i, j)'s {oh}x{ow} block", size=14, weight="bold")
    s.grid(rx, oy, P, Q, cell)
    for ti in range(nth):
        for tj in range(ntw):
            h = min(oh, P - ti * oh)
            w = min(ow, Q - tj * ow)
            k = shown.index((ti, tj)) if (ti, tj) in shown else None
            s.rect(rx + tj * ow * cell, oy + ti * oh * cell, w * cell, h * cell,
                   fill=colours[k] if k is not None else "none", opacity=0.35 if k is not None else None,
                   stroke="#333", width=1.2)
            s.text(rx + (tj * ow + w / 2) * cell, oy + (ti * oh + h / 2) * cell + 5, f"{ti},{tj}", size=12,
                   anchor="middle")
    s.text(rx, oy + P * cell + 22, f"The last tile row keeps {P - (nth - 1) * oh} rows"
           + (f", the last column {Q - (ntw - 1) * ow}" if Q % ow else "") + ":", size=13)
    s.text(rx, oy + P * cell + 40, "the crop clips at the plane.", size=13)

    # The candidates of the cost model.
    tx, ty = rx + Q * cell + 36, oy
    shown_cands = sorted(cands, key=lambda tc: tc[1])[:8]
    s.text(tx, ty - 22, f"Cost model: 8 cheapest of {len(cands)}", size=14, weight="bold")
    for x, head, anchor in ((tx, "tile", "start"), (tx + 120, "tiles/image", "end"), (tx + 190, "Gflop", "end")):
        s.text(x, ty, head, size=12, weight="bold", anchor=anchor)
    for i, (c, cost) in enumerate(shown_cands):
        weight = "bold" if c == t else "normal"
        yy = ty + 18 * (i + 1)
        s.text(tx, yy, f"{c['tile_h']}x{c['tile_w']}", size=12, mono=True, weight=weight)
        if c == t:
            s.text(tx + 198, yy, "\u2190 chosen", size=12, weight=weight)
        s.text(tx + 120, yy, str(c["tiles_h"] * c["tiles_w"]), size=12, mono=True, anchor="end", weight=weight)
        s.text(tx + 190, yy, f"{cost / 1e9:.1f}", size=12, mono=True, anchor="end", weight=weight)
    s.lines(tx, ty + 18 * (len(shown_cands) + 2), ["per tile: 8\u00b7spectrum\u00b7K\u00b7C/g", "  + fft(T)\u00b7(C + K)",
                                              "once: fft(T)\u00b7K\u00b7C/g", "fft(T) = 2.5\u00b7T\u00b7log2 T,",
                                              "T = tile_h\u00b7tile_w"], size=12, mono=True)

    # The pipeline of one pass, per chunk of tiles.
    py = oy + max(rows, P) * cell + 90
    s.text(24, py - 14, "One forward pass, per chunk of M tiles (src/cpu/conv/conv_fft.cpp; kernels/conv2d_fft.cu on sim"
           " and cuda)", size=15, weight="bold")
    steps = [
        ("ops", "1. transform", [f"each {th}x{tw} window,", "each input channel:", "real 2-D FFT \u2192",
                                 f"{th} x {tw // 2 + 1} complex"]),
        ("conv", "2. channel sums", ["for each of the", f"{th * (tw // 2 + 1)} frequencies f:", "Out_f (K x M) =",
                                     "conj(Filter_f) (K x C)", "  \u00b7 In_f (C x M)"]),
        ("gpu", "3. inverse", ["each output channel", "and tile: inverse", f"FFT \u2192 {th}x{tw} real,",
                               f"scaled by 1/{th * tw}"]),
        ("cpu", "4. crop", [f"keep the top-left {oh}x{ow}", "(the rest wrapped", "around), add bias,",
                            "clip at the plane"]),
    ]
    bw, gap = 200, 36
    for i, (kind, head, body) in enumerate(steps):
        x = 24 + i * (bw + gap)
        s.box(x, py, bw, 150, kind, head, body, size=13)
        if i:
            s.arrow(x - gap + 2, py + 75, x - 4, py + 75)
    s.text(24, py + 180, f"Filter spectra (K\u00b7C of them, {th} x {tw // 2 + 1} each) are computed once per pass;"
           " correlation theorem: FFT(a \u22c6 b) = FFT(a) \u00b7 conj(FFT(b)).", size=13)
    # The crop of one tile: valid outputs and the wrapped rows/columns.
    cx = 24 + 4 * (bw + gap)
    cc = 14
    s.text(cx, py + 8, f"one {th}x{tw} inverse:", size=13, weight="bold")
    for i in range(th):
        for j in range(tw):
            ok = i < oh and j < ow
            s.rect(cx + j * cc, py + 18 + i * cc, cc, cc, fill="#bfe3b4" if ok else "#f4b4b4", stroke="#999",
                   width=0.5)
    s.legend(cx, py + 18 + th * cc + 12, [("#bfe3b4", "#999", "kept"), ("#f4b4b4", "#999", "wrapped around")],
             size=13)
    return s.render()
