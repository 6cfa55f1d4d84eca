#!/usr/bin/env python3
"""Loss and accuracy curves of training runs, from their log.jsonl files.

  scripts/plot_history.py runs/a/log.jsonl [runs/b/log.jsonl ...] -o curves.png

One PNG with two panels, loss and accuracy against the epoch: the training
values solid, the validation ones (val_loss, val_accuracy, when the run had
validation data) dashed, one colour per run (named by its folder). A metric
logged as null (a non-finite value) leaves a gap. Needs gnuplot (a
dependency of the project's report plots); nothing else.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile


def read_run(path):
    rows = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit(f"plot_history: {path}:{number}: not JSON ({e.msg} at column {e.colno})")
    if not rows:
        sys.exit(f"plot_history: {path} has no epochs")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("logs", nargs="+", help="log.jsonl files (convkit train --out DIR writes DIR/log.jsonl)")
    ap.add_argument("-o", "--output", required=True, help="the PNG to write")
    a = ap.parse_args()
    if not shutil.which("gnuplot"):
        sys.exit("plot_history: gnuplot is not installed (third_party/install-deps.sh installs it)")

    with tempfile.TemporaryDirectory() as tmp:
        panels = {"loss": [], "accuracy": []}
        most_epochs = 0
        for i, path in enumerate(a.logs):
            rows = read_run(path)
            most_epochs = max(most_epochs, len(rows))
            name = os.path.basename(os.path.dirname(os.path.abspath(path))) or path
            data = os.path.join(tmp, f"run{i}.dat")
            columns = ["epoch", "loss", "val_loss", "accuracy", "val_accuracy"]
            with open(data, "w") as f:
                for r in rows:
                    f.write(" ".join("NaN" if r.get(c) is None else repr(float(r[c])) for c in columns) + "\n")
            colour = i + 1
            for metric, col in (("loss", 2), ("accuracy", 4)):
                panels[metric].append(
                    f"'{data}' using 1:{col} with linespoints lt {colour} dt 1 title '{name} {metric}'")
                if any(r.get("val_" + metric) is not None for r in rows):
                    panels[metric].append(
                        f"'{data}' using 1:{col + 1} with linespoints lt {colour} dt 2 title '{name} val_{metric}'")
        script = (
            f"set terminal pngcairo noenhanced size 1000,440\nset output '{a.output}'\n"
            "set datafile missing 'NaN'\nset grid\nset key outside bottom center horizontal\n"
            + ("set xtics 1\n" if most_epochs <= 20 else "")
            +
            "set multiplot layout 1,2\nset xlabel 'epoch'\n"
            f"set ylabel 'loss'\nset title 'loss'\nplot {', '.join(panels['loss'])}\n"
            f"set ylabel 'accuracy'\nset title 'accuracy'\nplot {', '.join(panels['accuracy'])}\n"
            "unset multiplot\n")
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
    print(f"plot_history: wrote {a.output}")


if __name__ == "__main__":
    main()
