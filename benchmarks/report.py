#!/usr/bin/env python3
"""Turns benchmark results into the report in docs/results/<machine>/:
markdown tables and PNG plots drawn with gnuplot. Standard library only.

usage: report.py RAW_DIR OUT_DIR [--preset NAME] [--note TEXT]... [--no-plots]
       report.py --machine-slug RAW_DIR     (prints the machine's directory name)

RAW_DIR holds what benchmarks/report.sh collected:
  *.json         Google Benchmark JSON (bench_conv, bench_layers); the
                 benchmark name says which suite (conv/..., layers/...)
  train.jsonl    one JSON object per line: {model, device, batch,
                 images_per_sec} per training measurement, or {model, device,
                 batch, skipped: reason}
  workers.jsonl  {model, workers, images_per_sec, augment, what} per line
  profile.json   a per-layer training profile: {model, device, batch, steps,
                 layers: [{name, type, forward_seconds, backward_seconds}],
                 loss_seconds, optimizer_seconds, data_seconds,
                 engine_seconds, total_seconds}
Any of them may be missing; the report then says that part was not measured.
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import OrderedDict, defaultdict

PASSES = ["fwd", "bwd-data", "bwd-weights"]
PASS_TITLES = {"fwd": "forward", "bwd-data": "backward data", "bwd-weights": "backward weights"}
# The parameter each sweep varies, and how to read it from the geometry.
SWEEP_FIELDS = [("N", "batch N"), ("H", "image size H=W"), ("K", "filters K"), ("R", "kernel R=S"),
                ("stride", "stride")]


# ---------------------------------------------------------------- reading

def read_benchmark_files(raw_dir):
    """All Google Benchmark runs in raw_dir, and the first file's context."""
    runs, context = [], None
    for name in sorted(os.listdir(raw_dir)):
        if not name.endswith(".json") or name == "profile.json":
            continue
        with open(os.path.join(raw_dir, name)) as f:
            doc = json.load(f)
        if "benchmarks" not in doc:
            continue
        if context is None:
            context = doc.get("context", {})
        for b in doc["benchmarks"]:
            # With --benchmark_repetitions keep the median, else the one run.
            if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
                continue
            runs.append(b)
    # A median replaces the repetitions of the same benchmark.
    medians = {b["run_name"] for b in runs if b.get("run_type") == "aggregate"}
    runs = [b for b in runs if b.get("run_type") == "aggregate" or b.get("run_name", b["name"]) not in medians]
    return runs, context or {}


def read_jsonl(path):
    if not os.path.exists(path):
        return []
    out = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise SystemExit(f"report: {path}:{number}: not JSON: {e}")
    return out


def seconds(run):
    unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[run.get("time_unit", "ns")]
    return run["real_time"] * unit


def parse_geometry(label):
    """The key=value words bench_conv writes after the algorithm in its label."""
    geometry = {}
    for word in label.split("|")[0].split():
        if "=" in word:
            key, value = word.split("=", 1)
            geometry[key] = value
    return geometry


class ConvResult:
    def __init__(self, run):
        parts = run["name"].split("/")
        # conv/<set>/<layer>/<device>/<algo>/<pass>
        _, self.set, self.layer, self.device, self.algo, self.passname = parts[:6]
        self.error = run.get("error_message") if run.get("error_occurred") else None
        self.gflops = run.get("gflops")
        self.seconds = seconds(run) if not self.error else None
        self.max_rel_error = run.get("max_rel_error")
        self.heuristic = run.get("heuristic") == 1
        self.geometry = parse_geometry(run.get("label", ""))
        self.sim = "sim:" in run.get("label", "") or self.device == "sim"


def conv_results(runs):
    return [ConvResult(r) for r in runs if r["name"].startswith("conv/")]


