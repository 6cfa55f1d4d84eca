"""Winograd F(2x2, 3x3) and F(4x4, 3x3): the matrices as the kernels hold them.

B^T, G and A^T are read from the initialisers of `Matrices<M, T>` in
kernels/conv2d_winograd.cu, and checked, in exact fractions, against the
cpu's 1-D transforms (src/cpu/conv/winograd_transforms.h) and against the
direct correlation on random tiles. The picture shows the checked numbers.
"""
import random
import re
from fractions import Fraction

from sources import SourceError, read
from svg import COLOURS, Svg

GPU_FILE = "kernels/conv2d_winograd.cu"
CPU_FILE = "src/cpu/conv/winograd_transforms.h"


def _value(expr, path):
    """An initialiser entry such as 1, -5, T(0.5) or -T(1) / T(6), exactly."""
    if not re.fullmatch(r"[\sT()0-9.+\-*/]+", expr):
        raise SourceError(f"{path}: cannot read matrix entry {expr!r}")
    return Fraction(eval(expr, {"__builtins__": {}}, {"T": lambda v: Fraction(str(v))}))


def _struct_body(text, opening, path):
    start = text.find(opening)
    if start < 0:
        raise SourceError(f"{path}: no '{opening}'")
    end = text.find("\n};", start)
    return text[start:end]


def gpu_matrices(m, text=None):
    """{'bt': B^T, 'g': G, 'at': A^T} of F(m x m, 3x3) from the kernel source."""
    text = read(GPU_FILE) if text is None else text
    body = _struct_body(text, f"struct Matrices<{m}, T> {{", GPU_FILE)
    out = {}
    for name in ("bt", "g", "at"):
        mm = re.search(r"\b" + name + r"\{(\{.*?\})\}", body, re.S)
        if not mm:
            raise SourceError(f"{GPU_FILE}: Matrices<{m}, T> has no initialiser '{name}{{{{...}}}}'")
        rows = re.findall(r"\{([^{}]*)\}", mm.group(1))
        out[name] = [[_value(v, GPU_FILE) for v in row.split(",")] for row in rows]
    a = m + 2
    shapes = {"bt": (a, a), "g": (a, 3), "at": (m, a)}
    for name, (r, c) in shapes.items():
        got = (len(out[name]), len(out[name][0]))
        if got != (r, c) or any(len(row) != c for row in out[name]):
            raise SourceError(f"{GPU_FILE}: Matrices<{m}, T>::{name} is {got}, expected {r}x{c}")
    return out


def cpu_matrix(m, function, n_in, text=None):
    """The matrix of a 1-D transform of struct F<m> (winograd_transforms.h), read
    off by running its statements on unit vectors in exact arithmetic."""
    text = read(CPU_FILE) if text is None else text
    body = _struct_body(text, f"struct F<{m}> {{", CPU_FILE)
    consts = {name: _value(expr, CPU_FILE) for name, expr in
              re.findall(r"static constexpr T (k\w+) = ([^;]+);", body)}
    fm = re.search(r"static void " + function + r"\(const T (\w+)\[\d+\], T out\[(\d+)\]\) \{(.*?)\n  \}", body, re.S)
    if not fm:
        raise SourceError(f"{CPU_FILE}: F<{m}>::{function}(const T x[n], T out[n]) not found")
    arg, n_out, code = fm.group(1), int(fm.group(2)), fm.group(3)
    code = re.sub(r"//[^\n]*", "", code).replace("<T>", "")
    statements = []
    for stmt in code.split(";"):
        stmt = stmt.strip()
        if not stmt:
            continue
        if stmt.startswith("const T "):
            statements += [part.strip() for part in stmt[len("const T "):].split(",")]
        else:
            statements.append(stmt)
    columns = []
    for j in range(n_in):
        env = dict(consts)
        env.update({"T": lambda v: Fraction(str(v)), arg: [Fraction(int(i == j)) for i in range(n_in)],
                    "out": [None] * n_out})
        for stmt in statements:
            if not re.fullmatch(r"[\w\[\]\s=()0-9.+\-*/]+", stmt):
                raise SourceError(f"{CPU_FILE}: cannot read statement {stmt!r} of F<{m}>::{function}")
            exec(stmt, {"__builtins__": {}}, env)
        columns.append(env["out"])
    return [[columns[j][i] for j in range(n_in)] for i in range(n_out)]


