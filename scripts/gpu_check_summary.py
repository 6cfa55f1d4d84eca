#!/usr/bin/env python3
"""Summarises a scripts/gpu-check.sh run: OUT/summary.json and OUT/summary.md.

Reads what the steps left in OUT: env.tsv and steps.tsv (the script's own),
ctest.xml (JUnit), bench_conv.json (Google Benchmark, with the kernel-version
sweep's runs in its "kernel_versions" section), bench_gemm.json (Google
Benchmark) and train.jsonl (one JSON line
per training run, convkit's and PyTorch's). A missing file means that step
failed early; the summary says so rather than inventing a figure.
"""
import json
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


def read_tsv(path):
    rows = []
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                rows.append(line.split("\t"))
    return rows


def tests_summary(path):
    if not path.exists():
        return None
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    # gpu-check reruns a binary that failed under CONVKIT_DISABLE_WGMMA=1; its
    # cases, named "without_wgmma.", are counted apart from the first runs'.
    counts = {first: {"total": 0, "failed": 0, "skipped": 0, "failures": []} for first in (True, False)}
    cuda = 0
    for suite in suites:
        for case in suite.findall("testcase"):
            name = case.get("name") or ""
            c = counts[not name.startswith("without_wgmma.")]
            c["total"] += 1
            if case.find("failure") is not None or case.find("error") is not None:
                c["failed"] += 1
                c["failures"].append(name)
            elif case.find("skipped") is not None or case.get("status") in ("notrun", "disabled"):
                c["skipped"] += 1
            cuda += "cuda" in name and not name.startswith("without_wgmma.")
    first, rerun = counts[True], counts[False]
    first["failures"] = first["failures"][:50]
    rerun["failures"] = rerun["failures"][:50]
    return {**first, "cuda_instances": cuda, "without_wgmma": rerun if rerun["total"] else None}


def ms_of(b):
    return b["real_time"] * {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b.get("time_unit", "ns")]


def conv_rows(doc):
    """(name parts, benchmark) of each conv row of a Google Benchmark document:
    parts are conv/<set>/<layer>/<device>/<algo>/<pass>."""
    for b in doc.get("benchmarks", []):
        parts = b["name"].split("/")
        if b.get("run_type") != "aggregate" and len(parts) >= 6:
            yield parts, b


def cudnn_best(doc):
    """(set, layer, device, pass) -> cuDNN's ms."""
    return {(p[1], p[2], p[3], p[5].split(":")[0]): ms_of(b) for p, b in conv_rows(doc)
            if p[4] == "cudnn" and not b.get("error_occurred")}


def versions_summary(data):
    """One table per kernel family and precision: layer x pass x version ms,
    each version's ratio to the family's default and to cuDNN's best (strict
    FP32 rows against step 6's cuDNN, or their own run's where step 6 has
    none; TF32 and BF16 rows against their own run's cuDNN, which is TF32 in
    both: cuDNN has no bf16 mode on float32)."""
    sections = data.get("kernel_versions")
    if sections is None:
        return None
    tables = {}
    for precision, doc in sorted(sections.items()):
        # Strict FP32: step 6's cuDNN, and the versions run's own for layers
        # step 6 does not time (FFT's layer).
        cudnn = cudnn_best(doc) if precision in ("tf32", "bf16") else {**cudnn_best(doc), **cudnn_best(data)}
        for parts, b in conv_rows(doc):
            if "@" not in parts[4]:
                continue
            algo, pinned = parts[4].split("@", 1)
            family, version = pinned.rsplit(".v", 1)
            table = tables.setdefault(f"{family} ({precision})", {"family": family, "precision": precision,
                                                                  "algo": algo, "default": None, "rows": {}})
            key = (parts[1], parts[2], parts[3], parts[5].split(":")[0])
            row = table["rows"].setdefault(key, {"cudnn_ms": cudnn.get(key), "versions": {}})
            if b.get("default_version"):
                table["default"] = int(b["default_version"])
            row["versions"][int(version)] = (None if b.get("error_occurred") else ms_of(b))
    out = []
    for name, t in sorted(tables.items()):
        rows = []
        for (set_, layer, device, pass_), r in sorted(t["rows"].items()):
            default_ms = r["versions"].get(t["default"])
            versions = {}
            for v, ms in sorted(r["versions"].items()):
                versions[v] = {"ms": ms,
                               "over_default": ms / default_ms if ms and default_ms else None,
                               "over_cudnn": ms / r["cudnn_ms"] if ms and r["cudnn_ms"] else None}
            rows.append({"set": set_, "layer": layer, "device": device, "pass": pass_,
                         "cudnn_ms": r["cudnn_ms"], "versions": versions})
        out.append({"table": name, "family": t["family"], "precision": t["precision"], "algo": t["algo"],
                    "default_version": t["default"], "rows": rows})
    return out


