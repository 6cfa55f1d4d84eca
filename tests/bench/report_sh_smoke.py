#!/usr/bin/env python3
"""benchmarks/report.sh smoke: every step of the report (the suites, convkit
bench train, convkit train --workers, report.py) on tiny inputs, into a
scratch directory. Checks that it exits 0 and that the report has every
section, the raw JSON it was drawn from, and figures where the inputs exist.
Times are not looked at.

usage: report_sh_smoke.py REPORT_SH BUILD_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile


def main(report_sh, build):
    out = tempfile.mkdtemp(prefix="report-sh-smoke-")
    try:
        proc = subprocess.run(["bash", report_sh, "smoke", "--build", build, "--out", out, "--note", "smoke"],
                              capture_output=True, text=True)
        problems = []
        if proc.returncode != 0:
            problems.append(f"exit code {proc.returncode}")
        path = os.path.join(out, "README.md")
        text = open(path).read() if os.path.exists(path) else ""
        for heading in ["## 1.", "## 2.", "## 3.", "## 4.", "## 5.", "## 6."]:
            if heading not in text:
                problems.append(f"no section {heading}")
        for expect in ["### tiny on cpu", "### sweep-tiny on cpu", "| fmnist-cnn | cpu |", "| Conv2d |"]:
            if expect not in text:
                problems.append(f"no {expect!r} in the report")
        raw = os.path.join(out, "raw")
        for name in ["conv.json", "layers.json", "train.json", "profile.json", "train.jsonl"]:
            if not os.path.exists(os.path.join(raw, name)):
                problems.append(f"no raw/{name}")
        for p in problems:
            print("FAILED:", p)
        if problems:
            print(proc.stdout, proc.stderr, text, sep="\n")
        return 1 if problems else 0
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
