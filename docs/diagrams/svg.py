"""A small SVG writer: shapes, text, arrows and matrices as SVG elements.

Output is plain text with fixed number formatting, so that the same drawing
always gives the same bytes (the test compares the committed files).
"""
from fractions import Fraction
from xml.sax.saxutils import escape

FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
MONO = "DejaVu Sans Mono, Menlo, Consolas, monospace"

# One palette for every diagram: a colour means the same kind of thing.
COLOURS = {
    "ops": "#dbe9f6", "ops_edge": "#3a6ea5",
    "backend": "#fde8c8", "backend_edge": "#c07a12",
    "conv": "#fff6bf", "conv_edge": "#a08a00",
    "cpu": "#d9f0d3", "cpu_edge": "#3c8d2f",
    "gpu": "#e8dcf3", "gpu_edge": "#7547a3",
    "sim": "#d2efec", "sim_edge": "#22857a",
    "kernel": "#f6d5d5", "kernel_edge": "#b03a3a",
    "grey": "#eeeeee", "grey_edge": "#888888",
    "pad": "#f2f2f2", "highlight": "#ffd34d", "highlight2": "#9ad0f5",
    "highlight3": "#f7a8a8", "text": "#1a1a1a",
}


def num(v):
    """Coordinates with at most two decimals, trailing zeros dropped."""
    s = f"{v:.2f}".rstrip("0").rstrip(".")
    return "0" if s == "-0" else s


def fmt_value(v):
    """A matrix entry as text: integers plain, other fractions as a/b."""
    if isinstance(v, Fraction):
        if v.denominator == 1:
            return str(v.numerator)
        return f"{v.numerator}/{v.denominator}"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


class Svg:
    def __init__(self, width, height, title):
        self.width, self.height, self.title = width, height, title
        self.items = []

    def add(self, text):
        self.items.append(text)

    def rect(self, x, y, w, h, fill="none", stroke="#000", width=1.0, dash=None, rx=0, opacity=None):
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        extra += f' rx="{num(rx)}"' if rx else ""
        extra += f' fill-opacity="{num(opacity)}"' if opacity is not None else ""
        self.add(f'<rect x="{num(x)}" y="{num(y)}" width="{num(w)}" height="{num(h)}" fill="{fill}" '
                 f'stroke="{stroke}" stroke-width="{num(width)}"{extra}/>')

    def text(self, x, y, s, size=14, anchor="start", weight="normal", mono=False, colour=None, italic=False):
        family = MONO if mono else FONT
        style = ' font-style="italic"' if italic else ""
        self.add(f'<text x="{num(x)}" y="{num(y)}" font-family="{family}" font-size="{num(size)}" '
                 f'text-anchor="{anchor}" font-weight="{weight}" fill="{colour or COLOURS["text"]}"{style}>'
                 f'{escape(s)}</text>')

    def lines(self, x, y, rows, size=14, leading=1.3, **kw):
        """Several lines of text; a row given as (text, options) overrides options."""
        for i, row in enumerate(rows):
            opts = dict(kw)
            if isinstance(row, tuple):
                row, more = row
                opts.update(more)
            self.text(x, y + i * size * leading, row, size=size, **opts)

    def line(self, x1, y1, x2, y2, stroke="#000", width=1.0, dash=None):
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        self.add(f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}" stroke="{stroke}" '
                 f'stroke-width="{num(width)}"{extra}/>')

    def grid(self, x, y, rows, cols, cell, stroke="#d0d0d0", width=0.4):
        """Cell boundaries as one path (a per-cell rect would multiply the file size)."""
        d = [f"M{num(x)},{num(y + i * cell)}h{num(cols * cell)}" for i in range(rows + 1)]
        d += [f"M{num(x + j * cell)},{num(y)}v{num(rows * cell)}" for j in range(cols + 1)]
        self.add(f'<path d="{"".join(d)}" fill="none" stroke="{stroke}" stroke-width="{num(width)}"/>')

    def arrow(self, x1, y1, x2, y2, stroke="#333", width=1.6, dash=None, label=None, label_size=12,
              label_dx=6, label_dy=-4, anchor="start"):
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        self.add(f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}" stroke="{stroke}" '
                 f'stroke-width="{num(width)}" marker-end="url(#arrow)"{extra}/>')
        if label:
            self.text((x1 + x2) / 2 + label_dx, (y1 + y2) / 2 + label_dy, label, size=label_size,
                      anchor=anchor, italic=True)

    def polyline_arrow(self, points, stroke="#333", width=1.6, dash=None):
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        pts = " ".join(f"{num(x)},{num(y)}" for x, y in points)
        self.add(f'<polyline points="{pts}" fill="none" stroke="{stroke}" stroke-width="{num(width)}" '
                 f'marker-end="url(#arrow)"{extra}/>')

    def box(self, x, y, w, h, kind, heading, rows=(), size=13, heading_size=15):
        """A rounded box in a kind's colours with a bold heading and monospace rows."""
        self.rect(x, y, w, h, fill=COLOURS[kind], stroke=COLOURS[kind + "_edge"], width=1.6, rx=6)
        self.text(x + 10, y + 21, heading, size=heading_size, weight="bold")
        self.lines(x + 10, y + 21 + heading_size * 1.35, list(rows), size=size, mono=True)

    def matrix(self, x, y, values, cell=26, size=12, fills=None, brackets=True, mono=True, cell_h=None):
        """A grid of values; fills maps (i, j) to a fill colour. Returns (width, height)."""
        rows, cols = len(values), len(values[0])
        ch = cell_h or cell
        for i in range(rows):
            for j in range(cols):
                fill = (fills or {}).get((i, j), "#ffffff")
                self.rect(x + j * cell, y + i * ch, cell, ch, fill=fill, stroke="#b5b5b5", width=0.6)
                self.text(x + j * cell + cell / 2, y + i * ch + ch / 2 + size * 0.36, fmt_value(values[i][j]),
                          size=size, anchor="middle", mono=mono)
        w, h = cols * cell, rows * ch
        if brackets:
            for bx, d in ((x - 3, 6), (x + w + 3, -6)):
                self.add(f'<polyline points="{num(bx + d)},{num(y - 2)} {num(bx)},{num(y - 2)} {num(bx)},'
                         f'{num(y + h + 2)} {num(bx + d)},{num(y + h + 2)}" fill="none" stroke="#000" '
                         f'stroke-width="1.4"/>')
        return w, h

    def legend(self, x, y, entries, size=13, swatch=16):
        """entries: (fill, stroke, label); one row each."""
        for i, (fill, stroke, label) in enumerate(entries):
            yy = y + i * (swatch + 8)
            self.rect(x, yy, swatch, swatch, fill=fill, stroke=stroke, width=1.2)
            self.text(x + swatch + 8, yy + swatch - 3, label, size=size)

    def render(self):
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" xml:space="preserve" width="{num(self.width)}" height="{num(self.height)}" '
                f'viewBox="0 0 {num(self.width)} {num(self.height)}">\n'
                f'<title>{escape(self.title)}</title>\n'
                '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" '
                'markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#333"/>'
                '</marker></defs>\n'
                f'<rect x="0" y="0" width="{num(self.width)}" height="{num(self.height)}" fill="#ffffff"/>\n')
        return head + "\n".join(self.items) + "\n</svg>\n"