def conv_summary(path, section=None):
    """Per layer and pass: each algorithm's time, cuDNN's, and the ratio to it
    (of bench_conv.json's section `section` when given: "tf32")."""
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    if section is not None:
        if section not in data:
            return None
        data = data[section]
    table = defaultdict(dict)  # (set, layer, device, pass) -> algo -> ms
    skipped = []
    for parts, b in conv_rows(data):
        if "@" in parts[4]:  # a pinned kernel version: the version tables' row
            continue
        key = (parts[1], parts[2], parts[3], parts[5].split(":")[0])
        if b.get("error_occurred"):
            skipped.append({"name": b["name"], "why": b.get("error_message", "")})
            continue
        table[key][parts[4]] = {"ms": ms_of(b), "gflops": b.get("gflops"),
                                "max_rel_error": b.get("max_rel_error")}
    rows = []
    for (set_, layer, device, pass_), algos in sorted(table.items()):
        base = algos.get("cudnn", {}).get("ms")
        ours = {a: v for a, v in algos.items() if a != "cudnn"}
        best = min(ours.items(), key=lambda kv: kv[1]["ms"]) if ours else None
        rows.append({"set": set_, "layer": layer, "device": device, "pass": pass_, "algos": algos,
                     "best": best[0] if best else None,
                     "best_ms": best[1]["ms"] if best else None, "cudnn_ms": base,
                     "best_over_cudnn": (best[1]["ms"] / base) if best and base else None})
    return {"context": data.get("context", {}), "rows": rows, "skipped": skipped,
            "versions": versions_summary(data)}


def train_summary(path):
    if not path.exists():
        return None
    runs = [json.loads(line) for line in path.read_text().splitlines() if line.strip().startswith("{")]
    rows = defaultdict(dict)  # (model, batch) -> column -> images/s
    for r in runs:
        key = (r["model"], r["batch"])
        if r.get("library") == "pytorch":
            rows[key]["pytorch_tf32" if r["tf32"] else "pytorch_fp32"] = r["images_per_sec"]
        else:
            device = r["device"].split(":")[0]
            tf32 = device != "cpu" and r.get("float32_precision", "highest") == "high"
            pinned = "_pinned" if r.get("pinned_kernels") else ""
            tuned = "_tuned" if r.get("conv_benchmark") else ""
            rows[key]["convkit_" + device + ("_tf32" if tf32 else "") + pinned + tuned] = r["images_per_sec"]
    out = []
    for (model, batch), cols in sorted(rows.items()):
        gpu = cols.get("convkit_cuda") or cols.get("convkit_sim")
        row = {"model": model, "batch": batch, **cols}
        if gpu and cols.get("convkit_cpu"):
            row["gpu_over_cpu"] = gpu / cols["convkit_cpu"]
        if cols.get("convkit_cuda") and cols.get("pytorch_fp32"):
            row["convkit_over_pytorch_fp32"] = cols["convkit_cuda"] / cols["pytorch_fp32"]
        if cols.get("convkit_cuda_tf32") and cols.get("pytorch_tf32"):
            row["convkit_over_pytorch_tf32"] = cols["convkit_cuda_tf32"] / cols["pytorch_tf32"]
        # Tuned: convkit's benchmark mode, per pass, as PyTorch's cudnn.benchmark.
        if cols.get("convkit_cuda_tuned") and cols.get("pytorch_fp32"):
            row["tuned_over_pytorch_fp32"] = cols["convkit_cuda_tuned"] / cols["pytorch_fp32"]
        if cols.get("convkit_cuda_tf32_tuned") and cols.get("pytorch_tf32"):
            row["tuned_over_pytorch_tf32"] = cols["convkit_cuda_tf32_tuned"] / cols["pytorch_tf32"]
        out.append(row)
    return {"runs": runs, "rows": out}