def train_records(runs):
    """bench_train's train/<model>/<device>/batch<B> runs as train.jsonl records."""
    out = []
    for r in runs:
        if not r["name"].startswith("train/"):
            continue
        _, model, device, batch = r["name"].split("/")[:4]
        record = {"model": model, "device": device, "batch": int(batch[len("batch"):])}
        if r.get("error_occurred"):
            record["skipped"] = r.get("error_message", "")
        elif "sim:" in r.get("label", ""):
            continue
        else:
            record["images_per_sec"] = r.get("images_per_sec")
        out.append(record)
    return out


def worker_records(runs):
    """bench_train's pipeline/<model>/workers<W>/<loader|training> runs as workers.jsonl records."""
    out = []
    for r in runs:
        if not r["name"].startswith("pipeline/") or r.get("error_occurred"):
            continue
        _, model, workers, what = r["name"].split("/")[:4]
        out.append({"model": model, "workers": int(workers[len("workers"):]), "what": what,
                    "images_per_sec": r.get("images_per_sec"), "augment": True})
    return out


# ---------------------------------------------------------------- helpers

def machine_slug(context):
    model = context.get("cpu_model", "unknown cpu").lower()
    model = re.sub(r"\((r|tm)\)", "", model)
    model = re.sub(r"\bcpu\b|\bprocessor\b|@.*$", "", model)
    slug = re.sub(r"[^a-z0-9]+", "-", model).strip("-") or "unknown"
    threads = context.get("omp_threads") or context.get("num_cpus")
    return f"{slug}-{threads}t" if threads else slug


def fmt(value, digits=3):
    if value is None:
        return "—"
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    return f"{value:.{decimals}f}"


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def shape_text(g):
    if not g:
        return ""
    text = f"N{g.get('N')} {g.get('C')}→{g.get('K')} {g.get('H')}×{g.get('W')} {g.get('R')}×{g.get('S')}"
    stride = g.get("stride", "1x1")
    if stride != "1x1":
        text += " s" + stride.split("x")[0]
    pad = g.get("pad", "0,0,0,0")
    if pad != "0,0,0,0":
        text += " p" + (pad.split(",")[0] if len(set(pad.split(","))) == 1 else pad)
    return text


def ordered_unique(items):
    return list(OrderedDict.fromkeys(items))


class Plotter:
    """Writes data files and gnuplot scripts to a scratch directory and runs gnuplot."""

    def __init__(self, out_dir, enabled):
        self.out_dir = out_dir
        self.enabled = enabled and shutil.which("gnuplot") is not None
        self.scratch = tempfile.mkdtemp(prefix="convkit-report-")
        self.made = []
        self.failures = []

    def data(self, name, rows):
        path = os.path.join(self.scratch, name)
        with open(path, "w") as f:
            for row in rows:
                f.write(" ".join("?" if v is None else (f'"{v}"' if isinstance(v, str) else repr(v)) for v in row))
                f.write("\n")
        return path

    def plot(self, png, script):
        if not self.enabled:
            return None
        gp = os.path.join(self.scratch, png + ".gp")
        with open(gp, "w") as f:
            f.write(f"set terminal pngcairo size 1350,420 font ',9'\nset output '{os.path.join(self.out_dir, png)}'\n")
            f.write("set datafile missing '?'\nset key top left\nset grid ytics\n")
            f.write(script)
        proc = subprocess.run(["gnuplot", gp], capture_output=True, text=True)
        if proc.returncode != 0:
            self.failures.append(f"{png}: {proc.stderr.strip()}")
            return None
        self.made.append(png)
        return png

    def close(self):
        shutil.rmtree(self.scratch, ignore_errors=True)


def quote(text):
    return text.replace("'", "").replace('"', "")


# ---------------------------------------------------------------- sections