def matmul(a, b):
    return [[sum((a[i][k] * b[k][j] for k in range(len(b))), Fraction(0)) for j in range(len(b[0]))]
            for i in range(len(a))]


def transpose(a):
    return [list(r) for r in zip(*a)]


def winograd_tile(mats, d, g):
    """(V, U, M, Y) for one tile: V = B^T d B, U = G g G^T, M = U (.) V, Y = A^T M A."""
    v = matmul(matmul(mats["bt"], d), transpose(mats["bt"]))
    u = matmul(matmul(mats["g"], g), transpose(mats["g"]))
    prod = [[u[i][j] * v[i][j] for j in range(len(u))] for i in range(len(u))]
    y = matmul(matmul(mats["at"], prod), transpose(mats["at"]))
    return v, u, prod, y


def direct(d, g, m):
    return [[sum((d[i + r][j + s] * g[r][s] for r in range(3) for s in range(3)), Fraction(0))
             for j in range(m)] for i in range(m)]


def check(mats_by_m=None, trials=20):
    """Raises unless the kernels' matrices equal the cpu transforms and give the
    direct correlation on random integer and fractional tiles."""
    rng = random.Random(20261126)
    for m in (2, 4):
        mats = gpu_matrices(m) if mats_by_m is None else mats_by_m[m]
        if mats_by_m is None:
            a = m + 2
            for name, fn, n_in in (("bt", "input_1d", a), ("g", "filter_1d", 3), ("at", "output_1d", a)):
                if cpu_matrix(m, fn, n_in) != mats[name]:
                    raise AssertionError(f"F({m},3): {GPU_FILE} {name} differs from {CPU_FILE} F<{m}>::{fn}")
        for t in range(trials):
            def draw():
                return Fraction(rng.randint(-9, 9)) if t % 2 == 0 else Fraction(rng.randint(-99, 99), rng.randint(1, 12))
            d = [[draw() for _ in range(m + 2)] for _ in range(m + 2)]
            g = [[draw() for _ in range(3)] for _ in range(3)]
            y = winograd_tile(mats, d, g)[3]
            if y != direct(d, g, m):
                raise AssertionError(f"F({m}x{m},3x3): A^T[(G g G^T)(.)(B^T d B)]A != direct correlation "
                                     f"for d={d}, g={g}")


def example():
    """The worked example drawn: a 4x6 input strip (two overlapping tiles), a filter."""
    rng = random.Random(23)
    strip = [[Fraction(rng.randint(0, 9)) for _ in range(6)] for _ in range(4)]
    g = [[Fraction(rng.randint(-2, 2)) for _ in range(3)] for _ in range(3)]
    return strip, g