def gemm_summary(path):
    """Per size: the best hand-written version of each precision against cuBLAS
    in the same precision (bench_gemm: BM_GpuGemm/*, BM_GpuGemmTensorCore/*,
    BM_Cublas/*), issue 18's GEMM goals read off the n = 4096 rows."""
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    best = defaultdict(dict)  # (precision, n) -> {"ours": (name, gflops), "cublas": gflops}
    failed = []
    for b in data.get("benchmarks", []):
        name = b["name"]
        if not name.startswith(("BM_GpuGemm", "BM_Cublas")):
            continue
        if b.get("error_occurred"):
            failed.append({"name": name, "why": b.get("error_message", "")})
            continue
        parts = name.split("/")
        gflops = b.get("GFLOP/s")
        if parts[0] == "BM_Cublas":
            best[(parts[1], int(parts[2]))]["cublas"] = gflops
            continue
        if parts[0] == "BM_GpuGemm":
            if parts[1] in ("v9_cublas", "v8_cublas"):  # v8 before the wide thread tiles
                continue  # the same SGEMM as BM_Cublas/fp32
            precision, version, n = "fp32", parts[1], int(parts[2])
        else:
            precision, version, n = parts[1], parts[2], int(parts[3])
        ours = best[(precision, n)].get("ours")
        if ours is None or gflops > ours[1]:
            best[(precision, n)]["ours"] = (version, gflops)
    goals = {"fp32": 0.9, "tf32": 0.8, "bf16": 0.8}
    rows = []
    for (precision, n), v in sorted(best.items()):
        ours, cublas = v.get("ours"), v.get("cublas")
        ratio = ours[1] / cublas if ours and cublas else None
        rows.append({"precision": precision, "n": n, "best": ours[0] if ours else None,
                     "gflops": ours[1] if ours else None, "cublas_gflops": cublas, "ratio": ratio,
                     "goal": goals.get(precision) if n == 4096 else None})
    return {"context": data.get("context", {}), "rows": rows, "failed": failed}


def gemm_markdown(g, sim):
    lines = ["", "## GEMM (GFLOP/s; ratio = best convkit version / cuBLAS, same precision)", ""]
    if g is None:
        return lines + ["no bench_gemm.json"]
    if sim or not g["rows"]:
        return lines + [f"no GPU rows: {g['context'].get('gpu_gemm', 'no GPU')}"]
    lines += ["| precision | n | best version | GFLOP/s | cuBLAS GFLOP/s | ratio | goal |",
              "| --- | ---: | --- | ---: | ---: | ---: | ---: |"]
    for r in g["rows"]:
        lines.append(f"| {r['precision']} | {r['n']} | {r['best'] or '-'} | {fmt(r['gflops'], '{:.0f}')} | "
                     f"{fmt(r['cublas_gflops'], '{:.0f}')} | {fmt(r['ratio'], '{:.2f}x')} | "
                     f"{fmt(r['goal'], '>= {:.2f}x')} |")
    for f in g["failed"]:
        lines.append(f"- FAILED {f['name']}: {f['why']}")
    return lines