def machine_section(context, preset, notes):
    lines = [f"Machine: **{context.get('cpu_model', '?')}**, {context.get('num_cpus', '?')} CPUs, "
             f"{context.get('omp_threads', '?')} OpenMP threads, "
             f"load average at start {context.get('load_average_at_start', '?')}."]
    devices = sorted((k[len("device_"):], v) for k, v in context.items() if k.startswith("device_"))
    for name, detail in devices:
        lines.append(f"- `{name}`: {detail}")
    for key, value in sorted(context.items()):
        if key.startswith("skipped_device_"):
            lines.append(f"- skipped `{key[len('skipped_device_'):]}`: {value}")
    lines.append("")
    lines.append(f"Preset `{preset}`, run on {context.get('date', '?')} with convkit "
                 f"{context.get('convkit_version', '?')} ({context.get('compiler', '?')}).")
    lines.append("")
    lines.append("**How to read these figures.** Every number comes from one run on this machine, "
                 "so compare figures within a table (algorithm against algorithm, batch against batch) "
                 "as ratios, not against other machines. `sim` times are never shown: the emulator "
                 "says nothing about a GPU's speed.")
    try:
        load = float(str(context.get("load_average_at_start", "")).split()[0])
        cpus = int(context.get("num_cpus", 0))
    except (ValueError, IndexError):
        load, cpus = None, 0
    if load is not None and cpus and load > 0.75 * cpus:
        lines.append("")
        lines.append(f"> **Busy machine:** the 1-minute load average was {load:.1f} on {cpus} CPUs when the "
                     f"benchmarks started, so other processes took CPU time from them: every figure here is "
                     f"slower and noisier than on a quiet machine, and even ratios can be off.")
    for note in notes:
        lines.append("")
        lines.append(f"> {note}")
    return "\n".join(lines)


def conv_tables(results, plotter, context):
    """Section 1: GFLOP/s per algorithm, layer and pass, for each set and device."""
    out = []
    timed = [r for r in results if not r.sim and not r.set.startswith("sweep-")]
    if not timed:
        return "Not measured in this run."
    footnotes = OrderedDict()
    for set_name in ordered_unique(r.set for r in timed):
        for device in ordered_unique(r.device for r in timed if r.set == set_name):
            rs = [r for r in timed if r.set == set_name and r.device == device]
            algos = ordered_unique(r.algo for r in rs)
            # An algorithm no layer of the set supports gets no column, only a note.
            never = [a for a in algos if all(r.error for r in rs if r.algo == a)]
            algos = [a for a in algos if a not in never]
            passes = [p for p in PASSES if any(r.passname == p for r in rs)]
            layers = ordered_unique(r.layer for r in rs)
            index = {(r.layer, r.algo, r.passname): r for r in rs}
            header = ["layer", "shape"] + [f"{PASS_TITLES[p]}: {a}" for p in passes for a in algos] + \
                     ["step winner (ms)"]
            rows = []
            wins = defaultdict(int)
            for layer in layers:
                geometry = next((r.geometry for r in rs if r.layer == layer and r.geometry), {})
                row = [layer, shape_text(geometry)]
                for p in passes:
                    cells = {a: index.get((layer, a, p)) for a in algos}
                    ok = {a: c for a, c in cells.items() if c and not c.error and c.gflops}
                    best = max(ok, key=lambda a: ok[a].gflops) if ok else None
                    for a in algos:
                        c = cells[a]
                        if c is None:
                            row.append("")
                        elif c.error:
                            note = footnotes.setdefault(c.error, len(footnotes) + 1)
                            row.append(f"— [{note}]")
                        else:
                            text = fmt(c.gflops)
                            if c.heuristic:
                                text += "·"
                            row.append(f"**{text}**" if a == best else text)
                    if best:
                        wins[(p, best)] += 1
                # The algorithm with the least fwd + bwd-data + bwd-weights time.
                totals = {}
                for a in algos:
                    cells = [index.get((layer, a, p)) for p in PASSES]
                    if all(c and not c.error for c in cells):
                        totals[a] = sum(c.seconds for c in cells)
                if totals:
                    a = min(totals, key=totals.get)
                    row.append(f"{a} ({fmt(totals[a] * 1e3)})")
                else:
                    row.append("—")
                rows.append(row)
            batch_note = ""
            batches = ordered_unique(r.geometry.get("N") for r in rs if r.geometry)
            if batches:
                batch_note = f" Batch as run: {', '.join(b for b in batches if b)}."
            out.append(f"### {set_name} on {device}\n")
            out.append(f"GFLOP/s (2·N·K·C·R·S·P·Q per pass, per second); **bold** is the fastest algorithm "
                       f"of each pass, · marks the one `automatic`'s heuristic picks.{batch_note} "
                       f"Measured in one run on {context.get('cpu_model', 'this machine')}.\n")
            if never:
                reasons = []
                for a in never:
                    first = next(r for r in rs if r.algo == a)
                    reasons.append(f"{a} [{footnotes.setdefault(first.error, len(footnotes) + 1)}]")
                out.append(f"Not shown, no layer ran: {', '.join(reasons)}.\n")
            out.append(table(header, rows))
            summary = ", ".join(f"{a} wins {n} of {len(layers)} layers {PASS_TITLES[p]}"
                                for (p, a), n in sorted(wins.items(), key=lambda kv: PASSES.index(kv[0][0])))
            if summary:
                out.append(f"\n{summary}.\n")
            png = conv_plot(plotter, set_name, device, layers, algos, passes, index)
            if png:
                out.append(f"![GFLOP/s on {set_name}, {device}]({png})\n")
    if footnotes:
        out.append("Why a cell is empty:\n")
        for text, number in footnotes.items():
            out.append(f"{number}. {text}")
    return "\n".join(out)