def draw():
    check()
    f2, f4 = gpu_matrices(2), gpu_matrices(4)
    strip, g = example()
    d = [row[:4] for row in strip]
    v, u, prod, y = winograd_tile(f2, d, g)
    ref = direct(d, g, 2)
    hl, hl2 = COLOURS["highlight"], COLOURS["highlight2"]

    s = Svg(1240, 870, "Winograd F(2x2, 3x3) and F(4x4, 3x3) transforms")
    s.text(24, 36, "Winograd F(2x2, 3x3):  Y = A\u1d40 [ (G g G\u1d40) \u2299 (B\u1d40 d B) ] A", size=22, weight="bold")
    s.text(24, 60, f"Matrices read from {GPU_FILE} (Matrices<M, T>), equal to the 1-D transforms of", size=13)
    s.text(24, 78, f"{CPU_FILE}; every number below is exact and checked by the generator.", size=13)

    # The input: two 4x4 tiles of one 4x6 strip, stride 2, overlapping by 2 columns.
    x0, y0, cell = 24, 130, 30
    s.text(x0, y0 - 14, "Input strip: tiles at stride 2 overlap by 2", size=14, weight="bold")
    fills = {}
    for i in range(4):
        for j in range(6):
            fills[(i, j)] = hl if j < 2 else ("#c9e7a0" if j < 4 else hl2)
    s.matrix(x0, y0, strip, cell=cell, size=13, fills=fills)
    s.legend(x0 + 6 * cell + 24, y0, [(hl, "#999", "tile 1 only"), ("#c9e7a0", "#999", "both tiles (overlap)"),
                                      (hl2, "#999", "tile 2 only")], size=13)
    s.text(x0 + 6 * cell + 24, y0 + 90, "tile t gives output columns 2t, 2t+1;", size=13)
    s.text(x0 + 6 * cell + 24, y0 + 108, "below: tile 1 (d), step by step", size=13)

    # Row 1: d -> B^T d B.
    def panel(x, y, title, matrix, cell_w=34, size=13, fill=None):
        s.text(x, y - 10, title, size=14, weight="bold")
        fills = {(i, j): fill for i in range(len(matrix)) for j in range(len(matrix[0]))} if fill else None
        return s.matrix(x, y, matrix, cell=cell_w, size=size, fills=fills, cell_h=26)

    ry = 300
    panel(24, ry, "d (4x4 tile)", d, fill=None)
    s.arrow(170, ry + 52, 230, ry + 52, label="B\u1d40 d B", label_dx=-24, label_dy=-8)
    panel(250, ry, "B\u1d40 (4x4)", f2["bt"], cell_w=30)
    panel(400, ry, "V = B\u1d40 d B", v, cell_w=40, fill="#e8f3fc")

    # Row 2: g -> G g G^T.
    ry2 = 460
    panel(24, ry2, "g (3x3 filter)", g)
    s.arrow(140, ry2 + 40, 230, ry2 + 40, label="G g G\u1d40", label_dx=-30, label_dy=-8)
    panel(250, ry2, "G (4x3)", f2["g"], cell_w=40)
    panel(400, ry2, "U = G g G\u1d40", u, cell_w=48, fill="#fdf0dc")

    # Row 3: elementwise product and output transform.
    ry3 = 630
    panel(24, ry3, "M = U \u2299 V (16 multiplications)", prod, cell_w=56, fill="#f3e8f8")
    s.arrow(262, ry3 + 52, 320, ry3 + 52, label="A\u1d40 M A", label_dx=-26, label_dy=-8)
    panel(340, ry3, "A\u1d40 (2x4)", f2["at"], cell_w=30)
    panel(490, ry3, "Y = A\u1d40 M A", y, cell_w=44, fill="#dff2da")
    panel(620, ry3, "direct correlation", ref, cell_w=44, fill="#dff2da")
    s.text(490, ry3 + 84, "direct: \u03a3 d[i+r][j+s] g[r][s] over r, s < 3", size=13)
    s.text(490, ry3 + 102, "Y equals it (checked)" if y == ref else "MISMATCH", size=13, weight="bold")
    s.lines(24, ry3 + 150, ["Against direct: 16 multiplications per 2x2 block and channel pair instead of 36.",
                            "U is computed once per filter pair, V once per tile and input channel, so across",
                            "channels the 16 products become 16 independent GEMMs (one per point)."], size=13)

    # F(4x4, 3x3) on the right.
    fx = 800
    s.text(fx, 96, "F(4x4, 3x3): 6x6 tiles at stride 4", size=18, weight="bold")
    s.text(fx, 116, "36 multiplications per 4x4 block instead of 144", size=13)
    panel(fx, 150, "B\u1d40 (6x6)", f4["bt"], cell_w=34)
    panel(fx, 340, "G (6x3)", f4["g"], cell_w=52)
    panel(fx, 530, "A\u1d40 (4x6)", f4["at"], cell_w=34)
    s.text(fx, 680, "Same identity, same checks: the generator verifies", size=13)
    s.text(fx, 698, "Y = direct correlation for both F(2) and F(4) on", size=13)
    s.text(fx, 716, "20 random tiles each (integers and fractions).", size=13)
    s.text(fx, 752, "Where they run:", size=14, weight="bold")
    s.lines(fx, 772, ["src/cpu/conv/conv_winograd.cpp (cpu)", "kernels/conv2d_winograd.cu (sim, cuda)",
                      "tiles: src/conv/winograd_tiling.h"], size=13, mono=True)
    return s.render()
