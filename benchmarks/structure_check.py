#!/usr/bin/env python3
"""Checks that a PyTorch network and convkit's zoo model are the same network, layer by layer.

For each row of `convkit summary MODEL --json` (a layer, in order) and the
matching leaf of the PyTorch module (benchmarks/pytorch_models.py), it
compares the type, the input and output shapes, the trainable and
non-trainable parameter counts, and the structural options: a convolution's
channels, kernel, stride, resolved padding, dilation, groups and bias; a
pool's window, stride, padding and rounding; a dropout's rate; BatchNorm's
features, eps, momentum and flags; a dense layer's sizes and bias; Flatten's
dims. Equal parameter totals are not enough: two networks can have the same
count with a different padding or pool, and train at different speeds.

usage: structure_check.py --convkit PATH/TO/convkit MODEL [MODEL ...]
Exit status: 0 when every model matches, 1 when one differs (the differences
are listed), 77 when PyTorch cannot be imported (a skip, for ctest).

compare() works on plain data and needs no torch, so it is tested without it.
"""
import argparse
import json
import math
import os
import subprocess
import sys

SKIP = 77
# Keys of a row that name it rather than describe it.
NOT_COMPARED = {"name"}


def _same(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, float) or isinstance(b, float):
        # Rates and eps pass through a C++ double and its printed form.
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(a, b, rel_tol=1e-9)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def compare(ours, theirs, ours_label="convkit", theirs_label="pytorch"):
    """The differences between two structures ({"layers": [...], "trainable", "non_trainable"}), as sentences.

    Rows are matched by position; a row's name is shown but not compared, as
    the two libraries name their layers differently. An empty list means the
    networks are equivalent.
    """
    problems = []
    a_rows, b_rows = ours["layers"], theirs["layers"]
    if len(a_rows) != len(b_rows):
        problems.append(f"{ours_label} has {len(a_rows)} layers, {theirs_label} {len(b_rows)}: "
                        f"{[r['type'] for r in a_rows]} against {[r['type'] for r in b_rows]}")
    for i, (a, b) in enumerate(zip(a_rows, b_rows)):
        where = f"layer {i} ({ours_label} '{a.get('name')}' {a.get('type')}, {theirs_label} '{b.get('name')}' {b.get('type')})"
        if a.get("type") != b.get("type"):
            # The rows from here on are misaligned: one report is enough.
            problems.append(f"{where}: type {a.get('type')!r} against {b.get('type')!r}")
            break
        for key in sorted((set(a) | set(b)) - NOT_COMPARED):
            if key not in a or key not in b:
                side = ours_label if key not in a else theirs_label
                problems.append(f"{where}: {key} is missing on the {side} side "
                                f"({a.get(key, b.get(key))!r} on the other)")
            elif not _same(a[key], b[key]):
                problems.append(f"{where}: {key} {a[key]!r} against {b[key]!r}")
    for key in ("trainable", "non_trainable"):
        if key in ours and key in theirs and ours[key] != theirs[key]:
            problems.append(f"whole model: {key} parameters {ours[key]} against {theirs[key]}")
    return problems