def fmt(v, spec="{:.1f}"):
    return "-" if v is None else spec.format(v)


def versions_markdown(tables, sim):
    lines = ["", "## Kernel versions (ms; ratios to the family's default version and to cuDNN's best)", ""]
    if tables is None:
        return lines + ["no kernel_versions section in bench_conv.json (the step did not run: --quick, or it "
                        "failed early)"]
    if sim:
        lines.append("sim runs the CUDA kernels on the CPU emulator: these times test the pipeline, not a GPU's "
                     "speed.\n")
    for t in tables:
        versions = sorted({v for r in t["rows"] for v in r["versions"]})
        lines += [f"### {t['family']}, {t['precision']} ({t['algo']}; default v{t['default_version']})", "",
                  "Each cell: ms (/ default, / cuDNN); - where the row skipped itself (bench_conv.json says why).", "",
                  "| set | layer | pass | " + " | ".join(f"v{v}" for v in versions) + " | cuDNN ms |",
                  "| --- | --- | --- | " + " | ".join("---:" for _ in versions) + " | ---: |"]
        for r in t["rows"]:
            cells = []
            for v in versions:
                x = r["versions"].get(v, {})
                cells.append("-" if not x.get("ms") else
                             f"{x['ms']:.3f} ({fmt(x['over_default'], '{:.2f}x')}, {fmt(x['over_cudnn'], '{:.2f}x')})")
            lines.append(f"| {r['set']} | {r['layer']} | {r['pass']} | " + " | ".join(cells) +
                         f" | {fmt(r['cudnn_ms'], '{:.3f}')} |")
        lines.append("")
    return lines


def conv_markdown(c, precision, file):
    lines = ["", f"## Convolution passes{precision} (ms; ratio = best convkit / cuDNN)", ""]
    if c is None:
        return lines + [f"no {file}"]
    lines += ["| set | layer | pass | best convkit | ms | cuDNN ms | ratio |",
              "| --- | --- | --- | --- | ---: | ---: | ---: |"]
    for r in c["rows"]:
        lines.append(f"| {r['set']} | {r['layer']} | {r['pass']} | {r['best'] or '-'} | "
                     f"{fmt(r['best_ms'], '{:.3f}')} | {fmt(r['cudnn_ms'], '{:.3f}')} | "
                     f"{fmt(r['best_over_cudnn'], '{:.2f}x')} |")
    ratios = [r["best_over_cudnn"] for r in c["rows"] if r["best_over_cudnn"]]
    if ratios:
        lines.append(f"\n{sum(x <= 1.25 for x in ratios)} of {len(ratios)} passes within 1.25x of cuDNN's best.")
    if c["skipped"]:
        lines.append(f"\n{len(c['skipped'])} benchmarks skipped themselves (unsupported or failed check); "
                     f"{file} names each with its reason.")
    return lines


