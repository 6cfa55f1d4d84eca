"""Reading facts out of the project's sources, failing loudly when they moved.

Every diagram takes its names and constants from here, so a renamed file,
function or constant stops the generator (and its test) instead of leaving a
picture that describes code which no longer exists.
"""
import os
import re

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


class SourceError(Exception):
    """A fact the diagrams rely on is no longer in the sources."""


def read(path, root=ROOT):
    full = os.path.join(root, path)
    if not os.path.isfile(full):
        raise SourceError(f"{path}: file not found (the diagrams name it; update docs/diagrams)")
    with open(full, encoding="utf-8") as f:
        return f.read()


def require(path, needle, root=ROOT):
    """Asserts that `needle` occurs in `path`, so a box may name it."""
    if needle not in read(path, root):
        raise SourceError(f"{path}: no longer contains {needle!r} (a diagram names it; update docs/diagrams)")


def namespace_body(text, name, path):
    """The text of the first `namespace NAME { ... }` block (brace matched)."""
    m = re.search(r"\bnamespace\s+" + re.escape(name) + r"\s*\{", text)
    if not m:
        raise SourceError(f"{path}: no 'namespace {name} {{' block")
    depth, i = 1, m.end()
    while depth and i < len(text):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[m.end():i - 1]


def int_constants(text, names, path, where):
    """Values of `constexpr int NAME = <integer>` (several may share a line)."""
    found = {}
    for name in names:
        m = re.search(r"\b" + re.escape(name) + r"\s*=\s*(\d+)\s*[,;]", text)
        if not m:
            raise SourceError(f"{path}: constant {name} not found as '{name} = <integer>' in {where}")
        found[name] = int(m.group(1))
    return found


def kernel_families(root=ROOT):
    """{family: (versions, default)} from every register_kernel_family call in kernels/."""
    families = {}
    kdir = os.path.join(root, "kernels")
    for name in sorted(os.listdir(kdir)):
        if not name.endswith(".cu"):
            continue
        path = "kernels/" + name
        text = read(path, root)
        for m in re.finditer(r'register_kernel_family\(\s*\{\s*"(\w+)",\s*(\w+),\s*(\w+),', text):
            family, versions, default = m.groups()
            # A constant may live in the family's header (kernels/NAME.cuh).
            header = path[:-3] + ".cuh"
            both = text + (read(header, root) if os.path.isfile(os.path.join(root, header)) else "")
            families[family] = (_int_or_constant(both, versions, path), _int_or_constant(both, default, path))
    if not families:
        raise SourceError("kernels/: no register_kernel_family({\"name\", versions, default, ...}) calls found")
    return families


def _int_or_constant(text, token, path, depth=0):
    if token.isdigit():
        return int(token)
    # A constant may name another (kGemmDefaultVersion = kGemmSplitKVersion).
    alias = re.search(r"\b" + re.escape(token) + r"\s*=\s*([A-Za-z_]\w*)\s*;", text)
    if alias and depth < 4:
        return _int_or_constant(text, alias.group(1), path, depth + 1)
    return int_constants(text, [token], path, "the file")[token]