def conv_plot(plotter, set_name, device, layers, algos, passes, index):
    if not plotter.enabled or not algos:
        return None
    slug = re.sub(r"[^a-z0-9]+", "-", f"conv-{set_name}-{device}".lower())
    script = [f"set multiplot layout 1,{len(passes)} title '{quote(set_name)} on {quote(device)}: GFLOP/s'",
              "set style data histograms", "set style histogram clustered gap 1",
              "set style fill solid 0.85 border -1", "set xtics rotate by -35 noenhanced", "set yrange [0:*]",
              "set ylabel 'GFLOP/s'", "set key below horizontal"]
    for p in passes:
        rows = []
        for layer in layers:
            row = [layer]
            for a in algos:
                c = index.get((layer, a, p))
                row.append(c.gflops if c and not c.error and c.gflops else None)
            rows.append(row)
        path = plotter.data(f"{slug}-{p}.dat", rows)
        series = ", ".join(
            (f"'{path}' using {i + 2}:xtic(1)" if i == 0 else f"'' using {i + 2}") + f" title '{a}' noenhanced"
            for i, a in enumerate(algos))
        script.append(f"set title '{PASS_TITLES[p]}'")
        script.append(f"plot {series}")
    script.append("unset multiplot")
    return plotter.plot(slug + ".png", "\n".join(script) + "\n")


def sweep_field(rs):
    for field, title in SWEEP_FIELDS:
        values = {r.geometry.get(field) for r in rs if r.geometry}
        if len(values) > 1:
            return field, title
    return None, None


def numeric(field, geometry):
    value = geometry.get(field, "")
    return int(value.split("x")[0]) if value else None