def markdown(s):
    env = s["env"]
    lines = [f"# gpu-check ({env.get('mode', '?')}{', quick' if env.get('quick') == '1' else ''})", ""]
    for k in ("commit", "gpu", "cuda_driver_api", "nvcc", "host_cpu", "host_cores"):
        if k in env:
            lines.append(f"- {k}: {env[k]}")
    lines += ["", "| step | exit | seconds |", "| --- | ---: | ---: |"]
    lines += [f"| {n} | {rc} | {t} |" for n, rc, t in s["steps"]]
    t = s["tests"]
    lines += ["", "## Tests", ""]
    lines.append("no JUnit file (the step failed early)" if t is None else
                 f"{t['total']} tests, {t['failed']} failed, {t['skipped']} skipped; "
                 f"{t['cuda_instances']} cuda instances")
    for name in (t or {}).get("failures", []):
        lines.append(f"- FAILED {name}")
    rerun = (t or {}).get("without_wgmma")
    if rerun:
        lines += ["", f"The binaries that failed, rerun under CONVKIT_DISABLE_WGMMA=1: {rerun['total']} tests, "
                      f"{rerun['failed']} failed, {rerun['skipped']} skipped."]
        lines += [f"- FAILED {name}" for name in rerun["failures"]]
    c = s["conv"]
    lines += conv_markdown(c, "", "bench_conv.json")
    lines += conv_markdown(s.get("conv_tf32"), " with TF32 allowed, convkit's and cuDNN's",
                           "bench_conv.json's tf32 section")
    lines += versions_markdown((c or {}).get("versions"), env.get("mode") == "sim")
    lines += gemm_markdown(s.get("gemm"), env.get("mode") == "sim")
    tr = s["train"]
    lines += ["", "## Training (images/s, SGD momentum 0.9)", ""]
    if tr is None:
        lines.append("no train.jsonl")
    else:
        lines += ["| model | batch | convkit cpu | convkit gpu | convkit gpu, tuned | convkit gpu, pinned | gpu/cpu | "
                  "convkit gpu TF32 | convkit gpu TF32, tuned | convkit gpu TF32, pinned | PyTorch FP32 | PyTorch TF32 | "
                  "convkit/PyTorch FP32 | tuned/PyTorch FP32 | convkit/PyTorch TF32 | tuned/PyTorch TF32 |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
                  "| ---: | ---: |"]
        for r in tr["rows"]:
            def col(name):
                return r.get("convkit_cuda" + name) or r.get("convkit_sim" + name)
            ratio = '{:.2f}x'
            lines.append(f"| {r['model']} | {r['batch']} | {fmt(r.get('convkit_cpu'))} | {fmt(col(''))} | "
                         f"{fmt(col('_tuned'))} | {fmt(col('_pinned'))} | {fmt(r.get('gpu_over_cpu'), ratio)} | "
                         f"{fmt(col('_tf32'))} | "
                         f"{fmt(col('_tf32_tuned'))} | {fmt(col('_tf32_pinned'))} | {fmt(r.get('pytorch_fp32'))} | "
                         f"{fmt(r.get('pytorch_tf32'))} | {fmt(r.get('convkit_over_pytorch_fp32'), ratio)} | "
                         f"{fmt(r.get('tuned_over_pytorch_fp32'), ratio)} | "
                         f"{fmt(r.get('convkit_over_pytorch_tf32'), ratio)} | "
                         f"{fmt(r.get('tuned_over_pytorch_tf32'), ratio)} |")
        if env.get("mode") == "sim":
            lines.append("\nsim runs the CUDA kernels on the CPU emulator: its figures test the pipeline, "
                         "not a GPU's speed.")
        lines.append("\nThe pinned columns run the kernel versions their JSON lines name (pinned_kernels): "
                     "strict with batch norm's version 3, TF32 with the tensor-core conv family's version 4. "
                     "Tuned columns ran with conv benchmark mode (CONVKIT_CONV_BENCHMARK=1: each pass of each "
                     "layer timed over the algorithms and kernel versions, as PyTorch's cudnn.benchmark, "
                     "which both PyTorch columns use).")
    return "\n".join(lines) + "\n"


def main():
    out = Path(sys.argv[1])
    summary = {
        "env": {row[0]: "\t".join(row[1:]) for row in read_tsv(out / "env.tsv")},
        "steps": read_tsv(out / "steps.tsv"),
        "tests": tests_summary(out / "ctest.xml"),
        "conv": conv_summary(out / "bench_conv.json"),
        "conv_tf32": conv_summary(out / "bench_conv.json", "tf32"),
        "gemm": gemm_summary(out / "bench_gemm.json"),
        "train": train_summary(out / "train.jsonl"),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (out / "summary.md").write_text(markdown(summary))


if __name__ == "__main__":
    main()
