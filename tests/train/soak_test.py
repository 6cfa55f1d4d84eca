#!/usr/bin/env python3
"""scripts/soak.py: its growth figures from a hand-made CSV, then a short real
run of `convkit train` through it.

  soak_test.py SOAK_PY CONVKIT
"""
import json
import os
import subprocess
import sys
import tempfile

soak, convkit = sys.argv[1], sys.argv[2]


def summarize(rows, header="seconds,rss_kib,epochs_done,epochs_saved"):
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        f.write(header + "\n")
        for row in rows:
            f.write(",".join(str(v) for v in row) + "\n")
    out = subprocess.run([sys.executable, soak, "--summarize", f.name], check=True,
                         capture_output=True, text=True).stdout
    os.unlink(f.name)
    return json.loads(out)


def check(cond, what):
    if not cond:
        sys.exit(f"soak_test: {what}")


# The epoch-1 summary line comes at 20 s, its saves end before 30 s and raise
# RSS by 2%, and then it stays flat: growth after the first epoch (its saves
# included) is 0, though measured from the summary line it would be 2%.
step = summarize([(0, 1000, 0, 0), (20, 1000, 1, 0), (30, 1020, 1, 1), (40, 1020, 2, 2), (50, 1020, 3, 3)])
check(step["growth_percent"] == 0.0, f"growth after the first epoch's saves: {step}")
check(step["growth_percent_from_first_epoch_line"] == 2.0, f"growth from the first summary line: {step}")
check(step["rss_kib_after_first_epoch"] == 1020, f"baseline after the saves: {step}")

# Growth after the saves is growth.
leak = summarize([(0, 1000, 0, 0), (10, 1000, 1, 1), (20, 1010, 2, 2), (30, 1030, 3, 3)])
check(leak["growth_percent"] == 3.0, f"a 3% climb after the first epoch: {leak}")

# CSVs written before epochs_saved was recorded get the line-based figures only.
old = summarize([(0, 1000, 0), (10, 1000, 1), (20, 1010, 2)], header="seconds,rss_kib,epochs_done")
check("growth_percent" not in old and old["growth_percent_from_first_epoch_line"] == 1.0, f"old CSV: {old}")

# A real run: tiny epochs, so that several are saved within 15 s.
with tempfile.TemporaryDirectory() as out:
    run = subprocess.run([sys.executable, soak, "--convkit", convkit, "--minutes", "0.25", "--interval", "1",
                          "--name", "smoke", "--out", out, "--", "fmnist-cnn", "--limit", "256",
                          "--test-limit", "64"], capture_output=True, text=True)
    if run.returncode not in (0, 1):  # 1: growth over the bar, which a 15 s run may show
        sys.exit(f"soak_test: soak.py failed ({run.returncode}):\n{run.stdout}\n{run.stderr}")
    summary = json.load(open(os.path.join(out, "smoke.json")))
    check(summary["epochs_saved"] >= 2, f"fewer than two epochs saved in 15 s: {summary}")
    check(summary["epochs_saved"] <= summary["epochs_done"] + 1, f"saves outnumber epochs: {summary}")
    check("growth_percent" in summary, f"no growth figure: {summary}")
    with open(os.path.join(out, "smoke.csv")) as f:
        check(next(f).strip() == "seconds,rss_kib,epochs_done,epochs_saved", "CSV header")
        rows = [line.strip().split(",") for line in f if line.strip()]
    check(len(rows) == summary["samples"], "one CSV row per sample")
    again = json.loads(subprocess.run([sys.executable, soak, "--summarize", os.path.join(out, "smoke.csv")],
                                      check=True, capture_output=True, text=True).stdout)
    check(again["growth_percent"] == summary["growth_percent"], f"--summarize disagrees: {again} vs {summary}")
print("soak_test: ok")