def sweep_section(results, plotter, context):
    """Section 2: which algorithm wins as one parameter changes."""
    timed = [r for r in results if not r.sim and r.set.startswith("sweep-")]
    if not timed:
        return "Not measured in this run."
    out = []
    for set_name in ordered_unique(r.set for r in timed):
        for device in ordered_unique(r.device for r in timed if r.set == set_name):
            rs = [r for r in timed if r.set == set_name and r.device == device and r.geometry]
            field, title = sweep_field(rs)
            if not field:
                continue
            algos = [a for a in ordered_unique(r.algo for r in rs) if any(not r.error for r in rs if r.algo == a)]
            passes = [p for p in PASSES if any(r.passname == p for r in rs)]
            xs = sorted({numeric(field, r.geometry) for r in rs})
            best = {}
            for p in passes:
                for x in xs:
                    ok = [r for r in rs if r.passname == p and numeric(field, r.geometry) == x and not r.error
                          and r.gflops]
                    if ok:
                        best[(p, x)] = max(ok, key=lambda r: r.gflops)
            header = [title, "shape"] + [f"{PASS_TITLES[p]} winner (GFLOP/s)" for p in passes]
            shapes = {numeric(field, r.geometry): shape_text(r.geometry) for r in rs}
            rows = [[x, shapes[x]] + [f"{best[(p, x)].algo} ({fmt(best[(p, x)].gflops)})" if (p, x) in best
                                      else "—" for p in passes] for x in xs]
            out.append(f"### {set_name} on {device}: {title}\n")
            out.append(f"Measured in one run on {context.get('cpu_model', 'this machine')}.\n")
            out.append(table(header, rows))
            crossings = []
            for p in passes:
                previous = None
                for x in xs:
                    winner = best.get((p, x))
                    if winner and previous and winner.algo != previous[1]:
                        crossings.append(f"{PASS_TITLES[p]}: {previous[1]} → {winner.algo} between "
                                         f"{previous[0]} and {x}")
                    if winner:
                        previous = (x, winner.algo)
            out.append("\nCrossovers: " + ("; ".join(crossings) if crossings else "none, one algorithm wins "
                                           "throughout") + ".\n")
            png = sweep_plot(plotter, set_name, device, field, title, xs, algos, passes, rs)
            if png:
                out.append(f"![{set_name} on {device}]({png})\n")
    return "\n".join(out)


def sweep_plot(plotter, set_name, device, field, title, xs, algos, passes, rs):
    if not plotter.enabled or not algos:
        return None
    slug = re.sub(r"[^a-z0-9]+", "-", f"{set_name}-{device}".lower())
    logx = field in ("N", "H", "K") and min(xs) > 0 and max(xs) / min(xs) >= 8
    script = [f"set multiplot layout 1,{len(passes)} title '{quote(set_name)} on {quote(device)}: "
              f"GFLOP/s against {quote(title)}'", f"set xlabel '{quote(title)}'", "set ylabel 'GFLOP/s'",
              "set yrange [0:*]", "set style data linespoints", "set key below horizontal"]
    if logx:
        script.append("set logscale x 2")
    else:
        script.append(f"set xrange [{min(xs) - 0.5}:{max(xs) + 0.5}]")
    for p in passes:
        index = {(r.algo, numeric(field, r.geometry)): r for r in rs if r.passname == p}
        rows = []
        for x in xs:
            row = [x]
            for a in algos:
                r = index.get((a, x))
                row.append(r.gflops if r and not r.error and r.gflops else None)
            rows.append(row)
        path = plotter.data(f"{slug}-{p}.dat", rows)
        series = ", ".join(f"'{path}' using 1:{i + 2} title '{a}' noenhanced" for i, a in enumerate(algos))
        script.append(f"set title '{PASS_TITLES[p]}'")
        script.append(f"plot {series}")
    script.append("unset multiplot")
    return plotter.plot(slug + ".png", "\n".join(script) + "\n")


def layers_section(runs, context):
    rows = []
    for r in runs:
        if not r["name"].startswith("layers/") or "sim:" in r.get("label", ""):
            continue
        _, layer, shape, device, passname = r["name"].split("/")[:5]
        if r.get("error_occurred"):
            rows.append([layer, shape, device, passname, "—", "—", "—", "—", r.get("error_message", "")])
            continue
        t = seconds(r)
        gbs = r.get("floor_bytes", 0) / t / 1e9 if t > 0 else None
        g = parse_geometry(r.get("label", ""))
        rows.append([layer, shape, device, passname, fmt(t * 1e6), fmt(gbs),
                     fmt(r["gflops"]) if "gflops" in r else "", g.get("N", "?"), g.get("rotation", "?")])
    if not rows:
        return "Not measured in this run."
    return (f"Kernel time per pass on preallocated tensors; GB/s is the byte floor (every operand read or "
            f"written once) divided by the time, so compare it with memcpy's bandwidth "
            f"(bench_core). Measured in one run on {context.get('cpu_model', 'this machine')}.\n\n" +
            table(["layer", "shape per image", "device", "pass", "µs", "GB/s of floor", "GFLOP/s", "batch",
                   "operand copies"], rows))