def convkit_structure(convkit, name):
    proc = subprocess.run([convkit, "summary", name, "--json"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"structure_check: '{convkit} summary {name} --json' failed: {proc.stderr.strip()}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _pair(v):
    return [v, v] if isinstance(v, int) else list(v)


def _options(m, torch):
    """The structural options of one PyTorch layer, in the keys of convkit's --json rows."""
    nn = torch.nn
    if isinstance(m, nn.Conv2d):
        if isinstance(m.padding, str):
            # 'same' (stride 1 only in PyTorch) puts any odd pixel bottom/right; 'valid' is none.
            pads = []
            for k, d in zip(m.kernel_size, m.dilation):
                total = d * (k - 1) if m.padding == "same" else 0
                pads += [total // 2, total - total // 2]
        else:
            pads = [m.padding[0], m.padding[0], m.padding[1], m.padding[1]]
        return {"in_channels": m.in_channels, "out_channels": m.out_channels, "kernel_size": list(m.kernel_size),
                "stride": list(m.stride), "padding": pads, "dilation": list(m.dilation), "groups": m.groups,
                "bias": m.bias is not None}
    if isinstance(m, (nn.MaxPool2d, nn.AvgPool2d)):
        kernel = _pair(m.kernel_size)
        o = {"kernel_size": kernel, "stride": _pair(m.stride) if m.stride else kernel,
             "padding": _pair(m.padding), "ceil_mode": m.ceil_mode}
        if isinstance(m, nn.AvgPool2d):
            o["count_include_pad"] = m.count_include_pad
        elif _pair(m.dilation) != [1, 1]:
            o["dilation"] = _pair(m.dilation)  # convkit has no dilated pooling: reported as missing
        return o
    if isinstance(m, nn.Dropout):
        return {"p": m.p}
    if isinstance(m, nn.modules.batchnorm._BatchNorm):
        return {"num_features": m.num_features, "eps": m.eps, "momentum": m.momentum, "affine": m.affine,
                "track_running_stats": m.track_running_stats}
    if isinstance(m, nn.Linear):
        return {"in_features": m.in_features, "out_features": m.out_features, "bias": m.bias is not None}
    if isinstance(m, nn.Flatten):
        return {"start_dim": m.start_dim, "end_dim": m.end_dim}
    return {}


def _counts(module, torch):
    trainable = sum(p.numel() for p in module.parameters() if p.requires_grad)
    frozen = sum(p.numel() for p in module.parameters() if not p.requires_grad)
    buffers = sum(b.numel() for b in module.buffers() if torch.is_floating_point(b))
    return trainable, frozen + buffers


def torch_structure(model, input_shape):
    """Rows as convkit's summary makes them: Sequentials walked into, every other module one row."""
    import torch
    leaves = []

    def walk(module, path):
        if isinstance(module, torch.nn.Sequential):
            for name, child in module.named_children():
                walk(child, f"{path}.{name}" if path else name)
        else:
            leaves.append((path or "(model)", module))

    walk(model, "")
    rows, hooks = [], []
    for name, module in leaves:
        def hook(m, inputs, output, name=name):
            shape_in = [-1] + list(inputs[0].shape[1:])
            trainable, non_trainable = _counts(m, torch)
            row = {"name": name, "type": type(m).__name__, "input_shape": shape_in,
                   "output_shape": [-1] + list(output.shape[1:]), "trainable": trainable,
                   "non_trainable": non_trainable}
            row.update(_options(m, torch))
            rows.append(row)
        hooks.append(module.register_forward_hook(hook))
    was_training = model.training
    model.eval()
    error = None
    try:
        with torch.no_grad():
            model(torch.zeros((1,) + tuple(input_shape)))
    except RuntimeError as e:
        # The rows before the failing layer still show where the networks part.
        error = f"pytorch's network fails after {len(rows)} layers: {str(e).splitlines()[0]}"
    finally:
        for h in hooks:
            h.remove()
        model.train(was_training)
    trainable, non_trainable = _counts(model, torch)
    out = {"input": list(input_shape), "trainable": trainable, "non_trainable": non_trainable, "layers": rows}
    if error:
        out["error"] = error
    return out


def check(convkit, name):
    """The differences between convkit's MODEL and benchmarks/pytorch_models.py's (empty: equivalent)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import pytorch_models
    model, shape = pytorch_models.create(name)
    ours = convkit_structure(convkit, name)
    theirs = torch_structure(model, shape)
    problems = compare(ours, theirs)
    if "error" in theirs:
        problems.insert(0, theirs["error"])
    if list(ours["input"]) != list(shape):
        problems.insert(0, f"input shape {ours['input']} against {list(shape)}")
    return problems, len(ours["layers"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--convkit", required=True, help="the convkit command-line tool")
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()
    try:
        import torch  # noqa: F401
    except ImportError as e:
        print(f"structure_check: PyTorch is not importable ({e}); skipped "
              f"(benchmarks/pytorch-venv.sh installs it)")
        return SKIP
    failed = False
    for name in args.models:
        problems, n = check(args.convkit, name)
        if problems:
            failed = True
            print(f"{name}: convkit and PyTorch differ:")
            for p in problems:
                print(f"  {p}")
        else:
            print(f"{name}: {n} layers, the same in convkit and PyTorch")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