def train_section(records, plotter, context):
    """Section 3: end-to-end training images/s per model x device x batch."""
    if not records:
        return "Not measured in this run."
    out = []
    skipped = [r for r in records if r.get("skipped")]
    done = [r for r in records if not r.get("skipped") and r.get("images_per_sec")]
    models = ordered_unique(r["model"] for r in records)
    devices = ordered_unique(r["device"] for r in done)
    batches = sorted({int(r["batch"]) for r in done})
    records_by_key = {(r["model"], r["device"], int(r["batch"])): r for r in done}
    index = {key: r["images_per_sec"] for key, r in records_by_key.items()}
    if done:
        header = ["model", "device"] + [f"batch {b}" for b in batches]
        rows = []
        for m in models:
            for d in devices:
                if any((m, d, b) in index for b in batches):
                    rows.append([m, d] + [train_cell(records_by_key.get((m, d, b))) for b in batches])
        out.append(f"Training images/s from `convkit bench train` (forward, backward and an optimizer step on "
                   f"synthetic data already on the device, after warm-up steps); with `--repeat`, the median "
                   f"and, in brackets, the min-max of the repeats. "
                   f"Measured in one run on {context.get('cpu_model', 'this machine')}.\n")
        out.append(table(header, rows))
        gpus = [d for d in devices if d.startswith("cuda")]
        if gpus and "cpu" in devices:
            out.append("\nGPU over CPU speedup (same model and batch):\n")
            srows = []
            for m in models:
                for g in gpus:
                    cells = []
                    for b in batches:
                        c, gv = index.get((m, "cpu", b)), index.get((m, g, b))
                        cells.append(f"{fmt(gv / c)}×" if c and gv else "—")
                    srows.append([m, f"{g} / cpu"] + cells)
            out.append(table(["model", "ratio"] + [f"batch {b}" for b in batches], srows))
        else:
            out.append("\nNo GPU speedup: no usable cuda device in this run.")
        png = train_plot(plotter, models, devices, batches, records_by_key)
        if png:
            out.append(f"\n![training images/s]({png})\n")
    if skipped:
        out.append("\nNot measured:\n")
        reasons = OrderedDict()
        for r in skipped:
            reasons.setdefault((r["device"], r["skipped"]), []).append(f"{r['model']}@{r['batch']}")
        for (device, reason), what in reasons.items():
            out.append(f"- `{device}` ({len(what)} runs): {reason}")
    return "\n".join(out)


def train_cell(record):
    """The median images/s, and the min-max range of a --repeat run."""
    if record is None:
        return fmt(None)
    cell = fmt(record["images_per_sec"])
    if record.get("repeat", 1) > 1:
        cell += f" ({fmt(record['images_per_sec_min'])}-{fmt(record['images_per_sec_max'])})"
    return cell


def train_plot(plotter, models, devices, batches, index):
    if not plotter.enabled or not batches:
        return None
    # A linear y axis from 0: a log axis over a 2x range has two ticks. Runs
    # with --repeat draw their min-max range as error bars around the median.
    series, n = [], 0
    for m in models:
        for d in devices:
            rows = []
            for b in batches:
                r = index.get((m, d, b))
                v = r["images_per_sec"] if r else None
                rows.append([b, v, r.get("images_per_sec_min", v) if r else None,
                             r.get("images_per_sec_max", v) if r else None])
            if all(v is None for _, v, _, _ in rows):
                continue
            path = plotter.data(f"train-{n}.dat", rows)
            series.append(f"'{path}' using 1:2:3:4 with yerrorlines title '{quote(m)} {quote(d)}' noenhanced")
            n += 1
    if not series:
        return None
    script = ["set title 'training images/s against batch size (median; bars: min-max of the repeats)'",
              "set xlabel 'batch'", "set ylabel 'images/s'", "set yrange [0:*]", "set ytics autofreq",
              "set logscale x 2" if len(batches) > 1 else "", "set key outside right", "plot " + ", ".join(series)]
    return plotter.plot("train-images-per-sec.png", "\n".join(script) + "\n")


def workers_section(records, plotter, context):
    """Section 4: images/s against data-loader workers, augmentation on."""
    if not records:
        return "Not measured in this run."
    whats = sorted(ordered_unique(r.get("what", "training") for r in records), key=lambda w: w != "loader")
    workers = sorted({int(r["workers"]) for r in records})
    index = {(r.get("what", "training"), int(r["workers"])): r["images_per_sec"] for r in records}
    model = records[0].get("model", "?")
    rows = [[w] + [fmt(index.get((what, w))) for what in whats] for w in workers]
    out = [f"images/s of `{model}` with augmentation on, against the data loader's worker threads. "
           f"`loader` is the input pipeline alone, `training` the pipeline feeding training steps: where "
           f"`loader` is below the training rate of the model, the pipeline is the bottleneck. "
           f"Measured in one run on {context.get('cpu_model', 'this machine')}.\n",
           table(["workers"] + [f"{w} images/s" for w in whats], rows)]
    if plotter.enabled:
        path = plotter.data("workers.dat", [[w] + [index.get((what, w)) for what in whats] for w in workers])
        series = ", ".join(f"'{path}' using 1:{i + 2} title '{quote(what)}'" for i, what in enumerate(whats))
        png = plotter.plot("workers.png", "\n".join([
            f"set title '{quote(model)}: images/s against data-loader workers (augmentation on)'",
            # The loader alone runs tens of times faster than training: on a
            # linear axis the training line lies flat on zero.
            "set xlabel 'workers'", "set ylabel 'images/s (log scale)'", "set logscale y 10",
            "set format y '%.0f'", "set mytics 10", "set grid ytics mytics",
            f"set xtics ({', '.join(str(w) for w in workers)})", "set style data linespoints",
            "plot " + series]) + "\n")
        if png:
            out.append(f"\n![images/s against workers]({png})\n")
    return "\n".join(out)


def profile_section(profile, plotter, context):
    """Section 5: the per-layer time breakdown of a training step, by layer type."""
    if not profile:
        return "Not measured in this run."
    steps = max(int(profile.get("steps", 1)), 1)
    by_type = OrderedDict()
    for layer in profile.get("layers", []):
        t = by_type.setdefault(layer.get("type") or layer["name"], [0, 0.0, 0.0])
        t[0] += 1
        t[1] += layer.get("forward_seconds", 0)
        t[2] += layer.get("backward_seconds", 0)
    extra = [("loss", profile.get("loss_seconds", 0)), ("optimizer", profile.get("optimizer_seconds", 0)),
             ("data", profile.get("data_seconds", 0)), ("autograd engine", profile.get("engine_seconds", 0))]
    total = profile.get("total_seconds") or (sum(f + b for _, f, b in by_type.values()) +
                                             sum(v for _, v in extra))
    rows = []
    for name, (count, f, b) in sorted(by_type.items(), key=lambda kv: -(kv[1][1] + kv[1][2])):
        rows.append([name, count, fmt(f / steps * 1e3), fmt(b / steps * 1e3), fmt((f + b) / steps * 1e3),
                     f"{100 * (f + b) / total:.1f}%"])
    for name, v in extra:
        if v:
            rows.append([name, "", "", "", fmt(v / steps * 1e3), f"{100 * v / total:.1f}%"])
    out = [f"`{profile.get('model', '?')}` on `{profile.get('device', '?')}`, batch {profile.get('batch', '?')}, "
           f"{steps} profiled training steps; milliseconds per step. Measured in one run on "
           f"{context.get('cpu_model', 'this machine')}.\n",
           table(["layer type", "layers", "forward ms", "backward ms", "total ms", "share of step"], rows)]
    if plotter.enabled and by_type:
        names = list(by_type.keys())
        path = plotter.data("profile.dat", [[n, by_type[n][1] / steps * 1e3, by_type[n][2] / steps * 1e3]
                                            for n in names])
        png = plotter.plot("profile.png", "\n".join([
            f"set title '{quote(profile.get('model', '?'))}: time per training step by layer type'",
            "set style data histograms", "set style histogram rowstacked", "set style fill solid 0.85 border -1",
            "set boxwidth 0.6", "set ylabel 'ms per step'", "set key top right", "set yrange [0:*]", "set xtics noenhanced",
            f"plot '{path}' using 2:xtic(1) title 'forward', '' using 3 title 'backward'"]) + "\n")
        if png:
            out.append(f"\n![time by layer type]({png})\n")
    return "\n".join(out)


# ---------------------------------------------------------------- main

def build_report(raw_dir, out_dir, preset, notes, plots):
    runs, context = read_benchmark_files(raw_dir)
    os.makedirs(out_dir, exist_ok=True)
    for name in os.listdir(out_dir):  # plots of an earlier report
        if name.endswith(".png"):
            os.remove(os.path.join(out_dir, name))
    plotter = Plotter(out_dir, plots)
    profile = None
    if os.path.exists(os.path.join(raw_dir, "profile.json")):
        with open(os.path.join(raw_dir, "profile.json")) as f:
            profile = json.load(f)
    try:
        results = conv_results(runs)
        sims = [r for r in results if r.sim]
        sections = [
            f"# convkit benchmark report: {machine_slug(context)}\n",
            machine_section(context, preset, notes),
            "\n## 1. Convolution: GFLOP/s per algorithm, layer and pass\n",
            conv_tables(results, plotter, context),
            "\n## 2. Crossovers: which algorithm wins as one parameter changes\n",
            sweep_section(results, plotter, context),
            "\n## 3. End-to-end training: images/s per model, device and batch\n",
            train_section(read_jsonl(os.path.join(raw_dir, "train.jsonl")) + train_records(runs), plotter, context),
            "\n## 4. Input pipeline: images/s against data-loader workers\n",
            workers_section(read_jsonl(os.path.join(raw_dir, "workers.jsonl")) + worker_records(runs), plotter,
                            context),
            "\n## 5. Where a training step's time goes, by layer type\n",
            profile_section(profile, plotter, context),
            "\n## 6. Other layers: kernel times\n",
            layers_section(runs, context),
        ]
        if sims:
            bad = [r for r in sims if r.error and not r.error.startswith("unsupported")]
            sections.append(f"\n## sim correctness smoke\n\n{len(sims)} sim runs, {len(bad)} failed checks; "
                            f"their times are not reported.")
        if plotter.failures:
            sections.append("\nPlots that gnuplot failed to draw:\n\n" +
                            "\n".join(f"- {f}" for f in plotter.failures))
        elif not plotter.enabled:
            sections.append("\nNo plots: gnuplot was not found or --no-plots was given.")
        sections.append(f"\nRaw results: [raw/](raw/) (Google Benchmark JSON and JSON lines), "
                        f"written by `benchmarks/report.sh {preset}`.\n")
        with open(os.path.join(out_dir, "README.md"), "w") as f:
            f.write("\n".join(sections))
        return plotter.made, plotter.failures
    finally:
        plotter.close()


def main(argv):
    if len(argv) == 2 and argv[0] == "--machine-slug":
        _, context = read_benchmark_files(argv[1])
        print(machine_slug(context))
        return 0
    args, preset, notes, plots = [], "custom", [], True
    i = 0
    while i < len(argv):
        if argv[i] == "--preset" and i + 1 < len(argv):
            preset = argv[i + 1]
            i += 2
        elif argv[i] == "--note" and i + 1 < len(argv):
            notes.append(argv[i + 1])
            i += 2
        elif argv[i] == "--no-plots":
            plots = False
            i += 1
        elif argv[i].startswith("-"):
            print(__doc__, file=sys.stderr)
            return 2
        else:
            args.append(argv[i])
            i += 1
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    made, failures = build_report(args[0], args[1], preset, notes, plots)
    print(f"report: wrote {os.path.join(args[1], 'README.md')} and {len(made)} plots")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
